//! One-time approval links: an approver's key mints a link for a person who holds no key;
//! the person reads the task (or a browse session's committing action) in words and
//! approves or rejects it once, as that approver.
//!
//! A link is a 256-bit token; only its SHA-256 digest is kept, in the store
//! ([`LinkStore`]: on a shared database, a person's link works whichever replica it
//! reaches; on SQLite it outlives a restart), for at most [`LINK_TTL`]. The first decision
//! consumes it: a second click, a replayed request or a second tab does nothing. The key
//! that proposed a task cannot mint one for it (a link is that approval's capability).

use std::sync::Arc;
use std::time::Duration;

use abr_core::clock::{Clock, new_token};
use abr_core::digest::token_digest;
use abr_core::error::CoreError;
use abr_core::principal::Principal;
use abr_core::store::{LinkStore, StoredLink};
use time::OffsetDateTime;

use crate::error::EngineError;

/// How long a link stays usable.
pub(crate) const LINK_TTL: Duration = Duration::from_secs(60 * 60);

/// Most links open at once (minting more refuses until some are used or expire).
const MAX_LINKS: usize = 10_000;

/// What a link stands for.
#[derive(Debug, Clone)]
pub(crate) struct LinkGrant {
    /// The task's tenant.
    pub tenant: String,
    /// The task (or browse session).
    pub task_id: String,
    /// For a browse session: the approval of its committing action the link decides.
    pub action: Option<String>,
    /// The approver whose key minted it: the decision is theirs.
    pub minted_by: Arc<Principal>,
}

/// A minted link's token (shown once) and its expiry.
#[derive(Debug, Clone)]
pub struct MintedLink {
    /// The token: the last segment of the link.
    pub token: abr_protocol::SecretValue,
    /// When it stops working.
    pub expires_at: OffsetDateTime,
}

/// The open links, kept by the store.
pub(crate) struct ApprovalLinks {
    store: Arc<dyn LinkStore>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ApprovalLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalLinks").finish_non_exhaustive()
    }
}

impl From<StoredLink> for LinkGrant {
    fn from(link: StoredLink) -> Self {
        Self {
            tenant: link.tenant,
            task_id: link.task_id,
            action: link.action,
            minted_by: Arc::new(link.minted_by),
        }
    }
}

impl ApprovalLinks {
    pub(crate) fn new(store: Arc<dyn LinkStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// A new link for `task_id` of `tenant`, deciding as `minted_by`.
    ///
    /// # Errors
    /// [`EngineError::Overloaded`] when [`MAX_LINKS`] are open; a store failure.
    pub(crate) async fn mint(
        &self,
        tenant: &str,
        task_id: &str,
        action: Option<String>,
        minted_by: Arc<Principal>,
    ) -> Result<MintedLink, EngineError> {
        let now = self.clock.now();
        let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let expires_at = now + time::Duration::try_from(LINK_TTL).unwrap_or(time::Duration::HOUR);
        let link = StoredLink {
            digest: token_digest(&token),
            tenant: tenant.to_owned(),
            task_id: task_id.to_owned(),
            action,
            minted_by: (*minted_by).clone(),
            expires_at,
        };
        if !self.store.put_link(&link, now, MAX_LINKS).await? {
            return Err(EngineError::Overloaded {
                retry_after: Duration::from_secs(60),
            });
        }
        Ok(MintedLink {
            token: abr_protocol::SecretValue::new(token),
            expires_at,
        })
    }

    /// What `token` stands for, if it is open (the page shows the task).
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn peek(&self, token: &str) -> Result<Option<LinkGrant>, EngineError> {
        let now = self.clock.now();
        Ok(self
            .store
            .link(&token_digest(token), now)
            .await?
            .map(LinkGrant::from))
    }

    /// Consumes `token`: its grant the first time, `None` ever after (or once expired), on
    /// whichever replica.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn take(&self, token: &str) -> Result<Option<LinkGrant>, EngineError> {
        let now = self.clock.now();
        Ok(self
            .store
            .take_link(&token_digest(token), now)
            .await?
            .map(LinkGrant::from))
    }
}
