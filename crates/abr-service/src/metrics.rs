//! [`Metrics`]: what a runner counts, served at `GET /metrics` (an operator's key) in the
//! OpenMetrics text format, which Prometheus scrapes (prometheus-client: an explicit
//! registry per runner, no process-wide state, so an embedder's two runners and a test's
//! many never mix their counts).
//!
//! Where each number comes from:
//! - every HTTP answer (a layer beside the access log): by route template, method and
//!   status, with its latency; every error answer by its code (refusals with `Retry-After`,
//!   limits, `egress_refused`, `runner_draining`, ...), read from the envelope's code;
//! - every run event (the engine's [`EventSink`](abr_engine::EventSink)): runs ended by kind, state and a post's
//!   failure stage, with their duration, and the failed or uncertain ones by error code;
//!   steps by action and result, with their duration; the guard's refusals inside a run by
//!   rule; stalls; approvals asked for; takeovers by state;
//! - every call the engine makes on its store (an
//!   [`ObservedStore`](abr_engine::ObservedStore) around it): its latency and its errors
//!   by operation;
//! - what waits for an approver, read at each scrape: tasks of every tenant from the
//!   store, committing actions of this replica's browse sessions, and the longest wait;
//! - the engine's load and the replica's status, read at each scrape: jobs running and
//!   queued, capacities, open browse sessions and captures, draining, the store's
//!   heartbeat, and `abr_info` with the version and the node id.
//!
//! **Bounded labels only.** A label value is a route template, a method, a status, an error
//! code, or a name from a fixed list (a run's kind and state, a step's action, a failure
//! stage); anything else is `other`. Never an id, a tenant, a URL, a host or a value.

use std::sync::Arc;
use std::time::Instant;

use abr_protocol::RunEvent;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::api_error::AnsweredCode;

/// The media type of the exposition (OpenMetrics 1.0, which Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    kind: &'static str,
    state: &'static str,
    stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    action: &'static str,
    ok: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    kind: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HealthLabels {
    health: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AcquireLabels {
    mode: &'static str,
    ok: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitingLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    version: &'static str,
    node: String,
}

/// What a scrape reads of the runner besides the counters.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Its load and state, as `GET /v1/ready` says them.
    pub(crate) readiness: abr_protocol::Readiness,
    /// Whether its last heartbeat reached the shared database (while draining, `readiness`
    /// names the drain only).
    pub(crate) database_reachable: bool,
    /// Relay runners connected to this hub: ok, silent, draining.
    pub(crate) relay_runners: [usize; 3],
    /// What waits for an approver (none when the store could not be read: the gauges keep
    /// their last reading).
    pub(crate) approvals: Option<abr_engine::ApprovalBacklog>,
    /// What the jobs' provider holds open, when it can tell.
    pub(crate) pool: Option<abr_core::PoolStats>,
    /// The time of the scrape (the approvals' ages are measured to it).
    pub(crate) now: time::OffsetDateTime,
}

/// A runner's metrics (see the module's docs). Cheap to share: every family is a handle.
pub struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_seconds: Family<RouteLabels, Histogram>,
    errors: Family<CodeLabels, Counter>,
    runs_ended: Family<RunLabels, Counter>,
    run_seconds: Family<KindLabels, Histogram>,
    steps: Family<StepLabels, Counter>,
    step_seconds: Family<ActionLabels, Histogram>,
    refusals: Family<RuleLabels, Counter>,
    run_failures: Family<FailureLabels, Counter>,
    stalls: Counter,
    approvals_asked: Counter,
    takeovers: Family<StateLabels, Counter>,
    jobs_running: Gauge,
    jobs_queued: Gauge,
    job_capacity: Gauge,
    queue_capacity: Gauge,
    browse_sessions: Gauge,
    captures: Gauge,
    draining: Gauge,
    database_reachable: Gauge,
    info: Family<InfoLabels, Gauge>,
    relay_runners: Family<HealthLabels, Gauge>,
    approvals_waiting: Family<WaitingLabels, Gauge>,
    store_seconds: Family<OpLabels, Histogram>,
    acquire_seconds: Family<AcquireLabels, Histogram>,
    browser_pool: Family<PoolLabels, Gauge>,
    store_errors: Family<OpLabels, Counter>,
    approval_oldest: Family<WaitingLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Latency buckets in seconds: 5 ms to about 80 s, doubling.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

