//! [`LocalBrowserSessionProvider`]: Chromium on this machine, through Playwright.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, Lease, ProviderCapabilities, ProviderError,
    ProviderErrorKind, SessionProvider,
};
use async_trait::async_trait;
use playwright_rs::LaunchOptions;
use playwright_rs::protocol::{
    AcceptDownloads, Browser, BrowserContext, BrowserContextOptions, ProxySettings, Viewport,
};
use tokio::sync::Mutex;

use crate::chromium::{ChromiumBinary, base_args, display_available};
use crate::driver::playwright;
use crate::egress::{EgressProxy, LazyProxy};
use crate::error::from_playwright;
use crate::probe_script::INSTALL_JS;
use crate::profiles::{ProfileLocks, profile_path};
use crate::router::{NO_SHARED_WORKERS, RequestRouter, launched_without_shared_workers};
use crate::session::BrowserSession;

/// How jobs are isolated from each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Isolation {
    /// One warm browser shared by all jobs, a fresh browser context per job (own cookie jar
    /// and storage). About twice the throughput of a browser per job.
    #[default]
    SharedBrowser,
    /// A fresh browser process per job, closed on release: maximum isolation (no shared
    /// process, cache or GPU state), at the cost of a launch per job.
    BrowserPerJob,
}

/// Settings of the local provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalProviderConfig {
    /// Binary for unattended jobs. Default: the headless shell (fastest).
    pub job_binary: ChromiumBinary,
    /// Binary for interactive capture. Default: full Chromium.
    pub interactive_binary: ChromiumBinary,
    /// Job isolation.
    pub isolation: Isolation,
    /// Show a window for interactive capture: `None` = when a display is available.
    pub headful_interactive: Option<bool>,
    /// Viewport of every page.
    pub viewport: (u32, u32),
    /// Flags added to [`base_args`](crate::base_args).
    pub extra_args: Vec<String>,
    /// Deadline for launching a browser.
    pub launch_timeout: Duration,
    /// Deadline for opening the start page.
    pub navigation_timeout: Duration,
    /// Empty contexts (each with its page) kept ready in the shared job browser. Creating a
    /// page is the slow part of a job start (about 40–60 ms on the headless shell); a warm one
    /// is claimed in a few ms and refilled in the background. 0 turns it off. Only used with
    /// [`Isolation::SharedBrowser`]; a warm context has never held any state.
    pub prewarm: usize,
    /// Where the browsers may connect. `Some`: every browser context (warm pool, jobs,
    /// interactive capture, a browser per job) goes through an in-process
    /// [`EgressProxy`] enforcing it. Default: public addresses only. `None` turns the egress
    /// guard off: only for a browser whose network is isolated by other means (and for
    /// measuring the guard). Downloads are denied and service workers blocked either way.
    pub egress: Option<EgressPolicy>,
    /// The folder named profiles live in ([`AcquireRequest::profile`]): each is a
    /// persistent browser context of its own Chromium process, with the job browser's
    /// switches, egress proxy, downloads denied and service workers blocked, one lease at a
    /// time. `None`: a profile is refused.
    pub profiles: Option<PathBuf>,
}

