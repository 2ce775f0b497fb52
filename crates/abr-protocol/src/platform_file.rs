//! A platform declared as data: the file format of a posting platform that needs no Rust
//! (`abr-core`'s `DeclaredStrategy` runs it as a `WebPostStrategy` like any compiled one).
//!
//! The same types read TOML and JSON (camelCase keys). Strings may hold variables:
//!
//! - `{{name}}`: a value handed in when the file is loaded (e.g. `{{base}}`, the site's
//!   address); when the value is an absolute URL, `{{name.host}}` and `{{name.origin}}` are
//!   its host and origin. A trailing `/` of a value is dropped, so `{{base}}/login` works
//!   either way. An unknown variable is an error naming the field.
//! - `{{text}}`, `{{link}}`, `{{post}}`: the post's content, filled at posting time, and only
//!   in the values of `type` and `select` steps of [`ComposeSpec::steps`] (never in a URL or
//!   a selector). `{{link}}` is the link (empty when there is none); `{{post}}` is
//!   [`ComposeSpec::post`] rendered. `{{#link}}…{{/link}}` keeps its inside only when the
//!   post has a link (likewise `{{#text}}…{{/text}}`).
//!
//! The shape, key by key (the demo platform, `crates/abr-demo/platforms/demo.toml`, is a
//! complete example):
//!
//! ```text
//! id, startUrl, policy?, pacing?         who and where ("off" | "runner" | {minMs, maxMs})
//! signIn    { steps, signedIn?, signedOutUrl? }         at least one of the two checks
//! compose   { post?, steps }                            steps write {{post}} or {{text}}
//! media?    { input, settled?, rejected?, timeoutMs? }  files set on a file input
//! submit    { steps }                                   the committing click and after
//! verify    { toast?, permalink?, readback?, errorBanner? }  a toast or a read-back
//!   toast     { selector, permalinkAttribute?, waitMs? }
//!   permalink { text }                                  checked on the toast's permalink
//!   readback  { url, item, text, ready? }               a page listing the account's posts
//! ```
//!
//! Steps are the step plans' [`PlanStep`]s (`navigate` with a `url`, `click`, `type`,
//! `select`, `wait`, `assert`; each with a `description` and an optional `timeoutMs`);
//! selectors and checks are [`Selector`]s and [`DomCheck`]s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{DomCheck, PlanStep, PlatformPolicy, Selector};

/// A platform file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlatformFile {
    /// The platform's id (letters, digits, `-`, `_`, `.`; at most 64 characters).
    pub id: String,
    /// Where capture starts (the sign-in page); relative permalinks are resolved against it.
    pub start_url: String,
    /// Execution and session policy (omitted fields: allowed, no scope). A key the policy
    /// does not know is refused, like everywhere in the file (`readonly = true` must not
    /// leave the platform writable).
    #[serde(default, deserialize_with = "strict_policy")]
    #[schemars(schema_with = "strict_policy_schema")]
    pub policy: PlatformPolicy,
    /// The delay before a post acts; omitted: the runner's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingSpec>,
    /// How to tell whether the session is signed in.
    pub sign_in: SignInSpec,
    /// How to write a post.
    pub compose: ComposeSpec,
    /// How to attach media; omitted: a post with media is refused before anything is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSpec>,
    /// How to publish.
    pub submit: SubmitSpec,
    /// How to prove the outcome.
    pub verify: VerifySpec,
}

/// Reads a platform file's `policy`, refusing a key [`PlatformPolicy`] does not know.
///
/// `PlatformPolicy` itself stays lenient: it is also the answer of `GET /v1/platforms`,
/// which clients of other versions read. So the policy is read, written back, and every key
/// given with a value that is not empty (`null`, `false`, `[]`, `{}`: what a known key
/// left at its default writes back as nothing) must be among the keys written back. Its
/// nested tables (`session`, ...) refuse unknown keys themselves.
fn strict_policy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PlatformPolicy, D::Error> {
    use serde::de::Error as _;
    use serde_json::Value;
    let given = Value::deserialize(d)?;
    let policy = PlatformPolicy::deserialize(&given).map_err(D::Error::custom)?;
    let known = serde_json::to_value(&policy).map_err(D::Error::custom)?;
    if let Value::Object(given) = &given {
        for (key, value) in given {
            let empty = match value {
                Value::Null => true,
                Value::Bool(b) => !b,
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                Value::Number(_) | Value::String(_) => false,
            };
            if !empty && known.get(key).is_none() {
                return Err(D::Error::custom(format_args!(
                    "unknown field `{key}` in policy"
                )));
            }
        }
    }
    Ok(policy)
}

/// The schema of a platform file's `policy`, as [`strict_policy`] reads it: a
/// [`PlatformPolicy`], and a key it does not know only with an empty value (`null`, `false`,
/// `[]`, `{}`: what a known key left at its default writes back as).
fn strict_policy_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let policy = generator.subschema_for::<PlatformPolicy>();
    schemars::json_schema!({
        "allOf": [policy],
        "unevaluatedProperties": {
            "anyOf": [
                { "type": "null" },
                { "const": false },
                { "type": "array", "maxItems": 0 },
                { "type": "object", "maxProperties": 0 }
            ]
        }
    })
}

/// A platform's pacing: `"off"`, `"runner"` (the runner's setting), or a range
/// `{minMs, maxMs}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PacingSpec {
    /// `"off"` or `"runner"`.
    Named(PacingName),
    /// A range of its own.
    Range(PacingRange),
}

