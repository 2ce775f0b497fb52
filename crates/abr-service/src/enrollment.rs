//! Runner enrollment at a hub: `POST /v1/relay/enrollments` (an operator, or an approver
//! of the tenant) makes a one-time code for one runner id, valid for ten minutes; the runner
//! trades it at `POST /v1/relay/enroll` (the code is the credential: no bearer) for its
//! runner credential, bound to that runner id and tenant, which from then on mints its
//! relay tokens (see [`Keys::enroll`](abr_engine::Keys::enroll)).

use abr_core::context::TaskContext;
use abr_protocol::codes;
use abr_protocol::relay::{EnrollRequest, Enrollment, EnrollmentRequest, RunnerCredential};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};

use crate::api_error::{ApiError, ApiJson};
use crate::state::AppState;
use crate::tenant::Caller;

/// `POST /v1/relay/enrollments` (behind the bearer check).
pub(crate) fn protected_routes<C: TaskContext>() -> Router<AppState<C>> {
    Router::new().route("/v1/relay/enrollments", post(enrollment::<C>))
}

/// `POST /v1/relay/enroll` (its code is its credential).
pub(crate) fn public_routes<C: TaskContext>() -> Router<AppState<C>> {
    Router::new().route("/v1/relay/enroll", post(enroll::<C>))
}

/// `201` with a one-time enrollment code for the runner id, serving the caller's tenant.
async fn enrollment<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<EnrollmentRequest>,
) -> Result<(StatusCode, Json<Enrollment>), ApiError> {
    let actor = caller.actor(request.tenant_id.as_deref())?;
    let minted = state
        .runner
        .engine
        .keys()
        .enroll(&actor, &request.runner_id)
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
    State(state): State<AppState<C>>,
    ApiJson(request): ApiJson<EnrollRequest>,
) -> Result<(StatusCode, Json<RunnerCredential>), ApiError> {
    let enrolled = state
        .runner
        .engine
        .keys()
        .redeem_enrollment(request.code.expose(), &request.runner_id)
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
