//! The hub's forwarding layer: a call that names a runner (`x-abr-runner`) is
//! authenticated here, then relayed to that runner instead of running on the hub.

use std::sync::Arc;

use abr_protocol::codes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Hub, RUNNER_HEADER, valid_runner_id};
use crate::api_error::ApiError;
use crate::live::LiveState;
use crate::tokens::TokenSet;

/// The request headers a runner gets: what the API reads, never a credential of the hub.
const FORWARDED: [&str; 6] = [
    "content-type",
    "accept",
    "x-tenant-id",
    "idempotency-key",
    "x-proposal-id",
    "last-event-id",
];

/// What the forwarding layer needs.
#[derive(Clone, Debug)]
pub(crate) struct ForwardState {
    pub(crate) tokens: Arc<TokenSet>,
    pub(crate) hub: Hub,
    pub(crate) body_limit: usize,
    /// The hub's public base URL: forwarded live-view URLs are moved to it.
    pub(crate) public_base: String,
    /// The hub's live-view settings (the origins a viewer's socket may come from).
    pub(crate) live: Arc<LiveState>,
}

/// Relays a request that carries `x-abr-runner` (after the bearer check); any other goes on.
pub(crate) async fn forward_to_runner(
    State(state): State<ForwardState>,
    request: Request,
    next: Next,
) -> Response {
    // The live view of a runner's capture: its token says where it goes, not a header.
    if request.uri().path().starts_with("/live/") {
        return super::live::live_over_relay(&state.hub, &state.live, request, next).await;
    }
    let mut named = request.headers().get_all(RUNNER_HEADER).iter();
    let runner = match (named.next(), named.next()) {
        (None, _) => return next.run(request).await,
        (Some(value), None) => value.to_str().ok().map(str::to_owned),
        (Some(_), Some(_)) => None,
    };
    // The relay's own endpoints are the hub's, whatever the header says.
    if request.uri().path().starts_with("/v1/relay/") {
        return next.run(request).await;
    }
    if !state.tokens.authorizes(request.headers()) {
        return ApiError::unauthorized().into_response();
    }
    let Some(runner) = runner.filter(|r| valid_runner_id(r)) else {
        return ApiError::new(
            codes::INVALID_REQUEST,
            "x-abr-runner must be one runner id: 1 to 64 of A-Z a-z 0-9 . _ -",
        )
        .into_response();
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, state.body_limit).await else {
        return ApiError::new(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
            .into_response();
    };
    let headers = forwarded_headers(&parts.headers);
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let response = state
        .hub
        .forward(
            &runner,
            parts.method.as_str(),
            &path,
            headers,
            body,
            &state.public_base,
        )
        .await;
    if response.status() == StatusCode::UNAUTHORIZED {
        // The runner trusts its hub: a 401 can only be its own misconfiguration.
        tracing::warn!(target: "abr::relay", runner, "the runner refused a relayed request");
    }
    response
}

fn forwarded_headers(headers: &axum::http::HeaderMap) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in FORWARDED {
        for value in headers.get_all(name) {
            if let Ok(value) = value.to_str() {
                out.push((name.to_owned(), value.to_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue, header};

    #[test]
    fn the_hubs_credentials_never_reach_a_runner() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer hub-secret"),
        );
        headers.insert(header::COOKIE, HeaderValue::from_static("s=1"));
        headers.insert(RUNNER_HEADER, HeaderValue::from_static("r1"));
        headers.insert("x-tenant-id", HeaderValue::from_static("t1"));
        headers.insert("idempotency-key", HeaderValue::from_static("k1"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let forwarded = forwarded_headers(&headers);
        let names: Vec<&str> = forwarded.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["content-type", "x-tenant-id", "idempotency-key"]);
        assert!(!forwarded.iter().any(|(_, v)| v.contains("hub-secret")));
    }
}
