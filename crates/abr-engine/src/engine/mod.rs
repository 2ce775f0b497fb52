//! [`Engine`]: the application behind one facade. Built by [`EngineBuilder`] from an
//! [`EngineConfig`] with the providers, the store and the sinks handed in, it owns every
//! job's admission (the machine's [`JobSlots`] and the tenants' limits), a task's whole
//! lifecycle (a queued task runs in a slot of its own and its end goes to the
//! [`TaskCompletion`] sink) and the background sweeps (expired captures, expired evidence, idle browse
//! sessions).
//!
//! An embedder builds an `Engine` and posts, runs tasks and browse sessions with it;
//! `abr-service` puts the same calls behind HTTP, MCP and the relay.

mod artifacts;
mod lists;
mod records;

pub use records::LinkedTask;

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use abr_core::approval::ApprovalRule;
use abr_core::audit::{AuditError, AuditEvent, AuditSink, Auditor};
use abr_core::budget::{DeadlineBudget, Pacing};
use abr_core::clock::{Clock, OsRandom, RandomSource, SystemClock, new_token};
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::{FrameSource, FrameStore, ProfileStore, SiteStore};
use abr_core::limits::TenantLimits;
use abr_core::principal::{Actor, Right};
use abr_core::provider::DynSessionProvider;
use abr_core::store::{
    ArtifactStore, CounterStore, EventLog, EvidenceStore, Expired, KeyStore, LinkStore, PostStore,
    RecordStore, SessionStore, TaskQueue, TaskStore,
};
use abr_core::strategy::{StrategyRegistry, WebPostStrategy};
use abr_protocol::{
    ActResponse, ActionApproval, ActionDecision, ApproveRequest, BrowseAction, BrowseClosed,
    BrowseOpened, BrowseRequest, CaptureCancelResponse, CaptureFinishResponse, CaptureRef,
    CaptureStartRequest, CaptureStartResponse, CaptureStatus, PlatformInfo, PostRequest,
    ProbeRequest, ProbeResponse, RecheckResult, SecretValue, Snapshot, StoreSessionRequest,
    StoredSessionInfo, TaskRecord, TaskRequest,
};
use async_trait::async_trait;

use crate::admission::TenantAdmission;
use crate::approval_links::ApprovalLinks;
use crate::caller::Caller;
use crate::capture::{CaptureConfig, LiveTarget, SessionCaptureManager};
use crate::error::EngineError;
use crate::events::{EventSink, Events};
use crate::jobs::JobSlots;
use crate::keys::Keys;
use crate::live_access::LiveAttachment;
use crate::poster::{AgentPoster, PosterConfig};
use crate::posts::{PostJournal, Posted};
use crate::retention::Retention;
use crate::stored_sessions::StoredSessions;
use crate::task::browses::BrowseConfig;
use crate::task::runner::{Created, TaskConfig, TaskEnd, TaskRunner};

/// Where the engine keeps durable records: tasks, idempotency keys, per-tenant counters,
/// sessions stored by id, journaled posts, replay frames and the screenshots switch, site
/// decisions, API keys, artifacts. `abr-store`'s SQLite store in the runner; the core's in-memory
/// stores in tests.
pub trait EngineStore:
    TaskStore
    + ArtifactStore
    + PostStore
    + SessionStore
    + FrameStore
    + SiteStore
    + KeyStore
    + EvidenceStore
    + LinkStore
    + EventLog
{
}

impl<S> EngineStore for S where
    S: TaskStore
        + ArtifactStore
        + PostStore
        + SessionStore
        + FrameStore
        + SiteStore
        + KeyStore
        + EvidenceStore
        + LinkStore
        + EventLog
{
}

/// Told when a task ended, whether its run ended or a restart ended it
/// ([`Engine::recover`]): the runner posts the record to the plan's `api_callback` URL.
/// Called once per end; an implementation delivers in the background, best effort (a slow
/// or failing receiver never holds a run).
pub trait TaskCompletion: Send + Sync + std::fmt::Debug + 'static {
    /// `end` is the task's final record (and its callback URL, if the plan names one).
    fn completed(&self, end: TaskEnd);
}

/// Writes audit events as structured log lines (target `abr::audit`). Events carry ids,
/// outcomes and counts only. The engine's default sink.
#[derive(Debug, Default)]
pub struct TracingAuditSink;

#[async_trait]
impl AuditSink for TracingAuditSink {
    async fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let json = serde_json::to_string(event).map_err(|e| AuditError(e.to_string()))?;
        tracing::info!(target: "abr::audit", event = %json);
        Ok(())
    }
}

/// What the engine is configured with: its share of the runner's configuration (the HTTP
/// server's, the providers' and the store's settings stay with the runner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// The deadline of one request: every other deadline is a share of it
    /// ([`DeadlineBudget`]).
    pub request_timeout: Duration,
    /// Jobs (post, probe, capture start, browse call, task run) running at once.
    pub max_concurrent_jobs: usize,
    /// Jobs waiting for a slot; beyond it, [`EngineError::Overloaded`].
    pub max_queued_jobs: usize,
    /// How long a capture stays open.
    pub capture_ttl: Duration,
    /// Captures open at once.
    pub max_open_captures: usize,
    /// Browse sessions open at once, all tenants together.
    pub max_open_browses: usize,
    /// Sockets one live token may hold open at once.
    pub max_live_sockets: usize,
    /// Prefix of live-view URLs; a live token is appended (`https://runner.example/live/`).
    pub live_view_base: String,
    /// The randomized delay before a post acts, for platforms that take the runner's.
    pub pacing: Option<Pacing>,
    /// Which tasks wait for a person's approval.
    pub approval: ApprovalRule,
    /// Whose plans waiting for approval get a dry-run preview (default: none).
    pub plan_previews: abr_core::approval::PlanPreviews,
    /// Per-tenant limits of every execution (tasks, posts, browse sessions).
    pub tenant_limits: TenantLimits,
    /// How long a run's evidence (replay frames, screenshots, extracted data) is kept after
    /// it ended; `None` keeps it forever.
    pub retention: Option<Duration>,
    /// A run without progress this long is reported `run_stalled` (once per stall).
    pub stall_after: Duration,
    /// Where the providers' browsers may connect (they enforce it, below the page); the
    /// engine knows it to say why a page is refused (`egress_refused`: no site decision
    /// can allow it) rather than ask for a decision or a person.
    pub egress: abr_core::egress::EgressPolicy,
    /// What a tenant may keep as artifacts (files for plans' uploads).
    pub artifacts: abr_core::artifact::ArtifactRules,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(240),
            max_concurrent_jobs: 2,
            max_queued_jobs: 16,
            capture_ttl: Duration::from_secs(15 * 60),
            max_open_captures: 4,
            max_open_browses: 4,
            max_live_sockets: 2,
            live_view_base: "http://127.0.0.1:8787/live/".to_owned(),
            pacing: None,
            approval: ApprovalRule::All,
            plan_previews: abr_core::approval::PlanPreviews::Off,
            tenant_limits: TenantLimits::default(),
            retention: Some(DEFAULT_RETENTION),
            stall_after: crate::events::DEFAULT_STALL,
            egress: abr_core::egress::EgressPolicy::new(),
            artifacts: abr_core::artifact::ArtifactRules::default(),
        }
    }
}

