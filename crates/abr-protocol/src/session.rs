//! [`AgentSessionState`]: a Playwright-compatible `storageState` plus ABR metadata.
//!
//! The JSON shape is exactly what Playwright's `context.storageState()` writes, so a file
//! written by Playwright loads here unchanged and a state written here loads in Playwright's
//! `browser.newContext({ storageState })`. Fields this crate does not model (Playwright keeps
//! adding some: `indexedDB`, `credentials`, `_crHasCrossSiteAncestor`) are kept in `extra`
//! maps and written back out, so a round trip loses nothing.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::SecretValue;

/// The current ABR session format version written in [`SessionMetadata::format_version`].
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// A stored browser session: Playwright's storageState (`cookies`, `origins`) plus optional
/// ABR metadata.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSessionState {
    /// Every cookie of the session.
    #[serde(default)]
    pub cookies: Vec<Cookie>,
    /// localStorage (and whatever else Playwright stores per origin), one entry per origin.
    #[serde(default)]
    pub origins: Vec<OriginState>,
    /// ABR's own metadata. Absent in files written by Playwright; Playwright ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<SessionMetadata>,
    /// Top-level fields this version does not model (for example Playwright's `credentials`),
    /// preserved on round trip. Scope filtering drops them: they cannot be attributed to an
    /// allowed domain.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl std::fmt::Debug for AgentSessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSessionState")
            .field("cookies", &self.cookies)
            .field("origins", &self.origins)
            .field("metadata", &self.metadata)
            .field("extra_keys", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Metadata ABR records next to the storageState.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMetadata {
    /// Format version of the ABR session document ([`SESSION_FORMAT_VERSION`]).
    pub format_version: u32,
    /// Platform (strategy id) the session belongs to, e.g. `"demo"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// When the session was captured or last refreshed (RFC 3339).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub captured_at: Option<OffsetDateTime>,
    /// Fields of a newer format version, preserved on round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionMetadata {
    /// Metadata of the current format version for `platform`, captured at `at`.
    pub fn new(platform: impl Into<String>, at: OffsetDateTime) -> Self {
        Self {
            format_version: SESSION_FORMAT_VERSION,
            platform: Some(platform.into()),
            captured_at: Some(at),
            extra: Map::new(),
        }
    }
}

/// One cookie, in Playwright's encoding.
///
/// `domain` follows Playwright's convention: a leading dot (`.example.com`) is a domain cookie
/// sent to the domain and all its subdomains; no leading dot (`example.com`) is a host-only
/// cookie sent to that exact host only.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    /// Cookie name.
    pub name: String,
    /// Cookie value: a credential, never logged.
    pub value: SecretValue,
    /// `.example.com` (domain cookie) or `example.com` (host-only cookie).
    pub domain: String,
    /// Cookie path, `/` when absent.
    #[serde(default = "default_path")]
    pub path: String,
    /// Expiry in Unix seconds (may be fractional); `-1` for a session cookie.
    #[serde(
        default = "session_expiry",
        serialize_with = "ser_expires",
        deserialize_with = "de_expires"
    )]
    pub expires: f64,
    /// Not readable from page scripts.
    #[serde(default)]
    pub http_only: bool,
    /// Sent over https only.
    #[serde(default)]
    pub secure: bool,
    /// SameSite policy.
    #[serde(default)]
    pub same_site: SameSite,
    /// CHIPS partition key (top-level site), for partitioned cookies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_key: Option<String>,
    /// Fields not modelled here (e.g. `_crHasCrossSiteAncestor`), preserved on round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Cookie {
    /// A session cookie with path `/`, not HttpOnly, not Secure, SameSite=Lax.
    pub fn new(
        name: impl Into<String>,
        value: impl Into<SecretValue>,
        domain: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            domain: domain.into(),
            path: default_path(),
            expires: session_expiry(),
            http_only: false,
            secure: false,
            same_site: SameSite::Lax,
            partition_key: None,
            extra: Map::new(),
        }
    }

    /// Whether this is a domain cookie (Playwright's leading dot), as opposed to host-only.
    pub fn is_domain_cookie(&self) -> bool {
        self.domain.starts_with('.')
    }

    /// Whether this is a session cookie (`expires == -1`).
    pub fn is_session(&self) -> bool {
        self.expires == -1.0
    }
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cookie")
            .field("name", &self.name)
            .field("value", &self.value)
            .field("domain", &self.domain)
            .field("path", &self.path)
            .field("expires", &self.expires)
            .field("http_only", &self.http_only)
            .field("secure", &self.secure)
            .field("same_site", &self.same_site)
            .finish_non_exhaustive()
    }
}

fn default_path() -> String {
    "/".to_owned()
}

fn session_expiry() -> f64 {
    -1.0
}

/// Writes integral expiries as JSON integers (`-1`, not `-1.0`), as Playwright does.
fn ser_expires<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if v.fract() == 0.0 && v.abs() < EXACT {
        #[allow(clippy::cast_possible_truncation, reason = "integral and below 2^53")]
        return s.serialize_i64(*v as i64);
    }
    s.serialize_f64(*v)
}

fn de_expires<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(
            "cookie expires must be a finite number",
        ))
    }
}

/// A cookie's SameSite attribute: exactly Playwright's three values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SameSite {
    /// Only same-site requests.
    Strict,
    /// Same-site requests and top-level navigations (browser default).
    #[default]
    Lax,
    /// All requests (requires Secure in current browsers).
    None,
}

