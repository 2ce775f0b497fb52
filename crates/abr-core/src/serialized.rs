//! [`SerializedProvider`]: one lease at a time, for single-session backends (Steel OSS).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::{
    AcquireRequest, Lease, ProviderCapabilities, ProviderError, ProviderErrorKind, SessionProvider,
};

/// Wraps a backend that holds one session at a time: concurrent acquires queue (up to
/// `queue_timeout`) instead of failing. The permit lives inside the lease and is given back
/// only after the lease was released, so the next job never sees the previous session.
#[derive(Debug)]
pub struct SerializedProvider<P> {
    inner: P,
    gate: Arc<Semaphore>,
    queue_timeout: Duration,
}

impl<P> SerializedProvider<P> {
    /// Serializes `inner`; an acquire waits at most `queue_timeout` for its turn.
    pub fn new(inner: P, queue_timeout: Duration) -> Self {
        Self {
            inner,
            gate: Arc::new(Semaphore::new(1)),
            queue_timeout,
        }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<P: SessionProvider> SessionProvider for SerializedProvider<P> {
    type Context = P::Context;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            max_concurrent: Some(1),
            ..self.inner.capabilities()
        }
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<Self::Context>, ProviderError> {
        let permit =
            tokio::time::timeout(self.queue_timeout, Arc::clone(&self.gate).acquire_owned())
                .await
                .map_err(|_| {
                    ProviderError::new(
                        ProviderErrorKind::Busy,
                        format!(
                            "{} holds one session at a time and it stayed busy for {:?}",
                            self.inner.name(),
                            self.queue_timeout
                        ),
                    )
                })?
                .map_err(|_| {
                    ProviderError::new(ProviderErrorKind::Unavailable, "provider closed")
                })?;
        // On error the permit drops here and the next waiter goes.
        let lease = self.inner.acquire(request).await?;
        Ok(lease.hold(permit))
    }
}
