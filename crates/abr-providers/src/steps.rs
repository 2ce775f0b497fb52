//! [`StepRunner`] for [`BrowserSession`]: the browser mechanics of a step plan, on
//! Playwright, the same on every provider.
//!
//! - Selectors are Playwright's: a CSS string (any Playwright selector, in fact), `{text}` as
//!   `getByText` (case-insensitive substring, `internal:text="…"i`), `{role, name}` as
//!   `getByRole` (`internal:role=button[name="…"i]`). Actions resolve to the first *visible*
//!   match, reads to the first match, and every one waits for it within the step's deadline,
//!   as Playwright's own actions do.
//! - Every Playwright call gets what is left of the step's deadline; the whole step is also
//!   cut off a moment after it, so a browser that stops answering is a failure, not a hang.
//! - Failures are typed ([`StepFailureKind`]) with messages written here: never the driver's
//!   text, which can quote typed values, URLs or page content.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use abr_core::guard::Reach;
use abr_core::step_runner::{
    BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner, UploadFile,
};
use abr_protocol::{DomCheck, Extraction, Selector};
use async_trait::async_trait;
use playwright_rs::Error as PwError;
use playwright_rs::protocol::{
    ClickOptions, FilePayload, FillOptions, GotoOptions, Locator, PressOptions, ScreenshotOptions,
    ScreenshotType, WaitForOptions, WaitForState, WaitUntil,
};
use playwright_rs::server::channel_owner::ChannelOwner as _;
use serde_json::Value;

use crate::session::BrowserSession;

/// How long after its deadline a step is cut off, whatever the browser does: room for the
/// driver to report its own timeout (which says more) and for one short diagnostic call.
pub(crate) const MARGIN: Duration = Duration::from_secs(1);

/// Bound on a diagnostic call made after a failure (does the element exist at all?).
const PROBE: Duration = Duration::from_millis(500);

/// How often a condition Playwright cannot wait for (the URL) is polled.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// What an action on a visible element says when none matched.
const NO_VISIBLE: &str = "no visible element matched the selector";
/// What typing says when no visible field matched.
const NO_VISIBLE_FIELD: &str = "no visible field matched the selector";

/// How long a navigation waits for the page to settle: for a late error page to commit
/// after a refused navigation, or before going again after being interrupted by one.
const SETTLE: Duration = Duration::from_millis(500);

/// Attempts of a navigation that other navigations interrupted before it committed.
const NAVIGATION_ATTEMPTS: u32 = 3;

#[async_trait]
impl StepRunner for BrowserSession {
    async fn run(
        &self,
        action: &BrowserAction,
        timeout: Duration,
    ) -> Result<StepOutput, StepFailure> {
        let step = Step::new(self, timeout);
        match tokio::time::timeout(timeout + MARGIN, step.run(action)).await {
            Ok(result) => result,
            Err(_) => Err(step.overran(action)),
        }
    }

    async fn page_text(&self, timeout: Duration) -> Result<String, StepFailure> {
        let step = Step::new(self, timeout);
        match tokio::time::timeout(timeout + MARGIN, step.page_text()).await {
            Ok(result) => result,
            Err(_) => Err(step.gone_or(
                StepFailureKind::Rejected,
                "the page's text could not be read in time",
            )),
        }
    }
}

/// One step on a session, with its deadline (also what the page probe reads with).
pub(crate) struct Step<'a> {
    session: &'a BrowserSession,
    deadline: Instant,
    timeout: Duration,
}

/// What a Playwright error says happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The page, its context or its browser is gone.
    Closed,
    /// Playwright's own deadline passed.
    TimedOut,
    /// The document changed under an evaluation (a navigation): worth another try.
    Navigated,
    /// The element went away between finding it and using it: worth another try.
    Detached,
    /// Anything else, with the driver's first line (kept out of messages: see
    /// [`Cause::reason`]).
    Other(String),
}

impl Cause {
    pub(crate) fn of(session: &BrowserSession, error: &PwError) -> Self {
        if session.page_gone() {
            return Self::Closed;
        }
        Self::classify(error)
    }

    pub(crate) fn classify(error: &PwError) -> Self {
        match error {
            PwError::TargetClosed { .. }
            | PwError::ChannelClosed
            | PwError::ObjectNotFound(_)
            | PwError::TransportError(_) => Self::Closed,
            PwError::Timeout(_) | PwError::NavigationTimeout { .. } => Self::TimedOut,
            PwError::Context(_, inner) => Self::classify(inner),
            other => {
                let message = other.to_string();
                let first = message.lines().next().unwrap_or_default().to_owned();
                let lower = first.to_ascii_lowercase();
                if lower.contains("targetclosederror")
                    || lower.contains("has been closed")
                    || lower.contains("browser closed")
                    || lower.contains("browser has disconnected")
                    || lower.contains("target crashed")
                    || lower.contains("page crashed")
                {
                    Self::Closed
                } else if lower.contains("timeout") && lower.contains("exceeded") {
                    Self::TimedOut
                } else if lower.contains("execution context was destroyed")
                    || lower.contains("most likely because of a navigation")
                {
                    Self::Navigated
                } else if lower.contains("failed to find element")
                    || lower.contains("not attached to the dom")
                    || lower.contains("element is not attached")
                {
                    Self::Detached
                } else {
                    Self::Other(first)
                }
            }
        }
    }

