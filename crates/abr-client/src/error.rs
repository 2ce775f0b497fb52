//! [`ClientError`]: what can go wrong talking to the runner, and whether a retry is safe.

use std::fmt;
use std::time::Duration;

/// One call of the runner's HTTP API. Carried by transport and decode errors so that a
/// message names the call without printing its URL (a capture id in a path is a credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `GET /v1/health`.
    Health,
    /// `GET /v1/platforms`.
    Platforms,
    /// `POST /v1/capture/start`.
    CaptureStart,
    /// `POST /v1/capture/finish`.
    CaptureFinish,
    /// `POST /v1/capture/cancel`.
    CaptureCancel,
    /// `POST /v1/capture/status`.
    CaptureStatus,
    /// `POST /v1/post`.
    Post,
    /// `POST /v1/probe`.
    Probe,
    /// The live view's socket (`/live/{liveToken}/ws`).
    LiveView,
    /// `POST /v1/tasks`.
    CreateTask,
    /// `GET /v1/tasks/{id}`, with or without a long poll.
    GetTask,
    /// `POST /v1/tasks/{id}/approve`.
    ApproveTask,
    /// `POST /v1/tasks/{id}/approval-link` or `/v1/browse/{id}/approval-link`.
    ApprovalLink,
    /// `POST /v1/tasks/{id}/reject`.
    RejectTask,
    /// `POST /v1/tasks/{id}/recheck`.
    RecheckTask,
    /// `POST /v1/tasks/{id}/assert-not-posted`.
    AssertTaskNotPosted,
    /// `POST /v1/tasks/{id}/retry`.
    RetryTask,
    /// `GET /v1/tasks/{id}/screenshots/{name}`.
    TaskScreenshot,
    /// `PUT /v1/sessions/{id}`.
    StoreSession,
    /// `GET /v1/sessions/{id}`.
    GetSession,
    /// `DELETE /v1/sessions/{id}`.
    DeleteSession,
    /// `GET /v1/posts/{id}`.
    GetPost,
    /// `POST /v1/posts/{id}/recheck`.
    RecheckPost,
    /// `POST /v1/posts/{id}/assert-not-posted`.
    AssertPostNotPosted,
    /// `GET /v1/runs/{runId}/frames`.
    Frames,
    /// `GET /v1/runs/{runId}/frames/{seq}`.
    Frame,
    /// `GET /v1/runs/{runId}/timeline` (JSON or markdown).
    Timeline,
    /// `GET /v1/settings/screenshots`.
    ScreenshotsSetting,
    /// `PUT /v1/settings/screenshots`.
    SetScreenshots,
    /// `GET /v1/sites`.
    Sites,
    /// `PUT /v1/sites/{domain}`.
    DecideSite,
    /// `DELETE /v1/sites/{domain}`.
    RemoveSite,
    /// `GET /v1/profiles`.
    Profiles,
    /// `PUT /v1/profiles/{name}/consent`.
    DecideProfileConsent,
    /// `POST /v1/tasks/{id}/takeover`.
    TakeOver,
    /// `POST /v1/tasks/{id}/takeover/resume`.
    ResumeTakeover,
    /// `POST /v1/tasks/{id}/takeover/end`.
    EndTakeover,
    /// `POST /v1/browse`.
    BrowseOpen,
    /// `GET /v1/browse/{id}/snapshot`.
    BrowseSnapshot,
    /// `POST /v1/browse/{id}/act`.
    BrowseAct,
    /// `DELETE /v1/browse/{id}`.
    BrowseClose,
    /// `POST /v1/browse/{id}/input-request`.
    BrowseRequestInput,
    /// `POST /v1/tasks/{id}/takeover/input`.
    SupplyInput,
    /// `GET /v1/tasks`, `/v1/posts`, `/v1/approvals`, `/v1/takeovers`, `/v1/sessions`.
    List,
    /// `GET /v1/browse/{id}/approval`.
    BrowseApproval,
    /// `GET /v1/browse/{id}/approval/preview`.
    BrowseApprovalPreview,
    /// `POST /v1/browse/{id}/approve` or `/reject`.
    DecideBrowseAction,
    /// `POST /v1/keys`.
    CreateKey,
    /// `GET /v1/keys`.
    ListKeys,
    /// `DELETE /v1/keys/{id}`.
    RevokeKey,
    /// `POST /v1/artifacts`.
    UploadArtifact,
    /// `GET /v1/artifacts`.
    ListArtifacts,
    /// `GET /v1/artifacts/{id}`.
    GetArtifact,
    /// `GET /v1/artifacts/{id}/content`.
    ArtifactContent,
    /// `DELETE /v1/artifacts/{id}`.
    DeleteArtifact,
}

