//! ABR's durable records on an embedded SQLite database.
//!
//! One file (under `ABR_DATA_DIR`) holds what must survive a restart or a `kill -9`:
//! sessions (encrypted at rest, [`SealingKey`]), and the records of tasks, idempotency keys
//! and per-tenant counters; replay frames (their JPEGs encrypted like sessions) with the
//! screenshots setting each run recorded, the tenants' screenshots switch, their site
//! decisions, and the API keys (digests of their tokens). It implements the core's store traits, so a shared database can replace it
//! behind the same traits.
//!
//! Durability: write-ahead logging. Every write is one transaction, and a write that
//! returned survives a killed process (`kill -9`). The writes that must also survive a power
//! loss are synced to disk before they return (`synchronous=FULL` for them, `NORMAL`
//! otherwise): the mark a task saves before a committing step starts and the one a post
//! saves before its submit, and every ending; a site decision, a change of the screenshots
//! switch, and a run recorded with screenshots off. A power loss may lose progress written
//! between them, never a mark: an interrupted task or post is still recovered `uncertain`
//! when something committing may have run.

mod codec;
mod crypto;
mod ledger;
mod postgres;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use crypto::SealingKey;
pub use postgres::{
    DEFAULT_LEASE, DEFAULT_POOL_SIZE, NodeState, PgStore, Placed, PlacementKind, RelayGrant,
};
pub use sqlite::SqliteStore;

use abr_core::error::store::{StoreFailure, StoreFailureKind};

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened, read or written.
    #[error("the store's database failed: {0}")]
    Database(String),
    /// The database is locked by another writer now.
    #[error("the store's database is busy: {0}")]
    Busy(String),
    /// A write broke one of the database's constraints (a key taken, a bound crossed).
    #[error("the store refused a write: {0}")]
    Constraint(String),
    /// The database file is damaged or not a database.
    #[error("the store's database is damaged: {0}")]
    Damaged(String),
    /// `ABR_SESSION_KEY` is not 64 hex characters.
    #[error("the session key must be 64 hex characters (32 bytes)")]
    InvalidKey,
    /// A sealed value (a session, a request, a frame) could not be encrypted or decrypted
    /// (wrong key, or a damaged or moved row).
    #[error(
        "a stored session, request or frame could not be encrypted or decrypted \
         (wrong ABR_SESSION_KEY?)"
    )]
    Crypto,
    /// Sessions, and what holds secrets or shows pages (task inputs, post content, replay
    /// frames), cannot be stored without a key (outside `--insecure-dev`).
    #[error(
        "sessions, inputs and replay frames are not stored without ABR_SESSION_KEY \
         (they hold credentials or page content)"
    )]
    NoKey,
    /// The database cannot be reached now (a lost connection, a server shutting down or
    /// full): the same call may succeed later.
    #[error("the store's database cannot be reached: {0}")]
    Unreachable(String),
    /// The database was migrated by a newer binary: this one does not write it.
    #[error(
        "the database's schema is version {found}, newer than this binary's {known}: \
         run the newer binary, or restore the database"
    )]
    NewerSchema {
        /// The version found in the database.
        found: u32,
        /// The newest version this binary knows.
        known: u32,
    },
    /// A record could not be encoded or decoded.
    #[error("a stored record could not be read: {0}")]
    Record(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        let message = e.to_string();
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Busy(message),
            Some(ErrorCode::ConstraintViolation) => Self::Constraint(message),
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Self::Damaged(message),
            _ => Self::Database(message),
        }
    }
}

impl StoreError {
    /// What kind of store failure this is for the store contracts.
    pub fn failure_kind(&self) -> StoreFailureKind {
        match self {
            Self::Database(_) | Self::Busy(_) | Self::Unreachable(_) => {
                StoreFailureKind::Unavailable
            }
            Self::Constraint(_) => StoreFailureKind::Conflict,
            Self::Damaged(_) | Self::Crypto | Self::Record(_) => StoreFailureKind::Corrupt,
            Self::InvalidKey | Self::NoKey | Self::NewerSchema { .. } => {
                StoreFailureKind::Misconfigured
            }
        }
    }
}

impl From<StoreError> for abr_core::CoreError {
    fn from(e: StoreError) -> Self {
        abr_core::CoreError::Store(StoreFailure::new(e.failure_kind(), e.to_string()))
    }
}
