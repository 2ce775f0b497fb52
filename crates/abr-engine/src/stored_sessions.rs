//! [`StoredSessions`]: sessions a tenant keeps on the runner under ids of its own
//! (`/v1/sessions/{id}`, `sessionId` in tasks and posts), scoped going in like every
//! session, on any [`SessionStore`] (under [`SessionKey::stored`]). The one way the engine
//! keeps a session by id: the HTTP API, the post journal and the task part all go through
//! it.

use std::sync::Arc;

use abr_core::clock::Clock;
use abr_core::error::CoreError;
use abr_core::principal::Right;
use abr_core::scope_io;
use abr_core::scope_io::Scopes;
use abr_core::store::{STORED_SESSION_PLATFORM, SessionKey, SessionStore};
use abr_core::strategy::StrategyPolicy;
use abr_protocol::{AgentSessionState, StoreSessionRequest, StoredSession, StoredSessionInfo};

use crate::error::EngineError;

/// Sessions stored by id, per tenant.
#[derive(Clone)]
pub(crate) struct StoredSessions {
    store: Arc<dyn SessionStore>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for StoredSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSessions").finish_non_exhaustive()
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The platform a session is bound to: the one it was kept for or read out of
/// (`metadata.platform`), whose policy travels with it.
pub(crate) fn bound_platform(state: &AgentSessionState) -> Option<&str> {
    state.metadata.as_ref()?.platform.as_deref()
}

impl StoredSessions {
    /// Sessions in `store`; `clock` stamps what a refresh wrote.
    pub(crate) fn new(store: Arc<dyn SessionStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// Keeps `request.session` under `session_id`, scoped by the policy of the platform it
    /// is bound to and the request's scope (at least one is required), replacing what was
    /// there. `platforms` answers a registered platform's policy.
    ///
    /// The platform is the one the session is bound to (the one the id
    /// was kept for, else the one the session was read out of), else the one the request
    /// names: storing a session again never drops its platform, so a read-only or
    /// attended-only platform's session cannot be laundered writable by keeping its cookies
    /// again with a scope only, over its id or under a new one.
    ///
    /// # Errors
    /// A bad id, no scope, an invalid scope, an unknown platform, [`EngineError::SessionBound`]
    /// for a request naming another platform than the session's, a store failure (e.g. no
    /// key to encrypt it with).
    pub(crate) async fn put(
        &self,
        tenant: &str,
        session_id: &str,
        request: &StoreSessionRequest,
        platforms: &(dyn Fn(&str) -> Option<StrategyPolicy> + Sync),
    ) -> Result<StoredSessionInfo, EngineError> {
        abr_core::tenant::check("tenant", Some(tenant))?;
        abr_core::tenant::check("sessionId", Some(session_id))?;
        let extra = scope_io::request_scope(request.scope.as_ref())?;
        let kept = self
            .store
            .load(&SessionKey::stored(tenant, session_id))
            .await?;
        let bound = Self::binding(kept.as_ref(), &request.session, platforms)?;
        let named = match (&request.platform, bound) {
            (Some(named), Some((platform, _))) if *named != platform => {
                return Err(EngineError::SessionBound(platform));
            }
            (_, Some((platform, policy))) => Some((platform, policy)),
            (Some(named), None) => Some((
                named.clone(),
                platforms(named).ok_or_else(|| CoreError::UnknownPlatform(named.clone()))?,
            )),
            (None, None) => None,
        };
        let unscoped = StrategyPolicy {
            allow_interactive_capture: false,
            allow_unattended: false,
            scope: None,
            read_only: false,
            screenshots: true,
            network: abr_core::guard::NetworkRules::default(),
            guard: None,
            redaction: abr_core::guard::PageRedaction::default(),
        };
        let (policy, platform) = match &named {
            Some((name, policy)) => (policy.clone(), name.as_str()),
            None if extra.is_some() => (unscoped, "stored"),
            None => {
                return Err(EngineError::from(CoreError::InvalidInput(
                    "a stored session needs a platform or a scope: nothing is kept unscoped".into(),
                )));
            }
        };
        if policy.scope.is_none() && extra.is_none() {
            return Err(EngineError::from(CoreError::InvalidInput(format!(
                "the platform {platform} declares no session scope: give a scope"
            ))));
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

    /// The registered platform (with its policy) a session being stored is bound to: the
    /// one `kept` (what the id holds now) was kept for, else the one `incoming` was read out
    /// of (its `metadata.platform`, as every session the runner hands out names it). A name
    /// no platform is registered under binds nothing.
    ///
    /// # Errors
    /// [`EngineError::SessionBound`] when the two name different platforms.
    fn binding(
        kept: Option<&AgentSessionState>,
        incoming: &AgentSessionState,
        platforms: &(dyn Fn(&str) -> Option<StrategyPolicy> + Sync),
    ) -> Result<Option<(String, StrategyPolicy)>, EngineError> {
        let registered = |state: &AgentSessionState| {
            let name = bound_platform(state)?;
            let policy = platforms(name)?;
            Some((name.to_owned(), policy))
        };
        let kept = kept.and_then(registered);
        match (kept, registered(incoming)) {
            (Some((kept, _)), Some((carried, _))) if kept != carried => {
                Err(EngineError::SessionBound(kept))
            }
            (Some(kept), _) => Ok(Some(kept)),
            (None, carried) => Ok(carried),
        }
    }

    /// The session kept under `session_id` for `tenant`, to be read out of the runner, and
    /// the right that reading it out takes: a session bound to a platform that is read-only
    /// or forbids unattended runs leaves only to an operator
    /// ([`Right::ExportBoundSession`]): its cookies, anywhere else, would run without the
    /// platform's policy (kept again with a scope only, or used outside ABR), and the
    /// binding it names can be edited out of the document. The door checks it.
    ///
    /// # Errors
    /// [`EngineError::SessionNotFound`] (also for another tenant's id), a store failure.
    pub(crate) async fn export(
        &self,
        tenant: &str,
        session_id: &str,
        platforms: &(dyn Fn(&str) -> Option<StrategyPolicy> + Sync),
    ) -> Result<(StoredSession, Option<Right>), EngineError> {
        let stored = self.get(tenant, session_id).await?;
        let restrictive = bound_platform(&stored.session)
            .and_then(platforms)
            .is_some_and(|policy| policy.read_only || !policy.allow_unattended);
        Ok((stored, restrictive.then_some(Right::ExportBoundSession)))
    }

    /// Keeps a session that is already scoped (a capture's, naming its platform), under
    /// `session_id`: refused over an id bound to another platform, which keeps its binding
    /// as [`Self::put`] does.
    ///
    /// # Errors
    /// A bad id, [`EngineError::SessionBound`], a store failure (e.g. no key to encrypt it
    /// with).
    pub(crate) async fn put_scoped(
        &self,
        tenant: &str,
        session_id: &str,
        state: AgentSessionState,
        platforms: &(dyn Fn(&str) -> Option<StrategyPolicy> + Sync),
    ) -> Result<(), EngineError> {
        abr_core::tenant::check("tenant", Some(tenant))?;
        abr_core::tenant::check("sessionId", Some(session_id))?;
        let key = SessionKey::stored(tenant, session_id);
        let kept = self.store.load(&key).await?;
        let platform = bound_platform(&state);
        if let Some((bound, _)) = Self::binding(kept.as_ref(), &state, platforms)?
            && platform != Some(bound.as_str())
        {
            return Err(EngineError::SessionBound(bound));
        }
        Ok(self.store.save(&key, state).await?)
    }

    /// One page of the ids `tenant` keeps sessions under, in order, after `after`, with how
    /// many cookies and origins each holds (never a value).
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn list(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredSessionInfo>, EngineError> {
        let ids = self
            .store
            .accounts(tenant, STORED_SESSION_PLATFORM, after, limit)
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // Gone between the two reads: not listed.
            let Some(state) = self.store.load(&SessionKey::stored(tenant, &id)).await? else {
                continue;
            };
            out.push(StoredSessionInfo {
                session_id: id,
                cookie_count: count(state.cookies.len()),
                origin_count: count(state.origins.len()),
                scope_report: None,
            });
        }
        Ok(out)
    }

    /// The session kept under `session_id`.
    ///
    /// # Errors
    /// [`EngineError::SessionNotFound`] (also for another tenant's id), a store failure.
    pub(crate) async fn get(
        &self,
        tenant: &str,
        session_id: &str,
    ) -> Result<StoredSession, EngineError> {
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
    pub(crate) async fn load(
        &self,
        tenant: &str,
        session_id: &str,
    ) -> Result<AgentSessionState, EngineError> {
        abr_core::tenant::check("sessionId", Some(session_id))?;
        self.store
            .load(&SessionKey::stored(tenant, session_id))
            .await?
            .ok_or(EngineError::SessionNotFound)
    }

    /// The session a job (a post, a task) that names `session_id` runs with, from
    /// `sessions` (the runner's, when it keeps sessions); `None` when the job names none.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] when the runner keeps no sessions,
    /// [`EngineError::SessionNotFound`], a bad id, a store failure.
    pub(crate) async fn for_job(
        sessions: Option<&Self>,
        tenant: &str,
        session_id: Option<&str>,
    ) -> Result<Option<AgentSessionState>, EngineError> {
        let Some(session_id) = session_id else {
            return Ok(None);
        };
        let Some(sessions) = sessions else {
            return Err(EngineError::from(CoreError::InvalidInput(
                "this runner keeps no sessions: send `session` instead of `sessionId`".into(),
            )));
        };
        sessions.load(tenant, session_id).await.map(Some)
    }

    /// Writes back the state a job left (already scoped) under `session_id`, still bound to
    /// the platform it was kept for (a refresh never changes whose policy it carries): a
    /// failure is logged, never the job's (its outcome stands).
    pub(crate) async fn write_back(
        &self,
        tenant: &str,
        session_id: &str,
        mut state: AgentSessionState,
    ) {
        let key = SessionKey::stored(tenant, session_id);
        if let Ok(Some(kept)) = self.store.load(&key).await
            && let Some(bound) = kept.metadata.and_then(|m| m.platform)
            && let Some(metadata) = state.metadata.as_mut()
        {
            metadata.platform = Some(bound);
        }
        if let Err(e) = self.store.save(&key, state).await {
            tracing::warn!(error = %e, "could not store the refreshed session");
        }
    }

    /// Forgets the session kept under `session_id`.
    ///
    /// # Errors
    /// [`EngineError::SessionNotFound`], a store failure.
    pub(crate) async fn delete(&self, tenant: &str, session_id: &str) -> Result<(), EngineError> {
        abr_core::tenant::check("sessionId", Some(session_id))?;
        if self
            .store
            .delete(&SessionKey::stored(tenant, session_id))
            .await?
        {
            Ok(())
        } else {
            Err(EngineError::SessionNotFound)
        }
    }
}
