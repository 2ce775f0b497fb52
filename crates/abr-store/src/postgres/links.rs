//! [`LinkStore`] on PostgreSQL: approval links by the digest of their token; a take is one
//! `DELETE … RETURNING`, so of two replicas taking one link, one gets it.

use abr_core::CoreError;
use abr_core::store::{LinkStore, StoredLink};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::codec::{LinkRow, decode_link, link_row, unix_ns};
use crate::{PgStore, StoreError};

const COLUMNS: &str =
    "digest, tenant_id, task_id, action, key_id, name, role, key_tenant, read_only, expires_ns";

fn read(row: &tokio_postgres::Row) -> Result<LinkRow, StoreError> {
    Ok(LinkRow {
        digest: row.try_get(0)?,
        tenant: row.try_get(1)?,
        task_id: row.try_get(2)?,
        action: row.try_get(3)?,
        key_id: row.try_get(4)?,
        name: row.try_get(5)?,
        role: row.try_get(6)?,
        key_tenant: row.try_get(7)?,
        read_only: row.try_get(8)?,
        expires_ns: row.try_get(9)?,
    })
}

#[async_trait]
impl LinkStore for PgStore {
    async fn put_link(
        &self,
        link: &StoredLink,
        now: OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError> {
        let row = link_row(link)?;
        let now = unix_ns(now);
        let max = i64::try_from(max_open).unwrap_or(i64::MAX);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(StoreError::from)?;
        tx.execute("DELETE FROM approval_links WHERE expires_ns <= $1", &[&now])
            .await
            .map_err(StoreError::from)?;
        let open: i64 = tx
            .query_one("SELECT COUNT(*) FROM approval_links", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(StoreError::from)?;
        if open >= max {
            return Ok(false);
        }
        tx.execute(
            &format!(
                "INSERT INTO approval_links ({COLUMNS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ),
            &[
                &row.digest,
                &row.tenant,
                &row.task_id,
                &row.action,
                &row.key_id,
                &row.name,
                &row.role,
                &row.key_tenant,
                &row.read_only,
                &row.expires_ns,
            ],
        )
        .await
        .map_err(StoreError::from)?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(true)
    }

    async fn link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM approval_links WHERE digest = $1 AND expires_ns > $2"
                ),
                &[&digest.as_slice(), &unix_ns(now)],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(row
            .as_ref()
            .map(read)
            .transpose()?
            .map(decode_link)
            .transpose()?)
    }

    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("DELETE FROM approval_links WHERE digest = $1 RETURNING {COLUMNS}"),
                &[&digest.as_slice()],
            )
            .await
            .map_err(StoreError::from)?;
        let now = unix_ns(now);
        Ok(row
            .as_ref()
            .map(read)
            .transpose()?
            .filter(|r| r.expires_ns > now)
            .map(decode_link)
            .transpose()?)
    }
}
