//! [`EventLog`] on SQLite: one writer at a time, so the head row numbers each tenant's
//! events in the order they commit.

use std::time::Duration;

use abr_core::CoreError;
use abr_core::store::{Delivery, EventLog, LoggedEvent, Settle};
use abr_protocol::RunEvent;
use async_trait::async_trait;
use rusqlite::TransactionBehavior;
use time::OffsetDateTime;

use crate::SqliteStore;
use crate::codec::{column_int, decode_event, event_body, int_of, lease_end_ns, unix_ns};

#[async_trait]
impl EventLog for SqliteStore {
    async fn append_event(&self, event: &RunEvent, deliver: bool) -> Result<u64, CoreError> {
        let body = event_body(event)?;
        let (tenant, at) = (event.tenant_id.clone(), unix_ns(event.at));
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let seq: i64 = tx.query_row(
                    "INSERT INTO event_heads (tenant_id, seq) VALUES (?1, 1)
                     ON CONFLICT (tenant_id) DO UPDATE SET seq = seq + 1
                     RETURNING seq",
                    [&tenant],
                    |r| r.get(0),
                )?;
                tx.execute(
                    "INSERT INTO events (tenant_id, seq, at_ns, body) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![tenant, seq, at, body],
                )?;
                if deliver {
                    tx.execute(
                        "INSERT INTO event_deliveries (tenant_id, seq, attempt, due_ns)
                         VALUES (?1, ?2, 0, ?3)",
                        rusqlite::params![tenant, seq, at],
                    )?;
                }
                tx.commit()?;
                Ok(int_of(seq))
            })
            .await?)
    }

    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError> {
        let (tenant, after, limit) = (
            tenant.to_owned(),
            column_int(after),
            column_int(limit as u64),
        );
        let rows = self
            .with(move |conn| {
                let mut stmt = conn.prepare_cached(
                    "SELECT seq, body FROM events WHERE tenant_id = ?1 AND seq > ?2
                     ORDER BY seq LIMIT ?3",
                )?;
                let rows = stmt
                    .query_map(rusqlite::params![tenant, after, limit], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|(seq, body)| {
                Ok(LoggedEvent {
                    seq: int_of(seq),
                    event: decode_event(&body)?,
                })
            })
            .collect::<Result<_, crate::StoreError>>()?)
    }

    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError> {
        let tenant = tenant.to_owned();
        Ok(self
            .with(move |conn| {
                let seq: Option<i64> = rusqlite::OptionalExtension::optional(conn.query_row(
                    "SELECT seq FROM event_heads WHERE tenant_id = ?1",
                    [&tenant],
                    |r| r.get(0),
                ))?;
                Ok(int_of(seq.unwrap_or(0)))
            })
            .await?)
    }

    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError> {
        let (now_ns, until) = (unix_ns(now), lease_end_ns(now, lease));
        let limit = column_int(limit as u64);
        let rows = self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let rows = {
                    let mut stmt = tx.prepare_cached(
                        "UPDATE event_deliveries SET attempt = attempt + 1, due_ns = ?2
                         WHERE rowid IN (
                             SELECT rowid FROM event_deliveries WHERE due_ns <= ?1
                             ORDER BY due_ns, tenant_id, seq LIMIT ?3)
                         RETURNING tenant_id, seq, attempt,
                             (SELECT body FROM events e
                              WHERE e.tenant_id = event_deliveries.tenant_id
                                AND e.seq = event_deliveries.seq)",
                    )?;
                    stmt.query_map(rusqlite::params![now_ns, until, limit], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, Option<String>>(3)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?
                };
                tx.commit()?;
                Ok(rows)
            })
            .await?;
        let mut claimed = Vec::with_capacity(rows.len());
        for (tenant, seq, attempt, body) in rows {
            // The event is kept while its delivery is pending: a row without one is damage.
            let body = body.ok_or_else(|| crate::StoreError::Record("event".into()))?;
            claimed.push(Delivery {
                tenant,
                seq: int_of(seq),
                attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                event: decode_event(&body)?,
            });
        }
        claimed.sort_by(|a, b| (a.event.at, &a.tenant, a.seq).cmp(&(b.event.at, &b.tenant, b.seq)));
        Ok(claimed)
    }

    async fn settle_delivery(
        &self,
        tenant: &str,
        seq: u64,
        attempt: u32,
        how: Settle,
    ) -> Result<bool, CoreError> {
        let (tenant, seq, attempt) = (tenant.to_owned(), column_int(seq), i64::from(attempt));
        Ok(self
            .with(move |conn| {
                let changed = match how {
                    Settle::RetryAt(at) => conn.execute(
                        "UPDATE event_deliveries SET due_ns = ?4
                         WHERE tenant_id = ?1 AND seq = ?2 AND attempt = ?3",
                        rusqlite::params![tenant, seq, attempt, unix_ns(at)],
                    )?,
                    Settle::Delivered | Settle::GiveUp => conn.execute(
                        "DELETE FROM event_deliveries
                         WHERE tenant_id = ?1 AND seq = ?2 AND attempt = ?3",
                        rusqlite::params![tenant, seq, attempt],
                    )?,
                };
                Ok(changed == 1)
            })
            .await?)
    }

    async fn prune_events(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let before = unix_ns(before);
        Ok(self
            .with(move |conn| {
                let n = conn.execute(
                    "DELETE FROM events WHERE at_ns < ?1 AND NOT EXISTS (
                         SELECT 1 FROM event_deliveries d
                         WHERE d.tenant_id = events.tenant_id AND d.seq = events.seq)",
                    [before],
                )?;
                Ok(n as u64)
            })
            .await?)
    }
}