impl Default for LocalProviderConfig {
    fn default() -> Self {
        Self {
            job_binary: ChromiumBinary::HeadlessShell,
            interactive_binary: ChromiumBinary::Chromium,
            isolation: Isolation::SharedBrowser,
            headful_interactive: None,
            viewport: (1280, 800),
            extra_args: Vec::new(),
            launch_timeout: Duration::from_secs(30),
            navigation_timeout: Duration::from_secs(30),
            prewarm: 2,
            egress: Some(EgressPolicy::new()),
            profiles: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pool {
    Jobs,
    Interactive,
}

impl Pool {
    /// The browser an acquire of `mode` is served from.
    fn of(mode: AcquireMode) -> Self {
        match mode {
            AcquireMode::Interactive => Self::Interactive,
            AcquireMode::Unattended => Self::Jobs,
        }
    }
}

/// Local Chromium: a warm shared browser (relaunched transparently if it died) and a fresh
/// browser context per job, or a browser per job ([`Isolation::BrowserPerJob`]).
///
/// Every context is routed through the provider's [`EgressProxy`] (started on the first
/// acquire, closed by [`LocalBrowserSessionProvider::shutdown`]) unless
/// [`LocalProviderConfig::egress`] is `None`; every context denies downloads and blocks
/// service workers.
pub struct LocalBrowserSessionProvider {
    config: LocalProviderConfig,
    browsers: Mutex<HashMap<Pool, Browser>>,
    launches: AtomicUsize,
    warm: Arc<std::sync::Mutex<Vec<BrowserContext>>>,
    refills: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    /// Job leases alive now: a refill primes its page only when none is ([`prime`]).
    jobs: Arc<AtomicUsize>,
    proxy: LazyProxy,
    /// The job browser is launched without `SharedWorker` (its switches say so, once).
    jobs_without_shared_workers: bool,
    /// One lease per profile folder at a time.
    profile_locks: ProfileLocks,
}

impl std::fmt::Debug for LocalBrowserSessionProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBrowserSessionProvider")
            .field("config", &self.config)
            .field("launches", &self.launches())
            .finish_non_exhaustive()
    }
}

impl LocalBrowserSessionProvider {
    /// A provider with `config`. Nothing is launched until the first acquire.
    pub fn new(config: LocalProviderConfig) -> Self {
        let jobs_without_shared_workers =
            launched_without_shared_workers(&launch_args(&config, Pool::Jobs));
        Self {
            config,
            jobs_without_shared_workers,
            browsers: Mutex::new(HashMap::new()),
            launches: AtomicUsize::new(0),
            warm: Arc::default(),
            refills: Arc::default(),
            jobs: Arc::default(),
            proxy: LazyProxy::default(),
            profile_locks: ProfileLocks::default(),
        }
    }

    /// Options of every context: the viewport, the egress proxy (if the guard is on), no
    /// downloads, no service workers (they would outlive the page's requests).
    fn context_options(&self, proxy: Option<ProxySettings>) -> BrowserContextOptions {
        let (width, height) = self.config.viewport;
        let options = BrowserContextOptions::builder()
            .viewport(Viewport { width, height })
            .accept_downloads(AcceptDownloads::Deny)
            .service_workers("block".to_owned());
        match proxy {
            Some(proxy) => options.proxy(proxy).build(),
            None => options.build(),
        }
    }

