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

use abr_core::audit::{AuditAction, AuditOutcome};
use abr_core::clock::new_token;
use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::digest::plan_hash;
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::guard::SnapshotRequest;
use abr_core::principal::{Actor, Right};
use abr_core::scope_io::Scopes;
use abr_core::step_runner::BrowserAction;
use abr_core::store::StoredTask;
use abr_protocol::{
    ActOutcome, ActResponse, ActionApproval, ActionDecision, Approval, BlockedBy, BrowseAction,
    BrowseClosed, BrowseOpened, BrowsePause, BrowseRequest, ErrorBody, PauseReason, Risk,
    ScrollDirection, Snapshot, StepPlan, StepResult, TaskRecord, TaskRequest, TaskState,
    TaskVerification,
};
use tokio::time::Instant;

use crate::ledger::record_id;
use crate::step::{Step, guarded};
use crate::task::approvals::{ActionApprovals, Ask, Fingerprint};
use crate::task::browse_handoff::HandoffNow;
use crate::task::browses::{End, Entry, Open};
use crate::task::lifecycle::RunPolicy;
use crate::task::outcome::{Failure, unscoped_policy};
use crate::task::rails::{self, CommitApproval};
use crate::task::runner::TaskRunner;

/// The platform label of a browse session that names none.
const NO_PLATFORM: &str = "browse";
/// The id prefix of browse sessions.
const ID_PREFIX: &str = "browse_";
/// Longest key name a `press` takes.
const MAX_KEY: usize = 40;
/// Longest URL a `navigate` or an open takes.
const MAX_URL: usize = 4096;

/// How long a session waits, after an action a page's script may answer with a request,
/// before it reads what the network gate saw: a read-only or dry-run session after its
/// answer's reads, a writable one from the action's end (its reads count).
const SETTLE: Duration = Duration::from_millis(150);

/// Whether the page's own scripts may answer `action` by sending something.
fn scripts_may_send(action: &BrowserAction) -> bool {
    matches!(
        action,
        BrowserAction::Click { .. }
            | BrowserAction::Type { .. }
            | BrowserAction::Select { .. }
            | BrowserAction::Press { .. }
            | BrowserAction::Upload { .. }
    )
}

fn http_url(url: &str) -> Result<url::Url, CoreError> {
    if url.len() > MAX_URL {
        return Err(CoreError::InvalidInput(format!(
            "url is longer than {MAX_URL} bytes"
        )));
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| CoreError::InvalidInput(format!("url is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(CoreError::InvalidInput(
            "url must be an http or https URL with a host".into(),
        ));
    }
    Ok(parsed)
}

fn pause_reason(code: &str) -> Option<PauseReason> {
    [
        PauseReason::Challenge,
        PauseReason::LoginRequired,
        PauseReason::Paywall,
        PauseReason::AccessBlocked,
        PauseReason::WriteAffordance,
        PauseReason::ConsentRequired,
        PauseReason::Stuck,
        PauseReason::NeedsInput,
        PauseReason::ApprovalRequired,
    ]
    .into_iter()
    .find(|r| r.as_str() == code)
}

/// What became of one action, before the snapshot is read.
struct Acted {
    outcome: ActOutcome,
    committing: bool,
    blocked: Option<abr_protocol::BlockedAction>,
    pause: Option<BrowsePause>,
    error: Option<ErrorBody>,
    approval: Option<ActionApproval>,
}

impl Acted {
    fn done(committing: bool) -> Self {
        Self {
            outcome: ActOutcome::Done,
            committing,
            blocked: None,
            pause: None,
            error: None,
            approval: None,
        }
    }

    fn waits_for_approval(&self) -> bool {
        self.pause
            .as_ref()
            .is_some_and(|p| p.reason == PauseReason::ApprovalRequired)
    }

    fn respond(self, snapshot: Snapshot) -> ActResponse {
        ActResponse {
            outcome: self.outcome,
            committing: self.committing,
            blocked: self.blocked,
            pause: self.pause,
            error: self.error,
            approval: self.approval,
            snapshot,
        }
    }
}

