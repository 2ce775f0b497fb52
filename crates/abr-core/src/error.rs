//! Typed errors of the core: every error has a [`ErrorKind`] and a retryability, and none
//! carries a secret in its message.

use std::time::Duration;

use abr_protocol::ErrorBody;
use abr_protocol::codes::{self, ErrorCode};

use crate::scope::ScopeError;

pub mod plan;
pub mod store;

pub use plan::{PlanError, PlanLocation, PlanProblem, UrlProblem};
pub use store::{StoreFailure, StoreFailureKind};

/// The broad category of an error: what a caller branches on (and what the HTTP layer maps
/// to a status code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is malformed or violates a rule (400/422).
    InvalidInput,
    /// The thing named does not exist (404).
    NotFound,
    /// The caller may not do this to this thing (403).
    Forbidden,
    /// The thing is not in a state that allows this, yet (409).
    Conflict,
    /// A policy forbids this execution mode (403).
    Denied,
    /// A concurrency or rate limit was hit (429/503).
    LimitExceeded,
    /// A dependency (browser, remote provider) is unavailable (502/503).
    Unavailable,
    /// A deadline passed (504).
    Timeout,
    /// The operation is not supported by this backend (501).
    Unsupported,
    /// A bug: a strategy panicked or an invariant broke (500).
    Internal,
}

/// An error of a [`SessionProvider`](crate::provider::SessionProvider).
///
/// Providers construct it with [`ProviderError::new`]; the message must not contain cookie
/// values, tokens or URLs that carry credentials.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    kind: ProviderErrorKind,
    message: String,
    retry_after: Option<Duration>,
}

/// What kind of provider failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The browser or remote service cannot be reached or refused the request (retryable).
    Unavailable,
    /// The provider is at capacity; `retry_after` may say when to come back (retryable).
    Busy,
    /// A deadline passed (retryable).
    Timeout,
    /// The browser died or the remote session expired mid-job (retryable).
    Crashed,
    /// The provider is configured wrongly or something it needs is not installed.
    Misconfigured,
    /// The provider rejected the request as invalid.
    Rejected,
    /// The provider cannot do this (e.g. interactive capture on a headless-only backend).
    Unsupported,
    /// Anything else.
    Other,
}

impl ProviderError {
    /// A provider error of `kind`.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Says when to retry (from a `Retry-After` header, say).
    #[must_use]
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The kind.
    pub fn kind(&self) -> ProviderErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// When to retry, if the provider said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ProviderErrorKind::Unavailable
                | ProviderErrorKind::Busy
                | ProviderErrorKind::Timeout
                | ProviderErrorKind::Crashed
        )
    }

    /// Stable machine-readable code.
    pub fn code(&self) -> &'static str {
        self.error_code().code
    }

    /// The entry of [`abr_protocol::codes`] this error is answered with.
    pub fn error_code(&self) -> ErrorCode {
        match self.kind {
            ProviderErrorKind::Unavailable => codes::PROVIDER_UNAVAILABLE,
            ProviderErrorKind::Busy => codes::PROVIDER_BUSY,
            ProviderErrorKind::Timeout => codes::PROVIDER_TIMEOUT,
            ProviderErrorKind::Crashed => codes::BROWSER_CRASHED,
            ProviderErrorKind::Misconfigured => codes::PROVIDER_MISCONFIGURED,
            ProviderErrorKind::Rejected => codes::PROVIDER_REJECTED,
            ProviderErrorKind::Unsupported => codes::PROVIDER_UNSUPPORTED,
            ProviderErrorKind::Other => codes::PROVIDER_ERROR,
        }
    }
}