impl Operation {
    /// Stable snake_case name, e.g. `capture_status`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Health => "health",
            Self::Platforms => "platforms",
            Self::CaptureStart => "capture_start",
            Self::CaptureFinish => "capture_finish",
            Self::CaptureCancel => "capture_cancel",
            Self::CaptureStatus => "capture_status",
            Self::Post => "post",
            Self::Probe => "probe",
            Self::LiveView => "live_view",
            Self::CreateTask => "create_task",
            Self::GetTask => "get_task",
            Self::ApproveTask => "approve_task",
            Self::ApprovalLink => "approval_link",
            Self::RejectTask => "reject_task",
            Self::RecheckTask => "recheck_task",
            Self::AssertTaskNotPosted => "assert_task_not_posted",
            Self::RetryTask => "retry_task",
            Self::TaskScreenshot => "task_screenshot",
            Self::StoreSession => "store_session",
            Self::GetSession => "get_session",
            Self::DeleteSession => "delete_session",
            Self::GetPost => "get_post",
            Self::RecheckPost => "recheck_post",
            Self::AssertPostNotPosted => "assert_post_not_posted",
            Self::Frames => "frames",
            Self::Frame => "frame",
            Self::Timeline => "timeline",
            Self::ScreenshotsSetting => "screenshots_setting",
            Self::SetScreenshots => "set_screenshots",
            Self::Sites => "sites",
            Self::DecideSite => "decide_site",
            Self::RemoveSite => "remove_site",
            Self::Profiles => "profiles",
            Self::DecideProfileConsent => "decide_profile_consent",
            Self::TakeOver => "take_over",
            Self::ResumeTakeover => "resume_takeover",
            Self::EndTakeover => "end_takeover",
            Self::BrowseOpen => "browse_open",
            Self::BrowseSnapshot => "browse_snapshot",
            Self::BrowseAct => "browse_act",
            Self::BrowseClose => "browse_close",
            Self::BrowseRequestInput => "browse_request_input",
            Self::SupplyInput => "supply_input",
            Self::List => "list",
            Self::BrowseApproval => "browse_approval",
            Self::BrowseApprovalPreview => "browse_approval_preview",
            Self::DecideBrowseAction => "decide_browse_action",
            Self::CreateKey => "create_key",
            Self::ListKeys => "list_keys",
            Self::RevokeKey => "revoke_key",
            Self::UploadArtifact => "upload_artifact",
            Self::ListArtifacts => "list_artifacts",
            Self::GetArtifact => "get_artifact",
            Self::ArtifactContent => "artifact_content",
            Self::DeleteArtifact => "delete_artifact",
        }
    }

    /// Whether sending the same call twice can have no effect beyond sending it once: true
    /// for the reads (health, platforms, capture status, a task, its screenshot, a stored
    /// session, a run's frames, the screenshots switch, the site list, a browse snapshot), a
    /// task's re-check
    /// (read-only: it runs no step), and storing or deleting a session, setting the
    /// screenshots switch, deciding or removing a site (the same state either way); false
    /// for the calls that act (a takeover moves once: started, resumed, ended) (a second capture
    /// start opens a second capture, a second finish or post acts again; a task is created,
    /// approved, rejected, asserted or retried once: resend one of those only after reading
    /// the task, or, for a create, with the same `Idempotency-Key`).
    pub fn is_idempotent(self) -> bool {
        matches!(
            self,
            Self::Health
                | Self::Platforms
                | Self::CaptureStatus
                | Self::GetTask
                | Self::RecheckTask
                | Self::TaskScreenshot
                | Self::StoreSession
                | Self::GetSession
                | Self::DeleteSession
                | Self::GetPost
                | Self::RecheckPost
                | Self::Frames
                | Self::Frame
                | Self::ScreenshotsSetting
                | Self::SetScreenshots
                | Self::Sites
                | Self::List
                | Self::ListKeys
                | Self::RevokeKey
                | Self::DecideSite
                | Self::RemoveSite
                | Self::Profiles
                | Self::DecideProfileConsent
                | Self::BrowseSnapshot
                | Self::BrowseApproval
                | Self::BrowseApprovalPreview
                | Self::ListArtifacts
                | Self::GetArtifact
                | Self::ArtifactContent
        )
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of transport failure a [`ClientError::Transport`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// No connection could be made (refused, DNS, TLS handshake, connect timeout): the
    /// request never reached the runner.
    Connect,
    /// The deadline passed after the request was sent: the runner may have acted on it.
    Timeout,
    /// Anything else (connection reset mid-request, body read failure): the runner may have
    /// acted on the request.
    Other,
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "cannot connect to the runner",
            Self::Timeout => "timed out waiting for the runner",
            Self::Other => "transport error talking to the runner",
        })
    }
}

