//! [`LinkStore`] on SQLite: approval links by the digest of their token.

use abr_core::CoreError;
use abr_core::store::{LinkStore, StoredLink};
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};
use time::OffsetDateTime;

use crate::SqliteStore;
use crate::codec::{LinkRow, decode_link, link_row, unix_ns};

const COLUMNS: &str =
    "digest, tenant_id, task_id, action, key_id, name, role, key_tenant, read_only, expires_ns";

fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<LinkRow> {
    Ok(LinkRow {
        digest: row.get(0)?,
        tenant: row.get(1)?,
        task_id: row.get(2)?,
        action: row.get(3)?,
        key_id: row.get(4)?,
        name: row.get(5)?,
        role: row.get(6)?,
        key_tenant: row.get(7)?,
        read_only: row.get(8)?,
        expires_ns: row.get(9)?,
    })
}

#[async_trait]
impl LinkStore for SqliteStore {
    async fn put_link(
        &self,
        link: &StoredLink,
        now: OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError> {
        let row = link_row(link)?;
        let now = unix_ns(now);
        let max = i64::try_from(max_open).unwrap_or(i64::MAX);
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute("DELETE FROM approval_links WHERE expires_ns <= ?1", [now])?;
                let open: i64 =
                    tx.query_row("SELECT COUNT(*) FROM approval_links", [], |r| r.get(0))?;
                if open >= max {
                    return Ok(false);
                }
                tx.execute(
                    &format!(
                        "INSERT INTO approval_links ({COLUMNS})
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
                    ),
                    rusqlite::params![
                        row.digest,
                        row.tenant,
                        row.task_id,
                        row.action,
                        row.key_id,
                        row.name,
                        row.role,
                        row.key_tenant,
                        row.read_only,
                        row.expires_ns,
                    ],
                )?;
                tx.commit()?;
                Ok(true)
            })
            .await?)
    }

    async fn link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        let (digest, now) = (digest.to_vec(), unix_ns(now));
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!(
                            "SELECT {COLUMNS} FROM approval_links
                             WHERE digest = ?1 AND expires_ns > ?2"
                        ),
                        (&digest, now),
                        read,
                    )
                    .optional()?)
            })
            .await?;
        Ok(row.map(decode_link).transpose()?)
    }

    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        let (digest, now) = (digest.to_vec(), unix_ns(now));
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!(
                            "DELETE FROM approval_links WHERE digest = ?1 RETURNING {COLUMNS}"
                        ),
                        [&digest],
                        read,
                    )
                    .optional()?)
            })
            .await?;
        Ok(row
            .filter(|r| r.expires_ns > now)
            .map(decode_link)
            .transpose()?)
    }
}
