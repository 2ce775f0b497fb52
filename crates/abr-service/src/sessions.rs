//! Sessions kept on the runner (`/v1/sessions/{id}`): a tenant stores a captured or
//! refreshed session under an id of its own and runs tasks and posts with `sessionId`; every
//! job that uses it writes the refreshed (scoped) state back.

use abr_protocol::{StoreSessionRequest, StoredSession, StoredSessionInfo};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::put;
use axum::{Json, Router};

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::state::AppState;
use crate::tenant::TenantHeader;
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> Router<AppState<C>> {
    Router::new().route(
        "/v1/sessions/{id}",
        put(store::<C>).get(restore::<C>).delete(forget::<C>),
    )
}

/// `PUT /v1/sessions/{id}`: keeps the session, scoped; answers counts, never values.
async fn store<C: TaskContext>(
    State(state): State<AppState<C>>,
    tenant: TenantHeader,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<StoreSessionRequest>,
) -> Result<Json<StoredSessionInfo>, ApiError> {
    let tenant = tenant.resolve(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .store_session(&tenant, &id, &request)
            .await?,
    ))
}

/// `GET /v1/sessions/{id}`: the session as kept, with every refresh since (restore).
async fn restore<C: TaskContext>(
    State(state): State<AppState<C>>,
    tenant: TenantHeader,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StoredSession>, ApiError> {
    let tenant = tenant.resolve(None)?;
    Ok(Json(
        state.runner.engine.sessions().get(&tenant, &id).await?,
    ))
}

/// `DELETE /v1/sessions/{id}`: 204, or 404 when there was none.
async fn forget<C: TaskContext>(
    State(state): State<AppState<C>>,
    tenant: TenantHeader,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant.resolve(None)?;
    state.runner.engine.sessions().delete(&tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
