//! [`StoredTask`], a task as its ledger keeps it, and [`TaskStore`]: what the task part of
//! the engine needs of a store (the task records, the per-tenant counters, the screenshots).

use abr_protocol::{OwnerAssertion, TaskRecord, TaskRequest, TaskState};

use crate::audit::{AuditAction, AuditEvent, AuditOutcome};
use crate::error::CoreError;
use crate::store::counters::CounterStore;
use crate::store::records::{LedgerHeader, LedgerRecord, RecordStore};
use crate::store::screenshots::ScreenshotStore;

/// A task as stored: its ledger header (its tenant, version, committing mark and retry),
/// the request it was created from, and its record.
#[derive(Clone, PartialEq)]
pub struct StoredTask {
    /// What every ledger record holds: the tenant (a task is visible to its tenant only),
    /// the store's version, the mark saved before its first committing step starts (so a
    /// task found `running` after a restart is known to be uncertain even if the step never
    /// reported) and the attempt that retries it (a task is retried at most once; further
    /// retries retry the latest attempt).
    pub ledger: LedgerHeader,
    /// The request: the plan, and the inputs and session it runs with (credentials: a
    /// durable store encrypts this at rest).
    pub request: TaskRequest,
    /// The record, as `GET /v1/tasks/{id}` returns it.
    pub record: TaskRecord,
}

/// The platform label of a task that names no platform (audit, browser labels).
pub const NO_PLATFORM: &str = "task";

impl StoredTask {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.record.task_id
    }
}

impl std::fmt::Debug for StoredTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredTask")
            .field("ledger", &self.ledger)
            .field("task_id", &self.record.task_id)
            .field("state", &self.record.state)
            .finish_non_exhaustive()
    }
}

impl LedgerRecord for StoredTask {
    const KIND: &'static str = "task";

    fn header(&self) -> &LedgerHeader {
        &self.ledger
    }

    fn header_mut(&mut self) -> &mut LedgerHeader {
        &mut self.ledger
    }

    fn id(&self) -> &str {
        StoredTask::id(self)
    }

    fn state_name(&self) -> String {
        crate::store::records::wire_name(&self.record.state)
    }

    fn created_at(&self) -> time::OffsetDateTime {
        self.record.created_at
    }

    /// `queued`, `running` or `paused` (a task pending approval never started and is not
    /// unfinished work).
    fn is_unfinished(&self) -> bool {
        matches!(
            self.record.state,
            TaskState::Queued | TaskState::Running | TaskState::Paused
        )
    }

    fn is_uncertain(&self) -> bool {
        self.record.state == TaskState::Uncertain
    }

    fn assertion_mut(&mut self) -> &mut Option<OwnerAssertion> {
        &mut self.record.assertion
    }

    fn first_attempt(&self) -> &str {
        self.record.retry_of.as_deref().unwrap_or(self.id())
    }

    fn not_found() -> CoreError {
        CoreError::TaskNotFound
    }

    const ASSERTED: AuditAction = AuditAction::TaskAsserted;
    const RECHECKED: AuditAction = AuditAction::TaskRechecked;

    fn audit_event(
        &self,
        action: AuditAction,
        outcome: AuditOutcome,
        now: time::OffsetDateTime,
    ) -> AuditEvent {
        let platform = self.request.platform.as_deref().unwrap_or(NO_PLATFORM);
        let mut event = AuditEvent::new(now, action, outcome, platform)
            .tenant(Some(&self.ledger.tenant_id), None);
        event.task_id = Some(self.id().to_owned());
        event.proposal_id = self.record.proposal_id.clone();
        event
    }
}

/// What the task part of the engine needs of a store: the task records (the one
/// [`RecordStore`] contract: atomic insert with an idempotency key, compare-and-swap, the
/// committing mark, the unfinished tasks), the per-tenant counters and the screenshots.
/// Every store that has all three is one.
pub trait TaskStore: RecordStore<StoredTask> + CounterStore + ScreenshotStore {}

impl<S: RecordStore<StoredTask> + CounterStore + ScreenshotStore> TaskStore for S {}
