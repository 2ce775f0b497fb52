//! The runner's HTTP API: JSON, camelCase, one error envelope, bearer auth on everything
//! but health and the live view.

use std::sync::Arc;
use std::time::Instant;

use abr_core::LiveSurface;
use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::codes::{self};
use abr_protocol::{
    CaptureCancelResponse, CaptureFinishRequest, CaptureFinishResponse, CaptureRef,
    CaptureStartRequest, CaptureStartResponse, CaptureStatus, Health, PlatformsResponse,
    ProbeRequest, ProbeResponse,
};
use abr_store::PlacementKind;
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};

use crate::api_error::is_json;
pub use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::auth::require_bearer;
use crate::live::LiveState;
use crate::openapi::{Documented, OPENS_A_BROWSER, PLACED};
use crate::runner::Runner;
pub use crate::state::AppState;
use crate::tenant::Caller;
use crate::tokens::TokenSet;

/// Logs method, route template (never the raw path: it may carry a capture id or live
/// token), status and latency.
async fn access_log(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let route = crate::metrics::route_of(&request);
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::info!(
        target: "abr::http",
        %method,
        route,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
    );
    response
}

/// Bounds every request by the configured deadline; `/mcp` by that deadline plus
/// [`MCP_GRACE`]: each of its tool calls is an API request bounded by the deadline itself,
/// which must answer first (a post's `timeout_outcome_unknown` is the API's to give).
async fn deadline<C: TaskContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let mut limit = state.runner.config.limits.request_timeout;
    if request.uri().path() == MCP_PATH {
        limit += MCP_GRACE;
    }
    let is_post = request.uri().path() == "/v1/post";
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) if is_post => ApiError::new(codes::TIMEOUT_OUTCOME_UNKNOWN,
            "the post did not finish before the request deadline; it may have been published: do not retry automatically",
        )
        .into_response(),
        Err(_) => ApiError::new(codes::TIMEOUT, "the request did not finish before its deadline")
            .into_response(),
    }
}

/// Every refusal is the envelope: an error answer that is not JSON (an extractor's
/// rejection, a library's plain-text answer) is replaced by the envelope its status calls
/// for, without its text, which may repeat the request. The provider viewer's proxied pages
/// (`/live/{token}/view...`) pass as they are: they are the provider's.
async fn every_error_an_envelope(request: Request, next: Next) -> Response {
    let proxied = is_proxied_viewer(request.uri().path());
    let response = next.run(request).await;
    let status = response.status();
    if proxied || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    if is_json(response.headers()) {
        return response;
    }
    let (code, message) = match status.as_u16() {
        401 => (codes::UNAUTHORIZED, "a valid bearer token is required"),
        404 => (codes::NOT_FOUND, "no such endpoint"),
        405 => (
            codes::METHOD_NOT_ALLOWED,
            "this endpoint does not accept this method",
        ),
        413 => (codes::PAYLOAD_TOO_LARGE, "the request body is too large"),
        415 => (
            codes::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON (Content-Type: application/json)",
        ),
        s if s >= 500 => {
            tracing::warn!(target: "abr::http", status = s, "a plain-text error answer was replaced");
            (codes::INTERNAL, "internal error")
        }
        _ => (
            codes::INVALID_REQUEST,
            "the request does not match the API (its path, query or headers)",
        ),
    };
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut envelope = ApiError::new(code, message).into_response();
    if let Some(allow) = allow {
        envelope.headers_mut().insert(header::ALLOW, allow);
    }
    envelope
}

/// Whether `path` is the provider viewer's proxy (`/live/{token}/view`, and below).
fn is_proxied_viewer(path: &str) -> bool {
    path.strip_prefix("/live/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, rest)| rest == "view" || rest.starts_with("view/"))
}

async fn not_found() -> ApiError {
    ApiError::new(codes::NOT_FOUND, "no such endpoint")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        codes::METHOD_NOT_ALLOWED,
        "this endpoint does not accept this method",
    )
}

async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

async fn platforms<C: TaskContext>(State(state): State<AppState<C>>) -> Json<PlatformsResponse> {
    Json(PlatformsResponse {
        platforms: state.runner.engine.platforms(),
    })
}

async fn capture_start<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<CaptureStartRequest>,
) -> Result<Json<CaptureStartResponse>, ApiError> {
    let actor = caller.actor(Some(&request.workspace_id))?;
    let started = state.runner.engine.capture_start(&actor, request).await?;
    if let Some(places) = state.runner.status().places() {
        // Its browser is here (kept by the digest of its id: the id is a credential).
        let key = crate::placement::capture_key(&started.capture_id);
        places
            .place(PlacementKind::Capture, &key, Some(actor.tenant()))
            .await;
    }
    Ok(Json(started))
}

