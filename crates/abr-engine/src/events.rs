//! [`Events`]: every [`RunEvent`] of the engine, appended in order to the store's
//! [`EventLog`] (the outbox every replica of a fleet shares; with webhook deliveries when
//! they are on), read back by the tenant streams (`GET /v1/events` subscribes; a stream
//! follows the log, woken at once by this process's appends and polling for the other
//! replicas'), and handed to an in-process [`EventSink`]; and the stall watch: a run
//! that is running and made no progress for the configured time is reported `run_stalled`,
//! once per stall. A run that waits for a person (paused) is not stalled. Task runs are
//! watched; a browse session waits for its brain between actions (each bounded by its own
//! deadline), so it is not.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use abr_core::clock::Clock;
use abr_core::store::{EventLog, LoggedEvent};
use abr_protocol::RunEvent;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::keys::KeyWatch;

/// Where events go besides the log, in this process: a notifier. Events carry ids only.
pub trait EventSink: Send + Sync + 'static {
    /// Delivers one event (must not block: queue it).
    fn emit(&self, event: &RunEvent);
}

/// A run is stalled after 5 minutes without progress by default (`ABR_STALL_SECS`).
pub const DEFAULT_STALL: Duration = Duration::from_secs(300);

/// How often a stream looks at the log for events appended elsewhere (another replica's)
/// by default; this process's appends wake it at once.
pub const DEFAULT_EVENT_POLL: Duration = Duration::from_secs(1);

/// Events a stream reads from the log at once.
const READ_BATCH: usize = 64;

/// A run under the stall watch.
struct Watched {
    last: Instant,
    /// Waiting for a person: not stalled, however long.
    waiting: bool,
    /// `run_stalled` was sent since the last progress.
    reported: bool,
}

/// The engine's events.
pub(crate) struct Events {
    log: Arc<dyn EventLog>,
    /// Whether each event is to be delivered to the webhook (a delivery row per event).
    deliver: bool,
    poll: Duration,
    /// The appender's queue: one writer keeps this process's events in emission order.
    queue: OnceLock<Option<mpsc::UnboundedSender<RunEvent>>>,
    /// How many events this process appended (or gave up on): a stream waits on it.
    appended: Arc<watch::Sender<u64>>,
    /// How many events this process queued for the appender.
    queued: std::sync::atomic::AtomicU64,
    sink: Option<Arc<dyn EventSink>>,
    clock: Arc<dyn Clock>,
    stall_after: Duration,
    watched: Mutex<HashMap<(String, String), Watched>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("stall_after", &self.stall_after)
            .field("deliver", &self.deliver)
            .finish_non_exhaustive()
    }
}

/// Where [`Events`] keep what they emit, and how streams follow it.
#[derive(Clone)]
pub(crate) struct EventLogConfig {
    /// The log.
    pub(crate) log: Arc<dyn EventLog>,
    /// A webhook delivery per event.
    pub(crate) deliver: bool,
    /// How often a stream looks for other replicas' events.
    pub(crate) poll: Duration,
}

impl EventLogConfig {
    /// A log in memory, without deliveries (a task runner built alone).
    pub(crate) fn in_memory() -> Self {
        Self {
            log: Arc::new(abr_core::store::InMemoryEvents::default()),
            deliver: false,
            poll: DEFAULT_EVENT_POLL,
        }
    }
}

impl Events {
    /// Events kept in `log`, stamped by `clock`, sent to `sink` too when given; runs
    /// without progress for `stall_after` are reported stalled.
    pub(crate) fn new(
        log: EventLogConfig,
        sink: Option<Arc<dyn EventSink>>,
        clock: Arc<dyn Clock>,
        stall_after: Duration,
    ) -> Self {
        let (appended, _) = watch::channel(0);
        Self {
            log: log.log,
            deliver: log.deliver,
            poll: log.poll,
            queue: OnceLock::new(),
            appended: Arc::new(appended),
            queued: std::sync::atomic::AtomicU64::new(0),
            sink,
            clock,
            stall_after,
            watched: Mutex::new(HashMap::new()),
        }
    }

