//! [`DeclaredStrategy`]: a platform declared as data ([`PlatformFile`], TOML or JSON) is a
//! [`WebPostStrategy`] like any compiled one, for every context that runs browser steps
//! ([`StepRunner`]).
//!
//! It keeps the rules of the compiled strategies:
//!
//! - `is_authenticated` only looks. Its steps (opening a page that tells signed in from
//!   signed out) run only on a blank page, i.e. in an unattended job; on a page that shows
//!   something (a person signing in during a capture) it judges the page as it is.
//! - `post` enters each stage before acting in it: compose (a read-back snapshot of the
//!   posts already there, then the compose steps), media (the files set on the file input,
//!   then the site's answer), submit (before the first submit step, the committing click).
//!   A step that fails on the signed-out URL is `needs_reauth`; a refusal with evidence
//!   (the site rejected the media, an attachment that is not base64, content the platform
//!   cannot take) is `not_posted`; anything else is a plain failure, which the core turns
//!   into *uncertain* from the submit stage on.
//! - `verify` confirms only with evidence: a toast (with its permalink when the file names
//!   the attribute), the permalink page showing the post, or a read-back that shows one more
//!   post with exactly the text posted than before the submit. Not posted only when the
//!   site showed its error banner *and* the read-back misses the post. Anything else is
//!   unconfirmed.
//! - `recheck` (an uncertain post, later, in a fresh signed-in browser) only reads: it
//!   opens the declared read-back page, through the same code as `verify`'s read-back, and
//!   counts the posts whose text is exactly the post as composed: one is confirmed, none is
//!   not found, more are ambiguous. No compose or submit step ever runs. Without a declared
//!   read-back it is unavailable.
//!
//! Nothing here reads a file: the service reads the platforms directory and hands the
//! contents to [`load_platform_files`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use abr_core::budget::Pacing;
use abr_core::error::{CoreError, StrategyError};
use abr_core::plan::{StepRules, check_dom, check_selector, check_step, checked_url};
use abr_core::provider::SessionContext;
use abr_core::step_runner::{
    BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner, UploadFile,
};
use abr_core::strategy::{
    PlatformPacing, PostProgress, ReceiptNote, RecheckOutcome, StrategyPolicy, SubmitReceipt,
    VerifyOutcome, WebPostStrategy,
};
use abr_core::template::{Piece, Template as CoreTemplate};
use abr_protocol::platform_file::{
    ComposeSpec, MediaSpec, PacingName, PacingSpec, ReadbackSpec, SignInSpec, ToastSpec, VerifySpec,
};
use abr_protocol::{
    DomCheck, FailureStage, PlanStep, PlatformFile, PostContent, SecretValue, Selector,
    SelectorSpec, StepAction, Verification, VerificationEvidence, VerificationMethod,
};
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::Value;
use url::Url;

/// Longest deadline a file may give a step or a wait, in milliseconds.
pub(crate) const MAX_STEP_TIMEOUT_MS: u64 = 120_000;
/// Most steps in one list of a platform file.
pub(crate) const MAX_STEPS: usize = 50;
/// Longest platform id.
pub(crate) const MAX_ID_CHARS: usize = 64;

/// The default post template: the text, and the link on its own line when there is one.
const DEFAULT_POST: &str = "{{text}}{{#link}}\n{{link}}{{/link}}";

// ---------------------------------------------------------------------------------------
// Errors

/// The two formats of a platform file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlatformFormat {
    /// TOML (`.toml`).
    Toml,
    /// JSON (`.json`).
    Json,
}

impl PlatformFormat {
    /// The format of a file called `name`, by its extension (`.toml`, `.json`, any case).
    pub fn from_file_name(name: &str) -> Option<Self> {
        let (_, ext) = name.rsplit_once('.')?;
        if ext.eq_ignore_ascii_case("toml") {
            Some(Self::Toml)
        } else if ext.eq_ignore_ascii_case("json") {
            Some(Self::Json)
        } else {
            None
        }
    }
}

impl fmt::Display for PlatformFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Toml => "TOML",
            Self::Json => "JSON",
        })
    }
}

/// Why a platform file was refused. Every variant is a client error (HTTP 422,
/// `invalid_request`, through [`CoreError::InvalidInput`]); messages name the field or
/// step and never carry a variable's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclaredError {
    /// Not TOML or JSON of the file's shape (a missing or unknown field, a wrong type).
    #[error("not a valid platform file ({format}): {message}")]
    Parse {
        /// The format it was read as.
        format: PlatformFormat,
        /// The parser's words, with the line and column.
        message: String,
    },
    /// A field breaks a rule.
    #[error("{field}: {message}")]
    Invalid {
        /// The field, e.g. `compose.steps[2].url`.
        field: String,
        /// The rule.
        message: String,
    },
    /// One file of [`load_platform_files`] was refused.
    #[error("{file}: {error}")]
    File {
        /// The file's name.
        file: String,
        /// Why.
        error: Box<DeclaredError>,
    },
    /// Two files of [`load_platform_files`] declare the same platform id.
    #[error("platform {id:?} is declared twice: in {first} and in {second}")]
    DuplicateId {
        /// The id.
        id: String,
        /// The first file.
        first: String,
        /// The second file.
        second: String,
    },
}

impl DeclaredError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The field the error names (`compose.steps[2].url`), when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::File { error, .. } => error.field(),
            _ => None,
        }
    }

    /// The wire code: `invalid_request` (a 422).
    pub fn code(&self) -> &'static str {
        abr_protocol::codes::INVALID_REQUEST.code
    }
}

impl From<DeclaredError> for CoreError {
    fn from(e: DeclaredError) -> Self {
        CoreError::InvalidInput(e.to_string())
    }
}

// ---------------------------------------------------------------------------------------
// Templates

/// A content placeholder, filled at posting time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContentVar {
    Text,
    Link,
    Post,
}

impl ContentVar {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "text" => Some(Self::Text),
            "link" => Some(Self::Link),
            "post" => Some(Self::Post),
            _ => None,
        }
    }
}

/// A string of a platform file on the one template engine of plans and platform files
/// ([`abr_core::template`]), its load-time variables filled and its content placeholders
/// kept: only `{{text}}`, `{{link}}`, `{{post}}` and sections over the first two remain.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template(CoreTemplate);

/// The content a template is rendered with.
struct Filled<'a> {
    text: &'a str,
    link: &'a str,
    post: &'a str,
}

impl Filled<'_> {
    fn get(&self, var: ContentVar) -> &str {
        match var {
            ContentVar::Text => self.text,
            ContentVar::Link => self.link,
            ContentVar::Post => self.post,
        }
    }
}

impl Template {
    fn render(&self, filled: &Filled<'_>) -> String {
        // Only content placeholders are left after loading: every name is known.
        self.0
            .render(&|name| ContentVar::parse(name).map(|var| filled.get(var).to_owned()))
            .unwrap_or_default()
    }

    fn uses(&self, var: ContentVar) -> bool {
        self.0
            .names()
            .into_iter()
            .any(|name| ContentVar::parse(name) == Some(var))
    }
}

/// Which content placeholders a field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allow {
    /// None: a URL, a selector, a check.
    Nothing,
    /// `{{text}}` and `{{link}}` (the post template itself).
    TextAndLink,
    /// `{{text}}`, `{{link}}` and `{{post}}` (values of compose steps).
    All,
}

/// The variables handed in when a file is loaded.
struct Vars<'a>(&'a BTreeMap<String, String>);

