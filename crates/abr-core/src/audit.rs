//! Audit: redacted events about captures, probes, posts, tasks and denials.
//!
//! Events carry platform, tenant, task and proposal ids, timestamps, outcomes and counts,
//! for tasks the approver and the steps' types and descriptions, and for a tenant's guard
//! settings the person who changed them, the screenshots switch's new value and a site
//! decision's domain and decision. By construction they
//! have no field that could hold a cookie value, localStorage, a token, a screenshot, posted
//! content, a typed value, an input or extracted data.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_protocol::{FailureStage, SiteDecision};
use async_trait::async_trait;
use serde::Serialize;
use time::OffsetDateTime;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// A capture was started.
    CaptureStarted,
    /// A capture was finished and its session exported.
    CaptureFinished,
    /// A capture was cancelled.
    CaptureCancelled,
    /// A capture expired and its browser was released.
    CaptureExpired,
    /// A session was probed.
    Probe,
    /// A post was attempted.
    Post,
    /// A request was refused by a platform's execution policy.
    ExecutionDenied,
    /// A task was created (its steps listed; approved at once when the rule let it through).
    TaskCreated,
    /// A task was approved.
    TaskApproved,
    /// A task was rejected.
    TaskRejected,
    /// A task ran (the steps performed, the outcome, the screenshots).
    TaskRun,
    /// An uncertain task was re-checked (read-only).
    TaskRechecked,
    /// An owner asserted an uncertain task did not happen.
    TaskAsserted,
    /// A task was retried (`retryTaskId` is the new attempt).
    TaskRetried,
    /// A task a stopped runner left unfinished was ended.
    TaskRecovered,
    /// A journaled post's idempotency key was repeated: the original answered, nothing ran.
    PostReplayed,
    /// An uncertain post was re-checked (read-only).
    PostRechecked,
    /// An owner asserted an uncertain post did not happen.
    PostAsserted,
    /// A post a stopped runner left running was ended.
    PostRecovered,
    /// A tenant switched its replay screenshots on or off (`screenshotsEnabled`).
    ScreenshotsChanged,
    /// A tenant allowed or denied a site (`domain`, `decision`).
    SiteDecided,
    /// A tenant removed its decision about a site (`domain`).
    SiteRemoved,
    /// A run asked to use a named browser profile nobody decided on (`profile`): the
    /// owner's consent was requested, once per profile.
    ProfileConsentAsked,
    /// A tenant's owner allowed or declined a named browser profile (`profile`,
    /// `decision`; `actor`: who, `keyId`: the key).
    ProfileDecided,
    /// An operator created an API key (`actor`: the key's id and role).
    KeyCreated,
    /// An operator revoked an API key (`actor`: the key's id and role).
    KeyRevoked,
    /// An operator re-enrolled a runner that was connected with its own credential: that
    /// credential is revoked and its socket closed (`actor`: the operator's key id and
    /// role; `accountId`: the runner id).
    RunnerReenrolled,
    /// A tenant kept a file as an artifact (`artifactId`; `actor`: the key's id and role).
    /// Never its name or bytes.
    ArtifactKept,
    /// A tenant deleted an artifact (`artifactId`, `actor`).
    ArtifactDeleted,
}

/// The `platform` of audit events about a tenant's own settings and decisions (no platform
/// involved): the screenshots switch, sites, keys, profiles.
pub const SETTINGS_PLATFORM: &str = "settings";

/// One step of a task, as audited: its type and description, never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditStep {
    /// The step's index.
    pub index: usize,
    /// Its type (`click`, ...).
    pub action: String,
    /// Its description, as the approver saw it.
    pub description: String,
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// Succeeded / confirmed.
    Ok,
    /// Post submitted but unconfirmed.
    Uncertain,
    /// Session invalid.
    NeedsReauth,
    /// Failed.
    Failed,
    /// Refused.
    Denied,
}

impl From<abr_protocol::RecheckAnswer> for AuditOutcome {
    /// A re-check's answer as audited: confirmed is ok, ambiguous uncertain, not found and
    /// unavailable failed (not finding an outcome is not proof of anything).
    fn from(answer: abr_protocol::RecheckAnswer) -> Self {
        use abr_protocol::RecheckAnswer;
        match answer {
            RecheckAnswer::Confirmed => Self::Ok,
            RecheckAnswer::Ambiguous => Self::Uncertain,
            RecheckAnswer::NotFound | RecheckAnswer::Unavailable => Self::Failed,
        }
    }
}

