//! The keys API (`/v1/keys`, operators only): create a key (its token shown once), list
//! them, revoke one. `abr keys create|list|revoke` does the same on the data directory.

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::codes;
use abr_protocol::{CreatedKey, KeyInfo, KeyRequest, KeysResponse};
use aide::axum::ApiRouter;
use aide::axum::routing::{delete_with, post_with};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::openapi::Documented;
use crate::state::AppState;
use crate::tenant::Caller;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/keys",
            post_with(create::<C>, |o| {
                o.id("createKey")
                    .summary("Create an API key: its token is shown this once")
                    .needs(Right::Operate)
                    .response::<201, Json<CreatedKey>>()
                    .errors(&[codes::STORE_FAILED])
            })
            .get_with(list::<C>, |o| {
                o.id("listKeys")
                    .summary("Every key, never a token")
                    .needs(Right::Operate)
            }),
        )
        .api_route(
            "/v1/keys/{id}",
            delete_with(revoke::<C>, |o| {
                o.id("revokeKey")
                    .summary("Revoke a key: it authenticates nothing from now on")
                    .needs(Right::Operate)
                    .errors(&[codes::KEY_NOT_FOUND])
            }),
        )
}

/// `POST /v1/keys`: `201` with the key and its token (shown this once).
async fn create<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<KeyRequest>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let created = state
        .runner
        .engine
        .keys()
        .create(caller.principal(), &request)
        .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `GET /v1/keys`: every key, revoked ones included, oldest first; never a token.
async fn list<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<KeysResponse>, ApiError> {
    let keys = state.runner.engine.keys().list(caller.principal()).await?;
    Ok(Json(KeysResponse { keys }))
}

/// `DELETE /v1/keys/{id}`: the key, revoked (from now on it authenticates nobody).
async fn revoke<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<KeyInfo>, ApiError> {
    Ok(Json(
        state
            .runner
            .engine
            .keys()
            .revoke(caller.principal(), &id)
            .await?,
    ))
}