/// Store latency buckets in seconds: 100 µs to about 1.6 s, doubling.
fn store_latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 15))
}

/// Run duration buckets in seconds: 100 ms to about 27 minutes, doubling.
fn run_duration() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 15))
}

impl Metrics {
    /// Every family registered, every count at zero.
    #[must_use]
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("abr");
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP answers by route template, method and status",
            http_requests.clone(),
        );
        let http_seconds =
            Family::<RouteLabels, Histogram>::new_with_constructor(latency as fn() -> Histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer, by route template",
            http_seconds.clone(),
        );
        let errors = Family::<CodeLabels, Counter>::default();
        registry.register(
            "errors",
            "Error answers by their code (refusals, limits, egress, draining, failures)",
            errors.clone(),
        );
        let runs_ended = Family::<RunLabels, Counter>::default();
        registry.register(
            "runs_ended",
            "Runs ended by kind (task, browse, post), state, and a failed or uncertain post's stage",
            runs_ended.clone(),
        );
        let run_seconds = Family::<KindLabels, Histogram>::new_with_constructor(
            run_duration as fn() -> Histogram,
        );
        registry.register(
            "run_duration_seconds",
            "How long runs ran, by kind",
            run_seconds.clone(),
        );
        let steps = Family::<StepLabels, Counter>::default();
        registry.register(
            "steps",
            "Steps of tasks and actions of browse sessions, by action and whether done",
            steps.clone(),
        );
        let step_seconds =
            Family::<ActionLabels, Histogram>::new_with_constructor(latency as fn() -> Histogram);
        registry.register(
            "step_duration_seconds",
            "How long steps and browse actions took, by action",
            step_seconds.clone(),
        );
        let refusals = Family::<RuleLabels, Counter>::default();
        registry.register(
            "refusals",
            "Actions the guard or the network gate refused inside a run (answered 200), by \
             rule (read_only, dry_run, awaiting_approval)",
            refusals.clone(),
        );
        let run_failures = Family::<FailureLabels, Counter>::default();
        registry.register(
            "run_failures",
            "Runs that ended failed or uncertain, by kind and error code",
            run_failures.clone(),
        );
        let stalls = Counter::default();
        registry.register(
            "runs_stalled",
            "Runs reported stalled (no progress for the stall time)",
            stalls.clone(),
        );
        let approvals_asked = Counter::default();
        registry.register(
            "approvals_required",
            "Runs and actions that asked an approver",
            approvals_asked.clone(),
        );
        let takeovers = Family::<StateLabels, Counter>::default();
        registry.register(
            "takeovers",
            "Takeover transitions by the state reached",
            takeovers.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let g = Gauge::default();
            registry.register(name, help, g.clone());
            g
        };
        let jobs_running = gauge(&mut registry, "jobs_running", "Jobs holding a job slot");
        let jobs_queued = gauge(&mut registry, "jobs_queued", "Jobs waiting for a job slot");
        let job_capacity = gauge(&mut registry, "job_capacity", "Job slots");
        let queue_capacity = gauge(
            &mut registry,
            "queue_capacity",
            "Jobs that may wait for a slot before new ones are refused",
        );
        let browse_sessions = gauge(
            &mut registry,
            "browse_sessions_open",
            "Open browse sessions",
        );
        let captures = gauge(&mut registry, "captures_open", "Captures in progress");
        let draining = gauge(
            &mut registry,
            "draining",
            "1 while this replica drains (refuses new work), else 0",
        );
        let database_reachable = gauge(
            &mut registry,
            "database_reachable",
            "1 when the last heartbeat reached the shared database (always 1 without one)",
        );
        let info = Family::<InfoLabels, Gauge>::default();
        registry.register(
            "info",
            "Always 1: this runner's version, and its node id in a fleet (empty alone)",
            info.clone(),
        );
        let relay_runners = Family::<HealthLabels, Gauge>::default();
        registry.register(
            "relay_runners",
            "Relay runners connected to this hub, by health (ok, silent, draining)",
            relay_runners.clone(),
        );
        let approvals_waiting = Family::<WaitingLabels, Gauge>::default();
        registry.register(
            "approvals_waiting",
            "What waits for an approver now: tasks of every tenant pending approval \
             (kind=task), committing actions of this replica's browse sessions \
             (kind=browse_action)",
            approvals_waiting.clone(),
        );
        let approval_oldest =
            Family::<WaitingLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "approval_oldest_wait_seconds",
            "How long the longest-waiting of them has waited (0 when none waits)",
            approval_oldest.clone(),
        );
        let store_seconds =
            Family::<OpLabels, Histogram>::new_with_constructor(store_latency as fn() -> Histogram);
        registry.register(
            "store_duration_seconds",
            "How long the engine's calls on its store took, by operation (task.update, \
             event.append, ...)",
            store_seconds.clone(),
        );
        let acquire_seconds =
            Family::<AcquireLabels, Histogram>::new_with_constructor(latency as fn() -> Histogram);
        registry.register(
            "acquire_duration_seconds",
            "How long a provider took to give a browser context, by mode (unattended: a job's; \
             interactive: a capture's) and whether it gave one",
            acquire_seconds.clone(),
        );
        let store_errors = Family::<OpLabels, Counter>::default();
        registry.register(
            "store_errors",
            "The engine's calls on its store that answered an error, by operation",
            store_errors.clone(),
        );
        let browser_pool = Family::<PoolLabels, Gauge>::default();
        registry.register(
            "browser_pool",
            "What the jobs' provider holds open: browser processes (kind=browsers), contexts \
             leased to jobs (contexts_in_use), contexts kept warm (contexts_warm); absent \
             when it cannot tell (a remote provider's browsers are its jobs)",
            browser_pool.clone(),
        );
        Self {
            registry,
            browser_pool,
            store_seconds,
            acquire_seconds,
            store_errors,
            approvals_waiting,
            approval_oldest,
            relay_runners,
            http_requests,
            http_seconds,
            errors,
            runs_ended,
            run_seconds,
            steps,
            step_seconds,
            refusals,
            run_failures,
            stalls,
            approvals_asked,
            takeovers,
            jobs_running,
            jobs_queued,
            job_capacity,
            queue_capacity,
            browse_sessions,
            captures,
            draining,
            database_reachable,
            info,
        }
    }

    /// Counts one HTTP answer.
    fn answered(&self, route: String, method: &'static str, response: &Response, took: f64) {
        self.http_requests
            .get_or_create(&HttpLabels {
                route: route.clone(),
                method,
                status: response.status().as_u16(),
            })
            .inc();
        self.http_seconds
            .get_or_create(&RouteLabels { route })
            .observe(took);
        if let Some(AnsweredCode(code)) = response.extensions().get::<AnsweredCode>() {
            self.errors.get_or_create(&CodeLabels { code }).inc();
        }
    }

    /// Counts one run event.
    pub(crate) fn event(&self, event: &RunEvent) {
        match event.event.as_str() {
            "run_ended" => {
                let kind = one_of(event.kind.as_deref(), KINDS);
                self.runs_ended
                    .get_or_create(&RunLabels {
                        kind,
                        state: one_of(event.state.as_deref(), STATES),
                        stage: event
                            .stage
                            .as_deref()
                            .map_or("none", |stage| one_of(Some(stage), FAILURE_STAGES)),
                    })
                    .inc();
                if let Some(ms) = event.elapsed_ms {
                    self.run_seconds
                        .get_or_create(&KindLabels { kind })
                        .observe(seconds(ms));
                }
                if let Some(code) = &event.code {
                    self.run_failures
                        .get_or_create(&FailureLabels {
                            kind,
                            code: code_label(code),
                        })
                        .inc();
                }
            }
            "step_progress" => {
                let action = one_of(event.action.as_deref(), ACTIONS);
                if let Some(ms) = event.ms {
                    self.step_seconds
                        .get_or_create(&ActionLabels { action })
                        .observe(seconds(ms));
                }
                if let Some(rule) = &event.refused_by {
                    self.refusals
                        .get_or_create(&RuleLabels {
                            rule: one_of(Some(rule), RULES),
                        })
                        .inc();
                }
                self.steps
                    .get_or_create(&StepLabels {
                        action,
                        ok: if event.ok == Some(true) {
                            "true"
                        } else {
                            "false"
                        },
                    })
                    .inc();
            }
            "run_stalled" => {
                self.stalls.inc();
            }
            "approval_required" => {
                self.approvals_asked.inc();
            }
            _ => {
                if let Some(state) = &event.state
                    && event.takeover_id.is_some()
                {
                    self.takeovers
                        .get_or_create(&StateLabels {
                            state: one_of(Some(state), TAKEOVER_STATES),
                        })
                        .inc();
                }
            }
        }
    }

    /// The exposition, with the gauges read from `now`.
    pub(crate) fn render(&self, now: &Snapshot) -> String {
        let set = |gauge: &Gauge, n: usize| {
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        };
        let ready = &now.readiness;
        set(&self.jobs_running, ready.jobs_running);
        set(&self.jobs_queued, ready.jobs_queued);
        set(&self.job_capacity, ready.job_capacity);
        set(&self.queue_capacity, ready.queue_capacity);
        set(&self.browse_sessions, ready.open_browses);
        set(&self.captures, ready.open_captures);
        set(
            &self.draining,
            usize::from(ready.reason.as_deref() == Some("draining")),
        );
        set(
            &self.database_reachable,
            usize::from(now.database_reachable),
        );
        for (health, n) in ["ok", "silent", "draining"]
            .into_iter()
            .zip(now.relay_runners)
        {
            set(
                &self.relay_runners.get_or_create(&HealthLabels { health }),
                n,
            );
        }
        if let Some(pool) = &now.pool {
            for (kind, n) in [
                ("browsers", pool.browsers),
                ("contexts_in_use", pool.contexts_in_use),
                ("contexts_warm", pool.contexts_warm),
            ] {
                set(&self.browser_pool.get_or_create(&PoolLabels { kind }), n);
            }
        }
        if let Some(backlog) = &now.approvals {
            for (kind, waiting) in [("task", backlog.tasks), ("browse_action", backlog.actions)] {
                let labels = WaitingLabels { kind };
                set(
                    &self.approvals_waiting.get_or_create(&labels),
                    usize::try_from(waiting.count).unwrap_or(usize::MAX),
                );
                let waited = waiting
                    .oldest
                    .map_or(0.0, |oldest| (now.now - oldest).as_seconds_f64().max(0.0));
                self.approval_oldest.get_or_create(&labels).set(waited);
            }
        }
        self.info
            .get_or_create(&InfoLabels {
                version: env!("CARGO_PKG_VERSION"),
                node: ready.node.clone().unwrap_or_default(),
            })
            .set(1);
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!(error = %e, "the metrics could not be written");
        }
        text
    }
}

