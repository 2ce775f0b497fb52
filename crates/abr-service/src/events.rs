//! `GET /v1/events`: the caller's tenant's run events as server-sent events, from when it
//! connected: `approval_required`, takeover transitions, `step_progress`, `run_stalled`,
//! `run_ended` (each an SSE `event:` of that name, its data the [`RunEvent`] JSON, its `id:`
//! the event's sequence in the tenant's log). The events of every replica of a fleet are in
//! the one log, in one order: any replica's stream carries them all, without gaps. A client
//! that reconnects with `Last-Event-ID: n` gets every event after `n` first (none is lost
//! while it was away); events older than the retention are gone, and a stream that resumes
//! before them is told how many (`event: missed`, `{"missed": n}`). The stream ends when the
//! runner stops, or when the key that opened it is revoked or expires. It takes no query
//! parameter (`422` for one; a `Last-Event-ID` that is not a number is `422` too). The same
//! events go to the signed webhook (`ABR_EVENTS_WEBHOOK`).
//!
//! [`RunEvent`]: abr_protocol::RunEvent

use std::convert::Infallible;

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_engine::Received;
use abr_protocol::codes;
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use crate::api_error::ApiError;
use crate::openapi::{Documented, EventStream};
use crate::state::AppState;
use crate::tenant::Caller;

/// The route (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
        "/v1/events",
        get_with(stream::<C>, |o| {
            o.id("streamEvents")
                .summary("The tenant's events, as they happen (server-sent events)")
                .description(
                    "Each event's `id` is its tenant sequence: reconnect with `Last-Event-ID` \
                     to resume without a gap; an event named `missed` says how many were \
                     pruned before a resume. The stream closes when the key is revoked.",
                )
                .needs(Right::Read)
                .header(
                    "last-event-id",
                    "Resume after this event id (a number this stream sent).",
                )
        }),
    )
}

/// No query parameter: one is refused, as the lists refuse one they do not know.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoQuery {}

/// The SSE header a reconnecting client sends: the id of the last event it got.
const LAST_EVENT_ID: &str = "last-event-id";

async fn stream<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    headers: HeaderMap,
    query: Result<Query<NoQuery>, QueryRejection>,
) -> Result<
    EventStream<impl Stream<Item = Result<Event, Infallible>>, abr_protocol::RunEvent>,
    ApiError,
> {
    if query.is_err() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the event stream takes no query parameter",
        ));
    }
    let after = match headers.get(LAST_EVENT_ID) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::new(
                        codes::INVALID_REQUEST,
                        "Last-Event-ID must be the id of an event this stream sent (a number)",
                    )
                })?,
        ),
    };
    let actor = caller.actor(None)?;
    let events = state.runner.engine.subscribe_events(&actor, after).await?;
    let stream = futures::stream::unfold(events, |mut events| async move {
        let event = match events.next().await {
            Received::Event(event) => Event::default()
                .id(events.last_seq().to_string())
                .event(event.event.clone())
                .json_data(&*event)
                .unwrap_or_default(),
            Received::Missed(n) => Event::default()
                .event("missed")
                .json_data(serde_json::json!({ "missed": n }))
                .unwrap_or_default(),
            Received::Closed | Received::Revoked => return None,
        };
        Some((Ok(event), events))
    });
    Ok(EventStream::new(
        Sse::new(stream).keep_alive(KeepAlive::default()),
    ))
}
