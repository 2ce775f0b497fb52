//! A step through the guard rails: the browser action under its deadline, the element
//! inspected, the commit guard asked, the session checked, the page read after it; and the
//! pause a person resolves.

use std::time::Duration;

use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::{ElementFacts, Reach, SiteVerdict, detect_pause};
use abr_core::provider::Lease;
use abr_core::step_runner::{BrowserAction, StepOutput};
use abr_core::store::StoredTask;
use abr_protocol::{
    BlockedAction, BlockedBy, CommitClass, FramePoint, Pause, PauseReason, TakeoverState, TaskState,
};

use crate::live_access::LiveSites;
use crate::step::{Step, guarded};
use crate::task::outcome::Failure;
use crate::task::rails;
use crate::task::rails::Rails;
use crate::task::runner::TaskRunner;

/// How often one step may pause as `stuck` before the run gives up on it.
const STUCK_PAUSES: usize = 3;

/// A step's answer: its output, or its failure; and whether it was committing.
pub(super) type Guarded = Result<(StepOutput, bool), (Failure, bool)>;

fn blocked_message(blocked: &BlockedAction) -> String {
    let class = match blocked.class {
        CommitClass::SubmitControl => "a submit control".to_owned(),
        CommitClass::ButtonInForm => "a button inside a form".to_owned(),
        CommitClass::CommittingLabel => format!(
            "a control labelled with the committing verb `{}`",
            blocked.verb.as_deref().unwrap_or("?")
        ),
        CommitClass::FileInput => "a file input".to_owned(),
        CommitClass::CardField => "a payment card field".to_owned(),
        CommitClass::EnterSubmitsForm => "Enter in a form that submits".to_owned(),
        CommitClass::EnterInEditor => {
            "Enter in an editable region or a text field outside a form".to_owned()
        }
        CommitClass::ChoiceMaySubmit => {
            "a choice whose change may save or submit (a select, checkbox, radio or switch)"
                .to_owned()
        }
        CommitClass::UnrecognisedButton => {
            "a button with no recognised harmless meaning".to_owned()
        }
        CommitClass::WriteFormField => {
            "typing into a form that posts (or an editable region), which a site may save as \
             it is typed"
                .to_owned()
        }
        CommitClass::Upload => "an upload".to_owned(),
        CommitClass::NetworkWrite => format!(
            "a {} request to {} that the page sent",
            blocked.method.as_deref().unwrap_or("non-GET"),
            blocked.host.as_deref().unwrap_or("a site")
        ),
        CommitClass::WebSocket => format!(
            "a WebSocket the page opened to {}",
            blocked.host.as_deref().unwrap_or("a site")
        ),
        CommitClass::Unknown => "an element that could not be inspected".to_owned(),
    };
    let network = matches!(
        blocked.class,
        CommitClass::NetworkWrite | CommitClass::WebSocket
    );
    let refused = if network {
        "was refused below the page: it never left the browser"
    } else {
        "was refused before it reached the page"
    };
    match blocked.blocked_by {
        BlockedBy::ReadOnly => format!(
            "the run is read-only: {class} {refused} (read-only is a property of the platform, \
             the approved plan or the browse session: retrying changes nothing)"
        ),
        BlockedBy::DryRun => {
            format!("dry run: {class} {refused}; everything before it ran")
        }
        BlockedBy::AwaitingApproval => {
            format!("approval required: {class} {refused} until an approver approves this action")
        }
    }
}

pub(super) fn pause_message(reason: PauseReason) -> &'static str {
    match reason {
        PauseReason::Challenge => {
            "the page shows a captcha, a two-factor prompt or a security check"
        }
        PauseReason::LoginRequired => {
            "the page asks to sign in (or the session has no live cookie for the site) and this \
             run must not sign in"
        }
        PauseReason::Paywall => "the page asks to subscribe",
        PauseReason::AccessBlocked => "the site blocked access (a bot check, Access Denied, 403)",
        PauseReason::WriteAffordance => {
            "a read-only run reached a form that submits, pays or uploads"
        }
        PauseReason::ConsentRequired => "the run reached a site the tenant has not decided on",
        PauseReason::Stuck => "the same control failed repeatedly",
        PauseReason::NeedsInput => "the form requires a value the plan does not give",
        PauseReason::ApprovalRequired => "a committing action waits for an approver to approve it",
    }
}

