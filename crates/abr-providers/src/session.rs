//! [`BrowserSession`]: the browser context every provider hands to strategies.

use std::sync::Arc;
use std::time::Duration;

use abr_core::chaos::{Fault, FaultTarget};
use abr_core::{ProviderError, SessionContext};
use abr_protocol::{AgentSessionState, Cookie, OriginState};
use async_trait::async_trait;
use futures::future::BoxFuture;
use playwright_rs::protocol::{BrowserContext, GotoOptions, Page};

use crate::error::from_playwright;
use crate::process::BrowserProcess;
use crate::router::RequestRouter;
use crate::state;

/// A leased browser context with its first page: what a
/// [`WebPostStrategy`](abr_core::WebPostStrategy) drives, with the full Playwright API.
#[derive(Clone)]
pub struct BrowserSession {
    context: BrowserContext,
    page: Page,
    /// Seeded localStorage, for origins the job never loads (see `export_state`).
    seeded: Vec<OriginState>,
    /// Partitioned (CHIPS) cookies of the seed: they cannot be injected (see
    /// [`state::to_playwright_cookies`]), so they are carried to the export unchanged.
    carried: Vec<Cookie>,
    /// Live-view state shared by every clone (the input CDP session, page-gone signal).
    live: Arc<crate::live_state::LiveState>,
    /// The provider's own check that the browser is still this session's (a remote
    /// session replaced or ended), beyond the page and the connection.
    lost_check: Option<LostCheck>,
    /// The context's one route: the egress URL gate (when set), the site filter, the
    /// network gate (see `router`).
    router: Arc<RequestRouter>,
    /// The context runs the page probe's install script in every document
    /// (`probe_script`): reads send only the call.
    probe_installed: bool,
    /// The page's downloads, once a run keeps them (`downloads`).
    downloads: Arc<crate::downloads::Downloads>,
    /// The browser's process, when this provider launched it (local Chromium).
    process: Option<BrowserProcess>,
}

/// A provider's check that a session's browser is gone for good; see
/// [`BrowserSession::with_lost_check`].
pub type LostCheck = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

impl std::fmt::Debug for BrowserSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserSession").finish_non_exhaustive()
    }
}

impl BrowserSession {
    /// Seeds `context` with `seed` (cookies through the cookie API, localStorage through an
    /// init script, both before any page exists), opens a page, and goes to `start_url`.
    ///
    /// # Errors
    /// A typed provider error when the browser refuses or dies.
    pub async fn open(
        context: BrowserContext,
        seed: Option<&AgentSessionState>,
        start_url: Option<&str>,
        navigation_timeout: Duration,
    ) -> Result<Self, ProviderError> {
        if let Some(seed) = seed {
            let (cookies, skipped) = state::to_playwright_cookies(seed);
            if skipped > 0 {
                tracing::debug!(
                    skipped,
                    "partitioned cookies cannot be injected; they are carried to the export \
                     unchanged"
                );
            }
            let script = state::seed_script(seed);
            // Two independent round trips: send both at once.
            let add_cookies = async {
                if cookies.is_empty() {
                    return Ok(());
                }
                context
                    .add_cookies(&cookies)
                    .await
                    .map_err(|e| from_playwright("adding cookies", e))
            };
            let seed_storage = async {
                let Some(script) = &script else { return Ok(()) };
                context
                    .add_init_script(script)
                    .await
                    .map_err(|e| from_playwright("seeding localStorage", e))
            };
            let (cookies_added, storage_seeded) = tokio::join!(add_cookies, seed_storage);
            cookies_added?;
            storage_seeded?;
        }
        let page = match context.pages().into_iter().next() {
            Some(page) => page,
            None => context
                .new_page()
                .await
                .map_err(|e| from_playwright("opening a page", e))?,
        };
        if let Some(url) = start_url {
            page.goto(url, GotoOptions::new().timeout(navigation_timeout))
                .await
                .map_err(|e| from_playwright("opening the start page", e))?;
        }
        let seeded = seed.map(|s| s.origins.clone()).unwrap_or_default();
        let carried = seed
            .map(|s| {
                s.cookies
                    .iter()
                    .filter(|c| c.partition_key.is_some())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            context,
            page,
            seeded,
            carried,
            live: Arc::default(),
            lost_check: None,
            router: Arc::default(),
            probe_installed: false,
            downloads: Arc::default(),
            process: None,
        })
    }

    /// Adds the provider's own check that the browser is gone for good (e.g. a remote
    /// session that was replaced or ended), used by [`SessionContext::is_lost`] besides the
    /// page and the connection.
    #[must_use]
    pub fn with_lost_check(mut self, check: LostCheck) -> Self {
        self.lost_check = Some(check);
        self
    }

    /// Names the process of the browser this session lives in (one the provider launched).
    #[must_use]
    pub(crate) fn with_process(mut self, process: BrowserProcess) -> Self {
        self.process = Some(process);
        self
    }

    /// The process of the browser this session lives in, when the provider launched it.
    pub fn process(&self) -> Option<&BrowserProcess> {
        self.process.as_ref()
    }

