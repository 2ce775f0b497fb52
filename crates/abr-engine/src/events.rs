//! [`Events`]: every [`RunEvent`] of the engine, to the tenant streams (`GET /v1/events`
//! subscribes) and to an [`EventSink`] (the signed webhook), and the stall watch: a run
//! that is running and made no progress for the configured time is reported `run_stalled`,
//! once per stall. A run that waits for a person (paused) is not stalled. Task runs are
//! watched; a browse session waits for its brain between actions (each bounded by its own
//! deadline), so it is not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_core::clock::Clock;
use abr_protocol::RunEvent;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::keys::KeyWatch;

/// Where events go besides the tenant streams: a webhook, a notifier. Events carry ids only.
pub trait EventSink: Send + Sync + 'static {
    /// Delivers one event (must not block: queue it).
    fn emit(&self, event: &RunEvent);
}

/// A run is stalled after 5 minutes without progress by default (`ABR_STALL_SECS`).
pub const DEFAULT_STALL: Duration = Duration::from_secs(300);

/// Events a slow stream subscriber may lag behind before it misses some (it is told).
const STREAM_BUFFER: usize = 1024;

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
    stream: broadcast::Sender<Arc<RunEvent>>,
    sink: Option<Arc<dyn EventSink>>,
    clock: Arc<dyn Clock>,
    stall_after: Duration,
    watched: Mutex<HashMap<(String, String), Watched>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("stall_after", &self.stall_after)
            .finish_non_exhaustive()
    }
}

impl Events {
    /// Events stamped by `clock`, sent to `sink` too when given; runs without progress for
    /// `stall_after` are reported stalled.
    pub(crate) fn new(
        sink: Option<Arc<dyn EventSink>>,
        clock: Arc<dyn Clock>,
        stall_after: Duration,
    ) -> Self {
        let (stream, _) = broadcast::channel(STREAM_BUFFER);
        Self {
            stream,
            sink,
            clock,
            stall_after,
            watched: Mutex::new(HashMap::new()),
        }
    }

    /// Every event of `tenant` from now on.
    pub(crate) fn subscribe(&self, tenant: &str) -> TenantEvents {
        TenantEvents {
            tenant: tenant.to_owned(),
            events: self.stream.subscribe(),
            holder: None,
        }
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
        // No subscriber is not an error: the stream is for whoever listens now.
        let _ = self.stream.send(Arc::new(event));
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

/// What [`TenantEvents::next`] answers.
#[derive(Debug)]
pub enum Received {
    /// The tenant's next event.
    Event(Arc<RunEvent>),
    /// The subscriber fell this many events behind (of all tenants) and missed some.
    Missed(u64),
    /// The engine is gone.
    Closed,
    /// The key that subscribed was revoked or expired: the subscription is over.
    Revoked,
}

/// One tenant's events, from when it subscribed; held by a key, for as long as it stands.
#[derive(Debug)]
pub struct TenantEvents {
    tenant: String,
    events: broadcast::Receiver<Arc<RunEvent>>,
    holder: Option<KeyWatch>,
}

impl TenantEvents {
    /// These events, for as long as `holder`'s key stands (then [`Received::Revoked`]).
    pub(crate) fn held_by(mut self, holder: KeyWatch) -> Self {
        self.holder = Some(holder);
        self
    }

    /// The next event of the tenant (another tenant's are skipped).
    pub async fn next(&mut self) -> Received {
        loop {
            let received = match &mut self.holder {
                // The key first: nothing is passed on after its revocation.
                Some(holder) => tokio::select! {
                    biased;
                    () = holder.ended() => return Received::Revoked,
                    received = self.events.recv() => received,
                },
                None => self.events.recv().await,
            };
            match received {
                Ok(event) if event.tenant_id == self.tenant => return Received::Event(event),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => return Received::Missed(n),
                Err(broadcast::error::RecvError::Closed) => return Received::Closed,
            }
        }
    }

    /// Waits for the next event of the run `run_id` (a step, a pause, its end) or for a sign
    /// that one may have been missed (the subscriber fell behind): `true`; `false` once the
    /// key that subscribed no longer stands. Never returns once the engine is gone: bound it
    /// with a timeout.
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
