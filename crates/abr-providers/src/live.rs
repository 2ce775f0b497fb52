//! [`LiveSurface`] for [`BrowserSession`], on the Chrome DevTools Protocol.
//!
//! - Frames: one CDP session per feed runs `Page.startScreencast`. A feed buffers at most
//!   one frame (the newest) and acknowledges frames only when its consumer takes one, so the
//!   viewer's pace paces the browser. Acknowledgements and the final detach go through a
//!   small task per feed, so `next_frame` never awaits a browser call after it took a frame
//!   (it is cancel-safe) and a dropped feed still detaches.
//! - Input: one CDP session per browser session, created on first use and recreated when it
//!   detached, behind an async mutex so that inputs apply in order and a key's down and up
//!   events never interleave with another input.
//! - The page being gone (closed, crashed, browser disconnected) is seen through Playwright's
//!   page events, the CDP session's `close` event, and a bounded liveness probe while idle.
//!
//! Nothing here logs typed text, URLs or frame bytes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_core::{
    LiveFeed, LiveFrame, LiveInput, LiveKey, LiveSurface, MAX_LIVE_TEXT, Modifiers, PageLocation,
    PointerAction, PointerButton, ProviderError, ProviderErrorKind,
};
use async_trait::async_trait;
use base64::Engine as _;
use playwright_rs::protocol::{CDPSession, Page};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::BrowserSession;
use crate::error::from_playwright;
use crate::live_state::{CALL_TIMEOUT, bounded, detach_in_background, timeout_error};

/// Bound on waiting for earlier inputs of the same session.
const INPUT_QUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle feed checks that its page is still there. Closes and crashes are seen
/// at once through events; this catches a browser or driver that went away silently.
const LIVENESS_INTERVAL: Duration = Duration::from_secs(1);
/// Bound on one liveness probe: a busy browser is not a gone one.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Screencast JPEG quality.
const JPEG_QUALITY: u8 = 70;
/// Screencast size when the page has no fixed viewport.
const DEFAULT_SIZE: (u32, u32) = (1280, 800);

impl BrowserSession {
    /// Whether the page is gone: closed, or crashed.
    pub(crate) fn page_gone(&self) -> bool {
        self.page().is_closed() || *self.live_state().gone.borrow()
    }

    /// Watches the page for close and crash (once), then fails if it is gone already.
    async fn ensure_page(&self, operation: &str) -> Result<(), ProviderError> {
        if !self.page().is_closed() {
            self.live_state().hook(self.page()).await;
        }
        if self.page_gone() {
            return Err(gone_error(operation));
        }
        Ok(())
    }
}

/// The page is gone.
fn gone_error(operation: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Crashed,
        format!("{operation}: the page is closed"),
    )
}

/// One CDP command, bounded by `limit`; the answer without Playwright's `result` wrapper.
async fn send_within(
    cdp: &CDPSession,
    method: &'static str,
    params: Value,
    limit: Duration,
) -> Result<Value, ProviderError> {
    let operation = format!("live view: {method}");
    match tokio::time::timeout(limit, cdp.send(method, Some(params))).await {
        Ok(Ok(answer)) => Ok(crate::live_state::unwrap_result(answer)),
        Ok(Err(e)) => Err(from_playwright(&operation, e)),
        Err(_) => Err(timeout_error(&operation, limit)),
    }
}

async fn send(
    cdp: &CDPSession,
    method: &'static str,
    params: Value,
) -> Result<Value, ProviderError> {
    send_within(cdp, method, params, CALL_TIMEOUT).await
}

/// Detaches a CDP session on drop unless defused: `watch` cancelled or failed midway.
struct DetachGuard(Option<CDPSession>);

