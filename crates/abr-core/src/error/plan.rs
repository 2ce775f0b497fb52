//! [`PlanError`]: what is wrong with a step plan, and where (422 `invalid_plan`). A value
//! type below [`CoreError`](crate::error::CoreError), which carries it.

/// What is wrong with a URL of a plan (never the URL itself: it may carry a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UrlProblem {
    /// Not a URL.
    Invalid,
    /// Not http or https (`javascript:`, `file:`, `data:`, ...).
    NotHttp,
    /// Has a user name or password in it.
    Credentials,
    /// Longer than 4096 bytes.
    TooLong,
    /// Has a `{{placeholder}}` where none is filled (the target and callback URLs).
    Templated,
    /// A placeholder would fill its scheme, host, port or user name.
    PlaceholderInOrigin,
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Invalid => "is not a valid URL",
            Self::NotHttp => "is not an http or https URL",
            Self::Credentials => {
                "carries credentials (user:password@): a session or an input gives them"
            }
            Self::TooLong => "is too long: a URL is at most 4096 bytes",
            Self::Templated => "has a placeholder: only navigate URLs are templated",
            Self::PlaceholderInOrigin => {
                "has a placeholder outside its path, query and fragment (in its scheme, host, \
                 port or user, or at its start): a placeholder may fill only the path, the \
                 query or the fragment (the plan says where a run goes, not an input)"
            }
        })
    }
}

/// What is wrong with a plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanProblem {
    /// No steps.
    #[error("a plan has at least one step")]
    NoSteps,
    /// More steps than [`PlanLimits::max_steps`](crate::plan::PlanLimits::max_steps).
    #[error("a plan has at most {max} steps")]
    TooManySteps {
        /// The limit.
        max: usize,
    },
    /// The target URL is not usable.
    #[error("the target URL {0}")]
    TargetUrl(UrlProblem),
    /// A `navigate` URL (after its placeholders are filled) is not usable.
    #[error("the navigate URL {0}")]
    NavigateUrl(UrlProblem),
    /// The `api_callback` URL is not usable.
    #[error("the callback URL {0}")]
    CallbackUrl(UrlProblem),
    /// A step without a description.
    #[error("the description is empty: every step says what it does, for the approver")]
    EmptyDescription,
    /// A selector that is empty.
    #[error("the selector is empty")]
    EmptySelector,
    /// A selector with no form or several (`css`, `text`, `role`).
    #[error("a selector has exactly one of css, text or role; this one has {0}")]
    SelectorForms(usize),
    /// `name` without `role`.
    #[error("a selector's name goes with a role")]
    NameWithoutRole,
    /// A `wait` without exactly one condition.
    #[error("a wait has exactly one of selector, url or text; this one has {0}")]
    WaitConditions(usize),
    /// A DOM check with neither a selector nor a text.
    #[error("a DOM check needs a selector or a text")]
    EmptyCheck,
    /// A required text field is empty.
    #[error("{0} is empty")]
    Empty(&'static str),
    /// `timeoutMs: 0`.
    #[error("timeoutMs must be at least 1")]
    ZeroTimeout,
    /// A step deadline above the job's step budget.
    #[error("timeoutMs {ms} is above the job's step budget of {max_ms} ms")]
    TimeoutAboveBudget {
        /// The step's.
        ms: u64,
        /// The budget.
        max_ms: u64,
    },
    /// A placeholder naming an input the task does not give.
    #[error("the placeholder {{{{{0}}}}} names no input of the task")]
    UnknownInput(String),
    /// `{{` not followed by a name and `}}`.
    #[error(
        "{0} has a malformed placeholder: write {{{{name}}}} with a name of letters, digits, \
         `_`, `-` or `.` (at most 64)"
    )]
    MalformedPlaceholder(&'static str),
    /// Two `extract` steps write the same name.
    #[error("an earlier step already extracts under this name")]
    DuplicateExtractName,
    /// A screenshot name that is not 1 to 64 of letters, digits, `_`, `-`, `.`.
    #[error("a screenshot name is 1 to 64 letters, digits, `_`, `-` or `.`, not starting with `.`")]
    ScreenshotName,
    /// A stage name that is not 1 to 40 of `a`-`z`, `0`-`9`, `_`.
    #[error("a stage is 1 to 40 of a-z, 0-9 and `_` (`filling_form`): a name, never a value")]
    StageName,
    /// Two screenshots with one name (or a step using the reserved `verification`).
    #[error("another screenshot already has this name")]
    DuplicateScreenshotName,
    /// A text field over its bound.
    #[error("{what} is too long: at most {max} bytes")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its bound.
        max: usize,
    },
    /// More than 64 inputs, or a list extraction with more than 64 fields.
    #[error("{what}: at most {max}")]
    TooMany {
        /// Of what.
        what: &'static str,
        /// The bound.
        max: usize,
    },
    /// A step type the file does not allow (a platform's steps do not extract or take
    /// screenshots).
    #[error(
        "a platform's steps are navigate, click, type, select, wait or assert (no extract, \
         screenshot or upload)"
    )]
    ActionNotAllowed,
    /// An `upload` step's artifact is not an artifact's id.
    #[error("an upload's artifact is an artifact's id (`art_…`, from `POST /v1/artifacts`)")]
    ArtifactId,
    /// An input whose name no placeholder could use.
    #[error("an input name is 1 to 64 letters, digits, `_`, `-` or `.` (the placeholders' names)")]
    InputName,
    /// `secretInputs` names an input the task does not give.
    #[error("secretInputs names {0:?}, which is not one of the task's inputs")]
    UnknownSecretInput(String),
}