pub(super) fn stuck_kind(failure: &Failure) -> bool {
    [
        codes::ELEMENT_NOT_FOUND,
        codes::STEP_REJECTED,
        codes::STEP_TIMEOUT,
    ]
    .contains(&failure.body.code.as_str())
}

/// After a failure on a control: `Err` ends the step (a committing step, no handoff, another
/// kind of failure, or enough pauses); `Ok(false)` tries again; `Ok(true)` pauses `stuck`
/// (the second failure in a row).
fn retry_or_stuck(
    failure: Failure,
    committing: bool,
    rails: &Rails,
    failures: &mut usize,
    stuck_pauses: usize,
) -> Result<bool, (Failure, bool)> {
    *failures += 1;
    if committing
        || rails.handoff_wait.is_none()
        || !stuck_kind(&failure)
        || stuck_pauses >= STUCK_PAUSES
    {
        Err((failure, committing))
    } else {
        Ok(*failures >= 2)
    }
}

/// Longest accessible name a step's result keeps, in characters.
const MAX_TARGET_NAME: usize = 200;

/// What a step's result says of the element it acts on: its role and accessible name.
fn step_target(facts: &ElementFacts) -> abr_protocol::StepTarget {
    abr_protocol::StepTarget {
        role: facts.role_shown().map(str::to_owned),
        name: facts.name.chars().take(MAX_TARGET_NAME).collect(),
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// One plan step through the rails. A step that fails on its control is tried again,
    /// then pauses `stuck` (with a handoff), and runs again after a resume; a committing step
    /// only when its control was not found and nothing was written (nothing was sent).
    #[allow(
        clippy::too_many_arguments,
        reason = "the run's parts, borrowed separately"
    )]
    pub(super) async fn guarded_step(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        index: usize,
        action: &BrowserAction,
        timeout: Duration,
    ) -> Guarded {
        let context = lease.context();
        rails.acted_on = None;
        if let BrowserAction::Navigate { url } = action
            && rails.sites.verdict(&rails::host_of(url.as_str())) == SiteVerdict::Denied
        {
            return Err((
                Failure::refusal(
                    codes::SITE_DENIED,
                    "the step opens a site the tenant denied: nothing was opened",
                ),
                false,
            ));
        }
        let mut failures = 0;
        let mut stuck_pauses = 0;
        let mut reopened = false;
        // A person had the page in a `stuck` pause and acted in it: they may have done this
        // step themselves.
        let mut person_acted = false;
        // The element as the checkpoint before this step read it with the page (no pause
        // since): judged as it is, once; any later look reads it again.
        let reach = Reach::of(action);
        let mut ahead = rails
            .ahead
            .take()
            .filter(|(selector, read, _)| Some(selector) == rails::target(action) && *read == reach)
            .map(|(_, _, facts)| facts);
        loop {
            let facts = match rails::target(action) {
                None if matches!(action, BrowserAction::Press { .. }) => {
                    // A key pressed on the page reaches whatever has the focus: judge that.
                    self.inspect_focused(context, timeout).await
                }
                None => None,
                Some(_) if ahead.is_some() => ahead.take(),
                Some(selector) => match self.inspect(context, selector, reach, timeout).await {
                    Ok(facts) => Some(facts),
                    Err(failure) => {
                        if retry_or_stuck(failure, false, rails, &mut failures, stuck_pauses)? {
                            stuck_pauses += 1;
                            failures = 0;
                            rails.network.take_person_acted();
                            self.stuck(task, rails, lease, index).await?;
                            person_acted |= rails.network.take_person_acted();
                        }
                        continue;
                    }
                },
            };
            // Named on the result whatever becomes of the step (done, refused, waiting).
            rails.acted_on = facts.as_ref().map(step_target);
            let committing = match rails.guard.check(action, facts.as_ref()) {
                Ok(committing) => committing,
                Err(mut blocked) => {
                    blocked.step = Some(index);
                    rails
                        .frame_now(lease, FramePoint::Blocker, action.kind())
                        .await;
                    let failure =
                        Failure::refusal(codes::BLOCKED_ACTION, blocked_message(&blocked));
                    task.record.blocked.push(blocked);
                    return Err((failure, false));
                }
            };
            if committing.is_some() && person_acted {
                // Never twice: what the person did in the live view is not known, so the step
                // is not run again (the owner asserts it was not done to retry it once).
                return Err((
                    Failure::new(
                        codes::PERSON_MAY_HAVE_ACTED,
                        "the step commits, and the person acted in the live view while the run \
                         waited for them: they may have done it, so it was not run again",
                    ),
                    true,
                ));
            }
            if let Some(c) = committing {
                if rails.approval == rails::CommitApproval::Required {
                    return Err((
                        Failure::refusal(
                            codes::APPROVAL_REQUIRED,
                            format!(
                                "{}: nothing was sent; an approver approves this action, then \
                                 send it again",
                                pause_message(PauseReason::ApprovalRequired)
                            ),
                        ),
                        false,
                    ));
                }
                if self
                    .before_commit(task, rails, lease, index, c.class, facts.as_ref())
                    .await
                    .map_err(|f| (f, false))?
                {
                    // A person resumed a pause: look at the element again.
                    continue;
                }
                if !task.ledger.marked {
                    crate::commit_watch::committing()
                        .await
                        .map_err(|e| (Failure::store(e.to_body()), false))?;
                    // Saved before the step starts: a restart after this point knows the
                    // task may have acted.
                    task.ledger.marked = true;
                    self.save_progress(task).await.map_err(|f| (f, false))?;
                    rails.network.already_marked();
                }
            }
            let stepped = self.step(context, action, timeout).await;
            let wrote = match self.network_after(task, rails, lease, index).await {
                Ok(wrote) => wrote,
                Err(failure) => return Err((failure, committing.is_some())),
            };
            let is_committing = committing.is_some() || wrote;
            match stepped {
                Ok(output) => return Ok((output, is_committing)),
                Err(failure)
                    if failure.body.code == codes::NAVIGATION_FAILED
                        && matches!(action, BrowserAction::Navigate { .. })
                        && !reopened =>
                {
                    reopened = true;
                    // An error page may be a block (a 403, a bot check): read it, and go
                    // again after a person cleared it.
                    if self
                        .checkpoint(task, rails, lease, Some(index), None)
                        .await
                        .map_err(|f| (f, false))?
                    {
                        continue;
                    }
                    return Err((failure, false));
                }
                Err(failure) => {
                    // A committing step whose control was gone before anything was sent
                    // (not found) and nothing written did nothing: it may be tried again
                    // and pause `stuck` like any step. Any other failure of a committing
                    // step may have acted: it ends the step, uncertain.
                    let may_have_acted = wrote
                        || (committing.is_some() && failure.body.code != codes::ELEMENT_NOT_FOUND);
                    match retry_or_stuck(
                        failure,
                        may_have_acted,
                        rails,
                        &mut failures,
                        stuck_pauses,
                    ) {
                        Err((failure, _)) => return Err((failure, is_committing)),
                        Ok(true) => {
                            stuck_pauses += 1;
                            failures = 0;
                            rails.network.take_person_acted();
                            self.stuck(task, rails, lease, index).await?;
                            person_acted |= rails.network.take_person_acted();
                        }
                        Ok(false) => {}
                    }
                }
            }
        }
    }

    /// Reads what the network did during step `index`: requests the gate refused make it a
    /// refused step (recorded in `blocked`, a blocker frame taken; nothing left the
    /// browser); a write that could not be announced or marked fails it (it never left);
    /// `Ok(true)`: a write to the run's own sites left, the step was committing.
    pub(super) async fn network_after(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        index: usize,
    ) -> Result<bool, Failure> {
        let net = rails.network.take().await;
        if net.wrote {
            task.ledger.marked = true;
        }
        if let Some(why) = net.unannounced {
            return Err(Failure::store(
                CoreError::Provider(
                abr_core::error::ProviderError::new(
                    abr_core::error::ProviderErrorKind::Unavailable,
                    format!(
                        "the page sent a write that could not be announced or recorded first, so                      the browser never sent it ({why})"
                    ),
                ),
            )
                .to_body(),
            ));
        }
        let Some(first) = net.blocked.first().cloned() else {
            return Ok(net.wrote);
        };
        rails.frame_now(lease, FramePoint::Blocker, "network").await;
        let count = net.blocked.len();
        for mut blocked in net.blocked {
            blocked.step = Some(index);
            task.record.blocked.push(blocked);
        }
        let mut message = blocked_message(&first);
        if count > 1 {
            message.push_str(&format!(" ({count} requests refused)"));
        }
        Err(Failure::refusal(codes::BLOCKED_ACTION, message))
    }

    /// Pauses `stuck` before step `index` (its failure is not a committing one).
    async fn stuck(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        index: usize,
    ) -> Result<(), (Failure, bool)> {
        self.pause(task, rails, lease, PauseReason::Stuck, Some(index))
            .await
            .map_err(|f| (f, false))
    }

    /// Before a committing action: a form with an empty required field pauses
    /// `needs_input`; a run with a session checks its cookies for the site once (names and
    /// expiry only) and pauses `login_required` when none is live. `Ok(true)`: a pause was
    /// resumed, look again.
    #[allow(
        clippy::too_many_arguments,
        reason = "the run's parts, borrowed separately"
    )]
    async fn before_commit(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        index: usize,
        class: CommitClass,
        facts: Option<&ElementFacts>,
    ) -> Result<bool, Failure> {
        let submits = matches!(
            class,
            CommitClass::SubmitControl | CommitClass::EnterSubmitsForm | CommitClass::ButtonInForm
        );
        if submits && facts.is_some_and(|f| f.form_missing_required) {
            self.pause(task, rails, lease, PauseReason::NeedsInput, Some(index))
                .await?;
            return Ok(true);
        }
        if let Some(profile) = rails.profile.clone() {
            let host = rails::host_of(&rails.last_url);
            let site = abr_core::guard::sign_in_site(&host);
            if !rails.profile_checked.contains(&site) {
                let jar = self.profile_jar(lease, &host).await;
                task.record.session_check = Some(jar.iter().map(|(f, _)| f.clone()).collect());
                match self
                    .profile_signed_in(&task.ledger.tenant_id, &profile, &host, &jar)
                    .await
                {
                    Ok(()) => {
                        rails.profile_checked.insert(site);
                    }
                    Err(why) if rails.handoff_wait.is_none() => {
                        return Err(Failure::refusal(
                            PauseReason::LoginRequired.as_str(),
                            format!(
                                "{why} (profile `{}`): a person signs in before a committing \
                                 press; nothing was pressed (send `handoff` to wait for them)",
                                profile.name
                            ),
                        ));
                    }
                    Err(_) => {
                        self.pause(task, rails, lease, PauseReason::LoginRequired, Some(index))
                            .await?;
                        return Ok(true);
                    }
                }
            }
        }
        if rails.has_session && task.record.session_check.is_none() {
            let host = rails::host_of(&rails.last_url);
            let timeout = self.config().export_timeout;
            // The cookies alone: one call, where an export may load every origin's storage.
            if let Step::Done(cookies) = guarded(timeout, lease.context().cookies()).await {
                let now = self.clock.now().unix_timestamp() as f64;
                let facts = rails::cookie_facts(&cookies, &host, now);
                let out = rails::signed_out(&facts);
                task.record.session_check = Some(facts);
                if out {
                    self.pause(task, rails, lease, PauseReason::LoginRequired, Some(index))
                        .await?;
                    // Checked again after the person signed in.
                    task.record.session_check = None;
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Reads the page after a step (and after the first navigation): a denied site stops
    /// the run; a site nobody decided on, or a page that calls for a person, pauses it. A
    /// block still there after a resume ends the run: it never goes past one. `Ok(true)`:
    /// a person resumed a pause on the way. `ahead`: the next step's element, read with the
    /// page when it is there already (for that step to judge).
    pub(super) async fn checkpoint(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        next_step: Option<usize>,
        look_ahead: Option<&BrowserAction>,
    ) -> Result<bool, Failure> {
        let context = lease.context();
        let timeout = self
            .config()
            .default_step_timeout
            .min(Duration::from_secs(10));
        let mut resumed: Option<PauseReason> = None;
        // Nothing an earlier read left is judged after this one.
        rails.ahead = None;
        loop {
            let refused = rails.sites.refused();
            if refused > rails.refused_seen {
                rails.refused_seen = refused;
                return Err(Failure::refusal(
                    codes::SITE_DENIED,
                    "the page tried to open a site the tenant denied: the browser aborted the \
                     request and the run stopped",
                ));
            }
            // A page that cannot be read is not a reason to stop: the next step or the
            // verification finds out.
            let ahead =
                look_ahead.and_then(|action| Some((rails::target(action)?, Reach::of(action))));
            let read = match ahead {
                Some((selector, reach)) => {
                    match guarded(timeout, context.signals_ahead(selector, reach, timeout)).await {
                        Step::Done((signals, facts)) => {
                            Some((signals, facts.map(|f| (selector.clone(), reach, f))))
                        }
                        _ => None,
                    }
                }
                None => match guarded(timeout, context.signals(timeout)).await {
                    Step::Done(signals) => Some((signals, None)),
                    _ => None,
                },
            };
            let Some((signals, ahead)) = read else {
                return Ok(resumed.is_some());
            };
            rails.ahead = ahead;
            rails.last_url.clone_from(&signals.url);
            // An address the browsers may not reach (the providers refused it below the
            // page: a loopback, private or metadata address, directly or by a redirect) is
            // no site anyone could allow: say so, never ask for a decision or a person.
            if let Ok(url) = url::Url::parse(&signals.url)
                && matches!(url.scheme(), "http" | "https")
                && let Err(denied) = self.config.egress.check_url(&url)
            {
                return Err(Failure::refusal(
                    codes::EGRESS_REFUSED,
                    format!(
                        "the runner's egress policy refuses this address ({denied}): no site \
                         decision can allow it"
                    ),
                ));
            }
            let host = rails::host_of(&signals.url);
            let page = rails::page_key(&signals.url);
            let reason = if host.is_empty() {
                None
            } else {
                match rails.sites.verdict(&host) {
                    SiteVerdict::Denied => {
                        return Err(Failure::refusal(
                            codes::SITE_DENIED,
                            "the browser reached a site the tenant denied: the run stopped",
                        ));
                    }
                    SiteVerdict::Unknown => Some(PauseReason::ConsentRequired),
                    SiteVerdict::Allowed => detect_pause(&signals, rails.rules),
                }
            };
            let reason = reason.filter(|r| !rails.acknowledged.contains(&(*r, page.clone())));
            let Some(reason) = reason else {
                return Ok(resumed.is_some());
            };
            if resumed == Some(reason) {
                return Err(Failure::refusal(
                    reason.as_str(),
                    format!(
                        "{} and was still there after the takeover was resumed: the run never \
                         goes past it",
                        pause_message(reason)
                    ),
                ));
            }
            self.pause(task, rails, lease, reason, next_step).await?;
            if reason == PauseReason::WriteAffordance {
                // The person let it read the page: the form stays untouchable (the guard),
                // the page is not a reason to stop again.
                rails.acknowledged.insert((reason, page));
            }
            resumed = Some(reason);
        }
    }

    /// Pauses the run for a person: without a handoff the run ends with the reason as its
    /// error; with one, it registers the takeover, records `paused`, and waits for it to be
    /// resumed (`Ok`), ended or expired (the run stops without acting).
    pub(super) async fn pause(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
        reason: PauseReason,
        step: Option<usize>,
    ) -> Result<(), Failure> {
        // A person may change the page: nothing read before holds after.
        rails.ahead = None;
        // Any frame still being taken first: a person never sees the page under its blur.
        rails
            .frame_now(lease, FramePoint::Pause, reason.as_str())
            .await;
        let Some(wait) = rails.handoff_wait else {
            return Err(Failure::refusal(
                reason.as_str(),
                format!(
                    "{}: the run stopped (send `handoff` to wait for a person instead)",
                    pause_message(reason)
                ),
            ));
        };
        // What a profile holds before a person signs in: their sign-in is what changes.
        let signing_in = match &rails.profile {
            Some(profile) if reason == PauseReason::LoginRequired => {
                let host = rails::host_of(&rails.last_url);
                Some((profile.clone(), self.profile_jar(lease, &host).await))
            }
            _ => None,
        };
        let sites = LiveSites::new(&rails.last_url, None);
        let mut pending = self
            .handoffs
            .request(
                &task.ledger.tenant_id,
                &task.record.task_id,
                reason,
                lease.context_handle(),
                sites,
                wait,
                Some(rails.network.person_input()),
            )
            .map_err(|e| Failure::store(e.to_body()))?;
        task.record.state = TaskState::Paused;
        task.record.pause = Some(Pause {
            takeover_id: pending.takeover_id().to_owned(),
            reason,
            step,
            state: TakeoverState::Requested,
            paused_at: self.clock.now(),
            expires_at: pending.expires_at(),
            prompt: None,
            input_ref: None,
        });
        self.takeover_event(task, TakeoverState::Requested, None);
        self.save_progress(task).await?;
        let end = loop {
            let state = pending.next().await;
            rails.network.set_person(state == TakeoverState::Active);
            if let Some(pause) = &mut task.record.pause {
                pause.state = state;
            }
            if state == TakeoverState::Resumed {
                task.record.state = TaskState::Running;
            }
            self.takeover_event(task, state, pending.moved_by());
            self.save_progress(task).await?;
            if state.is_final() {
                break state;
            }
        };
        drop(pending);
        rails.network.set_person(false);
        match end {
            TakeoverState::Resumed => {
                if let Some((profile, before)) = signing_in {
                    let host = rails::host_of(&rails.last_url);
                    let after = self.profile_jar(lease, &host).await;
                    self.record_profile_sign_in(
                        &task.ledger.tenant_id,
                        &profile,
                        &host,
                        &before,
                        &after,
                    )
                    .await;
                    rails.profile_checked.clear();
                }
                if reason == PauseReason::ConsentRequired
                    && let Some(store) = &self.sites
                {
                    let entries = store
                        .sites(&task.ledger.tenant_id)
                        .await
                        .map_err(|e| Failure::store(e.to_body()))?;
                    rails
                        .sites
                        .set_entries(entries.into_iter().map(|e| (e.domain, e.decision)));
                }
                Ok(())
            }
            TakeoverState::Ended => Err(Failure::refusal(
                codes::TAKEOVER_ENDED,
                format!(
                    "the run paused ({}) and the takeover was ended: it stopped without acting",
                    reason.as_str()
                ),
            )),
            _ => Err(Failure::refusal(
                codes::TAKEOVER_EXPIRED,
                format!(
                    "the run paused ({}) and nobody resumed it in time: it stopped without \
                     acting",
                    reason.as_str()
                ),
            )),
        }
    }

    /// The facts of the focused element; `None` when only the document has the focus or
    /// it cannot be read (a key pressed then counts as the rule says without facts).
    pub(super) async fn inspect_focused(
        &self,
        context: &C,
        timeout: Duration,
    ) -> Option<ElementFacts> {
        match guarded(
            timeout + self.config().step_grace,
            context.inspect_focused(timeout),
        )
        .await
        {
            Step::Done(facts) => facts,
            Step::Error(_) | Step::TimedOut | Step::Panicked => None,
        }
    }

    pub(super) async fn inspect(
        &self,
        context: &C,
        selector: &abr_protocol::Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Result<ElementFacts, Failure> {
        match guarded(
            timeout + self.config().step_grace,
            context.inspect(selector, reach, timeout),
        )
        .await
        {
            Step::Done(facts) => Ok(facts),
            Step::Error(failure) => Err(Failure::from_step(failure)),
            Step::TimedOut => Err(Failure::new(
                codes::STEP_TIMEOUT,
                format!(
                    "the element did not appear within {} ms",
                    timeout.as_millis()
                ),
            )),
            Step::Panicked => Err(Failure::new(
                codes::STEP_PANICKED,
                "the browser failed unexpectedly reading the element",
            )),
        }
    }

    // ---- takeovers ------------------------------------------------------------------------
}

impl<C: TaskContext> TaskRunner<C> {
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
}