    /// Every event of `tenant` after the sequence `after`, or from now on (`None`).
    ///
    /// # Errors
    /// The log could not be read.
    pub(crate) async fn subscribe(
        &self,
        tenant: &str,
        after: Option<u64>,
    ) -> Result<TenantEvents, abr_core::CoreError> {
        let head = self.log.last_event(tenant).await?;
        // Resumed: what the retention forgot since `after` is told first, as missed (a
        // stream that only looked for the next event would not know of them).
        let (after, missed) = match after {
            None => (head, 0),
            // An id this log never gave (a database started over): from its head.
            Some(after) if after >= head => (head, 0),
            Some(after) => {
                let oldest = self
                    .log
                    .events_after(tenant, after, 1)
                    .await?
                    .first()
                    .map_or(head + 1, |e| e.seq);
                (oldest - 1, oldest - 1 - after)
            }
        };
        Ok(TenantEvents {
            tenant: tenant.to_owned(),
            log: Arc::clone(&self.log),
            after,
            last: after,
            buffer: VecDeque::new(),
            missed,
            wake: self.appended.subscribe(),
            poll: self.poll,
            holder: None,
        })
    }

    /// Waits (at most `limit`) until every event emitted so far is in the log: at shutdown,
    /// so that a replica that exits loses none of its runs' last events.
    pub(crate) async fn flush(&self, limit: Duration) {
        let queued = self.queued.load(std::sync::atomic::Ordering::SeqCst);
        let mut appended = self.appended.subscribe();
        let done = appended.wait_for(|n| *n >= queued);
        if tokio::time::timeout(limit, done).await.is_err() {
            tracing::warn!(queued, "exiting with run events not logged yet");
        }
    }

    /// The queue to the appender, started at the first event (inside the runtime).
    fn queue(&self) -> Option<&mpsc::UnboundedSender<RunEvent>> {
        self.queue
            .get_or_init(|| {
                let runtime = tokio::runtime::Handle::try_current().ok()?;
                let (tx, rx) = mpsc::unbounded_channel();
                runtime.spawn(append_all(
                    rx,
                    Arc::clone(&self.log),
                    self.deliver,
                    Arc::clone(&self.appended),
                ));
                Some(tx)
            })
            .as_ref()
    }

    /// The time events are stamped with.
    pub(crate) fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Watched>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `event` to the streams and the sink, and keeps the stall watch: `run_ended`
    /// stops watching the run, a takeover required makes it wait for a person, any other
    /// event of a watched run is progress.
    pub(crate) fn emit(&self, event: RunEvent) {
        let key = (event.tenant_id.clone(), event.run_id.clone());
        match event.event.as_str() {
            "run_ended" => {
                self.watched().remove(&key);
            }
            "run_stalled" => {}
            name => {
                if let Some(w) = self.watched().get_mut(&key) {
                    w.last = Instant::now();
                    w.reported = false;
                    w.waiting = matches!(name, "takeover_required" | "takeover_active")
                        || (name == "approval_required");
                }
            }
        }
        if let Some(sink) = &self.sink {
            sink.emit(&event);
        }
        match self.queue() {
            // The appender ends only with the runtime.
            Some(queue) => {
                if queue.send(event).is_ok() {
                    self.queued
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            None => tracing::error!(
                event = %event.event,
                run_id = %event.run_id,
                "an event emitted outside the runtime is not logged"
            ),
        }
    }

    /// A run started: it is watched for stalls until its `run_ended`.
    pub(crate) fn started(&self, tenant: &str, run_id: &str) {
        self.watched().insert(
            (tenant.to_owned(), run_id.to_owned()),
            Watched {
                last: Instant::now(),
                waiting: false,
                reported: false,
            },
        );
    }

    /// Reports every watched run without progress for the stall time, once per stall.
    pub(crate) fn check_stalls(&self) {
        let now = Instant::now();
        let stalled: Vec<_> = self
            .watched()
            .iter_mut()
            .filter(|(_, w)| {
                !w.waiting && !w.reported && now.duration_since(w.last) >= self.stall_after
            })
            .map(|(key, w)| {
                w.reported = true;
                (key.clone(), now.duration_since(w.last))
            })
            .collect();
        for ((tenant, run_id), idle) in stalled {
            tracing::warn!(run_id = %run_id, idle_secs = idle.as_secs(), "a run stalled");
            self.emit(RunEvent {
                idle_secs: Some(idle.as_secs()),
                ..RunEvent::new("run_stalled", &tenant, &run_id, self.clock.now())
            });
        }
    }

    /// Checks for stalls every fraction of the stall time, until aborted.
    pub(crate) fn spawn_stall_watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let events = Arc::clone(self);
        let every =
            (self.stall_after / 5).clamp(Duration::from_millis(20), Duration::from_secs(15));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                events.check_stalls();
            }
        })
    }
}

