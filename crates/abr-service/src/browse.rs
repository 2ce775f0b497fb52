//! The browse API (`/v1/browse`): a guarded browser session driven one action at a time by
//! a brain outside ABR, on the engine's browse sessions
//! ([`Engine::browse_open`](abr_engine::Engine::browse_open)).
//!
//! A session is visible to its tenant only (its key's, or the one `x-tenant-id` or the body's
//! `tenantId` names for an operator): another tenant's id is a 404, like a closed one.
//! Opening and acting use a job slot for the time of the call (a browse session holds its browser between calls, counted
//! against its tenant's concurrent sessions and the runner's `ABR_MAX_OPEN_BROWSES`). What
//! happens on the page is the answer's `outcome`, never an HTTP error: a refusal by the
//! guard (`refused`), a handoff (`paused`), a failure on the page (`failed`).
//!
//! Under the approval rule (`ABR_TASK_APPROVAL` other than `off`), a read-write session's
//! committing action answers `paused` / `approval_required` with the `approval` it waits
//! for; an approver decides it (`GET …/approval`, `POST …/approve`, `POST …/reject`, or a
//! one-time link for a person: `POST …/approval-link`).

use abr_core::principal::Right;
use abr_protocol::{
    ActResponse, ActionApproval, ActionDecision, BrowseAction, BrowseClosed, BrowseOpened,
    BrowseRequest, SnapshotQuery, codes,
};
use abr_store::PlacementKind;
use aide::axum::ApiRouter;
use aide::axum::routing::{delete_with, get_with, post_with};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::openapi::{Documented, OPENS_A_BROWSER, PLACED};
use crate::state::AppState;
use crate::tenant::Caller;
use abr_core::context::TaskContext;

/// The routes of the browse API (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    let session = &[codes::BROWSE_NOT_FOUND];
    ApiRouter::new()
        .api_route(
            "/v1/browse",
            post_with(open::<C>, |o| {
                o.id("openBrowse")
                    .summary("Open a browse session on a page: 201 with its first snapshot")
                    .description(
                        "An external agent's snapshot/act loop: every action goes through the \
                         guard below the page; a read-only session can commit nothing.",
                    )
                    .needs(Right::Browse)
                    .response::<201, Json<BrowseOpened>>()
                    .errors(OPENS_A_BROWSER)
                    .errors(&[
                        codes::UNKNOWN_PLATFORM,
                        codes::SESSION_NOT_FOUND,
                        codes::SESSION_BOUND,
                        codes::SITE_DENIED,
                        codes::EXECUTION_DENIED,
                    ])
            }),
        )
        .api_route(
            "/v1/browse/{id}",
            delete_with(close::<C>, |o| {
                o.id("closeBrowse")
                    .summary("Close a browse session: its browser released, its record closed")
                    .needs(Right::Browse)
                    .errors(session)
                    .errors(PLACED)
            }),
        )
        .api_route(
            "/v1/browse/{id}/snapshot",
            get_with(snapshot::<C>, |o| {
                o.id("browseSnapshot")
                    .summary("The page now: a page of its elements and that much of its text")
                    .description(
                        "JSON, or the compact text a language model reads when `Accept` names \
                         `text/plain` and no JSON.",
                    )
                    .needs(Right::Browse)
                    .response::<200, Json<abr_protocol::Snapshot>>()
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[codes::BROWSER_CRASHED])
            }),
        )
        .api_route(
            "/v1/browse/{id}/act",
            post_with(act::<C>, |o| {
                o.id("browseAct")
                    .summary("One action on an element reference, through the guard")
                    .needs(Right::Browse)
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[
                        codes::REF_NOT_FOUND,
                        codes::BLOCKED_ACTION,
                        codes::SITE_DENIED,
                        codes::FORBIDDEN,
                        codes::BROWSER_CRASHED,
                    ])
            }),
        )
        .api_route(
            "/v1/browse/{id}/input-request",
            post_with(request_input::<C>, |o| {
                o.id("browseRequestInput")
                    .summary("Ask a person for a field's value: the session waits for it")
                    .needs(Right::Browse)
                    .errors(session)
                    .errors(PLACED)
            }),
        )
        .api_route(
            "/v1/browse/{id}/approval",
            get_with(approval::<C>, |o| {
                o.id("getBrowseApproval")
                    .summary("The committing action the session waits on")
                    .needs(Right::Read)
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[codes::ACTION_NOT_PENDING])
            }),
        )
        .api_route(
            "/v1/browse/{id}/approval/preview",
            get_with(approval_preview::<C>, |o| {
                o.id("getBrowseApprovalPreview")
                    .summary(
                        "The waiting action's preview: a redacted frame of the page when it \
                         was asked for (its `preview` gives the element's outline)",
                    )
                    .needs(Right::Read)
                    .response::<200, crate::openapi::Image>()
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[codes::ACTION_NOT_PENDING, codes::PREVIEW_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/browse/{id}/approve",
            post_with(decide::<C, true>, |o| {
                o.id("approveBrowseAction")
                    .summary("Approve the waiting action: it runs when the agent sends it again")
                    .needs(Right::Approve)
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[
                        codes::ACTION_NOT_PENDING,
                        codes::SELF_APPROVAL,
                        codes::BINDING_MISMATCH,
                    ])
            }),
        )
        .api_route(
            "/v1/browse/{id}/reject",
            post_with(decide::<C, false>, |o| {
                o.id("rejectBrowseAction")
                    .summary(
                        "Reject the waiting action: the session closes, nothing of it committed",
                    )
                    .needs(Right::Approve)
                    .errors(session)
                    .errors(PLACED)
                    .errors(&[codes::ACTION_NOT_PENDING, codes::SELF_APPROVAL])
            }),
        )
        .api_route(
            "/v1/browse/{id}/approval-link",
            post_with(crate::tasks::approval_link::<C>, |o| {
                o.id("createBrowseApprovalLink")
                    .summary(
                        "A one-time link for a person without a key to decide the waiting action",
                    )
                    .needs(Right::Approve)
                    .response::<201, Json<abr_protocol::ApprovalLink>>()
                    .errors(session)
                    .errors(&[codes::ACTION_NOT_PENDING, codes::TASK_NOT_FOUND])
            }),
        )
}

/// `POST /v1/browse/{id}/input-request`: the brain asks a person for a value for a field;
/// the session waits (`needs_input`) until a person supplies it. Answers the pause.
async fn request_input<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<abr_protocol::InputRequest>,
) -> Result<Json<abr_protocol::BrowsePause>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .browse_request_input(&actor, &id, &request)
            .await?,
    ))
}

