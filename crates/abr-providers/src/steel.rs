//! [`SteelSessionProvider`]: sessions of a Steel browser server, self-hosted
//! (`steel-dev/steel-browser`) or Steel Cloud (`api.steel.dev`).
//!
//! Wire notes (shared/reference/providers.md §2, §3, §7): `POST /v1/sessions` creates a
//! session whose `websocketUrl` Playwright attaches to over CDP; `POST
//! /v1/sessions/{id}/release` ends it. The OSS server holds **one** session at a time, ignores
//! the id in `/release` and `/context` (it acts on whatever session is current), advertises
//! `0.0.0.0` in its URLs unless `DOMAIN` is set, and may carry cookies and localStorage over
//! from an earlier session. Hence on OSS the provider:
//!
//! - rewrites an unusable advertised host (`0.0.0.0`, `::`, or loopback when the base URL is
//!   not) to the configured base URL's, keeping path and query;
//! - is meant to be used through [`SteelSessionProvider::oss_serialized`], which queues
//!   acquires so that only one lease exists at a time;
//! - uses the browser's **default context** (`contexts()[0]`, as Steel's docs do; the live
//!   viewer and Steel's own tooling only follow that context), and makes it clean before the
//!   job sees it: cookies cleared, leftover tabs replaced by a fresh one, and the web storage
//!   of every origin the server reports in `/v1/sessions/{id}/context` cleared through CDP;
//! - before releasing, checks that the current session is still its own (`GET
//!   /v1/sessions/{id}` says `live`): a release on OSS would otherwise end whatever session
//!   is current, possibly someone else's after ours expired.
//!
//! State goes in through Playwright ([`BrowserSession::open`]), never through Steel's
//! `sessionContext`, so it behaves the same on every provider.
//!
//! Egress: Steel's browser runs in Steel's network and the job uses its default context, where
//! no proxy can be set. With [`SteelProviderConfig::egress`] set (the default), the context
//! gets the URL gate (Playwright routing checks each request against the policy, resolving
//! names in the runner) and downloads denied over CDP. That gate is weaker than the local
//! providers' egress proxy: the browser resolves names in its own network, and Playwright does
//! not route redirects, WebSockets or service-worker requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abr_core::{
    AcquireRequest, EgressPolicy, Lease, ProviderCapabilities, ProviderError, ProviderErrorKind,
    ProviderViewer, SerializedProvider, SessionProvider,
};
use abr_protocol::SecretValue;
use async_trait::async_trait;
use playwright_rs::protocol::{Browser, BrowserContext};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::egress::{deny_default_downloads, install_url_gate};
use crate::error::from_playwright;
use crate::remote::{self, EndSession, Rest, Teardown};
use crate::session::BrowserSession;

const NAME: &str = "steel";
/// Steel Cloud's API.
pub const STEEL_CLOUD_URL: &str = "https://api.steel.dev";
/// Header carrying the API key.
const API_KEY_HEADER: &str = "steel-api-key";
/// Extra attempts for the provider's first create (the server may still be starting its
/// browser and hit a profile lock, providers.md §2.9).
const FIRST_CREATE_RETRIES: u32 = 2;
/// Pause before the first such retry (doubled for the next).
const FIRST_CREATE_PAUSE: Duration = Duration::from_millis(300);
/// What `Storage.clearDataForOrigin` clears of leftover origins.
const LEFTOVER_STORAGE_TYPES: &str = "local_storage,indexeddb,cache_storage,service_workers";

/// Which Steel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SteelFlavor {
    /// Self-hosted `steel-browser`: no auth, one session at a time, shared default context.
    #[default]
    Oss,
    /// Steel Cloud: `steel-api-key` auth, a browser per session, the key also goes on the CDP
    /// URL (`apiKey=`).
    Cloud,
}