    /// The egress proxy's setting for new contexts (`None` when the guard is off), starting
    /// the proxy on first use. Warm contexts made for an earlier proxy (whose runtime died)
    /// are dropped when it is restarted.
    async fn proxy_settings(&self) -> Result<Option<ProxySettings>, ProviderError> {
        let Some(policy) = &self.config.egress else {
            return Ok(None);
        };
        let (proxy, restarted) = self.proxy.get(policy).await?;
        if restarted {
            let stale: Vec<_> = self
                .warm
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain(..)
                .collect();
            let deadline = self.config.launch_timeout;
            for context in stale {
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(deadline, context.close()).await;
                });
            }
        }
        Ok(Some(proxy.proxy_settings()))
    }

    /// The egress proxy the contexts go through, once the first acquire started it (`None`
    /// when the guard is off or after [`LocalBrowserSessionProvider::shutdown`]). For its
    /// counters.
    pub async fn egress_proxy(&self) -> Option<Arc<EgressProxy>> {
        self.proxy.current().await
    }

    /// A never-used warm context, if one is ready. Warm contexts live only in the shared job
    /// browser; those of a browser that died are dropped here.
    fn claim_warm(&self) -> Option<BrowserContext> {
        let mut warm = self.warm.lock().unwrap_or_else(PoisonError::into_inner);
        warm.retain(|c| !c.is_closed() && c.browser().is_some_and(|b| b.is_connected()));
        warm.pop()
    }

    /// What tops the warm pool up to `prewarm` in the background, detached from `self` (a
    /// lease's release runs it).
    fn refiller(&self, browser: &Browser, proxy: Option<&ProxySettings>) -> Refiller {
        Refiller {
            browser: browser.clone(),
            options: self.context_options(proxy.cloned()),
            warm: Arc::clone(&self.warm),
            refills: Arc::clone(&self.refills),
            jobs: Arc::clone(&self.jobs),
            target: self.config.prewarm,
            deadline: self.config.launch_timeout,
        }
    }

    /// The warm pool now: contexts ready to claim, and contexts being made.
    pub fn warm_pool(&self) -> (usize, usize) {
        let mut refills = self.refills.lock().unwrap_or_else(PoisonError::into_inner);
        pool_state(&self.warm, &mut refills)
    }

    /// Waits for background refills of the warm pool to finish.
    pub async fn settle(&self) {
        let refills: Vec<_> = self
            .refills
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for refill in refills {
            let _ = refill.await;
        }
    }

    /// How many browsers this provider launched (a relaunch after a crash counts).
    pub fn launches(&self) -> usize {
        self.launches.load(Ordering::SeqCst)
    }

    fn binary(&self, pool: Pool) -> &ChromiumBinary {
        match pool {
            Pool::Jobs => &self.config.job_binary,
            Pool::Interactive => &self.config.interactive_binary,
        }
    }

    /// A session just opened in `pool`'s browser, as every lease hands it out: its probe
    /// installed (by the context's init script), and a job browser launched without
    /// `SharedWorker` given the router that needs no script to take it away.
    fn prepared(&self, pool: Pool, session: BrowserSession) -> BrowserSession {
        let session = session.with_probe_installed();
        if pool == Pool::Jobs && self.jobs_without_shared_workers {
            session.with_router(Arc::new(RequestRouter::without_shared_workers()))
        } else {
            session
        }
    }

    /// Whether `pool`'s browser shows a window: an interactive one that can, when asked to
    /// or when a display is there.
    fn headful(&self, pool: Pool) -> bool {
        pool == Pool::Interactive
            && self.binary(pool).can_be_headful()
            && self
                .config
                .headful_interactive
                .unwrap_or_else(display_available)
    }

    async fn launch(&self, pool: Pool) -> Result<Browser, ProviderError> {
        let binary = self.binary(pool);
        let path = binary.require()?;
        let headful = self.headful(pool);
        let args = launch_args(&self.config, pool);
        let timeout_ms = self.config.launch_timeout.as_secs_f64() * 1000.0;
        let options = LaunchOptions::new()
            .executable_path(path.to_string_lossy().into_owned())
            .headless(!headful)
            .args(args)
            .timeout(timeout_ms);
        let pw = playwright().await?;
        let browser = pw
            .chromium()
            .launch_with_options(options)
            .await
            .map_err(|e| from_playwright("launching Chromium", e))?;
        self.launches.fetch_add(1, Ordering::SeqCst);
        Ok(browser)
    }

    /// A lease on the named profile `folder`: a persistent context launched on its folder
    /// (a Chromium of its own, as a job's: the job binary and switches, or the interactive
    /// ones for an interactive acquire), closed with the lease; the folder is locked to it.
    /// Nothing is injected: the profile's own state is the session.
    async fn acquire_profile(
        &self,
        request: AcquireRequest,
        folder: &str,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        let Some(root) = self.config.profiles.as_deref() else {
            return Err(ProviderError::new(
                ProviderErrorKind::Unsupported,
                "this runner keeps no named profiles (ABR_PROFILE_DIR)",
            ));
        };
        if request.state.is_some() {
            return Err(ProviderError::new(
                ProviderErrorKind::Rejected,
                "a profile is its own session: none is injected into it",
            ));
        }
        let path = profile_path(root, folder)?;
        let held = self
            .profile_locks
            .take(&path, self.config.launch_timeout)
            .await?;
        let pool = Pool::of(request.mode);
        let proxy = self.proxy_settings().await?;
        let context = self.launch_persistent(pool, &path, proxy).await?;
        let opened = async {
            context
                .add_init_script(&INSTALL_JS)
                .await
                .map_err(|e| from_playwright("installing the page probe", e))?;
            BrowserSession::open(
                context.clone(),
                None,
                request.start_url.as_deref(),
                self.config.navigation_timeout,
            )
            .await
        }
        .await;
        let session = match opened {
            Ok(session) => self.prepared(pool, session),
            Err(e) => {
                let _ = context.close().await;
                return Err(e);
            }
        };
        Ok(Lease::new(session, move |session: Arc<BrowserSession>| {
            Box::pin(async move {
                session.router().leave_net().await;
                // Closing a persistent context closes its browser, which writes the profile.
                let closed = session
                    .context()
                    .close()
                    .await
                    .map_err(|e| from_playwright("closing the profile's browser", e));
                drop(held);
                closed
            })
        }))
    }

    async fn launch_persistent(
        &self,
        pool: Pool,
        path: &Path,
        proxy: Option<ProxySettings>,
    ) -> Result<BrowserContext, ProviderError> {
        let binary = self.binary(pool);
        let executable = binary.require()?;
        let headful = self.headful(pool);
        let (width, height) = self.config.viewport;
        let options = BrowserContextOptions::builder()
            .viewport(Viewport { width, height })
            .accept_downloads(AcceptDownloads::Deny)
            .service_workers("block".to_owned())
            .executable_path(executable.to_string_lossy().into_owned())
            .headless(!headful)
            .args(launch_args(&self.config, pool))
            .timeout(self.config.launch_timeout.as_secs_f64() * 1000.0);
        let options = match proxy {
            Some(proxy) => options.proxy(proxy).build(),
            None => options.build(),
        };
        let pw = playwright().await?;
        let context = pw
            .chromium()
            .launch_persistent_context_with_options(path.to_string_lossy().into_owned(), options)
            .await
            .map_err(|e| from_playwright("launching Chromium on the profile", e))?;
        self.launches.fetch_add(1, Ordering::SeqCst);
        Ok(context)
    }

    /// The warm browser of `pool`, launching it if there is none or it died.
    async fn shared_browser(&self, pool: Pool) -> Result<Browser, ProviderError> {
        let mut browsers = self.browsers.lock().await;
        if let Some(browser) = browsers.get(&pool) {
            if browser.is_connected() {
                return Ok(browser.clone());
            }
            tracing::warn!(?pool, "the shared browser died; relaunching");
        }
        let browser = self.launch(pool).await?;
        browsers.insert(pool, browser.clone());
        Ok(browser)
    }

    /// Browser contexts plus pages open in the warm browsers, not counting the warm pool
    /// (for leak checks). Waits for pending refills first.
    pub async fn open_contexts(&self) -> usize {
        self.settle().await;
        let browsers: Vec<_> = self.browsers.lock().await.values().cloned().collect();
        let all: usize = browsers
            .iter()
            .filter(|b| b.is_connected())
            .flat_map(|b| b.contexts())
            .map(|c| 1 + c.pages().len())
            .sum();
        let warm: usize = self
            .warm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|c| 1 + c.pages().len())
            .sum();
        all.saturating_sub(warm)
    }

    /// Closes the warm browsers and the egress proxy (both are started again on the next
    /// acquire).
    pub async fn shutdown(&self) {
        self.settle().await;
        let warm: Vec<_> = self
            .warm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        // Each close is bounded: a browser that already died may never answer.
        let deadline = self.config.launch_timeout;
        for context in warm {
            let _ = tokio::time::timeout(deadline, context.close()).await;
        }
        let browsers: Vec<_> = self.browsers.lock().await.drain().map(|(_, b)| b).collect();
        for browser in browsers {
            match tokio::time::timeout(deadline, browser.close()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "closing a browser at shutdown failed"),
                Err(_) => tracing::warn!("closing a browser at shutdown timed out"),
            }
        }
        self.proxy.close().await;
    }
}

