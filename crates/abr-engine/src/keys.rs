//! API keys: created (the token shown once), listed, revoked, and a presented token turned
//! into its [`Principal`] ([`Keys::authenticate`]).
//!
//! A token reads `abrk.<key id>.<secret>`: the key is looked up by the SHA-256 digest of the
//! whole token, never by the id it names, so a known id with a wrong secret and an unknown
//! id are the same miss and timing tells nothing about which ids exist. A revoked or expired
//! key authenticates nobody, and what it opened ends with it: a [`KeyWatch`] (every event
//! stream, a runner's relay socket) ends when its key is revoked here (at once) or by
//! another process on the same store (`abr keys revoke`, within [`KEY_RECHECK`]).
//!
//! An operator's key for every tenant manages every key; one bound to a tenant manages that
//! tenant's keys only (it makes keys of its tenant, lists and revokes those).
//!
//! Runners at a hub have keys too ([`Keys::enroll`], [`Keys::redeem_enrollment`]): an
//! operator or an approver of a tenant makes a short-lived enrollment code for one runner id
//! (a key of role `enrollment`), the runner trades it once for its runner credential (role
//! `runner`, bound to that runner id and tenant), which mints relay tokens for that runner
//! id only. **A runner id is owned by one credential**: enrolled for a tenant, enrolling it
//! for another is refused; connected, its id is not enrolled by anyone but an operator, and
//! only when its own credential holds it (that credential is revoked at once and its socket
//! closed, recorded as [`AuditAction::RunnerReenrolled`]); a connection of the id uses up
//! every code made for it before ([`Keys::runner_connected`]), and a code is refused while
//! the id is connected. An id connected with a credential not its own (an operator's token)
//! is linked to that credential, durably: while it is away, only an operator of a tenant
//! the link serves enrolls it. The hub tells what it sees ([`RunnerPresence`]).

use std::sync::Arc;
use std::time::Duration;

use abr_core::CoreError;
use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use abr_core::clock::{Clock, new_token};
use abr_core::digest::token_digest;
use abr_core::principal::{Actor, Principal, Right, Tenants, unexpired, valid_runner_id};
use abr_core::store::{KeyStore, StoredKey};
use abr_protocol::{CreatedKey, KeyInfo, KeyRequest, Role, SecretValue};
use time::OffsetDateTime;
use tokio::sync::broadcast;

use crate::error::EngineError;

/// The first part of every key's token.
const TOKEN_PREFIX: &str = "abrk";

/// How long an enrollment code works.
pub(crate) const ENROLLMENT_TTL: Duration = Duration::from_secs(10 * 60);

/// How often a [`KeyWatch`] looks at its key again for what this process did not do (a
/// revocation by `abr keys revoke` on the data directory) or cannot be told (its expiry).
pub(crate) const KEY_RECHECK: Duration = Duration::from_secs(2);

/// Revocations a [`KeyWatch`] may fall behind by before it looks at its key in the store.
const REVOKED_BUFFER: usize = 64;

/// What a hub sees of a runner id as it is enrolled or its code redeemed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerPresence<'a> {
    /// Not connected (or unknown: `abr hub enroll` on the data directory does not see the
    /// hub's sockets; the code is then refused at redemption while the id is connected).
    Offline,
    /// Connected now, by the credential of this key id (a runner's credential, an
    /// operator's key, `bootstrap`).
    Connected(&'a str),
}

/// An enrollment code, shown once.
#[derive(Debug, Clone)]
pub struct MintedEnrollment {
    /// The runner id it enrolls.
    pub runner_id: String,
    /// The tenant the runner will serve.
    pub tenant: String,
    /// The code.
    pub code: SecretValue,
    /// When it stops working.
    pub expires_at: OffsetDateTime,
}

/// A runner's credential, shown once.
#[derive(Debug, Clone)]
pub struct EnrolledRunner {
    /// The runner id it connects as.
    pub runner_id: String,
    /// The tenant it serves.
    pub tenant: String,
    /// The credential.
    pub token: SecretValue,
}

/// The API keys of a runner.
#[derive(Clone)]
pub struct Keys {
    store: Arc<dyn KeyStore>,
    clock: Arc<dyn Clock>,
    audit: Auditor,
    /// The id of every key this process revokes: the [`KeyWatch`]es of that key end at once.
    revoked: broadcast::Sender<Arc<str>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of `store`.
    pub fn new(store: Arc<dyn KeyStore>, clock: Arc<dyn Clock>, audit: Auditor) -> Self {
        Self {
            store,
            clock,
            audit,
            revoked: broadcast::channel(REVOKED_BUFFER).0,
        }
    }

