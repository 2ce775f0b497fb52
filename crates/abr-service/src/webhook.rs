//! The events webhook (`ABR_EVENTS_WEBHOOK`), delivered from the store's outbox: every run
//! event is logged with a pending delivery in the same write
//! ([`EventLog::append_event`]), and each replica's [`Deliverer`] claims due deliveries
//! for a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL: one replica per delivery), posts
//! them signed ([`abr_protocol::webhook`]: `abr-signature` with a fresh timestamp on every
//! attempt, the same `abr-delivery` id on all of them), and settles them: delivered, retried
//! later with backoff, or given up (attempts spent, or a destination the egress policy
//! refuses). A replica that dies holding a claim leaves it to lapse: another replica makes
//! the next attempt. A late settle of a lapsed claim is refused by the store (the attempt
//! fences it), so a slow replica cannot undo the next one's work. Failures are logged
//! without the URL; a slow or failing webhook never holds a run.

use std::sync::Arc;
use std::time::Duration;

use abr_core::store::{Delivery, EventLog, Settle};
use abr_core::{EgressPolicy, RandomSource as _};
use sha2::Digest as _;
use url::Url;

use crate::callback::{CallbackError, post_bytes};
use crate::config::RunnerConfig;

/// Attempts of one webhook delivery (the first and four retries).
const ATTEMPTS: u32 = 5;
/// The first retry's longest delay, doubled each time (0.5, 1, 2, 4 s), with full jitter.
const BACKOFF: Duration = Duration::from_millis(500);
/// How long a claim holds: longer than one attempt can take (the POST's 10 s timeout).
const CLAIM: Duration = Duration::from_secs(30);
/// How often a replica looks for due deliveries.
const EVERY: Duration = Duration::from_millis(200);
/// Deliveries a replica claims at once (posted concurrently).
const BATCH: usize = 16;

/// Delivers the webhook's due deliveries from the log.
pub(crate) struct Deliverer {
    log: Arc<dyn EventLog>,
    egress: EgressPolicy,
    url: Url,
    secret: abr_protocol::SecretValue,
    /// How long its claims hold.
    claim: Duration,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer").finish_non_exhaustive()
    }
}

/// The running deliverer: stopped when dropped.
#[derive(Debug)]
pub(crate) struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Deliverer {
    /// The deliverer of the webhook `config` names (`ABR_EVENTS_WEBHOOK`, signed with
    /// `ABR_EVENTS_WEBHOOK_SECRET`), if any, from `log`.
    pub(crate) fn configured(config: &RunnerConfig, log: Arc<dyn EventLog>) -> Option<Self> {
        Some(Self {
            log,
            egress: config.egress.clone(),
            url: config.tasks.events_webhook.clone()?,
            secret: config.tasks.events_webhook_secret.clone()?,
            claim: CLAIM,
        })
    }

    /// Claims and delivers until dropped. Must be called inside a tokio runtime.
    pub(crate) fn spawn(self) -> Running {
        let me = Arc::new(self);
        Running(tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let claimed = match me
                    .log
                    .claim_deliveries(time::OffsetDateTime::now_utc(), me.claim, BATCH)
                    .await
                {
                    Ok(claimed) => claimed,
                    Err(e) => {
                        tracing::warn!(error = %e, "the webhook's deliveries could not be claimed");
                        continue;
                    }
                };
                let full = claimed.len() == BATCH;
                futures::future::join_all(claimed.into_iter().map(|d| me.deliver(d))).await;
                if full {
                    // More may be due: look again without waiting for the tick.
                    tick.reset_immediately();
                }
            }
        }))
    }

    /// One attempt of `delivery`, then its settlement.
    async fn deliver(&self, delivery: Delivery) {
        let how = match self.attempt(&delivery).await {
            Ok(()) => Settle::Delivered,
            Err(e @ CallbackError::Refused(_)) => {
                tracing::warn!(event = %delivery.event.event, run_id = %delivery.event.run_id, error = %e, "the events webhook is refused; not retried");
                Settle::GiveUp
            }
            Err(e) if delivery.attempt >= ATTEMPTS => {
                tracing::warn!(event = %delivery.event.event, run_id = %delivery.event.run_id, attempts = delivery.attempt, error = %e, "the events webhook was not delivered");
                Settle::GiveUp
            }
            Err(e) => {
                tracing::debug!(attempt = delivery.attempt, error = %e, "the events webhook failed; retrying");
                Settle::RetryAt(time::OffsetDateTime::now_utc() + backoff(delivery.attempt))
            }
        };
        match self
            .log
            .settle_delivery(&delivery.tenant, delivery.seq, delivery.attempt, how)
            .await
        {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                run_id = %delivery.event.run_id,
                "a webhook delivery's claim lapsed before it was settled; another replica has it"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "a webhook delivery could not be settled; it will be tried again")
            }
        }
    }

    async fn attempt(&self, delivery: &Delivery) -> Result<(), CallbackError> {
        use abr_protocol::webhook::{DELIVERY_HEADER, SIGNATURE_HEADER, sign};
        let body = serde_json::to_vec(&delivery.event)
            .map_err(|e| CallbackError::Failed(e.to_string()))?;
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let headers = [
            (
                SIGNATURE_HEADER,
                sign(self.secret.expose().as_bytes(), now, &body),
            ),
            (DELIVERY_HEADER, delivery_id(delivery)),
        ];
        post_bytes(&self.egress, &self.url, body, &headers).await
    }
}

