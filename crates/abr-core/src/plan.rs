//! Step plans: validation ([`validate`]), templating ([`ValidPlan::fill`]), the plan hash an
//! approver approves ([`plan_hash`]) and the steps in words ([`describe_steps`]).
//!
//! Validation happens when a task is created, before anything is stored and before any
//! browser starts; every error names where it is (`steps[2]`, `verification`, the plan).
//! Error messages never echo a URL, a value or an input: only names and indexes.
//!
//! Every entry point (HTTP, MCP, the relay, an embedder) goes through [`validate`], so the
//! bounds live here: URLs at most [`MAX_URL`] bytes, descriptions [`MAX_DESCRIPTION`],
//! selectors and texts [`MAX_TEXT`], typed values and inputs [`MAX_VALUE`], the reasoning
//! [`MAX_REASONING`], names [`MAX_NAME`], at most [`MAX_INPUTS`] inputs and
//! [`MAX_LIST_FIELDS`] fields of a list. A placeholder fills only a URL's path, query or
//! fragment, never its scheme, host, port or user: the plan, which the approver saw, says
//! where a run goes, not an input.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use abr_protocol::{
    DomCheck, Extraction, InputShown, PlanStep, SecretValue, Selector, StepAction, StepPlan,
    TaskVerification,
};
use url::Url;

use crate::digest::plan_hash;
use crate::error::plan::{PlanError, PlanLocation, PlanProblem, UrlProblem};
use crate::guard::commit::{CommitRules, is_committing};
use crate::step_runner::BrowserAction;
use crate::template::{Piece, Template, valid_name};

/// The limits of a plan (runner settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// Most steps in one plan (default 50).
    pub max_steps: usize,
    /// Longest `timeoutMs` of one step: the job's step budget (default 90 s, the post step
    /// of the [`DeadlineBudget`](crate::budget::DeadlineBudget)).
    pub max_step_timeout: Duration,
}

impl Default for PlanLimits {
    fn default() -> Self {
        Self {
            max_steps: 50,
            max_step_timeout: Duration::from_secs(90),
        }
    }
}

/// Longest screenshot name, in bytes.
const MAX_SCREENSHOT_NAME: usize = 64;
/// Longest URL (the target, a navigate URL before and after its placeholders are filled,
/// a callback, a wait's URL part), in bytes: the browse API's bound too.
pub const MAX_URL: usize = 4096;
/// Longest step description, in bytes.
pub const MAX_DESCRIPTION: usize = 2048;
/// Longest selector part (css, text, role, name), DOM-check or wait text, attribute and
/// list-field selector, in bytes.
pub const MAX_TEXT: usize = 4096;
/// Longest `type` or `select` value (before and after its placeholders are filled) and
/// input value, in bytes.
pub const MAX_VALUE: usize = 64 * 1024;
/// Longest `reasoning`, in bytes.
pub const MAX_REASONING: usize = 16 * 1024;
/// Longest extract name and list-field name, in bytes.
pub const MAX_NAME: usize = 128;
/// Most inputs one task gives.
pub const MAX_INPUTS: usize = 64;
/// Most fields of one `list` extraction.
pub const MAX_LIST_FIELDS: usize = 64;

/// What a placeholder is read as when a URL template is checked: lowercase letters, which
/// parse wherever a filled (percent-encoded) value could stand in a path, a query, a
/// fragment or a host name.
const STAND_IN: &str = "abrplaceholderstandin";

/// The name of the screenshot a `screenshot` verification takes (reserved: no step may use
/// it).
pub const VERIFICATION_SCREENSHOT: &str = "verification";

/// The name of the screenshot a plan's approval preview is kept under (reserved too).
pub const PREVIEW_SCREENSHOT: &str = "approval-preview";

/// One step with its placeholders filled: the browser action, and the name its result is
/// kept under (the extract name, the screenshot name).
#[derive(Debug, Clone, PartialEq)]
pub struct FilledStep {
    /// What the browser does.
    pub action: BrowserAction,
    /// For `extract`: the key in the task's extracted data; for `screenshot`: its name.
    pub name: Option<String>,
    /// For `upload`: the artifact whose bytes the run sets on the file input (the action's
    /// `files` are empty until the run reads it from the store).
    pub artifact: Option<String>,
}

