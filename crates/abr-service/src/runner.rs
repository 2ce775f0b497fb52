//! [`Runner`]: the core's poster and capture manager on the configured providers, with the
//! registered strategies and a bounded job queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use abr_core::guard::{FrameSource, FrameStore, SiteStore};
use abr_core::task::{
    BrowseConfig, TaskConfig, TaskContext, TaskRunner, TaskSessions, TaskStore, TenantAdmission,
};
use abr_core::{
    AgentPoster, AuditError, AuditEvent, AuditSink, Auditor, CaptureConfig, CoreError,
    DeadlineBudget, DynSessionProvider, LiveAttachment, LiveTarget, PostJournal, PostStore,
    PosterConfig, SessionCaptureManager, SessionStore, StoredSessions, StrategyRegistry,
    SystemClock, WebPostStrategy, new_token,
};
use abr_protocol::SecretValue;
use abr_providers::{
    BrowserSession, CdpProviderConfig, CdpSessionProvider, ChromiumBinary, Isolation,
    LocalBrowserSessionProvider, LocalProviderConfig,
};
use abr_store::{SessionKey, SqliteStore};
use async_trait::async_trait;
use secrecy::ExposeSecret;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{ProviderChoice, RunnerConfig};

/// What the runner drives: a browser context that posts, captures
/// ([`SessionContext`](abr_core::SessionContext)), runs task steps
/// ([`StepRunner`](abr_core::task::StepRunner)) through the guard rails
/// ([`PageProbe`](abr_core::guard::PageProbe)) and can be handed to a person
/// ([`LiveSurface`](abr_core::LiveSurface)): a [`TaskContext`]. [`BrowserSession`] in
/// production, the core's fakes in tests.
pub trait RunnerContext: TaskContext {}

impl<C: TaskContext> RunnerContext for C {}

/// Where the runner keeps durable records: tasks, idempotency keys, per-tenant counters,
/// sessions stored by id, replay frames and the screenshots switch, site decisions.
/// [`SqliteStore`] by default.
pub trait RunnerStore:
    TaskStore + TaskSessions + SessionStore + PostStore + FrameStore + SiteStore
{
}

impl<S: TaskStore + TaskSessions + SessionStore + PostStore + FrameStore + SiteStore> RunnerStore
    for S
{
}

/// A strategy runnable by the runner's providers.
pub type DynStrategy = Arc<dyn WebPostStrategy<BrowserSession>>;

/// Why a job was not admitted. Either way nothing ran: retrying is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAdmitted {
    /// Every slot is busy and the queue is full (or the runner is shutting down).
    Overloaded {
        /// Suggested wait.
        retry_after: Duration,
    },
    /// The job waited in the queue for its whole queue deadline.
    QueueTimeout {
        /// Suggested wait.
        retry_after: Duration,
    },
}

/// Bounded job concurrency with a bounded queue and a bounded wait in it: beyond them,
/// callers are refused instead of piling up in memory or spending their request deadline
/// waiting.
#[derive(Debug)]
pub struct JobGate {
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
    max_wait: Duration,
}

struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl JobGate {
    /// `max_concurrent` jobs at once, `max_queued` more waiting, each at most `max_wait`.
    pub fn new(max_concurrent: usize, max_queued: usize, max_wait: Duration) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent)),
            queued: AtomicUsize::new(0),
            max_queued,
            max_wait,
        }
    }

    /// A slot to run one job, waiting in the queue if needed.
    ///
    /// # Errors
    /// [`NotAdmitted::Overloaded`] when all slots are busy and the queue is full,
    /// [`NotAdmitted::QueueTimeout`] when no slot came free within the queue deadline.
    pub async fn enter(&self) -> Result<OwnedSemaphorePermit, NotAdmitted> {
        if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
            return Ok(permit);
        }
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(NotAdmitted::Overloaded {
                retry_after: Duration::from_secs(2),
            });
        }
        // Leaves the queue also when the waiting request is cancelled.
        let _slot = QueueSlot(&self.queued);
        let wait = Arc::clone(&self.permits).acquire_owned();
        match tokio::time::timeout(self.max_wait, wait).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(NotAdmitted::Overloaded {
                retry_after: Duration::from_secs(5),
            }),
            Err(_) => Err(NotAdmitted::QueueTimeout {
                retry_after: Duration::from_secs(5),
            }),
        }
    }

    /// A slot for a job that must run eventually (an approved task): waits as long as it
    /// takes, outside the bounded queue (the tenants' limits bound how many wait).
    ///
    /// # Errors
    /// [`NotAdmitted::Overloaded`] once the gate is closed (shutdown).
    pub async fn wait(&self) -> Result<OwnedSemaphorePermit, NotAdmitted> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_closed| NotAdmitted::Overloaded {
                retry_after: Duration::from_secs(5),
            })
    }

    /// Jobs waiting now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Stops admitting jobs (graceful shutdown): waiting and new callers are refused.
    pub fn close(&self) {
        self.permits.close();
    }
}

