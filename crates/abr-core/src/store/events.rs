//! [`EventLog`]: the durable outbox of run events. Every event a run emits on any replica is
//! appended here with a per-tenant sequence; a tenant's stream (`GET /v1/events`) on any
//! replica reads it in order; the events webhook is delivered from it, one replica per
//! delivery, with its retries kept in the store so that they survive the replica that
//! started them. [`InMemoryEvents`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use abr_protocol::RunEvent;
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreError;

/// An event as logged: its place in its tenant's sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    /// 1 for the tenant's first event, then one more for each.
    pub seq: u64,
    /// The event.
    pub event: RunEvent,
}

/// A webhook delivery claimed by one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The event's tenant and place: the delivery's identity.
    pub tenant: String,
    /// The event's sequence in its tenant.
    pub seq: u64,
    /// Which attempt this claim is (1 for the first); it fences the claim: only the claimer
    /// of this attempt can settle it.
    pub attempt: u32,
    /// The event.
    pub event: RunEvent,
}

/// How a claimed delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The receiver took it: it is never delivered again.
    Delivered,
    /// It failed; try again at this instant.
    RetryAt(OffsetDateTime),
    /// It failed for good (attempts spent, or the destination is refused).
    GiveUp,
}

/// Where run events are kept.
///
/// # Contract
/// - [`append_event`](Self::append_event) gives the event the next sequence of its tenant
///   (1, 2, 3, …: no gap, no repeat, however many writers append at once, on one replica or
///   several). A reader never sees a sequence before every smaller one of the tenant is
///   visible: [`events_after`](Self::events_after) answers a gapless run in order.
///   With `deliver`, a webhook delivery of the event is due at once, in the same write.
/// - [`events_after`](Self::events_after) answers the tenant's events with a sequence above
///   `after`, oldest first, at most `limit`; another tenant's never.
/// - [`last_event`](Self::last_event) is the tenant's highest sequence (0 before any).
/// - [`claim_deliveries`](Self::claim_deliveries) claims, for `lease`, up to `limit` due
///   deliveries that nobody holds (a claim whose lease lapsed is free again), oldest first,
///   each with its next attempt number; of racing claimers, each delivery goes to one.
/// - [`settle_delivery`](Self::settle_delivery) ends the claim of `attempt` and answers
///   `true` only if that claim still stood (not re-claimed after its lease lapsed):
///   [`Settle::Delivered`] and [`Settle::GiveUp`] end the delivery, [`Settle::RetryAt`]
///   makes it due again then.
/// - [`prune_events`](Self::prune_events) forgets events older than `before` (never one
///   whose delivery is still pending) and answers how many; sequences are never reused.
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Appends `event`; its sequence.
    async fn append_event(&self, event: &RunEvent, deliver: bool) -> Result<u64, CoreError>;

    /// The tenant's events after `after`, oldest first.
    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError>;

    /// The tenant's highest sequence.
    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError>;

    /// Claims due deliveries for `lease`.
    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError>;

    /// Settles a claim; whether it still stood.
    async fn settle_delivery(
        &self,
        tenant: &str,
        seq: u64,
        attempt: u32,
        how: Settle,
    ) -> Result<bool, CoreError>;

    /// Forgets events older than `before`; how many.
    async fn prune_events(&self, before: OffsetDateTime) -> Result<u64, CoreError>;
}

/// A pending delivery in memory.
#[derive(Debug, Clone, Copy)]
struct Pending {
    due: OffsetDateTime,
    attempt: u32,
}

#[derive(Debug, Default)]
struct Log {
    events: HashMap<String, BTreeMap<u64, RunEvent>>,
    heads: HashMap<String, u64>,
    pending: BTreeMap<(String, u64), Pending>,
}

/// A process-local [`EventLog`]: a restart forgets every event.
#[derive(Debug, Default)]
pub struct InMemoryEvents {
    log: Mutex<Log>,
}

impl InMemoryEvents {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `now + lease`, saturating.
fn later(now: OffsetDateTime, lease: Duration) -> OffsetDateTime {
    now.saturating_add(time::Duration::try_from(lease).unwrap_or(time::Duration::MAX))
}

#[async_trait]
impl EventLog for InMemoryEvents {
    async fn append_event(&self, event: &RunEvent, deliver: bool) -> Result<u64, CoreError> {
        let mut log = self.lock();
        let head = log.heads.entry(event.tenant_id.clone()).or_insert(0);
        *head += 1;
        let seq = *head;
        log.events
            .entry(event.tenant_id.clone())
            .or_default()
            .insert(seq, event.clone());
        if deliver {
            log.pending.insert(
                (event.tenant_id.clone(), seq),
                Pending {
                    due: event.at,
                    attempt: 0,
                },
            );
        }
        Ok(seq)
    }

    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError> {
        let log = self.lock();
        Ok(log
            .events
            .get(tenant)
            .map(|events| {
                events
                    .range(after.saturating_add(1)..)
                    .take(limit)
                    .map(|(seq, event)| LoggedEvent {
                        seq: *seq,
                        event: event.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError> {
        Ok(self.lock().heads.get(tenant).copied().unwrap_or(0))
    }

    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError> {
        let mut log = self.lock();
        let due: Vec<(String, u64)> = log
            .pending
            .iter()
            .filter(|(_, p)| p.due <= now)
            .take(limit)
            .map(|(k, _)| k.clone())
            .collect();
        let mut claimed = Vec::with_capacity(due.len());
        for (tenant, seq) in due {
            let Some(event) = log.events.get(&tenant).and_then(|e| e.get(&seq)).cloned() else {
                continue;
            };
            if let Some(p) = log.pending.get_mut(&(tenant.clone(), seq)) {
                p.attempt += 1;
                p.due = later(now, lease);
                claimed.push(Delivery {
                    tenant,
                    seq,
                    attempt: p.attempt,
                    event,
                });
            }
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
        let mut log = self.lock();
        let key = (tenant.to_owned(), seq);
        match log.pending.get_mut(&key) {
            Some(p) if p.attempt == attempt => {
                match how {
                    Settle::RetryAt(at) => p.due = at,
                    Settle::Delivered | Settle::GiveUp => {
                        log.pending.remove(&key);
                    }
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn prune_events(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let mut log = self.lock();
        let Log {
            events, pending, ..
        } = &mut *log;
        let mut pruned = 0;
        for (tenant, events) in events.iter_mut() {
            events.retain(|seq, e| {
                let keep = e.at >= before || pending.contains_key(&(tenant.clone(), *seq));
                if !keep {
                    pruned += 1;
                }
                keep
            });
        }
        Ok(pruned)
    }
}
