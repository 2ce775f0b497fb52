//! Task benchmark (issue 9), side by side with Node Playwright in one run:
//!
//! `cargo bench -p abr-service --bench tasks`
//!
//! A 6-step plan on the demo site's admin users form (navigate to `/admin/users`, click "Add
//! user", type a fresh email from the task's inputs, choose a role, click Submit, extract the
//! users table; verification: a DOM check for the success message), four ways, in
//! interleaved rounds (one task of each per round, the order rotating) so that drift of the
//! machine cancels out:
//! 1. a Node playwright-core script (`bench/node-tasks.mjs`) doing the same browser work in a
//!    new context with `storageState` on one shared browser;
//! 2. ABR "steps only": the same browser actions straight through [`StepRunner`] on a lease
//!    of the same provider, no task runner (acquire, the 6 steps, the same DOM check,
//!    release);
//! 3. ABR's [`Engine`] with the [`InMemoryStore`]: create (approval rule `All`) → approve
//!    (which queues the run in a job slot) → the end, told to a [`TaskCompletion`] sink
//!    (records saved at every step, audit events to a memory sink, the verification; the
//!    tenant's replay screenshots switched off);
//! 4. the same with the SQLite store ([`SqliteStore`], in a temp dir, with a session key);
//! 5. the same SQLite file with replay frames on (the engine's defaults), for a tenant of its
//!    own (the screenshots switch is per tenant).
//!
//! Overhead of approval, records, audit and verification bookkeeping = engine − steps
//! only. The steps-only baseline includes the runner's browser work exactly (the runner opens
//! the target URL before the first step unless that step opens it, as this plan's does, and
//! its `dom_check` verification is one more DOM check), so the difference holds no browser
//! action; the Node script does the same browser work too (one `goto`, as a person's script). Every side uses Debian's headless shell, one shared browser each, cookie-only
//! session. `ABR_BENCH_QUICK=1` for a short run.
//!
//! `ABR_BENCH_TELEMETRY=on`: the whole run with what `abr serve` adds around its engine when
//! an operator looks: the runner's log subscriber (at `info`, to a sink), traces exported over
//! OTLP to an in-process collector that accepts and drops them, and the engines' events and
//! store calls counted into [`Metrics`]. Off (the default) has none of it; the two runs'
//! "engine − steps only" overheads are the cost (the steps-only baseline in each run takes the
//! machine's drift out).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark binary"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use abr_core::approval::ApprovalRule;
use abr_core::guard::{
    NetworkRules, OutgoingRequest, OwnSites, PageProbe, RequestGate, RequestKind, classify,
};
use abr_core::limits::TenantLimits;
use abr_core::plan::{PlanLimits, validate};
use abr_core::step_runner::{BrowserAction, StepOutput, StepRunner};
use abr_core::store::InMemoryStore;
use abr_core::{AcquireMode, AcquireRequest, EgressPolicy, MemoryAuditSink, SessionProvider};
use abr_demo::DemoSite;
use abr_engine::{
    Engine, EngineBuilder, EngineConfig, EngineStore, ObservedStore, StoreObserver, TaskCompletion,
    TaskEnd,
};
use abr_protocol::{
    AgentSessionState, ApproveRequest, Cookie, DomCheck, Role, SecretValue, SessionScopeSpec,
    StepPlan, TaskRequest, TaskState, TaskVerification,
};
use abr_providers::{
    BrowserSession, ChromiumBinary, LocalBrowserSessionProvider, LocalProviderConfig, base_args,
};
use abr_service::metrics::{Metrics, MetricsSink};
use abr_store::{SealingKey, SqliteStore};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{Mutex, mpsc};

const TENANT: &str = "bench";
/// The tenant of the variant with replay frames: the screenshots switch is per tenant, and it
/// shares the SQLite file of the variant without.
const FRAMED_TENANT: &str = "bench-framed";
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
const WARMUP: usize = 2;

