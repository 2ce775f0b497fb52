//! Posting: [`PostRequest`], [`PostContent`] and the three-outcome [`AgentPostResult`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use time::OffsetDateTime;

use crate::{AgentSessionState, ErrorBody, OwnerAssertion, RecheckResult, SessionScopeSpec};

/// What to publish.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PostContent {
    /// Body text of the post.
    pub text: String,
    /// Optional link to attach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Media attachments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<MediaAttachment>,
}

impl PostContent {
    /// A text-only post.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            link: None,
            media: Vec::new(),
        }
    }
}

impl std::fmt::Debug for PostContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Posted content is user data: only sizes are shown.
        f.debug_struct("PostContent")
            .field("text_len", &self.text.len())
            .field("has_link", &self.link.is_some())
            .field("media", &self.media)
            .finish()
    }
}

/// One media file, carried inline.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MediaAttachment {
    /// File name offered to the site's upload field, e.g. `photo.png`.
    pub file_name: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// File content, standard base64.
    pub data_base64: String,
}

impl std::fmt::Debug for MediaAttachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaAttachment")
            .field("mime_type", &self.mime_type)
            .field("data_base64_len", &self.data_base64.len())
            .finish_non_exhaustive()
    }
}

/// `POST /v1/post`: act unattended with a stored session. Unknown fields are refused (a
/// misspelt flag must not post).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PostRequest {
    /// Platform (strategy id).
    pub platform: String,
    /// The session to replay; it is scoped by the platform's policy before use. Omitted (or
    /// empty) when `sessionId` names a session stored on the runner: exactly one of the two
    /// is given.
    #[serde(default)]
    pub session: AgentSessionState,
    /// A session stored on the runner, instead of `session`; the refreshed (scoped) state is
    /// written back to it after the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What to post.
    pub content: PostContent,
    /// Tenant ids, recorded in audit events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Tenant ids, recorded in audit events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// An extra scope for this job only, applied after the platform's own: it can only
    /// narrow what the session carries, never widen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<SessionScopeSpec>,
}

/// The stage of a post at which it failed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum FailureStage {
    /// Before composing: session check, navigation to the composer.
    Precheck,
    /// Filling in the post.
    Compose,
    /// Uploading media.
    Media,
    /// Submitting.
    Submit,
    /// Proving the outcome.
    Verify,
}

impl FailureStage {
    /// Whether a failure at this stage happened before anything could have been submitted.
    pub fn is_before_submit(self) -> bool {
        self < Self::Submit
    }
}

/// How an outcome was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum VerificationMethod {
    /// The site showed a success confirmation.
    Toast,
    /// The post's permalink was found and loaded.
    Permalink,
    /// The post was read back from the account's own feed or an API.
    Readback,
    /// Proven after the fact: a read-only re-check of an uncertain post found it (the
    /// evidence is the re-check's).
    Recheck,
}

/// Proof that the action happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// How it was proven.
    pub method: VerificationMethod,
    /// What was seen.
    #[serde(default)]
    pub evidence: VerificationEvidence,
}

/// What a strategy observed when it proved an outcome. Never contains the posted content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationEvidence {
    /// URL of the published post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permalink: Option<String>,
    /// The site's id of the published post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
    /// A short human-readable note on what was observed (e.g. `toast .toast-success`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Where the time of a job went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timing {
    /// Wall time of the whole job.
    pub total_ms: u64,
    /// Randomized pacing delay before acting.
    #[serde(default)]
    pub pacing_ms: u64,
    /// Acquiring the browser context with the session.
    #[serde(default)]
    pub acquire_ms: u64,
    /// Checking that the session is signed in.
    #[serde(default)]
    pub precheck_ms: u64,
    /// Composing and submitting.
    #[serde(default)]
    pub post_ms: u64,
    /// Proving the outcome.
    #[serde(default)]
    pub verify_ms: u64,
}

/// The result of a post. Exactly one of the seed's outcome rows holds:
///
/// | fields | meaning | orchestrator |
/// |---|---|---|
/// | `ok` + `verification` | confirmed | done; persist `refreshedSession` |
/// | `uncertain` | submitted, not confirmed | manual review; never retry |
/// | `needsReauth` | session invalid | ask the user to sign in again |
/// | `failureStage` precheck/compose/media | aborted before submit | safe to retry |
/// | `failureStage` submit/verify, not uncertain | failed with evidence nothing was posted | safe to retry |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPostResult {
    /// True only when the action was confirmed; then `verification` is set.
    pub ok: bool,
    /// Proof of the outcome, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// The submit may have happened but nothing confirmed it: do not retry.
    #[serde(default)]
    pub uncertain: bool,
    /// The session is no longer signed in.
    #[serde(default)]
    pub needs_reauth: bool,
    /// The stage that failed, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_stage: Option<FailureStage>,
    /// What went wrong, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// The session as the browser left it, scoped by the platform's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refreshed_session: Option<AgentSessionState>,
    /// Where the time went.
    #[serde(default)]
    pub timing: Timing,
    /// The post's record (`GET /v1/posts/{postId}`), when the post was journaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
}

