//! The one JSON error envelope, scope reports and health.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `{"error": {"code", "message", "retryable"}}`: every non-2xx answer of the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEnvelope {
    /// The error.
    pub error: ErrorBody,
}

/// A machine-readable `code` (snake_case, stable), a human message that never contains
/// secrets, and whether retrying the same request may succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `invalid_scope`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Whether the same request may succeed later.
    #[serde(default)]
    pub retryable: bool,
}

impl ErrorBody {
    /// A non-retryable error.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            retryable: false,
        }
    }

    /// Sets retryability.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

/// Why the scope filter dropped something. Serialized as camelCase keys of
/// [`ScopeReport::dropped`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Cookie domain outside every allowed domain.
    CookieOutOfScope,
    /// Cookie domain is a public suffix (`com`, `co.uk`, `github.io`).
    CookiePublicSuffix,
    /// Cookie domain is empty or malformed.
    CookieInvalidDomain,
    /// Origin is not exactly one of the allowed origins.
    OriginOutOfScope,
    /// Origin is not a valid http(s) origin.
    OriginInvalid,
    /// A top-level field that cannot be attributed to an allowed domain (e.g. `credentials`).
    UnscopedField,
}

/// What a scope filter kept and dropped: counts only, never names or values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScopeReport {
    /// Cookies kept.
    pub kept_cookies: u32,
    /// Origins kept.
    pub kept_origins: u32,
    /// Dropped items by reason.
    #[schemars(schema_with = "dropped_schema")]
    pub dropped: BTreeMap<DropReason, u32>,
}

/// [`ScopeReport::dropped`]'s schema: an object whose keys are [`DropReason`]s (any other
/// key is refused when it is read) and whose values are counts.
fn dropped_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let reason = generator.subschema_for::<DropReason>();
    let count = generator.subschema_for::<u32>();
    schemars::json_schema!({
        "type": "object",
        "propertyNames": reason,
        "additionalProperties": count
    })
}

impl ScopeReport {
    /// Total number of dropped items.
    pub fn dropped_total(&self) -> u32 {
        self.dropped.values().sum()
    }

    /// Dropped count for one reason.
    pub fn dropped_for(&self, reason: DropReason) -> u32 {
        self.dropped.get(&reason).copied().unwrap_or(0)
    }
}

/// `GET /v1/ready`: whether this replica takes new work, for a load balancer's health
/// check (`200` ready, `503` not, with the reason), and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Readiness {
    /// Whether it takes new work now.
    pub ready: bool,
    /// Why not: `draining` (told to stop: it finishes what it runs), `full` (every job
    /// slot busy and the queue full), `database_unreachable` (its last heartbeat to the
    /// shared database failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its node id, when it is a replica of a fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Runner version.
    pub version: String,
    /// Jobs holding a slot.
    pub jobs_running: usize,
    /// Jobs waiting for a slot.
    pub jobs_queued: usize,
    /// Jobs that may run at once.
    pub job_capacity: usize,
    /// Jobs that may wait for a slot.
    pub queue_capacity: usize,
    /// Interactive captures open.
    pub open_captures: usize,
    /// Browse sessions open.
    pub open_browses: usize,
}

/// `GET /v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// `"ok"` when the runner accepts jobs.
    pub status: String,
    /// Runner version.
    pub version: String,
}