/// The switches a browser of `pool` is launched with under `config`.
fn launch_args(config: &LocalProviderConfig, pool: Pool) -> Vec<String> {
    // A job browser has no shared workers: their requests are not routed, so no network
    // gate could see them (a separate switch: Playwright's own `--disable-features` would
    // replace ours).
    let jobs_only = (pool == Pool::Jobs).then(|| NO_SHARED_WORKERS.to_owned());
    base_args()
        .into_iter()
        .map(str::to_owned)
        .chain(jobs_only)
        .chain(config.extra_args.iter().cloned())
        .collect()
}

/// A warm pool's contexts ready and being made (`refills`, locked by the caller, forgets
/// the finished ones).
fn pool_state(
    warm: &std::sync::Mutex<Vec<BrowserContext>>,
    refills: &mut Vec<tokio::task::JoinHandle<()>>,
) -> (usize, usize) {
    refills.retain(|h| !h.is_finished());
    let ready = warm.lock().unwrap_or_else(PoisonError::into_inner).len();
    (ready, refills.len())
}

/// Tops a warm pool up to its target in the background: a context with its page each (the
/// page is a renderer process, most of what a context costs).
struct Refiller {
    browser: Browser,
    options: BrowserContextOptions,
    warm: Arc<std::sync::Mutex<Vec<BrowserContext>>>,
    refills: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    jobs: Arc<AtomicUsize>,
    target: usize,
    /// Bound on one refill: a browser that dies mid-refill may never answer.
    deadline: Duration,
}