/// Settings of the Steel provider.
#[derive(Clone)]
pub struct SteelProviderConfig {
    /// OSS or Cloud.
    pub flavor: SteelFlavor,
    /// REST base, e.g. `http://127.0.0.1:3000` (OSS) or [`STEEL_CLOUD_URL`]; `/v1/...` is
    /// appended.
    pub base_url: String,
    /// Sent as the `steel-api-key` header when set (Cloud needs it; OSS ignores it), and for
    /// Cloud appended to the CDP URL as `apiKey`.
    pub api_key: Option<SecretString>,
    /// Deadline of each REST call.
    pub rest_timeout: Duration,
    /// Deadline for attaching over CDP (and for each browser call while preparing the
    /// context, and for disconnecting).
    pub connect_timeout: Duration,
    /// Deadline for opening the start page.
    pub navigation_timeout: Duration,
    /// `dimensions` of created sessions (server default 1920×1080).
    pub dimensions: Option<(u32, u32)>,
    /// `headless` of created sessions (server default: OSS headless, Cloud headful).
    pub headless: Option<bool>,
    /// Cloud only: the session `timeout` (Cloud default 5 min). Not sent to OSS.
    pub session_timeout: Option<Duration>,
    /// Clear the web storage of origins the server reports as holding data (OSS carries
    /// localStorage over between sessions, providers.md §2.9). Default: true for OSS, false
    /// for Cloud.
    pub clear_leftover_storage: bool,
    /// Where the job's browser may go, checked by the URL gate (see the module docs; weaker
    /// than the local egress proxy). Default: public addresses only. `None` turns it off.
    pub egress: Option<EgressPolicy>,
}

impl SteelProviderConfig {
    /// A self-hosted server at `base_url` (e.g. `http://127.0.0.1:3000`), default deadlines.
    pub fn oss(base_url: impl Into<String>) -> Self {
        Self {
            flavor: SteelFlavor::Oss,
            base_url: base_url.into(),
            api_key: None,
            rest_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(15),
            navigation_timeout: Duration::from_secs(30),
            dimensions: None,
            headless: None,
            session_timeout: None,
            clear_leftover_storage: true,
            egress: Some(EgressPolicy::new()),
        }
    }

    /// Steel Cloud with `api_key`, default deadlines.
    pub fn cloud(api_key: impl Into<String>) -> Self {
        Self {
            flavor: SteelFlavor::Cloud,
            api_key: Some(SecretString::from(api_key.into())),
            clear_leftover_storage: false,
            ..Self::oss(STEEL_CLOUD_URL)
        }
    }
}

impl std::fmt::Debug for SteelProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteelProviderConfig")
            .field("flavor", &self.flavor)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("rest_timeout", &self.rest_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("navigation_timeout", &self.navigation_timeout)
            .field("dimensions", &self.dimensions)
            .field("headless", &self.headless)
            .field("session_timeout", &self.session_timeout)
            .field("clear_leftover_storage", &self.clear_leftover_storage)
            .field("egress", &self.egress)
            .finish()
    }
}

/// Leases Steel sessions: one remote session, and one Playwright connection to it, per lease.
///
/// Capabilities: interactive, with Steel's own viewer (`debugUrl`) as
/// a [`ProviderViewer`]. On OSS, `isolated_contexts` is **false** and `max_concurrent` is 1:
/// there is one browser and the job gets its default context (cleaned on acquire, see the
/// module docs); use [`SteelSessionProvider::oss_serialized`]. On Cloud each session is its
/// own browser.
pub struct SteelSessionProvider {
    config: SteelProviderConfig,
    rest: Result<Rest, String>,
    /// A create succeeded once: later failures are not start-up hiccups.
    warmed: AtomicBool,
}

impl std::fmt::Debug for SteelSessionProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteelSessionProvider")
            .field("config", &self.config)
            .field("warmed", &self.warmed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

/// The part of `SessionDetails` the provider uses.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionDetails {
    id: String,
    #[serde(default)]
    websocket_url: String,
    #[serde(default)]
    debug_url: String,
    #[serde(default)]
    status: Option<String>,
}

