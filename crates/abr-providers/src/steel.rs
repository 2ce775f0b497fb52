//! [`SteelSessionProvider`]: sessions of a Steel browser server, self-hosted
//! (`steel-dev/steel-browser`) or Steel Cloud (`api.steel.dev`), as a [`RemoteBackend`]
//! ([`SteelBackend`]) of the shared remote lifecycle.
//!
//! Wire notes (steel-browser's source, Steel's API reference, and trials of the real
//! self-hosted server v0.5.2): `POST /v1/sessions` creates a
//! session whose `websocketUrl` Playwright attaches to over CDP; `POST
//! /v1/sessions/{id}/release` ends it. The OSS server holds **one** session at a time (a
//! create while one is live silently replaces it, and racing creates and closes crash it),
//! ignores the id in `/release` and `/context` (it acts on whatever session is current),
//! advertises `0.0.0.0` in its URLs unless `DOMAIN` is set, and may carry cookies, tabs and
//! localStorage over from an earlier session. Hence on OSS the provider:
//!
//! - rewrites an unusable advertised host (`0.0.0.0`, `::`, or loopback when the base URL is
//!   not) to the configured base URL's, keeping path and query;
//! - is meant to be used through [`SteelSessionProvider::oss_serialized`], **one** instance
//!   per server for every role (jobs and captures), so that only one lease exists at a time
//!   and a capture is never replaced by a job (see [`SerializedProvider`] for who waits and
//!   who is refused);
//! - uses the browser's **default context** (`contexts()[0]`, as Steel's docs do; the live
//!   viewer and Steel's own tooling only follow that context), and makes it clean before the
//!   job sees it: cookies cleared, leftover tabs replaced by a fresh one (tabs that vanish
//!   meanwhile are fine), and the web storage of every origin the server reports in
//!   `/v1/sessions/{id}/context` cleared through CDP;
//! - before releasing, checks that the current session is still its own (`GET
//!   /v1/sessions/{id}` says `live`): a release on OSS would otherwise end whatever session
//!   is current, possibly someone else's after ours expired. The same check makes a
//!   replaced or ended session [lost](abr_core::SessionContext::is_lost), though its browser
//!   and page are still there.
//!
//! Steel's own viewer (`debugUrl`) opens its screencast socket at an **absolute**
//! `ws://HOST:PORT/v1/sessions/cast` built from the server's settings: a proxy of the page
//! does not confine where that socket goes.
//!
//! State goes in through Playwright ([`BrowserSession::open`](crate::BrowserSession::open)),
//! never through Steel's `sessionContext`, so it behaves the same on every provider.
//!
//! Egress: Steel's browser runs in Steel's network and the job uses its default context, where
//! no proxy can be set. With [`SteelProviderConfig::egress`] set (the default), the context
//! gets the URL gate (Playwright routing checks each request against the policy, resolving
//! names in the runner) and downloads denied over CDP. That gate is weaker than the local
//! providers' egress proxy: the browser resolves names in its own network, and Playwright does
//! not route redirects, WebSockets or service-worker requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abr_core::{
    AcquireRequest, EgressPolicy, ProviderError, ProviderErrorKind, ProviderViewer,
    SerializedProvider,
};
use abr_protocol::SecretValue;
use async_trait::async_trait;
use futures::future::BoxFuture;
use playwright_rs::protocol::{Browser, BrowserContext};
use reqwest::header::HeaderName;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::from_playwright;
use crate::remote::{
    self, Attached, RemoteBackend, RemoteSession, RemoteSessionProvider, RemoteSettings, Rest,
    Service,
};

const NAME: &str = "steel";
/// Steel Cloud's API.
pub const STEEL_CLOUD_URL: &str = "https://api.steel.dev";
/// Header carrying the API key.
const API_KEY_HEADER: &str = "steel-api-key";
/// Extra attempts for the provider's first create (the server may still be starting its
/// browser and hit a Chromium profile lock, seen on the real self-hosted server).
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

