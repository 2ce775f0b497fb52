//! What a task or browse session tells the engine's [`Events`](crate::events::Events): an
//! approval it waits for, each step, its start (the stall watch) and its end. Ids, names and
//! states only.

use abr_core::context::TaskContext;
use abr_core::store::{StoredTask, wire_name};
use abr_protocol::{RunEvent, StepResult, TakeoverEvent, TakeoverState, TaskState};

use crate::task::runner::TaskRunner;

impl<C: TaskContext> TaskRunner<C> {
    fn run_event(&self, event: &str, task: &StoredTask) -> RunEvent {
        RunEvent::new(
            event,
            &task.ledger.tenant_id,
            &task.record.task_id,
            self.events.now(),
        )
    }

    /// Milliseconds since the run started (none before it did).
    fn elapsed(&self, task: &StoredTask) -> Option<u64> {
        task.record.started_at.map(|started| {
            u64::try_from((self.clock.now() - started).whole_milliseconds()).unwrap_or(0)
        })
    }

    /// A new task: `approval_required` when it waits for an approver.
    pub(super) fn announce_created(&self, task: &StoredTask) {
        if task.record.state == TaskState::PendingApproval {
            self.events.emit(self.run_event("approval_required", task));
        }
    }

    /// A browse session's committing action waits for an approver.
    pub(super) fn announce_action_approval(&self, task: &StoredTask, approval_id: &str) {
        self.events.emit(RunEvent {
            approval_id: Some(approval_id.to_owned()),
            ..self.run_event("approval_required", task)
        });
    }

    /// The run started: watched for stalls until it ends.
    pub(super) fn announce_started(&self, task: &StoredTask) {
        self.events
            .started(&task.ledger.tenant_id, &task.record.task_id);
    }

    /// A step (or a browse action) ended; a task's step says which of how many, and the
    /// stage its plan names it in.
    pub(super) fn announce_step(&self, task: &StoredTask, result: &StepResult, of_plan: bool) {
        let steps = &task.request.plan.steps;
        let elapsed = self.elapsed(task);
        let code = result.error.as_ref().map(|e| e.code.clone());
        // A refused step's rule: the refusal the guard recorded last (this step's).
        let refused_by = code
            .as_deref()
            .filter(|c| *c == abr_protocol::codes::BLOCKED_ACTION.code)
            .and_then(|_| task.record.blocked.last())
            .map(|b| wire_name(&b.blocked_by));
        self.events.emit(RunEvent {
            step: Some(result.index),
            action: Some(result.action.clone()),
            ok: Some(result.ok),
            ms: Some(result.ms),
            code,
            refused_by,
            elapsed_ms: elapsed,
            steps: of_plan.then_some(steps.len()),
            stage: of_plan
                .then(|| abr_core::plan::stage_at(steps, result.index))
                .flatten()
                .map(str::to_owned),
            ..self.run_event("step_progress", task)
        });
    }

    /// The run ended, in the state its record says.
    pub(super) fn announce_end(&self, task: &StoredTask) {
        let uncertain = task.record.state == TaskState::Uncertain;
        self.events.emit(RunEvent {
            kind: Some(if task.record.browse { "browse" } else { "task" }.to_owned()),
            elapsed_ms: self.elapsed(task),
            state: Some(wire_name(&task.record.state)),
            check: uncertain.then(|| format!("/v1/tasks/{}/recheck", task.record.task_id)),
            code: matches!(task.record.state, TaskState::Failed | TaskState::Uncertain)
                .then(|| task.record.error.as_ref().map(|e| e.code.clone()))
                .flatten(),
            ..self.run_event("run_ended", task)
        });
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// Records (and announces) a takeover's move to `state`, made by the person `by` (none:
    /// the run's own move, a request or an expiry).
    pub(super) fn takeover_event(
        &self,
        task: &mut StoredTask,
        state: TakeoverState,
        by: Option<&str>,
    ) {
        let Some(pause) = &task.record.pause else {
            return;
        };
        let event = TakeoverEvent {
            event: event_name(state).to_owned(),
            run_id: task.record.task_id.clone(),
            takeover_id: pause.takeover_id.clone(),
            reason: pause.reason,
            state,
            at: self.clock.now(),
            by: by.map(str::to_owned),
        };
        self.events.emit(abr_protocol::RunEvent::takeover(
            &task.ledger.tenant_id,
            &event,
        ));
        task.record.takeover_events.push(event);
    }
}

fn event_name(state: TakeoverState) -> &'static str {
    match state {
        TakeoverState::Requested => "takeover_required",
        TakeoverState::Active => "takeover_active",
        TakeoverState::Resumed => "takeover_resumed",
        TakeoverState::Ended => "takeover_ended",
        TakeoverState::Expired => "takeover_expired",
    }
}