/// Evidence is kept 30 days by default (`ABR_RETENTION_DAYS`).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

impl EngineConfig {
    /// Every deadline of a request, for platforms whose longest pacing is
    /// `platform_pacing_max`, and the poster's settings: `poster` when given (its step
    /// deadlines replace the budget's, checked to fit in the request), else the budget's.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] when the deadlines do not fit in the request timeout.
    pub fn deadlines(
        &self,
        platform_pacing_max: Duration,
        poster: Option<&PosterConfig>,
    ) -> Result<(DeadlineBudget, PosterConfig), EngineError> {
        let invalid = |e: abr_core::budget::BudgetError| CoreError::InvalidInput(e.to_string());
        let runner = self.pacing.map_or(Duration::ZERO, |p| p.max);
        let mut budget = DeadlineBudget::from_request_timeout(
            self.request_timeout,
            runner.max(platform_pacing_max),
        )
        .map_err(invalid)?;
        let poster = match poster {
            Some(given) => {
                budget.steps = given.timeouts;
                budget.pacing_max = budget
                    .pacing_max
                    .max(given.pacing.map_or(Duration::ZERO, |p| p.max));
                budget.check().map_err(invalid)?;
                given.clone()
            }
            None => PosterConfig::from_budget(&budget, self.pacing),
        };
        Ok((budget, poster))
    }
}

/// Builds an [`Engine`]: the configuration, the providers, the store, then the strategies
/// and sinks.
pub struct EngineBuilder<C: TaskContext> {
    config: EngineConfig,
    jobs: DynSessionProvider<C>,
    captures: DynSessionProvider<C>,
    store: Arc<dyn EngineStore>,
    strategies: StrategyRegistry<C>,
    audit: Option<Arc<dyn AuditSink>>,
    poster_config: Option<PosterConfig>,
    body_key: Option<SecretValue>,
    event_sink: Option<Arc<dyn EventSink>>,
    event_deliveries: bool,
    event_poll: Duration,
    sweep_gate: Option<Arc<dyn crate::retention::SweepGate>>,
    task_queue: Option<Arc<dyn TaskQueue>>,
    completion: Option<Arc<dyn TaskCompletion>>,
    profiles: Option<Arc<dyn ProfileStore>>,
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
}

