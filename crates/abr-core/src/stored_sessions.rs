//! [`StoredSessions`]: sessions a tenant keeps on the runner under ids of its own
//! (`/v1/sessions/{id}`, `sessionId` in tasks and posts), scoped going in like every
//! session, on any [`SessionStore`].

use std::sync::Arc;

use abr_protocol::{AgentSessionState, StoreSessionRequest, StoredSession, StoredSessionInfo};

use crate::scope_io::{self, Scopes};
use crate::{Clock, CoreError, SessionKey, SessionStore, StrategyPolicy, StrategyRegistry};

/// Sessions stored by id, per tenant.
pub struct StoredSessions<C> {
    store: Arc<dyn SessionStore>,
    platforms: Arc<StrategyRegistry<C>>,
    clock: Arc<dyn Clock>,
}

impl<C> std::fmt::Debug for StoredSessions<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSessions").finish_non_exhaustive()
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl<C: 'static> StoredSessions<C> {
    /// Sessions in `store`, scoped by the policies of `platforms`.
    pub fn new(
        store: Arc<dyn SessionStore>,
        platforms: Arc<StrategyRegistry<C>>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            platforms,
            clock,
        }
    }

    /// Keeps `request.session` under `session_id`, scoped by the platform's policy and the
    /// request's scope (at least one is required), replacing what was there.
    ///
    /// # Errors
    /// A bad id, no scope, an invalid scope, an unknown platform, a store failure (e.g. no
    /// key to encrypt it with).
    pub async fn put(
        &self,
        tenant: &str,
        session_id: &str,
        request: &StoreSessionRequest,
    ) -> Result<StoredSessionInfo, CoreError> {
        crate::tenant::check("tenant", Some(tenant))?;
        crate::tenant::check("sessionId", Some(session_id))?;
        let extra = scope_io::request_scope(request.scope.as_ref())?;
        let unscoped = StrategyPolicy {
            allow_interactive_capture: false,
            allow_unattended: false,
            scope: None,
            read_only: false,
            screenshots: true,
            network: crate::guard::NetworkRules::default(),
            guard: None,
        };
        let (policy, platform) = match &request.platform {
            Some(p) => (self.platforms.get(p)?.policy().clone(), p.as_str()),
            None if extra.is_some() => (unscoped, "stored"),
            None => {
                return Err(CoreError::InvalidInput(
                    "a stored session needs a platform or a scope: nothing is kept unscoped".into(),
                ));
            }
        };
        if policy.scope.is_none() && extra.is_none() {
            return Err(CoreError::InvalidInput(format!(
                "the platform {platform} declares no session scope: give a scope"
            )));
        }
        let scopes = Scopes::new(&policy, extra.as_ref());
        let (state, report) = scopes.apply_out(&request.session, platform, self.clock.now());
        let info = StoredSessionInfo {
            session_id: session_id.to_owned(),
            cookie_count: count(state.cookies.len()),
            origin_count: count(state.origins.len()),
            scope_report: Some(report),
        };
        self.store
            .save(&SessionKey::stored(tenant, session_id), state)
            .await?;
        Ok(info)
    }

    /// Keeps a session that is already scoped (a capture's), under `session_id`.
    ///
    /// # Errors
    /// A bad id, a store failure (e.g. no key to encrypt it with).
    pub async fn put_scoped(
        &self,
        tenant: &str,
        session_id: &str,
        state: AgentSessionState,
    ) -> Result<(), CoreError> {
        crate::tenant::check("tenant", Some(tenant))?;
        crate::tenant::check("sessionId", Some(session_id))?;
        self.store
            .save(&SessionKey::stored(tenant, session_id), state)
            .await
    }

    /// The session kept under `session_id`.
    ///
    /// # Errors
    /// [`CoreError::SessionNotFound`] (also for another tenant's id), a store failure.
    pub async fn get(&self, tenant: &str, session_id: &str) -> Result<StoredSession, CoreError> {
        let session = self.load(tenant, session_id).await?;
        Ok(StoredSession {
            session_id: session_id.to_owned(),
            session,
        })
    }

    /// The session kept under `session_id`, as a state.
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn load(
        &self,
        tenant: &str,
        session_id: &str,
    ) -> Result<AgentSessionState, CoreError> {
        crate::tenant::check("sessionId", Some(session_id))?;
        self.store
            .load(&SessionKey::stored(tenant, session_id))
            .await?
            .ok_or(CoreError::SessionNotFound)
    }

    /// Forgets the session kept under `session_id`.
    ///
    /// # Errors
    /// [`CoreError::SessionNotFound`], a store failure.
    pub async fn delete(&self, tenant: &str, session_id: &str) -> Result<(), CoreError> {
        crate::tenant::check("sessionId", Some(session_id))?;
        if self
            .store
            .delete(&SessionKey::stored(tenant, session_id))
            .await?
        {
            Ok(())
        } else {
            Err(CoreError::SessionNotFound)
        }
    }
}
