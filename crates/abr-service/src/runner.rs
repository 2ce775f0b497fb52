//! The runner's assembly: configuration → providers → platforms → store → [`Engine`] →
//! (the HTTP router is [`crate::http::app`]). [`RunnerBuilder`] takes the configuration and
//! the caller's strategies, makes the providers the configuration names (or takes the
//! caller's), registers the platforms it names ([`RunnerBuilder::from_config`]: platform
//! files, the built-in `demo`), opens the store in the data directory (holding its lock),
//! and builds the engine with the runner's sinks (the `api_callback` delivery, the events
//! webhook).

use std::sync::Arc;

use abr_core::context::TaskContext;
use abr_core::guard::ProfileStore;
use abr_core::store::EventLog;
use abr_core::{
    AuditSink, CoreError, DeadlineBudget, DynSessionProvider, StrategyRegistry, WebPostStrategy,
    new_token,
};
use abr_engine::{Engine, EngineBuilder, EngineError, EngineStore, PosterConfig};
use abr_protocol::SecretValue;
use abr_providers::{
    BrowserSession, CdpProviderConfig, CdpSessionProvider, ChromiumBinary, Isolation,
    LocalBrowserSessionProvider, LocalProviderConfig,
};
use abr_store::{PgStore, SealingKey, SqliteStore};
use secrecy::ExposeSecret;

use crate::config::{ConfigError, ProviderChoice, RunnerConfig};

/// How often a fleet replica's event streams look for the other replicas' events.
const FLEET_EVENT_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// A strategy runnable by the runner's providers.
pub type DynStrategy = Arc<dyn WebPostStrategy<BrowserSession>>;

/// Something to do at shutdown (close warm browsers, disconnect).
type ShutdownHook = Box<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The runner: the [`Engine`] on the configured providers and store, with the configuration
/// it was assembled from. Generic over the browser context so that the HTTP layer can be
/// tested on the core's fakes; in production it is [`BrowserSession`].
pub struct Runner<C: TaskContext = BrowserSession> {
    /// The application.
    pub engine: Engine<C>,
    /// The configuration it was built from.
    pub config: RunnerConfig,
    shutdown_hooks: Vec<ShutdownHook>,
    /// Draining, and its place in a fleet.
    status: Arc<crate::status::ReplicaStatus>,
    /// Held while the runner lives: one runner process per data directory.
    _data_lock: Option<std::fs::File>,
    /// The events webhook's deliverer, while the runner lives.
    _deliverer: Option<crate::webhook::Running>,
    /// What it counts (`GET /metrics`).
    metrics: Arc<crate::metrics::Metrics>,
}

impl<C: TaskContext> std::fmt::Debug for Runner<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("engine", &self.engine)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> Runner<C> {
    /// Whether it is draining, and its node id in a fleet.
    pub fn status(&self) -> &Arc<crate::status::ReplicaStatus> {
        &self.status
    }

    /// What it counts: its HTTP answers, its runs' events (`GET /metrics`).
    pub fn metrics(&self) -> &Arc<crate::metrics::Metrics> {
        &self.metrics
    }

    /// Ends, honestly, the posts and tasks a previous process left unfinished (call once at
    /// start, before serving); see [`Engine::recover`].
    ///
    /// # Errors
    /// The store could not be read or written.
    pub async fn recover(&self) -> Result<usize, EngineError> {
        self.engine.recover().await
    }

    /// Graceful shutdown, after the HTTP server stopped accepting: the engine's (no new
    /// jobs, captures released), then the browsers the runner launched are closed.
    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
        self.close_providers().await;
    }

    /// Waits for every admitted job to end, then shuts down ([`Engine::drain`]).
    pub async fn drain(&self) {
        self.engine.drain().await;
        self.close_providers().await;
    }

    async fn close_providers(&self) {
        for hook in &self.shutdown_hooks {
            hook().await;
        }
    }
}

