//! [`PageProbe`] for [`BrowserSession`]: what the guard rails read from the page, the
//! redacted frame, and the site filter, the same on every provider.
//!
//! - `inspect` and `signals` are one evaluation each of `probe.js` (through the step
//!   runner's locators, deadlines and failure classification); they read kinds, names and
//!   counts, never a field's value, and act on nothing. `signals_ahead` is both in one
//!   evaluation on the element when it is in the top document now (the same locator as
//!   `inspect`, without its wait), else `signals` alone.
//! - `redacted_frame` blurs every field with a constructed style sheet adopted by the
//!   document, its open shadow roots and its same-origin frames (no element is added or
//!   changed), blurs frames it cannot reach into as a whole (an inline `filter`, restored),
//!   confirms the blur on each through the computed style, captures the viewport, checks
//!   again (a field that appeared meanwhile would be in the frame unblurred), and takes the
//!   styles off, on every path. The first frame of a document starts its watch (a mutation
//!   observer and listeners for scrolling, loads, focus and animations, in the probe's
//!   closure where the page cannot reach it), and the frame carries the watch's mark:
//!   `unchanged_since` answers whether the page still looks as it did then.
//! - `inspect_focused` is one evaluation of `probe.js` on the page: the focus followed into
//!   same-origin frames and open shadow roots.
//! - `filter_sites` and `guard_network` join the context's one route (`router`): a document
//!   (a navigation, a frame, a new window) to a refused host is aborted before it is sent;
//!   every request whose method is not safe waits for the network gate. Routing sends every
//!   request through the driver and this process (Playwright cannot route by resource type:
//!   about 2 ms a request on loopback) and turns the browser's HTTP cache off. Playwright
//!   routes only the first request of a redirect chain: a redirect from an allowed host to a
//!   refused one is followed (the egress guard still applies to it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use abr_core::guard::{
    CaughtDownload, DownloadLimits, ElementBox, ElementFacts, FormFacts, FrameError, PageProbe,
    PageRedaction, PageSignals, Reach, RedactedFrame, RequestGate, SiteFilter, SnapshotRequest,
};
use abr_core::step_runner::{StepFailure, StepFailureKind};
use abr_protocol::{Selector, Snapshot};
use async_trait::async_trait;
use base64::Engine as _;
use playwright_rs::Error as PwError;
use playwright_rs::protocol::Page;
use serde::Deserialize;
use serde_json::Value;

use crate::probe_script::{
    AHEAD, APPLY, FINISH, FOCUSED, INSPECT, ProbeCall, REMOVE, SIGNALS, SNAPSHOT, STILL, random_u64,
};
use crate::session::BrowserSession;
use crate::steps::{Cause, MARGIN, Step};

/// The arguments of `snapshot` in probe.js.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotArgs<'a> {
    attr: &'a str,
    from: usize,
    max_elements: usize,
    max_text: usize,
    max_name: usize,
    hrefs: bool,
}

/// JPEG qualities a frame is tried at, until one fits the cap.
const QUALITIES: [u8; 3] = [70, 40, 20];

/// Bound on taking the blur off after a frame failed (independent of the frame's deadline,
/// which may be spent).
const CLEANUP: Duration = Duration::from_secs(2);

/// Bound on installing the site filter (two calls to the driver).
const INSTALL: Duration = Duration::from_secs(10);

