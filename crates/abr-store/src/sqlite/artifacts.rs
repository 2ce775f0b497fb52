//! A tenant's artifacts ([`ArtifactStore`]) on SQLite: the description as JSON, the bytes
//! sealed, bound to the tenant and the id. The quota is checked in the write's transaction.

use abr_core::CoreError;
use abr_core::store::{ArtifactPut, ArtifactQuota, ArtifactStore, ArtifactUsage, fits};
use abr_protocol::ArtifactInfo;
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};
use time::OffsetDateTime;

use crate::SqliteStore;
use crate::codec::{
    artifact_aad, artifact_info_json as info_json, artifact_info_of as info_of, unix_ns,
};

#[async_trait]
impl ArtifactStore for SqliteStore {
    /// Sealed, bound to its tenant and id; synced before it returns.
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError> {
        let aad = artifact_aad(tenant, &info.id);
        let (encrypted, sealed) = self.sealer.seal_payload(bytes, &aad, true)?;
        let (t, id, json) = (tenant.to_owned(), info.id.clone(), info_json(info)?);
        let size = i64::try_from(info.size).unwrap_or(i64::MAX);
        let created = unix_ns(info.created_at);
        let (size_u, quota_c) = (info.size, quota);
        Ok(self
            .with(move |conn| {
                SqliteStore::synced(conn, |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let (count, total): (i64, i64) = tx.query_row(
                        "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM artifacts
                         WHERE tenant_id = ?1",
                        [&t],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )?;
                    let usage = ArtifactUsage {
                        count: u64::try_from(count).unwrap_or(0),
                        bytes: u64::try_from(total).unwrap_or(0),
                    };
                    if !fits(usage, size_u, quota_c) {
                        return Ok(ArtifactPut::OverQuota);
                    }
                    tx.execute(
                        "INSERT INTO artifacts
                            (tenant_id, artifact_id, info, size, created_ns, body, encrypted)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        (&t, &id, &json, size, created, &sealed, encrypted),
                    )?;
                    tx.commit()?;
                    Ok(ArtifactPut::Kept)
                })
            })
            .await?)
    }

    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError> {
        let (t, i) = (tenant.to_owned(), id.to_owned());
        let json: Option<String> = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT info FROM artifacts WHERE tenant_id = ?1 AND artifact_id = ?2",
                        (&t, &i),
                        |r| r.get(0),
                    )
                    .optional()?)
            })
            .await?;
        Ok(json.as_deref().map(info_of).transpose()?)
    }

    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError> {
        let (t, i) = (tenant.to_owned(), id.to_owned());
        let row: Option<(String, Vec<u8>, bool)> = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT info, body, encrypted FROM artifacts
                         WHERE tenant_id = ?1 AND artifact_id = ?2",
                        (&t, &i),
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()?)
            })
            .await?;
        let Some((json, body, encrypted)) = row else {
            return Ok(None);
        };
        let aad = artifact_aad(tenant, id);
        let bytes = self.sealer.open_payload(encrypted, body, &aad, false)?;
        Ok(Some((info_of(&json)?, bytes)))
    }

    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError> {
        let t = tenant.to_owned();
        let rows: Vec<String> = self
            .with(move |conn| {
                let mut stmt = conn.prepare(
                    "SELECT info FROM artifacts WHERE tenant_id = ?1
                     ORDER BY created_ns DESC, artifact_id DESC",
                )?;
                let rows = stmt
                    .query_map([&t], |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()?;
                Ok(rows)
            })
            .await?;
        Ok(rows
            .iter()
            .map(|json| info_of(json))
            .collect::<Result<_, _>>()?)
    }

    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        let (t, i) = (tenant.to_owned(), id.to_owned());
        Ok(self
            .with(move |conn| {
                Ok(conn.execute(
                    "DELETE FROM artifacts WHERE tenant_id = ?1 AND artifact_id = ?2",
                    (&t, &i),
                )? > 0)
            })
            .await?)
    }

    async fn expire_artifacts(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let before = unix_ns(before);
        Ok(self
            .with(move |conn| {
                Ok(conn.execute("DELETE FROM artifacts WHERE created_ns < ?1", [before])? as u64)
            })
            .await?)
    }
}
