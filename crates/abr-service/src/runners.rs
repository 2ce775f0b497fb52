//! `GET /v1/runners` on a hub: the runners connected now that the caller's tenant reaches
//! (those enrolled for it; an operator also sees the runners an operator's token linked),
//! with when each connected, when it was last heard from, its health, version and launch
//! kind; `POST /v1/runners/{runnerId}/update` asks one to restart on a newer installed
//! release.

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::codes;
use abr_protocol::relay::{RunnersResponse, UpdateRequested};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::http::StatusCode;

use crate::api_error::{ApiError, ApiPath};
use crate::openapi::Documented;
use crate::relay::Hub;
use crate::state::AppState;
use crate::tenant::Caller;

/// The route (behind the bearer check), on `hub`.
pub(crate) fn routes<C: TaskContext>(hub: Hub) -> ApiRouter<AppState<C>> {
    let asks = hub.clone();
    ApiRouter::new()
        .api_route(
            "/v1/runners",
            get_with(
                move |caller: Caller| list(hub.clone(), caller),
                |o| {
                    o.id("listRunners")
                        .summary("The tenant's relay runners connected now")
                        .needs(Right::Read)
                },
            ),
        )
        .api_route(
            "/v1/runners/{runner_id}/update",
            post_with(
                move |caller: Caller, path: ApiPath<String>| update(asks.clone(), caller, path),
                |o| {
                    o.id("updateRunner")
                        .summary(
                            "Ask a connected runner to restart on the newer release installed \
                             where its binary is, with the same flags (it refuses an older \
                             one); its answer shows in `GET /v1/runners`",
                        )
                        .needs(Right::EnrollRunner)
                        .response::<202, Json<UpdateRequested>>()
                        .errors(&[codes::RUNNER_NOT_FOUND])
                },
            ),
        )
}

/// `POST /v1/runners/{runnerId}/update` (an approver of the runner's tenant, or an
/// operator): the runner is told; a runner the caller does not reach is offline to it.
async fn update(
    hub: Hub,
    caller: Caller,
    ApiPath(runner_id): ApiPath<String>,
) -> Result<(StatusCode, Json<UpdateRequested>), ApiError> {
    let actor = caller.actor(None)?;
    actor.require(Right::EnrollRunner)?;
    let operator = caller.principal().tenant().is_none();
    let tenant = actor.tenant().to_owned();
    let version = hub
        .request_update(&runner_id, |serves| match serves {
            Some(serves) => serves == tenant,
            None => operator,
        })
        .await
        .ok_or_else(|| {
            ApiError::new(
                codes::RUNNER_NOT_FOUND,
                "no runner with this id is connected to the hub for this tenant: nothing was \
                 asked",
            )
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(UpdateRequested { runner_id, version }),
    ))
}

async fn list(hub: Hub, caller: Caller) -> Result<Json<RunnersResponse>, ApiError> {
    let actor = caller.actor(None)?;
    actor.require(Right::Read)?;
    let operator = caller.principal().tenant().is_none();
    let runners = hub
        .runners()
        .into_iter()
        .filter(|(serves, _)| match serves {
            Some(tenant) => tenant == actor.tenant(),
            None => operator,
        })
        .map(|(_, info)| info)
        .collect();
    Ok(Json(RunnersResponse { runners }))
}