/// The named pacings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PacingName {
    /// No delay (a local test site).
    Off,
    /// The runner's configured range.
    Runner,
}

/// A delay range in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PacingRange {
    /// Shortest delay.
    pub min_ms: u64,
    /// Longest delay.
    pub max_ms: u64,
}

/// The sign-in check. It only looks: `steps` run only on a page that shows nothing yet (an
/// unattended job's blank page), never on a page a person is signing in on. Then the page is
/// signed in when `signedIn` holds, signed out when its URL contains `signedOutUrl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInSpec {
    /// Steps that open a page telling signed in from signed out; the first is a `navigate`.
    pub steps: Vec<PlanStep>,
    /// What a signed-in page shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_in: Option<DomCheck>,
    /// A URL (or a part of one) the site sends signed-out sessions to, e.g. its sign-in page.
    /// Also checked when a step of a post fails and after submitting: landing there is
    /// `needsReauth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_out_url: Option<String>,
}

/// How a post is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComposeSpec {
    /// The post as the site will show it, from `{{text}}` and `{{link}}`: `{{post}}` in the
    /// steps, and what read-back and permalink checks compare with. Default:
    /// `"{{text}}{{#link}}\n{{link}}{{/link}}"` (the link on its own line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<String>,
    /// The steps that open the composer and write the post (`navigate`, `click`, `type`,
    /// `select`, `wait`, `assert`). With a read-back, the first is a `navigate` (the
    /// read-back reads its page before composing).
    pub steps: Vec<PlanStep>,
}

/// How media is attached: the files are set on a file input, then the site's answer is
/// awaited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MediaSpec {
    /// The `<input type=file>`.
    pub input: Selector,
    /// An element that appears once the site has taken or refused the files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Selector>,
    /// What the page shows when the site refused the files: nothing is posted then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<DomCheck>,
    /// Deadline of the upload in milliseconds (default 20 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// How a post is published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitSpec {
    /// The committing click and what follows it until the site's answer is shown (e.g. a
    /// `wait` for an element of every page the site may answer with). Every one of them
    /// counts as possibly publishing.
    pub steps: Vec<PlanStep>,
}

/// How the outcome is proven: at least a toast or a read-back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifySpec {
    /// A confirmation the site shows after publishing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toast: Option<ToastSpec>,
    /// The post's own page, opened from the toast's permalink, must show the post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permalink: Option<PermalinkSpec>,
    /// A page listing the account's posts, read before and after publishing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readback: Option<ReadbackSpec>,
    /// What the site shows when publishing failed. Evidence that nothing was posted only
    /// together with a read-back that misses the post; with it, no late toast is awaited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_banner: Option<Selector>,
}

/// A confirmation toast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToastSpec {
    /// The toast (or the link inside it).
    pub selector: Selector,
    /// The attribute of that element holding the post's permalink (e.g. `href`); when set,
    /// a toast without it is no confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permalink_attribute: Option<String>,
    /// How long verification waits for a toast that was not shown at once, in milliseconds
    /// (default 8 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// The post's own page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermalinkSpec {
    /// The element showing the post's text there.
    pub text: Selector,
}

/// A page listing the account's posts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadbackSpec {
    /// Its URL.
    pub url: String,
    /// Each post on it.
    pub item: Selector,
    /// The CSS selector, inside an item, of the post's text.
    pub text: String,
    /// An element the page shows once its list is rendered, waited for before reading (for
    /// pages that render the list by script). Without it, a page at the read-back URL that
    /// shows no item within a second lists no posts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<Selector>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_is_named_or_a_range() {
        let off: PacingSpec = serde_json::from_str(r#""off""#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(off, PacingSpec::Named(PacingName::Off));
        let range: PacingSpec =
            serde_json::from_str(r#"{"minMs": 1, "maxMs": 2}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            range,
            PacingSpec::Range(PacingRange {
                min_ms: 1,
                max_ms: 2
            })
        );
        assert!(serde_json::from_str::<PacingSpec>(r#""sometimes""#).is_err());
    }

    #[test]
    fn a_misspelt_policy_key_is_refused_and_known_ones_are_kept() {
        let file = |policy: &str| {
            format!(
                r##"{{"id": "p", "startUrl": "https://p.example/", "policy": {policy},
                "signIn": {{"steps": [], "signedOutUrl": "/login"}},
                "compose": {{"steps": []}}, "submit": {{"steps": []}}, "verify": {{}}}}"##
            )
        };
        let ok: PlatformFile =
            serde_json::from_str(&file(r#"{"readOnly": true, "allowUnattended": false}"#))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.policy.read_only, Some(true));
        assert_eq!(ok.policy.allow_unattended, Some(false));
        for (policy, key) in [
            (r#"{"readonly": true}"#, "readonly"),
            (r#"{"read_only": true}"#, "read_only"),
            (
                r#"{"readOnly": true, "screenshot": false, "dryRun": 1}"#,
                "dryRun",
            ),
        ] {
            let e = serde_json::from_str::<PlatformFile>(&file(policy)).unwrap_err();
            assert!(
                e.to_string().contains(&format!("unknown field `{key}`")),
                "{policy}: {e}"
            );
        }
        // A nested table refuses its own unknown keys.
        let e = serde_json::from_str::<PlatformFile>(&file(
            r#"{"session": {"cookieDomains": ["p.example"], "origin": ["x"]}}"#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `origin`"), "{e}");
    }
}
