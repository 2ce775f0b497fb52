//! [`SiteStore`] on SQLite: a tenant's site decisions, one row per domain. Who decided is a
//! person's name, kept in the clear like a task's `approved_by`. Every change is synced to
//! disk before it returns: a site denied stays denied across a power loss.

use abr_core::CoreError;
use abr_core::guard::SiteStore;
use abr_protocol::SiteEntry;
use async_trait::async_trait;

use crate::SqliteStore;
use crate::codec::{RawEntry, decode_site as decode, name_of, timestamp};

/// Columns as read, before decoding.
#[async_trait]
impl SiteStore for SqliteStore {
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError> {
        let t = tenant.to_owned();
        let rows = self
            .with(move |conn| {
                let mut statement = conn.prepare(
                    "SELECT domain, decision, decided_by, decided_at FROM sites
                     WHERE tenant_id = ?1 ORDER BY domain",
                )?;
                let rows = statement
                    .query_map([&t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect::<Result<Vec<RawEntry>, _>>()?;
                Ok(rows)
            })
            .await?;
        Ok(rows.into_iter().map(decode).collect::<Result<_, _>>()?)
    }

    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError> {
        let decision = name_of(&entry.decision, "a site decision")?;
        let decided_at = timestamp(entry.decided_at, "a site decision's time")?;
        let t = tenant.to_owned();
        self.with(move |conn| {
            SqliteStore::synced(conn, |conn| {
                conn.execute(
                    "INSERT INTO sites (tenant_id, domain, decision, decided_by, decided_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (tenant_id, domain)
                     DO UPDATE SET decision = ?3, decided_by = ?4, decided_at = ?5",
                    (&t, &entry.domain, &decision, &entry.decided_by, &decided_at),
                )?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError> {
        let (t, d) = (tenant.to_owned(), domain.to_owned());
        let removed = self
            .with(move |conn| {
                SqliteStore::synced(conn, |conn| {
                    Ok(conn.execute(
                        "DELETE FROM sites WHERE tenant_id = ?1 AND domain = ?2",
                        (&t, &d),
                    )?)
                })
            })
            .await?;
        Ok(removed > 0)
    }
}
