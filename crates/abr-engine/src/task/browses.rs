//! The open browse sessions of a runner ([`Browses`]): bounded, each with its tenant, idle
//! clock and what it holds ([`Open`]); and their bounds ([`BrowseConfig`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_core::context::TaskContext;
use abr_core::guard::SnapshotRequest;
use abr_core::provider::Lease;
use abr_core::scope::SessionScope;
use abr_core::store::StoredTask;
use abr_core::strategy::StrategyPolicy;
use tokio::time::Instant;

use crate::error::EngineError;
use crate::task::rails::Rails;

/// Bounds of browse sessions.
#[derive(Debug, Clone)]
pub(crate) struct BrowseConfig {
    /// Idle time after which a session is closed, when the request names none (300 s).
    pub default_idle: Duration,
    /// Longest idle time a request may ask for (one hour).
    pub max_idle: Duration,
    /// Most sessions open at once on this runner, all tenants together (8); each also
    /// counts against its tenant's concurrent sessions.
    pub max_open: usize,
    /// Deadline of one action (15 s).
    pub act_timeout: Duration,
}

impl Default for BrowseConfig {
    fn default() -> Self {
        Self {
            default_idle: Duration::from_secs(300),
            max_idle: Duration::from_secs(3600),
            max_open: 8,
            act_timeout: Duration::from_secs(15),
        }
    }
}

/// The open browse sessions of a runner.
pub(crate) struct Browses<C: TaskContext> {
    pub(super) open: Mutex<HashMap<String, Arc<Entry<C>>>>,
    /// Sessions open or opening: a slot is taken before anything starts, so that
    /// concurrent opens never pass [`BrowseConfig::max_open`].
    pub(super) slots: Arc<std::sync::atomic::AtomicUsize>,
    pub(crate) config: BrowseConfig,
}

impl<C: TaskContext> Default for Browses<C> {
    fn default() -> Self {
        Self {
            open: Mutex::new(HashMap::new()),
            slots: Arc::default(),
            config: BrowseConfig::default(),
        }
    }
}

/// One of the runner's browse slots, given back when dropped (the session ended, or did
/// not open).
pub(super) struct Slot(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl<C: TaskContext> Browses<C> {
    /// Takes a slot if fewer than `max_open` are taken, atomically.
    pub(super) fn take_slot(&self) -> Option<Slot> {
        let max = self.config.max_open;
        self.slots
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| (n < max).then_some(n + 1),
            )
            .ok()
            .map(|_| Slot(Arc::clone(&self.slots)))
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry<C>>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, tenant: &str, id: &str) -> Result<Arc<Entry<C>>, EngineError> {
        self.lock()
            .get(id)
            .filter(|e| e.tenant == tenant)
            .cloned()
            .ok_or(EngineError::BrowseNotFound)
    }
}

/// What ended a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    Closed,
    Idle,
    Shutdown,
    /// An approver rejected its committing action (their name).
    Rejected(String),
    /// Its takeover was ended by a person, or expired: the error the record keeps.
    TakeoverOver,
}

/// One open session: its tenant and idle clock outside the session's lock, so the sweeper
/// never waits for an action.
pub(super) struct Entry<C: TaskContext> {
    pub(super) tenant: String,
    pub(super) idle: Duration,
    /// Held while the session is open.
    pub(super) _slot: Slot,
    pub(super) last_used: Mutex<Instant>,
    pub(super) session: tokio::sync::Mutex<Option<Open<C>>>,
}

impl<C: TaskContext> Entry<C> {
    pub(super) fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    pub(super) fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }
}

/// What an open session holds.
pub(super) struct Open<C: TaskContext> {
    pub(super) task: StoredTask,
    pub(super) rails: Rails,
    pub(super) lease: Lease<C>,
    pub(super) snapshot: SnapshotRequest,
    /// `ref → (role, name)` of the last snapshot, for the record's step descriptions.
    pub(super) names: BTreeMap<String, (String, String)>,
    pub(super) policy: Option<StrategyPolicy>,
    pub(super) extra: Option<SessionScope>,
    pub(super) platform: String,
    pub(super) started: Instant,
    /// The action waiting for an approver, and the approved one not yet sent again.
    pub(super) approvals: crate::task::approvals::ActionApprovals,
    /// How long a pause waits for a person (`handoff`); `None`: pauses are reported only.
    pub(super) handoff_wait: Option<Duration>,
    /// The takeover a person resolves, while one is open.
    pub(super) handoff: Option<crate::handoff::PendingHandoff<C>>,
    /// The reference of the last action that failed on its control, and how many times in
    /// a row (twice: `stuck`).
    pub(super) failing: Option<(String, usize)>,
}