impl Vars<'_> {
    fn check(&self) -> Result<(), DeclaredError> {
        for name in self.0.keys() {
            if ContentVar::parse(name).is_some() {
                return Err(DeclaredError::invalid(
                    format!("variables.{name}"),
                    "this name is reserved for the post's content",
                ));
            }
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                return Err(DeclaredError::invalid(
                    "variables",
                    "a variable name is letters, digits, `_` and `-`",
                ));
            }
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<String> {
        if let Some(value) = self.0.get(name) {
            return Some(value.strip_suffix('/').unwrap_or(value).to_owned());
        }
        let (base, part) = name.rsplit_once('.')?;
        let url = Url::parse(self.0.get(base)?).ok()?;
        let host = url.host_str()?.to_owned();
        match part {
            "host" => Some(host),
            "origin" => Some(url.origin().ascii_serialization()),
            _ => None,
        }
    }

    /// Parses `s` (the value of `field`) into a template: the syntax is the core's, the
    /// names are the file's (its variables, filled now; the content, where `allow` says).
    fn template(&self, s: &str, field: &str, allow: Allow) -> Result<Template, DeclaredError> {
        let err = |m: String| DeclaredError::invalid(field, m);
        let parsed =
            CoreTemplate::parse(s, allow != Allow::Nothing).map_err(|e| err(e.to_string()))?;
        check_names(parsed.pieces(), allow).map_err(err)?;
        for name in parsed.names() {
            if ContentVar::parse(name).is_none() && self.lookup(name).is_none() {
                return Err(err(format!("unknown variable `{{{{{name}}}}}`")));
            }
        }
        let loaded = parsed.resolve(&|name| match ContentVar::parse(name) {
            Some(_) => None,
            None => self.lookup(name),
        });
        Ok(Template(loaded))
    }

    /// `s` with its variables filled; content placeholders are refused.
    fn fill(&self, s: &str, field: &str) -> Result<String, DeclaredError> {
        let template = self.template(s, field, Allow::Nothing)?;
        Ok(template.render(&Filled {
            text: "",
            link: "",
            post: "",
        }))
    }
}

/// Whether the content placeholders and sections of `pieces` are where `allow` lets them:
/// none in a URL, a selector or a check; no `{{post}}` in the post template; sections only
/// over `{{text}}` and `{{link}}`.
fn check_names(pieces: &[Piece], allow: Allow) -> Result<(), String> {
    for piece in pieces {
        let (name, section) = match piece {
            Piece::Text(_) => continue,
            Piece::Name(name) => (name, None),
            Piece::Section(name, inside) => (name, Some(inside)),
        };
        match (ContentVar::parse(name), allow) {
            (None, _) if section.is_some() => {
                return Err(format!(
                    "`{{{{#{name}}}}}` is not a section: sections are over `text` and `link`"
                ));
            }
            (None, _) => {}
            (Some(_), Allow::Nothing) => {
                return Err(format!(
                    "`{{{{{name}}}}}` is the post's content: it may only appear in compose.post and in the values of compose steps"
                ));
            }
            (Some(ContentVar::Post), _) if section.is_some() => {
                return Err("`{{#post}}` is not a section".into());
            }
            (Some(ContentVar::Post), Allow::TextAndLink) => {
                return Err("`{{post}}` cannot be used in the post template".into());
            }
            (Some(_), _) => {}
        }
        if let Some(inside) = section {
            check_names(inside, allow)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The validated form

/// A step of a declared platform, its variables filled.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Navigate(Url),
    Click(Selector),
    Type {
        selector: Selector,
        value: Template,
        submit: bool,
    },
    Select {
        selector: Selector,
        value: Template,
    },
    Wait {
        selector: Option<Selector>,
        url: Option<String>,
        text: Option<String>,
    },
    Assert(DomCheck),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    action: Action,
    description: String,
    timeout: Option<Duration>,
}

impl Step {
    fn uses(&self, var: ContentVar) -> bool {
        match &self.action {
            Action::Type { value, .. } | Action::Select { value, .. } => value.uses(var),
            _ => false,
        }
    }
}

#[derive(Debug, Clone)]
struct SignIn {
    steps: Vec<Step>,
    signed_in: Option<DomCheck>,
    signed_out_url: Option<String>,
}

#[derive(Debug, Clone)]
struct Compose {
    post: Template,
    steps: Vec<Step>,
    /// Whether a post's link reaches the page (else a post with a link is refused).
    uses_link: bool,
}

#[derive(Debug, Clone)]
struct Media {
    input: Selector,
    settled: Option<Selector>,
    rejected: Option<DomCheck>,
    timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
struct Toast {
    selector: Selector,
    permalink_attribute: Option<String>,
    wait: Option<Duration>,
}

#[derive(Debug, Clone)]
struct Readback {
    url: Url,
    item: Selector,
    text: String,
    ready: Option<Selector>,
}

#[derive(Debug, Clone)]
struct Verify {
    toast: Option<Toast>,
    permalink_text: Option<Selector>,
    readback: Option<Readback>,
    error_banner: Option<Selector>,
}

/// Deadlines of a declared platform's browser steps, where the file gives none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredTimeouts {
    /// A `navigate` step, and opening the read-back or permalink page.
    pub navigation: Duration,
    /// Any other step.
    pub step: Duration,
    /// The media upload settling.
    pub media: Duration,
    /// Waiting in `verify` for a toast that was not shown at once.
    pub toast: Duration,
    /// A glance whose "no" costs its whole deadline: is the page blank, is it on the
    /// signed-out URL, is the toast or error banner shown right now.
    pub glance: Duration,
    /// How long the page `signIn.steps` opened may take to show `signedIn` or reach
    /// `signedOutUrl`; showing neither by then is `sign_in_inconclusive`. Glances alone
    /// would call a slow page inconclusive.
    pub settle: Duration,
    /// How long the read-back page may take to show its first post; one that shows none by
    /// then lists none.
    pub list: Duration,
}

impl Default for DeclaredTimeouts {
    fn default() -> Self {
        Self {
            navigation: Duration::from_secs(15),
            step: Duration::from_secs(10),
            media: Duration::from_secs(20),
            toast: Duration::from_secs(8),
            glance: Duration::from_millis(300),
            settle: Duration::from_secs(10),
            list: Duration::from_secs(1),
        }
    }
}

/// A platform declared in a [`PlatformFile`]: a [`WebPostStrategy`] for every context that
/// runs browser steps.
///
/// Build it with [`DeclaredStrategy::parse_toml`], [`DeclaredStrategy::parse_json`] or
/// [`DeclaredStrategy::from_file`]; the file is validated then, never at first use. See the
/// module docs for how it checks, posts and verifies.
#[derive(Debug, Clone)]
pub struct DeclaredStrategy {
    id: String,
    start_url: String,
    base: Url,
    policy: StrategyPolicy,
    pacing: PlatformPacing,
    sign_in: SignIn,
    compose: Compose,
    media: Option<Media>,
    submit: Vec<Step>,
    verify: Verify,
    timeouts: DeclaredTimeouts,
}

impl DeclaredStrategy {
    /// Reads a TOML platform file, filling `vars` (e.g. `base` → the site's address).
    ///
    /// # Errors
    /// Not TOML of the file's shape, or a field that breaks a rule ([`DeclaredError`]).
    pub fn parse_toml(text: &str, vars: &BTreeMap<String, String>) -> Result<Self, DeclaredError> {
        Self::parse(text, PlatformFormat::Toml, vars)
    }

    /// Reads a JSON platform file, filling `vars`.
    ///
    /// # Errors
    /// Not JSON of the file's shape, or a field that breaks a rule ([`DeclaredError`]).
    pub fn parse_json(text: &str, vars: &BTreeMap<String, String>) -> Result<Self, DeclaredError> {
        Self::parse(text, PlatformFormat::Json, vars)
    }

    /// Reads a platform file in `format`, filling `vars`.
    ///
    /// # Errors
    /// See [`DeclaredStrategy::parse_toml`].
    pub fn parse(
        text: &str,
        format: PlatformFormat,
        vars: &BTreeMap<String, String>,
    ) -> Result<Self, DeclaredError> {
        let file: PlatformFile = match format {
            PlatformFormat::Toml => toml::from_str(text).map_err(|e| DeclaredError::Parse {
                format,
                message: toml_message(text, &e),
            })?,
            PlatformFormat::Json => {
                serde_json::from_str(text).map_err(|e| DeclaredError::Parse {
                    format,
                    message: e.to_string(),
                })?
            }
        };
        Self::from_file(&file, vars)
    }

    /// Validates a parsed platform file, filling `vars`.
    ///
    /// # Errors
    /// A field that breaks a rule ([`DeclaredError::Invalid`], naming it).
    pub fn from_file(
        file: &PlatformFile,
        vars: &BTreeMap<String, String>,
    ) -> Result<Self, DeclaredError> {
        let vars = Vars(vars);
        vars.check()?;
        let id = file.id.trim();
        let id_ok = !id.is_empty()
            && id.chars().count() <= MAX_ID_CHARS
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !id_ok || id != file.id {
            return Err(DeclaredError::invalid(
                "id",
                format!("1 to {MAX_ID_CHARS} letters, digits, `-`, `_` or `.`"),
            ));
        }
        let start_url = vars.fill(&file.start_url, "startUrl")?;
        let base = http_url(&start_url, "startUrl")?;
        let policy = StrategyPolicy::from_spec(&fill_policy(&vars, &file.policy)?)
            .map_err(|e| DeclaredError::invalid(e.field(), e.to_string()))?;
        let pacing = match file.pacing {
            None | Some(PacingSpec::Named(PacingName::Runner)) => PlatformPacing::Runner,
            Some(PacingSpec::Named(PacingName::Off)) => PlatformPacing::Off,
            Some(PacingSpec::Range(r)) => {
                if r.min_ms > r.max_ms {
                    return Err(DeclaredError::invalid(
                        "pacing",
                        "minMs must not be above maxMs",
                    ));
                }
                PlatformPacing::Range(Pacing {
                    min: Duration::from_millis(r.min_ms),
                    max: Duration::from_millis(r.max_ms),
                })
            }
        };
        let sign_in = sign_in(&vars, &file.sign_in)?;
        let verify = verify(&vars, &file.verify)?;
        let compose = compose(&vars, &file.compose, verify.readback.is_some())?;
        let media = file.media.as_ref().map(|m| media(&vars, m)).transpose()?;
        let submit = steps(&vars, &file.submit.steps, "submit.steps", Allow::Nothing)?;
        if submit.is_empty() {
            return Err(DeclaredError::invalid(
                "submit.steps",
                "at least one step (the committing click)",
            ));
        }
        Ok(Self {
            id: file.id.clone(),
            start_url: base.to_string(),
            base,
            policy,
            pacing,
            sign_in,
            compose,
            media,
            submit,
            verify,
            timeouts: DeclaredTimeouts::default(),
        })
    }

    /// Uses `timeouts` where the file gives no deadline.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: DeclaredTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }
}

/// Reads every platform file of a directory, given as `(file name, contents)`: files ending
/// in `.toml` or `.json` are parsed (filling `vars`), any other file is skipped. Ids must be
/// unique across the files. The strategies come back in file-name order.
///
/// This is what a runner calls at start with the files of its platforms directory
/// (`ABR_PLATFORMS_DIR`), before registering each strategy.
///
/// # Errors
/// The first file refused ([`DeclaredError::File`], naming it), or an id declared twice.
pub fn load_platform_files<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
    vars: &BTreeMap<String, String>,
) -> Result<Vec<DeclaredStrategy>, DeclaredError> {
    let mut files: Vec<(&str, &str)> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, text) in files {
        let Some(format) = PlatformFormat::from_file_name(name) else {
            continue;
        };
        let strategy =
            DeclaredStrategy::parse(text, format, vars).map_err(|e| DeclaredError::File {
                file: name.to_owned(),
                error: Box::new(e),
            })?;
        if let Some(first) = seen.insert(strategy.id.clone(), name) {
            return Err(DeclaredError::DuplicateId {
                id: strategy.id,
                first: first.to_owned(),
                second: name.to_owned(),
            });
        }
        out.push(strategy);
    }
    Ok(out)
}

