//! The [`SessionProvider`] contract: turn a stored session into a live, isolated browser
//! context, and take it away again.

use std::any::Any;
use std::sync::Arc;

use abr_protocol::{AgentSessionState, Cookie, SecretValue};
use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::ProviderError;

/// What a provider can do. The core checks these before dispatching, and the conformance
/// suite registers its tests from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderCapabilities {
    /// Can open a browser a person can use (headful, or with a viewer): capture needs it.
    pub interactive: bool,
    /// Can open a named on-disk profile ([`AcquireRequest::profile`]) that keeps its state
    /// between leases.
    pub profiles: bool,
}

/// What a provider holds open now, for an operator's gauges ([`SessionProvider::pool`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Browser processes it keeps running (shared by its contexts).
    pub browsers: usize,
    /// Contexts leased to jobs now.
    pub contexts_in_use: usize,
    /// Contexts kept ready for the next job (the warm pool).
    pub contexts_warm: usize,
}

/// Why a context is acquired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AcquireMode {
    /// A person will sign in through a live view.
    Interactive,
    /// An unattended job with a stored session.
    Unattended,
}

/// What to acquire.
#[derive(Debug, Clone)]
pub struct AcquireRequest {
    /// Interactive or unattended.
    pub mode: AcquireMode,
    /// Platform (strategy id) the context is for; for labels and logs.
    pub platform: String,
    /// Session to inject, already scoped by the core. `None`: an empty context.
    pub state: Option<AgentSessionState>,
    /// Page the provider opens before handing out the context (capture opens the platform's
    /// sign-in page). `None`: a blank page; unattended jobs navigate themselves.
    pub start_url: Option<String>,
    /// A named profile's folder, relative to the provider's profile folder (from
    /// [`profile_folder`](crate::guard::profile_folder)): the context opens on it and keeps
    /// what the run leaves there. A provider without
    /// [`profiles`](ProviderCapabilities::profiles) refuses it (`Unsupported`); `None`: a
    /// fresh context.
    pub profile: Option<String>,
}

/// A provider's own viewer of a leased browser (Steel's debug page, Kernel's live view).
///
/// The runner serves its own view of every browser from the [`LiveSurface`](crate::live::LiveSurface);
/// an operator may opt in to proxying the provider's viewer instead, and then only `paths`
/// are reachable through the proxy: never the provider's REST API or a CDP endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderViewer {
    /// The viewer page's URL. It may carry credentials, so it is a secret: the runner proxies
    /// it and never hands it out.
    pub url: SecretValue,
    /// The viewer's own paths on the URL's origin: exact paths, or prefixes ending in `/`
    /// (the page, its assets, its socket).
    pub paths: Vec<String>,
}

impl std::fmt::Debug for ProviderViewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderViewer")
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

/// A live browser context, as the core sees it.
///
/// Strategies get the concrete type (with the full browser API); the core only needs to
/// export the state.
#[async_trait]
pub trait SessionContext: Send + Sync + 'static {
    /// The context's current cookies and localStorage, as Playwright's `storageState()`.
    async fn export_state(&self) -> Result<AgentSessionState, ProviderError>;

    /// The context's current cookies: exactly [`Self::export_state`]'s, without the
    /// localStorage. For a check that needs only cookies (is the session still signed in?):
    /// a browser answers it in one call, where an export may load every origin's storage.
    /// Default: the export's cookies.
    async fn cookies(&self) -> Result<Vec<Cookie>, ProviderError> {
        Ok(self.export_state().await?.cookies)
    }

    /// Whether the browser behind this context is gone for good: its page closed or
    /// crashed, the browser disconnected, or a remote session was replaced or ended. A
    /// capture whose browser was lost can never finish. Must answer quickly without
    /// changing anything. Default: never lost.
    async fn is_lost(&self) -> bool {
        false
    }
}

/// Releases a leased context: closes it, deletes the remote session. Must be idempotent
/// with respect to already-dead browsers (report, don't hang).
pub type ReleaseFn<C> =
    Box<dyn FnOnce(Arc<C>) -> BoxFuture<'static, Result<(), ProviderError>> + Send + Sync>;

/// A leased browser context. Release it with [`Lease::release`].
///
/// # Contract
/// A lease is always released exactly once. If it is dropped without an explicit release
/// (cancellation, a panic unwinding through the job), `Drop` spawns the release on the
/// current tokio runtime. Guards added with [`Lease::hold`] (e.g. the permit of a
/// [`SerializedProvider`](crate::serialized::SerializedProvider)) are dropped only after the release
/// finished, so the next job never starts on a browser still being cleaned up.
pub struct Lease<C: Send + Sync + 'static> {
    context: Arc<C>,
    viewer: Option<ProviderViewer>,
    release: Option<ReleaseFn<C>>,
    guards: Vec<Box<dyn Any + Send + Sync>>,
}

