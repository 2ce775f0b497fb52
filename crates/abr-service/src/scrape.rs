//! `GET /metrics` (an operator's key): the runner's [`Metrics`](crate::metrics::Metrics),
//! with the gauges read from its engine and replica status at the scrape.

use abr_core::context::TaskContext;
use abr_core::principal::Right;
use abr_protocol::relay::RunnerHealth;
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::extract::State;
use axum::response::Response;

use crate::api_error::ApiError;
use crate::metrics::{Snapshot, exposition};
use crate::openapi::Documented as _;
use crate::relay::Hub;
use crate::state::AppState;
use crate::tenant::Caller;

/// The relay runners connected to `hub` now, by health: ok, silent, draining.
fn relay_runners(hub: &Hub) -> [usize; 3] {
    let mut counts = [0; 3];
    for (_, runner) in hub.runners() {
        counts[match runner.health {
            RunnerHealth::Ok => 0,
            RunnerHealth::Silent => 1,
            RunnerHealth::Draining => 2,
        }] += 1;
    }
    counts
}

/// `GET /metrics` (behind the bearer check; an operator's key), with the relay runners
/// connected to `hub`.
pub(crate) fn routes<C: TaskContext>(hub: Hub) -> ApiRouter<AppState<C>> {
    ApiRouter::new().api_route(
        "/metrics",
        get_with(
            move |state: State<AppState<C>>, caller: Caller| scrape(state, caller, hub.clone()),
            |o| {
                o.id("metrics")
                    .summary("This runner's metrics, for Prometheus (OpenMetrics text)")
                    .needs(Right::Operate)
                    .response::<200, crate::openapi::MetricsText>()
            },
        ),
    )
}

/// `GET /metrics`: the counters, and the gauges read now.
async fn scrape<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    hub: Hub,
) -> Result<Response, ApiError> {
    caller.principal().require(Right::Operate)?;
    let runner = &state.runner;
    let approvals = match runner.engine.approval_backlog().await {
        Ok(backlog) => Some(backlog),
        Err(e) => {
            tracing::warn!(code = %e.code(), "metrics: the approvals waiting could not be read");
            None
        }
    };
    let now = Snapshot {
        readiness: crate::replica::readiness(runner),
        database_reachable: runner.status().is_database_reachable(),
        relay_runners: relay_runners(&hub),
        approvals,
        pool: runner.engine.load().pool,
        now: time::OffsetDateTime::now_utc(),
    };
    Ok(exposition(runner.metrics(), &now))
}