impl DetachGuard {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for DetachGuard {
    fn drop(&mut self) {
        if let Some(cdp) = self.0.take() {
            detach_in_background(cdp);
        }
    }
}

#[async_trait]
impl LiveSurface for BrowserSession {
    async fn watch(&self) -> Result<Box<dyn LiveFeed>, ProviderError> {
        const OPERATION: &str = "live view: starting a screencast";
        self.ensure_page(OPERATION).await?;
        let page = self.page();
        let live = self.live_state();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(ProviderError::new(
                ProviderErrorKind::Misconfigured,
                format!("{OPERATION}: needs a tokio runtime"),
            ));
        };
        let gone = live.gone.subscribe();
        let cdp = bounded(OPERATION, self.context().new_cdp_session(page)).await?;
        let guard = DetachGuard(Some(cdp.clone()));
        let shared = Arc::new(FeedShared::default());
        let on_frame = Arc::clone(&shared);
        cdp.on("Page.screencastFrame", move |params: Value| {
            let shared = Arc::clone(&on_frame);
            async move {
                shared.offer(&params);
                Ok(())
            }
        });
        let on_close = Arc::clone(&shared);
        cdp.on_close(move || {
            let shared = Arc::clone(&on_close);
            async move {
                shared.detached();
                Ok(())
            }
        });
        let (width, height) = page
            .viewport_size()
            .map_or(DEFAULT_SIZE, |v| (v.width, v.height));
        send(
            &cdp,
            "Page.startScreencast",
            json!({
                "format": "jpeg",
                "quality": JPEG_QUALITY,
                "maxWidth": width,
                "maxHeight": height,
                "everyNthFrame": 1,
            }),
        )
        .await?;
        guard.defuse();
        let (commands, inbox) = mpsc::unbounded_channel();
        runtime.spawn(feed_worker(cdp.clone(), Arc::clone(&shared), inbox));
        Ok(Box::new(CdpFeed {
            page: page.clone(),
            cdp,
            shared,
            gone,
            commands,
            ended: false,
            fallback_size: (width, height),
        }))
    }

    async fn input(&self, input: LiveInput) -> Result<(), ProviderError> {
        const OPERATION: &str = "live view: input";
        self.ensure_page(OPERATION).await?;
        let live = self.live_state();
        let Ok(mut state) = tokio::time::timeout(INPUT_QUEUE_TIMEOUT, live.input.lock()).await
        else {
            return Err(timeout_error(
                "live view: waiting for earlier input",
                INPUT_QUEUE_TIMEOUT,
            ));
        };
        let mut retried = false;
        loop {
            let cdp = match state.session(self.context(), self.page()).await {
                Ok(cdp) => cdp,
                Err(_) if self.page_gone() => return Err(gone_error(OPERATION)),
                Err(e) => return Err(e),
            };
            let buttons = state.buttons;
            match apply(&cdp, &input, buttons).await {
                Ok(buttons) => {
                    state.buttons = buttons;
                    return Ok(());
                }
                Err(failure) => {
                    let crashed = failure.error.kind() == ProviderErrorKind::Crashed;
                    if crashed {
                        state.forget();
                    }
                    // A session that detached under us (not the page): once more on a new one,
                    // if nothing of this input reached the page yet.
                    if crashed && !failure.applied && !retried && !self.page_gone() {
                        retried = true;
                        continue;
                    }
                    if self.page_gone() {
                        return Err(gone_error(OPERATION));
                    }
                    return Err(failure.error);
                }
            }
        }
    }

    async fn location(&self) -> Result<PageLocation, ProviderError> {
        const OPERATION: &str = "live view: reading the page's location";
        self.ensure_page(OPERATION).await?;
        let page = self.page();
        let title = bounded(OPERATION, page.title()).await.map_err(|e| {
            if self.page_gone() {
                gone_error(OPERATION)
            } else {
                e
            }
        })?;
        Ok(PageLocation {
            url: page.url(),
            title,
        })
    }
}

/// One CDP command: method and parameters.
type Call = (&'static str, Value);

/// An input that failed, and whether part of it already reached the page.
struct Failure {
    applied: bool,
    error: ProviderError,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Self {
            applied: false,
            error,
        }
    }
}

/// Performs `input` on `cdp`; the pointer buttons held afterwards.
async fn apply(cdp: &CDPSession, input: &LiveInput, buttons: u32) -> Result<u32, Failure> {
    let (calls, buttons) = match input {
        LiveInput::Back => (history_step(cdp, -1).await?.into_iter().collect(), buttons),
        LiveInput::Forward => (history_step(cdp, 1).await?.into_iter().collect(), buttons),
        other => plan(other, buttons)?,
    };
    for (i, (method, params)) in calls.into_iter().enumerate() {
        if let Err(error) = send(cdp, method, params).await {
            return Err(Failure {
                applied: i > 0,
                error,
            });
        }
    }
    Ok(buttons)
}

