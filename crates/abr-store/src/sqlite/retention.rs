//! [`EvidenceStore`] on SQLite: one synced transaction forgets the frames of old runs, and
//! the extracted data, the screenshots and the steps' page facts (the element's name, the
//! page) of tasks that ended before the cutoff, stamping their records.
//!
//! Times are compared with SQLite's `julianday`, which reads the RFC 3339 instants the
//! records and frames are written with (any number of fractional digits, `Z` or an offset).

use abr_core::CoreError;
use abr_core::store::{EvidenceStore, Expired};
use async_trait::async_trait;
use rusqlite::TransactionBehavior;
use time::OffsetDateTime;

use crate::SqliteStore;
use crate::codec::{timestamp, unix_ns};

/// Ended tasks whose evidence is due: ended before `?1`, not expired yet.
const DUE: &str = "record ->> '$.finishedAt' IS NOT NULL
     AND julianday(record ->> '$.finishedAt') < julianday(?1)
     AND record ->> '$.evidenceExpiredAt' IS NULL";

#[async_trait]
impl EvidenceStore for SqliteStore {
    /// Synced to disk before it returns.
    async fn expire_evidence(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Expired, CoreError> {
        let before_ns = unix_ns(before);
        let before = timestamp(before, "the retention cutoff")?;
        let now = timestamp(now, "the current time")?;
        Ok(self
            .with(move |conn| {
                SqliteStore::synced(conn, |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    tx.execute(
                        &format!(
                            "DELETE FROM screenshots WHERE (tenant_id, task_id) IN
                                (SELECT tenant_id, task_id FROM tasks WHERE {DUE})"
                        ),
                        [&before],
                    )?;
                    let records = tx.execute(
                        &format!(
                            "UPDATE tasks SET version = version + 1,
                                record = json_set(
                                    json_remove(record, '$.extracted', '$.screenshots', '$.downloads'),
                                    '$.evidenceExpiredAt', ?2,
                                    '$.stepResults', json((
                                        SELECT json_group_array(
                                            json_remove(value, '$.target', '$.url'))
                                        FROM (SELECT value FROM json_each(record, '$.stepResults')
                                              ORDER BY key))))
                             WHERE {DUE}"
                        ),
                        (&before, &now),
                    )?;
                    let frames = tx.execute(
                        "DELETE FROM frames WHERE (tenant_id, run_id) IN
                            (SELECT tenant_id, run_id FROM frames GROUP BY tenant_id, run_id
                             HAVING max(julianday(taken_at)) < julianday(?1))",
                        [&before],
                    )?;
                    let artifacts =
                        tx.execute("DELETE FROM artifacts WHERE created_ns < ?1", [before_ns])?;
                    tx.commit()?;
                    Ok(Expired {
                        records: records as u64,
                        frames: frames as u64,
                        artifacts: artifacts as u64,
                    })
                })
            })
            .await?)
    }
}
