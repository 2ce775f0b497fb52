//! [`StepRunner`]: the browser mechanics of a step plan, behind one small trait, so the core
//! runs plans on fakes and every provider's context runs them the same way.

use std::time::Duration;

use abr_protocol::{DomCheck, Extraction, SecretValue, Selector};
use async_trait::async_trait;
use serde_json::Value;

/// A step with its `{{input}}` placeholders filled: what the browser does. Values typed or
/// chosen may be secrets (a password from the task's inputs), so they are [`SecretValue`]s.
#[derive(Debug, Clone, PartialEq)]
pub enum BrowserAction {
    /// Open a URL (already checked: http or https).
    Navigate {
        /// Where.
        url: url::Url,
    },
    /// Click an element.
    Click {
        /// The element.
        selector: Selector,
    },
    /// Replace a field's value, then press Enter when `submit`.
    Type {
        /// The field.
        selector: Selector,
        /// The text.
        value: SecretValue,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Choose an option by value or label.
    Select {
        /// The `<select>`.
        selector: Selector,
        /// The option.
        value: SecretValue,
    },
    /// Wait for an element, a URL substring or a text (exactly one is set).
    Wait {
        /// An element to appear.
        selector: Option<Selector>,
        /// A substring of the URL.
        url: Option<String>,
        /// A text to appear.
        text: Option<String>,
    },
    /// Read data.
    Extract {
        /// What.
        what: Extraction,
    },
    /// Take a screenshot.
    Screenshot,
    /// Check the DOM.
    Assert {
        /// The check.
        check: DomCheck,
    },
    /// Set the files of an `<input type=file>` (declared platforms attach a post's media
    /// this way; step plans cannot upload).
    Upload {
        /// The file input.
        selector: Selector,
        /// The files, in order.
        files: Vec<UploadFile>,
    },
    /// Press a key on an element (focused first), or on the page when `selector` is absent
    /// (browse sessions; step plans type with `submit` instead).
    Press {
        /// The element, if any.
        selector: Option<Selector>,
        /// The key, in Playwright's names (`Enter`, `Tab`, `ArrowDown`, ...).
        key: String,
    },
    /// Scroll the page by about a screen (browse sessions).
    Scroll {
        /// Towards the end (`true`) or the start.
        down: bool,
    },
    /// Go back in the history (browse sessions).
    Back,
}

/// A file to upload.
#[derive(Clone, PartialEq, Eq)]
pub struct UploadFile {
    /// File name.
    pub name: String,
    /// MIME type.
    pub mime_type: String,
    /// Contents.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for UploadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadFile")
            .field("mime_type", &self.mime_type)
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

impl BrowserAction {
    /// The step type's name on the wire (`navigate`, `click`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Navigate { .. } => "navigate",
            Self::Click { .. } => "click",
            Self::Type { .. } => "type",
            Self::Select { .. } => "select",
            Self::Wait { .. } => "wait",
            Self::Extract { .. } => "extract",
            Self::Screenshot => "screenshot",
            Self::Assert { .. } => "assert",
            Self::Upload { .. } => "upload",
            Self::Press { .. } => "press",
            Self::Scroll { .. } => "scroll",
            Self::Back => "back",
        }
    }

    /// How many characters the action types or chooses (`type`, `select`): a count for the
    /// timeline, never the value.
    pub fn typed_chars(&self) -> Option<usize> {
        match self {
            Self::Type { value, .. } | Self::Select { value, .. } => {
                Some(value.expose().chars().count())
            }
            _ => None,
        }
    }
}

/// What a step produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StepOutput {
    /// Nothing to keep (navigate, click, type, select, wait).
    #[default]
    Done,
    /// Data read by an `extract` step.
    Extracted(Value),
    /// A screenshot (PNG).
    Screenshot(Vec<u8>),
    /// The result of an `assert` step or a DOM-check verification.
    Checked(bool),
}

/// Why a step failed, as the browser saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepFailureKind {
    /// The element, URL or text did not appear within the step's deadline.
    NotFound,
    /// The page did not load (network error, refused by the egress guard, HTTP error page).
    Navigation,
    /// The page or browser is gone.
    Crashed,
    /// The site sent the browser to a sign-in page.
    SignedOut,
    /// Anything else the browser refused (an element not editable, an option missing).
    Rejected,
}

/// A step failure: its kind and a message that never carries typed values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StepFailure {
    /// What kind.
    pub kind: StepFailureKind,
    /// What happened, without input values.
    pub message: String,
}

impl StepFailure {
    /// A failure of `kind`.
    pub fn new(kind: StepFailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Runs one browser action on a context, within a deadline.
///
/// # Contract
/// - `run` performs exactly the action given, once, and returns within `timeout` (plus a
///   small margin): a step that cannot finish is a [`StepFailure`], never a hang or panic.
/// - Typed values are never logged or put in failure messages.
/// - `Extract` returns JSON: a string (text, attribute), an array of row objects or arrays
///   (table), an array of field objects (list).
/// - `Assert` returns [`StepOutput::Checked`]; a failed check is `Checked(false)`, not an
///   error.
/// - `page_text` is the visible text of the page (for screenshot verification).
#[async_trait]
pub trait StepRunner: Send + Sync + 'static {
    /// Performs `action`.
    async fn run(
        &self,
        action: &BrowserAction,
        timeout: Duration,
    ) -> Result<StepOutput, StepFailure>;

    /// The page's visible text.
    async fn page_text(&self, timeout: Duration) -> Result<String, StepFailure>;
}
