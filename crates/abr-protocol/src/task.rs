//! Browser tasks: an approved step plan run in an isolated browser, with a truthful outcome.
//!
//! The plan's shape follows the browser-action proposals orchestrators already produce
//! (`steps` of `navigate`, `click`, `type`, `select`, `upload`, `wait`, `extract`, `screenshot`, each
//! with a human-readable `description`; a `verification`; `risk`, `reasoning`,
//! `confidence`), in camelCase, with the snake_case spellings of those proposals accepted too
//! (`timeout_ms`, `tenant_id`).
//!
//! **Strict.** Every type here that a client sends refuses a field it does not know (a
//! misspelt `readOnly` must not run a task writable): serde's `deny_unknown_fields`, and,
//! where serde cannot apply it (a `flatten`ed field, an untagged enum), a flat wire shape
//! the type is read through ([`PlanStep`], [`TaskVerification`], [`Selector`]). The records
//! the runner answers ([`TaskRecord`], [`StepResult`], ...) stay lenient: a client reading
//! a newer runner's answer keeps working.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::{
    AgentSessionState, BlockedAction, CookieFact, ErrorBody, Pause, PrincipalRef, RunScreenshots,
    SecretValue, SessionScopeSpec, TakeoverEvent,
};

/// How an element is found: exactly one of a CSS selector, a visible text, or an ARIA role
/// (with an optional accessible name). A bare string is a CSS selector; an object is a
/// [`SelectorSpec`], whose unknown fields are refused by name (an untagged enum would only
/// say that nothing matched).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Selector {
    /// A CSS selector, written as a bare string (`"#submit"`).
    Css(String),
    /// One of the explicit forms.
    Explicit(SelectorSpec),
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Selector;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a CSS selector string or an object with css, text or role")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Selector, E> {
                Ok(Selector::Css(v.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Selector, E> {
                Ok(Selector::Css(v))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Selector, A::Error> {
                SelectorSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Selector::Explicit)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// What [`Selector`]'s deserializer accepts and its serializer writes: a string (a CSS
/// selector, [`Selector::Css`]) or a [`SelectorSpec`] object ([`Selector::Explicit`], its
/// unknown fields refused). Nothing else (a number, an array, `null`) is a selector.
impl JsonSchema for Selector {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Selector".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::Selector").into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let spec = generator.subschema_for::<SelectorSpec>();
        schemars::json_schema!({
            "description": "How an element is found: a bare string is a CSS selector; an \
                object gives exactly one of `css`, `text` or `role` (with an optional `name`).",
            "oneOf": [
                { "type": "string", "description": "A CSS selector (`\"#submit\"`)." },
                spec
            ]
        })
    }
}

/// The explicit forms of a [`Selector`]; exactly one of `css`, `text`, `role` is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectorSpec {
    /// A CSS selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub css: Option<String>,
    /// Visible text (substring, case-insensitive), as Playwright's `getByText`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// ARIA role (`button`, `link`, `textbox`, ...), as Playwright's `getByRole`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// With `role`: the accessible name (substring, case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What an `extract` step reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Extraction {
    /// The element's text.
    Text {
        /// The element.
        selector: Selector,
    },
    /// One attribute of the element.
    Attribute {
        /// The element.
        selector: Selector,
        /// The attribute's name.
        attribute: String,
    },
    /// An HTML table as rows of cells (the header row, when there is one, names the cells).
    Table {
        /// The `<table>`.
        selector: Selector,
    },
    /// For each element matching `selector`, the named fields read by relative selectors.
    List {
        /// Each item.
        selector: Selector,
        /// Field name → CSS selector relative to the item (its text is the value).
        fields: BTreeMap<String, String>,
    },
}

