//! Evidence retention ([`EvidenceStore`]) on PostgreSQL: in one transaction, a finished
//! task's screenshots are deleted and its record loses its extracted data, its screenshot
//! names and its steps' page facts (the element's name, the page; its outcome and steps
//! stay), and the frames of runs whose last frame is older than the
//! cutoff go.

use abr_core::CoreError;
use abr_core::store::{EvidenceStore, Expired};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::codec::{timestamp, unix_ns};
use crate::{PgStore, StoreError};

const DUE: &str = "record ->> 'finishedAt' IS NOT NULL
     AND (record ->> 'finishedAt')::timestamptz < $1::text::timestamptz
     AND record ->> 'evidenceExpiredAt' IS NULL";

#[async_trait]
impl EvidenceStore for PgStore {
    async fn expire_evidence(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Expired, CoreError> {
        let before_ns = unix_ns(before);
        let before = timestamp(before, "the retention cutoff")?;
        let now = timestamp(now, "the current time")?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(StoreError::from)?;
        tx.execute(
            &format!(
                "DELETE FROM screenshots WHERE (tenant_id, task_id) IN
                    (SELECT tenant_id, task_id FROM tasks WHERE {DUE})"
            ),
            &[&before],
        )
        .await
        .map_err(StoreError::from)?;
        let records = tx
            .execute(
                &format!(
                    "UPDATE tasks SET version = version + 1,
                        record = (record - 'extracted' - 'screenshots' - 'downloads')
                            || jsonb_build_object(
                                'evidenceExpiredAt', $2::text,
                                'stepResults', COALESCE(
                                    (SELECT jsonb_agg(step - 'target' - 'url' ORDER BY i)
                                     FROM jsonb_array_elements(record -> 'stepResults')
                                        WITH ORDINALITY AS s(step, i)),
                                    '[]'::jsonb))
                     WHERE {DUE}"
                ),
                &[&before, &now],
            )
            .await
            .map_err(StoreError::from)?;
        let frames = tx
            .execute(
                "DELETE FROM frames WHERE (tenant_id, run_id) IN
                    (SELECT tenant_id, run_id FROM frames GROUP BY tenant_id, run_id
                     HAVING max(taken_at::timestamptz) < $1::text::timestamptz)",
                &[&before],
            )
            .await
            .map_err(StoreError::from)?;
        let artifacts = tx
            .execute("DELETE FROM artifacts WHERE created_ns < $1", &[&before_ns])
            .await
            .map_err(StoreError::from)?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(Expired {
            records,
            frames,
            artifacts,
        })
    }
}
