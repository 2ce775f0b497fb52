//! A tenant's site decisions ([`SiteStore`]) on PostgreSQL.

use abr_core::CoreError;
use abr_core::guard::SiteStore;
use abr_protocol::SiteEntry;
use async_trait::async_trait;

use crate::codec::{RawEntry, decode_site, name_of, timestamp};
use crate::{PgStore, StoreError};

#[async_trait]
impl SiteStore for PgStore {
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT domain, decision, decided_by, decided_at FROM sites
                 WHERE tenant_id = $1 ORDER BY domain COLLATE \"C\"",
                &[&tenant],
            )
            .await
            .map_err(StoreError::from)?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in rows {
            let raw: RawEntry = (
                row.try_get(0).map_err(StoreError::from)?,
                row.try_get(1).map_err(StoreError::from)?,
                row.try_get(2).map_err(StoreError::from)?,
                row.try_get(3).map_err(StoreError::from)?,
            );
            entries.push(decode_site(raw)?);
        }
        Ok(entries)
    }

    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError> {
        let decision = name_of(&entry.decision, "a site decision")?;
        let decided_at = timestamp(entry.decided_at, "a site decision's time")?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO sites (tenant_id, domain, decision, decided_by, decided_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (tenant_id, domain)
                 DO UPDATE SET decision = $3, decided_by = $4, decided_at = $5",
                &[
                    &tenant,
                    &entry.domain,
                    &decision,
                    &entry.decided_by,
                    &decided_at,
                ],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let removed = client
            .execute(
                "DELETE FROM sites WHERE tenant_id = $1 AND domain = $2",
                &[&tenant, &domain],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(removed > 0)
    }
}