/// A DOM check, for `assert` steps and `domCheck` verification: an element exists, and/or a
/// text is on the page (or in the element).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DomCheck {
    /// An element that must exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// A text that must be shown (in the element when `selector` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// One action of a plan. (Read as part of a [`PlanStep`], through its flat wire shape.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum StepAction {
    /// Open a URL (http or https; defaults to the plan's target URL).
    Navigate {
        /// Where; `{{input}}` placeholders are filled from the task's inputs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// Click an element.
    Click {
        /// The element.
        selector: Selector,
    },
    /// Type into a field (its previous value replaced).
    Type {
        /// The field.
        selector: Selector,
        /// The text; `{{input}}` placeholders are filled from the task's inputs.
        value: String,
        /// Press Enter afterwards.
        #[serde(default)]
        submit: bool,
    },
    /// Choose an option of a `<select>` (by value or label).
    Select {
        /// The `<select>`.
        selector: Selector,
        /// The option's value or label; may be templated.
        value: String,
    },
    /// Set a file input to an artifact the tenant uploaded first (`POST /v1/artifacts`):
    /// the page's input receives the artifact's name, type and bytes, never a file of the
    /// runner's disk. Not a commit (the submit that sends it is).
    Upload {
        /// The `<input type=file>`.
        selector: Selector,
        /// The artifact's id (`art_…`), the tenant's own.
        artifact: String,
    },
    /// Wait for an element, a URL or a text.
    Wait {
        /// An element (the seed's form: `selector` directly on the step).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<Selector>,
        /// A substring of the URL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// A text on the page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// Read data from the page into the result under `name`.
    Extract {
        /// Key in the task's extracted data.
        name: String,
        /// What to read.
        #[serde(flatten)]
        what: Extraction,
    },
    /// Take a screenshot (kept with the task record, referenced by name).
    Screenshot {
        /// Its name (default: `step-<index>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Check the DOM; a failed check fails the task at this step.
    Assert {
        /// The check.
        #[serde(flatten)]
        check: DomCheck,
    },
}

/// One step: an action, a description for the person approving it, an optional deadline.
///
/// Read through `wire::Step`, one flat struct per step type: a field no step of that type
/// has (`readOnly` on a click, `attribute` on a text extraction) is refused by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", try_from = "wire::Step")]
pub struct PlanStep {
    /// The action.
    #[serde(flatten)]
    pub action: StepAction,
    /// What the step does, in words, for the approver.
    pub description: String,
    /// Deadline of this step in milliseconds (default: the runner's step deadline).
    #[serde(default, alias = "timeout_ms", skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The stage of the run this step starts (1 to 40 of `a`-`z`, `0`-`9`, `_`:
    /// `signing_in`, `filling_form`, `submitting`): each `step_progress` event names the
    /// stage its step is in (this step's, or the last one a step before it started). A
    /// name, never a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// How a task proves its outcome. Read through `wire::Verification` (flat, strict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "method",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    from = "wire::Verification"
)]
pub enum TaskVerification {
    /// A DOM check after the last step.
    DomCheck {
        /// The check.
        #[serde(flatten)]
        check: DomCheck,
    },
    /// A screenshot after the last step that must show `text` (checked against the page's
    /// visible text when the screenshot is taken).
    Screenshot {
        /// The text it must show.
        text: String,
    },
    /// ABR posts the outcome to this URL of the orchestrator's; the orchestrator proves it.
    ApiCallback {
        /// An https URL (http only to allowed private addresses).
        url: String,
    },
}

/// How risky the plan's author says it is (stored and used by the approval rule; not trusted
/// for anything else).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads, or reversible changes.
    #[default]
    Low,
    /// Changes that are hard to undo.
    Medium,
    /// Payments, deletions, messages to others.
    High,
}

/// A step plan, as proposed by a planner and shown to the approver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepPlan {
    /// The page the task starts on.
    pub target_url: String,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
    /// How the outcome is proven.
    pub verification: TaskVerification,
    /// Declared risk.
    #[serde(default)]
    pub risk: Risk,
    /// Why the planner proposes this (stored, not interpreted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The planner's confidence (stored, not interpreted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The plan only observes: every committing action is refused (`blocked_action`). Part
    /// of the plan hash the approver approves; it can only tighten a run (a read-only
    /// platform stays read-only whatever the plan says).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Keep the files the run's pages download as artifacts of the tenant (each at most
    /// `ABR_ARTIFACT_MAX_BYTES`, `ABR_ARTIFACT_RUN_MAX_COUNT` a run, of the kept types,
    /// within the tenant's quota), listed in the record's `downloads`. Without it every
    /// download is refused, as the browser refuses them. A download is a read: it sends
    /// nothing, so a read-only run may keep them too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub downloads: bool,
}

/// `POST /v1/tasks`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRequest {
    /// The plan.
    pub plan: StepPlan,
    /// Values for `{{name}}` placeholders in the steps (never logged, never in the audit;
    /// shown to the approver on the record, a secret one as its name and length only).
    #[serde(default)]
    pub inputs: BTreeMap<String, SecretValue>,
    /// The inputs that are secrets (a password, a code): the record and the approval page
    /// show their name and length, never their value. An input named like a credential
    /// (`password`, `token`, `secret`, `otp`, ...) is one whatever this says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_inputs: Vec<String>,
    /// A session to run with (scoped by `scope` or the platform's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<AgentSessionState>,
    /// A session stored on the runner, instead of `session`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// A named browser profile on the runner, instead of a session: its sign-ins are kept
    /// on the runner's disk between runs (`ABR_PROFILE_DIR`). The tenant's owner consents to
    /// each profile once (`consent_required` until then); a committing press on a site the
    /// profile was never signed in to, or whose recorded session cookie expired, pauses
    /// `login_required` first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The scope of the session (required with a session, unless `platform` gives one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<SessionScopeSpec>,
    /// A platform whose policy and scope apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The tenant (or the `x-tenant-id` header).
    #[serde(default, alias = "tenant_id", skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// The orchestrator's proposal id (or the `x-proposal-id` header).
    #[serde(
        default,
        alias = "proposal_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub proposal_id: Option<String>,
    /// Rehearse: run every step up to the first committing one, refuse that one
    /// (`blocked_action`, `blockedBy: dry_run`) and stop. Per request, unlike `readOnly`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Wait for a person when the runner detects a handoff (a captcha, a sign-in, a paywall
    /// ...): the run pauses, keeps its browser, and can be taken over through the live view
    /// and resumed. Absent: a handoff ends the run with its reason as the error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffOptions>,
}

