//! The task API (`/v1/tasks`): create → approve → run → prove, on the engine's
//! [`Engine::create_task`](abr_engine::Engine::create_task) and its siblings.
//!
//! A task is visible to its tenant only (`x-tenant-id`, or the body's `tenantId` on
//! create; `default` without either): another tenant's id is a 404, like an unknown one.
//! An approved task runs in the background, holding a job slot; `GET /v1/tasks/{id}`
//! (optionally a long poll with `?waitSecs=`) and `GET /v1/tasks/{id}/events` (server-sent
//! events) follow it.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use abr_core::principal::Right;
use abr_protocol::codes;
use abr_protocol::{
    ApprovalLink, ApproveRequest, AssertNotPostedRequest, PlanStep, RecheckResult, RejectRequest,
    TakeoverAnswer, TakeoverStarted, TakeoverState, TaskRecord, TaskRequest,
};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::generate::GenContext;
use aide::openapi::Operation;
use aide::operation::OperationInput;
use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use crate::api_error::{ApiError, ApiJson, ApiPath};
use crate::json_detail::{JsonDetail, read_value};
use crate::openapi::{Documented, EventStream, Image, OPENS_A_BROWSER, PLACED};
use crate::state::AppState;
use crate::tenant::{Caller, one_header};
use abr_core::context::TaskContext;
use abr_engine::TenantEvents;

