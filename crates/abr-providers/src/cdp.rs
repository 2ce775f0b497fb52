//! [`CdpSessionProvider`]: attach to a browser someone else runs, by CDP URL.
//!
//! Egress: the contexts it creates are routed through the provider's [`EgressProxy`] on the
//! runner's loopback (`127.0.0.1:<port>`), so the attached browser must run on the same
//! machine as the runner (or at least reach its loopback); a browser elsewhere would lose its
//! network in those contexts. When the target cannot create contexts and the provider falls
//! back to the browser's default context, no proxy can be set there: that context gets the
//! weaker URL gate instead (see the `egress` module) and downloads denied over CDP.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abr_core::{
    AcquireRequest, EgressPolicy, Lease, ProviderCapabilities, ProviderError, ProviderErrorKind,
    SessionProvider,
};
use async_trait::async_trait;
use playwright_rs::protocol::{
    AcceptDownloads, Browser, BrowserContext, BrowserContextOptions, Viewport,
};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{Mutex, Semaphore};

use crate::egress::{EgressProxy, LazyProxy, deny_default_downloads};
use crate::error::from_playwright;
use crate::remote::connect_cdp;
use crate::router::install_url_gate;
use crate::session::BrowserSession;

/// Settings of the CDP provider.
#[derive(Clone)]
pub struct CdpProviderConfig {
    /// `http://host:port` (Playwright reads `/json/version`) or the browser's
    /// `ws://host:port/devtools/browser/<id>` URL. A secret: it may carry a token.
    pub endpoint: SecretString,
    /// Deadline for connecting.
    pub connect_timeout: Duration,
    /// Deadline for opening the start page.
    pub navigation_timeout: Duration,
    /// Viewport of contexts this provider creates.
    pub viewport: (u32, u32),
    /// Where the attached browser may connect (default: public addresses only). Contexts the
    /// provider creates go through an [`EgressProxy`] on the runner's loopback: the browser
    /// must run on the runner's machine. `None` turns the egress guard off: only for a
    /// browser whose network is isolated by other means.
    pub egress: Option<EgressPolicy>,
}

impl CdpProviderConfig {
    /// Attaches to `endpoint` with default deadlines.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: SecretString::from(endpoint.into()),
            connect_timeout: Duration::from_secs(15),
            navigation_timeout: Duration::from_secs(30),
            viewport: (1280, 800),
            egress: Some(EgressPolicy::new()),
        }
    }
}

impl std::fmt::Debug for CdpProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CdpProviderConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("viewport", &self.viewport)
            .finish_non_exhaustive()
    }
}

/// Attaches to a running browser over CDP and creates a new browser context per job. When
/// the target cannot create contexts, it falls back to the browser's default context, one job
/// at a time, clearing its cookies between jobs. It never closes a browser it did not launch:
/// release closes only the context it created.
///
/// Created contexts go through the provider's [`EgressProxy`] (started on the first acquire,
/// closed by [`CdpSessionProvider::shutdown`]) and deny downloads; the default context gets
/// the URL gate (see the module docs).
pub struct CdpSessionProvider {
    config: CdpProviderConfig,
    browser: Mutex<Option<Browser>>,
    default_context_only: AtomicBool,
    default_context_gate: Arc<Semaphore>,
    proxy: LazyProxy,
}

impl std::fmt::Debug for CdpSessionProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CdpSessionProvider")
            .field("config", &self.config)
            .field(
                "default_context_only",
                &self.default_context_only.load(Ordering::SeqCst),
            )
            .finish_non_exhaustive()
    }
}

impl CdpSessionProvider {
    /// A provider attaching to `config.endpoint` on first acquire.
    pub fn new(config: CdpProviderConfig) -> Self {
        Self {
            config,
            browser: Mutex::new(None),
            default_context_only: AtomicBool::new(false),
            default_context_gate: Arc::new(Semaphore::new(1)),
            proxy: LazyProxy::default(),
        }
    }

    /// The egress proxy created contexts go through, once the first acquire started it
    /// (`None` when the guard is off or after [`CdpSessionProvider::shutdown`]).
    pub async fn egress_proxy(&self) -> Option<Arc<EgressProxy>> {
        self.proxy.current().await
    }

