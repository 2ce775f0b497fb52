//! Browse sessions: a guarded browser driven one action at a time by a brain outside the
//! runner (an orchestrator, an LLM agent), through snapshots and references.
//!
//! A browse session is a task whose steps arrive one at a time: its record is a task record
//! (`browse: true`, `GET /v1/tasks/{browseId}`), every action goes through the same rails as
//! a plan's step ([`TaskRunner::guarded_step`]: the site policy, the element inspected, the
//! one commit rule, read-only and dry run, the session check before the first committing
//! action) and the page is read after it for handoffs (reported to the brain as `paused`,
//! once per page and reason). Nothing is approved and nothing is proven: a closed session
//! ends `closed`, its steps say what it did. A runner that stops with a session open ends it
//! at its next start like any running task (`uncertain` once a committing action started).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument as _;

use abr_core::audit::{AuditAction, AuditOutcome};
use abr_core::clock::new_token;
use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::digest::plan_hash;
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::guard::SnapshotRequest;
use abr_core::scope_io::Scopes;
use abr_core::store::{LedgerHeader, StoredTask};
use abr_protocol::{
    ActOutcome, ActResponse, ActionApproval, ActionDecision, Approval, BrowseAction, BrowseClosed,
    BrowseOpened, BrowseRequest, Risk, Snapshot, StepPlan, TaskRecord, TaskRequest, TaskState,
    TaskVerification,
};
use tokio::time::Instant;

use crate::caller::Caller;
use crate::error::EngineError;
use crate::ledger::record_id;
use crate::task::approvals::ActionApprovals;
use crate::task::browse_act::{HandoffNow, check_action, http_url};
use crate::task::browses::{End, Entry, Open};
use crate::task::kit::RunPolicy;
use crate::task::outcome::unscoped_policy;
use crate::task::rails::CommitApproval;
use crate::task::runner::TaskRunner;

/// The platform label of a browse session that names none.
const NO_PLATFORM: &str = "browse";
/// The id prefix of browse sessions.
const ID_PREFIX: &str = "browse_";

impl<C: TaskContext> TaskRunner<C> {
    /// Opens a browse session of the actor's tenant: a fresh browser with the request's
    /// session (scoped), the rails (read-only from the platform, the request or a read-only
    /// key, dry run, the tenant's sites, frames), and the first page opened through them.
    ///
    /// # Errors
    /// Bad input (the URL, ids, `idleSeconds`, a session without a scope), an unknown
    /// platform or one that forbids unattended execution, an unknown `sessionId`, the
    /// tenant's concurrent sessions or daily executions, the runner's open sessions
    /// ([`EngineError::TenantLimit`] or a busy provider), the browser not starting, a store
    /// failure. A first page that does not load is not an error: the session is open and
    /// its answer says what happened.
    pub(crate) async fn browse_open(
        &self,
        caller: &Caller,
        request: BrowseRequest,
    ) -> Result<BrowseOpened, EngineError> {
        let span = tracing::info_span!(
            target: crate::TRACE_TARGET,
            "browse.open",
            otel.name = "browse open",
            tenant = caller.tenant(),
            browse_id = tracing::field::Empty,
        );
        self.browse_open_traced(caller, request)
            .instrument(span)
            .await
    }

