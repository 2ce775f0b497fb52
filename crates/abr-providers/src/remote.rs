//! The remote-browser lifecycle, once for every service ([Steel](crate::SteelBackend),
//! [Kernel](crate::KernelBackend)): a [`RemoteBackend`] says how to create, attach to, show and
//! end one remote session; [`RemoteSessionProvider`] runs the lifecycle over it.
//!
//! Acquire: create → a [`Teardown`] that ends the session whatever happens (error, drop,
//! cancellation) → attach Playwright over CDP → the backend readies the browser's context →
//! the egress URL gate → the session's state and start page → a [`Lease`] whose release
//! disconnects and ends the session → the service's own viewer. Also here: REST calls with
//! typed errors, and CDP attach (shared with the [CDP provider](crate::CdpSessionProvider)).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_core::{
    AcquireRequest, EgressPolicy, Lease, ProviderCapabilities, ProviderError, ProviderErrorKind,
    ProviderViewer, SessionProvider,
};
use abr_protocol::SecretValue;
use async_trait::async_trait;
use futures::future::BoxFuture;
use playwright_rs::ConnectOverCdpOptions;
use playwright_rs::protocol::{AcceptDownloads, Browser, BrowserContext, BrowserContextOptions};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{RequestBuilder, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::driver::playwright;
use crate::egress::deny_default_downloads;
use crate::error::{from_http, from_playwright, redact_urls};
use crate::router::install_url_gate;
use crate::session::{BrowserSession, LostCheck};

/// Longest server message kept in an error.
const MAX_MESSAGE: usize = 300;

/// What the remote lifecycle needs of a backend's configuration.
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    /// Attaching over CDP, each browser call while readying the context, and disconnecting.
    pub connect_timeout: Duration,
    /// Opening the start page.
    pub navigation_timeout: Duration,
    /// Where the job's browser may go, checked by the URL gate (`None`: no gate).
    pub egress: Option<EgressPolicy>,
}

impl RemoteSettings {
    /// Settings with these deadlines and egress policy.
    pub fn new(
        connect_timeout: Duration,
        navigation_timeout: Duration,
        egress: Option<EgressPolicy>,
    ) -> Self {
        Self {
            connect_timeout,
            navigation_timeout,
            egress,
        }
    }
}

/// A session a [`RemoteBackend`] created: what the lifecycle needs to attach to it, show it
/// and end it. The URLs may carry credentials (`?jwt=`, a viewer token): they are secrets.
#[derive(Clone)]
pub struct RemoteSession {
    /// The service's id of the session.
    pub id: String,
    /// The CDP URL the service advertised (see [`RemoteBackend::cdp_url`]).
    pub cdp_url: SecretString,
    /// The service's own viewer of the session, as advertised, if it has one.
    pub viewer_url: Option<SecretString>,
}

impl std::fmt::Debug for RemoteSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSession")
            .field("id", &self.id)
            .field("viewer", &self.viewer_url.is_some())
            .finish_non_exhaustive()
    }
}

