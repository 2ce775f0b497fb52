//! Where durable records live: the store contracts, and in-memory implementations for tests
//! and single-process embedders. `abr-store` implements them on SQLite; the conformance
//! suite (`testing::store`, feature `testing`) checks every implementation against them.
//!
//! - [`RecordStore`]: the one contract of a ledger's records ([`LedgerRecord`]: tasks and
//!   posts, each with its [`LedgerHeader`]: tenant, version, mark, retry): atomic insert
//!   with an idempotency key, compare-and-swap, the mark before the commit point, the
//!   unfinished records; [`InMemoryRecordStore`].
//! - [`CounterStore`]: per-tenant counters; [`ScreenshotStore`]: a task's screenshots.
//! - [`TaskStore`] and [`PostStore`]: what the task part and the post journal need, as
//!   bundles of the above; [`InMemoryStore`]: every contract in memory, in one object.
//! - [`EvidenceStore`]: evidence (frames, screenshots, extracted data) expires, outcomes
//!   stay.
//! - [`KeyStore`]: the API keys (digests of their tokens); [`InMemoryKeys`].
//! - [`LinkStore`]: one-time approval links (digests of their tokens); [`InMemoryLinks`].
//! - [`EventLog`]: run events with a per-tenant sequence, and the webhook's deliveries
//!   (claimed by one replica each, retried from the store); [`InMemoryEvents`].
//! - [`TaskQueue`]: queued tasks a fleet's replicas claim when they have a free slot (a
//!   shared store only).
//! - [`SessionStore`]: sessions kept between jobs, by [`SessionKey`] (a tenant's sessions
//!   stored by id are [`SessionKey::stored`]).

pub(crate) mod artifacts;
pub(crate) mod counters;
pub(crate) mod events;
pub(crate) mod keys;
pub(crate) mod links;
pub(crate) mod memory;
pub(crate) mod posts;
pub(crate) mod queue;
pub(crate) mod records;
pub(crate) mod retention;
pub(crate) mod screenshots;
pub(crate) mod sessions;
pub(crate) mod tasks;

pub use crate::artifact::ArtifactQuota;
pub use artifacts::{ArtifactPut, ArtifactStore, ArtifactUsage, InMemoryArtifacts, fits, usage_of};
pub use counters::{Counter, CounterStore, InMemoryCounters};
pub use events::{Delivery, EventLog, InMemoryEvents, LoggedEvent, Settle};
pub use keys::{InMemoryKeys, KeyStore, RunnerLink, StoredKey};
pub use links::{InMemoryLinks, LinkStore, StoredLink};
pub use memory::InMemoryStore;
pub use posts::{InMemoryPostStore, PostStore, StoredPost};
pub use queue::TaskQueue;
pub use records::{
    IdempotencyKey, InMemoryRecordStore, Inserted, LedgerHeader, LedgerRecord, ListQuery, Listed,
    MAX_PAGE, RecordStore, StateCount, bad_cursor, parse_cursor, wire_name,
};
pub use retention::{EvidenceStore, Expired};
pub use screenshots::{InMemoryScreenshots, ScreenshotStore};
pub use sessions::{InMemorySessionStore, STORED_SESSION_PLATFORM, SessionKey, SessionStore};
pub use tasks::{NO_PLATFORM, StoredTask, TaskStore};
