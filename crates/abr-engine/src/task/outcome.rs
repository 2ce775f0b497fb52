//! The single outcome a run ends in ([`Outcome`]), and why a step did not do its job
//! ([`Failure`]): every return, error, timeout and panic maps to one row.

use abr_core::audit::AuditOutcome;
use abr_core::codes;
use abr_core::step_runner::{StepFailure, StepFailureKind};
use abr_core::store::StoredTask;
use abr_core::strategy::StrategyPolicy;
use abr_protocol::{ErrorBody, TaskRecord, TaskState, TaskVerification};
use tokio::time::Instant;
use url::Url;

/// The policy of a run that names no platform: unattended, unscoped, frames on.
pub(super) fn unscoped_policy() -> StrategyPolicy {
    StrategyPolicy {
        allow_interactive_capture: false,
        allow_unattended: true,
        scope: None,
        read_only: false,
        screenshots: true,
        network: abr_core::guard::NetworkRules::default(),
        guard: None,
        redaction: abr_core::guard::PageRedaction::default(),
    }
}

/// The single outcome row a run ended in.
#[derive(Debug)]
pub(super) enum Outcome {
    Succeeded,
    Failed {
        step: Option<usize>,
        error: ErrorBody,
    },
    Uncertain {
        step: Option<usize>,
        error: ErrorBody,
    },
    NeedsReauth {
        step: Option<usize>,
        error: ErrorBody,
    },
}

/// Why a step (or the verification) did not do its job.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) body: ErrorBody,
    pub(super) signed_out: bool,
    /// A retry would meet the same refusal (a blocked action, a denied site, a handoff).
    pub(super) final_: bool,
}

impl Failure {
    pub(super) fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            body: ErrorBody::new(code, message),
            signed_out: false,
            final_: false,
        }
    }

    /// A failure a retry cannot fix.
    pub(super) fn refusal(code: &str, message: impl Into<String>) -> Self {
        Self {
            final_: true,
            ..Self::new(code, message)
        }
    }

    pub(super) fn from_step(failure: StepFailure) -> Self {
        let code = match failure.kind {
            StepFailureKind::NotFound => codes::ELEMENT_NOT_FOUND,
            StepFailureKind::Navigation => codes::NAVIGATION_FAILED,
            StepFailureKind::Crashed => codes::BROWSER_CRASHED,
            StepFailureKind::SignedOut => codes::NEEDS_REAUTH,
            _ => codes::STEP_REJECTED,
        };
        Self {
            body: ErrorBody::new(code, failure.message),
            signed_out: failure.kind == StepFailureKind::SignedOut,
            final_: false,
        }
    }

    /// A failure of the store (or of a call to it), as its error's wire form says.
    pub(super) fn store(body: ErrorBody) -> Self {
        Self {
            body,
            signed_out: false,
            final_: false,
        }
    }
}

impl Outcome {
    /// A step or verification that did not do its job: once a committing step has started,
    /// the action may have happened (uncertain, never retried); before, nothing did
    /// (failed and safe to retry, or needs re-auth when the site signed the browser out).
    pub(super) fn interrupted(committed: bool, step: Option<usize>, failure: Failure) -> Self {
        if committed {
            Self::Uncertain {
                step,
                error: failure.body.retryable(false),
            }
        } else if failure.signed_out {
            Self::NeedsReauth {
                step,
                error: failure.body.retryable(false),
            }
        } else {
            Self::Failed {
                step,
                error: failure.body.retryable(!failure.final_),
            }
        }
    }

    /// A task that could not start; nothing ran.
    pub(super) fn not_started(error: ErrorBody) -> Self {
        Self::Failed { step: None, error }
    }

    pub(super) fn state(&self) -> TaskState {
        match self {
            Self::Succeeded => TaskState::Succeeded,
            Self::Failed { .. } => TaskState::Failed,
            Self::Uncertain { .. } => TaskState::Uncertain,
            Self::NeedsReauth { .. } => TaskState::NeedsReauth,
        }
    }

    pub(super) fn apply(self, record: &mut TaskRecord) {
        record.state = self.state();
        match self {
            Self::Succeeded => {
                record.failed_step = None;
                record.error = None;
            }
            Self::Failed { step, error }
            | Self::Uncertain { step, error }
            | Self::NeedsReauth { step, error } => {
                record.failed_step = step;
                record.error = Some(error);
            }
        }
    }
}

/// The outcome once the network had its say: after a write to the run's own sites left the
/// browser, nothing is "failed, safe to retry" or "needs re-auth" any more: it may have
/// happened (`uncertain`, never retried), whatever the commit rule said of the steps.
pub(super) fn network_truth(outcome: Outcome, wrote: bool) -> Outcome {
    if !wrote {
        return outcome;
    }
    match outcome {
        Outcome::Failed { step, error } if error.code != codes::BLOCKED_ACTION => {
            Outcome::Uncertain {
                step,
                error: error.retryable(false),
            }
        }
        Outcome::NeedsReauth { step, error } => Outcome::Uncertain {
            step,
            error: error.retryable(false),
        },
        other => other,
    }
}

/// A step failure: after a refused action, the refusal is the reason the run ended (a
/// later step usually fails because of it).
pub(super) fn blocked_or(
    task: &StoredTask,
    committed: bool,
    step: Option<usize>,
    failure: Failure,
) -> Outcome {
    match task.record.blocked.first() {
        Some(first) => Outcome::Failed {
            step: first.step,
            error: ErrorBody::new(
                codes::BLOCKED_ACTION,
                format!(
                    "a committing action was refused (see `blocked`) and step {} then failed: {}",
                    step.map_or_else(|| "?".to_owned(), |s| s.to_string()),
                    failure.body.message
                ),
            ),
        },
        None => Outcome::interrupted(committed, step, failure),
    }
}

pub(super) fn audit_outcome(state: TaskState) -> AuditOutcome {
    match state {
        TaskState::Succeeded
        | TaskState::PendingApproval
        | TaskState::Queued
        | TaskState::Closed => AuditOutcome::Ok,
        TaskState::Running | TaskState::Paused | TaskState::Uncertain => AuditOutcome::Uncertain,
        TaskState::NeedsReauth => AuditOutcome::NeedsReauth,
        TaskState::Failed => AuditOutcome::Failed,
        TaskState::Rejected => AuditOutcome::Denied,
    }
}

pub(super) fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn callback_url(task: &StoredTask) -> Option<Url> {
    match &task.request.plan.verification {
        TaskVerification::ApiCallback { url } => Url::parse(url).ok(),
        _ => None,
    }
}