impl SteelSessionProvider {
    /// A provider with `config`. Nothing is contacted until the first acquire; a malformed
    /// base URL makes every acquire fail with [`ProviderErrorKind::Misconfigured`].
    pub fn new(config: SteelProviderConfig) -> Self {
        let rest = Rest::new(
            NAME,
            &config.base_url,
            config.rest_timeout,
            config.connect_timeout,
        );
        Self {
            config,
            rest,
            warmed: AtomicBool::new(false),
        }
    }

    /// A self-hosted Steel server as a [`SerializedProvider`]: the OSS server holds one
    /// session at a time (a second create silently replaces the first), so acquires queue, up
    /// to `queue_timeout`, and the next starts only after the previous lease was released.
    pub fn oss_serialized(
        config: SteelProviderConfig,
        queue_timeout: Duration,
    ) -> SerializedProvider<SteelSessionProvider> {
        SerializedProvider::new(Self::new(config), queue_timeout)
    }

    /// The configuration.
    pub fn config(&self) -> &SteelProviderConfig {
        &self.config
    }

    fn rest(&self) -> Result<&Rest, ProviderError> {
        self.rest
            .as_ref()
            .map_err(|m| ProviderError::new(ProviderErrorKind::Misconfigured, m.clone()))
    }

    fn with_key(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            Some(key) => request.header(API_KEY_HEADER, key.expose_secret()),
            None => request,
        }
    }

    fn create_body(&self) -> Value {
        let mut body = Map::new();
        if let Some((width, height)) = self.config.dimensions {
            body.insert(
                "dimensions".into(),
                json!({ "width": width, "height": height }),
            );
        }
        if let Some(headless) = self.config.headless {
            body.insert("headless".into(), json!(headless));
        }
        if self.config.flavor == SteelFlavor::Cloud
            && let Some(timeout) = self.config.session_timeout
        {
            let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
            body.insert("timeout".into(), json!(millis));
        }
        Value::Object(body)
    }

    /// `POST /v1/sessions`; the provider's very first create is retried on a 5xx.
    async fn create(&self, rest: &Rest) -> Result<SessionDetails, ProviderError> {
        let body = self.create_body();
        let retries = if self.warmed.load(Ordering::SeqCst) {
            0
        } else {
            FIRST_CREATE_RETRIES
        };
        let mut pause = FIRST_CREATE_PAUSE;
        let mut attempt = 0;
        loop {
            let request = self
                .with_key(rest.request(Method::POST, &["v1", "sessions"]))
                .json(&body);
            let answer = rest.send(request, "creating a session").await?;
            if answer.status.is_success() {
                let details: SessionDetails = answer.json(NAME, "creating a session")?;
                self.warmed.store(true, Ordering::SeqCst);
                return Ok(details);
            }
            let error = rest.status_error("creating a session", &answer);
            if attempt >= retries || !answer.status.is_server_error() {
                return Err(error);
            }
            attempt += 1;
            tracing::debug!(error = %error, attempt, "steel: the first create failed; retrying");
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }

    /// How the lease ends the remote session.
    fn end_session(&self, rest: &Rest, id: &str) -> EndSession {
        let rest = rest.clone();
        let id = id.to_owned();
        let key = self.config.api_key.clone();
        let verify = self.config.flavor == SteelFlavor::Oss;
        Box::new(move || {
            Box::pin(async move {
                remote::with_one_retry(Duration::from_millis(200), || {
                    release(&rest, &id, key.as_ref(), verify)
                })
                .await
            })
        })
    }

    /// The CDP URL to attach to: host rewritten if unusable, the key added for Cloud.
    fn cdp_url(&self, rest: &Rest, advertised: &str) -> Result<String, ProviderError> {
        if advertised.is_empty() {
            return Err(ProviderError::new(
                ProviderErrorKind::Rejected,
                "steel: the session has no websocketUrl (a Selenium session?)",
            ));
        }
        let mut url = url::Url::parse(advertised).map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Other,
                "steel: the session's websocketUrl is not a URL",
            )
        })?;
        rewrite_host(&mut url, rest.base(), true);
        if self.config.flavor == SteelFlavor::Cloud
            && let Some(key) = &self.config.api_key
            && !url.query_pairs().any(|(k, _)| k == "apiKey")
        {
            url.query_pairs_mut()
                .append_pair("apiKey", key.expose_secret());
        }
        Ok(url.into())
    }

    /// Makes the default context clean and opens the job's session in it.
    async fn open(
        &self,
        rest: &Rest,
        details: &SessionDetails,
        request: &AcquireRequest,
        teardown: &mut Teardown,
    ) -> Result<BrowserSession, ProviderError> {
        let endpoint = self.cdp_url(rest, &details.websocket_url)?;
        let step = self.config.connect_timeout;
        let mut browser = remote::connect_cdp(NAME, &endpoint, step).await?;
        teardown.set_browser(browser.clone());
        let mut context = default_context(&browser)?;
        // What an earlier session may have left: storage the server knows of (read while its
        // tabs are still open: a live page's storage is part of the dump) and tabs.
        let leftover = async {
            if self.config.clear_leftover_storage {
                self.leftover_origins(rest, &details.id).await
            } else {
                Ok(Vec::new())
            }
        };
        let tabs = remote::bounded(
            NAME,
            "listing tabs",
            step,
            remote::default_context_pages(NAME, &browser),
        );
        let (leftover, pages) = tokio::join!(leftover, tabs);
        let (leftover, mut pages) = (leftover?, pages?);
        if !is_fresh(&pages) {
            tracing::debug!(
                tabs = pages.len(),
                "steel: the session has leftover tabs; replacing them"
            );
            remote::bounded(
                NAME,
                "replacing leftover tabs",
                step,
                replace_tabs(&browser, &pages),
            )
            .await?;
            // Playwright keeps closed pages listed (and the session takes the first one):
            // attach again to see only the fresh tab.
            remote::disconnect(NAME, &browser, step).await;
            browser = remote::connect_cdp(NAME, &endpoint, step).await?;
            teardown.set_browser(browser.clone());
            context = default_context(&browser)?;
            pages = remote::bounded(
                NAME,
                "listing tabs",
                step,
                remote::default_context_pages(NAME, &browser),
            )
            .await?;
        }
        remote::bounded(NAME, "cleaning the default context", step, async {
            let clear_cookies = async {
                context
                    .clear_cookies(None)
                    .await
                    .map_err(|e| from_playwright("steel: clearing cookies", e))
            };
            let (cleared, ()) = tokio::join!(
                clear_cookies,
                remote::settle_pages(&context, pages.len(), step)
            );
            cleared?;
            clear_origins(&context, &leftover).await
        })
        .await?;
        if let Some(policy) = &self.config.egress {
            remote::bounded(NAME, "installing the egress gate", step, async {
                deny_default_downloads(&browser).await?;
                install_url_gate(&context, policy).await
            })
            .await?;
        }
        let open = BrowserSession::open(
            context,
            request.state.as_ref(),
            request.start_url.as_deref(),
            self.config.navigation_timeout,
        );
        remote::bounded(
            NAME,
            "opening the session",
            step + self.config.navigation_timeout,
            open,
        )
        .await
    }

    /// Origins the server reports holding web storage (`GET /v1/sessions/{id}/context`).
    async fn leftover_origins(&self, rest: &Rest, id: &str) -> Result<Vec<String>, ProviderError> {
        let request = self.with_key(rest.request(Method::GET, &["v1", "sessions", id, "context"]));
        let answer = rest.send(request, "reading the session's storage").await?;
        if answer.status == reqwest::StatusCode::NOT_FOUND {
            tracing::warn!(
                "steel: the server has no /context endpoint; leftover storage not checked"
            );
            return Ok(Vec::new());
        }
        if !answer.status.is_success() {
            return Err(rest.status_error("reading the session's storage", &answer));
        }
        let dump: Value = answer.json(NAME, "reading the session's storage")?;
        Ok(storage_origins(&dump))
    }
}

