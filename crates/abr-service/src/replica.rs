//! This runner as one replica behind a load balancer: whether it takes new work
//! (`GET /v1/ready`, public like `/v1/health`, for the balancer's check), and, once told to
//! stop, draining: every request that could start work is refused with `runner_draining`
//! (nothing was done; the balancer may send it to another replica) while what runs
//! finishes.

use abr_protocol::Readiness;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::api_error::ApiError;
use crate::runner::Runner;
use crate::state::AppState;
use abr_core::context::TaskContext;
use abr_protocol::codes;

/// What `GET /v1/ready` says of this replica now (also read by each metrics scrape).
pub(crate) fn readiness<C: TaskContext>(runner: &Runner<C>) -> Readiness {
    let load = runner.engine.load();
    let status = runner.status();
    let queue_capacity = runner.config.limits.max_queued_jobs;
    let full = load.jobs_running >= load.job_capacity && load.jobs_queued >= queue_capacity;
    let reason = if status.is_draining() {
        Some("draining")
    } else if !status.is_database_reachable() {
        Some("database_unreachable")
    } else if full {
        Some("full")
    } else {
        None
    };
    Readiness {
        ready: reason.is_none(),
        reason: reason.map(str::to_owned),
        node: status.node_id().map(str::to_owned),
        version: env!("CARGO_PKG_VERSION").into(),
        jobs_running: load.jobs_running,
        jobs_queued: load.jobs_queued,
        job_capacity: load.job_capacity,
        queue_capacity,
        open_captures: load.open_captures,
        open_browses: load.open_browses,
    }
}

/// `GET /v1/ready`.
pub(crate) async fn ready<C: TaskContext>(State(state): State<AppState<C>>) -> Response {
    let body = readiness(&state.runner);
    let code = if body.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body)).into_response()
}

/// While draining, refuses every request that could start work (any method but `GET`,
/// `HEAD` and `OPTIONS` under `/v1/` and `/mcp`) with `runner_draining` before it reaches
/// a handler: nothing was done, so the caller (or the balancer) may send it elsewhere.
pub(crate) async fn refuse_while_draining<C: TaskContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let reads = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let path = request.uri().path();
    let api = path.starts_with("/v1/") || path == "/mcp";
    if state.runner.status().is_draining() && api && !reads {
        return ApiError::new(
            codes::RUNNER_DRAINING,
            "this replica is draining: it finishes what it runs and takes no new work",
        )
        .retry_after(std::time::Duration::from_secs(1))
        .into_response();
    }
    next.run(request).await
}
