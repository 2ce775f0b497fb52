//! The chaos layer: [`ChaosProvider`] wraps any [`SessionProvider`] and injects the
//! failures providers are known for at the rates of a [`ChaosConfig`], drawn from its seed:
//! the same seed, and the same calls in the same order, inject the same faults. What it
//! injected is counted by kind ([`ChaosProvider::injected`]).
//!
//! - At the acquire: a busy or failing service, a call that times out, one that never
//!   answers (a half-open socket), one that is slow.
//! - Inside a lease, at a drawn moment within [`ChaosConfig::lease_fault_within`] of the
//!   acquire: the browser crashes, freezes for good (its connection stays open and never
//!   answers again), its page closes, or it stalls for a while (slow steps). The context
//!   injects them itself ([`FaultTarget`]): only it knows its browser.
//!
//! For soaks and tests, never production: it makes a working provider fail on purpose.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::error::store::StoreFailure;
use crate::error::{CoreError, ProviderError, ProviderErrorKind};
use crate::provider::{
    AcquireMode, AcquireRequest, Lease, PoolStats, ProviderCapabilities, SessionContext,
    SessionProvider,
};

/// A fault the layer injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// The provider is at capacity: `Busy`, with a `Retry-After` (a 429).
    Busy,
    /// The provider fails: `Unavailable` (a 500, a refused connection).
    Unavailable,
    /// The provider answers that its deadline passed: `Timeout`.
    Timeout,
    /// The provider never answers and never closes (a half-open socket): the caller's
    /// deadline must end the call.
    Hang,
    /// The provider answers late (by [`ChaosConfig::slow`]), then as it would have.
    Slow,
    /// Inside a lease: the browser process dies (its connection closes).
    Crash,
    /// Inside a lease: the browser stops answering for good, its connection left open (a
    /// half-open socket): every call's own deadline must end it, and the release must not
    /// wait for it.
    Freeze,
    /// Inside a lease: the page closes under the run.
    ClosePage,
    /// Inside a lease: the browser stalls for [`ChaosConfig::stall`], then answers again.
    SlowSteps,
}

impl Fault {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::Hang => "hang",
            Self::Slow => "slow",
            Self::Crash => "crash",
            Self::Freeze => "freeze",
            Self::ClosePage => "close_page",
            Self::SlowSteps => "slow_steps",
        }
    }

    /// Whether it is injected inside a lease (by the context) rather than at the acquire.
    pub fn in_lease(self) -> bool {
        matches!(
            self,
            Self::Crash | Self::Freeze | Self::ClosePage | Self::SlowSteps
        )
    }
}

/// A browser context that can inject an in-lease [`Fault`] into itself (a crash, a freeze,
/// a closed page, a stall). For the chaos layer only.
pub trait FaultTarget: SessionContext {
    /// Injects `fault` (`stall`: how long a [`Fault::SlowSteps`] lasts). Resolves `true`
    /// once injected, `false` when this context cannot inject it or its browser is gone
    /// already.
    fn inject(&self, fault: Fault, stall: Duration) -> BoxFuture<'static, bool>;
}

/// How often each fault is injected (each a probability from 0 to 1; the acquire's rates
/// sum to at most 1, and so do the lease's), and the seed they are drawn from.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosConfig {
    /// The seed of the draws.
    pub seed: u64,
    /// Rate of [`Fault::Busy`].
    pub busy: f64,
    /// Rate of [`Fault::Unavailable`].
    pub unavailable: f64,
    /// Rate of [`Fault::Timeout`].
    pub timeout: f64,
    /// Rate of [`Fault::Hang`].
    pub hang: f64,
    /// Rate of [`Fault::Slow`].
    pub slow_rate: f64,
    /// How late a slow answer is.
    pub slow: Duration,
    /// Rate of [`Fault::Crash`], per lease.
    pub crash: f64,
    /// Rate of [`Fault::Freeze`], per lease.
    pub freeze: f64,
    /// Rate of [`Fault::ClosePage`], per lease.
    pub close_page: f64,
    /// Rate of [`Fault::SlowSteps`], per lease.
    pub slow_steps: f64,
    /// How long a [`Fault::SlowSteps`] stall lasts.
    pub stall: Duration,
    /// An in-lease fault strikes at a moment drawn from zero to this after the acquire.
    pub lease_fault_within: Duration,
}

impl ChaosConfig {
    /// No fault at all, from `seed` (set the rates wanted).
    pub fn calm(seed: u64) -> Self {
        Self {
            seed,
            busy: 0.0,
            unavailable: 0.0,
            timeout: 0.0,
            hang: 0.0,
            slow_rate: 0.0,
            slow: Duration::from_millis(500),
            crash: 0.0,
            freeze: 0.0,
            close_page: 0.0,
            slow_steps: 0.0,
            stall: Duration::from_secs(2),
            lease_fault_within: Duration::from_secs(3),
        }
    }

