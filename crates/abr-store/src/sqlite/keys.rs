//! [`KeyStore`] on SQLite: API keys, one row per key, the token's SHA-256 digest and never
//! the token. A key created or revoked is synced to disk before it returns: a revoked key
//! stays revoked across a power loss.

use abr_core::CoreError;
use abr_core::store::{KeyStore, RunnerLink, StoredKey};
use async_trait::async_trait;
use rusqlite::OptionalExtension as _;
use time::OffsetDateTime;

use crate::codec::{
    KeyColumns, RawKey, decode_key as decode, key_columns, parse_timestamp, timestamp,
};
use crate::{SqliteStore, StoreError};

const COLUMNS: &str =
    "key_id, name, role, tenant_id, read_only, created_at, expires_at, revoked_at, digest";

/// Columns as read, before decoding.
fn raw(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawKey> {
    Ok(RawKey {
        id: row.get(0)?,
        name: row.get(1)?,
        role: row.get(2)?,
        tenant: row.get(3)?,
        read_only: row.get(4)?,
        created_at: row.get(5)?,
        expires_at: row.get(6)?,
        revoked_at: row.get(7)?,
        digest: row.get(8)?,
    })
}

#[async_trait]
impl KeyStore for SqliteStore {
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError> {
        let KeyColumns {
            role,
            created_at,
            expires_at,
            revoked_at,
        } = key_columns(key)?;
        let key = key.clone();
        self.with(move |conn| {
            SqliteStore::synced(conn, |conn| {
                conn.execute(
                    &format!("INSERT INTO api_keys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
                    rusqlite::params![
                        key.id,
                        key.name,
                        role,
                        key.tenant,
                        key.read_only,
                        created_at,
                        expires_at,
                        revoked_at,
                        key.digest.to_vec(),
                    ],
                )?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError> {
        let id = id.to_owned();
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM api_keys WHERE key_id = ?1"),
                        [&id],
                        raw,
                    )
                    .optional()?)
            })
            .await?;
        Ok(row.map(decode).transpose()?)
    }

    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError> {
        let digest = digest.to_vec();
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM api_keys WHERE digest = ?1"),
                        [&digest],
                        raw,
                    )
                    .optional()?)
            })
            .await?;
        Ok(row.map(decode).transpose()?)
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError> {
        let rows = self
            .with(move |conn| {
                let mut statement = conn.prepare(&format!("SELECT {COLUMNS} FROM api_keys"))?;
                let rows = statement
                    .query_map([], raw)?
                    .collect::<Result<Vec<RawKey>, _>>()?;
                Ok(rows)
            })
            .await?;
        let mut keys = rows
            .into_iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn revoke_key(&self, id: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        let at = timestamp(at, "a key's revocation")?;
        let id = id.to_owned();
        let changed = self
            .with(move |conn| {
                SqliteStore::synced(conn, |conn| {
                    Ok(conn.execute(
                        "UPDATE api_keys SET revoked_at = ?2
                         WHERE key_id = ?1 AND revoked_at IS NULL",
                        (&id, &at),
                    )?)
                })
            })
            .await?;
        Ok(changed == 1)
    }

    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: OffsetDateTime,
    ) -> Result<(), CoreError> {
        let at = timestamp(at, "a runner link")?;
        let (runner_id, key_id) = (runner_id.to_owned(), key_id.to_owned());
        self.with(move |conn| {
            SqliteStore::synced(conn, |conn| {
                conn.execute(
                    "INSERT INTO runner_links (runner_id, key_id, linked_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (runner_id) DO UPDATE SET key_id = ?2, linked_at = ?3",
                    (&runner_id, &key_id, &at),
                )?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    async fn runner_link(&self, runner_id: &str) -> Result<Option<RunnerLink>, CoreError> {
        let id = runner_id.to_owned();
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT runner_id, key_id, linked_at FROM runner_links WHERE runner_id = ?1",
                        [&id],
                        |row| {
                            Ok((
                                row.get::<_, String>(0)?,
                                row.get::<_, String>(1)?,
                                row.get::<_, String>(2)?,
                            ))
                        },
                    )
                    .optional()?)
            })
            .await?;
        Ok(row
            .map(|(runner_id, key_id, at)| {
                Ok::<_, StoreError>(RunnerLink {
                    runner_id,
                    key_id,
                    linked_at: parse_timestamp(&at, "a runner link")?,
                })
            })
            .transpose()?)
    }
}