/// Longest long poll (`waitSecs`).
const MAX_WAIT: Duration = Duration::from_secs(60);
/// How often a long poll or an event stream looks at the record besides the task's own
/// events (a step, a pause, its end wake them at once): for changes no event tells.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// The routes of the task API (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    let task_codes = &[codes::TASK_NOT_FOUND];
    ApiRouter::new()
        .api_route(
            "/v1/tasks",
            post_with(create::<C>, |o| {
                o.id("createTask")
                    .summary("Propose a task: a step plan that runs once a person approves it")
                    .description(
                        "201 with the new task (`pending_approval`, or `queued` and running \
                         when the approval rule lets it through); 200 with the original for a \
                         repeated `Idempotency-Key` (header `idempotent-replayed: true`).",
                    )
                    .needs(Right::Propose)
                    .header(
                        "idempotency-key",
                        "Creates the task at most once per tenant and key.",
                    )
                    .header(
                        "x-proposal-id",
                        "The orchestrator's id for this proposal (as the body's `proposalId`).",
                    )
                    .response::<201, Json<TaskRecord>>()
                    .response::<200, Json<TaskRecord>>()
                    .errors(&[
                        codes::INVALID_PLAN,
                        codes::UNKNOWN_PLATFORM,
                        codes::SESSION_NOT_FOUND,
                        codes::SESSION_BOUND,
                        codes::IDEMPOTENCY_KEY_REUSED,
                        codes::EXECUTION_DENIED,
                        codes::STORE_FAILED,
                    ])
            })
            .get_with(crate::lists::tasks::<C>, |o| {
                o.id("listTasks")
                    .summary("The tenant's tasks, newest first (a page)")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/tasks/{id}",
            get_with(get_task::<C>, |o| {
                o.id("getTask")
                    .summary("A task's record; with `waitSecs`, once it ended or that long passed")
                    .needs(Right::Read)
                    .errors(task_codes)
            }),
        )
        .api_route(
            "/v1/tasks/{id}/events",
            get_with(events::<C>, |o| {
                o.id("streamTask")
                    .summary("A task's record each time it changes, until it ends (server-sent events)")
                    .needs(Right::Read)
                    .errors(task_codes)
            }),
        )
        .api_route(
            "/v1/tasks/{id}/approve",
            post_with(approve::<C>, |o| {
                o.id("approveTask")
                    .summary("Approve the plan whose hash the approver saw: it runs")
                    .needs(Right::Approve)
                    .errors(task_codes)
                    .errors(&[
                        codes::TASK_NOT_PENDING,
                        codes::PLAN_HASH_MISMATCH,
                        codes::SELF_APPROVAL,
                        codes::BINDING_MISMATCH,
                        codes::OVERLOADED,
                        codes::TENANT_CONCURRENCY_LIMIT,
                        codes::TENANT_DAILY_LIMIT,
                    ])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/reject",
            post_with(reject::<C>, |o| {
                o.id("rejectTask")
                    .summary("Reject a pending task: it never runs")
                    .needs(Right::Approve)
                    .errors(task_codes)
                    .errors(&[codes::TASK_NOT_PENDING, codes::SELF_APPROVAL])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/approval-link",
            post_with(approval_link::<C>, |o| {
                o.id("createTaskApprovalLink")
                    .summary("A one-time link for a person without a key to approve or reject")
                    .needs(Right::Approve)
                    .response::<201, Json<ApprovalLink>>()
                    .errors(task_codes)
                    .errors(&[codes::TASK_NOT_PENDING])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/recheck",
            post_with(recheck::<C>, |o| {
                o.id("recheckTask")
                    .summary("Look again whether an uncertain task's action happened (changes nothing)")
                    .needs(Right::Recheck)
                    .errors(task_codes)
                    .errors(OPENS_A_BROWSER)
                    .errors(&[codes::NOT_UNCERTAIN])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/assert-not-posted",
            post_with(assert_not_posted::<C>, |o| {
                o.id("assertTaskNotPosted")
                    .summary("A person asserts an uncertain task's action did not happen (allows one retry)")
                    .needs(Right::Assert)
                    .errors(task_codes)
                    .errors(&[codes::NOT_UNCERTAIN, codes::ALREADY_ASSERTED])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/retry",
            post_with(retry::<C>, |o| {
                o.id("retryTask")
                    .summary("Run a failed (or asserted) task again as a new task")
                    .needs(Right::Post)
                    .response::<201, Json<TaskRecord>>()
                    .errors(task_codes)
                    .errors(&[codes::TASK_NOT_RETRYABLE, codes::TENANT_RETRY_LIMIT])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/screenshots/{name}",
            get_with(screenshot::<C>, |o| {
                o.id("getTaskScreenshot")
                    .summary("A screenshot a task's step took")
                    .needs(Right::Read)
                    .response::<200, Image>()
                    .errors(task_codes)
                    .errors(&[codes::NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/takeover",
            post_with(take_over::<C>, |o| {
                o.id("takeOverTask")
                    .summary("A person takes over a paused run: answers the live view's URL")
                    .needs(Right::ResolvePause)
                    .errors(task_codes)
                    .errors(PLACED)
                    .errors(&[codes::NO_TAKEOVER, codes::TAKEOVER_OVER, codes::TAKEOVER_PENDING])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/takeover/resume",
            post_with(resume::<C>, |o| {
                o.id("resumeTask")
                    .summary("The run continues where it paused")
                    .needs(Right::ResolvePause)
                    .errors(task_codes)
                    .errors(PLACED)
                    .errors(&[codes::NO_TAKEOVER, codes::TAKEOVER_OVER])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/takeover/end",
            post_with(end_takeover::<C>, |o| {
                o.id("endTakeover")
                    .summary("The paused run stops without acting")
                    .needs(Right::ResolvePause)
                    .errors(task_codes)
                    .errors(PLACED)
                    .errors(&[codes::NO_TAKEOVER, codes::TAKEOVER_OVER])
            }),
        )
        .api_route(
            "/v1/tasks/{id}/takeover/input",
            post_with(supply_input::<C>, |o| {
                o.id("supplyInput")
                    .summary("A person supplies the value a paused run asked for")
                    .needs(Right::ResolvePause)
                    .errors(task_codes)
                    .errors(PLACED)
                    .errors(&[codes::NO_TAKEOVER, codes::INPUT_NOT_ACCEPTED])
            }),
        )
}

/// A task request, read as JSON first: its steps are read one by one for an error that
/// names the step ([`task_request`]); described as the [`TaskRequest`] it must be.
struct TaskBody(serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for TaskBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let ApiJson(value) = ApiJson::<serde_json::Value>::from_request(req, state).await?;
        Ok(Self(value))
    }
}

impl OperationInput for TaskBody {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        ApiJson::<TaskRequest>::operation_input(ctx, operation);
    }
}

/// `POST /v1/tasks/{id}/takeover`: `requested → active` for a paused task; answers the live
/// view URL (with its token) for the person taking over. The live view is served only while
/// the takeover is active.
async fn take_over<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TakeoverStarted>, ApiError> {
    let actor = caller.actor(None)?;
    let active = state.runner.engine.take_over(&actor, &id).await?;
    Ok(Json(TakeoverStarted {
        takeover_id: active.takeover_id,
        state: TakeoverState::Active,
        live_view_url: format!(
            "{}/live/{}",
            state.runner.config.public_base(),
            active.live_token
        ),
        expires_at: active.expires_at,
    }))
}

/// `POST /v1/tasks/{id}/takeover/resume`: the run continues where it stopped.
async fn resume<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TakeoverAnswer>, ApiError> {
    let actor = caller.actor(None)?;
    let takeover_id = state.runner.engine.resume_takeover(&actor, &id).await?;
    Ok(Json(TakeoverAnswer {
        takeover_id,
        state: TakeoverState::Resumed,
    }))
}

/// `POST /v1/tasks/{id}/takeover/end`: the run stops without acting.
async fn end_takeover<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TakeoverAnswer>, ApiError> {
    let actor = caller.actor(None)?;
    let takeover_id = state.runner.engine.end_takeover(&actor, &id).await?;
    Ok(Json(TakeoverAnswer {
        takeover_id,
        state: TakeoverState::Ended,
    }))
}

/// `POST /v1/tasks/{id}/takeover/input`: the value a paused browse session's `needs_input`
/// asks for, typed into its field (never logged, recorded or echoed); the takeover resumes.
async fn supply_input<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(input): ApiJson<abr_protocol::SuppliedInput>,
) -> Result<Json<TakeoverAnswer>, ApiError> {
    let actor = caller.actor(None)?;
    let takeover_id = state.runner.engine.supply_input(&actor, &id, input).await?;
    Ok(Json(TakeoverAnswer {
        takeover_id,
        state: TakeoverState::Resumed,
    }))
}

/// `POST /v1/tasks`: 201 with the new task (`pending_approval`, or `queued` and running when
/// the approval rule lets it through); 200 with the original for a repeated
/// `Idempotency-Key`.
async fn create<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    headers: HeaderMap,
    TaskBody(body): TaskBody,
) -> Result<Response, ApiError> {
    let mut request = task_request(body)?;
    let actor = caller.actor(request.tenant_id.as_deref())?;
    request.tenant_id = Some(actor.tenant().to_owned());
    match (one_header(&headers, "x-proposal-id")?, &request.proposal_id) {
        (Some(h), Some(b)) if &h != b => {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "x-proposal-id and the body's proposalId disagree",
            ));
        }
        (Some(h), None) => request.proposal_id = Some(h),
        _ => {}
    }
    let key = one_header(&headers, "idempotency-key")?;
    let created = state
        .runner
        .engine
        .create_task(&actor, request, key.as_deref())
        .await?;
    let status = if created.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(with_location(status, created.record, created.replayed))
}

/// Reads a task request; a step that does not parse (an unknown type, a missing selector)
/// is a 422 `invalid_plan` naming its index, like every other invalid plan.
fn task_request(body: serde_json::Value) -> Result<TaskRequest, ApiError> {
    let steps = body
        .get("plan")
        .and_then(|p| p.get("steps"))
        .and_then(serde_json::Value::as_array)
        .map(|steps| {
            steps.iter().enumerate().find_map(|(i, step)| {
                serde_json::from_value::<PlanStep>(step.clone())
                    .err()
                    .map(|e| (i, e))
            })
        });
    if let Some(Some((i, e))) = steps {
        // Sanitised: the words name the field or variant, never a value of the body.
        let reason = JsonDetail::new(&e).message;
        return Err(ApiError::new(
            codes::INVALID_PLAN,
            format!("plan.steps[{i}]: {reason}"),
        ));
    }
    // Strict: an unknown field anywhere (`plan.readonly`, a top-level `dryrun`) is a 422
    // naming it and where it is; nothing is stored.
    read_value(body).map_err(ApiError::from)
}

fn with_location(status: StatusCode, record: TaskRecord, replayed: bool) -> Response {
    let location = format!("/v1/tasks/{}", record.task_id);
    let mut response = (status, Json(record)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// `?waitSecs=N`: a long poll, answering once the task ended or N seconds passed.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WaitQuery {
    /// Answer once the task ended or this many seconds passed (at most 60, and within the
    /// request deadline).
    wait_secs: Option<u64>,
}

async fn get_task<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    query: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TaskRecord>, ApiError> {
    let actor = caller.actor(None)?;
    let wait = match query {
        Ok(Query(q)) => q.wait_secs.map_or(Duration::ZERO, Duration::from_secs),
        Err(_) => {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "the only query parameter is waitSecs, a whole number of seconds",
            ));
        }
    };
    // Within the request deadline, whatever was asked.
    let limit = state
        .runner
        .config
        .limits
        .request_timeout
        .saturating_sub(Duration::from_secs(1));
    let until = tokio::time::Instant::now() + wait.min(MAX_WAIT).min(limit);
    // Subscribed before the first read, so that an end between that read and the wait
    // still wakes it.
    let mut events = if wait.is_zero() {
        None
    } else {
        Some(state.runner.engine.subscribe_events(&actor, None).await?)
    };
    loop {
        let record = state.runner.engine.task(&actor, &id).await?;
        let now = tokio::time::Instant::now();
        match events.as_mut() {
            Some(events) if !record.state.is_final() && now < until => {
                if !woken(events, &id, POLL_EVERY.min(until - now)).await {
                    // The caller's key was revoked while it waited.
                    return Err(ApiError::unauthorized());
                }
            }
            _ => return Ok(Json(record)),
        }
    }
}

/// Waits for the task's next event (its end is one: the answer goes out as it ends), or
/// `at_most` (a change that tells no event, such as an approval, is seen then): `false`
/// once the caller's key was revoked or expired (its subscription ended).
async fn woken(events: &mut TenantEvents, task_id: &str, at_most: Duration) -> bool {
    tokio::time::timeout(at_most, events.next_of(task_id))
        .await
        .unwrap_or(true)
}

/// `GET /v1/tasks/{id}/events`: the record as a `task` event now and at every change, until
/// it ends (the stream then closes), or the caller's key is revoked or expires (closed
/// then too).
async fn events<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<EventStream<impl Stream<Item = Result<Event, Infallible>>, TaskRecord>, ApiError> {
    let actor = caller.actor(None)?;
    // Subscribed before the first read: every change after it wakes the stream at once.
    let events = state.runner.engine.subscribe_events(&actor, None).await?;
    // Unknown and foreign ids are refused before the stream starts.
    let first = state.runner.engine.task(&actor, &id).await?;
    let runner = Arc::clone(&state.runner);
    let stream = futures::stream::unfold(
        (Some(first), None::<String>, false, events),
        move |(next, last, done, mut events)| {
            let runner = Arc::clone(&runner);
            let actor = actor.clone();
            let id = id.clone();
            async move {
                if done {
                    return None;
                }
                let mut record = next;
                loop {
                    let current = match record.take() {
                        Some(r) => r,
                        None => match runner.engine.task(&actor, &id).await {
                            Ok(r) => r,
                            Err(e) => {
                                let event = Event::default()
                                    .event("error")
                                    .json_data(e.to_body())
                                    .unwrap_or_default();
                                return Some((Ok(event), (None, last, true, events)));
                            }
                        },
                    };
                    let json = serde_json::to_string(&current).unwrap_or_default();
                    if last.as_deref() != Some(json.as_str()) {
                        let ended = current.state.is_final();
                        let event = Event::default().event("task").data(json.clone());
                        return Some((Ok(event), (None, Some(json), ended, events)));
                    }
                    if !woken(&mut events, &id, POLL_EVERY).await {
                        return None;
                    }
                }
            }
        },
    );
    Ok(EventStream::new(
        Sse::new(stream).keep_alive(KeepAlive::default()),
    ))
}

async fn approve<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ApproveRequest>,
) -> Result<Json<TaskRecord>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .approve_task(&actor, &id, &request)
            .await?,
    ))
}

/// `POST /v1/tasks/{id}/approval-link` and `POST /v1/browse/{id}/approval-link` (an
/// approver's key): `201` with a one-time link for a person without a key to approve or
/// reject the task (or the browse session's committing action) as this approver.
pub(crate) async fn approval_link<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<ApprovalLink>), ApiError> {
    let actor = caller.actor(None)?;
    let minted = state.runner.engine.approval_link(&actor, &id).await?;
    let url = format!(
        "{}/approve/{}",
        state.runner.config.public_base(),
        minted.token.expose()
    );
    Ok((
        StatusCode::CREATED,
        Json(ApprovalLink {
            url: abr_protocol::SecretValue::new(url),
            expires_at: minted.expires_at,
        }),
    ))
}

async fn reject<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<RejectRequest>,
) -> Result<Json<TaskRecord>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .reject_task(&actor, &id, &request)
            .await?,
    ))
}

async fn recheck<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RecheckResult>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.recheck_task(&actor, &id).await?))
}

async fn assert_not_posted<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<AssertNotPostedRequest>,
) -> Result<Json<TaskRecord>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(
        state
            .runner
            .engine
            .assert_task(&actor, &id, &request)
            .await?,
    ))
}

async fn retry<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let created = state.runner.engine.retry_task(&actor, &id).await?;
    Ok(with_location(
        StatusCode::CREATED,
        created.record,
        created.replayed,
    ))
}

async fn screenshot<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath((id, name)): ApiPath<(String, String)>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let image = state
        .runner
        .engine
        .task_screenshot(&actor, &id, &name)
        .await?
        .ok_or_else(|| {
            ApiError::new(codes::NOT_FOUND, "the task has no screenshot by this name")
        })?;
    Ok(crate::run_evidence::image(image))
}
