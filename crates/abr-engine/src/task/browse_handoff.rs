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

use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::SnapshotRequest;
use abr_protocol::{
    ActOutcome, BrowseAction, BrowsePause, InputRequest, Pause, PauseReason, SuppliedInput,
};

use crate::error::EngineError;
use crate::task::browse_act::HandoffNow;
use crate::task::browses::End;
use crate::task::pauses::pause_message;
use crate::task::runner::TaskRunner;

/// How long an input request waits for a person when neither it nor the session says.
pub(crate) const DEFAULT_INPUT_WAIT: Duration = Duration::from_secs(600);
/// Longest prompt an input request shows a person.
const MAX_PROMPT: usize = 500;

impl<C: TaskContext> TaskRunner<C> {
    /// The brain asks a person for a value it must not invent, for the field `ref`: the
    /// session waits (`paused`, `needs_input`) until a person supplies it or resumes.
    ///
    /// # Errors
    /// [`EngineError::BrowseNotFound`]; [`EngineError::RefNotFound`] for a reference no snapshot
    /// gave; [`CoreError::InvalidInput`] for an empty or over-long prompt or a wait out of
    /// bounds; [`EngineError::TakeoverState`] when a person is already asked for.
    pub(crate) async fn browse_request_input(
        &self,
        tenant: &str,
        id: &str,
        request: &InputRequest,
    ) -> Result<BrowsePause, EngineError> {
        let prompt = request.prompt.trim();
        if prompt.is_empty() || prompt.chars().count() > MAX_PROMPT {
            return Err(EngineError::from(CoreError::InvalidInput(format!(
                "prompt is 1 to {MAX_PROMPT} characters"
            ))));
        }
        let entry = self.browses.get(tenant, id)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(EngineError::BrowseNotFound)?;
        let wait = match request.wait_seconds {
            None => open.handoff_wait.unwrap_or(DEFAULT_INPUT_WAIT),
            Some(s) if s >= 1 && Duration::from_secs(s) <= self.config.max_handoff_wait => {
                Duration::from_secs(s)
            }
            Some(_) => {
                return Err(EngineError::from(CoreError::InvalidInput(format!(
                    "waitSeconds is 1 to {}",
                    self.config.max_handoff_wait.as_secs()
                ))));
            }
        };
        if !SnapshotRequest::is_reference(&request.reference)
            || !open.names.contains_key(&request.reference)
        {
            return Err(EngineError::RefNotFound(request.reference.clone()));
        }
        if let HandoffNow::Waiting(_) = self.browse_handoff_now(open).await {
            return Err(EngineError::TakeoverPending);
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
    /// [`EngineError::NoTakeover`] when the session does not wait for a value;
    /// [`EngineError::InputNotAccepted`] when the field refused it (the takeover still waits).
    pub(crate) async fn supply_input(
        &self,
        tenant: &str,
        id: &str,
        input: SuppliedInput,
        by: &str,
    ) -> Result<String, EngineError> {
        let entry = self
            .browses
            .get(tenant, id)
            .map_err(|_| CoreError::TaskNotFound)?;
        entry.touch();
        let mut guard = entry.session.lock().await;
        let open = guard.as_mut().ok_or(CoreError::TaskNotFound)?;
        let HandoffNow::Waiting(_) = self.browse_handoff_now(open).await else {
            return Err(EngineError::NoTakeover);
        };
        let (takeover_id, reference) = match &open.task.record.pause {
            Some(Pause {
                takeover_id,
                reason: PauseReason::NeedsInput,
                input_ref: Some(reference),
                ..
            }) => (takeover_id.clone(), reference.clone()),
            _ => return Err(EngineError::NoTakeover),
        };
        let answer = self
            .act_on(
                open,
                &BrowseAction::Type {
                    reference,
                    text: input.value,
                    submit: false,
                },
                Vec::new(),
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
            return Err(EngineError::InputNotAccepted(why));
        }
        self.handoffs.resume(tenant, id, by)?;
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
