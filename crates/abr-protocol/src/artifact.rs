//! Files kept for a tenant: an artifact is a file a tenant uploaded (`POST /v1/artifacts`)
//! for a plan's `upload` step to set on a page's file input, or one a run's page downloaded
//! ([`DownloadRecord`]). Its bytes are sealed at rest and fetched by its tenant only; what
//! the API shows is [`ArtifactInfo`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Where an artifact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactOrigin {
    /// The tenant uploaded it (`POST /v1/artifacts`).
    Upload,
    /// A run's page downloaded it (a plan with `downloads: true`); `runId` names the run.
    Download,
}

impl ArtifactOrigin {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upload => "upload",
            Self::Download => "download",
        }
    }
}

/// An artifact as the API shows it: never its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactInfo {
    /// Its id (`art_` and 22 characters), for a step's or an action's `artifact`.
    pub id: String,
    /// Its file name, as the page's file input receives it.
    pub name: String,
    /// Its type, sniffed from its first bytes (not taken from the upload's `Content-Type`).
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Where it came from.
    pub origin: ArtifactOrigin,
    /// The run whose page downloaded it (`origin: download`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When it was kept (RFC 3339). It is forgotten `ABR_RETENTION_DAYS` later, with the
    /// rest of the evidence.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String")]
    pub created_at: OffsetDateTime,
}

/// `GET /v1/artifacts`: the tenant's artifacts, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactList {
    /// The artifacts.
    pub artifacts: Vec<ArtifactInfo>,
    /// Their total size in bytes (what the tenant's byte cap counts).
    pub total_bytes: u64,
}

/// `POST /v1/artifacts?name=…`: the query of an upload (the body is the file's bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArtifactUpload {
    /// The file name the page's file input receives (1 to 200 bytes, not a path).
    pub name: String,
}

/// A file a run's page downloaded: kept as an artifact, or refused with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadRecord {
    /// When it arrived (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String")]
    pub at: OffsetDateTime,
    /// The step it came with (the one that ran when it arrived; `None` before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The file name the site gave it (`Content-Disposition`, else the URL's last part).
    pub name: String,
    /// Its size in bytes (as the site declared it, when refused unread).
    pub size: u64,
    /// The artifact it is kept as (`GET /v1/artifacts/{id}/content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactInfo>,
    /// Why it was not kept (`artifact_too_large`, `artifact_type_refused`,
    /// `artifact_quota`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::ErrorBody>,
}
