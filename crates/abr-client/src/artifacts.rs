//! A tenant's artifacts (`/v1/artifacts`): files kept for plans' `upload` steps. The
//! runner sniffs their type from their bytes, caps their size and the tenant's quota, and
//! keeps them sealed; another tenant's artifact is a 404 `artifact_not_found`.

use abr_protocol::{ArtifactInfo, ArtifactList};
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderValue};

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation};
use crate::tasks::non_empty;

impl AgentRunnerClient {
    /// `POST /v1/artifacts?name=`: keeps `bytes` as a file named `name` (what the page's
    /// file input receives) for the tenant's plans to upload. Refused with 413
    /// `artifact_too_large`, 415 `artifact_type_refused` (the type is sniffed from the
    /// bytes), 409 `artifact_quota`. Not idempotent: each call keeps a new artifact.
    pub async fn upload_artifact(
        &self,
        tenant: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<ArtifactInfo, ClientError> {
        non_empty("name", name)?;
        let builder = self
            .tenant_request(Method::POST, tenant, &["v1", "artifacts"])?
            .query(&[("name", name)])
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            )
            .body(bytes);
        self.send(Operation::UploadArtifact, builder).await
    }

    /// `GET /v1/artifacts`: the tenant's artifacts, newest first. A read.
    pub async fn artifacts(&self, tenant: &str) -> Result<ArtifactList, ClientError> {
        let builder = self.tenant_request(Method::GET, tenant, &["v1", "artifacts"])?;
        self.send(Operation::ListArtifacts, builder).await
    }

    /// `GET /v1/artifacts/{id}`: one artifact's description. A read.
    pub async fn artifact(&self, tenant: &str, id: &str) -> Result<ArtifactInfo, ClientError> {
        non_empty("artifact id", id)?;
        let builder = self.tenant_request(Method::GET, tenant, &["v1", "artifacts", id])?;
        self.send(Operation::GetArtifact, builder).await
    }

    /// `GET /v1/artifacts/{id}/content`: one artifact's bytes. A read.
    pub async fn artifact_content(&self, tenant: &str, id: &str) -> Result<Vec<u8>, ClientError> {
        non_empty("artifact id", id)?;
        let builder =
            self.tenant_request(Method::GET, tenant, &["v1", "artifacts", id, "content"])?;
        let (body, _) = self.send_raw(Operation::ArtifactContent, builder).await?;
        Ok(body)
    }

    /// `DELETE /v1/artifacts/{id}`: forgets one artifact (a task not run yet that names it
    /// then ends `failed`, nothing done).
    pub async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<(), ClientError> {
        non_empty("artifact id", id)?;
        let builder = self.tenant_request(Method::DELETE, tenant, &["v1", "artifacts", id])?;
        self.send_raw(Operation::DeleteArtifact, builder)
            .await
            .map(drop)
    }
}