/// Errors of core operations (capture management, probing, posting preconditions).
///
/// Post *outcomes* are not errors: they are [`AgentPostResult`](abr_protocol::AgentPostResult)s.
/// A `CoreError` means the request itself could not be carried out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A platform's scope is invalid.
    #[error("invalid session scope: {0}")]
    InvalidScope(#[from] ScopeError),
    /// The request is malformed.
    #[error("invalid request: {0}")]
    InvalidInput(String),
    /// No strategy is registered under this id.
    #[error("unknown platform `{0}`")]
    UnknownPlatform(String),
    /// A strategy with this id is already registered.
    #[error("platform `{0}` is already registered")]
    DuplicatePlatform(String),
    /// The platform's policy forbids this execution mode.
    #[error("platform `{platform}` does not allow {mode}")]
    ExecutionDenied {
        /// Platform id.
        platform: String,
        /// `unattended execution` or `interactive capture`.
        mode: &'static str,
    },
    /// The principal's role does not allow this, or a read-only key asked to commit.
    #[error("{0}")]
    Forbidden(String),
    /// The principal is bound to another tenant than the one the request names.
    #[error("this key is bound to another tenant")]
    TenantForbidden,
    /// The provider cannot do what was asked.
    #[error("provider `{provider}` does not support {what}")]
    Unsupported {
        /// Provider name.
        provider: String,
        /// The missing capability.
        what: &'static str,
    },
    /// The browser provider failed.
    #[error("browser provider failed: {0}")]
    Provider(#[from] ProviderError),
    /// A strategy failed outside of a post (probe, capture check).
    #[error("strategy failed: {0}")]
    Strategy(#[from] StrategyError),
    /// A step did not finish before its deadline.
    #[error("{0} timed out")]
    Timeout(&'static str),
    /// A strategy panicked; only this request failed.
    #[error("the strategy panicked during {0}")]
    StrategyPanicked(&'static str),
    /// The provider panicked; only this request failed.
    #[error("the provider panicked {0}")]
    ProviderPanicked(&'static str),
    /// A store failed (its kind says how: a lost race, down now, a damaged record, set up
    /// wrong).
    #[error("store failed: {0}")]
    Store(#[from] StoreFailure),
    /// An internal failure (e.g. the OS random source); details are logged, not returned.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// A step plan is invalid (the error names the step).
    #[error("invalid plan: {0}")]
    InvalidPlan(#[from] PlanError),
    /// No task with this id for this tenant.
    #[error("task not found")]
    TaskNotFound,
    /// No journaled post with this id for this tenant.
    #[error("post not found")]
    PostNotFound,
    /// The run names a browser profile its tenant's owner has not allowed: `refused` when
    /// they declined it, else nobody decided yet (they were asked).
    #[error("{}", consent_message(profile, *refused))]
    ProfileConsent {
        /// The profile's name.
        profile: String,
        /// The owner declined it.
        refused: bool,
    },
}

fn consent_message(profile: &str, refused: bool) -> String {
    if refused {
        format!(
            "the owner declined the browser profile `{profile}`: nothing was opened \
             (PUT /v1/profiles/{profile}/consent decides)"
        )
    } else {
        format!(
            "the browser profile `{profile}` needs its owner's consent first: they were asked \
             (GET /v1/profiles), nothing was opened; submit again once \
             PUT /v1/profiles/{profile}/consent allows it"
        )
    }
}

impl CoreError {
    /// The category.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidScope(_)
            | Self::InvalidInput(_)
            | Self::DuplicatePlatform(_)
            | Self::InvalidPlan(_) => ErrorKind::InvalidInput,
            Self::UnknownPlatform(_) | Self::TaskNotFound | Self::PostNotFound => {
                ErrorKind::NotFound
            }
            Self::Forbidden(_) | Self::TenantForbidden => ErrorKind::Forbidden,
            Self::ExecutionDenied { .. } => ErrorKind::Denied,
            Self::ProfileConsent { refused: true, .. } => ErrorKind::Denied,
            Self::ProfileConsent { refused: false, .. } => ErrorKind::Conflict,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::Provider(e) => match e.kind() {
                ProviderErrorKind::Busy => ErrorKind::LimitExceeded,
                ProviderErrorKind::Timeout => ErrorKind::Timeout,
                ProviderErrorKind::Unsupported => ErrorKind::Unsupported,
                _ => ErrorKind::Unavailable,
            },
            Self::Strategy(e) if e.kind == StrategyErrorKind::NeedsReauth => ErrorKind::Conflict,
            Self::Strategy(_) => ErrorKind::Unavailable,
            Self::Store(e) => match e.kind() {
                StoreFailureKind::Conflict => ErrorKind::Conflict,
                StoreFailureKind::NotFound => ErrorKind::NotFound,
                StoreFailureKind::Corrupt => ErrorKind::Internal,
                StoreFailureKind::Unavailable | StoreFailureKind::Misconfigured => {
                    ErrorKind::Unavailable
                }
            },
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::StrategyPanicked(_) | Self::ProviderPanicked(_) | Self::Internal(_) => {
                ErrorKind::Internal
            }
        }
    }

    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Provider(e) => e.is_retryable(),
            Self::Timeout(_) => true,
            Self::Store(e) => e.is_retryable(),
            Self::Strategy(e) => e.kind == StrategyErrorKind::Failed,
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
            Self::InvalidScope(_) => codes::INVALID_SCOPE,
            Self::InvalidInput(_) => codes::INVALID_REQUEST,
            Self::UnknownPlatform(_) => codes::UNKNOWN_PLATFORM,
            Self::DuplicatePlatform(_) => codes::DUPLICATE_PLATFORM,
            Self::ExecutionDenied { .. } => codes::EXECUTION_DENIED,
            Self::Forbidden(_) => codes::FORBIDDEN,
            Self::TenantForbidden => codes::TENANT_FORBIDDEN,
            Self::Unsupported { .. } => codes::UNSUPPORTED,
            Self::Provider(e) => e.error_code(),
            Self::Strategy(e) if e.kind == StrategyErrorKind::NeedsReauth => {
                codes::NOT_AUTHENTICATED
            }
            Self::Strategy(_) => codes::STRATEGY_FAILED,
            Self::Timeout(_) => codes::TIMEOUT,
            Self::StrategyPanicked(_) => codes::STRATEGY_PANICKED,
            Self::ProviderPanicked(_) => codes::PROVIDER_PANICKED,
            Self::Store(e) if e.kind() == StoreFailureKind::Misconfigured => {
                codes::STORE_MISCONFIGURED
            }
            Self::Store(_) => codes::STORE_FAILED,
            Self::Internal(_) => codes::INTERNAL,
            Self::InvalidPlan(_) => codes::INVALID_PLAN,
            Self::TaskNotFound => codes::TASK_NOT_FOUND,
            Self::PostNotFound => codes::POST_NOT_FOUND,
            Self::ProfileConsent { refused: true, .. } => codes::CONSENT_REFUSED,
            Self::ProfileConsent { refused: false, .. } => codes::CONSENT_REQUIRED,
        }
    }

    /// When to retry (`Retry-After`), where the error says: a busy provider.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Provider(e) => e.retry_after(),
            _ => None,
        }
    }

    /// The wire form.
    pub fn to_body(&self) -> ErrorBody {
        ErrorBody::new(self.code(), self.to_string()).retryable(self.is_retryable())
    }
}

/// How a strategy step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StrategyErrorKind {
    /// The site rejected the session: the user must sign in again.
    NeedsReauth,
    /// The step failed. At or after submit, the core treats this as *uncertain*: the action
    /// may have happened.
    Failed,
    /// The step failed and the strategy has evidence nothing was posted (e.g. the site showed
    /// an error page and the post is absent on read-back). Safe to retry at any stage.
    NotPosted,
}