/// Makes the provider for a [`ProviderChoice`] within the request's deadline budget,
/// registering what it must do at shutdown.
type ProviderFactory<C> = Box<
    dyn FnMut(ProviderChoice, &DeadlineBudget, &mut Vec<ShutdownHook>) -> DynSessionProvider<C>
        + Send,
>;

/// A wrapper around a runner's providers ([`RunnerBuilder::provider_layer`]): it gets each
/// provider the runner would use and returns the one it uses instead (a wrapper that
/// forwards to it: timed, counted, or failing on purpose as the soak's chaos layer).
pub type ProviderLayer<C = BrowserSession> =
    Arc<dyn Fn(DynSessionProvider<C>) -> DynSessionProvider<C> + Send + Sync>;

/// Builds a [`Runner`]: register the caller's strategies, optionally override providers and
/// the store.
pub struct RunnerBuilder<C: TaskContext = BrowserSession> {
    config: RunnerConfig,
    store: Option<Arc<dyn EngineStore>>,
    profiles: Option<Arc<dyn ProfileStore>>,
    strategies: StrategyRegistry<C>,
    job_provider: Option<DynSessionProvider<C>>,
    capture_provider: Option<DynSessionProvider<C>>,
    factory: Option<ProviderFactory<C>>,
    audit: Option<Arc<dyn AuditSink>>,
    poster_config: Option<PosterConfig>,
    sweep_gate: Option<Arc<dyn abr_engine::SweepGate>>,
    task_queue: Option<Arc<dyn abr_core::store::TaskQueue>>,
    layer: Option<ProviderLayer<C>>,
}

impl<C: TaskContext> std::fmt::Debug for RunnerBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerBuilder")
            .field("strategies", &self.strategies)
            .finish_non_exhaustive()
    }
}

impl RunnerBuilder<BrowserSession> {
    /// A builder for `config`, with the providers it names (local Chromium, CDP, Steel,
    /// Kernel) unless overridden, and no platform: register yours with
    /// [`strategy`](Self::strategy), or start from [`from_config`](Self::from_config) for
    /// the platforms the configuration names too.
    pub fn new(config: RunnerConfig) -> Self {
        let factory = configured_providers(config.clone());
        let mut builder = Self::bare(config);
        builder.factory = Some(factory);
        builder
    }

    /// The runner `config` describes, whole (what every `abr` command runs): the providers
    /// it names, as [`new`](Self::new), and the platforms it names: the platform files of
    /// [`RunnerConfig::platforms_dir`] (`ABR_PLATFORMS_DIR`, their placeholders filled from
    /// `ABR_PLATFORM_VARS`), then the built-in `demo` when [`RunnerConfig::demo_site_url`]
    /// is set (`ABR_DEMO_SITE_URL`; needs the crate's `demo` feature). A plain configuration
    /// registers no platform: add your own with [`strategy`](Self::strategy).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming `ABR_PLATFORMS_DIR` when the directory or a file in
    /// it cannot be read or is refused (naming the file and the field), or two platforms
    /// have one id; naming `ABR_DEMO_SITE_URL` when the demo site URL is set but the `demo`
    /// strategy refuses it, or this crate was built without the `demo` feature.
    pub fn from_config(config: RunnerConfig) -> Result<Self, ConfigError> {
        let demo = config.demo_site_url.clone();
        let declared = match &config.platforms_dir {
            Some(dir) => declared_platforms(dir, &config.platform_vars)?,
            None => Vec::new(),
        };
        let mut builder = Self::new(config);
        for strategy in declared {
            let id = WebPostStrategy::<BrowserSession>::platform(&strategy).to_owned();
            builder = builder
                .strategy(Arc::new(strategy))
                .map_err(|e| ConfigError::Invalid {
                    key: PLATFORMS_DIR.to_owned(),
                    reason: format!("platform {id:?}: {e}"),
                })?;
        }
        match demo {
            None => Ok(builder),
            Some(url) => with_demo(builder, &url),
        }
    }
}