/// The plan: six steps and a DOM-check verification.
fn plan(base: &str) -> StepPlan {
    serde_json::from_value(json!({
        "targetUrl": format!("{base}/admin/users"),
        "steps": [
            {"type": "navigate", "url": format!("{base}/admin/users"), "description": "Open the users admin page"},
            {"type": "click", "selector": "#add-user-btn", "description": "Click 'Add user'"},
            {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter the new user's email"},
            {"type": "select", "selector": "#role-dropdown", "value": "editor", "description": "Choose the editor role"},
            {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"},
            {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
        ],
        "verification": {"method": "dom_check", "selector": ".success-message", "text": "User created successfully"},
        "risk": "medium",
        "reasoning": "benchmark",
        "confidence": 0.9
    }))
    .unwrap()
}

fn inputs(email: &str) -> BTreeMap<String, SecretValue> {
    BTreeMap::from([("email".to_owned(), SecretValue::new(email))])
}

/// Whether the extracted users table lists `email`.
fn lists(table: Option<&Value>, email: &str) -> bool {
    table
        .and_then(Value::as_array)
        .is_some_and(|rows| rows.iter().any(|r| r["Email"] == email))
}

/// Signs in with the site's form over plain HTTP: the session a capture would have produced
/// (the host-only `demo_session` cookie).
async fn signed_in(site: &DemoSite) -> AgentSessionState {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let response = http
        .post(format!("{}/login", site.base_url()))
        .form(&[
            ("username", TENANT),
            ("password", abr_demo::site::DEMO_PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "the demo sign-in did not redirect");
    let token = response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| cookie::Cookie::parse(v).ok())
        .find(|c| c.name() == abr_demo::site::SESSION_COOKIE && !c.value().is_empty())
        .expect("the sign-in set no demo_session cookie")
        .value()
        .to_owned();
    let mut cookie = Cookie::new(abr_demo::site::SESSION_COOKIE, token, "127.0.0.1");
    cookie.http_only = true;
    AgentSessionState {
        cookies: vec![cookie],
        ..AgentSessionState::default()
    }
}

/// Adds up the time the engine waits on its task store (the task records, the counters, the
/// screenshots), told by the engine's [`ObservedStore`]: the records' cost, measured
/// directly (a difference of wall times is within the browser's noise). The other contracts
/// (replay frames, sites, sessions, posts, keys, evidence) are not added, as when the frames
/// were a store apart.
#[derive(Default)]
struct TaskStoreTime {
    nanos: AtomicU64,
    calls: AtomicU64,
}

impl StoreObserver for TaskStoreTime {
    fn observe(&self, op: &'static str, took: Duration, _ok: bool) {
        if ["task.", "counter.", "screenshot."]
            .iter()
            .any(|part| op.starts_with(part))
        {
            let spent = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(spent, Ordering::Relaxed);
            self.calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Two observers of one store: the bench's timing and, with telemetry on, the metrics.
struct Both(Arc<dyn StoreObserver>, Arc<dyn StoreObserver>);

impl StoreObserver for Both {
    fn observe(&self, op: &'static str, took: Duration, ok: bool) {
        self.0.observe(op, took, ok);
        self.1.observe(op, took, ok);
    }
}

/// With `ABR_BENCH_TELEMETRY=on`: the process's subscriber (logs to a sink, traces to an
/// in-process OTLP collector that drops them) and the metrics the engines feed.
async fn telemetry() -> Option<(Arc<Metrics>, abr_service::traces::Traces)> {
    if std::env::var("ABR_BENCH_TELEMETRY").ok().as_deref() != Some("on") {
        return None;
    }
    let collector = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|body: axum::body::Bytes| async move {
            std::hint::black_box(body.len());
            axum::http::StatusCode::OK
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, collector).await;
    });
    let endpoint = url::Url::parse(&format!("http://{addr}/v1/traces")).unwrap();
    let traces = abr_service::traces::Traces::start(
        &abr_service::traces::TraceSettings::to(endpoint),
        "bench",
    )
    .unwrap();
    tracing_subscriber::util::SubscriberInitExt::init(
        abr_service::logging::subscriber_with_traces("info", std::io::sink, Some(&traces)),
    );
    Some((Arc::new(Metrics::new()), traces))
}

impl TaskStoreTime {
    /// Milliseconds spent in the store, and the calls made, since the last call.
    fn take(&self) -> (f64, u64) {
        (
            self.nanos.swap(0, Ordering::Relaxed) as f64 / 1e6,
            self.calls.swap(0, Ordering::Relaxed),
        )
    }
}

/// The completion sink: every ended task's end, in the order the runs end.
#[derive(Debug)]
struct Ends(mpsc::UnboundedSender<TaskEnd>);

impl TaskCompletion for Ends {
    fn completed(&self, end: TaskEnd) {
        // The receiver lives as long as the bench's engines.
        let _ = self.0.send(end);
    }
}

/// What one ABR task spent.
struct TaskTiming {
    total_ms: f64,
    /// create + approve (before the browser is involved).
    admin_ms: f64,
    /// Waiting on the task store, over create, approve and run.
    store_ms: f64,
    /// The task store's calls over create, approve and run.
    store_calls: u64,
    /// Each plan step's time as the runner recorded it (its element read, rule, action,
    /// network check and what it kept).
    steps: Vec<f64>,
}

struct Abr {
    engine: Engine<BrowserSession>,
    store: Arc<TaskStoreTime>,
    audit: Arc<MemoryAuditSink>,
    ends: Mutex<mpsc::UnboundedReceiver<TaskEnd>>,
    /// The tenant its tasks run for.
    tenant: &'static str,
}

impl Abr {
    /// An engine over `store` for `tenant`, with its replay screenshots switched off unless
    /// `frames`.
    async fn new(
        provider: Arc<LocalBrowserSessionProvider>,
        store: Arc<dyn EngineStore>,
        tenant: &'static str,
        frames: bool,
        metrics: Option<&Arc<Metrics>>,
        egress: EgressPolicy,
    ) -> Self {
        let timing = Arc::new(TaskStoreTime::default());
        let observer: Arc<dyn StoreObserver> = match metrics {
            Some(metrics) => Arc::new(Both(
                timing.clone(),
                Arc::new(MetricsSink(Arc::clone(metrics))),
            )),
            None => timing.clone(),
        };
        let store = Arc::new(ObservedStore::new(store, observer));
        let audit = Arc::new(MemoryAuditSink::new());
        let (sender, ends) = mpsc::unbounded_channel();
        let config = EngineConfig {
            approval: ApprovalRule::All,
            tenant_limits: TenantLimits {
                daily_executions: 100_000,
                ..TenantLimits::default()
            },
            max_concurrent_jobs: 4,
            max_queued_jobs: 64,
            // The engine's own view of the provider's policy (the demo site is on loopback).
            egress,
            ..EngineConfig::default()
        };
        let mut builder = EngineBuilder::new(config, provider.clone(), provider, store.clone())
            .audit(audit.clone())
            .completion(Arc::new(Ends(sender)));
        if let Some(metrics) = metrics {
            builder = builder.event_sink(Arc::new(MetricsSink(Arc::clone(metrics))));
        }
        let engine = builder.build().unwrap();
        if !frames {
            engine
                .set_screenshots_enabled(
                    &actor("bench-operator", Role::Operator, tenant),
                    false,
                    "bench",
                )
                .await
                .unwrap();
        }
        Self {
            engine,
            store: timing,
            audit,
            ends: Mutex::new(ends),
            tenant,
        }
    }

    /// create (waits for approval) → approve → run to the end.
    async fn task(
        &self,
        plan: &StepPlan,
        session: &AgentSessionState,
        scope: &SessionScopeSpec,
        email: &str,
    ) -> TaskTiming {
        let request = TaskRequest {
            profile: None,
            plan: plan.clone(),
            inputs: inputs(email),
            secret_inputs: Vec::new(),
            session: Some(session.clone()),
            session_id: None,
            scope: Some(scope.clone()),
            platform: None,
            tenant_id: None,
            proposal_id: Some(format!("bench-{email}")),
            dry_run: false,
            handoff: None,
        };
        let mut ends = self.ends.lock().await;
        self.store.take();
        let t0 = Instant::now();
        let created = self
            .engine
            .create_task(
                &actor("bench-agent", Role::Agent, self.tenant),
                request,
                None,
            )
            .await
            .unwrap();
        assert_eq!(created.record.state, TaskState::PendingApproval);
        let approval = ApproveRequest {
            approved_by: None,
            plan_hash: created.record.plan_hash.clone(),
        };
        self.engine
            .approve_task(
                &actor("bench-approver", Role::Approver, self.tenant),
                &created.record.task_id,
                &approval,
            )
            .await
            .unwrap();
        let admin_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let end = tokio::time::timeout(Duration::from_secs(300), ends.recv())
            .await
            .expect("the task did not end in 5 minutes")
            .expect("the completion sink is gone");
        let total_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (store_ms, store_calls) = self.store.take();
        assert_eq!(
            end.record.task_id, created.record.task_id,
            "another task ended"
        );
        assert_eq!(
            end.record.state,
            TaskState::Succeeded,
            "task failed: {:?} at {:?}",
            end.record.error,
            end.record.failed_step
        );
        assert!(
            lists(end.record.extracted.get("users"), email),
            "the extracted table misses {email}"
        );
        TaskTiming {
            total_ms,
            admin_ms,
            store_ms,
            store_calls,
            steps: end
                .record
                .step_results
                .iter()
                .map(|r| r.ms as f64)
                .collect(),
        }
    }
}

/// A read-write run's network gate for the steps-only variant: the core's rule on every
/// write (held until it answers), counting the writes to the run's own site, as a task's
/// gate does before its durable mark.
#[derive(Debug)]
struct BenchGate {
    own: OwnSites,
    writes: AtomicU64,
}

#[async_trait]
impl RequestGate for BenchGate {
    async fn admit(&self, request: &OutgoingRequest<'_>) -> bool {
        if classify(&NetworkRules::default(), &self.own, request) == RequestKind::Commits {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        true
    }

    fn refuses_writes(&self) -> bool {
        false
    }

    fn websockets_guarded(&self) -> bool {
        false
    }

    fn admit_websocket(&self, _url: &str) -> bool {
        true
    }

    async fn socket_opened(&self, _url: &str) {}
}

/// The phases of a task, timed on both sides (steps only and the Node script) in this order.
/// The runner's opening of the target URL, were the plan's first step not to open it, would
/// be in `navigate`.
const PHASES: [&str; 9] = [
    "acquire", "navigate", "click", "type", "select", "submit", "extract", "check", "release",
];

/// One task's time, whole and by phase ([`PHASES`]).
struct Phased {
    ms: f64,
    phases: Vec<f64>,
}

/// The same browser actions as the task runner, straight through `StepRunner` on a lease;
/// with `gated`, the lease's context routed through a network gate first (the cost of the
/// read-only invariant's interception, alone).
async fn steps_only(
    provider: &LocalBrowserSessionProvider,
    plan: &StepPlan,
    session: &AgentSessionState,
    email: &str,
    gated: bool,
) -> Phased {
    let inputs = inputs(email);
    let valid = validate(plan, &inputs, &PlanLimits::default()).unwrap();
    let steps = valid.fill(&inputs).unwrap();
    let TaskVerification::DomCheck { check } = &plan.verification else {
        panic!("the plan verifies with a DOM check");
    };
    let verification = BrowserAction::Assert {
        check: DomCheck::clone(check),
    };
    let target = BrowserAction::Navigate {
        url: valid.target_url().clone(),
    };
    let t0 = Instant::now();
    let mut marks = Vec::with_capacity(PHASES.len());
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "task".into(),
            state: Some(session.clone()),
            start_url: None,
        })
        .await
        .unwrap();
    let context = lease.context();
    let gate = gated.then(|| {
        let mut own = OwnSites::default();
        own.add_url(valid.target_url().as_str());
        Arc::new(BenchGate {
            own,
            writes: AtomicU64::new(0),
        })
    });
    if let Some(gate) = &gate {
        let gate: Arc<dyn RequestGate> = gate.clone();
        context.guard_network(gate).await.unwrap();
    }
    marks.push(Instant::now());
    // As the runner: a plan whose first step opens its target URL does not load it twice.
    if steps.first().is_none_or(|step| step.action != target) {
        context.run(&target, STEP_TIMEOUT).await.unwrap();
    }
    let mut table = None;
    for step in &steps {
        if let StepOutput::Extracted(value) = context.run(&step.action, STEP_TIMEOUT).await.unwrap()
        {
            table = Some(value);
        }
        marks.push(Instant::now());
    }
    let checked = context.run(&verification, STEP_TIMEOUT).await.unwrap();
    marks.push(Instant::now());
    lease.release().await.unwrap();
    marks.push(Instant::now());
    if let Some(gate) = &gate {
        assert!(
            gate.writes.load(Ordering::SeqCst) >= 1,
            "the gate held the form's post"
        );
    }
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(checked, StepOutput::Checked(true), "the DOM check failed");
    assert!(
        lists(table.as_ref(), email),
        "the extracted table misses {email}"
    );
    let phases = marks
        .iter()
        .scan(t0, |last, &t| {
            let ms = t.duration_since(*last).as_secs_f64() * 1000.0;
            *last = t;
            Some(ms)
        })
        .collect::<Vec<_>>();
    assert_eq!(phases.len(), PHASES.len(), "one time per phase");
    Phased { ms, phases }
}

/// The Node peer: one long-running process, one task per command line.
struct NodePeer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl NodePeer {
    async fn start(site: &DemoSite, session: &AgentSessionState) -> Self {
        let config = json!({
            "base": site.base_url(),
            "executablePath": ChromiumBinary::HeadlessShell.path(),
            "args": base_args(),
            "storageState": serde_json::to_value(session).unwrap(),
        });
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/node-tasks.mjs");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Not killed on drop: when this side panics, its stdin closes and the script
            // closes its browser (a killed Node would leave the profile folder behind).
            .spawn()
            .expect("run node (install it and run driver/setup)");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut peer = Self {
            child,
            stdin,
            lines,
        };
        let ready = peer.read().await;
        assert_eq!(ready["ready"], true, "node peer: {ready}");
        peer
    }

    async fn read(&mut self) -> Value {
        let line = self
            .lines
            .next_line()
            .await
            .unwrap()
            .expect("the node peer exited (see its stderr above)");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, command: &Value) {
        let mut line = command.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn task(&mut self, email: &str) -> Phased {
        self.send(&json!({ "email": email })).await;
        let answer = self.read().await;
        assert_eq!(
            answer["found"], true,
            "node: the extracted table misses {email}"
        );
        let phases = answer["phases"]
            .as_array()
            .expect("node: a time per phase")
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect::<Vec<_>>();
        assert_eq!(phases.len(), PHASES.len(), "node: one time per phase");
        Phased {
            ms: answer["ms"].as_f64().unwrap(),
            phases,
        }
    }

    /// Closes its browser and waits for it to exit.
    async fn quit(mut self) {
        self.send(&json!({ "quit": true })).await;
        let closed = self.read().await;
        assert_eq!(closed["closed"], true, "node peer: {closed}");
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the node peer did not exit")
            .unwrap();
        assert!(status.success(), "node peer exited with {status}");
    }
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn median(samples: &[f64]) -> f64 {
    let v = sorted(samples);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Nearest-rank 90th percentile.
fn p90(samples: &[f64]) -> f64 {
    let v = sorted(samples);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = (0.9 * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Per-round differences `a[i] - b[i]` (the rounds are interleaved, so these pair up).
fn paired(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

#[derive(Clone, Copy, Debug)]
enum Side {
    Node,
    Steps,
    StepsGated,
    Memory,
    Sqlite,
    Framed,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let wall = Instant::now();
    // `ABR_BENCH_TRACE=1`: one task of each side after the warm-ups (`=N`: N of each), every
    // browser call and the runner's events on stderr with their times (where a task's time
    // goes).
    let trace_rounds = std::env::var("ABR_BENCH_TRACE")
        .ok()
        .map(|v| v.parse::<usize>().unwrap_or(1).max(1));
    let trace = trace_rounds.is_some();
    if trace {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "tasks=info,abr_engine=debug,abr_providers=debug,playwright_rs::protocol=debug",
            ))
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::stderr)
            .init();
    }
    let telemetry = if trace { None } else { telemetry().await };
    let metrics = telemetry.as_ref().map(|(metrics, _)| metrics);
    let n = if let Some(rounds) = trace_rounds {
        rounds
    } else if std::env::var_os("ABR_BENCH_QUICK").is_some() {
        5
    } else {
        30
    };
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let base = site.base_url();
    let session = signed_in(&site).await;
    let scope = SessionScopeSpec {
        cookie_domains: vec!["127.0.0.1".into()],
        origins: vec![base.clone()],
    };
    let plan = plan(&base);

    let egress = EgressPolicy::new().allow_addr(site.local_addr());
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(egress.clone()),
        ..LocalProviderConfig::default()
    }));
    let memory = Abr::new(
        provider.clone(),
        Arc::new(InMemoryStore::new()),
        TENANT,
        false,
        metrics,
        egress.clone(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite_store = SqliteStore::open(
        &dir.path().join("abr.db"),
        Some(SealingKey::from_bytes([7; 32])),
        false,
    )
    .unwrap();
    let sqlite_store: Arc<dyn EngineStore> = Arc::new(sqlite_store);
    let sqlite = Abr::new(
        provider.clone(),
        sqlite_store.clone(),
        TENANT,
        false,
        metrics,
        egress.clone(),
    )
    .await;
    // The engine's defaults: replay frames on, kept (sealed) in the same SQLite file.
    let framed = Abr::new(
        provider.clone(),
        sqlite_store,
        FRAMED_TENANT,
        true,
        metrics,
        egress,
    )
    .await;
    let mut node = NodePeer::start(&site, &session).await;

    let sides = [
        Side::Node,
        Side::Steps,
        Side::StepsGated,
        Side::Memory,
        Side::Sqlite,
        Side::Framed,
    ];
    let (mut t_node, mut t_steps, mut t_memory, mut t_sqlite, mut t_framed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut t_gated = Vec::new();
    // Per phase: Node's and steps only's samples.
    let (mut p_node, mut p_steps) = (
        vec![Vec::new(); PHASES.len()],
        vec![Vec::new(); PHASES.len()],
    );
    let (mut admin_memory, mut admin_sqlite) = (Vec::new(), Vec::new());
    let (mut store_memory, mut store_sqlite) = (Vec::new(), Vec::new());
    let mut calls_sqlite = Vec::new();
    // Per plan step, as the runner (SQLite) recorded it.
    let mut r_steps = vec![Vec::new(); 6];
    let mut r_framed = vec![Vec::new(); 6];
    let stamp = std::process::id();
    for round in 0..WARMUP + n {
        let timed = round >= WARMUP;
        for k in 0..sides.len() {
            let side = sides[(round + k) % sides.len()];
            let email = |tag: &str| format!("{tag}-{stamp}-{round}@bench.example");
            if trace && timed {
                tracing::info!("== trace: {side:?} ==");
            }
            match side {
                Side::Node => {
                    let t = node.task(&email("node")).await;
                    if timed {
                        t_node.push(t.ms);
                        for (samples, ms) in p_node.iter_mut().zip(t.phases) {
                            samples.push(ms);
                        }
                    }
                }
                Side::Steps => {
                    let t = steps_only(&provider, &plan, &session, &email("steps"), false).await;
                    if timed {
                        t_steps.push(t.ms);
                        for (samples, ms) in p_steps.iter_mut().zip(t.phases) {
                            samples.push(ms);
                        }
                    }
                }
                Side::StepsGated => {
                    let t = steps_only(&provider, &plan, &session, &email("gated"), true).await;
                    if timed {
                        t_gated.push(t.ms);
                    }
                }
                Side::Memory => {
                    let t = memory.task(&plan, &session, &scope, &email("mem")).await;
                    if timed {
                        t_memory.push(t.total_ms);
                        admin_memory.push(t.admin_ms);
                        store_memory.push(t.store_ms);
                    }
                }
                Side::Framed => {
                    let t = framed.task(&plan, &session, &scope, &email("framed")).await;
                    if timed {
                        t_framed.push(t.total_ms);
                        for (samples, ms) in r_framed.iter_mut().zip(&t.steps) {
                            samples.push(*ms);
                        }
                    }
                }
                Side::Sqlite => {
                    let t = sqlite.task(&plan, &session, &scope, &email("sqlite")).await;
                    if timed {
                        t_sqlite.push(t.total_ms);
                        admin_sqlite.push(t.admin_ms);
                        store_sqlite.push(t.store_ms);
                        calls_sqlite.push(t.store_calls as f64);
                        for (samples, ms) in r_steps.iter_mut().zip(&t.steps) {
                            samples.push(*ms);
                        }
                    }
                }
            }
            // Every task starts on a quiet machine: not beside the warm pool's refill after
            // the last side's lease (which the side after an ABR side would pay, and the
            // side after Node not).
            provider.settle().await;
        }
    }
    provider.shutdown().await;
    node.quit().await;
    // Audit delivery is in the background: give it a moment before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let audit_events =
        memory.audit.events().len() + sqlite.audit.events().len() + framed.audit.events().len();
    let users = site.users().len();
    drop(memory);
    drop(sqlite);
    drop(framed);
    site.shutdown().await;
    drop(dir);

    let node_median = median(&t_node);
    println!(
        "# ABR task benchmark ({n} tasks per variant after {WARMUP} warm-ups, interleaved rounds; \
         6-step plan + dom_check on the demo site's /admin/users; headless shell, one shared \
         browser per side)\n"
    );
    println!("| variant | median ms | p90 ms | median / Node |");
    println!("|---|---|---|---|");
    let rows: [(&str, &[f64]); 6] = [
        (
            "Node playwright-core script (newContext({storageState}), same browser work)",
            &t_node,
        ),
        (
            "ABR steps only (StepRunner on a lease: acquire, 6 steps, DOM check, release)",
            &t_steps,
        ),
        (
            "ABR steps only + the network gate (every request routed, every write held for the gate)",
            &t_gated,
        ),
        (
            "ABR Engine + InMemoryStore (create → approve → run)",
            &t_memory,
        ),
        (
            "ABR Engine + SqliteStore (temp dir, session key; create → approve → run)",
            &t_sqlite,
        ),
        (
            "ABR Engine + SqliteStore + replay frames (the engine's defaults)",
            &t_framed,
        ),
    ];
    for (name, samples) in rows {
        println!(
            "| {name} | {:.1} | {:.1} | {:.2} |",
            median(samples),
            p90(samples),
            median(samples) / node_median
        );
    }
    println!(
        "\nBy phase, steps only against the Node script (medians; Node's acquire is newContext + \
         newPage, ABR's the lease; the target URL is opened by step 1, navigate):\n"
    );
    println!("| phase | Node ms | ABR steps ms | ABR − Node ms |");
    println!("|---|---|---|---|");
    for (i, name) in PHASES.iter().enumerate() {
        let (n, a) = (median(&p_node[i]), median(&p_steps[i]));
        println!("| {name} | {n:.1} | {a:.1} | {:+.1} |", a - n);
    }
    println!(
        "\nBy plan step, the task runner (SQLite) against steps only (medians; the runner's \
         step holds its element read, the commit rule, the action, the network check and what \
         it keeps; whole ms; with frames, the same runner taking the default replay frames):\n"
    );
    println!("| step | steps only ms | runner ms | runner − steps ms | with frames ms |");
    println!("|---|---|---|---|---|");
    let (mut sum_steps, mut sum_runner, mut sum_framed) = (0.0, 0.0, 0.0);
    for (i, (samples, framed)) in r_steps.iter().zip(&r_framed).enumerate() {
        let (a, r, f) = (median(&p_steps[i + 1]), median(samples), median(framed));
        sum_steps += a;
        sum_runner += r;
        sum_framed += f;
        println!(
            "| {} | {a:.1} | {r:.1} | {:+.1} | {f:.1} |",
            PHASES[i + 1],
            r - a
        );
    }
    println!(
        "| everything else (acquire, page reads between steps, verification, \
         bookkeeping, release) | {:.1} | {:.1} | {:+.1} | {:.1} |",
        median(&t_steps) - sum_steps,
        median(&t_sqlite) - sum_runner,
        (median(&t_sqlite) - sum_runner) - (median(&t_steps) - sum_steps),
        median(&t_framed) - sum_framed
    );
    let steps = median(&t_steps);
    let gate_diffs = paired(&t_gated, &t_steps);
    println!(
        "\nThe network gate (the read-only invariant's interception, on in every task): {:+.1} ms \
         (difference of medians, {:.1}% of a task with the SQLite store); per-round \
         differences {:+.1} ms median, {:+.1} ms p90 (target: under 5% of a task)",
        median(&t_gated) - steps,
        (median(&t_gated) - steps) / median(&t_sqlite) * 100.0,
        median(&gate_diffs),
        p90(&gate_diffs),
    );
    println!("\nABR overhead for approval, records, audit (task runner − steps only):");
    for (name, samples, admin, store) in [
        ("in-memory store", &t_memory, &admin_memory, &store_memory),
        ("SQLite store", &t_sqlite, &admin_sqlite, &store_sqlite),
    ] {
        let diffs = paired(samples, &t_steps);
        println!(
            "- {name}: {:+.1} ms (difference of medians); per-round differences {:+.1} ms \
             median, {:+.1} ms p90; measured directly: create + approve {:.2} ms median \
             ({:.2} p90), waiting on the task store over create + approve + run {:.2} ms \
             median ({:.2} p90) (goal: under 10 ms)",
            median(samples) - steps,
            median(&diffs),
            p90(&diffs),
            median(admin),
            p90(admin),
            median(store),
            p90(store),
        );
    }
    println!(
        "\nBENCH task_rails_vs_node {:.3} 1.0",
        median(&t_sqlite) / node_median
    );
    println!(
        "BENCH task_frames_vs_node {:.3} 1.3",
        median(&t_framed) / node_median
    );
    println!(
        "\nThe SQLite store's calls per task: {:.0} (median), {:.2} ms each (median wait / median \
         calls)",
        median(&calls_sqlite),
        median(&store_sqlite) / median(&calls_sqlite)
    );
    println!("BENCH task_store_wait_ms {:.2} 10", median(&store_sqlite));
    println!(
        "\nThe DOM check of the verification is in every variant (the steps-only baseline runs it \
         as a step, the Node script as a waitFor), and the target URL is opened once, by step 1, \
         on every side: the overhead above holds no browser action."
    );
    if let Some((metrics, traces)) = telemetry {
        // Everything batched reaches the collector before the figures are final.
        let flushed = Instant::now();
        tokio::task::spawn_blocking(move || traces.shutdown())
            .await
            .unwrap();
        drop(metrics);
        println!(
            "\nTelemetry on: logs at info to a sink, traces over OTLP to an in-process collector \
             (the last batch flushed in {:.1} ms), the engines' events and store calls counted \
             into metrics. Compare the overheads above with a run without ABR_BENCH_TELEMETRY.",
            flushed.elapsed().as_secs_f64() * 1e3,
        );
        println!(
            "BENCH task_overhead_telemetry_on_ms {:.2} 30",
            median(&t_sqlite) - steps
        );
    } else {
        println!(
            "BENCH task_overhead_telemetry_off_ms {:.2} 30",
            median(&t_sqlite) - steps
        );
    }
    println!(
        "\n{users} users added, {audit_events} audit events, wall time {:.1} s",
        wall.elapsed().as_secs_f64()
    );
}

/// A key of `role` for `tenant`.
fn actor(id: &str, role: Role, tenant: &str) -> abr_core::principal::Actor {
    std::sync::Arc::new(
        abr_core::principal::Principal::new(
            id,
            id,
            role,
            abr_core::principal::Tenants::One(tenant.to_owned()),
            false,
        )
        .unwrap(),
    )
    .act_for(None)
    .unwrap()
}
