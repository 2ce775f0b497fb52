//! [`DeadlineBudget`]: every deadline of a request, derived from one value.
//!
//! A runner has one request deadline. Everything a request may spend time on is a share of
//! it, computed once when the runner is built and handed to the core, the capture manager
//! and the providers, so that no two places disagree:
//!
//! - waiting for a job slot in the runner's queue (`queue_wait`): a job that never got a
//!   slot is a retryable `queue_timeout`, never "outcome unknown";
//! - waiting in a single-session provider's own queue (`provider_queue`), shorter than the
//!   acquire step, so that `provider_busy` (with `Retry-After`) reaches the caller instead
//!   of a timeout;
//! - the pacing delay and the steps of a post ([`StepTimeouts`]);
//! - the steps of a capture (acquire, and sign-in check / export / release).
//!
//! [`DeadlineBudget::check`] holds the invariants: queue wait, pacing and every step of a
//! post fit inside the request, and the provider's queue inside the acquire step.

use std::time::Duration;

use crate::clock::RandomSource;

/// Every deadline of a request, as shares of one request deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineBudget {
    /// The whole request.
    pub request: Duration,
    /// Longest wait for a job slot in the runner's queue.
    pub queue_wait: Duration,
    /// Longest wait in a single-session provider's own queue; shorter than `steps.acquire`.
    pub provider_queue: Duration,
    /// Longest pacing delay before a post acts.
    pub pacing_max: Duration,
    /// The steps of a post (and of a probe: acquire, sign-in check, export, release).
    pub steps: StepTimeouts,
    /// Acquiring a capture's interactive browser.
    pub capture_acquire: Duration,
    /// Each step of finishing a capture (sign-in check, export, release).
    pub capture_step: Duration,
}

/// A budget whose parts do not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the deadlines do not fit: {0}")]
pub struct BudgetError(pub String);

impl DeadlineBudget {
    /// The budget of a runner whose requests have `request` to finish, with pacing delays
    /// up to `pacing_max`: the queue wait gets a tenth, each step a share, each capped
    /// where a longer wait is never useful (30 s to acquire, 90 s to post, 10 s to export
    /// or release).
    ///
    /// # Errors
    /// When the request deadline is too short for the pacing delay and the steps (under
    /// 2 s, or pacing taking more than a quarter of it).
    pub fn from_request_timeout(
        request: Duration,
        pacing_max: Duration,
    ) -> Result<Self, BudgetError> {
        if request < Duration::from_secs(2) {
            return Err(BudgetError(format!(
                "a request deadline of {request:?} leaves no time for a browser"
            )));
        }
        if pacing_max > request / 4 {
            return Err(BudgetError(format!(
                "pacing up to {pacing_max:?} takes more than a quarter of the request \
                 deadline ({request:?})"
            )));
        }
        let rest = request - pacing_max;
        let share = |num: u32, den: u32, cap: u64| (rest * num / den).min(Duration::from_secs(cap));
        let acquire = share(1, 8, 30);
        let budget = Self {
            request,
            queue_wait: share(1, 10, 30),
            provider_queue: acquire * 3 / 4,
            pacing_max,
            steps: StepTimeouts {
                acquire,
                precheck: share(1, 8, 30),
                post: share(3, 8, 90),
                verify: share(1, 8, 30),
                export: share(1, 24, 10),
                release: share(1, 24, 10),
            },
            capture_acquire: acquire,
            capture_step: share(1, 8, 30),
        };
        budget.check()?;
        Ok(budget)
    }

    /// The longest a post may take once it has a job slot: pacing and every step.
    pub fn post_span(&self) -> Duration {
        let s = &self.steps;
        self.pacing_max + s.acquire + s.precheck + s.post + s.verify + s.export + s.release
    }

    /// Checks the invariants.
    ///
    /// # Errors
    /// The first one that does not hold.
    pub fn check(&self) -> Result<(), BudgetError> {
        if self.provider_queue >= self.steps.acquire {
            return Err(BudgetError(format!(
                "the provider's queue ({:?}) must be shorter than the acquire step ({:?}), \
                 or `provider_busy` never reaches the caller",
                self.provider_queue, self.steps.acquire
            )));
        }
        let total = self.queue_wait + self.post_span();
        if total > self.request {
            return Err(BudgetError(format!(
                "queue wait, pacing and the steps of a post take {total:?}, more than the \
                 request deadline ({:?})",
                self.request
            )));
        }
        let capture = self.queue_wait + self.capture_acquire;
        let finish = self.capture_step * 3;
        if capture > self.request || finish > self.request {
            return Err(BudgetError(format!(
                "a capture's steps ({capture:?} to start, {finish:?} to finish) do not fit in \
                 the request deadline ({:?})",
                self.request
            )));
        }
        Ok(())
    }
}

