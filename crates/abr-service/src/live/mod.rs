//! The live view: how a person sees and drives a capture's browser.
//!
//! - `GET /live/{token}` is the runner's viewer page (or, when the operator opted in to
//!   proxying providers' viewers, a page framing the provider's viewer);
//! - `/live/{token}/ws` is the viewer's socket: frames out, input in, through the capture's
//!   [`LiveAttachment`] (the core checks every input; the provider drives the browser);
//! - `/live/{token}/view/...` is the opt-in proxy of a provider's own viewer ([`proxy`]).
//!
//! A live token resolves only its capture's browser, only while the capture is open, for at
//! most `ABR_LIVE_MAX_SOCKETS` sockets, each closed as soon as the capture ends. Sockets
//! are accepted only from the runner's public origin and the embedding apps' origins.
//! This module moves bytes; it knows nothing of how a browser is driven.

pub(crate) mod page;
mod proxy;
mod socket;
pub(crate) mod wire;

use abr_core::{LiveSurface, new_token};
use abr_engine::LiveAttachment;
use abr_protocol::codes;
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::{Html, IntoResponse, Response};

use std::sync::Arc;

use abr_core::context::TaskContext;
use axum::extract::FromRef;

use crate::api_error::ApiError;
use crate::config::RunnerConfig;
use crate::runner::Runner;

/// What the live view needs besides the runner: who may open sockets and frame the page,
/// and the opt-in provider-viewer proxy.
#[derive(Debug)]
pub(crate) struct LiveState {
    /// Origins allowed to open sockets (the runner's, then the embedding apps').
    origins: Vec<String>,
    /// The CSP `frame-ancestors` value.
    frame_ancestors: String,
    /// The provider-viewer proxy's client, when the operator opted in.
    proxy: Option<reqwest::Client>,
}

impl LiveState {
    pub(crate) fn new(config: &RunnerConfig) -> Self {
        let origins = config.live_origins();
        let frame_ancestors = std::iter::once("'self'".to_owned())
            .chain(config.live.embed_origins.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let proxy = if config.live.proxy_provider_viewer {
            let client = proxy::upstream_client();
            if client.is_none() {
                tracing::warn!("the provider-viewer proxy could not be set up; it is off");
            }
            client
        } else {
            None
        };
        Self {
            origins,
            frame_ancestors,
            proxy,
        }
    }
}

/// What the live view's handlers need: the runner and the live view's settings, a sub-state
/// of the router's ([`FromRef`]).
pub(crate) struct LiveApp<C: TaskContext> {
    pub(crate) runner: Arc<Runner<C>>,
    pub(crate) live: Arc<LiveState>,
}

impl<C: TaskContext> Clone for LiveApp<C> {
    fn clone(&self) -> Self {
        Self {
            runner: Arc::clone(&self.runner),
            live: Arc::clone(&self.live),
        }
    }
}

/// The mark of a live-view socket the runner's relay link opens on its own router for its
/// hub: the hub checked the viewer's `Origin` against its own allowed origins, so the
/// runner's live view accepts it. Only the link's stream calls
/// [`origin_checked_by_hub`]; no request from the network carries request extensions.
#[derive(Debug, Clone, Copy)]
struct OriginCheckedByHub {
    _private: (),
}

/// Marks `request` as a live-view socket whose `Origin` the hub checked (the relay link's
/// in-process stream, and nothing else, calls this).
pub(crate) fn origin_checked_by_hub<B>(request: &mut axum::http::Request<B>) {
    request
        .extensions_mut()
        .insert(OriginCheckedByHub { _private: () });
}

pub(crate) fn routes<C, S>() -> ApiRouter<S>
where
    C: TaskContext + LiveSurface,
    S: Clone + Send + Sync + 'static,
    LiveApp<C>: FromRef<S>,
{
    use crate::openapi::{Documented, Page, Socket};
    fn proxied_view(
        o: aide::transform::TransformOperation<'_>,
    ) -> aide::transform::TransformOperation<'_> {
        o.summary("The provider's own viewer, proxied (where the provider has one)")
            .response::<200, Page>()
            .errors(&[codes::LIVE_VIEW_NOT_FOUND, codes::LIVE_VIEW_UNAVAILABLE])
    }
    ApiRouter::new()
        .api_route(
            "/live/{token}",
            get_with(viewer::<C>, |o| {
                o.id("liveView")
                    .summary("The live view: a person sees and drives the capture's or takeover's browser")
                    .description("The token in the path is the credential (no key); single page, never cached.")
                    .response::<200, Page>()
                    .errors(&[codes::LIVE_VIEW_NOT_FOUND])
            }),
        )
        .api_route(
            "/live/{token}/ws",
            get_with(screencast::<C>, |o| {
                o.id("liveViewSocket")
                    .summary("The live view's screencast and input (a WebSocket, from the view's own origin)")
                    .response::<101, Socket>()
                    .errors(&[
                        codes::LIVE_VIEW_NOT_FOUND,
                        codes::WEBSOCKET_REQUIRED,
                        codes::ORIGIN_NOT_ALLOWED,
                        codes::LIVE_VIEW_LIMIT,
                    ])
            }),
        )
        .api_route(
            "/live/{token}/view",
            get_with(proxied::<C>, |o| proxied_view(o.id("liveProviderView"))),
        )
        .api_route(
            "/live/{token}/view/",
            get_with(proxied::<C>, |o| proxied_view(o.id("liveProviderViewRoot"))),
        )
        .api_route(
            "/live/{token}/view/{*rest}",
            get_with(proxied::<C>, |o| proxied_view(o.id("liveProviderViewPath"))),
        )
}

