//! Named browser profiles: a runner's on-disk browser profile that keeps its sign-ins
//! between runs, the owner's consent to drive it, and what is recorded of its sign-ins
//! (cookie names and expiry, never values).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{CookieFact, SiteDecision};

/// `PUT /v1/profiles/{name}/consent` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileConsentRequest {
    /// Allow runs of the tenant to drive the profile, or decline it.
    pub decision: SiteDecision,
    /// Who decided (audited; the key that decided is recorded beside it).
    pub decided_by: String,
}

/// What is recorded of a profile's sign-in to one site: the cookies the sign-in set, by
/// name and expiry. A committing press on the site pauses `login_required` when there is
/// none, or when one of them expired or is gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileSignIn {
    /// The site (its registrable domain, or the host when it has none).
    pub site: String,
    /// The session's cookies: name, domain and expiry only.
    pub cookies: Vec<CookieFact>,
    /// When it was recorded (a sign-in seen, or its expiry refreshed after a run).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub recorded_at: OffsetDateTime,
}

/// One named profile of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileEntry {
    /// The profile's name.
    pub profile: String,
    /// When a run first asked to use it (the consent request).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub asked_at: Option<OffsetDateTime>,
    /// The owner's decision; absent while nobody decided (runs naming it are refused with
    /// `consent_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<SiteDecision>,
    /// Who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// The key that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by_key: Option<String>,
    /// When.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub decided_at: Option<OffsetDateTime>,
    /// Its recorded sign-ins, by site.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sign_ins: Vec<ProfileSignIn>,
}

impl ProfileEntry {
    /// A profile nobody asked about or decided on yet.
    pub fn new(profile: impl Into<String>) -> Self {
        Self {
            profile: profile.into(),
            asked_at: None,
            decision: None,
            decided_by: None,
            decided_by_key: None,
            decided_at: None,
            sign_ins: Vec::new(),
        }
    }

    /// The recorded sign-in to `site`.
    pub fn sign_in(&self, site: &str) -> Option<&ProfileSignIn> {
        self.sign_ins.iter().find(|s| s.site == site)
    }
}

/// `GET /v1/profiles`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfilesResponse {
    /// The tenant's profiles, sorted by name.
    pub profiles: Vec<ProfileEntry>,
}
