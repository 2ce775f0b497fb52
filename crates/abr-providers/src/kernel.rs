//! [`KernelSessionProvider`]: a Kernel (kernel.sh) cloud browser per lease.
//!
//! Wire notes (shared/reference/providers.md §4, §7): `POST /browsers` with
//! `Authorization: Bearer <key>` creates a browser whose `cdp_ws_url`
//! (`wss://…/browser/cdp?jwt=…`, a credential: never logged, only used verbatim) Playwright
//! attaches to; `DELETE /browsers/{session_id}` ends it (`browser.close()` would only
//! disconnect, and the browser would linger until its inactivity timeout). Errors are JSON
//! `{code, message}`; 429 carries `Retry-After`.
//!
//! Each lease is its own browser, so its default context (`contexts()[0]`, which Kernel's
//! profiles and live view follow) is already isolated; the provider falls back to a new
//! context only if the browser exposes none. Interactive leases are headful and get Kernel's
//! live view (`browser_live_view_url`) as [`LiveView::Remote`]; unattended ones are headless
//! (no live view, the cheaper image).
//!
//! Egress: Kernel's browser runs in Kernel's network, in its default context, where no proxy
//! can be set. With [`KernelProviderConfig::egress`] set (the default), the context gets the
//! URL gate (Playwright routing checks each request against the policy, resolving names in
//! the runner) and downloads denied over CDP. That gate is weaker than the local providers'
//! egress proxy: the browser resolves names in its own network, and Playwright does not route
//! redirects, WebSockets or service-worker requests.

use std::sync::Arc;
use std::time::Duration;

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, Lease, ProviderCapabilities, ProviderError,
    ProviderErrorKind, ProviderViewer, SessionProvider,
};
use abr_protocol::SecretValue;
use async_trait::async_trait;
use playwright_rs::protocol::{Browser, BrowserContext};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::egress::{deny_default_downloads, install_url_gate};
use crate::error::from_playwright;
use crate::remote::{self, EndSession, Rest, Teardown};
use crate::session::BrowserSession;

const NAME: &str = "kernel";
/// Kernel's API.
pub const KERNEL_API_URL: &str = "https://api.onkernel.com";

/// Settings of the Kernel provider.
#[derive(Clone)]
pub struct KernelProviderConfig {
    /// REST base ([`KERNEL_API_URL`], or `KERNEL_BASE_URL`).
    pub base_url: String,
    /// API key, sent as `Authorization: Bearer <key>`.
    pub api_key: SecretString,
    /// `timeout_seconds` of created browsers: how long Kernel keeps a browser nobody is
    /// connected to (10..=259200; Kernel's default 60).
    pub timeout_seconds: u32,
    /// `viewport` of created browsers (Kernel's default 1920×1080).
    pub viewport: Option<(u32, u32)>,
    /// At most this many leases at once (your plan's concurrency), reported in the
    /// capabilities; Kernel itself answers 429 beyond it.
    pub max_concurrent: Option<usize>,
    /// Deadline of each REST call.
    pub rest_timeout: Duration,
    /// Deadline for attaching over CDP (and for disconnecting).
    pub connect_timeout: Duration,
    /// Deadline for opening the start page.
    pub navigation_timeout: Duration,
    /// Where the job's browser may go, checked by the URL gate (see the module docs; weaker
    /// than the local egress proxy). Default: public addresses only. `None` turns it off.
    pub egress: Option<EgressPolicy>,
}

impl KernelProviderConfig {
    /// Kernel's API with `api_key` and default settings.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            base_url: KERNEL_API_URL.to_owned(),
            api_key: SecretString::from(api_key.into()),
            timeout_seconds: 60,
            viewport: None,
            max_concurrent: None,
            rest_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(20),
            navigation_timeout: Duration::from_secs(30),
            egress: Some(EgressPolicy::new()),
        }
    }
}

impl std::fmt::Debug for KernelProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("timeout_seconds", &self.timeout_seconds)
            .field("viewport", &self.viewport)
            .field("max_concurrent", &self.max_concurrent)
            .field("rest_timeout", &self.rest_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("navigation_timeout", &self.navigation_timeout)
            .field("egress", &self.egress)
            .finish()
    }
}

/// Leases Kernel browsers: one remote browser, and one Playwright connection to it, per lease.
pub struct KernelSessionProvider {
    config: KernelProviderConfig,
    rest: Result<Rest, String>,
}

impl std::fmt::Debug for KernelSessionProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelSessionProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The part of Kernel's browser object the provider uses.
#[derive(Deserialize)]
struct KernelBrowser {
    session_id: String,
    cdp_ws_url: String,
    #[serde(default)]
    browser_live_view_url: Option<String>,
}

impl KernelSessionProvider {
    /// A provider with `config`. Nothing is contacted until the first acquire; a malformed
    /// base URL makes every acquire fail with [`ProviderErrorKind::Misconfigured`].
    pub fn new(config: KernelProviderConfig) -> Self {
        let rest = Rest::new(
            NAME,
            &config.base_url,
            config.rest_timeout,
            config.connect_timeout,
        );
        Self { config, rest }
    }

    /// The configuration.
    pub fn config(&self) -> &KernelProviderConfig {
        &self.config
    }

    fn rest(&self) -> Result<&Rest, ProviderError> {
        self.rest
            .as_ref()
            .map_err(|m| ProviderError::new(ProviderErrorKind::Misconfigured, m.clone()))
    }

