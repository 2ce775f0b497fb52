//! One-time approval links: an approver's key mints a link for a person who holds no key;
//! the person reads the task (or a browse session's committing action) in words and
//! approves or rejects it once, as that approver.
//!
//! A link is a 256-bit token; only its SHA-256 digest is kept, in memory, for at most
//! [`LINK_TTL`] (a restart forgets every link: mint another). The first decision consumes it:
//! a second click, a replayed request or a second tab does nothing. The key that proposed a
//! task cannot mint one for it (a link is that approval's capability).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use abr_core::clock::{Clock, new_token};
use abr_core::digest::token_digest;
use abr_core::error::CoreError;
use abr_core::principal::Principal;
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
    /// When it stops working.
    pub expires_at: OffsetDateTime,
}

/// A minted link's token (shown once) and its expiry.
#[derive(Debug, Clone)]
pub struct MintedLink {
    /// The token: the last segment of the link.
    pub token: abr_protocol::SecretValue,
    /// When it stops working.
    pub expires_at: OffsetDateTime,
}

/// The open links, by the digest of their token.
pub(crate) struct ApprovalLinks {
    links: Mutex<HashMap<[u8; 32], LinkGrant>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ApprovalLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalLinks")
            .field("open", &self.lock().len())
            .finish()
    }
}

impl ApprovalLinks {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            links: Mutex::new(HashMap::new()),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], LinkGrant>> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new link for `task_id` of `tenant`, deciding as `minted_by`.
    pub(crate) fn mint(
        &self,
        tenant: &str,
        task_id: &str,
        action: Option<String>,
        minted_by: Arc<Principal>,
    ) -> Result<MintedLink, EngineError> {
        let now = self.clock.now();
        let mut links = self.lock();
        links.retain(|_, grant| grant.expires_at > now);
        if links.len() >= MAX_LINKS {
            return Err(EngineError::Overloaded {
                retry_after: Duration::from_secs(60),
            });
        }
        let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let expires_at = now + time::Duration::try_from(LINK_TTL).unwrap_or(time::Duration::HOUR);
        links.insert(
            token_digest(&token),
            LinkGrant {
                tenant: tenant.to_owned(),
                task_id: task_id.to_owned(),
                action,
                minted_by,
                expires_at,
            },
        );
        Ok(MintedLink {
            token: abr_protocol::SecretValue::new(token),
            expires_at,
        })
    }

    /// What `token` stands for, if it is open (the page shows the task).
    pub(crate) fn peek(&self, token: &str) -> Option<LinkGrant> {
        let now = self.clock.now();
        self.lock()
            .get(&token_digest(token))
            .filter(|grant| grant.expires_at > now)
            .cloned()
    }

    /// Consumes `token`: its grant the first time, `None` ever after (or once expired).
    pub(crate) fn take(&self, token: &str) -> Option<LinkGrant> {
        let now = self.clock.now();
        self.lock()
            .remove(&token_digest(token))
            .filter(|grant| grant.expires_at > now)
    }
}