/// Writes audit events as structured log lines (target `abr::audit`). Events carry ids,
/// outcomes and counts only.
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

/// Something to do at shutdown (close warm browsers, disconnect).
type ShutdownHook = Box<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The runner: posting, probing and capture on the configured providers. Generic over the
/// browser context so that the HTTP layer can be tested on the core's fakes; in production
/// it is [`BrowserSession`].
pub struct Runner<C: RunnerContext = BrowserSession> {
    /// Posting and probing.
    pub poster: Arc<AgentPoster<C>>,
    /// Posts with durable records and idempotency keys (`POST /v1/post`, `/v1/posts/{id}`).
    pub posts: PostJournal<C>,
    /// Browser tasks: approved step plans.
    pub tasks: Arc<TaskRunner<C>>,
    /// Sessions tenants stored by id (`/v1/sessions/{id}`, `sessionId`).
    pub sessions: StoredSessions<C>,
    /// Interactive capture.
    pub captures: Arc<SessionCaptureManager<C>>,
    /// Admission control for jobs.
    pub jobs: JobGate,
    /// Replay frames and the tenants' screenshots switch.
    pub frames: Arc<dyn FrameStore>,
    /// The tenants' site decisions.
    pub sites: Arc<dyn SiteStore>,
    /// Where audit events go (the switch and site decisions are audited here).
    pub audit: Auditor,
    /// The configuration it was built from.
    pub config: RunnerConfig,
    /// Every deadline of a request, derived from the request timeout.
    pub budget: DeadlineBudget,
    shutdown_hooks: Vec<ShutdownHook>,
    reaper: tokio::task::JoinHandle<()>,
    browse_reaper: tokio::task::JoinHandle<()>,
    /// Held while the runner lives: one runner process per data directory.
    _data_lock: Option<std::fs::File>,
}

impl<C: RunnerContext> Runner<C> {
    /// What a live token shows: an open capture's browser, or a paused task's while its
    /// takeover is active (`None` otherwise: the live view is refused).
    pub fn live_target(&self, token: &str) -> Option<LiveTarget> {
        self.captures
            .live_target(token)
            .or_else(|| self.tasks.handoffs().live_target(token))
    }

    /// Attaches a viewer socket to the browser a live token resolves to (see
    /// [`Runner::live_target`]).
    ///
    /// # Errors
    /// [`CoreError::LiveViewNotFound`] or [`CoreError::LiveViewLimit`].
    pub fn attach_live(&self, token: &str) -> Result<LiveAttachment<C>, CoreError> {
        match self.captures.attach_live(token) {
            Err(CoreError::LiveViewNotFound) => self.tasks.handoffs().attach_live(token),
            attached => attached,
        }
    }
}

impl<C: RunnerContext> std::fmt::Debug for Runner<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("poster", &self.poster)
            .field("captures", &self.captures)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Makes the provider for a [`ProviderChoice`] within the request's deadline budget,
/// registering what it must do at shutdown.
type ProviderFactory<C> = Box<
    dyn FnMut(ProviderChoice, &DeadlineBudget, &mut Vec<ShutdownHook>) -> DynSessionProvider<C>
        + Send,
