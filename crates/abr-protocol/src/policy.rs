//! Platform policy as declared by a strategy and listed by `GET /v1/platforms`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The session scope of a platform: which cookies and localStorage may enter or leave ABR.
///
/// Validation rules live in `abr-core` (`SessionScope::new`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    /// The platform's network: requests that are reads although their method is not safe,
    /// telemetry that never counts as committing, WebSockets in read-only runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicySpec>,
    /// Extensions of the commit rule on this platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardPolicySpec>,
    /// What this platform's pages show that its frames and screenshots must hide, besides
    /// the built-in kinds every image is masked for (email addresses, phone numbers,
    /// payment card numbers, IBANs, internal IP addresses and host names, long tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<RedactionSpec>,
}

/// A platform's additions to the redaction of every image its runs keep. Validation rules
/// live in `abr-core` (`PageRedaction`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedactionSpec {
    /// Regular expressions (JavaScript syntax, matched with the `u` flag) whose matches in
    /// the text a page shows are masked: an account number format of the platform, say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// CSS selectors of elements blurred whole, as a form field is (text, images and all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<String>,
}

/// What a platform declares about its network. In a read-only or dry run no request with a
/// method other than GET, HEAD or OPTIONS leaves the browser except the declared `reads`;
/// in every run a write to the platform's own sites counts as committing except `reads` and
/// `telemetry`. Validation rules live in `abr-core` (`NetworkRules`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicySpec {
    /// Endpoints whose non-safe requests are reads on the platform's site (a search that
    /// posts its query, GraphQL queries): let through in read-only runs, never counted as
    /// committing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<ReadEndpointSpec>,
    /// Endpoints of the platform's own sites that only collect telemetry: their writes never
    /// count as committing in a read-write run (a read-only run still refuses them). Same
    /// form as [`ReadEndpointSpec::url`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<String>,
    /// Whether read-only runs may open WebSockets (their messages are not inspected).
    /// Default: no.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub websockets: bool,
}

/// One endpoint whose non-safe requests are reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadEndpointSpec {
    /// `https://host[:port]/path`: scheme, host and port exactly, and the path exactly or,
    /// ending in `*`, as a prefix. No credentials, query or fragment.
    pub url: String,
    /// The methods it reads with (upper case). Default: `POST`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// A GraphQL endpoint: only requests whose every operation parses as this type pass
    /// (`query`; a mutation, a subscription, a persisted query without its text or a body
    /// that does not parse is a write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphql: Option<GraphqlOperation>,
}

/// The GraphQL operation type a read endpoint lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphqlOperation {
    /// `query` operations (and the `{ ... }` shorthand).
    Query,
}

/// What a platform adds to the commit rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GuardPolicySpec {
    /// Words or phrases that make a control harmless on this platform, besides the built-in
    /// list (search, next, show more, filter, sort, open, close, cancel...): a button whose
    /// accessible name has one is allowed in a read-only run unless the name also has a
    /// committing verb.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub harmless: Vec<String>,
    /// Whether choices (a `<select>`, a checkbox, a radio button, a switch) never save or
    /// submit on this platform, so that read-only runs may change them. Default: no.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub harmless_choices: bool,
}

/// One registered platform, as listed by `GET /v1/platforms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformsResponse {
    /// Registered platforms, sorted by id.
    pub platforms: Vec<PlatformInfo>,
}
