//! The hub's forwarding layer: a call that names a runner (`x-abr-runner`) is
//! authenticated here, then relayed to that runner instead of running on the hub, with the
//! principal it authenticated ([`PRINCIPAL_HEADER`]): the runner acts as that key, with its
//! role and tenant. A runner enrolled for a tenant is reached only by keys of that tenant
//! (and operators, pinned to it); a runner an operator's token connected, only by
//! operators. Any other caller is told the runner is offline, as if it did not exist (after
//! the same wait).

use std::sync::Arc;

use abr_core::principal::Principal;
use abr_protocol::codes;
use abr_protocol::relay::{PRINCIPAL_HEADER, RelayedPrincipal};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument as _;

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
    /// The hub's API keys (a key names its principal here as on the hub's own API).
    pub(crate) keys: abr_engine::Keys,
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
    let principal =
        match crate::tokens::principal_of(&state.tokens, &state.keys, request.headers()).await {
            Ok(Some(principal)) => principal,
            Ok(None) => return ApiError::unauthorized().into_response(),
            Err(e) => return e.into_response(),
        };
    if let Err(refused) = crate::tokens::calls_the_api(&principal) {
        return refused.into_response();
    }
    let Some(runner) = runner.filter(|r| valid_runner_id(r)) else {
        return ApiError::new(
            codes::INVALID_REQUEST,
            "x-abr-runner must be one runner id: 1 to 64 of A-Z a-z 0-9 . _ -",
        )
        .into_response();
    };
    let Some(named) = state
        .hub
        .reach_within_wait(&runner, |serves| relayed_as(&principal, serves))
        .await
    else {
        // Not connected within the wait, or not this caller's: the same answer after the
        // same wait, nothing was done.
        return ApiError::new(
            codes::RUNNER_OFFLINE,
            "no runner with this id is connected to the hub; nothing was done",
        )
        .into_response();
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, state.body_limit).await else {
        return ApiError::new(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
            .into_response();
    };
    let mut headers = forwarded_headers(&parts.headers);
    match serde_json::to_string(&named) {
        Ok(json) => headers.push((PRINCIPAL_HEADER.to_owned(), json)),
        Err(_) => return ApiError::new(codes::INTERNAL, "internal error").into_response(),
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    // One trace from hub to runner and back: the runner's request is this span's child.
    let span = tracing::info_span!(
        target: crate::traces::TARGET,
        "relay",
        otel.name = "relay forward",
        otel.kind = "client",
        runner = %runner,
    );
    headers.extend(span.in_scope(|| crate::traces::propagate::for_relay(&parts.headers)));
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
        .instrument(span)
        .await;
    if response.status() == StatusCode::UNAUTHORIZED {
        // The runner trusts its hub: a 401 can only be its own misconfiguration.
        tracing::warn!(target: "abr::relay", runner, "the runner refused a relayed request");
    }
    response
}

/// Who a runner serving `serves` (its tenant; `None`: only operators) is told the caller
/// is, or `None` when the caller may not reach it. An operator is pinned to the runner's
/// tenant.
fn relayed_as(principal: &Principal, serves: Option<&str>) -> Option<RelayedPrincipal> {
    let tenant = match (serves, principal.tenant()) {
        (Some(serves), Some(own)) if serves == own => Some(serves),
        (Some(serves), None) => Some(serves),
        (None, None) => None,
        _ => return None,
    };
    Some(RelayedPrincipal {
        key_id: principal.key_id().to_owned(),
        name: principal.name().to_owned(),
        role: principal.role(),
        tenant_id: tenant.map(str::to_owned),
        read_only: principal.read_only(),
    })
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
    use abr_protocol::Role;
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
        // A caller's own principal header is never forwarded (only the hub sets it).
        let mut forged = HeaderMap::new();
        forged.insert(
            PRINCIPAL_HEADER,
            HeaderValue::from_static(r#"{"keyId":"x","name":"x","role":"operator"}"#),
        );
        assert!(forwarded_headers(&forged).is_empty());
    }

    #[test]
    fn a_runner_is_reached_by_keys_of_its_tenant_and_operators_pinned_to_it() {
        use abr_core::principal::Tenants;
        let key = |role, tenant: &str| {
            Principal::new("k", "n", role, Tenants::One(tenant.into()), false).unwrap()
        };
        let operator = Principal::operator("op", "ops");
        let agent_a = key(Role::Agent, "a");
        assert_eq!(
            relayed_as(&agent_a, Some("a"))
                .unwrap()
                .tenant_id
                .as_deref(),
            Some("a")
        );
        assert!(
            relayed_as(&agent_a, Some("b")).is_none(),
            "another tenant's runner"
        );
        assert!(
            relayed_as(&agent_a, None).is_none(),
            "an operator-connected runner"
        );
        assert_eq!(
            relayed_as(&operator, Some("b"))
                .unwrap()
                .tenant_id
                .as_deref(),
            Some("b"),
            "pinned"
        );
        assert_eq!(relayed_as(&operator, None).unwrap().tenant_id, None);
    }
}