/// The history entry `step` away from the current one, as a call; `None` at either end.
async fn history_step(cdp: &CDPSession, step: i64) -> Result<Option<Call>, ProviderError> {
    let history = send(cdp, "Page.getNavigationHistory", json!({})).await?;
    let current = history
        .get("currentIndex")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    let Some(target) = current
        .checked_add(step)
        .and_then(|i| usize::try_from(i).ok())
    else {
        return Ok(None);
    };
    let entry_id = history
        .get("entries")
        .and_then(Value::as_array)
        .and_then(|entries| entries.get(target))
        .and_then(|entry| entry.get("id"))
        .and_then(Value::as_i64);
    Ok(entry_id.map(|id| ("Page.navigateToHistoryEntry", json!({ "entryId": id }))))
}

/// The CDP calls one input (other than Back and Forward) turns into, and the pointer buttons
/// held once they ran.
fn plan(input: &LiveInput, buttons: u32) -> Result<(Vec<Call>, u32), ProviderError> {
    let rejected = |why: &str| {
        ProviderError::new(
            ProviderErrorKind::Rejected,
            format!("live view: input refused: {why}"),
        )
    };
    let point = |x: f64, y: f64| {
        if x.is_finite() && y.is_finite() {
            Ok((x.max(0.0), y.max(0.0)))
        } else {
            Err(rejected("coordinates are not finite numbers"))
        }
    };
    Ok(match input {
        LiveInput::Pointer {
            action,
            x,
            y,
            button,
            click_count,
            modifiers,
        } => {
            let (x, y) = point(*x, *y)?;
            let bit = button_bit(*button);
            let (kind, held, clicks) = match action {
                PointerAction::Move => ("mouseMoved", buttons, 0),
                PointerAction::Down => ("mousePressed", buttons | bit, (*click_count).max(1)),
                PointerAction::Up => ("mouseReleased", buttons & !bit, (*click_count).max(1)),
            };
            let event = json!({
                "type": kind,
                "x": x,
                "y": y,
                "button": button_name(*button),
                "buttons": held,
                "clickCount": clicks,
                "modifiers": modifier_bits(*modifiers),
            });
            (vec![("Input.dispatchMouseEvent", event)], held)
        }
        LiveInput::Wheel {
            x,
            y,
            delta_x,
            delta_y,
        } => {
            let (x, y) = point(*x, *y)?;
            if !delta_x.is_finite() || !delta_y.is_finite() {
                return Err(rejected("scroll deltas are not finite numbers"));
            }
            let event = json!({
                "type": "mouseWheel",
                "x": x,
                "y": y,
                "button": "none",
                "buttons": buttons,
                "deltaX": delta_x,
                "deltaY": delta_y,
            });
            (vec![("Input.dispatchMouseEvent", event)], buttons)
        }
        LiveInput::Key { key, modifiers } => (
            key_events(*key, *modifiers)
                .into_iter()
                .map(|event| ("Input.dispatchKeyEvent", event))
                .collect(),
            buttons,
        ),
        LiveInput::Text { text } => {
            if text.len() > MAX_LIVE_TEXT {
                return Err(rejected("text longer than the limit"));
            }
            if text.is_empty() {
                (Vec::new(), buttons)
            } else {
                (vec![("Input.insertText", json!({ "text": text }))], buttons)
            }
        }
        LiveInput::Navigate { url } => {
            // The core checked it already; a provider never opens anything but a web page.
            if !matches!(url.scheme(), "http" | "https") {
                return Err(rejected("only http and https pages can be opened"));
            }
            (
                vec![("Page.navigate", json!({ "url": url.as_str() }))],
                buttons,
            )
        }
        LiveInput::Reload => (vec![("Page.reload", json!({}))], buttons),
        // Resolved against the history by `apply`.
        LiveInput::Back | LiveInput::Forward => (Vec::new(), buttons),
    })
}

