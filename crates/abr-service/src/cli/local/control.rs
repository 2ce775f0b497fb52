//! The local runner's control endpoint: `POST /v1/local/shutdown {"drain": true|false}`
//! with `Authorization: Bearer <control token>`.
//!
//! It is served on its own loopback listener, apart from the runner's API, so that it
//! still answers while the API drains (`abr down --now` after `abr down` upgrades a drain
//! to an immediate stop), and so that nothing that reaches the runner's API (a relay
//! forwarding a hub's calls, say) can reach it. Only a process that can read the 0600
//! state file has the token; it is compared in constant time.

use std::sync::Arc;
use std::time::Duration;

use abr_protocol::codes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::LocalError;
use super::link::Shutdown;
use super::state::{ControlToken, RunnerState};
use crate::http::{ApiError, ApiJson};

/// The path of the stop request.
pub(crate) const SHUTDOWN_PATH: &str = "/v1/local/shutdown";

/// The body of a stop request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ShutdownRequest {
    /// `true`: finish running work first; `false`: stop now.
    pub(crate) drain: bool,
}

/// The answer to a stop request: what the runner is doing now.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ShutdownAnswer {
    /// `drain` or `now`.
    pub(crate) stopping: String,
}

/// What the control handlers share.
#[derive(Debug)]
struct Control {
    token: ControlToken,
    shutdown: watch::Sender<Shutdown>,
}

/// The control router: the stop request, behind the control token.
pub(crate) fn router(token: ControlToken, shutdown: watch::Sender<Shutdown>) -> Router {
    let control = Arc::new(Control { token, shutdown });
    Router::new()
        .route(SHUTDOWN_PATH, post(stop))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&control),
            require_token,
        ))
        .fallback(|| async { ApiError::new(codes::NOT_FOUND, "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                codes::METHOD_NOT_ALLOWED,
                "this endpoint does not accept this method",
            )
        })
        .layer(DefaultBodyLimit::max(4096))
        .with_state(control)
}

/// Refuses a request without exactly one `Authorization: Bearer <control token>`.
async fn require_token(
    State(control): State<Arc<Control>>,
    request: Request,
    next: Next,
) -> Response {
    if crate::tokens::bearer(request.headers()).is_some_and(|t| control.token.matches(t)) {
        next.run(request).await
    } else {
        ApiError::new(codes::UNAUTHORIZED, "no valid control token").into_response()
    }
}

/// Asks the runner to stop: a drain never undoes an immediate stop already asked for.
async fn stop(
    State(control): State<Arc<Control>>,
    ApiJson(request): ApiJson<ShutdownRequest>,
) -> (StatusCode, Json<ShutdownAnswer>) {
    let wanted = if request.drain {
        Shutdown::Drain
    } else {
        Shutdown::Now
    };
    control
        .shutdown
        .send_if_modified(|current| current.advance(wanted));
    let stopping = match *control.shutdown.borrow() {
        Shutdown::Now => "now",
        Shutdown::Drain | Shutdown::Running => "drain",
    };
    tracing::info!(stopping, "stop requested over the control endpoint");
    (
        StatusCode::ACCEPTED,
        Json(ShutdownAnswer {
            stopping: stopping.to_owned(),
        }),
    )
}

