//! Per-tenant limits (the seed's rate limiting): concurrent browser sessions, executions per
//! UTC day, retries of one failed execution. The counters live in the [`TaskStore`], so they
//! survive a restart where the store does.
//!
//! [`TaskStore`]: crate::store::tasks::TaskStore

use std::time::Duration;

use abr_protocol::codes::{self, ErrorCode};
use time::{OffsetDateTime, UtcOffset};

/// The per-tenant limits, with the seed's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantLimits {
    /// Browser sessions a tenant may hold at once (tasks approved and not yet ended, and
    /// re-checks running). Default 10.
    pub concurrent_sessions: u32,
    /// Executions a tenant may start per UTC day. Default 100.
    pub daily_executions: u32,
    /// Retries of one failed (or asserted-uncertain) execution. Default 5.
    pub retries: u32,
}

impl Default for TenantLimits {
    fn default() -> Self {
        Self {
            concurrent_sessions: 10,
            daily_executions: 100,
            retries: 5,
        }
    }
}

/// Which per-tenant limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TenantLimit {
    /// [`TenantLimits::concurrent_sessions`].
    ConcurrentSessions,
    /// [`TenantLimits::daily_executions`].
    DailyExecutions,
    /// [`TenantLimits::retries`].
    Retries,
}

impl TenantLimit {
    /// The code it is answered with (429).
    pub fn error_code(self) -> ErrorCode {
        match self {
            Self::ConcurrentSessions => codes::TENANT_CONCURRENCY_LIMIT,
            Self::DailyExecutions => codes::TENANT_DAILY_LIMIT,
            Self::Retries => codes::TENANT_RETRY_LIMIT,
        }
    }

    /// Whether waiting helps: sessions end and days pass; a retry budget never comes back.
    pub fn is_retryable(self) -> bool {
        !matches!(self, Self::Retries)
    }
}

impl std::fmt::Display for TenantLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ConcurrentSessions => "the tenant's concurrent browser sessions",
            Self::DailyExecutions => "the tenant's executions per UTC day",
            Self::Retries => "the retries of this execution",
        })
    }
}

/// The UTC day of `now`.
pub fn utc_day(now: OffsetDateTime) -> time::Date {
    now.to_offset(UtcOffset::UTC).date()
}

/// How long from `now` to the start of the next UTC day (at least one second).
pub fn until_next_utc_day(now: OffsetDateTime) -> Duration {
    let now = now.to_offset(UtcOffset::UTC);
    let next = now
        .date()
        .next_day()
        .map(|d| d.midnight().assume_utc())
        .unwrap_or(now);
    let secs = (next - now).whole_seconds().max(1);
    Duration::from_secs(u64::try_from(secs).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn the_next_utc_day_is_counted_in_utc() {
        assert_eq!(
            until_next_utc_day(datetime!(2026-06-09 23:00:00 UTC)),
            Duration::from_secs(3600)
        );
        assert_eq!(
            until_next_utc_day(datetime!(2026-06-09 23:59:59.5 UTC)),
            Duration::from_secs(1)
        );
        // 01:00 at +02:00 is 23:00 UTC the day before.
        assert_eq!(
            until_next_utc_day(datetime!(2026-06-10 01:00:00 +02:00)),
            Duration::from_secs(3600)
        );
        assert_eq!(
            utc_day(datetime!(2026-06-10 01:00:00 +02:00)),
            time::macros::date!(2026 - 06 - 09)
        );
    }
}
