//! [`FrameStore`] on PostgreSQL: the screenshots setting each run recorded as it started,
//! its replay frames (the JPEG sealed, bound to its tenant, run and sequence number), and
//! the tenants' screenshots switch.
//!
//! `put_frame` decides everything in one transaction under the run's row lock (`FOR
//! UPDATE`): the run's recorded setting, the size cap, the count cap and the sequence
//! number, so that two writers, on one replica or two, never pass the cap or share a number.

use abr_core::CoreError;
use abr_core::guard::{FrameRefused, FrameStore, MAX_FRAME_BYTES, MAX_FRAMES_PER_RUN, StoredFrame};
use abr_protocol::{FrameInfo, RunScreenshots, ScreenshotsMode};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;

use crate::codec::{RawInfo, decode_info, frame_aad, mode_of, name_of, timestamp};
use crate::{PgStore, StoreError};

const INFO_COLUMNS: &str = "seq, point, url, domain, action, bytes, taken_at, same_as";

fn read_info(row: &tokio_postgres::Row) -> Result<RawInfo, StoreError> {
    let seq: i32 = row.try_get(0)?;
    let same_as: Option<i32> = row.try_get(7)?;
    Ok((
        u32::try_from(seq).map_err(|_| StoreError::Record("a frame's number".into()))?,
        row.try_get(1)?,
        row.try_get(2)?,
        row.try_get(3)?,
        row.try_get(4)?,
        row.try_get(5)?,
        row.try_get(6)?,
        same_as.and_then(|s| u32::try_from(s).ok()),
    ))
}

/// The run's recorded setting; with `lock`, its row is locked until the transaction ends.
async fn setting(
    client: &impl GenericClient,
    tenant: &str,
    run_id: &str,
    lock: bool,
) -> Result<Option<RunScreenshots>, StoreError> {
    let sql = if lock {
        "SELECT screenshots, reason FROM frame_runs WHERE tenant_id = $1 AND run_id = $2
         FOR UPDATE"
    } else {
        "SELECT screenshots, reason FROM frame_runs WHERE tenant_id = $1 AND run_id = $2"
    };
    let row = client.query_opt(sql, &[&tenant, &run_id]).await?;
    row.map(|row| {
        let mode: String = row.try_get(0)?;
        Ok(RunScreenshots {
            screenshots: mode_of(&mode)?,
            reason: row.try_get(1)?,
        })
    })
    .transpose()
}

#[async_trait]
impl FrameStore for PgStore {
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        wanted: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError> {
        let mode = name_of(&wanted.screenshots, "a run's screenshots setting")?;
        let now = timestamp(time::OffsetDateTime::now_utc(), "the current time")?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO frame_runs (tenant_id, run_id, screenshots, reason, created_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, run_id) DO NOTHING",
                &[&tenant, &run_id, &mode, &wanted.reason, &now],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(setting(&client, tenant, run_id, false)
            .await?
            .ok_or_else(|| {
                StoreError::Database("a run's setting vanished as it was written".into())
            })?)
    }

    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError> {
        let client = self.client().await?;
        Ok(setting(&client, tenant, run_id, false).await?)
    }

    async fn put_frame(
        &self,
        tenant: &str,
        run_id: &str,
        frame: StoredFrame,
    ) -> Result<u32, FrameRefused> {
        let store_failed = |e: StoreError| FrameRefused::Store(e.into());
        let StoredFrame { info, jpeg } = frame;
        let point = name_of(&info.point, "a frame's point").map_err(store_failed)?;
        let taken_at = timestamp(info.taken_at, "a frame's time").map_err(store_failed)?;
        let bytes = i64::try_from(jpeg.len()).unwrap_or(i64::MAX);
        let mut client = self.client().await.map_err(store_failed)?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| store_failed(e.into()))?;
        match setting(&tx, tenant, run_id, true)
            .await
            .map_err(store_failed)?
        {
            None => return Err(FrameRefused::UnknownRun),
            Some(s) if s.screenshots != ScreenshotsMode::On => {
                return Err(FrameRefused::ScreenshotsOff);
            }
            Some(_) => {}
        }
        if jpeg.len() > MAX_FRAME_BYTES {
            return Err(FrameRefused::TooLarge(MAX_FRAME_BYTES));
        }
        let count: i64 = tx
            .query_one(
                "SELECT COUNT(*) FROM frames WHERE tenant_id = $1 AND run_id = $2",
                &[&tenant, &run_id],
            )
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| store_failed(e.into()))?;
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        if count >= MAX_FRAMES_PER_RUN {
            return Err(FrameRefused::TooMany(MAX_FRAMES_PER_RUN));
        }
        let seq = count + 1;
        if let Some(same) = info.same_as
            && !(1..seq).contains(&same)
        {
            return Err(FrameRefused::NotEarlier(same));
        }
        let (encrypted, sealed) = self
            .sealer
            .seal_payload(jpeg, &frame_aad(tenant, run_id, seq), true)
            .map_err(store_failed)?;
        let seq_column = i32::try_from(seq).unwrap_or(i32::MAX);
        let same_as = info.same_as.and_then(|s| i32::try_from(s).ok());
        tx.execute(
            "INSERT INTO frames (tenant_id, run_id, seq, point, url, domain, action, bytes,
                taken_at, encrypted, jpeg, same_as)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &[
                &tenant,
                &run_id,
                &seq_column,
                &point,
                &info.url,
                &info.domain,
                &info.action,
                &bytes,
                &taken_at,
                &encrypted,
                &sealed,
                &same_as,
            ],
        )
        .await
        .map_err(|e| store_failed(e.into()))?;
        tx.commit().await.map_err(|e| store_failed(e.into()))?;
        Ok(seq)
    }

    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {INFO_COLUMNS} FROM frames WHERE tenant_id = $1 AND run_id = $2
                     ORDER BY seq"
                ),
                &[&tenant, &run_id],
            )
            .await
            .map_err(StoreError::from)?;
        let mut infos = Vec::with_capacity(rows.len());
        for row in &rows {
            infos.push(decode_info(read_info(row)?)?);
        }
        Ok(infos)
    }

    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError> {
        let Ok(seq_column) = i32::try_from(seq) else {
            return Ok(None);
        };
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {INFO_COLUMNS}, encrypted, jpeg FROM frames
                     WHERE tenant_id = $1 AND run_id = $2 AND seq = $3"
                ),
                &[&tenant, &run_id, &seq_column],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let info = decode_info(read_info(&row)?)?;
        let encrypted: bool = row.try_get(8).map_err(StoreError::from)?;
        let sealed: Vec<u8> = row.try_get(9).map_err(StoreError::from)?;
        let jpeg =
            self.sealer
                .open_payload(encrypted, sealed, &frame_aad(tenant, run_id, seq), false)?;
        Ok(Some(StoredFrame { info, jpeg }))
    }

    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT screenshots_enabled FROM tenant_settings WHERE tenant_id = $1",
                &[&tenant],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(match row {
            Some(row) => row.try_get(0).map_err(StoreError::from)?,
            None => true,
        })
    }

    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO tenant_settings (tenant_id, screenshots_enabled) VALUES ($1, $2)
                 ON CONFLICT (tenant_id) DO UPDATE SET screenshots_enabled = $2",
                &[&tenant, &enabled],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }
}
