//! A tenant's named browser profiles (`/v1/profiles`): the on-disk profiles of a local
//! runner that keep their sign-ins between runs, the owner's consent to each (asked once,
//! when a run first names it), and what is recorded of their sign-ins (cookie names and
//! expiry, never values). Per tenant: another tenant's are never read or changed. Every
//! decision is audited with the person and the key that made it (by the engine).

use abr_core::principal::Right;
use abr_protocol::{ProfileConsentRequest, ProfileEntry, ProfilesResponse, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, put_with};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};

use crate::api_error::{ApiError, ApiJson};
use crate::openapi::Documented;
use crate::state::AppState;
use crate::tenant::Caller;
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/profiles",
            get_with(list::<C>, |o| {
                o.id("listProfiles")
                    .summary(
                        "The tenant's named browser profiles: consent asked or decided, sign-ins \
                         recorded",
                    )
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/profiles/{name}/consent",
            put_with(decide::<C>, |o| {
                o.id("decideProfileConsent")
                    .summary("Allow or decline runs of the tenant on a named browser profile")
                    .needs(Right::TenantSettings)
                    .errors(&[codes::UNSUPPORTED])
            }),
        )
}

/// `GET /v1/profiles`: the tenant's profiles, sorted by name (none on a runner without
/// profiles).
async fn list<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<ProfilesResponse>, ApiError> {
    let actor = caller.actor(None)?;
    let profiles = state.runner.engine.profiles_of(&actor).await?;
    Ok(Json(ProfilesResponse { profiles }))
}

/// `PUT /v1/profiles/{name}/consent`: allows or declines the profile (replacing an earlier
/// decision); answers the profile as stored. A name is 1 to 64 lower-case letters, digits,
/// `-` or `_`: anything else is a 422.
async fn decide<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<ProfileConsentRequest>,
) -> Result<Json<ProfileEntry>, ApiError> {
    let actor = caller.actor(None)?;
    let Path(name) = path
        .map_err(|_| ApiError::new(codes::INVALID_REQUEST, "the path is not valid UTF-8 text"))?;
    let entry = state
        .runner
        .engine
        .decide_profile(&actor, &name, &request)
        .await?;
    Ok(Json(entry))
}
