//! [`ReplicaStatus`]: whether this runner is draining, whether its shared database answers
//! its heartbeats, and its node id in a fleet: what `/v1/ready` reports and what refuses new
//! work while draining (`replica`), set by the fleet membership (`fleet`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a replica says of itself beyond its engine's load.
#[derive(Debug)]
pub struct ReplicaStatus {
    draining: AtomicBool,
    database_reachable: AtomicBool,
    places: OnceLock<crate::placement::Places>,
}

impl Default for ReplicaStatus {
    fn default() -> Self {
        Self {
            draining: AtomicBool::new(false),
            database_reachable: AtomicBool::new(true),
            places: OnceLock::new(),
        }
    }
}

impl ReplicaStatus {
    /// Starts draining: no new work from now on.
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether it is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Whether the last heartbeat reached the shared database (always, without one).
    pub fn is_database_reachable(&self) -> bool {
        self.database_reachable.load(Ordering::SeqCst)
    }

    /// Records whether the last heartbeat reached the shared database.
    pub(crate) fn set_database_reachable(&self, reachable: bool) {
        self.database_reachable.store(reachable, Ordering::SeqCst);
    }

    /// Its node id, if it joined a fleet.
    pub fn node_id(&self) -> Option<&str> {
        self.places.get().map(crate::placement::Places::node_id)
    }

    /// Its place in a fleet: its node id, and where it writes down what lives in its memory
    /// (set once, when it joins).
    pub(crate) fn set_places(&self, places: crate::placement::Places) {
        let _ = self.places.set(places);
    }

    /// Its placements, if it joined a fleet.
    pub(crate) fn places(&self) -> Option<&crate::placement::Places> {
        self.places.get()
    }
}