    /// Sets the context's router: the one the egress URL gate was installed with (see
    /// `egress::install_url_gate`), so the site filter and the network gate join it.
    #[must_use]
    pub(crate) fn with_router(mut self, router: Arc<RequestRouter>) -> Self {
        self.router = router;
        self
    }

    /// Marks the context as one that runs the probe's install script
    /// (`probe_script::INSTALL_JS`) in every document, added before its first page loaded.
    #[must_use]
    pub(crate) fn with_probe_installed(mut self) -> Self {
        self.probe_installed = true;
        self
    }

    /// Whether every document of the context holds the probe (see `probe_script`).
    pub(crate) fn probe_installed(&self) -> bool {
        self.probe_installed
    }

    /// The context's router.
    pub(crate) fn router(&self) -> &Arc<RequestRouter> {
        &self.router
    }

    /// The page's downloads (caught once a run keeps them).
    pub(crate) fn downloads(&self) -> &Arc<crate::downloads::Downloads> {
        &self.downloads
    }

    /// The Playwright browser context.
    pub fn context(&self) -> &BrowserContext {
        &self.context
    }

    /// The session's first page.
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// The live-view state shared by every clone of this session.
    pub(crate) fn live_state(&self) -> &Arc<crate::live_state::LiveState> {
        &self.live
    }

    /// Adds the carried cookies (partitioned ones the browser could not take) that the
    /// browser has no cookie of the same name, domain, path and partition for.
    fn carry_cookies(&self, cookies: &mut Vec<Cookie>) {
        for cookie in &self.carried {
            let replaced = cookies.iter().any(|c| {
                c.name == cookie.name
                    && c.domain == cookie.domain
                    && c.path == cookie.path
                    && c.partition_key == cookie.partition_key
            });
            if !replaced {
                cookies.push(cookie.clone());
            }
        }
    }
}

#[async_trait]
impl SessionContext for BrowserSession {
    /// The browser's cookies and localStorage. localStorage seeded by init script exists in
    /// the browser only once a page of its origin loaded, so seeded origins the job never
    /// visited are carried over unchanged rather than lost; so are partitioned cookies, which
    /// could not be injected (the browser's own partitioned cookies of the same name, domain,
    /// path and partition win).
    async fn export_state(&self) -> Result<AgentSessionState, ProviderError> {
        let pw = self
            .context
            .storage_state(None)
            .await
            .map_err(|e| from_playwright("exporting the session", e))?;
        let mut exported = state::from_playwright(pw);
        for origin in &self.seeded {
            if !exported
                .origins
                .iter()
                .any(|o| same_origin(&o.origin, &origin.origin))
            {
                exported.origins.push(origin.clone());
            }
        }
        self.carry_cookies(&mut exported.cookies);
        Ok(exported)
    }

    /// The browser's cookies in one call (no origin's storage loaded), with the carried
    /// partitioned cookies as [`Self::export_state`] has them.
    async fn cookies(&self) -> Result<Vec<Cookie>, ProviderError> {
        let pw = self
            .context
            .cookies(None)
            .await
            .map_err(|e| from_playwright("reading the cookies", e))?;
        let mut cookies = state::cookies_from_playwright(pw);
        self.carry_cookies(&mut cookies);
        Ok(cookies)
    }

    /// Gone for good when the page closed or crashed, the browser disconnected, or the
    /// provider's own check says so.
    async fn is_lost(&self) -> bool {
        let disconnected = self
            .context
            .browser()
            .is_some_and(|browser| !browser.is_connected());
        if self.page_gone() || disconnected || self.context.is_closed() {
            return true;
        }
        match &self.lost_check {
            Some(check) => check().await,
            None => false,
        }
    }
}

/// How long closing the page may take when the chaos layer closes it.
const CLOSE_PAGE: Duration = Duration::from_secs(5);

/// The chaos layer's faults on a real browser: a crash kills its process, a freeze stops it
/// for good, slow steps stop it for `stall` (both leave its connection open: nothing
/// answers), and the page is closed through Playwright. A browser the provider did not
/// launch (CDP, Steel, Kernel) has no process here: only its page can be closed. A crash or
/// a freeze of a shared browser strikes every context in it, as a real one does.
impl FaultTarget for BrowserSession {
    fn inject(&self, fault: Fault, stall: Duration) -> BoxFuture<'static, bool> {
        let (page, process) = (self.page.clone(), self.process.clone());
        Box::pin(async move {
            match (fault, process) {
                (Fault::Crash, Some(process)) => process.kill(),
                (Fault::Freeze, Some(process)) => process.freeze(),
                (Fault::SlowSteps, Some(process)) => {
                    if !process.freeze() {
                        return false;
                    }
                    tokio::time::sleep(stall).await;
                    process.thaw();
                    true
                }
                (Fault::ClosePage, _) => {
                    matches!(
                        tokio::time::timeout(CLOSE_PAGE, page.close()).await,
                        Ok(Ok(()))
                    )
                }
                _ => false,
            }
        })
    }
}

fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => a == b,
    }
}
