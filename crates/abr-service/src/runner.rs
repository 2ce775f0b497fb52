//! [`Runner`]: the core's poster and capture manager on the configured providers, with the
//! registered strategies and a bounded job queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use abr_core::{
    AgentPoster, AuditError, AuditEvent, AuditSink, Auditor, CaptureConfig, CoreError,
    DynSessionProvider, PosterConfig, SessionCaptureManager, StepTimeouts, StrategyRegistry,
    WebPostStrategy,
};
use abr_providers::{
    BrowserSession, CdpProviderConfig, CdpSessionProvider, ChromiumBinary, Isolation,
    LocalBrowserSessionProvider, LocalProviderConfig,
};
use async_trait::async_trait;
use secrecy::ExposeSecret;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{ProviderChoice, RunnerConfig};

/// A strategy runnable by the runner's providers.
pub type DynStrategy = Arc<dyn WebPostStrategy<BrowserSession>>;

/// The runner is at capacity: retry after the given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded {
    /// Suggested wait.
    pub retry_after: Duration,
}

/// Bounded job concurrency with a bounded queue: beyond both, callers are refused at once
/// instead of piling up in memory.
#[derive(Debug)]
pub struct JobGate {
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
}

struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl JobGate {
    /// `max_concurrent` jobs at once, `max_queued` more waiting.
    pub fn new(max_concurrent: usize, max_queued: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent)),
            queued: AtomicUsize::new(0),
            max_queued,
        }
    }

    /// A slot to run one job, waiting in the queue if needed.
    ///
    /// # Errors
    /// [`Overloaded`] when all slots are busy and the queue is full.
    pub async fn enter(&self) -> Result<OwnedSemaphorePermit, Overloaded> {
        if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
            return Ok(permit);
        }
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(Overloaded {
                retry_after: Duration::from_secs(2),
            });
        }
        // Leaves the queue also when the waiting request is cancelled.
        let _slot = QueueSlot(&self.queued);
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| Overloaded {
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

/// The runner: posting, probing and capture on the configured providers.
pub struct Runner {
    /// Posting and probing.
    pub poster: AgentPoster<BrowserSession>,
    /// Interactive capture.
    pub captures: Arc<SessionCaptureManager<BrowserSession>>,
    /// Admission control for jobs.
    pub jobs: JobGate,
    /// The configuration it was built from.
    pub config: RunnerConfig,
    shutdown_hooks: Vec<ShutdownHook>,
    reaper: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("poster", &self.poster)
            .field("captures", &self.captures)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Runner`]: register the caller's strategies, optionally override providers.
pub struct RunnerBuilder {
    config: RunnerConfig,
    strategies: StrategyRegistry<BrowserSession>,
    job_provider: Option<DynSessionProvider<BrowserSession>>,
    capture_provider: Option<DynSessionProvider<BrowserSession>>,
    audit: Option<Arc<dyn AuditSink>>,
    poster_config: PosterConfig,
}

impl std::fmt::Debug for RunnerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerBuilder")
            .field("strategies", &self.strategies)
            .finish_non_exhaustive()
    }
}

impl RunnerBuilder {
    /// A builder for `config`.
    pub fn new(config: RunnerConfig) -> Self {
        let request = config.limits.request_timeout;
        // The steps of one post must finish well inside the request deadline, so that a
        // post never ends in a 504 of unknown outcome.
        let step = |share: u32| request / 8 * share;
        let timeouts = StepTimeouts {
            acquire: step(1).min(Duration::from_secs(30)),
            precheck: step(1).min(Duration::from_secs(30)),
            post: step(3).min(Duration::from_secs(90)),
            verify: step(1).min(Duration::from_secs(30)),
            export: step(1).min(Duration::from_secs(10)),
            release: step(1).min(Duration::from_secs(10)),
        };
        Self {
            config,
            strategies: StrategyRegistry::new(),
            job_provider: None,
            capture_provider: None,
            audit: None,
            poster_config: PosterConfig {
                pacing: None,
                timeouts,
            },
        }
    }

    /// Registers a platform strategy.
    ///
    /// # Errors
    /// A duplicate or empty platform id.
    pub fn strategy(mut self, strategy: DynStrategy) -> Result<Self, CoreError> {
        self.strategies.register(strategy)?;
        Ok(self)
    }

    /// Runs jobs on `provider` instead of the configured one.
    #[must_use]
    pub fn job_provider(mut self, provider: DynSessionProvider<BrowserSession>) -> Self {
        self.job_provider = Some(provider);
        self
    }

    /// Runs captures on `provider` instead of the configured one.
    #[must_use]
    pub fn capture_provider(mut self, provider: DynSessionProvider<BrowserSession>) -> Self {
        self.capture_provider = Some(provider);
        self
    }

    /// Sends audit events to `sink` (default: structured log lines).
    #[must_use]
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Pacing and step deadlines of posts.
    #[must_use]
    pub fn poster_config(mut self, config: PosterConfig) -> Self {
        self.poster_config = config;
        self
    }

    /// Builds the runner (providers start their browsers lazily, on first use). Must be
    /// called inside a tokio runtime.
    ///
    /// # Errors
    /// None today; kept fallible for providers that validate eagerly.
    pub fn build(self) -> Result<Runner, CoreError> {
        let config = self.config;
        let mut hooks: Vec<ShutdownHook> = Vec::new();
        let mut local: Option<Arc<LocalBrowserSessionProvider>> = None;
        let mut make = |choice: ProviderChoice,
                        hooks: &mut Vec<ShutdownHook>|
         -> DynSessionProvider<BrowserSession> {
            match choice {
                ProviderChoice::Local => {
                    let provider = local.get_or_insert_with(|| {
                        let p = Arc::new(LocalBrowserSessionProvider::new(local_config(&config)));
                        let for_hook = Arc::clone(&p);
                        hooks.push(Box::new(move || {
                            let p = Arc::clone(&for_hook);
                            Box::pin(async move { p.shutdown().await })
                        }));
                        p
                    });
                    Arc::clone(provider) as DynSessionProvider<BrowserSession>
                }
                ProviderChoice::Cdp => {
                    let endpoint = config
                        .cdp_url
                        .as_ref()
                        .map(|u| u.expose_secret().to_owned())
                        .unwrap_or_default();
                    let p = Arc::new(CdpSessionProvider::new(CdpProviderConfig::new(endpoint)));
                    let for_hook = Arc::clone(&p);
                    hooks.push(Box::new(move || {
                        let p = Arc::clone(&for_hook);
                        Box::pin(async move { p.shutdown().await })
                    }));
                    p
                }
                ProviderChoice::Steel => crate::remote::steel(&config),
                ProviderChoice::Kernel => crate::remote::kernel(&config),
            }
        };
        let jobs_provider = match self.job_provider {
            Some(p) => p,
            None => make(config.job_provider, &mut hooks),
        };
        let capture_provider = match self.capture_provider {
            Some(p) => p,
            None => make(config.capture_provider, &mut hooks),
        };
        let strategies = Arc::new(self.strategies);
        let sink = self.audit.unwrap_or_else(|| Arc::new(TracingAuditSink));
        let auditor = Auditor::new(sink, Duration::from_secs(5));
        let poster = AgentPoster::new(jobs_provider, Arc::clone(&strategies))
            .with_audit(auditor.clone())
            .with_config(self.poster_config);
        let captures = Arc::new(
            SessionCaptureManager::new(
                capture_provider,
                strategies,
                CaptureConfig {
                    ttl: config.limits.capture_ttl,
                    max_open: config.limits.max_open_captures,
                    live_view_base: format!("{}/live/", config.public_base()),
                    ..CaptureConfig::default()
                },
            )
            .with_audit(auditor),
        );
        let reaper = captures.spawn_reaper(Duration::from_secs(5));
        Ok(Runner {
            poster,
            captures,
            jobs: JobGate::new(
                config.limits.max_concurrent_jobs,
                config.limits.max_queued_jobs,
            ),
            config,
            shutdown_hooks: hooks,
            reaper,
        })
    }
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
        ..LocalProviderConfig::default()
    }
}

impl Runner {
    /// Graceful shutdown, after the HTTP server stopped accepting: refuses new jobs,
    /// releases every open capture, and closes the browsers the runner launched.
    pub async fn shutdown(&self) {
        self.jobs.close();
        self.reaper.abort();
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
        let gate = Arc::new(JobGate::new(1, 1));
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
        assert!(refused.retry_after > Duration::ZERO);
        drop(running);
        waiting.await.unwrap().unwrap();
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let gate = Arc::new(JobGate::new(1, 1));
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
