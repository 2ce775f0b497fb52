//! [`SerializedProvider`]: one lease at a time, for single-session backends (Steel OSS), with
//! an explicit policy for who waits for the session and who is refused.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::error::{ProviderError, ProviderErrorKind};
use crate::provider::{AcquireMode, AcquireRequest, Lease, ProviderCapabilities, SessionProvider};

/// `Retry-After` of a refusal while a job holds the session (jobs take seconds).
const RETRY_AFTER_JOB: Duration = Duration::from_secs(2);
/// `Retry-After` of a refusal while a capture holds the session (a person is signing in).
const RETRY_AFTER_CAPTURE: Duration = Duration::from_secs(15);

/// Wraps a backend that holds one session at a time. Whoever holds the session keeps it until
/// its lease was released: nothing this wrapper lets through ever replaces or destroys it.
///
/// # Policy
/// When the session is taken, an acquire either waits in line (first come, first served) or
/// is refused at once with [`ProviderErrorKind::Busy`] and a `Retry-After`:
///
/// | acquire | session held by a job | session held by a capture |
/// |---|---|---|
/// | unattended job | waits up to `queue_timeout` | refused at once ([`SerializedProvider::with_job_wait_behind_capture`]) |
/// | interactive capture | refused at once ([`SerializedProvider::with_capture_wait`]) | refused at once (same) |
///
/// A capture lasts as long as a person needs to sign in, so a job is not kept waiting behind
/// one, and a capture beyond the backend's one session is refused at once rather than left
/// to run into its own deadline. A capture never overtakes jobs already waiting.
///
/// The permit lives inside the lease and is given back only after the lease was released,
/// so the next job never sees the previous session.
#[derive(Debug)]
pub struct SerializedProvider<P> {
    inner: P,
    gate: Arc<Semaphore>,
    /// What the current holder acquired for (`None`: free, or being handed over).
    holder: Arc<Mutex<Option<AcquireMode>>>,
    job_wait: Duration,
    job_wait_behind_capture: Duration,
    capture_wait: Duration,
}

/// Marks the session as held by one lease; cleared before the permit is given back.
#[derive(Debug)]
struct Holding {
    holder: Arc<Mutex<Option<AcquireMode>>>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        *self.holder.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// What a lease holds until it was released: the mark first, then the permit (fields drop in
/// order), so the next holder never finds a stale mark.
#[derive(Debug)]
struct Slot {
    _holding: Holding,
    _permit: OwnedSemaphorePermit,
}

impl<P> SerializedProvider<P> {
    /// Serializes `inner` with the default policy (see the type docs); a job waits at most
    /// `queue_timeout` for the jobs ahead of it.
    pub fn new(inner: P, queue_timeout: Duration) -> Self {
        Self {
            inner,
            gate: Arc::new(Semaphore::new(1)),
            holder: Arc::new(Mutex::new(None)),
            job_wait: queue_timeout,
            job_wait_behind_capture: Duration::ZERO,
            capture_wait: Duration::ZERO,
        }
    }

    /// Lets a capture wait up to `wait` for a taken session instead of being refused at
    /// once (`Duration::ZERO`, the default).
    #[must_use]
    pub fn with_capture_wait(mut self, wait: Duration) -> Self {
        self.capture_wait = wait;
        self
    }

    /// Lets a job wait up to `wait` while a capture holds the session instead of being
    /// refused at once (`Duration::ZERO`, the default).
    #[must_use]
    pub fn with_job_wait_behind_capture(mut self, wait: Duration) -> Self {
        self.job_wait_behind_capture = wait;
        self
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn holder(&self) -> Option<AcquireMode> {
        *self.holder.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How long an acquire for `mode` may wait while `holder` holds the session.
    fn wait_for(&self, mode: AcquireMode, holder: Option<AcquireMode>) -> Duration {
        match (mode, holder) {
            (AcquireMode::Interactive, _) => self.capture_wait,
            (AcquireMode::Unattended, Some(AcquireMode::Interactive)) => {
                self.job_wait_behind_capture
            }
            (AcquireMode::Unattended, _) => self.job_wait,
        }
    }
}

impl<P: SessionProvider> SerializedProvider<P> {
    fn busy(&self, holder: Option<AcquireMode>, waited: Duration) -> ProviderError {
        let name = self.inner.name();
        let (what, after) = match holder {
            Some(AcquireMode::Interactive) => ("a capture", RETRY_AFTER_CAPTURE),
            _ => ("a job", RETRY_AFTER_JOB),
        };
        let message = if waited.is_zero() {
            format!("{name} holds one session at a time and {what} is using it")
        } else {
            format!("{name} holds one session at a time and it stayed busy for {waited:?}")
        };
        ProviderError::new(ProviderErrorKind::Busy, message).with_retry_after(after)
    }

    /// The session for `mode`: at once when free, else as the policy says.
    async fn enter(&self, mode: AcquireMode) -> Result<OwnedSemaphorePermit, ProviderError> {
        let closed = || ProviderError::new(ProviderErrorKind::Unavailable, "provider closed");
        match Arc::clone(&self.gate).try_acquire_owned() {
            Ok(permit) => return Ok(permit),
            Err(TryAcquireError::Closed) => return Err(closed()),
            Err(TryAcquireError::NoPermits) => {}
        }
        let holder = self.holder();
        let wait = self.wait_for(mode, holder);
        if wait.is_zero() {
            return Err(self.busy(holder, Duration::ZERO));
        }
        tokio::time::timeout(wait, Arc::clone(&self.gate).acquire_owned())
            .await
            .map_err(|_| self.busy(self.holder(), wait))?
            .map_err(|_| closed())
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
        self.inner.capabilities()
    }

    async fn acquire(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<Self::Context>, ProviderError> {
        let mode = request.mode;
        let permit = self.enter(mode).await?;
        *self.holder.lock().unwrap_or_else(PoisonError::into_inner) = Some(mode);
        let slot = Slot {
            _holding: Holding {
                holder: Arc::clone(&self.holder),
            },
            _permit: permit,
        };
        // On error the slot drops here and the next waiter goes.
        let lease = self.inner.acquire(request).await?;
        Ok(lease.hold(slot))
    }

    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        if self.gate.available_permits() > 0 {
            return self.inner.refuses_now(mode);
        }
        let holder = self.holder();
        self.wait_for(mode, holder)
            .is_zero()
            .then(|| self.busy(holder, Duration::ZERO))
    }

    fn pool(&self) -> Option<crate::provider::PoolStats> {
        self.inner.pool()
    }
}