/// A plan that passed [`validate`]: with its target URL parsed, its hash and its steps in
/// words. It holds no input values; [`ValidPlan::fill`] makes the browser actions.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPlan {
    plan: StepPlan,
    target: Url,
    hash: String,
    steps: Vec<String>,
    committing: bool,
}

impl ValidPlan {
    /// The plan.
    pub fn plan(&self) -> &StepPlan {
        &self.plan
    }

    /// The page the task starts on.
    pub fn target_url(&self) -> &Url {
        &self.target
    }

    /// [`plan_hash`] of the plan.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// [`describe_steps`] of the plan.
    pub fn describe(&self) -> &[String] {
        &self.steps
    }

    /// Whether a step may commit by the commit rule ([`is_committing`], without element facts:
    /// every click, Enter, select and upload may). Computed from the steps only: the plan's
    /// own `risk` plays no part.
    pub fn has_committing_step(&self) -> bool {
        self.committing
    }

    /// The browser actions, with `{{name}}` placeholders filled from `inputs`: in navigate
    /// URLs (each value percent-encoded as a URL component, so an input can never change
    /// the URL's scheme, host or structure), type and select values (as [`SecretValue`]s),
    /// and extract names.
    ///
    /// # Errors
    /// A placeholder naming an input not in `inputs`, a navigate URL that is no longer
    /// http(s) or carries credentials, or two extract steps with one name.
    pub fn fill(
        &self,
        inputs: &BTreeMap<String, SecretValue>,
    ) -> Result<Vec<FilledStep>, PlanError> {
        fill_steps(&self.plan, &self.target, inputs)
    }
}

/// The rules a step is checked by: a plan's (every step type; placeholders name the task's
/// inputs, no sections) or a platform file's (no `extract` or `screenshot`; values may hold
/// the post's content in sections), each within its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRules {
    /// The longest `timeoutMs` a step may ask for.
    pub max_step_timeout: Duration,
    /// Whether `extract` and `screenshot` steps are allowed (a plan's; not a platform's).
    pub results: bool,
    /// Whether a `type` or `select` value may hold sections (`{{#name}}…{{/name}}`).
    pub sections: bool,
}

impl StepRules {
    /// A plan's steps within `limits`.
    pub fn plan(limits: &PlanLimits) -> Self {
        Self {
            max_step_timeout: limits.max_step_timeout,
            results: true,
            sections: false,
        }
    }
}

/// Validates `plan` for a task with `inputs`, within `limits`.
///
/// Refused: no steps or more than `limits.max_steps`; a target URL that is not http(s) or
/// carries credentials; per step, an empty description, `timeoutMs` of 0 or above
/// `limits.max_step_timeout`, an empty selector or one with zero or several forms, a
/// `navigate` URL (relative URLs resolve against the target) that is not http(s) or carries
/// credentials, a `wait` without exactly one condition, an empty DOM check, an empty
/// extract name or attribute or field list, a bad or duplicate screenshot name, a
/// placeholder that is malformed or names an input not given; a verification with an empty
/// check or text, or an `api_callback` URL that is not http(s) or carries credentials.
/// (Unknown step types are refused when the JSON is read.)
///
/// # Errors
/// The first problem, with where it is.
pub fn validate(
    plan: &StepPlan,
    inputs: &BTreeMap<String, SecretValue>,
    limits: &PlanLimits,
) -> Result<ValidPlan, PlanError> {
    let whole = PlanError::at(PlanLocation::Plan);
    if plan.steps.is_empty() {
        return Err(whole(PlanProblem::NoSteps));
    }
    if plan.steps.len() > limits.max_steps {
        return Err(PlanError {
            location: PlanLocation::Step(limits.max_steps),
            problem: PlanProblem::TooManySteps {
                max: limits.max_steps,
            },
        });
    }
    let target = literal_url(&plan.target_url)
        .map_err(|p| PlanError::at(PlanLocation::Plan)(PlanProblem::TargetUrl(p)))?;
    if plan
        .reasoning
        .as_ref()
        .is_some_and(|r| r.len() > MAX_REASONING)
    {
        return Err(whole(PlanProblem::TooLong {
            what: "the reasoning",
            max: MAX_REASONING,
        }));
    }
    check_inputs(inputs).map_err(PlanError::at(PlanLocation::Inputs))?;
    let rules = StepRules::plan(limits);
    for (index, step) in plan.steps.iter().enumerate() {
        check_step(step, &rules).map_err(PlanError::at(PlanLocation::Step(index)))?;
    }
    check_verification(&plan.verification).map_err(PlanError::at(PlanLocation::Verification))?;
    let filled = fill_steps(plan, &target, inputs)?;
    let committing = filled
        .iter()
        .any(|s| is_committing(&s.action, None, &CommitRules::STRICT));
    Ok(ValidPlan {
        plan: plan.clone(),
        target,
        hash: plan_hash(plan),
        steps: describe_steps(plan),
        committing,
    })
}

