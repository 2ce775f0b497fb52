//! [`Retention`]: the background sweep that forgets evidence (replay frames, screenshots,
//! extracted data) `keep` after a run ended, through the store's [`EvidenceStore`]; records
//! keep their outcome and say when their evidence expired. Run events older than `keep` are
//! forgotten from the [`EventLog`] too (never one whose webhook delivery is pending).

use std::sync::Arc;
use std::time::Duration;

use abr_core::clock::Clock;
use abr_core::store::{EventLog, EvidenceStore, Expired};

use crate::error::EngineError;

/// Whether a background sweep may run now on this process: in a fleet, a sweep that must run
/// once per fleet runs on the replica that holds its lease (a row in the shared database,
/// not a session advisory lock); alone, always.
#[async_trait::async_trait]
pub trait SweepGate: Send + Sync + 'static {
    /// Whether the sweep `name`, run every `every`, runs here now (taking or renewing its
    /// lease). A gate that cannot tell answers `false`: the sweep is skipped this time.
    async fn may_sweep(&self, name: &str, every: Duration) -> bool;
}

/// How often the sweep runs (and once at start).
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// Evidence kept `keep`, swept on `clock`.
#[derive(Clone)]
pub(crate) struct Retention {
    store: Arc<dyn EvidenceStore>,
    events: Arc<dyn EventLog>,
    keep: Duration,
    clock: Arc<dyn Clock>,
}

impl Retention {
    pub(crate) fn new(
        store: Arc<dyn EvidenceStore>,
        events: Arc<dyn EventLog>,
        keep: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            events,
            keep,
            clock,
        }
    }

    /// One sweep: forgets what is older than `keep` now (evidence, then events).
    pub(crate) async fn sweep(&self) -> Result<Expired, EngineError> {
        let now = self.clock.now();
        let expired = self.store.expire_evidence(now - self.keep, now).await?;
        let events = self.events.prune_events(now - self.keep).await?;
        if events > 0 {
            tracing::info!(events, "old run events forgotten");
        }
        Ok(expired)
    }

    /// Sweeps now and every `every`, where `gate` lets it (once per fleet); a failed sweep is
    /// logged and tried again next time.
    pub(crate) fn spawn(
        self,
        every: Duration,
        gate: Option<std::sync::Arc<dyn SweepGate>>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Some(gate) = &gate
                    && !gate.may_sweep("sweep:retention", every).await
                {
                    continue;
                }
                match self.sweep().await {
                    Ok(e) if e != Expired::default() => {
                        tracing::info!(records = e.records, frames = e.frames, "evidence expired");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "the evidence sweep failed"),
                }
            }
        })
    }
}
