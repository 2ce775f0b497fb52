//! [`KeyStore`] on PostgreSQL: API keys, one row per key, the token's SHA-256 digest and
//! never the token; the runner links.

use abr_core::CoreError;
use abr_core::store::{KeyStore, RunnerLink, StoredKey};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::codec::{KeyColumns, RawKey, decode_key, key_columns, parse_timestamp, timestamp};
use crate::{PgStore, StoreError};

const COLUMNS: &str =
    "key_id, name, role, tenant_id, read_only, created_at, expires_at, revoked_at, digest";

fn raw(row: &tokio_postgres::Row) -> Result<RawKey, StoreError> {
    Ok(RawKey {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        role: row.try_get(2)?,
        tenant: row.try_get(3)?,
        read_only: row.try_get(4)?,
        created_at: row.try_get(5)?,
        expires_at: row.try_get(6)?,
        revoked_at: row.try_get(7)?,
        digest: row.try_get(8)?,
    })
}

fn decode(row: &tokio_postgres::Row) -> Result<StoredKey, StoreError> {
    decode_key(raw(row)?)
}

#[async_trait]
impl KeyStore for PgStore {
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError> {
        let KeyColumns {
            role,
            created_at,
            expires_at,
            revoked_at,
        } = key_columns(key)?;
        let digest = key.digest.to_vec();
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO api_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                ),
                &[
                    &key.id,
                    &key.name,
                    &role,
                    &key.tenant,
                    &key.read_only,
                    &created_at,
                    &expires_at,
                    &revoked_at,
                    &digest,
                ],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM api_keys WHERE key_id = $1"),
                &[&id],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(row.as_ref().map(decode).transpose()?)
    }

    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError> {
        let digest = digest.to_vec();
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!("SELECT {COLUMNS} FROM api_keys WHERE digest = $1"))
            .await
            .map_err(StoreError::from)?;
        let row = client
            .query_opt(&statement, &[&digest])
            .await
            .map_err(StoreError::from)?;
        Ok(row.as_ref().map(decode).transpose()?)
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&format!("SELECT {COLUMNS} FROM api_keys"), &[])
            .await
            .map_err(StoreError::from)?;
        let mut keys = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn revoke_key(&self, id: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        let at = timestamp(at, "a key's revocation")?;
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE api_keys SET revoked_at = $2 WHERE key_id = $1 AND revoked_at IS NULL",
                &[&id, &at],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(changed == 1)
    }

    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: OffsetDateTime,
    ) -> Result<(), CoreError> {
        let at = timestamp(at, "a runner link")?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO runner_links (runner_id, key_id, linked_at) VALUES ($1, $2, $3)
                 ON CONFLICT (runner_id) DO UPDATE SET key_id = $2, linked_at = $3",
                &[&runner_id, &key_id, &at],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn runner_link(&self, runner_id: &str) -> Result<Option<RunnerLink>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT runner_id, key_id, linked_at FROM runner_links WHERE runner_id = $1",
                &[&runner_id],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let at: String = row.try_get(2).map_err(StoreError::from)?;
        Ok(Some(RunnerLink {
            runner_id: row.try_get(0).map_err(StoreError::from)?,
            key_id: row.try_get(1).map_err(StoreError::from)?,
            linked_at: parse_timestamp(&at, "a runner link")?,
        }))
    }
}
