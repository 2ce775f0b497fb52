//! What every action of a browse session goes through: an action (the brain's, the first
//! page's, a person's supplied value) through the rails, read back as a snapshot; the pause
//! that calls for a person and where its takeover stands; the session's end. Below the
//! browse API (`browse`) and the person's calls (`browse_handoff`), which both act here and
//! call nothing of each other.

use std::sync::Arc;
use std::time::Duration;

use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::SnapshotRequest;
use abr_core::scope_io::Scopes;
use abr_core::step_runner::BrowserAction;
use abr_protocol::{
    ActOutcome, ActResponse, ActionApproval, BlockedBy, BrowseAction, BrowseClosed, BrowsePause,
    ErrorBody, GuardNotice, Pause, PauseReason, ScrollDirection, Snapshot, StepResult,
    TakeoverState, TaskState,
};
use tokio::time::Instant;

use crate::error::EngineError;
use crate::live_access::LiveSites;
use crate::step::{Step, guarded};
use crate::task::approvals::{Ask, Fingerprint, Shown};
use crate::task::browses::{End, Entry, Open};
use crate::task::outcome::{Failure, unscoped_policy};
use crate::task::pauses::pause_message;
use crate::task::rails;
use crate::task::rails::CommitApproval;
use crate::task::runner::TaskRunner;

/// Longest key name a `press` takes.
pub(super) const MAX_KEY: usize = 40;
/// Longest URL a `navigate` or an open takes.
pub(super) const MAX_URL: usize = 4096;
/// How long a session waits, after an action a page's script may answer with a request,
/// before it reads what the network gate saw: a read-only or dry-run session after its
/// answer's reads, a writable one from the action's end (its reads count).
pub(super) const SETTLE: Duration = Duration::from_millis(150);

/// What became of one action, before the snapshot is read.
pub(super) struct Acted {
    outcome: ActOutcome,
    committing: bool,
    blocked: Option<abr_protocol::BlockedAction>,
    pause: Option<BrowsePause>,
    error: Option<ErrorBody>,
    approval: Option<ActionApproval>,
    guarded: Vec<GuardNotice>,
}

impl Acted {
    pub(super) fn done(committing: bool) -> Self {
        Self {
            outcome: ActOutcome::Done,
            committing,
            blocked: None,
            pause: None,
            error: None,
            approval: None,
            guarded: Vec::new(),
        }
    }

    pub(super) fn waits_for_approval(&self) -> bool {
        self.pause
            .as_ref()
            .is_some_and(|p| p.reason == PauseReason::ApprovalRequired)
    }

    pub(super) fn respond(self, snapshot: Snapshot) -> ActResponse {
        ActResponse {
            outcome: self.outcome,
            committing: self.committing,
            blocked: self.blocked,
            pause: self.pause,
            error: self.error,
            approval: self.approval,
            snapshot,
            guarded: self.guarded,
        }
    }
}

/// Where a session's takeover is, as of now.
pub(super) enum HandoffNow {
    /// No person is asked for, or the last takeover was resumed: the brain acts.
    Free,
    /// A person is asked for or has the page: the brain waits.
    Waiting(BrowsePause),
    /// The takeover was ended or expired: the session closes (the error says which).
    Over(ErrorBody),
}

