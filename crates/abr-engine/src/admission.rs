//! [`TenantAdmission`]: admission by the per-tenant limits, once for every kind of
//! execution (tasks, posts, browse sessions, probes, captures), on the counters of the
//! store; [`SessionHold`]: one of a tenant's sessions held by a value (a capture's).

use std::sync::Arc;
use std::time::Duration;

use abr_core::clock::Clock;
use abr_core::limits::{TenantLimit, TenantLimits, until_next_utc_day, utc_day};
use abr_core::store::{Counter, CounterStore};

use crate::error::EngineError;

/// How long a tenant at its concurrency limit is asked to wait (`Retry-After`).
const SESSION_RETRY_AFTER: Duration = Duration::from_secs(10);

/// Admission by the per-tenant limits, on the counters of a [`CounterStore`]: one for every
/// kind of execution (tasks, posts, browse sessions, probes, captures), so a tenant's
/// budgets count them all.
#[derive(Clone)]
pub(crate) struct TenantAdmission {
    store: Arc<dyn CounterStore>,
    limits: TenantLimits,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for TenantAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantAdmission")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl TenantAdmission {
    /// Admission by `limits` on the counters of `store`, days by `clock`.
    pub(crate) fn new(
        store: Arc<dyn CounterStore>,
        limits: TenantLimits,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            limits,
            clock,
        }
    }

    /// Takes a browser session of the tenant, held until the answer is dropped.
    ///
    /// # Errors
    /// [`EngineError::TenantLimit`], a store failure.
    pub(crate) async fn hold_session(&self, tenant: &str) -> Result<SessionHold, EngineError> {
        self.take_session(tenant).await?;
        Ok(SessionHold {
            admission: self.clone(),
            tenant: tenant.to_owned(),
        })
    }

    /// Takes a browser session of the tenant and counts an execution of the UTC day; the
    /// day it was counted on (give both back with [`Self::refund`] if the execution does
    /// not start, the session with [`Self::release_session`] when it ends).
    ///
    /// # Errors
    /// [`EngineError::TenantLimit`] (nothing is taken), a store failure.
    pub(crate) async fn admit(&self, tenant: &str) -> Result<time::Date, EngineError> {
        self.take_session(tenant).await?;
        let now = self.clock.now();
        let day = utc_day(now);
        let max = self.limits.daily_executions;
        let counted = self
            .store
            .increment(tenant, &Counter::Executions { day }, max)
            .await;
        match counted {
            Ok(true) => Ok(day),
            Ok(false) => {
                self.release_session(tenant).await;
                Err(EngineError::TenantLimit {
                    limit: TenantLimit::DailyExecutions,
                    max,
                    retry_after: Some(until_next_utc_day(now)),
                })
            }
            Err(e) => {
                self.release_session(tenant).await;
                Err(EngineError::from(e))
            }
        }
    }

    /// Takes a browser session of the tenant (a re-check: no execution is counted).
    ///
    /// # Errors
    /// [`EngineError::TenantLimit`], a store failure.
    pub(crate) async fn take_session(&self, tenant: &str) -> Result<(), EngineError> {
        let max = self.limits.concurrent_sessions;
        if self
            .store
            .increment(tenant, &Counter::Sessions, max)
            .await?
        {
            Ok(())
        } else {
            Err(EngineError::TenantLimit {
                limit: TenantLimit::ConcurrentSessions,
                max,
                retry_after: Some(SESSION_RETRY_AFTER),
            })
        }
    }

    /// Gives back a browser session of the tenant.
    pub(crate) async fn release_session(&self, tenant: &str) {
        self.uncount(tenant, &Counter::Sessions).await;
    }

    /// Gives back what [`Self::admit`] took, when the execution did not start.
    pub(crate) async fn refund(&self, tenant: &str, admitted: Option<time::Date>) {
        if let Some(day) = admitted {
            self.release_session(tenant).await;
            self.uncount(tenant, &Counter::Executions { day }).await;
        }
    }

    /// Takes one from `counter` of `tenant`, logging a failure (the counter then errs on
    /// the side of refusing).
    pub(crate) async fn uncount(&self, tenant: &str, counter: &Counter) {
        if let Err(e) = self.store.decrement(tenant, counter).await {
            tracing::warn!(error = %e, ?counter, "could not decrement a tenant counter");
        }
    }
}

/// One of a tenant's concurrent sessions, held by whatever owns it (a capture, for as long
/// as its browser is open) and given back, in the background, when it is dropped.
pub(crate) struct SessionHold {
    admission: TenantAdmission,
    tenant: String,
}

impl std::fmt::Debug for SessionHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHold")
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl Drop for SessionHold {
    fn drop(&mut self) {
        let admission = self.admission.clone();
        let tenant = std::mem::take(&mut self.tenant);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { admission.release_session(&tenant).await });
            }
            Err(_) => tracing::warn!(
                tenant,
                "a tenant session was dropped outside the runtime: not given back"
            ),
        }
    }
}
