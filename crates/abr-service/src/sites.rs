//! A tenant's site policy (`/v1/sites`): the sites its jobs may open (allow) or never open
//! (deny), each entry covering its subdomains. Per tenant (`x-tenant-id`, `default`
//! without): another tenant's decisions are never read, changed or removed. Every change is
//! audited with the person who made it (by the engine, where it is decided).

use abr_core::guard::site_name;
use abr_core::principal::Right;
use abr_protocol::{SiteDecisionRequest, SiteEntry, SitesResponse, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, put_with};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use crate::api_error::{ApiError, ApiJson};
use crate::openapi::Documented;
use crate::state::AppState;
use crate::tenant::Caller;
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/sites",
            get_with(list::<C>, |o| {
                o.id("listSites")
                    .summary("The tenant's site decisions, sorted by domain")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/sites/{domain}",
            put_with(decide::<C>, |o| {
                o.id("decideSite")
                    .summary("Allow or deny a site for the tenant's browse sessions")
                    .needs(Right::TenantSettings)
            })
            .delete_with(remove::<C>, |o| {
                o.id("removeSite")
                    .summary("Forget a site decision")
                    .needs(Right::TenantSettings)
                    .response::<204, ()>()
                    .errors(&[codes::SITE_NOT_FOUND])
            }),
        )
}

/// `GET /v1/sites`: the tenant's decisions, sorted by domain.
async fn list<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<SitesResponse>, ApiError> {
    let actor = caller.actor(None)?;
    let sites = state.runner.engine.sites_of(&actor).await?;
    Ok(Json(SitesResponse { sites }))
}

/// `PUT /v1/sites/{domain}`: allows or denies the site (replacing an earlier decision);
/// answers the entry as stored. The domain is normalized (lower case, no trailing dot): a
/// scheme, port, path or wildcard is a 422.
async fn decide<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(request): ApiJson<SiteDecisionRequest>,
) -> Result<Json<SiteEntry>, ApiError> {
    let actor = caller.actor(None)?;
    let domain = domain(path)?;
    let decided_by = abr_core::check_person("decidedBy", &request.decided_by)?;
    let entry = SiteEntry {
        domain,
        decision: request.decision,
        decided_by,
        decided_at: time::OffsetDateTime::now_utc(),
    };
    state
        .runner
        .engine
        .decide_site(&actor, entry.clone())
        .await?;
    Ok(Json(entry))
}

/// `DELETE /v1/sites/{domain}`: 204, or 404 `site_not_found` when the tenant had no
/// decision about it. The site is then undecided again (a run reaching it asks).
async fn remove<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let actor = caller.actor(None)?;
    let domain = domain(path)?;
    if !state.runner.engine.remove_site(&actor, &domain).await? {
        return Err(ApiError::new(
            codes::SITE_NOT_FOUND,
            "the tenant has no decision about this site",
        ));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The path's domain, normalized; a 422 naming the rule otherwise (never echoing it).
fn domain(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(raw) = path
        .map_err(|_| ApiError::new(codes::INVALID_REQUEST, "the path is not valid UTF-8 text"))?;
    Ok(site_name(&raw)?)
}
