//! This runner as a replica of a fleet on a shared PostgreSQL database
//! (`ABR_DATABASE_URL`): it registers under its node id (a new boot: what a previous
//! process under the same id left is nobody's now), beats its heartbeat every third of the
//! lease, and every lease, while it holds the fleet's sweep lease (one replica at a time),
//! ends what replicas whose heartbeat lapsed left unfinished and gives back their sessions,
//! exactly as a restart does (`Engine::recover`; the store answers only
//! the records no live replica holds). A replica whose heartbeat lapsed while it was paused
//! is fenced by the store: it marks nothing before a commit and writes no result.

use std::sync::{Arc, Weak};
use std::time::Duration;

use abr_core::context::TaskContext;
use abr_store::PgStore;

use crate::config::RunnerConfig;
use crate::runner::Runner;

/// The node id `config` names (`ABR_NODE_ID`), else `<hostname>:<port>`.
pub(crate) fn node_id(config: &RunnerConfig) -> String {
    if let Some(id) = &config.fleet.node_id {
        return id.clone();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "abr".to_owned());
    format!("{host}:{}", config.bind.port())
}

/// A replica's place in the fleet.
#[derive(Debug)]
pub(crate) struct Membership {
    store: Arc<PgStore>,
    node_id: String,
    address: Option<String>,
    lease: Duration,
}

impl Membership {
    /// Registers this process under its node id (its first heartbeat).
    ///
    /// # Errors
    /// The database could not be reached.
    pub(crate) async fn join(
        store: Arc<PgStore>,
        config: &RunnerConfig,
    ) -> Result<Self, abr_store::StoreError> {
        let membership = Self {
            store,
            node_id: node_id(config),
            address: Some(config.public_base()),
            lease: config.fleet.lease,
        };
        membership.beat(false).await?;
        tracing::info!(
            node = %membership.node_id,
            boot = membership.store.boot(),
            lease_secs = membership.lease.as_secs(),
            "joined the fleet"
        );
        Ok(membership)
    }

    /// Its node id.
    pub(crate) fn node_id(&self) -> &str {
        &self.node_id
    }

    async fn beat(&self, draining: bool) -> Result<(), abr_store::StoreError> {
        self.store
            .heartbeat(
                &self.node_id,
                self.address.as_deref(),
                env!("CARGO_PKG_VERSION"),
                draining,
            )
            .await
    }

    /// Beats and sweeps until the runner is gone.
    pub(crate) fn spawn<C: TaskContext>(
        self,
        runner: Weak<Runner<C>>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let every = (self.lease / 3).max(Duration::from_millis(500));
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut beats = 0u64;
            loop {
                tick.tick().await;
                let Some(runner) = runner.upgrade() else {
                    return;
                };
                let status = Arc::clone(runner.status());
                match self.beat(status.is_draining()).await {
                    Ok(()) => status.set_database_reachable(true),
                    Err(e) => {
                        status.set_database_reachable(false);
                        tracing::warn!(error = %e, "the heartbeat did not reach the database");
                    }
                }
                beats += 1;
                // Every lease, on one replica of the fleet at a time (the one holding the
                // sweep's lease row): end what lapsed replicas left. (Several at once would
                // still end each record once: a compare-and-swap.)
                if beats.is_multiple_of(3)
                    && self
                        .store
                        .hold_lease("sweep:recover", self.lease * 2)
                        .await
                        .unwrap_or(false)
                {
                    match runner.recover().await {
                        Ok(0) => {}
                        Ok(ended) => {
                            tracing::warn!(ended, "ended what a stopped replica left unfinished");
                        }
                        Err(e) => tracing::warn!(error = %e, "the fleet sweep failed"),
                    }
                }
            }
        })
    }
}

/// The fleet's sweep gate: a sweep runs on the replica holding its lease row (taken when
/// free or expired, renewed by its holder each run; held for two runs, so that a holder that
/// died is replaced after at most that).
#[derive(Debug)]
pub(crate) struct LeaseGate(pub(crate) Arc<PgStore>);

#[async_trait::async_trait]
impl abr_engine::SweepGate for LeaseGate {
    async fn may_sweep(&self, name: &str, every: Duration) -> bool {
        match self.0.hold_lease(name, every * 2).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(error = %e, sweep = name, "the sweep's lease could not be read: skipped");
                false
            }
        }
    }
}