impl Refiller {
    fn refill(&self) {
        let mut refills = self.refills.lock().unwrap_or_else(PoisonError::into_inner);
        let (ready, making) = pool_state(&self.warm, &mut refills);
        let missing = self.target.saturating_sub(ready + making);
        for _ in 0..missing {
            let (browser, warm, options, deadline, jobs) = (
                self.browser.clone(),
                Arc::clone(&self.warm),
                self.options.clone(),
                self.deadline,
                Arc::clone(&self.jobs),
            );
            refills.push(tokio::spawn(async move {
                let created = tokio::time::timeout(deadline, async {
                    let context = browser.new_context_with_options(options).await.ok()?;
                    // The probe's script before the page's first document (about:blank now,
                    // the job's later).
                    let (installed, page) =
                        tokio::join!(context.add_init_script(&INSTALL_JS), context.new_page());
                    match (installed, page) {
                        (Ok(()), Ok(page)) => {
                            // Idle CPU only: under load it is work a job may never need
                            // (a job without element reads), taken from running jobs.
                            if jobs.load(Ordering::SeqCst) == 0 {
                                prime(&page).await;
                            }
                            Some(context)
                        }
                        _ => {
                            let _ = context.close().await;
                            None
                        }
                    }
                })
                .await;
                if let Ok(Some(context)) = created {
                    warm.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(context);
                }
            }));
        }
    }
}

/// Reads an element of a warm page's blank document the way the guard reads one (a locator
/// resolved in Playwright's utility world, its element evaluated in the page's world), so
/// that the renderer process, which the job's first document reuses, has Playwright's
/// scripts compiled before the job: V8 keeps a process's compiled scripts across
/// documents. Measured (Node, the admin page, medians of 40): the first element read and
/// click of a fresh document 102 ms unprimed, 70-76 ms primed; a bare click 65-72 ms. It
/// costs CPU (Playwright's scripts run once more, in the blank document: about 35 ms more
/// a job in the throughput benchmark with every refill primed), so a refill primes only
/// while no job lease is alive. A failure leaves the
/// page as it was (the job compiles them itself).
async fn prime(page: &playwright_rs::protocol::Page) {
    let _ = page
        .locator("html")
        .evaluate::<serde_json::Value, serde_json::Value>("() => 0", None)
        .await;
}

