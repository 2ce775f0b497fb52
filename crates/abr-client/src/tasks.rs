//! The task API (`/v1/tasks`) and sessions kept on the runner (`/v1/sessions`).
//!
//! Every call names its tenant (`x-tenant-id`): another tenant's task or session is a 404,
//! like an unknown one. Ids travel as one percent-encoded path segment each.

use std::time::Duration;

use abr_protocol::{
    ApprovalLink, ApproveRequest, AssertNotPostedRequest, RecheckResult, RejectRequest,
    StoreSessionRequest, StoredSession, StoredSessionInfo, TaskRecord, TaskRequest,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Serialize;

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation, redact_json_error};

/// The runner's longest long poll ([`AgentRunnerClient::wait_task`]).
pub const MAX_TASK_WAIT: Duration = Duration::from_secs(60);

/// Time a long poll's call may take beyond the wait itself (the runner answers after its
/// last look at the record, up to a poll interval later).
const WAIT_SLACK: Duration = Duration::from_secs(15);

/// The headers of [`AgentRunnerClient::create_task`]; all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOptions {
    /// `x-tenant-id`. Unset: the request's `tenantId`, else the runner's `default` tenant.
    /// Must agree with the request's `tenantId` when both are set.
    pub tenant: Option<String>,
    /// `x-proposal-id`: the orchestrator's proposal. Must agree with the request's
    /// `proposalId` when both are set.
    pub proposal_id: Option<String>,
    /// `Idempotency-Key`: the same key with the same request answers the task created first
    /// (`replayed`), so a create whose answer was lost can be sent again safely; the same
    /// key with another request is a 409 `idempotency_key_reused`.
    pub idempotency_key: Option<String>,
}

impl TaskOptions {
    /// Options for `tenant`.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        Self {
            tenant: Some(tenant.into()),
            ..Self::default()
        }
    }

    /// With an `x-proposal-id`.
    #[must_use]
    pub fn with_proposal_id(mut self, proposal_id: impl Into<String>) -> Self {
        self.proposal_id = Some(proposal_id.into());
        self
    }

    /// With an `Idempotency-Key`.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}

impl AgentRunnerClient {
    /// `POST /v1/tasks`: stores a step plan. Answers the record (`pending_approval`, or
    /// `queued` when the runner's approval rule lets it through) and whether it was
    /// **replayed**: `true` when an earlier create with the same
    /// [`idempotency_key`](TaskOptions::idempotency_key) made it (HTTP 200 with
    /// `idempotent-replayed`), `false` for a new task (201).
    ///
    /// Not idempotent without a key: a resend would store a second task.
    pub async fn create_task(
        &self,
        request: &TaskRequest,
        options: &TaskOptions,
    ) -> Result<(TaskRecord, bool), ClientError> {
        let mut builder = json_body(
            Operation::CreateTask,
            self.authed(Method::POST, &["v1", "tasks"]),
            request,
        )?;
        for (name, value) in [
            ("x-tenant-id", &options.tenant),
            ("x-proposal-id", &options.proposal_id),
            ("idempotency-key", &options.idempotency_key),
        ] {
            if let Some(value) = value {
                builder = builder.header(name, header_value(name, value)?);
            }
        }
        let (record, head) = self
            .send_with_head::<TaskRecord>(Operation::CreateTask, builder)
            .await?;
        let replayed = head.status == StatusCode::OK
            || head
                .headers
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        Ok((record, replayed))
    }

    /// `GET /v1/tasks/{id}`: the task's record now. A read: safe to retry.
    pub async fn get_task(&self, tenant: &str, id: &str) -> Result<TaskRecord, ClientError> {
        let request = self.task_request(Method::GET, tenant, id, &[])?;
        self.send(Operation::GetTask, request).await
    }

    /// `GET /v1/tasks/{id}?waitSecs=N`: a long poll. Answers once the task ended, or after
    /// `wait` (rounded up to whole seconds, at most [`MAX_TASK_WAIT`]; the runner also keeps
    /// within its request deadline) with the record as it then is: check
    /// [`state`](TaskRecord::state). This call's deadline is the client's
    /// [timeout](crate::AgentRunnerClientBuilder::timeout) or the wait plus a margin,
    /// whichever is longer. A read: safe to retry.
    pub async fn wait_task(
        &self,
        tenant: &str,
        id: &str,
        wait: Duration,
    ) -> Result<TaskRecord, ClientError> {
        let secs = wait_secs(wait);
        let mut request = self.task_request(Method::GET, tenant, id, &[])?;
        if secs > 0 {
            request = request
                .query(&[("waitSecs", secs)])
                .timeout(self.timeout().max(Duration::from_secs(secs) + WAIT_SLACK));
        }
        self.send(Operation::GetTask, request).await
    }