/// One remote-browser service: how to create a session, attach to it, show it, and end it.
/// [`RemoteSessionProvider`] runs the same lifecycle over every backend, so each backend only
/// says what is its own.
#[async_trait]
pub trait RemoteBackend: Send + Sync + 'static {
    /// A short name for logs and errors (`steel`, `kernel`).
    fn name(&self) -> &'static str;

    /// What the provider can do. Default: interactive (a remote browser can be shown
    /// through the runner's own live view).
    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            interactive: true,
            profiles: false,
        }
    }

    /// Deadlines of attaching and opening, and the egress policy of the URL gate.
    fn settings(&self) -> &RemoteSettings;

    /// Creates a remote session for `request`. Anything that fails after this returned is
    /// followed by [`RemoteBackend::end`].
    async fn create(&self, request: &AcquireRequest) -> Result<RemoteSession, ProviderError>;

    /// The CDP URL to attach to. Default: the advertised one, verbatim.
    fn cdp_url(&self, session: &RemoteSession) -> Result<SecretString, ProviderError> {
        Ok(session.cdp_url.clone())
    }

    /// Ends the session (delete, release). The future runs once, possibly after the lease
    /// was dropped, so it owns what it needs. A session already gone is not an error.
    fn end(&self, session: &RemoteSession) -> BoxFuture<'static, Result<(), ProviderError>>;

    /// The service's own viewer of the session. Default: the advertised viewer URL, with its
    /// own path as the only viewer path.
    fn viewer(&self, session: &RemoteSession) -> Option<ProviderViewer> {
        let url = session.viewer_url.as_ref()?.expose_secret().to_owned();
        if url.is_empty() {
            return None;
        }
        let path = url::Url::parse(&url)
            .map(|u| u.path().to_owned())
            .unwrap_or_default();
        Some(ProviderViewer {
            url: SecretValue::new(url),
            paths: vec![path],
        })
    }

    /// Readies the attached browser for the job and returns the context it runs in. Default:
    /// the browser's default context (the one the service's profiles and viewer follow), or
    /// a new one if it has none, once Playwright lists the browser's existing tabs (so the
    /// job uses the tab the viewer shows instead of opening another).
    async fn prepare(
        &self,
        session: &RemoteSession,
        attached: &mut Attached<'_>,
    ) -> Result<BrowserContext, ProviderError> {
        let _ = session;
        attached.settled_context().await
    }

    /// Whether `session` is still live on the service and still this session (not ended,
    /// expired or replaced).
    async fn is_live(&self, session: &RemoteSession) -> Result<bool, ProviderError>;

    /// Whether the service holds one session at a time, a create replacing the live one
    /// (self-hosted Steel). The provider then never creates while one of its sessions is
    /// live or still being ended, also when an acquire was cancelled. Default: false.
    fn single_session(&self) -> bool {
        false
    }
}

/// A remote browser Playwright is attached to, while a [`RemoteBackend`] readies it.
pub struct Attached<'a> {
    provider: &'static str,
    endpoint: &'a SecretString,
    browser: Browser,
    teardown: &'a mut Teardown,
    step: Duration,
}

impl std::fmt::Debug for Attached<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Attached<'_> {
    /// The attached browser.
    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    /// The deadline of one browser call while readying the context.
    pub fn step(&self) -> Duration {
        self.step
    }

    /// Disconnects and attaches again: Playwright keeps listing pages closed behind its
    /// back, a fresh connection sees only what is there.
    ///
    /// # Errors
    /// The typed error of attaching.
    pub async fn reattach(&mut self) -> Result<(), ProviderError> {
        disconnect(self.provider, &self.browser, self.step).await;
        self.browser = connect_cdp(self.provider, self.endpoint.expose_secret(), self.step).await?;
        self.teardown.set_browser(self.browser.clone());
        Ok(())
    }

    /// The default context, or a new one (downloads denied) when the browser has none, once
    /// Playwright lists the browser's existing tabs.
    async fn settled_context(&self) -> Result<BrowserContext, ProviderError> {
        let provider = self.provider;
        let browser = &self.browser;
        bounded(provider, "opening a context", self.step, async {
            let context = match browser.contexts().into_iter().next() {
                Some(context) => context,
                None => browser
                    .new_context_with_options(
                        BrowserContextOptions::builder()
                            .accept_downloads(AcceptDownloads::Deny)
                            .build(),
                    )
                    .await
                    .map_err(|e| from_playwright(&format!("{provider}: opening a context"), e))?,
            };
            let pages = default_context_pages(provider, browser).await?;
            settle_pages(&context, pages.len(), self.step).await;
            Ok(context)
        })
        .await
    }
}