fn fill_steps(
    plan: &StepPlan,
    target: &Url,
    inputs: &BTreeMap<String, SecretValue>,
) -> Result<Vec<FilledStep>, PlanError> {
    let mut extract_names = BTreeSet::new();
    let mut screenshot_names = BTreeSet::from([
        VERIFICATION_SCREENSHOT.to_owned(),
        PREVIEW_SCREENSHOT.to_owned(),
    ]);
    let mut out = Vec::with_capacity(plan.steps.len());
    for (index, step) in plan.steps.iter().enumerate() {
        let at = PlanError::at(PlanLocation::Step(index));
        let filled = fill_step(index, step, target, inputs).map_err(at)?;
        if let Some(name) = &filled.name {
            let fresh = match filled.action {
                BrowserAction::Extract { .. } => extract_names.insert(name.clone()),
                _ => screenshot_names.insert(name.clone()),
            };
            if !fresh {
                let problem = match filled.action {
                    BrowserAction::Extract { .. } => PlanProblem::DuplicateExtractName,
                    _ => PlanProblem::DuplicateScreenshotName,
                };
                return Err(PlanError::at(PlanLocation::Step(index))(problem));
            }
        }
        out.push(filled);
    }
    Ok(out)
}

fn fill_step(
    index: usize,
    step: &PlanStep,
    target: &Url,
    inputs: &BTreeMap<String, SecretValue>,
) -> Result<FilledStep, PlanProblem> {
    let action = |action| FilledStep {
        action,
        name: None,
        artifact: None,
    };
    Ok(match &step.action {
        StepAction::Navigate { url: None } => action(BrowserAction::Navigate {
            url: target.clone(),
        }),
        StepAction::Navigate {
            url: Some(template),
        } => {
            if placeholder_in_origin(template, target) {
                return Err(PlanProblem::NavigateUrl(UrlProblem::PlaceholderInOrigin));
            }
            let filled = fill(template, "the navigate URL", inputs, true)?;
            let url = checked_url(&filled, Some(target)).map_err(PlanProblem::NavigateUrl)?;
            action(BrowserAction::Navigate { url })
        }
        StepAction::Click { selector } => action(BrowserAction::Click {
            selector: selector.clone(),
        }),
        StepAction::Type {
            selector,
            value,
            submit,
        } => action(BrowserAction::Type {
            selector: selector.clone(),
            value: SecretValue::new(filled_value(value, inputs)?),
            submit: *submit,
        }),
        StepAction::Select { selector, value } => action(BrowserAction::Select {
            selector: selector.clone(),
            value: SecretValue::new(filled_value(value, inputs)?),
        }),
        StepAction::Wait {
            selector,
            url,
            text,
        } => action(BrowserAction::Wait {
            selector: selector.clone(),
            url: url.clone(),
            text: text.clone(),
        }),
        StepAction::Extract { name, what } => {
            let name = fill(name, "the extract name", inputs, false)?;
            if name.trim().is_empty() {
                return Err(PlanProblem::Empty("the extract name"));
            }
            FilledStep {
                action: BrowserAction::Extract { what: what.clone() },
                name: Some(name),
                artifact: None,
            }
        }
        StepAction::Screenshot { name } => FilledStep {
            action: BrowserAction::Screenshot,
            name: Some(name.clone().unwrap_or_else(|| format!("step-{index}"))),
            artifact: None,
        },
        StepAction::Upload { selector, artifact } => FilledStep {
            action: BrowserAction::Upload {
                selector: selector.clone(),
                files: Vec::new(),
            },
            name: None,
            artifact: Some(artifact.clone()),
        },
        StepAction::Assert { check } => action(BrowserAction::Assert {
            check: check.clone(),
        }),
    })
}