    /// `POST /v1/tasks/{id}/approve`: approves the plan whose hash the approver saw
    /// ([`plan_hash`](TaskRecord::plan_hash)); the task then runs in the background. Follow
    /// it with [`wait_task`](Self::wait_task). An approved plan runs at most once.
    pub async fn approve_task(
        &self,
        tenant: &str,
        id: &str,
        request: &ApproveRequest,
    ) -> Result<TaskRecord, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["approve"])?;
        let builder = json_body(Operation::ApproveTask, builder, request)?;
        self.send(Operation::ApproveTask, builder).await
    }

    /// `POST /v1/tasks/{id}/approval-link`: a one-time link for a person without a key to
    /// approve or reject the pending task as this approver (an approver's key other than
    /// the proposer's). The URL is a credential: give it to that person only.
    pub async fn approval_link(&self, tenant: &str, id: &str) -> Result<ApprovalLink, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["approval-link"])?;
        self.send(Operation::ApprovalLink, builder).await
    }

    /// `POST /v1/tasks/{id}/reject`: the task ends `rejected` without running.
    pub async fn reject_task(
        &self,
        tenant: &str,
        id: &str,
        request: &RejectRequest,
    ) -> Result<TaskRecord, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["reject"])?;
        let builder = json_body(Operation::RejectTask, builder, request)?;
        self.send(Operation::RejectTask, builder).await
    }

    /// `POST /v1/tasks/{id}/recheck`: for an `uncertain` task, opens its target URL in a
    /// fresh browser with its session and runs only the verification (no step). The task
    /// stays `uncertain` whatever the answer: a `confirmed` is evidence for the caller.
    pub async fn recheck_task(&self, tenant: &str, id: &str) -> Result<RecheckResult, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["recheck"])?;
        self.send(Operation::RecheckTask, builder).await
    }

    /// `POST /v1/tasks/{id}/assert-not-posted`: the owner states that an `uncertain` task did
    /// not happen. Recorded as an assertion (never as proof: the task stays `uncertain`); it
    /// allows exactly one [`retry_task`](Self::retry_task).
    pub async fn assert_task_not_posted(
        &self,
        tenant: &str,
        id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<TaskRecord, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["assert-not-posted"])?;
        let builder = json_body(Operation::AssertTaskNotPosted, builder, request)?;
        self.send(Operation::AssertTaskNotPosted, builder).await
    }

    /// `POST /v1/tasks/{id}/retry`: a new attempt of a `failed` or `needs_reauth` task, or of
    /// an `uncertain` one with an unspent owner assertion. Answers the **new** task
    /// ([`retry_of`](TaskRecord::retry_of) names the first attempt), waiting for approval as
    /// the runner's rule says. A task is retried at most once: retry the latest attempt.
    pub async fn retry_task(&self, tenant: &str, id: &str) -> Result<TaskRecord, ClientError> {
        let builder = self.task_request(Method::POST, tenant, id, &["retry"])?;
        self.send(Operation::RetryTask, builder).await
    }

    /// `GET /v1/tasks/{id}/screenshots/{name}`: a screenshot the task took (its names are in
    /// [`screenshots`](TaskRecord::screenshots)): a redacted frame, JPEG bytes (`image/png`
    /// for screenshots kept before ABR redacted them). Any other answer is a
    /// [`ClientError::Decode`]. A read: safe to retry.
    pub async fn task_screenshot(
        &self,
        tenant: &str,
        id: &str,
        name: &str,
    ) -> Result<Vec<u8>, ClientError> {
        non_empty("screenshot name", name)?;
        let builder = self
            .task_request(Method::GET, tenant, id, &["screenshots", name])?
            .header(ACCEPT, HeaderValue::from_static("image/jpeg, image/png"));
        let operation = Operation::TaskScreenshot;
        let (body, head) = self.send_raw(operation, builder).await?;
        let content_type = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !is_image_type(content_type) {
            return Err(ClientError::Decode {
                operation,
                status: head.status.as_u16(),
                message: "the answer is not image/jpeg or image/png".to_owned(),
            });
        }
        Ok(body)
    }

    /// `PUT /v1/sessions/{id}`: keeps `request.session` on the runner under `id`, filtered
    /// to the platform's scope (and `request.scope`) first; answers counts, never a value.
    /// Tasks and posts then run with `sessionId`, and write the refreshed session back. A
    /// second call replaces the session: safe to retry.
    pub async fn store_session(
        &self,
        tenant: &str,
        id: &str,
        request: &StoreSessionRequest,
    ) -> Result<StoredSessionInfo, ClientError> {
        let builder = self.session_request(Method::PUT, tenant, id)?;
        let builder = json_body(Operation::StoreSession, builder, request)?;
        self.send(Operation::StoreSession, builder).await
    }

    /// `GET /v1/sessions/{id}`: the session as kept, with every refresh since. A read.
    pub async fn session(&self, tenant: &str, id: &str) -> Result<StoredSession, ClientError> {
        let builder = self.session_request(Method::GET, tenant, id)?;
        self.send(Operation::GetSession, builder).await
    }

    /// `DELETE /v1/sessions/{id}`: forgets the session. An unknown id is a 404
    /// `session_not_found` (so a resend after a lost answer is one too).
    pub async fn delete_session(&self, tenant: &str, id: &str) -> Result<(), ClientError> {
        let builder = self.session_request(Method::DELETE, tenant, id)?;
        self.send_raw(Operation::DeleteSession, builder)
            .await
            .map(drop)
    }

    /// An authenticated request to `/v1/tasks/{id}/{rest...}` for `tenant`.
    fn task_request(
        &self,
        method: Method,
        tenant: &str,
        id: &str,
        rest: &[&str],
    ) -> Result<RequestBuilder, ClientError> {
        self.record_request(method, tenant, "tasks", id, rest)
    }

    /// An authenticated request to `/v1/{collection}/{id}/{rest...}` for `tenant` (a task's
    /// or a post's record).
    pub(crate) fn record_request(
        &self,
        method: Method,
        tenant: &str,
        collection: &str,
        id: &str,
        rest: &[&str],
    ) -> Result<RequestBuilder, ClientError> {
        non_empty(&format!("{} id", collection.trim_end_matches('s')), id)?;
        let mut segments = vec!["v1", collection, id];
        segments.extend_from_slice(rest);
        self.tenant_request(method, tenant, &segments)
    }

    /// An authenticated request to `/v1/sessions/{id}` for `tenant`.
    fn session_request(
        &self,
        method: Method,
        tenant: &str,
        id: &str,
    ) -> Result<RequestBuilder, ClientError> {
        non_empty("session id", id)?;
        self.tenant_request(method, tenant, &["v1", "sessions", id])
    }

    pub(crate) fn tenant_request(
        &self,
        method: Method,
        tenant: &str,
        segments: &[&str],
    ) -> Result<RequestBuilder, ClientError> {
        non_empty("tenant", tenant)?;
        let tenant = header_value("x-tenant-id", tenant)?;
        Ok(self.authed(method, segments).header("x-tenant-id", tenant))
    }
}