/// The appender: this process's events into the log, in the order they were emitted.
/// An append that fails and may succeed later is retried (the events after it wait: their
/// order is kept); one that cannot succeed is logged and dropped.
async fn append_all(
    mut queue: mpsc::UnboundedReceiver<RunEvent>,
    log: Arc<dyn EventLog>,
    deliver: bool,
    appended: Arc<watch::Sender<u64>>,
) {
    while let Some(event) = queue.recv().await {
        let mut wait = Duration::from_millis(50);
        loop {
            match log.append_event(&event, deliver).await {
                Ok(_) => {
                    appended.send_modify(|n| *n += 1);
                    break;
                }
                Err(e) if e.is_retryable() => {
                    tracing::warn!(error = %e, event = %event.event, "an event was not logged yet; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
                Err(e) => {
                    tracing::error!(error = %e, event = %event.event, run_id = %event.run_id, "an event could not be logged");
                    appended.send_modify(|n| *n += 1);
                    break;
                }
            }
        }
    }
}

/// What [`TenantEvents::next`] answers.
#[derive(Debug)]
pub enum Received {
    /// The tenant's next event.
    Event(Arc<RunEvent>),
    /// This many of the tenant's events are gone from the log (kept past the retention)
    /// before the subscriber read them.
    Missed(u64),
    /// The engine is gone.
    Closed,
    /// The key that subscribed was revoked or expired: the subscription is over.
    Revoked,
}

/// One tenant's events, in the log's order, from a point in it; held by a key, for as long
/// as it stands.
pub struct TenantEvents {
    tenant: String,
    log: Arc<dyn EventLog>,
    /// The highest sequence read from the log.
    after: u64,
    /// The sequence of the last event answered.
    last: u64,
    buffer: VecDeque<LoggedEvent>,
    /// Events found missing before the buffer's first, not told yet.
    missed: u64,
    wake: watch::Receiver<u64>,
    poll: Duration,
    holder: Option<KeyWatch>,
}

impl std::fmt::Debug for TenantEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantEvents")
            .field("tenant", &self.tenant)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl TenantEvents {
    /// These events, for as long as `holder`'s key stands (then [`Received::Revoked`]).
    pub(crate) fn held_by(mut self, holder: KeyWatch) -> Self {
        self.holder = Some(holder);
        self
    }

    /// The sequence of the last event [`next`](Self::next) answered (at first: where the
    /// subscription started). A stream resumed after it (`Last-Event-ID`) misses nothing.
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// The next event of the tenant (another tenant's are never read).
    pub async fn next(&mut self) -> Received {
        let logged = next_logged(
            &self.tenant,
            &*self.log,
            &mut self.after,
            &mut self.last,
            &mut self.buffer,
            &mut self.missed,
            &mut self.wake,
            self.poll,
        );
        match &mut self.holder {
            // The key first: nothing is passed on after its revocation.
            Some(holder) => tokio::select! {
                biased;
                () = holder.ended() => Received::Revoked,
                received = logged => received,
            },
            None => logged.await,
        }
    }

    /// Waits for the next event of the run `run_id` (a step, a pause, its end) or for a sign
    /// that one may have been missed: `true`; `false` once the key that subscribed no longer
    /// stands. Never returns once the engine is gone: bound it with a timeout.
    pub async fn next_of(&mut self, run_id: &str) -> bool {
        loop {
            match self.next().await {
                Received::Event(event) if event.run_id == run_id => return true,
                Received::Event(_) => {}
                Received::Missed(_) => return true,
                Received::Revoked => return false,
                Received::Closed => std::future::pending::<()>().await,
            }
        }
    }
}

/// The next logged event after `after`: from the buffer, else read from the log, else
/// waited for (woken by this process's appends, polling for other replicas'). A read that
/// fails is tried again at the next poll. Cancel-safe: what was read stays buffered.
#[allow(
    clippy::too_many_arguments,
    reason = "the stream's fields, borrowed apart from its holder"
)]
async fn next_logged(
    tenant: &str,
    log: &dyn EventLog,
    after: &mut u64,
    last: &mut u64,
    buffer: &mut VecDeque<LoggedEvent>,
    missed: &mut u64,
    wake: &mut watch::Receiver<u64>,
    poll: Duration,
) -> Received {
    loop {
        if *missed > 0 {
            return Received::Missed(std::mem::take(missed));
        }
        if let Some(logged) = buffer.pop_front() {
            *last = logged.seq;
            return Received::Event(Arc::new(logged.event));
        }
        wake.borrow_and_update();
        match log.events_after(tenant, *after, READ_BATCH).await {
            Ok(events) if !events.is_empty() => {
                if let Some(first) = events.first() {
                    *missed = first.seq.saturating_sub(*after + 1);
                }
                if let Some(newest) = events.last() {
                    *after = newest.seq;
                }
                buffer.extend(events);
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "the event log could not be read; polling again"),
        }
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    return Received::Closed;
                }
            }
            () = tokio::time::sleep(poll) => {}
        }
    }
}