/// Finishes a capture; with `storeAs`, also keeps the session on the runner for the
/// capture's tenant (its `workspaceId`). A capture that finished but could not be stored
/// still answers its session (the browser is gone: the session would be lost otherwise),
/// with `storedAs` absent; the failure is logged.
///
/// Relayed from a hub to a runner that keeps its sessions on its machine (session export
/// off), the session never leaves: a finish without `storeAs` is refused before it ends
/// the capture (the person's sign-in is kept), and a finish that stored it answers no
/// cookie and no localStorage (a finish that could not store it answers the failure).
async fn capture_finish<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<CaptureFinishRequest>,
) -> Result<Json<CaptureFinishResponse>, ApiError> {
    let CaptureFinishRequest { capture, store_as } = request;
    let actor = caller.actor(Some(&capture.workspace_id))?;
    let keeps = crate::sessions::kept_on_this_machine(&state, &caller);
    if keeps && store_as.is_none() {
        return Err(ApiError::new(
            codes::FORBIDDEN,
            "this runner keeps sessions on its machine: finish the capture with storeAs (the \
             hub then uses it by sessionId), or start the runner with --allow-session-export",
        ));
    }
    let mut finished = state
        .runner
        .engine
        .capture_finish(&actor, &capture, store_as)
        .await?;
    if let Some(places) = state.runner.status().places() {
        let key = crate::placement::capture_key(&capture.capture_id);
        places.unplace(PlacementKind::Capture, &key).await;
    }
    if keeps {
        if finished.stored_as.is_none() {
            return Err(ApiError::new(
                codes::INTERNAL,
                "the capture finished but its session could not be kept on the runner",
            ));
        }
        finished.session = abr_protocol::AgentSessionState::default();
    }
    Ok(Json(finished))
}

async fn capture_cancel<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<CaptureRef>,
) -> Result<Json<CaptureCancelResponse>, ApiError> {
    let actor = caller.actor(Some(&request.workspace_id))?;
    let cancelled = state.runner.engine.capture_cancel(&actor, &request).await?;
    if let Some(places) = state.runner.status().places() {
        let key = crate::placement::capture_key(&request.capture_id);
        places.unplace(PlacementKind::Capture, &key).await;
    }
    Ok(Json(cancelled))
}

/// The tenant a capture status is asked for, in the query of `GET /v1/capture/{id}`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TenantQuery {
    /// The capture's workspace (required).
    workspace_id: Option<String>,
    /// The capture's account (required).
    account_id: Option<String>,
}

/// `GET /v1/capture/{id}?workspaceId=…&accountId=…`: bound like finish and cancel.
async fn capture_status<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(capture_id): ApiPath<String>,
    query: Result<axum::extract::Query<TenantQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<CaptureStatus>, ApiError> {
    let tenant = query.ok().map(|q| q.0);
    let (Some(workspace_id), Some(account_id)) = tenant
        .map(|t| (t.workspace_id, t.account_id))
        .unwrap_or_default()
    else {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the capture's workspaceId and accountId are required (query parameters, or POST \
             /v1/capture/status with a JSON body)",
        ));
    };
    let r = CaptureRef {
        capture_id,
        workspace_id,
        account_id,
    };
    let actor = caller.actor(Some(&r.workspace_id))?;
    Ok(Json(state.runner.engine.capture_status(&actor, &r).await?))
}

/// `POST /v1/capture/status`: the same, with the capture id in the body rather than the
/// path (a capture id is a credential; paths end up in proxies' logs).
async fn capture_status_body<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<CaptureRef>,
) -> Result<Json<CaptureStatus>, ApiError> {
    let actor = caller.actor(Some(&request.workspace_id))?;
    Ok(Json(
        state.runner.engine.capture_status(&actor, &request).await?,
    ))
}

async fn probe<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<ProbeRequest>,
) -> Result<Json<ProbeResponse>, ApiError> {
    // Bounded before anything records them, each named as the caller gave it.
    abr_core::check_tenant_id("workspaceId", request.workspace_id.as_deref())?;
    abr_core::check_tenant_id("accountId", request.account_id.as_deref())?;
    let actor = caller.actor(request.workspace_id.as_deref())?;
    Ok(Json(state.runner.engine.probe(&actor, request).await?))
}

/// Where the MCP endpoint is mounted.
const MCP_PATH: &str = "/mcp";