fn button_name(button: PointerButton) -> &'static str {
    match button {
        PointerButton::None => "none",
        PointerButton::Left => "left",
        PointerButton::Middle => "middle",
        PointerButton::Right => "right",
    }
}

/// The button's bit in CDP's `buttons` mask.
fn button_bit(button: PointerButton) -> u32 {
    match button {
        PointerButton::None => 0,
        PointerButton::Left => 1,
        PointerButton::Right => 2,
        PointerButton::Middle => 4,
    }
}

/// CDP's modifier bitmask: Alt=1, Ctrl=2, Meta=4, Shift=8.
fn modifier_bits(m: Modifiers) -> u32 {
    u32::from(m.alt) | u32::from(m.ctrl) << 1 | u32::from(m.meta) << 2 | u32::from(m.shift) << 3
}

/// A named key's DOM `code`, Windows virtual key code and the text it types.
fn named_key(key: LiveKey) -> Option<(&'static str, u32, Option<&'static str>)> {
    Some(match key {
        LiveKey::Enter => ("Enter", 13, Some("\r")),
        LiveKey::Tab => ("Tab", 9, None),
        LiveKey::Backspace => ("Backspace", 8, None),
        LiveKey::Delete => ("Delete", 46, None),
        LiveKey::Escape => ("Escape", 27, None),
        LiveKey::ArrowLeft => ("ArrowLeft", 37, None),
        LiveKey::ArrowUp => ("ArrowUp", 38, None),
        LiveKey::ArrowRight => ("ArrowRight", 39, None),
        LiveKey::ArrowDown => ("ArrowDown", 40, None),
        LiveKey::Home => ("Home", 36, None),
        LiveKey::End => ("End", 35, None),
        LiveKey::PageUp => ("PageUp", 33, None),
        LiveKey::PageDown => ("PageDown", 34, None),
        LiveKey::Insert => ("Insert", 45, None),
        LiveKey::Shortcut(_) => return None,
    })
}

/// The editing command a shortcut stands for, so that Ctrl (Linux, Windows) and Cmd (macOS)
/// shortcuts edit the same way whatever the person's system and the browser's.
fn editing_command(c: char, modifiers: Modifiers) -> Option<&'static str> {
    if !(modifiers.ctrl || modifiers.meta) || modifiers.alt {
        return None;
    }
    Some(match (c, modifiers.shift) {
        ('a', false) => "selectAll",
        ('c', false) => "copy",
        ('x', false) => "cut",
        ('v', false) => "paste",
        ('z', false) => "undo",
        ('z', true) | ('y', false) => "redo",
        _ => return None,
    })
}

/// The key-down and key-up events of one key press.
fn key_events(key: LiveKey, modifiers: Modifiers) -> Vec<Value> {
    let bits = modifier_bits(modifiers);
    let (dom_key, code, vk, text, commands) = match key {
        LiveKey::Shortcut(c) => {
            let c = c.to_ascii_lowercase();
            let (code, vk) = if c.is_ascii_digit() {
                (format!("Digit{c}"), u32::from(c))
            } else {
                let upper = c.to_ascii_uppercase();
                (format!("Key{upper}"), u32::from(upper))
            };
            let dom_key = if modifiers.shift {
                c.to_ascii_uppercase().to_string()
            } else {
                c.to_string()
            };
            // Without a command modifier the key types its character.
            let text = (!modifiers.any_command()).then(|| dom_key.clone());
            let commands: Vec<&str> = editing_command(c, modifiers).into_iter().collect();
            (dom_key, code, vk, text, commands)
        }
        named => {
            let Some((code, vk, text)) = named_key(named) else {
                return Vec::new();
            };
            (
                code.to_owned(),
                code.to_owned(),
                vk,
                text.map(str::to_owned),
                Vec::new(),
            )
        }
    };
    let mut down = json!({
        "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
        "modifiers": bits,
        "key": dom_key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
    });
    if let Some(text) = &text {
        down["text"] = json!(text);
        down["unmodifiedText"] = json!(text);
    }
    if !commands.is_empty() {
        down["commands"] = json!(commands);
    }
    let up = json!({
        "type": "keyUp",
        "modifiers": bits,
        "key": dom_key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
    });
    vec![down, up]
}