impl<C: TaskContext> std::fmt::Debug for EngineBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("config", &self.config)
            .field("strategies", &self.strategies)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> EngineBuilder<C> {
    /// An engine running jobs on `jobs` and captures on `captures` (the same provider may
    /// serve both), keeping its records in `store`.
    pub fn new(
        config: EngineConfig,
        jobs: DynSessionProvider<C>,
        captures: DynSessionProvider<C>,
        store: Arc<dyn EngineStore>,
    ) -> Self {
        Self {
            config,
            jobs,
            captures,
            store,
            strategies: StrategyRegistry::new(),
            audit: None,
            poster_config: None,
            body_key: None,
            event_sink: None,
            event_deliveries: false,
            event_poll: crate::events::DEFAULT_EVENT_POLL,
            sweep_gate: None,
            task_queue: None,
            completion: None,
            profiles: None,
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
        }
    }

    /// Registers a platform strategy.
    ///
    /// # Errors
    /// A duplicate or empty platform id.
    pub fn strategy(mut self, strategy: Arc<dyn WebPostStrategy<C>>) -> Result<Self, EngineError> {
        self.strategies.register(strategy)?;
        Ok(self)
    }

    /// Uses `strategies` as the registered platforms (replacing any registered so far).
    #[must_use]
    pub fn strategies(mut self, strategies: StrategyRegistry<C>) -> Self {
        self.strategies = strategies;
        self
    }

    /// Sends audit events to `sink` (default: [`TracingAuditSink`]).
    #[must_use]
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Pacing and step deadlines of posts, instead of those derived from the request
    /// timeout; [`build`](Self::build) checks that they fit in it.
    #[must_use]
    pub fn poster_config(mut self, config: PosterConfig) -> Self {
        self.poster_config = Some(config);
        self
    }

    /// Binds idempotency keys to request bodies with a hash keyed by `key`, a secret that
    /// survives restarts with the records (default: random per process, so a replay after a
    /// restart counts as another body).
    #[must_use]
    pub fn body_hash_key(mut self, key: SecretValue) -> Self {
        self.body_key = Some(key);
        self
    }

    /// Sends every run event (approvals required, takeover transitions, step progress,
    /// stalls, ends) to `sink` in this process too, besides the store's log that the
    /// tenant streams read ([`Engine::subscribe_events`]).
    #[must_use]
    pub fn event_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.event_sink = Some(sink);
        self
    }

    /// Logs a webhook delivery with every event, in the same write
    /// ([`EventLog::append_event`](abr_core::store::EventLog::append_event)): the
    /// embedder's deliverer claims them from the store (one replica each) and settles them.
    #[must_use]
    pub fn event_deliveries(mut self, on: bool) -> Self {
        self.event_deliveries = on;
        self
    }

    /// Runs the sweeps that must run once per fleet (evidence and event retention) only
    /// when `gate` says so (default: always: one process).
    #[must_use]
    pub fn sweep_gate(mut self, gate: Arc<dyn crate::retention::SweepGate>) -> Self {
        self.sweep_gate = Some(gate);
        self
    }

    /// Shares queued tasks with a fleet through `queue`: a task that finds every job slot
    /// of this process busy is given to the fleet instead of waiting here, and this process
    /// claims the fleet's oldest waiting task whenever it has a free slot (also a task it
    /// held when it began to drain: handed over, not left to wait).
    #[must_use]
    pub fn task_queue(mut self, queue: Arc<dyn TaskQueue>) -> Self {
        self.task_queue = Some(queue);
        self
    }

    /// How often a tenant stream looks at the log for events appended by other replicas
    /// (default 1 s; this process's appends wake it at once).
    #[must_use]
    pub fn event_poll(mut self, every: Duration) -> Self {
        self.event_poll = every.max(Duration::from_millis(10));
        self
    }

    /// Tells `sink` of every task that ended (the `api_callback` delivery).
    #[must_use]
    pub fn completion(mut self, sink: Arc<dyn TaskCompletion>) -> Self {
        self.completion = Some(sink);
        self
    }

    /// Runs tasks on named browser profiles (`profile` in a task request), keeping the
    /// owners' consent and what is recorded of the profiles' sign-ins in `store`. The job
    /// provider must open profiles ([`ProviderCapabilities::profiles`](abr_core::ProviderCapabilities)):
    /// a local runner's disk. Without it a task naming a profile is refused
    /// (`unsupported`).
    #[must_use]
    pub fn profiles(mut self, store: Arc<dyn ProfileStore>) -> Self {
        self.profiles = Some(store);
        self
    }

    /// The one clock every part of the engine reads: records' times, deadlines of captures
    /// and takeovers, tenant days, keys' expiry, the evidence sweep (default: the system's;
    /// tests move one).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The randomness of pacing's jitter (default: the OS's; tests fix one). Tokens (keys,
    /// live views, approval links) always come from the OS's.
    #[must_use]
    pub fn random(mut self, random: Arc<dyn RandomSource>) -> Self {
        self.random = random;
        self
    }

    /// Builds the engine and starts its sweeps. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] when the deadlines do not fit in the request timeout (a
    /// platform's pacing, or step deadlines set with [`poster_config`](Self::poster_config));
    /// [`CoreError::Internal`] without randomness for the body-hash key.
    pub fn build(self) -> Result<Engine<C>, EngineError> {
        let config = self.config;
        let (budget, poster_config) = config.deadlines(
            self.strategies.longest_pacing(),
            self.poster_config.as_ref(),
        )?;
        let store = self.store;
        let body_key = match self.body_key {
            Some(key) => key,
            None => new_token()
                .map(SecretValue::new)
                .map_err(|_| CoreError::Internal("no randomness for the body-hash key"))?,
        };
        let strategies = Arc::new(self.strategies);
        let sink = self.audit.unwrap_or_else(|| Arc::new(TracingAuditSink));
        let audit = Auditor::new(sink, Duration::from_secs(5));
        let frames: Arc<dyn FrameStore> = Arc::clone(&store) as Arc<dyn FrameStore>;
        let sites: Arc<dyn SiteStore> = Arc::clone(&store) as Arc<dyn SiteStore>;
        let task_store: Arc<dyn TaskStore> = Arc::clone(&store) as Arc<dyn TaskStore>;
        let clock = self.clock;
        let browsers = Arc::clone(&self.jobs);
        let poster = Arc::new(
            AgentPoster::new(Arc::clone(&self.jobs), Arc::clone(&strategies))
                .with_audit(audit.clone())
                .with_frames(Arc::new(FrameSource::new(
                    Arc::clone(&frames),
                    Arc::clone(&clock),
                )))
                .with_config(poster_config)
                .with_clock(Arc::clone(&clock))
                .with_random(self.random),
        );
        let sessions = StoredSessions::new(
            Arc::clone(&store) as Arc<dyn SessionStore>,
            Arc::clone(&clock),
        );
        let admission = TenantAdmission::new(
            Arc::clone(&task_store) as Arc<dyn CounterStore>,
            config.tenant_limits,
            Arc::clone(&clock),
        );
        let events = Arc::new(Events::new(
            crate::events::EventLogConfig {
                log: Arc::clone(&store) as Arc<dyn EventLog>,
                deliver: self.event_deliveries,
                poll: self.event_poll,
            },
            self.event_sink,
            Arc::clone(&clock),
            config.stall_after,
        ));
        let posts = PostJournal::new(
            Arc::clone(&poster),
            Arc::clone(&store) as Arc<dyn PostStore>,
            body_key.clone(),
        )
        .with_clock(Arc::clone(&clock))
        .with_sessions(sessions.clone())
        .with_admission(admission.clone())
        .with_audit(audit.clone())
        .with_events(Arc::clone(&events));
        let artifacts = crate::artifacts::Artifacts::new(
            Arc::clone(&store) as Arc<dyn ArtifactStore>,
            config.artifacts.clone(),
            Arc::clone(&clock),
        );
        let mut tasks = TaskRunner::new(self.jobs, task_store)
            .with_clock(Arc::clone(&clock))
            .with_config(TaskConfig {
                approval: config.approval,
                plan_previews: config.plan_previews.clone(),
                limits: config.tenant_limits,
                egress: config.egress.clone(),
                ..TaskConfig::default().with_budget(&budget)
            })
            .with_browse_config(BrowseConfig {
                max_open: config.max_open_browses,
                ..BrowseConfig::default()
            })
            .with_platforms(Arc::clone(&strategies))
            .with_sessions(sessions.clone())
            .with_body_hash_key(body_key)
            .with_frames(Arc::clone(&frames))
            .with_sites(Arc::clone(&sites))
            .with_artifacts(artifacts.clone())
            .with_audit(audit.clone());
        tasks = tasks.with_events(Arc::clone(&events));
        if let Some(profiles) = &self.profiles {
            tasks = tasks.with_profiles(Arc::clone(profiles));
        }
        let tasks = Arc::new(tasks);
        let captures = Arc::new(
            SessionCaptureManager::new(
                self.captures,
                strategies,
                CaptureConfig {
                    ttl: config.capture_ttl,
                    max_open: config.max_open_captures,
                    live_view_base: config.live_view_base.clone(),
                    max_live_sockets: config.max_live_sockets,
                    ..CaptureConfig::default()
                }
                .with_budget(&budget),
            )
            .with_audit(audit.clone())
            .with_admission(admission.clone())
            .with_clock(Arc::clone(&clock)),
        );
        let keys = Keys::new(
            Arc::clone(&store) as Arc<dyn KeyStore>,
            Arc::clone(&clock),
            audit.clone(),
        );
        let retention = config.retention.map(|keep| {
            Retention::new(
                Arc::clone(&store) as Arc<dyn EvidenceStore>,
                Arc::clone(&store) as Arc<dyn EventLog>,
                keep,
                Arc::clone(&clock),
            )
        });
        let mut sweeps = vec![
            captures.spawn_reaper(SWEEP_EVERY),
            spawn_browse_sweep(Arc::clone(&tasks), SWEEP_EVERY),
            events.spawn_stall_watch(),
        ];
        if let Some(retention) = &retention {
            sweeps.push(
                retention
                    .clone()
                    .spawn(crate::retention::SWEEP_EVERY, self.sweep_gate.clone()),
            );
        }
        let jobs = Arc::new(JobSlots::new(
            config.max_concurrent_jobs,
            config.max_queued_jobs,
            budget.queue_wait,
        ));
        if let Some(queue) = &self.task_queue {
            sweeps.push(spawn_claims(
                Arc::clone(queue),
                Arc::clone(&jobs),
                Arc::clone(&tasks),
                self.completion.clone(),
            ));
        }
        Ok(Engine {
            artifacts,
            browsers,
            jobs,
            poster,
            posts,
            tasks,
            sessions,
            captures,
            frames,
            sites,
            profiles: self.profiles,
            keys,
            admission,
            links: ApprovalLinks::new(Arc::clone(&store) as Arc<dyn LinkStore>, Arc::clone(&clock)),
            clock,
            audit,
            completion: self.completion,
            queue: self.task_queue,
            retention,
            config,
            sweeps,
        })
    }
}