/// The flat shapes plan steps and verifications are read through: one struct per step type
/// (and per verification method), with `deny_unknown_fields`, because serde cannot refuse
/// unknown fields through `#[serde(flatten)]` (a flattened internally tagged enum leaves
/// every field "unknown" to the struct around it).
mod wire {
    use std::collections::BTreeMap;

    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::{DomCheck, Extraction, PlanStep, Selector, StepAction, TaskVerification};

    /// The fields of an extraction of kind `list`: field name → CSS selector relative to
    /// the item, whose text is the value. (Named, so that client generators make one model
    /// of it.)
    #[derive(JsonSchema)]
    #[expect(dead_code, reason = "a schema: the wire reads a map")]
    struct ListFields(BTreeMap<String, String>);

    /// A step as written: its type's fields, the description and the deadline, nothing else.
    ///
    /// Its schema is [`PlanStep`]'s as clients write it (`try_from`), so its docs are the
    /// API's: each variant and field says what [`StepAction`]'s says.
    #[derive(Deserialize, JsonSchema)]
    #[serde(
        tag = "type",
        rename_all = "camelCase",
        rename_all_fields = "camelCase",
        deny_unknown_fields
    )]
    pub(super) enum Step {
        /// Open a URL (http or https; defaults to the plan's target URL).
        Navigate {
            /// Where; `{{input}}` placeholders are filled from the task's inputs.
            #[serde(default)]
            url: Option<String>,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Click an element.
        Click {
            /// The element.
            selector: Selector,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Type into a field (its previous value replaced).
        Type {
            /// The field.
            selector: Selector,
            /// The text; `{{input}}` placeholders are filled from the task's inputs.
            value: String,
            /// Press Enter afterwards.
            #[serde(default)]
            submit: bool,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Choose an option of a `<select>` (by value or label).
        Select {
            /// The `<select>`.
            selector: Selector,
            /// The option's value or label; may be templated.
            value: String,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Set a file input to an artifact the tenant uploaded first (`POST /v1/artifacts`).
        Upload {
            /// The `<input type=file>`.
            selector: Selector,
            /// The artifact's id (`art_…`), the tenant's own.
            artifact: String,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Wait for an element, a URL or a text.
        Wait {
            /// An element (the seed's form: `selector` directly on the step).
            #[serde(default)]
            selector: Option<Selector>,
            /// A substring of the URL.
            #[serde(default)]
            url: Option<String>,
            /// A text on the page.
            #[serde(default)]
            text: Option<String>,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Read data from the page into the result under `name`: the element's text
        /// (`kind: text`), one of its attributes (`attribute`, naming it in `attribute`), an
        /// HTML table as rows of cells (`table`), or for each element matching `selector`
        /// the named fields read by relative selectors (`list`, with `fields`).
        Extract {
            /// Key in the task's extracted data.
            name: String,
            /// What to read.
            kind: ExtractKind,
            /// The element (for `list`: each item).
            selector: Selector,
            /// The attribute's name (`kind: attribute` only, and required there).
            #[serde(default)]
            attribute: Option<String>,
            /// Field name → CSS selector relative to the item, whose text is the value
            /// (`kind: list` only, and required there).
            #[serde(default)]
            #[schemars(with = "Option<ListFields>")]
            fields: Option<BTreeMap<String, String>>,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Take a screenshot (kept with the task record, referenced by name).
        Screenshot {
            /// Its name (default: `step-<index>`).
            #[serde(default)]
            name: Option<String>,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
        /// Check the DOM (an element exists, and/or a text is on the page or in the
        /// element); a failed check fails the task at this step.
        Assert {
            /// An element that must exist.
            #[serde(default)]
            selector: Option<Selector>,
            /// A text that must be shown (in the element when `selector` is set).
            #[serde(default)]
            text: Option<String>,
            /// What the step does, in words, for the approver.
            description: String,
            /// Deadline of this step in milliseconds (default: the runner's step deadline).
            #[serde(default, alias = "timeout_ms")]
            timeout_ms: Option<u64>,
            /// The stage this step starts, named for the run's watchers (see [`PlanStep`]).
            #[serde(default)]
            stage: Option<String>,
        },
    }

    /// The `kind` of an `extract` step.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) enum ExtractKind {
        /// The element's text.
        Text,
        /// One attribute of the element (named in `attribute`).
        Attribute,
        /// An HTML table as rows of cells (the header row, when there is one, names the
        /// cells).
        Table,
        /// For each element matching `selector`, the named fields (`fields`).
        List,
    }

    /// A field given to an `extract` step whose kind does not take it, or one its kind needs
    /// and lacks. The words name fields only, never a value.
    #[derive(Debug)]
    pub(super) struct ExtractFields(String);

    impl std::fmt::Display for ExtractFields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    fn unknown(field: &str, kind: &str) -> ExtractFields {
        let own = match kind {
            "attribute" => "`attribute`, ",
            "list" => "`fields`, ",
            _ => "",
        };
        ExtractFields(format!(
            "unknown field `{field}`, expected one of `name`, `kind`, `selector`, {own}\
             `description`, `timeoutMs`, `stage` (an extraction of kind {kind})"
        ))
    }

    fn extraction(
        kind: ExtractKind,
        selector: Selector,
        attribute: Option<String>,
        fields: Option<BTreeMap<String, String>>,
    ) -> Result<Extraction, ExtractFields> {
        let missing = |field: &str| ExtractFields(format!("missing field `{field}`"));
        match kind {
            ExtractKind::Text | ExtractKind::Table => {
                let kind = if matches!(kind, ExtractKind::Text) {
                    "text"
                } else {
                    "table"
                };
                if attribute.is_some() {
                    return Err(unknown("attribute", kind));
                }
                if fields.is_some() {
                    return Err(unknown("fields", kind));
                }
                Ok(if kind == "text" {
                    Extraction::Text { selector }
                } else {
                    Extraction::Table { selector }
                })
            }
            ExtractKind::Attribute => {
                if fields.is_some() {
                    return Err(unknown("fields", "attribute"));
                }
                Ok(Extraction::Attribute {
                    selector,
                    attribute: attribute.ok_or_else(|| missing("attribute"))?,
                })
            }
            ExtractKind::List => {
                if attribute.is_some() {
                    return Err(unknown("attribute", "list"));
                }
                Ok(Extraction::List {
                    selector,
                    fields: fields.ok_or_else(|| missing("fields"))?,
                })
            }
        }
    }

    impl TryFrom<Step> for PlanStep {
        type Error = ExtractFields;

        fn try_from(step: Step) -> Result<Self, Self::Error> {
            let (action, description, timeout_ms, stage) = match step {
                Step::Navigate {
                    url,
                    description,
                    timeout_ms,
                    stage,
                } => (StepAction::Navigate { url }, description, timeout_ms, stage),
                Step::Click {
                    selector,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Click { selector },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Type {
                    selector,
                    value,
                    submit,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Type {
                        selector,
                        value,
                        submit,
                    },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Select {
                    selector,
                    value,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Select { selector, value },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Upload {
                    selector,
                    artifact,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Upload { selector, artifact },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Wait {
                    selector,
                    url,
                    text,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Wait {
                        selector,
                        url,
                        text,
                    },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Extract {
                    name,
                    kind,
                    selector,
                    attribute,
                    fields,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Extract {
                        name,
                        what: extraction(kind, selector, attribute, fields)?,
                    },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Screenshot {
                    name,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Screenshot { name },
                    description,
                    timeout_ms,
                    stage,
                ),
                Step::Assert {
                    selector,
                    text,
                    description,
                    timeout_ms,
                    stage,
                } => (
                    StepAction::Assert {
                        check: DomCheck { selector, text },
                    },
                    description,
                    timeout_ms,
                    stage,
                ),
            };
            Ok(PlanStep {
                action,
                description,
                timeout_ms,
                stage,
            })
        }
    }

    /// A verification as written (its schema is [`TaskVerification`]'s as clients write it,
    /// `from`).
    #[derive(Deserialize, JsonSchema)]
    #[serde(
        tag = "method",
        rename_all = "snake_case",
        rename_all_fields = "camelCase",
        deny_unknown_fields
    )]
    pub(super) enum Verification {
        /// A DOM check after the last step: an element exists, and/or a text is on the page
        /// (or in the element).
        DomCheck {
            /// An element that must exist.
            #[serde(default)]
            selector: Option<Selector>,
            /// A text that must be shown (in the element when `selector` is set).
            #[serde(default)]
            text: Option<String>,
        },
        /// A screenshot after the last step that must show `text` (checked against the
        /// page's visible text when the screenshot is taken).
        Screenshot {
            /// The text it must show.
            text: String,
        },
        /// ABR posts the outcome to this URL of the orchestrator's; the orchestrator proves
        /// it.
        ApiCallback {
            /// An https URL (http only to allowed private addresses).
            url: String,
        },
    }

    impl From<Verification> for TaskVerification {
        fn from(v: Verification) -> Self {
            match v {
                Verification::DomCheck { selector, text } => Self::DomCheck {
                    check: DomCheck { selector, text },
                },
                Verification::Screenshot { text } => Self::Screenshot { text },
                Verification::ApiCallback { url } => Self::ApiCallback { url },
            }
        }
    }
}

/// How long a paused run waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandoffOptions {
    /// Seconds a pause waits to be resumed before it expires (1 to the runner's maximum).
    pub wait_seconds: u64,
}

impl std::fmt::Debug for TaskRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRequest")
            .field("steps", &self.plan.steps.len())
            .field("inputs", &self.inputs.keys().collect::<Vec<_>>())
            .field("secret_inputs", &self.secret_inputs)
            .field("session", &self.session.is_some())
            .field("session_id", &self.session_id.is_some())
            .field("profile", &self.profile)
            .field("platform", &self.platform)
            .field("dry_run", &self.dry_run)
            .field("handoff", &self.handoff)
            .finish_non_exhaustive()
    }
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Stored; waits for `approve` or `reject`.
    PendingApproval,
    /// Approved (or approval not required); waiting for a slot.
    Queued,
    /// Running.
    Running,
    /// Stopped for a person (see `pause`): its browser is kept until it is resumed, ended
    /// or expires.
    Paused,
    /// The verification proved the outcome.
    Succeeded,
    /// A committing step ran but nothing proved the result: it may have happened. Never
    /// retried automatically.
    Uncertain,
    /// Nothing committing ran: safe to retry.
    Failed,
    /// The session was signed out.
    NeedsReauth,
    /// Rejected by the approver.
    Rejected,
    /// A browse session that was closed (by its brain, or after being idle): no outcome is
    /// claimed; its steps say what it did.
    Closed,
}

impl TaskState {
    /// Whether the task ended.
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            Self::PendingApproval | Self::Queued | Self::Running | Self::Paused
        )
    }
}

/// What happened at one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// The step's index.
    pub index: usize,
    /// Its type (`click`, ...).
    pub action: String,
    /// Whether it was done.
    pub ok: bool,
    /// Whether the runtime counted it as possibly committing (a click, an Enter).
    pub committing: bool,
    /// How long it took.
    pub ms: u64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// When it started (none on records kept before API 1.2).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub at: Option<OffsetDateTime>,
    /// The element it acted on, as the page presents it to assistive technology: its ARIA
    /// role and accessible name (never a value typed into it). None for a step without an
    /// element (`navigate`, `wait`, `screenshot`) or one whose element was never reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<StepTarget>,
    /// The page it acted on: scheme, host, port and path; no query, fragment or
    /// credentials (none on records kept before API 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How many characters it typed or chose (`type`, `select`): the value itself is never
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_chars: Option<usize>,
}

/// The element a step acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepTarget {
    /// Its ARIA role (explicit, or implied by its tag: `button`, `textbox`, `link`), when it
    /// has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Its accessible name (a label, its text), at most 200 characters.
    pub name: String,
}

/// A task's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// Who approved: the approving key's holder (or `auto:<rule>` when the operator's rule
    /// did not require it). Never a name the caller wrote.
    pub approved_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub approved_at: OffsetDateTime,
    /// The approving key (none for `auto:<rule>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<PrincipalRef>,
    /// What the approver said of themself (`approvedBy` of the request), kept as said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stated_by: Option<String>,
}

/// The record of a task: `POST /v1/tasks`, `GET /v1/tasks/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task's id.
    pub task_id: String,
    /// Where it is.
    pub state: TaskState,
    /// The hash of everything the approval binds (hex): the plan, the values it is filled
    /// with, the session and the platform it runs with. `approve` must name it; keyed with
    /// a runner secret, so that it confirms no guessed value.
    pub plan_hash: String,
    /// The steps in words, as the approver sees them.
    pub steps: Vec<String>,
    /// The values the steps are filled with, as the approver sees them (a secret one as its
    /// name and length), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputShown>,
    /// Whose session it runs with and under which platform, as the approver sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<TaskAccount>,
    /// Why the planner proposes it (the plan's `reasoning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The declared risk.
    pub risk: Risk,
    /// The key that proposed it (created it, or retried the task it is a new attempt of):
    /// that key never approves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_by: Option<PrincipalRef>,
    /// The approval rule that applied (`all`, `committing_or_risky`, `off`).
    pub approval_rule: String,
    /// The approval, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// The orchestrator's proposal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    /// Per-step results, in order, for the steps that ran.
    #[serde(default)]
    pub step_results: Vec<StepResult>,
    /// Data read by `extract` steps, by name.
    #[serde(default)]
    pub extracted: BTreeMap<String, Value>,
    /// Names of the screenshots taken.
    #[serde(default)]
    pub screenshots: Vec<String>,
    /// The files its pages downloaded (a plan with `downloads: true`): each kept as an
    /// artifact, or refused with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downloads: Vec<crate::DownloadRecord>,
    /// The step the task failed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<usize>,
    /// Why it failed or is uncertain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// When it was created.
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
    /// When it started running.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub started_at: Option<OffsetDateTime>,
    /// The task this one retries (the first attempt of the chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// The owner's assertion that an uncertain task did not happen, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<OwnerAssertion>,
    /// The run was read-only (from its platform or its approved plan).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The run was a dry run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The actions the guard refused, in order. A read-only or dry run goes on after a
    /// refusal (a refused click is a wasted step) and ends `failed` with `error.code`
    /// `blocked_action` at the first one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedAction>,
    /// The current or last pause and its takeover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// Every takeover transition, in order (ids only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub takeover_events: Vec<TakeoverEvent>,
    /// Whether the run takes replay frames, fixed when it started (`GET
    /// /v1/runs/{taskId}/frames`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<RunScreenshots>,
    /// The session check before the first committing action: cookie names and expiry only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_check: Option<Vec<CookieFact>>,
    /// The record is a browse session's (`POST /v1/browse`): its steps came one at a time
    /// from a brain outside the runner, and no plan was approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub browse: bool,
    /// When its evidence expired (`ABR_RETENTION_DAYS` after it ended): its extracted data,
    /// screenshots and replay frames are gone; its outcome, steps and errors stay.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub evidence_expired_at: Option<OffsetDateTime>,
    /// What the approver is shown of the page besides the steps, when the tenant has plan
    /// previews on (`ABR_PLAN_PREVIEWS`): a redacted frame where a dry run of the plan
    /// reached its first committing step (nothing written), with that step's element
    /// outlined; the image is the task's screenshot `approval-preview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::preview::ApprovalPreview>,
    /// Why the preview could not be taken (or where the dry run stopped short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_note: Option<String>,
}

/// An input as the approver sees it: its value, or for a secret its length only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputShown {
    /// The input's name (its placeholder's).
    pub name: String,
    /// Its value; absent for a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// It is a secret: only its length is shown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
    /// Its length, in characters.
    pub length: usize,
}

