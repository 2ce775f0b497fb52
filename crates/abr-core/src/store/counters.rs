//! [`CounterStore`]: the per-tenant counters the tenants' limits are kept with (sessions
//! held, executions of a day, retries of an execution); [`InMemoryCounters`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::error::CoreError;

/// A per-tenant counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    /// Executions started on a UTC day.
    Executions {
        /// The day.
        day: time::Date,
    },
    /// Browser sessions held now (queued and running tasks, posts, re-checks, browse
    /// sessions).
    Sessions,
    /// Retries of one execution (keyed by its first attempt's id).
    Retries {
        /// The first attempt.
        task_id: String,
    },
}

/// Where per-tenant counters live.
///
/// # Contract
/// - [`increment`](Self::increment) is atomic: of callers racing for the last unit below
///   `max`, exactly one gets it.
/// - [`decrement`](Self::decrement) never goes below zero.
/// - Counters are per tenant: one tenant's never moves another's.
/// - Every write that returned is durable (for a durable store).
#[async_trait]
pub trait CounterStore: Send + Sync + 'static {
    /// Adds one to `counter` of `tenant` if it is below `max`; whether it did.
    async fn increment(&self, tenant: &str, counter: &Counter, max: u32)
    -> Result<bool, CoreError>;

    /// Takes one from `counter` of `tenant` (not below zero).
    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError>;

    /// The value of `counter` of `tenant`.
    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError>;

    /// Sets every tenant's [`Counter::Sessions`] to zero (after a restart, no session is
    /// open).
    async fn clear_sessions(&self) -> Result<(), CoreError>;
}

/// Process-local counters (tests, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemoryCounters {
    counters: Mutex<HashMap<(String, Counter), u32>>,
}

impl InMemoryCounters {
    /// No counter counted yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, Counter), u32>> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl CounterStore for InMemoryCounters {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        let mut counters = self.lock();
        let value = counters
            .entry((tenant.to_owned(), counter.clone()))
            .or_insert(0);
        if *value >= max {
            return Ok(false);
        }
        *value += 1;
        Ok(true)
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        if let Some(value) = self.lock().get_mut(&(tenant.to_owned(), counter.clone())) {
            *value = value.saturating_sub(1);
        }
        Ok(())
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        Ok(self
            .lock()
            .get(&(tenant.to_owned(), counter.clone()))
            .copied()
            .unwrap_or(0))
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.lock()
            .retain(|(_, counter), _| *counter != Counter::Sessions);
        Ok(())
    }
}
