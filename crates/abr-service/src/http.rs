//! The runner's HTTP API: JSON, camelCase, one error envelope, bearer auth on everything
//! but health and the live view.

use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::{CoreError, LiveSurface, ProviderErrorKind, SessionContext};
use abr_protocol::codes::{self, ErrorCode};
use abr_protocol::{
    AgentPostResult, CaptureCancelResponse, CaptureFinishResponse, CaptureRef, CaptureStartRequest,
    CaptureStartResponse, CaptureStatus, ErrorBody, ErrorEnvelope, Health, PlatformsResponse,
    PostRequest, ProbeRequest, ProbeResponse,
};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, MatchedPath, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::cli::error::JsonDetail;
use crate::live::LiveState;
use crate::runner::{NotAdmitted, Runner};

/// Shared state of the HTTP handlers.
pub struct AppState<C: SessionContext> {
    /// The runner.
    pub runner: Arc<Runner<C>>,
    tokens: Arc<TokenSet>,
    pub(crate) live: Arc<LiveState>,
}

impl<C: SessionContext> Clone for AppState<C> {
    fn clone(&self) -> Self {
        Self {
            runner: Arc::clone(&self.runner),
            tokens: Arc::clone(&self.tokens),
            live: Arc::clone(&self.live),
        }
    }
}

impl<C: SessionContext> std::fmt::Debug for AppState<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("tokens", &self.tokens.digests.len())
            .finish_non_exhaustive()
    }
}

/// SHA-256 digests of the accepted bearer tokens, compared in constant time.
struct TokenSet {
    digests: Vec<[u8; 32]>,
    open: bool,
}

impl TokenSet {
    fn accepts(&self, presented: &str) -> bool {
        if self.open {
            return true;
        }
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Check every token (no early exit) so the time does not depend on which matched.
        self.digests
            .iter()
            .fold(subtle::Choice::from(0), |found, d| found | d.ct_eq(&digest))
            .into()
    }
}

/// An error answered as the JSON envelope with a status code.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with `code` (its status and retryability from [`abr_protocol::codes`]) and
    /// `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::from_u16(code.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body: code.body(message),
            retry_after: None,
        }
    }

    /// The error's code.
    pub fn code(&self) -> &str {
        &self.body.code
    }

    fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self.body.retryable = true;
        self
    }

    fn unauthorized() -> Self {
        Self::new(codes::UNAUTHORIZED, "a valid bearer token is required")
    }
}

impl From<NotAdmitted> for ApiError {
    fn from(refused: NotAdmitted) -> Self {
        match refused {
            NotAdmitted::Overloaded { retry_after } => {
                Self::new(codes::OVERLOADED, "the runner is at capacity; retry later")
                    .retry_after(retry_after)
            }
            NotAdmitted::QueueTimeout { retry_after } => Self::new(
                codes::QUEUE_TIMEOUT,
                "no job slot came free within the queue deadline; nothing ran: retry later",
            )
            .retry_after(retry_after),
        }
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        // One table: the code decides the status.
        let status = StatusCode::from_u16(e.error_code().status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = match &e {
            CoreError::Provider(p) if p.kind() == ProviderErrorKind::Busy => {
                Some(p.retry_after().unwrap_or(Duration::from_secs(2)))
            }
            CoreError::CaptureLimit(_) => Some(Duration::from_secs(10)),
            _ => None,
        };
        let mut body = e.to_body();
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(code = body.code, "internal error: {e}");
            body.message = "internal error".into();
        }
        Self {
            status,
            body,
            retry_after,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(ErrorEnvelope { error: self.body })).into_response();
        if let Some(after) = self.retry_after {
            let secs = after.as_secs().max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A JSON body whose every rejection is a JSON envelope, and whose error messages never echo
/// input values (serde quotes them).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ApiError::new(
                codes::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
            } else {
                ApiError::new(codes::INVALID_BODY, "the request body could not be read")
            }
        })?;
        serde_json::from_slice(&bytes).map(ApiJson).map_err(|e| {
            let detail = JsonDetail::new(&e);
            match e.classify() {
                serde_json::error::Category::Data => ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("the request does not match the API: {detail}"),
                ),
                _ => ApiError::new(
                    codes::INVALID_JSON,
                    format!("the body is not valid JSON: {detail}"),
                ),
            }
        })
    }
}

async fn require_bearer<C: SessionContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let presented = match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty()),
        _ => None,
    };
    let allowed = match presented {
        Some(token) => state.tokens.accepts(token),
        None => state.tokens.open,
    };
    if allowed {
        next.run(request).await
    } else {
        ApiError::unauthorized().into_response()
    }
}