/// An error of [`AgentRunnerClient`](crate::AgentRunnerClient).
///
/// No variant carries the bearer token, a request URL (a capture id in a path is a
/// credential) or a large response body.
///
/// # Retrying
///
/// The client never retries anything by itself. [`is_retryable`](Self::is_retryable) says
/// when sending the *same* request again is safe. For [`post`](crate::AgentRunnerClient::post)
/// in particular, any error other than an [`Api`](Self::Api) error from the runner, or a
/// [`Transport`](Self::Transport) error of kind [`Connect`](TransportKind::Connect), means the
/// post may have run: treat it like an `uncertain` result (manual review, never retry).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The runner (or something in front of it) answered with a non-2xx status.
    #[error("runner answered HTTP {status} ({code}): {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// The runner's stable code (e.g. `binding_mismatch`), exactly as sent; `http_<status>`
        /// when the body was not an ABR error envelope (a proxy page, a redirect).
        code: String,
        /// The runner's message, exactly as sent; a short description of the answer when the
        /// body was not an envelope (the body itself is never echoed).
        message: String,
        /// The envelope's `retryable` flag; `false` when there was no envelope.
        retryable: bool,
        /// `Retry-After`, when the answer carried one in seconds.
        retry_after: Option<Duration>,
    },
    /// The request could not be sent or its answer not received.
    #[error("{operation}: {kind}: {message}")]
    Transport {
        /// The call that failed.
        operation: Operation,
        /// What failed.
        kind: TransportKind,
        /// The transport's explanation, without the URL.
        message: String,
    },
    /// The runner answered 2xx, but the body is not the expected JSON type.
    #[error("{operation}: HTTP {status} answer is not the expected JSON: {message}")]
    Decode {
        /// The call whose answer could not be read.
        operation: Operation,
        /// HTTP status (2xx).
        status: u16,
        /// What did not match; string values from the body are redacted.
        message: String,
    },
    /// The client was configured wrongly (base URL, token, TLS setup).
    #[error("invalid client configuration: {message}")]
    InvalidConfig {
        /// What is wrong; never echoes the token or the URL.
        message: String,
    },
    /// An argument of a call cannot be sent (e.g. an empty capture id); nothing was sent.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// What is wrong.
        message: String,
    },
}