    fn lease_rates(&self) -> [(Fault, f64); 4] {
        [
            (Fault::Crash, self.crash),
            (Fault::Freeze, self.freeze),
            (Fault::ClosePage, self.close_page),
            (Fault::SlowSteps, self.slow_steps),
        ]
    }

    fn rates(&self) -> [(Fault, f64); 5] {
        [
            (Fault::Busy, self.busy),
            (Fault::Unavailable, self.unavailable),
            (Fault::Timeout, self.timeout),
            (Fault::Hang, self.hang),
            (Fault::Slow, self.slow_rate),
        ]
    }
}

/// A provider that fails on purpose, around `inner`.
pub struct ChaosProvider<P> {
    inner: P,
    config: ChaosConfig,
    draws: Mutex<StdRng>,
    injected: Arc<Mutex<BTreeMap<Fault, u64>>>,
}

impl<P> std::fmt::Debug for ChaosProvider<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChaosProvider")
            .field("config", &self.config)
            .field("injected", &self.injected())
            .finish_non_exhaustive()
    }
}

impl<P> ChaosProvider<P> {
    /// `inner`, failing as `config` says.
    pub fn new(inner: P, config: ChaosConfig) -> Self {
        let draws = Mutex::new(StdRng::seed_from_u64(config.seed));
        Self {
            inner,
            config,
            draws,
            injected: Arc::default(),
        }
    }

    /// The provider it wraps.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The faults injected so far, by kind.
    pub fn injected(&self) -> BTreeMap<Fault, u64> {
        self.injected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The next draw at an acquire: a fault, or none.
    fn draw(&self) -> Option<Fault> {
        let fault = self.pick(&self.config.rates())?;
        self.count(fault);
        Some(fault)
    }

    /// The next draw for a lease: a fault and when it strikes after the acquire, or none.
    /// Counted once injected.
    fn draw_in_lease(&self) -> Option<(Fault, Duration)> {
        let fault = self.pick(&self.config.lease_rates())?;
        let within = self.config.lease_fault_within.as_secs_f64();
        let at: f64 = self
            .draws
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .random_range(0.0..=within.max(f64::MIN_POSITIVE));
        Some((fault, Duration::from_secs_f64(at)))
    }

    fn pick(&self, rates: &[(Fault, f64)]) -> Option<Fault> {
        let roll: f64 = self
            .draws
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .random();
        let mut edge = 0.0;
        rates.iter().find_map(|&(fault, rate)| {
            edge += rate;
            (roll < edge).then_some(fault)
        })
    }

    fn count(&self, fault: Fault) {
        *self
            .injected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(fault)
            .or_default() += 1;
    }
}

#[async_trait]
impl<P> SessionProvider for ChaosProvider<P>
where
    P: SessionProvider,
    P::Context: FaultTarget,
{
    type Context = P::Context;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.inner.capabilities()
    }

    async fn acquire(&self, request: AcquireRequest) -> Result<Lease<P::Context>, ProviderError> {
        let lease = self.acquire_inner(request).await?;
        if let Some((fault, at)) = self.draw_in_lease() {
            let target = lease.context_handle();
            let stall = self.config.stall;
            let injected = Arc::clone(&self.injected);
            // Detached: it strikes while the run goes on, or finds the lease over (a weak
            // hold would not do: the context is shared with the run, never dropped early).
            tokio::spawn(async move {
                tokio::time::sleep(at).await;
                if target.inject(fault, stall).await {
                    *injected
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .entry(fault)
                        .or_default() += 1;
                }
            });
        }
        Ok(lease)
    }

    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        self.inner.refuses_now(mode)
    }

    fn pool(&self) -> Option<PoolStats> {
        self.inner.pool()
    }
}

impl<P> ChaosProvider<P>
where
    P: SessionProvider,
{
    async fn acquire_inner(
        &self,
        request: AcquireRequest,
    ) -> Result<Lease<P::Context>, ProviderError> {
        match self.draw() {
            None => self.inner.acquire(request).await,
            Some(Fault::Busy) => Err(ProviderError::new(
                ProviderErrorKind::Busy,
                "chaos: the provider is at capacity",
            )
            .with_retry_after(Duration::from_secs(1))),
            Some(Fault::Unavailable) => Err(ProviderError::new(
                ProviderErrorKind::Unavailable,
                "chaos: the provider failed",
            )),
            Some(Fault::Timeout) => Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                "chaos: the provider's deadline passed",
            )),
            Some(Fault::Hang) => futures::future::pending().await,
            Some(Fault::Slow) => {
                tokio::time::sleep(self.config.slow).await;
                self.inner.acquire(request).await
            }
            // Never drawn here: the acquire's rates name no in-lease fault.
            Some(other) => Err(ProviderError::new(
                ProviderErrorKind::Unavailable,
                format!("chaos: {} is not an acquire fault", other.name()),
            )),
        }
    }
}