>;

/// Builds a [`Runner`]: register the caller's strategies, optionally override providers.
pub struct RunnerBuilder<C: RunnerContext = BrowserSession> {
    config: RunnerConfig,
    store: Option<Arc<dyn RunnerStore>>,
    strategies: StrategyRegistry<C>,
    job_provider: Option<DynSessionProvider<C>>,
    capture_provider: Option<DynSessionProvider<C>>,
    factory: Option<ProviderFactory<C>>,
    audit: Option<Arc<dyn AuditSink>>,
    poster_config: Option<PosterConfig>,
}

impl<C: RunnerContext> std::fmt::Debug for RunnerBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerBuilder")
            .field("strategies", &self.strategies)
            .finish_non_exhaustive()
    }
}

impl RunnerBuilder<BrowserSession> {
    /// A builder for `config`, with the providers it names (local Chromium, CDP, Steel,
    /// Kernel) unless overridden.
    pub fn new(config: RunnerConfig) -> Self {
        let factory = configured_providers(config.clone());
        let mut builder = Self::bare(config);
        builder.factory = Some(factory);
        builder
    }
}

impl<C: RunnerContext> RunnerBuilder<C> {
    /// A builder for `config` running jobs on `jobs` and captures on `captures` (the same
    /// provider may serve both), whatever `config` names: for embedders with their own
    /// providers, and for tests on the core's fakes.
    pub fn with_providers(
        config: RunnerConfig,
        jobs: DynSessionProvider<C>,
        captures: DynSessionProvider<C>,
    ) -> Self {
        let mut builder = Self::bare(config);
        builder.job_provider = Some(jobs);
        builder.capture_provider = Some(captures);
        builder
    }

    fn bare(config: RunnerConfig) -> Self {
        Self {
            config,
            store: None,
            strategies: StrategyRegistry::new(),
            job_provider: None,
            capture_provider: None,
            factory: None,
            audit: None,
            poster_config: None,
        }
    }

    /// Registers a platform strategy.
    ///
    /// # Errors
    /// A duplicate or empty platform id.
    pub fn strategy(mut self, strategy: Arc<dyn WebPostStrategy<C>>) -> Result<Self, CoreError> {
        self.strategies.register(strategy)?;
        Ok(self)
    }

    /// Runs jobs on `provider` instead of the configured one.
    #[must_use]
    pub fn job_provider(mut self, provider: DynSessionProvider<C>) -> Self {
        self.job_provider = Some(provider);
        self
    }

    /// Runs captures on `provider` instead of the configured one.
    #[must_use]
    pub fn capture_provider(mut self, provider: DynSessionProvider<C>) -> Self {
        self.capture_provider = Some(provider);
        self
    }