/// Runs the task `id` of `tenant` in `slot`, and tells `completion` how it ended.
async fn run_claimed<C: TaskContext>(
    tasks: &TaskRunner<C>,
    completion: Option<&Arc<dyn TaskCompletion>>,
    slot: crate::jobs::JobSlot,
    tenant: &str,
    id: &str,
) {
    match tasks.run(tenant, id).await {
        Ok(end) => {
            if let Some(sink) = completion {
                sink.completed(end);
            }
        }
        Err(e) => tracing::warn!(task_id = %id, error = %e, "a task could not run"),
    }
    drop(slot);
}

/// How often a fleet replica with a free slot looks for a task the fleet waits to run.
const CLAIM_EVERY: Duration = Duration::from_millis(250);

/// Claims the fleet's waiting tasks while this process has free slots, every
/// [`CLAIM_EVERY`], and runs each in the slot it found free.
fn spawn_claims<C: TaskContext>(
    queue: Arc<dyn TaskQueue>,
    jobs: Arc<JobSlots>,
    tasks: Arc<TaskRunner<C>>,
    completion: Option<Arc<dyn TaskCompletion>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CLAIM_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            while let Some(slot) = jobs.try_now() {
                let (tenant, id) = match queue.claim().await {
                    Ok(Some(claimed)) => claimed,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "the fleet's waiting tasks could not be claimed");
                        break;
                    }
                };
                tracing::info!(task_id = %id, "claimed a task the fleet waited to run");
                let (tasks, completion) = (Arc::clone(&tasks), completion.clone());
                tokio::spawn(async move {
                    run_claimed(&tasks, completion.as_ref(), slot, &tenant, &id).await;
                });
            }
        }
    })
}

/// How often expired captures and idle browse sessions are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Closes idle browse sessions every `every`.
fn spawn_browse_sweep<C: TaskContext>(
    tasks: Arc<TaskRunner<C>>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let closed = tasks.browse_sweep().await;
            if closed > 0 {
                tracing::info!(closed, "closed idle browse sessions");
            }
        }
    })
}

/// What an engine runs at one moment ([`Engine::load`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineLoad {
    /// Jobs holding a slot.
    pub jobs_running: usize,
    /// Jobs waiting for a slot.
    pub jobs_queued: usize,
    /// Jobs that may run at once ([`EngineConfig::max_concurrent_jobs`]).
    pub job_capacity: usize,
    /// Interactive captures open.
    pub open_captures: usize,
    /// Browse sessions open.
    pub open_browses: usize,
    /// What the jobs' provider holds open (browsers, contexts in use and warm), when it
    /// can tell ([`SessionProvider::pool`](abr_core::SessionProvider::pool)).
    pub pool: Option<abr_core::PoolStats>,
}

/// What waits for an approver ([`Engine::approval_backlog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApprovalBacklog {
    /// Tasks of every tenant pending approval, and when the oldest was created.
    pub tasks: abr_core::store::StateCount,
    /// Committing actions of this process's open browse sessions waiting for an approver,
    /// and when the first was asked.
    pub actions: abr_core::store::StateCount,
}

/// One of the machine's job slots held by the embedder ([`Engine::hold_job_slot`]); given
/// back when dropped.
#[derive(Debug)]
pub struct JobSlotHold {
    _slot: crate::jobs::JobSlot,
}

/// The application: posting, tasks, browse sessions, capture and handoffs on the configured
/// providers, every job admitted once. Generic over the browser context, so that an
/// embedder's tests (and the runner's HTTP tests) run it on the core's fakes.
pub struct Engine<C: TaskContext> {
    poster: Arc<AgentPoster<C>>,
    artifacts: crate::artifacts::Artifacts,
    posts: PostJournal<C>,
    tasks: Arc<TaskRunner<C>>,
    sessions: StoredSessions,
    captures: Arc<SessionCaptureManager<C>>,
    jobs: Arc<JobSlots>,
    /// The jobs' provider, asked what it holds open ([`Engine::load`]).
    browsers: DynSessionProvider<C>,
    frames: Arc<dyn FrameStore>,
    sites: Arc<dyn SiteStore>,
    profiles: Option<Arc<dyn ProfileStore>>,
    keys: Keys,
    /// The tenants' limits, for what holds a browser outside tasks and posts (a probe).
    admission: TenantAdmission,
    links: ApprovalLinks,
    audit: Auditor,
    completion: Option<Arc<dyn TaskCompletion>>,
    /// The fleet's queue of tasks waiting for a free slot, in a fleet.
    queue: Option<Arc<dyn TaskQueue>>,
    retention: Option<Retention>,
    config: EngineConfig,
    /// The one clock every part reads (the builder's).
    clock: Arc<dyn Clock>,
    sweeps: Vec<tokio::task::JoinHandle<()>>,
}

impl<C: TaskContext> std::fmt::Debug for Engine<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("poster", &self.poster)
            .field("captures", &self.captures)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> Drop for Engine<C> {
    fn drop(&mut self) {
        for sweep in &self.sweeps {
            sweep.abort();
        }
    }
}