/// `request` with `body` as its JSON body.
pub(crate) fn json_body<B: Serialize>(
    operation: Operation,
    request: RequestBuilder,
    body: &B,
) -> Result<RequestBuilder, ClientError> {
    let json = serde_json::to_vec(body).map_err(|e| {
        ClientError::argument(format!(
            "{operation}: the request cannot be serialized ({})",
            redact_json_error(&e)
        ))
    })?;
    Ok(request.header(CONTENT_TYPE, "application/json").body(json))
}

/// `value` as the value of header `name`; the message never echoes it.
pub(crate) fn header_value(name: &str, value: &str) -> Result<HeaderValue, ClientError> {
    if value.trim().is_empty() {
        return Err(ClientError::argument(format!("{name} is empty")));
    }
    HeaderValue::from_str(value)
        .map_err(|_| ClientError::argument(format!("{name} is not a valid header value")))
}

pub(crate) fn non_empty(what: &str, value: &str) -> Result<(), ClientError> {
    if value.is_empty() {
        return Err(ClientError::argument(format!("the {what} is empty")));
    }
    Ok(())
}

/// `waitSecs` for `wait`: whole seconds rounded up, at most [`MAX_TASK_WAIT`].
fn wait_secs(wait: Duration) -> u64 {
    let wait = wait.min(MAX_TASK_WAIT);
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Whether a `Content-Type` is `image/jpeg` or `image/png` (parameters and case aside).
fn is_image_type(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| {
        let t = t.trim();
        t.eq_ignore_ascii_case("image/jpeg") || t.eq_ignore_ascii_case("image/png")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_round_up_to_whole_seconds_and_are_capped() {
        assert_eq!(wait_secs(Duration::ZERO), 0);
        assert_eq!(wait_secs(Duration::from_millis(1)), 1);
        assert_eq!(wait_secs(Duration::from_millis(2500)), 3);
        assert_eq!(wait_secs(Duration::from_secs(30)), 30);
        assert_eq!(wait_secs(Duration::from_secs(3600)), 60);
    }

    #[test]
    fn png_content_types() {
        assert!(is_image_type("image/png"));
        assert!(is_image_type("Image/PNG; charset=binary"));
        assert!(is_image_type("image/jpeg"));
        assert!(!is_image_type("text/html"));
        assert!(!is_image_type(""));
    }

    #[test]
    fn header_values_are_checked_without_echoing_them() {
        let e = header_value("x-tenant-id", "bad\nvalue").unwrap_err();
        assert!(!e.to_string().contains("bad"), "{e}");
        assert!(header_value("x-tenant-id", "  ").is_err());
        assert!(header_value("x-tenant-id", "tenant-1").is_ok());
    }
}
