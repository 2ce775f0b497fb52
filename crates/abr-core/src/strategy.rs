//! The [`WebPostStrategy`] contract: how to act on one platform and prove it happened.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use abr_protocol::{
    FailureStage, GuardPolicySpec, PlatformInfo, PlatformPolicy, PostContent, Verification,
};
use async_trait::async_trait;

use crate::error::{CoreError, StrategyError};
use crate::guard::frames::PlatformFrames;
use crate::guard::network::{NetworkRuleError, NetworkRules};
use crate::guard::redaction::{PageRedaction, RedactionError};
use crate::scope::{ScopeError, SessionScope};

/// A platform policy that is not usable: its session scope or its network declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The session scope (`policy.session`).
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// The network declaration (`policy.network`).
    #[error(transparent)]
    Network(#[from] NetworkRuleError),
    /// The redaction declaration (`policy.redaction`).
    #[error(transparent)]
    Redaction(#[from] RedactionError),
}

impl PolicyError {
    /// The field of the policy it is about (`policy.session`, `policy.network`).
    pub fn field(&self) -> &'static str {
        match self {
            Self::Scope(_) => "policy.session",
            Self::Network(_) => "policy.network",
            Self::Redaction(_) => "policy.redaction",
        }
    }
}

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
    /// The platform only observes: posts are refused and tasks on it refuse every committing
    /// action (see [`RunGuard`](crate::guard::run_guard::RunGuard)).
    pub read_only: bool,
    /// Whether runs on the platform take replay frames.
    pub screenshots: bool,
    /// The platform's network: declared reads, telemetry, WebSockets in read-only runs.
    pub network: NetworkRules,
    /// What the platform adds to the commit rule (harmless names, harmless choices).
    pub guard: Option<GuardPolicySpec>,
    /// What the platform adds to the redaction of its runs' frames and screenshots.
    pub redaction: PageRedaction,
}

impl StrategyPolicy {
    /// This policy, never looser than `bound` (the policy of the platform a stored session
    /// was kept for): read-only if either is, unattended only if both allow it, replay
    /// frames only if both take them, interactive capture only if both allow it, images
    /// redacted for both. The scope, network and guard stay this policy's.
    #[must_use]
    pub fn tightened_by(&self, bound: &StrategyPolicy) -> StrategyPolicy {
        StrategyPolicy {
            allow_interactive_capture: self.allow_interactive_capture
                && bound.allow_interactive_capture,
            allow_unattended: self.allow_unattended && bound.allow_unattended,
            read_only: self.read_only || bound.read_only,
            screenshots: self.screenshots && bound.screenshots,
            redaction: self.redaction.union(&bound.redaction),
            ..self.clone()
        }
    }

    /// What the platform says about its runs' frames.
    pub fn frames(&self) -> PlatformFrames {
        PlatformFrames {
            enabled: self.screenshots,
            redaction: Arc::new(self.redaction.clone()),
        }
    }

