//! [`TaskRunner`]: create → approve → run → prove, every change saved as it happens, every
//! return, error, timeout and panic of a step mapped to exactly one outcome row.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use abr_protocol::{
    AgentSessionState, Approval, ApproveRequest, AssertNotPostedRequest, ErrorBody, FramePoint,
    OwnerAssertion, RecheckAnswer, RecheckResult, RejectRequest, SecretValue, StepResult,
    TaskRecord, TaskRequest, TaskState, TaskVerification,
};
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use super::codes;
use super::limits::{TenantAdmission, TenantLimit, TenantLimits};
use super::network::{MarkCommitting, RunNetwork};
use super::plan::{
    FilledStep, PlanLimits, VERIFICATION_SCREENSHOT, ValidPlan, plan_hash, request_hash, validate,
};
use super::rails::{self, Rails};
use super::store::{Counter, IdempotencyKey, Inserted, StoredTask, TaskSessions, TaskStore};
use super::{ApprovalRule, BrowserAction, StepFailure, StepFailureKind, StepOutput, TaskContext};
use crate::audit::{AuditAction, AuditEvent, AuditOutcome, AuditStep, Auditor};
use crate::guard::{
    FrameRecorder, FrameStore, MAX_FRAME_BYTES, OwnSites, ReadOnlySource, RequestGate, RunGuard,
    SitePolicy, SiteStore, SiteVerdict,
};
use crate::handoff::{Handoffs, TakeoverSink};
use crate::poster::ACQUIRING;
use crate::scope_io::{self, Scopes};
use crate::step::{Step, guarded};
use crate::{
    AcquireMode, AcquireRequest, Clock, CoreError, DynSessionProvider, Lease, SessionScope,
    StrategyPolicy, StrategyRegistry, SystemClock, new_token,
};

/// The policy of a run that names no platform: unattended, unscoped, frames on.
pub(super) fn unscoped_policy() -> StrategyPolicy {
    StrategyPolicy {
        allow_interactive_capture: false,
        allow_unattended: true,
        scope: None,
        read_only: false,
        screenshots: true,
        network: crate::guard::NetworkRules::default(),
        guard: None,
    }
}

/// What `keep` keeps a step's output with.
struct Kept<'a> {
    extracted_bytes: &'a mut usize,
    result: &'a mut StepResult,
    /// The run takes screenshots.
    evidence: bool,
}

/// Longest free text (a rejection reason, an assertion's note), in bytes.
const MAX_NOTE: usize = 4096;
/// The platform name of tasks that name none (labels, audit).
const NO_PLATFORM: &str = "task";

/// Settings of a [`TaskRunner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskConfig {
    /// Plan limits: steps, longest step deadline.
    pub plan: PlanLimits,
    /// Deadline of a step without `timeoutMs`, and of the first navigation.
    pub default_step_timeout: Duration,
    /// Added to a step's deadline before the runner gives up on a browser that does not
    /// return (the [`StepRunner`](super::StepRunner) contract: it returns within the deadline plus a margin).
    pub step_grace: Duration,
    /// Acquiring the browser.
    pub acquire_timeout: Duration,
    /// The verification (a DOM check, a screenshot, the page's text).
    pub verify_timeout: Duration,
    /// Exporting the refreshed session.
    pub export_timeout: Duration,
    /// Releasing the browser.
    pub release_timeout: Duration,
    /// Most JSON bytes of extracted data kept per task (default 256 KiB); beyond, results
    /// are cut and the step's result says so (`extract_truncated`).
    pub extract_cap_bytes: usize,
    /// Which tasks wait for a person's approval.
    pub approval: ApprovalRule,
    /// Per-tenant limits.
    pub limits: TenantLimits,
    /// Longest a paused run waits for a person (a request's `handoff.waitSeconds` above it
    /// is refused; default one hour).
    pub max_handoff_wait: Duration,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            plan: PlanLimits::default(),
            default_step_timeout: Duration::from_secs(30),
            step_grace: Duration::from_secs(2),
            acquire_timeout: Duration::from_secs(30),
            verify_timeout: Duration::from_secs(30),
            export_timeout: Duration::from_secs(10),
            release_timeout: Duration::from_secs(10),
            extract_cap_bytes: 256 * 1024,
            approval: ApprovalRule::All,
            limits: TenantLimits::default(),
            max_handoff_wait: Duration::from_secs(3600),
        }
    }
}

impl TaskConfig {
    /// The deadlines of `budget` with the other settings of `self`: a step may take up to
    /// the post step's share (`timeoutMs` above it is refused), a step without `timeoutMs`
    /// and the verification the verify step's, acquire, export and release theirs.
    #[must_use]
    pub fn with_budget(mut self, budget: &crate::DeadlineBudget) -> Self {
        let s = budget.steps;
        self.plan.max_step_timeout = s.post;
        self.default_step_timeout = s.verify.min(s.post);
        self.acquire_timeout = s.acquire;
        self.verify_timeout = s.verify;
        self.export_timeout = s.export;
        self.release_timeout = s.release;
        self
    }
}

/// What `create` (or `retry`) answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The task's record.
    pub record: TaskRecord,
    /// Whether this is the task an earlier request with the same idempotency key created
    /// (nothing new was stored or started).
    pub replayed: bool,
}

impl Created {
    /// Whether the caller should now [`TaskRunner::run`] it: a new task the approval rule
    /// let through.
    pub fn should_run(&self) -> bool {
        !self.replayed && self.record.state == TaskState::Queued
    }
}

/// A task that ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnd {
    /// Its final record.
    pub record: TaskRecord,
    /// With `api_callback` verification: where the service posts `record` (ABR reports, the
    /// orchestrator proves).
    pub callback_url: Option<Url>,
}

/// The single outcome row a run ended in.
#[derive(Debug)]
enum Outcome {
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
    signed_out: bool,
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

    pub(super) fn store(e: &CoreError) -> Self {
        Self {
            body: e.to_body(),
            signed_out: false,
            final_: false,
        }
    }
}

