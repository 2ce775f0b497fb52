//! Applying scopes to state going into a provider and coming out of the runtime: the
//! platform's scope, then the request's own (which can only narrow).

use abr_protocol::{AgentSessionState, ScopeReport, SessionMetadata, SessionScopeSpec};
use time::OffsetDateTime;

use crate::error::CoreError;
use crate::scope::SessionScope;
use crate::strategy::StrategyPolicy;

/// The scopes of one job.
#[derive(Debug, Clone, Copy)]
pub struct Scopes<'a> {
    platform: Option<&'a SessionScope>,
    request: Option<&'a SessionScope>,
}

/// Validates a request's extra scope.
pub fn request_scope(spec: Option<&SessionScopeSpec>) -> Result<Option<SessionScope>, CoreError> {
    Ok(spec.map(SessionScope::new).transpose()?)
}

impl<'a> Scopes<'a> {
    /// The scopes of a job on a platform with `policy`, narrowed by the request's own.
    pub fn new(policy: &'a StrategyPolicy, request: Option<&'a SessionScope>) -> Self {
        Self {
            platform: policy.scope.as_ref(),
            request,
        }
    }

    /// Scopes `state` (unfiltered when neither scope is set: legacy strategies).
    pub fn apply(&self, state: &AgentSessionState) -> (AgentSessionState, ScopeReport) {
        let mut current = state.clone();
        let mut dropped = ScopeReport::default().dropped;
        for scope in [self.platform, self.request].into_iter().flatten() {
            let (next, report) = scope.filter(&current);
            for (reason, n) in report.dropped {
                *dropped.entry(reason).or_default() += n;
            }
            current = next;
        }
        let report = ScopeReport {
            kept_cookies: u32::try_from(current.cookies.len()).unwrap_or(u32::MAX),
            kept_origins: u32::try_from(current.origins.len()).unwrap_or(u32::MAX),
            dropped,
        };
        (current, report)
    }

    /// Scopes a state leaving the runtime and stamps it with the platform and time.
    pub fn apply_out(
        &self,
        state: &AgentSessionState,
        platform: &str,
        now: OffsetDateTime,
    ) -> (AgentSessionState, ScopeReport) {
        let (mut state, report) = self.apply(state);
        state.metadata = Some(SessionMetadata::new(platform, now));
        (state, report)
    }
}
