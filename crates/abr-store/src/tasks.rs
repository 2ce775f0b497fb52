//! [`TaskStore`] and [`TaskSessions`] on SQLite. A task's request holds its inputs and
//! session (credentials): it is encrypted like stored sessions, bound to its row.

use abr_core::task::{Counter, IdempotencyKey, Inserted, StoredTask, TaskSessions, TaskStore};
use abr_core::{CoreError, SessionKey as Key, SessionStore};
use abr_protocol::{AgentSessionState, TaskRecord, TaskRequest, TaskState};
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};

use crate::records::{Fields, Read, Table, name_of};
use crate::{SqliteStore, StoreError};

fn counter_name(counter: &Counter) -> String {
    match counter {
        Counter::Executions { day } => format!("executions:{day}"),
        Counter::Sessions => "sessions".to_owned(),
        Counter::Retries { task_id } => format!("retries:{task_id}"),
    }
}

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

/// The associated data binding a sealed screenshot to its row.
fn screenshot_aad(tenant: &str, task_id: &str, name: &str) -> Vec<u8> {
    crate::records::row_aad(b"screenshot", &[tenant, task_id, name])
}

fn state_name(state: TaskState) -> Result<String, StoreError> {
    name_of(&state, "a task state")
}

fn fields(task: &StoredTask) -> Result<Fields, StoreError> {
    let request = serde_json::to_vec(&task.request)
        .map_err(|_| StoreError::Record("a task request".into()))?;
    Ok(Fields {
        tenant: task.tenant_id.clone(),
        id: task.id().to_owned(),
        version: task.version,
        state: state_name(task.record.state)?,
        record: serde_json::to_string(&task.record)
            .map_err(|_| StoreError::Record("a task record".into()))?,
        request: Some(request),
        holds_secrets: !task.request.inputs.is_empty() || task.request.session.is_some(),
        mark: task.committing_started,
        retried_by: task.retried_by.clone(),
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
        tenant_id: read.tenant,
        request,
        record,
        version: read.version,
        committing_started: read.mark,
        retried_by: read.retried_by,
    })
}

#[async_trait]
impl TaskStore for SqliteStore {
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

    async fn mark_committing(&self, tenant: &str, task_id: &str) -> Result<(), CoreError> {
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

    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value: u32 = tx
                    .query_row(
                        "SELECT value FROM counters WHERE tenant_id = ?1 AND counter = ?2",
                        (&tenant, &name),
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or(0);
                if value >= max {
                    return Ok(false);
                }
                tx.execute(
                    "INSERT INTO counters (tenant_id, counter, value) VALUES (?1, ?2, 1)
                     ON CONFLICT (tenant_id, counter) DO UPDATE SET value = value + 1",
                    (&tenant, &name),
                )?;
                tx.commit()?;
                Ok(true)
            })
            .await?)
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        self.with(move |conn| {
            conn.execute(
                "UPDATE counters SET value = MAX(value - 1, 0) WHERE tenant_id = ?1 AND counter = ?2",
                (&tenant, &name),
            )?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        Ok(self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT value FROM counters WHERE tenant_id = ?1 AND counter = ?2",
                        (&tenant, &name),
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or(0))
            })
            .await?)
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        let name = counter_name(&Counter::Sessions);
        self.with(move |conn| {
            conn.execute("UPDATE counters SET value = 0 WHERE counter = ?1", [&name])?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// Sealed like frames, bound to its tenant, task and name; without a key only where
    /// plaintext is allowed.
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        let (t, id, n) = (tenant.to_owned(), task_id.to_owned(), name.to_owned());
        let (encrypted, sealed) = self.seal_payload(png, &screenshot_aad(&t, &id, &n), true)?;
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO screenshots (tenant_id, task_id, name, png, encrypted)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant_id, task_id, name) DO UPDATE SET png = ?4, encrypted = ?5",
                (&t, &id, &n, &sealed, encrypted),
            )?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        let (t, id, n) = (tenant.to_owned(), task_id.to_owned(), name.to_owned());
        let row: Option<(Vec<u8>, bool)> = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT png, encrypted FROM screenshots
                         WHERE tenant_id = ?1 AND task_id = ?2 AND name = ?3",
                        (&t, &id, &n),
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?)
            })
            .await?;
        let Some((payload, encrypted)) = row else {
            return Ok(None);
        };
        // A plaintext row is one written before screenshots were sealed: read as it is.
        let aad = screenshot_aad(tenant, task_id, name);
        Ok(Some(self.open_payload(encrypted, payload, &aad, true)?))
    }
}

#[async_trait]
impl TaskSessions for SqliteStore {
    async fn load(
        &self,
        tenant: &str,
        session_id: &str,
    ) -> Result<Option<AgentSessionState>, CoreError> {
        SessionStore::load(self, &Key::stored(tenant, session_id)).await
    }

    async fn store_refreshed(
        &self,
        tenant: &str,
        session_id: &str,
        state: AgentSessionState,
    ) -> Result<(), CoreError> {
        SessionStore::save(self, &Key::stored(tenant, session_id), state).await
    }
}
