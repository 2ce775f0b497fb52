//! API keys: who calls the runner ([`Role`], the tenant a key is bound to), the operator's
//! key requests ([`KeyRequest`]) and what the runner tells about a key ([`KeyInfo`],
//! [`CreatedKey`], [`KeysResponse`]). A key's token is shown once, when it is created; the
//! runner keeps only its digest.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::SecretValue;

/// What a key's holder may do.
///
/// | role | may |
/// |---|---|
/// | `agent` | create tasks, post, browse, store and capture sessions, recheck and retry, read its tenant's records |
/// | `approver` | approve or reject tasks and committing actions, resolve a person's pauses and takeovers, assert that an uncertain action did not happen, decide sites, read its tenant's records |
/// | `operator` | everything, for every tenant: keys, the hub, settings |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An orchestrator or an AI agent: proposes and acts, never approves.
    Agent,
    /// A person (or their tool) who approves what agents propose.
    Approver,
    /// Runs the runner: every right, every tenant.
    Operator,
    /// A runner's credential at its hub (made by enrollment, never by `POST /v1/keys`):
    /// mints relay tokens for its one runner id, for its one tenant; nothing else.
    Runner,
    /// A runner's enrollment code (`abr hub enroll`): redeemed once, within minutes, for a
    /// runner credential; nothing else.
    Enrollment,
}

impl Role {
    /// The wire name: `agent`, `approver`, `operator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Approver => "approver",
            Self::Operator => "operator",
            Self::Runner => "runner",
            Self::Enrollment => "enrollment",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole;

impl std::fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown role: use agent, approver or operator")
    }
}

impl std::error::Error for UnknownRole {}

impl std::str::FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "agent" => Ok(Self::Agent),
            "approver" => Ok(Self::Approver),
            "operator" => Ok(Self::Operator),
            "runner" => Ok(Self::Runner),
            "enrollment" => Ok(Self::Enrollment),
            _ => Err(UnknownRole),
        }
    }
}

/// `POST /v1/keys` (operators only): a new key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyRequest {
    /// Who holds it, for people reading lists and records (1 to 256 bytes of text).
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The one tenant it acts for. Required for `agent` and `approver` keys; an `operator`
    /// key without one acts for every tenant (`x-tenant-id` chooses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// A read-only key never commits: posts, task creation and retries are refused, and
    /// its browse sessions are read-only whatever they ask.
    #[serde(default)]
    pub read_only: bool,
    /// After this instant the key is refused (401).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub expires_at: Option<OffsetDateTime>,
}

/// A key as the runner tells about it: never its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
    /// The key's id (`key_…`; the token starts with it).
    pub key_id: String,
    /// Who holds it.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The one tenant it acts for; none: every tenant (operators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Whether it never commits.
    pub read_only: bool,
    /// When it was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub created_at: OffsetDateTime,
    /// When it stops being accepted, if ever.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub expires_at: Option<OffsetDateTime>,
    /// When it was revoked, if it was.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub revoked_at: Option<OffsetDateTime>,
}

/// `201` of `POST /v1/keys`: the key and its token, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    /// The key.
    pub key: KeyInfo,
    /// The bearer token (`Authorization: Bearer <token>`). The runner keeps only its digest:
    /// it cannot be shown again.
    pub token: SecretValue,
}

/// `GET /v1/keys`: every key, revoked ones included, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeysResponse {
    /// The keys.
    pub keys: Vec<KeyInfo>,
}

/// Who did something, as records and audit name them: a key's id and its holder's name
/// (`bootstrap` for `ABR_API_TOKEN`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrincipalRef {
    /// The key's id.
    pub key_id: String,
    /// Its holder's name.
    pub name: String,
    /// Its role.
    pub role: Role,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_requests_are_strict_and_roles_have_wire_names() {
        let request: KeyRequest = serde_json::from_str(
            r#"{"name":"ci bot","role":"agent","tenantId":"t1","expiresAt":"2030-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(request.role, Role::Agent);
        assert!(!request.read_only);
        assert!(
            serde_json::from_str::<KeyRequest>(r#"{"name":"x","role":"agent","admin":true}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<KeyRequest>(r#"{"name":"x","role":"root"}"#).is_err());
        for role in [Role::Agent, Role::Approver, Role::Operator] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
    }
}
