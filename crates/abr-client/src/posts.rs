//! Posts with an `Idempotency-Key` and their records (`/v1/posts/{id}`).
//!
//! [`AgentRunnerClient::post`] sends a post without a key; [`AgentRunnerClient::post_with`]
//! names a key (and a tenant), so that a post whose answer was lost (a timeout, a dropped
//! connection) can be sent again without posting twice.

use abr_protocol::{
    AgentPostResult, AssertNotPostedRequest, PostRecord, PostRequest, RecheckResult,
};
use reqwest::{Method, StatusCode};

use crate::client::AgentRunnerClient;
use crate::error::{ClientError, Operation, redact_json_error};
use crate::tasks::{header_value, json_body};

/// The headers of [`AgentRunnerClient::post_with`]; all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostOptions {
    /// `x-tenant-id`. Unset: the request's `workspaceId`, else the runner's `default`.
    pub tenant: Option<String>,
    /// `Idempotency-Key`: the same key with the same request answers the first post's
    /// outcome and never posts again; with another request it is a 409
    /// `idempotency_key_reused`.
    pub idempotency_key: Option<String>,
}

impl PostOptions {
    /// Options with an `Idempotency-Key`.
    pub fn idempotency_key(key: impl Into<String>) -> Self {
        Self {
            idempotency_key: Some(key.into()),
            ..Self::default()
        }
    }

    /// With an `x-tenant-id`.
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

/// What [`AgentRunnerClient::post_with`] answered.
#[derive(Debug, Clone, PartialEq)]
pub enum PostAnswer {
    /// The post ran (now, or earlier under the same key: `replayed`); its outcome names its
    /// record (`postId`).
    Done {
        /// The outcome.
        result: Box<AgentPostResult>,
        /// Whether an earlier request with the same key ran it.
        replayed: bool,
    },
    /// The first post under this key is still `running` on a runner that is not this one's
    /// process (HTTP 202): read its record later with [`AgentRunnerClient::get_post`].
    Running(Box<PostRecord>),
}

impl AgentRunnerClient {
    /// `POST /v1/post` with `options`' headers. Never retried by the client; with an
    /// idempotency key, resending the same request is safe.
    pub async fn post_with(
        &self,
        request: &PostRequest,
        options: &PostOptions,
    ) -> Result<PostAnswer, ClientError> {
        let mut builder = json_body(
            Operation::Post,
            self.authed(Method::POST, &["v1", "post"]),
            request,
        )?;
        for (name, value) in [
            ("x-tenant-id", &options.tenant),
            ("idempotency-key", &options.idempotency_key),
        ] {
            if let Some(value) = value {
                builder = builder.header(name, header_value(name, value)?);
            }
        }
        let (body, head) = self.send_raw(Operation::Post, builder).await?;
        let decode = |e: serde_json::Error| ClientError::Decode {
            operation: Operation::Post,
            status: head.status.as_u16(),
            message: redact_json_error(&e),
        };
        if head.status == StatusCode::ACCEPTED {
            let record: PostRecord = serde_json::from_slice(&body).map_err(decode)?;
            return Ok(PostAnswer::Running(Box::new(record)));
        }
        let result: AgentPostResult = serde_json::from_slice(&body).map_err(decode)?;
        let replayed = head
            .headers
            .get("idempotent-replayed")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        Ok(PostAnswer::Done {
            result: Box::new(result),
            replayed,
        })
    }

    /// `GET /v1/posts/{id}`: the post's record (never its refreshed session). A read: safe
    /// to retry.
    pub async fn get_post(&self, tenant: &str, id: &str) -> Result<PostRecord, ClientError> {
        let request = self.record_request(Method::GET, tenant, "posts", id, &[])?;
        self.send(Operation::GetPost, request).await
    }

    /// `POST /v1/posts/{id}/recheck`: for an uncertain post, reads the platform's read-back
    /// page in a fresh browser (never posts) and answers `confirmed`, `not_found`,
    /// `ambiguous` or `unavailable`; `confirmed` makes the post succeeded.
    pub async fn recheck_post(&self, tenant: &str, id: &str) -> Result<RecheckResult, ClientError> {
        let request = self.record_request(Method::POST, tenant, "posts", id, &["recheck"])?;
        self.send(Operation::RecheckPost, request).await
    }

    /// `POST /v1/posts/{id}/assert-not-posted`: the owner's assertion that an uncertain post
    /// was not published (recorded as an assertion, never as proof). It allows exactly one
    /// new attempt: the next [`post_with`](Self::post_with) with the same key and request.
    pub async fn assert_post_not_posted(
        &self,
        tenant: &str,
        id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<PostRecord, ClientError> {
        let builder =
            self.record_request(Method::POST, tenant, "posts", id, &["assert-not-posted"])?;
        let builder = json_body(Operation::AssertPostNotPosted, builder, request)?;
        self.send(Operation::AssertPostNotPosted, builder).await
    }
}