/// The run kinds a `run_ended` names.
const KINDS: &[&str] = &["task", "browse", "post"];
/// Every state a task, a browse session or a post ends in (their wire names).
const STATES: &[&str] = &[
    "succeeded",
    "uncertain",
    "failed",
    "needs_reauth",
    "rejected",
    "closed",
    "running",
];
/// A post's failure stages.
const FAILURE_STAGES: &[&str] = &["precheck", "compose", "media", "submit", "verify"];
/// Plan steps and browse actions.
const ACTIONS: &[&str] = &[
    "navigate",
    "click",
    "type",
    "select",
    "wait",
    "extract",
    "screenshot",
    "assert",
    "press",
    "scroll",
    "back",
];
/// The rules that refuse an action inside a run.
const RULES: &[&str] = &["read_only", "dry_run", "awaiting_approval"];
/// Takeover states.
const TAKEOVER_STATES: &[&str] = &["requested", "active", "resumed", "ended", "expired"];

/// `value` when it is one of `known`, else `other` (a label never takes a free value).
fn one_of(value: Option<&str>, known: &[&'static str]) -> &'static str {
    value
        .and_then(|v| known.iter().find(|k| **k == v).copied())
        .unwrap_or("other")
}

/// An error code as a label: one of the runner's codes ([`abr_protocol::codes::ALL`]), else
/// `other`.
fn code_label(code: &str) -> &'static str {
    abr_protocol::codes::ALL
        .iter()
        .find(|known| known.code == code)
        .map_or("other", |known| known.code)
}

/// Milliseconds as seconds.
fn seconds(ms: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a duration in seconds")]
    let secs = ms as f64 / 1000.0;
    secs
}

/// A method as a label: the standard ones by name, any other `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
    one_of(Some(method.as_str()), METHODS)
}