/// Settings of the Steel provider. `Debug` shows the API key as `[REDACTED]`.
#[derive(Debug, Clone)]
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
    /// localStorage over between sessions, even after a proper release). Default: true for
    /// OSS, false
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

/// Leases Steel sessions: one remote session, and one Playwright connection to it, per lease.
///
/// Interactive. On OSS there is one browser and a lease gets its default context (cleaned on
/// acquire, see the module docs): use [`SteelSessionProvider::oss_serialized`], once per
/// server. On Cloud each session is its own browser, with Steel's own viewer (`debugUrl`)
/// as a [`ProviderViewer`].
pub type SteelSessionProvider = RemoteSessionProvider<SteelBackend>;

impl RemoteSessionProvider<SteelBackend> {
    /// A provider with `config`. Nothing is contacted until the first acquire; a malformed
    /// base URL makes every acquire fail with [`ProviderErrorKind::Misconfigured`].
    pub fn new(config: SteelProviderConfig) -> Self {
        Self::from_backend(SteelBackend::new(config))
    }

    /// A self-hosted Steel server as a [`SerializedProvider`]: the OSS server holds one
    /// session at a time (a second create silently replaces the first), so only one lease
    /// exists at a time: jobs queue behind jobs up to `queue_timeout`, and the rest is
    /// refused at once with `Busy` (see [`SerializedProvider`]). Build **one** per server and
    /// share it between jobs and captures: two would replace each other's sessions.
    pub fn oss_serialized(
        config: SteelProviderConfig,
        queue_timeout: Duration,
    ) -> SerializedProvider<SteelSessionProvider> {
        SerializedProvider::new(Self::new(config), queue_timeout)
    }

    /// The configuration.
    pub fn config(&self) -> &SteelProviderConfig {
        &self.backend().config
    }
}

/// Steel's side of the remote lifecycle: `POST /v1/sessions`, the session's `websocketUrl`
/// (host rewritten, Cloud's key added), cleaning the shared default context, `POST
/// /v1/sessions/{id}/release` (OSS: only while the session is still ours), the debug page.
pub struct SteelBackend {
    config: SteelProviderConfig,
    service: Service,
    /// A create succeeded once: later failures are not start-up hiccups.
    warmed: AtomicBool,
}

