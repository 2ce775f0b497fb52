//! [`StoreFailure`]: how a store failed, typed, so that a caller (and the fleet's shared
//! database) can tell a write that lost a race from a database that is down, a record that
//! cannot be read, and a store that is not set up to keep what it was given.

/// What kind of store failure it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreFailureKind {
    /// A write lost to another one (a compare-and-swap kept failing, a unique key taken):
    /// read again and retry.
    Conflict,
    /// The store cannot be reached or is busy now (a lock, a lost connection, a full disk):
    /// the same call may succeed later.
    Unavailable,
    /// A stored record cannot be read (damaged, or sealed with another key): retrying
    /// changes nothing.
    Corrupt,
    /// What the call needs is not there.
    NotFound,
    /// The store is not set up to keep this (no key to seal credentials with, a bad key):
    /// an operator must change its configuration.
    Misconfigured,
}

/// How a store failed: its kind and a message free of secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StoreFailure {
    kind: StoreFailureKind,
    message: String,
}

impl StoreFailure {
    /// A failure of `kind`.
    pub fn new(kind: StoreFailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A write that lost to another one.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StoreFailureKind::Conflict, message)
    }

    /// A store that cannot be reached now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StoreFailureKind::Unavailable, message)
    }

    /// A record that cannot be read.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(StoreFailureKind::Corrupt, message)
    }

    /// A store not set up to keep this.
    pub fn misconfigured(message: impl Into<String>) -> Self {
        Self::new(StoreFailureKind::Misconfigured, message)
    }

    /// Its kind.
    pub fn kind(&self) -> StoreFailureKind {
        self.kind
    }

    /// Its message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the same call may succeed later: a lost race or a store that is down now,
    /// never a damaged record or a store that is set up wrong.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            StoreFailureKind::Conflict | StoreFailureKind::Unavailable
        )
    }
}
