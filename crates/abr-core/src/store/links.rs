//! [`LinkStore`]: one-time approval links, kept by the digest of their token (never the
//! token), so that a person's link works whichever replica of a fleet it reaches and after a
//! restart; [`InMemoryLinks`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreError;
use crate::principal::Principal;

/// An approval link as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLink {
    /// SHA-256 of its token.
    pub digest: [u8; 32],
    /// The task's tenant.
    pub tenant: String,
    /// The task (or browse session).
    pub task_id: String,
    /// For a browse session: the approval of its committing action the link decides.
    pub action: Option<String>,
    /// The approver whose key minted it: the decision is theirs.
    pub minted_by: Principal,
    /// When it stops working.
    pub expires_at: OffsetDateTime,
}

/// Where approval links live.
///
/// # Contract
/// - [`put_link`](Self::put_link) first forgets the links expired at `now`, then keeps the
///   new one unless `max_open` links are open (it answers `false` and keeps nothing).
/// - [`link`](Self::link) answers an open link (not taken, not expired at `now`).
/// - [`take_link`](Self::take_link) removes the link and answers it if it was open: of
///   racing takes of one link (on one replica or several), exactly one answers it; every
///   later take answers `None`.
/// - A link kept is durable on a durable store; only the digest of its token is kept.
#[async_trait]
pub trait LinkStore: Send + Sync + 'static {
    /// Keeps `link` (see the contract); whether it did.
    async fn put_link(
        &self,
        link: &StoredLink,
        now: OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError>;

    /// The open link whose token has `digest`.
    async fn link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError>;

    /// Takes the open link whose token has `digest`: once.
    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError>;
}

/// A process-local [`LinkStore`]: a restart forgets every link.
#[derive(Debug, Default)]
pub struct InMemoryLinks {
    links: Mutex<HashMap<[u8; 32], StoredLink>>,
}

impl InMemoryLinks {
    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], StoredLink>> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl LinkStore for InMemoryLinks {
    async fn put_link(
        &self,
        link: &StoredLink,
        now: OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError> {
        let mut links = self.lock();
        links.retain(|_, l| l.expires_at > now);
        if links.len() >= max_open {
            return Ok(false);
        }
        links.insert(link.digest, link.clone());
        Ok(true)
    }

    async fn link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        Ok(self
            .lock()
            .get(digest)
            .filter(|l| l.expires_at > now)
            .cloned())
    }

    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        Ok(self.lock().remove(digest).filter(|l| l.expires_at > now))
    }
}