impl<C: TaskContext> Engine<C> {
    /// Forgets now the evidence older than [`EngineConfig::retention`] (the background
    /// sweep does this every hour); answers what it removed, nothing when evidence is kept
    /// forever.
    ///
    /// # Errors
    /// The store's.
    pub async fn expire_evidence(&self) -> Result<Expired, EngineError> {
        match &self.retention {
            Some(retention) => retention.sweep().await,
            None => Ok(Expired::default()),
        }
    }
}

/// Refuses a request that names another tenant than the actor's (a post's `workspaceId`,
/// a task's or a browse session's `tenantId`): what it does is the actor's tenant's, and a
/// record, an audit event or a platform's label naming another would say otherwise.
fn named_tenant(actor: &Actor, named: Option<&str>) -> Result<(), EngineError> {
    match named {
        Some(named) if named != actor.tenant() => {
            Err(EngineError::from(CoreError::TenantForbidden))
        }
        _ => Ok(()),
    }
}

/// Refuses a capture of another tenant than the actor's, or an actor without `right`.
fn own_capture(actor: &Actor, workspace_id: &str, right: Right) -> Result<(), EngineError> {
    actor.require(right)?;
    if workspace_id == actor.tenant() {
        Ok(())
    } else {
        Err(EngineError::from(CoreError::TenantForbidden))
    }
}

/// What a panicking post job answers: it may have been published.
const POST_PANICKED: &str =
    "the job failed unexpectedly; it may have been published: do not retry automatically";

impl<C: TaskContext> Engine<C> {
    /// Now, by the engine's clock.
    pub(crate) fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    // ---- the parts ----------------------------------------------------------------------

    /// The API keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The registered platforms.
    pub fn platforms(&self) -> Vec<PlatformInfo> {
        self.poster.strategies().platforms()
    }

    /// Keeps a session the actor's tenant stores under an id of its own, scoped by the
    /// platform it names (a registered one) and the request's scope, sealed at rest.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may keep sessions; a bad id, no scope, an
    /// invalid scope, an unknown platform, [`EngineError::SessionBound`] for a request naming
    /// another platform than the session's, a store failure (e.g. no key to seal it with).
    pub async fn store_session(
        &self,
        actor: &Actor,
        session_id: &str,
        request: &StoreSessionRequest,
    ) -> Result<StoredSessionInfo, EngineError> {
        actor.require(Right::Sessions)?;
        self.sessions
            .put(actor.tenant(), session_id, request, &|name| {
                self.platform_policy(name)
            })
            .await
    }

    /// The policy of the platform registered under `name`.
    pub(crate) fn platform_policy(&self, name: &str) -> Option<abr_core::strategy::StrategyPolicy> {
        self.poster
            .strategies()
            .get(name)
            .ok()
            .map(|s| s.policy().clone())
    }

    // ---- posts ----------------------------------------------------------------------------

    /// Posts `request` for the actor's tenant in a job slot, recorded, at most once per
    /// idempotency key: a repeated key answers the original post (or its record while it
    /// runs), a key reused with another body is refused.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may post (an agent or an operator, not
    /// read-only); [`CoreError::TenantForbidden`] for a `workspaceId` other than the actor's
    /// tenant; not admitted, [`EngineError::IdempotencyKeyReused`], content or a request
    /// out of bounds, an unknown platform or one that forbids unattended runs, an unknown
    /// `sessionId`, a per-tenant limit, a store failure, or a panic
    /// ([`EngineError::JobPanicked`]: it may have been published).
    pub async fn post(
        &self,
        actor: &Actor,
        idempotency_key: Option<&str>,
        request: PostRequest,
    ) -> Result<Posted, EngineError> {
        actor.require(Right::Post)?;
        named_tenant(actor, request.workspace_id.as_deref())?;
        let posts = self.posts.clone();
        let (tenant, key) = (
            actor.tenant().to_owned(),
            idempotency_key.map(str::to_owned),
        );
        self.jobs
            .run(POST_PANICKED, async move {
                posts.post(&tenant, key.as_deref(), request).await
            })
            .await
    }

    /// Re-checks an uncertain post in a job slot: a read-only look at the platform that
    /// settles the record when it finds the post.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may re-check; not admitted, an unknown post,
    /// [`EngineError::NotUncertain`], a store failure.
    pub async fn recheck_post(
        &self,
        actor: &Actor,
        post_id: &str,
    ) -> Result<RecheckResult, EngineError> {
        actor.require(Right::Recheck)?;
        let posts = self.posts.clone();
        let (tenant, id) = (actor.tenant().to_owned(), post_id.to_owned());
        self.jobs
            .run("the re-check failed unexpectedly", async move {
                posts.recheck(&tenant, &id).await
            })
            .await
    }

    /// Whether the platform's browser is signed in, in a job slot, for the actor's tenant
    /// (the request's `workspaceId`, filled in when it names none), holding one of the
    /// tenant's concurrent sessions while it runs.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may use sessions;
    /// [`CoreError::TenantForbidden`] for another tenant's workspace;
    /// [`EngineError::TenantLimit`] when the tenant holds its sessions; not admitted, the
    /// poster's refusals.
    pub async fn probe(
        &self,
        actor: &Actor,
        request: ProbeRequest,
    ) -> Result<ProbeResponse, EngineError> {
        actor.require(Right::Sessions)?;
        named_tenant(actor, request.workspace_id.as_deref())?;
        let mut request = request;
        request
            .workspace_id
            .get_or_insert_with(|| actor.tenant().to_owned());
        // A probe holds a browser: it counts as one of the tenant's concurrent sessions
        // while it runs (given back however it ends, a panic included).
        let tenant = actor.tenant().to_owned();
        self.admission.take_session(&tenant).await?;
        let poster = Arc::clone(&self.poster);
        let probed = self
            .jobs
            .run("the probe failed unexpectedly", async move {
                poster.probe(request).await
            })
            .await;
        self.admission.release_session(&tenant).await;
        probed
    }

    // ---- tasks ----------------------------------------------------------------------------

