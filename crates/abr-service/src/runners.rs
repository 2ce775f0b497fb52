//! `GET /v1/runners` on a hub: the runners connected now that the caller's tenant reaches
//! (those enrolled for it; an operator also sees the runners an operator's token linked),
//! with when each connected, when it was last heard from, its health, version and launch
//! kind.

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::relay::RunnersResponse;
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;

use crate::api_error::ApiError;
use crate::openapi::Documented;
use crate::relay::Hub;
use crate::state::AppState;
use crate::tenant::Caller;

/// The route (behind the bearer check), on `hub`.
pub(crate) fn routes<C: TaskContext>(hub: Hub) -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
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