/// The wait before the retry after attempt `attempt` (1 for the first): full jitter up to
/// `BACKOFF` doubled per attempt, at least 50 ms.
fn backoff(attempt: u32) -> time::Duration {
    let cap = BACKOFF.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    let cap = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX).max(1);
    let wait = abr_core::OsRandom.next_u64() % cap;
    time::Duration::milliseconds(i64::try_from(wait.max(50)).unwrap_or(i64::MAX))
}

/// The delivery's id, the same on every attempt and every replica: a digest of the event's
/// tenant, sequence and time (a database started over numbers from 1 again; its events'
/// times differ).
fn delivery_id(delivery: &Delivery) -> String {
    let mut hash = sha2::Sha256::new();
    for part in [
        delivery.tenant.as_bytes(),
        &delivery.seq.to_be_bytes(),
        &delivery.event.at.unix_timestamp_nanos().to_be_bytes(),
    ] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("dlv_{hex}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::net::SocketAddr;
    use std::sync::Mutex;

    use abr_core::store::InMemoryEvents;
    use abr_protocol::RunEvent;

    use super::*;

    const SECRET: &str = "webhook-test-secret";

    /// A receiver that verifies each delivery's signature and keeps (id, body) of each.
    async fn receiver() -> (SocketAddr, Arc<Mutex<Vec<(String, RunEvent)>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&got);
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let kept = Arc::clone(&kept);
                    async move {
                        use abr_protocol::webhook::{DELIVERY_HEADER, SIGNATURE_HEADER, verify};
                        let header = |name: &str| {
                            headers
                                .get(name)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let now = time::OffsetDateTime::now_utc().unix_timestamp();
                        if verify(SECRET.as_bytes(), &header(SIGNATURE_HEADER), &body, now, 60)
                            .is_err()
                        {
                            return axum::http::StatusCode::UNAUTHORIZED;
                        }
                        let event: RunEvent = serde_json::from_slice(&body).unwrap();
                        kept.lock().unwrap().push((header(DELIVERY_HEADER), event));
                        axum::http::StatusCode::NO_CONTENT
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (addr, got)
    }

    /// A deliverer of `log` to the receiver at `addr` (allowed by its egress policy).
    fn to_receiver(addr: SocketAddr, log: &Arc<InMemoryEvents>) -> Deliverer {
        Deliverer {
            log: Arc::clone(log) as Arc<dyn EventLog>,
            egress: EgressPolicy::new().allow_addr(addr),
            url: Url::parse(&format!("http://{addr}/hook")).unwrap(),
            secret: abr_protocol::SecretValue::new(SECRET),
            claim: CLAIM,
        }
    }

    /// A replica claimed a delivery and died before it settled it: once the claim lapses,
    /// another replica's deliverer delivers it, once, under the same delivery id, and the
    /// dead replica's late settle is refused.
    #[tokio::test]
    async fn a_delivery_claimed_by_a_replica_that_died_is_delivered_by_another() {
        let (addr, got) = receiver().await;
        let log = Arc::new(InMemoryEvents::default());
        let event = RunEvent::new(
            "run_ended",
            "acme",
            "task_1",
            time::OffsetDateTime::now_utc(),
        );
        let seq = log.append_event(&event, true).await.unwrap();
        // The replica that dies: its claim, never settled.
        let dead = log
            .claim_deliveries(
                time::OffsetDateTime::now_utc(),
                Duration::from_millis(300),
                10,
            )
            .await
            .unwrap();
        assert_eq!(dead.len(), 1);
        let id_of_dead_attempt = delivery_id(&dead[0]);
        let deliverer = to_receiver(addr, &log).spawn();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            got.lock().unwrap().is_empty(),
            "delivered while the claim held"
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while got.lock().unwrap().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "never delivered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let got = got.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![(id_of_dead_attempt, event)],
            "delivered once, same id"
        );
        assert!(
            !log.settle_delivery("acme", seq, 1, Settle::Delivered)
                .await
                .unwrap(),
            "the dead replica's late settle is refused"
        );
        assert!(
            log.claim_deliveries(
                time::OffsetDateTime::now_utc() + time::Duration::HOUR,
                CLAIM,
                10
            )
            .await
            .unwrap()
            .is_empty(),
            "nothing left to deliver"
        );
        drop(deliverer);
    }

    /// A receiver that keeps failing gets the first attempt and four retries, then the
    /// delivery is given up: nothing is left due.
    #[tokio::test]
    async fn a_delivery_that_keeps_failing_is_given_up_after_five_attempts() {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&hits);
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap| {
                let kept = Arc::clone(&kept);
                async move {
                    let id = headers
                        .get(abr_protocol::webhook::DELIVERY_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    kept.lock().unwrap().push(id);
                    axum::http::StatusCode::SERVICE_UNAVAILABLE
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let log = Arc::new(InMemoryEvents::default());
        let event = RunEvent::new(
            "run_ended",
            "acme",
            "task_2",
            time::OffsetDateTime::now_utc(),
        );
        log.append_event(&event, true).await.unwrap();
        let deliverer = to_receiver(addr, &log).spawn();
        // 0.5 + 1 + 2 + 4 s of backoff at most, and the ticks.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(12);
        while hits.lock().unwrap().len() < 5 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}",
                hits.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let hits = hits.lock().unwrap().clone();
        assert_eq!(hits.len(), 5, "five attempts, no more: {hits:?}");
        assert!(
            hits.iter()
                .all(|id| *id == hits[0] && id.starts_with("dlv_"))
        );
        assert!(
            log.claim_deliveries(
                time::OffsetDateTime::now_utc() + time::Duration::HOUR,
                CLAIM,
                10
            )
            .await
            .unwrap()
            .is_empty(),
            "given up: nothing left due"
        );
        drop(deliverer);
    }
}