impl<C: TaskContext> RunnerBuilder<C> {
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
            profiles: None,
            strategies: StrategyRegistry::new(),
            job_provider: None,
            capture_provider: None,
            factory: None,
            audit: None,
            poster_config: None,
            sweep_gate: None,
            task_queue: None,
            layer: None,
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
    pub fn store(mut self, store: Arc<dyn EngineStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps named profiles' consent and sign-ins in `store`, beside a store given with
    /// [`store`](Self::store) (the runner's own SQLite store keeps them otherwise). Profiles
    /// are on only with `ABR_PROFILE_DIR`.
    #[must_use]
    pub fn profiles(mut self, store: Arc<dyn ProfileStore>) -> Self {
        self.profiles = Some(store);
        self
    }

    /// Runs the once-per-fleet sweeps only when `gate` lets it (a fleet replica: the holder of
    /// the sweep's lease).
    #[must_use]
    pub fn sweep_gate(mut self, gate: Arc<dyn abr_engine::SweepGate>) -> Self {
        self.sweep_gate = Some(gate);
        self
    }

    /// Shares queued tasks with the fleet through `queue` (a fleet replica: the shared
    /// database).
    #[must_use]
    pub fn task_queue(mut self, queue: Arc<dyn abr_core::store::TaskQueue>) -> Self {
        self.task_queue = Some(queue);
        self
    }

    /// Wraps the job provider and the capture provider in `layer` (each as the runner would
    /// use it: configured, or given; before the runner's own acquire timing).
    #[must_use]
    pub fn provider_layer(mut self, layer: ProviderLayer<C>) -> Self {
        self.layer = Some(layer);
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
    /// [`RunnerBuilder::with_providers`] always has both), when the deadlines do not fit in
    /// the request timeout (a platform's pacing, or step deadlines set with
    /// [`poster_config`](Self::poster_config)), or when the data directory is in use or the
    /// store cannot be opened.
    pub fn build(self) -> Result<Runner<C>, EngineError> {
        let config = self.config;
        let engine_config = config.engine();
        let (budget, _) = engine_config.deadlines(
            self.strategies.longest_pacing(),
            self.poster_config.as_ref(),
        )?;
        let mut hooks: Vec<ShutdownHook> = Vec::new();
        let mut factory = self.factory;
        let layer = self.layer;
        let mut provider = |given: Option<DynSessionProvider<C>>,
                            choice: ProviderChoice,
                            hooks: &mut Vec<ShutdownHook>| {
            given
                .or_else(|| factory.as_mut().map(|make| make(choice, &budget, hooks)))
                .map(|provider| match &layer {
                    Some(layer) => layer(provider),
                    None => provider,
                })
                .ok_or_else(|| CoreError::InvalidInput("the runner has no provider".into()))
        };
        let metrics = Arc::new(crate::metrics::Metrics::new());
        // Every acquire is timed for `abr_acquire_duration_seconds`.
        let jobs_provider = crate::timed_provider::TimedProvider::wrap(
            provider(self.job_provider, config.providers.job_provider, &mut hooks)?,
            Arc::clone(&metrics),
        );
        let capture_provider = crate::timed_provider::TimedProvider::wrap(
            provider(
                self.capture_provider,
                config.providers.capture_provider,
                &mut hooks,
            )?,
            Arc::clone(&metrics),
        );
        let data_lock = match (&self.store, &config.store.data_dir) {
            (None, Some(dir)) => Some(lock_data_dir(dir)?),
            _ => None,
        };
        let (store, profiles) = match self.store {
            Some(store) => (store, self.profiles),
            None => open_store(&config)?,
        };
        let log: Arc<dyn EventLog> = Arc::clone(&store) as Arc<dyn EventLog>;
        // Every call the engine makes on its store is timed for `abr_store_*`.
        let store: Arc<dyn EngineStore> = Arc::new(abr_engine::ObservedStore::new(
            store,
            Arc::new(crate::metrics::MetricsSink(Arc::clone(&metrics))),
        ));
        let mut engine = EngineBuilder::new(engine_config, jobs_provider, capture_provider, store)
            .strategies(self.strategies)
            .body_hash_key(body_hash_key(&config)?)
            .completion(Arc::new(crate::callback::CallbackSink::new(
                config.egress.clone(),
            )));
        if let Some(sink) = self.audit {
            engine = engine.audit(sink);
        }
        if let Some(poster) = self.poster_config {
            engine = engine.poster_config(poster);
        }
        if let Some(gate) = self.sweep_gate {
            engine = engine.sweep_gate(gate);
        }
        if let Some(queue) = self.task_queue {
            engine = engine.task_queue(queue);
        }
        if let Some(profiles) = profiles.filter(|_| config.providers.profile_dir.is_some()) {
            engine = engine.profiles(profiles);
        }
        let deliverer = crate::webhook::Deliverer::configured(&config, log);
        engine = engine.event_deliveries(deliverer.is_some());
        engine = engine.event_sink(Arc::new(crate::metrics::MetricsSink(Arc::clone(&metrics))));
        if config.store.database_url.is_some() {
            // Other replicas' events are seen this often; this one's at once.
            engine = engine.event_poll(FLEET_EVENT_POLL);
        }
        Ok(Runner {
            engine: engine.build()?,
            _deliverer: deliverer.map(crate::webhook::Deliverer::spawn),
            config,
            shutdown_hooks: hooks,
            status: Arc::default(),
            _data_lock: data_lock,
            metrics,
        })
    }
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
                .providers
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

/// The environment variable that asks for the built-in `demo` platform.
const DEMO_SITE_URL: &str = "ABR_DEMO_SITE_URL";

/// The environment variable naming the platforms directory.
const PLATFORMS_DIR: &str = "ABR_PLATFORMS_DIR";

/// Reads the `*.toml` and `*.json` platform files of `dir` (not its subdirectories),
/// filling their `{{name}}` placeholders from `vars`.
fn declared_platforms(
    dir: &std::path::Path,
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<abr_engine::DeclaredStrategy>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: PLATFORMS_DIR.to_owned(),
        reason,
    };
    let entries = std::fs::read_dir(dir)
        .map_err(|e| invalid(format!("cannot read {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| invalid(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if abr_engine::PlatformFormat::from_file_name(&name).is_none()
            || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .map_err(|e| invalid(format!("cannot read {name}: {e}")))?;
        files.push((name, text));
    }
    abr_engine::load_platform_files(files.iter().map(|(n, t)| (n.as_str(), t.as_str())), vars)
        .map_err(|e| invalid(e.to_string()))
}

/// Registers the `demo` platform for the demo site at `url`.
#[cfg(feature = "demo")]
fn with_demo(builder: RunnerBuilder, url: &url::Url) -> Result<RunnerBuilder, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: DEMO_SITE_URL.to_owned(),
        reason,
    };
    let demo = abr_demo::DemoStrategy::new(url.as_str().trim_end_matches('/'))
        .map_err(|e| invalid(e.to_string()))?;
    builder
        .strategy(Arc::new(demo))
        .map_err(|e| invalid(e.to_string()))
}

/// Without the `demo` feature there is no `demo` platform to register.
#[cfg(not(feature = "demo"))]
fn with_demo(_: RunnerBuilder, _: &url::Url) -> Result<RunnerBuilder, ConfigError> {
    Err(ConfigError::Invalid {
        key: DEMO_SITE_URL.to_owned(),
        reason: "this abr was built without the `demo` feature".to_owned(),
    })
}

fn local_config(config: &RunnerConfig) -> LocalProviderConfig {
    LocalProviderConfig {
        job_binary: if config.providers.local_full_chromium_jobs {
            ChromiumBinary::Chromium
        } else {
            ChromiumBinary::HeadlessShell
        },
        isolation: if config.providers.local_browser_per_job {
            Isolation::BrowserPerJob
        } else {
            Isolation::SharedBrowser
        },
        egress: Some(config.egress.clone()),
        headful_interactive: config.providers.local_headless_capture.then_some(false),
        profiles: config.providers.profile_dir.clone(),
        recycle_after: config.providers.local_recycle_after,
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
    private_dir(dir).map_err(refused)?;
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

/// Creates `dir` for its owner only (0700), or checks an existing one: like ssh's strict
/// modes, a data directory other users may write to (they could replace the database) is
/// refused, with the command that fixes it; one they may read or enter is used with a
/// warning (the database file itself is the owner's alone, see `abr-store`).
pub(crate) fn private_dir(dir: &std::path::Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| e.to_string())?;
        }
        let mode = std::fs::metadata(dir)
            .map_err(|e| e.to_string())?
            .permissions()
            .mode();
        if mode & 0o022 != 0 {
            return Err(format!(
                "other users may write to it (mode {:o}); run: chmod 700 {}",
                mode & 0o777,
                dir.display()
            ));
        }
        if mode & 0o055 != 0 {
            tracing::warn!(
                dir = %dir.display(),
                mode = format_args!("{:o}", mode & 0o777),
                "other users may list the data directory; run: chmod 700 on it"
            );
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())
    }
}

fn sealing_key(config: &RunnerConfig) -> Result<Option<SealingKey>, CoreError> {
    config
        .store
        .session_key
        .as_ref()
        .map(|k| SealingKey::from_hex(k.expose_secret()))
        .transpose()
        .map_err(|e| CoreError::InvalidInput(format!("ABR_SESSION_KEY: {e}")))
}

/// The shared PostgreSQL store `ABR_DATABASE_URL` names, connected and migrated, if one is
/// named: give it to [`RunnerBuilder::store`] (connecting takes the runtime, which the
/// builder does not).
///
/// # Errors
/// A bad session key, a database that cannot be reached, or one a newer binary migrated.
pub async fn open_shared_store(config: &RunnerConfig) -> Result<Option<Arc<PgStore>>, CoreError> {
    let Some(url) = &config.store.database_url else {
        return Ok(None);
    };
    let pool = match config.store.database_pool_size {
        0 => abr_store::DEFAULT_POOL_SIZE,
        n => n,
    };
    let store = PgStore::connect(
        url.expose_secret(),
        sealing_key(config)?,
        config.insecure_dev,
        pool,
    )
    .await
    .map_err(CoreError::from)?
    .with_lease(config.fleet.lease);
    Ok(Some(Arc::new(store)))
}

/// A runner's store, and the same store as the keeper of named profiles (if it keeps them).
type Stores = (Arc<dyn EngineStore>, Option<Arc<dyn ProfileStore>>);

/// The store `config` names (SQLite in its data directory, or in memory), and the same
/// store as the keeper of named profiles.
fn open_store(config: &RunnerConfig) -> Result<Stores, CoreError> {
    if config.store.database_url.is_some() {
        return Err(CoreError::InvalidInput(
            "ABR_DATABASE_URL: connect the shared store first (open_shared_store) and give it \
             to RunnerBuilder::store"
                .into(),
        ));
    }
    let key = sealing_key(config)?;
    let store = match &config.store.data_dir {
        Some(dir) => SqliteStore::open(&dir.join("abr.db"), key, config.insecure_dev),
        None => SqliteStore::in_memory(key),
    }
    .map_err(CoreError::from)?;
    let store = Arc::new(store);
    Ok((store.clone(), Some(store)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use tower::ServiceExt as _;

    use super::*;

    const TOKEN: &str = "serve-test-token-0123456789";

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        [("ABR_API_TOKEN", TOKEN), ("HOME", "/home/abr-test")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The platform ids a runner built by [`RunnerBuilder::from_config`] for `env` serves on
    /// `GET /v1/platforms`. No browser starts: providers launch on first use.
    async fn platforms(env: &HashMap<String, String>) -> Vec<String> {
        let mut config = RunnerConfig::load(env, None, false).unwrap();
        // Records in memory: these tests are about platforms.
        config.store.data_dir = None;
        let runner = Arc::new(RunnerBuilder::from_config(config).unwrap().build().unwrap());
        let response = crate::http::app(Arc::clone(&runner))
            .oneshot(
                Request::get("/v1/platforms")
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        runner.shutdown().await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body: abr_protocol::PlatformsResponse = serde_json::from_slice(&body).unwrap();
        body.platforms.into_iter().map(|p| p.id).collect()
    }

    #[tokio::test]
    async fn a_plain_configuration_registers_no_demo_platform() {
        let config = RunnerConfig::load(&env(&[]), None, false).unwrap();
        assert_eq!(config.demo_site_url, None);
        assert_eq!(RunnerConfig::default().demo_site_url, None);
        assert_eq!(platforms(&env(&[])).await, Vec::<String>::new());
        let off = env(&[("ABR_DEMO_SITE_URL", "off")]);
        assert_eq!(platforms(&off).await, Vec::<String>::new());
    }

    #[cfg(feature = "demo")]
    #[tokio::test]
    async fn the_demo_platform_is_registered_when_its_site_is_named() {
        let demo = env(&[("ABR_DEMO_SITE_URL", "http://127.0.0.1:8788")]);
        assert_eq!(platforms(&demo).await, ["demo"]);
    }

    #[cfg(not(feature = "demo"))]
    #[tokio::test]
    async fn without_the_demo_feature_asking_for_the_demo_platform_is_refused() {
        let demo = env(&[("ABR_DEMO_SITE_URL", "http://127.0.0.1:8788")]);
        let err = RunnerConfig::load(&demo, None, false).unwrap_err();
        assert!(err.to_string().starts_with("ABR_DEMO_SITE_URL: "), "{err}");
        let config = RunnerConfig {
            demo_site_url: Some(url::Url::parse("http://127.0.0.1:8788").unwrap()),
            ..RunnerConfig::default()
        };
        let err = RunnerBuilder::from_config(config).unwrap_err();
        assert!(err.to_string().contains("`demo` feature"), "{err}");
        assert_eq!(platforms(&env(&[])).await, Vec::<String>::new());
    }

    #[tokio::test]
    async fn platform_files_are_registered_and_a_bad_one_stops_the_start() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../abr-demo/platforms");
        let declared = env(&[
            ("ABR_PLATFORMS_DIR", dir),
            ("ABR_PLATFORM_VARS", "base=http://127.0.0.1:8788"),
        ]);
        assert_eq!(platforms(&declared).await, ["demo-declared"]);
        // Without its variable the file is refused, naming the setting, the file and field.
        let unfilled = env(&[("ABR_PLATFORMS_DIR", dir)]);
        let config = RunnerConfig::load(&unfilled, None, false).unwrap();
        let err = RunnerBuilder::from_config(config).unwrap_err().to_string();
        assert!(
            err.starts_with("ABR_PLATFORMS_DIR: ")
                && err.contains("demo.toml")
                && err.contains("startUrl"),
            "{err}"
        );
        let missing = env(&[("ABR_PLATFORMS_DIR", "/nonexistent/abr-platforms")]);
        let config = RunnerConfig::load(&missing, None, false).unwrap();
        let err = RunnerBuilder::from_config(config).unwrap_err().to_string();
        assert!(err.starts_with("ABR_PLATFORMS_DIR: cannot read"), "{err}");
    }
}
