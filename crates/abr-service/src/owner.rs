//! Forwarding to the owner, in a fleet. A browse session's browser, a capture, a task's run
//! (its takeover) and a relay runner's socket live in one replica's memory; the balancer
//! may send a call for one of them to any replica. This layer finds the owner in the
//! fleet's database ([`Places`]) and:
//!
//! - here, or placed nowhere: the call goes on, on this replica;
//! - another live replica: the call is forwarded to it over HTTP, to its `ABR_PUBLIC_URL`,
//!   with the caller's own headers: the hop adds no authority (the owner checks the caller's
//!   key and tenant again, as for any call), and it is marked ([`HOP_HEADER`]) so that it is
//!   never forwarded twice. Forwarding, not a redirect: behind one balancer's address a
//!   client cannot reach a replica by its own address, and a redirect would make every
//!   client handle it;
//! - a replica whose heartbeat lapsed, or whose node came back as a new boot:
//!   `410 replica_lost`, naming the node. What it held is never resumed (its tasks are
//!   ended by the fleet's sweep as a restart ends them).
//!
//! The caller is authenticated first (a missing or wrong key is `401` before anything is
//! looked up), and a placement of another tenant than the caller's key is ignored (the call
//! goes on here and finds nothing, as for an unknown id). A capture is placed by the
//! digest of its id (the id is its credential). Live-view URLs are not forwarded: they
//! name the owner's own `ABR_PUBLIC_URL`.

use std::time::Duration;

use abr_core::context::TaskContext;
use abr_protocol::codes;
use abr_store::{Placed, PlacementKind};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument as _;

use crate::api_error::ApiError;
use crate::placement::Places;
use crate::state::AppState;

/// Marks a call one replica forwarded to another (its value: the forwarding node's id).
pub(crate) const HOP_HEADER: &str = "abr-fleet-hop";

/// Headers of one hop only, never passed on.
const HOP_BY_HOP: [HeaderName; 5] = [
    header::HOST,
    header::CONNECTION,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// What a call is about, if it is about something one replica holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Placed under a kind and key.
    Placed(PlacementKind, String),
    /// A task's run (by its id).
    Run(String),
}

impl Target {
    fn what(&self) -> &'static str {
        match self {
            Self::Placed(PlacementKind::Browse, _) => "browse session",
            Self::Placed(PlacementKind::Capture, _) => "capture",
            Self::Placed(PlacementKind::Runner, _) => "relay runner",
            Self::Run(_) => "run",
        }
    }
}

/// The capture endpoints whose body names the capture.
const CAPTURE_BY_BODY: [&str; 3] = ["finish", "cancel", "status"];

/// The target a call's path and headers name, or that its body must tell (`Err(())`: a
/// capture endpoint with the id in its body).
fn target_of(method: &Method, path: &str, runner: Option<&str>) -> Result<Option<Target>, ()> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["v1", "relay", ..] | ["live", ..] => Ok(None),
        _ if runner.is_some() => {
            Ok(runner.map(|r| Target::Placed(PlacementKind::Runner, r.to_owned())))
        }
        ["v1", "runners", id, "update"] if !id.is_empty() => Ok(Some(Target::Placed(
            PlacementKind::Runner,
            (*id).to_owned(),
        ))),
        ["v1", "browse", id, ..] if !id.is_empty() => Ok(Some(Target::Placed(
            PlacementKind::Browse,
            (*id).to_owned(),
        ))),
        ["v1", "capture", action]
            if *method == Method::POST && CAPTURE_BY_BODY.contains(action) =>
        {
            Err(())
        }
        ["v1", "capture", id] if *method == Method::GET && !id.is_empty() => Ok(Some(
            Target::Placed(PlacementKind::Capture, crate::placement::capture_key(id)),
        )),
        ["v1", "tasks", id, "takeover", ..] if !id.is_empty() => {
            Ok(Some(Target::Run((*id).to_owned())))
        }
        _ => Ok(None),
    }
}