impl PlanProblem {
    /// The field of the step (or verification) the problem is in, as the JSON names it
    /// (`selector`, `url`, `value`, ...); `None` for the step as a whole.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::EmptyDescription => Some("description"),
            Self::ZeroTimeout | Self::TimeoutAboveBudget { .. } => Some("timeoutMs"),
            Self::EmptySelector | Self::SelectorForms(_) | Self::NameWithoutRole => {
                Some("selector")
            }
            Self::NavigateUrl(_) => Some("url"),
            Self::ArtifactId => Some("artifact"),
            Self::ActionNotAllowed => Some("type"),
            Self::StageName => Some("stage"),
            Self::MalformedPlaceholder(what) | Self::Empty(what) | Self::TooLong { what, .. } => {
                field_of(what)
            }
            _ => None,
        }
    }
}

/// The JSON field a problem's words name (`"the value"` is `value`).
fn field_of(what: &str) -> Option<&'static str> {
    Some(match what {
        "the description" => "description",
        "the value" | "the value once filled" => "value",
        "the navigate URL" => "url",
        "the selector" => "selector",
        "the extract name" => "name",
        "the wait's url" => "url",
        "the wait's text" | "the check's text" | "the text to show" => "text",
        _ => return None,
    })
}

/// Where a plan error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanLocation {
    /// The plan as a whole (its size, its target URL).
    Plan,
    /// The step at this index (0-based, as `steps[i]` in the JSON).
    Step(usize),
    /// The verification.
    Verification,
    /// The task's inputs.
    Inputs,
}

/// An invalid plan: where, and what is wrong (422 `invalid_plan`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", prefix(*.location))]
pub struct PlanError {
    /// Where.
    pub location: PlanLocation,
    /// What.
    pub problem: PlanProblem,
}

fn prefix(location: PlanLocation) -> String {
    match location {
        PlanLocation::Plan => String::new(),
        PlanLocation::Step(i) => format!("steps[{i}]: "),
        PlanLocation::Verification => "verification: ".to_owned(),
        PlanLocation::Inputs => "inputs: ".to_owned(),
    }
}

impl PlanError {
    pub(crate) fn at(location: PlanLocation) -> impl FnOnce(PlanProblem) -> Self {
        move |problem| Self { location, problem }
    }

    /// The index of the step the error is at, if it is at a step.
    pub fn step(&self) -> Option<usize> {
        match self.location {
            PlanLocation::Step(i) => Some(i),
            _ => None,
        }
    }
}
