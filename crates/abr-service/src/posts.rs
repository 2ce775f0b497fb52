//! Posts over HTTP: `POST /v1/post` through [`Engine::post`](abr_engine::Engine::post) (a
//! durable record per post, at most once per `Idempotency-Key`), and the record of a post:
//! `GET /v1/posts/{id}`, a read-only `recheck` and the owner's `assert-not-posted` for an
//! uncertain one.
//!
//! The tenant is `x-tenant-id`, else the body's `workspaceId`, else `default`; another
//! tenant's post id is a 404.

use abr_core::principal::Right;
use abr_engine::PostReply;
use abr_protocol::codes;
use abr_protocol::{AssertNotPostedRequest, PostRecord, PostRequest, RecheckResult};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::openapi::{Documented, OPENS_A_BROWSER};
use crate::state::AppState;
use crate::tenant::{Caller, one_header};
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/post",
            post_with(post_job::<C>, |o| {
                o.id("createPost")
                    .summary("Post with a platform strategy on a stored or inline session")
                    .description(
                        "200 with the outcome once the job ran (`postId` names its record); a \
                         repeated `Idempotency-Key` answers the original (header \
                         `idempotent-replayed: true`), waiting for it while it runs here; 202 \
                         with the record while it runs elsewhere. An `uncertain` outcome may \
                         have been published: never post it again blindly (re-check it).",
                    )
                    .needs(Right::Post)
                    .header(
                        "idempotency-key",
                        "Makes the post happen at most once per tenant and key: a repeat \
                         answers the original outcome.",
                    )
                    .response::<200, Json<abr_protocol::AgentPostResult>>()
                    .response::<202, Json<PostRecord>>()
                    .errors(OPENS_A_BROWSER)
                    .errors(&[
                        codes::UNKNOWN_PLATFORM,
                        codes::SESSION_NOT_FOUND,
                        codes::SESSION_BOUND,
                        codes::IDEMPOTENCY_KEY_REUSED,
                        codes::EXECUTION_DENIED,
                        codes::INVALID_SCOPE,
                        codes::STRATEGY_PANICKED,
                        codes::JOB_PANICKED,
                        codes::UNSUPPORTED,
                    ])
            }),
        )
        .api_route(
            "/v1/posts/{id}",
            get_with(get_post::<C>, |o| {
                o.id("getPost")
                    .summary("A post's record")
                    .needs(Right::Read)
                    .errors(&[codes::POST_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/posts/{id}/recheck",
            post_with(recheck::<C>, |o| {
                o.id("recheckPost")
                    .summary("Look again whether an uncertain post was published (changes nothing)")
                    .needs(Right::Recheck)
                    .errors(OPENS_A_BROWSER)
                    .errors(&[codes::POST_NOT_FOUND, codes::NOT_UNCERTAIN])
            }),
        )
        .api_route(
            "/v1/posts/{id}/assert-not-posted",
            post_with(assert_not_posted::<C>, |o| {
                o.id("assertPostNotPosted")
                    .summary("A person asserts an uncertain post did not happen (allows one new attempt)")
                    .needs(Right::Assert)
                    .errors(&[
                        codes::POST_NOT_FOUND,
                        codes::NOT_UNCERTAIN,
                        codes::ALREADY_ASSERTED,
                    ])
            }),
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