impl Outcome {
    /// A step or verification that did not do its job: once a committing step has started,
    /// the action may have happened (uncertain, never retried); before, nothing did
    /// (failed and safe to retry, or needs re-auth when the site signed the browser out).
    fn interrupted(committed: bool, step: Option<usize>, failure: Failure) -> Self {
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
    fn not_started(error: ErrorBody) -> Self {
        Self::Failed { step: None, error }
    }

    fn state(&self) -> TaskState {
        match self {
            Self::Succeeded => TaskState::Succeeded,
            Self::Failed { .. } => TaskState::Failed,
            Self::Uncertain { .. } => TaskState::Uncertain,
            Self::NeedsReauth { .. } => TaskState::NeedsReauth,
        }
    }

    fn apply(self, record: &mut TaskRecord) {
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
fn network_truth(outcome: Outcome, wrote: bool) -> Outcome {
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
fn blocked_or(
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

fn audit_outcome(state: TaskState) -> AuditOutcome {
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

fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn note(field: &str, value: Option<&String>) -> Result<(), CoreError> {
    match value {
        Some(v) if v.len() > MAX_NOTE => Err(CoreError::InvalidInput(format!(
            "{field} is at most {MAX_NOTE} bytes"
        ))),
        _ => Ok(()),
    }
}

/// An owner's assertion that an uncertain task or post did not happen, checked
/// (`assertedBy` not empty, `note` not over-long) before the record is read.
pub(crate) struct Assertion<'a> {
    /// Who asserts.
    pub(crate) by: String,
    request: &'a AssertNotPostedRequest,
}

impl<'a> Assertion<'a> {
    pub(crate) fn check(request: &'a AssertNotPostedRequest) -> Result<Self, CoreError> {
        let by = crate::tenant::person("assertedBy", &request.asserted_by)?;
        note("note", request.note.as_ref())?;
        Ok(Self { by, request })
    }

    /// Records it in `assertion`, the slot of a record that is `uncertain` (an assertion,
    /// never proof: the record stays `uncertain`).
    ///
    /// # Errors
    /// [`CoreError::NotUncertain`], [`CoreError::AlreadyAsserted`].
    pub(crate) fn record(
        &self,
        uncertain: bool,
        assertion: &mut Option<OwnerAssertion>,
        now: time::OffsetDateTime,
    ) -> Result<(), CoreError> {
        if !uncertain {
            return Err(CoreError::NotUncertain);
        }
        if assertion.is_some() {
            return Err(CoreError::AlreadyAsserted);
        }
        *assertion = Some(OwnerAssertion {
            asserted_by: self.by.clone(),
            note: self.request.note.clone(),
            asserted_at: now,
            spent_by: None,
        });
        Ok(())
    }
}

fn callback_url(task: &StoredTask) -> Option<Url> {
    match &task.request.plan.verification {
        TaskVerification::ApiCallback { url } => Url::parse(url).ok(),
        _ => None,
    }
}

/// Whether `page` shows `text`, with runs of whitespace counting as one space.
fn shows(page: &str, text: &str) -> bool {
    let normalize = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    normalize(page).contains(&normalize(text))
}

/// The length of `value` as compact JSON.
fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

/// The escaped length of one character in a JSON string.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `value` cut to at most about `budget` JSON bytes: leading items of an array, leading
/// entries of an object, a prefix of a string; anything else that does not fit is `null`.
fn truncate(value: Value, budget: usize) -> Value {
    match value {
        Value::Array(items) => {
            let mut used = 2;
            let mut kept = Vec::new();
            for item in items {
                let len = json_len(&item) + 1;
                if used + len > budget {
                    break;
                }
                used += len;
                kept.push(item);
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let mut used = 2;
            let mut kept = serde_json::Map::new();
            for (key, item) in map {
                let len = json_len(&item) + key.len() + 4;
                if used + len > budget {
                    break;
                }
                used += len;
                kept.insert(key, item);
            }
            Value::Object(kept)
        }
        Value::String(s) => {
            let mut used = 2;
            let mut end = 0;
            for (i, c) in s.char_indices() {
                let len = escaped_len(c);
                if used + len > budget {
                    break;
                }
                used += len;
                end = i + c.len_utf8();
            }
            if budget < 2 {
                Value::Null
            } else {
                Value::String(s[..end].to_owned())
            }
        }
        other if json_len(&other) <= budget => other,
        _ => Value::Null,
    }
}

/// Runs step plans: the task API of the core.
///
/// - [`create`](Self::create) validates the plan (422 naming the step), binds an
///   idempotency key, and stores the task `pending_approval`, or `queued` when the
///   [`ApprovalRule`] lets it through (`approvedBy: "auto:<rule>"`).
/// - [`approve`](Self::approve) (the exact plan hash, a non-empty approver) moves it
///   `pending_approval → queued` exactly once; [`reject`](Self::reject) ends it.
/// - [`run`](Self::run) moves it `queued → running` exactly once and runs it: acquire
///   (session scoped in and out as posts are), the target URL, the steps in order each under
///   its deadline, then the verification; each change saved to the store as it happens.
/// - [`recheck`](Self::recheck), [`assert_not_posted`](Self::assert_not_posted) and
///   [`retry`](Self::retry) handle what ended uncertain or failed;
///   [`recover_unfinished`](Self::recover_unfinished) ends what a restart interrupted.
///
/// Per-tenant limits: a task takes a browser session and counts as an execution of the
/// UTC day when it is admitted to run (approved, or let through by the rule); the session
/// is given back when the run ends. Every operation emits an [`AuditEvent`] with ids,
/// step types and descriptions only: never a typed value, an input or extracted data.
pub struct TaskRunner<C: TaskContext> {
    pub(super) provider: DynSessionProvider<C>,
    pub(super) store: Arc<dyn TaskStore>,
    platforms: Option<Arc<StrategyRegistry<C>>>,
    sessions: Option<Arc<dyn TaskSessions>>,
    audit: Auditor,
    pub(super) clock: Arc<dyn Clock>,
    config: TaskConfig,
    body_key: Option<SecretValue>,
    pub(super) frames: Option<Arc<dyn FrameStore>>,
    pub(super) sites: Option<Arc<dyn SiteStore>>,
    pub(super) handoffs: Arc<Handoffs<C>>,
    pub(super) takeover_sink: Option<Arc<dyn TakeoverSink>>,
    pub(super) browses: super::browse::Browses<C>,
}

impl<C: TaskContext> std::fmt::Debug for TaskRunner<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRunner")
            .field("provider", &self.provider.name())
            .field("platforms", &self.platforms)
            .field("sessions", &self.sessions.is_some())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// A runner acting through `provider`, keeping tasks in `store`; default settings, no
    /// platforms, no stored sessions, no audit sink, system clock.
    pub fn new(provider: DynSessionProvider<C>, store: Arc<dyn TaskStore>) -> Self {
        Self {
            provider,
            store,
            platforms: None,
            sessions: None,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            config: TaskConfig::default(),
            body_key: None,
            frames: None,
            sites: None,
            handoffs: Arc::new(Handoffs::new(Arc::new(SystemClock))),
            takeover_sink: None,
            browses: super::browse::Browses::default(),
        }
    }

    /// Keeps replay frames in `frames` (and reads the tenants' screenshots switch there).
    /// Without a frame store no frame is taken.
    #[must_use]
    pub fn with_frames(mut self, frames: Arc<dyn FrameStore>) -> Self {
        self.frames = Some(frames);
        self
    }

    /// Applies the tenants' site decisions in `sites`, and records consent given during a
    /// pause there. Without a site store every site is allowed.
    #[must_use]
    pub fn with_sites(mut self, sites: Arc<dyn SiteStore>) -> Self {
        self.sites = Some(sites);
        self
    }

    /// Sends every takeover transition to `sink` (a webhook), besides the task record.
    #[must_use]
    pub fn with_takeover_sink(mut self, sink: Arc<dyn TakeoverSink>) -> Self {
        self.takeover_sink = Some(sink);
        self
    }

    /// Bounds of browse sessions ([`Self::browse_open`]).
    #[must_use]
    pub fn with_browse_config(mut self, config: super::browse::BrowseConfig) -> Self {
        self.browses.config = config;
        self
    }

    /// The paused runs' takeovers (the live view attaches through them).
    pub fn handoffs(&self) -> &Arc<Handoffs<C>> {
        &self.handoffs
    }

    /// Sets the settings.
    #[must_use]
    pub fn with_config(mut self, config: TaskConfig) -> Self {
        self.config = config;
        self
    }

    /// Platforms a task may name (`platform`): their policy (unattended execution) and
    /// session scope apply.
    #[must_use]
    pub fn with_platforms(mut self, platforms: Arc<StrategyRegistry<C>>) -> Self {
        self.platforms = Some(platforms);
        self
    }

    /// Sessions stored on the runner (`sessionId`): loaded before a run, the refreshed
    /// state written back after it.
    #[must_use]
    pub fn with_sessions(mut self, sessions: Arc<dyn TaskSessions>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Sends audit events through `audit`.
    #[must_use]
    pub fn with_audit(mut self, audit: Auditor) -> Self {
        self.audit = audit;
        self
    }

    /// Uses `clock` for timestamps and the UTC day.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.handoffs = Arc::new(Handoffs::new(Arc::clone(&clock)));
        self.clock = clock;
        self
    }

    /// Keys the hash an idempotency key is bound to with a runner secret (see
    /// [`request_hash`]).
    #[must_use]
    pub fn with_body_hash_key(mut self, key: SecretValue) -> Self {
        self.body_key = Some(key);
        self
    }

    /// The settings.
    pub fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    // ---- create, read, approve, reject ------------------------------------------------

    /// Creates a task of `tenant` from `request`.
    ///
    /// With `idempotency_key`: a repeated key with the same body answers the original task
    /// (also while it runs; [`Created::replayed`]); with another body it is
    /// [`CoreError::IdempotencyKeyReused`].
    ///
    /// # Errors
    /// An invalid plan ([`CoreError::InvalidPlan`], naming the step), bad ids, a session
    /// without a scope, an unknown platform or one that forbids unattended execution, an
    /// unknown `sessionId`, a per-tenant limit (for a task the rule lets through at once), a
    /// reused key, a store failure. Nothing is stored on an error.
    pub async fn create(
        &self,
        tenant: &str,
        request: TaskRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Created, CoreError> {
        crate::tenant::check("tenantId", Some(tenant))?;
        crate::tenant::check("proposalId", request.proposal_id.as_deref())?;
        crate::tenant::check("Idempotency-Key", idempotency_key)?;
        let idempotency = idempotency_key.map(|key| IdempotencyKey {
            key: key.to_owned(),
            body_hash: request_hash(&request, self.body_key.as_ref()),
        });
        if let Some(idem) = &idempotency
            && let Some((task_id, body_hash)) =
                self.store.find_idempotency(tenant, &idem.key).await?
        {
            return self.replay(tenant, &task_id, &body_hash, idem).await;
        }
        let valid = validate(&request.plan, &request.inputs, &self.config.plan)?;
        self.resolve_policy(&request)?;
        self.check_session_exists(tenant, &request).await?;
        let task = self.new_task(tenant, request, &valid, None)?;
        let admitted = self.admit_if_queued(&task).await?;
        match self.store.insert(&task, idempotency.as_ref()).await {
            Ok(Inserted::New) => {}
            Ok(Inserted::Existing { task_id, body_hash }) => {
                self.refund(tenant, admitted).await;
                let Some(idem) = &idempotency else {
                    return Err(CoreError::Internal(
                        "the store named a key it was not given",
                    ));
                };
                return self.replay(tenant, &task_id, &body_hash, idem).await;
            }
            Err(e) => {
                self.refund(tenant, admitted).await;
                return Err(e);
            }
        }
        self.audit_created(&task);
        Ok(Created {
            record: task.record,
            replayed: false,
        })
    }

    /// The task's record.
    ///
    /// # Errors
    /// [`CoreError::TaskNotFound`] (also for another tenant's id), a store failure.
    pub async fn get(&self, tenant: &str, task_id: &str) -> Result<TaskRecord, CoreError> {
        Ok(self.load(tenant, task_id).await?.record)
    }

    /// Approves a pending task: `approved_by` must be non-empty and `plan_hash` the hash of
    /// the stored plan. The task becomes `queued` exactly once (call [`Self::run`] next);
    /// it takes a browser session of the tenant and counts as an execution of the day.
    ///
    /// # Errors
    /// An empty approver, an unknown task, [`CoreError::PlanHashMismatch`],
    /// [`CoreError::TaskNotPending`] (approved, rejected, or approved concurrently), a
    /// per-tenant limit (the task stays pending: approve again later), a store failure.
    pub async fn approve(
        &self,
        tenant: &str,
        task_id: &str,
        request: &ApproveRequest,
    ) -> Result<TaskRecord, CoreError> {
        let by = crate::tenant::person("approvedBy", &request.approved_by)?;
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::PendingApproval {
            return Err(CoreError::TaskNotPending);
        }
        if !request
            .plan_hash
            .trim()
            .eq_ignore_ascii_case(&task.record.plan_hash)
        {
            return Err(CoreError::PlanHashMismatch);
        }
        let day = self.admit(tenant).await?;
        task.record.state = TaskState::Queued;
        task.record.approval = Some(Approval {
            approved_by: by.clone(),
            approved_at: self.clock.now(),
        });
        match self.save(&mut task).await {
            Ok(true) => {}
            Ok(false) => {
                self.refund(tenant, Some(day)).await;
                return Err(CoreError::TaskNotPending);
            }
            Err(e) => {
                self.refund(tenant, Some(day)).await;
                return Err(e);
            }
        }
        let mut event = self.event(AuditAction::TaskApproved, AuditOutcome::Ok, &task);
        event.approved_by = Some(by);
        self.audit.emit(event);
        Ok(task.record)
    }

    /// Rejects a pending task: it ends `rejected`, nothing runs.
    ///
    /// # Errors
    /// An empty `rejected_by`, an over-long reason, an unknown task,
    /// [`CoreError::TaskNotPending`], a store failure.
    pub async fn reject(
        &self,
        tenant: &str,
        task_id: &str,
        request: &RejectRequest,
    ) -> Result<TaskRecord, CoreError> {
        let by = crate::tenant::person("rejectedBy", &request.rejected_by)?;
        note("reason", request.reason.as_ref())?;
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::PendingApproval {
            return Err(CoreError::TaskNotPending);
        }
        task.record.state = TaskState::Rejected;
        task.record.finished_at = Some(self.clock.now());
        let message = match request.reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => format!("rejected by {by}: {reason}"),
            _ => format!("rejected by {by}"),
        };
        task.record.error = Some(ErrorBody::new(codes::REJECTED, message));
        if !self.save(&mut task).await? {
            return Err(CoreError::TaskNotPending);
        }
        let mut event = self.event(AuditAction::TaskRejected, AuditOutcome::Denied, &task);
        event.actor = Some(by);
        self.audit.emit(event);
        Ok(task.record)
    }

    // ---- run ------------------------------------------------------------------------------

    /// Runs a queued task, once: `queued → running` is a compare-and-swap, so of two calls
    /// one runs and the other is [`CoreError::TaskNotQueued`]. Every step result is saved
    /// as it happens; the lease and the tenant's session are always given back.
    ///
    /// Outcome rows: the verification proved it → `succeeded`; a step failed, timed out or
    /// panicked before any committing step started → `failed` (retryable, `failedStep`);
    /// from the first committing step on ([`commit_class`](crate::guard::commit_class), the failing step included) →
    /// `uncertain`; the site signed the browser out before any committing step →
    /// `needs_reauth`; a verification that fails or cannot run → `uncertain` after a
    /// committing step, else `failed`; `api_callback` verification → `uncertain` after a
    /// committing step (the orchestrator proves it), else `succeeded`.
    ///
    /// # Errors
    /// An unknown task, [`CoreError::TaskNotQueued`], or a store failure when the final
    /// record could not be saved (the outcome is then in the store's last saved progress;
    /// [`Self::recover_unfinished`] ends it after a restart).
    pub async fn run(&self, tenant: &str, task_id: &str) -> Result<TaskEnd, CoreError> {
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::Queued {
            return Err(CoreError::TaskNotQueued);
        }
        task.record.state = TaskState::Running;
        task.record.started_at = Some(self.clock.now());
        if !self.save(&mut task).await? {
            return Err(CoreError::TaskNotQueued);
        }
        let started = Instant::now();
        let outcome = self.execute(&mut task).await;
        outcome.apply(&mut task.record);
        task.record.finished_at = Some(self.clock.now());
        let saved = self.save(&mut task).await;
        self.release_session(tenant).await;
        self.audit_run(&task, ms(started));
        match saved {
            Ok(true) => Ok(TaskEnd {
                callback_url: callback_url(&task),
                record: task.record,
            }),
            Ok(false) => Err(CoreError::Store(
                "the task record changed while the task ran".into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// Everything between `running` and the outcome.
    async fn execute(&self, task: &mut StoredTask) -> Outcome {
        // The plan that runs is the plan that was approved, or nothing runs.
        if task.record.approval.is_none() || plan_hash(&task.request.plan) != task.record.plan_hash
        {
            return Outcome::not_started(ErrorBody::new(
                codes::PLAN_NOT_APPROVED,
                "the stored plan is not the approved one: nothing ran",
            ));
        }
        let valid = match validate(&task.request.plan, &task.request.inputs, &self.config.plan) {
            Ok(valid) => valid,
            Err(e) => {
                return Outcome::Failed {
                    step: e.step(),
                    error: CoreError::InvalidPlan(e).to_body(),
                };
            }
        };
        let steps = match valid.fill(&task.request.inputs) {
            Ok(steps) => steps,
            Err(e) => {
                return Outcome::Failed {
                    step: e.step(),
                    error: CoreError::InvalidPlan(e).to_body(),
                };
            }
        };
        let (policy, extra) = match self.resolve_policy(&task.request) {
            Ok(scopes) => scopes,
            Err(e) => return Outcome::not_started(e.to_body()),
        };
        let state = match self.session_state(&task.tenant_id, &task.request).await {
            Ok(state) => state,
            Err(e) => return Outcome::not_started(e.to_body()),
        };
        let mut rails = match self
            .rails(
                task,
                valid.plan().read_only,
                valid.target_url().as_str(),
                &steps,
                policy.as_ref(),
                state.is_some(),
            )
            .await
        {
            Ok(rails) => rails,
            Err((step, failure)) => return Outcome::interrupted(false, step, failure),
        };
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let platform = task
            .request
            .platform
            .clone()
            .unwrap_or_else(|| NO_PLATFORM.to_owned());
        let lease = match self.acquire(&platform, state, scopes).await {
            Ok(lease) => lease,
            Err(e) => return Outcome::not_started(e.to_body().retryable(true)),
        };
        let outcome = match self.arm(&rails, &lease).await {
            Ok(()) => self.drive(task, &valid, &steps, &lease, &mut rails).await,
            Err(failure) => Outcome::interrupted(false, None, failure),
        };
        // From here on nothing the page sends leaves: the outcome is decided.
        rails.network.close();
        if let Err(failure) = self.late_network(task, &mut rails, &lease).await {
            tracing::warn!(code = %failure.body.code, "the network after the run");
        }
        let outcome = network_truth(outcome, rails.network.committed());
        if let Some(frames) = &rails.frames {
            frames
                .capture(lease.context(), FramePoint::Completion, "completion")
                .await;
        }
        if !matches!(outcome, Outcome::NeedsReauth { .. })
            && let Some(session_id) = task.request.session_id.clone()
        {
            self.write_back(&task.tenant_id, &session_id, &lease, &platform, scopes)
                .await;
        }
        self.release(lease).await;
        outcome
    }

    /// A fresh browser for an unattended run on `platform`, with `state` scoped by `scopes`.
    pub(super) async fn acquire(
        &self,
        platform: &str,
        state: Option<AgentSessionState>,
        scopes: Scopes<'_>,
    ) -> Result<Lease<C>, CoreError> {
        let request = AcquireRequest {
            mode: AcquireMode::Unattended,
            platform: platform.to_owned(),
            state: state.map(|s| scopes.apply(&s).0),
            start_url: None,
        };
        guarded(self.config.acquire_timeout, self.provider.acquire(request))
            .await
            .provider(ACQUIRING)
    }

    /// The rails of a run, decided before any browser starts: read-only (from the platform
    /// or the approved plan, never the request), dry run (the request), the tenant's sites
    /// plus the plan's own hosts. A plan that would open a denied site stops here, at that
    /// step, with nothing opened.
    pub(super) async fn rails(
        &self,
        task: &mut StoredTask,
        plan_read_only: bool,
        target_url: &str,
        steps: &[FilledStep],
        policy: Option<&StrategyPolicy>,
        has_session: bool,
    ) -> Result<Rails, (Option<usize>, Failure)> {
        let read_only = if policy.is_some_and(|p| p.read_only) {
            Some(ReadOnlySource::Platform)
        } else if plan_read_only {
            Some(ReadOnlySource::Plan)
        } else {
            None
        };
        task.record.read_only = read_only.is_some();
        task.record.dry_run = task.request.dry_run;
        let wait = match task.request.handoff {
            None => None,
            Some(h) => {
                let wait = Duration::from_secs(h.wait_seconds);
                if h.wait_seconds == 0 || wait > self.config.max_handoff_wait {
                    return Err((
                        None,
                        Failure::refusal(
                            abr_protocol::codes::INVALID_REQUEST.code,
                            format!(
                                "handoff.waitSeconds is 1 to {}",
                                self.config.max_handoff_wait.as_secs()
                            ),
                        ),
                    ));
                }
                Some(wait)
            }
        };
        let mut sites = match &self.sites {
            None => SitePolicy::default(),
            Some(store) => match store.sites(&task.tenant_id).await {
                Ok(entries) => SitePolicy::new(entries.into_iter().map(|e| (e.domain, e.decision))),
                Err(e) => return Err((None, Failure::store(&e))),
            },
        };
        let mut hosts = vec![(None, rails::host_of(target_url))];
        for (i, step) in steps.iter().enumerate() {
            if let BrowserAction::Navigate { url } = &step.action {
                hosts.push((Some(i), rails::host_of(url.as_str())));
            }
        }
        if self.sites.is_some() {
            for (_, host) in &hosts {
                sites = sites.with_run_site(host);
            }
            if let Some((step, _)) = hosts
                .iter()
                .find(|(_, host)| sites.verdict(host) == SiteVerdict::Denied)
            {
                return Err((
                    *step,
                    Failure::refusal(
                        codes::SITE_DENIED,
                        "the plan opens a site the tenant denied (or one outside its allow \
                         list): nothing was opened",
                    ),
                ));
            }
        } else {
            // No site store: every site is allowed.
            sites = SitePolicy::open();
        }
        let platform_frames = policy.is_none_or(|p| p.screenshots);
        let guard = RunGuard::new(read_only, task.request.dry_run)
            .with_platform(policy.and_then(|p| p.guard.as_ref()));
        let network = self.run_network(task, &guard, target_url, steps, policy);
        let mut rails = Rails::new(guard, network, has_session, sites, wait);
        rails.evidence = platform_frames;
        if let Some(store) = &self.frames {
            match FrameRecorder::begin(
                Arc::clone(store),
                Arc::clone(&self.clock),
                &task.tenant_id,
                &task.record.task_id,
                platform_frames,
            )
            .await
            {
                Ok((recorder, setting)) => {
                    task.record.replay = Some(setting);
                    rails.evidence = recorder.is_on();
                    rails.frames = Some(recorder);
                }
                Err(e) => return Err((None, Failure::store(&e))),
            }
        }
        Ok(rails)
    }

    /// The gate below the page of `task`'s run: the platform's network rules; the run's own
    /// sites (the target's, the plan's navigations', the scope's domains); refusing every
    /// write when `guard` refuses commits, else marking the task in the store before its
    /// first write leaves.
    fn run_network(
        &self,
        task: &StoredTask,
        guard: &RunGuard,
        target_url: &str,
        steps: &[FilledStep],
        policy: Option<&StrategyPolicy>,
    ) -> Arc<RunNetwork> {
        let mut own = OwnSites::default();
        own.add_url(target_url);
        for step in steps {
            if let BrowserAction::Navigate { url } = &step.action {
                own.add_url(url.as_str());
            }
        }
        let scope_domains = policy
            .and_then(|p| p.scope.as_ref())
            .map(|s| s.cookie_domains().to_vec())
            .unwrap_or_default();
        let request_domains = task
            .request
            .scope
            .as_ref()
            .map(|s| s.cookie_domains.clone())
            .unwrap_or_default();
        for domain in scope_domains.iter().chain(&request_domains) {
            own.add_host(domain);
        }
        let rules = policy.map(|p| p.network.clone()).unwrap_or_default();
        let store = Arc::clone(&self.store);
        let (tenant, id) = (task.tenant_id.clone(), task.record.task_id.clone());
        let mark: MarkCommitting = Arc::new(move || {
            let (store, tenant, id) = (Arc::clone(&store), tenant.clone(), id.clone());
            Box::pin(async move { store.mark_committing(&tenant, &id).await })
        });
        RunNetwork::new(rules, own, guard.refuses(), mark)
    }

    /// Arms the browser: the network gate (and the relayed request's commit watch), and the
    /// site filter when the tenant has decisions.
    pub(super) async fn arm(&self, rails: &Rails, lease: &Lease<C>) -> Result<(), Failure> {
        rails.network.set_watch(crate::commit_watch::current());
        let gate: Arc<dyn RequestGate> = rails.network.clone();
        match guarded(
            self.config.default_step_timeout,
            lease.context().guard_network(gate),
        )
        .await
        {
            Step::Done(()) => {}
            Step::Error(e) => return Err(Failure::from_step(e)),
            Step::TimedOut | Step::Panicked => {
                return Err(Failure::new(
                    codes::STEP_REJECTED,
                    "the browser could not install the network gate",
                ));
            }
        }
        if self.sites.is_none() || !rails.sites.has_entries() {
            return Ok(());
        }
        let filter: Arc<dyn crate::guard::SiteFilter> = rails.sites.clone();
        match guarded(
            self.config.default_step_timeout,
            lease.context().filter_sites(filter),
        )
        .await
        {
            Step::Done(()) => Ok(()),
            Step::Error(e) => Err(Failure::from_step(e)),
            Step::TimedOut | Step::Panicked => Err(Failure::new(
                codes::STEP_REJECTED,
                "the browser could not install the site filter",
            )),
        }
    }

    /// The browser part of a run: the target URL, the steps (each through the guard, with a
    /// checkpoint after it), the verification.
    async fn drive(
        &self,
        task: &mut StoredTask,
        valid: &ValidPlan,
        steps: &[FilledStep],
        lease: &Lease<C>,
        rails: &mut Rails,
    ) -> Outcome {
        let context = lease.context();
        let target = BrowserAction::Navigate {
            url: valid.target_url().clone(),
        };
        let mut reopened = false;
        loop {
            match self
                .step(context, &target, self.config.default_step_timeout)
                .await
            {
                Ok(_) => break,
                Err(failure) if failure.body.code == codes::NAVIGATION_FAILED && !reopened => {
                    reopened = true;
                    // An error page may be a block (a 403, a bot check): read it, and open
                    // the page again after a person cleared it.
                    match self.checkpoint(task, rails, lease, None).await {
                        Ok(true) => {}
                        Ok(false) => return Outcome::interrupted(false, None, failure),
                        Err(failure) => return Outcome::interrupted(false, None, failure),
                    }
                }
                Err(failure) => return Outcome::interrupted(false, None, failure),
            }
        }
        if let Some(frames) = &rails.frames {
            frames
                .capture(context, FramePoint::Navigation, "navigate")
                .await;
        }
        if let Err(failure) = self.checkpoint(task, rails, lease, None).await {
            return Outcome::interrupted(false, None, failure);
        }
        let mut committed = false;
        let mut extracted_bytes = 0;
        for (index, (filled, planned)) in steps.iter().zip(&valid.plan().steps).enumerate() {
            // What the page sent since the last step ended (a timer, a script the last
            // action started) is that step's.
            if let Err(failure) = self.late_network(task, rails, lease).await {
                let committed = committed || rails.network.committed();
                return Outcome::interrupted(committed, index.checked_sub(1), failure);
            }
            committed |= rails.network.committed();
            let timeout = planned
                .timeout_ms
                .map_or(self.config.default_step_timeout, Duration::from_millis);
            let started = Instant::now();
            let done = if matches!(filled.action, BrowserAction::Screenshot) {
                // Evidence, not an action: a redacted frame kept below (`keep`).
                Ok((StepOutput::Done, false))
            } else {
                self.guarded_step(task, rails, lease, index, &filled.action, timeout)
                    .await
            };
            let committing = match &done {
                Ok((_, committing)) | Err((_, committing)) => *committing,
            };
            committed |= committing;
            let mut result = StepResult {
                index,
                action: filled.action.kind().to_owned(),
                ok: true,
                committing,
                ms: 0,
                error: None,
            };
            let failure = match done {
                Ok((output, _)) => {
                    let kept = Kept {
                        extracted_bytes: &mut extracted_bytes,
                        result: &mut result,
                        evidence: rails.evidence,
                    };
                    self.keep(task, context, filled, output, kept).await
                }
                Err((failure, _)) => Some(failure),
            };
            result.ms = ms(started);
            if let Some(failure) = &failure {
                result.ok = false;
                result.error = Some(failure.body.clone());
            }
            task.record.step_results.push(result);
            let saved = self.save_progress(task).await;
            if let Err(failure) = saved {
                return Outcome::interrupted(committed, Some(index), failure);
            }
            match failure {
                // A refused action is a wasted step: the run goes on with the next one.
                Some(f) if f.body.code == codes::BLOCKED_ACTION => continue,
                Some(failure) => return blocked_or(task, committed, Some(index), failure),
                None => {}
            }
            if let Some(point) = rails::frame_point(&filled.action)
                && let Some(frames) = &rails.frames
            {
                frames.capture(context, point, filled.action.kind()).await;
            }
            if rails::may_change_page(&filled.action)
                && let Err(failure) = self.checkpoint(task, rails, lease, Some(index + 1)).await
            {
                return Outcome::interrupted(committed, Some(index), failure);
            }
        }
        if let Err(failure) = self.late_network(task, rails, lease).await {
            let committed = committed || rails.network.committed();
            return Outcome::interrupted(committed, steps.len().checked_sub(1), failure);
        }
        committed |= rails.network.committed();
        if let Some(first) = task.record.blocked.first() {
            // Nothing is proven by verifying a run whose commits were refused.
            return Outcome::Failed {
                step: first.step,
                error: ErrorBody::new(
                    codes::BLOCKED_ACTION,
                    format!(
                        "{} committing action(s) refused (see `blocked`); the run did every \
                         other step and committed nothing",
                        task.record.blocked.len()
                    ),
                ),
            };
        }
        self.verify(task, valid, context, committed, rails.evidence)
            .await
    }

    /// What the network did since the last step ended, put on that step's result (and the
    /// record's `blocked`): a refusal there makes it a refused step, a write makes it
    /// committing. Before the first step, a write still counts for the outcome
    /// ([`RunNetwork::committed`]). `Err`: a write could not be announced or marked (it
    /// never left the browser), and the run stops.
    pub(super) async fn late_network(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
    ) -> Result<(), Failure> {
        let last = task.record.step_results.len().checked_sub(1);
        let index = last.unwrap_or(0);
        let outcome = self.network_after(task, rails, lease, index).await;
        let Some(result) = last.and_then(|i| task.record.step_results.get_mut(i)) else {
            // Before any step: the first step is the one the page's load belongs to.
            return match outcome {
                Err(failure) if failure.body.code == codes::BLOCKED_ACTION => {
                    for blocked in &mut task.record.blocked {
                        blocked.step = None;
                    }
                    Ok(())
                }
                other => other.map(|_| ()),
            };
        };
        match outcome {
            Ok(false) => return Ok(()),
            Ok(true) => result.committing = true,
            Err(failure) if failure.body.code == codes::BLOCKED_ACTION => {
                result.ok = false;
                result.error = Some(failure.body);
            }
            Err(failure) => return Err(failure),
        }
        self.save_progress(task).await
    }

    /// Runs one browser action under its deadline (plus the grace), mapping every return,
    /// error, timeout and panic.
    pub(super) async fn step(
        &self,
        context: &C,
        action: &BrowserAction,
        timeout: Duration,
    ) -> Result<StepOutput, Failure> {
        match guarded(
            timeout + self.config.step_grace,
            context.run(action, timeout),
        )
        .await
        {
            Step::Done(output) => Ok(output),
            Step::Error(failure) => Err(Failure::from_step(failure)),
            Step::TimedOut => Err(Failure::new(
                codes::STEP_TIMEOUT,
                format!(
                    "the {} step did not finish within {} ms",
                    action.kind(),
                    timeout.as_millis()
                ),
            )),
            Step::Panicked => Err(Failure::new(
                codes::STEP_PANICKED,
                format!(
                    "the browser failed unexpectedly during the {} step",
                    action.kind()
                ),
            )),
        }
    }

    /// Keeps what a step produced (extracted data, a screenshot) and checks what it
    /// answered (an `assert`).
    async fn keep(
        &self,
        task: &mut StoredTask,
        context: &C,
        filled: &FilledStep,
        output: StepOutput,
        kept: Kept<'_>,
    ) -> Option<Failure> {
        let Kept {
            extracted_bytes,
            result,
            evidence,
        } = kept;
        match &filled.action {
            BrowserAction::Extract { .. } => {
                let name = filled.name.clone().unwrap_or_default();
                let value = match output {
                    StepOutput::Extracted(value) => value,
                    _ => Value::Null,
                };
                let cap = self.config.extract_cap_bytes;
                let overhead = name.len() + 4;
                let size = json_len(&value).saturating_add(overhead);
                // Two bytes for the braces of the extracted map.
                let room = cap.saturating_sub(2).saturating_sub(*extracted_bytes);
                let value = if size <= room {
                    value
                } else {
                    let cut = truncate(value, room.saturating_sub(overhead));
                    result.error = Some(ErrorBody::new(
                        codes::EXTRACT_TRUNCATED,
                        format!(
                            "the extracted data is over the task's cap of {cap} bytes: \
                             {} of {size} bytes kept",
                            json_len(&cut) + overhead
                        ),
                    ));
                    cut
                };
                *extracted_bytes += json_len(&value) + overhead;
                task.record.extracted.insert(name, value);
                None
            }
            BrowserAction::Screenshot => {
                let name = filled.name.clone().unwrap_or_default();
                match self.evidence(task, context, &name, evidence).await {
                    Ok(()) => None,
                    Err(note) => {
                        // Evidence that could not be taken is said, not fatal.
                        result.error = Some(note);
                        None
                    }
                }
            }
            BrowserAction::Assert { .. } => match output {
                StepOutput::Checked(true) => None,
                StepOutput::Checked(false) => Some(Failure::new(
                    codes::ASSERTION_FAILED,
                    "the step's DOM check did not hold",
                )),
                _ => Some(Failure::new(
                    codes::STEP_REJECTED,
                    "the browser did not answer the DOM check",
                )),
            },
            _ => None,
        }
    }

    /// A screenshot of the page kept as the task's evidence under `name`: a redacted frame
    /// (every field blurred and the blur confirmed, as every replay frame), only when the
    /// run takes screenshots. `Err`: the note why none was kept (screenshots off, or the
    /// blur could not be confirmed, or the store refused it).
    async fn evidence(
        &self,
        task: &mut StoredTask,
        context: &C,
        name: &str,
        on: bool,
    ) -> Result<(), ErrorBody> {
        if !on {
            return Err(ErrorBody::new(
                codes::SCREENSHOT_NOT_TAKEN,
                "screenshots are off for this tenant or platform: none was taken",
            ));
        }
        let timeout = self.config.verify_timeout;
        let frame = match guarded(
            timeout + self.config.step_grace,
            context.redacted_frame(MAX_FRAME_BYTES, timeout),
        )
        .await
        {
            Step::Done(frame) => frame,
            Step::Error(e) => {
                return Err(ErrorBody::new(
                    codes::SCREENSHOT_NOT_TAKEN,
                    format!("no screenshot was kept: {e}"),
                ));
            }
            Step::TimedOut | Step::Panicked => {
                return Err(ErrorBody::new(
                    codes::SCREENSHOT_NOT_TAKEN,
                    "no screenshot was kept: the browser did not take it in time",
                ));
            }
        };
        self.store
            .put_screenshot(&task.tenant_id, &task.record.task_id, name, frame.jpeg)
            .await
            .map_err(|e| {
                ErrorBody::new(
                    codes::SCREENSHOT_NOT_TAKEN,
                    format!("no screenshot was kept: {e}"),
                )
            })?;
        task.record.screenshots.push(name.to_owned());
        Ok(())
    }

    /// The verification, after the last step.
    async fn verify(
        &self,
        task: &mut StoredTask,
        valid: &ValidPlan,
        context: &C,
        committed: bool,
        evidence: bool,
    ) -> Outcome {
        let timeout = self.config.verify_timeout;
        match &valid.plan().verification {
            TaskVerification::DomCheck { check } => {
                let action = BrowserAction::Assert {
                    check: check.clone(),
                };
                match self.step(context, &action, timeout).await {
                    Ok(StepOutput::Checked(true)) => Outcome::Succeeded,
                    Ok(_) => Outcome::interrupted(
                        committed,
                        None,
                        Failure::new(
                            codes::VERIFICATION_FAILED,
                            "the verification's DOM check did not hold",
                        ),
                    ),
                    Err(failure) => Outcome::interrupted(committed, None, failure),
                }
            }
            TaskVerification::Screenshot { text } => {
                // The image is evidence (redacted, only with screenshots on); the proof is
                // the text the page shows.
                if let Err(note) = self
                    .evidence(task, context, VERIFICATION_SCREENSHOT, evidence)
                    .await
                {
                    tracing::info!(code = %note.code, "verification screenshot not kept");
                }
                match self.page_text(context).await {
                    Ok(page) if shows(&page, text) => Outcome::Succeeded,
                    Ok(_) => Outcome::interrupted(
                        committed,
                        None,
                        Failure::new(
                            codes::VERIFICATION_FAILED,
                            "the page does not show the verification's text",
                        ),
                    ),
                    Err(failure) => Outcome::interrupted(committed, None, failure),
                }
            }
            TaskVerification::ApiCallback { .. } if committed => Outcome::Uncertain {
                step: None,
                error: ErrorBody::new(
                    codes::VERIFIED_BY_CALLBACK,
                    "a committing step ran and the runner cannot prove the outcome itself: \
                     the orchestrator proves it from the record posted to its callback URL",
                ),
            },
            // Every step ran and none could commit: there is nothing else to prove.
            TaskVerification::ApiCallback { .. } => Outcome::Succeeded,
        }
    }

    async fn page_text(&self, context: &C) -> Result<String, Failure> {
        let timeout = self.config.verify_timeout;
        match guarded(timeout + self.config.step_grace, context.page_text(timeout)).await {
            Step::Done(text) => Ok(text),
            Step::Error(failure) => Err(Failure::from_step(failure)),
            Step::TimedOut => Err(Failure::new(
                codes::STEP_TIMEOUT,
                "reading the page's text did not finish in time",
            )),
            Step::Panicked => Err(Failure::new(
                codes::STEP_PANICKED,
                "the browser failed unexpectedly reading the page's text",
            )),
        }
    }

    /// Saves the running task; a lost compare-and-swap is a store failure (the runner is
    /// the only writer of a running task).
    pub(super) async fn save_progress(&self, task: &mut StoredTask) -> Result<(), Failure> {
        match self.save(task).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure::store(&CoreError::Store(
                "the task record changed while the task ran".into(),
            ))),
            Err(e) => Err(Failure::store(&e)),
        }
    }

    pub(super) async fn write_back(
        &self,
        tenant: &str,
        session_id: &str,
        lease: &Lease<C>,
        platform: &str,
        scopes: Scopes<'_>,
    ) {
        let Some(sessions) = &self.sessions else {
            return;
        };
        match guarded(self.config.export_timeout, lease.context().export_state()).await {
            Step::Done(state) => {
                let (state, _) = scopes.apply_out(&state, platform, self.clock.now());
                if let Err(e) = sessions.store_refreshed(tenant, session_id, state).await {
                    tracing::warn!(error = %e, "could not store the refreshed session");
                }
            }
            Step::Error(e) => tracing::warn!(error = %e, "could not export the refreshed session"),
            Step::TimedOut | Step::Panicked => {
                tracing::warn!("exporting the refreshed session timed out or panicked");
            }
        }
    }

    pub(super) async fn release(&self, lease: Lease<C>) {
        match tokio::time::timeout(self.config.release_timeout, lease.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing the browser failed"),
            Err(_) => tracing::warn!("releasing the browser timed out"),
        }
    }

    // ---- uncertain and failed tasks -------------------------------------------------------

    /// Re-checks an uncertain task: a fresh browser with the task's session opens the target
    /// URL and runs only the verification (no step, nothing committing). The record is not
    /// changed: a confirmation is the caller's evidence, the task stays `uncertain`.
    ///
    /// `confirmed`: the verification proved it; `not_found`: it ran and did not (which is
    /// not proof that nothing happened); `ambiguous`: the runner cannot tell on its own
    /// (`api_callback`); `unavailable`: the check could not run.
    ///
    /// # Errors
    /// An unknown task, [`CoreError::NotUncertain`], the tenant's concurrency limit, a
    /// store failure.
    pub async fn recheck(&self, tenant: &str, task_id: &str) -> Result<RecheckResult, CoreError> {
        let task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::Uncertain {
            return Err(CoreError::NotUncertain);
        }
        let result = if matches!(
            task.request.plan.verification,
            TaskVerification::ApiCallback { .. }
        ) {
            RecheckResult {
                answer: RecheckAnswer::Ambiguous,
                error: Some(ErrorBody::new(
                    codes::VERIFIED_BY_CALLBACK,
                    "the orchestrator proves this task's outcome (api_callback)",
                )),
            }
        } else {
            self.take_session(tenant).await?;
            let result = self.recheck_in_browser(&task).await;
            self.release_session(tenant).await;
            result
        };
        let outcome = match result.answer {
            RecheckAnswer::Confirmed => AuditOutcome::Ok,
            RecheckAnswer::Ambiguous => AuditOutcome::Uncertain,
            RecheckAnswer::NotFound | RecheckAnswer::Unavailable => AuditOutcome::Failed,
        };
        let mut event = self.event(AuditAction::TaskRechecked, outcome, &task);
        event.error_code = result.error.as_ref().map(|e| e.code.clone());
        self.audit.emit(event);
        Ok(result)
    }

    async fn recheck_in_browser(&self, task: &StoredTask) -> RecheckResult {
        let unavailable = |error: ErrorBody| RecheckResult {
            answer: RecheckAnswer::Unavailable,
            error: Some(error),
        };
        let valid = match validate(&task.request.plan, &task.request.inputs, &self.config.plan) {
            Ok(valid) => valid,
            Err(e) => return unavailable(CoreError::InvalidPlan(e).to_body()),
        };
        let (policy, extra) = match self.resolve_policy(&task.request) {
            Ok(scopes) => scopes,
            Err(e) => return unavailable(e.to_body()),
        };
        let state = match self.session_state(&task.tenant_id, &task.request).await {
            Ok(state) => state,
            Err(e) => return unavailable(e.to_body()),
        };
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let platform = task
            .request
            .platform
            .clone()
            .unwrap_or_else(|| NO_PLATFORM.to_owned());
        let lease = match self.acquire(&platform, state, scopes).await {
            Ok(lease) => lease,
            Err(e) => return unavailable(e.to_body().retryable(true)),
        };
        let context = lease.context();
        // A re-check only reads: below the page, nothing but reads leaves its browser.
        let network = self.run_network(
            task,
            &RunGuard::new(Some(ReadOnlySource::Plan), false),
            valid.target_url().as_str(),
            &[],
            policy.as_ref(),
        );
        let gate: Arc<dyn RequestGate> = network;
        if let Step::Error(_) | Step::TimedOut | Step::Panicked = guarded(
            self.config.default_step_timeout,
            context.guard_network(gate),
        )
        .await
        {
            self.release(lease).await;
            return unavailable(ErrorBody::new(
                codes::STEP_REJECTED,
                "the browser could not install the read-only network gate",
            ));
        }
        let target = BrowserAction::Navigate {
            url: valid.target_url().clone(),
        };
        let result = match self
            .step(context, &target, self.config.default_step_timeout)
            .await
        {
            Err(failure) => unavailable(failure.body),
            Ok(_) => self.recheck_verification(&valid, context).await,
        };
        self.release(lease).await;
        result
    }

    async fn recheck_verification(&self, valid: &ValidPlan, context: &C) -> RecheckResult {
        let answer = |answer, error| RecheckResult { answer, error };
        let not_found = |message: &str| {
            answer(
                RecheckAnswer::NotFound,
                Some(ErrorBody::new(codes::VERIFICATION_FAILED, message)),
            )
        };
        match &valid.plan().verification {
            TaskVerification::DomCheck { check } => {
                let action = BrowserAction::Assert {
                    check: check.clone(),
                };
                match self
                    .step(context, &action, self.config.verify_timeout)
                    .await
                {
                    Ok(StepOutput::Checked(true)) => answer(RecheckAnswer::Confirmed, None),
                    Ok(_) => not_found("the verification's DOM check did not hold"),
                    Err(failure) => answer(RecheckAnswer::Unavailable, Some(failure.body)),
                }
            }
            TaskVerification::Screenshot { text } => match self.page_text(context).await {
                Ok(page) if shows(&page, text) => answer(RecheckAnswer::Confirmed, None),
                Ok(_) => not_found("the page does not show the verification's text"),
                Err(failure) => answer(RecheckAnswer::Unavailable, Some(failure.body)),
            },
            TaskVerification::ApiCallback { .. } => answer(RecheckAnswer::Ambiguous, None),
        }
    }

    /// Records the owner's assertion that an uncertain task did not happen. It is recorded
    /// as an assertion, never as proof (the task stays `uncertain`), and allows exactly one
    /// new attempt ([`Self::retry`]).
    ///
    /// # Errors
    /// An empty `asserted_by`, an over-long note, an unknown task,
    /// [`CoreError::NotUncertain`], [`CoreError::AlreadyAsserted`], a store failure.
    pub async fn assert_not_posted(
        &self,
        tenant: &str,
        task_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<TaskRecord, CoreError> {
        let assertion = Assertion::check(request)?;
        let mut task = self.load(tenant, task_id).await?;
        let uncertain = task.record.state == TaskState::Uncertain;
        assertion.record(uncertain, &mut task.record.assertion, self.clock.now())?;
        if !self.save(&mut task).await? {
            return Err(CoreError::AlreadyAsserted);
        }
        let mut event = self.event(AuditAction::TaskAsserted, AuditOutcome::Ok, &task);
        event.actor = Some(assertion.by);
        self.audit.emit(event);
        Ok(task.record)
    }

    /// A new attempt of a task that ended `failed` or `needs_reauth` (nothing committing
    /// ran), or `uncertain` with an unspent owner assertion (spending it): a new task with
    /// the same request, `retryOf` the first attempt, waiting for approval as the rule says.
    /// A task is retried at most once (retry the latest attempt next); a chain at most
    /// [`TenantLimits::retries`] times.
    ///
    /// # Errors
    /// An unknown task, [`CoreError::TaskNotRetryable`], the tenant's retry limit (or, for a
    /// retry the rule lets through at once, its session and daily limits), a plan invalid
    /// under the current limits, a store failure.
    pub async fn retry(&self, tenant: &str, task_id: &str) -> Result<Created, CoreError> {
        let mut original = self.load(tenant, task_id).await?;
        if original.retried_by.is_some() {
            return Err(CoreError::TaskNotRetryable(
                "it was retried already: retry the latest attempt",
            ));
        }
        match original.record.state {
            TaskState::Failed | TaskState::NeedsReauth => {}
            TaskState::Uncertain => match &original.record.assertion {
                Some(assertion) if assertion.spent_by.is_none() => {}
                _ => {
                    return Err(CoreError::TaskNotRetryable(
                        "an uncertain task may have happened: it is retried only once its \
                         owner asserts it did not",
                    ));
                }
            },
            _ => {
                return Err(CoreError::TaskNotRetryable(
                    "only a task that ended failed or needs_reauth (or uncertain, with an \
                     owner's assertion) is retried",
                ));
            }
        }
        let request = original.request.clone();
        let valid = validate(&request.plan, &request.inputs, &self.config.plan)?;
        let first = original
            .record
            .retry_of
            .clone()
            .unwrap_or_else(|| original.id().to_owned());
        let task = self.new_task(tenant, request, &valid, Some(first.clone()))?;
        let retries = Counter::Retries { task_id: first };
        let max = self.config.limits.retries;
        if !self.store.increment(tenant, &retries, max).await? {
            return Err(CoreError::TenantLimit {
                limit: TenantLimit::Retries,
                max,
                retry_after: None,
            });
        }
        let admitted = match self.admit_if_queued(&task).await {
            Ok(admitted) => admitted,
            Err(e) => {
                self.uncount(tenant, &retries).await;
                return Err(e);
            }
        };
        // Claims the original: retried once, its assertion spent.
        original.retried_by = Some(task.id().to_owned());
        if let Some(assertion) = &mut original.record.assertion {
            assertion.spent_by = Some(task.id().to_owned());
        }
        let claimed = self.save(&mut original).await;
        if !matches!(claimed, Ok(true)) {
            self.uncount(tenant, &retries).await;
            self.refund(tenant, admitted).await;
            return Err(claimed.err().unwrap_or(CoreError::TaskNotRetryable(
                "it was retried at the same time",
            )));
        }
        if let Err(e) = self.store.insert(&task, None).await {
            // The original stays claimed: a lost attempt, never a second one.
            self.refund(tenant, admitted).await;
            return Err(e);
        }
        let mut event = self.event(AuditAction::TaskRetried, AuditOutcome::Ok, &original);
        event.retry_task_id = Some(task.id().to_owned());
        self.audit.emit(event);
        self.audit_created(&task);
        Ok(Created {
            record: task.record,
            replayed: false,
        })
    }

    /// Ends every task a stopped runner left `queued` or `running`, honestly: `uncertain`
    /// if a committing step had started or completed, else `failed` (retryable); the error
    /// (`runner_stopped`) says the runner stopped. Then every tenant's session counter is
    /// zeroed (no browser outlives the process).
    ///
    /// Call it once at start-up, before serving: with a store shared by several live
    /// runners it would end tasks another runner is running.
    ///
    /// # Errors
    /// A store failure.
    pub async fn recover_unfinished(&self) -> Result<Vec<TaskEnd>, CoreError> {
        let mut ended = Vec::new();
        for mut task in self.store.unfinished().await? {
            let running = matches!(task.record.state, TaskState::Running | TaskState::Paused);
            let committed =
                task.committing_started || task.record.step_results.iter().any(|r| r.committing);
            let next = task.record.step_results.len();
            let step = (running && next < task.request.plan.steps.len()).then_some(next);
            let outcome = if committed {
                Outcome::Uncertain {
                    step,
                    error: ErrorBody::new(
                        codes::RUNNER_STOPPED,
                        "the runner stopped while the task was running, after a committing \
                         step had started: it may have happened",
                    ),
                }
            } else if running {
                Outcome::Failed {
                    step,
                    error: ErrorBody::new(
                        codes::RUNNER_STOPPED,
                        "the runner stopped while the task was running, before any committing \
                         step: safe to retry",
                    )
                    .retryable(true),
                }
            } else {
                Outcome::Failed {
                    step: None,
                    error: ErrorBody::new(
                        codes::RUNNER_STOPPED,
                        "the runner stopped before the task started: nothing ran, safe to retry",
                    )
                    .retryable(true),
                }
            };
            outcome.apply(&mut task.record);
            task.record.finished_at = Some(self.clock.now());
            if !self.save(&mut task).await? {
                continue;
            }
            let mut event = self.event(
                AuditAction::TaskRecovered,
                audit_outcome(task.record.state),
                &task,
            );
            event.failed_step = task.record.failed_step;
            event.error_code = task.record.error.as_ref().map(|e| e.code.clone());
            self.audit.emit(event);
            ended.push(TaskEnd {
                callback_url: callback_url(&task),
                record: task.record,
            });
        }
        self.store.clear_sessions().await?;
        Ok(ended)
    }

    // ---- helpers --------------------------------------------------------------------------

    pub(super) async fn load(&self, tenant: &str, task_id: &str) -> Result<StoredTask, CoreError> {
        crate::tenant::check("tenantId", Some(tenant))?;
        self.store
            .get(tenant, task_id)
            .await?
            .ok_or(CoreError::TaskNotFound)
    }

    /// Compare-and-swap; on success the in-memory copy follows the stored version.
    pub(super) async fn save(&self, task: &mut StoredTask) -> Result<bool, CoreError> {
        let saved = self.store.update(task).await?;
        if saved {
            task.version += 1;
        }
        Ok(saved)
    }

    async fn replay(
        &self,
        tenant: &str,
        task_id: &str,
        body_hash: &str,
        idempotency: &IdempotencyKey,
    ) -> Result<Created, CoreError> {
        if body_hash != idempotency.body_hash {
            return Err(CoreError::IdempotencyKeyReused);
        }
        Ok(Created {
            record: self.load(tenant, task_id).await?.record,
            replayed: true,
        })
    }

    fn new_task(
        &self,
        tenant: &str,
        request: TaskRequest,
        valid: &ValidPlan,
        retry_of: Option<String>,
    ) -> Result<StoredTask, CoreError> {
        let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let now = self.clock.now();
        let rule = self.config.approval;
        let auto = !rule.requires_approval(valid);
        let record = TaskRecord {
            task_id: format!("task_{}", token.get(..22).unwrap_or(&token)),
            state: if auto {
                TaskState::Queued
            } else {
                TaskState::PendingApproval
            },
            plan_hash: valid.hash().to_owned(),
            steps: valid.describe().to_vec(),
            risk: valid.plan().risk,
            approval_rule: rule.as_str().to_owned(),
            approval: auto.then(|| Approval {
                approved_by: rule.auto_approver(),
                approved_at: now,
            }),
            proposal_id: request.proposal_id.clone(),
            step_results: Vec::new(),
            extracted: BTreeMap::new(),
            screenshots: Vec::new(),
            failed_step: None,
            error: None,
            created_at: now,
            finished_at: None,
            started_at: None,
            retry_of,
            assertion: None,
            read_only: false,
            dry_run: request.dry_run,
            blocked: Vec::new(),
            pause: None,
            takeover_events: Vec::new(),
            replay: None,
            session_check: None,
            browse: false,
        };
        Ok(StoredTask {
            tenant_id: tenant.to_owned(),
            request,
            record,
            version: 0,
            committing_started: false,
            retried_by: None,
        })
    }

    /// The platform's policy and the request's own scope; refuses what cannot run.
    pub(super) fn resolve_policy(
        &self,
        request: &TaskRequest,
    ) -> Result<(Option<StrategyPolicy>, Option<SessionScope>), CoreError> {
        let extra = scope_io::request_scope(request.scope.as_ref())?;
        let policy = match &request.platform {
            None => None,
            Some(platform) => {
                let registry = self
                    .platforms
                    .as_ref()
                    .ok_or_else(|| CoreError::UnknownPlatform(platform.clone()))?;
                let strategy = registry.get(platform)?;
                if !strategy.policy().allow_unattended {
                    return Err(CoreError::ExecutionDenied {
                        platform: platform.clone(),
                        mode: "unattended execution",
                    });
                }
                Some(strategy.policy().clone())
            }
        };
        if request.session.is_some() && request.session_id.is_some() {
            return Err(CoreError::InvalidInput(
                "give `session` or `sessionId`, not both".into(),
            ));
        }
        let has_session = request.session.is_some() || request.session_id.is_some();
        let scoped = extra.is_some() || policy.as_ref().is_some_and(|p| p.scope.is_some());
        if has_session && !scoped {
            return Err(CoreError::InvalidInput(
                "a task with a session needs a scope: `scope`, or a `platform` that declares one"
                    .into(),
            ));
        }
        Ok((policy, extra))
    }

    async fn check_session_exists(
        &self,
        tenant: &str,
        request: &TaskRequest,
    ) -> Result<(), CoreError> {
        self.session_state(tenant, request).await.map(drop)
    }

    /// The session the task runs with (unscoped yet).
    pub(super) async fn session_state(
        &self,
        tenant: &str,
        request: &TaskRequest,
    ) -> Result<Option<AgentSessionState>, CoreError> {
        if let Some(state) = &request.session {
            return Ok(Some(state.clone()));
        }
        let Some(session_id) = &request.session_id else {
            return Ok(None);
        };
        crate::tenant::check("sessionId", Some(session_id))?;
        let Some(sessions) = &self.sessions else {
            return Err(CoreError::InvalidInput(
                "this runner keeps no sessions: send `session` instead of `sessionId`".into(),
            ));
        };
        sessions
            .load(tenant, session_id)
            .await?
            .map(Some)
            .ok_or(CoreError::SessionNotFound)
    }

    /// Admission by the tenant limits of the current settings.
    fn admission(&self) -> TenantAdmission {
        TenantAdmission::new(
            Arc::clone(&self.store),
            self.config.limits,
            Arc::clone(&self.clock),
        )
    }

    pub(super) async fn admit(&self, tenant: &str) -> Result<time::Date, CoreError> {
        self.admission().admit(tenant).await
    }

    async fn admit_if_queued(&self, task: &StoredTask) -> Result<Option<time::Date>, CoreError> {
        if task.record.state == TaskState::Queued {
            self.admit(&task.tenant_id).await.map(Some)
        } else {
            Ok(None)
        }
    }

    async fn take_session(&self, tenant: &str) -> Result<(), CoreError> {
        self.admission().take_session(tenant).await
    }

    pub(super) async fn release_session(&self, tenant: &str) {
        self.admission().release_session(tenant).await;
    }

    pub(super) async fn refund(&self, tenant: &str, admitted: Option<time::Date>) {
        self.admission().refund(tenant, admitted).await;
    }

    async fn uncount(&self, tenant: &str, counter: &Counter) {
        self.admission().uncount(tenant, counter).await;
    }

    pub(super) fn event(
        &self,
        action: AuditAction,
        outcome: AuditOutcome,
        task: &StoredTask,
    ) -> AuditEvent {
        let platform = task.request.platform.as_deref().unwrap_or(NO_PLATFORM);
        let mut event = AuditEvent::new(self.clock.now(), action, outcome, platform)
            .tenant(Some(&task.tenant_id), None);
        event.task_id = Some(task.id().to_owned());
        event.proposal_id = task.record.proposal_id.clone();
        event
    }

    fn audit_created(&self, task: &StoredTask) {
        let mut event = self.event(AuditAction::TaskCreated, AuditOutcome::Ok, task);
        event.approved_by = task.record.approval.as_ref().map(|a| a.approved_by.clone());
        event.steps = Some(
            task.request
                .plan
                .steps
                .iter()
                .enumerate()
                .map(|(index, step)| AuditStep {
                    index,
                    action: step_kind(&step.action).to_owned(),
                    description: step.description.clone(),
                })
                .collect(),
        );
        self.audit.emit(event);
    }

    pub(super) fn audit_run(&self, task: &StoredTask, duration_ms: u64) {
        let mut event = self.event(AuditAction::TaskRun, audit_outcome(task.record.state), task);
        event.approved_by = task.record.approval.as_ref().map(|a| a.approved_by.clone());
        event.executed_at = task.record.started_at;
        event.steps = Some(
            task.record
                .step_results
                .iter()
                .map(|r| AuditStep {
                    index: r.index,
                    action: r.action.clone(),
                    description: task
                        .request
                        .plan
                        .steps
                        .get(r.index)
                        .map(|s| s.description.clone())
                        .unwrap_or_default(),
                })
                .collect(),
        );
        event.screenshots = Some(task.record.screenshots.clone());
        event.failed_step = task.record.failed_step;
        event.error_code = task.record.error.as_ref().map(|e| e.code.clone());
        event.duration_ms = Some(duration_ms);
        self.audit.emit(event);
    }
}

/// The wire name of a planned step's type.
fn step_kind(action: &abr_protocol::StepAction) -> &'static str {
    use abr_protocol::StepAction as A;
    match action {
        A::Navigate { .. } => "navigate",
        A::Click { .. } => "click",
        A::Type { .. } => "type",
        A::Select { .. } => "select",
        A::Wait { .. } => "wait",
        A::Extract { .. } => "extract",
        A::Screenshot { .. } => "screenshot",
        A::Assert { .. } => "assert",
    }
}
