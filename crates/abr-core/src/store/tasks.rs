//! [`StoredTask`], a task as its ledger keeps it, and [`TaskStore`]: what the task part of
//! the engine needs of a store (the task records, the per-tenant counters, the screenshots);
//! [`InMemoryTaskStore`] for tests and single-process embedders.

use abr_protocol::{OwnerAssertion, TaskRecord, TaskRequest, TaskState};
use async_trait::async_trait;

use crate::error::CoreError;
use crate::store::counters::{Counter, CounterStore, InMemoryCounters};
use crate::store::records::{
    IdempotencyKey, InMemoryRecordStore, Inserted, LedgerRecord, RecordStore,
};
use crate::store::screenshots::{InMemoryScreenshots, ScreenshotStore};

/// A task as stored: its tenant, the request it was created from, its record, and what the
/// runner needs to end it honestly after a restart.
#[derive(Clone, PartialEq)]
pub struct StoredTask {
    /// The tenant; a task is visible to its tenant only.
    pub tenant_id: String,
    /// The request: the plan, and the inputs and session it runs with (credentials: a
    /// durable store encrypts this at rest).
    pub request: TaskRequest,
    /// The record, as `GET /v1/tasks/{id}` returns it.
    pub record: TaskRecord,
    /// The store's version of this task, for [`RecordStore::update`]'s compare-and-swap.
    pub version: u64,
    /// Whether a committing step had started (saved *before* it starts), so a task found
    /// `running` after a restart is known to be uncertain even if the step never reported.
    pub committing_started: bool,
    /// The attempt that retries this task, once there is one (a task is retried at most
    /// once; further retries retry the latest attempt).
    pub retried_by: Option<String>,
}

impl StoredTask {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.record.task_id
    }
}

impl std::fmt::Debug for StoredTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredTask")
            .field("tenant_id", &self.tenant_id)
            .field("task_id", &self.record.task_id)
            .field("state", &self.record.state)
            .field("version", &self.version)
            .field("committing_started", &self.committing_started)
            .field("retried_by", &self.retried_by)
            .finish_non_exhaustive()
    }
}

impl LedgerRecord for StoredTask {
    const KIND: &'static str = "task";

    fn tenant(&self) -> &str {
        &self.tenant_id
    }

    fn id(&self) -> &str {
        StoredTask::id(self)
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn version_mut(&mut self) -> &mut u64 {
        &mut self.version
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

    fn is_marked(&self) -> bool {
        self.committing_started
    }

    fn set_marked(&mut self) {
        self.committing_started = true;
    }

    fn assertion_mut(&mut self) -> &mut Option<OwnerAssertion> {
        &mut self.record.assertion
    }

    fn retried_by(&self) -> Option<&str> {
        self.retried_by.as_deref()
    }

    fn set_retried_by(&mut self, attempt: &str) {
        self.retried_by = Some(attempt.to_owned());
    }

    fn first_attempt(&self) -> &str {
        self.record.retry_of.as_deref().unwrap_or(self.id())
    }

    fn not_found() -> CoreError {
        CoreError::TaskNotFound
    }
}

/// What the task part of the engine needs of a store: the task records (the one
/// [`RecordStore`] contract: atomic insert with an idempotency key, compare-and-swap, the
/// committing mark, the unfinished tasks), the per-tenant counters and the screenshots.
/// Every store that has all three is one.
pub trait TaskStore: RecordStore<StoredTask> + CounterStore + ScreenshotStore {}

impl<S: RecordStore<StoredTask> + CounterStore + ScreenshotStore> TaskStore for S {}

/// A process-local [`TaskStore`] (tests, demos, single-process embedders): everything is
/// lost when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    tasks: InMemoryRecordStore<StoredTask>,
    counters: InMemoryCounters,
    screenshots: InMemoryScreenshots,
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every task of every tenant (for tests).
    pub fn all(&self) -> Vec<StoredTask> {
        self.tasks.all()
    }
}

#[async_trait]
impl RecordStore<StoredTask> for InMemoryTaskStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        self.tasks.insert(task, idempotency).await
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.tasks.find_idempotency(tenant, key).await
    }

    async fn get(&self, tenant: &str, id: &str) -> Result<Option<StoredTask>, CoreError> {
        self.tasks.get(tenant, id).await
    }

    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        self.tasks.update(task).await
    }

    async fn mark(&self, tenant: &str, id: &str) -> Result<(), CoreError> {
        self.tasks.mark(tenant, id).await
    }

    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        self.tasks.unfinished().await
    }
}

#[async_trait]
impl CounterStore for InMemoryTaskStore {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        self.counters.increment(tenant, counter, max).await
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        self.counters.decrement(tenant, counter).await
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        self.counters.count(tenant, counter).await
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.counters.clear_sessions().await
    }
}

#[async_trait]
impl ScreenshotStore for InMemoryTaskStore {
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        image: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.screenshots
            .put_screenshot(tenant, task_id, name, image)
            .await
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        self.screenshots.screenshot(tenant, task_id, name).await
    }
}