#[async_trait]
impl PageProbe for BrowserSession {
    async fn inspect(
        &self,
        selector: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Result<ElementFacts, StepFailure> {
        let step = Step::new(self, timeout);
        let read = async {
            let value = INSPECT
                .run(self.probe_installed(), |js| {
                    step.read_match(selector, reach, js, None)
                })
                .await?;
            serde_json::from_value::<RawFacts>(value)
                .map(RawFacts::into_facts)
                .map_err(|_| step.rejected("inspecting the element: unexpected result"))
        };
        match tokio::time::timeout(timeout + MARGIN, read).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the element could not be inspected in time",
            )),
        }
    }

    async fn signals(&self, timeout: Duration) -> Result<PageSignals, StepFailure> {
        let step = Step::new(self, timeout);
        match tokio::time::timeout(timeout + MARGIN, read_signals(&step)).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the page's signals could not be read in time",
            )),
        }
    }

    async fn signals_ahead(
        &self,
        ahead: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Result<(PageSignals, Option<ElementFacts>), StepFailure> {
        let step = Step::new(self, timeout);
        let read = async {
            // The element is usually there already: one read of both. Else (not there yet,
            // in a frame, the document changed meanwhile) the signals alone.
            let both = AHEAD
                .run(self.probe_installed(), |js| step.read_now(ahead, reach, js))
                .await;
            if let Some(raw) = both.and_then(|v| serde_json::from_value::<RawAhead>(v).ok()) {
                return Ok((raw.signals.into_signals(), Some(raw.facts.into_facts())));
            }
            Ok((read_signals(&step).await?, None))
        };
        match tokio::time::timeout(timeout + MARGIN, read).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the page's signals could not be read in time",
            )),
        }
    }

    async fn snapshot(
        &self,
        request: &SnapshotRequest,
        timeout: Duration,
    ) -> Result<Snapshot, StepFailure> {
        let step = Step::new(self, timeout);
        let args = SnapshotArgs {
            attr: &request.attr,
            from: request.from,
            max_elements: request.max_elements,
            max_text: request.max_text,
            max_name: request.max_name,
            hrefs: request.hrefs,
        };
        let read = async {
            let value = SNAPSHOT
                .run(self.probe_installed(), |js| {
                    step.evaluate_page_with(js, Some(&args), "reading the page")
                })
                .await?;
            serde_json::from_value::<Snapshot>(value)
                .map_err(|_| step.rejected("reading the page: unexpected result"))
        };
        match tokio::time::timeout(timeout + MARGIN, read).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the page could not be read in time",
            )),
        }
    }

    async fn redacted_frame(
        &self,
        max_bytes: usize,
        redaction: &PageRedaction,
        timeout: Duration,
    ) -> Result<RedactedFrame, FrameError> {
        if self.page_gone() {
            return Err(FrameError::Browser(Cause::Closed.reason().to_owned()));
        }
        let token = frame_token();
        // Takes the blur off if this future is dropped half-way (the caller gave up).
        let mut guard = Restore {
            page: Some(self.page().clone()),
            token: token.clone(),
        };
        let frame = Frame {
            session: self,
            token: &token,
            redaction,
        };
        let outcome = match tokio::time::timeout(timeout + MARGIN, frame.take(max_bytes)).await {
            Ok(outcome) => outcome,
            Err(_) => Taken::Failed(FrameError::Browser(Cause::TimedOut.reason().to_owned())),
        };
        let result = match outcome {
            Taken::Done(frame) => Ok(frame),
            Taken::Unconfirmed(error) => Err(error),
            Taken::Failed(error) => {
                // Whatever happened, the blur comes off (queued behind a blur still running).
                let _ = tokio::time::timeout(CLEANUP, remove(self.page(), &token)).await;
                Err(error)
            }
        };
        guard.page = None;
        result
    }

    async fn element_box(
        &self,
        selector: &Selector,
        reach: Reach,
        timeout: Duration,
    ) -> Option<ElementBox> {
        if self.page_gone() {
            return None;
        }
        let step = Step::new(self, timeout);
        let read = step.read_now(selector, reach, BOX_JS);
        let value = tokio::time::timeout(timeout, read).await.ok()??;
        let raw = serde_json::from_value::<RawBox>(value).ok()?;
        let at = ElementBox {
            x: raw.x,
            y: raw.y,
            width: raw.width,
            height: raw.height,
        };
        let finite = [at.x, at.y, at.width, at.height]
            .iter()
            .all(|v| v.is_finite() && v.abs() < 1e6);
        (finite && at.width >= 0.0 && at.height >= 0.0).then_some(at)
    }

    async fn unchanged_since(&self, mark: &str, timeout: Duration) -> bool {
        if self.page_gone() {
            return false;
        }
        let page = self.page();
        let read = STILL.run(self.probe_installed(), |js| {
            page.evaluate::<&str, Value>(js, Some(&mark))
        });
        matches!(
            tokio::time::timeout(timeout, read).await,
            Ok(Ok(Value::Bool(true)))
        )
    }

    async fn filter_sites(&self, filter: Arc<dyn SiteFilter>) -> Result<(), StepFailure> {
        match tokio::time::timeout(INSTALL, self.install_site_filter(filter)).await {
            Ok(result) => result,
            Err(_) => Err(StepFailure::new(
                StepFailureKind::Rejected,
                format!("installing the site filter: {}", Cause::TimedOut.reason()),
            )),
        }
    }

    async fn guard_network(&self, gate: Arc<dyn RequestGate>) -> Result<(), StepFailure> {
        match tokio::time::timeout(INSTALL, self.install_network_gate(gate)).await {
            Ok(result) => result,
            Err(_) => Err(StepFailure::new(
                StepFailureKind::Rejected,
                format!("installing the network gate: {}", Cause::TimedOut.reason()),
            )),
        }
    }

    async fn catch_downloads(&self, limits: DownloadLimits) -> Result<(), StepFailure> {
        let install = self
            .downloads()
            .install(self.context(), self.page(), limits);
        match tokio::time::timeout(INSTALL, install).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StepFailure::new(
                StepFailureKind::Rejected,
                format!(
                    "keeping the page's downloads: {}",
                    Cause::classify(&e).reason()
                ),
            )),
            Err(_) => Err(StepFailure::new(
                StepFailureKind::Rejected,
                format!("keeping the page's downloads: {}", Cause::TimedOut.reason()),
            )),
        }
    }

    fn take_downloads(&self) -> Vec<CaughtDownload> {
        self.downloads().take()
    }

    async fn inspect_focused(
        &self,
        timeout: Duration,
    ) -> Result<Option<ElementFacts>, StepFailure> {
        let step = Step::new(self, timeout);
        let read = async {
            let value = FOCUSED
                .run(self.probe_installed(), |js| {
                    step.evaluate_page(js, "reading the focused element")
                })
                .await?;
            let focused = serde_json::from_value::<RawFocused>(value)
                .map_err(|_| step.rejected("reading the focused element: unexpected result"))?;
            match focused {
                RawFocused::None => Ok(None),
                RawFocused::Facts(facts) => Ok(Some(facts.into_facts())),
                RawFocused::Opaque => Err(step.rejected(
                    "the focus is in a frame whose element cannot be read (another site)",
                )),
            }
        };
        match tokio::time::timeout(timeout + MARGIN, read).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the focused element could not be read in time",
            )),
        }
    }
}

