//! [`SessionStore`]: where an embedding application keeps sessions between jobs.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use abr_protocol::AgentSessionState;
use async_trait::async_trait;

use crate::error::CoreError;

/// Identifies a stored session: one account of one tenant on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    /// Tenant.
    pub workspace_id: String,
    /// Account.
    pub account_id: String,
    /// Platform id.
    pub platform: String,
}

impl SessionKey {
    /// A key.
    pub fn new(
        workspace_id: impl Into<String>,
        account_id: impl Into<String>,
        platform: impl Into<String>,
    ) -> Self {
        Self {
            workspace_id: workspace_id.into(),
            account_id: account_id.into(),
            platform: platform.into(),
        }
    }
}

/// The platform part of the [`SessionKey`] of a session stored by id (`sessionId` in a
/// task or post request): `SessionKey::new(tenant, session_id, STORED_SESSION_PLATFORM)`,
/// see [`SessionKey::stored`]. Part of what a durable store keeps: never change it.
pub const STORED_SESSION_PLATFORM: &str = "";

impl SessionKey {
    /// The key of the session `session_id` a tenant stored on the runner (`sessionId`).
    pub fn stored(tenant: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self::new(tenant, session_id, STORED_SESSION_PLATFORM)
    }
}

/// Stores sessions. Implementations should encrypt at rest: a session is a credential.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// The session under `key`, if any.
    async fn load(&self, key: &SessionKey) -> Result<Option<AgentSessionState>, CoreError>;
    /// Stores (replaces) the session under `key`.
    async fn save(&self, key: &SessionKey, state: AgentSessionState) -> Result<(), CoreError>;
    /// Removes the session under `key`; whether there was one.
    async fn delete(&self, key: &SessionKey) -> Result<bool, CoreError>;
    /// The accounts of `workspace_id` with a session on `platform`, in ascending order,
    /// those after `after` only, at most `limit` (names only: nothing is opened).
    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError>;
}

/// A process-local store (tests, demos, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    sessions: Mutex<HashMap<SessionKey, AgentSessionState>>,
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, AgentSessionState>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn load(&self, key: &SessionKey) -> Result<Option<AgentSessionState>, CoreError> {
        Ok(self.map().get(key).cloned())
    }

    async fn save(&self, key: &SessionKey, state: AgentSessionState) -> Result<(), CoreError> {
        self.map().insert(key.clone(), state);
        Ok(())
    }

    async fn delete(&self, key: &SessionKey) -> Result<bool, CoreError> {
        Ok(self.map().remove(key).is_some())
    }

    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError> {
        let mut ids: Vec<String> = self
            .map()
            .keys()
            .filter(|k| k.workspace_id == workspace_id && k.platform == platform)
            .filter(|k| after.is_none_or(|a| k.account_id.as_str() > a))
            .map(|k| k.account_id.clone())
            .collect();
        ids.sort();
        ids.truncate(limit);
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::Cookie;

    #[tokio::test]
    async fn stores_by_full_key() {
        let store = InMemorySessionStore::new();
        let key = SessionKey::new("w", "a", "demo");
        let other = SessionKey::new("w", "b", "demo");
        let state = AgentSessionState {
            cookies: vec![Cookie::new("sid", "v", "example.com")],
            ..AgentSessionState::default()
        };
        store.save(&key, state.clone()).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), Some(state));
        assert_eq!(store.load(&other).await.unwrap(), None);
        assert!(store.delete(&key).await.unwrap());
        assert!(!store.delete(&key).await.unwrap());
        assert_eq!(store.load(&key).await.unwrap(), None);
    }
}