/// How much longer than the request deadline an MCP request may take: reading its body and
/// answering around the one API request it makes, which has the deadline itself.
const MCP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The router of the runner: the API, the MCP endpoint (`/mcp`, read-only when
/// `ABR_MCP_READ_ONLY` says so), the live view, and the relay's hub side with the default
/// [`HubSettings`](crate::relay::HubSettings).
pub fn app<C: TaskContext + LiveSurface>(runner: Arc<Runner<C>>) -> Router {
    let mcp = http_mcp_settings(&runner);
    let section = &runner.config.hub;
    let hub = crate::relay::Hub::new(crate::relay::HubSettings {
        min_runner_version: section
            .min_runner_version
            .clone()
            .unwrap_or_else(crate::relay::own_minimum),
        offline_wait: section.offline_wait,
        ..crate::relay::HubSettings::default()
    });
    app_with(runner, mcp, hub)
}

/// The `/mcp` endpoint's settings: read-only from the configuration; the tenant is each
/// caller's own.
fn http_mcp_settings<C: TaskContext>(runner: &Runner<C>) -> crate::mcp::McpSettings {
    crate::mcp::McpSettings {
        tenant: None,
        ..crate::mcp::McpSettings::from_config(&runner.config.mcp)
    }
}

/// [`app`] with the MCP endpoint's settings given rather than from the configuration.
pub fn app_with_mcp<C: TaskContext + LiveSurface>(
    runner: Arc<Runner<C>>,
    mcp: crate::mcp::McpSettings,
) -> Router {
    app_with(runner, mcp, crate::relay::Hub::default())
}

/// [`app`] with the relay's hub side given: runners connect to `hub`, and calls naming one
/// (`x-abr-runner`) are forwarded over its socket.
pub fn app_with_relay<C: TaskContext + LiveSurface>(
    runner: Arc<Runner<C>>,
    hub: crate::relay::Hub,
) -> Router {
    let mcp = http_mcp_settings(&runner);
    app_with(runner, mcp, hub)
}

/// The router with both the MCP settings and the hub given.
pub fn app_with<C: TaskContext + LiveSurface>(
    runner: Arc<Runner<C>>,
    mcp: crate::mcp::McpSettings,
    hub: crate::relay::Hub,
) -> Router {
    let config = &runner.config;
    let tokens = Arc::new(TokenSet::new(config));
    let live = Arc::new(LiveState::new(config));
    let forward = crate::relay::ForwardState {
        tokens: Arc::clone(&tokens),
        keys: runner.engine.keys().clone(),
        hub: hub.clone(),
        body_limit: config.limits.body_limit_bytes,
        public_base: config.public_base(),
        live: Arc::clone(&live),
    };
    let state = AppState {
        runner,
        tokens,
        live,
    };
    // MCP tool calls are dispatched to the same router, without `/mcp` itself.
    let api = router(state.clone(), None, &hub, forward.clone());
    let mcp = crate::mcp::http_service(api, &state.runner.config, mcp);
    router(state, Some(mcp), &hub, forward)
}

/// The router on `state`, with `/mcp` served by `mcp` when given.
fn router<C: TaskContext + LiveSurface>(
    state: AppState<C>,
    mcp: Option<crate::mcp::McpHttpService>,
    hub: &crate::relay::Hub,
    forward: crate::relay::ForwardState,
) -> Router {
    let body_limit = state.runner.config.limits.body_limit_bytes;
    crate::openapi::prepare();
    if let Some(places) = state.runner.status().places() {
        hub.join_fleet(places);
    }
    let (relay_tokens, relay_connect) =
        hub.routes::<AppState<C>>(state.runner.engine.keys().clone());
    let mut protected = ApiRouter::new()
        .api_route(
            "/v1/platforms",
            get_with(platforms::<C>, |o| {
                o.id("listPlatforms")
                    .summary("The platforms this runner knows, with their scopes and policies")
            }),
        )
        .api_route(
            "/v1/capture/start",
            post_with(capture_start::<C>, |o| {
                o.id("startCapture")
                    .summary("Open a browser for a person to sign in through the live view")
                    .needs(Right::Sessions)
                    .errors(OPENS_A_BROWSER)
                    .errors(&[codes::UNKNOWN_PLATFORM, codes::CAPTURE_LIMIT])
            }),
        )
        .api_route(
            "/v1/capture/finish",
            post_with(capture_finish::<C>, |o| {
                o.id("finishCapture")
                    .summary("Export the signed-in session, filtered to the platform's scope")
                    .needs(Right::Sessions)
                    .errors(PLACED)
                    .errors(&[
                        codes::CAPTURE_NOT_FOUND,
                        codes::CAPTURE_BROWSER_LOST,
                        codes::NOT_AUTHENTICATED,
                        codes::STORE_FAILED,
                        codes::BROWSER_CRASHED,
                    ])
            }),
        )
        .api_route(
            "/v1/capture/cancel",
            post_with(capture_cancel::<C>, |o| {
                o.id("cancelCapture")
                    .summary("Close a capture's browser without exporting anything")
                    .needs(Right::Sessions)
                    .errors(PLACED)
                    .errors(&[codes::CAPTURE_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/capture/status",
            post_with(capture_status_body::<C>, |o| {
                o.id("captureStatus")
                    .summary("A capture's state (its id in the body: the id is a credential)")
                    .needs(Right::Read)
                    .errors(PLACED)
                    .errors(&[codes::CAPTURE_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/capture/{capture_id}",
            get_with(capture_status::<C>, |o| {
                o.id("getCapture")
                    .summary("A capture's state (its id in the path)")
                    .needs(Right::Read)
                    .errors(PLACED)
                    .errors(&[codes::CAPTURE_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/probe",
            post_with(probe::<C>, |o| {
                o.id("probeSession")
                    .summary("Check that a session is still signed in, changing nothing")
                    .needs(Right::Sessions)
                    .errors(OPENS_A_BROWSER)
                    .errors(&[codes::UNKNOWN_PLATFORM, codes::SESSION_NOT_FOUND])
            }),
        )
        .merge(crate::posts::routes::<C>())
        .merge(crate::tasks::routes::<C>())
        .merge(crate::sessions::routes::<C>())
        .merge(crate::lists::routes::<C>())
        .merge(crate::events::routes::<C>())
        .merge(crate::run_evidence::routes::<C>())
        .merge(crate::artifacts::routes::<C>())
        .merge(crate::sites::routes::<C>())
        .merge(crate::profiles::routes::<C>())
        .merge(crate::browse::routes::<C>())
        .merge(crate::keys::routes::<C>())
        .merge(crate::scrape::routes::<C>(hub.clone()))
        .merge(crate::enrollment::protected_routes::<C>(hub.clone()))
        .merge(crate::runners::routes::<C>(hub.clone()))
        .merge(relay_tokens);
    if let Some(mcp) = mcp {
        protected = protected.route_service(MCP_PATH, mcp);
    }
    let protected = protected.route_layer(middleware::from_fn_with_state(
        state.clone(),
        require_bearer::<C>,
    ));
    let document = Arc::new(std::sync::OnceLock::new());
    let mut api = aide::openapi::OpenApi::default();
    let app = ApiRouter::new()
        .api_route(
            "/v1/health",
            get_with(health, |o| {
                o.id("health")
                    .summary("Whether the process answers (no key needed)")
            }),
        )
        .api_route(
            "/v1/ready",
            get_with(crate::replica::ready::<C>, |o| {
                o.id("ready")
                    .summary(
                        "Whether this replica takes new work: 200 ready, 503 draining, full or \
                         its store unreachable (no key needed; for balancers)",
                    )
                    .response::<200, Json<abr_protocol::Readiness>>()
                    .response::<503, Json<abr_protocol::Readiness>>()
            }),
        )
        .api_route(
            crate::openapi::OPENAPI_PATH,
            get_with(
                {
                    let document = Arc::clone(&document);
                    move || async move { Json(document.get().cloned().unwrap_or_default()) }
                },
                |o| {
                    o.id("openapi")
                        .summary("This description: OpenAPI 3.1 (no key needed)")
                },
            ),
        )
        .merge(protected)
        .merge(crate::live::routes::<C, AppState<C>>())
        .merge(crate::approve_page::routes::<C>())
        .merge(relay_connect)
        .merge(crate::enrollment::public_routes::<C>(hub.clone()))
        .finish_api(&mut api);
    let _ = document.set(crate::openapi::finish(&api));
    app.fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn_with_state(
            forward,
            crate::relay::forward_to_runner,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::owner::forward_to_owner::<C>,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::replica::refuse_while_draining::<C>,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), deadline::<C>))
        .layer(middleware::from_fn(every_error_an_envelope))
        .layer(middleware::from_fn(access_log))
        .layer(middleware::from_fn_with_state(
            Arc::clone(state.runner.metrics()),
            crate::metrics::observe,
        ))
        .layer(middleware::from_fn(crate::traces::propagate::request_span))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ApiError::new(codes::INTERNAL, "internal error").into_response()
        }))
        .layer(
            tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer::new([
                header::AUTHORIZATION,
                header::COOKIE,
            ]),
        )
        .with_state(state)
}
