//! A tenant's artifacts ([`ArtifactStore`]) on PostgreSQL: the description as JSON, the
//! bytes sealed, bound to the tenant and the id. The quota is checked in the write's
//! transaction, under a lock of the tenant's artifacts (`pg_advisory_xact_lock`), so that
//! replicas putting at once cannot pass it together.

use abr_core::CoreError;
use abr_core::store::{ArtifactPut, ArtifactQuota, ArtifactStore, ArtifactUsage, fits};
use abr_protocol::ArtifactInfo;
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::codec::{
    artifact_aad, artifact_info_json as info_json, artifact_info_of as info_of, unix_ns,
};
use crate::{PgStore, StoreError};

#[async_trait]
impl ArtifactStore for PgStore {
    /// Sealed, bound to its tenant and id.
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError> {
        let aad = artifact_aad(tenant, &info.id);
        let (encrypted, sealed) = self.sealer.seal_payload(bytes, &aad, true)?;
        let json = info_json(info)?;
        let size = i64::try_from(info.size).unwrap_or(i64::MAX);
        let created = unix_ns(info.created_at);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(StoreError::from)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext('artifacts:' || $1))",
            &[&tenant],
        )
        .await
        .map_err(StoreError::from)?;
        let row = tx
            .query_one(
                "SELECT COUNT(*), COALESCE(SUM(size), 0)::BIGINT FROM artifacts
                 WHERE tenant_id = $1",
                &[&tenant],
            )
            .await
            .map_err(StoreError::from)?;
        let count: i64 = row.try_get(0).map_err(StoreError::from)?;
        let total: i64 = row.try_get(1).map_err(StoreError::from)?;
        let usage = ArtifactUsage {
            count: u64::try_from(count).unwrap_or(0),
            bytes: u64::try_from(total).unwrap_or(0),
        };
        if !fits(usage, info.size, quota) {
            return Ok(ArtifactPut::OverQuota);
        }
        tx.execute(
            "INSERT INTO artifacts
                (tenant_id, artifact_id, info, size, created_ns, body, encrypted)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &tenant, &info.id, &json, &size, &created, &sealed, &encrypted,
            ],
        )
        .await
        .map_err(StoreError::from)?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(ArtifactPut::Kept)
    }

    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT info FROM artifacts WHERE tenant_id = $1 AND artifact_id = $2",
                &[&tenant, &id],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let json: String = row.try_get(0).map_err(StoreError::from)?;
        Ok(Some(info_of(&json)?))
    }

    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT info, body, encrypted FROM artifacts
                 WHERE tenant_id = $1 AND artifact_id = $2",
                &[&tenant, &id],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let json: String = row.try_get(0).map_err(StoreError::from)?;
        let body: Vec<u8> = row.try_get(1).map_err(StoreError::from)?;
        let encrypted: bool = row.try_get(2).map_err(StoreError::from)?;
        let aad = artifact_aad(tenant, id);
        let bytes = self.sealer.open_payload(encrypted, body, &aad, false)?;
        Ok(Some((info_of(&json)?, bytes)))
    }

    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT info FROM artifacts WHERE tenant_id = $1
                 ORDER BY created_ns DESC, artifact_id DESC",
                &[&tenant],
            )
            .await
            .map_err(StoreError::from)?;
        let mut infos = Vec::with_capacity(rows.len());
        for row in rows {
            let json: String = row.try_get(0).map_err(StoreError::from)?;
            infos.push(info_of(&json)?);
        }
        Ok(infos)
    }

    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let gone = client
            .execute(
                "DELETE FROM artifacts WHERE tenant_id = $1 AND artifact_id = $2",
                &[&tenant, &id],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(gone > 0)
    }

    async fn expire_artifacts(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let client = self.client().await?;
        let gone = client
            .execute(
                "DELETE FROM artifacts WHERE created_ns < $1",
                &[&unix_ns(before)],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(gone)
    }
}
