//! The [`WebPostStrategy`] contract: how to act on one platform and prove it happened.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use abr_protocol::{FailureStage, PlatformInfo, PlatformPolicy, PostContent, Verification};
use async_trait::async_trait;

use crate::{CoreError, ScopeError, SessionScope, StrategyError};

/// A strategy's validated policy. Built from the wire [`PlatformPolicy`]; an invalid scope is
/// rejected here, at registration, not at first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyPolicy {
    /// May a person capture a session for this platform?
    pub allow_interactive_capture: bool,
    /// May a stored session be replayed unattended?
    pub allow_unattended: bool,
    /// Session scope applied going in and coming out; `None`: legacy, unfiltered.
    pub scope: Option<SessionScope>,
}

impl StrategyPolicy {
    /// Validates a wire policy. Omitted fields keep the legacy behaviour (allowed).
    pub fn from_spec(spec: &PlatformPolicy) -> Result<Self, ScopeError> {
        Ok(Self {
            allow_interactive_capture: spec.allow_interactive_capture.unwrap_or(true),
            allow_unattended: spec.allow_unattended.unwrap_or(true),
            scope: spec.session.as_ref().map(SessionScope::new).transpose()?,
        })
    }

    /// The wire form.
    pub fn to_spec(&self) -> PlatformPolicy {
        PlatformPolicy {
            allow_interactive_capture: Some(self.allow_interactive_capture),
            allow_unattended: Some(self.allow_unattended),
            session: self.scope.as_ref().map(SessionScope::to_spec),
        }
    }
}

/// How far a post got. A strategy calls [`PostProgress::enter`] before each stage, so that
/// when it fails, times out or panics the core knows whether anything may have been
/// submitted. Stages only move forward.
#[derive(Debug)]
pub struct PostProgress(AtomicU8);

impl Default for PostProgress {
    fn default() -> Self {
        Self(AtomicU8::new(stage_index(FailureStage::Precheck)))
    }
}

const STAGES: [FailureStage; 5] = [
    FailureStage::Precheck,
    FailureStage::Compose,
    FailureStage::Media,
    FailureStage::Submit,
    FailureStage::Verify,
];

fn stage_index(stage: FailureStage) -> u8 {
    match stage {
        FailureStage::Precheck => 0,
        FailureStage::Compose => 1,
        FailureStage::Media => 2,
        FailureStage::Submit => 3,
        FailureStage::Verify => 4,
    }
}

impl PostProgress {
    /// Marks the start of `stage`. Call `enter(FailureStage::Submit)` *before* the action
    /// that may publish (the click), never after.
    pub fn enter(&self, stage: FailureStage) {
        self.0.fetch_max(stage_index(stage), Ordering::SeqCst);
    }

    /// The stage reached so far.
    pub fn current(&self) -> FailureStage {
        STAGES[usize::from(self.0.load(Ordering::SeqCst)).min(STAGES.len() - 1)]
    }
}

/// What a strategy saw right after submitting, handed to [`WebPostStrategy::verify`].
#[derive(Debug, Clone, Default)]
pub struct SubmitReceipt {
    /// A confirmation already observed at submit time (e.g. a toast with a permalink).
    pub observed: Option<Verification>,
    /// Anything the strategy wants to remember for verification (e.g. the post's id, the
    /// text as submitted), as a value of its own type.
    pub note: Option<ReceiptNote>,
}

/// A strategy's own value carried from `post` to `verify`, as it is: no serialization, and
/// never printed (it may hold what was posted).
#[derive(Clone)]
pub struct ReceiptNote(Arc<dyn std::any::Any + Send + Sync>);

impl ReceiptNote {
    /// Carries `value`.
    pub fn new<T: std::any::Any + Send + Sync>(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for ReceiptNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptNote(<not printed>)")
    }
}

/// What verification established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// Proven: the action happened.
    Confirmed(Verification),
    /// Proven: nothing was posted (safe to retry).
    NotPosted {
        /// What showed it.
        detail: String,
    },
    /// Neither: the action may have happened. Never retried.
    Unconfirmed {
        /// What was (not) seen.
        detail: String,
    },
}