/// How long the lost check waits for the service; no answer in time is "not lost".
const LOST_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`SessionProvider`] of remote browsers: one remote session, and one Playwright
/// connection to it, per lease, over any [`RemoteBackend`].
///
/// # Contract
/// - Once the backend created a session, it is ended exactly once: when the acquire fails at
///   any later step, when it is cancelled, and when its lease is released or dropped.
/// - The job runs in the context [`RemoteBackend::prepare`] returns, behind the URL gate of
///   [`RemoteSettings::egress`] (downloads denied).
/// - A lease's session is [lost](abr_core::SessionContext::is_lost) also when the service
///   says it is no longer live ([`RemoteBackend::is_live`]: ended, expired, replaced).
pub struct RemoteSessionProvider<B> {
    backend: Arc<B>,
    /// For a [single-session](RemoteBackend::single_session) service: a create holds it
    /// exclusively, each session shared until it was ended.
    sessions: Arc<RwLock<()>>,
}

impl<B: std::fmt::Debug> std::fmt::Debug for RemoteSessionProvider<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSessionProvider")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl<B: RemoteBackend> RemoteSessionProvider<B> {
    /// A provider over `backend`.
    pub fn from_backend(backend: B) -> Self {
        Self {
            backend: Arc::new(backend),
            sessions: Arc::default(),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The provider's part of a session's [lost](abr_core::SessionContext::is_lost) check:
    /// the service says `session` is no longer live. A service that does not answer within
    /// [`LOST_CHECK_TIMEOUT`] is no evidence: not lost.
    fn lost_check(&self, session: &RemoteSession) -> LostCheck {
        let backend = Arc::clone(&self.backend);
        let session = Arc::new(session.clone());
        Arc::new(move || {
            let (backend, session) = (Arc::clone(&backend), Arc::clone(&session));
            Box::pin(async move {
                let live = tokio::time::timeout(LOST_CHECK_TIMEOUT, backend.is_live(&session));
                matches!(live.await, Ok(Ok(false)))
            })
        })
    }

    /// Attaches to `session`, readies its context and opens the job's session in it.
    async fn open(
        &self,
        session: &RemoteSession,
        request: &AcquireRequest,
        teardown: &mut Teardown,
    ) -> Result<BrowserSession, ProviderError> {
        let backend = &self.backend;
        let name = backend.name();
        let settings = backend.settings();
        let (step, navigation) = (settings.connect_timeout, settings.navigation_timeout);
        let endpoint = backend.cdp_url(session)?;
        let browser = connect_cdp(name, endpoint.expose_secret(), step).await?;
        teardown.set_browser(browser.clone());
        let mut attached = Attached {
            provider: name,
            endpoint: &endpoint,
            browser,
            teardown,
            step,
        };
        let context = backend.prepare(session, &mut attached).await?;
        let browser = attached.browser;
        let router = match &settings.egress {
            Some(policy) => Some(
                bounded(name, "installing the egress gate", step, async {
                    deny_default_downloads(&browser).await?;
                    let router = install_url_gate(&context, policy).await?;
                    // The remote browser is this session's alone: its redirects too.
                    router.gate_redirects(&browser).await?;
                    Ok(router)
                })
                .await?,
            ),
            None => None,
        };
        let open = BrowserSession::open(
            context,
            request.state.as_ref(),
            request.start_url.as_deref(),
            navigation,
        );
        let opened = bounded(name, "opening the session", step + navigation, open).await?;
        let opened = opened.with_lost_check(self.lost_check(session));
        Ok(match router {
            Some(router) => opened.with_router(router),
            None => opened,
        })
    }
}

#[async_trait]
impl<B: RemoteBackend> SessionProvider for RemoteSessionProvider<B> {
    type Context = BrowserSession;

    fn name(&self) -> &str {
        self.backend.name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.backend.capabilities()
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        if request.profile.is_some() {
            return Err(ProviderError::new(
                ProviderErrorKind::Unsupported,
                "a remote provider opens no named profiles: they live on a local runner's disk",
            ));
        }
        let backend = &self.backend;
        let name = backend.name();
        // On a single-session service, no create while one of ours is live or being ended:
        // it would replace it (or race its end, which crashed the real Steel server).
        let exclusive = if backend.single_session() {
            Some(Arc::clone(&self.sessions).write_owned().await)
        } else {
            None
        };
        let session = backend.create(&request).await?;
        // From here on the remote session is ended whatever happens (also if this future is
        // dropped), and only then may the next one be created.
        let mut teardown = Teardown::new(
            name,
            backend.end(&session),
            backend.settings().connect_timeout,
        );
        teardown.hold(exclusive.map(OwnedRwLockWriteGuard::downgrade));
        let opened = match self.open(&session, &request, &mut teardown).await {
            Ok(opened) => opened,
            Err(e) => {
                if let Err(end_error) = teardown.run().await {
                    tracing::warn!(provider = name, error = %end_error,
                        "ending the remote session after a failed acquire failed");
                }
                return Err(e);
            }
        };
        let lease = Lease::new(opened, move |opened: Arc<BrowserSession>| {
            Box::pin(async move {
                opened.router().leave_net().await;
                teardown.run().await
            })
        });
        Ok(match backend.viewer(&session) {
            Some(viewer) => lease.with_provider_viewer(viewer),
            None => lease,
        })
    }
}

/// A backend's REST client (or the configuration error every acquire then reports) and its
/// lifecycle settings.
#[derive(Debug)]
pub(crate) struct Service {
    rest: Result<Rest, String>,
    settings: RemoteSettings,
}

impl Service {
    /// The client of `provider` at `base_url`, sending `auth` (header, value) on every
    /// request; attaching and opening with `settings`.
    pub(crate) fn new(
        provider: &'static str,
        base_url: &str,
        rest_timeout: Duration,
        settings: RemoteSettings,
        auth: Option<(HeaderName, SecretString)>,
    ) -> Self {
        let rest = Rest::new(provider, base_url, rest_timeout, settings.connect_timeout).and_then(
            |rest| match auth {
                Some((name, value)) => rest.with_auth(name, value.expose_secret()),
                None => Ok(rest),
            },
        );
        Self { rest, settings }
    }

    /// The REST client, or a `Misconfigured` error.
    pub(crate) fn rest(&self) -> Result<&Rest, ProviderError> {
        self.rest
            .as_ref()
            .map_err(|m| ProviderError::new(ProviderErrorKind::Misconfigured, m.clone()))
    }

    /// The lifecycle settings.
    pub(crate) fn settings(&self) -> &RemoteSettings {
        &self.settings
    }
}

/// A REST client on a provider's base URL, with the provider's credential on every request.
#[derive(Clone)]
pub(crate) struct Rest {
    client: reqwest::Client,
    base: url::Url,
    /// Provider name, for error messages.
    provider: &'static str,
    /// Header carrying the credential, sent on every request.
    auth: Option<(HeaderName, HeaderValue)>,
}

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest")
            .field("provider", &self.provider)
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

/// A REST answer: status, headers, body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as JSON of type `T`, or a typed error naming `operation`.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(
        &self,
        provider: &str,
        operation: &str,
    ) -> Result<T, ProviderError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Other,
                format!("{provider}: {operation}: unexpected response body ({e})"),
            )
        })
    }
}