#[async_trait]
impl SessionProvider for LocalBrowserSessionProvider {
    type Context = BrowserSession;

    fn name(&self) -> &str {
        "local"
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            interactive: true,
            profiles: self.config.profiles.is_some(),
        }
    }

    /// The shared browsers connected, the job leases alive and the warm contexts; `None`
    /// while a browser is being launched (its lock held) or with a browser per job (each
    /// is its lease's).
    fn pool(&self) -> Option<abr_core::PoolStats> {
        if self.config.isolation == Isolation::BrowserPerJob {
            return None;
        }
        let browsers = self
            .browsers
            .try_lock()
            .ok()?
            .values()
            .filter(|b| b.is_connected())
            .count();
        Some(abr_core::PoolStats {
            browsers,
            contexts_in_use: self.jobs.load(Ordering::SeqCst),
            contexts_warm: self
                .warm
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len(),
        })
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        if let Some(folder) = request.profile.clone() {
            return self.acquire_profile(request, &folder).await;
        }
        let pool = Pool::of(request.mode);
        let per_job = self.config.isolation == Isolation::BrowserPerJob;
        // Before any context exists: every context this acquire makes goes through it.
        let proxy = self.proxy_settings().await?;
        let browser = if per_job {
            self.launch(pool).await?
        } else {
            self.shared_browser(pool).await?
        };
        let warm = !per_job && pool == Pool::Jobs && self.config.prewarm > 0;
        let claimed = if warm { self.claim_warm() } else { None };
        // The pool is topped up when a lease ends, not while a job loads its first page: a
        // refill is a renderer process starting, and on two cores it slowed that load by a
        // third. A job that found none ready (the first, or more at once than the pool
        // holds) starts it now.
        let refiller = warm.then(|| self.refiller(&browser, proxy.as_ref()));
        if claimed.is_none()
            && let Some(refiller) = &refiller
        {
            refiller.refill();
        }
        let opened = async {
            let context = match claimed {
                Some(context) => context,
                None => {
                    let context = browser
                        .new_context_with_options(self.context_options(proxy))
                        .await
                        .map_err(|e| from_playwright("creating a browser context", e))?;
                    if let Err(e) = context.add_init_script(&INSTALL_JS).await {
                        let _ = context.close().await;
                        return Err(from_playwright("installing the page probe", e));
                    }
                    context
                }
            };
            let session = BrowserSession::open(
                context.clone(),
                request.state.as_ref(),
                request.start_url.as_deref(),
                self.config.navigation_timeout,
            )
            .await;
            if session.is_err() {
                let _ = context.close().await;
            }
            session.map(|session| self.prepared(pool, session))
        }
        .await;
        let session = match opened {
            Ok(session) => session,
            Err(e) => {
                if per_job {
                    let _ = browser.close().await;
                }
                if let Some(refiller) = &refiller {
                    refiller.refill();
                }
                return Err(e);
            }
        };
        let jobs = (pool == Pool::Jobs).then(|| Arc::clone(&self.jobs));
        if let Some(jobs) = &jobs {
            jobs.fetch_add(1, Ordering::SeqCst);
        }
        let lease = Lease::new(session, move |session: Arc<BrowserSession>| {
            Box::pin(async move {
                if let Some(jobs) = jobs {
                    jobs.fetch_sub(1, Ordering::SeqCst);
                }
                session.router().leave_net().await;
                if per_job {
                    browser
                        .close()
                        .await
                        .map_err(|e| from_playwright("closing the browser", e))
                } else {
                    let closed = match session.context().close().await {
                        Ok(()) => Ok(()),
                        // A context of a browser that died is gone already.
                        Err(_) if !browser.is_connected() => Ok(()),
                        Err(e) => Err(from_playwright("closing the browser context", e)),
                    };
                    if let Some(refiller) = refiller
                        && browser.is_connected()
                    {
                        refiller.refill();
                    }
                    closed
                }
            })
        });
        Ok(lease)
    }
}
