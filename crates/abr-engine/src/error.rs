//! [`EngineError`]: what the engine refuses, raised where it is raised. The core's errors
//! (bad input, a provider, a strategy, a store, a plan, a principal's rights) pass through
//! as [`EngineError::Core`]; the rest are the engine's own: records and their states,
//! captures and live views, takeovers, browse sessions, admission. Each has a kind, a wire
//! code from `abr_protocol::codes` and a retryability, as the core's do.

use std::time::Duration;

use abr_core::error::PlanError;
use abr_core::error::store::StoreFailure;
use abr_core::error::{CoreError, ErrorKind, ProviderError, StrategyError};
use abr_core::limits::TenantLimit;
use abr_core::scope::ScopeError;
use abr_protocol::codes::{self, ErrorCode};
use abr_protocol::{ErrorBody, TakeoverState};

/// Why the engine did not carry out a call. What a job did is not an error: a post's or a
/// task's outcome is its record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The core refused it (bad input, rights, a provider, a strategy, a store, a plan).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// No open capture has this id (never existed, finished, cancelled or expired).
    #[error("capture not found")]
    CaptureNotFound,
    /// The capture exists but is bound to another workspace or account.
    #[error("capture is bound to a different workspace or account")]
    BindingMismatch,
    /// The user has not signed in yet; the capture stays open.
    #[error("the capture's browser is not signed in yet")]
    NotAuthenticated,
    /// Too many captures are open.
    #[error("too many open captures (limit {0})")]
    CaptureLimit(usize),
    /// The capture's browser is gone (closed, crashed, replaced): it can never finish.
    #[error("the capture's browser was lost; cancel it and start a new capture")]
    CaptureBrowserLost,
    /// No open capture or takeover has this live token (never existed, or over).
    #[error("no open capture has this live view")]
    LiveViewNotFound,
    /// The live token already holds its maximum of open sockets.
    #[error("this live view is already open in {0} place(s); close one first")]
    LiveViewLimit(usize),
    /// A task approved or rejected by the key that proposed it.
    #[error("a task is approved or rejected by an approver other than the key that proposed it")]
    SelfApproval,
    /// No key with this id.
    #[error("no key with this id")]
    KeyNotFound,
    /// No open approval link with this token (never minted, used, or expired).
    #[error("this approval link was used, expired or never existed")]
    LinkNotFound,
    /// No stored session under this id.
    #[error("no stored session for this account and platform")]
    SessionNotFound,
    /// A session stored naming another platform than the one it is bound to: a stored
    /// session's platform, and with it the platform's policy, never changes by storing it
    /// again.
    #[error(
        "the session is bound to the platform `{0}`: store it again for that platform, or \
         without naming one"
    )]
    SessionBound(String),
    /// The run is not paused: no takeover.
    #[error("the task is not paused for a person: no takeover")]
    NoTakeover,
    /// The takeover is over.
    #[error("the takeover is already {}", .0.as_str())]
    TakeoverState(TakeoverState),
    /// A person is already asked for this run (a takeover requested or active).
    #[error("a person is already asked for this run: its takeover is still open")]
    TakeoverPending,
    /// The field did not take the value a person supplied (the takeover still waits).
    #[error("the field did not take the value: {0}")]
    InputNotAccepted(String),
    /// A committing action refused by the read-only or dry-run guard.
    #[error("{0}")]
    Blocked(String),
    /// No such replay frame.
    #[error("frame not found")]
    FrameNotFound,
    /// No task, browse session or post with this id for this tenant.
    #[error("run not found")]
    RunNotFound,
    /// No artifact with this id for this tenant.
    #[error("artifact not found: no artifact {0} for this tenant")]
    ArtifactNotFound(String),
    /// A file not kept as an artifact: its name, emptiness, size or type.
    #[error("{0}")]
    ArtifactRefused(#[from] abr_core::artifact::ArtifactRefused),
    /// The tenant holds its maximum of artifacts.
    #[error(
        "the tenant holds its maximum of artifacts ({max_count} files, {max_bytes} bytes in \
         all): delete some first"
    )]
    ArtifactQuota {
        /// Most files.
        max_count: u64,
        /// Most bytes.
        max_bytes: u64,
    },
    /// The site is denied for this tenant (or outside its allow list): nothing was opened.
    #[error("{0}")]
    SiteDenied(String),
    /// No open browse session with this id for this tenant.
    #[error("no open browse session with this id")]
    BrowseNotFound,
    /// No element with this reference on the page.
    #[error("no element with reference {0:?} on the page now: take a new snapshot")]
    RefNotFound(String),
    /// The approval names another plan hash than the stored plan's.
    #[error(
        "the approval names another plan than the one stored: read the task again and approve \
         what it shows"
    )]
    PlanHashMismatch,
    /// `approve` or `reject` of a task that is not waiting for approval.
    #[error("the task is not waiting for approval")]
    TaskNotPending,
    /// A decision on a browse session's approval that is not the pending one.
    #[error(
        "the browse session waits for no approval with this id (decided, replaced by a later \
         action, or never asked)"
    )]
    ActionNotPending,
    /// An approval or task that kept no preview image.
    #[error("no preview was kept for this approval (its previewNote says why)")]
    PreviewNotFound,
    /// `run` of a task that is not approved and waiting to run.
    #[error("the task is not approved and waiting to run")]
    TaskNotQueued,
    /// `recheck` or `assert-not-posted` of a task or post whose outcome is not uncertain.
    #[error("the outcome is not uncertain: nothing to re-check or assert")]
    NotUncertain,
    /// `retry` of a task that may not be retried.
    #[error("the task cannot be retried: {0}")]
    TaskNotRetryable(&'static str),
    /// The owner already asserted on this task or post.
    #[error("the owner already asserted on this task or post")]
    AlreadyAsserted,
    /// An idempotency key reused with a different body.
    #[error("the idempotency key was used with a different body")]
    IdempotencyKeyReused,
    /// Every job slot is busy and the queue is full (or the runner is shutting down):
    /// nothing ran.
    #[error("the runner is at capacity; retry later")]
    Overloaded {
        /// Suggested wait (`Retry-After`).
        retry_after: Duration,
    },
    /// The job waited in the queue for its whole queue deadline: nothing ran.
    #[error("no job slot came free within the queue deadline; nothing ran: retry later")]
    QueueTimeout {
        /// Suggested wait (`Retry-After`).
        retry_after: Duration,
    },
    /// A job panicked in its slot; only this request failed. The message says what may
    /// have happened (a post: it may have been published).
    #[error("{0}")]
    JobPanicked(&'static str),
    /// A per-tenant limit is reached.
    #[error("{limit} limit reached (at most {max})")]
    TenantLimit {
        /// Which limit.
        limit: TenantLimit,
        /// Its value.
        max: u32,
        /// When to come back, if that helps (`Retry-After`).
        retry_after: Option<Duration>,
    },
}

impl From<StoreFailure> for EngineError {
    fn from(e: StoreFailure) -> Self {
        Self::Core(e.into())
    }
}

impl From<ProviderError> for EngineError {
    fn from(e: ProviderError) -> Self {
        Self::Core(e.into())
    }
}

impl From<StrategyError> for EngineError {
    fn from(e: StrategyError) -> Self {
        Self::Core(e.into())
    }
}

impl From<PlanError> for EngineError {
    fn from(e: PlanError) -> Self {
        Self::Core(e.into())
    }
}

impl From<ScopeError> for EngineError {
    fn from(e: ScopeError) -> Self {
        Self::Core(e.into())
    }
}

impl EngineError {
    /// The category.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Core(e) => e.kind(),
            Self::CaptureNotFound
            | Self::LiveViewNotFound
            | Self::KeyNotFound
            | Self::LinkNotFound
            | Self::SessionNotFound
            | Self::NoTakeover
            | Self::FrameNotFound
            | Self::RunNotFound
            | Self::ArtifactNotFound(_)
            | Self::BrowseNotFound
            | Self::PreviewNotFound => ErrorKind::NotFound,
            Self::ArtifactRefused(_) => ErrorKind::InvalidInput,
            Self::BindingMismatch | Self::SelfApproval => ErrorKind::Forbidden,
            Self::NotAuthenticated
            | Self::CaptureBrowserLost
            | Self::SessionBound(_)
            | Self::RefNotFound(_)
            | Self::TakeoverState(_)
            | Self::TakeoverPending
            | Self::InputNotAccepted(_)
            | Self::PlanHashMismatch
            | Self::TaskNotPending
            | Self::ActionNotPending
            | Self::TaskNotQueued
            | Self::NotUncertain
            | Self::TaskNotRetryable(_)
            | Self::AlreadyAsserted
            | Self::IdempotencyKeyReused
            | Self::ArtifactQuota { .. } => ErrorKind::Conflict,
            Self::CaptureLimit(_)
            | Self::LiveViewLimit(_)
            | Self::TenantLimit { .. }
            | Self::Overloaded { .. }
            | Self::QueueTimeout { .. } => ErrorKind::LimitExceeded,
            Self::Blocked(_) | Self::SiteDenied(_) => ErrorKind::Denied,
            Self::JobPanicked(_) => ErrorKind::Internal,
        }
    }

    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Core(e) => e.is_retryable(),
            Self::NotAuthenticated
            | Self::CaptureLimit(_)
            | Self::LiveViewLimit(_)
            | Self::Overloaded { .. }
            | Self::QueueTimeout { .. } => true,
            Self::TenantLimit { limit, .. } => limit.is_retryable(),
            _ => false,
        }
    }

    /// Stable machine-readable code for the wire, from [`abr_protocol::codes`].
    pub fn code(&self) -> &'static str {
        self.error_code().code
    }

    /// The entry of [`abr_protocol::codes`] this error is answered with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::Core(e) => e.error_code(),
            Self::CaptureNotFound => codes::CAPTURE_NOT_FOUND,
            Self::BindingMismatch => codes::BINDING_MISMATCH,
            Self::NotAuthenticated => codes::NOT_AUTHENTICATED,
            Self::CaptureLimit(_) => codes::CAPTURE_LIMIT,
            Self::CaptureBrowserLost => codes::CAPTURE_BROWSER_LOST,
            Self::LiveViewNotFound => codes::LIVE_VIEW_NOT_FOUND,
            Self::LiveViewLimit(_) => codes::LIVE_VIEW_LIMIT,
            Self::SelfApproval => codes::SELF_APPROVAL,
            Self::KeyNotFound => codes::KEY_NOT_FOUND,
            Self::LinkNotFound => codes::APPROVAL_LINK_NOT_FOUND,
            Self::SessionNotFound => codes::SESSION_NOT_FOUND,
            Self::SessionBound(_) => codes::SESSION_BOUND,
            Self::NoTakeover => codes::NO_TAKEOVER,
            Self::TakeoverState(_) => codes::TAKEOVER_OVER,
            Self::TakeoverPending => codes::TAKEOVER_PENDING,
            Self::InputNotAccepted(_) => codes::INPUT_NOT_ACCEPTED,
            Self::Blocked(_) => codes::BLOCKED_ACTION,
            Self::FrameNotFound => codes::FRAME_NOT_FOUND,
            Self::RunNotFound => codes::RUN_NOT_FOUND,
            Self::ArtifactNotFound(_) => codes::ARTIFACT_NOT_FOUND,
            Self::ArtifactRefused(refused) => {
                use abr_core::artifact::ArtifactRefused as R;
                match refused {
                    R::TooLarge { .. } => codes::ARTIFACT_TOO_LARGE,
                    R::Type { .. } => codes::ARTIFACT_TYPE_REFUSED,
                    R::Name | R::Empty => codes::INVALID_REQUEST,
                }
            }
            Self::ArtifactQuota { .. } => codes::ARTIFACT_QUOTA,
            Self::SiteDenied(_) => codes::SITE_DENIED,
            Self::BrowseNotFound => codes::BROWSE_NOT_FOUND,
            Self::RefNotFound(_) => codes::REF_NOT_FOUND,
            Self::PlanHashMismatch => codes::PLAN_HASH_MISMATCH,
            Self::TaskNotPending => codes::TASK_NOT_PENDING,
            Self::ActionNotPending => codes::ACTION_NOT_PENDING,
            Self::PreviewNotFound => codes::PREVIEW_NOT_FOUND,
            Self::TaskNotQueued => codes::TASK_NOT_QUEUED,
            Self::NotUncertain => codes::NOT_UNCERTAIN,
            Self::TaskNotRetryable(_) => codes::TASK_NOT_RETRYABLE,
            Self::AlreadyAsserted => codes::ALREADY_ASSERTED,
            Self::IdempotencyKeyReused => codes::IDEMPOTENCY_KEY_REUSED,
            Self::Overloaded { .. } => codes::OVERLOADED,
            Self::QueueTimeout { .. } => codes::QUEUE_TIMEOUT,
            Self::JobPanicked(_) => codes::JOB_PANICKED,
            Self::TenantLimit { limit, .. } => limit.error_code(),
        }
    }

    /// When to retry (`Retry-After`), where the error says: a busy provider, a per-tenant
    /// limit (for the daily limit, the seconds to the next UTC day), a full machine.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Core(e) => e.retry_after(),
            Self::TenantLimit { retry_after, .. } => *retry_after,
            Self::Overloaded { retry_after } | Self::QueueTimeout { retry_after } => {
                Some(*retry_after)
            }
            _ => None,
        }
    }

    /// The wire form.
    pub fn to_body(&self) -> ErrorBody {
        ErrorBody::new(self.code(), self.to_string()).retryable(self.is_retryable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_error_has_a_stable_code_kind_and_retryability() {
        let cases = [
            (
                EngineError::BindingMismatch,
                ErrorKind::Forbidden,
                "binding_mismatch",
                false,
            ),
            (
                EngineError::CaptureNotFound,
                ErrorKind::NotFound,
                "capture_not_found",
                false,
            ),
            (
                EngineError::NotAuthenticated,
                ErrorKind::Conflict,
                "not_authenticated",
                true,
            ),
            (
                EngineError::CaptureLimit(2),
                ErrorKind::LimitExceeded,
                "capture_limit",
                true,
            ),
            (
                EngineError::QueueTimeout {
                    retry_after: Duration::from_secs(5),
                },
                ErrorKind::LimitExceeded,
                "queue_timeout",
                true,
            ),
            (
                EngineError::JobPanicked("it may have been published"),
                ErrorKind::Internal,
                "job_panicked",
                false,
            ),
            (
                EngineError::Core(CoreError::TaskNotFound),
                ErrorKind::NotFound,
                "task_not_found",
                false,
            ),
        ];
        for (e, kind, code, retryable) in cases {
            assert_eq!(
                (e.kind(), e.code(), e.is_retryable()),
                (kind, code, retryable),
                "{e}"
            );
            let body = e.to_body();
            assert_eq!((body.code.as_str(), body.retryable), (code, retryable));
        }
    }

    #[test]
    fn a_core_error_passes_through_with_its_own_code_and_wait() {
        let busy = ProviderError::new(abr_core::ProviderErrorKind::Busy, "full")
            .with_retry_after(Duration::from_secs(3));
        let e = EngineError::from(busy);
        assert_eq!(e.code(), "provider_busy");
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        assert!(e.is_retryable());
        let e = EngineError::from(StoreFailure::conflict("lost a race"));
        assert_eq!(e.code(), "store_failed");
        assert_eq!(e.kind(), ErrorKind::Conflict);
    }
}
