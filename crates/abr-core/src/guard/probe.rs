//! [`PageProbe`]: what the guard rails read from a page, and the redacted frame.

use std::time::Duration;

use abr_protocol::Selector;
use async_trait::async_trait;

use crate::guard::downloads::{CaughtDownload, DownloadLimits};
use crate::guard::element::ElementFacts;
use crate::guard::network::RequestGate;
use crate::guard::redaction::PageRedaction;
use crate::step_runner::BrowserAction;
use crate::step_runner::StepFailure;

/// Which match of its selector an action acts on, and so which element the guard judges
/// before it: the same rule for the read and the action, so that the element judged is
/// the element acted on (a hidden harmless first match cannot stand in for a visible
/// committing second one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The first visible match: what a person would act on (a click, typing, a choice, a
    /// key pressed on an element).
    FirstVisible,
    /// The first match, visible or not: an upload (a file input is usually hidden behind
    /// a styled button).
    First,
}

impl Reach {
    /// The match `action` acts on.
    pub fn of(action: &BrowserAction) -> Self {
        match action {
            BrowserAction::Upload { .. } => Self::First,
            _ => Self::FirstVisible,
        }
    }
}

/// One form on the page, as the pause detector sees it: kinds of fields, never values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormFacts {
    /// It has a visible password field.
    pub has_password: bool,
    /// The accessible names of its visible submit controls.
    pub submit_names: Vec<String>,
    /// Its visible text, email, number and textarea fields (not hidden, not search).
    pub fields: u32,
}

/// What the page shows, read in one pass, for the pause detector. The text stays in memory
/// for the check: it is never logged, stored or put in an event.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PageSignals {
    /// The page's URL.
    pub url: String,
    /// The HTTP status of the page's document, when known.
    pub status: Option<u16>,
    /// The title and the visible text (at most 20 000 characters), lower-case.
    pub text: String,
    /// Visible password fields.
    pub password_fields: u32,
    /// A captcha widget or frame (reCAPTCHA, hCaptcha, Turnstile, Arkose) is present.
    pub captcha: bool,
    /// A one-time-code field (`autocomplete=one-time-code`) is visible.
    pub one_time_code: bool,
    /// Visible file inputs.
    pub file_inputs: u32,
    /// Visible payment card fields (see [`ElementFacts::is_card_field`]).
    pub card_fields: u32,
    /// The visible forms.
    pub forms: Vec<FormFacts>,
}

impl std::fmt::Debug for PageSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageSignals")
            .field("status", &self.status)
            .field("text_chars", &self.text.chars().count())
            .field("password_fields", &self.password_fields)
            .field("captcha", &self.captcha)
            .field("one_time_code", &self.one_time_code)
            .field("file_inputs", &self.file_inputs)
            .field("card_fields", &self.card_fields)
            .field("forms", &self.forms.len())
            .finish_non_exhaustive()
    }
}

/// A frame that could not be taken. No frame is better than an unredacted one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The blur over form fields could not be confirmed on every field.
    #[error("the blur over form fields could not be confirmed ({unconfirmed} of {fields} fields)")]
    BlurUnconfirmed {
        /// Fields on the page.
        fields: u32,
        /// Fields whose blur did not hold.
        unconfirmed: u32,
    },
    /// Sensitive text the page shows could not be masked, or the masks not confirmed.
    #[error("the masks over sensitive text could not be confirmed: {0}")]
    MaskUnconfirmed(String),
    /// The frame is larger than the cap even at the lowest quality.
    #[error("the frame is over the cap of {cap} bytes")]
    TooLarge {
        /// The cap.
        cap: usize,
    },
    /// The browser failed to take it.
    #[error("the browser could not take a frame: {0}")]
    Browser(String),
}

/// A frame that was taken with every form field blurred.
#[derive(Clone, PartialEq, Eq)]
pub struct RedactedFrame {
    /// The viewport, JPEG.
    pub jpeg: Vec<u8>,
    /// The page URL when it was taken.
    pub url: String,
    /// How many fields were blurred (and confirmed).
    pub blurred: u32,
    /// How many runs of sensitive text were masked (and confirmed).
    pub masked: u32,
    /// The page as the provider's watch saw it when the frame was taken, for
    /// [`PageProbe::unchanged_since`] (`None`: the provider cannot tell).
    pub mark: Option<String>,
}

impl std::fmt::Debug for RedactedFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactedFrame")
            .field("bytes", &self.jpeg.len())
            .field("blurred", &self.blurred)
            .field("masked", &self.masked)
            .finish_non_exhaustive()
    }
}

/// Where an element is in a frame: CSS pixels of the viewport, as a frame's image shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ElementBox {
    /// From the left edge.
    pub x: f64,
    /// From the top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// The width and height of a baseline or progressive JPEG (its start-of-frame segment).