impl std::fmt::Debug for SteelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteelBackend")
            .field("config", &self.config)
            .field("warmed", &self.warmed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl SteelBackend {
    /// A backend with `config`; a malformed base URL or key makes every acquire fail with
    /// [`ProviderErrorKind::Misconfigured`].
    pub fn new(config: SteelProviderConfig) -> Self {
        let c = &config;
        let settings =
            RemoteSettings::new(c.connect_timeout, c.navigation_timeout, c.egress.clone());
        let auth = c
            .api_key
            .clone()
            .map(|key| (HeaderName::from_static(API_KEY_HEADER), key));
        let service = Service::new(NAME, &c.base_url, c.rest_timeout, settings, auth);
        Self {
            config,
            service,
            warmed: AtomicBool::new(false),
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
    async fn create_session(&self, rest: &Rest) -> Result<SessionDetails, ProviderError> {
        let body = self.create_body();
        let retries = if self.warmed.load(Ordering::SeqCst) {
            0
        } else {
            FIRST_CREATE_RETRIES
        };
        let mut pause = FIRST_CREATE_PAUSE;
        let mut attempt = 0;
        loop {
            let request = rest.request(Method::POST, &["v1", "sessions"]).json(&body);
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

    /// The CDP URL to attach to: host rewritten if unusable, the key added for Cloud.
    fn attach_url(&self, rest: &Rest, advertised: &str) -> Result<String, ProviderError> {
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

    /// Origins the server reports holding web storage (`GET /v1/sessions/{id}/context`).
    async fn leftover_origins(&self, rest: &Rest, id: &str) -> Result<Vec<String>, ProviderError> {
        let request = rest.request(Method::GET, &["v1", "sessions", id, "context"]);
        let answer = rest.send(request, "reading the session's storage").await?;
        if answer.status == StatusCode::NOT_FOUND {
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

#[async_trait]
impl RemoteBackend for SteelBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn settings(&self) -> &RemoteSettings {
        self.service.settings()
    }

    async fn create(&self, _request: &AcquireRequest) -> Result<RemoteSession, ProviderError> {
        let details = self.create_session(self.service.rest()?).await?;
        Ok(RemoteSession {
            id: details.id,
            cdp_url: SecretString::from(details.websocket_url),
            viewer_url: (!details.debug_url.is_empty())
                .then(|| SecretString::from(details.debug_url)),
        })
    }

    fn cdp_url(&self, session: &RemoteSession) -> Result<SecretString, ProviderError> {
        self.attach_url(self.service.rest()?, session.cdp_url.expose_secret())
            .map(SecretString::from)
    }

    fn end(&self, session: &RemoteSession) -> BoxFuture<'static, Result<(), ProviderError>> {
        let rest = self.service.rest().cloned();
        let id = session.id.clone();
        let verify = self.config.flavor == SteelFlavor::Oss;
        Box::pin(async move {
            let rest = rest?;
            remote::with_one_retry(Duration::from_millis(200), || release(&rest, &id, verify)).await
        })
    }

    fn viewer(&self, session: &RemoteSession) -> Option<ProviderViewer> {
        let base = self.service.rest().ok()?.base();
        let mut url = url::Url::parse(session.viewer_url.as_ref()?.expose_secret()).ok()?;
        rewrite_host(&mut url, base, false);
        Some(ProviderViewer {
            url: SecretValue::new(String::from(url)),
            // The debug page and its screencast socket; never the REST API or the CDP
            // endpoint at the origin's root.
            paths: vec!["/v1/sessions/debug".into(), "/v1/sessions/cast".into()],
        })
    }

    /// Makes the default context clean: what an earlier session may have left (storage the
    /// server knows of, read while its tabs are still open, since a live page's storage is
    /// part of the dump; tabs; cookies) is removed.
    async fn prepare(
        &self,
        session: &RemoteSession,
        attached: &mut Attached<'_>,
    ) -> Result<BrowserContext, ProviderError> {
        let rest = self.service.rest()?;
        let step = attached.step();
        let leftover = async {
            if self.config.clear_leftover_storage {
                self.leftover_origins(rest, &session.id).await
            } else {
                Ok(Vec::new())
            }
        };
        let tabs = remote::bounded(
            NAME,
            "listing tabs",
            step,
            remote::default_context_pages(NAME, attached.browser()),
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
                replace_tabs(attached.browser(), &pages),
            )
            .await?;
            // Playwright keeps closed pages listed (and the session takes the first one):
            // attach again to see only the fresh tab.
            attached.reattach().await?;
            pages = remote::bounded(
                NAME,
                "listing tabs",
                step,
                remote::default_context_pages(NAME, attached.browser()),
            )
            .await?;
        }
        let context = default_context(attached.browser())?;
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
        Ok(context)
    }

    async fn is_live(&self, session: &RemoteSession) -> Result<bool, ProviderError> {
        let status = session_status(self.service.rest()?, &session.id).await?;
        // Without a status there is no evidence the session ended.
        Ok(status.as_deref().is_none_or(|s| s == "live"))
    }

    fn single_session(&self) -> bool {
        self.config.flavor == SteelFlavor::Oss
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

/// The status the server reports for session `id` (`live`, `released`, ...): OSS answers
/// every id, with a synthetic `released` record for one that is not current; Cloud answers
/// 404 for an unknown one. `None`: the answer said nothing about `id`'s status.
async fn session_status(rest: &Rest, id: &str) -> Result<Option<String>, ProviderError> {
    let request = rest.request(Method::GET, &["v1", "sessions", id]);
    let answer = rest.send(request, "checking the session").await?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(Some("released".to_owned()));
    }
    if !answer.status.is_success() {
        return Err(rest.status_error("checking the session", &answer));
    }
    let details: Option<SessionDetails> = serde_json::from_slice(&answer.body).ok();
    Ok(details.filter(|d| d.id == id).and_then(|d| d.status))
}

/// `POST /v1/sessions/{id}/release`. With `verify` (OSS), first asks whether `id` is still
/// the live session, and leaves the server alone when it is not: OSS would release whatever
/// session is current.
async fn release(rest: &Rest, id: &str, verify: bool) -> Result<(), ProviderError> {
    if verify {
        match session_status(rest, id).await {
            Ok(Some(status)) if status != "live" => {
                tracing::debug!(
                    status,
                    "steel: the session already ended; not releasing the current one"
                );
                return Ok(());
            }
            // Live or unknown: release, never leave ours running.
            Ok(_) | Err(_) => {}
        }
    }
    let request = rest.request(Method::POST, &["v1", "sessions", id, "release"]);
    let answer = rest.send(request, "releasing the session").await?;
    if answer.status.is_success() || answer.status == StatusCode::NOT_FOUND {
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
/// stop the job's localStorage from being seeded. A tab that closes by itself meanwhile (the
/// server or a page closed it) is fine: it is gone either way.
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
        match cdp
            .send("Target.closeTarget", Some(json!({ "targetId": page.id })))
            .await
        {
            Ok(_) => {}
            Err(e) if is_gone(&e.to_string()) => {
                tracing::debug!("steel: a leftover tab was already gone");
            }
            Err(e) => return Err(from_playwright("steel: closing a leftover tab", e)),
        }
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

/// Chromium's answer to closing a tab that no longer exists.
fn is_gone(message: &str) -> bool {
    message.contains("No target found") || message.contains("No target with given id")
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
/// `indexedDB`. Keys are origins or, for pages read live, bare hostnames (as steel-browser
/// dumps them): a hostname stands for its `http` and `https` origins.
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
        let p = SteelBackend::new(config);
        let rest = p.service.rest().unwrap().clone();
        let cdp = p
            .attach_url(&rest, "wss://connect.steel.dev?sessionId=abc")
            .unwrap();
        assert_eq!(
            cdp,
            "wss://connect.steel.dev/?sessionId=abc&apiKey=ste-key%26x"
        );
        let mut oss = SteelProviderConfig::oss("http://127.0.0.1:3000");
        oss.api_key = Some(SecretString::from("k"));
        let p = SteelBackend::new(oss);
        let rest = p.service.rest().unwrap().clone();
        assert_eq!(
            p.attach_url(&rest, "ws://0.0.0.0:3000/").unwrap(),
            "ws://127.0.0.1:3000/"
        );
        assert_eq!(
            p.attach_url(&rest, "").unwrap_err().kind(),
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
        assert!(text.contains("REDACTED"), "{text}");
        let text = format!(
            "{:?}",
            SteelSessionProvider::new(SteelProviderConfig::cloud("ste-secret"))
        );
        assert!(!text.contains("ste-secret"), "{text}");
    }

    #[test]
    fn a_bad_base_url_is_a_configuration_error() {
        let p = SteelBackend::new(SteelProviderConfig::oss("localhost:3000"));
        assert_eq!(
            p.service.rest().unwrap_err().kind(),
            ProviderErrorKind::Misconfigured
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replacing_tabs_tolerates_a_tab_that_vanished_meanwhile() {
        let chromium = abr_doubles::LocalChromium::launch(&abr_doubles::ChromiumOptions::default())
            .await
            .unwrap();
        let step = Duration::from_secs(10);
        let browser = remote::connect_cdp(NAME, &chromium.browser_ws_url(), step)
            .await
            .unwrap();
        let mut stale = remote::default_context_pages(NAME, &browser).await.unwrap();
        // Listed as a leftover, then closed by someone else before the provider got to it:
        // closing it answers "No target found for targetId".
        stale.push(remote::PageTarget {
            id: "0123456789ABCDEF0123456789ABCDEF".into(),
            url: "http://gone.test/".into(),
        });
        replace_tabs(&browser, &stale).await.unwrap();
        let left = remote::default_context_pages(NAME, &browser).await.unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].url, "about:blank");
        remote::disconnect(NAME, &browser, step).await;
        drop(chromium);
    }
}
