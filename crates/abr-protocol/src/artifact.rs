//! Files kept for a tenant: an artifact is a file a tenant uploaded (`POST /v1/artifacts`)
//! for a plan's or a browse session's `upload` to set on a page's file input. Its bytes are
//! sealed at rest and fetched by its tenant only; what the API shows is [`ArtifactInfo`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Where an artifact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactOrigin {
    /// The tenant uploaded it (`POST /v1/artifacts`).
    Upload,
}

impl ArtifactOrigin {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upload => "upload",
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