/// The outcome row of an [`AgentPostResult`], derived from its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PostOutcome {
    /// Confirmed.
    Confirmed,
    /// Submitted without confirmation: never retry automatically.
    Uncertain,
    /// The session must be captured again.
    NeedsReauth,
    /// Failed with nothing posted: safe to retry.
    Failed,
}

impl AgentPostResult {
    /// Which outcome row this result is.
    pub fn outcome(&self) -> PostOutcome {
        if self.ok {
            PostOutcome::Confirmed
        } else if self.uncertain {
            PostOutcome::Uncertain
        } else if self.needs_reauth {
            PostOutcome::NeedsReauth
        } else {
            PostOutcome::Failed
        }
    }

    /// Whether the orchestrator may retry or fall back automatically.
    pub fn is_safe_to_retry(&self) -> bool {
        self.outcome() == PostOutcome::Failed
    }
}

/// Where a journaled post is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PostState {
    /// Recorded before the browser was acquired; the job has not ended (or the runner
    /// stopped before it could record the end: recovery ends it).
    Running,
    /// Confirmed (by the job's verification, or later by a re-check).
    Succeeded,
    /// The submit may have happened but nothing confirmed it: never retried automatically.
    Uncertain,
    /// The session is no longer signed in.
    NeedsReauth,
    /// Failed with nothing posted: safe to post again (with a new idempotency key).
    Failed,
}

impl PostState {
    /// The state a job's result ends in.
    pub fn of(result: &AgentPostResult) -> Self {
        match result.outcome() {
            PostOutcome::Confirmed => Self::Succeeded,
            PostOutcome::Uncertain => Self::Uncertain,
            PostOutcome::NeedsReauth => Self::NeedsReauth,
            PostOutcome::Failed => Self::Failed,
        }
    }

    /// Whether the post ended.
    pub fn is_final(self) -> bool {
        self != Self::Running
    }
}

/// The record of a journaled post: `GET /v1/posts/{postId}`. It never carries the posted
/// content or a session: `result` is the job's outcome without `refreshedSession`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostRecord {
    /// The post's id.
    pub post_id: String,
    /// Platform (strategy id).
    pub platform: String,
    /// Where it is.
    pub state: PostState,
    /// The outcome, once the job ended (never with `refreshedSession`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<AgentPostResult>,
    /// When it was recorded.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub created_at: OffsetDateTime,
    /// When it ended.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub finished_at: Option<OffsetDateTime>,
    /// The post this one is a new attempt of (after an owner's assertion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// The owner's assertion that an uncertain post did not happen, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<OwnerAssertion>,
    /// The latest read-only re-check of an uncertain post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck: Option<RecheckResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_uses_the_seed_field_names() {
        let r = AgentPostResult {
            ok: false,
            verification: None,
            uncertain: true,
            needs_reauth: false,
            failure_stage: Some(FailureStage::Verify),
            error: Some(ErrorBody::new("unconfirmed", "no toast")),
            refreshed_session: None,
            timing: Timing::default(),
            post_id: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        for key in [
            "ok",
            "uncertain",
            "needsReauth",
            "failureStage",
            "error",
            "timing",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {v}");
        }
        assert_eq!(v["failureStage"], "verify");
        assert_eq!(v["timing"]["totalMs"], 0);
        assert_eq!(r.outcome(), PostOutcome::Uncertain);
        assert!(!r.is_safe_to_retry());
    }

    #[test]
    fn a_post_request_refuses_unknown_fields_at_every_level() {
        let ok = serde_json::json!({"platform": "p", "content": {"text": "hi",
            "media": [{"fileName": "a.png", "mimeType": "image/png", "dataBase64": ""}]}});
        assert!(serde_json::from_value::<PostRequest>(ok.clone()).is_ok());
        let mut top = ok.clone();
        top["dryRun"] = true.into();
        let mut content = ok.clone();
        content["content"]["draft"] = true.into();
        let mut media = ok;
        media["content"]["media"][0]["alt"] = "x".into();
        for (json, field) in [(top, "dryRun"), (content, "draft"), (media, "alt")] {
            let e = serde_json::from_value::<PostRequest>(json).unwrap_err();
            assert!(
                e.to_string().contains(&format!("unknown field `{field}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn content_debug_hides_text() {
        let c = PostContent::text("secret launch plans");
        assert!(!format!("{c:?}").contains("launch"));
    }

    #[test]
    fn stages_order_around_submit() {
        assert!(FailureStage::Media.is_before_submit());
        assert!(!FailureStage::Submit.is_before_submit());
        assert!(!FailureStage::Verify.is_before_submit());
    }
}