impl Rest {
    /// A client for `base_url` with the given deadlines. Errors (bad URL, TLS setup) are
    /// configuration errors.
    pub(crate) fn new(
        provider: &'static str,
        base_url: &str,
        request_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Self, String> {
        let base = url::Url::parse(base_url)
            .map_err(|e| format!("{provider}: base URL is not a URL ({e})"))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(format!(
                "{provider}: base URL must be http(s)://host[:port][/prefix]"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(request_timeout)
            .connect_timeout(connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| {
                format!(
                    "{provider}: cannot build an HTTP client ({})",
                    e.without_url()
                )
            })?;
        Ok(Self {
            client,
            base,
            provider,
            auth: None,
        })
    }

    /// Sends `value` as header `name` on every request (marked sensitive: never logged).
    /// An invalid value (a key with a line break) is a configuration error.
    pub(crate) fn with_auth(mut self, name: HeaderName, value: &str) -> Result<Self, String> {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("{}: the API key is not a valid header value", self.provider))?;
        value.set_sensitive(true);
        self.auth = Some((name, value));
        Ok(self)
    }

    /// The base URL.
    pub(crate) fn base(&self) -> &url::Url {
        &self.base
    }

    /// `base` + `segments` (each percent-encoded as one path segment).
    pub(crate) fn url(&self, segments: &[&str]) -> url::Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// A request builder for `method` on `segments`, with the credential.
    pub(crate) fn request(&self, method: reqwest::Method, segments: &[&str]) -> RequestBuilder {
        let request = self.client.request(method, self.url(segments));
        match &self.auth {
            Some((name, value)) => request.header(name.clone(), value.clone()),
            None => request,
        }
    }

    /// Sends `request` and reads the whole answer; transport failures are typed, without URLs.
    pub(crate) async fn send(
        &self,
        request: RequestBuilder,
        operation: &str,
    ) -> Result<Answer, ProviderError> {
        let provider = self.provider;
        let response = request
            .send()
            .await
            .map_err(|e| from_http(&format!("{provider}: {operation}"), e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .map_err(|e| from_http(&format!("{provider}: {operation}"), e))?
            .to_vec();
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A typed error for a non-success answer.
    pub(crate) fn status_error(&self, operation: &str, answer: &Answer) -> ProviderError {
        status_error(self.provider, operation, answer)
    }
}

/// Maps an HTTP error status to a typed error: 429 → [`Busy`](ProviderErrorKind::Busy)
/// (with `Retry-After`), 401/403 → `Misconfigured`, 400/404/409/422 → `Rejected`,
/// 408/504 → `Timeout`, other 5xx → `Unavailable`. The message carries the server's own
/// message (JSON `message`/`code`/`error`), shortened and with URL query strings removed.
pub(crate) fn status_error(provider: &str, operation: &str, answer: &Answer) -> ProviderError {
    let status = answer.status;
    let kind = match status.as_u16() {
        429 => ProviderErrorKind::Busy,
        401 | 403 => ProviderErrorKind::Misconfigured,
        408 | 504 => ProviderErrorKind::Timeout,
        400 | 404 | 409 | 410 | 413 | 415 | 422 => ProviderErrorKind::Rejected,
        500..=599 => ProviderErrorKind::Unavailable,
        _ => ProviderErrorKind::Other,
    };
    let detail = server_message(&answer.body);
    let mut message = format!("{provider}: {operation}: HTTP {}", status.as_u16());
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(&detail);
    }
    if kind == ProviderErrorKind::Misconfigured {
        message.push_str(" (check the API key)");
    }
    let error = ProviderError::new(kind, message);
    match retry_after(&answer.headers) {
        Some(after)
            if kind == ProviderErrorKind::Busy || kind == ProviderErrorKind::Unavailable =>
        {
            error.with_retry_after(after)
        }
        _ => error,
    }
}

/// The server's explanation in an error body: `code` and `message` (Kernel's `ErrorModel`),
/// or `message`/`error` (Steel, Fastify); plain text otherwise.
fn server_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(obj)) => {
            let field = |k: &str| {
                obj.get(k)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
            };
            let (code, message, error) = (field("code"), field("message"), field("error"));
            match (code.is_empty(), message.is_empty()) {
                (false, false) => format!("{code}: {message}"),
                (true, false) => message.to_owned(),
                (false, true) => code.to_owned(),
                (true, true) => error.to_owned(),
            }
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    };
    let text = redact_urls(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .as_str(),
    );
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by these services).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = value.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Attaches Playwright to `endpoint` (a `ws(s)://` CDP URL, a secret), within `timeout`.
pub(crate) async fn connect_cdp(
    provider: &str,
    endpoint: &str,
    timeout: Duration,
) -> Result<Browser, ProviderError> {
    let pw = playwright().await?;
    let options = ConnectOverCdpOptions::new().timeout(timeout.as_secs_f64() * 1000.0);
    let connect = pw.chromium().connect_over_cdp(endpoint, options);
    tokio::time::timeout(timeout + Duration::from_secs(1), connect)
        .await
        .map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Timeout,
                format!("{provider}: attaching over CDP timed out after {timeout:?}"),
            )
        })?
        .map_err(|e| {
            let e = from_playwright(&format!("{provider}: attaching over CDP"), e);
            // The session exists but its browser cannot be reached: the service is at fault.
            if e.kind() == ProviderErrorKind::Other {
                ProviderError::new(ProviderErrorKind::Unavailable, e.message().to_owned())
            } else {
                e
            }
        })
}