    /// Creates a key as `request` says; answers it with its token, which is never shown
    /// again (only its digest is kept).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; [`CoreError::TenantForbidden`]
    /// for an operator bound to a tenant asking for a key of another tenant or of every
    /// tenant; [`CoreError::InvalidInput`] for a bad name or tenant, an agent or approver
    /// key for every tenant, an expiry in the past; the OS random source failing; a store
    /// failure.
    pub async fn create(
        &self,
        by: &Principal,
        request: &KeyRequest,
    ) -> Result<CreatedKey, EngineError> {
        by.require(Right::Operate)?;
        if by
            .tenant()
            .is_some_and(|own| request.tenant_id.as_deref() != Some(own))
        {
            return Err(EngineError::from(CoreError::TenantForbidden));
        }
        if matches!(request.role, Role::Runner | Role::Enrollment) {
            return Err(EngineError::from(CoreError::InvalidInput(
                "runner credentials come from enrollment (abr hub enroll), not from a key request"
                    .into(),
            )));
        }
        let tenants = match &request.tenant_id {
            Some(t) => Tenants::One(t.clone()),
            None => Tenants::All,
        };
        let id = crate::ledger::record_id("key_")?;
        // Checks the name, the tenant and the role's binding.
        let principal = Principal::new(
            id.clone(),
            &request.name,
            request.role,
            tenants,
            request.read_only,
        )?;
        let now = self.clock.now();
        if request.expires_at.is_some_and(|at| at <= now) {
            return Err(EngineError::from(CoreError::InvalidInput(
                "expiresAt must be in the future".into(),
            )));
        }
        self.insert(
            principal,
            request.tenant_id.clone(),
            request.read_only,
            request.expires_at,
        )
        .await
    }

