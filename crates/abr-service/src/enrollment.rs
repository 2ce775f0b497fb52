//! Runner enrollment at a hub: `POST /v1/relay/enrollments` (an operator, or an approver
//! of the tenant) makes a one-time code for one runner id, valid for ten minutes; the runner
//! trades it at `POST /v1/relay/enroll` (the code is the credential: no bearer) for its
//! runner credential, bound to that runner id and tenant, which from then on mints its
//! relay tokens (see [`Keys::enroll`](abr_engine::Keys::enroll)). Both tell the keys what
//! the hub sees of the runner id ([`RunnerPresence`]): a connected id is enrolled again only
//! by an operator, and only while its own credential holds it; a code is refused while the
//! id is connected.

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_engine::RunnerPresence;
use abr_protocol::codes;
use abr_protocol::relay::{EnrollRequest, Enrollment, EnrollmentRequest, RunnerCredential};
use aide::axum::ApiRouter;
use aide::axum::routing::post_with;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::api_error::{ApiError, ApiJson};
use crate::openapi::Documented;
use crate::relay::Hub;
use crate::state::AppState;
use crate::tenant::Caller;

/// `POST /v1/relay/enrollments` (behind the bearer check), for runners of `hub`.
pub(crate) fn protected_routes<C: TaskContext>(hub: Hub) -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
        "/v1/relay/enrollments",
        post_with(
            move |state, caller, request| enrollment::<C>(hub.clone(), state, caller, request),
            |o| {
                o.id("createEnrollment")
                    .summary("A one-time enrollment code for a relay runner of the tenant")
                    .needs(Right::EnrollRunner)
                    .response::<201, Json<Enrollment>>()
                    .errors(&[codes::RUNNER_CONFLICT])
            },
        ),
    )
}

/// `POST /v1/relay/enroll` (its code is its credential), for runners of `hub`.
pub(crate) fn public_routes<C: TaskContext>(hub: Hub) -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
        "/v1/relay/enroll",
        post_with(
            move |state, request| enroll::<C>(hub.clone(), state, request),
            |o| {
                o.id("enrollRunner")
                    .summary(
                        "Redeem an enrollment code (its own credential) for a runner credential",
                    )
                    .description("Once, within minutes of its minting; no key needed.")
                    .response::<201, Json<RunnerCredential>>()
                    .errors(&[codes::UNAUTHORIZED, codes::RUNNER_CONFLICT])
            },
        ),
    )
}

/// `201` with a one-time enrollment code for the runner id, serving the caller's tenant.
async fn enrollment<C: TaskContext>(
    hub: Hub,
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<EnrollmentRequest>,
) -> Result<(StatusCode, Json<Enrollment>), ApiError> {
    let actor = caller.actor(request.tenant_id.as_deref())?;
    let connected_by = hub.connected_by(&request.runner_id);
    let minted = state
        .runner
        .engine
        .keys()
        .enroll(
            &actor,
            &request.runner_id,
            presence(connected_by.as_deref()),
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(Enrollment {
            runner_id: minted.runner_id,
            tenant_id: minted.tenant,
            code: minted.code,
            expires_at: minted.expires_at,
        }),
    ))
}

/// `201` with the runner's credential; `401` for a code that is not one, used, expired or
/// made for another runner id (the code is used up by the first attempt either way).
async fn enroll<C: TaskContext>(
    hub: Hub,
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<EnrollRequest>,
) -> Result<(StatusCode, Json<RunnerCredential>), ApiError> {
    let connected_by = hub.connected_by(&request.runner_id);
    let enrolled = state
        .runner
        .engine
        .keys()
        .redeem_enrollment(
            request.code.expose(),
            &request.runner_id,
            presence(connected_by.as_deref()),
        )
        .await?
        .ok_or_else(|| {
            ApiError::new(
                codes::UNAUTHORIZED,
                "not an enrollment code for this runner id (or used, or expired): ask for a \
                 new one (abr hub enroll)",
            )
        })?;
    tracing::info!(
        target: "abr::relay",
        runner_id = enrolled.runner_id,
        tenant = enrolled.tenant,
        "a runner enrolled"
    );
    Ok((
        StatusCode::CREATED,
        Json(RunnerCredential {
            runner_id: enrolled.runner_id,
            tenant_id: enrolled.tenant,
            token: enrolled.token,
        }),
    ))
}

/// What the hub sees of a runner id: connected by the credential `connected_by`, or not.
fn presence(connected_by: Option<&str>) -> RunnerPresence<'_> {
    connected_by.map_or(RunnerPresence::Offline, RunnerPresence::Connected)
}