/// A page target of a browser's default context, as CDP reports it.
#[derive(Debug, Clone)]
pub(crate) struct PageTarget {
    /// CDP target id.
    pub(crate) id: String,
    /// Current URL.
    pub(crate) url: String,
}

/// The page targets of `browser`'s default context, straight from CDP (`Target.getTargets`).
/// Playwright's own list (`context.pages()`) fills asynchronously after attaching, so it
/// cannot tell whether a page exists yet.
pub(crate) async fn default_context_pages(
    provider: &str,
    browser: &Browser,
) -> Result<Vec<PageTarget>, ProviderError> {
    let op = |what: &str| format!("{provider}: {what}");
    let cdp = browser
        .new_browser_cdp_session()
        .await
        .map_err(|e| from_playwright(&op("opening a browser CDP session"), e))?;
    let contexts = cdp
        .send("Target.getBrowserContexts", None)
        .await
        .map_err(|e| from_playwright(&op("listing browser contexts"), e))?;
    let targets = cdp
        .send("Target.getTargets", None)
        .await
        .map_err(|e| from_playwright(&op("listing targets"), e))?;
    let _ = cdp.detach().await;
    // playwright-rs wraps the CDP answer in `{"result": …}`.
    let (contexts, targets) = (unwrap_result(contexts), unwrap_result(targets));
    let str_of = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let default_id = str_of(&contexts, "defaultBrowserContextId");
    let others: Vec<String> = contexts
        .get("browserContextIds")
        .and_then(serde_json::Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let pages = targets
        .get("targetInfos")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|t| str_of(t, "type") == "page")
        .filter(|t| {
            let context = str_of(t, "browserContextId");
            if default_id.is_empty() {
                !others.contains(&context)
            } else {
                context == default_id
            }
        })
        .map(|t| PageTarget {
            id: str_of(t, "targetId"),
            url: str_of(t, "url"),
        })
        .collect();
    Ok(pages)
}

