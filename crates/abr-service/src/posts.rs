//! Posts over HTTP: `POST /v1/post` through [`Engine::post`](abr_engine::Engine::post) (a
//! durable record per post, at most once per `Idempotency-Key`), and the record of a post:
//! `GET /v1/posts/{id}`, a read-only `recheck` and the owner's `assert-not-posted` for an
//! uncertain one.
//!
//! The tenant is `x-tenant-id`, else the body's `workspaceId`, else `default`; another
//! tenant's post id is a 404.

use abr_engine::PostReply;
use abr_protocol::{AssertNotPostedRequest, PostRecord, PostRequest, RecheckResult};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::state::AppState;
use crate::tenant::{Caller, one_header};
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> Router<AppState<C>> {
    Router::new()
        .route("/v1/post", post(post_job::<C>))
        .route("/v1/posts/{id}", get(get_post::<C>))
        .route("/v1/posts/{id}/recheck", post(recheck::<C>))
        .route(
            "/v1/posts/{id}/assert-not-posted",
            post(assert_not_posted::<C>),
        )
}

/// `POST /v1/post`: `200` with the outcome once the job ran (`postId` names its record); a
/// repeated `Idempotency-Key` answers the original (`idempotent-replayed: true`), waiting
/// for it when it is still running here; `202` with the record when it is running
/// elsewhere.
async fn post_job<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(request): ApiJson<PostRequest>,
) -> Result<Response, ApiError> {
    // Bounded before anything records them, each named as the caller gave it.
    abr_core::check_tenant_id("workspaceId", request.workspace_id.as_deref())?;
    abr_core::check_tenant_id("accountId", request.account_id.as_deref())?;
    let actor = caller.actor(request.workspace_id.as_deref())?;
    let key = one_header(&headers, "idempotency-key")?;
    let posted = state
        .runner
        .engine
        .post(&actor, key.as_deref(), request)
        .await?;
    let mut response = match posted.reply {
        PostReply::Result(result) => (StatusCode::OK, Json(*result)).into_response(),
        PostReply::Record(record) => (StatusCode::ACCEPTED, Json(*record)).into_response(),
    };
    if posted.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

async fn get_post<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<PostRecord>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.post_record(&actor, &id).await?))
}

async fn recheck<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RecheckResult>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.recheck_post(&actor, &id).await?))
}

async fn assert_not_posted<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<AssertNotPostedRequest>,
) -> Result<Json<PostRecord>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .assert_post(&actor, &id, &request)
            .await?,
    ))
}
