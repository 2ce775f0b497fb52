//! Stored sessions ([`SessionStore`]) on PostgreSQL, sealed and bound to their row.

use abr_core::SessionKey as Key;
use abr_core::{CoreError, SessionStore};
use abr_protocol::AgentSessionState;
use async_trait::async_trait;

use crate::codec::{session_aad as aad, timestamp};
use crate::{PgStore, StoreError};

#[async_trait]
impl SessionStore for PgStore {
    async fn load(&self, key: &Key) -> Result<Option<AgentSessionState>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT encrypted, payload FROM sessions
                 WHERE workspace_id = $1 AND account_id = $2 AND platform = $3",
                &[&key.workspace_id, &key.account_id, &key.platform],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let encrypted: bool = row.try_get(0).map_err(StoreError::from)?;
        let payload: Vec<u8> = row.try_get(1).map_err(StoreError::from)?;
        let json = self
            .sealer
            .open_payload(encrypted, payload, &aad(key), false)?;
        let state =
            serde_json::from_slice(&json).map_err(|_| StoreError::Record("a session".into()))?;
        Ok(Some(state))
    }

    async fn save(&self, key: &Key, state: AgentSessionState) -> Result<(), CoreError> {
        let json =
            serde_json::to_vec(&state).map_err(|_| StoreError::Record("a session".into()))?;
        let (encrypted, payload) = self.sealer.seal_payload(json, &aad(key), true)?;
        let now = timestamp(time::OffsetDateTime::now_utc(), "the current time")?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO sessions
                    (workspace_id, account_id, platform, encrypted, payload, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (workspace_id, account_id, platform)
                 DO UPDATE SET encrypted = $4, payload = $5, updated_at = $6",
                &[
                    &key.workspace_id,
                    &key.account_id,
                    &key.platform,
                    &encrypted,
                    &payload,
                    &now,
                ],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn delete(&self, key: &Key) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let removed = client
            .execute(
                "DELETE FROM sessions
                 WHERE workspace_id = $1 AND account_id = $2 AND platform = $3",
                &[&key.workspace_id, &key.account_id, &key.platform],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(removed > 0)
    }

    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT account_id FROM sessions
                 WHERE workspace_id = $1 AND platform = $2
                    AND ($3::text IS NULL OR account_id > $3)
                 ORDER BY account_id COLLATE \"C\" LIMIT $4",
                &[&workspace_id, &platform, &after, &limit],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<Vec<String>, _>>()
            .map_err(StoreError::from)?)
    }
}
