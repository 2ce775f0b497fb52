//! A browse session waiting for a person, with a task's takeover lifecycle: requested →
//! active → resumed, or ended / expired.
//!
//! A session opened with `handoff` registers a takeover when the page calls for a person (a
//! challenge, a sign-in, a paywall, a control that failed twice in a row), and the brain
//! asks for one when it needs a value it must not invent ([`TaskRunner::browse_request_input`],
//! `needs_input`). From then on the session is `paused`: its actions answer the pause
//! without acting until a person resumes it (the brain then goes on), ends it or lets it
//! expire (the session closes, nothing more done). The person takes over through the same
//! calls as a task's (`POST /v1/tasks/{id}/takeover`, `…/resume`, `…/end`) and the live
//! view; for `needs_input` they may instead hand over the value
//! ([`TaskRunner::supply_input`]): typed into the field the brain named through the same
//! rails as any action, never logged, recorded or echoed.
//!
//! Unlike a task's run, nothing waits in a loop: every transition is recorded (the record's
//! `takeoverEvents`, the events) when the session next looks, which is at each call of the
//! brain or the person and at each sweep.

use std::time::Duration;

use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::SnapshotRequest;
use abr_protocol::{
    ActOutcome, BrowseAction, BrowsePause, ErrorBody, InputRequest, Pause, PauseReason,
    SuppliedInput, TakeoverState, TaskState,
};

use crate::live_access::LiveSites;
use crate::task::browses::{End, Open};
use crate::task::pauses::pause_message;
use crate::task::runner::TaskRunner;

/// How long an input request waits for a person when neither it nor the session says.
pub(crate) const DEFAULT_INPUT_WAIT: Duration = Duration::from_secs(600);
/// Longest prompt an input request shows a person.
const MAX_PROMPT: usize = 500;

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
    ) -> Result<BrowsePause, CoreError> {
        // A person never gets the page under a frame's blur.
        open.rails.settle_frames().await;
        let sites = LiveSites::new(&open.rails.last_url, None);
        let pending = self.handoffs.request(
            &open.task.tenant_id,
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
        self.takeover_event(&mut open.task, TakeoverState::Requested);
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
            self.takeover_event(&mut open.task, state);
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

    /// The brain asks a person for a value it must not invent, for the field `ref`: the
    /// session waits (`paused`, `needs_input`) until a person supplies it or resumes.
    ///
    /// # Errors
    /// [`CoreError::BrowseNotFound`]; [`CoreError::RefNotFound`] for a reference no snapshot
    /// gave; [`CoreError::InvalidInput`] for an empty or over-long prompt or a wait out of
    /// bounds; [`CoreError::TakeoverState`] when a person is already asked for.
    pub async fn browse_request_input(
        &self,
        tenant: &str,
        id: &str,
        request: &InputRequest,
    ) -> Result<BrowsePause, CoreError> {
        let prompt = request.prompt.trim();
        if prompt.is_empty() || prompt.chars().count() > MAX_PROMPT {
            return Err(CoreError::InvalidInput(format!(
                "prompt is 1 to {MAX_PROMPT} characters"
            )));
        }
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::BrowseNotFound)?;
        let wait = match request.wait_seconds {
            None => open.handoff_wait.unwrap_or(DEFAULT_INPUT_WAIT),
            Some(s) if s >= 1 && Duration::from_secs(s) <= self.config.max_handoff_wait => {
                Duration::from_secs(s)
            }
            Some(_) => {
                return Err(CoreError::InvalidInput(format!(
                    "waitSeconds is 1 to {}",
                    self.config.max_handoff_wait.as_secs()
                )));
            }
        };
        if !SnapshotRequest::is_reference(&request.reference)
            || !open.names.contains_key(&request.reference)
        {
            return Err(CoreError::RefNotFound(request.reference.clone()));
        }
        if let HandoffNow::Waiting(_) = self.browse_handoff_now(open).await {
            return Err(CoreError::TakeoverPending);
        }
        let message = format!("{}: {prompt}", pause_message(PauseReason::NeedsInput));
        self.browse_wait_for_person(
            open,
            PauseReason::NeedsInput,
            message,
            wait,
            Some((request.reference.clone(), prompt.to_owned())),
        )
        .await
    }

    /// A person hands over the value a browse session's `needs_input` pause asks for: typed
    /// into the field the brain named, through the rails like any action (a read-only
    /// session's write form stays refused), never logged, recorded or echoed; then the
    /// takeover is resumed and the brain goes on. Answers the takeover id.
    ///
    /// # Errors
    /// [`CoreError::TaskNotFound`] (no such open session of the tenant);
    /// [`CoreError::NoTakeover`] when the session does not wait for a value;
    /// [`CoreError::InputNotAccepted`] when the field refused it (the takeover still waits).
    pub async fn supply_input(
        &self,
        tenant: &str,
        id: &str,
        input: SuppliedInput,
    ) -> Result<String, CoreError> {
        let entry = self
            .browses
            .get(tenant, id)
            .map_err(|_| CoreError::TaskNotFound)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::TaskNotFound)?;
        let HandoffNow::Waiting(_) = self.browse_handoff_now(open).await else {
            return Err(CoreError::NoTakeover);
        };
        let (takeover_id, reference) = match &open.task.record.pause {
            Some(Pause {
                takeover_id,
                reason: PauseReason::NeedsInput,
                input_ref: Some(reference),
                ..
            }) => (takeover_id.clone(), reference.clone()),
            _ => return Err(CoreError::NoTakeover),
        };
        let answer = self
            .act_on(
                open,
                &BrowseAction::Type {
                    reference,
                    text: input.value,
                    submit: false,
                },
            )
            .await;
        if answer.outcome != ActOutcome::Done {
            let why = answer
                .error
                .map(|e| e.message)
                .or_else(|| {
                    answer
                        .blocked
                        .map(|b| format!("refused ({})", abr_core::store::wire_name(&b.blocked_by)))
                })
                .unwrap_or_else(|| "the field did not take it".to_owned());
            return Err(CoreError::InputNotAccepted(why));
        }
        self.handoffs.resume(tenant, id)?;
        self.browse_handoff_now(open).await;
        entry.touch();
        Ok(takeover_id)
    }

    /// A person moved the takeover of `id` (take over, resume, end): a browse session of
    /// `tenant` records it now (and closes when it was ended).
    pub(super) async fn browse_takeover_moved(&self, tenant: &str, id: &str) {
        let Ok(entry) = self.browses.get(tenant, id) else {
            return;
        };
        entry.touch();
        let over = {
            let mut guard = entry.session.lock().await;
            let Some(open) = guard.as_mut() else {
                return;
            };
            matches!(self.browse_handoff_now(open).await, HandoffNow::Over(_))
        };
        if over {
            self.end(id, &entry, End::TakeoverOver).await;
        }
    }
}