/// Longest stage name, in bytes.
pub const MAX_STAGE: usize = 40;

/// A stage name: 1 to [`MAX_STAGE`] of `a`-`z`, `0`-`9`, `_` (it reaches events and
/// webhooks, which carry names, never values).
fn check_stage(stage: &str) -> Result<(), PlanProblem> {
    let ok = (1..=MAX_STAGE).contains(&stage.len())
        && stage
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(PlanProblem::StageName)
    }
}

/// The stage step `index` of `steps` is in: its own, or the last one a step before it
/// started (none before the first stage).
#[must_use]
pub fn stage_at(steps: &[PlanStep], index: usize) -> Option<&str> {
    steps
        .iter()
        .take(index.saturating_add(1))
        .rev()
        .find_map(|step| step.stage.as_deref())
}

/// The one check of a step's shape, for plans and platform files alike: its description,
/// its deadline, its selectors, URLs, values, conditions and names within their bounds, and
/// its placeholders well formed ([`Template`]). What a placeholder may name is the caller's
/// (a plan's inputs, a platform's variables and content).
///
/// # Errors
/// The first problem; [`PlanProblem::field`] names the field it is in.
pub fn check_step(step: &PlanStep, rules: &StepRules) -> Result<(), PlanProblem> {
    at_most(&step.description, "the description", MAX_DESCRIPTION)?;
    if step.description.trim().is_empty() {
        return Err(PlanProblem::EmptyDescription);
    }
    if let Some(stage) = &step.stage {
        check_stage(stage)?;
    }
    match step.timeout_ms {
        Some(0) => return Err(PlanProblem::ZeroTimeout),
        Some(ms) => {
            let max_ms = u64::try_from(rules.max_step_timeout.as_millis()).unwrap_or(u64::MAX);
            if ms > max_ms {
                return Err(PlanProblem::TimeoutAboveBudget { ms, max_ms });
            }
        }
        None => {}
    }
    match &step.action {
        StepAction::Navigate { url } => {
            if let Some(url) = url {
                if url.len() > MAX_URL {
                    return Err(PlanProblem::NavigateUrl(UrlProblem::TooLong));
                }
                non_empty(url, "the navigate URL")?;
                placeholders(url, "the navigate URL", false)?;
            }
        }
        StepAction::Click { selector } => check_selector(selector)?,
        StepAction::Type {
            selector, value, ..
        }
        | StepAction::Select { selector, value } => {
            check_selector(selector)?;
            at_most(value, "the value", MAX_VALUE)?;
            placeholders(value, "the value", rules.sections)?;
        }
        StepAction::Wait {
            selector,
            url,
            text,
        } => {
            let count = usize::from(selector.is_some())
                + usize::from(url.is_some())
                + usize::from(text.is_some());
            if count != 1 {
                return Err(PlanProblem::WaitConditions(count));
            }
            if let Some(selector) = selector {
                check_selector(selector)?;
            }
            if let Some(url) = url {
                at_most(url, "the wait's url", MAX_URL)?;
                non_empty(url, "the wait's url")?;
            }
            if let Some(text) = text {
                at_most(text, "the wait's text", MAX_TEXT)?;
                non_empty(text, "the wait's text")?;
            }
        }
        StepAction::Extract { .. } | StepAction::Screenshot { .. } | StepAction::Upload { .. }
            if !rules.results =>
        {
            return Err(PlanProblem::ActionNotAllowed);
        }
        StepAction::Upload { selector, artifact } => {
            check_selector(selector)?;
            if !crate::artifact::is_artifact_id(artifact) {
                return Err(PlanProblem::ArtifactId);
            }
        }
        StepAction::Extract { name, what } => {
            at_most(name, "the extract name", MAX_NAME)?;
            non_empty(name, "the extract name")?;
            placeholders(name, "the extract name", false)?;
            check_extraction(what)?;
        }
        StepAction::Screenshot { name } => {
            if let Some(name) = name {
                check_screenshot_name(name)?;
            }
        }
        StepAction::Assert { check } => check_dom(check)?,
    }
    Ok(())
}

