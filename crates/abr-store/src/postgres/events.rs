//! [`EventLog`] on PostgreSQL. A tenant's next number comes from its head row, taken with
//! an upsert in the transaction that inserts the event: the row lock makes a second writer
//! wait until the first commits, so no reader ever sees number n + 1 before n (a sequence
//! object would hand out numbers that commit out of order, and a reader following the
//! highest it saw would skip the late one for good). Deliveries are claimed with
//! `FOR UPDATE SKIP LOCKED`: racing replicas take different rows.

use std::time::Duration;

use abr_core::CoreError;
use abr_core::store::{Delivery, EventLog, LoggedEvent, Settle};
use abr_protocol::RunEvent;
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::codec::{column_int, decode_event, event_body, int_of, lease_end_ns, unix_ns};
use crate::{PgStore, StoreError};

#[async_trait]
impl EventLog for PgStore {
    async fn append_event(&self, event: &RunEvent, deliver: bool) -> Result<u64, CoreError> {
        let body = event_body(event)?;
        let at = unix_ns(event.at);
        let client = self.client().await?;
        // One statement, one transaction: the head's row lock is held until the event and
        // its delivery are committed.
        let row = client
            .query_one(
                "WITH head AS (
                     INSERT INTO event_heads (tenant_id, seq) VALUES ($1, 1)
                     ON CONFLICT (tenant_id) DO UPDATE SET seq = event_heads.seq + 1
                     RETURNING seq),
                 event AS (
                     INSERT INTO events (tenant_id, seq, at_ns, body)
                     SELECT $1, seq, $2, $3 FROM head RETURNING seq),
                 delivery AS (
                     INSERT INTO event_deliveries (tenant_id, seq, attempt, due_ns)
                     SELECT $1, seq, 0, $2 FROM head WHERE $4)
                 SELECT seq FROM event",
                &[&event.tenant_id, &at, &body, &deliver],
            )
            .await
            .map_err(StoreError::from)?;
        let seq: i64 = row.try_get(0).map_err(StoreError::from)?;
        Ok(int_of(seq))
    }

    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT seq, body FROM events WHERE tenant_id = $1 AND seq > $2
                 ORDER BY seq LIMIT $3",
                &[&tenant, &column_int(after), &column_int(limit as u64)],
            )
            .await
            .map_err(StoreError::from)?;
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let seq: i64 = row.try_get(0).map_err(StoreError::from)?;
            let body: String = row.try_get(1).map_err(StoreError::from)?;
            events.push(LoggedEvent {
                seq: int_of(seq),
                event: decode_event(&body)?,
            });
        }
        Ok(events)
    }

    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT seq FROM event_heads WHERE tenant_id = $1",
                &[&tenant],
            )
            .await
            .map_err(StoreError::from)?;
        let seq: i64 = row
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(StoreError::from)?
            .unwrap_or(0);
        Ok(int_of(seq))
    }

    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "WITH due AS (
                     SELECT tenant_id, seq FROM event_deliveries WHERE due_ns <= $1
                     ORDER BY due_ns, tenant_id, seq LIMIT $3
                     FOR UPDATE SKIP LOCKED),
                 claimed AS (
                     UPDATE event_deliveries d SET attempt = d.attempt + 1, due_ns = $2
                     FROM due WHERE d.tenant_id = due.tenant_id AND d.seq = due.seq
                     RETURNING d.tenant_id, d.seq, d.attempt)
                 SELECT c.tenant_id, c.seq, c.attempt, e.body
                 FROM claimed c JOIN events e ON e.tenant_id = c.tenant_id AND e.seq = c.seq
                 ORDER BY e.at_ns, c.tenant_id, c.seq",
                &[
                    &unix_ns(now),
                    &lease_end_ns(now, lease),
                    &column_int(limit as u64),
                ],
            )
            .await
            .map_err(StoreError::from)?;
        let mut claimed = Vec::with_capacity(rows.len());
        for row in rows {
            let tenant: String = row.try_get(0).map_err(StoreError::from)?;
            let seq: i64 = row.try_get(1).map_err(StoreError::from)?;
            let attempt: i64 = row.try_get(2).map_err(StoreError::from)?;
            let body: String = row.try_get(3).map_err(StoreError::from)?;
            claimed.push(Delivery {
                tenant,
                seq: int_of(seq),
                attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                event: decode_event(&body)?,
            });
        }
        Ok(claimed)
    }

    async fn settle_delivery(
        &self,
        tenant: &str,
        seq: u64,
        attempt: u32,
        how: Settle,
    ) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let (seq, attempt) = (column_int(seq), i64::from(attempt));
        let changed = match how {
            Settle::RetryAt(at) => {
                client
                    .execute(
                        "UPDATE event_deliveries SET due_ns = $4
                     WHERE tenant_id = $1 AND seq = $2 AND attempt = $3",
                        &[&tenant, &seq, &attempt, &unix_ns(at)],
                    )
                    .await
            }
            Settle::Delivered | Settle::GiveUp => {
                client
                    .execute(
                        "DELETE FROM event_deliveries
                     WHERE tenant_id = $1 AND seq = $2 AND attempt = $3",
                        &[&tenant, &seq, &attempt],
                    )
                    .await
            }
        }
        .map_err(StoreError::from)?;
        Ok(changed == 1)
    }

    async fn prune_events(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM events e WHERE e.at_ns < $1 AND NOT EXISTS (
                     SELECT 1 FROM event_deliveries d
                     WHERE d.tenant_id = e.tenant_id AND d.seq = e.seq)",
                &[&unix_ns(before)],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(n)
    }
}