    async fn browse_open_traced(
        &self,
        caller: &Caller,
        mut request: BrowseRequest,
    ) -> Result<BrowseOpened, EngineError> {
        let tenant = caller.tenant();
        if caller.read_only() {
            request.read_only = true;
        }
        let config = self.browses.config.clone();
        let idle = match request.idle_seconds {
            None => config.default_idle,
            Some(s) if s >= 1 && Duration::from_secs(s) <= config.max_idle => {
                Duration::from_secs(s)
            }
            Some(_) => {
                return Err(EngineError::from(CoreError::InvalidInput(format!(
                    "idleSeconds is 1 to {}",
                    config.max_idle.as_secs()
                ))));
            }
        };
        let handoff_wait = match request.handoff {
            None => None,
            Some(h)
                if h.wait_seconds >= 1
                    && Duration::from_secs(h.wait_seconds) <= self.config.max_handoff_wait =>
            {
                Some(Duration::from_secs(h.wait_seconds))
            }
            Some(_) => {
                return Err(EngineError::from(CoreError::InvalidInput(format!(
                    "handoff.waitSeconds is 1 to {}",
                    self.config.max_handoff_wait.as_secs()
                ))));
            }
        };
        let url = http_url(&request.url)?;
        let Some(slot) = self.browses.take_slot() else {
            return Err(EngineError::from(CoreError::Provider(
                abr_core::error::ProviderError::new(
                    abr_core::error::ProviderErrorKind::Busy,
                    format!(
                        "{} browse sessions are open on this runner (its maximum): close one or \
                     retry later",
                        config.max_open
                    ),
                ),
            )));
        };
        let task_request = TaskRequest {
            profile: request.profile,
            plan: StepPlan {
                target_url: url.to_string(),
                steps: Vec::new(),
                // Not used: a browse session proves nothing (it ends `closed`).
                verification: TaskVerification::Screenshot {
                    text: String::new(),
                },
                risk: Risk::Low,
                reasoning: None,
                confidence: None,
                read_only: request.read_only,
                downloads: false,
            },
            inputs: BTreeMap::new(),
            secret_inputs: Vec::new(),
            session: request.session,
            session_id: request.session_id,
            scope: request.scope,
            platform: request.platform,
            tenant_id: Some(tenant.to_owned()),
            proposal_id: None,
            dry_run: request.dry_run,
            handoff: None,
        };
        let RunPolicy {
            policy,
            extra,
            platform,
            state,
            profile,
        } = self
            .resolve_policy(tenant, &task_request, NO_PLATFORM)
            .await?;
        let admitted = self.admit(tenant).await?;
        let mut task = match self.new_browse(caller, task_request) {
            Ok(task) => task,
            Err(e) => {
                self.refund(tenant, Some(admitted)).await;
                return Err(e);
            }
        };
        if let Err(e) = self.ledger.record(&task, None).await {
            self.refund(tenant, Some(admitted)).await;
            return Err(e);
        }
        let has_session = state.is_some();
        let rails = match self
            .rails(
                &mut task,
                request.read_only,
                url.as_str(),
                &[],
                policy.as_ref(),
                has_session,
            )
            .await
        {
            Ok(rails) => rails,
            Err((_, failure)) => {
                let error = if failure.body.code == codes::SITE_DENIED {
                    EngineError::SiteDenied(failure.body.message)
                } else if failure.body.retryable {
                    StoreFailure::unavailable(failure.body.message).into()
                } else {
                    StoreFailure::corrupt(failure.body.message).into()
                };
                self.abandon(task, &error, admitted).await;
                return Err(error);
            }
        };
        let mut rails = rails;
        if profile.is_some() {
            // A profile is its owner's signed-in browser: the session never signs in itself.
            rails.rules.may_sign_in = false;
            rails.profile.clone_from(&profile);
        }
        if self.config.approval != abr_core::approval::ApprovalRule::Off
            && !task.record.read_only
            && !task.record.dry_run
        {
            // Under the approval rule: a committing action waits for an approver, and until
            // one approves it nothing the page sends leaves.
            rails.network.require_approval();
            rails.approval = CommitApproval::Required;
        }
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let lease = match self
            .acquire(&platform, state, scopes, profile.as_ref())
            .await
        {
            Ok(lease) => lease,
            Err(e) => {
                self.abandon(task, &e, admitted).await;
                return Err(e);
            }
        };
        if let Err(failure) = self.arm(&rails, &lease).await {
            self.release(lease).await;
            let error = EngineError::from(abr_core::error::ProviderError::new(
                abr_core::error::ProviderErrorKind::Unavailable,
                failure.body.message,
            ));
            self.abandon(task, &error, admitted).await;
            return Err(error);
        }
        let attr = match new_token() {
            Ok(token) => format!(
                "data-abr-{}",
                token
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .take(10)
                    .collect::<String>()
                    .to_ascii_lowercase()
            ),
            Err(_) => {
                self.release(lease).await;
                let error = EngineError::from(CoreError::Internal("the OS random source failed"));
                self.abandon(task, &error, admitted).await;
                return Err(error);
            }
        };
        let id = task.record.task_id.clone();
        tracing::Span::current().record("browse_id", id.as_str());
        let mut open = Open {
            task,
            rails,
            lease,
            snapshot: SnapshotRequest::new(attr),
            names: BTreeMap::new(),
            policy,
            extra,
            platform,
            started: Instant::now(),
            approvals: ActionApprovals::default(),
            handoff_wait,
            handoff: None,
            failing: None,
        };
        let first = self
            .act_on(
                &mut open,
                &BrowseAction::Navigate {
                    url: url.to_string(),
                },
                Vec::new(),
            )
            .await;
        let read_only = open.task.record.read_only;
        let dry_run = open.task.record.dry_run;
        let entry = Arc::new(Entry {
            tenant: tenant.to_owned(),
            idle,
            _slot: slot,
            last_used: Mutex::new(Instant::now()),
            session: tokio::sync::Mutex::new(Some(open)),
        });
        self.browses.lock().insert(id.clone(), entry);
        Ok(BrowseOpened {
            browse_id: id,
            read_only,
            dry_run,
            idle_seconds: idle.as_secs(),
            first,
        })
    }

