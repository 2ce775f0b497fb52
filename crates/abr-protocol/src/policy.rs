//! Platform policy as declared by a strategy and listed by `GET /v1/platforms`.

use serde::{Deserialize, Serialize};

/// The session scope of a platform: which cookies and localStorage may enter or leave ABR.
///
/// Validation rules live in `abr-core` (`SessionScope::new`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionScopeSpec {
    /// Registrable domains or hosts whose cookies are kept (`example.com`, `localhost`,
    /// `127.0.0.1`). No scheme, port, path or wildcard.
    #[serde(default)]
    pub cookie_domains: Vec<String>,
    /// Exact origins whose localStorage is kept (`https://app.example.com`).
    #[serde(default)]
    pub origins: Vec<String>,
}

/// A strategy's execution and session policy. Omitted fields keep the legacy behaviour:
/// allowed, and no scope filtering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformPolicy {
    /// May a user capture a session interactively for this platform? Default: yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_interactive_capture: Option<bool>,
    /// May a stored session be replayed unattended? Default: yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unattended: Option<bool>,
    /// Session scope; when present, state is filtered going in and coming out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionScopeSpec>,
    /// The platform only observes: posting through it is refused, and every committing
    /// action of a task on it is refused (`blocked_action`). Default: no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Whether runs on this platform take replay frames. Default: yes (the tenant's switch
    /// can still turn them off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshots: Option<bool>,
}

/// One registered platform, as listed by `GET /v1/platforms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformInfo {
    /// Strategy id.
    pub id: String,
    /// Where capture and posting start.
    pub start_url: String,
    /// Declared policy.
    pub policy: PlatformPolicy,
}

/// `GET /v1/platforms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformsResponse {
    /// Registered platforms, sorted by id.
    pub platforms: Vec<PlatformInfo>,
}