fn check_verification(verification: &TaskVerification) -> Result<(), PlanProblem> {
    match verification {
        TaskVerification::DomCheck { check } => check_dom(check),
        TaskVerification::Screenshot { text } => {
            at_most(text, "the text to show", MAX_TEXT)?;
            non_empty(text, "the text to show")
        }
        TaskVerification::ApiCallback { url } => {
            literal_url(url).map(drop).map_err(PlanProblem::CallbackUrl)
        }
    }
}

/// The task's inputs: at most [`MAX_INPUTS`], each named as a placeholder can name it, each
/// value at most [`MAX_VALUE`] bytes.
fn check_inputs(inputs: &BTreeMap<String, SecretValue>) -> Result<(), PlanProblem> {
    if inputs.len() > MAX_INPUTS {
        return Err(PlanProblem::TooMany {
            what: "the inputs",
            max: MAX_INPUTS,
        });
    }
    for (name, value) in inputs {
        if !valid_name(name) {
            return Err(PlanProblem::InputName);
        }
        at_most(value.expose(), "an input's value", MAX_VALUE)?;
    }
    Ok(())
}

/// The task's inputs as the approver sees them, by name: each value, except a secret's
/// (named in `declared`, the request's `secretInputs`, or named like a credential:
/// [`is_secret_name`]), which is shown as its name and length only.
///
/// # Errors
/// `declared` names an input not in `inputs`, or more than [`MAX_INPUTS`] names.
pub fn shown_inputs(
    inputs: &BTreeMap<String, SecretValue>,
    declared: &[String],
) -> Result<Vec<InputShown>, PlanError> {
    let at = PlanError::at(PlanLocation::Inputs);
    if declared.len() > MAX_INPUTS {
        return Err(at(PlanProblem::TooMany {
            what: "secretInputs",
            max: MAX_INPUTS,
        }));
    }
    if let Some(unknown) = declared.iter().find(|name| !inputs.contains_key(*name)) {
        let name = if valid_name(unknown) {
            unknown.clone()
        } else {
            "(not an input name)".to_owned()
        };
        return Err(at(PlanProblem::UnknownSecretInput(name)));
    }
    Ok(inputs
        .iter()
        .map(|(name, value)| {
            let secret = declared.contains(name) || is_secret_name(name);
            InputShown {
                name: name.clone(),
                value: (!secret).then(|| value.expose().to_owned()),
                secret,
                length: value.expose().chars().count(),
            }
        })
        .collect())
}

/// Parts of an input's name that make it a secret wherever they appear in it
/// (`newPassword`, `api_token`).
const SECRET_PARTS: [&str; 10] = [
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "credential",
    "privatekey",
    "cookie",
];

/// Words of an input's name (split at `_`, `-`, `.` and a lower-to-upper case change) that
/// make it a secret (`otp`, `pin_code`, `apiKey`).
const SECRET_WORDS: [&str; 12] = [
    "pass", "pwd", "pw", "pin", "otp", "totp", "mfa", "2fa", "key", "cvv", "cvc", "auth",
];

/// Whether an input named `name` is a secret by its name alone: a credential's name holds
/// one of `SECRET_PARTS` or is made of words among which one of `SECRET_WORDS`. A
/// planner that forgets `secretInputs` for its password does not show it to the approver.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if SECRET_PARTS.iter().any(|part| lower.contains(part)) {
        return true;
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            words.push(std::mem::take(&mut word));
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    words.push(word);
    words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
}