pub fn jpeg_size(jpeg: &[u8]) -> Option<(u16, u16)> {
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut at = 2;
    while at + 4 <= jpeg.len() {
        if jpeg[at] != 0xFF {
            return None;
        }
        let marker = jpeg[at + 1];
        let length = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        if matches!(marker, 0xC0..=0xC3) {
            let sof = jpeg.get(at + 5..at + 9)?;
            return Some((
                u16::from_be_bytes([sof[2], sof[3]]),
                u16::from_be_bytes([sof[0], sof[1]]),
            ));
        }
        at += 2 + length;
    }
    None
}

/// Decides whether a run's browser may open a host: the tenant's site policy, as the
/// provider's navigation filter consults it.
pub trait SiteFilter: Send + Sync + std::fmt::Debug + 'static {
    /// Whether a document from `host` may load (`false`: the request is aborted before it is
    /// sent).
    fn may_open(&self, host: &str) -> bool;
}

/// Reads what the guard rails need from the page, and takes redacted frames.
///
/// # Contract
/// - Nothing here acts on the page: no click, no key, no focus change, no navigation.
///   `redacted_frame` changes styles for the time of the capture and restores them.
/// - `inspect` reads the element an action acts on: the [`Reach`] match of its selector
///   (waiting for one to be attached, within `timeout`); a missing element is a
///   [`StepFailure`] of kind `NotFound`.
/// - `signals` reads the whole page in one pass, within `timeout`.
/// - `signals_ahead` is `signals` and, in the same pass, what `inspect(ahead)` would answer
///   right now, when `ahead` matches an element in the page's top document at once; it
///   never waits for the element (`None`: the caller inspects, and waits, as usual).
/// - `redacted_frame` blurs every `input`, `textarea`, `select` and editable region and
///   every element the platform's `redaction` selects, masks every run of text the page
///   shows that is sensitive (the built-in kinds of [`PageRedaction`] and its patterns),
///   in the document, open shadow roots and same-origin frames, confirms the blur and the
///   masks on every one of them through the computed style, and only then captures the
///   viewport as a JPEG of at most `max_bytes`; anything else is a [`FrameError`] and no
///   frame. The text a snapshot reads is never masked: a brain needs the page.
/// - `inspect_focused` reads the element that has the keyboard focus, following the focus
///   into same-origin frames and open shadow roots; `None` when only the document (its
///   body) has it. A focus it cannot follow (a cross-origin frame) is an error.
/// - `filter_sites` makes the browser refuse every document request (a navigation, a
///   frame) to a host the filter refuses, from now until the context closes.
/// - `guard_network` holds every request the browser is about to send to the gate, below
///   the page, from now until the context closes (see [`RequestGate`] for the contract).
/// - `snapshot` lists the visible elements one can act on, in document order, tags each with
///   a reference in the attribute [`SnapshotRequest::attr`] (kept while the element stays,
///   so references are stable across snapshots; a reference the page made up or copied is
///   replaced), and reads the visible text; it never reads a field's value (a field holding
///   one is marked [`REDACTED`]). The element with reference `r` is then the one the CSS
///   selector [`SnapshotRequest::selector`] matches. Setting the attribute is the only
///   change it makes to the page.
#[async_trait]
pub trait PageProbe: Send + Sync + 'static {
    /// Facts about the element an action on `selector` acts on (its `reach` match).
    async fn inspect(
        &self,
        selector: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Result<ElementFacts, StepFailure>;

    /// Facts about the element that has the keyboard focus, if any but the document.
    async fn inspect_focused(&self, timeout: Duration)
    -> Result<Option<ElementFacts>, StepFailure>;

    /// The page's signals.
    async fn signals(&self, timeout: Duration) -> Result<PageSignals, StepFailure>;

    /// The page's signals and, read with them, the facts of the element an action on
    /// `ahead` acts on (its `reach` match) when it is there already (the next step's
    /// element: one read where there were two). Default: the signals alone.
    async fn signals_ahead(
        &self,
        ahead: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Result<(PageSignals, Option<ElementFacts>), StepFailure> {
        let _ = (ahead, reach);
        Ok((self.signals(timeout).await?, None))
    }

    /// A viewport frame with every form field blurred and every sensitive text masked.
    async fn redacted_frame(
        &self,
        max_bytes: usize,
        redaction: &PageRedaction,
        timeout: Duration,
    ) -> Result<RedactedFrame, FrameError>;

    /// Where the element an action on `selector` acts on (its `reach` match, now, without
    /// waiting) is in the viewport a frame shows, for an approver's preview to outline it.
    /// `None` when it cannot tell (no match, a cross-origin frame, a failed read). Default:
    /// `None`.
    async fn element_box(
        &self,
        selector: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Option<ElementBox> {
        let _ = (selector, reach, timeout);
        None
    }

    /// Whether the page provably still looks as it did when the frame of `mark`
    /// ([`RedactedFrame::mark`]) was taken: the same document at the same URL, nothing in
    /// it changed since, and nothing in it whose pixels change unseen. `false` whenever it
    /// cannot tell (a failed read included): the caller then takes a frame. Default:
    /// `false`.
    async fn unchanged_since(&self, mark: &str, timeout: Duration) -> bool {
        let _ = (mark, timeout);
        false
    }

    /// Routes every document request through `filter`.
    async fn filter_sites(&self, filter: std::sync::Arc<dyn SiteFilter>)
    -> Result<(), StepFailure>;

    /// Holds every request the browser is about to send to `gate`.
    async fn guard_network(&self, gate: std::sync::Arc<dyn RequestGate>)
    -> Result<(), StepFailure>;

    /// From now on keeps the page's downloads within `limits` ([`take_downloads`]
    /// answers them) instead of refusing them: each read from the network and aborted
    /// before the browser writes anything. Default: this browser cannot (`Err`); its
    /// downloads stay refused.
    ///
    /// [`take_downloads`]: Self::take_downloads
    async fn catch_downloads(&self, limits: DownloadLimits) -> Result<(), StepFailure> {
        let _ = limits;
        Err(StepFailure::new(
            crate::step_runner::StepFailureKind::Rejected,
            "this browser cannot keep downloads: they stay refused",
        ))
    }

    /// The downloads caught since the last call, oldest first. Default: none.
    fn take_downloads(&self) -> Vec<CaughtDownload> {
        Vec::new()
    }

    /// The page as a brain reads it.
    async fn snapshot(
        &self,
        request: &SnapshotRequest,
        timeout: Duration,
    ) -> Result<abr_protocol::Snapshot, StepFailure>;
}

/// What a snapshot of a field that holds a value shows instead of it.
pub const REDACTED: &str = "[redacted]";

/// How [`PageProbe::snapshot`] tags, pages and bounds a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRequest {
    /// The attribute that carries references: `data-abr-` and a per-session random suffix,
    /// so a page cannot prepare elements with references before it sees one.
    pub attr: String,
    /// The position (from 1) of the first element listed; every visible element gets its
    /// reference whichever page lists it.
    pub from: usize,
    /// Most elements listed.
    pub max_elements: usize,
    /// Most characters of visible text.
    pub max_text: usize,
    /// Most characters of a name.
    pub max_name: usize,
    /// Give links' targets (relative on the page's origin).
    pub hrefs: bool,
}

impl SnapshotRequest {
    /// References carried by `attr`, with the default bounds (from the first element,
    /// [`abr_protocol::DEFAULT_SNAPSHOT_ELEMENTS`] of them,
    /// [`abr_protocol::DEFAULT_SNAPSHOT_TEXT`] characters of text, names of 120, no
    /// hrefs).
    pub fn new(attr: String) -> Self {
        Self::with_query(attr, &abr_protocol::SnapshotQuery::default())
    }

    /// References carried by `attr`, the page and budget `query` asks for (checked with
    /// [`abr_protocol::SnapshotQuery::check`] first; out of bounds is clamped).
    pub fn with_query(attr: String, query: &abr_protocol::SnapshotQuery) -> Self {
        Self {
            attr,
            from: query.from(),
            max_elements: query.limit(),
            max_text: query.max_text(),
            max_name: 120,
            hrefs: query.hrefs(),
        }
    }

    /// Whether `reference` is one a snapshot gives (`e` and up to 7 digits): anything else
    /// could escape the selector.
    pub fn is_reference(reference: &str) -> bool {
        let digits = reference.strip_prefix('e').unwrap_or("");
        !digits.is_empty() && digits.len() <= 7 && digits.bytes().all(|b| b.is_ascii_digit())
    }

    /// The CSS selector of the element tagged `reference` (checked with
    /// [`Self::is_reference`] first).
    pub fn selector(&self, reference: &str) -> Selector {
        Selector::Css(format!("[{}=\"{reference}\"]", self.attr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::SecretValue;

    #[test]
    fn an_upload_reaches_its_first_match_and_every_other_action_its_first_visible_one() {
        let selector = || Selector::Css("#x".into());
        assert_eq!(
            Reach::of(&BrowserAction::Upload {
                selector: selector(),
                files: Vec::new()
            }),
            Reach::First
        );
        for action in [
            BrowserAction::Click {
                selector: selector(),
            },
            BrowserAction::Type {
                selector: selector(),
                value: SecretValue::new("v"),
                submit: false,
            },
            BrowserAction::Select {
                selector: selector(),
                value: "v".into(),
            },
            BrowserAction::Press {
                selector: Some(selector()),
                key: "Enter".into(),
            },
        ] {
            assert_eq!(Reach::of(&action), Reach::FirstVisible, "{action:?}");
        }
    }
}