    async fn connected(&self) -> Result<Browser, ProviderError> {
        let mut slot = self.browser.lock().await;
        if let Some(browser) = slot.as_ref().filter(|b| b.is_connected()) {
            return Ok(browser.clone());
        }
        let browser = connect_cdp(
            "cdp",
            self.config.endpoint.expose_secret(),
            self.config.connect_timeout,
        )
        .await?;
        *slot = Some(browser.clone());
        Ok(browser)
    }

    /// Disconnects (the browser keeps running) and closes the egress proxy (contexts still
    /// routed through it lose their network; both are started again on the next acquire).
    pub async fn shutdown(&self) {
        if let Some(browser) = self.browser.lock().await.take() {
            // For a browser attached over CDP, close() only disconnects.
            let _ = browser.close().await;
        }
        self.proxy.close().await;
    }
}

#[async_trait]
impl SessionProvider for CdpSessionProvider {
    type Context = BrowserSession;

    fn name(&self) -> &str {
        "cdp"
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            interactive: true,
            profiles: false,
        }
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<BrowserSession>, ProviderError> {
        if request.profile.is_some() {
            return Err(ProviderError::new(
                ProviderErrorKind::Unsupported,
                "the CDP provider opens no named profiles: they live on a local runner's disk",
            ));
        }
        let browser = self.connected().await?;
        let (width, height) = self.config.viewport;
        let mut owned = true;
        let mut permit = None;
        let mut router = None;
        let context = if self.default_context_only.load(Ordering::SeqCst) {
            None
        } else {
            let options = BrowserContextOptions::builder()
                .viewport(Viewport { width, height })
                .accept_downloads(AcceptDownloads::Deny)
                .service_workers("block".to_owned());
            let options = match &self.config.egress {
                Some(policy) => options
                    .proxy(self.proxy.get(policy).await?.0.proxy_settings())
                    .build(),
                None => options.build(),
            };
            match browser.new_context_with_options(options).await {
                Ok(context) => Some(context),
                Err(e) => {
                    tracing::warn!(error = %crate::error::redact_urls(&e.to_string()),
                        "the CDP target cannot create contexts; using its default context");
                    self.default_context_only.store(true, Ordering::SeqCst);
                    None
                }
            }
        };
        let context: BrowserContext = match context {
            Some(context) => context,
            None => {
                owned = false;
                permit = Some(
                    Arc::clone(&self.default_context_gate)
                        .acquire_owned()
                        .await
                        .map_err(|_| {
                            ProviderError::new(ProviderErrorKind::Unavailable, "closed")
                        })?,
                );
                let context = browser.contexts().into_iter().next().ok_or_else(|| {
                    ProviderError::new(
                        ProviderErrorKind::Unsupported,
                        "the CDP target has no default context and cannot create one",
                    )
                })?;
                context
                    .clear_cookies(None)
                    .await
                    .map_err(|e| from_playwright("clearing the default context", e))?;
                if let Some(policy) = &self.config.egress {
                    // No proxy can be set on the default context: the weaker URL gate.
                    deny_default_downloads(&browser).await?;
                    router = Some(install_url_gate(&context, policy).await?);
                }
                context
            }
        };
        let session = match BrowserSession::open(
            context.clone(),
            request.state.as_ref(),
            request.start_url.as_deref(),
            self.config.navigation_timeout,
        )
        .await
        {
            Ok(session) => match router {
                Some(router) => session.with_router(router),
                None => session,
            },
            Err(e) => {
                if owned {
                    let _ = context.close().await;
                } else if let Some(router) = &router {
                    let _ = router.remove(&context).await;
                }
                return Err(e);
            }
        };
        let lease = Lease::new(session, move |session: Arc<BrowserSession>| {
            Box::pin(async move {
                let result = if owned {
                    session.router().leave_net().await;
                    session.context().close().await
                } else {
                    // The default context outlives the lease: its route (the URL gate, this
                    // run's site filter and network gate) goes with it (the next acquire
                    // routes it again; handlers would pile up otherwise).
                    let _ = session.router().remove(session.context()).await;
                    session.context().clear_cookies(None).await
                };
                drop(permit);
                match result {
                    Ok(()) => Ok(()),
                    Err(_) if !browser.is_connected() => Ok(()),
                    Err(e) => Err(from_playwright("releasing the CDP context", e)),
                }
            })
        });
        Ok(lease)
    }
}