    /// Keeps durable records in `store` instead of the configured SQLite file (or, for a
    /// configuration without a data directory, an in-memory database).
    #[must_use]
    pub fn store(mut self, store: Arc<dyn RunnerStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sends audit events to `sink` (default: structured log lines).
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

    /// Builds the runner (providers start their browsers lazily, on first use). Must be
    /// called inside a tokio runtime.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] when a role has no provider (a builder from
    /// [`RunnerBuilder::with_providers`] always has both), or when the deadlines do not fit
    /// in the request timeout (a platform's pacing, or step deadlines set with
    /// [`poster_config`](Self::poster_config)).
    pub fn build(self) -> Result<Runner<C>, CoreError> {
        let config = self.config;
        let invalid = |e: String| CoreError::InvalidInput(e);
        let mut budget = config
            .budget(self.strategies.longest_pacing())
            .map_err(|e| invalid(e.to_string()))?;
        let poster_config = match self.poster_config {
            Some(given) => {
                budget.steps = given.timeouts;
                budget.pacing_max = budget
                    .pacing_max
                    .max(given.pacing.map_or(Duration::ZERO, |p| p.max));
                budget.check().map_err(|e| invalid(e.to_string()))?;
                given
            }
            None => PosterConfig::from_budget(&budget, config.pacing),
        };
        let mut hooks: Vec<ShutdownHook> = Vec::new();
        let mut factory = self.factory;
        let mut provider = |given: Option<DynSessionProvider<C>>,
                            choice: ProviderChoice,
                            hooks: &mut Vec<ShutdownHook>| {
            given
                .or_else(|| factory.as_mut().map(|make| make(choice, &budget, hooks)))
                .ok_or_else(|| CoreError::InvalidInput("the runner has no provider".into()))
        };
        let jobs_provider = provider(self.job_provider, config.job_provider, &mut hooks)?;
        let capture_provider =
            provider(self.capture_provider, config.capture_provider, &mut hooks)?;
        let data_lock = match (&self.store, &config.store.data_dir) {
            (None, Some(dir)) => Some(lock_data_dir(dir)?),
            _ => None,
        };
        let store = match self.store {
            Some(store) => store,
            None => open_store(&config)?,
        };
        let strategies = Arc::new(self.strategies);
        let sink = self.audit.unwrap_or_else(|| Arc::new(TracingAuditSink));
        let auditor = Auditor::new(sink, Duration::from_secs(5));
        let poster = Arc::new(
            AgentPoster::new(Arc::clone(&jobs_provider), Arc::clone(&strategies))
                .with_audit(auditor.clone())
                .with_frames(Arc::new(FrameSource::new(
                    Arc::clone(&store) as Arc<dyn FrameStore>,
                    Arc::new(SystemClock),
                )))
                .with_config(poster_config),
        );
        let body_key = body_hash_key(&config)?;
        let posts = PostJournal::new(
            Arc::clone(&poster),
            Arc::clone(&store) as Arc<dyn PostStore>,
            body_key.clone(),
        )
        .with_sessions(Arc::clone(&store) as Arc<dyn SessionStore>)
        .with_admission(TenantAdmission::new(
            Arc::clone(&store) as Arc<dyn TaskStore>,
            config.tasks.limits,
            Arc::new(SystemClock),
        ))
        .with_audit(auditor.clone());
        let task_store: Arc<dyn TaskStore> = Arc::clone(&store) as Arc<dyn TaskStore>;
        let task_sessions: Arc<dyn TaskSessions> = Arc::clone(&store) as Arc<dyn TaskSessions>;
        let sessions = StoredSessions::new(
            Arc::clone(&store) as Arc<dyn SessionStore>,
            Arc::clone(&strategies),
            Arc::new(SystemClock),
        );
        let mut tasks = TaskRunner::new(jobs_provider, task_store)
            .with_config(TaskConfig {
                approval: config.tasks.approval,
                limits: config.tasks.limits,
                ..TaskConfig::default().with_budget(&budget)
            })
            .with_browse_config(BrowseConfig {
                max_open: config.limits.max_open_browses,
                ..BrowseConfig::default()
            })
            .with_platforms(Arc::clone(&strategies))
            .with_sessions(task_sessions)
            .with_body_hash_key(body_key)
            .with_frames(Arc::clone(&store) as Arc<dyn FrameStore>)
            .with_sites(Arc::clone(&store) as Arc<dyn SiteStore>)
            .with_audit(auditor.clone());
        if let Some(sink) = crate::callback::takeover_sink(&config) {
            tasks = tasks.with_takeover_sink(sink);
        }
        let tasks = Arc::new(tasks);
        let captures = Arc::new(
            SessionCaptureManager::new(
                capture_provider,
                strategies,
                CaptureConfig {
                    ttl: config.limits.capture_ttl,
                    max_open: config.limits.max_open_captures,
                    live_view_base: format!("{}/live/", config.public_base()),
                    max_live_sockets: config.live.max_sockets_per_token,
                    ..CaptureConfig::default()
                }
                .with_budget(&budget),
            )
            .with_audit(auditor.clone()),
        );
        let reaper = captures.spawn_reaper(Duration::from_secs(5));
        let browse_reaper = spawn_browse_reaper(Arc::clone(&tasks), Duration::from_secs(5));
        Ok(Runner {
            poster,
            posts,
            tasks,
            sessions,
            captures,
            jobs: JobGate::new(
                config.limits.max_concurrent_jobs,
                config.limits.max_queued_jobs,
                budget.queue_wait,
            ),
            frames: Arc::clone(&store) as Arc<dyn FrameStore>,
            sites: Arc::clone(&store) as Arc<dyn SiteStore>,
            audit: auditor,
            config,
            budget,
            shutdown_hooks: hooks,
            reaper,
            browse_reaper,
            _data_lock: data_lock,
        })
    }
}

/// Closes idle browse sessions every `every`.
fn spawn_browse_reaper<C: RunnerContext>(
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

/// The providers `config` names: **one instance per backend**, shared by both roles when jobs
/// and captures name the same one. Local Chromium: one warm browser per kind, one egress
/// proxy. Self-hosted Steel: one gate in front of its one session, so that a job never
/// replaces an open capture's session (two instances would each think the server free).
/// CDP: one connection and one default-context gate.
fn configured_providers(config: RunnerConfig) -> ProviderFactory<BrowserSession> {
    let make = move |choice, budget: &DeadlineBudget, hooks: &mut Vec<ShutdownHook>| match choice {
        ProviderChoice::Local => {
            let p = Arc::new(LocalBrowserSessionProvider::new(local_config(&config)));
            let for_hook = Arc::clone(&p);
            hooks.push(Box::new(move || {
                let p = Arc::clone(&for_hook);
                Box::pin(async move { p.shutdown().await })
            }));
            p as DynSessionProvider<BrowserSession>
        }
        ProviderChoice::Cdp => {
            let endpoint = config
                .cdp_url
                .as_ref()
                .map(|u| u.expose_secret().to_owned())
                .unwrap_or_default();
            let mut cdp = CdpProviderConfig::new(endpoint);
            cdp.egress = Some(config.egress.clone());
            let p = Arc::new(CdpSessionProvider::new(cdp));
            let for_hook = Arc::clone(&p);
            hooks.push(Box::new(move || {
                let p = Arc::clone(&for_hook);
                Box::pin(async move { p.shutdown().await })
            }));
            p
        }
        ProviderChoice::Steel => crate::remote::steel(&config, budget),
        ProviderChoice::Kernel => crate::remote::kernel(&config),
    };
    let mut built: Vec<(ProviderChoice, DynSessionProvider<BrowserSession>)> = Vec::new();
    Box::new(move |choice, budget, hooks| {
        if let Some((_, provider)) = built.iter().find(|(built, _)| *built == choice) {
            return Arc::clone(provider);
        }
        let provider = make(choice, budget, hooks);
        built.push((choice, Arc::clone(&provider)));
        provider
    })
}

fn local_config(config: &RunnerConfig) -> LocalProviderConfig {
    LocalProviderConfig {
        job_binary: if config.local_full_chromium_jobs {
            ChromiumBinary::Chromium
        } else {
            ChromiumBinary::HeadlessShell
        },
        isolation: if config.local_browser_per_job {
            Isolation::BrowserPerJob
        } else {
            Isolation::SharedBrowser
        },
        egress: Some(config.egress.clone()),
        headful_interactive: config.local_headless_capture.then_some(false),
        ..LocalProviderConfig::default()
    }
}

/// The key that binds idempotency keys to request bodies (a keyed hash, so that a body
/// hash reveals nothing about the secrets in the body). Derived from `ABR_SESSION_KEY`, so
/// it survives restarts with the records; without that key, random per process (a replay
/// after a restart then counts as another body: `409`).
fn body_hash_key(config: &RunnerConfig) -> Result<SecretValue, CoreError> {
    use sha2::{Digest, Sha256};
    match &config.store.session_key {
        Some(key) => {
            let mut hash = Sha256::new();
            hash.update(b"abr-idempotency-body-key-v1\n");
            hash.update(key.expose_secret().as_bytes());
            let digest = hash.finalize();
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            Ok(SecretValue::new(hex))
        }
        None => new_token()
            .map(SecretValue::new)
            .map_err(|_| CoreError::Internal("no randomness for the body-hash key")),
    }
}

/// The store `config` names: the SQLite file `abr.db` in the data directory, or an
/// in-memory database when there is none.
/// Takes the data directory's lock (`abr.lock`, released by the OS when the process ends,
/// also on a kill): two runners on one directory would each end the other's running posts
/// and tasks as unfinished at start.
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, CoreError> {
    let refused = |reason: String| {
        CoreError::InvalidInput(format!("ABR_DATA_DIR {}: {reason}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| refused(e.to_string()))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("abr.lock"))
        .map_err(|e| refused(e.to_string()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(refused(
            "another abr runner (serve, up or mcp) uses this data directory; give each its own"
                .to_owned(),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(refused(e.to_string())),
    }
}

fn open_store(config: &RunnerConfig) -> Result<Arc<dyn RunnerStore>, CoreError> {
    let key = config
        .store
        .session_key
        .as_ref()
        .map(|k| SessionKey::from_hex(k.expose_secret()))
        .transpose()
        .map_err(|e| CoreError::InvalidInput(format!("ABR_SESSION_KEY: {e}")))?;
    let store = match &config.store.data_dir {
        Some(dir) => SqliteStore::open(&dir.join("abr.db"), key, config.insecure_dev),
        None => SqliteStore::in_memory(key),
    }
    .map_err(CoreError::from)?;
    Ok(Arc::new(store))
}

impl<C: RunnerContext> Runner<C> {
    /// Ends, honestly, the posts and tasks a previous process left unfinished (call once at
    /// start, before serving): `uncertain` if a submit or committing step had started, else
    /// `failed` and safe to retry. Answers how many were ended.
    ///
    /// # Errors
    /// The store could not be read or written.
    pub async fn recover(&self) -> Result<usize, CoreError> {
        let posts = self.posts.recover_unfinished().await?;
        for record in &posts {
            tracing::warn!(
                post_id = %record.post_id,
                state = ?record.state,
                "a post was unfinished when the runner stopped"
            );
        }
        let ended = self.tasks.recover_unfinished().await?;
        for end in &ended {
            tracing::warn!(
                task_id = %end.record.task_id,
                state = ?end.record.state,
                "a task was unfinished when the runner stopped"
            );
        }
        Ok(ended.len() + posts.len())
    }

    /// Graceful shutdown, after the HTTP server stopped accepting: refuses new jobs,
    /// releases every open capture, and closes the browsers the runner launched.
    pub async fn shutdown(&self) {
        self.jobs.close();
        self.reaper.abort();
        self.browse_reaper.abort();
        self.tasks.browse_close_all().await;
        let released = self.captures.close_all().await;
        if released > 0 {
            tracing::info!(released, "released open captures at shutdown");
        }
        for hook in &self.shutdown_hooks {
            hook().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_gate_queues_up_to_its_bound_then_refuses() {
        let gate = Arc::new(JobGate::new(1, 1, Duration::from_secs(60)));
        let running = gate.enter().await.unwrap();
        let waiting = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.enter().await.map(|_| ()) })
        };
        for _ in 0..100 {
            if gate.queued() == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(gate.queued(), 1);
        let refused = gate.enter().await.unwrap_err();
        assert!(
            matches!(refused, NotAdmitted::Overloaded { retry_after } if retry_after > Duration::ZERO)
        );
        drop(running);
        waiting.await.unwrap().unwrap();
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_is_refused_once_its_queue_deadline_passed() {
        let gate = Arc::new(JobGate::new(1, 4, Duration::from_secs(3)));
        let _running = gate.enter().await.unwrap();
        let started = tokio::time::Instant::now();
        let refused = gate.enter().await.unwrap_err();
        assert!(
            matches!(refused, NotAdmitted::QueueTimeout { .. }),
            "{refused:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let gate = Arc::new(JobGate::new(1, 1, Duration::from_secs(60)));
        let _running = gate.enter().await.unwrap();
        let waiting = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.enter().await.map(|_| ()) })
        };
        for _ in 0..100 {
            if gate.queued() == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(
            gate.queued(),
            0,
            "a cancelled request still holds a queue slot"
        );
    }
}
