//! [`TimedProvider`]: a provider whose acquires are timed for `abr_acquire_duration_seconds`
//! (the browser's start apart from the run's). Everything else goes to the inner provider
//! as it came.

use std::sync::Arc;
use std::time::Instant;

use abr_core::error::ProviderError;
use abr_core::provider::{
    AcquireMode, AcquireRequest, DynSessionProvider, Lease, PoolStats, ProviderCapabilities,
    SessionContext, SessionProvider,
};
use async_trait::async_trait;

use crate::metrics::Metrics;

/// `inner`, its acquires timed into `metrics`.
pub(crate) struct TimedProvider<C> {
    inner: DynSessionProvider<C>,
    metrics: Arc<Metrics>,
}

impl<C: SessionContext> TimedProvider<C> {
    /// `inner` timed into `metrics`, as a provider of the same kind.
    pub(crate) fn wrap(
        inner: DynSessionProvider<C>,
        metrics: Arc<Metrics>,
    ) -> DynSessionProvider<C> {
        Arc::new(Self { inner, metrics })
    }
}

#[async_trait]
impl<C: SessionContext> SessionProvider for TimedProvider<C> {
    type Context = C;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.inner.capabilities()
    }

    async fn acquire(&self, request: AcquireRequest) -> Result<Lease<C>, ProviderError> {
        let mode = request.mode;
        let started = Instant::now();
        let acquired = self.inner.acquire(request).await;
        self.metrics
            .acquired(mode, started.elapsed(), acquired.is_ok());
        acquired
    }

    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        self.inner.refuses_now(mode)
    }

    fn pool(&self) -> Option<PoolStats> {
        self.inner.pool()
    }
}
