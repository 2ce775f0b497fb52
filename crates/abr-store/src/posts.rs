//! [`PostStore`] on SQLite. A post's request holds its content and a session (or a session
//! id): it is encrypted like stored sessions, bound to its row, and dropped (NULL) once the
//! post can no longer be re-checked.

use abr_core::task::{IdempotencyKey, Inserted};
use abr_core::{CoreError, PostStore, StoredPost};
use abr_protocol::{PostRecord, PostRequest, PostState};
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};

use crate::{SqliteStore, StoreError};

fn state_name(state: PostState) -> Result<String, StoreError> {
    match serde_json::to_value(state) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Record("a post state".into())),
    }
}

/// The associated data of a post's sealed request: its tenant and id, length-prefixed.
fn post_aad(tenant: &str, post_id: &str) -> Vec<u8> {
    let mut out = b"post".to_vec();
    for part in [tenant, post_id] {
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
    request: Option<Vec<u8>>,
    submit_started: bool,
    retried_by: Option<String>,
}

/// A post's columns, ready to write.
struct Columns {
    tenant: String,
    id: String,
    version: i64,
    state: String,
    record: String,
    encrypted: bool,
    request: Option<Vec<u8>>,
    submit_started: bool,
    retried_by: Option<String>,
}

impl SqliteStore {
    /// The request, sealed with the key (bound to the row); in plaintext only where
    /// plaintext is allowed (`--insecure-dev`, in memory).
    fn seal_post_request(&self, post: &StoredPost) -> Result<(bool, Option<Vec<u8>>), StoreError> {
        let Some(request) = &post.request else {
            return Ok((false, None));
        };
        let json =
            serde_json::to_vec(request).map_err(|_| StoreError::Record("a post request".into()))?;
        match &self.key {
            Some(key) => Ok((
                true,
                Some(key.seal(&json, &post_aad(&post.tenant_id, post.id()))?),
            )),
            None if self.plaintext_allowed => Ok((false, Some(json))),
            None => Err(StoreError::NoKey),
        }
    }

    fn post_columns(&self, post: &StoredPost) -> Result<Columns, StoreError> {
        let (encrypted, request) = self.seal_post_request(post)?;
        Ok(Columns {
            tenant: post.tenant_id.clone(),
            id: post.id().to_owned(),
            version: i64::try_from(post.version).unwrap_or(i64::MAX),
            state: state_name(post.record.state)?,
            record: serde_json::to_string(&post.record)
                .map_err(|_| StoreError::Record("a post record".into()))?,
            encrypted,
            request,
            submit_started: post.submit_started,
            retried_by: post.retried_by.clone(),
        })
    }

    fn decode_post(&self, post_id: &str, row: Row) -> Result<StoredPost, StoreError> {
        let request = match row.request {
            None => None,
            Some(sealed) => {
                let json = if row.request_encrypted {
                    let key = self.key.as_ref().ok_or(StoreError::NoKey)?;
                    key.open(&sealed, &post_aad(&row.tenant_id, post_id))?
                } else if self.plaintext_allowed {
                    sealed
                } else {
                    return Err(StoreError::NoKey);
                };
                Some(
                    serde_json::from_slice::<PostRequest>(&json)
                        .map_err(|_| StoreError::Record("a post request".into()))?,
                )
            }
        };
        let record: PostRecord = serde_json::from_str(&row.record)
            .map_err(|_| StoreError::Record("a post record".into()))?;
        Ok(StoredPost {
            tenant_id: row.tenant_id,
            record,
            request,
            version: u64::try_from(row.version).unwrap_or(0),
            submit_started: row.submit_started,
            retried_by: row.retried_by,
        })
    }
}

const SELECT: &str = "SELECT tenant_id, version, record, request_encrypted, request,
    submit_started, retried_by, post_id FROM posts";

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Row)> {
    Ok((
        row.get(7)?,
        Row {
            tenant_id: row.get(0)?,
            version: row.get(1)?,
            record: row.get(2)?,
            request_encrypted: row.get(3)?,
            request: row.get(4)?,
            submit_started: row.get(5)?,
            retried_by: row.get(6)?,
        },
    ))
}

#[async_trait]
impl PostStore for SqliteStore {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        let c = self.post_columns(post)?;
        let idempotency = idempotency.cloned();
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if let Some(idem) = &idempotency {
                    let existing: Option<(String, String)> = tx
                        .query_row(
                            "SELECT post_id, body_hash FROM post_idempotency
                             WHERE tenant_id = ?1 AND key = ?2",
                            (&c.tenant, &idem.key),
                            |r| Ok((r.get(0)?, r.get(1)?)),
                        )
                        .optional()?;
                    if let Some((task_id, body_hash)) = existing {
                        return Ok(Inserted::Existing { task_id, body_hash });
                    }
                    tx.execute(
                        "INSERT INTO post_idempotency (tenant_id, key, body_hash, post_id)
                         VALUES (?1, ?2, ?3, ?4)",
                        (&c.tenant, &idem.key, &idem.body_hash, &c.id),
                    )?;
                }
                tx.execute(
                    "INSERT INTO posts (tenant_id, post_id, version, state, record,
                        request_encrypted, request, submit_started, retried_by)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    (
                        &c.tenant,
                        &c.id,
                        c.version,
                        &c.state,
                        &c.record,
                        c.encrypted,
                        &c.request,
                        c.submit_started,
                        &c.retried_by,
                    ),
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
                        "SELECT post_id, body_hash FROM post_idempotency
                         WHERE tenant_id = ?1 AND key = ?2",
                        (&tenant, &key),
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?)
            })
            .await?)
    }

    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError> {
        let (t, id) = (tenant.to_owned(), post_id.to_owned());
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!("{SELECT} WHERE tenant_id = ?1 AND post_id = ?2"),
                        (&t, &id),
                        read_row,
                    )
                    .optional()?)
            })
            .await?;
        match row {
            Some((id, row)) => Ok(Some(self.decode_post(&id, row)?)),
            None => Ok(None),
        }
    }

    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        let c = self.post_columns(post)?;
        let ends = post.record.state.is_final();
        let changed = self
            .with(move |conn| {
                // The mark before the submit, and an ending, are synced to disk.
                let marks: bool = conn
                    .query_row(
                        "SELECT submit_started FROM posts WHERE tenant_id = ?1 AND post_id = ?2",
                        (&c.tenant, &c.id),
                        |r| r.get(0),
                    )
                    .optional()?
                    .is_some_and(|was: bool| c.submit_started && !was);
                let write = |conn: &mut rusqlite::Connection| {
                    Ok(conn.execute(
                        "UPDATE posts SET version = version + 1, state = ?4, record = ?5,
                            request_encrypted = ?6, request = ?7, submit_started = ?8,
                            retried_by = ?9
                         WHERE tenant_id = ?1 AND post_id = ?2 AND version = ?3",
                        (
                            &c.tenant,
                            &c.id,
                            c.version,
                            &c.state,
                            &c.record,
                            c.encrypted,
                            &c.request,
                            c.submit_started,
                            &c.retried_by,
                        ),
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

    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        let running = state_name(PostState::Running)?;
        let rows = self
            .with(move |conn| {
                let mut statement = conn.prepare(&format!("{SELECT} WHERE state = ?1"))?;
                let rows = statement
                    .query_map([&running], read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        let mut posts = Vec::with_capacity(rows.len());
        for (id, row) in rows {
            posts.push(self.decode_post(&id, row)?);
        }
        Ok(posts)
    }
}