    fn create_body(&self, mode: AcquireMode) -> Value {
        let mut body = Map::new();
        body.insert("headless".into(), json!(mode == AcquireMode::Unattended));
        body.insert("timeout_seconds".into(), json!(self.config.timeout_seconds));
        if let Some((width, height)) = self.config.viewport {
            body.insert(
                "viewport".into(),
                json!({ "width": width, "height": height }),
            );
        }
        Value::Object(body)
    }

    async fn create(&self, rest: &Rest, mode: AcquireMode) -> Result<KernelBrowser, ProviderError> {
        let request = rest
            .request(Method::POST, &["browsers"])
            .bearer_auth(self.config.api_key.expose_secret())
            .json(&self.create_body(mode));
        let answer = rest.send(request, "creating a browser").await?;
        if !answer.status.is_success() {
            return Err(rest.status_error("creating a browser", &answer));
        }
        answer.json(NAME, "creating a browser")
    }

    fn end_session(&self, rest: &Rest, id: &str) -> EndSession {
        let rest = rest.clone();
        let id = id.to_owned();
        let key = self.config.api_key.clone();
        Box::new(move || {
            Box::pin(async move {
                remote::with_one_retry(Duration::from_millis(200), || delete(&rest, &id, &key))
                    .await
            })
        })
    }

    async fn open(
        &self,
        created: &KernelBrowser,
        request: &AcquireRequest,
        teardown: &mut Teardown,
    ) -> Result<BrowserSession, ProviderError> {
        let step = self.config.connect_timeout;
        let browser = remote::connect_cdp(NAME, &created.cdp_ws_url, step).await?;
        teardown.set_browser(browser.clone());
        let context = remote::bounded(NAME, "opening a context", step, async {
            let context = context_of(&browser).await?;
            // Use the browser's own first tab (the one the live view shows) once Playwright
            // has caught up with it, rather than opening a second one.
            let pages = remote::default_context_pages(NAME, &browser).await?;
            remote::settle_pages(&context, pages.len(), step).await;
            if let Some(policy) = &self.config.egress {
                deny_default_downloads(&browser).await?;
                install_url_gate(&context, policy).await?;
            }
            Ok(context)
        })
        .await?;
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
}

/// `DELETE /browsers/{id}`; a browser already gone (404) is fine.
async fn delete(rest: &Rest, id: &str, key: &SecretString) -> Result<(), ProviderError> {
    let request = rest
        .request(Method::DELETE, &["browsers", id])
        .bearer_auth(key.expose_secret())
        .header(reqwest::header::ACCEPT, "*/*");
    let answer = rest.send(request, "deleting the browser").await?;
    if answer.status.is_success() || answer.status == StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(rest.status_error("deleting the browser", &answer))
    }
}

/// The browser's default context, or a new one if it has none.
async fn context_of(browser: &Browser) -> Result<BrowserContext, ProviderError> {
    match browser.contexts().into_iter().next() {
        Some(context) => Ok(context),
        None => browser
            .new_context_with_options(
                playwright_rs::protocol::BrowserContextOptions::builder()
                    .accept_downloads(playwright_rs::protocol::AcceptDownloads::Deny)
                    .build(),
            )
            .await
            .map_err(|e| from_playwright("kernel: opening a context", e)),
    }
}

#[async_trait]
impl SessionProvider for KernelSessionProvider {
    type Context = BrowserSession;

    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            interactive: true,
            remote_live_view: true,
            // A browser per lease.
            isolated_contexts: true,
            max_concurrent: self.config.max_concurrent,
        }
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        let rest = self.rest()?;
        let created = self.create(rest, request.mode).await?;
        // From here on the browser is deleted whatever happens (also if this future is
        // dropped).
        let mut teardown = Teardown::new(
            NAME,
            self.end_session(rest, &created.session_id),
            self.config.connect_timeout,
        );
        let session = match self.open(&created, &request, &mut teardown).await {
            Ok(session) => session,
            Err(e) => {
                if let Err(release_error) = teardown.run().await {
                    tracing::warn!(error = %release_error, "kernel: deleting after a failed acquire failed");
                }
                return Err(e);
            }
        };
        let lease = Lease::new(session, move |_session: Arc<BrowserSession>| {
            Box::pin(teardown.run())
        });
        Ok(
            match created.browser_live_view_url.filter(|u| !u.is_empty()) {
                Some(url) => {
                    // Kernel's viewer is one page at its own path (`/browser/live/<token>`).
                    let path = url::Url::parse(&url)
                        .map(|u| u.path().to_owned())
                        .unwrap_or_default();
                    lease.with_provider_viewer(ProviderViewer {
                        url: SecretValue::new(url),
                        paths: vec![path],
                    })
                }
                None => lease,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unattended_browsers_are_headless_with_the_configured_timeout() {
        let mut config = KernelProviderConfig::new("sk");
        config.timeout_seconds = 120;
        config.viewport = Some((1280, 800));
        let p = KernelSessionProvider::new(config);
        assert_eq!(
            p.create_body(AcquireMode::Unattended),
            json!({"headless": true, "timeout_seconds": 120, "viewport": {"width": 1280, "height": 800}})
        );
        assert_eq!(
            p.create_body(AcquireMode::Interactive)["headless"],
            json!(false)
        );
        assert!(
            p.create_body(AcquireMode::Interactive)
                .get("start_url")
                .is_none()
        );
    }

    #[test]
    fn the_config_debug_hides_the_key() {
        let text = format!("{:?}", KernelProviderConfig::new("sk_live_secret"));
        assert!(!text.contains("sk_live_secret"), "{text}");
    }
}