    /// The page of an open session now: the page of elements and the budget `query` asks
    /// for.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] for a query out of its bounds;
    /// [`EngineError::BrowseNotFound`] (closed, idle too long, or another tenant's).
    pub(crate) async fn browse_snapshot(
        &self,
        tenant: &str,
        id: &str,
        query: abr_protocol::SnapshotQuery,
    ) -> Result<Snapshot, EngineError> {
        query.check().map_err(CoreError::InvalidInput)?;
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(EngineError::BrowseNotFound)?;
        let request = SnapshotRequest::with_query(open.snapshot.attr.clone(), &query);
        let snapshot = self.read_page_with(open, &request).await;
        // Evidence of what the brain read, redacted like every frame: taken while the brain
        // reads the answer (the next call that may change the page waits for it).
        open.rails
            .frame_behind(&open.lease, abr_protocol::FramePoint::Read, "snapshot");
        entry.touch();
        Ok(snapshot)
    }

    /// Performs one action of the brain on an open session, through the rails, and answers
    /// what became of it and the page after it.
    ///
    /// # Errors
    /// [`EngineError::BrowseNotFound`]; bad input (a reference that is not one, a URL that is
    /// not http(s), a key name too long); [`EngineError::RefNotFound`] for a reference no
    /// snapshot of this session gave. What happens on the page is not an error: a refusal,
    /// a pause or a failure is the answer's `outcome`.
    pub(crate) async fn browse_act(
        &self,
        tenant: &str,
        id: &str,
        action: BrowseAction,
    ) -> Result<ActResponse, EngineError> {
        let span = tracing::info_span!(
            target: crate::TRACE_TARGET,
            "browse.act",
            otel.name = format!("browse {}", action.kind()),
            tenant,
            browse_id = id,
            action = action.kind(),
        );
        self.browse_act_traced(tenant, id, action)
            .instrument(span)
            .await
    }

    async fn browse_act_traced(
        &self,
        tenant: &str,
        id: &str,
        action: BrowseAction,
    ) -> Result<ActResponse, EngineError> {
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(EngineError::BrowseNotFound)?;
        check_action(open, &action, self.browses.config.act_timeout)?;
        // An upload's file, read before anything reaches the browser: another tenant's,
        // deleted or expired is a 404 with nothing done.
        let files = match &action {
            BrowseAction::Upload { artifact, .. } => self.upload_files(tenant, artifact).await?,
            _ => Vec::new(),
        };
        match self.browse_handoff_now(open).await {
            HandoffNow::Free => {}
            HandoffNow::Waiting(pause) => {
                // A person is asked for or has the page: nothing is done meanwhile.
                let snapshot = self.read_page(open).await;
                return Ok(ActResponse {
                    outcome: ActOutcome::Paused,
                    committing: false,
                    blocked: None,
                    pause: Some(pause),
                    error: None,
                    approval: None,
                    snapshot,
                    guarded: Vec::new(),
                });
            }
            HandoffNow::Over(error) => {
                drop(guard);
                self.end(id, &entry, End::TakeoverOver).await;
                return Ok(ActResponse {
                    outcome: ActOutcome::Failed,
                    committing: false,
                    blocked: None,
                    pause: None,
                    error: Some(error),
                    approval: None,
                    snapshot: Snapshot::default(),
                    guarded: Vec::new(),
                });
            }
        }
        let response = self.act_on(open, &action, files).await;
        entry.touch();
        Ok(response)
    }