/// `POST /v1/sessions/{id}/release`. With `verify` (OSS), first asks whether `id` is still
/// the live session, and leaves the server alone when it is not: OSS would release whatever
/// session is current.
async fn release(
    rest: &Rest,
    id: &str,
    key: Option<&SecretString>,
    verify: bool,
) -> Result<(), ProviderError> {
    let keyed = |r: reqwest::RequestBuilder| match key {
        Some(key) => r.header(API_KEY_HEADER, key.expose_secret()),
        None => r,
    };
    if verify {
        let answer = rest
            .send(
                keyed(rest.request(Method::GET, &["v1", "sessions", id])),
                "checking the session",
            )
            .await;
        match answer {
            Ok(answer) if answer.status.is_success() => {
                let details: Option<SessionDetails> = serde_json::from_slice(&answer.body).ok();
                if let Some(details) = details
                    && details.id == id
                    && details.status.as_deref().is_some_and(|s| s != "live")
                {
                    tracing::debug!(
                        status = details.status.as_deref().unwrap_or_default(),
                        "steel: the session already ended; not releasing the current one"
                    );
                    return Ok(());
                }
            }
            // Unknown: release anyway, never leave ours running.
            Ok(_) | Err(_) => {}
        }
    }
    let request = keyed(rest.request(Method::POST, &["v1", "sessions", id, "release"]));
    let answer = rest.send(request, "releasing the session").await?;
    if answer.status.is_success() || answer.status == reqwest::StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(rest.status_error("releasing the session", &answer))
    }
}

