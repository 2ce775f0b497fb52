//! The lists (`GET /v1/tasks`, `/v1/posts`, `/v1/approvals`, `/v1/takeovers`,
//! `/v1/sessions`): what ran and what waits for a person, for one tenant, a page at a time.
//! Pass a page's `nextCursor` as [`ListParams::cursor`] for the next one. Reads.

use abr_protocol::{
    ListParams, Page, PendingApprovals, PostRecord, StoredSessionInfo, TakeoverSummary, TaskRecord,
};
use reqwest::Method;

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation};

impl AgentRunnerClient {
    /// `GET /v1/tasks`: the tenant's tasks (and browse sessions), newest first, in
    /// `params.state` when given.
    pub async fn list_tasks(
        &self,
        tenant: &str,
        params: &ListParams,
    ) -> Result<Page<TaskRecord>, ClientError> {
        self.list(tenant, "tasks", params).await
    }

    /// `GET /v1/posts`: the tenant's posts, newest first.
    pub async fn list_posts(
        &self,
        tenant: &str,
        params: &ListParams,
    ) -> Result<Page<PostRecord>, ClientError> {
        self.list(tenant, "posts", params).await
    }

    /// `GET /v1/approvals`: a page of tasks pending approval, and every browse action
    /// waiting for an approver.
    pub async fn pending_approvals(
        &self,
        tenant: &str,
        params: &ListParams,
    ) -> Result<PendingApprovals, ClientError> {
        self.list(tenant, "approvals", params).await
    }

    /// `GET /v1/takeovers`: the tenant's takeovers requested or active.
    pub async fn takeovers(&self, tenant: &str) -> Result<Vec<TakeoverSummary>, ClientError> {
        self.list(tenant, "takeovers", &ListParams::default()).await
    }

    /// `GET /v1/sessions`: the ids the tenant keeps sessions under, with counts only.
    pub async fn list_sessions(
        &self,
        tenant: &str,
        params: &ListParams,
    ) -> Result<Page<StoredSessionInfo>, ClientError> {
        self.list(tenant, "sessions", params).await
    }

    async fn list<T: serde::de::DeserializeOwned>(
        &self,
        tenant: &str,
        what: &str,
        params: &ListParams,
    ) -> Result<T, ClientError> {
        let builder = self
            .tenant_request(Method::GET, tenant, &["v1", what])?
            .query(params);
        self.send(Operation::List, builder).await
    }
}