    /// Stores a new key for `principal` (its id, name and role) and answers its token.
    async fn insert(
        &self,
        principal: Principal,
        tenant: Option<String>,
        read_only: bool,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<CreatedKey, EngineError> {
        let id = principal.key_id().to_owned();
        let secret = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let token = format!("{TOKEN_PREFIX}.{id}.{secret}");
        let key = StoredKey {
            id,
            name: principal.name().to_owned(),
            role: principal.role(),
            tenant,
            read_only,
            created_at: self.clock.now(),
            expires_at,
            revoked_at: None,
            digest: token_digest(&token),
        };
        self.store.insert_key(&key).await?;
        self.audit_key(AuditAction::KeyCreated, &key);
        Ok(CreatedKey {
            key: key.info(),
            token: SecretValue::new(token),
        })
    }

    /// An enrollment code for `runner_id`, serving the actor's tenant: it works once, for
    /// ten minutes. `presence` is what the hub sees of the id now: connected by its
    /// own credential, only an operator enrolls it again, and that credential is revoked at
    /// once (its socket closes; recorded); connected by any other credential (an
    /// operator's token), nobody enrolls it.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may enroll runners (an operator, an
    /// approver of the tenant), when the runner id is enrolled for another tenant, connected
    /// by another credential, or connected and the actor is not an operator;
    /// [`CoreError::InvalidInput`] for a bad runner id; the OS random source; a store failure.
    pub async fn enroll(
        &self,
        by: &Actor,
        runner_id: &str,
        presence: RunnerPresence<'_>,
    ) -> Result<MintedEnrollment, EngineError> {
        by.require(Right::EnrollRunner)?;
        if !valid_runner_id(runner_id) {
            return Err(EngineError::from(CoreError::InvalidInput(
                "runnerId must be 1 to 64 of A-Z a-z 0-9 . _ - (not starting with a dot)".into(),
            )));
        }
        let tenant = by.tenant().to_owned();
        let now = self.clock.now();
        let credential = self.credential_of(runner_id).await?;
        if credential
            .as_ref()
            .is_some_and(|k| k.tenant.as_deref() != Some(tenant.as_str()))
        {
            return Err(EngineError::from(CoreError::Forbidden(format!(
                "runner id {runner_id} is enrolled for another tenant: choose another id"
            ))));
        }
        if credential.is_none()
            && let Some(link) = self.store.runner_link(runner_id).await?
            && link.key_id != by.principal().key_id()
        {
            // Linked with another credential (an operator's token): its runner comes back
            // as that id, so only an operator of a tenant the link serves gives it away.
            let linker = self.store.key(&link.key_id).await?;
            let serves = linker.is_none_or(|k| k.tenant.is_none_or(|t| t == tenant));
            if by.require(Right::Operate).is_err() || !serves {
                return Err(EngineError::from(CoreError::Forbidden(format!(
                    "runner id {runner_id} was linked with another credential (an operator's \
                     token): an operator of its tenant enrolls it"
                ))));
            }
        }
        if let RunnerPresence::Connected(connected_by) = presence {
            let own = credential.filter(|k| k.id == connected_by).ok_or_else(|| {
                CoreError::Forbidden(format!(
                    "runner id {runner_id} is connected with another credential (an \
                     operator's token): stop that runner before enrolling its id"
                ))
            })?;
            if by.require(Right::Operate).is_err() {
                return Err(EngineError::from(CoreError::Forbidden(format!(
                    "runner {runner_id} is connected: an approver does not re-enroll a live \
                     runner (an operator can)"
                ))));
            }
            // An operator replaces a live runner: its credential ends now, and its socket.
            self.revoke_stored(&own, now).await?;
            let mut event =
                AuditEvent::new(now, AuditAction::RunnerReenrolled, AuditOutcome::Ok, "");
            event.workspace_id = Some(tenant.clone());
            event.account_id = Some(runner_id.to_owned());
            event.actor = Some(format!(
                "{} ({})",
                by.principal().key_id(),
                by.principal().role()
            ));
            self.audit.emit(event);
        }
        let id = crate::ledger::record_id("key_")?;
        let principal = Principal::new(
            id,
            runner_id,
            Role::Enrollment,
            Tenants::One(tenant.clone()),
            false,
        )?;
        let expires_at =
            now + time::Duration::try_from(ENROLLMENT_TTL).unwrap_or(time::Duration::MINUTE);
        let created = self
            .insert(principal, Some(tenant.clone()), false, Some(expires_at))
            .await?;
        Ok(MintedEnrollment {
            runner_id: runner_id.to_owned(),
            tenant,
            code: created.token,
            expires_at,
        })
    }

    /// Trades an enrollment `code` made for `runner_id` for that runner's credential. The
    /// code is used up by the first attempt, right or wrong runner id, connected or not; the
    /// runner id's older credential is revoked.
    ///
    /// # Errors
    /// `Ok(None)`: not an enrollment code, used, expired, or made for another runner id.
    /// [`CoreError::Forbidden`] while the runner id is connected (`presence`: stop that
    /// runner first). A store failure; the OS random source.
    pub async fn redeem_enrollment(
        &self,
        code: &str,
        runner_id: &str,
        presence: RunnerPresence<'_>,
    ) -> Result<Option<EnrolledRunner>, EngineError> {
        let Some(enrollment) = self.authenticate(code).await? else {
            return Ok(None);
        };
        if enrollment.role() != Role::Enrollment {
            return Ok(None);
        }
        let now = self.clock.now();
        // Used up first: of two concurrent attempts, one wins.
        if !self.store.revoke_key(enrollment.key_id(), now).await? {
            return Ok(None);
        }
        let (Some(tenant), Some(enrolled_id)) = (enrollment.tenant(), enrollment.runner_id())
        else {
            return Ok(None);
        };
        if enrolled_id != runner_id {
            return Ok(None);
        }
        if presence != RunnerPresence::Offline {
            // Told only to the holder of a valid code for this id.
            return Err(EngineError::from(CoreError::Forbidden(format!(
                "runner id {runner_id} is connected: stop that runner, then ask for a new \
                 code (this one is used up)"
            ))));
        }
        let tenant = tenant.to_owned();
        let keys = self.store.keys().await?;
        let taken = keys.iter().any(|k| {
            k.role == Role::Runner
                && k.name == runner_id
                && k.revoked_at.is_none()
                && k.tenant.as_deref() != Some(tenant.as_str())
        });
        if taken {
            // Enrolled for another tenant since the code was made.
            return Ok(None);
        }
        for old in keys {
            if old.role == Role::Runner && old.name == runner_id && old.revoked_at.is_none() {
                self.revoke_stored(&old, now).await?;
            }
        }
        let id = crate::ledger::record_id("key_")?;
        let principal = Principal::new(
            id,
            runner_id,
            Role::Runner,
            Tenants::One(tenant.clone()),
            false,
        )?;
        let created = self
            .insert(principal, Some(tenant.clone()), false, None)
            .await?;
        Ok(Some(EnrolledRunner {
            runner_id: runner_id.to_owned(),
            tenant,
            token: created.token,
        }))
    }

    /// The key id of `runner_id`'s live runner credential, if it is enrolled: only that
    /// credential connects it.
    ///
    /// # Errors
    /// A store failure.
    pub async fn runner_credential(&self, runner_id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.credential_of(runner_id).await?.map(|k| k.id))
    }