    /// Validates a wire policy. Omitted fields keep the legacy behaviour (allowed).
    ///
    /// # Errors
    /// A [`PolicyError`]: an invalid session scope or network declaration.
    pub fn from_spec(spec: &PlatformPolicy) -> Result<Self, PolicyError> {
        Ok(Self {
            allow_interactive_capture: spec.allow_interactive_capture.unwrap_or(true),
            allow_unattended: spec.allow_unattended.unwrap_or(true),
            scope: spec.session.as_ref().map(SessionScope::new).transpose()?,
            read_only: spec.read_only.unwrap_or(false),
            screenshots: spec.screenshots.unwrap_or(true),
            network: spec
                .network
                .as_ref()
                .map(NetworkRules::from_spec)
                .transpose()?
                .unwrap_or_default(),
            guard: spec.guard.clone(),
            redaction: spec
                .redaction
                .as_ref()
                .map(PageRedaction::from_spec)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// The wire form.
    pub fn to_spec(&self) -> PlatformPolicy {
        PlatformPolicy {
            allow_interactive_capture: Some(self.allow_interactive_capture),
            allow_unattended: Some(self.allow_unattended),
            session: self.scope.as_ref().map(SessionScope::to_spec),
            read_only: Some(self.read_only),
            screenshots: Some(self.screenshots),
            network: (!self.network.is_empty()).then(|| self.network.to_spec()),
            guard: self.guard.clone(),
            redaction: self.redaction.to_spec(),
        }
    }
}

/// How far a post got. A strategy calls [`PostProgress::enter`] before each stage, so that
/// when it fails, times out or panics the core knows whether anything may have been
/// submitted. Stages only move forward.
///
/// Before the action that may publish, a strategy awaits [`PostProgress::submit`]: it enters
/// the submit stage and, when the post is journaled (`abr-engine`'s `PostJournal`),
/// returns only once the journal durably recorded that the submit started, so that a
/// runner killed during the click recovers the post as uncertain, never as safe to retry.
pub struct PostProgress {
    stage: AtomicU8,
    gate: Option<Arc<dyn SubmitGate>>,
    gate_passed: AtomicBool,
}

/// What a journal does when a post reaches its submit stage (see [`PostProgress::submit`]).
#[async_trait]
pub trait SubmitGate: Send + Sync + 'static {
    /// Durably records that the submit is about to start. An error stops the post before
    /// the submit: nothing is published.
    async fn before_submit(&self) -> Result<(), CoreError>;

    /// The strategy entered the submit stage with the synchronous [`PostProgress::enter`]
    /// (not [`PostProgress::submit`]): record it as soon as possible, without waiting.
    fn submit_entered(&self);
}

impl Default for PostProgress {
    fn default() -> Self {
        Self {
            stage: AtomicU8::new(stage_index(FailureStage::Precheck)),
            gate: None,
            gate_passed: AtomicBool::new(false),
        }
    }
}

impl std::fmt::Debug for PostProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostProgress")
            .field("stage", &self.current())
            .field("gated", &self.gate.is_some())
            .finish()
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
    ///
    /// Prefer [`PostProgress::submit`] for the submit stage: with a journal, this synchronous
    /// call can only start recording it, not wait for it.
    pub fn enter(&self, stage: FailureStage) {
        self.stage.fetch_max(stage_index(stage), Ordering::SeqCst);
        if stage >= FailureStage::Submit
            && let Some(gate) = &self.gate
            && !self.gate_passed.swap(true, Ordering::SeqCst)
        {
            gate.submit_entered();
        }
    }

    /// Enters the submit stage and waits until a journal recorded it (at once without one).
    /// Call it right before the action that may publish, and stop when it fails.
    ///
    /// # Errors
    /// A [`StrategyErrorKind::NotPosted`](crate::error::StrategyErrorKind::NotPosted) error when the
    /// journal could not record the submit: nothing was submitted.
    pub async fn submit(&self) -> Result<(), StrategyError> {
        self.stage
            .fetch_max(stage_index(FailureStage::Submit), Ordering::SeqCst);
        if let Some(gate) = &self.gate
            && !self.gate_passed.swap(true, Ordering::SeqCst)
        {
            gate.before_submit().await.map_err(|e| {
                StrategyError::not_posted(
                    "submit_not_recorded",
                    format!(
                        "the submit could not be recorded before it started ({}): nothing was \
                         submitted",
                        e.code()
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// Progress whose submit stage passes through `gate`.
    pub fn gated(gate: Option<Arc<dyn SubmitGate>>) -> Self {
        Self {
            gate,
            ..Self::default()
        }
    }

    /// The stage reached so far.
    pub fn current(&self) -> FailureStage {
        STAGES[usize::from(self.stage.load(Ordering::SeqCst)).min(STAGES.len() - 1)]
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

/// What a read-only re-check of an uncertain post found
/// ([`WebPostStrategy::recheck`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecheckOutcome {
    /// The post is there: proven now.
    Confirmed(Verification),
    /// The check ran and did not find it (not proof that nothing was posted).
    NotFound {
        /// What was (not) seen.
        detail: String,
    },
    /// The check ran but cannot tell (e.g. several identical posts).
    Ambiguous {
        /// Why.
        detail: String,
    },
    /// The check cannot run (the strategy has none, or the page is unavailable).
    Unavailable {
        /// Why.
        detail: String,
    },
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

    /// Re-checks, read-only and in a fresh signed-in browser, whether `content` was posted
    /// (an uncertain post, later). It never acts: no compose, no submit. The default answers
    /// [`RecheckOutcome::Unavailable`]: the strategy cannot re-check without its submit's
    /// receipt.
    async fn recheck(
        &self,
        context: &C,
        content: &PostContent,
    ) -> Result<RecheckOutcome, StrategyError>
    where
        C: Sync,
    {
        let _ = (context, content);
        Ok(RecheckOutcome::Unavailable {
            detail: format!("the `{}` strategy cannot re-check a post", self.platform()),
        })
    }
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
    Range(crate::budget::Pacing),
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
    fn a_bound_policy_only_tightens() {
        let open = StrategyPolicy::from_spec(&PlatformPolicy::default()).unwrap();
        let strict = StrategyPolicy::from_spec(&PlatformPolicy {
            read_only: Some(true),
            allow_unattended: Some(false),
            screenshots: Some(false),
            ..PlatformPolicy::default()
        })
        .unwrap();
        let tightened = open.tightened_by(&strict);
        assert!(tightened.read_only && !tightened.allow_unattended && !tightened.screenshots);
        // The other way round nothing loosens either.
        let still = strict.tightened_by(&open);
        assert!(still.read_only && !still.allow_unattended && !still.screenshots);
        assert_eq!(open.tightened_by(&open), open);
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
