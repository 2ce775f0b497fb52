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
use crate::process::{BrowserProcess, BrowserTemp};
use crate::profiles::{ProfileLocks, profile_path};
use crate::router::{NO_SHARED_WORKERS, RequestRouter, launched_without_shared_workers};
use crate::session::BrowserSession;
use crate::shared::{
    InUse, Launched, SharedBrowser, close_or_kill, detached_release, detached_setup,
};

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
    /// A shared browser is replaced after handing out this many leases (Chromium's memory
    /// grows with use): the next acquire launches a new one, and the old one closes when
    /// its last lease ends. `None`: never.
    pub recycle_after: Option<usize>,
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
            recycle_after: Some(DEFAULT_RECYCLE_AFTER),
        }
    }
}

/// The leases a shared browser hands out before it is replaced, by default.
pub const DEFAULT_RECYCLE_AFTER: usize = 200;

/// How long a browser may take to answer a context's setup (creating it, its page, its
/// seed), beyond any navigation, before it counts as unresponsive and its process is
/// ended. Milliseconds when it answers; a frozen browser never does.
const ANSWER_DEADLINE: Duration = Duration::from_secs(10);

/// How long a lease's release may take to close its context (or its own browser) before
/// the browser's process is ended: within the engine's release deadline (10 s by default),
/// so that the provider, not a dropped future, ends a browser that does not answer.
const CLOSE_DEADLINE: Duration = Duration::from_secs(5);

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
    browsers: Mutex<HashMap<Pool, SharedBrowser>>,
    launches: AtomicUsize,
    /// Shared browsers replaced after [`LocalProviderConfig::recycle_after`] leases.
    recycled: AtomicUsize,
    /// Browsers ended by their process because they did not answer.
    killed: Arc<AtomicUsize>,
    /// Warm contexts, each with the generation of the shared browser it was made in.
    warm: Arc<std::sync::Mutex<Vec<(u64, BrowserContext)>>>,
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
            recycled: AtomicUsize::new(0),
            killed: Arc::default(),
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
            for (_, context) in stale {
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

    /// A never-used warm context of the shared job browser's `generation`, if one is ready.
    /// Warm contexts live only in the shared job browser; those of a browser that died or
    /// was replaced are dropped here (a replaced one closes with its browser).
    fn claim_warm(&self, generation: u64) -> Option<BrowserContext> {
        let mut warm = self.warm.lock().unwrap_or_else(PoisonError::into_inner);
        warm.retain(|(made_in, c)| {
            *made_in == generation
                && !c.is_closed()
                && c.browser().is_some_and(|b| b.is_connected())
        });
        warm.pop().map(|(_, context)| context)
    }

    /// What tops the warm pool up to `prewarm` in the background, detached from `self` (a
    /// lease's release runs it).
    fn refiller(
        &self,
        browser: &Browser,
        generation: u64,
        proxy: Option<&ProxySettings>,
    ) -> Refiller {
        Refiller {
            browser: browser.clone(),
            generation,
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

    /// How many shared browsers were replaced for wear ([`LocalProviderConfig::recycle_after`]).
    pub fn recycled(&self) -> usize {
        self.recycled.load(Ordering::SeqCst)
    }

    /// How many browsers were ended by their process because they did not answer in time.
    pub fn killed(&self) -> usize {
        self.killed.load(Ordering::SeqCst)
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

    async fn launch(&self, pool: Pool) -> Result<Launched, ProviderError> {
        let binary = self.binary(pool);
        let path = binary.require()?;
        let headful = self.headful(pool);
        let process = BrowserProcess::new();
        let mut args = launch_args(&self.config, pool);
        args.push(process.switch());
        // Its own `TMPDIR`: what a killed Chromium leaves there goes with the folder.
        let temp = BrowserTemp::create(&process).await.map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Unavailable,
                format!(
                    "creating the browser's temporary folder {}: {e}",
                    process.temp_dir().display()
                ),
            )
        })?;
        let timeout_ms = self.config.launch_timeout.as_secs_f64() * 1000.0;
        let options = LaunchOptions::new()
            .executable_path(path.to_string_lossy().into_owned())
            .headless(!headful)
            .args(args)
            .env(browser_env(temp.path()))
            .timeout(timeout_ms);
        let pw = playwright().await?;
        let browser = pw
            .chromium()
            .launch_with_options(options)
            .await
            .map_err(|e| from_playwright("launching Chromium", e))?;
        self.launches.fetch_add(1, Ordering::SeqCst);
        Ok(Launched {
            browser,
            process,
            temp: Arc::new(temp),
        })
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
        let (context, process, singleton) = self.launch_persistent(pool, &path, proxy).await?;
        let opened = {
            let (context, start_url) = (context.clone(), request.start_url.clone());
            let navigation = self.config.navigation_timeout;
            async move {
                context
                    .add_init_script(&INSTALL_JS)
                    .await
                    .map_err(|e| from_playwright("installing the page probe", e))?;
                BrowserSession::open(context, None, start_url.as_deref(), navigation).await
            }
        };
        let (on_timeout, killed) = (process.clone(), Arc::clone(&self.killed));
        let kept = singleton.clone();
        let opened = detached_setup(
            opened,
            self.open_deadline(&request),
            move || ended(&on_timeout, &killed),
            // Closing a persistent context closes its browser (then its singleton folder
            // may go).
            |orphan| {
                Box::pin(async move {
                    close_session(&orphan).await;
                    drop(kept);
                })
            },
        )
        .await;
        let session = match opened {
            Ok(session) => self.prepared(pool, session).with_process(process.clone()),
            Err(e) => {
                if tokio::time::timeout(CLOSE_DEADLINE, context.close())
                    .await
                    .is_err()
                {
                    process.kill();
                }
                drop(singleton);
                return Err(e);
            }
        };
        let killed = Arc::clone(&self.killed);
        Ok(Lease::new(session, move |session: Arc<BrowserSession>| {
            Box::pin(detached_release(async move {
                // Closing a persistent context closes its browser, which writes the profile.
                let closing = async {
                    session.router().leave_net().await;
                    session.context().close().await
                };
                let closed = match tokio::time::timeout(CLOSE_DEADLINE, closing).await {
                    Ok(closed) => {
                        closed.map_err(|e| from_playwright("closing the profile's browser", e))
                    }
                    Err(_) => Err(ended(&process, &killed)),
                };
                // Closed or ended: what a killed browser left in the temp dir goes.
                drop(singleton);
                drop(held);
                closed
            }))
        }))
    }

    /// A persistent context on the profile folder `path`, its browser's process, and the
    /// singleton folder its browser made in the temp dir (full Chromium), removed once the
    /// last clone is dropped: Chromium removes it only on a clean exit. Playwright takes no
    /// environment for a persistent context, so this browser has no temporary folder of its
    /// own.
    async fn launch_persistent(
        &self,
        pool: Pool,
        path: &Path,
        proxy: Option<ProxySettings>,
    ) -> Result<(BrowserContext, BrowserProcess, Option<Arc<BrowserTemp>>), ProviderError> {
        let binary = self.binary(pool);
        let executable = binary.require()?;
        let headful = self.headful(pool);
        let process = BrowserProcess::new();
        let mut args = launch_args(&self.config, pool);
        args.push(process.switch());
        let (width, height) = self.config.viewport;
        let options = BrowserContextOptions::builder()
            .viewport(Viewport { width, height })
            .accept_downloads(AcceptDownloads::Deny)
            .service_workers("block".to_owned())
            .executable_path(executable.to_string_lossy().into_owned())
            .headless(!headful)
            .args(args)
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
        let singleton = BrowserTemp::singleton_of(path).map(Arc::new);
        Ok((context, process, singleton))
    }

    /// The shared browser of `pool` with a lease taken on it, and its generation: launched
    /// if there is none, it died, or it is worn out (then retired: it closes when its last
    /// lease ends).
    async fn shared_browser(&self, pool: Pool) -> Result<(Launched, u64, InUse), ProviderError> {
        let mut browsers = self.browsers.lock().await;
        if let Some(shared) = browsers.get(&pool) {
            let connected = shared.alive();
            if connected && !shared.worn_out(self.config.recycle_after) {
                let lease = shared.lease();
                return Ok((shared.launched().clone(), shared.generation(), lease));
            }
            if connected {
                tracing::info!(?pool, "the shared browser is replaced for wear");
                self.recycled.fetch_add(1, Ordering::SeqCst);
            } else {
                tracing::warn!(?pool, "the shared browser died; relaunching");
            }
            if let Some(old) = browsers.remove(&pool) {
                old.retire();
            }
        }
        let launched = self.launch(pool).await?;
        let generation = self.launches.load(Ordering::SeqCst) as u64;
        let shared = SharedBrowser::new(launched, generation, CLOSE_DEADLINE);
        let lease = shared.lease();
        let handed = (shared.launched().clone(), generation, lease);
        browsers.insert(pool, shared);
        Ok(handed)
    }

    /// How long an acquire may take to set its context up: a browser's answers, and the
    /// start page's navigation if it has one.
    fn open_deadline(&self, request: &AcquireRequest) -> Duration {
        let navigation = if request.start_url.is_some() {
            self.config.navigation_timeout
        } else {
            Duration::ZERO
        };
        ANSWER_DEADLINE + navigation
    }

    /// Browser contexts plus pages open in the warm browsers, not counting the warm pool
    /// (for leak checks). Waits for pending refills first.
    pub async fn open_contexts(&self) -> usize {
        self.settle().await;
        let browsers: Vec<_> = self
            .browsers
            .lock()
            .await
            .values()
            .map(|b| b.launched().browser.clone())
            .collect();
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
            .map(|(_, c)| 1 + c.pages().len())
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
        for (_, context) in warm {
            let _ = tokio::time::timeout(CLOSE_DEADLINE, context.close()).await;
        }
        let browsers: Vec<_> = self.browsers.lock().await.drain().map(|(_, b)| b).collect();
        for browser in browsers {
            // One that does not answer is ended by its process.
            close_or_kill(browser.launched(), CLOSE_DEADLINE).await;
        }
        self.proxy.close().await;
    }
}