/// How to act on one platform, for browser contexts of type `C`, and prove the outcome.
///
/// # Contract
/// - `is_authenticated` only looks; it never acts.
/// - `post` calls `progress.enter(stage)` before each stage (compose, media, submit) and
///   returns after the submit action with what it saw. It returns
///   [`StrategyError::not_posted`] only with evidence nothing was published.
/// - `verify` proves the outcome: [`VerifyOutcome::Confirmed`] only with evidence (toast,
///   permalink, read-back).
/// - No method logs or returns the posted content or session values.
///
/// The core maps every result, error, timeout and panic of these methods to exactly one
/// outcome row of [`AgentPostResult`](abr_protocol::AgentPostResult).
#[async_trait]
pub trait WebPostStrategy<C>: Send + Sync + 'static {
    /// Platform id, e.g. `"demo"`.
    fn platform(&self) -> &str;

    /// Execution and session policy.
    fn policy(&self) -> &StrategyPolicy;

    /// Where capture starts (the sign-in page) and posting begins.
    fn start_url(&self) -> &str;

    /// How this platform's posts are paced: the runner's setting (the default), none (a
    /// local test site), or a range of its own.
    fn pacing(&self) -> PlatformPacing {
        PlatformPacing::Runner
    }

    /// Whether the context is signed in.
    async fn is_authenticated(&self, context: &C) -> Result<bool, StrategyError>;

    /// Composes and submits `content`.
    async fn post(
        &self,
        context: &C,
        content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError>;

    /// Proves what `post` did.
    async fn verify(
        &self,
        context: &C,
        receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError>;
}

/// A platform's pacing (the seed's `pacing: true`: a small randomized delay before acting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlatformPacing {
    /// The runner's configured range.
    #[default]
    Runner,
    /// No delay (a local test site).
    Off,
    /// This range, whatever the runner's.
    Range(crate::Pacing),
}

/// Registered strategies by platform id.
pub struct StrategyRegistry<C> {
    strategies: BTreeMap<String, Arc<dyn WebPostStrategy<C>>>,
}

impl<C> Default for StrategyRegistry<C> {
    fn default() -> Self {
        Self {
            strategies: BTreeMap::new(),
        }
    }
}

impl<C: 'static> StrategyRegistry<C> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a strategy; ids are unique.
    pub fn register(&mut self, strategy: Arc<dyn WebPostStrategy<C>>) -> Result<(), CoreError> {
        let id = strategy.platform().to_owned();
        if id.is_empty() {
            return Err(CoreError::InvalidInput(
                "platform id must not be empty".into(),
            ));
        }
        if self.strategies.contains_key(&id) {
            return Err(CoreError::DuplicatePlatform(id));
        }
        self.strategies.insert(id, strategy);
        Ok(())
    }

    /// The strategy for `platform`.
    pub fn get(&self, platform: &str) -> Result<&Arc<dyn WebPostStrategy<C>>, CoreError> {
        self.strategies
            .get(platform)
            .ok_or_else(|| CoreError::UnknownPlatform(platform.into()))
    }

    /// The longest pacing delay a registered platform asks for itself
    /// ([`PlatformPacing::Range`]); zero if none does.
    pub fn longest_pacing(&self) -> std::time::Duration {
        self.strategies
            .values()
            .filter_map(|s| match s.pacing() {
                PlatformPacing::Range(range) => Some(range.max),
                _ => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// Every platform, sorted by id.
    pub fn platforms(&self) -> Vec<PlatformInfo> {
        self.strategies
            .values()
            .map(|s| PlatformInfo {
                id: s.platform().to_owned(),
                start_url: s.start_url().to_owned(),
                policy: s.policy().to_spec(),
            })
            .collect()
    }
}

impl<C> std::fmt::Debug for StrategyRegistry<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyRegistry")
            .field("platforms", &self.strategies.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::SessionScopeSpec;

    #[test]
    fn progress_only_moves_forward() {
        let p = PostProgress::default();
        assert_eq!(p.current(), FailureStage::Precheck);
        p.enter(FailureStage::Media);
        p.enter(FailureStage::Compose);
        assert_eq!(p.current(), FailureStage::Media);
        p.enter(FailureStage::Submit);
        assert_eq!(p.current(), FailureStage::Submit);
    }

    #[test]
    fn omitted_policy_fields_keep_legacy_behaviour_and_flags_are_independent() {
        let legacy = StrategyPolicy::from_spec(&PlatformPolicy::default()).unwrap();
        assert!(legacy.allow_interactive_capture && legacy.allow_unattended);
        assert!(legacy.scope.is_none());
        let interactive_only = StrategyPolicy::from_spec(&PlatformPolicy {
            allow_unattended: Some(false),
            ..PlatformPolicy::default()
        })
        .unwrap();
        assert!(interactive_only.allow_interactive_capture && !interactive_only.allow_unattended);
        let unattended_only = StrategyPolicy::from_spec(&PlatformPolicy {
            allow_interactive_capture: Some(false),
            ..PlatformPolicy::default()
        })
        .unwrap();
        assert!(!unattended_only.allow_interactive_capture && unattended_only.allow_unattended);
    }

    #[test]
    fn an_over_broad_scope_is_rejected_at_registration() {
        let spec = PlatformPolicy {
            session: Some(SessionScopeSpec {
                cookie_domains: vec!["com".into()],
                origins: vec![],
            }),
            ..PlatformPolicy::default()
        };
        assert!(StrategyPolicy::from_spec(&spec).is_err());
    }
}