/// Whose session a task runs with and under which platform's policy, as the approver sees
/// it (never a cookie's value).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskAccount {
    /// The stored session it runs with (`sessionId`): the account, by the tenant's own name
    /// for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// It runs with a session sent with the task: the sites that session is signed in to
    /// (its cookies' domains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_session_sites: Option<Vec<String>>,
    /// The platform the task names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The platform the stored session is bound to (its policy applies too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_platform: Option<String>,
    /// The named browser profile it runs in (its sign-ins are the account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// `POST .../assert-not-posted`: the owner states that an uncertain action did not happen.
/// It allows exactly one new attempt and is recorded as an assertion, never as proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssertNotPostedRequest {
    /// Who asserts (required, non-empty).
    pub asserted_by: String,
    /// Why they know (free text, stored with the record, never audited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An owner's assertion, as recorded on an uncertain task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerAssertion {
    /// Who asserted.
    pub asserted_by: String,
    /// Their note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub asserted_at: OffsetDateTime,
    /// The attempt it allowed, once spent (it allows exactly one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_by: Option<String>,
}

/// What a read-only re-check of an uncertain outcome found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecheckAnswer {
    /// The verification proved the outcome now.
    Confirmed,
    /// The verification ran and did not find the evidence (not proof that nothing
    /// happened: the outcome stays uncertain).
    NotFound,
    /// The runner cannot tell on its own (the orchestrator proves it, `api_callback`).
    Ambiguous,
    /// The check could not run (browser, session or page unavailable).
    Unavailable,
}

