//! API keys: created (the token shown once), listed, revoked, and a presented token turned
//! into its [`Principal`] ([`Keys::authenticate`]).
//!
//! A token reads `abrk.<key id>.<secret>`: the id finds the key, and the SHA-256 digest of
//! the whole token is compared with the stored one in constant time. An unknown id costs
//! the same comparison (with a digest nobody holds), so timing tells nothing about which
//! ids exist. A revoked or expired key authenticates nobody.

use std::sync::Arc;

use abr_core::CoreError;
use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use abr_core::clock::{Clock, new_token};
use abr_core::digest::token_digest;
use abr_core::principal::{Principal, Right, Tenants, unexpired};
use abr_core::store::{KeyStore, StoredKey};
use abr_protocol::{CreatedKey, KeyInfo, KeyRequest, SecretValue};
use subtle::ConstantTimeEq;

/// The first part of every key's token.
const TOKEN_PREFIX: &str = "abrk";

/// The API keys of a runner.
pub struct Keys {
    store: Arc<dyn KeyStore>,
    clock: Arc<dyn Clock>,
    audit: Auditor,
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
        }
    }

    /// Creates a key as `request` says; answers it with its token, which is never shown
    /// again (only its digest is kept).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; [`CoreError::InvalidInput`] for
    /// a bad name or tenant, an agent or approver key for every tenant, an expiry in the
    /// past; the OS random source failing; a store failure.
    pub async fn create(
        &self,
        by: &Principal,
        request: &KeyRequest,
    ) -> Result<CreatedKey, CoreError> {
        by.require(Right::Operate)?;
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
            return Err(CoreError::InvalidInput(
                "expiresAt must be in the future".into(),
            ));
        }
        let secret = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let token = format!("{TOKEN_PREFIX}.{id}.{secret}");
        let key = StoredKey {
            id,
            name: principal.name().to_owned(),
            role: request.role,
            tenant: request.tenant_id.clone(),
            read_only: request.read_only,
            created_at: now,
            expires_at: request.expires_at,
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

    /// Every key, revoked ones included, oldest first.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; a store failure.
    pub async fn list(&self, by: &Principal) -> Result<Vec<KeyInfo>, CoreError> {
        by.require(Right::Operate)?;
        Ok(self
            .store
            .keys()
            .await?
            .iter()
            .map(StoredKey::info)
            .collect())
    }

    /// Revokes the key `id`: from now on it authenticates nobody. Revoking a revoked key
    /// answers it as it is.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless `by` is an operator; [`CoreError::KeyNotFound`]; a
    /// store failure.
    pub async fn revoke(&self, by: &Principal, id: &str) -> Result<KeyInfo, CoreError> {
        by.require(Right::Operate)?;
        let revoked = self.store.revoke_key(id, self.clock.now()).await?;
        let key = self.store.key(id).await?.ok_or(CoreError::KeyNotFound)?;
        if revoked {
            self.audit_key(AuditAction::KeyRevoked, &key);
        }
        Ok(key.info())
    }

    /// The principal of `token`: `None` for a token of no key, a wrong secret, a revoked or
    /// an expired key.
    ///
    /// # Errors
    /// A store failure.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Arc<Principal>>, CoreError> {
        let presented = token_digest(token);
        let mut parts = token.splitn(3, '.');
        let (Some(TOKEN_PREFIX), Some(id), Some(_)) = (parts.next(), parts.next(), parts.next())
        else {
            return Ok(None);
        };
        let stored = self.store.key(id).await?;
        // The same comparison whether or not the id exists.
        let expected = stored.as_ref().map_or([0xa5; 32], |k| k.digest);
        let matches: bool = expected.ct_eq(&presented).into();
        let Some(key) = stored.filter(|_| matches) else {
            return Ok(None);
        };
        if key.revoked_at.is_some() || !unexpired(key.expires_at, self.clock.now()) {
            return Ok(None);
        }
        let tenants = key.tenant.clone().map_or(Tenants::All, Tenants::One);
        Ok(
            Principal::new(key.id, &key.name, key.role, tenants, key.read_only)
                .ok()
                .map(Arc::new),
        )
    }

    fn audit_key(&self, action: AuditAction, key: &StoredKey) {
        let mut event = AuditEvent::new(self.clock.now(), action, AuditOutcome::Ok, "");
        event.workspace_id.clone_from(&key.tenant);
        event.actor = Some(format!("{} ({})", key.id, key.role));
        self.audit.emit(event);
    }
}