impl BrowserSession {
    async fn install_site_filter(&self, filter: Arc<dyn SiteFilter>) -> Result<(), StepFailure> {
        self.router()
            .set_sites(self.context(), self.page(), filter)
            .await
            .map_err(|e| {
                let reason = Cause::classify(&e).reason();
                StepFailure::new(
                    StepFailureKind::Rejected,
                    format!("installing the site filter: {reason}"),
                )
            })
    }

    async fn install_network_gate(&self, gate: Arc<dyn RequestGate>) -> Result<(), StepFailure> {
        self.router()
            .set_network(self.context(), self.page(), gate)
            .await
            .map_err(|e| {
                let reason = Cause::classify(&e).reason();
                StepFailure::new(
                    StepFailureKind::Rejected,
                    format!("installing the network gate: {reason}"),
                )
            })
    }
}

/// The page's signals, read once (again if a navigation replaced the document meanwhile).
async fn read_signals(step: &Step<'_>) -> Result<PageSignals, StepFailure> {
    let value = SIGNALS
        .run(step.session().probe_installed(), |js| {
            step.evaluate_page(js, "reading the page's signals")
        })
        .await?;
    serde_json::from_value::<RawSignals>(value)
        .map(RawSignals::into_signals)
        .map_err(|_| step.rejected("reading the page's signals: unexpected result"))
}

/// What `AHEAD` answers for an element of the top document.
#[derive(Deserialize)]
struct RawAhead {
    signals: RawSignals,
    facts: RawFacts,
}

/// A token naming one frame's redaction in the page, so one frame never takes off (or
/// confirms) another's.
fn frame_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "abr-{:016x}",
        random_u64(COUNTER.fetch_add(1, Ordering::Relaxed))
    )
}

