//! [`KeyStore`]: the API keys an operator created (their digests, never their tokens);
//! [`InMemoryKeys`].

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use abr_protocol::{KeyInfo, Role};
use async_trait::async_trait;
use subtle::ConstantTimeEq as _;
use time::OffsetDateTime;

use crate::error::CoreError;
use crate::error::store::StoreFailure;

/// A key as stored: who holds it, what it may do, and the SHA-256 digest of its token.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The key's id (unique; the token starts with it).
    pub id: String,
    /// Who holds it.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The one tenant it acts for; `None`: every tenant (operators only).
    pub tenant: Option<String>,
    /// Whether it never commits.
    pub read_only: bool,
    /// When it was created.
    pub created_at: OffsetDateTime,
    /// When it stops being accepted.
    pub expires_at: Option<OffsetDateTime>,
    /// When it was revoked.
    pub revoked_at: Option<OffsetDateTime>,
    /// SHA-256 of its token.
    pub digest: [u8; 32],
}

impl StoredKey {
    /// What the runner tells about it (never the digest).
    pub fn info(&self) -> KeyInfo {
        KeyInfo {
            key_id: self.id.clone(),
            name: self.name.clone(),
            role: self.role,
            tenant_id: self.tenant.clone(),
            read_only: self.read_only,
            created_at: self.created_at,
            expires_at: self.expires_at,
            revoked_at: self.revoked_at,
        }
    }
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("role", &self.role)
            .field("tenant", &self.tenant)
            .field("read_only", &self.read_only)
            .field("expires_at", &self.expires_at)
            .field("revoked_at", &self.revoked_at)
            .finish_non_exhaustive()
    }
}

/// Where API keys live.
///
/// # Contract
/// - [`insert_key`](Self::insert_key) stores a new key; an id already stored is refused
///   ([`CoreError::Store`]) and leaves the stored key as it was. So is a runner credential
///   (role `runner`) while another one for the same runner id (its name) is not revoked:
///   a runner id has one credential at a time, whatever races.
/// - [`key`](Self::key) answers a key by id, revoked or not, as it was stored.
/// - [`key_by_digest`](Self::key_by_digest) answers the key whose token has this SHA-256
///   digest, revoked or not. A presented token is looked up by its digest, never by the id
///   it names: a known id with a wrong secret and an unknown id are the same miss, so the
///   time a lookup takes tells nothing about which ids exist.
/// - [`keys`](Self::keys) answers every key, oldest first (by creation, then id).
/// - [`revoke_key`](Self::revoke_key) sets `revoked_at` once: `true` the first time, `false`
///   for an unknown or already revoked key (the first instant stays). Revocation survives a
///   reopen of a durable store.
/// - [`link_runner`](Self::link_runner) records that the credential `key_id` (one that is
///   not the runner id's own: an operator's key) connected a runner id; a later link of the
///   same id replaces it. [`runner_link`](Self::runner_link) answers the last one. Links
///   survive a reopen of a durable store: a runner an operator linked stays theirs while
///   it is away.
#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
    /// Stores a new key.
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError>;

    /// The key `id`, if any.
    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError>;

    /// The key whose token's SHA-256 digest is `digest`, if any.
    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError>;

    /// Every key, oldest first.
    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError>;

    /// Revokes the key `id` at `at`; `false` when unknown or already revoked.
    async fn revoke_key(&self, id: &str, at: OffsetDateTime) -> Result<bool, CoreError>;

    /// Records that the credential `key_id` connected `runner_id` at `at`.
    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: OffsetDateTime,
    ) -> Result<(), CoreError>;

    /// The credential that last linked `runner_id`, and when, if any did.
    async fn runner_link(&self, runner_id: &str) -> Result<Option<RunnerLink>, CoreError>;
}

/// A credential other than a runner's own that connected a runner id: who holds the id
/// while it is away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerLink {
    /// The runner id.
    pub runner_id: String,
    /// The key that connected it.
    pub key_id: String,
    /// When.
    pub linked_at: OffsetDateTime,
}

/// Process-local keys (tests, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemoryKeys {
    keys: Mutex<BTreeMap<String, StoredKey>>,
    links: Mutex<BTreeMap<String, RunnerLink>>,
}

impl InMemoryKeys {
    /// None yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, StoredKey>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl KeyStore for InMemoryKeys {
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError> {
        let mut keys = self.lock();
        if keys.contains_key(&key.id) {
            return Err(CoreError::Store(StoreFailure::conflict(
                "a key with this id exists",
            )));
        }
        if key.role == Role::Runner
            && keys
                .values()
                .any(|k| k.role == Role::Runner && k.name == key.name && k.revoked_at.is_none())
        {
            return Err(CoreError::Store(StoreFailure::conflict(
                "this runner id has a credential that is not revoked",
            )));
        }
        keys.insert(key.id.clone(), key.clone());
        Ok(())
    }

    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError> {
        Ok(self.lock().get(id).cloned())
    }

    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError> {
        // Every key is compared (no early exit), in constant time.
        let keys = self.lock();
        let mut found = None;
        for key in keys.values() {
            if bool::from(key.digest.ct_eq(digest)) {
                found = Some(key.clone());
            }
        }
        Ok(found)
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError> {
        let mut keys: Vec<StoredKey> = self.lock().values().cloned().collect();
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn revoke_key(&self, id: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        match self.lock().get_mut(id) {
            Some(key) if key.revoked_at.is_none() => {
                key.revoked_at = Some(at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: OffsetDateTime,
    ) -> Result<(), CoreError> {
        let link = RunnerLink {
            runner_id: runner_id.to_owned(),
            key_id: key_id.to_owned(),
            linked_at: at,
        };
        self.links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(runner_id.to_owned(), link);
        Ok(())
    }

    async fn runner_link(&self, runner_id: &str) -> Result<Option<RunnerLink>, CoreError> {
        Ok(self
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(runner_id)
            .cloned())
    }
}
