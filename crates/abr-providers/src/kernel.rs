//! [`KernelSessionProvider`]: a Kernel (kernel.sh) cloud browser per lease, as a
//! [`RemoteBackend`] ([`KernelBackend`]) of the shared remote lifecycle.
//!
//! Wire notes (Kernel's API reference and SDK): `POST /browsers` with
//! `Authorization: Bearer <key>` creates a browser whose `cdp_ws_url`
//! (`wss://…/browser/cdp?jwt=…`, a credential: never logged, only used verbatim) Playwright
//! attaches to; `DELETE /browsers/{session_id}` ends it (`browser.close()` would only
//! disconnect, and the browser would linger until its inactivity timeout). Errors are JSON
//! `{code, message}`; 429 carries `Retry-After`.
//!
//! Each lease is its own browser, so its default context (`contexts()[0]`, which Kernel's
//! profiles and live view follow) is already isolated; the provider falls back to a new
//! context only if the browser exposes none. Interactive leases are headful and get Kernel's
//! live view (`browser_live_view_url`) as a [`ProviderViewer`](abr_core::ProviderViewer);
//! unattended ones are headless (no live view, the cheaper image).
//!
//! Egress: Kernel's browser runs in Kernel's network, in its default context, where no proxy
//! can be set. With [`KernelProviderConfig::egress`] set (the default), the context gets the
//! URL gate (Playwright routing checks each request against the policy, resolving names in
//! the runner) and downloads denied over CDP. That gate is weaker than the local providers'
//! egress proxy: the browser resolves names in its own network, and Playwright does not route
//! redirects, WebSockets or service-worker requests.

use std::time::Duration;

use abr_core::{AcquireMode, AcquireRequest, EgressPolicy, ProviderError};
use async_trait::async_trait;
use futures::future::BoxFuture;
use reqwest::header::AUTHORIZATION;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::remote::{
    self, RemoteBackend, RemoteSession, RemoteSessionProvider, RemoteSettings, Rest, Service,
};

const NAME: &str = "kernel";
/// Kernel's API.
pub const KERNEL_API_URL: &str = "https://api.onkernel.com";

/// Settings of the Kernel provider. `Debug` shows the API key as `[REDACTED]`.
#[derive(Debug, Clone)]
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
            rest_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(20),
            navigation_timeout: Duration::from_secs(30),
            egress: Some(EgressPolicy::new()),
        }
    }
}

/// Leases Kernel browsers: one remote browser, and one Playwright connection to it, per lease.
pub type KernelSessionProvider = RemoteSessionProvider<KernelBackend>;

impl RemoteSessionProvider<KernelBackend> {
    /// A provider with `config`. Nothing is contacted until the first acquire; a malformed
    /// base URL makes every acquire fail with [`Misconfigured`](abr_core::ProviderErrorKind::Misconfigured).
    pub fn new(config: KernelProviderConfig) -> Self {
        Self::from_backend(KernelBackend::new(config))
    }

    /// The configuration.
    pub fn config(&self) -> &KernelProviderConfig {
        &self.backend().config
    }
}

/// Kernel's side of the remote lifecycle: `POST /browsers` (headless for unattended jobs),
/// the browser's `cdp_ws_url` verbatim, `DELETE /browsers/{id}`, the live view of headful
/// browsers.
#[derive(Debug)]
pub struct KernelBackend {
    config: KernelProviderConfig,
    service: Service,
}

/// The part of Kernel's browser object the provider uses.
#[derive(Deserialize)]
struct KernelBrowser {
    session_id: String,
    cdp_ws_url: String,
    #[serde(default)]
    browser_live_view_url: Option<String>,
}

impl KernelBackend {
    /// A backend with `config`; a malformed base URL or key makes every acquire fail with
    /// [`Misconfigured`](abr_core::ProviderErrorKind::Misconfigured).
    pub fn new(config: KernelProviderConfig) -> Self {
        let c = &config;
        let settings =
            RemoteSettings::new(c.connect_timeout, c.navigation_timeout, c.egress.clone());
        let bearer = format!("Bearer {}", c.api_key.expose_secret());
        let auth = Some((AUTHORIZATION, SecretString::from(bearer)));
        let service = Service::new(NAME, &c.base_url, c.rest_timeout, settings, auth);
        Self { config, service }
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
}

#[async_trait]
impl RemoteBackend for KernelBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn settings(&self) -> &RemoteSettings {
        self.service.settings()
    }

    async fn create(&self, request: &AcquireRequest) -> Result<RemoteSession, ProviderError> {
        let rest = self.service.rest()?;
        let create = rest
            .request(Method::POST, &["browsers"])
            .json(&self.create_body(request.mode));
        let answer = rest.send(create, "creating a browser").await?;
        if !answer.status.is_success() {
            return Err(rest.status_error("creating a browser", &answer));
        }
        let created: KernelBrowser = answer.json(NAME, "creating a browser")?;
        Ok(RemoteSession {
            id: created.session_id,
            cdp_url: SecretString::from(created.cdp_ws_url),
            viewer_url: created.browser_live_view_url.map(SecretString::from),
        })
    }

    fn end(&self, session: &RemoteSession) -> BoxFuture<'static, Result<(), ProviderError>> {
        let rest = self.service.rest().cloned();
        let id = session.id.clone();
        Box::pin(async move {
            let rest = rest?;
            remote::with_one_retry(Duration::from_millis(200), || delete(&rest, &id)).await
        })
    }

    async fn is_live(&self, session: &RemoteSession) -> Result<bool, ProviderError> {
        let rest = self.service.rest()?;
        let request = rest.request(Method::GET, &["browsers", &session.id]);
        let answer = rest.send(request, "checking the browser").await?;
        match answer.status {
            status if status.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(rest.status_error("checking the browser", &answer)),
        }
    }
}

/// `DELETE /browsers/{id}`; a browser already gone (404) is fine.
async fn delete(rest: &Rest, id: &str) -> Result<(), ProviderError> {
    let request = rest
        .request(Method::DELETE, &["browsers", id])
        .header(reqwest::header::ACCEPT, "*/*");
    let answer = rest.send(request, "deleting the browser").await?;
    if answer.status.is_success() || answer.status == StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(rest.status_error("deleting the browser", &answer))
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
        let p = KernelBackend::new(config);
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
        let text = format!(
            "{:?}",
            KernelSessionProvider::new(KernelProviderConfig::new("sk_live_secret"))
        );
        assert!(!text.contains("sk_live_secret"), "{text}");
    }
}
