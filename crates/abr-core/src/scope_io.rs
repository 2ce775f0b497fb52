//! Applying a strategy's scope to state going into a provider and coming out of the runtime.

use abr_protocol::{AgentSessionState, ScopeReport, SessionMetadata};
use time::OffsetDateTime;

use crate::StrategyPolicy;

/// Scopes `state` by `policy` (unfiltered for legacy strategies without a scope).
pub(crate) fn scope(
    policy: &StrategyPolicy,
    state: &AgentSessionState,
) -> (AgentSessionState, ScopeReport) {
    match &policy.scope {
        Some(scope) => scope.filter(state),
        None => {
            let report = ScopeReport {
                kept_cookies: u32::try_from(state.cookies.len()).unwrap_or(u32::MAX),
                kept_origins: u32::try_from(state.origins.len()).unwrap_or(u32::MAX),
                ..ScopeReport::default()
            };
            (state.clone(), report)
        }
    }
}

/// Scopes a state leaving the runtime and stamps it with the platform and time.
pub(crate) fn scope_out(
    policy: &StrategyPolicy,
    state: &AgentSessionState,
    platform: &str,
    now: OffsetDateTime,
) -> (AgentSessionState, ScopeReport) {
    let (mut state, report) = scope(policy, state);
    state.metadata = Some(SessionMetadata::new(platform, now));
    (state, report)
}