/// Sends the stop request to the runner `state` describes. The token goes only to a
/// loopback address.
///
/// # Errors
/// [`LocalError::Control`] when the state's control URL is not on loopback, or the runner
/// does not answer `202`.
pub(crate) async fn request_stop(state: &RunnerState, drain: bool) -> Result<(), LocalError> {
    let refused = |reason: String| LocalError::Control {
        pid: state.pid,
        reason,
    };
    let url = url::Url::parse(&state.control_url)
        .ok()
        .filter(|u| u.scheme() == "http" && u.host_str() == Some("127.0.0.1"))
        .ok_or_else(|| refused("its control URL is not an http://127.0.0.1 address".to_owned()))?;
    let url = url
        .join(SHUTDOWN_PATH)
        .map_err(|e| refused(format!("bad control URL: {e}")))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| refused(format!("no HTTP client: {e}")))?;
    let response = client
        .post(url)
        .bearer_auth(state.control_token.expose())
        .json(&ShutdownRequest { drain })
        .send()
        .await
        .map_err(|e| refused(format!("cannot reach it: {}", e.without_url())))?;
    if response.status() == StatusCode::ACCEPTED {
        Ok(())
    } else {
        Err(refused(format!(
            "it answered HTTP {}",
            response.status().as_u16()
        )))
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, header};
    use tower::ServiceExt as _;

    use super::*;

    fn control() -> (ControlToken, watch::Receiver<Shutdown>, Router) {
        let token = ControlToken::generate().unwrap();
        let (tx, rx) = watch::channel(Shutdown::Running);
        (token.clone(), rx, router(token, tx))
    }

    async fn send(app: &Router, auth: Option<&str>, body: &str) -> (StatusCode, serde_json::Value) {
        let mut request =
            Request::post(SHUTDOWN_PATH).header(header::CONTENT_TYPE, "application/json");
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        let response = app
            .clone()
            .oneshot(request.body(Body::from(body.to_owned())).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// Another local user (or a page in a browser posting to loopback) without the state
    /// file's token cannot stop the runner: no token, a wrong one, a prefix of the right
    /// one, the right one twice, or the right one under another scheme.
    #[tokio::test]
    async fn a_stop_without_the_control_token_is_refused_and_changes_nothing() {
        let (token, rx, app) = control();
        let right = token.expose();
        let attempts = [
            None,
            Some("Bearer ".to_owned()),
            Some("Bearer wrong-token-0123456789abcdef".to_owned()),
            Some(format!("Bearer {}", &right[..right.len() - 1])),
            Some(format!("Basic {right}")),
            Some(right.to_owned()),
        ];
        for auth in &attempts {
            let (status, body) = send(&app, auth.as_deref(), r#"{"drain":false}"#).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{auth:?}");
            assert_eq!(body["error"]["code"], "unauthorized");
            assert_eq!(*rx.borrow(), Shutdown::Running, "{auth:?}");
        }
        let twice = Request::post(SHUTDOWN_PATH)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {right}"))
            .header(header::AUTHORIZATION, format!("Bearer {right}"))
            .body(Body::from(r#"{"drain":false}"#))
            .unwrap();
        let response = app.clone().oneshot(twice).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(*rx.borrow(), Shutdown::Running);
    }

    #[tokio::test]
    async fn drain_then_now_upgrades_and_a_drain_never_downgrades() {
        let (token, rx, app) = control();
        let auth = format!("Bearer {}", token.expose());
        let (status, body) = send(&app, Some(&auth), r#"{"drain":true}"#).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(body["stopping"], "drain");
        assert_eq!(*rx.borrow(), Shutdown::Drain);
        let (_, body) = send(&app, Some(&auth), r#"{"drain":false}"#).await;
        assert_eq!(body["stopping"], "now");
        assert_eq!(*rx.borrow(), Shutdown::Now);
        let (status, body) = send(&app, Some(&auth), r#"{"drain":true}"#).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(body["stopping"], "now");
        assert_eq!(*rx.borrow(), Shutdown::Now);
    }

    #[tokio::test]
    async fn bad_bodies_and_paths_get_envelopes() {
        let (token, rx, app) = control();
        let auth = format!("Bearer {}", token.expose());
        for (body, code) in [
            ("{", "invalid_json"),
            (r#"{"drain":"yes"}"#, "invalid_request"),
            (r#"{"drain":true,"extra":1}"#, "invalid_request"),
            ("{}", "invalid_request"),
        ] {
            let (status, reply) = send(&app, Some(&auth), body).await;
            assert!(status.is_client_error(), "{body}: {status}");
            assert_eq!(reply["error"]["code"], code, "{body}");
        }
        assert_eq!(*rx.borrow(), Shutdown::Running);
        let big = format!(r#"{{"drain":true,"pad":"{}"}}"#, "x".repeat(10_000));
        let (status, _) = send(&app, Some(&auth), &big).await;
        assert!(status.is_client_error(), "{status}");
        let response = app
            .clone()
            .oneshot(Request::get("/v1/health").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
}