/// Whether `failure` is the network gate holding a write for an approver (not the action
/// itself refused).
fn held_below<C: TaskContext>(open: &Open<C>, failure: &Failure) -> bool {
    failure.body.code == codes::BLOCKED_ACTION
        && open
            .task
            .record
            .blocked
            .last()
            .is_some_and(|b| b.blocked_by == BlockedBy::AwaitingApproval)
}

impl<C: TaskContext> TaskRunner<C> {
    /// Opens a browse session of the actor's tenant: a fresh browser with the request's
    /// session (scoped), the rails (read-only from the platform, the request or a read-only
    /// key, dry run, the tenant's sites, frames), and the first page opened through them.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may browse; bad input (the URL, ids, `idleSeconds`, a session without a scope), an unknown
    /// platform or one that forbids unattended execution, an unknown `sessionId`, the
    /// tenant's concurrent sessions or daily executions, the runner's open sessions
    /// ([`CoreError::TenantLimit`] or a busy provider), the browser not starting, a store
    /// failure. A first page that does not load is not an error: the session is open and
    /// its answer says what happened.
    pub async fn browse_open(
        &self,
        actor: &Actor,
        mut request: BrowseRequest,
    ) -> Result<BrowseOpened, CoreError> {
        actor.require(Right::Browse)?;
        let tenant = actor.tenant();
        if actor.principal().read_only() {
            request.read_only = true;
        }
        let config = self.browses.config.clone();
        let idle = match request.idle_seconds {
            None => config.default_idle,
            Some(s) if s >= 1 && Duration::from_secs(s) <= config.max_idle => {
                Duration::from_secs(s)
            }
            Some(_) => {
                return Err(CoreError::InvalidInput(format!(
                    "idleSeconds is 1 to {}",
                    config.max_idle.as_secs()
                )));
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
                return Err(CoreError::InvalidInput(format!(
                    "handoff.waitSeconds is 1 to {}",
                    self.config.max_handoff_wait.as_secs()
                )));
            }
        };
        let url = http_url(&request.url)?;
        let Some(slot) = self.browses.take_slot() else {
            return Err(CoreError::Provider(abr_core::error::ProviderError::new(
                abr_core::error::ProviderErrorKind::Busy,
                format!(
                    "{} browse sessions are open on this runner (its maximum): close one or \
                     retry later",
                    config.max_open
                ),
            )));
        };
        let task_request = TaskRequest {
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
        } = self
            .resolve_policy(tenant, &task_request, NO_PLATFORM)
            .await?;
        let admitted = self.admit(tenant).await?;
        let mut task = match self.new_browse(actor, task_request) {
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
                    CoreError::SiteDenied(failure.body.message)
                } else if failure.body.retryable {
                    CoreError::Store(StoreFailure::unavailable(failure.body.message))
                } else {
                    CoreError::Store(StoreFailure::corrupt(failure.body.message))
                };
                self.abandon(task, &error, admitted).await;
                return Err(error);
            }
        };
        let mut rails = rails;
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
        let lease = match self.acquire(&platform, state, scopes).await {
            Ok(lease) => lease,
            Err(e) => {
                self.abandon(task, &e, admitted).await;
                return Err(e);
            }
        };
        if let Err(failure) = self.arm(&rails, &lease).await {
            self.release(lease).await;
            let error = CoreError::Provider(abr_core::error::ProviderError::new(
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
                let error = CoreError::Internal("the OS random source failed");
                self.abandon(task, &error, admitted).await;
                return Err(error);
            }
        };
        let id = task.record.task_id.clone();
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
    /// [`CoreError::BrowseNotFound`] (closed, idle too long, or another tenant's).
    pub async fn browse_snapshot(
        &self,
        tenant: &str,
        id: &str,
        query: abr_protocol::SnapshotQuery,
    ) -> Result<Snapshot, CoreError> {
        query.check().map_err(CoreError::InvalidInput)?;
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::BrowseNotFound)?;
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
    /// [`CoreError::BrowseNotFound`]; bad input (a reference that is not one, a URL that is
    /// not http(s), a key name too long); [`CoreError::RefNotFound`] for a reference no
    /// snapshot of this session gave. What happens on the page is not an error: a refusal,
    /// a pause or a failure is the answer's `outcome`.
    pub async fn browse_act(
        &self,
        tenant: &str,
        id: &str,
        action: BrowseAction,
    ) -> Result<ActResponse, CoreError> {
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::BrowseNotFound)?;
        check_action(open, &action)?;
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
                });
            }
        }
        let response = self.act_on(open, &action).await;
        entry.touch();
        Ok(response)
    }

    /// Closes an open session: its refreshed session written back (with `sessionId`), its
    /// browser released, its record `closed`.
    ///
    /// # Errors
    /// [`CoreError::BrowseNotFound`].
    pub async fn browse_close(&self, tenant: &str, id: &str) -> Result<BrowseClosed, CoreError> {
        let entry = self.browses.get(tenant, id)?;
        self.end(id, &entry, End::Closed)
            .await
            .ok_or(CoreError::BrowseNotFound)
    }

    /// Closes every session idle for longer than its idle time; answers how many. Call it
    /// periodically.
    pub async fn browse_sweep(&self) -> usize {
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
    pub async fn browse_close_all(&self) {
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
    /// [`CoreError::BrowseNotFound`]; [`CoreError::ActionNotPending`] when none waits.
    pub async fn browse_approval(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ActionApproval, CoreError> {
        let entry = self.browses.get(tenant, id)?;
        let guard = entry.session.lock().await;
        let open = guard.as_ref().ok_or(CoreError::BrowseNotFound)?;
        open.approvals
            .pending()
            .cloned()
            .ok_or(CoreError::ActionNotPending)
    }

    /// The committing actions `tenant`'s open sessions wait on.
    pub async fn pending_browse_approvals(&self, tenant: &str) -> Vec<ActionApproval> {
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
    /// [`CoreError::Forbidden`] unless the actor may approve; [`CoreError::SelfApproval`]
    /// for the key that opened the session; an over-long `statedBy`;
    /// [`CoreError::BrowseNotFound`]; [`CoreError::ActionNotPending`] for an id that is not
    /// the pending approval's.
    pub async fn browse_decide(
        &self,
        actor: &Actor,
        id: &str,
        decision: &ActionDecision,
        approve: bool,
    ) -> Result<ActionApproval, CoreError> {
        actor.require(Right::Approve)?;
        let stated = crate::task::lifecycle::stated("statedBy", decision.stated_by.as_deref())?;
        let entry = self.browses.get(actor.tenant(), id)?;
        let approver = actor.principal().reference();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::BrowseNotFound)?;
        crate::task::lifecycle::not_the_proposer(&open.task.record, actor)?;
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
    pub fn browses_open(&self) -> usize {
        self.browses.lock().len()
    }

    // ---- internals ------------------------------------------------------------------------

    fn new_browse(&self, actor: &Actor, request: TaskRequest) -> Result<StoredTask, CoreError> {
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
            proposed_by: Some(actor.principal().reference()),
            proposal_id: None,
            step_results: Vec::new(),
            extracted: BTreeMap::new(),
            screenshots: Vec::new(),
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
        };
        Ok(StoredTask {
            tenant_id: actor.tenant().to_owned(),
            request,
            record,
            version: 0,
            committing_started: false,
            retried_by: None,
        })
    }

    /// Ends a session that could not open: its record `failed` (nothing ran), the tenant's
    /// admission given back.
    async fn abandon(&self, mut task: StoredTask, error: &CoreError, admitted: time::Date) {
        task.record.state = TaskState::Failed;
        task.record.error = Some(error.to_body());
        task.record.finished_at = Some(self.clock.now());
        if let Err(e) = self.save(&mut task).await {
            tracing::warn!(error = %e, "could not record the browse session that did not open");
        }
        self.refund(&task.tenant_id, Some(admitted)).await;
    }

    /// One action through the rails, recorded, and the page after it.
    pub(super) async fn act_on(&self, open: &mut Open<C>, action: &BrowseAction) -> ActResponse {
        // A relayed act's watch hears of its first write; what the page sent while the brain
        // was away belongs to the last action.
        open.rails.network.set_watch(crate::commit_watch::current());
        if let Err(failure) = self
            .late_network(&mut open.task, &mut open.rails, &open.lease)
            .await
        {
            tracing::warn!(code = %failure.body.code, "browse: the network between actions");
        }
        if let BrowseAction::Navigate { url } = action {
            open.rails.network.add_site(url);
        }
        let index = open.task.record.step_results.len();
        let browser = to_browser_action(open, action);
        let started = Instant::now();
        let timeout = self.browses.config.act_timeout;
        let described = describe(open, action);
        let gated = open.rails.network.approval_required();
        let fingerprint = gated.then(|| fingerprint(open, action));
        let granted = fingerprint
            .as_ref()
            .and_then(|f| open.approvals.take_grant(f));
        if gated {
            open.rails.approval = if granted.is_some() {
                CommitApproval::Approved
            } else {
                CommitApproval::Required
            };
            // An approved action's writes leave until its answer is read; no other's do.
            open.rails.network.hold(granted.is_none());
        }
        // A frame still being taken goes on beside an action that only reads the page.
        if !rails::reads_only(&browser) {
            open.rails.settle_frames().await;
        }
        open.rails.network.acting(true);
        let guarded = self
            .guarded_step(
                &mut open.task,
                &mut open.rails,
                &open.lease,
                index,
                &browser,
                timeout,
            )
            .await;
        // What the action started (a handler's post) has until `SETTLE` after it to reach
        // the gate before the answer says whether the action committed.
        let settled_at = Instant::now() + SETTLE;
        let mut acted = match guarded {
            Ok((_, committing)) => Acted::done(committing),
            Err((failure, committing)) if granted.is_some() && held_below(open, &failure) => {
                // The approved action ran; what the page sent of its own meanwhile was
                // refused (recorded). An approved action is never asked about again.
                let mut acted = Acted::done(committing);
                acted.blocked = open.task.record.blocked.last().cloned();
                acted
            }
            Err((failure, committing)) => self.not_done(open, failure, committing),
        };
        if acted.outcome == ActOutcome::Done {
            // Taken beside the page reads of the answer (and the brain's next snapshot).
            if let Some(point) = rails::frame_point(&browser) {
                open.rails.frame_behind(&open.lease, point, browser.kind());
            }
            if rails::may_change_page(&browser) {
                self.read_for_pause(open, &mut acted, index).await;
            }
        }
        let snapshot = self.read_page(open).await;
        let refusing = open.rails.guard.refuses().is_some() || (gated && granted.is_none());
        if scripts_may_send(&browser) {
            // Give what the action started (a handler's `requestSubmit`, a post behind a
            // click) the moment it takes to reach the gate: after the reads when a refusal
            // is the answer; from the action's end otherwise (the answer tells the brain
            // whether it committed, and a brain told it did not may do it again).
            let until = if refusing {
                Instant::now() + SETTLE
            } else {
                settled_at
            };
            tokio::time::sleep_until(until).await;
        }
        // What the action started after it returned (a script's post), seen by now.
        match self
            .network_after(&mut open.task, &mut open.rails, &open.lease, index)
            .await
        {
            Ok(wrote) => acted.committing |= wrote,
            Err(failure) if granted.is_some() && held_below(open, &failure) => {
                acted.blocked = open.task.record.blocked.last().cloned();
            }
            Err(failure) => {
                let committing = acted.committing;
                acted = self.not_done(open, failure, committing);
            }
        }
        open.rails.network.set_watch(None);
        open.rails.network.acting(false);
        if gated {
            open.rails.network.hold(true);
            open.rails.approval = CommitApproval::Required;
        }
        if acted.waits_for_approval()
            && let Some(fingerprint) = fingerprint
        {
            let ask = self.ask_of(open, action);
            let waiting = open.approvals.pending().map(|a| a.approval_id.clone());
            match open.approvals.ask(fingerprint, ask) {
                Ok(approval) => {
                    tracing::info!(
                        approval = %approval.approval_id,
                        "browse: a committing action waits for an approver"
                    );
                    // Asked again for the same action: announced once.
                    if waiting.as_ref() != Some(&approval.approval_id) {
                        self.announce_action_approval(&open.task, &approval.approval_id);
                    }
                    acted.approval = Some(approval);
                }
                Err(e) => {
                    acted.outcome = ActOutcome::Failed;
                    acted.pause = None;
                    acted.error = Some(e.to_body());
                }
            }
        }
        self.watch_stuck(open, action, &mut acted);
        if acted.outcome == ActOutcome::Paused
            && let Some(mut pause) = acted.pause.take()
        {
            self.browse_pause_for_person(open, &mut pause).await;
            acted.pause = Some(pause);
        }
        let described = match &granted {
            Some(approval) => match &approval.decided_by {
                Some(by) => format!("{described} (approved by {})", by.name),
                None => described,
            },
            None => described,
        };
        let result = StepResult {
            index,
            action: browser.kind().to_owned(),
            ok: matches!(acted.outcome, ActOutcome::Done | ActOutcome::Paused)
                && acted.error.is_none(),
            committing: acted.committing,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            error: acted.error.clone().or_else(|| {
                acted
                    .pause
                    .as_ref()
                    .map(|p| ErrorBody::new(p.reason.as_str(), p.message.clone()))
            }),
        };
        self.announce_step(&open.task, &result);
        open.task.record.steps.push(described);
        open.task.record.step_results.push(result);
        if rails::acts(&browser) {
            open.rails.writes_owner = Some(index);
            open.rails.acted_since_frame = true;
        }
        if let Err(failure) = self.save_progress(&mut open.task).await {
            tracing::warn!(code = %failure.body.code, "could not record a browse action");
        }
        acted.respond(snapshot)
    }

    /// What an approver is shown of `action`.
    fn ask_of(&self, open: &Open<C>, action: &BrowseAction) -> Ask {
        let (role, name) = match reference_of(action).and_then(|r| open.names.get(r)) {
            Some((role, name)) => (Some(role.clone()), Some(name.clone())),
            None => (None, None),
        };
        Ask {
            browse_id: open.task.record.task_id.clone(),
            action: describe(open, action),
            role,
            name,
            page: rails::page_key(&open.rails.last_url),
            at: self.clock.now(),
        }
    }

    /// A control that failed twice in a row (not found, not actionable, timed out) before
    /// anything committing was sent: the answer is a `stuck` pause, like a plan's step.
    fn watch_stuck(&self, open: &mut Open<C>, action: &BrowseAction, acted: &mut Acted) {
        let reference = match action {
            BrowseAction::Click { reference }
            | BrowseAction::Type { reference, .. }
            | BrowseAction::Select { reference, .. } => Some(reference.clone()),
            BrowseAction::Press { reference, .. } => reference.clone(),
            _ => None,
        };
        let failed_on_control = acted.outcome == ActOutcome::Failed
            && !acted.committing
            && acted.error.as_ref().is_some_and(|e| {
                [
                    codes::ELEMENT_NOT_FOUND,
                    codes::STEP_REJECTED,
                    codes::STEP_TIMEOUT,
                ]
                .contains(&e.code.as_str())
            });
        let (Some(reference), true) = (reference, failed_on_control) else {
            open.failing = None;
            return;
        };
        let count = match &open.failing {
            Some((last, n)) if *last == reference => n + 1,
            _ => 1,
        };
        if count < 2 {
            open.failing = Some((reference, count));
            return;
        }
        open.failing = None;
        let why = acted.error.take().map(|e| e.message).unwrap_or_default();
        acted.outcome = ActOutcome::Paused;
        acted.pause = Some(BrowsePause::new(
            PauseReason::Stuck,
            format!("the same control ({reference}) failed twice in a row: {why}"),
        ));
    }

    /// The answer for an action the rails or the page did not let through.
    fn not_done(&self, open: &Open<C>, failure: Failure, committing: bool) -> Acted {
        let last_blocked = open.task.record.blocked.last();
        if failure.body.code == codes::BLOCKED_ACTION
            && last_blocked.is_some_and(|b| b.blocked_by == BlockedBy::AwaitingApproval)
        {
            // The page sent a write the commit rule did not foresee: the gate held it, and
            // the action waits for an approver like any committing one.
            return Acted {
                outcome: ActOutcome::Paused,
                committing: false,
                blocked: last_blocked.cloned(),
                pause: Some(BrowsePause::new(
                    PauseReason::ApprovalRequired,
                    format!(
                        "{}; an approver approves this action, then send it again",
                        failure.body.message
                    ),
                )),
                error: None,
                approval: None,
            };
        }
        if failure.body.code == codes::BLOCKED_ACTION {
            return Acted {
                outcome: ActOutcome::Refused,
                committing: false,
                blocked: last_blocked.cloned(),
                pause: None,
                error: Some(failure.body.retryable(false)),
                approval: None,
            };
        }
        if let Some(reason) = pause_reason(&failure.body.code) {
            // Before the action (a required field is empty, the session is signed out):
            // nothing reached the page.
            return Acted {
                outcome: ActOutcome::Paused,
                committing: false,
                blocked: None,
                pause: Some(BrowsePause::new(reason, failure.body.message)),
                error: None,
                approval: None,
            };
        }
        let error = if committing {
            // It may have happened: the brain must look before it tries again.
            failure.body.retryable(false)
        } else {
            let final_ = failure.final_;
            failure.body.retryable(!final_)
        };
        Acted {
            outcome: ActOutcome::Failed,
            committing,
            blocked: None,
            pause: None,
            error: Some(error),
            approval: None,
        }
    }

    /// Reads the page after an action that may have moved it on: a handoff is reported
    /// (once per page and reason), a denied site is a failure.
    async fn read_for_pause(&self, open: &mut Open<C>, acted: &mut Acted, index: usize) {
        let checked = self
            .checkpoint(
                &mut open.task,
                &mut open.rails,
                &open.lease,
                Some(index + 1),
                None,
            )
            .await;
        let Err(failure) = checked else {
            return;
        };
        match pause_reason(&failure.body.code) {
            Some(reason) => {
                let page = rails::page_key(&open.rails.last_url);
                open.rails.acknowledged.insert((reason, page));
                acted.outcome = ActOutcome::Paused;
                acted.pause = Some(BrowsePause::new(
                    reason,
                    failure.body.message.replace(
                        ": the run stopped (send `handoff` to wait for a person instead)",
                        "",
                    ),
                ));
            }
            None => {
                acted.outcome = ActOutcome::Failed;
                acted.error = Some(failure.body.retryable(false));
            }
        }
    }

    /// The page now, as the session reads it after an action; an empty snapshot with the
    /// last URL when it cannot be read.
    async fn read_page(&self, open: &mut Open<C>) -> Snapshot {
        let request = open.snapshot.clone();
        self.read_page_with(open, &request).await
    }

    /// The page now, as `request` pages and bounds it.
    async fn read_page_with(&self, open: &mut Open<C>, request: &SnapshotRequest) -> Snapshot {
        let timeout = self.browses.config.act_timeout;
        match guarded(
            timeout + self.config().step_grace,
            open.lease.context().snapshot(request, timeout),
        )
        .await
        {
            Step::Done(snapshot) => {
                // A later page of the same page adds its names; a first page is a new listing
                // (references start over on a new document).
                if request.from <= 1 {
                    open.names.clear();
                }
                open.names.extend(
                    snapshot
                        .elements
                        .iter()
                        .map(|e| (e.reference.clone(), (e.role.clone(), e.name.clone()))),
                );
                snapshot
            }
            Step::Error(_) | Step::TimedOut | Step::Panicked => Snapshot {
                url: open.rails.last_url.clone(),
                ..Snapshot::default()
            },
        }
    }

    /// Ends a session once (`None` when another call ended it first).
    pub(super) async fn end(
        &self,
        id: &str,
        entry: &Arc<Entry<C>>,
        how: End,
    ) -> Option<BrowseClosed> {
        let mut guard = entry.session.lock().await;
        let mut open = guard.take()?;
        self.browses.lock().remove(id);
        drop(guard);
        // Nothing the page sends from now on leaves; what it sent since the last action is
        // that action's.
        open.rails.network.close();
        if let Err(failure) = self
            .late_network(&mut open.task, &mut open.rails, &open.lease)
            .await
        {
            tracing::warn!(code = %failure.body.code, "browse: the network at the end");
        }
        // Taken beside the write-back, which only reads the browser's state.
        open.rails.completion_frame(&open.lease);
        if let Some(session_id) = open.task.request.session_id.clone() {
            let unscoped = unscoped_policy();
            let scopes = Scopes::new(
                open.policy.as_ref().unwrap_or(&unscoped),
                open.extra.as_ref(),
            );
            self.write_back(
                &open.task.tenant_id,
                &session_id,
                &open.lease,
                &open.platform,
                scopes,
            )
            .await;
        }
        open.rails.settle_frames().await;
        let Open {
            mut task,
            lease,
            started,
            ..
        } = open;
        self.release(lease).await;
        task.record.state = TaskState::Closed;
        task.record.finished_at = Some(self.clock.now());
        task.record.error = match how {
            End::Closed => None,
            End::Idle => Some(ErrorBody::new(
                codes::BROWSE_IDLE,
                format!("closed after {} s without a call", entry.idle.as_secs()),
            )),
            End::Shutdown => Some(ErrorBody::new(
                codes::RUNNER_STOPPED,
                "closed because the runner stopped",
            )),
            End::Rejected(by) => Some(ErrorBody::new(
                codes::REJECTED,
                format!(
                    "{by} rejected its committing action: the session closed with nothing of \
                     it committed"
                ),
            )),
            End::TakeoverOver => {
                let (code, how) = match task.record.pause.as_ref().map(|p| p.state) {
                    Some(abr_protocol::TakeoverState::Ended) => {
                        (codes::TAKEOVER_ENDED, "a person ended its takeover")
                    }
                    _ => (
                        codes::TAKEOVER_EXPIRED,
                        "nobody resumed its takeover in time",
                    ),
                };
                Some(ErrorBody::new(
                    code,
                    format!("the session paused for a person and closed: {how}"),
                ))
            }
        };
        if let Err(e) = self.save(&mut task).await {
            tracing::warn!(error = %e, "could not record the closed browse session");
        }
        self.announce_end(&task);
        self.release_session(&task.tenant_id).await;
        self.audit_run(
            &task,
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        );
        let results = &task.record.step_results;
        Some(BrowseClosed {
            browse_id: id.to_owned(),
            closed: true,
            actions: results.len(),
            committing: results.iter().filter(|r| r.committing).count(),
        })
    }
}

/// Refuses what cannot be an action before anything reaches the browser.
fn check_action<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> Result<(), CoreError> {
    let reference = match action {
        BrowseAction::Click { reference }
        | BrowseAction::Type { reference, .. }
        | BrowseAction::Select { reference, .. } => Some(reference),
        BrowseAction::Press { reference, key } => {
            if key.trim().is_empty() || key.len() > MAX_KEY {
                return Err(CoreError::InvalidInput(format!(
                    "key is a key name of 1 to {MAX_KEY} characters (Enter, Tab, ArrowDown, ...)"
                )));
            }
            reference.as_ref()
        }
        BrowseAction::Navigate { url } => {
            http_url(url)?;
            None
        }
        BrowseAction::Scroll { .. } | BrowseAction::Back => None,
    };
    if let Some(reference) = reference {
        if !SnapshotRequest::is_reference(reference) {
            return Err(CoreError::InvalidInput(format!(
                "ref {reference:?} is not a reference: use one a snapshot gave (e12)"
            )));
        }
        if !open.names.contains_key(reference) {
            return Err(CoreError::RefNotFound(reference.clone()));
        }
    }
    Ok(())
}

/// The element an action names, if any.
fn reference_of(action: &BrowseAction) -> Option<&str> {
    match action {
        BrowseAction::Click { reference }
        | BrowseAction::Type { reference, .. }
        | BrowseAction::Select { reference, .. } => Some(reference),
        BrowseAction::Press { reference, .. } => reference.as_deref(),
        BrowseAction::Scroll { .. } | BrowseAction::Navigate { .. } | BrowseAction::Back => None,
    }
}

/// What an approval of `action` covers: its kind, element (and the element's role and name
/// in the last snapshot), the page, and the value it types, chooses or presses.
fn fingerprint<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> Fingerprint {
    let reference = reference_of(action).unwrap_or("");
    let (role, name) = open
        .names
        .get(reference)
        .map(|(r, n)| (r.as_str(), n.as_str()))
        .unwrap_or(("", ""));
    let value = match action {
        BrowseAction::Type { text, submit, .. } => {
            format!("{}{}", u8::from(*submit), text.expose())
        }
        BrowseAction::Select { option, .. } => option.clone(),
        BrowseAction::Press { key, .. } => key.clone(),
        BrowseAction::Navigate { url } => url.clone(),
        BrowseAction::Click { .. } | BrowseAction::Scroll { .. } | BrowseAction::Back => {
            String::new()
        }
    };
    let page = rails::page_key(&open.rails.last_url);
    Fingerprint::of(&[action.kind(), reference, role, name, &page, &value])
}

fn to_browser_action<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> BrowserAction {
    let selector = |r: &str| open.snapshot.selector(r);
    match action {
        BrowseAction::Click { reference } => BrowserAction::Click {
            selector: selector(reference),
        },
        BrowseAction::Type {
            reference,
            text,
            submit,
        } => BrowserAction::Type {
            selector: selector(reference),
            value: text.clone(),
            submit: *submit,
        },
        BrowseAction::Select { reference, option } => BrowserAction::Select {
            selector: selector(reference),
            value: abr_protocol::SecretValue::new(option.clone()),
        },
        BrowseAction::Press { reference, key } => BrowserAction::Press {
            selector: reference.as_deref().map(selector),
            key: key.clone(),
        },
        BrowseAction::Scroll { direction } => BrowserAction::Scroll {
            down: *direction == ScrollDirection::Down,
        },
        BrowseAction::Navigate { url } => match url::Url::parse(url) {
            Ok(url) => BrowserAction::Navigate { url },
            // Checked before: unreachable, and harmless (a navigation that fails).
            Err(_) => BrowserAction::Back,
        },
        BrowseAction::Back => BrowserAction::Back,
    }
}

/// The action in words for the record: the element's role and name from the last snapshot;
/// never what was typed.
fn describe<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> String {
    let element = |r: &str| match open.names.get(r) {
        Some((role, name)) if !name.is_empty() => format!("{r} ({role} \"{name}\")"),
        Some((role, _)) => format!("{r} ({role})"),
        None => r.to_owned(),
    };
    match action {
        BrowseAction::Click { reference } => format!("click {}", element(reference)),
        BrowseAction::Type {
            reference, submit, ..
        } => format!(
            "type into {}{}",
            element(reference),
            if *submit { ", then Enter" } else { "" }
        ),
        BrowseAction::Select { reference, .. } => format!("choose in {}", element(reference)),
        BrowseAction::Press { reference, key } => match reference {
            Some(r) => format!("press {key} on {}", element(r)),
            None => format!("press {key}"),
        },
        BrowseAction::Scroll { direction } => match direction {
            ScrollDirection::Down => "scroll down".to_owned(),
            ScrollDirection::Up => "scroll up".to_owned(),
        },
        BrowseAction::Navigate { url } => {
            format!("open {}", abr_core::guard::frame_url(url).0)
        }
        BrowseAction::Back => "go back".to_owned(),
    }
}