/// A failure reported by a [`WebPostStrategy`](crate::strategy::WebPostStrategy) step.
///
/// `code` is a stable snake_case identifier chosen by the strategy; `message` is shown to
/// operators and must not contain the posted content or session values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct StrategyError {
    /// How it failed.
    pub kind: StrategyErrorKind,
    /// Stable machine-readable code, e.g. `composer_not_found`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}

impl StrategyError {
    /// A failure of `kind`.
    pub fn new(
        kind: StrategyErrorKind,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            code: code.into(),
            message: message.into(),
        }
    }

    /// The step failed (uncertain if at or after submit).
    pub fn failed(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StrategyErrorKind::Failed, code, message)
    }

    /// The step failed with evidence nothing was posted.
    pub fn not_posted(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StrategyErrorKind::NotPosted, code, message)
    }

    /// The session is no longer valid.
    pub fn needs_reauth(message: impl Into<String>) -> Self {
        Self::new(StrategyErrorKind::NeedsReauth, "needs_reauth", message)
    }

    /// The wire form.
    pub fn to_body(&self) -> ErrorBody {
        ErrorBody::new(self.code.clone(), self.message.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_error_retryability_follows_kind() {
        assert!(ProviderError::new(ProviderErrorKind::Busy, "x").is_retryable());
        assert!(!ProviderError::new(ProviderErrorKind::Misconfigured, "x").is_retryable());
        let e = CoreError::from(
            ProviderError::new(ProviderErrorKind::Busy, "full")
                .with_retry_after(Duration::from_secs(3)),
        );
        assert_eq!(e.kind(), ErrorKind::LimitExceeded);
        assert!(e.is_retryable());
        assert_eq!(e.to_body().code, "provider_busy");
    }

    #[test]
    fn every_core_error_has_a_stable_code_and_kind() {
        let cases = [
            (
                CoreError::TenantForbidden,
                ErrorKind::Forbidden,
                "tenant_forbidden",
            ),
            (
                CoreError::TaskNotFound,
                ErrorKind::NotFound,
                "task_not_found",
            ),
            (
                CoreError::Strategy(StrategyError::needs_reauth("signed out")),
                ErrorKind::Conflict,
                "not_authenticated",
            ),
            (CoreError::Timeout("acquire"), ErrorKind::Timeout, "timeout"),
            (
                CoreError::ExecutionDenied {
                    platform: "x".into(),
                    mode: "unattended execution",
                },
                ErrorKind::Denied,
                "execution_denied",
            ),
        ];
        for (e, kind, code) in cases {
            assert_eq!((e.kind(), e.code()), (kind, code), "{e}");
        }
    }
}