fn unwrap_result(answer: serde_json::Value) -> serde_json::Value {
    match answer {
        serde_json::Value::Object(mut obj) if obj.len() == 1 && obj.contains_key("result") => {
            obj.remove("result").unwrap_or_default()
        }
        other => other,
    }
}

/// Waits (at most `timeout`) until Playwright lists at least `count` pages in `context`, so
/// that the session uses the browser's existing tab (the one the provider's live view shows)
/// instead of opening another.
pub(crate) async fn settle_pages(context: &BrowserContext, count: usize, timeout: Duration) {
    let started = tokio::time::Instant::now();
    while context.pages().len() < count {
        if started.elapsed() >= timeout {
            tracing::debug!(
                count,
                "the browser's existing pages did not show up in time"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs `step` (a browser call during acquire) within `timeout`, typed.
pub(crate) async fn bounded<T>(
    provider: &str,
    what: &str,
    timeout: Duration,
    step: impl Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    tokio::time::timeout(timeout, step)
        .await
        .unwrap_or_else(|_| {
            Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                format!("{provider}: {what} timed out after {timeout:?}"),
            ))
        })
}

/// Ends a remote session (DELETE it, release it). Runs once, when polled.
type EndSession = BoxFuture<'static, Result<(), ProviderError>>;

/// Everything to undo for one remote session: the Playwright connection (if made) and the
/// remote session itself. [`Teardown::run`] disconnects, then ends the session; if the
/// teardown is dropped without running (the acquire was cancelled, or a lease's release
/// closure was dropped), it runs in the background on the current tokio runtime, so a remote
/// session is never left behind.
pub(crate) struct Teardown {
    provider: &'static str,
    browser: Option<Browser>,
    /// In a mutex only to be `Sync` (a lease's release closure must be): never contended.
    end: Option<Mutex<EndSession>>,
    disconnect_timeout: Duration,
    /// Let go of only once the session was ended (a single-session service's next create
    /// waits for it).
    session: Option<OwnedRwLockReadGuard<()>>,
}

impl std::fmt::Debug for Teardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Teardown({}, pending: {})",
            self.provider,
            self.end.is_some()
        )
    }
}