/// Logs method, route template (never the raw path: it may carry a capture id or live
/// token), status and latency.
async fn access_log(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "<unmatched>".to_owned(), |m| m.as_str().to_owned());
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

/// Bounds every request by the configured deadline.
async fn deadline<C: SessionContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let limit = state.runner.config.limits.request_timeout;
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

async fn platforms<C: SessionContext>(State(state): State<AppState<C>>) -> Json<PlatformsResponse> {
    Json(PlatformsResponse {
        platforms: state.runner.poster.strategies().platforms(),
    })
}

async fn capture_start<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<CaptureStartRequest>,
) -> Result<Json<CaptureStartResponse>, ApiError> {
    let _slot = state.runner.jobs.enter().await?;
    Ok(Json(state.runner.captures.start(request).await?))
}

async fn capture_finish<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<CaptureRef>,
) -> Result<Json<CaptureFinishResponse>, ApiError> {
    Ok(Json(state.runner.captures.finish(&request).await?))
}

async fn capture_cancel<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<CaptureRef>,
) -> Result<Json<CaptureCancelResponse>, ApiError> {
    Ok(Json(state.runner.captures.cancel(&request).await?))
}

/// The tenant a capture status is asked for, in the query of `GET /v1/capture/{id}`.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TenantQuery {
    workspace_id: Option<String>,
    account_id: Option<String>,
}

/// `GET /v1/capture/{id}?workspaceId=…&accountId=…`: bound like finish and cancel.
async fn capture_status<C: SessionContext>(
    State(state): State<AppState<C>>,
    Path(capture_id): Path<String>,
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
    Ok(Json(state.runner.captures.status(&r)?))
}

/// `POST /v1/capture/status`: the same, with the capture id in the body rather than the
/// path (a capture id is a credential; paths end up in proxies' logs).
async fn capture_status_body<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<CaptureRef>,
) -> Result<Json<CaptureStatus>, ApiError> {
    Ok(Json(state.runner.captures.status(&request)?))
}

async fn post_job<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<PostRequest>,
) -> Result<Json<AgentPostResult>, ApiError> {
    let slot = state.runner.jobs.enter().await?;
    // The job runs in its own task, holding its slot: a panic stays there (this request
    // fails, the server goes on, the lease is released by its drop), and a client that
    // disconnects mid-post does not cut a publish in half.
    let runner = Arc::clone(&state.runner);
    let job = tokio::spawn(async move {
        let _slot = slot;
        runner.poster.post(request).await
    });
    match job.await {
        Ok(result) => Ok(Json(result?)),
        Err(_) => Err(ApiError::new(
            codes::JOB_PANICKED,
            "the job failed unexpectedly; it may have been published: do not retry automatically",
        )),
    }
}

async fn probe<C: SessionContext>(
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<ProbeRequest>,
) -> Result<Json<ProbeResponse>, ApiError> {
    let slot = state.runner.jobs.enter().await?;
    let runner = Arc::clone(&state.runner);
    let job = tokio::spawn(async move {
        let _slot = slot;
        runner.poster.probe(request).await
    });
    match job.await {
        Ok(result) => Ok(Json(result?)),
        Err(_) => Err(ApiError::new(
            codes::JOB_PANICKED,
            "the probe failed unexpectedly",
        )),
    }
}

/// The router of the runner: the API, and the live view.
pub fn app<C: SessionContext + LiveSurface>(runner: Arc<Runner<C>>) -> Router {
    let config = &runner.config;
    let tokens = Arc::new(TokenSet {
        digests: config
            .api_tokens
            .iter()
            .map(|t| Sha256::digest(secrecy::ExposeSecret::expose_secret(t).as_bytes()).into())
            .collect(),
        open: config.insecure_dev && config.api_tokens.is_empty(),
    });
    let body_limit = config.limits.body_limit_bytes;
    let live = Arc::new(LiveState::new(config));
    let state = AppState {
        runner,
        tokens,
        live,
    };
    let protected = Router::new()
        .route("/v1/platforms", get(platforms::<C>))
        .route("/v1/capture/start", post(capture_start::<C>))
        .route("/v1/capture/finish", post(capture_finish::<C>))
        .route("/v1/capture/cancel", post(capture_cancel::<C>))
        .route("/v1/capture/status", post(capture_status_body::<C>))
        .route("/v1/capture/{capture_id}", get(capture_status::<C>))
        .route("/v1/post", post(post_job::<C>))
        .route("/v1/probe", post(probe::<C>))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_bearer::<C>,
        ));
    Router::new()
        .route("/v1/health", get(health))
        .merge(protected)
        .merge(crate::live::routes::<C>())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn_with_state(state.clone(), deadline::<C>))
        .layer(middleware::from_fn(access_log))
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