/// Takes a frame's blur off (a failure's path: from the source, whatever the document
/// holds; the blur's state is the window's, not the probe's).
async fn remove(page: &Page, token: &str) -> Result<Value, PwError> {
    page.evaluate::<&str, Value>(REMOVE.full(), Some(&token))
        .await
}

/// Takes the blur off when dropped armed (`page` set): a frame abandoned half-way.
struct Restore {
    page: Option<Page>,
    token: String,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let Some(page) = self.page.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let token = std::mem::take(&mut self.token);
        runtime.spawn(async move {
            let _ = tokio::time::timeout(CLEANUP, remove(&page, &token)).await;
        });
    }
}

/// How a frame went.
enum Taken {
    /// Taken, confirmed before and after, and the blur is off.
    Done(RedactedFrame),
    /// The blur did not hold: the script took it off itself.
    Unconfirmed(FrameError),
    /// Anything else: the blur may still be on.
    Failed(FrameError),
}

/// One redacted frame being taken.
struct Frame<'a> {
    session: &'a BrowserSession,
    token: &'a str,
    redaction: &'a PageRedaction,
}

/// `redactApply`'s argument.
#[derive(serde::Serialize)]
struct ApplyArgs<'a> {
    token: &'a str,
    patterns: &'a [String],
    selectors: &'a [String],
}

impl Frame<'_> {
    fn browser(&self, error: &PwError) -> FrameError {
        FrameError::Browser(Cause::of(self.session, error).reason().to_owned())
    }

    async fn check(&self, call: &ProbeCall) -> Result<Check, FrameError> {
        let page = self.session.page();
        let value = call
            .run(self.session.probe_installed(), |js| {
                page.evaluate::<&str, Value>(js, Some(&self.token))
            })
            .await
            .map_err(|e| self.browser(&e))?;
        Self::parse(value)
    }

    /// Blurs and masks, and confirms it.
    async fn apply(&self) -> Result<Check, FrameError> {
        let page = self.session.page();
        let args = ApplyArgs {
            token: self.token,
            patterns: self.redaction.patterns(),
            selectors: self.redaction.selectors(),
        };
        let value = APPLY
            .run(self.session.probe_installed(), |js| {
                page.evaluate::<ApplyArgs<'_>, Value>(js, Some(&args))
            })
            .await
            .map_err(|e| self.browser(&e))?;
        Self::parse(value)
    }

    fn parse(value: Value) -> Result<Check, FrameError> {
        serde_json::from_value(value)
            .map_err(|_| FrameError::Browser("the blur check gave an unexpected result".into()))
    }

    /// The viewport as a JPEG: one `Page.captureScreenshot` on the page's CDP session.
    /// Playwright's screenshot sends the same command, but first hides the caret and waits
    /// for fonts in a second script world of every frame, which a fresh document must set
    /// up first: 10 to 45 ms more a frame, for nothing a blurred frame needs.
    async fn jpeg(&self, quality: u8, clip: Option<&Clip>) -> Result<Vec<u8>, FrameError> {
        let cdp = self
            .session
            .live_state()
            .input
            .lock()
            .await
            .session(self.session.context(), self.session.page())
            .await
            .map_err(|e| FrameError::Browser(format!("opening a CDP session: {e}")))?;
        let mut params = serde_json::json!({
            "format": "jpeg",
            "quality": quality,
            "captureBeyondViewport": false,
        });
        if let Some(clip) = clip {
            params["clip"] = serde_json::json!(clip);
        }
        let answer = cdp
            .send("Page.captureScreenshot", Some(params))
            .await
            .map_err(|e| self.browser(&e))?;
        let answer = crate::live_state::unwrap_result(answer);
        let data = answer
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| FrameError::Browser("the capture answered no image".into()))?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|_| FrameError::Browser("the capture answered no image".into()))
    }

    async fn take(&self, max_bytes: usize) -> Taken {
        let applied = match self.apply().await {
            Ok(check) => check,
            Err(error) => return Taken::Failed(error),
        };
        if applied.unconfirmed > 0 {
            return Taken::Unconfirmed(applied.unconfirmed());
        }
        let clip = applied.clip.filter(Clip::sane);
        let mut jpeg = None;
        for quality in QUALITIES {
            match self.jpeg(quality, clip.as_ref()).await {
                Ok(bytes) if bytes.len() <= max_bytes => {
                    jpeg = Some(bytes);
                    break;
                }
                Ok(_) => {}
                Err(error) => return Taken::Failed(error),
            }
        }
        let Some(jpeg) = jpeg else {
            return Taken::Failed(FrameError::TooLarge { cap: max_bytes });
        };
        match self.check(&FINISH).await {
            Ok(after) if after.unconfirmed > 0 => Taken::Unconfirmed(after.unconfirmed()),
            Ok(after) => Taken::Done(RedactedFrame {
                jpeg,
                url: after.url,
                blurred: after.fields,
                masked: after.masked,
                mark: applied.mark,
            }),
            Err(error) => Taken::Failed(error),
        }
    }
}

