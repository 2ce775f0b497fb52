//! [`TaskStore`] and [`TaskSessions`] on SQLite. A task's request holds its inputs and
//! session (credentials): it is encrypted like stored sessions, bound to its row.

use abr_core::task::{Counter, IdempotencyKey, Inserted, StoredTask, TaskSessions, TaskStore};
use abr_core::{CoreError, SessionKey as Key, SessionStore};
use abr_protocol::{AgentSessionState, TaskRecord, TaskRequest, TaskState};
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};

use crate::{SqliteStore, StoreError};

fn state_name(state: TaskState) -> Result<String, StoreError> {
    match serde_json::to_value(state) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Record("a task state".into())),
    }
}

fn counter_name(counter: &Counter) -> String {
    match counter {
        Counter::Executions { day } => format!("executions:{day}"),
        Counter::Sessions => "sessions".to_owned(),
        Counter::Retries { task_id } => format!("retries:{task_id}"),
    }
}

fn task_aad(tenant: &str, task_id: &str) -> Vec<u8> {
    let mut out = b"task".to_vec();
    for part in [tenant, task_id] {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// A row, read.
struct Row {
    tenant_id: String,
    version: i64,
    record: String,
    request_encrypted: bool,
    request: Vec<u8>,
    committing_started: bool,
    retried_by: Option<String>,
}

impl SqliteStore {
    fn seal_request(&self, task: &StoredTask) -> Result<(bool, Vec<u8>), StoreError> {
        let json = serde_json::to_vec(&task.request)
            .map_err(|_| StoreError::Record("a task request".into()))?;
        let holds_secrets = !task.request.inputs.is_empty() || task.request.session.is_some();
        match &self.key {
            Some(key) => Ok((
                true,
                key.seal(&json, &task_aad(&task.tenant_id, task.id()))?,
            )),
            None if !holds_secrets || self.plaintext_allowed => Ok((false, json)),
            None => Err(StoreError::NoKey),
        }
    }

    fn decode(&self, task_id: &str, row: Row) -> Result<StoredTask, StoreError> {
        let request_json = if row.request_encrypted {
            let key = self.key.as_ref().ok_or(StoreError::NoKey)?;
            key.open(&row.request, &task_aad(&row.tenant_id, task_id))?
        } else {
            row.request
        };
        let request: TaskRequest = serde_json::from_slice(&request_json)
            .map_err(|_| StoreError::Record("a task request".into()))?;
        let record: TaskRecord = serde_json::from_str(&row.record)
            .map_err(|_| StoreError::Record("a task record".into()))?;
        Ok(StoredTask {
            tenant_id: row.tenant_id,
            request,
            record,
            version: u64::try_from(row.version).unwrap_or(0),
            committing_started: row.committing_started,
            retried_by: row.retried_by,
        })
    }
}

const SELECT: &str = "SELECT tenant_id, version, record, request_encrypted, request,
    committing_started, retried_by, task_id FROM tasks";

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Row)> {
    Ok((
        row.get(7)?,
        Row {
            tenant_id: row.get(0)?,
            version: row.get(1)?,
            record: row.get(2)?,
            request_encrypted: row.get(3)?,
            request: row.get(4)?,
            committing_started: row.get(5)?,
            retried_by: row.get(6)?,
        },
    ))
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        let (encrypted, request) = self.seal_request(task)?;
        let record = serde_json::to_string(&task.record)
            .map_err(|_| StoreError::Record("a task record".into()))?;
        let state = state_name(task.record.state)?;
        let (tenant, id) = (task.tenant_id.clone(), task.id().to_owned());
        let version = i64::try_from(task.version).unwrap_or(i64::MAX);
        let (committing, retried_by) = (task.committing_started, task.retried_by.clone());
        let idempotency = idempotency.cloned();
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if let Some(idem) = &idempotency {
                    let existing: Option<(String, String)> = tx
                        .query_row(
                            "SELECT task_id, body_hash FROM idempotency WHERE tenant_id = ?1 AND key = ?2",
                            (&tenant, &idem.key),
                            |r| Ok((r.get(0)?, r.get(1)?)),
                        )
                        .optional()?;
                    if let Some((task_id, body_hash)) = existing {
                        return Ok(Inserted::Existing { task_id, body_hash });
                    }
                    tx.execute(
                        "INSERT INTO idempotency (tenant_id, key, body_hash, task_id) VALUES (?1, ?2, ?3, ?4)",
                        (&tenant, &idem.key, &idem.body_hash, &id),
                    )?;
                }
                tx.execute(
                    "INSERT INTO tasks (tenant_id, task_id, version, state, record, request_encrypted,
                        request, committing_started, retried_by)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    (&tenant, &id, version, &state, &record, encrypted, &request, committing, &retried_by),
                )?;
                tx.commit()?;
                Ok(Inserted::New)
            })
            .await?)
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        Ok(self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT task_id, body_hash FROM idempotency WHERE tenant_id = ?1 AND key = ?2",
                        (&tenant, &key),
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?)
            })
            .await?)
    }

    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError> {
        let (t, id) = (tenant.to_owned(), task_id.to_owned());
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!("{SELECT} WHERE tenant_id = ?1 AND task_id = ?2"),
                        (&t, &id),
                        read_row,
                    )
                    .optional()?)
            })
            .await?;
        match row {
            Some((id, row)) => Ok(Some(self.decode(&id, row)?)),
            None => Ok(None),
        }
    }

    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        let (encrypted, request) = self.seal_request(task)?;
        let record = serde_json::to_string(&task.record)
            .map_err(|_| StoreError::Record("a task record".into()))?;
        let state = state_name(task.record.state)?;
        let (tenant, id) = (task.tenant_id.clone(), task.id().to_owned());
        let version = i64::try_from(task.version).unwrap_or(i64::MAX);
        let (committing, retried_by) = (task.committing_started, task.retried_by.clone());
        let ends = task.record.state.is_final();
        let changed = self
            .with(move |conn| {
                // The mark before a committing step, and an ending, are synced to disk; the
                // progress between them survives a killed process (WAL), not a power loss.
                let marks: bool = conn
                    .query_row(
                        "SELECT committing_started FROM tasks WHERE tenant_id = ?1 AND task_id = ?2",
                        (&tenant, &id),
                        |r| r.get(0),
                    )
                    .optional()?
                    .is_some_and(|was: bool| committing && !was);
                let write = |conn: &mut rusqlite::Connection| {
                    Ok(conn.execute(
                        "UPDATE tasks SET version = version + 1, state = ?4, record = ?5,
                            request_encrypted = ?6, request = ?7, committing_started = ?8, retried_by = ?9
                         WHERE tenant_id = ?1 AND task_id = ?2 AND version = ?3",
                        (&tenant, &id, version, &state, &record, encrypted, &request, committing, &retried_by),
                    )?)
                };
                if marks || ends {
                    SqliteStore::synced(conn, write)
                } else {
                    write(conn)
                }
            })
            .await?;
        Ok(changed == 1)
    }

    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        let queued = state_name(TaskState::Queued)?;
        let running = state_name(TaskState::Running)?;
        let rows = self
            .with(move |conn| {
                let mut statement = conn.prepare(&format!("{SELECT} WHERE state IN (?1, ?2)"))?;
                let rows = statement
                    .query_map((&queued, &running), read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        let mut tasks = Vec::with_capacity(rows.len());
        for (id, row) in rows {
            tasks.push(self.decode(&id, row)?);
        }
        Ok(tasks)
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

    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        let (t, id, n) = (tenant.to_owned(), task_id.to_owned(), name.to_owned());
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO screenshots (tenant_id, task_id, name, png) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (tenant_id, task_id, name) DO UPDATE SET png = ?4",
                (&t, &id, &n, &png),
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
        Ok(self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT png FROM screenshots WHERE tenant_id = ?1 AND task_id = ?2 AND name = ?3",
                        (&t, &id, &n),
                        |r| r.get(0),
                    )
                    .optional()?)
            })
            .await?)
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