/// The environment of a browser whose temporary folder is `temp`: this process's, with
/// `TMPDIR` set to it, and without the runner's own settings (`ABR_*`: its tokens and keys
/// are nothing a browser needs, and a page that took over its renderer would find them in
/// the browser's environment). Playwright replaces the browser's environment with the one
/// it is given, so the rest is passed (a variable that is not UTF-8 cannot be, and is left
/// out).
fn browser_env(temp: &Path) -> HashMap<String, String> {
    browser_env_from(std::env::vars_os(), temp)
}

fn browser_env_from(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    temp: &Path,
) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = vars
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| !name.starts_with("ABR_"))
        .collect();
    env.insert("TMPDIR".to_owned(), temp.to_string_lossy().into_owned());
    env
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
    warm: &std::sync::Mutex<Vec<(u64, BrowserContext)>>,
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
    /// The generation of the shared browser it fills from.
    generation: u64,
    options: BrowserContextOptions,
    warm: Arc<std::sync::Mutex<Vec<(u64, BrowserContext)>>>,
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
            let generation = self.generation;
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
                        .push((generation, context));
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
            .filter(|b| b.alive())
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
        // A browser per job is its lease's own; a shared one is held by the lease (`InUse`)
        // until the release, so that a worn-out one closes only after its last lease.
        let (launched, generation, in_use) = if per_job {
            (self.launch(pool).await?, 0, None)
        } else {
            let (launched, generation, in_use) = self.shared_browser(pool).await?;
            (launched, generation, Some(in_use))
        };
        let Launched {
            browser,
            process,
            temp,
        } = launched;
        let warm = !per_job && pool == Pool::Jobs && self.config.prewarm > 0;
        let claimed = if warm {
            self.claim_warm(generation)
        } else {
            None
        };
        // The pool is topped up when a lease ends, not while a job loads its first page: a
        // refill is a renderer process starting, and on two cores it slowed that load by a
        // third. A job that found none ready (the first, or more at once than the pool
        // holds) starts it now.
        let refiller = warm.then(|| self.refiller(&browser, generation, proxy.as_ref()));
        if claimed.is_none()
            && let Some(refiller) = &refiller
        {
            refiller.refill();
        }
        let opened = {
            let options = self.context_options(proxy);
            let browser = browser.clone();
            let (state, start_url) = (request.state.clone(), request.start_url.clone());
            let navigation = self.config.navigation_timeout;
            async move {
                let context = match claimed {
                    Some(context) => context,
                    None => {
                        let context = browser
                            .new_context_with_options(options)
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
                    state.as_ref(),
                    start_url.as_deref(),
                    navigation,
                )
                .await;
                if session.is_err() {
                    let _ = context.close().await;
                }
                session
            }
        };
        // A browser that does not answer its setup in time (frozen, its connection
        // half-open) is ended, not left to hang every acquire after this one: by the
        // setup's own task, also when this acquire's caller gave up first.
        let (on_timeout, killed) = (process.clone(), Arc::clone(&self.killed));
        let mark = in_use.as_ref().map(InUse::end_mark);
        let opened = detached_setup(
            opened,
            self.open_deadline(&request),
            move || {
                if let Some(mark) = mark {
                    mark.mark();
                }
                ended(&on_timeout, &killed)
            },
            {
                // A browser per job set up for a caller who gave up goes with its context.
                let own = per_job.then(|| Launched {
                    browser: browser.clone(),
                    process: process.clone(),
                    temp: Arc::clone(&temp),
                });
                move |orphan| {
                    Box::pin(async move {
                        close_session(&orphan).await;
                        if let Some(own) = own {
                            close_or_kill(&own, CLOSE_DEADLINE).await;
                        }
                    })
                }
            },
        )
        .await;
        let session = match opened {
            Ok(session) => self.prepared(pool, session).with_process(process.clone()),
            Err(e) => {
                if per_job {
                    let launched = Launched {
                        browser,
                        process,
                        temp,
                    };
                    close_or_kill(&launched, CLOSE_DEADLINE).await;
                }
                drop(in_use);
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
        let killed = Arc::clone(&self.killed);
        let lease = Lease::new(session, move |session: Arc<BrowserSession>| {
            Box::pin(detached_release(async move {
                if let Some(jobs) = jobs {
                    jobs.fetch_sub(1, Ordering::SeqCst);
                }
                if per_job {
                    session.router().leave_net().await;
                    // Its temporary folder goes once it closed or was ended.
                    let launched = Launched {
                        browser,
                        process,
                        temp,
                    };
                    return if close_or_kill(&launched, CLOSE_DEADLINE).await {
                        Ok(())
                    } else {
                        killed.fetch_add(1, Ordering::SeqCst);
                        Err(ProviderError::new(
                            ProviderErrorKind::Crashed,
                            "the job's browser did not close: its process was ended",
                        ))
                    };
                }
                let closing = async {
                    session.router().leave_net().await;
                    session.context().close().await
                };
                let closed = match tokio::time::timeout(CLOSE_DEADLINE, closing).await {
                    Ok(Ok(())) => Ok(()),
                    // A context of a browser that died is gone already.
                    Ok(Err(_)) if !browser.is_connected() => Ok(()),
                    Ok(Err(e)) => Err(from_playwright("closing the browser context", e)),
                    // The shared browser does not answer: every lease in it is stuck, and
                    // so would be the next acquire. Ended; the next acquire relaunches.
                    Err(_) => {
                        if let Some(in_use) = &in_use {
                            in_use.mark_ended();
                        }
                        Err(ended(&process, &killed))
                    }
                };
                let retired = in_use.as_ref().is_some_and(InUse::retired);
                drop(in_use);
                if let Some(refiller) = refiller
                    && !retired
                    && browser.is_connected()
                {
                    refiller.refill();
                }
                closed
            }))
        });
        Ok(lease)
    }
}

/// Closes a session that was set up for a caller who gave up, within the close deadline.
async fn close_session(session: &BrowserSession) {
    let _ = tokio::time::timeout(CLOSE_DEADLINE, session.context().close()).await;
}

/// Ends a browser that did not answer in time by its process, counted in `killed`: the
/// error that says so (retryable: the next acquire launches a new browser).
fn ended(process: &BrowserProcess, killed: &AtomicUsize) -> ProviderError {
    if process.kill() {
        killed.fetch_add(1, Ordering::SeqCst);
    }
    tracing::warn!("a browser did not answer in time: its process was ended");
    ProviderError::new(
        ProviderErrorKind::Unavailable,
        format!(
            "the browser did not answer within {} s: it was ended, and the next acquire \
             launches a new one",
            ANSWER_DEADLINE.as_secs()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_gets_its_own_tmpdir_and_none_of_the_runners_settings() {
        let vars = [
            ("PATH", "/usr/bin"),
            ("ABR_API_TOKEN", "secret-token"),
            ("ABR_SESSION_KEY", "00ff"),
            ("TMPDIR", "/tmp"),
            ("LANG", "C.UTF-8"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()));
        let env = browser_env_from(vars, Path::new("/tmp/abr-br-x"));
        assert_eq!(env.get("TMPDIR").map(String::as_str), Some("/tmp/abr-br-x"));
        assert_eq!(env.get("PATH").map(String::as_str), Some("/usr/bin"));
        assert_eq!(env.get("LANG").map(String::as_str), Some("C.UTF-8"));
        assert!(env.keys().all(|k| !k.starts_with("ABR_")), "{env:?}");
    }
}