/// Where an element is in the top viewport (its frames' offsets added; `null` when a frame
/// on the way is another site's), less the visual viewport's offset: CSS pixels of a frame.
const BOX_JS: &str = "(el) => { const r = el.getBoundingClientRect(); let x = r.left; \
    let y = r.top; let w = el.ownerDocument.defaultView; \
    try { while (w !== w.top) { const f = w.frameElement; if (!f) return null; \
    const fr = f.getBoundingClientRect(); x += fr.left + f.clientLeft; \
    y += fr.top + f.clientTop; w = w.parent; } } catch (e) { return null; } \
    const vv = w.visualViewport; if (vv) { x -= vv.offsetLeft; y -= vv.offsetTop; } \
    return { x, y, width: r.width, height: r.height }; }";

/// `BOX_JS`'s answer.
#[derive(Deserialize)]
struct RawBox {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// What a blur check found.
#[derive(Deserialize)]
struct Check {
    fields: u32,
    /// Runs of sensitive text masked.
    #[serde(default)]
    masked: u32,
    unconfirmed: u32,
    /// Of `unconfirmed`, the runs of text whose mask did not hold.
    #[serde(default, rename = "maskUnconfirmed")]
    mask_unconfirmed: u32,
    /// Why the text could not be checked, when it could not.
    #[serde(default)]
    error: Option<String>,
    url: String,
    /// The viewport to capture (`viewportClip` in probe.js).
    #[serde(default)]
    clip: Option<Clip>,
    /// The page as the document's watch saw it with the blur on (`markOf` in probe.js).
    #[serde(default)]
    mark: Option<String>,
}

/// A capture clip: a region of the document in CSS pixels and the image's pixels per
/// device pixel (CDP's `Page.Viewport`).
#[derive(Deserialize, serde::Serialize)]
struct Clip {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    scale: f64,
}

impl Clip {
    /// Largest side a frame is captured at, in CSS pixels.
    const MAX_SIDE: f64 = 8192.0;

    /// Whether the page's answer is one to capture: the page's own script can redefine
    /// what it is read from, so an empty, huge, magnified or non-finite clip falls back to
    /// the browser's own viewport (no clip).
    fn sane(&self) -> bool {
        let finite = [self.x, self.y, self.width, self.height, self.scale]
            .iter()
            .all(|v| v.is_finite());
        finite
            && self.x >= 0.0
            && self.y >= 0.0
            && (1.0..=Self::MAX_SIDE).contains(&self.width)
            && (1.0..=Self::MAX_SIDE).contains(&self.height)
            && self.scale > 0.0
            && self.scale <= 1.0
    }
}

impl Check {
    fn unconfirmed(&self) -> FrameError {
        if let Some(error) = &self.error {
            return FrameError::MaskUnconfirmed(error.chars().take(200).collect());
        }
        if self.mask_unconfirmed > 0 && self.unconfirmed <= self.mask_unconfirmed {
            return FrameError::MaskUnconfirmed(format!(
                "{} of {} runs of sensitive text",
                self.mask_unconfirmed, self.masked
            ));
        }
        FrameError::BlurUnconfirmed {
            fields: self.fields,
            unconfirmed: self.unconfirmed,
        }
    }
}

/// `ElementFacts` as the script returns them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFacts {
    tag: String,
    input_type: Option<String>,
    role: Option<String>,
    name: String,
    in_form: bool,
    form_has_submit: bool,
    form_missing_required: bool,
    form_method: Option<String>,
    form_blocking_fields: u32,
    editable: bool,
    search: bool,
    disclosure: bool,
    autocomplete: Option<String>,
    field_hints: Vec<String>,
}