    /// A fixed phrase for what the driver said: its words can quote typed values or page
    /// content, so only recognised causes are named.
    pub(crate) fn reason(&self) -> &'static str {
        let Self::Other(message) = self else {
            return match self {
                Self::Closed => "the page is closed",
                Self::TimedOut => "it did not finish in time",
                Self::Navigated => "the page navigated away",
                Self::Detached => "the element was removed from the page",
                Self::Other(_) => "the browser refused it",
            };
        };
        let m = message.to_ascii_lowercase();
        const KNOWN: [(&[&str], &str); 9] = [
            (
                &[
                    "is not a valid selector",
                    "unexpected token",
                    "unknown engine",
                    "malformed",
                    "selector cannot be empty",
                    "parsing css selector",
                ],
                "the selector is not valid",
            ),
            (
                &["not an <input>", "not an input", "[contenteditable]"],
                "the element is not a text field",
            ),
            (&["cannot be filled"], "the field does not take typed text"),
            (&["not a <select>"], "the element is not a <select>"),
            (
                &["did not find some options"],
                "no option has this value or label",
            ),
            (
                &["non-multiple file input"],
                "the file input takes one file only",
            ),
            (
                &["not an htmlinputelement", "not a file input", "type=file"],
                "the element is not a file input",
            ),
            (
                &["strict mode violation"],
                "the selector matched several elements",
            ),
            (&["net::err_"], "the network request failed"),
        ];
        KNOWN
            .iter()
            .find(|(needles, _)| needles.iter().any(|n| m.contains(n)))
            .map_or("the browser refused it", |(_, phrase)| phrase)
    }
}