/// One audit event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// What.
    pub action: AuditAction,
    /// Outcome.
    pub outcome: AuditOutcome,
    /// Platform id.
    pub platform: String,
    /// Tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Cookies in the session that went in or came out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie_count: Option<u32>,
    /// localStorage origins in the session that went in or came out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_count: Option<u32>,
    /// Items the scope filter dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_count: Option<u32>,
    /// Failed stage of a post.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_stage: Option<FailureStage>,
    /// Stable error code, never a message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Duration of the operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The orchestrator's proposal id of the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    /// Who approved the task (`auto:<rule>` when the approval rule did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// Who else acted: the person rejecting, the owner asserting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// When the task started running.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub executed_at: Option<OffsetDateTime>,
    /// The task's steps: planned (created) or performed (run), types and descriptions only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<AuditStep>>,
    /// Names of the screenshots the task took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshots: Option<Vec<String>>,
    /// The step a task failed at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<usize>,
    /// The new attempt of a retried task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_task_id: Option<String>,
    /// The journaled post.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
    /// The post a journaled post is a new attempt of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// The tenant's screenshots switch after a change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshots_enabled: Option<bool>,
    /// The site a decision is about (a host name, covering its subdomains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The decision about `domain` or `profile`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<SiteDecision>,
    /// The named browser profile a consent is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The artifact kept or deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// The API key that made a change of the tenant's settings (its id, never its token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
}

impl AuditEvent {
    /// An event with no counts.
    pub fn new(
        at: OffsetDateTime,
        action: AuditAction,
        outcome: AuditOutcome,
        platform: impl Into<String>,
    ) -> Self {
        Self {
            at,
            action,
            outcome,
            platform: platform.into(),
            workspace_id: None,
            account_id: None,
            cookie_count: None,
            origin_count: None,
            dropped_count: None,
            failure_stage: None,
            error_code: None,
            duration_ms: None,
            task_id: None,
            proposal_id: None,
            approved_by: None,
            actor: None,
            executed_at: None,
            steps: None,
            screenshots: None,
            failed_step: None,
            retry_task_id: None,
            post_id: None,
            retry_of: None,
            screenshots_enabled: None,
            domain: None,
            profile: None,
            decision: None,
            artifact_id: None,
            key_id: None,
        }
    }

    /// Sets the tenant ids.
    #[must_use]
    pub fn tenant(mut self, workspace_id: Option<&str>, account_id: Option<&str>) -> Self {
        self.workspace_id = workspace_id.map(str::to_owned);
        self.account_id = account_id.map(str::to_owned);
        self
    }
}

/// Why a sink failed.
#[derive(Debug, thiserror::Error)]
#[error("audit sink failed: {0}")]
pub struct AuditError(pub String);

/// Receives audit events.
///
/// # Contract
/// Best effort: the core calls it in the background with a deadline; an error, a panic or
/// a hang in a sink never fails or delays the operation it describes.
#[async_trait]
pub trait AuditSink: Send + Sync + 'static {
    /// Records one event.
    async fn record(&self, event: &AuditEvent) -> Result<(), AuditError>;
}

/// Delivers events to a sink without ever blocking the caller.
#[derive(Clone, Default)]
pub struct Auditor {
    sink: Option<Arc<dyn AuditSink>>,
    deadline: Duration,
}

impl Auditor {
    /// No sink: events are discarded.
    pub fn none() -> Self {
        Self {
            sink: None,
            deadline: Duration::from_secs(5),
        }
    }

    /// Delivers to `sink`, giving each delivery `deadline`.
    pub fn new(sink: Arc<dyn AuditSink>, deadline: Duration) -> Self {
        Self {
            sink: Some(sink),
            deadline,
        }
    }

    /// Sends an event in the background.
    pub fn emit(&self, event: AuditEvent) {
        let Some(sink) = self.sink.clone() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("audit event dropped: no tokio runtime");
            return;
        };
        let deadline = self.deadline;
        handle.spawn(async move {
            match tokio::time::timeout(deadline, sink.record(&event)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(action = ?event.action, error = %e, "audit sink failed")
                }
                Err(_) => tracing::warn!(action = ?event.action, "audit sink timed out"),
            }
        });
    }
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor")
            .field("has_sink", &self.sink.is_some())
            .finish()
    }
}

/// Keeps events in memory (tests, small deployments).
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    events: Mutex<Vec<AuditEvent>>,
}

impl MemoryAuditSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything recorded so far.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl AuditSink for MemoryAuditSink {
    async fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
        Ok(())
    }
}