impl RawFacts {
    fn into_facts(self) -> ElementFacts {
        ElementFacts {
            tag: self.tag.to_lowercase(),
            input_type: self.input_type.map(|t| t.to_lowercase()),
            role: self.role.map(|r| r.to_lowercase()),
            name: self.name.chars().take(MAX_NAME).collect(),
            in_form: self.in_form,
            form_has_submit: self.form_has_submit,
            form_missing_required: self.form_missing_required,
            form_method: self.form_method.map(|m| m.to_lowercase()),
            form_blocking_fields: self.form_blocking_fields,
            editable: self.editable,
            search: self.search,
            disclosure: self.disclosure,
            autocomplete: self.autocomplete.map(|a| a.to_lowercase()),
            field_hints: self.field_hints,
        }
    }
}

/// What `focused()` in the script answers.
#[derive(Deserialize)]
#[serde(tag = "kind", content = "facts", rename_all = "camelCase")]
enum RawFocused {
    /// Only the document has the focus.
    None,
    /// The focus is in a frame the script cannot reach into.
    Opaque,
    /// The focused element.
    Facts(RawFacts),
}

/// An accessible name's cap, in characters.
const MAX_NAME: usize = 200;

/// The page text's cap, in characters.
const MAX_TEXT: usize = 20_000;

/// `PageSignals` as the script returns them, with the visible fields' card hints.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSignals {
    url: String,
    status: Option<u16>,
    text: String,
    password_fields: u32,
    captcha: bool,
    one_time_code: bool,
    file_inputs: u32,
    card_candidates: Vec<CardCandidate>,
    forms: Vec<RawForm>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CardCandidate {
    autocomplete: Option<String>,
    field_hints: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawForm {
    has_password: bool,
    submit_names: Vec<String>,
    fields: u32,
}

impl RawSignals {
    fn into_signals(self) -> PageSignals {
        // One rule for card fields: the commit guard's.
        let card_fields = self
            .card_candidates
            .into_iter()
            .filter(|c| {
                ElementFacts {
                    autocomplete: c.autocomplete.clone(),
                    field_hints: c.field_hints.clone(),
                    ..ElementFacts::default()
                }
                .is_card_field()
            })
            .count();
        PageSignals {
            url: self.url,
            status: self.status,
            text: self.text.chars().take(MAX_TEXT).collect(),
            password_fields: self.password_fields,
            captcha: self.captcha,
            one_time_code: self.one_time_code,
            file_inputs: self.file_inputs,
            card_fields: u32::try_from(card_fields).unwrap_or(u32::MAX),
            forms: self
                .forms
                .into_iter()
                .map(|f| FormFacts {
                    has_password: f.has_password,
                    submit_names: f.submit_names,
                    fields: f.fields,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_tokens_differ() {
        assert_ne!(frame_token(), frame_token());
    }

    #[test]
    fn card_fields_are_counted_by_the_guards_rule() {
        let raw = RawSignals {
            url: "https://shop.example/".into(),
            status: Some(200),
            text: "x".repeat(MAX_TEXT + 10),
            password_fields: 0,
            captcha: false,
            one_time_code: false,
            file_inputs: 0,
            card_candidates: vec![
                CardCandidate {
                    autocomplete: Some("cc-number".into()),
                    field_hints: vec![],
                },
                CardCandidate {
                    autocomplete: None,
                    field_hints: vec!["card-cvc".into()],
                },
                CardCandidate {
                    autocomplete: Some("email".into()),
                    field_hints: vec!["email".into()],
                },
            ],
            forms: vec![],
        };
        let signals = raw.into_signals();
        assert_eq!(signals.card_fields, 2);
        assert_eq!(signals.text.chars().count(), MAX_TEXT);
    }
}