    /// `runner_id` connected with the credential `by` (a key id): every enrollment code made
    /// for it before is used up (a code made while the id was away does not take it over
    /// once it is back), and a credential that is not the id's own (an operator's key)
    /// links the id: while it is away, only an operator enrolls it ([`Keys::enroll`]).
    ///
    /// # Errors
    /// A store failure.
    pub async fn runner_connected(&self, runner_id: &str, by: &str) -> Result<(), EngineError> {
        let now = self.clock.now();
        let own = self
            .credential_of(runner_id)
            .await?
            .is_some_and(|credential| credential.id == by);
        if !own {
            self.store.link_runner(runner_id, by, now).await?;
        }
        for code in self.store.keys().await? {
            if code.role == Role::Enrollment && code.name == runner_id && code.revoked_at.is_none()
            {
                self.revoke_stored(&code, now).await?;
            }
        }
        Ok(())
    }

    /// The live runner credential of `runner_id`, if any.
    async fn credential_of(&self, runner_id: &str) -> Result<Option<StoredKey>, EngineError> {
        Ok(self
            .store
            .keys()
            .await?
            .into_iter()
            .find(|k| k.role == Role::Runner && k.name == runner_id && k.revoked_at.is_none()))
    }

    /// Every key `by` manages (an operator bound to a tenant: that tenant's), revoked ones
    /// included, oldest first.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; a store failure.
    pub async fn list(&self, by: &Principal) -> Result<Vec<KeyInfo>, EngineError> {
        by.require(Right::Operate)?;
        Ok(self
            .store
            .keys()
            .await?
            .iter()
            .filter(|k| manages(by, k))
            .map(StoredKey::info)
            .collect())
    }

    /// Revokes the key `id`: from now on it authenticates nobody, and what it opened ends
    /// (see [`KeyWatch`]). Revoking a revoked key answers it as it is.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; [`EngineError::KeyNotFound`], also
    /// for a key of a tenant an operator bound to another does not manage; a store failure.
    pub async fn revoke(&self, by: &Principal, id: &str) -> Result<KeyInfo, EngineError> {
        by.require(Right::Operate)?;
        let key = self
            .store
            .key(id)
            .await?
            .filter(|k| manages(by, k))
            .ok_or(EngineError::KeyNotFound)?;
        self.revoke_stored(&key, self.clock.now()).await?;
        let key = self.store.key(id).await?.ok_or(EngineError::KeyNotFound)?;
        Ok(key.info())
    }

    /// Revokes `key` at `at` (audited the first time), and tells every [`KeyWatch`].
    async fn revoke_stored(&self, key: &StoredKey, at: OffsetDateTime) -> Result<(), EngineError> {
        if self.store.revoke_key(&key.id, at).await? {
            self.audit_key(AuditAction::KeyRevoked, key);
            // Nobody watching is not an error.
            let _ = self.revoked.send(Arc::from(key.id.as_str()));
        }
        Ok(())
    }