impl<C: Send + Sync + 'static> Lease<C> {
    /// A lease on `context`, released by `release`.
    pub fn new<F>(context: C, release: F) -> Self
    where
        F: FnOnce(Arc<C>) -> BoxFuture<'static, Result<(), ProviderError>> + Send + Sync + 'static,
    {
        Self {
            context: Arc::new(context),
            viewer: None,
            release: Some(Box::new(release)),
            guards: Vec::new(),
        }
    }

    /// Sets the provider's own viewer.
    #[must_use]
    pub fn with_provider_viewer(mut self, viewer: ProviderViewer) -> Self {
        self.viewer = Some(viewer);
        self
    }

    /// Keeps `guard` alive until the lease has been released.
    #[must_use]
    pub fn hold(mut self, guard: impl Any + Send + Sync) -> Self {
        self.guards.push(Box::new(guard));
        self
    }

    /// The browser context.
    pub fn context(&self) -> &C {
        &self.context
    }

    /// A shared handle on the browser context (for a live view that outlives one call).
    pub fn context_handle(&self) -> Arc<C> {
        Arc::clone(&self.context)
    }

    /// The provider's own viewer of this browser, if it has one.
    pub fn provider_viewer(&self) -> Option<&ProviderViewer> {
        self.viewer.as_ref()
    }

    /// Releases the browser context, then the guards.
    pub async fn release(mut self) -> Result<(), ProviderError> {
        let result = match self.release.take() {
            Some(release) => release(Arc::clone(&self.context)).await,
            None => Ok(()),
        };
        self.guards.clear();
        result
    }
}

impl<C: Send + Sync + 'static> Drop for Lease<C> {
    fn drop(&mut self) {
        let Some(release) = self.release.take() else {
            return;
        };
        let context = Arc::clone(&self.context);
        let guards = std::mem::take(&mut self.guards);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                tracing::debug!("lease dropped without release; releasing in the background");
                handle.spawn(async move {
                    if let Err(e) = release(context).await {
                        tracing::warn!(error = %e, "background lease release failed");
                    }
                    drop(guards);
                });
            }
            Err(_) => {
                tracing::warn!("lease dropped outside a tokio runtime; it could not be released");
            }
        }
    }
}

impl<C: Send + Sync + 'static> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("released", &self.release.is_none())
            .field("provider_viewer", &self.viewer.is_some())
            .field("guards", &self.guards.len())
            .finish_non_exhaustive()
    }
}

/// Turns a stored session into a live, isolated browser context.
///
/// # Contract
/// - `acquire` returns a context that shares no cookies or storage with any other lease
///   (a single-session backend clears what an earlier lease left), holding exactly the
///   state given (already scoped by the core), with localStorage present before the first
///   page script runs.
/// - It fails with a typed [`ProviderError`] within its own deadline; it never panics on a
///   dead endpoint.
/// - Whatever it acquired is released by the returned [`Lease`], also when dropped.
///
/// # Wrappers
/// Wrappers ([`SerializedProvider`](crate::serialized::SerializedProvider)) own their inner provider and
/// forward every method.
#[async_trait]
pub trait SessionProvider: Send + Sync + 'static {
    /// The browser context strategies drive (e.g. a Playwright context and page).
    type Context: SessionContext;

    /// A short name for logs and errors (`local`, `steel`, ...).
    fn name(&self) -> &str;

    /// What this provider can do.
    fn capabilities(&self) -> ProviderCapabilities;

    /// Acquires an isolated browser context.
    async fn acquire(&self, request: AcquireRequest)
    -> Result<Lease<Self::Context>, ProviderError>;

    /// The refusal an acquire for `mode` would answer at once right now, if any: a hint
    /// that lets a caller answer before it queues for its own resources (a job slot). Never
    /// a promise either way: [`Self::acquire`] decides. `None` by default.
    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        let _ = mode;
        None
    }

    /// What it holds open now, when it can tell at once (never waits; `None` when it
    /// cannot, or not now: a remote provider's browsers are its leases, which the job
    /// gauges count). `None` by default.
    fn pool(&self) -> Option<PoolStats> {
        None
    }
}

#[async_trait]
impl<P: SessionProvider + ?Sized> SessionProvider for Arc<P> {
    type Context = P::Context;

    fn name(&self) -> &str {
        (**self).name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        (**self).capabilities()
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<Self::Context>, ProviderError> {
        (**self).acquire(request).await
    }

    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        (**self).refuses_now(mode)
    }

    fn pool(&self) -> Option<PoolStats> {
        (**self).pool()
    }
}

/// A provider chosen at run time.
pub type DynSessionProvider<C> = Arc<dyn SessionProvider<Context = C>>;