fn gone() -> ApiError {
    ApiError::new(
        codes::LIVE_VIEW_NOT_FOUND,
        "no open capture has this live view",
    )
}

pub(crate) fn nonce() -> Result<String, ApiError> {
    new_token().map_err(|_| ApiError::new(codes::INTERNAL, "internal error"))
}

/// Refuses a socket whose `Origin` is not the runner's or an embedding app's (a page on
/// another site must not drive a browser with a token it found). A request without
/// `Origin` is refused too: every browser sends one on a WebSocket handshake, and
/// non-browser clients can name the runner's.
pub(crate) fn check_origin(state: &LiveState, headers: &HeaderMap) -> Result<(), ApiError> {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let allowed = match (values.next(), values.next()) {
        (Some(origin), None) => origin.to_str().is_ok_and(|origin| {
            let origin = origin.trim_end_matches('/');
            state.origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
        }),
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(ApiError::new(
            codes::ORIGIN_NOT_ALLOWED,
            "the live view only accepts sockets from the runner's own pages and the embedding \
             apps configured in ABR_LIVE_EMBED_ORIGINS",
        ))
    }
}

async fn viewer<C: TaskContext + LiveSurface>(
    State(state): State<LiveApp<C>>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let target = state.runner.engine.live_target(&token).ok_or_else(gone)?;
    let nonce = nonce()?;
    let live = &state.live;
    let proxied = live.proxy.is_some() && target.provider_viewer.is_some();
    let (html, csp) = if proxied {
        // The token resolved to an open capture, so it is one of ours: base64url, safe
        // inside an attribute.
        let view = format!("/live/{token}/view/");
        (
            page::frame_page(&nonce, &view),
            page::frame_csp(&nonce, &live.frame_ancestors),
        )
    } else {
        (
            page::viewer_page(&nonce),
            page::viewer_csp(&nonce, &live.frame_ancestors),
        )
    };
    let mut response = Html(html).into_response();
    page::secure(response.headers_mut(), &csp);
    Ok(response)
}

/// The socket of the runner's own viewer.
async fn screencast<C: TaskContext + LiveSurface>(
    State(state): State<LiveApp<C>>,
    Path(token): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    // A socket the relay's link opened for its hub was checked by the hub, against the
    // hub's origins (the viewer's browser is on the hub's page); any other is checked here.
    if request.extensions().get::<OriginCheckedByHub>().is_none() {
        check_origin(&state.live, request.headers())?;
    }
    let live = state.runner.engine.attach_live(&token)?;
    let upgrade = upgrade_of(request).await?;
    Ok(upgrade.on_upgrade(move |socket| socket::serve(socket, live)))
}

pub(crate) async fn upgrade_of(request: Request) -> Result<WebSocketUpgrade, ApiError> {
    let (mut parts, _body) = request.into_parts();
    let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(|_| {
            ApiError::new(
                codes::WEBSOCKET_REQUIRED,
                "this endpoint only accepts a WebSocket handshake",
            )
        })?;
    Ok(upgrade
        .max_message_size(wire::MAX_MESSAGE)
        .max_frame_size(wire::MAX_MESSAGE))
}

/// The opt-in proxy of the provider's viewer: pages and assets over HTTP, its socket over a
/// tracked WebSocket.
async fn proxied<C: TaskContext + LiveSurface>(
    State(state): State<LiveApp<C>>,
    Path(params): Path<Vec<(String, String)>>,
    request: Request,
) -> Result<Response, ApiError> {
    let token = params
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
        .ok_or_else(gone)?;
    let Some(client) = state.live.proxy.as_ref() else {
        return Err(gone());
    };
    let target = state.runner.engine.live_target(&token).ok_or_else(gone)?;
    // Only a capture's browser has a provider's viewer (a takeover's has none).
    let viewer = target.provider_viewer.ok_or_else(gone)?;
    let suffix = proxy::view_suffix(request.uri().path()).ok_or_else(gone)?;
    let upstream = proxy::upstream_url(&viewer, suffix, request.uri().query()).ok_or_else(gone)?;
    let is_upgrade = request
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if is_upgrade {
        check_origin(&state.live, request.headers())?;
        let live: LiveAttachment<C> = state.runner.engine.attach_live(&token)?;
        let upgrade = upgrade_of(request).await?;
        let server = proxy::connect(upstream).await.ok_or_else(|| {
            ApiError::new(
                codes::LIVE_VIEW_UNAVAILABLE,
                "the provider's viewer did not answer",
            )
        })?;
        return Ok(upgrade.on_upgrade(move |client| proxy::pipe(client, server, live)));
    }
    proxy::fetch(
        client,
        upstream,
        &page::proxied_csp(&state.live.frame_ancestors),
    )
    .await
}