/// The capture id a capture endpoint's JSON body names.
fn capture_in(body: &[u8]) -> Option<Target> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = value.get("captureId")?.as_str()?;
    Some(Target::Placed(
        PlacementKind::Capture,
        crate::placement::capture_key(id),
    ))
}

/// The layer (outside the routes): forwards a call for something another replica holds.
pub(crate) async fn forward_to_owner<C: TaskContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(places) = state.runner.status().places() else {
        return next.run(request).await;
    };
    if request.headers().contains_key(HOP_HEADER) {
        // Forwarded here by another replica: answered here, whatever the database says.
        return next.run(request).await;
    }
    let runner = request
        .headers()
        .get(crate::relay::RUNNER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (request, target) =
        match target_of(request.method(), request.uri().path(), runner.as_deref()) {
            Ok(None) => return next.run(request).await,
            Ok(Some(target)) => (request, target),
            Err(()) => {
                let limit = state.runner.config.limits.body_limit_bytes;
                let (parts, body) = request.into_parts();
                let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
                    return ApiError::new(
                        codes::PAYLOAD_TOO_LARGE,
                        "the request body is too large",
                    )
                    .into_response();
                };
                let target = capture_in(&bytes);
                let request = Request::from_parts(parts, Body::from(bytes));
                match target {
                    Some(target) => (request, target),
                    // Not a capture's body: the route refuses it as it would anywhere.
                    None => return next.run(request).await,
                }
            }
        };
    let principal = match crate::tokens::principal_of(
        &state.tokens,
        state.runner.engine.keys(),
        request.headers(),
    )
    .await
    {
        Ok(Some(principal)) => principal,
        Ok(None) => return ApiError::unauthorized().into_response(),
        Err(e) => return e.into_response(),
    };
    let placed = match locate(places, &target).await {
        Ok(placed) => placed,
        Err(e) => {
            tracing::warn!(error = %e, "the fleet's database cannot say who holds a call's target");
            return ApiError::new(
                codes::STORE_FAILED,
                "the fleet's database cannot be reached to find the replica that holds this",
            )
            .into_response();
        }
    };
    let theirs = |p: &Placed| match (principal.tenant(), p.tenant.as_deref()) {
        (Some(mine), Some(its)) => mine == its,
        _ => true,
    };
    match placed {
        Some(p) if !p.here && theirs(&p) => {
            if !p.live {
                let node = p.node_id.as_deref().unwrap_or("a previous boot");
                return ApiError::new(
                    codes::REPLICA_LOST,
                    format!(
                        "the {} was held by replica {node}, which stopped or restarted: it is \
                         lost and is never resumed",
                        target.what()
                    ),
                )
                .into_response();
            }
            match p.address {
                Some(address) => forward(places, &state, &address, request, &target).await,
                None => next.run(request).await,
            }
        }
        _ => next.run(request).await,
    }
}

async fn locate(places: &Places, target: &Target) -> Result<Option<Placed>, abr_store::StoreError> {
    match target {
        Target::Placed(kind, key) => places.placed(*kind, key).await,
        Target::Run(id) => places.running(id).await,
    }
}

/// Sends `request` to the replica at `address` and answers what it answered.
async fn forward<C: TaskContext>(
    places: &Places,
    state: &AppState<C>,
    address: &str,
    request: Request,
    target: &Target,
) -> Response {
    let limit = state.runner.config.limits.body_limit_bytes;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        return ApiError::new(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
            .into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let url = format!("{}{path}", address.trim_end_matches('/'));
    let mut headers = parts.headers.clone();
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
    let Ok(node) = header::HeaderValue::from_str(places.node_id()) else {
        return ApiError::new(codes::INTERNAL, "internal error").into_response();
    };
    headers.insert(HOP_HEADER, node);
    // One trace across the hop: the owner's request is this span's child.
    let span = tracing::info_span!(
        target: crate::traces::TARGET,
        "fleet",
        otel.name = "fleet forward",
        otel.kind = "client",
        holds = target.what(),
    );
    span.in_scope(|| crate::traces::propagate::replace_with_current(&mut headers));
    // The owner's own deadline answers first; this one only bounds a replica that hangs.
    let timeout = state.runner.config.limits.request_timeout + Duration::from_secs(10);
    let sent = places
        .client()
        .request(parts.method.clone(), &url)
        .headers(headers)
        .timeout(timeout)
        .body(body)
        .send()
        .instrument(span)
        .await;
    let safe = matches!(parts.method, Method::GET | Method::HEAD);
    let response = match sent {
        Ok(response) => response,
        Err(e) => return unreachable_or_unknown(&e, safe, target),
    };
    let status = response.status();
    let mut headers = response.headers().clone();
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
    let bytes: Bytes = match response.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => return unreachable_or_unknown(&e, safe, target),
    };
    let mut answer = Response::new(Body::from(bytes));
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    answer
}

