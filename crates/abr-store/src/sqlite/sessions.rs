//! [`SessionStore`] on SQLite: sessions encrypted at rest, bound to their row.

use abr_core::SessionKey as Key;
use abr_core::{CoreError, SessionStore};
use abr_protocol::AgentSessionState;
use async_trait::async_trait;
use rusqlite::OptionalExtension as _;

use crate::codec::session_aad as aad;
use crate::{SqliteStore, StoreError};

#[async_trait]
impl SessionStore for SqliteStore {
    async fn load(&self, key: &Key) -> Result<Option<AgentSessionState>, CoreError> {
        let k = key.clone();
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT encrypted, payload FROM sessions
                         WHERE workspace_id = ?1 AND account_id = ?2 AND platform = ?3",
                        (&k.workspace_id, &k.account_id, &k.platform),
                        |row| Ok((row.get::<_, bool>(0)?, row.get::<_, Vec<u8>>(1)?)),
                    )
                    .optional()?)
            })
            .await?;
        let Some((encrypted, payload)) = row else {
            return Ok(None);
        };
        let json = self
            .sealer
            .open_payload(encrypted, payload, &aad(key), false)?;
        let state = serde_json::from_slice(&json)
            .map_err(|e| StoreError::Record(format!("a session: {}", e.classify_name())))?;
        Ok(Some(state))
    }

    async fn save(&self, key: &Key, state: AgentSessionState) -> Result<(), CoreError> {
        let json = serde_json::to_vec(&state)
            .map_err(|e| StoreError::Record(format!("a session: {}", e.classify_name())))?;
        let (encrypted, payload) = self.sealer.seal_payload(json, &aad(key), true)?;
        let k = key.clone();
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| StoreError::Record(e.to_string()))?;
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO sessions (workspace_id, account_id, platform, encrypted, payload, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (workspace_id, account_id, platform)
                 DO UPDATE SET encrypted = ?4, payload = ?5, updated_at = ?6",
                (&k.workspace_id, &k.account_id, &k.platform, encrypted, &payload, &now),
            )?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn delete(&self, key: &Key) -> Result<bool, CoreError> {
        let k = key.clone();
        let removed = self
            .with(move |conn| {
                Ok(conn.execute(
                    "DELETE FROM sessions WHERE workspace_id = ?1 AND account_id = ?2 AND platform = ?3",
                    (&k.workspace_id, &k.account_id, &k.platform),
                )?)
            })
            .await?;
        Ok(removed > 0)
    }

    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError> {
        let (w, p, a) = (
            workspace_id.to_owned(),
            platform.to_owned(),
            after.map(str::to_owned),
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(self
            .with(move |conn| {
                let mut statement = conn.prepare(
                    "SELECT account_id FROM sessions
                     WHERE workspace_id = ?1 AND platform = ?2 AND (?3 IS NULL OR account_id > ?3)
                     ORDER BY account_id LIMIT ?4",
                )?;
                let ids = statement
                    .query_map((&w, &p, &a, limit), |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()?;
                Ok(ids)
            })
            .await?)
    }
}

/// serde_json's error category, never its message (which may quote the data).
trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "io",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "eof",
        }
    }
}
