//! Sessions kept on the runner (`/v1/sessions/{id}`): a tenant stores a captured or
//! refreshed session under an id of its own and runs tasks and posts with `sessionId`; every
//! job that uses it writes the refreshed (scoped) state back.

use abr_core::principal::Right;
use abr_protocol::{StoreSessionRequest, StoredSession, StoredSessionInfo, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::put_with;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::openapi::Documented;
use crate::state::AppState;
use crate::tenant::Caller;
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
        "/v1/sessions/{id}",
        put_with(store::<C>, |o| {
            o.id("storeSession")
                .summary("Keep a session under an id, filtered to its platform's scope")
                .description("Answers counts, never cookie or storage values.")
                .needs(Right::Sessions)
                .errors(&[
                    codes::UNKNOWN_PLATFORM,
                    codes::INVALID_SCOPE,
                    codes::SESSION_BOUND,
                    codes::STORE_FAILED,
                ])
        })
        .get_with(restore::<C>, |o| {
            o.id("getSession")
                .summary("The session as kept, with every refresh since (restore)")
                .description(
                    "A session bound to a read-only or attended-only platform is read out to \
                     operators only.",
                )
                .needs(Right::Sessions)
                .errors(&[codes::SESSION_NOT_FOUND, codes::STORE_FAILED])
        })
        .delete_with(forget::<C>, |o| {
            o.id("deleteSession")
                .summary("Forget a kept session")
                .needs(Right::Sessions)
                .response::<204, ()>()
                .errors(&[codes::SESSION_NOT_FOUND])
        }),
    )
}

/// `PUT /v1/sessions/{id}`: keeps the session, scoped; answers counts, never values.
async fn store<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<StoreSessionRequest>,
) -> Result<Json<StoredSessionInfo>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .store_session(&actor, &id, &request)
            .await?,
    ))
}

/// `GET /v1/sessions/{id}`: the session as kept, with every refresh since (restore).
async fn restore<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StoredSession>, ApiError> {
    // The hub never reads a stored session out of this runner unless its operator said so.
    if kept_on_this_machine(&state, &caller) {
        return Err(ApiError::new(
            codes::FORBIDDEN,
            "this runner keeps its stored sessions on its machine: the hub may not read them \
             (start it with --allow-session-export to allow it)",
        ));
    }
    let actor = caller.actor(None)?;
    Ok(Json(
        state.runner.engine.restore_session(&actor, &id).await?,
    ))
}

/// `DELETE /v1/sessions/{id}`: 204, or 404 when there was none.
async fn forget<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let actor = caller.actor(None)?;
    state.runner.engine.delete_session(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether a session must not leave this runner in the answer to `caller`: a call relayed
/// from a hub while session export is off (`ABR_RELAY_SESSION_EXPORT`, `abr up
/// --allow-session-export`). Reading a stored session and finishing a capture both ask it.
pub(crate) fn kept_on_this_machine<C: TaskContext>(state: &AppState<C>, caller: &Caller) -> bool {
    caller.relayed() && !state.runner.config.relay_session_export
}
