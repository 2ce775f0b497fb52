//! The keys API (`/v1/keys`): create, list and revoke the runner's API keys. Operators only
//! (a `403 forbidden` otherwise).

use abr_protocol::{CreatedKey, KeyInfo, KeyRequest, KeysResponse};
use reqwest::Method;

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation};
use crate::tasks::non_empty;

impl AgentRunnerClient {
    /// `POST /v1/keys`: a new key and its token, which the runner shows this once (keep
    /// it: only its digest is stored). Not idempotent: a resend creates a second key.
    pub async fn create_key(&self, request: &KeyRequest) -> Result<CreatedKey, ClientError> {
        self.post_json(Operation::CreateKey, &["v1", "keys"], request)
            .await
    }

    /// `GET /v1/keys`: every key, revoked ones included, oldest first; never a token.
    pub async fn keys(&self) -> Result<Vec<KeyInfo>, ClientError> {
        let request = self.authed(Method::GET, &["v1", "keys"]);
        let response: KeysResponse = self.send(Operation::ListKeys, request).await?;
        Ok(response.keys)
    }

    /// `DELETE /v1/keys/{id}`: revokes the key (from then on it authenticates nobody);
    /// answers it. Revoking a revoked key answers it unchanged.
    pub async fn revoke_key(&self, key_id: &str) -> Result<KeyInfo, ClientError> {
        non_empty("key id", key_id)?;
        let request = self.authed(Method::DELETE, &["v1", "keys", key_id]);
        self.send(Operation::RevokeKey, request).await
    }
}