impl<C: TaskContext> TaskRunner<C> {
    /// One action through the rails, recorded, and the page after it; an upload sets
    /// `files`.
    pub(super) async fn act_on(
        &self,
        open: &mut Open<C>,
        action: &BrowseAction,
        files: Vec<abr_core::step_runner::UploadFile>,
    ) -> ActResponse {
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
        let browser = to_browser_action(open, action, files);
        let url = rails::shown_url(&open.rails.last_url);
        let started = Instant::now();
        let at = self.clock.now();
        open.rails.acted_on = None;
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
        let guarded = match action {
            // Time passes: nothing is asked of the browser.
            BrowseAction::Wait { ms: Some(ms), .. } => {
                tokio::time::sleep(Duration::from_millis(*ms).min(timeout)).await;
                Ok((abr_core::step_runner::StepOutput::Done, false))
            }
            _ => {
                self.guarded_step(
                    &mut open.task,
                    &mut open.rails,
                    &open.lease,
                    index,
                    &browser,
                    timeout,
                )
                .await
            }
        };
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
                Ok(mut approval) => {
                    tracing::info!(
                        approval = %approval.approval_id,
                        "browse: a committing action waits for an approver"
                    );
                    // Asked again for the same action: shown and announced once.
                    if waiting.as_ref() != Some(&approval.approval_id) {
                        let shown = self.approval_preview(open, &browser).await;
                        if let Some(shown) = open.approvals.show(&approval.approval_id, shown) {
                            approval = shown;
                        }
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
        let ok =
            matches!(acted.outcome, ActOutcome::Done | ActOutcome::Paused) && acted.error.is_none();
        // Only what was done was typed.
        let typed_chars = (ok && acted.outcome == ActOutcome::Done)
            .then(|| browser.typed_chars())
            .flatten();
        let result = StepResult {
            index,
            action: browser.kind().to_owned(),
            ok,
            committing: acted.committing,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            error: acted.error.clone().or_else(|| {
                acted
                    .pause
                    .as_ref()
                    .map(|p| ErrorBody::new(p.reason.as_str(), p.message.clone()))
            }),
            at: Some(at),
            target: open.rails.acted_on.take(),
            url,
            typed_chars,
        };
        self.announce_step(&open.task, &result, false);
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

    /// What an approver sees of `browser` besides the words: a redacted frame of the page
    /// as it is now (nothing of the action was sent) with the element it acts on outlined;
    /// none when the run takes no screenshots, or the frame could not be redacted.
    pub(super) async fn approval_preview(
        &self,
        open: &mut Open<C>,
        browser: &BrowserAction,
    ) -> Shown {
        let Some(redaction) = open.rails.evidence.clone() else {
            return Shown::Note(
                "screenshots are off for this tenant or platform: no preview was taken".into(),
            );
        };
        // One redaction on the page at a time.
        open.rails.settle_frames().await;
        let context = open.lease.context();
        let outline = match rails::target(browser) {
            Some(selector) => {
                context
                    .element_box(
                        selector,
                        abr_core::guard::Reach::of(browser),
                        self.config.verify_timeout,
                    )
                    .await
            }
            None => None,
        };
        let image = format!("/v1/browse/{}/approval/preview", open.task.record.task_id);
        match self.preview_of(context, &redaction, outline, image).await {
            Ok((jpeg, preview)) => Shown::Preview(jpeg, preview),
            Err(why) => Shown::Note(why),
        }
    }

    /// What an approver is shown of `action`.
    pub(super) fn ask_of(&self, open: &Open<C>, action: &BrowseAction) -> Ask {
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
    pub(super) fn watch_stuck(&self, open: &mut Open<C>, action: &BrowseAction, acted: &mut Acted) {
        let reference = match action {
            BrowseAction::Click { reference }
            | BrowseAction::Type { reference, .. }
            | BrowseAction::Select { reference, .. }
            | BrowseAction::Upload { reference, .. } => Some(reference.clone()),
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
    pub(super) fn not_done(&self, open: &Open<C>, failure: Failure, committing: bool) -> Acted {
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
                guarded: Vec::new(),
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
                guarded: Vec::new(),
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
                guarded: Vec::new(),
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
            guarded: Vec::new(),
        }
    }

    /// Reads the page after an action that may have moved it on: a handoff is reported
    /// (once per page and reason), a denied site is a failure.
    pub(super) async fn read_for_pause(&self, open: &mut Open<C>, acted: &mut Acted, index: usize) {
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
            // A read-only session reached a form that would write: the guard refuses using
            // it, so the page stays usable; the answer says what is held, without a pause.
            Some(PauseReason::WriteAffordance) => {
                let page = rails::page_key(&open.rails.last_url);
                open.rails
                    .acknowledged
                    .insert((PauseReason::WriteAffordance, page));
                acted.guarded.push(GuardNotice {
                    reason: PauseReason::WriteAffordance,
                    message: "the page has a form that would submit, pay or upload: this \
                              read-only session reads the page, and using that form is \
                              refused"
                        .to_owned(),
                });
            }
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
    pub(super) async fn read_page(&self, open: &mut Open<C>) -> Snapshot {
        let request = open.snapshot.clone();
        self.read_page_with(open, &request).await
    }

    /// The page now, as `request` pages and bounds it.
    pub(super) async fn read_page_with(
        &self,
        open: &mut Open<C>,
        request: &SnapshotRequest,
    ) -> Snapshot {
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
                &open.task.ledger.tenant_id,
                &session_id,
                &open.lease,
                &open.platform,
                scopes,
            )
            .await;
        }
        if let Some(profile) = open.rails.profile.clone() {
            self.refresh_profile(&open.task.ledger.tenant_id, &profile, &open.lease)
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
        // The browser is closed: its session is the tenant's again before the end is read.
        self.release_session(&task.ledger.tenant_id).await;
        if let Err(e) = self.save_end(&mut task).await {
            tracing::warn!(error = %e, "could not record the closed browse session");
        }
        self.announce_end(&task);
        self.audit_run(
            &task,
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        );
        let results = &task.record.step_results;
        Some(BrowseClosed {
            browse_id: id.to_owned(),
            closed: true,
            actions: results.len(),
            committing_actions: results.iter().filter(|r| r.committing).count(),
        })
    }
}

/// Whether the page's own scripts may answer `action` by sending something.
pub(super) fn scripts_may_send(action: &BrowserAction) -> bool {
    matches!(
        action,
        BrowserAction::Click { .. }
            | BrowserAction::Type { .. }
            | BrowserAction::Select { .. }
            | BrowserAction::Press { .. }
            | BrowserAction::Upload { .. }
    )
}

pub(super) fn http_url(url: &str) -> Result<url::Url, EngineError> {
    if url.len() > MAX_URL {
        return Err(EngineError::from(CoreError::InvalidInput(format!(
            "url is longer than {MAX_URL} bytes"
        ))));
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| CoreError::InvalidInput(format!("url is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(EngineError::from(CoreError::InvalidInput(
            "url must be an http or https URL with a host".into(),
        )));
    }
    Ok(parsed)
}

pub(super) fn pause_reason(code: &str) -> Option<PauseReason> {
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

/// Whether `failure` is the network gate holding a write for an approver (not the action
/// itself refused).
pub(super) fn held_below<C: TaskContext>(open: &Open<C>, failure: &Failure) -> bool {
    failure.body.code == codes::BLOCKED_ACTION
        && open
            .task
            .record
            .blocked
            .last()
            .is_some_and(|b| b.blocked_by == BlockedBy::AwaitingApproval)
}

/// Refuses what cannot be an action before anything reaches the browser.
pub(super) fn check_action<C: TaskContext>(
    open: &Open<C>,
    action: &BrowseAction,
    act_timeout: Duration,
) -> Result<(), EngineError> {
    let reference = match action {
        BrowseAction::Click { reference }
        | BrowseAction::Type { reference, .. }
        | BrowseAction::Select { reference, .. } => Some(reference),
        BrowseAction::Upload {
            reference,
            artifact,
        } => {
            if !abr_core::artifact::is_artifact_id(artifact) {
                return Err(EngineError::from(CoreError::InvalidInput(
                    "artifact is an artifact's id (art_…): upload the file with POST \
                     /v1/artifacts first"
                        .into(),
                )));
            }
            Some(reference)
        }
        BrowseAction::Press { reference, key } => {
            if key.trim().is_empty() || key.len() > MAX_KEY {
                return Err(EngineError::from(CoreError::InvalidInput(format!(
                    "key is a key name of 1 to {MAX_KEY} characters (Enter, Tab, ArrowDown, ...)"
                ))));
            }
            reference.as_ref()
        }
        BrowseAction::Navigate { url } => {
            http_url(url)?;
            None
        }
        BrowseAction::Scroll { .. } | BrowseAction::Back => None,
        BrowseAction::Wait {
            reference,
            text,
            url,
            ms,
        } => {
            let given = [
                reference.is_some(),
                text.as_deref().is_some_and(|t| !t.is_empty()),
                url.as_deref().is_some_and(|u| !u.is_empty()),
                ms.is_some(),
            ];
            if given.iter().filter(|g| **g).count() != 1 {
                return Err(EngineError::from(CoreError::InvalidInput(
                    "wait takes exactly one of ref, text, url and ms".into(),
                )));
            }
            let most = u64::try_from(act_timeout.as_millis()).unwrap_or(u64::MAX);
            if ms.is_some_and(|ms| ms == 0 || ms > most) {
                return Err(EngineError::from(CoreError::InvalidInput(format!(
                    "ms is 1 to {most} (the session's action deadline)"
                ))));
            }
            reference.as_ref()
        }
    };
    if let Some(reference) = reference {
        if !SnapshotRequest::is_reference(reference) {
            return Err(EngineError::from(CoreError::InvalidInput(format!(
                "ref {reference:?} is not a reference: use one a snapshot gave (e12)"
            ))));
        }
        if !open.names.contains_key(reference) {
            return Err(EngineError::RefNotFound(reference.clone()));
        }
    }
    Ok(())
}

/// The element an action names, if any.
pub(super) fn reference_of(action: &BrowseAction) -> Option<&str> {
    match action {
        BrowseAction::Click { reference }
        | BrowseAction::Type { reference, .. }
        | BrowseAction::Select { reference, .. }
        | BrowseAction::Upload { reference, .. } => Some(reference),
        BrowseAction::Press { reference, .. } => reference.as_deref(),
        BrowseAction::Wait { reference, .. } => reference.as_deref(),
        BrowseAction::Scroll { .. } | BrowseAction::Navigate { .. } | BrowseAction::Back => None,
    }
}

/// What an approval of `action` covers: its kind, element (and the element's role and name
/// in the last snapshot), the page, and the value it types, chooses or presses.
pub(super) fn fingerprint<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> Fingerprint {
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
        BrowseAction::Upload { artifact, .. } => artifact.clone(),
        BrowseAction::Press { key, .. } => key.clone(),
        BrowseAction::Navigate { url } => url.clone(),
        BrowseAction::Click { .. }
        | BrowseAction::Scroll { .. }
        | BrowseAction::Back
        | BrowseAction::Wait { .. } => String::new(),
    };
    let page = rails::page_key(&open.rails.last_url);
    Fingerprint::of(&[action.kind(), reference, role, name, &page, &value])
}

/// The browser's action for `action`; an upload's files are `files` (its artifact, read
/// before: [`TaskRunner::browse_act`]).
pub(super) fn to_browser_action<C: TaskContext>(
    open: &Open<C>,
    action: &BrowseAction,
    files: Vec<abr_core::step_runner::UploadFile>,
) -> BrowserAction {
    let selector = |r: &str| open.snapshot.selector(r);
    match action {
        BrowseAction::Upload { reference, .. } => BrowserAction::Upload {
            selector: selector(reference),
            files,
        },
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
        BrowseAction::Wait {
            reference,
            text,
            url,
            ..
        } => BrowserAction::Wait {
            selector: reference.as_deref().map(selector),
            url: url.clone(),
            text: text.clone(),
        },
    }
}

/// The action in words for the record: the element's role and name from the last snapshot;
/// never what was typed.
pub(super) fn describe<C: TaskContext>(open: &Open<C>, action: &BrowseAction) -> String {
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
        BrowseAction::Upload {
            reference,
            artifact,
        } => format!("attach {artifact} to {}", element(reference)),
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
        BrowseAction::Wait {
            reference,
            text,
            url,
            ms,
        } => match (reference, text, url, ms) {
            (Some(r), ..) => format!("wait for {}", element(r)),
            (_, Some(_), ..) => "wait for a text".to_owned(),
            (_, _, Some(url), _) => format!("wait for {}", abr_core::guard::frame_url(url).0),
            (.., Some(ms)) => format!("wait {ms} ms"),
            _ => "wait".to_owned(),
        },
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// Registers a takeover of `open` for `reason` and marks the session paused (recorded,
    /// `takeover_required` told). `input`: the field and prompt of an input request.
    /// Answers the pause for the brain.
    pub(super) async fn browse_wait_for_person(
        &self,
        open: &mut Open<C>,
        reason: PauseReason,
        message: String,
        wait: Duration,
        input: Option<(String, String)>,
    ) -> Result<BrowsePause, EngineError> {
        // A person never gets the page under a frame's blur.
        open.rails.settle_frames().await;
        let sites = LiveSites::new(&open.rails.last_url, None);
        let pending = self.handoffs.request(
            &open.task.ledger.tenant_id,
            &open.task.record.task_id,
            reason,
            open.lease.context_handle(),
            sites,
            wait,
            Some(open.rails.network.person_input()),
        )?;
        let (input_ref, prompt) = input.unzip();
        let pause = BrowsePause {
            reason,
            message,
            takeover_id: Some(pending.takeover_id().to_owned()),
            expires_at: Some(pending.expires_at()),
        };
        open.task.record.state = TaskState::Paused;
        open.task.record.pause = Some(Pause {
            takeover_id: pending.takeover_id().to_owned(),
            reason,
            step: Some(open.task.record.step_results.len()),
            state: TakeoverState::Requested,
            paused_at: self.clock.now(),
            expires_at: pending.expires_at(),
            prompt,
            input_ref,
        });
        open.handoff = Some(pending);
        self.takeover_event(&mut open.task, TakeoverState::Requested, None);
        if let Err(failure) = self.save_progress(&mut open.task).await {
            tracing::warn!(code = %failure.body.code, "browse: could not record the pause");
        }
        Ok(pause)
    }

    /// Records the transitions of the session's takeover since it last looked, and says
    /// where it is now.
    pub(super) async fn browse_handoff_now(&self, open: &mut Open<C>) -> HandoffNow {
        let Some(pending) = open.handoff.as_mut() else {
            return HandoffNow::Free;
        };
        let mut last = None;
        let mut moved = false;
        while let Some(state) = pending.poll() {
            moved = true;
            last = Some(state);
            open.rails
                .network
                .set_person(state == TakeoverState::Active);
            if let Some(pause) = &mut open.task.record.pause {
                pause.state = state;
            }
            if state == TakeoverState::Resumed {
                open.task.record.state = TaskState::Running;
            }
            let by = pending.moved_by().map(str::to_owned);
            self.takeover_event(&mut open.task, state, by.as_deref());
        }
        if moved && let Err(failure) = self.save_progress(&mut open.task).await {
            tracing::warn!(code = %failure.body.code, "browse: could not record a takeover");
        }
        let Some(pause) = open.task.record.pause.clone() else {
            return HandoffNow::Free;
        };
        match last.unwrap_or(pause.state) {
            TakeoverState::Requested | TakeoverState::Active => HandoffNow::Waiting(BrowsePause {
                reason: pause.reason,
                message: format!(
                    "{}: a person is asked for this page (takeover {}); the session's \
                         actions wait until they resume it",
                    pause_message(pause.reason),
                    pause.takeover_id
                ),
                takeover_id: Some(pause.takeover_id),
                expires_at: Some(pause.expires_at),
            }),
            TakeoverState::Resumed => {
                open.handoff = None;
                open.rails.network.set_person(false);
                HandoffNow::Free
            }
            TakeoverState::Ended => {
                open.handoff = None;
                HandoffNow::Over(ErrorBody::new(
                    codes::TAKEOVER_ENDED,
                    format!(
                        "the session paused ({}) and the takeover was ended: it closed",
                        pause.reason.as_str()
                    ),
                ))
            }
            TakeoverState::Expired => {
                open.handoff = None;
                HandoffNow::Over(ErrorBody::new(
                    codes::TAKEOVER_EXPIRED,
                    format!(
                        "the session paused ({}) and nobody resumed it in time: it closed",
                        pause.reason.as_str()
                    ),
                ))
            }
        }
    }

    /// After an action answered `paused` by the page (not an approval): with `handoff`,
    /// the session waits for a person.
    pub(super) async fn browse_pause_for_person(
        &self,
        open: &mut Open<C>,
        pause: &mut BrowsePause,
    ) {
        let Some(wait) = open.handoff_wait else {
            return;
        };
        if pause.reason == PauseReason::ApprovalRequired || open.handoff.is_some() {
            return;
        }
        match self
            .browse_wait_for_person(open, pause.reason, pause.message.clone(), wait, None)
            .await
        {
            Ok(waiting) => *pause = waiting,
            Err(e) => tracing::warn!(error = %e, "browse: no takeover could be registered"),
        }
    }
}