/// Faults around a store's calls, by operation name (`task.update`, `event.append`, ...):
/// what a wrapper that sees every call (the engine's observed store) asks before and after
/// each one.
#[async_trait]
pub trait StoreFaults: Send + Sync + 'static {
    /// Before `op` goes to the store: an error fails it unmade (a write refused, the
    /// connection down); a delay slows it (a slow commit).
    async fn before(&self, op: &'static str) -> Result<(), CoreError>;

    /// After `op` answered (`ok`): an error replaces its answer, the call having been made
    /// (a connection lost after the commit: the caller cannot tell whether it was).
    async fn after(&self, op: &'static str, ok: bool) -> Result<(), CoreError>;
}

/// A store fault [`StoreChaos`] injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StoreFault {
    /// The call fails before it is made.
    WriteFailure,
    /// The call is made, then its answer is lost.
    LostAnswer,
    /// The call is made late.
    SlowCommit,
}

/// Store faults at seeded rates (each from 0 to 1; their sum at most 1), counted by kind.
#[derive(Debug)]
pub struct StoreChaos {
    write_failure: f64,
    lost_answer: f64,
    slow_commit: f64,
    slow: Duration,
    draws: Mutex<StdRng>,
    /// The lost answers drawn at `before`, struck at `after` (one at a time per call).
    losing: Mutex<BTreeMap<&'static str, u32>>,
    injected: Mutex<BTreeMap<StoreFault, u64>>,
}

impl StoreChaos {
    /// Faults drawn from `seed` at these rates; a slow commit is `slow` late.
    pub fn new(
        seed: u64,
        write_failure: f64,
        lost_answer: f64,
        slow_commit: f64,
        slow: Duration,
    ) -> Self {
        Self {
            write_failure,
            lost_answer,
            slow_commit,
            slow,
            draws: Mutex::new(StdRng::seed_from_u64(seed)),
            losing: Mutex::default(),
            injected: Mutex::default(),
        }
    }

    /// The faults injected so far, by kind.
    pub fn injected(&self) -> BTreeMap<StoreFault, u64> {
        lock(&self.injected).clone()
    }

    fn count(&self, fault: StoreFault) {
        *lock(&self.injected).entry(fault).or_default() += 1;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn store_fault(op: &str, what: &str) -> CoreError {
    CoreError::Store(StoreFailure::unavailable(format!("chaos: {op}: {what}")))
}

#[async_trait]
impl StoreFaults for StoreChaos {
    async fn before(&self, op: &'static str) -> Result<(), CoreError> {
        let roll: f64 = lock(&self.draws).random();
        if roll < self.write_failure {
            self.count(StoreFault::WriteFailure);
            return Err(store_fault(op, "the store refused the call"));
        }
        if roll < self.write_failure + self.lost_answer {
            *lock(&self.losing).entry(op).or_default() += 1;
            return Ok(());
        }
        if roll < self.write_failure + self.lost_answer + self.slow_commit {
            self.count(StoreFault::SlowCommit);
            tokio::time::sleep(self.slow).await;
        }
        Ok(())
    }

    async fn after(&self, op: &'static str, _ok: bool) -> Result<(), CoreError> {
        let lose = {
            let mut losing = lock(&self.losing);
            match losing.get_mut(op) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        };
        if lose {
            self.count(StoreFault::LostAnswer);
            return Err(store_fault(op, "the connection was lost after the call"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(config: &ChaosConfig, n: usize) -> Vec<Option<Fault>> {
        let chaos = ChaosProvider::new((), config.clone());
        (0..n).map(|_| chaos.draw()).collect()
    }

    #[test]
    fn a_seed_reproduces_its_faults_and_the_rates_hold() {
        let config = ChaosConfig {
            busy: 0.2,
            unavailable: 0.1,
            hang: 0.05,
            ..ChaosConfig::calm(42)
        };
        let first = draws(&config, 2_000);
        assert_eq!(
            first,
            draws(&config, 2_000),
            "the same seed, the same faults"
        );
        let other = draws(&ChaosConfig { seed: 43, ..config }, 2_000);
        assert_ne!(first, other);
        let count = |fault| first.iter().filter(|f| **f == Some(fault)).count();
        assert!(
            (300..500).contains(&count(Fault::Busy)),
            "{}",
            count(Fault::Busy)
        );
        assert!((130..270).contains(&count(Fault::Unavailable)));
        assert!((50..150).contains(&count(Fault::Hang)));
        assert_eq!(count(Fault::Timeout) + count(Fault::Slow), 0);
        assert!(
            draws(&ChaosConfig::calm(7), 500)
                .iter()
                .all(Option::is_none)
        );
    }
}
