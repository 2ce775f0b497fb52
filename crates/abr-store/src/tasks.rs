//! The task records ([`RecordStore`] of [`StoredTask`]) on SQLite. A task's request holds
//! its inputs and session (credentials): it is encrypted like stored sessions, bound to its
//! row.

use abr_core::CoreError;
use abr_core::store::{IdempotencyKey, Inserted, ListQuery, Listed, RecordStore, StoredTask};
use abr_protocol::{TaskRecord, TaskRequest, TaskState};
use async_trait::async_trait;

use crate::records::{Fields, Read, Table, name_of};
use crate::{SqliteStore, StoreError};

/// Tasks and their idempotency keys. A task's request without secrets is kept in
/// plaintext without a key, so a plaintext request is read as it is.
static TASKS: Table = Table {
    table: "tasks",
    id_column: "task_id",
    mark_column: "committing_started",
    idempotency_table: "idempotency",
    aad_tag: b"task",
    trusts_plaintext: true,
};

fn state_name(state: TaskState) -> Result<String, StoreError> {
    name_of(&state, "a task state")
}

fn fields(task: &StoredTask) -> Result<Fields, StoreError> {
    let request = serde_json::to_vec(&task.request)
        .map_err(|_| StoreError::Record("a task request".into()))?;
    Ok(Fields {
        ledger: task.ledger.clone(),
        id: task.id().to_owned(),
        state: state_name(task.record.state)?,
        record: serde_json::to_string(&task.record)
            .map_err(|_| StoreError::Record("a task record".into()))?,
        request: Some(request),
        holds_secrets: !task.request.inputs.is_empty() || task.request.session.is_some(),
        ends: task.record.state.is_final(),
    })
}

fn decode(read: Read) -> Result<StoredTask, StoreError> {
    let request: TaskRequest = read
        .request
        .as_deref()
        .and_then(|json| serde_json::from_slice(json).ok())
        .ok_or_else(|| StoreError::Record("a task request".into()))?;
    let record: TaskRecord = serde_json::from_str(&read.record)
        .map_err(|_| StoreError::Record("a task record".into()))?;
    Ok(StoredTask {
        ledger: read.ledger,
        request,
        record,
    })
}

#[async_trait]
impl RecordStore<StoredTask> for SqliteStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        Ok(TASKS.insert(self, fields(task)?, idempotency).await?)
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        Ok(TASKS.find_idempotency(self, tenant, key).await?)
    }

    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError> {
        Ok(TASKS
            .get(self, tenant, task_id)
            .await?
            .map(decode)
            .transpose()?)
    }

    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        Ok(TASKS.update(self, fields(task)?).await?)
    }

    async fn mark(&self, tenant: &str, task_id: &str) -> Result<(), CoreError> {
        Ok(TASKS.mark(self, tenant, task_id).await?)
    }

    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        let states = vec![
            state_name(TaskState::Queued)?,
            state_name(TaskState::Running)?,
            state_name(TaskState::Paused)?,
        ];
        Ok(TASKS.in_states(self, states, decode).await?)
    }

    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredTask>, CoreError> {
        TASKS.list(self, tenant, query, decode).await
    }
}