impl Teardown {
    /// A teardown that ends the session with `end`.
    pub(crate) fn new(
        provider: &'static str,
        end: EndSession,
        disconnect_timeout: Duration,
    ) -> Self {
        Self {
            provider,
            browser: None,
            end: Some(Mutex::new(end)),
            disconnect_timeout,
            session: None,
        }
    }

    /// Keeps `session` until the remote session was ended.
    pub(crate) fn hold(&mut self, session: Option<OwnedRwLockReadGuard<()>>) {
        self.session = session;
    }

    fn take_end(&mut self) -> Option<EndSession> {
        self.end
            .take()
            .map(|end| end.into_inner().unwrap_or_else(PoisonError::into_inner))
    }

    /// Disconnects `browser` too (instead of an earlier one, which the caller disconnected).
    pub(crate) fn set_browser(&mut self, browser: Browser) {
        self.browser = Some(browser);
    }

    /// Disconnects Playwright (bounded; a dead browser is fine), then ends the remote
    /// session. The session is ended even when disconnecting failed.
    ///
    /// The work runs in its own task: if the caller stops waiting (a timeout around the
    /// release, a cancelled acquire), the remote session is still ended.
    pub(crate) async fn run(mut self) -> Result<(), ProviderError> {
        let provider = self.provider;
        let browser = self.browser.take();
        let end = self.take_end();
        let timeout = self.disconnect_timeout;
        let session = self.session.take();
        tokio::spawn(finish(provider, browser, end, timeout, session))
            .await
            .unwrap_or_else(|e| {
                Err(ProviderError::new(
                    ProviderErrorKind::Other,
                    format!("{provider}: ending the remote session failed: {e}"),
                ))
            })
    }
}

/// Disconnects, ends the session, then lets go of `session` (the next create may go).
async fn finish(
    provider: &'static str,
    browser: Option<Browser>,
    end: Option<EndSession>,
    disconnect_timeout: Duration,
    session: Option<OwnedRwLockReadGuard<()>>,
) -> Result<(), ProviderError> {
    if let Some(browser) = browser {
        disconnect(provider, &browser, disconnect_timeout).await;
    }
    let ended = match end {
        Some(end) => end.await,
        None => Ok(()),
    };
    drop(session);
    ended
}