/// Everything stored for one origin: localStorage, plus preserved extras such as `indexedDB`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OriginState {
    /// Serialized origin, e.g. `https://app.example.com` or `http://127.0.0.1:8080`.
    pub origin: String,
    /// localStorage entries of this origin.
    #[serde(default)]
    pub local_storage: Vec<LocalStorageItem>,
    /// Fields not modelled here (e.g. `indexedDB`), preserved on round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OriginState {
    /// An origin with the given localStorage entries.
    pub fn new(origin: impl Into<String>, local_storage: Vec<LocalStorageItem>) -> Self {
        Self {
            origin: origin.into(),
            local_storage,
            extra: Map::new(),
        }
    }
}

impl std::fmt::Debug for OriginState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginState")
            .field("origin", &self.origin)
            .field("local_storage", &self.local_storage)
            .field("extra_keys", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// One localStorage entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalStorageItem {
    /// Key.
    pub name: String,
    /// Value: treated as a credential, never logged.
    pub value: SecretValue,
    /// Fields not modelled here, preserved on round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LocalStorageItem {
    /// An entry.
    pub fn new(name: impl Into<String>, value: impl Into<SecretValue>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by Playwright 1.64 `context.storageState({ indexedDB: true })`, trimmed.
    const PLAYWRIGHT_STATE: &str = r#"{
  "cookies": [
    {
      "name": "sid",
      "value": "s3cr3t",
      "domain": ".example.com",
      "path": "/",
      "expires": 1798675200.123456,
      "httpOnly": true,
      "secure": true,
      "sameSite": "None",
      "partitionKey": "https://example.com",
      "_crHasCrossSiteAncestor": false
    },
    {
      "name": "pref",
      "value": "dark",
      "domain": "app.example.com",
      "path": "/settings",
      "expires": -1,
      "httpOnly": false,
      "secure": false,
      "sameSite": "Lax"
    }
  ],
  "origins": [
    {
      "origin": "https://app.example.com",
      "localStorage": [
        {
          "name": "token",
          "value": "abc"
        }
      ],
      "indexedDB": [
        {
          "name": "db",
          "version": 1,
          "stores": []
        }
      ]
    }
  ],
  "credentials": []
}"#;

    #[test]
    fn playwright_state_round_trips_byte_for_byte() {
        let state: AgentSessionState = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
        assert_eq!(state.cookies.len(), 2);
        assert!(state.cookies[0].is_domain_cookie());
        assert!(!state.cookies[1].is_domain_cookie());
        assert!(state.cookies[1].is_session());
        assert_eq!(state.cookies[0].same_site, SameSite::None);
        assert_eq!(
            state.cookies[0].partition_key.as_deref(),
            Some("https://example.com")
        );
        assert_eq!(state.cookies[0].expires, 1_798_675_200.123_456);
        assert!(state.extra.contains_key("credentials"));
        assert!(state.origins[0].extra.contains_key("indexedDB"));
        let written = serde_json::to_string_pretty(&state).unwrap();
        assert_eq!(written, PLAYWRIGHT_STATE);
    }

    #[test]
    fn metadata_round_trips_and_is_optional() {
        let mut state: AgentSessionState = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
        assert!(state.metadata.is_none());
        state.metadata = Some(SessionMetadata::new(
            "demo",
            OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        ));
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(json["metadata"]["formatVersion"], 1);
        assert_eq!(json["metadata"]["platform"], "demo");
        assert_eq!(json["metadata"]["capturedAt"], "2023-11-14T22:13:20Z");
        let back: AgentSessionState = serde_json::from_value(json).unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn debug_shows_names_but_no_values() {
        let state: AgentSessionState = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
        let dbg = format!("{state:?}");
        assert!(dbg.contains("sid"));
        assert!(!dbg.contains("s3cr3t"));
        assert!(!dbg.contains("abc\""));
        assert!(!dbg.contains("dark"));
    }

    #[test]
    fn rejects_wrong_types_and_bad_same_site() {
        let bad = r#"{"cookies":[{"name":"a","value":"b","domain":"x.com","sameSite":"lax"}]}"#;
        assert!(serde_json::from_str::<AgentSessionState>(bad).is_err());
        let bad = r#"{"cookies":[{"name":"a","value":1,"domain":"x.com"}]}"#;
        assert!(serde_json::from_str::<AgentSessionState>(bad).is_err());
        let bad = r#"{"cookies":{}}"#;
        assert!(serde_json::from_str::<AgentSessionState>(bad).is_err());
    }

    #[test]
    fn minimal_cookie_gets_playwright_defaults() {
        let s = r#"{"cookies":[{"name":"a","value":"b","domain":"x.com"}],"origins":[]}"#;
        let state: AgentSessionState = serde_json::from_str(s).unwrap();
        let c = &state.cookies[0];
        assert_eq!(
            (c.path.as_str(), c.expires, c.same_site),
            ("/", -1.0, SameSite::Lax)
        );
    }
}

/// `PUT /v1/sessions/{id}`: keep a session on the runner under an id of the tenant's, to
/// run tasks and posts with `sessionId` instead of shipping the cookies each time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreSessionRequest {
    /// The session (Playwright `storageState`, or ABR's document).
    pub session: AgentSessionState,
    /// The platform whose scope filters it before it is kept; at least one of `platform`
    /// and `scope` is required (nothing is kept unscoped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// A scope of its own, applied after the platform's (it can only narrow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::SessionScopeSpec>,
}

/// What the runner keeps under a session id: counts only, never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredSessionInfo {
    /// The id.
    pub session_id: String,
    /// Cookies kept.
    pub cookie_count: u32,
    /// Origins with localStorage kept.
    pub origin_count: u32,
    /// What the scope dropped going in, by reason (absent on reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_report: Option<crate::ScopeReport>,
}

/// `GET /v1/sessions/{id}`: the session as kept (restore).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredSession {
    /// The id.
    pub session_id: String,
    /// The session: scoped going in, refreshed by every job that used it.
    pub session: AgentSessionState,
}