impl ClientError {
    /// The HTTP status of the answer, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } | Self::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The error code of an [`Api`](Self::Api) error (the runner's, or `http_<status>`).
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Whether this is an [`Api`](Self::Api) error with `code` (from
    /// [`abr_protocol::codes`], the table the runner answers from), e.g.
    /// `e.is(codes::NOT_AUTHENTICATED)`.
    pub fn is(&self, code: abr_protocol::codes::ErrorCode) -> bool {
        self.code() == Some(code.code)
    }

    /// The error message of an [`Api`](Self::Api) error.
    pub fn api_message(&self) -> Option<&str> {
        match self {
            Self::Api { message, .. } => Some(message),
            _ => None,
        }
    }

    /// Whether sending the same request again may succeed and is safe:
    ///
    /// - [`Api`](Self::Api): the runner's `retryable` flag, or status 429 / 503 (the runner
    ///   did not take the request on);
    /// - [`Transport`](Self::Transport): only for [idempotent](Operation::is_idempotent)
    ///   calls. For a `POST` the caller decides with [`is_connect`](Self::is_connect): a
    ///   connect failure means nothing was sent;
    /// - anything else: no.
    ///
    /// The client itself never retries. Back off by [`retry_after`](Self::retry_after) when
    /// present.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Api {
                status, retryable, ..
            } => *retryable || matches!(status, 429 | 503),
            Self::Transport { operation, .. } => operation.is_idempotent(),
            _ => false,
        }
    }

    /// How long the runner asked to wait before trying again (`Retry-After`, seconds).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether this is a [`Transport`](Self::Transport) error (no HTTP answer).
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Transport { .. })
    }

    /// Whether no connection could be made: the request never reached the runner.
    pub fn is_connect(&self) -> bool {
        matches!(
            self,
            Self::Transport {
                kind: TransportKind::Connect,
                ..
            }
        )
    }

    /// Whether the request timed out after it was sent: the runner may have acted on it.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Self::Transport {
                kind: TransportKind::Timeout,
                ..
            }
        )
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::InvalidConfig {
            message: message.into(),
        }
    }

    pub(crate) fn argument(message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            message: message.into(),
        }
    }

    /// A transport error, stripped of its URL.
    pub(crate) fn transport(operation: Operation, error: reqwest::Error) -> Self {
        let kind = if error.is_connect() {
            TransportKind::Connect
        } else if error.is_timeout() {
            TransportKind::Timeout
        } else {
            TransportKind::Other
        };
        Self::Transport {
            operation,
            kind,
            message: error_chain(&error.without_url()),
        }
    }
}

/// Longest message this crate builds from text it did not write.
const MAX_MESSAGE: usize = 300;

/// `error: source: source ...`, skipping a source whose text its parent already shows.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let text = source.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = source.source();
    }
    shorten(&out)
}

/// `text` cut to [`MAX_MESSAGE`] characters.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A serde_json error message with any quoted string value from the document redacted:
/// `invalid type: string "s3cr3t", expected u32` would otherwise echo a cookie value.
pub(crate) fn redact_json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let redacted = match (text.find('"'), text.rfind('"')) {
        (Some(first), Some(last)) if first < last => {
            format!("{}<redacted>{}", &text[..first], &text[last + 1..])
        }
        (Some(first), _) => format!("{}<redacted>", &text[..first]),
        _ => text,
    };
    shorten(&redacted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_lose_string_values() {
        let e = serde_json::from_str::<u32>(r#""s3cr3t-cookie""#).unwrap_err();
        let m = redact_json_error(&e);
        assert!(!m.contains("s3cr3t"), "{m}");
        assert!(m.contains("invalid type"), "{m}");
        assert!(m.contains("<redacted>"), "{m}");
    }

    #[test]
    fn json_errors_keep_field_names() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            needed: u32,
        }
        let e = serde_json::from_str::<T>("{}").unwrap_err();
        assert!(redact_json_error(&e).contains("missing field `needed`"));
    }

    #[test]
    fn long_text_is_shortened() {
        let s = shorten(&"é".repeat(1000));
        assert_eq!(s.chars().count(), MAX_MESSAGE + 1);
    }

    #[test]
    fn retryability_follows_flag_status_and_idempotence() {
        let api = |status, retryable| ClientError::Api {
            status,
            code: "x".into(),
            message: "y".into(),
            retryable,
            retry_after: None,
        };
        assert!(api(409, true).is_retryable());
        assert!(!api(422, false).is_retryable());
        assert!(api(429, false).is_retryable());
        assert!(api(503, false).is_retryable());
        assert!(!api(500, false).is_retryable());
        let transport = |operation| ClientError::Transport {
            operation,
            kind: TransportKind::Connect,
            message: String::new(),
        };
        assert!(transport(Operation::CaptureStatus).is_retryable());
        assert!(!transport(Operation::Post).is_retryable());
        assert!(!transport(Operation::CaptureFinish).is_retryable());
    }
}