/// `POST .../recheck`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecheckResult {
    /// The answer.
    pub answer: RecheckAnswer,
    /// Why it is `unavailable` or `not_found`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// `POST /v1/tasks/{id}/approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveRequest {
    /// What the approver says of themself (optional; recorded as `approval.statedBy`): the
    /// record's `approvedBy` is always the approving key's holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// The plan hash the approver saw.
    pub plan_hash: String,
}

/// `201` of `POST /v1/tasks/{id}/approval-link` (an approver's key): a one-time link for a
/// person who holds no key to read the task and approve or reject it, as that approver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalLink {
    /// The page (`{runner}/approve/{token}`): a credential for this one decision; give it
    /// to the person only.
    pub url: SecretValue,
    /// When it stops working (it also stops once used).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
}

/// `POST /v1/tasks/{id}/reject`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RejectRequest {
    /// What the person rejecting says of themself (optional): the record names the
    /// rejecting key's holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_by: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_proposal_shape_parses() {
        let plan: StepPlan = serde_json::from_str(
            r##"{
              "targetUrl": "https://internal-tool.company.com/admin/users",
              "steps": [
                {"type": "navigate", "description": "Navigate to user admin panel"},
                {"type": "click", "selector": "#add-user-btn", "description": "Click 'Add User'"},
                {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter user email"},
                {"type": "select", "selector": "#role-dropdown", "value": "admin", "description": "Select admin role"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit form"},
                {"type": "wait", "selector": ".success-message", "timeout_ms": 3000, "description": "Wait for success"},
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"},
                {"type": "screenshot", "description": "Capture success state for audit"}
              ],
              "verification": {"method": "screenshot", "text": "User created successfully"},
              "reasoning": "Internal tool has no API",
              "confidence": 0.75,
              "risk": "medium"
            }"##,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.steps.len(), 8);
        assert_eq!(plan.risk, Risk::Medium);
        assert_eq!(plan.steps[5].timeout_ms, Some(3000));
        assert!(matches!(
            &plan.steps[4].action,
            StepAction::Click { selector: Selector::Explicit(SelectorSpec { role: Some(r), .. }) } if r == "button"
        ));
        assert!(matches!(
            &plan.steps[6].action,
            StepAction::Extract {
                what: Extraction::Table { .. },
                ..
            }
        ));
        let back = serde_json::to_value(&plan).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back["steps"][5]["timeoutMs"], 3000);
        assert!(serde_json::from_str::<PlanStep>(r#"{"type":"eval","description":"x"}"#).is_err());
    }

    /// Every step type, verification method, extraction kind and selector form, as a client
    /// writes them.
    fn every_form() -> StepPlan {
        serde_json::from_value(serde_json::json!({
            "targetUrl": "https://x.example/",
            "steps": [
                {"type": "navigate", "description": "d"},
                {"type": "navigate", "url": "/a/{{id}}", "description": "d", "timeoutMs": 5},
                {"type": "click", "selector": {"role": "button", "name": "Go"}, "description": "d"},
                {"type": "type", "selector": {"css": "#q"}, "value": "v", "submit": true, "description": "d"},
                {"type": "select", "selector": {"text": "Role"}, "value": "admin", "description": "d"},
                {"type": "wait", "url": "/done", "description": "d", "timeout_ms": 7},
                {"type": "extract", "name": "t", "kind": "text", "selector": "#t", "description": "d"},
                {"type": "extract", "name": "a", "kind": "attribute", "selector": "#a", "attribute": "href", "description": "d"},
                {"type": "extract", "name": "b", "kind": "table", "selector": "#b", "description": "d"},
                {"type": "extract", "name": "l", "kind": "list", "selector": "li", "fields": {"x": ".x"}, "description": "d"},
                {"type": "screenshot", "name": "s", "description": "d"},
                {"type": "upload", "selector": "#file", "artifact": "art_x", "description": "d"},
                {"type": "assert", "selector": "#ok", "text": "OK", "description": "d"}
            ],
            "verification": {"method": "dom_check", "selector": "#ok", "text": "OK"},
            "risk": "high",
            "reasoning": "r",
            "confidence": 0.5,
            "readOnly": true
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_form_round_trips_through_the_strict_reading() {
        let plan = every_form();
        assert_eq!(plan.steps[1].timeout_ms, Some(5));
        assert_eq!(plan.steps[5].timeout_ms, Some(7));
        assert!(plan.read_only);
        let back: StepPlan =
            serde_json::from_value(serde_json::to_value(&plan).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, plan);
        for verification in [
            TaskVerification::Screenshot { text: "t".into() },
            TaskVerification::ApiCallback {
                url: "https://o.example/cb".into(),
            },
            TaskVerification::DomCheck {
                check: DomCheck {
                    selector: None,
                    text: Some("t".into()),
                },
            },
        ] {
            let json = serde_json::to_value(&verification).unwrap_or_default();
            let back: TaskVerification =
                serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back, verification);
        }
    }

    /// The error reading `json` as `T`.
    fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(
        json: serde_json::Value,
    ) -> String {
        match serde_json::from_value::<T>(json.clone()) {
            Ok(v) => panic!("{json} was accepted as {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_unknown_field_is_refused_by_name_wherever_it_is() {
        let plan = serde_json::to_value(every_form()).unwrap_or_default();
        // One unknown field at every level a client writes, through the flattened and
        // tagged shapes.
        type Edit = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("readonly", Box::new(|p| p["readonly"] = true.into())),
            ("read_only", Box::new(|p| p["read_only"] = true.into())),
            ("dryRun", Box::new(|p| p["dryRun"] = true.into())),
            ("force", Box::new(|p| p["steps"][0]["force"] = true.into())),
            (
                "readOnly",
                Box::new(|p| p["steps"][2]["readOnly"] = true.into()),
            ),
            (
                "nmae",
                Box::new(|p| p["steps"][2]["selector"]["nmae"] = "x".into()),
            ),
            ("delay", Box::new(|p| p["steps"][3]["delay"] = 1.into())),
            ("label", Box::new(|p| p["steps"][4]["label"] = "x".into())),
            ("state", Box::new(|p| p["steps"][5]["state"] = "x".into())),
            (
                "attribute",
                Box::new(|p| p["steps"][6]["attribute"] = "x".into()),
            ),
            (
                "fields",
                Box::new(|p| p["steps"][7]["fields"] = serde_json::json!({})),
            ),
            (
                "attribute",
                Box::new(|p| p["steps"][8]["attribute"] = "x".into()),
            ),
            ("columns", Box::new(|p| p["steps"][9]["columns"] = 2.into())),
            (
                "fullPage",
                Box::new(|p| p["steps"][10]["fullPage"] = true.into()),
            ),
            (
                "optional",
                Box::new(|p| p["steps"][11]["optional"] = true.into()),
            ),
            (
                "strict",
                Box::new(|p| p["verification"]["strict"] = true.into()),
            ),
        ];
        for (field, edit) in cases {
            let mut json = plan.clone();
            edit(&mut json);
            let message = refusal::<StepPlan>(json);
            assert!(
                message.contains(&format!("unknown field `{field}`")),
                "{field}: {message}"
            );
        }
        for verification in [
            serde_json::json!({"method": "screenshot", "text": "t", "fullPage": true}),
            serde_json::json!({"method": "api_callback", "url": "https://o.example/", "secret": "s"}),
        ] {
            assert!(refusal::<TaskVerification>(verification).contains("unknown field"));
        }
        // An attribute extraction without its attribute, a list without its fields.
        let mut json = plan.clone();
        json["steps"][7] = serde_json::json!({"type": "extract", "name": "a", "kind": "attribute", "selector": "#a", "description": "d"});
        assert!(refusal::<StepPlan>(json).contains("missing field `attribute`"));
        // The request around the plan, and the bodies beside it.
        let request = serde_json::json!({"plan": plan, "dryrun": true});
        assert!(refusal::<TaskRequest>(request).contains("unknown field `dryrun`"));
        let request = serde_json::json!({"plan": plan, "handoff": {"waitSeconds": 5, "x": 1}});
        assert!(refusal::<TaskRequest>(request).contains("unknown field `x`"));
        for (json, field) in [
            (
                serde_json::json!({"approvedBy": "a", "planHash": "h", "force": true}),
                "force",
            ),
            (
                serde_json::json!({"rejectedBy": "a", "silent": true}),
                "silent",
            ),
        ] {
            let message = if field == "force" {
                refusal::<ApproveRequest>(json)
            } else {
                refusal::<RejectRequest>(json)
            };
            assert!(
                message.contains(&format!("unknown field `{field}`")),
                "{message}"
            );
        }
        let message =
            refusal::<AssertNotPostedRequest>(serde_json::json!({"assertedBy": "a", "proof": 1}));
        assert!(message.contains("unknown field `proof`"), "{message}");
        // A selector that is neither a string nor an object says what it expects.
        let message = refusal::<Selector>(serde_json::json!(5));
        assert!(message.contains("a CSS selector string"), "{message}");
    }

    #[test]
    fn inputs_never_print() {
        let request = TaskRequest {
            profile: None,
            plan: StepPlan {
                target_url: "https://x.example".into(),
                steps: vec![],
                verification: TaskVerification::DomCheck {
                    check: DomCheck::default(),
                },
                risk: Risk::Low,
                reasoning: None,
                confidence: None,
                read_only: false,
                downloads: false,
            },
            inputs: BTreeMap::from([("password".to_owned(), SecretValue::new("hunter2"))]),
            secret_inputs: Vec::new(),
            session: None,
            session_id: None,
            scope: None,
            platform: None,
            tenant_id: None,
            proposal_id: None,
            dry_run: false,
            handoff: None,
        };
        assert!(!format!("{request:?}").contains("hunter2"));
    }
}
