//! The lists (`GET /v1/tasks`, `/v1/posts`, `/v1/approvals`, `/v1/takeovers`,
//! `/v1/sessions`): what ran and what waits for a person, for the caller's tenant only,
//! a page at a time (`?state=&cursor=&limit=`; `nextCursor` while there is more).

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::{
    ListParams, Page, PendingApprovals, PostRecord, StoredSessionInfo, TakeoverSummary, TaskRecord,
    codes,
};
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};

use crate::api_error::ApiError;
use crate::openapi::Documented;
use crate::state::AppState;
use crate::tenant::Caller;

/// The routes that are new paths (behind the bearer check); `GET /v1/tasks` is
/// [`tasks`], routed with task creation.
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/posts",
            get_with(posts::<C>, |o| {
                o.id("listPosts")
                    .summary("The tenant's posts, newest first (a page)")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/approvals",
            get_with(approvals::<C>, |o| {
                o.id("listApprovals")
                    .summary("Tasks pending approval (a page) and browse actions waiting")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/takeovers",
            get_with(takeovers::<C>, |o| {
                o.id("listTakeovers")
                    .summary("Takeovers requested or active")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/sessions",
            get_with(sessions::<C>, |o| {
                o.id("listSessions")
                    .summary("The ids the tenant keeps sessions under, with counts only")
                    .needs(Right::Read)
            }),
        )
}

type Params = Result<Query<ListParams>, QueryRejection>;

fn params(query: Params) -> Result<ListParams, ApiError> {
    query.map(|Query(p)| p).map_err(|_| {
        ApiError::new(
            codes::INVALID_REQUEST,
            "the query parameters are state, cursor and limit (1 to 100)",
        )
    })
}

/// `GET /v1/tasks`: the tenant's tasks, newest first.
pub(crate) async fn tasks<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    query: Params,
) -> Result<Json<Page<TaskRecord>>, ApiError> {
    let actor = caller.actor(None)?;
    let params = params(query)?;
    Ok(Json(state.runner.engine.list_tasks(&actor, &params).await?))
}

/// `GET /v1/posts`: the tenant's posts, newest first.
async fn posts<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    query: Params,
) -> Result<Json<Page<PostRecord>>, ApiError> {
    let actor = caller.actor(None)?;
    let params = params(query)?;
    Ok(Json(state.runner.engine.list_posts(&actor, &params).await?))
}

/// `GET /v1/approvals`: tasks pending approval (a page) and browse actions waiting.
async fn approvals<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    query: Params,
) -> Result<Json<PendingApprovals>, ApiError> {
    let actor = caller.actor(None)?;
    let params = params(query)?;
    Ok(Json(
        state
            .runner
            .engine
            .pending_approvals(&actor, &params)
            .await?,
    ))
}

/// `GET /v1/takeovers`: takeovers requested or active.
async fn takeovers<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<Vec<TakeoverSummary>>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.takeovers(&actor)?))
}

/// `GET /v1/sessions`: the ids the tenant keeps sessions under, with counts only.
async fn sessions<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    query: Params,
) -> Result<Json<Page<StoredSessionInfo>>, ApiError> {
    let actor = caller.actor(None)?;
    let params = params(query)?;
    Ok(Json(
        state.runner.engine.list_sessions(&actor, &params).await?,
    ))
}