impl<'a> Step<'a> {
    /// The session the step runs on.
    pub(crate) fn session(&self) -> &'a BrowserSession {
        self.session
    }

    pub(crate) fn new(session: &'a BrowserSession, timeout: Duration) -> Self {
        Self {
            session,
            deadline: Instant::now() + timeout,
            timeout,
        }
    }

    /// What is left of the deadline, in Playwright's milliseconds. Never 0: Playwright reads
    /// 0 as "no timeout".
    pub(crate) fn remaining_ms(&self) -> f64 {
        let left = self.deadline.saturating_duration_since(Instant::now());
        (left.as_secs_f64() * 1000.0).max(1.0)
    }

    fn timeout_ms(&self) -> u128 {
        self.timeout.as_millis()
    }

    fn failure(&self, kind: StepFailureKind, message: impl Into<String>) -> StepFailure {
        StepFailure::new(kind, message)
    }

    /// `Crashed` when the page is gone, else a failure of `kind`.
    pub(crate) fn gone_or(&self, kind: StepFailureKind, message: &str) -> StepFailure {
        if self.session.page_gone() {
            self.closed()
        } else {
            self.failure(kind, message)
        }
    }

    pub(crate) fn closed(&self) -> StepFailure {
        self.failure(StepFailureKind::Crashed, "the page is closed")
    }

    pub(crate) fn rejected(&self, message: impl Into<String>) -> StepFailure {
        self.failure(StepFailureKind::Rejected, message)
    }

    fn not_found(&self, what: &str) -> StepFailure {
        self.failure(
            StepFailureKind::NotFound,
            format!("{what} within {} ms", self.timeout_ms()),
        )
    }

    /// `doing` failed with `error`: closed → `Crashed`, Playwright's timeout → `timed_out`,
    /// anything else → `Rejected` with a fixed phrase.
    fn fail(&self, error: &PwError, doing: &str, timed_out: StepFailure) -> StepFailure {
        match Cause::of(self.session, error) {
            Cause::Closed => self.closed(),
            Cause::TimedOut => timed_out,
            cause => self.rejected(format!("{doing}: {}", cause.reason())),
        }
    }

    /// The whole step ran past its deadline and margin.
    fn overran(&self, action: &BrowserAction) -> StepFailure {
        let kind = match action {
            BrowserAction::Navigate { .. } => StepFailureKind::Navigation,
            BrowserAction::Wait { .. } => StepFailureKind::NotFound,
            _ => StepFailureKind::Rejected,
        };
        self.gone_or(
            kind,
            &format!(
                "the {} step did not finish within {} ms",
                action.kind(),
                self.timeout_ms()
            ),
        )
    }

    async fn run(&self, action: &BrowserAction) -> Result<StepOutput, StepFailure> {
        if self.session.page_gone() {
            return Err(self.closed());
        }
        match action {
            BrowserAction::Navigate { url } => self.navigate(url.as_str()).await,
            BrowserAction::Click { selector } => self.click(selector).await,
            BrowserAction::Type {
                selector,
                value,
                submit,
            } => self.type_text(selector, value.expose(), *submit).await,
            BrowserAction::Select { selector, value } => {
                self.select(selector, value.expose()).await
            }
            BrowserAction::Wait {
                selector,
                url,
                text,
            } => {
                self.wait(selector.as_ref(), url.as_deref(), text.as_deref())
                    .await
            }
            BrowserAction::Extract { what } => self.extract(what).await.map(StepOutput::Extracted),
            BrowserAction::Screenshot => self.screenshot().await,
            BrowserAction::Assert { check } => self.assert(check).await,
            BrowserAction::Upload { selector, files } => self.upload(selector, files).await,
            BrowserAction::Press { selector, key } => self.press(selector.as_ref(), key).await,
            BrowserAction::Scroll { down } => self.scroll(*down).await,
            BrowserAction::Back => self.back().await,
        }
    }

    async fn press(
        &self,
        selector: Option<&Selector>,
        key: &str,
    ) -> Result<StepOutput, StepFailure> {
        let Some(selector) = selector else {
            return match self.session.page().keyboard().press(key, None).await {
                Ok(()) => Ok(StepOutput::Done),
                Err(e) => Err(match Cause::of(self.session, &e) {
                    Cause::Closed => self.closed(),
                    cause => self.rejected(format!("pressing a key: {}", cause.reason())),
                }),
            };
        };
        // Playwright's action waits for a visible match itself (no separate wait first: one
        // round trip); a timeout with nothing matching is `NotFound`.
        let target = self.visible(selector)?;
        let options = PressOptions::builder().timeout(self.remaining_ms()).build();
        match target.press(key, options).await {
            Ok(()) => Ok(StepOutput::Done),
            Err(e) => Err(self
                .act_failed(&target, &e, "pressing a key", "focusable", NO_VISIBLE)
                .await),
        }
    }

    async fn scroll(&self, down: bool) -> Result<StepOutput, StepFailure> {
        let js = if down {
            "() => { window.scrollBy(0, Math.round(window.innerHeight * 0.9)); return null; }"
        } else {
            "() => { window.scrollBy(0, -Math.round(window.innerHeight * 0.9)); return null; }"
        };
        self.evaluate_page(js, "scrolling")
            .await
            .map(|_| StepOutput::Done)
    }

    async fn back(&self) -> Result<StepOutput, StepFailure> {
        let left = Duration::from_secs_f64(self.remaining_ms() / 1000.0);
        let options = GotoOptions::new().timeout(left).wait_until(WaitUntil::Load);
        match self.session.page().go_back(options).await {
            Ok(Some(_)) => Ok(StepOutput::Done),
            Ok(None) => Err(self.failure(
                StepFailureKind::Navigation,
                "there is no page to go back to",
            )),
            Err(e) => Err(match Cause::of(self.session, &e) {
                Cause::Closed => self.closed(),
                cause => self.failure(
                    StepFailureKind::Navigation,
                    format!("going back: {}", cause.reason()),
                ),
            }),
        }
    }

    // -----------------------------------------------------------------------------------
    // Locating

    fn locator(&self, selector: String) -> Locator {
        self.session.page().locator(selector)
    }

    /// The `reach` match of `selector` ([`reached`]).
    fn target(&self, selector: &Selector, reach: Reach) -> Result<Locator, StepFailure> {
        let target = reached(selector, reach).map_err(|m| self.rejected(m))?;
        Ok(self.locator(target))
    }

    /// The first visible match of `selector`: what a person would act on.
    fn visible(&self, selector: &Selector) -> Result<Locator, StepFailure> {
        self.target(selector, Reach::FirstVisible)
    }

    /// The first match of `selector`, visible or not: what a read (and an upload) looks at.
    fn first(&self, selector: &Selector) -> Result<Locator, StepFailure> {
        self.target(selector, Reach::First)
    }

    /// Waits until `locator` reaches `state`; `NotFound` when it does not in time.
    async fn appear(
        &self,
        locator: &Locator,
        state: WaitForState,
        what: &str,
    ) -> Result<(), StepFailure> {
        let options = WaitForOptions::builder()
            .state(state)
            .timeout(self.remaining_ms())
            .build();
        locator
            .wait_for(options)
            .await
            .map_err(|e| self.fail(&e, "waiting for the element", self.not_found(what)))
    }

    /// After an action on `locator` ran out of time: `NotFound` (`missing`) when nothing
    /// matches, else the element was there but never became usable.
    async fn unusable(&self, locator: &Locator, how: &str, missing: &str) -> StepFailure {
        let count = tokio::time::timeout(PROBE, locator.count()).await;
        match count {
            Ok(Ok(0)) => self.not_found(missing),
            _ => self.gone_or(
                StepFailureKind::Rejected,
                &format!(
                    "the element did not become {how} within {} ms",
                    self.timeout_ms()
                ),
            ),
        }
    }

    // -----------------------------------------------------------------------------------
    // Actions

    async fn navigate(&self, url: &str) -> Result<StepOutput, StepFailure> {
        let page = self.session.page();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let left = Duration::from_secs_f64(self.remaining_ms() / 1000.0);
            let options = GotoOptions::new().timeout(left).wait_until(WaitUntil::Load);
            let error = match page.goto(url, options).await {
                Ok(None) => return Ok(StepOutput::Done),
                Ok(Some(response)) => {
                    let status = response.status();
                    if (200..300).contains(&status) {
                        return Ok(StepOutput::Done);
                    }
                    return Err(self.failure(
                        StepFailureKind::Navigation,
                        format!("the page answered HTTP {status}"),
                    ));
                }
                Err(e) => e,
            };
            let cause = Cause::of(self.session, &error);
            let message = error.to_string();
            // The error page of an earlier refused navigation can commit late and interrupt
            // this one (and the browser's own reload of it, the next): nothing of this one
            // loaded, so go again once things settled.
            if message.contains("interrupted by another navigation")
                && attempt < NAVIGATION_ATTEMPTS
                && self.deadline > Instant::now()
            {
                let left = self.deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(SETTLE.min(left)).await;
                continue;
            }
            return Err(match cause {
                Cause::Closed => self.closed(),
                Cause::TimedOut => self.failure(
                    StepFailureKind::Navigation,
                    format!("the page did not load within {} ms", self.timeout_ms()),
                ),
                _ => {
                    let code = network_error(&message);
                    if code.is_some() {
                        self.settle_on_error_page().await;
                    }
                    self.failure(
                        StepFailureKind::Navigation,
                        match code {
                            Some(code) => format!("the page did not load ({code})"),
                            None => "the page did not load".to_owned(),
                        },
                    )
                }
            });
        }
    }

    /// After a navigation failed with a network error, Chromium commits its error page a
    /// moment later, which would interrupt the next step's navigation: wait for it (briefly,
    /// within the deadline) so the next step starts on a settled page. The page's URL turns
    /// to the error page before its document is in place (an evaluation in between finds
    /// its context destroyed, and a navigation started then is interrupted), so the wait is
    /// for the error document itself to answer.
    async fn settle_on_error_page(&self) {
        let until = self.deadline.min(Instant::now() + SETTLE);
        while Instant::now() < until && !self.session.page_gone() {
            if self.session.page().url().starts_with("chrome-error://") {
                let settled = self
                    .session
                    .page()
                    .evaluate::<(), Value>(ERROR_PAGE_SETTLED_JS, None)
                    .await;
                if matches!(settled, Ok(Value::Bool(true))) {
                    return;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn click(&self, selector: &Selector) -> Result<StepOutput, StepFailure> {
        // Playwright's action waits for a visible match itself (no separate wait first: one
        // round trip); a timeout with nothing matching is `NotFound`.
        let target = self.visible(selector)?;
        let options = ClickOptions::builder().timeout(self.remaining_ms()).build();
        match target.click(options).await {
            Ok(()) => Ok(StepOutput::Done),
            Err(e) => Err(self
                .act_failed(&target, &e, "clicking", "clickable", NO_VISIBLE)
                .await),
        }
    }

    async fn type_text(
        &self,
        selector: &Selector,
        value: &str,
        submit: bool,
    ) -> Result<StepOutput, StepFailure> {
        // Playwright's action waits for a visible match itself (no separate wait first: one
        // round trip); a timeout with nothing matching is `NotFound`.
        let target = self.visible(selector)?;
        let options = FillOptions::builder().timeout(self.remaining_ms()).build();
        if let Err(e) = target.fill(value, options).await {
            return Err(self
                .act_failed(&target, &e, "typing", "editable", NO_VISIBLE_FIELD)
                .await);
        }
        if submit {
            let options = PressOptions::builder().timeout(self.remaining_ms()).build();
            if let Err(e) = target.press("Enter", options).await {
                return Err(self
                    .act_failed(&target, &e, "pressing Enter", "focusable", NO_VISIBLE_FIELD)
                    .await);
            }
        }
        Ok(StepOutput::Done)
    }

    async fn select(&self, selector: &Selector, value: &str) -> Result<StepOutput, StepFailure> {
        // One call, as Playwright's own `selectOption("x")`: the first option (in the
        // document's order) whose value or label is `value`, waiting for a visible <select>
        // and for such an option. playwright-rs offers value, label and index but not this
        // protocol option (`valueOrLabel`), so it is sent on the frame's channel; reading
        // which one matches first cost a second round trip (4-5 ms).
        let target = reached(selector, Reach::FirstVisible).map_err(|m| self.rejected(m))?;
        let params = serde_json::json!({
            "selector": target,
            "strict": true,
            "options": [{ "valueOrLabel": value }],
            "timeout": self.remaining_ms(),
        });
        let frame = self
            .session
            .page()
            .main_frame()
            .await
            .map_err(|e| self.fail(&e, "choosing the option", self.closed()))?;
        let Err(error) = frame
            .channel()
            .send::<_, Value>("selectOption", params)
            .await
        else {
            return Ok(StepOutput::Done);
        };
        Err(match Cause::of(self.session, &error) {
            Cause::Closed => self.closed(),
            Cause::TimedOut => {
                let count = tokio::time::timeout(PROBE, self.locator(target).count()).await;
                match count {
                    Ok(Ok(0)) => self.not_found("no visible <select> matched the selector"),
                    _ => self.gone_or(
                        StepFailureKind::Rejected,
                        &format!(
                            "no option with this value or label became selectable within {} ms",
                            self.timeout_ms()
                        ),
                    ),
                }
            }
            Cause::Other(first) if first.contains("not a <select>") => {
                self.rejected("the element is not a <select>")
            }
            cause => self.rejected(format!("choosing the option: {}", cause.reason())),
        })
    }

    /// An action on `target` failed with `error`.
    async fn act_failed(
        &self,
        target: &Locator,
        error: &PwError,
        doing: &str,
        how: &str,
        missing: &str,
    ) -> StepFailure {
        match Cause::of(self.session, error) {
            Cause::Closed => self.closed(),
            Cause::TimedOut => self.unusable(target, how, missing).await,
            cause => self.rejected(format!("{doing}: {}", cause.reason())),
        }
    }

    async fn wait(
        &self,
        selector: Option<&Selector>,
        url: Option<&str>,
        text: Option<&str>,
    ) -> Result<StepOutput, StepFailure> {
        if selector.is_none() && url.is_none() && text.is_none() {
            return Err(self.rejected("a wait step needs a selector, a URL or a text"));
        }
        if let Some(selector) = selector {
            let target = self.visible(selector)?;
            self.appear(
                &target,
                WaitForState::Visible,
                "no visible element matched the selector",
            )
            .await?;
        }
        if let Some(part) = url {
            self.wait_for_url(part).await?;
        }
        if let Some(text) = text {
            let target = self.locator(format!("{} >> visible=true >> nth=0", text_selector(text)));
            self.appear(&target, WaitForState::Visible, "the text did not appear")
                .await?;
        }
        Ok(StepOutput::Done)
    }

    /// Polls the page's URL (Playwright tracks it from navigation events) for `part`.
    async fn wait_for_url(&self, part: &str) -> Result<(), StepFailure> {
        loop {
            if self.session.page_gone() {
                return Err(self.closed());
            }
            if self.session.page().url().contains(part) {
                return Ok(());
            }
            if Instant::now() >= self.deadline {
                return Err(self.not_found("the URL did not match"));
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(POLL.min(left)).await;
        }
    }

    async fn screenshot(&self) -> Result<StepOutput, StepFailure> {
        let options = ScreenshotOptions::builder()
            .screenshot_type(ScreenshotType::Png)
            .timeout(self.remaining_ms())
            .build();
        let page = self.session.page();
        match page.screenshot(options).await {
            Ok(bytes) => Ok(StepOutput::Screenshot(bytes)),
            Err(e) => {
                let timed_out = self.rejected(format!(
                    "the screenshot was not taken within {} ms",
                    self.timeout_ms()
                ));
                Err(self.fail(&e, "taking the screenshot", timed_out))
            }
        }
    }

    /// Waits (within the deadline) for the check to hold, as Playwright's assertions do: a
    /// visible element matching the selector, a visible text, or a visible element matching
    /// the selector that contains the text. Not holding in time is `Checked(false)`.
    async fn assert(&self, check: &DomCheck) -> Result<StepOutput, StepFailure> {
        let base = match (&check.selector, &check.text) {
            (None, None) => {
                return Err(self.rejected("an assert step needs a selector or a text"));
            }
            (Some(selector), None) => format!(
                "{} >> visible=true",
                playwright_selector(selector).map_err(|m| self.rejected(m))?
            ),
            (None, Some(text)) => format!("{} >> visible=true", text_selector(text)),
            (Some(selector), Some(text)) => format!(
                "{} >> visible=true >> internal:has-text={}",
                playwright_selector(selector).map_err(|m| self.rejected(m))?,
                quoted_insensitive(text)
            ),
        };
        let target = self.locator(format!("{base} >> nth=0"));
        let options = WaitForOptions::builder()
            .state(WaitForState::Attached)
            .timeout(self.remaining_ms())
            .build();
        match target.wait_for(options).await {
            Ok(()) => Ok(StepOutput::Checked(true)),
            Err(e) => match Cause::of(self.session, &e) {
                Cause::TimedOut => Ok(StepOutput::Checked(false)),
                Cause::Closed => Err(self.closed()),
                cause => Err(self.rejected(format!("checking the page: {}", cause.reason()))),
            },
        }
    }

    async fn upload(
        &self,
        selector: &Selector,
        files: &[UploadFile],
    ) -> Result<StepOutput, StepFailure> {
        // File inputs are often hidden behind a styled button: attached is enough.
        let target = self.first(selector)?;
        self.appear(
            &target,
            WaitForState::Attached,
            "no file input matched the selector",
        )
        .await?;
        let payloads: Vec<FilePayload> = files
            .iter()
            .map(|f| FilePayload::new(f.name.clone(), f.mime_type.clone(), f.bytes.clone()))
            .collect();
        match target
            .set_input_files_payload_multiple(&payloads, None)
            .await
        {
            Ok(()) => Ok(StepOutput::Done),
            Err(e) => {
                let timed_out = self.rejected(format!(
                    "the files were not set within {} ms",
                    self.timeout_ms()
                ));
                Err(self.fail(&e, "setting the files", timed_out))
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Reading

    async fn extract(&self, what: &Extraction) -> Result<Value, StepFailure> {
        match what {
            Extraction::Text { selector } => {
                let value = self
                    .read_match(selector, Reach::First, TEXT_JS, None)
                    .await?;
                Ok(value)
            }
            Extraction::Attribute {
                selector,
                attribute,
            } => {
                let value = self
                    .read_match(
                        selector,
                        Reach::First,
                        ATTRIBUTE_JS,
                        Some(Value::from(attribute.as_str())),
                    )
                    .await?;
                Ok(value)
            }
            Extraction::Table { selector } => {
                let value = self
                    .read_match(selector, Reach::First, TABLE_JS, None)
                    .await?;
                if value.is_null() {
                    return Err(self.rejected("the element is not a table and holds none"));
                }
                Ok(value)
            }
            Extraction::List { selector, fields } => self.read_list(selector, fields).await,
        }
    }

    /// Evaluates `js` on the `reach` match of `selector` (with `arg`), waiting for a match
    /// only when there is none yet, and again if the element or the document changed in
    /// between, until the deadline.
    pub(crate) async fn read_match(
        &self,
        selector: &Selector,
        reach: Reach,
        js: &str,
        arg: Option<Value>,
    ) -> Result<Value, StepFailure> {
        let target = self.target(selector, reach)?;
        let missing = match reach {
            Reach::FirstVisible => NO_VISIBLE,
            Reach::First => "no element matched the selector",
        };
        self.read_at_once(&target, js, arg, WaitForState::Attached, missing)
            .await
    }

    /// Evaluates `js` on the `reach` match of `selector` once, without waiting: `None` when
    /// nothing matches now (or the read failed in any way).
    pub(crate) async fn read_now(
        &self,
        selector: &Selector,
        reach: Reach,
        js: &str,
    ) -> Option<Value> {
        let target = self.target(selector, reach).ok()?;
        target.evaluate::<Value, Value>(js, None).await.ok()
    }

    /// Evaluates `js` on `target` (with `arg`), waiting for it to reach `state` only when it
    /// did not match yet (`missing` then names what never came), and again if the element or
    /// the document changed in between, until the deadline.
    async fn read_at_once(
        &self,
        target: &Locator,
        js: &str,
        arg: Option<Value>,
        state: WaitForState,
        missing: &str,
    ) -> Result<Value, StepFailure> {
        // The element is usually there already: read it at once (one round trip, resolved
        // by the same selector engine), and wait for it only when it was not.
        let mut waited = false;
        loop {
            if waited {
                self.appear(target, state, missing).await?;
            }
            match target.evaluate::<Value, Value>(js, arg.clone()).await {
                Ok(value) => return Ok(value),
                Err(e) => match Cause::of(self.session, &e) {
                    Cause::Closed => return Err(self.closed()),
                    Cause::Navigated | Cause::Detached if !waited => waited = true,
                    Cause::Navigated | Cause::Detached if Instant::now() < self.deadline => {
                        tokio::time::sleep(POLL).await;
                    }
                    Cause::TimedOut | Cause::Navigated | Cause::Detached => {
                        return Err(self.not_found("no element could be read"));
                    }
                    cause => {
                        return Err(
                            self.rejected(format!("reading the element: {}", cause.reason()))
                        );
                    }
                },
            }
        }
    }

    /// Every match of `selector` (after the first appeared), each as an object of `fields`.
    async fn read_list(
        &self,
        selector: &Selector,
        fields: &BTreeMap<String, String>,
    ) -> Result<Value, StepFailure> {
        let base = playwright_selector(selector).map_err(|m| self.rejected(m))?;
        let first = self.locator(format!("{base} >> nth=0"));
        let all = self.locator(base);
        let fields = serde_json::to_value(fields)
            .map_err(|_| self.rejected("the list's fields could not be encoded"))?;
        loop {
            self.appear(
                &first,
                WaitForState::Attached,
                "no element matched the selector",
            )
            .await?;
            match all
                .evaluate_all::<Value, Value>(LIST_JS, Some(fields.clone()))
                .await
            {
                Ok(Value::Object(result)) => {
                    if let Some(field) = result.get("badField").and_then(Value::as_str) {
                        return Err(self.rejected(format!(
                            "the selector of the field {field:?} is not valid CSS"
                        )));
                    }
                    return Ok(result.get("items").cloned().unwrap_or(Value::Array(vec![])));
                }
                Ok(_) => return Err(self.rejected("reading the list: unexpected result")),
                Err(e) => match Cause::of(self.session, &e) {
                    Cause::Closed => return Err(self.closed()),
                    Cause::Navigated | Cause::Detached if Instant::now() < self.deadline => {
                        tokio::time::sleep(POLL).await;
                    }
                    Cause::TimedOut | Cause::Navigated | Cause::Detached => {
                        return Err(self.not_found("no element could be read"));
                    }
                    cause => {
                        return Err(self.rejected(format!("reading the list: {}", cause.reason())));
                    }
                },
            }
        }
    }

    /// `document.body.innerText`, again if a navigation replaced the document meanwhile.
    async fn page_text(&self) -> Result<String, StepFailure> {
        let text = self
            .evaluate_page(
                "() => document.body ? document.body.innerText : ''",
                "reading the page's text",
            )
            .await?;
        Ok(match text {
            Value::String(text) => text,
            _ => String::new(),
        })
    }

    /// Evaluates `js` (a function of no argument) in the page's main frame, again if a
    /// navigation replaced the document meanwhile; `doing` names it in a failure.
    pub(crate) async fn evaluate_page(&self, js: &str, doing: &str) -> Result<Value, StepFailure> {
        self.evaluate_page_with::<()>(js, None, doing).await
    }

    /// As [`Self::evaluate_page`], for a function of one argument.
    pub(crate) async fn evaluate_page_with<A: serde::Serialize>(
        &self,
        js: &str,
        arg: Option<&A>,
        doing: &str,
    ) -> Result<Value, StepFailure> {
        let page = self.session.page();
        loop {
            if self.session.page_gone() {
                return Err(self.closed());
            }
            match page.evaluate::<A, Value>(js, arg).await {
                Ok(value) => return Ok(value),
                Err(e) => match Cause::of(self.session, &e) {
                    Cause::Closed => return Err(self.closed()),
                    Cause::Navigated if Instant::now() < self.deadline => {
                        tokio::time::sleep(POLL).await;
                    }
                    cause => return Err(self.rejected(format!("{doing}: {}", cause.reason()))),
                },
            }
        }
    }
}

/// The element's visible text (as `innerText`), trimmed.
/// True once Chromium's error page is the loaded document.
const ERROR_PAGE_SETTLED_JS: &str =
    "() => document.readyState === 'complete' && location.href.startsWith('chrome-error://')";

const TEXT_JS: &str = "(el) => (el.innerText ?? el.textContent ?? '').trim()";

/// The attribute's value, or `null` when the element has no such attribute.
const ATTRIBUTE_JS: &str = "(el, name) => el.getAttribute(name)";

/// The table (the element, or the first table inside it) as rows: objects keyed by the
/// header cells when there is a header (a `<thead>`, or a first row of `<th>` only), else
/// arrays of cell texts. Unnamed header cells become `columnN`; a repeated name gets `_N`.
/// `null` when there is no table.
const TABLE_JS: &str = r"(el) => {
  const table = el instanceof HTMLTableElement ? el : el.querySelector('table');
  if (!table) return null;
  const text = (c) => (c.innerText ?? c.textContent ?? '').trim();
  const rows = Array.from(table.rows).filter((r) => r.cells.length > 0);
  let header = null;
  let body = rows;
  const head = table.tHead;
  if (head && head.rows.length > 0) {
    header = head.rows[head.rows.length - 1];
    body = rows.filter((r) => r.parentElement !== head);
  } else if (rows.length > 0 && Array.from(rows[0].cells).every((c) => c.tagName === 'TH')) {
    header = rows[0];
    body = rows.slice(1);
  }
  if (!header) return body.map((r) => Array.from(r.cells).map(text));
  const names = [];
  Array.from(header.cells).forEach((c, i) => {
    let name = text(c) || `column${i + 1}`;
    if (names.includes(name)) name = `${name}_${i + 1}`;
    names.push(name);
  });
  return body.map((r) => {
    const row = {};
    Array.from(r.cells).forEach((c, i) => {
      row[i < names.length ? names[i] : `column${i + 1}`] = text(c);
    });
    return row;
  });
}";

/// Each item as an object: field → the text of the item's first descendant matching the
/// field's CSS selector (the item itself for an empty selector), `null` when none does.
const LIST_JS: &str = r"(items, fields) => {
  const text = (e) => (e.innerText ?? e.textContent ?? '').trim();
  const out = [];
  for (const item of items) {
    const row = {};
    for (const [name, css] of Object.entries(fields)) {
      let el;
      try {
        el = css.trim() === '' ? item : item.querySelector(css);
      } catch (e) {
        return { badField: name };
      }
      row[name] = el ? text(el) : null;
    }
    out.push(row);
  }
  return { items: out };
}";

/// The Playwright selector of the element an action on `selector` acts on, its `reach`
/// match: the one place both the action and the guard's read before it take it from, so the
/// element judged is the element acted on.
pub(crate) fn reached(selector: &Selector, reach: Reach) -> Result<String, String> {
    let base = playwright_selector(selector)?;
    Ok(match reach {
        Reach::FirstVisible => format!("{base} >> visible=true >> nth=0"),
        Reach::First => format!("{base} >> nth=0"),
    })
}

/// The Playwright selector for `selector`, or why there is none.
pub(crate) fn playwright_selector(selector: &Selector) -> Result<String, String> {
    match selector {
        Selector::Css(css) => css_selector(css),
        Selector::Explicit(spec) => {
            let set = [spec.css.is_some(), spec.text.is_some(), spec.role.is_some()]
                .into_iter()
                .filter(|s| *s)
                .count();
            if set != 1 {
                return Err("a selector needs exactly one of css, text or role".to_owned());
            }
            if spec.name.is_some() && spec.role.is_none() {
                return Err("a selector's name goes with a role".to_owned());
            }
            if let Some(css) = &spec.css {
                return css_selector(css);
            }
            if let Some(text) = &spec.text {
                return Ok(text_selector(text));
            }
            match &spec.role {
                Some(role) => role_selector(role, spec.name.as_deref()),
                None => Err("a selector needs exactly one of css, text or role".to_owned()),
            }
        }
    }
}

fn css_selector(css: &str) -> Result<String, String> {
    let css = css.trim();
    if css.is_empty() {
        return Err("the selector is empty".to_owned());
    }
    Ok(css.to_owned())
}

/// `getByText(text)`: case-insensitive substring, whitespace normalised.
fn text_selector(text: &str) -> String {
    format!("internal:text={}", quoted_insensitive(text))
}

/// `getByRole(role, { name })`; the name matches as a case-insensitive substring.
fn role_selector(role: &str, name: Option<&str>) -> Result<String, String> {
    let role = role.trim().to_ascii_lowercase();
    if role.is_empty() || !role.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err("the selector's role is not an ARIA role name".to_owned());
    }
    Ok(match name {
        Some(name) => {
            let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
            format!("internal:role={role}[name=\"{escaped}\"i]")
        }
        None => format!("internal:role={role}"),
    })
}

/// `text` as a JSON string with Playwright's case-insensitive flag.
fn quoted_insensitive(text: &str) -> String {
    format!("{}i", Value::from(text))
}

/// The browser's network error code in a navigation error (`net::ERR_…`): a fixed name,
/// safe to report, unlike the URL around it.
fn network_error(message: &str) -> Option<&str> {
    let start = message.find("net::ERR_")?;
    let code = &message[start..];
    let end = code
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(code.len());
    Some(&code[..end])
}

#[cfg(test)]
mod tests {
    use abr_protocol::SelectorSpec;

    use super::*;

    fn explicit(
        css: Option<&str>,
        text: Option<&str>,
        role: Option<&str>,
        name: Option<&str>,
    ) -> Selector {
        Selector::Explicit(SelectorSpec {
            css: css.map(str::to_owned),
            text: text.map(str::to_owned),
            role: role.map(str::to_owned),
            name: name.map(str::to_owned),
        })
    }

    #[test]
    fn selectors_become_playwright_selectors() {
        assert_eq!(
            playwright_selector(&Selector::Css(" #submit ".into())),
            Ok("#submit".to_owned())
        );
        assert_eq!(
            playwright_selector(&explicit(Some("a.b"), None, None, None)),
            Ok("a.b".to_owned())
        );
        assert_eq!(
            playwright_selector(&explicit(None, Some("Say \"hi\""), None, None)),
            Ok(r#"internal:text="Say \"hi\""i"#.to_owned())
        );
        assert_eq!(
            playwright_selector(&explicit(None, None, Some("Button"), Some(r#"Sub"mit\"#))),
            Ok(r#"internal:role=button[name="Sub\"mit\\"i]"#.to_owned())
        );
        assert_eq!(
            playwright_selector(&explicit(None, None, Some("link"), None)),
            Ok("internal:role=link".to_owned())
        );
        // An action and the guard's read before it reach the same match.
        let submit = Selector::Css("#submit".into());
        assert_eq!(
            reached(&submit, Reach::FirstVisible),
            Ok("#submit >> visible=true >> nth=0".to_owned())
        );
        assert_eq!(
            reached(&submit, Reach::First),
            Ok("#submit >> nth=0".to_owned())
        );
    }

    #[test]
    fn ambiguous_or_empty_selectors_are_refused() {
        for bad in [
            Selector::Css("  ".into()),
            explicit(None, None, None, None),
            explicit(Some("a"), Some("b"), None, None),
            explicit(None, Some("x"), None, Some("name")),
            explicit(None, None, Some("button]"), None),
            explicit(None, None, Some(""), None),
        ] {
            assert!(playwright_selector(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_the_network_error_code_of_a_navigation_error_is_kept() {
        assert_eq!(
            network_error(
                "Protocol error: page.goto: net::ERR_TUNNEL_CONNECTION_FAILED at http://10.0.0.1/?token=s3cret"
            ),
            Some("net::ERR_TUNNEL_CONNECTION_FAILED")
        );
        assert_eq!(network_error("no code here"), None);
    }

    #[test]
    fn driver_messages_are_classified_and_never_repeated() {
        let closed = PwError::ProtocolError(
            "Target page, context or browser has been closed\n at x.js".into(),
        );
        assert_eq!(Cause::classify(&closed), Cause::Closed);
        let timeout = PwError::Timeout("locator.click: Timeout 1000ms exceeded.".into());
        assert_eq!(Cause::classify(&timeout), Cause::TimedOut);
        let navigated = PwError::ProtocolError(
            "Execution context was destroyed, most likely because of a navigation".into(),
        );
        assert_eq!(Cause::classify(&navigated), Cause::Navigated);
        let secret = PwError::ProtocolError(
            "Error: Element is not an <input>, <textarea> or [contenteditable] element: hunter2"
                .into(),
        );
        let cause = Cause::classify(&secret);
        assert_eq!(cause.reason(), "the element is not a text field");
        let unknown = PwError::ProtocolError("something with hunter2 in it".into());
        assert!(!Cause::classify(&unknown).reason().contains("hunter2"));
    }
}