/// A TOML error as one line: the message and where.
fn toml_message(text: &str, e: &toml::de::Error) -> String {
    let message = match e.message().trim() {
        "" => "invalid TOML syntax".to_owned(),
        m => m.replace('\n', "; "),
    };
    match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{message} at line {line} column {column}")
        }
        None => message,
    }
}

/// An absolute http(s) URL with a host, without credentials, at most 4096 bytes: the one URL
/// rule of plans and platform files ([`checked_url`]).
fn http_url(s: &str, field: &str) -> Result<Url, DeclaredError> {
    checked_url(s, None).map_err(|problem| DeclaredError::invalid(field, format!("it {problem}")))
}

fn fill_policy(
    vars: &Vars<'_>,
    policy: &abr_protocol::PlatformPolicy,
) -> Result<abr_protocol::PlatformPolicy, DeclaredError> {
    let mut policy = policy.clone();
    if let Some(scope) = policy.session.as_mut() {
        for (i, d) in scope.cookie_domains.iter_mut().enumerate() {
            *d = vars.fill(d, &format!("policy.session.cookieDomains[{i}]"))?;
        }
        for (i, o) in scope.origins.iter_mut().enumerate() {
            *o = vars.fill(o, &format!("policy.session.origins[{i}]"))?;
        }
    }
    if let Some(network) = policy.network.as_mut() {
        for (i, r) in network.reads.iter_mut().enumerate() {
            r.url = vars.fill(&r.url, &format!("policy.network.reads[{i}].url"))?;
        }
        for (i, t) in network.telemetry.iter_mut().enumerate() {
            *t = vars.fill(t, &format!("policy.network.telemetry[{i}]"))?;
        }
    }
    Ok(policy)
}

fn timeout(ms: Option<u64>, field: &str) -> Result<Option<Duration>, DeclaredError> {
    match ms {
        None => Ok(None),
        Some(ms) if (1..=MAX_STEP_TIMEOUT_MS).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
        Some(_) => Err(DeclaredError::invalid(
            field,
            format!("must be 1 to {MAX_STEP_TIMEOUT_MS} ms"),
        )),
    }
}

/// A selector of the file: its shape checked by the one rule of plans and platform files
/// ([`check_selector`]), its variables filled.
fn selector(vars: &Vars<'_>, s: &Selector, field: &str) -> Result<Selector, DeclaredError> {
    check_selector(s).map_err(|problem| DeclaredError::invalid(field, problem.to_string()))?;
    match s {
        Selector::Css(css) => Ok(Selector::Css(vars.fill(css, field)?)),
        Selector::Explicit(spec) => {
            let fill = |v: &Option<String>, part: &str| {
                v.as_deref()
                    .map(|v| vars.fill(v, &format!("{field}.{part}")))
                    .transpose()
            };
            Ok(Selector::Explicit(SelectorSpec {
                css: fill(&spec.css, "css")?,
                text: fill(&spec.text, "text")?,
                role: fill(&spec.role, "role")?,
                name: fill(&spec.name, "name")?,
            }))
        }
    }
}