impl Default for DeadlineBudget {
    /// The budget of the default request deadline (240 s) without pacing.
    fn default() -> Self {
        let request = Duration::from_secs(240);
        let acquire = Duration::from_secs(30);
        Self {
            request,
            queue_wait: Duration::from_secs(24),
            provider_queue: acquire * 3 / 4,
            pacing_max: Duration::ZERO,
            steps: StepTimeouts::default(),
            capture_acquire: acquire,
            capture_step: Duration::from_secs(30),
        }
    }
}

/// A randomized delay before acting, to keep an account's activity human-scale.
/// Per-account spacing and hourly caps belong to the orchestrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Shortest delay.
    pub min: Duration,
    /// Longest delay.
    pub max: Duration,
}

impl Pacing {
    /// A delay in `[min, max]` drawn from `random`, at millisecond resolution.
    pub fn pick(&self, random: &dyn RandomSource) -> Duration {
        let min = u64::try_from(self.min.as_millis()).unwrap_or(u64::MAX);
        let max = u64::try_from(self.max.as_millis())
            .unwrap_or(u64::MAX)
            .max(min);
        let span = max - min;
        let offset = if span == u64::MAX {
            random.next_u64()
        } else {
            random.next_u64() % (span + 1)
        };
        Duration::from_millis(min + offset)
    }
}

/// Deadlines of each step of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepTimeouts {
    /// Acquiring the browser context.
    pub acquire: Duration,
    /// `is_authenticated`.
    pub precheck: Duration,
    /// `post` (compose, media, submit).
    pub post: Duration,
    /// `verify`.
    pub verify: Duration,
    /// Exporting the refreshed state.
    pub export: Duration,
    /// Releasing the lease.
    pub release: Duration,
}

impl Default for StepTimeouts {
    fn default() -> Self {
        Self {
            acquire: Duration::from_secs(30),
            precheck: Duration::from_secs(30),
            post: Duration::from_secs(90),
            verify: Duration::from_secs(30),
            export: Duration::from_secs(10),
            release: Duration::from_secs(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_derived_budget_holds_its_invariants() {
        for secs in [2, 3, 5, 10, 30, 60, 120, 240, 600, 3600] {
            for pacing_ms in [0, 500, 8_000] {
                let request = Duration::from_secs(secs);
                let pacing = Duration::from_millis(pacing_ms);
                match DeadlineBudget::from_request_timeout(request, pacing) {
                    Ok(b) => {
                        assert!(b.queue_wait + b.post_span() <= request, "{secs}s {b:?}");
                        assert!(b.provider_queue < b.steps.acquire, "{secs}s");
                        assert!(b.queue_wait > Duration::ZERO && b.steps.post > Duration::ZERO);
                    }
                    Err(e) => assert!(pacing > request / 4, "{secs}s {pacing_ms}ms: {e}"),
                }
            }
        }
        assert!(DeadlineBudget::default().check().is_ok());
    }

    #[test]
    fn the_default_request_deadline_keeps_the_historical_steps() {
        let b = DeadlineBudget::from_request_timeout(Duration::from_secs(240), Duration::ZERO)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.steps, StepTimeouts::default());
        assert_eq!(b.queue_wait, Duration::from_secs(24));
        assert_eq!(b.provider_queue, Duration::from_millis(22_500));
    }

    #[test]
    fn budgets_that_do_not_fit_are_refused() {
        assert!(
            DeadlineBudget::from_request_timeout(Duration::from_secs(1), Duration::ZERO).is_err()
        );
        assert!(
            DeadlineBudget::from_request_timeout(Duration::from_secs(10), Duration::from_secs(5))
                .is_err()
        );
        let mut b = DeadlineBudget::default();
        b.provider_queue = b.steps.acquire;
        assert!(
            b.check().is_err(),
            "a provider queue as long as the acquire step"
        );
        let mut b = DeadlineBudget::default();
        b.steps.post = Duration::from_secs(300);
        assert!(b.check().is_err(), "steps longer than the request");
    }
}