/// A frame as CDP sent it, not yet decoded.
struct RawFrame {
    data: String,
    width: Option<u32>,
    height: Option<u32>,
    /// When the browser captured it, if it said.
    timestamp: Option<f64>,
}

/// What a feed's CDP event handlers and its consumer share.
#[derive(Default)]
struct FeedShared {
    slot: Mutex<Slot>,
    wake: Notify,
}

#[derive(Default)]
struct Slot {
    /// The newest frame not taken yet.
    latest: Option<RawFrame>,
    /// Screencast session ids of the frames received and not acknowledged yet.
    unacked: Vec<Value>,
    /// The CDP session detached.
    detached: bool,
}

impl FeedShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A `Page.screencastFrame` event: keep the newest frame, remember to acknowledge it.
    fn offer(&self, params: &Value) {
        let size = |name: &str| {
            params
                .pointer(&format!("/metadata/{name}"))
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 1.0 && *v <= f64::from(u16::MAX))
                // In range by the filter above.
                .map(|v| v.round() as u32)
        };
        let frame = RawFrame {
            data: params
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            width: size("deviceWidth"),
            height: size("deviceHeight"),
            timestamp: params
                .pointer("/metadata/timestamp")
                .and_then(Value::as_f64),
        };
        {
            let mut slot = self.lock();
            if let Some(id) = params.get("sessionId") {
                slot.unacked.push(id.clone());
            }
            // Events are handled on separate tasks: keep the newest if two cross.
            let newer = match (frame.timestamp, slot.latest.as_ref().map(|f| f.timestamp)) {
                (Some(new), Some(Some(held))) => new >= held,
                _ => true,
            };
            if newer {
                slot.latest = Some(frame);
            }
        }
        self.wake.notify_waiters();
    }

    /// The CDP session closed (the page closed, or it was detached).
    fn detached(&self) {
        self.lock().detached = true;
        self.wake.notify_waiters();
    }
}

/// What a feed asks its worker task to do.
enum FeedCommand {
    /// Acknowledge one frame of this screencast session.
    Ack(Value),
    /// Stop the screencast and detach, then say so.
    Close(oneshot::Sender<()>),
}

/// Sends a feed's acknowledgements in order; stops the screencast and detaches when the feed
/// closes or is dropped.
async fn feed_worker(
    cdp: CDPSession,
    shared: Arc<FeedShared>,
    mut inbox: mpsc::UnboundedReceiver<FeedCommand>,
) {
    let mut done = None;
    while let Some(command) = inbox.recv().await {
        match command {
            FeedCommand::Ack(id) => {
                if shared.lock().detached {
                    continue;
                }
                if let Err(e) =
                    send(&cdp, "Page.screencastFrameAck", json!({ "sessionId": id })).await
                {
                    tracing::debug!(error = %e, "acknowledging a screencast frame failed");
                }
            }
            FeedCommand::Close(reply) => {
                done = Some(reply);
                break;
            }
        }
    }
    if !shared.lock().detached {
        let _ = send(&cdp, "Page.stopScreencast", json!({})).await;
        let _ = tokio::time::timeout(CALL_TIMEOUT, cdp.detach()).await;
    }
    if let Some(reply) = done {
        let _ = reply.send(());
    }
}

/// One viewer's screencast.
struct CdpFeed {
    page: Page,
    /// The feed's own CDP session (for liveness probes).
    cdp: CDPSession,
    shared: Arc<FeedShared>,
    gone: watch::Receiver<bool>,
    commands: mpsc::UnboundedSender<FeedCommand>,
    /// `None` was returned once: it is returned from now on.
    ended: bool,
    /// Frame size when the metadata lacks it.
    fallback_size: (u32, u32),
}

impl std::fmt::Debug for CdpFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CdpFeed")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// What a look at the feed found.
enum Look {
    Frame(LiveFrame),
    Gone,
    Wait,
}

