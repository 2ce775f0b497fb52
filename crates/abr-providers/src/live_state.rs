//! What a browser session keeps for its live view ([`LiveState`]): the input CDP session
//! (created on first use, recreated once detached, behind a lock that orders inputs), the
//! pointer buttons held, and whether the page is gone. Below the session, which holds it;
//! `live.rs` drives it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abr_core::{ProviderError, ProviderErrorKind};
use playwright_rs::protocol::{BrowserContext, CDPSession, Page};
use tokio::sync::watch;

use crate::error::from_playwright;

/// Bound on every browser call.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Live-view state shared by every clone of a `BrowserSession`.
pub(crate) struct LiveState {
    /// The input CDP session and the pointer buttons held; the lock orders inputs.
    pub(crate) input: tokio::sync::Mutex<InputState>,
    /// Set once the page closed or crashed.
    pub(crate) gone: watch::Sender<bool>,
    /// Whether the page events that set `gone` are hooked.
    hooked: AtomicBool,
}

impl Default for LiveState {
    fn default() -> Self {
        Self {
            input: tokio::sync::Mutex::new(InputState::default()),
            gone: watch::Sender::new(false),
            hooked: AtomicBool::new(false),
        }
    }
}

impl std::fmt::Debug for LiveState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveState")
            .field("gone", &*self.gone.borrow())
            .finish_non_exhaustive()
    }
}

impl LiveState {
    /// Hooks the page's `close` and `crash` events (once per session).
    pub(crate) async fn hook(self: &Arc<Self>, page: &Page) {
        if self.hooked.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(self);
        let on_gone = move || {
            let weak = weak.clone();
            async move {
                if let Some(state) = weak.upgrade() {
                    state.gone.send_replace(true);
                }
                Ok(())
            }
        };
        // Both only register a handler; they cannot fail in practice.
        if page.on_close(on_gone.clone()).await.is_err() || page.on_crash(on_gone).await.is_err() {
            tracing::debug!("could not watch the page for close and crash");
        }
        if page.is_closed() {
            self.gone.send_replace(true);
        }
    }
}

/// The cached input CDP session and what the pointer holds.
#[derive(Default)]
pub(crate) struct InputState {
    session: Option<InputSession>,
    /// Pointer buttons held (CDP `buttons` bitmask).
    pub(crate) buttons: u32,
}

struct InputSession {
    cdp: CDPSession,
    detached: Arc<AtomicBool>,
}

impl InputState {
    /// The input session, created (or recreated once detached) on demand.
    pub(crate) async fn session(
        &mut self,
        context: &BrowserContext,
        page: &Page,
    ) -> Result<CDPSession, ProviderError> {
        if let Some(session) = &self.session
            && !session.detached.load(Ordering::SeqCst)
        {
            return Ok(session.cdp.clone());
        }
        self.session = None;
        let cdp = bounded(
            "live view: opening an input session",
            context.new_cdp_session(page),
        )
        .await?;
        let detached = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&detached);
        cdp.on_close(move || {
            let flag = Arc::clone(&flag);
            async move {
                flag.store(true, Ordering::SeqCst);
                Ok(())
            }
        });
        self.session = Some(InputSession {
            cdp: cdp.clone(),
            detached,
        });
        Ok(cdp)
    }

    /// Forgets the input session (it failed); the next input opens a new one.
    pub(crate) fn forget(&mut self) {
        if let Some(old) = self.session.take() {
            detach_in_background(old.cdp);
        }
    }
}

pub(crate) fn timeout_error(operation: &str, after: Duration) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Timeout,
        format!(
            "{operation}: the browser did not answer within {}s",
            after.as_secs()
        ),
    )
}

/// A Playwright call bounded by [`CALL_TIMEOUT`].
pub(crate) async fn bounded<T>(
    operation: &str,
    call: impl Future<Output = playwright_rs::Result<T>>,
) -> Result<T, ProviderError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(from_playwright(operation, e)),
        Err(_) => Err(timeout_error(operation, CALL_TIMEOUT)),
    }
}

/// Playwright wraps a CDP answer as `{"result": ...}`.
pub(crate) fn unwrap_result(answer: serde_json::Value) -> serde_json::Value {
    match answer {
        serde_json::Value::Object(mut obj) if obj.len() == 1 && obj.contains_key("result") => {
            obj.remove("result").unwrap_or_default()
        }
        other => other,
    }
}

/// Detaches `cdp` on the current runtime, if there is one; bounded.
pub(crate) fn detach_in_background(cdp: CDPSession) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = tokio::time::timeout(CALL_TIMEOUT, cdp.detach()).await;
        });
    }
}