/// `value` is at most `max` bytes.
fn at_most(value: &str, what: &'static str, max: usize) -> Result<(), PlanProblem> {
    if value.len() > max {
        Err(PlanProblem::TooLong { what, max })
    } else {
        Ok(())
    }
}

fn non_empty(value: &str, what: &'static str) -> Result<(), PlanProblem> {
    if value.trim().is_empty() {
        Err(PlanProblem::Empty(what))
    } else {
        Ok(())
    }
}

/// The one check of a selector (a plan's and a platform file's): exactly one of css, text
/// or role, a name only with a role, nothing empty, each part within [`MAX_TEXT`].
///
/// # Errors
/// What is wrong with it.
pub fn check_selector(selector: &Selector) -> Result<(), PlanProblem> {
    match selector {
        Selector::Css(css) => {
            at_most(css, "the selector", MAX_TEXT)?;
            non_empty(css, "the selector").map_err(|_| PlanProblem::EmptySelector)
        }
        Selector::Explicit(spec) => {
            let forms = usize::from(spec.css.is_some())
                + usize::from(spec.text.is_some())
                + usize::from(spec.role.is_some());
            if forms != 1 {
                return Err(PlanProblem::SelectorForms(forms));
            }
            if spec.name.is_some() && spec.role.is_none() {
                return Err(PlanProblem::NameWithoutRole);
            }
            let parts = [&spec.css, &spec.text, &spec.role, &spec.name];
            for part in parts.into_iter().flatten() {
                at_most(part, "the selector", MAX_TEXT)?;
            }
            if parts.into_iter().flatten().any(|p| p.trim().is_empty()) {
                return Err(PlanProblem::EmptySelector);
            }
            Ok(())
        }
    }
}

/// The one check of a DOM check (a plan's and a platform file's): a selector or a text,
/// each well formed.
///
/// # Errors
/// What is wrong with it.
pub fn check_dom(check: &DomCheck) -> Result<(), PlanProblem> {
    if check.selector.is_none() && check.text.is_none() {
        return Err(PlanProblem::EmptyCheck);
    }
    if let Some(selector) = &check.selector {
        check_selector(selector)?;
    }
    if let Some(text) = &check.text {
        at_most(text, "the check's text", MAX_TEXT)?;
        non_empty(text, "the check's text")?;
    }
    Ok(())
}

fn check_extraction(what: &Extraction) -> Result<(), PlanProblem> {
    match what {
        Extraction::Text { selector } | Extraction::Table { selector } => check_selector(selector),
        Extraction::Attribute {
            selector,
            attribute,
        } => {
            check_selector(selector)?;
            at_most(attribute, "the attribute", MAX_NAME)?;
            non_empty(attribute, "the attribute")
        }
        Extraction::List { selector, fields } => {
            check_selector(selector)?;
            if fields.is_empty() {
                return Err(PlanProblem::Empty("the list of fields"));
            }
            if fields.len() > MAX_LIST_FIELDS {
                return Err(PlanProblem::TooMany {
                    what: "the list of fields",
                    max: MAX_LIST_FIELDS,
                });
            }
            for (name, css) in fields {
                at_most(name, "a field name", MAX_NAME)?;
                at_most(css, "a field's selector", MAX_TEXT)?;
                non_empty(name, "a field name")?;
                non_empty(css, "a field's selector")?;
            }
            Ok(())
        }
    }
}

fn check_screenshot_name(name: &str) -> Result<(), PlanProblem> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SCREENSHOT_NAME
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        return Err(PlanProblem::ScreenshotName);
    }
    if name == VERIFICATION_SCREENSHOT || name == PREVIEW_SCREENSHOT {
        return Err(PlanProblem::DuplicateScreenshotName);
    }
    Ok(())
}

/// A URL that is not templated (the target, a callback): at most [`MAX_URL`] bytes, no
/// placeholder, http(s), no credentials.
fn literal_url(value: &str) -> Result<Url, UrlProblem> {
    if value.len() > MAX_URL {
        return Err(UrlProblem::TooLong);
    }
    if value.contains("{{") {
        return Err(UrlProblem::Templated);
    }
    checked_url(value, None)
}