    /// Closes an open session: its refreshed session written back (with `sessionId`), its
    /// browser released, its record `closed`.
    ///
    /// # Errors
    /// [`EngineError::BrowseNotFound`].
    pub(crate) async fn browse_close(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<BrowseClosed, EngineError> {
        let entry = self.browses.get(tenant, id)?;
        self.end(id, &entry, End::Closed)
            .await
            .ok_or(EngineError::BrowseNotFound)
    }

    /// Closes every session idle for longer than its idle time; answers how many. Call it
    /// periodically.
    pub(crate) async fn browse_sweep(&self) -> usize {
        let all: Vec<(String, Arc<Entry<C>>)> = self
            .browses
            .lock()
            .iter()
            .map(|(id, e)| (id.clone(), Arc::clone(e)))
            .collect();
        let mut closed = 0;
        for (id, entry) in all {
            // A session waiting for a person is not idle: its takeover's expiry ends it.
            let now = match entry.session.try_lock() {
                Ok(mut guard) => match guard.as_mut() {
                    Some(open) if open.handoff.is_some() => {
                        Some(self.browse_handoff_now(open).await)
                    }
                    _ => None,
                },
                // An action holds it: not idle.
                Err(_) => continue,
            };
            let end = match now {
                Some(HandoffNow::Over(_)) => End::TakeoverOver,
                Some(_) => continue,
                None if entry.idle_for() > entry.idle => End::Idle,
                None => continue,
            };
            if self.end(&id, &entry, end).await.is_some() {
                closed += 1;
            }
        }
        closed
    }

    /// Closes every open session (the runner is stopping).
    pub(crate) async fn browse_close_all(&self) {
        let all: Vec<(String, Arc<Entry<C>>)> = self
            .browses
            .lock()
            .iter()
            .map(|(id, e)| (id.clone(), Arc::clone(e)))
            .collect();
        for (id, entry) in all {
            self.end(&id, &entry, End::Shutdown).await;
        }
    }

    /// The committing action of a session that waits for an approver.
    ///
    /// # Errors
    /// [`EngineError::BrowseNotFound`]; [`EngineError::ActionNotPending`] when none waits.
    pub(crate) async fn browse_approval(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ActionApproval, EngineError> {
        self.on_pending(tenant, id, |approvals| approvals.pending().cloned())
            .await
    }

    /// The committing action of a session that waits for an approver, and its preview's
    /// JPEG when one was kept.
    ///
    /// # Errors
    /// As [`Self::browse_approval`].
    pub(crate) async fn browse_approval_shown(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<(ActionApproval, Option<Vec<u8>>), EngineError> {
        self.on_pending(tenant, id, |approvals| {
            let image = approvals.pending_image().map(<[u8]>::to_vec);
            approvals
                .pending()
                .cloned()
                .map(|approval| (approval, image))
        })
        .await
    }

    /// What `read` answers of an open session's approvals; `ActionNotPending` for `None`.
    async fn on_pending<R>(
        &self,
        tenant: &str,
        id: &str,
        read: impl FnOnce(&crate::task::approvals::ActionApprovals) -> Option<R>,
    ) -> Result<R, EngineError> {
        let entry = self.browses.get(tenant, id)?;
        let guard = entry.session.lock().await;
        let open = guard.as_ref().ok_or(EngineError::BrowseNotFound)?;
        read(&open.approvals).ok_or(EngineError::ActionNotPending)
    }

    /// The committing actions `tenant`'s open sessions wait on.
    pub(crate) async fn pending_browse_approvals(&self, tenant: &str) -> Vec<ActionApproval> {
        let entries: Vec<_> = self
            .browses
            .lock()
            .values()
            .filter(|e| e.tenant == tenant)
            .cloned()
            .collect();
        let mut out = Vec::new();
        for entry in entries {
            let guard = entry.session.lock().await;
            if let Some(pending) = guard.as_ref().and_then(|open| open.approvals.pending()) {
                out.push(pending.clone());
            }
        }
        out.sort_by_key(|a| a.requested_at);
        out
    }

    /// Approves or rejects the committing action a session waits on, as `actor` (an
    /// approver or an operator of the session's tenant, never the key that opened the
    /// session). Approved: the brain sends the action again and it runs, once. Rejected:
    /// the session closes (`closed`, error `rejected`) with nothing of it committed.
    ///
    /// # Errors
    /// [`EngineError::SelfApproval`]
    /// for the key that opened the session; an over-long `statedBy`;
    /// [`EngineError::BrowseNotFound`]; [`EngineError::ActionNotPending`] for an id that is not
    /// the pending approval's.
    pub(crate) async fn browse_decide(
        &self,
        caller: &Caller,
        id: &str,
        decision: &ActionDecision,
        approve: bool,
    ) -> Result<ActionApproval, EngineError> {
        let stated = crate::task::lifecycle::stated("statedBy", decision.stated_by.as_deref())?;
        let entry = self.browses.get(caller.tenant(), id)?;
        let approver = caller.who().clone();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(EngineError::BrowseNotFound)?;
        crate::task::lifecycle::not_the_proposer(&open.task.record, caller)?;
        let decided = open
            .approvals
            .decide(&decision.approval_id, approve, approver.clone())?;
        let action = if approve {
            AuditAction::TaskApproved
        } else {
            AuditAction::TaskRejected
        };
        let mut event = self.event(action, AuditOutcome::Ok, &open.task);
        event.approved_by = Some(approver.name.clone());
        self.audit.emit(event);
        if !approve {
            drop(guard);
            let name = approver.name.clone();
            self.end(id, &entry, End::Rejected(name)).await;
            return Ok(decided);
        }
        open.task.record.approval = Some(Approval {
            approved_by: approver.name.clone(),
            approved_at: self.clock.now(),
            approver: Some(approver),
            stated_by: stated,
        });
        if let Err(failure) = self.save_progress(&mut open.task).await {
            tracing::warn!(code = %failure.body.code, "could not record a browse approval");
        }
        Ok(decided)
    }

    /// How many browse sessions are open.
    pub(crate) fn browses_open(&self) -> usize {
        self.browses.lock().len()
    }

    /// The committing actions the open sessions of every tenant wait on an approver for:
    /// how many, and when the first was asked. A session acting now (its lock held) waits
    /// on nobody and is not waited for.
    pub(crate) fn browse_approvals_waiting(&self) -> abr_core::store::StateCount {
        let entries: Vec<_> = self.browses.lock().values().cloned().collect();
        let asked: Vec<_> = entries
            .iter()
            .filter_map(|entry| {
                let open = entry.session.try_lock().ok()?;
                open.as_ref()?
                    .approvals
                    .pending()
                    .map(|pending| pending.requested_at)
            })
            .collect();
        abr_core::store::StateCount {
            count: asked.len() as u64,
            oldest: asked.into_iter().min(),
        }
    }

    // ---- internals ------------------------------------------------------------------------

    fn new_browse(&self, caller: &Caller, request: TaskRequest) -> Result<StoredTask, EngineError> {
        let now = self.clock.now();
        let record = TaskRecord {
            task_id: record_id(ID_PREFIX)?,
            state: TaskState::Running,
            plan_hash: plan_hash(&request.plan),
            steps: Vec::new(),
            inputs: Vec::new(),
            account: None,
            reasoning: None,
            risk: Risk::Low,
            approval_rule: self.config.approval.as_str().to_owned(),
            approval: None,
            proposed_by: Some(caller.who().clone()),
            proposal_id: None,
            step_results: Vec::new(),
            extracted: BTreeMap::new(),
            screenshots: Vec::new(),
            downloads: Vec::new(),
            failed_step: None,
            error: None,
            created_at: now,
            finished_at: None,
            started_at: Some(now),
            retry_of: None,
            assertion: None,
            read_only: false,
            dry_run: request.dry_run,
            blocked: Vec::new(),
            pause: None,
            takeover_events: Vec::new(),
            replay: None,
            session_check: None,
            browse: true,
            evidence_expired_at: None,
            preview: None,
            preview_note: None,
        };
        Ok(StoredTask {
            ledger: LedgerHeader {
                tenant_id: caller.tenant().to_owned(),
                ..LedgerHeader::default()
            },
            request,
            record,
        })
    }

    /// Ends a session that could not open: its record `failed` (nothing ran), the tenant's
    /// admission given back.
    async fn abandon(&self, mut task: StoredTask, error: &EngineError, admitted: time::Date) {
        task.record.state = TaskState::Failed;
        task.record.error = Some(error.to_body());
        task.record.finished_at = Some(self.clock.now());
        if let Err(e) = self.save_end(&mut task).await {
            tracing::warn!(error = %e, "could not record the browse session that did not open");
        }
        self.refund(&task.ledger.tenant_id, Some(admitted)).await;
    }
}
