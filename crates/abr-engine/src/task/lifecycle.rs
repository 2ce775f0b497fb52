//! A task's life outside the browser: create, read, approve, reject, assert, retry,
//! recover after a restart (on the run kit, `kit`).

use std::collections::BTreeMap;

use abr_core::audit::{AuditAction, AuditOutcome, AuditStep};
use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::digest::request_hash;
use abr_core::limits::TenantLimit;
use abr_core::plan::{PREVIEW_SCREENSHOT, ValidPlan, validate};
use abr_core::store::{Counter, IdempotencyKey, LedgerHeader, StoredTask};
use abr_protocol::{
    Approval, ApproveRequest, AssertNotPostedRequest, ErrorBody, RecheckAnswer, RecheckResult,
    RejectRequest, TaskRecord, TaskRequest, TaskState, TaskVerification,
};

use crate::caller::Caller;
use crate::error::EngineError;
use crate::ledger::{Recorded, note, record_id};
use crate::task::kit::ApprovalSubject;
use crate::task::outcome::{Outcome, audit_outcome, callback_url};
use crate::task::runner::{Created, NO_PLATFORM, TaskEnd, TaskRunner};

impl<C: TaskContext> TaskRunner<C> {
    // ---- create, read, approve, reject ------------------------------------------------

    /// Creates a task of the actor's tenant from `request`, proposed by the actor (who
    /// therefore never approves it).
    ///
    /// With `idempotency_key`: a repeated key with the same body answers the original task
    /// (also while it runs; [`Created::replayed`]); with another body it is
    /// [`EngineError::IdempotencyKeyReused`].
    ///
    /// # Errors
    /// An invalid plan ([`CoreError::InvalidPlan`], naming the step), bad ids, a session
    /// without a scope, an unknown platform or one that forbids unattended execution, an
    /// unknown `sessionId`, a per-tenant limit (for a task the rule lets through at once), a
    /// reused key, a store failure. Nothing is stored on an error.
    pub(crate) async fn create(
        &self,
        caller: &Caller,
        request: TaskRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Created, EngineError> {
        let tenant = caller.tenant();
        abr_core::tenant::check("proposalId", request.proposal_id.as_deref())?;
        abr_core::tenant::check("Idempotency-Key", idempotency_key)?;
        let idempotency = idempotency_key.map(|key| IdempotencyKey {
            key: key.to_owned(),
            body_hash: request_hash(&request, self.body_key.as_ref()),
        });
        if let Some(idem) = &idempotency
            && let Some(task_id) = self.ledger.find(tenant, idem).await?
        {
            return self.replay(tenant, &task_id).await;
        }
        let valid = validate(&request.plan, &request.inputs, &self.config.plan)?;
        self.check_artifacts(tenant, &request.plan).await?;
        // Also checks that a stored session it names exists.
        self.resolve_policy(tenant, &request, NO_PLATFORM).await?;
        let subject = self.approval_subject(tenant, &request).await?;
        let mut task = self.new_task(caller, request, &valid, subject, None)?;
        let preview = self.preview_if_asked(&mut task, &valid).await;
        let admitted = self.admit_if_queued(&task).await?;
        match self.ledger.record(&task, idempotency.as_ref()).await {
            Ok(Recorded::New) => {}
            Ok(Recorded::Existing(task_id)) => {
                self.refund(tenant, admitted).await;
                return self.replay(tenant, &task_id).await;
            }
            Err(e) => {
                self.refund(tenant, admitted).await;
                return Err(e);
            }
        }
        if let Some(jpeg) = preview
            && let Err(e) = self
                .store
                .put_screenshot(tenant, &task.record.task_id, PREVIEW_SCREENSHOT, jpeg)
                .await
        {
            tracing::warn!(task_id = %task.record.task_id, error = %e, "the plan's preview was not kept");
        }
        self.audit_created(&task);
        self.announce_created(&task);
        Ok(Created {
            record: task.record,
            replayed: false,
        })
    }

    /// The preview of a new task waiting for approval, when its tenant has plan previews
    /// on: its JPEG (to keep once the task is), the record saying what it shows or why
    /// there is none.
    async fn preview_if_asked(&self, task: &mut StoredTask, valid: &ValidPlan) -> Option<Vec<u8>> {
        if task.record.state != TaskState::PendingApproval
            || !self.config.plan_previews.for_tenant(&task.ledger.tenant_id)
        {
            return None;
        }
        match self.preview_plan(task, valid).await {
            Ok(previewed) => {
                task.record.preview = Some(previewed.preview);
                task.record.preview_note = previewed.note;
                Some(previewed.jpeg)
            }
            Err(why) => {
                task.record.preview_note = Some(format!("no preview: {why}"));
                None
            }
        }
    }

    /// The task's record.
    ///
    /// # Errors
    /// [`CoreError::TaskNotFound`] (also for another tenant's id), a store failure.
    pub(crate) async fn get(&self, tenant: &str, task_id: &str) -> Result<TaskRecord, EngineError> {
        Ok(self.load(tenant, task_id).await?.record)
    }

    /// Approves a pending task of the actor's tenant: the actor is an approver (or an
    /// operator) other than the key that proposed it, and `plan_hash` is the hash of the
    /// stored plan. The record names the actor as `approvedBy`. The task becomes `queued`
    /// exactly once (call [`Self::run`] next); it takes a browser session of the tenant and
    /// counts as an execution of the day.
    ///
    /// # Errors
    /// [`EngineError::SelfApproval`] for the proposer's own key, an over-long `approvedBy`, an
    /// unknown task, [`EngineError::PlanHashMismatch`],
    /// [`EngineError::TaskNotPending`] (approved, rejected, or approved concurrently), a
    /// per-tenant limit (the task stays pending: approve again later), a store failure.
    pub(crate) async fn approve(
        &self,
        caller: &Caller,
        task_id: &str,
        request: &ApproveRequest,
    ) -> Result<TaskRecord, EngineError> {
        let tenant = caller.tenant();
        let stated = stated("approvedBy", request.approved_by.as_deref())?;
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::PendingApproval {
            return Err(EngineError::TaskNotPending);
        }
        let approver = caller.who().clone();
        not_the_proposer(&task.record, caller)?;
        let by = approver.name.clone();
        if !request
            .plan_hash
            .trim()
            .eq_ignore_ascii_case(&task.record.plan_hash)
        {
            return Err(EngineError::PlanHashMismatch);
        }
        let day = self.admit(tenant).await?;
        task.record.state = TaskState::Queued;
        task.record.approval = Some(Approval {
            approved_by: by.clone(),
            approved_at: self.clock.now(),
            approver: Some(approver),
            stated_by: stated,
        });
        match self.save(&mut task).await {
            Ok(true) => {}
            Ok(false) => {
                self.refund(tenant, Some(day)).await;
                return Err(EngineError::TaskNotPending);
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

    /// Rejects a pending task of the actor's tenant (an approver or an operator): it ends
    /// `rejected`, nothing runs. The record names the actor.
    ///
    /// # Errors
    /// An over-long `rejectedBy` or reason, an unknown task, [`EngineError::TaskNotPending`], a store
    /// failure.
    pub(crate) async fn reject(
        &self,
        caller: &Caller,
        task_id: &str,
        request: &RejectRequest,
    ) -> Result<TaskRecord, EngineError> {
        let tenant = caller.tenant();
        stated("rejectedBy", request.rejected_by.as_deref())?;
        let by = caller.who().name.clone();
        note("reason", request.reason.as_ref())?;
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::PendingApproval {
            return Err(EngineError::TaskNotPending);
        }
        task.record.state = TaskState::Rejected;
        task.record.finished_at = Some(self.clock.now());
        let message = match request.reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => format!("rejected by {by}: {reason}"),
            _ => format!("rejected by {by}"),
        };
        task.record.error = Some(ErrorBody::new(codes::REJECTED, message));
        if !self.save(&mut task).await? {
            return Err(EngineError::TaskNotPending);
        }
        let mut event = self.event(AuditAction::TaskRejected, AuditOutcome::Denied, &task);
        event.actor = Some(by);
        self.audit.emit(event);
        Ok(task.record)
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
    /// An unknown task, [`EngineError::NotUncertain`], the tenant's concurrency limit, a
    /// store failure.
    pub(crate) async fn recheck(
        &self,
        tenant: &str,
        task_id: &str,
    ) -> Result<RecheckResult, EngineError> {
        let task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::Uncertain {
            return Err(EngineError::NotUncertain);
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
        self.ledger.audit_recheck(&task, &result);
        Ok(result)
    }

    /// Records the owner's assertion that an uncertain task did not happen. It is recorded
    /// as an assertion, never as proof (the task stays `uncertain`), and allows exactly one
    /// new attempt ([`Self::retry`]).
    ///
    /// # Errors
    /// An empty `asserted_by`, an over-long note, an unknown task,
    /// [`EngineError::NotUncertain`], [`EngineError::AlreadyAsserted`], a store failure.
    pub(crate) async fn assert_not_posted(
        &self,
        tenant: &str,
        task_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<TaskRecord, EngineError> {
        Ok(self
            .ledger
            .assert_not_happened(tenant, task_id, request)
            .await?
            .record)
    }

    /// A new attempt (proposed by the actor) of a task that ended `failed` or `needs_reauth` (nothing committing
    /// ran), or `uncertain` with an unspent owner assertion (spending it): a new task with
    /// the same request, `retryOf` the first attempt, waiting for approval as the rule says.
    /// A task is retried at most once (retry the latest attempt next); a chain at most
    /// [`TenantLimits::retries`](abr_core::limits::TenantLimits::retries) times.
    ///
    /// # Errors
    /// An unknown task,
    /// [`EngineError::TaskNotRetryable`], the tenant's retry limit (or, for a
    /// retry the rule lets through at once, its session and daily limits), a plan invalid
    /// under the current limits, a store failure.
    pub(crate) async fn retry(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Created, EngineError> {
        let tenant = caller.tenant();
        let mut original = self.load(tenant, task_id).await?;
        if original.ledger.retried_by.is_some() {
            return Err(EngineError::TaskNotRetryable(
                "it was retried already: retry the latest attempt",
            ));
        }
        match original.record.state {
            TaskState::Failed | TaskState::NeedsReauth => {}
            TaskState::Uncertain => match &original.record.assertion {
                Some(assertion) if assertion.spent_by.is_none() => {}
                _ => {
                    return Err(EngineError::TaskNotRetryable(
                        "an uncertain task may have happened: it is retried only once its \
                         owner asserts it did not",
                    ));
                }
            },
            _ => {
                return Err(EngineError::TaskNotRetryable(
                    "only a task that ended failed or needs_reauth (or uncertain, with an \
                     owner's assertion) is retried",
                ));
            }
        }
        let request = original.request.clone();
        let valid = validate(&request.plan, &request.inputs, &self.config.plan)?;
        self.check_artifacts(tenant, &request.plan).await?;
        let subject = self.approval_subject(tenant, &request).await?;
        let first = original
            .record
            .retry_of
            .clone()
            .unwrap_or_else(|| original.id().to_owned());
        let task = self.new_task(caller, request, &valid, subject, Some(first.clone()))?;
        let retries = Counter::Retries { task_id: first };
        let max = self.config.limits.retries;
        if !self.store.increment(tenant, &retries, max).await? {
            return Err(EngineError::TenantLimit {
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
        let claimed = self.ledger.claim_attempt(&mut original, task.id()).await;
        if !matches!(claimed, Ok(true)) {
            self.uncount(tenant, &retries).await;
            self.refund(tenant, admitted).await;
            return Err(claimed.err().unwrap_or(EngineError::TaskNotRetryable(
                "it was retried at the same time",
            )));
        }
        if let Err(e) = self.ledger.record(&task, None).await {
            // The original stays claimed: a lost attempt, never a second one.
            self.refund(tenant, admitted).await;
            return Err(e);
        }
        let mut event = self.event(AuditAction::TaskRetried, AuditOutcome::Ok, &original);
        event.retry_task_id = Some(task.id().to_owned());
        self.audit.emit(event);
        self.audit_created(&task);
        self.announce_created(&task);
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
    pub(crate) async fn recover_unfinished(&self) -> Result<Vec<TaskEnd>, EngineError> {
        let now = self.clock.now();
        let ended = self
            .ledger
            .recover(
                |_| false,
                |task| {
                    recovered(task).apply(&mut task.record);
                    task.record.finished_at = Some(now);
                },
            )
            .await?;
        let ended = ended
            .into_iter()
            .map(|task| {
                let mut event = self.event(
                    AuditAction::TaskRecovered,
                    audit_outcome(task.record.state),
                    &task,
                );
                event.failed_step = task.record.failed_step;
                event.error_code = task.record.error.as_ref().map(|e| e.code.clone());
                self.audit.emit(event);
                self.announce_end(&task);
                TaskEnd {
                    callback_url: callback_url(&task),
                    record: task.record,
                }
            })
            .collect();
        self.store.clear_sessions().await?;
        Ok(ended)
    }

    // ---- helpers --------------------------------------------------------------------------

    /// The task an earlier request with the same idempotency key (and body) created.
    async fn replay(&self, tenant: &str, task_id: &str) -> Result<Created, EngineError> {
        Ok(Created {
            record: self.load(tenant, task_id).await?.record,
            replayed: true,
        })
    }

    fn new_task(
        &self,
        proposer: &Caller,
        request: TaskRequest,
        valid: &ValidPlan,
        subject: ApprovalSubject,
        retry_of: Option<String>,
    ) -> Result<StoredTask, EngineError> {
        let now = self.clock.now();
        let rule = self.config.approval;
        let auto = !rule.requires_approval(valid);
        let record = TaskRecord {
            task_id: record_id("task_")?,
            state: if auto {
                TaskState::Queued
            } else {
                TaskState::PendingApproval
            },
            plan_hash: subject.hash,
            steps: valid.describe().to_vec(),
            inputs: subject.inputs,
            account: subject.account,
            reasoning: valid.plan().reasoning.clone(),
            risk: valid.plan().risk,
            approval_rule: rule.as_str().to_owned(),
            approval: auto.then(|| Approval {
                approved_by: rule.auto_approver(),
                approved_at: now,
                approver: None,
                stated_by: None,
            }),
            proposed_by: Some(proposer.who().clone()),
            proposal_id: request.proposal_id.clone(),
            step_results: Vec::new(),
            extracted: BTreeMap::new(),
            screenshots: Vec::new(),
            downloads: Vec::new(),
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
            evidence_expired_at: None,
            preview: None,
            preview_note: None,
        };
        Ok(StoredTask {
            ledger: LedgerHeader {
                tenant_id: proposer.tenant().to_owned(),
                ..LedgerHeader::default()
            },
            request,
            record,
        })
    }

    async fn admit_if_queued(&self, task: &StoredTask) -> Result<Option<time::Date>, EngineError> {
        if task.record.state == TaskState::Queued {
            self.admit(&task.ledger.tenant_id).await.map(Some)
        } else {
            Ok(None)
        }
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
}

/// The wire name of a planned step's type.
fn step_kind(action: &abr_protocol::StepAction) -> &'static str {
    use abr_protocol::StepAction as A;
    match action {
        A::Navigate { .. } => "navigate",
        A::Click { .. } => "click",
        A::Type { .. } => "type",
        A::Select { .. } => "select",
        A::Upload { .. } => "upload",
        A::Wait { .. } => "wait",
        A::Extract { .. } => "extract",
        A::Screenshot { .. } => "screenshot",
        A::Assert { .. } => "assert",
    }
}

/// How a task a stopped runner left unfinished ends: `uncertain` if a committing step had
/// started or completed, else `failed` (retryable); the error (`runner_stopped`) says the
/// runner stopped.
fn recovered(task: &StoredTask) -> Outcome {
    let running = matches!(task.record.state, TaskState::Running | TaskState::Paused);
    let committed = task.ledger.marked || task.record.step_results.iter().any(|r| r.committing);
    let next = task.record.step_results.len();
    let step = (running && next < task.request.plan.steps.len()).then_some(next);
    if committed {
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
    }
}

/// Refuses `caller` deciding on `record` when its key proposed it (a task) or opened it (a
/// browse session): [`EngineError::SelfApproval`], even for an operator's key.
pub(crate) fn not_the_proposer(record: &TaskRecord, caller: &Caller) -> Result<(), EngineError> {
    let own = record
        .proposed_by
        .as_ref()
        .is_some_and(|p| p.key_id == caller.who().key_id);
    if own {
        Err(EngineError::SelfApproval)
    } else {
        Ok(())
    }
}

/// What a person said of themself (`approvedBy`, `rejectedBy`): trimmed, bounded like a
/// name; nothing when empty or not given.
pub(crate) fn stated(field: &str, value: Option<&str>) -> Result<Option<String>, EngineError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => Ok(abr_core::tenant::person(field, v).map(Some)?),
    }
}