/// The one URL rule of plans and platform files: an http(s) URL with a host, without
/// credentials, at most [`MAX_URL`] bytes; relative to `base` when given.
///
/// # Errors
/// What is wrong with it (never the URL itself).
pub fn checked_url(value: &str, base: Option<&Url>) -> Result<Url, UrlProblem> {
    if value.len() > MAX_URL {
        return Err(UrlProblem::TooLong);
    }
    let url = parse_url(value, base).ok_or(UrlProblem::Invalid)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlProblem::NotHttp);
    }
    if url.host().is_none() {
        return Err(UrlProblem::Invalid);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    Ok(url)
}

/// Whether a placeholder of the navigate URL `template` (relative to `target`) could fill
/// the URL's scheme, host, port or user name or password: the template is read with each
/// placeholder standing in as letters, as the browser's URL parser reads it, and the
/// stand-in must land in the path, the query or the fragment only. Refused too: a template
/// that starts with a placeholder (whatever fills it is what the URL is: `{{u}}/path`), and
/// one that does not parse with the stand-in (a placeholder where only digits or an address
/// fit: a port, `[::{{x}}]`). A malformed placeholder is [`placeholders`]'s to refuse.
fn placeholder_in_origin(template: &str, target: &Url) -> bool {
    let Some(template) = plan_template(template) else {
        return false;
    };
    let pieces = template.pieces();
    if template.is_literal() {
        return false;
    }
    // Leading whitespace is trimmed (and the URL parser drops leading C0 controls).
    let leading = pieces
        .iter()
        .map_while(|p| match p {
            Piece::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<String>();
    if leading.chars().all(|c| c <= ' ' || c.is_whitespace()) {
        return true;
    }
    let read: String = pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.as_str(),
            _ => STAND_IN,
        })
        .collect();
    match parse_url(&read, Some(target)) {
        Some(url) => {
            url.scheme().contains(STAND_IN)
                || url.host_str().is_some_and(|h| h.contains(STAND_IN))
                || url.username().contains(STAND_IN)
                || url.password().is_some_and(|p| p.contains(STAND_IN))
        }
        None => true,
    }
}

/// `value` as a URL, relative to `base` only when it has no scheme of its own: how a plan's
/// URLs are read, and how their templates are checked ([`placeholder_in_origin`]).
fn parse_url(value: &str, base: Option<&Url>) -> Option<Url> {
    match (Url::parse(value.trim()), base) {
        (Ok(url), _) => Some(url),
        (Err(url::ParseError::RelativeUrlWithoutBase), Some(base)) => base.join(value.trim()).ok(),
        (Err(_), _) => None,
    }
}

/// `template` parsed as a plan's: placeholders only, no sections.
fn plan_template(template: &str) -> Option<Template> {
    Template::parse(template, false).ok()
}

fn placeholders(template: &str, field: &'static str, sections: bool) -> Result<(), PlanProblem> {
    Template::parse(template, sections)
        .map(drop)
        .map_err(|_| PlanProblem::MalformedPlaceholder(field))
}

/// A `type` or `select` value with its placeholders filled, at most [`MAX_VALUE`] bytes.
fn filled_value(
    template: &str,
    inputs: &BTreeMap<String, SecretValue>,
) -> Result<String, PlanProblem> {
    let value = fill(template, "the value", inputs, false)?;
    at_most(&value, "the value once filled", MAX_VALUE)?;
    Ok(value)
}

/// Fills `template` from `inputs`; with `encode`, each value is percent-encoded as a URL
/// component (every byte but `A-Z a-z 0-9 - . _ ~`).
fn fill(
    template: &str,
    field: &'static str,
    inputs: &BTreeMap<String, SecretValue>,
    encode: bool,
) -> Result<String, PlanProblem> {
    let template = plan_template(template).ok_or(PlanProblem::MalformedPlaceholder(field))?;
    let value = |name: &str| {
        inputs.get(name).map(|value| {
            if !encode {
                return value.expose().to_owned();
            }
            let mut out = String::new();
            for byte in value.expose().bytes() {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                    out.push(char::from(byte));
                } else {
                    out.push_str(&format!("%{byte:02X}"));
                }
            }
            out
        })
    };
    template.render(&value).map_err(PlanProblem::UnknownInput)
}