/// The route template a request matched (`/v1/tasks/{id}`), `unmatched` when none did:
/// what the access log and the metrics name a request by (never its path, which may carry
/// an id).
pub(crate) fn route_of(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned())
}

/// The layer that counts every answer (beside the access log).
pub(crate) async fn observe(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let method = method_label(request.method());
    let route = route_of(&request);
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.answered(route, method, &response, started.elapsed().as_secs_f64());
    response
}

/// The answer of `GET /metrics` (`scrape.rs`): the exposition with its media type.
pub(crate) fn exposition(metrics: &Metrics, now: &Snapshot) -> Response {
    let mut response = metrics.render(now).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// What feeds [`Metrics`] from an engine: its events ([`EventSink`](abr_engine::EventSink))
/// and its store's calls ([`StoreObserver`](abr_engine::StoreObserver)), as the runner
/// wires them (an embedder's engine, or a benchmark's, may too).
#[derive(Debug, Clone)]
pub struct MetricsSink(pub Arc<Metrics>);

impl abr_engine::EventSink for MetricsSink {
    fn emit(&self, event: &RunEvent) {
        self.0.event(event);
    }
}

impl Metrics {
    /// A provider answered an acquire for `mode` after `took`, with a context or not
    /// ([`crate::timed_provider`]).
    pub(crate) fn acquired(
        &self,
        mode: abr_core::AcquireMode,
        took: std::time::Duration,
        ok: bool,
    ) {
        let mode = match mode {
            abr_core::AcquireMode::Unattended => "unattended",
            abr_core::AcquireMode::Interactive => "interactive",
        };
        self.acquire_seconds
            .get_or_create(&AcquireLabels {
                mode,
                ok: if ok { "true" } else { "false" },
            })
            .observe(took.as_secs_f64());
    }
}

impl abr_engine::StoreObserver for MetricsSink {
    fn observe(&self, op: &'static str, took: std::time::Duration, ok: bool) {
        let labels = OpLabels { op };
        self.0
            .store_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if !ok {
            self.0.store_errors.get_or_create(&labels).inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_value_is_never_a_label() {
        assert_eq!(one_of(Some("post"), KINDS), "post");
        assert_eq!(one_of(Some("task_01HXYZ"), KINDS), "other");
        assert_eq!(one_of(None, KINDS), "other");
        let custom = axum::http::Method::from_bytes(b"TASK_01HXYZ").unwrap_or_default();
        assert_eq!(method_label(&custom), "other");
        assert_eq!(method_label(&axum::http::Method::PUT), "PUT");
    }
}