fn dom_check(vars: &Vars<'_>, check: &DomCheck, field: &str) -> Result<DomCheck, DeclaredError> {
    check_dom(check).map_err(|problem| DeclaredError::invalid(field, problem.to_string()))?;
    Ok(DomCheck {
        selector: check
            .selector
            .as_ref()
            .map(|s| selector(vars, s, &format!("{field}.selector")))
            .transpose()?,
        text: check
            .text
            .as_deref()
            .map(|t| vars.fill(t, &format!("{field}.text")))
            .transpose()?,
    })
}

fn steps(
    vars: &Vars<'_>,
    list: &[PlanStep],
    field: &str,
    allow: Allow,
) -> Result<Vec<Step>, DeclaredError> {
    if list.len() > MAX_STEPS {
        return Err(DeclaredError::invalid(
            field,
            format!("at most {MAX_STEPS} steps"),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, s)| step(vars, s, &format!("{field}[{i}]"), allow))
        .collect()
}

/// The rules a platform file's steps are checked by: no `extract` or `screenshot`, at most
/// [`MAX_STEP_TIMEOUT_MS`], sections in the values of compose steps only.
fn step_rules(allow: Allow) -> StepRules {
    StepRules {
        max_step_timeout: Duration::from_millis(MAX_STEP_TIMEOUT_MS),
        results: false,
        sections: allow != Allow::Nothing,
    }
}

fn step(vars: &Vars<'_>, s: &PlanStep, field: &str, allow: Allow) -> Result<Step, DeclaredError> {
    let sub = |part: &str| format!("{field}.{part}");
    if let StepAction::Navigate { url: None } = &s.action {
        // A plan's navigate without a URL opens its target; a platform has none.
        return Err(DeclaredError::invalid(
            sub("url"),
            "a navigate step needs a url",
        ));
    }
    // The one check of a step's shape, for plans and platform files alike.
    check_step(s, &step_rules(allow)).map_err(|problem| {
        let at = problem.field().map_or_else(|| field.to_owned(), sub);
        DeclaredError::invalid(at, problem.to_string())
    })?;
    let action = match &s.action {
        StepAction::Navigate { url } => {
            let url = url.as_deref().unwrap_or_default();
            let filled = vars.fill(url, &sub("url"))?;
            Action::Navigate(http_url(&filled, &sub("url"))?)
        }
        StepAction::Click { selector: sel } => {
            Action::Click(selector(vars, sel, &sub("selector"))?)
        }
        StepAction::Type {
            selector: sel,
            value,
            submit,
        } => Action::Type {
            selector: selector(vars, sel, &sub("selector"))?,
            value: vars.template(value, &sub("value"), allow)?,
            submit: *submit,
        },
        StepAction::Select {
            selector: sel,
            value,
        } => Action::Select {
            selector: selector(vars, sel, &sub("selector"))?,
            value: vars.template(value, &sub("value"), allow)?,
        },
        StepAction::Wait {
            selector: sel,
            url,
            text,
        } => {
            let fill = |v: &Option<String>, part: &str| {
                v.as_deref().map(|v| vars.fill(v, &sub(part))).transpose()
            };
            Action::Wait {
                selector: sel
                    .as_ref()
                    .map(|s| selector(vars, s, &sub("selector")))
                    .transpose()?,
                url: fill(url, "url")?,
                text: fill(text, "text")?,
            }
        }
        StepAction::Assert { check } => Action::Assert(dom_check(vars, check, field)?),
        StepAction::Extract { .. } | StepAction::Screenshot { .. } | StepAction::Upload { .. } => {
            return Err(DeclaredError::invalid(
                sub("type"),
                "a platform's steps are navigate, click, type, select, wait or assert",
            ));
        }
    };
    Ok(Step {
        action,
        description: s.description.clone(),
        timeout: s.timeout_ms.map(Duration::from_millis),
    })
}

fn sign_in(vars: &Vars<'_>, spec: &SignInSpec) -> Result<SignIn, DeclaredError> {
    let list = steps(vars, &spec.steps, "signIn.steps", Allow::Nothing)?;
    if !matches!(
        list.first(),
        Some(Step {
            action: Action::Navigate(_),
            ..
        })
    ) {
        return Err(DeclaredError::invalid(
            "signIn.steps",
            "the first step is a navigate (an unattended job starts on a blank page)",
        ));
    }
    if spec.signed_in.is_none() && spec.signed_out_url.is_none() {
        return Err(DeclaredError::invalid(
            "signIn",
            "signedIn or signedOutUrl is needed to tell signed in from signed out",
        ));
    }
    let signed_out_url = match spec.signed_out_url.as_deref() {
        None => None,
        Some(u) if u.trim().is_empty() => {
            return Err(DeclaredError::invalid(
                "signIn.signedOutUrl",
                "must not be empty",
            ));
        }
        Some(u) => Some(vars.fill(u, "signIn.signedOutUrl")?),
    };
    Ok(SignIn {
        steps: list,
        signed_in: spec
            .signed_in
            .as_ref()
            .map(|c| dom_check(vars, c, "signIn.signedIn"))
            .transpose()?,
        signed_out_url,
    })
}

fn compose(vars: &Vars<'_>, spec: &ComposeSpec, readback: bool) -> Result<Compose, DeclaredError> {
    let post = vars.template(
        spec.post.as_deref().unwrap_or(DEFAULT_POST),
        "compose.post",
        Allow::TextAndLink,
    )?;
    let list = steps(vars, &spec.steps, "compose.steps", Allow::All)?;
    let writes = |var| list.iter().any(|s| s.uses(var));
    if !writes(ContentVar::Text) && !writes(ContentVar::Post) {
        return Err(DeclaredError::invalid(
            "compose.steps",
            "no step writes the post: a type or select value needs {{post}} or {{text}}",
        ));
    }
    if readback
        && !matches!(
            list.first(),
            Some(Step {
                action: Action::Navigate(_),
                ..
            })
        )
    {
        return Err(DeclaredError::invalid(
            "compose.steps",
            "with verify.readback the first step is a navigate (the read-back page is read before composing)",
        ));
    }
    let uses_link =
        writes(ContentVar::Link) || (writes(ContentVar::Post) && post.uses(ContentVar::Link));
    Ok(Compose {
        post,
        steps: list,
        uses_link,
    })
}

fn media(vars: &Vars<'_>, spec: &MediaSpec) -> Result<Media, DeclaredError> {
    Ok(Media {
        input: selector(vars, &spec.input, "media.input")?,
        settled: spec
            .settled
            .as_ref()
            .map(|s| selector(vars, s, "media.settled"))
            .transpose()?,
        rejected: spec
            .rejected
            .as_ref()
            .map(|c| dom_check(vars, c, "media.rejected"))
            .transpose()?,
        timeout: timeout(spec.timeout_ms, "media.timeoutMs")?,
    })
}

fn verify(vars: &Vars<'_>, spec: &VerifySpec) -> Result<Verify, DeclaredError> {
    if spec.toast.is_none() && spec.readback.is_none() {
        return Err(DeclaredError::invalid(
            "verify",
            "a toast or a readback is needed to prove a post",
        ));
    }
    let toast = spec
        .toast
        .as_ref()
        .map(|t: &ToastSpec| -> Result<Toast, DeclaredError> {
            let attribute = match t.permalink_attribute.as_deref().map(str::trim) {
                Some("") => {
                    return Err(DeclaredError::invalid(
                        "verify.toast.permalinkAttribute",
                        "must not be empty",
                    ));
                }
                other => other.map(str::to_owned),
            };
            Ok(Toast {
                selector: selector(vars, &t.selector, "verify.toast.selector")?,
                permalink_attribute: attribute,
                wait: timeout(t.wait_ms, "verify.toast.waitMs")?,
            })
        })
        .transpose()?;
    let permalink_text = match &spec.permalink {
        None => None,
        Some(p) => {
            if toast
                .as_ref()
                .is_none_or(|t| t.permalink_attribute.is_none())
            {
                return Err(DeclaredError::invalid(
                    "verify.permalink",
                    "the permalink comes from the toast: verify.toast.permalinkAttribute is needed",
                ));
            }
            Some(selector(vars, &p.text, "verify.permalink.text")?)
        }
    };
    let readback = spec
        .readback
        .as_ref()
        .map(|r: &ReadbackSpec| -> Result<Readback, DeclaredError> {
            let url = vars.fill(&r.url, "verify.readback.url")?;
            if r.text.trim().is_empty() {
                return Err(DeclaredError::invalid(
                    "verify.readback.text",
                    "an empty selector",
                ));
            }
            Ok(Readback {
                url: http_url(&url, "verify.readback.url")?,
                item: selector(vars, &r.item, "verify.readback.item")?,
                text: vars.fill(&r.text, "verify.readback.text")?,
                ready: r
                    .ready
                    .as_ref()
                    .map(|s| selector(vars, s, "verify.readback.ready"))
                    .transpose()?,
            })
        })
        .transpose()?;
    Ok(Verify {
        toast,
        permalink_text,
        readback,
        error_banner: spec
            .error_banner
            .as_ref()
            .map(|s| selector(vars, s, "verify.errorBanner"))
            .transpose()?,
    })
}

// ---------------------------------------------------------------------------------------
// Running it

/// What `post` hands `verify`.
#[derive(Clone, PartialEq, Eq)]
struct Note {
    /// The post as the site shows it (line breaks `\n`, trimmed), for read-back.
    post: String,
    /// How many posts with that text the read-back page showed before the submit.
    before: Option<usize>,
    /// Whether the page after submit showed the error banner.
    banner: bool,
}

/// A read-back that could not be done.
enum ReadFailure {
    SignedOut,
    Failed(String),
}

/// Line breaks as a form submission leaves them once the site normalised them, and no
/// surrounding white space (sites trim; a page's text may carry the markup's).
fn normalize(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .trim()
        .to_owned()
}

/// `list[index] (description)`.
fn step_name(list: &str, steps: &[Step], index: usize) -> String {
    match steps.get(index) {
        Some(step) => format!("{list}[{index}] ({})", step.description),
        None => format!("{list}[{index}]"),
    }
}

fn failure_text(f: &StepFailure) -> String {
    // The runner's messages never carry typed values; keep the first line only.
    f.message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

impl DeclaredStrategy {
    fn step_timeout(&self, step: &Step) -> Duration {
        step.timeout.unwrap_or(match step.action {
            Action::Navigate(_) => self.timeouts.navigation,
            _ => self.timeouts.step,
        })
    }

    fn action(step: &Step, filled: &Filled<'_>) -> BrowserAction {
        match &step.action {
            Action::Navigate(url) => BrowserAction::Navigate { url: url.clone() },
            Action::Click(selector) => BrowserAction::Click {
                selector: selector.clone(),
            },
            Action::Type {
                selector,
                value,
                submit,
            } => BrowserAction::Type {
                selector: selector.clone(),
                value: SecretValue::new(value.render(filled)),
                submit: *submit,
            },
            Action::Select { selector, value } => BrowserAction::Select {
                selector: selector.clone(),
                value: SecretValue::new(value.render(filled)),
            },
            Action::Wait {
                selector,
                url,
                text,
            } => BrowserAction::Wait {
                selector: selector.clone(),
                url: url.clone(),
                text: text.clone(),
            },
            Action::Assert(check) => BrowserAction::Assert {
                check: check.clone(),
            },
        }
    }

    /// Runs `steps` in order; the first failure comes back with its index. A failed
    /// `assert` is a failure.
    async fn run_steps<C: StepRunner>(
        &self,
        context: &C,
        steps: &[Step],
        filled: &Filled<'_>,
    ) -> Result<(), (usize, StepFailure)> {
        for (i, step) in steps.iter().enumerate() {
            let out = context
                .run(&Self::action(step, filled), self.step_timeout(step))
                .await
                .map_err(|f| (i, f))?;
            if out == StepOutput::Checked(false) {
                return Err((
                    i,
                    StepFailure::new(StepFailureKind::NotFound, "the check did not hold"),
                ));
            }
        }
        Ok(())
    }

    /// Whether the page's URL contains `part` now (a "no" costs the glance deadline).
    async fn url_is<C: StepRunner>(&self, context: &C, part: &str) -> bool {
        let wait = BrowserAction::Wait {
            selector: None,
            url: Some(part.to_owned()),
            text: None,
        };
        context.run(&wait, self.timeouts.glance).await.is_ok()
    }

    /// Whether the page is on the declared signed-out URL.
    async fn signed_out_now<C: StepRunner>(&self, context: &C) -> bool {
        match &self.sign_in.signed_out_url {
            Some(url) => self.url_is(context, url).await,
            None => false,
        }
    }

    /// Whether `check` holds on the page now.
    async fn holds<C: StepRunner>(
        &self,
        context: &C,
        check: &DomCheck,
    ) -> Result<bool, StepFailure> {
        let action = BrowserAction::Assert {
            check: check.clone(),
        };
        match context.run(&action, self.timeouts.glance).await? {
            StepOutput::Checked(held) => Ok(held),
            _ => Ok(false),
        }
    }

    fn shown(selector: &Selector) -> DomCheck {
        DomCheck {
            selector: Some(selector.clone()),
            text: None,
        }
    }

    /// The error of a step (`what`, e.g. `compose.steps[2] (Write the post)`) that failed
    /// with `failure`: needs re-auth when the site signed the session out, else a failure
    /// with `code`.
    async fn step_error<C: StepRunner>(
        &self,
        context: &C,
        what: &str,
        failure: &StepFailure,
        code: &str,
    ) -> StrategyError {
        if failure.kind == StepFailureKind::SignedOut || self.signed_out_now(context).await {
            return StrategyError::needs_reauth(format!(
                "the site sent the session to its sign-in page at {what}"
            ));
        }
        if failure.kind == StepFailureKind::Crashed {
            return StrategyError::failed(
                "page_closed",
                format!("the page was closed at {what}: {}", failure_text(failure)),
            );
        }
        StrategyError::failed(code, format!("{what}: {}", failure_text(failure)))
    }

    /// Opens the read-back page and reads the texts of its posts. A page at the read-back
    /// URL (it answered 2xx) that shows no item within [`DeclaredTimeouts::list`] lists
    /// none.
    async fn read_posts<C: StepRunner>(
        &self,
        context: &C,
        readback: &Readback,
    ) -> Result<Vec<String>, ReadFailure> {
        let open = BrowserAction::Navigate {
            url: readback.url.clone(),
        };
        if let Err(f) = context.run(&open, self.timeouts.navigation).await {
            if f.kind == StepFailureKind::SignedOut || self.signed_out_now(context).await {
                return Err(ReadFailure::SignedOut);
            }
            return Err(ReadFailure::Failed(format!(
                "could not open the read-back page: {}",
                failure_text(&f)
            )));
        }
        if !self.url_is(context, readback.url.as_str()).await {
            if self.signed_out_now(context).await {
                return Err(ReadFailure::SignedOut);
            }
            return Err(ReadFailure::Failed(
                "the read-back page sent the browser elsewhere".into(),
            ));
        }
        if let Some(ready) = &readback.ready {
            let wait = BrowserAction::Wait {
                selector: Some(ready.clone()),
                url: None,
                text: None,
            };
            if let Err(f) = context.run(&wait, self.timeouts.step).await {
                return Err(ReadFailure::Failed(format!(
                    "the read-back page did not get ready: {}",
                    failure_text(&f)
                )));
            }
        }
        let list = BrowserAction::Extract {
            what: abr_protocol::Extraction::List {
                selector: readback.item.clone(),
                fields: BTreeMap::from([("text".to_owned(), readback.text.clone())]),
            },
        };
        match context.run(&list, self.timeouts.list).await {
            Ok(StepOutput::Extracted(Value::Array(items))) => Ok(items
                .iter()
                .map(|item| {
                    item.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()),
            Ok(_) => Err(ReadFailure::Failed(
                "the read-back page gave no list of posts".into(),
            )),
            // The page is the read-back page and shows no post.
            Err(f) if f.kind == StepFailureKind::NotFound => Ok(Vec::new()),
            Err(f) => Err(ReadFailure::Failed(format!(
                "could not read the read-back page: {}",
                failure_text(&f)
            ))),
        }
    }

    /// The link of `content` as the compose steps take it (`""` for none), or the refusal
    /// when the platform's compose steps never write a link.
    fn link_of<'a>(&self, content: &'a PostContent) -> Result<&'a str, StrategyError> {
        let link = content.link.as_deref().map_or("", str::trim);
        if !link.is_empty() && !self.compose.uses_link {
            return Err(StrategyError::not_posted(
                "link_unsupported",
                "this platform's compose steps do not take a link",
            ));
        }
        Ok(link)
    }

    /// The post as composed from `content` (`compose.post`), before normalizing.
    fn render_post(&self, content: &PostContent, link: &str) -> String {
        self.compose.post.render(&Filled {
            text: &content.text,
            link,
            post: "",
        })
    }

    fn count(posts: &[String], post: &str) -> usize {
        posts.iter().filter(|p| normalize(p) == post).count()
    }

    /// The toast's confirmation, if the toast is shown now.
    async fn toast_now<C: StepRunner>(&self, context: &C) -> Option<Verification> {
        let toast = self.verify.toast.as_ref()?;
        if !self
            .holds(context, &Self::shown(&toast.selector))
            .await
            .ok()?
        {
            return None;
        }
        let Some(attribute) = &toast.permalink_attribute else {
            return Some(Verification {
                method: VerificationMethod::Toast,
                evidence: VerificationEvidence {
                    permalink: None,
                    post_id: None,
                    detail: Some("the confirmation toast was shown".into()),
                },
            });
        };
        let read = BrowserAction::Extract {
            what: abr_protocol::Extraction::Attribute {
                selector: toast.selector.clone(),
                attribute: attribute.clone(),
            },
        };
        let Ok(StepOutput::Extracted(Value::String(href))) =
            context.run(&read, self.timeouts.step).await
        else {
            return None;
        };
        let permalink = self
            .base
            .join(href.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))?;
        Some(Verification {
            method: VerificationMethod::Toast,
            evidence: VerificationEvidence {
                permalink: Some(permalink.to_string()),
                post_id: None,
                detail: Some("the confirmation toast linked to the post".into()),
            },
        })
    }

    /// A toast was seen: with a permalink page declared, the post must be shown there.
    /// `Err` says why the permalink page did not confirm it.
    async fn confirm_toast<C: StepRunner>(
        &self,
        context: &C,
        toast: Verification,
        note: &Note,
    ) -> Result<Verification, String> {
        let (Some(text), Some(permalink)) =
            (&self.verify.permalink_text, &toast.evidence.permalink)
        else {
            return Ok(toast);
        };
        let url = Url::parse(permalink).map_err(|_| "the toast's permalink is not a URL")?;
        let open = BrowserAction::Navigate { url };
        context
            .run(&open, self.timeouts.navigation)
            .await
            .map_err(|f| format!("could not open the permalink page: {}", failure_text(&f)))?;
        let read = BrowserAction::Extract {
            what: abr_protocol::Extraction::Text {
                selector: text.clone(),
            },
        };
        match context.run(&read, self.timeouts.step).await {
            Ok(StepOutput::Extracted(Value::String(shown))) if normalize(&shown) == note.post => {
                Ok(Verification {
                    method: VerificationMethod::Permalink,
                    evidence: VerificationEvidence {
                        permalink: toast.evidence.permalink,
                        post_id: None,
                        detail: Some("the permalink page shows the post".into()),
                    },
                })
            }
            Ok(_) => Err("the permalink page does not show the post".into()),
            Err(f) => Err(format!(
                "could not read the permalink page: {}",
                failure_text(&f)
            )),
        }
    }

    /// The verdict after no toast confirmed the post. `toast_seen`: a toast was shown (so
    /// "not posted" is never the answer).
    async fn judge<C: StepRunner>(
        &self,
        context: &C,
        note: &Note,
        toast_seen: Option<String>,
    ) -> VerifyOutcome {
        let (Some(readback), Some(before)) = (&self.verify.readback, note.before) else {
            return VerifyOutcome::Unconfirmed {
                detail: toast_seen.unwrap_or_else(|| {
                    if note.banner {
                        "the site showed its error banner, and there is no read-back to check"
                            .into()
                    } else {
                        "no confirmation was shown, and there is no read-back to check".into()
                    }
                }),
            };
        };
        let why = match toast_seen.as_deref() {
            Some(why) => why,
            None if note.banner => "the site showed its error banner",
            None => "no confirmation was shown",
        };
        match self.read_posts(context, readback).await {
            Ok(posts) => {
                if Self::count(&posts, &note.post) > before {
                    VerifyOutcome::Confirmed(Verification {
                        method: VerificationMethod::Readback,
                        evidence: VerificationEvidence {
                            permalink: None,
                            post_id: None,
                            detail: Some(format!(
                                "one more post with the text posted on {} than before the submit",
                                readback.url.path()
                            )),
                        },
                    })
                } else if note.banner && toast_seen.is_none() {
                    VerifyOutcome::NotPosted {
                        detail: "the site showed its error banner and the post is not on the read-back page".into(),
                    }
                } else {
                    VerifyOutcome::Unconfirmed {
                        detail: format!("{why}, and the post is not on the read-back page"),
                    }
                }
            }
            Err(ReadFailure::SignedOut) => VerifyOutcome::Unconfirmed {
                detail: format!("{why}, and the read-back page sent the session to sign in"),
            },
            Err(ReadFailure::Failed(reason)) => VerifyOutcome::Unconfirmed {
                detail: format!("{why}, and {reason}"),
            },
        }
    }

    async fn attach<C: StepRunner>(
        &self,
        context: &C,
        media: &Media,
        files: Vec<UploadFile>,
    ) -> Result<(), StrategyError> {
        let upload = BrowserAction::Upload {
            selector: media.input.clone(),
            files,
        };
        let deadline = media.timeout.unwrap_or(self.timeouts.media);
        if let Err(f) = context.run(&upload, self.timeouts.step).await {
            return Err(self
                .step_error(context, "media.input", &f, "media_input_failed")
                .await);
        }
        if let Some(settled) = &media.settled {
            let wait = BrowserAction::Wait {
                selector: Some(settled.clone()),
                url: None,
                text: None,
            };
            if let Err(f) = context.run(&wait, deadline).await {
                let code = if f.kind == StepFailureKind::NotFound {
                    "media_upload_timeout"
                } else {
                    "media_status_unreadable"
                };
                return Err(self.step_error(context, "media.settled", &f, code).await);
            }
        }
        if let Some(rejected) = &media.rejected {
            match self.holds(context, rejected).await {
                Ok(true) => {
                    return Err(StrategyError::not_posted(
                        "media_rejected",
                        "the site refused the media upload",
                    ));
                }
                Ok(false) => {}
                Err(f) => {
                    return Err(StrategyError::failed(
                        "media_status_unreadable",
                        format!("media.rejected: {}", failure_text(&f)),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The attachments as files; invalid base64 is refused before anything is done.
fn decode_media(media: &[abr_protocol::MediaAttachment]) -> Result<Vec<UploadFile>, StrategyError> {
    media
        .iter()
        .enumerate()
        .map(|(i, m)| {
            base64::engine::general_purpose::STANDARD
                .decode(m.data_base64.trim())
                .map(|bytes| UploadFile {
                    name: m.file_name.clone(),
                    mime_type: m.mime_type.clone(),
                    bytes,
                })
                .map_err(|_| {
                    StrategyError::not_posted(
                        "invalid_media",
                        format!("media attachment {} is not valid base64", i + 1),
                    )
                })
        })
        .collect()
}

#[async_trait]
impl<C: SessionContext + StepRunner> WebPostStrategy<C> for DeclaredStrategy {
    fn platform(&self) -> &str {
        &self.id
    }

    fn policy(&self) -> &StrategyPolicy {
        &self.policy
    }

    fn start_url(&self) -> &str {
        &self.start_url
    }

    fn pacing(&self) -> PlatformPacing {
        self.pacing
    }

    /// On a blank page (an unattended job) runs `signIn.steps` first; on any other page (a
    /// capture: a person may be signing in on it) only looks. Signed in when `signedIn`
    /// holds; signed out on `signedOutUrl`. With both declared, a page that shows neither
    /// is "not yet" on a person's page; after the steps it is looked at again until one
    /// shows, and an error (`sign_in_inconclusive`) when neither has by `settle`.
    async fn is_authenticated(&self, context: &C) -> Result<bool, StrategyError> {
        let blank = self.url_is(context, "about:blank").await;
        if blank {
            let none = Filled {
                text: "",
                link: "",
                post: "",
            };
            if let Err((i, f)) = self.run_steps(context, &self.sign_in.steps, &none).await {
                if f.kind == StepFailureKind::SignedOut || self.signed_out_now(context).await {
                    return Ok(false);
                }
                let what = step_name("signIn.steps", &self.sign_in.steps, i);
                let code = if f.kind == StepFailureKind::Crashed {
                    "page_closed"
                } else {
                    "sign_in_check_failed"
                };
                return Err(StrategyError::failed(
                    code,
                    format!("{what}: {}", failure_text(&f)),
                ));
            }
        }
        // After the steps the page must settle on one of the two answers: look again until
        // it does or `settle` runs out. A page a person is using is only looked at once.
        let deadline = Instant::now() + self.timeouts.settle;
        loop {
            if let Some(check) = &self.sign_in.signed_in {
                match self.holds(context, check).await {
                    Ok(true) => return Ok(true),
                    Ok(false) => {}
                    Err(f) if f.kind == StepFailureKind::SignedOut => return Ok(false),
                    Err(f) if f.kind == StepFailureKind::Crashed => {
                        return Err(StrategyError::failed(
                            "page_closed",
                            format!("signIn.signedIn: {}", failure_text(&f)),
                        ));
                    }
                    // A page a person is using may be between two documents: not yet.
                    Err(_) if !blank => return Ok(false),
                    Err(f) => {
                        return Err(StrategyError::failed(
                            "sign_in_check_failed",
                            format!("signIn.signedIn: {}", failure_text(&f)),
                        ));
                    }
                }
            }
            if self.signed_out_now(context).await {
                return Ok(false);
            }
            match (&self.sign_in.signed_in, &self.sign_in.signed_out_url) {
                // Only "signed out" is declared, and the page is not there.
                (None, _) => return Ok(true),
                // Only "signed in" is declared, and it does not hold.
                (Some(_), None) => return Ok(false),
                (Some(_), Some(_)) if !blank => return Ok(false),
                (Some(_), Some(_)) if Instant::now() >= deadline => {
                    return Err(StrategyError::failed(
                        "sign_in_inconclusive",
                        "the page opened by signIn.steps shows neither signedIn nor signedOutUrl",
                    ));
                }
                (Some(_), Some(_)) => {}
            }
        }
    }

    async fn post(
        &self,
        context: &C,
        content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError> {
        progress.enter(FailureStage::Compose);
        // Refusals that need no page: nothing has been done yet.
        let link = self.link_of(content)?;
        let files = if content.media.is_empty() {
            Vec::new()
        } else if self.media.is_none() {
            return Err(StrategyError::not_posted(
                "media_unsupported",
                "this platform declares no media step",
            ));
        } else {
            decode_media(&content.media)?
        };
        let post = self.render_post(content, link);
        let filled = Filled {
            text: &content.text,
            link,
            post: &post,
        };
        let post = normalize(&post);

        let before = match &self.verify.readback {
            None => None,
            Some(readback) => match self.read_posts(context, readback).await {
                Ok(posts) => Some(Self::count(&posts, &post)),
                Err(ReadFailure::SignedOut) => {
                    return Err(StrategyError::needs_reauth(
                        "the read-back page sent the session to its sign-in page",
                    ));
                }
                Err(ReadFailure::Failed(why)) => {
                    return Err(StrategyError::failed(
                        "readback_unreadable",
                        format!("before submitting, {why}"),
                    ));
                }
            },
        };
        if let Err((i, f)) = self.run_steps(context, &self.compose.steps, &filled).await {
            let what = step_name("compose.steps", &self.compose.steps, i);
            return Err(self.step_error(context, &what, &f, "compose_failed").await);
        }

        if let Some(media) = &self.media
            && !files.is_empty()
        {
            progress.enter(FailureStage::Media);
            self.attach(context, media, files).await?;
        }

        progress.submit().await?;
        if let Err((i, f)) = self.run_steps(context, &self.submit, &filled).await {
            let what = step_name("submit.steps", &self.submit, i);
            return Err(self.step_error(context, &what, &f, "submit_failed").await);
        }
        if self.signed_out_now(context).await {
            return Err(StrategyError::needs_reauth(
                "the site signed the session out at submit",
            ));
        }
        let observed = self.toast_now(context).await;
        let banner = match &self.verify.error_banner {
            Some(banner) => self
                .holds(context, &Self::shown(banner))
                .await
                .unwrap_or(false),
            None => false,
        };
        Ok(SubmitReceipt {
            observed,
            note: Some(ReceiptNote::new(Note {
                post,
                before,
                banner,
            })),
        })
    }

    async fn verify(
        &self,
        context: &C,
        receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError> {
        let Some(note) = receipt.note.as_ref().and_then(ReceiptNote::get::<Note>) else {
            return Ok(VerifyOutcome::Unconfirmed {
                detail: "the receipt carries nothing to verify".into(),
            });
        };
        let mut toast = receipt.observed.clone();
        // An error page will not grow a toast; a plain page may (a late confirmation).
        if toast.is_none()
            && !note.banner
            && let Some(t) = &self.verify.toast
        {
            let wait = BrowserAction::Wait {
                selector: Some(t.selector.clone()),
                url: None,
                text: None,
            };
            if context
                .run(&wait, t.wait.unwrap_or(self.timeouts.toast))
                .await
                .is_ok()
            {
                toast = self.toast_now(context).await;
            }
        }
        let toast_seen = match toast {
            Some(toast) => match self.confirm_toast(context, toast, note).await {
                Ok(v) => return Ok(VerifyOutcome::Confirmed(v)),
                Err(why) => Some(format!("a toast was shown but {why}")),
            },
            None => None,
        };
        Ok(self.judge(context, note, toast_seen).await)
    }

    /// Only reads: opens the declared read-back page (the same read-back `verify` runs)
    /// and counts the posts whose text is exactly `content` as composed. One is
    /// confirmed (method [`VerificationMethod::Recheck`]), none is not found, several are
    /// ambiguous; a signed-out or unreadable page, or no declared read-back, is unavailable.
    /// No compose, media or submit step runs.
    async fn recheck(
        &self,
        context: &C,
        content: &PostContent,
    ) -> Result<RecheckOutcome, StrategyError>
    where
        C: Sync,
    {
        let Some(readback) = &self.verify.readback else {
            return Ok(RecheckOutcome::Unavailable {
                detail: "the platform declares no read-back".into(),
            });
        };
        let Ok(link) = self.link_of(content) else {
            return Ok(RecheckOutcome::Unavailable {
                detail: "this platform's compose steps do not take a link, so a post with one \
                         cannot be looked for"
                    .into(),
            });
        };
        let post = normalize(&self.render_post(content, link));
        let page = readback.url.path();
        match self.read_posts(context, readback).await {
            Ok(posts) => Ok(match Self::count(&posts, &post) {
                0 => RecheckOutcome::NotFound {
                    detail: format!("no post with the text posted on {page}"),
                },
                1 => RecheckOutcome::Confirmed(Verification {
                    method: VerificationMethod::Recheck,
                    evidence: VerificationEvidence {
                        permalink: None,
                        post_id: None,
                        detail: Some(format!(
                            "a re-check found exactly one post with the text posted on {page}"
                        )),
                    },
                }),
                n => RecheckOutcome::Ambiguous {
                    detail: format!("{n} posts with the text posted on {page}"),
                },
            }),
            Err(ReadFailure::SignedOut) => Ok(RecheckOutcome::Unavailable {
                detail: "the read-back page sent the session to its sign-in page".into(),
            }),
            Err(ReadFailure::Failed(why)) => Ok(RecheckOutcome::Unavailable { detail: why }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("base".to_owned(), "http://127.0.0.1:8788/".to_owned())])
    }

    fn render(t: &Template, text: &str, link: &str) -> String {
        t.render(&Filled {
            text,
            link,
            post: "P",
        })
    }

    #[test]
    fn templates_fill_variables_and_keep_content_for_later() {
        let v = vars();
        let vars = Vars(&v);
        assert_eq!(
            vars.fill("{{base}}/login", "f").unwrap(),
            "http://127.0.0.1:8788/login"
        );
        assert_eq!(vars.fill("{{ base.host }}", "f").unwrap(), "127.0.0.1");
        assert_eq!(
            vars.fill("{{base.origin}}", "f").unwrap(),
            "http://127.0.0.1:8788"
        );
        let t = vars
            .template(
                "{{text}}{{#link}}\n{{link}}{{/link}}",
                "f",
                Allow::TextAndLink,
            )
            .unwrap();
        assert_eq!(render(&t, "hi", ""), "hi");
        assert_eq!(render(&t, "hi", "https://x.test"), "hi\nhttps://x.test");
        assert!(t.uses(ContentVar::Link) && !t.uses(ContentVar::Post));
        let all = vars.template("[{{post}}]", "f", Allow::All).unwrap();
        assert_eq!(render(&all, "", ""), "[P]");
    }

    #[test]
    fn template_errors_name_the_field() {
        let v = vars();
        let vars = Vars(&v);
        for (s, allow, words) in [
            ("{{nope}}", Allow::All, "unknown variable"),
            ("{{base", Allow::All, "not closed"),
            ("{{text}}", Allow::Nothing, "post's content"),
            ("{{post}}", Allow::TextAndLink, "post template"),
            ("{{#link}}a", Allow::All, "not closed"),
            ("a{{/link}}", Allow::All, "closes no open section"),
            ("{{#link}}{{#text}}{{/text}}{{/link}}", Allow::All, "nested"),
            ("{{base.path}}", Allow::All, "unknown variable"),
        ] {
            let e = vars
                .template(s, "compose.steps[1].value", allow)
                .unwrap_err();
            assert_eq!(e.field(), Some("compose.steps[1].value"), "{s}");
            assert!(e.to_string().contains(words), "{s}: {e}");
        }
    }

    #[test]
    fn reserved_and_malformed_variable_names_are_refused() {
        let text = BTreeMap::from([("text".to_owned(), "x".to_owned())]);
        assert!(Vars(&text).check().is_err());
        let odd = BTreeMap::from([("a b".to_owned(), "x".to_owned())]);
        assert!(Vars(&odd).check().is_err());
        assert!(Vars(&vars()).check().is_ok());
    }

    #[test]
    fn urls_with_credentials_are_refused_as_in_plans() {
        for url in [
            "https://u:p@x.example/",
            "https://u@x.example/",
            "http://:p@x.example/",
        ] {
            let e = http_url(url, "startUrl").unwrap_err();
            assert_eq!(e.field(), Some("startUrl"), "{url}");
            assert!(e.to_string().contains("credentials"), "{url}: {e}");
            assert!(!e.to_string().contains("u:p"), "{e}");
        }
        assert!(http_url("https://x.example/login", "startUrl").is_ok());
    }

    #[test]
    fn a_misspelt_policy_key_in_a_toml_file_is_refused() {
        let file = |policy: &str| {
            format!(
                "id = \"p\"\nstartUrl = \"https://p.example/\"\n[policy]\n{policy}\n\
                 [signIn]\nsteps = []\nsignedOutUrl = \"/login\"\n[compose]\nsteps = []\n\
                 [submit]\nsteps = []\n[verify]\n"
            )
        };
        let ok: abr_protocol::PlatformFile = toml::from_str(&file("readOnly = true")).unwrap();
        assert_eq!(ok.policy.read_only, Some(true));
        for key in ["readonly", "read_only"] {
            let e = toml::from_str::<abr_protocol::PlatformFile>(&file(&format!("{key} = true")))
                .unwrap_err();
            assert!(
                e.to_string().contains(&format!("unknown field `{key}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(
            PlatformFormat::from_file_name("demo.toml"),
            Some(PlatformFormat::Toml)
        );
        assert_eq!(
            PlatformFormat::from_file_name("x.JSON"),
            Some(PlatformFormat::Json)
        );
        assert_eq!(PlatformFormat::from_file_name("README.md"), None);
        assert_eq!(PlatformFormat::from_file_name("toml"), None);
    }

    #[test]
    fn read_back_text_is_compared_without_line_ending_or_edge_differences() {
        assert_eq!(normalize(" a\r\nb\r"), "a\nb");
        let posts = vec!["a\nb".to_owned(), "a".to_owned(), "a\r\nb ".to_owned()];
        assert_eq!(DeclaredStrategy::count(&posts, "a\nb"), 2);
        assert_eq!(DeclaredStrategy::count(&posts, "a\nb\nc"), 0);
    }
}
