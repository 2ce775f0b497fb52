//! The chaos layer: [`ChaosProvider`] wraps any [`SessionProvider`] and injects the
//! failures providers are known for (a busy or failing service, a call that times out, one
//! that never answers, one that is slow) at the rates of a [`ChaosConfig`], drawn from its
//! seed: the same seed, and the same calls in the same order, inject the same faults. What
//! it injected is counted by kind ([`ChaosProvider::injected`]).
//!
//! For soaks and tests, never production: it makes a working provider fail on purpose.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::error::{ProviderError, ProviderErrorKind};
use crate::provider::{
    AcquireMode, AcquireRequest, Lease, PoolStats, ProviderCapabilities, SessionProvider,
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
        }
    }
}

/// How often each fault is injected into an acquire (each a probability from 0 to 1; their
/// sum at most 1), and the seed they are drawn from.
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
        }
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
    injected: Mutex<BTreeMap<Fault, u64>>,
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
            injected: Mutex::default(),
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

    /// The next draw: a fault, or none.
    fn draw(&self) -> Option<Fault> {
        let roll: f64 = self
            .draws
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .random();
        let mut edge = 0.0;
        let fault = self.config.rates().into_iter().find_map(|(fault, rate)| {
            edge += rate;
            (roll < edge).then_some(fault)
        })?;
        *self
            .injected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(fault)
            .or_default() += 1;
        Some(fault)
    }
}

#[async_trait]
impl<P: SessionProvider> SessionProvider for ChaosProvider<P> {
    type Context = P::Context;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.inner.capabilities()
    }

    async fn acquire(&self, request: AcquireRequest) -> Result<Lease<P::Context>, ProviderError> {
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
        }
    }

    fn refuses_now(&self, mode: AcquireMode) -> Option<ProviderError> {
        self.inner.refuses_now(mode)
    }

    fn pool(&self) -> Option<PoolStats> {
        self.inner.pool()
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