impl CdpFeed {
    /// Takes the buffered frame, if any, and hands its acknowledgements to the worker. No
    /// await: a cancelled `next_frame` either took nothing or finished.
    fn look(&mut self) -> Look {
        if *self.gone.borrow() || self.page.is_closed() {
            return Look::Gone;
        }
        loop {
            let (frame, acks) = {
                let mut slot = self.shared.lock();
                if slot.detached {
                    return Look::Gone;
                }
                let Some(frame) = slot.latest.take() else {
                    return Look::Wait;
                };
                (frame, std::mem::take(&mut slot.unacked))
            };
            for id in acks {
                // The worker only stops when the feed closes: it cannot be gone here.
                let _ = self.commands.send(FeedCommand::Ack(id));
            }
            match base64::engine::general_purpose::STANDARD.decode(frame.data.as_bytes()) {
                Ok(jpeg) if !jpeg.is_empty() => {
                    return Look::Frame(LiveFrame {
                        jpeg,
                        width: frame.width.unwrap_or(self.fallback_size.0),
                        height: frame.height.unwrap_or(self.fallback_size.1),
                    });
                }
                // Acknowledged above; wait for the next one.
                _ => tracing::debug!("skipped an undecodable screencast frame"),
            }
        }
    }

    /// Whether the page still answers; a slow answer counts as alive.
    async fn alive(&self) -> bool {
        if self.page.is_closed() {
            return false;
        }
        match send_within(
            &self.cdp,
            "Page.getNavigationHistory",
            json!({}),
            PROBE_TIMEOUT,
        )
        .await
        {
            Ok(_) => true,
            Err(e) => e.kind() != ProviderErrorKind::Crashed,
        }
    }
}

#[async_trait]
impl LiveFeed for CdpFeed {
    async fn next_frame(&mut self) -> Option<LiveFrame> {
        while !self.ended {
            let shared = Arc::clone(&self.shared);
            let woken = shared.wake.notified();
            tokio::pin!(woken);
            // Registered before looking, so a frame offered in between wakes us.
            woken.as_mut().enable();
            match self.look() {
                Look::Frame(frame) => return Some(frame),
                Look::Gone => break,
                Look::Wait => {}
            }
            tokio::select! {
                () = &mut woken => {}
                changed = self.gone.changed() => {
                    // An error: every handle of the session was dropped, so was its page.
                    if changed.is_err() {
                        break;
                    }
                }
                () = tokio::time::sleep(LIVENESS_INTERVAL) => {
                    if !self.alive().await {
                        break;
                    }
                }
            }
        }
        self.ended = true;
        None
    }