/// The steps in words, for the approver, numbered from 1: the type, the description, and
/// what the step acts on (`3. Type: Enter the email (css '#email', value "{{email}}")`).
/// Values are shown as the plan writes them: placeholders stay placeholders, inputs are
/// never filled in.
pub fn describe_steps(plan: &StepPlan) -> Vec<String> {
    plan.steps
        .iter()
        .enumerate()
        .map(|(index, step)| describe_step(index, step))
        .collect()
}

fn describe_step(index: usize, step: &PlanStep) -> String {
    let (kind, detail) = match &step.action {
        StepAction::Navigate { url } => (
            "Navigate",
            match url {
                Some(url) => format!("to {url:?}"),
                None => "to the target URL".to_owned(),
            },
        ),
        StepAction::Click { selector } => ("Click", describe_selector(selector)),
        StepAction::Type {
            selector,
            value,
            submit,
        } => (
            "Type",
            format!(
                "{}, value {value:?}{}",
                describe_selector(selector),
                if *submit { ", then Enter" } else { "" }
            ),
        ),
        StepAction::Select { selector, value } => (
            "Select",
            format!("{}, option {value:?}", describe_selector(selector)),
        ),
        StepAction::Wait {
            selector,
            url,
            text,
        } => (
            "Wait",
            match (selector, url, text) {
                (Some(selector), _, _) => format!("for {}", describe_selector(selector)),
                (_, Some(url), _) => format!("for a URL containing {url:?}"),
                (_, _, Some(text)) => format!("for the text {text:?}"),
                _ => String::new(),
            },
        ),
        StepAction::Extract { name, what } => (
            "Extract",
            format!("{} as {name:?}", describe_extraction(what)),
        ),
        StepAction::Screenshot { name } => (
            "Screenshot",
            format!(
                "named {:?}",
                name.clone().unwrap_or_else(|| format!("step-{index}"))
            ),
        ),
        StepAction::Assert { check } => ("Assert", describe_check(check)),
        StepAction::Upload { selector, artifact } => (
            "Upload",
            format!("artifact {artifact} into {}", describe_selector(selector)),
        ),
    };
    format!(
        "{}. {kind}: {} ({detail})",
        index + 1,
        step.description.trim()
    )
}

fn describe_selector(selector: &Selector) -> String {
    match selector {
        Selector::Css(css) => format!("css {css:?}"),
        Selector::Explicit(spec) => match (&spec.css, &spec.text, &spec.role, &spec.name) {
            (Some(css), ..) => format!("css {css:?}"),
            (_, Some(text), ..) => format!("text {text:?}"),
            (_, _, Some(role), Some(name)) => format!("{role} {name:?}"),
            (_, _, Some(role), None) => format!("a {role}"),
            _ => "no element".to_owned(),
        },
    }
}

fn describe_extraction(what: &Extraction) -> String {
    match what {
        Extraction::Text { selector } => format!("the text of {}", describe_selector(selector)),
        Extraction::Attribute {
            selector,
            attribute,
        } => format!("attribute {attribute:?} of {}", describe_selector(selector)),
        Extraction::Table { selector } => format!("the table {}", describe_selector(selector)),
        Extraction::List { selector, fields } => format!(
            "fields {} of each {}",
            fields.keys().cloned().collect::<Vec<_>>().join(", "),
            describe_selector(selector)
        ),
    }
}

fn describe_check(check: &DomCheck) -> String {
    match (&check.selector, &check.text) {
        (Some(selector), Some(text)) => {
            format!("{} shows {text:?}", describe_selector(selector))
        }
        (Some(selector), None) => format!("{} exists", describe_selector(selector)),
        (None, Some(text)) => format!("the page shows {text:?}"),
        (None, None) => "nothing".to_owned(),
    }
}
