//! The keys API (`/v1/keys`, operators only): create a key (its token shown once), list
//! them, revoke one. `abr keys create|list|revoke` does the same on the data directory.

use abr_core::context::TaskContext;
use abr_protocol::{CreatedKey, KeyInfo, KeyRequest, KeysResponse};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, post};
use axum::{Json, Router};

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::state::AppState;
use crate::tenant::Caller;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> Router<AppState<C>> {
    Router::new()
        .route("/v1/keys", post(create::<C>).get(list::<C>))
        .route("/v1/keys/{id}", delete(revoke::<C>))
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