/// `GET /v1/browse/{id}/approval`: the committing action the session waits on (409
/// `action_not_pending` when none).
async fn approval<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ActionApproval>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state.runner.engine.browse_approval(&actor, &id).await?,
    ))
}

/// `GET /v1/browse/{id}/approval/preview`: the preview's JPEG, as a frame is served.
async fn approval_preview<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let jpeg = state
        .runner
        .engine
        .browse_approval_preview(&actor, &id)
        .await?;
    Ok(crate::run_evidence::image(jpeg))
}

/// `POST /v1/browse/{id}/approve` (`APPROVE`: the action runs when the brain sends it
/// again) and `/reject` (the session closes with nothing of the action committed), with an
/// approver's key that did not open the session.
async fn decide<C: TaskContext, const APPROVE: bool>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(decision): ApiJson<ActionDecision>,
) -> Result<Json<ActionApproval>, ApiError> {
    let actor = caller.actor(None)?;
    let engine = &state.runner.engine;
    Ok(Json(
        engine
            .browse_decide(&actor, &id, &decision, APPROVE)
            .await?,
    ))
}

/// `POST /v1/browse`: opens a session and its first page; 201 with the first snapshot.
async fn open<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiJson(request): ApiJson<BrowseRequest>,
) -> Result<(StatusCode, Json<BrowseOpened>), ApiError> {
    let actor = caller.actor(request.tenant_id.as_deref())?;
    let opened = state.runner.engine.browse_open(&actor, request).await?;
    if let Some(places) = state.runner.status().places() {
        // Its browser is here: a call for it through another replica comes here.
        places
            .place(
                PlacementKind::Browse,
                &opened.browse_id,
                Some(actor.tenant()),
            )
            .await;
    }
    Ok((StatusCode::CREATED, Json(opened)))
}

/// `GET /v1/browse/{id}/snapshot?from=&limit=&maxText=&hrefs=`: the page now (that page of
/// its elements, that much of its text). JSON, or the compact text form a language model
/// reads ([`Snapshot::to_text`]) when the caller accepts `text/plain` and not JSON.
async fn snapshot<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    query: Result<Query<SnapshotQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let Ok(Query(query)) = query else {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the query parameters are from, limit, maxText (whole numbers) and hrefs (true or \
             false)",
        ));
    };
    let snapshot = state
        .runner
        .engine
        .browse_snapshot(&actor, &id, query)
        .await?;
    if wants_text(&headers) {
        let text = snapshot.to_text();
        return Ok(([(CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response());
    }
    Ok(Json(snapshot).into_response())
}

/// Whether the caller asks for text: `Accept` names `text/plain` and no JSON.
fn wants_text(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    accept.contains("text/plain") && !accept.contains("json")
}

/// `POST /v1/browse/{id}/act`: one action on a reference, through the guard.
async fn act<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(action): ApiJson<BrowseAction>,
) -> Result<Json<ActResponse>, ApiError> {
    let actor = caller.actor(None)?;
    let response = state.runner.engine.browse_act(&actor, &id, action).await?;
    Ok(Json(response))
}

/// `DELETE /v1/browse/{id}`: closes the session (its browser released, its record
/// `closed`).
async fn close<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<BrowseClosed>, ApiError> {
    let actor = caller.actor(None)?;
    let closed = state.runner.engine.browse_close(&actor, &id).await?;
    if let Some(places) = state.runner.status().places() {
        places.unplace(PlacementKind::Browse, &id).await;
    }
    Ok(Json(closed))
}