/// The browser's default context (Steel's docs: `browser.contexts()[0]`).
fn default_context(browser: &Browser) -> Result<BrowserContext, ProviderError> {
    browser.contexts().into_iter().next().ok_or_else(|| {
        ProviderError::new(
            ProviderErrorKind::Unavailable,
            "steel: the session's browser has no default context",
        )
    })
}

/// Whether the default context holds nothing but one blank tab (the normal case after a
/// release: the server relaunched its browser).
fn is_fresh(pages: &[remote::PageTarget]) -> bool {
    match pages {
        [] => true,
        [page] => page.url == "about:blank",
        _ => false,
    }
}

/// Replaces the default context's tabs by one fresh tab: an earlier session's tabs keep its
/// sessionStorage, including the seed marker of [`crate::state::seed_script`], which would
/// stop the job's localStorage from being seeded.
async fn replace_tabs(
    browser: &Browser,
    stale: &[remote::PageTarget],
) -> Result<(), ProviderError> {
    let cdp = browser
        .new_browser_cdp_session()
        .await
        .map_err(|e| from_playwright("steel: opening a browser CDP session", e))?;
    cdp.send("Target.createTarget", Some(json!({ "url": "about:blank" })))
        .await
        .map_err(|e| from_playwright("steel: opening a tab", e))?;
    for page in stale {
        cdp.send("Target.closeTarget", Some(json!({ "targetId": page.id })))
            .await
            .map_err(|e| from_playwright("steel: closing a leftover tab", e))?;
    }
    let _ = cdp.detach().await;
    // `closeTarget` answers before the tab is gone; attaching again before that would list it.
    loop {
        let left = remote::default_context_pages(NAME, browser).await?;
        if !left.iter().any(|p| stale.iter().any(|s| s.id == p.id)) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Clears the web storage of `origins` (`Storage.clearDataForOrigin`, through a page's CDP
/// session).
async fn clear_origins(context: &BrowserContext, origins: &[String]) -> Result<(), ProviderError> {
    if origins.is_empty() {
        return Ok(());
    }
    tracing::debug!(
        count = origins.len(),
        "steel: clearing web storage left by an earlier session"
    );
    let page = match context.pages().into_iter().next() {
        Some(page) => page,
        None => context
            .new_page()
            .await
            .map_err(|e| from_playwright("steel: opening a page", e))?,
    };
    let cdp = context
        .new_cdp_session(&page)
        .await
        .map_err(|e| from_playwright("steel: opening a CDP session", e))?;
    for origin in origins {
        let params = json!({ "origin": origin, "storageTypes": LEFTOVER_STORAGE_TYPES });
        cdp.send("Storage.clearDataForOrigin", Some(params))
            .await
            .map_err(|e| from_playwright("steel: clearing leftover storage", e))?;
    }
    let _ = cdp.detach().await;
    Ok(())
}

/// The origins keyed in a `/context` dump's `localStorage`, `sessionStorage` and
/// `indexedDB`. Keys are origins or, for pages read live, bare hostnames (providers.md
/// §2.7): a hostname stands for its `http` and `https` origins.
fn storage_origins(dump: &Value) -> Vec<String> {
    let mut origins = Vec::new();
    for store in ["localStorage", "sessionStorage", "indexedDB"] {
        let Some(keys) = dump.get(store).and_then(Value::as_object) else {
            continue;
        };
        for (key, items) in keys {
            let empty = match items {
                Value::Object(m) => m.is_empty(),
                Value::Array(a) => a.is_empty(),
                _ => true,
            };
            if empty {
                continue;
            }
            let candidates = match url::Url::parse(key) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {
                    vec![u.origin().ascii_serialization()]
                }
                Ok(_) => Vec::new(),
                Err(_) if !key.is_empty() && !key.contains('/') => {
                    vec![format!("http://{key}"), format!("https://{key}")]
                }
                Err(_) => Vec::new(),
            };
            for origin in candidates {
                if !origins.contains(&origin) {
                    origins.push(origin);
                }
            }
        }
    }
    origins
}

/// Rewrites `url`'s host and port to `base`'s when the advertised host cannot be reached
/// from here: unspecified (`0.0.0.0`, `::`), or loopback while `base` is not. The path and
/// query are kept; for a WebSocket URL (`ws_scheme`) the scheme follows `base` (`https` →
/// `wss`).
fn rewrite_host(url: &mut url::Url, base: &url::Url, ws_scheme: bool) {
    let unusable = match url.host() {
        Some(url::Host::Ipv4(ip)) => {
            ip.is_unspecified() || (ip.is_loopback() && !is_loopback(base))
        }
        Some(url::Host::Ipv6(ip)) => {
            ip.is_unspecified() || (ip.is_loopback() && !is_loopback(base))
        }
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost") && !is_loopback(base),
        None => false,
    };
    if !unusable {
        return;
    }
    let secure = base.scheme() == "https";
    let scheme = match (ws_scheme, secure) {
        (true, true) => "wss",
        (true, false) => "ws",
        (false, true) => "https",
        (false, false) => "http",
    };
    let mut rebuilt = base.clone();
    rebuilt.set_path(url.path());
    rebuilt.set_query(url.query());
    rebuilt.set_fragment(None);
    // http(s) and ws(s) are all "special" schemes: switching between them cannot fail.
    if rebuilt.set_scheme(scheme).is_ok() {
        *url = rebuilt;
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[async_trait]
impl SessionProvider for SteelSessionProvider {
    type Context = BrowserSession;

    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> ProviderCapabilities {
        let oss = self.config.flavor == SteelFlavor::Oss;
        ProviderCapabilities {
            interactive: true,
            remote_live_view: true,
            // OSS: one browser, and jobs use its default context.
            isolated_contexts: !oss,
            max_concurrent: oss.then_some(1),
        }
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        let rest = self.rest()?;
        let details = self.create(rest).await?;
        // From here on the remote session is ended whatever happens (also if this future is
        // dropped).
        let mut teardown = Teardown::new(
            NAME,
            self.end_session(rest, &details.id),
            self.config.connect_timeout,
        );
        let session = match self.open(rest, &details, &request, &mut teardown).await {
            Ok(session) => session,
            Err(e) => {
                if let Err(release_error) = teardown.run().await {
                    tracing::warn!(error = %release_error, "steel: releasing after a failed acquire failed");
                }
                return Err(e);
            }
        };
        let lease = Lease::new(session, move |_session: Arc<BrowserSession>| {
            Box::pin(teardown.run())
        });
        let live_view = (!details.debug_url.is_empty())
            .then(|| url::Url::parse(&details.debug_url).ok())
            .flatten()
            .map(|mut url| {
                rewrite_host(&mut url, rest.base(), false);
                ProviderViewer {
                    url: SecretValue::new(String::from(url)),
                    // The debug page and its screencast socket; never the REST API or the
                    // CDP endpoint at the origin's root.
                    paths: vec!["/v1/sessions/debug".into(), "/v1/sessions/cast".into()],
                }
            });
        Ok(match live_view {
            Some(viewer) => lease.with_provider_viewer(viewer),
            None => lease,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn an_unspecified_host_is_replaced_by_the_base_host() {
        let mut u = url("ws://0.0.0.0:3000/devtools?x=1");
        rewrite_host(&mut u, &url("http://127.0.0.1:4000"), true);
        assert_eq!(u.as_str(), "ws://127.0.0.1:4000/devtools?x=1");
        let mut u = url("http://0.0.0.0:3000/v1/sessions/debug");
        rewrite_host(&mut u, &url("https://steel.internal"), false);
        assert_eq!(u.as_str(), "https://steel.internal/v1/sessions/debug");
        let mut u = url("ws://localhost:3000/");
        rewrite_host(&mut u, &url("http://10.0.0.5:3000"), true);
        assert_eq!(u.as_str(), "ws://10.0.0.5:3000/");
    }

    #[test]
    fn a_usable_host_is_kept() {
        for (advertised, base) in [
            (
                "wss://connect.steel.dev/?sessionId=a",
                "https://api.steel.dev",
            ),
            ("ws://127.0.0.1:3000/", "http://localhost:3000"),
            ("ws://10.0.0.5:3000/", "http://127.0.0.1:3000"),
        ] {
            let mut u = url(advertised);
            rewrite_host(&mut u, &url(base), true);
            assert_eq!(u.as_str(), url(advertised).as_str());
        }
    }

    #[test]
    fn cloud_urls_get_the_key_as_a_query_parameter_and_oss_urls_do_not() {
        let mut config = SteelProviderConfig::cloud("ste-key&x");
        config.base_url = "https://api.steel.dev".into();
        let p = SteelSessionProvider::new(config);
        let rest = p.rest().unwrap().clone();
        let cdp = p
            .cdp_url(&rest, "wss://connect.steel.dev?sessionId=abc")
            .unwrap();
        assert_eq!(
            cdp,
            "wss://connect.steel.dev/?sessionId=abc&apiKey=ste-key%26x"
        );
        let mut oss = SteelProviderConfig::oss("http://127.0.0.1:3000");
        oss.api_key = Some(SecretString::from("k"));
        let p = SteelSessionProvider::new(oss);
        let rest = p.rest().unwrap().clone();
        assert_eq!(
            p.cdp_url(&rest, "ws://0.0.0.0:3000/").unwrap(),
            "ws://127.0.0.1:3000/"
        );
        assert_eq!(
            p.cdp_url(&rest, "").unwrap_err().kind(),
            ProviderErrorKind::Rejected
        );
    }

    #[test]
    fn leftover_origins_cover_origin_and_host_keys() {
        let dump = json!({
            "cookies": [],
            "localStorage": { "http://127.0.0.1:5": {"k": "v"}, "example.com": {"a": "b"}, "https://empty.test": {} },
            "sessionStorage": {},
            "indexedDB": { "https://db.test": [{"name": "x"}] },
        });
        assert_eq!(
            storage_origins(&dump),
            [
                "http://127.0.0.1:5",
                "http://example.com",
                "https://example.com",
                "https://db.test"
            ]
        );
    }

    #[test]
    fn the_config_debug_hides_the_key() {
        let text = format!("{:?}", SteelProviderConfig::cloud("ste-secret"));
        assert!(!text.contains("ste-secret"), "{text}");
        assert!(text.contains("<redacted>"));
    }

    #[test]
    fn a_bad_base_url_is_a_configuration_error() {
        let p = SteelSessionProvider::new(SteelProviderConfig::oss("localhost:3000"));
        assert_eq!(
            p.rest().unwrap_err().kind(),
            ProviderErrorKind::Misconfigured
        );
    }
}