/// The answer to a forward that failed: nothing was done when the owner never took the
/// call (or the call reads only); otherwise it may have acted.
fn unreachable_or_unknown(e: &reqwest::Error, safe: bool, target: &Target) -> Response {
    tracing::warn!(error = %e, what = target.what(), "a call forwarded to its replica failed");
    if e.is_connect() || safe {
        return ApiError::new(
            codes::REPLICA_UNREACHABLE,
            format!(
                "the replica that holds this {} did not take the call: nothing was done",
                target.what()
            ),
        )
        .retry_after(Duration::from_secs(1))
        .into_response();
    }
    ApiError::new(
        codes::REPLICA_OUTCOME_UNKNOWN,
        format!(
            "the replica that holds this {} took the call and its answer was lost: it may have \
             acted; read the record before anything else",
            target.what()
        ),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_are_the_calls_for_what_one_replica_holds() {
        let browse = |id: &str| Ok(Some(Target::Placed(PlacementKind::Browse, id.to_owned())));
        assert_eq!(
            target_of(&Method::GET, "/v1/browse/b1/snapshot", None),
            browse("b1")
        );
        assert_eq!(
            target_of(&Method::POST, "/v1/browse/b1/act", None),
            browse("b1")
        );
        assert_eq!(
            target_of(&Method::DELETE, "/v1/browse/b1", None),
            browse("b1")
        );
        assert_eq!(target_of(&Method::POST, "/v1/browse", None), Ok(None));
        assert_eq!(
            target_of(&Method::POST, "/v1/tasks/t1/takeover/resume", None),
            Ok(Some(Target::Run("t1".into())))
        );
        assert_eq!(target_of(&Method::GET, "/v1/tasks/t1", None), Ok(None));
        assert_eq!(
            target_of(&Method::POST, "/v1/capture/finish", None),
            Err(())
        );
        assert_eq!(
            target_of(&Method::POST, "/v1/capture/start", None),
            Ok(None)
        );
        assert_eq!(
            target_of(&Method::GET, "/v1/capture/c1", None),
            Ok(Some(Target::Placed(
                PlacementKind::Capture,
                crate::placement::capture_key("c1")
            )))
        );
        assert_eq!(
            target_of(&Method::POST, "/v1/post", Some("r1")),
            Ok(Some(Target::Placed(PlacementKind::Runner, "r1".into())))
        );
        assert_eq!(
            target_of(&Method::GET, "/v1/relay/r1/connect", Some("r1")),
            Ok(None)
        );
        assert_eq!(target_of(&Method::GET, "/live/tok/ws", None), Ok(None));
        assert_eq!(
            capture_in(br#"{"captureId": "c1", "storeAs": "x"}"#),
            Some(Target::Placed(
                PlacementKind::Capture,
                crate::placement::capture_key("c1")
            ))
        );
        assert_eq!(
            capture_in(br#"{"captureId": "c2", "workspaceId": "w"}"#),
            Some(Target::Placed(
                PlacementKind::Capture,
                crate::placement::capture_key("c2")
            ))
        );
        assert_eq!(capture_in(b"not json"), None);
    }
}
