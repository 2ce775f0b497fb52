//! [`FrameStore`] on SQLite: the screenshots setting each run recorded as it started, its
//! replay frames, and the tenants' screenshots switch.
//!
//! A frame's metadata is kept in the clear (it never holds page text or values: a URL
//! without query or fragment, a host, an action kind). Its JPEG shows a page, so it is
//! sealed like sessions, bound to its tenant, run and sequence number: a frame copied onto
//! another row does not open. Without a key it is kept (in plaintext, marked) only where
//! plaintext is allowed (`--insecure-dev`, in memory); elsewhere it is refused.
//!
//! `put_frame` decides everything in one transaction: the run's recorded setting, the size
//! cap, the count cap and the sequence number, so that two writers never pass the cap or
//! share a number.

use abr_core::CoreError;
use abr_core::guard::{FrameRefused, FrameStore, MAX_FRAME_BYTES, MAX_FRAMES_PER_RUN, StoredFrame};
use abr_protocol::{FrameInfo, RunScreenshots, ScreenshotsMode};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use crate::codec::{RawInfo, decode_info, frame_aad, mode_of, name_of, timestamp};
use crate::{SqliteStore, StoreError};

/// The associated data binding a sealed JPEG to its row.
const INFO_COLUMNS: &str = "seq, point, url, domain, action, bytes, taken_at, same_as";

/// How many columns [`INFO_COLUMNS`] names: what a query adds after them starts here.
const INFO_LEN: usize = 8;

/// Columns as read, before decoding.
fn read_info(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawInfo> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
    ))
}

fn setting(
    conn: &Connection,
    tenant: &str,
    run_id: &str,
) -> Result<Option<RunScreenshots>, StoreError> {
    let row: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT screenshots, reason FROM frame_runs WHERE tenant_id = ?1 AND run_id = ?2",
            (tenant, run_id),
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    row.map(|(mode, reason)| {
        Ok(RunScreenshots {
            screenshots: mode_of(&mode)?,
            reason,
        })
    })
    .transpose()
}

#[async_trait]
impl FrameStore for SqliteStore {
    /// Keeps the first setting recorded for the run. A run recorded off is synced to disk:
    /// a power loss cannot turn a run that refused frames into one that takes them.
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        wanted: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError> {
        let mode = name_of(&wanted.screenshots, "a run's screenshots setting")?;
        let reason = wanted.reason.clone();
        let now = timestamp(time::OffsetDateTime::now_utc(), "the current time")?;
        let off = wanted.screenshots == ScreenshotsMode::Off;
        let (t, r) = (tenant.to_owned(), run_id.to_owned());
        Ok(self
            .with(move |conn| {
                let write = |conn: &mut Connection| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    tx.execute(
                        "INSERT OR IGNORE INTO frame_runs
                            (tenant_id, run_id, screenshots, reason, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        (&t, &r, &mode, &reason, &now),
                    )?;
                    let kept = setting(&tx, &t, &r)?.ok_or_else(|| {
                        StoreError::Database("a run's setting vanished as it was written".into())
                    })?;
                    tx.commit()?;
                    Ok(kept)
                };
                if off {
                    SqliteStore::synced(conn, write)
                } else {
                    write(conn)
                }
            })
            .await?)
    }

    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError> {
        let (t, r) = (tenant.to_owned(), run_id.to_owned());
        Ok(self.with(move |conn| setting(conn, &t, &r)).await?)
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
        let (t, r) = (tenant.to_owned(), run_id.to_owned());
        // The JPEG is sealed inside the transaction: its sequence number, bound to it, is
        // known only there.
        let sealer = self.sealer.clone();
        self.with(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            match setting(&tx, &t, &r)? {
                None => return Ok(Err(FrameRefused::UnknownRun)),
                Some(s) if s.screenshots != ScreenshotsMode::On => {
                    return Ok(Err(FrameRefused::ScreenshotsOff));
                }
                Some(_) => {}
            }
            if jpeg.len() > MAX_FRAME_BYTES {
                return Ok(Err(FrameRefused::TooLarge(MAX_FRAME_BYTES)));
            }
            let count: u32 = tx.query_row(
                "SELECT COUNT(*) FROM frames WHERE tenant_id = ?1 AND run_id = ?2",
                (&t, &r),
                |row| row.get(0),
            )?;
            if count >= MAX_FRAMES_PER_RUN {
                return Ok(Err(FrameRefused::TooMany(MAX_FRAMES_PER_RUN)));
            }
            let seq = count + 1;
            if let Some(same) = info.same_as
                && !(1..seq).contains(&same)
            {
                return Ok(Err(FrameRefused::NotEarlier(same)));
            }
            let (encrypted, sealed) = sealer.seal_payload(jpeg, &frame_aad(&t, &r, seq), true)?;
            tx.execute(
                "INSERT INTO frames (tenant_id, run_id, seq, point, url, domain, action, bytes,
                    taken_at, encrypted, jpeg, same_as)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                rusqlite::params![
                    &t,
                    &r,
                    seq,
                    &point,
                    &info.url,
                    &info.domain,
                    &info.action,
                    bytes,
                    &taken_at,
                    encrypted,
                    &sealed,
                    info.same_as,
                ],
            )?;
            tx.commit()?;
            Ok(Ok(seq))
        })
        .await
        .map_err(store_failed)?
    }

    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError> {
        let (t, r) = (tenant.to_owned(), run_id.to_owned());
        let rows = self
            .with(move |conn| {
                let mut statement = conn.prepare(&format!(
                    "SELECT {INFO_COLUMNS} FROM frames WHERE tenant_id = ?1 AND run_id = ?2
                     ORDER BY seq"
                ))?;
                let rows = statement
                    .query_map((&t, &r), read_info)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(decode_info)
            .collect::<Result<_, _>>()?)
    }

    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError> {
        let (t, r) = (tenant.to_owned(), run_id.to_owned());
        let row = self
            .with(move |conn| {
                let row = conn
                    .query_row(
                        &format!(
                            "SELECT {INFO_COLUMNS}, encrypted, jpeg FROM frames
                             WHERE tenant_id = ?1 AND run_id = ?2 AND seq = ?3"
                        ),
                        (&t, &r, seq),
                        |row| {
                            Ok((
                                read_info(row)?,
                                row.get::<_, bool>(INFO_LEN)?,
                                row.get::<_, Vec<u8>>(INFO_LEN + 1)?,
                            ))
                        },
                    )
                    .optional()?;
                Ok(row)
            })
            .await?;
        let Some((raw, encrypted, sealed)) = row else {
            return Ok(None);
        };
        let info = decode_info(raw)?;
        let jpeg =
            self.sealer
                .open_payload(encrypted, sealed, &frame_aad(tenant, run_id, seq), false)?;
        Ok(Some(StoredFrame { info, jpeg }))
    }

    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError> {
        let t = tenant.to_owned();
        Ok(self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT screenshots_enabled FROM tenant_settings WHERE tenant_id = ?1",
                        [&t],
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or(true))
            })
            .await?)
    }

    /// Synced to disk before it returns: a tenant that switched frames off stays off.
    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError> {
        let t = tenant.to_owned();
        self.with(move |conn| {
            SqliteStore::synced(conn, |conn| {
                conn.execute(
                    "INSERT INTO tenant_settings (tenant_id, screenshots_enabled) VALUES (?1, ?2)
                     ON CONFLICT (tenant_id) DO UPDATE SET screenshots_enabled = ?2",
                    (&t, enabled),
                )?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }
}