/// Drops Playwright's connection to `browser` (bounded; a dead browser is fine). On a browser
/// attached over CDP, `close()` only disconnects: the remote browser keeps running.
pub(crate) async fn disconnect(provider: &str, browser: &Browser, timeout: Duration) {
    match tokio::time::timeout(timeout, browser.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(
            provider,
            error = %redact_urls(&e.to_string()),
            "disconnecting from the remote browser failed (already gone?)"
        ),
        Err(_) => tracing::warn!(provider, "disconnecting from the remote browser timed out"),
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if self.end.is_none() && self.browser.is_none() {
            return;
        }
        let provider = self.provider;
        let browser = self.browser.take();
        let end = self.take_end();
        let timeout = self.disconnect_timeout;
        let session = self.session.take();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                tracing::debug!(
                    provider,
                    "remote session abandoned; ending it in the background"
                );
                handle.spawn(async move {
                    if let Err(e) = finish(provider, browser, end, timeout, session).await {
                        tracing::warn!(provider, error = %e, "ending an abandoned remote session failed");
                    }
                });
            }
            Err(_) => tracing::warn!(
                provider,
                "remote session abandoned outside a tokio runtime; it was not ended"
            ),
        }
    }
}

/// Runs `attempt` and, when it fails with a transient error (`Unavailable`, `Timeout`), once
/// more after `pause`. For ending sessions: a leaked remote browser costs money.
pub(crate) async fn with_one_retry<F, Fut>(
    pause: Duration,
    mut attempt: F,
) -> Result<(), ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    match attempt().await {
        Err(e)
            if matches!(
                e.kind(),
                ProviderErrorKind::Unavailable | ProviderErrorKind::Timeout
            ) =>
        {
            tracing::debug!(error = %e, "ending the remote session failed; retrying once");
            tokio::time::sleep(pause).await;
            attempt().await
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&'static str, &'static str)], body: &str) -> Answer {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, reqwest::header::HeaderValue::from_static(v));
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers: map,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (429, ProviderErrorKind::Busy),
            (401, ProviderErrorKind::Misconfigured),
            (403, ProviderErrorKind::Misconfigured),
            (400, ProviderErrorKind::Rejected),
            (422, ProviderErrorKind::Rejected),
            (500, ProviderErrorKind::Unavailable),
            (503, ProviderErrorKind::Unavailable),
            (504, ProviderErrorKind::Timeout),
            (418, ProviderErrorKind::Other),
        ];
        for (status, kind) in cases {
            assert_eq!(
                status_error("p", "op", &answer(status, &[], "{}")).kind(),
                kind,
                "{status}"
            );
        }
    }

    #[test]
    fn a_429_carries_retry_after_and_the_server_message() {
        let e = status_error(
            "kernel",
            "creating a browser",
            &answer(
                429,
                &[("retry-after", "2")],
                r#"{"code":"rate_limited","message":"slow down"}"#,
            ),
        );
        assert_eq!(e.kind(), ProviderErrorKind::Busy);
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        assert!(e.is_retryable());
        assert!(
            e.message().contains("rate_limited: slow down"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn server_messages_lose_query_strings_and_length() {
        let long = "x".repeat(1000);
        let body = format!(r#"{{"message":"see wss://h/cdp?jwt=secret {long}"}}"#);
        let m = server_message(body.as_bytes());
        assert!(!m.contains("secret"), "{m}");
        assert!(m.chars().count() <= MAX_MESSAGE + 1, "{}", m.len());
        assert_eq!(server_message(b"plain\n text"), "plain text");
    }

    #[test]
    fn urls_join_under_the_base_path() {
        let rest = Rest::new(
            "p",
            "http://h:1/api/",
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rest.url(&["v1", "sessions", "a/b"]).as_str(),
            "http://h:1/api/v1/sessions/a%2Fb"
        );
        assert!(
            Rest::new(
                "p",
                "ftp://h",
                Duration::from_secs(1),
                Duration::from_secs(1)
            )
            .is_err()
        );
        assert!(
            Rest::new(
                "p",
                "not a url",
                Duration::from_secs(1),
                Duration::from_secs(1)
            )
            .is_err()
        );
    }
}