    async fn close(self: Box<Self>) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(FeedCommand::Close(reply)).is_ok() {
            // The worker's calls are bounded too; past this it finishes in the background.
            let _ = tokio::time::timeout(CALL_TIMEOUT, done).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        reason = "test code"
    )]

    use super::*;

    const CTRL: Modifiers = Modifiers {
        alt: false,
        ctrl: true,
        meta: false,
        shift: false,
    };

    #[test]
    fn modifiers_map_to_the_cdp_bitmask() {
        assert_eq!(modifier_bits(Modifiers::NONE), 0);
        let all = Modifiers {
            alt: true,
            ctrl: true,
            meta: true,
            shift: true,
        };
        assert_eq!(modifier_bits(all), 15);
        assert_eq!(modifier_bits(CTRL), 2);
    }

    #[test]
    fn enter_types_a_carriage_return_and_other_keys_type_nothing() {
        let enter = key_events(LiveKey::Enter, Modifiers::NONE);
        assert_eq!(enter.len(), 2);
        assert_eq!(enter[0]["type"], "keyDown");
        assert_eq!(enter[0]["text"], "\r");
        assert_eq!(enter[0]["windowsVirtualKeyCode"], 13);
        assert_eq!(enter[1]["type"], "keyUp");
        for (key, vk) in [
            (LiveKey::PageUp, 33),
            (LiveKey::PageDown, 34),
            (LiveKey::Insert, 45),
            (LiveKey::Delete, 46),
            (LiveKey::Tab, 9),
        ] {
            let events = key_events(key, Modifiers::NONE);
            assert_eq!(events[0]["type"], "rawKeyDown", "{key:?}");
            assert_eq!(events[0]["windowsVirtualKeyCode"], vk, "{key:?}");
            assert_eq!(events[0]["key"], key.dom_name());
            assert!(events[0].get("text").is_none());
        }
    }

    #[test]
    fn shortcuts_carry_their_editing_command() {
        let select_all = key_events(LiveKey::Shortcut('a'), CTRL);
        assert_eq!(select_all[0]["commands"], json!(["selectAll"]));
        assert_eq!(select_all[0]["code"], "KeyA");
        assert_eq!(select_all[0]["windowsVirtualKeyCode"], 65);
        assert_eq!(select_all[0]["modifiers"], 2);
        assert!(select_all[0].get("text").is_none());
        let cmd = Modifiers {
            meta: true,
            ..Modifiers::NONE
        };
        assert_eq!(
            key_events(LiveKey::Shortcut('v'), cmd)[0]["commands"],
            json!(["paste"])
        );
        let redo = Modifiers {
            shift: true,
            ..CTRL
        };
        assert_eq!(
            key_events(LiveKey::Shortcut('z'), redo)[0]["commands"],
            json!(["redo"])
        );
        let digit = key_events(LiveKey::Shortcut('7'), CTRL);
        assert_eq!(digit[0]["code"], "Digit7");
        assert!(digit[0].get("commands").is_none());
        let alt = Modifiers { alt: true, ..CTRL };
        assert!(
            key_events(LiveKey::Shortcut('a'), alt)[0]
                .get("commands")
                .is_none()
        );
    }

    #[test]
    fn pointer_buttons_are_tracked_across_press_and_release() {
        let press = LiveInput::Pointer {
            action: PointerAction::Down,
            x: 10.0,
            y: 20.0,
            button: PointerButton::Left,
            click_count: 1,
            modifiers: Modifiers::NONE,
        };
        let (calls, held) = plan(&press, 0).unwrap();
        assert_eq!(held, 1);
        assert_eq!(calls[0].1["type"], "mousePressed");
        assert_eq!(calls[0].1["buttons"], 1);
        let release = LiveInput::Pointer {
            action: PointerAction::Up,
            x: 10.0,
            y: 20.0,
            button: PointerButton::Left,
            click_count: 1,
            modifiers: Modifiers::NONE,
        };
        let (calls, held) = plan(&release, held).unwrap();
        assert_eq!(held, 0);
        assert_eq!(calls[0].1["type"], "mouseReleased");
        let nan = LiveInput::Wheel {
            x: f64::NAN,
            y: 0.0,
            delta_x: 0.0,
            delta_y: 1.0,
        };
        assert_eq!(
            plan(&nan, 0).unwrap_err().kind(),
            ProviderErrorKind::Rejected
        );
    }

    #[test]
    fn text_is_bounded_and_navigation_is_web_only() {
        let long = LiveInput::Text {
            text: "x".repeat(MAX_LIVE_TEXT + 1),
        };
        assert_eq!(
            plan(&long, 0).unwrap_err().kind(),
            ProviderErrorKind::Rejected
        );
        let empty = LiveInput::Text {
            text: String::new(),
        };
        assert!(plan(&empty, 0).unwrap().0.is_empty());
        let file = LiveInput::Navigate {
            url: url::Url::parse("file:///etc/passwd").unwrap(),
        };
        assert_eq!(
            plan(&file, 0).unwrap_err().kind(),
            ProviderErrorKind::Rejected
        );
    }

    #[test]
    fn frames_are_kept_newest_first_and_all_acknowledged() {
        let shared = FeedShared::default();
        let frame = |ts: f64| json!({ "data": "/9j/", "sessionId": 1, "metadata": { "deviceWidth": 1280.0, "deviceHeight": 800.0, "timestamp": ts } });
        shared.offer(&frame(2.0));
        shared.offer(&frame(1.0));
        let slot = shared.lock();
        assert_eq!(slot.unacked.len(), 2);
        let latest = slot.latest.as_ref().unwrap();
        assert_eq!(latest.timestamp, Some(2.0));
        assert_eq!((latest.width, latest.height), (Some(1280), Some(800)));
    }
}