    /// The principal of `token`: `None` for a token of no key, a wrong secret, a revoked or
    /// an expired key.
    ///
    /// # Errors
    /// A store failure.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Arc<Principal>>, EngineError> {
        let mut parts = token.splitn(3, '.');
        let (Some(TOKEN_PREFIX), Some(id), Some(_)) = (parts.next(), parts.next(), parts.next())
        else {
            return Ok(None);
        };
        // By the digest: a wrong secret under a known id misses like an unknown id.
        let Some(key) = self.store.key_by_digest(&token_digest(token)).await? else {
            return Ok(None);
        };
        if key.id != id || key.revoked_at.is_some() || !unexpired(key.expires_at, self.clock.now())
        {
            return Ok(None);
        }
        let tenants = key.tenant.clone().map_or(Tenants::All, Tenants::One);
        Ok(
            Principal::new(key.id, &key.name, key.role, tenants, key.read_only)
                .ok()
                .map(Arc::new),
        )
    }

    /// Whether the credential `key_id` still stands: a stored key neither revoked nor
    /// expired, or no stored key at all (the bootstrap token, an embedder, a principal a hub
    /// named: not this store's to revoke).
    ///
    /// # Errors
    /// A store failure.
    pub async fn stands(&self, key_id: &str) -> Result<bool, EngineError> {
        Ok(self.standing(key_id).await? != Standing::Revoked)
    }

    async fn standing(&self, key_id: &str) -> Result<Standing, EngineError> {
        Ok(match self.store.key(key_id).await? {
            None => Standing::NotAKey,
            Some(k) if k.revoked_at.is_none() && unexpired(k.expires_at, self.clock.now()) => {
                Standing::Valid
            }
            Some(_) => Standing::Revoked,
        })
    }

    /// A watch on the credential `key_id`, for what it opened (see [`KeyWatch`]).
    pub fn watch(&self, key_id: &str) -> KeyWatch {
        KeyWatch {
            keys: self.clone(),
            key_id: key_id.to_owned(),
            revocations: self.revoked.subscribe(),
            next_check: tokio::time::Instant::now() + KEY_RECHECK,
            standing: Standing::Valid,
        }
    }

    fn audit_key(&self, action: AuditAction, key: &StoredKey) {
        let mut event = AuditEvent::new(self.clock.now(), action, AuditOutcome::Ok, "");
        event.workspace_id.clone_from(&key.tenant);
        event.actor = Some(format!("{} ({})", key.id, key.role));
        self.audit.emit(event);
    }
}

/// Whether `by` (an operator) manages `key`: every key for an operator of every tenant, its
/// tenant's keys for one bound to a tenant.
fn manages(by: &Principal, key: &StoredKey) -> bool {
    by.tenant()
        .is_none_or(|own| key.tenant.as_deref() == Some(own))
}

/// Where a credential stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// A stored key, neither revoked nor expired.
    Valid,
    /// A stored key, revoked or expired (a store failure counts as this: what it opened
    /// ends, and is opened again with a fresh check).
    Revoked,
    /// No stored key: never revoked here.
    NotAKey,
}

/// A watch on one credential, held by what it opened (an event stream, a runner's relay
/// socket): [`KeyWatch::ended`] resolves once the key is revoked or expired, at once for a
/// revocation this process makes (it is told the key's id) and within two seconds for
/// one another process makes on the same store or an expiry (it looks). Never for a
/// credential that is no stored key.
pub struct KeyWatch {
    keys: Keys,
    key_id: String,
    revocations: broadcast::Receiver<Arc<str>>,
    next_check: tokio::time::Instant,
    standing: Standing,
}

impl std::fmt::Debug for KeyWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyWatch")
            .field("key_id", &self.key_id)
            .field("standing", &self.standing)
            .finish_non_exhaustive()
    }
}

impl KeyWatch {
    /// Resolves once the key no longer stands: at its first poll for a revocation this
    /// process made before it (so a caller that polls it first never passes on anything
    /// after one). Cancel-safe: call it again in a loop.
    pub async fn ended(&mut self) {
        loop {
            match self.standing {
                Standing::Revoked => return,
                Standing::NotAKey => std::future::pending::<()>().await,
                Standing::Valid => {}
            }
            tokio::select! {
                biased;
                revoked = self.revocations.recv() => match revoked {
                    Ok(id) if *id == *self.key_id => {
                        self.standing = Standing::Revoked;
                        continue;
                    }
                    // Another key's.
                    Ok(_) => continue,
                    // Fell behind (or, never while `keys` is held here, closed): look.
                    Err(_) => {}
                },
                () = tokio::time::sleep_until(self.next_check) => {}
            }
            // A check cut short (the caller moved on) is done again at the next call.
            self.standing = self
                .keys
                .standing(&self.key_id)
                .await
                .unwrap_or(Standing::Revoked);
            self.next_check = tokio::time::Instant::now() + KEY_RECHECK;
        }
    }
}
