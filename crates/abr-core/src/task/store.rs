//! [`TaskStore`]: where task records, idempotency keys, per-tenant counters and screenshots
//! live, so that a restart loses nothing; [`InMemoryTaskStore`] for tests and single-process
//! embedders.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use abr_protocol::{AgentSessionState, TaskRecord, TaskRequest, TaskState};
use async_trait::async_trait;

use crate::CoreError;
use crate::records::{InMemoryRecords, Record};

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
    /// The store's version of this task, for [`TaskStore::update`]'s compare-and-swap.
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

/// An idempotency key and the hash of the body it was first used with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    /// The key (`Idempotency-Key`), per tenant.
    pub key: String,
    /// [`request_hash`](super::request_hash) of the body.
    pub body_hash: String,
}

/// What [`TaskStore::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    /// The task is stored (and the key, if one was given, now names it).
    New,
    /// The key was already taken: nothing was stored.
    Existing {
        /// The task the key names.
        task_id: String,
        /// The hash of the body it was used with.
        body_hash: String,
    },
}

/// A per-tenant counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    /// Executions started on a UTC day.
    Executions {
        /// The day.
        day: time::Date,
    },
    /// Browser sessions held now (queued and running tasks, re-checks).
    Sessions,
    /// Retries of one execution (keyed by its first attempt's id).
    Retries {
        /// The first attempt.
        task_id: String,
    },
}

/// Where tasks live.
///
/// # Contract
/// - A task is found only with its tenant: [`get`](Self::get) with another tenant's id
///   answers `None`, as if it did not exist.
/// - [`insert`](Self::insert) stores the task and claims the idempotency key in one atomic
///   step: when the key is already taken for the tenant, nothing is stored and the existing
///   task is named.
/// - [`update`](Self::update) is a compare-and-swap on [`StoredTask::version`](StoredTask#structfield.version): it replaces
///   the stored task only if the stored version equals `task.version`, and stores it with
///   `version + 1`. This is what makes approval, running, retries and assertion spending
///   happen exactly once. It never clears the committing mark.
/// - [`mark_committing`](Self::mark_committing) sets the committing mark alone, outside
///   the compare-and-swap (the version stays), and is durable when it returns.
/// - [`increment`](Self::increment) is atomic: two callers racing for the last unit of a
///   limit cannot both get it.
/// - Every write that returned is durable (for a durable store): a process killed after a
///   write finds it after the restart.
/// - [`StoredTask::request`] holds the task's inputs and session: credentials. A durable
///   store encrypts it at rest (e.g. with the key that encrypts stored sessions), and may
///   drop the inputs and session of ended tasks that can no longer be retried.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task (with `version` as given, normally 0), claiming `idempotency` for
    /// its tenant when given.
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError>;

    /// The task an idempotency key of `tenant` names, and the hash of the body it was first
    /// used with.
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError>;

    /// The task `task_id` of `tenant`, if any.
    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError>;

    /// Replaces the task if the stored version is `task.version`; whether it did. The
    /// committing mark is sticky: an update never clears a mark that is set.
    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError>;

    /// Sets the committing mark of the task `task_id` of `tenant` (see
    /// [`StoredTask::committing_started`]) without touching its version, durably, before it
    /// returns: the network gate calls it before a run's first write leaves the browser,
    /// whatever the run loop is doing. Unknown tasks are left alone.
    async fn mark_committing(&self, tenant: &str, task_id: &str) -> Result<(), CoreError>;

    /// Every task, of any tenant, that is `queued`, `running` or `paused` (not final; a
    /// task pending approval never started and is not unfinished work).
    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError>;

    /// Adds one to `counter` of `tenant` if it is below `max`; whether it did.
    async fn increment(&self, tenant: &str, counter: &Counter, max: u32)
    -> Result<bool, CoreError>;

    /// Takes one from `counter` of `tenant` (not below zero).
    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError>;

    /// The value of `counter` of `tenant`.
    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError>;

    /// Sets every tenant's [`Counter::Sessions`] to zero (after a restart, no session is
    /// open).
    async fn clear_sessions(&self) -> Result<(), CoreError>;

    /// Keeps a screenshot (PNG) of a task under `name`.
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError>;

    /// A screenshot of a task, if any.
    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError>;
}

/// Sessions a tenant stored on the runner (`sessionId` in a task request), for the task
/// runner to load before a task runs and to write the refreshed (scoped) state back after.
#[async_trait]
pub trait TaskSessions: Send + Sync + 'static {
    /// The session `session_id` of `tenant`, if any.
    async fn load(
        &self,
        tenant: &str,
        session_id: &str,
    ) -> Result<Option<AgentSessionState>, CoreError>;

    /// Replaces it with the state a task left (already scoped).
    async fn store_refreshed(
        &self,
        tenant: &str,
        session_id: &str,
        state: AgentSessionState,
    ) -> Result<(), CoreError>;
}

impl Record for StoredTask {
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
}

#[derive(Debug, Default)]
struct Inner {
    tasks: InMemoryRecords<StoredTask>,
    counters: HashMap<(String, Counter), u32>,
    screenshots: HashMap<(String, String, String), Vec<u8>>,
}

/// A process-local [`TaskStore`] (tests, demos, single-process embedders): everything is
/// lost when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    inner: Mutex<Inner>,
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every task of every tenant (for tests).
    pub fn all(&self) -> Vec<StoredTask> {
        self.lock().tasks.all()
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        Ok(self.lock().tasks.insert(task, idempotency))
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        idempotency_key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        Ok(self.lock().tasks.find_idempotency(tenant, idempotency_key))
    }

    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError> {
        Ok(self.lock().tasks.get(tenant, task_id))
    }

    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        let mut inner = self.lock();
        let marked = inner
            .tasks
            .get(&task.tenant_id, task.id())
            .is_some_and(|t| t.committing_started);
        if marked && !task.committing_started {
            let mut task = task.clone();
            task.committing_started = true;
            return Ok(inner.tasks.update(&task));
        }
        Ok(inner.tasks.update(task))
    }

    async fn mark_committing(&self, tenant: &str, task_id: &str) -> Result<(), CoreError> {
        self.lock()
            .tasks
            .modify(tenant, task_id, |t| t.committing_started = true);
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        Ok(self.lock().tasks.unfinished(|t| {
            matches!(
                t.record.state,
                TaskState::Queued | TaskState::Running | TaskState::Paused
            )
        }))
    }

    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        let mut inner = self.lock();
        let value = inner
            .counters
            .entry((tenant.to_owned(), counter.clone()))
            .or_insert(0);
        if *value >= max {
            return Ok(false);
        }
        *value += 1;
        Ok(true)
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        let mut inner = self.lock();
        if let Some(value) = inner
            .counters
            .get_mut(&(tenant.to_owned(), counter.clone()))
        {
            *value = value.saturating_sub(1);
        }
        Ok(())
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        Ok(self
            .lock()
            .counters
            .get(&(tenant.to_owned(), counter.clone()))
            .copied()
            .unwrap_or(0))
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.lock()
            .counters
            .retain(|(_, counter), _| *counter != Counter::Sessions);
        Ok(())
    }

    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.lock().screenshots.insert(
            (tenant.to_owned(), task_id.to_owned(), name.to_owned()),
            png,
        );
        Ok(())
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        Ok(self
            .lock()
            .screenshots
            .get(&(tenant.to_owned(), task_id.to_owned(), name.to_owned()))
            .cloned())
    }
}