    /// Creates a task proposed by the actor (`pending_approval`, or `queued` when the
    /// approval rule lets it through) and, when it is let through, runs it: in a job slot of
    /// its own, its end told to the [`TaskCompletion`] sink.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may propose (an agent or an operator, not
    /// read-only); [`CoreError::TenantForbidden`] for a `tenantId` other than the actor's
    /// tenant; an invalid plan ([`CoreError::InvalidPlan`], naming the step), bad ids, a
    /// session without a scope, an unknown platform or one that forbids unattended
    /// execution, an unknown `sessionId`, a per-tenant limit (for a task the rule lets
    /// through at once), a reused key, a store failure. Nothing is stored on an error.
    pub async fn create_task(
        &self,
        actor: &Actor,
        request: TaskRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Created, EngineError> {
        named_tenant(actor, request.tenant_id.as_deref())?;
        let caller = Caller::checked(actor, Right::Propose)?;
        let created = self.tasks.create(&caller, request, idempotency_key).await?;
        if created.should_run() {
            self.spawn_run(actor.tenant(), &created.record.task_id);
        }
        Ok(created)
    }

    /// Approves a pending task, as an approver other than its proposer, for the plan hash
    /// it was shown, and runs it.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] for an actor that may not approve,
    /// [`EngineError::SelfApproval`] for the proposer's own key, an over-long `approvedBy`, an
    /// unknown task, [`EngineError::PlanHashMismatch`], [`EngineError::TaskNotPending`]
    /// (approved, rejected, or approved concurrently), a per-tenant limit (the task stays
    /// pending: approve again later), a store failure.
    pub async fn approve_task(
        &self,
        actor: &Actor,
        task_id: &str,
        request: &ApproveRequest,
    ) -> Result<TaskRecord, EngineError> {
        let caller = Caller::checked(actor, Right::Approve)?;
        let record = self.tasks.approve(&caller, task_id, request).await?;
        self.spawn_run(actor.tenant(), task_id);
        Ok(record)
    }

    /// A new attempt of a task that failed with nothing done (a task of its own, linked to
    /// the first), run when the approval rule lets it through.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may post; an unknown task,
    /// [`EngineError::TaskNotRetryable`], the tenant's retry limit (or, for a retry the rule
    /// lets through at once, its session and daily limits), a plan invalid under the
    /// current limits, a store failure.
    pub async fn retry_task(&self, actor: &Actor, task_id: &str) -> Result<Created, EngineError> {
        let caller = Caller::checked(actor, Right::Post)?;
        let created = self.tasks.retry(&caller, task_id).await?;
        if created.should_run() {
            self.spawn_run(actor.tenant(), &created.record.task_id);
        }
        Ok(created)
    }

    /// Re-checks an uncertain task in a job slot: its verification run again, read-only,
    /// settling the record when it answers.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may re-check; not admitted, an unknown
    /// task, [`EngineError::NotUncertain`], the tenant's concurrency limit, a store failure.
    pub async fn recheck_task(
        &self,
        actor: &Actor,
        task_id: &str,
    ) -> Result<RecheckResult, EngineError> {
        actor.require(Right::Recheck)?;
        let tasks = Arc::clone(&self.tasks);
        let (tenant, id) = (actor.tenant().to_owned(), task_id.to_owned());
        self.jobs
            .run("the re-check failed unexpectedly", async move {
                tasks.recheck(&tenant, &id).await
            })
            .await
    }

    /// Runs a queued task in the background, holding a job slot (waiting for one as long as
    /// it takes: the tenants' limits already bound how many wait); its end goes to the
    /// completion sink. The record tells how it went.
    fn spawn_run(&self, tenant: &str, task_id: &str) {
        let (tasks, jobs) = (Arc::clone(&self.tasks), Arc::clone(&self.jobs));
        let completion = self.completion.clone();
        let queue = self.queue.clone();
        let (tenant, id) = (tenant.to_owned(), task_id.to_owned());
        tokio::spawn(async move {
            // In a fleet, a task that finds every slot busy is given to the fleet: the first
            // replica with a free slot (this one included) claims it.
            if let Some(queue) = &queue {
                match jobs.try_now() {
                    Some(slot) => {
                        return run_claimed(&tasks, completion.as_ref(), slot, &tenant, &id).await;
                    }
                    None => match queue.release(&tenant, &id).await {
                        Ok(true) => return,
                        Ok(false) => {}
                        Err(e) => {
                            tracing::warn!(task_id = %id, error = %e, "a queued task could not be given to the fleet; it waits here")
                        }
                    },
                }
            }
            let Ok(slot) = jobs.wait().await else {
                // Shutting down: in a fleet the task is handed over (it never started);
                // alone, it stays queued and the next start ends it honestly.
                if let Some(queue) = &queue
                    && let Err(e) = queue.release(&tenant, &id).await
                {
                    tracing::warn!(task_id = %id, error = %e, "a queued task could not be handed over");
                }
                return;
            };
            run_claimed(&tasks, completion.as_ref(), slot, &tenant, &id).await;
        }
        // The run is a child of the call that released it (its create or its approval).
        .in_current_span());
    }

    // ---- browse sessions ------------------------------------------------------------------

    /// Opens a browse session in a job slot: a guarded browser on the session, held between
    /// calls, driven one action at a time by a brain outside ABR.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse;
    /// [`CoreError::TenantForbidden`] for a `tenantId` other than the actor's tenant; not
    /// admitted; bad input (the
    /// URL, ids, `idleSeconds`, a session without a scope), an unknown platform or one that
    /// forbids unattended execution, an unknown `sessionId`, the tenant's concurrent
    /// sessions or daily executions, the runner's open sessions ([`EngineError::TenantLimit`]
    /// or a busy provider), the browser not starting, a store failure. A first page that
    /// does not load is not an error: the session is open and its answer says what
    /// happened.
    pub async fn browse_open(
        &self,
        actor: &Actor,
        request: BrowseRequest,
    ) -> Result<BrowseOpened, EngineError> {
        let caller = Caller::checked(actor, Right::Browse)?;
        named_tenant(actor, request.tenant_id.as_deref())?;
        let tasks = Arc::clone(&self.tasks);
        self.jobs
            .run(
                "opening the browse session failed unexpectedly",
                async move { tasks.browse_open(&caller, request).await },
            )
            .await
    }

    /// The page of a browse session now, in a job slot.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse; not admitted,
    /// [`CoreError::InvalidInput`] for a query out of its bounds,
    /// [`EngineError::BrowseNotFound`] (closed, idle too long, or another tenant's).
    pub async fn browse_snapshot(
        &self,
        actor: &Actor,
        id: &str,
        query: abr_protocol::SnapshotQuery,
    ) -> Result<Snapshot, EngineError> {
        actor.require(Right::Browse)?;
        let tasks = Arc::clone(&self.tasks);
        let (tenant, id) = (actor.tenant().to_owned(), id.to_owned());
        self.jobs
            .run("reading the page failed unexpectedly", async move {
                tasks.browse_snapshot(&tenant, &id, query).await
            })
            .await
    }

    /// One action of a browse session, through the guard, in a job slot.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse; not admitted,
    /// [`EngineError::BrowseNotFound`]; bad input (a reference that is not one, a URL that is
    /// not http(s), a key name too long); [`EngineError::RefNotFound`] for a reference no
    /// snapshot of this session gave. What happens on the page is not an error: a refusal,
    /// a pause or a failure is the answer's `outcome`.
    pub async fn browse_act(
        &self,
        actor: &Actor,
        id: &str,
        action: BrowseAction,
    ) -> Result<ActResponse, EngineError> {
        actor.require(Right::Browse)?;
        let tasks = Arc::clone(&self.tasks);
        let (tenant, id) = (actor.tenant().to_owned(), id.to_owned());
        self.jobs
            .run("the action failed unexpectedly", async move {
                tasks.browse_act(&tenant, &id, action).await
            })
            .await
    }

    /// The brain asks a person for a value it must not invent, for a field of an open
    /// session: the session waits, paused
    /// `needs_input`, until a person supplies it ([`Self::supply_input`]) or resumes.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse; [`EngineError::BrowseNotFound`];
    /// [`EngineError::RefNotFound`] for a reference no snapshot gave;
    /// [`CoreError::InvalidInput`] for an empty or over-long prompt or a wait out of bounds;
    /// [`EngineError::TakeoverState`] when a person is already asked for.
    pub async fn browse_request_input(
        &self,
        actor: &Actor,
        id: &str,
        request: &abr_protocol::InputRequest,
    ) -> Result<abr_protocol::BrowsePause, EngineError> {
        actor.require(Right::Browse)?;
        self.tasks
            .browse_request_input(actor.tenant(), id, request)
            .await
    }

    /// A person hands over the value a paused browse session asks for: typed into its field, never logged, recorded or
    /// echoed; the takeover then resumes. Answers the takeover id.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may resolve a person's pause (an approver or
    /// an operator: never the brain's agent key); [`CoreError::TaskNotFound`] (no such open
    /// session of the tenant); [`EngineError::NoTakeover`] when the session does not wait for
    /// a value; [`EngineError::InputNotAccepted`] when the field refused it (the takeover still
    /// waits).
    pub async fn supply_input(
        &self,
        actor: &Actor,
        id: &str,
        input: abr_protocol::SuppliedInput,
    ) -> Result<String, EngineError> {
        actor.require(Right::ResolvePause)?;
        self.tasks
            .supply_input(actor.tenant(), id, input, actor.principal().name())
            .await
    }

    /// Closes a browse session: not in a job slot (closing frees resources and must not wait
    /// behind the queue), but in a task of its own, so that a caller who goes away does not
    /// cut it in half and a panic stays there.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse; [`EngineError::BrowseNotFound`],
    /// or [`EngineError::JobPanicked`].
    pub async fn browse_close(&self, actor: &Actor, id: &str) -> Result<BrowseClosed, EngineError> {
        actor.require(Right::Browse)?;
        let tasks = Arc::clone(&self.tasks);
        let (tenant, id) = (actor.tenant().to_owned(), id.to_owned());
        tokio::spawn(async move { tasks.browse_close(&tenant, &id).await })
            .await
            .map_err(|_| {
                EngineError::JobPanicked("closing the browse session failed unexpectedly")
            })?
    }

    /// The committing action a browse session waits on a person's approval for.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`EngineError::BrowseNotFound`];
    /// [`EngineError::ActionNotPending`] when none waits.
    pub async fn browse_approval(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<ActionApproval, EngineError> {
        actor.require(Right::Read)?;
        self.tasks.browse_approval(actor.tenant(), id).await
    }

    /// The preview's JPEG of the committing action a browse session waits on: a redacted
    /// frame of the page when it was asked for.
    ///
    /// # Errors
    /// As [`Self::browse_approval`]; [`EngineError::PreviewNotFound`] when none was kept.
    pub async fn browse_approval_preview(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<Vec<u8>, EngineError> {
        actor.require(Right::Read)?;
        let (_, image) = self.tasks.browse_approval_shown(actor.tenant(), id).await?;
        image.ok_or(EngineError::PreviewNotFound)
    }

    /// Approves or rejects the committing action a browse session waits on: an approver of
    /// the session's tenant, never the key that opened it.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may approve; [`EngineError::SelfApproval`]
    /// for the key that opened the session; an over-long `statedBy`;
    /// [`EngineError::BrowseNotFound`]; [`EngineError::ActionNotPending`] for an id that is not
    /// the pending approval's; or [`EngineError::JobPanicked`]. It runs in a task of its own (a rejection
    /// closes the session), so that a caller who goes away does not cut it in half.
    pub async fn browse_decide(
        &self,
        actor: &Actor,
        id: &str,
        decision: &ActionDecision,
        approve: bool,
    ) -> Result<ActionApproval, EngineError> {
        let caller = Caller::checked(actor, Right::Approve)?;
        let tasks = Arc::clone(&self.tasks);
        let (id, decision) = (id.to_owned(), decision.clone());
        tokio::spawn(async move { tasks.browse_decide(&caller, &id, &decision, approve).await })
            .await
            .map_err(|_| EngineError::JobPanicked("deciding the approval failed unexpectedly"))?
    }

    // ---- capture and the live view --------------------------------------------------------

    /// Starts a capture for the actor's tenant (the request's `workspaceId`), holding a
    /// job slot while its browser starts.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may keep sessions,
    /// [`CoreError::TenantForbidden`] for another tenant's workspace; not admitted; invalid
    /// ids, an unknown platform, a policy without interactive capture, a provider that
    /// cannot be interactive, too many open captures, or a provider failure.
    pub async fn capture_start(
        &self,
        actor: &Actor,
        request: CaptureStartRequest,
    ) -> Result<CaptureStartResponse, EngineError> {
        own_capture(actor, &request.workspace_id, Right::Sessions)?;
        self.captures.refused_before_start(&request).await?;
        let _slot = self.jobs.enter().await?;
        self.captures.start(request).await
    }

    /// Finishes a capture; with `store_as`, also keeps the session for the capture's tenant
    /// (its `workspaceId`). A capture that finished but could not be stored still answers
    /// its session (the browser is gone: the session would be lost otherwise), with
    /// `storedAs` absent; the failure is logged.
    ///
    /// # Errors
    /// The actor's rights, as for [`Self::capture_start`]; a bad `store_as` (checked before
    /// the capture ends: a bad id must not cost the user
    /// the session); [`EngineError::CaptureNotFound`], [`EngineError::BindingMismatch`] (the
    /// capture stays open), [`EngineError::NotAuthenticated`] (the capture stays open: the
    /// user may still be signing in), or a strategy or provider failure (the capture stays
    /// open).
    pub async fn capture_finish(
        &self,
        actor: &Actor,
        capture: &CaptureRef,
        store_as: Option<String>,
    ) -> Result<CaptureFinishResponse, EngineError> {
        own_capture(actor, &capture.workspace_id, Right::Sessions)?;
        abr_core::tenant::check("storeAs", store_as.as_deref())?;
        let mut response = self.captures.finish(capture).await?;
        if let Some(id) = store_as {
            match self
                .sessions
                .put_scoped(
                    &capture.workspace_id,
                    &id,
                    response.session.clone(),
                    &|name| self.platform_policy(name),
                )
                .await
            {
                Ok(()) => response.stored_as = Some(id),
                Err(e) => tracing::warn!(error = %e, "the captured session could not be stored"),
            }
        }
        Ok(response)
    }

    /// Cancels a capture.
    ///
    /// # Errors
    /// The actor's rights, as for [`Self::capture_start`]; [`EngineError::CaptureNotFound`] or
    /// [`EngineError::BindingMismatch`].
    pub async fn capture_cancel(
        &self,
        actor: &Actor,
        capture: &CaptureRef,
    ) -> Result<CaptureCancelResponse, EngineError> {
        own_capture(actor, &capture.workspace_id, Right::Sessions)?;
        self.captures.cancel(capture).await
    }

    /// A capture's status.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read its tenant's records,
    /// [`CoreError::TenantForbidden`] for another tenant's capture;
    /// [`EngineError::CaptureNotFound`] or [`EngineError::BindingMismatch`].
    pub async fn capture_status(
        &self,
        actor: &Actor,
        capture: &CaptureRef,
    ) -> Result<CaptureStatus, EngineError> {
        own_capture(actor, &capture.workspace_id, Right::Read)?;
        self.captures.status(capture).await
    }

    /// What a live token shows: an open capture's browser, or a paused task's while its
    /// takeover is active (`None` otherwise: the live view is refused).
    pub fn live_target(&self, token: &str) -> Option<LiveTarget> {
        self.captures
            .live_target(token)
            .or_else(|| self.tasks.handoffs().live_target(token))
    }

    /// Attaches a viewer socket to the browser a live token resolves to (see
    /// [`Self::live_target`]).
    ///
    /// # Errors
    /// [`EngineError::LiveViewNotFound`] or [`EngineError::LiveViewLimit`].
    pub fn attach_live(&self, token: &str) -> Result<LiveAttachment<C>, EngineError> {
        match self.captures.attach_live(token) {
            Err(EngineError::LiveViewNotFound) => self.tasks.handoffs().attach_live(token),
            attached => attached,
        }
    }

    // ---- load ------------------------------------------------------------------------------

    /// What runs now: jobs in their slots and waiting for one, open captures and browse
    /// sessions (for a health document or a balancer's pressure reading).
    pub fn load(&self) -> EngineLoad {
        EngineLoad {
            jobs_running: self.jobs.running(),
            jobs_queued: self.jobs.queued(),
            job_capacity: self.jobs.capacity(),
            open_captures: self.captures.open_count(),
            open_browses: self.tasks.browses_open(),
            pool: self.browsers.pool(),
        }
    }

    /// What waits for an approver, for an operator's gauge: the tasks of every tenant
    /// pending approval in the store (every replica's), and the committing actions the
    /// browse sessions open on this process wait on.
    ///
    /// # Errors
    /// The store's, when it cannot be read.
    pub async fn approval_backlog(&self) -> Result<ApprovalBacklog, EngineError> {
        let pending = abr_core::store::wire_name(&abr_protocol::TaskState::PendingApproval);
        Ok(ApprovalBacklog {
            tasks: RecordStore::count_in_state(&**self.tasks.store(), &pending).await?,
            actions: self.tasks.browse_approvals_waiting(),
        })
    }

    /// Holds one of the machine's job slots for work the embedder runs outside the engine
    /// (its own browser work), admitted and counted with the engine's jobs; the slot is
    /// given back when the hold is dropped.
    ///
    /// # Errors
    /// [`EngineError::Overloaded`] or [`EngineError::QueueTimeout`], as for any job.
    pub async fn hold_job_slot(&self) -> Result<JobSlotHold, EngineError> {
        Ok(JobSlotHold {
            _slot: self.jobs.enter().await?,
        })
    }

    // ---- start and stop -------------------------------------------------------------------

    /// Ends, honestly, the posts and tasks a previous process left unfinished (call once at
    /// start, before serving): `uncertain` if a submit or committing step had started, else
    /// `failed` and safe to retry; every ended task goes to the completion sink. Answers how
    /// many were ended.
    ///
    /// # Errors
    /// The store could not be read or written.
    pub async fn recover(&self) -> Result<usize, EngineError> {
        let posts = self.posts.recover_unfinished().await?;
        for record in &posts {
            tracing::warn!(
                post_id = %record.post_id,
                state = ?record.state,
                "a post was unfinished when the runner stopped"
            );
        }
        let ended = self.tasks.recover_unfinished().await?;
        let count = ended.len() + posts.len();
        for end in ended {
            tracing::warn!(
                task_id = %end.record.task_id,
                state = ?end.record.state,
                "a task was unfinished when the runner stopped"
            );
            if let Some(sink) = &self.completion {
                sink.completed(end);
            }
        }
        Ok(count)
    }

    /// Waits until every job admitted so far ended (background tasks already admitted run to
    /// their end; a task still waiting for a slot stays queued and is ended honestly at the
    /// next start), then shuts down as [`Self::shutdown`] does.
    pub async fn drain(&self) {
        let held = self.jobs.drain().await;
        self.shutdown().await;
        drop(held);
    }

    /// Graceful shutdown: refuses new jobs, stops the sweeps, closes every browse session and
    /// releases every open capture.
    pub async fn shutdown(&self) {
        self.jobs.close();
        for sweep in &self.sweeps {
            sweep.abort();
        }
        self.tasks.browse_close_all().await;
        let released = self.captures.close_all().await;
        if released > 0 {
            tracing::info!(released, "released open captures at shutdown");
        }
        // The runs' last events (the ends just written) into the log before the exit.
        self.tasks.events().flush(Duration::from_secs(5)).await;
    }
}
