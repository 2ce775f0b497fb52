//! Mapping browser-library and HTTP errors to typed [`ProviderError`]s.

use abr_core::{ProviderError, ProviderErrorKind};
use playwright_rs::Error as PwError;

/// The command that installs everything the Playwright providers need.
pub const SETUP_HINT: &str = "run `driver/setup` from the ABR checkout (it installs Debian's \
    chromium and chromium-headless-shell and the npm-pinned playwright-core, and links \
    driver/dist), then set PLAYWRIGHT_DRIVER_PATH=<checkout>/driver/dist";

/// A Playwright error during `operation`, as a typed provider error.
pub(crate) fn from_playwright(operation: &str, error: PwError) -> ProviderError {
    let kind = match &error {
        PwError::ServerNotFound | PwError::DriverMisconfigured(_) | PwError::LaunchFailed(_) => {
            return ProviderError::new(
                ProviderErrorKind::Misconfigured,
                format!(
                    "{operation}: the Playwright driver is not available ({error}); {SETUP_HINT}"
                ),
            );
        }
        PwError::Timeout(_) | PwError::NavigationTimeout { .. } => ProviderErrorKind::Timeout,
        PwError::TargetClosed { .. }
        | PwError::ChannelClosed
        | PwError::ObjectNotFound(_)
        | PwError::TransportError(_) => ProviderErrorKind::Crashed,
        PwError::ProtocolError(m) | PwError::ServerError(m) if is_closed_target(m) => {
            ProviderErrorKind::Crashed
        }
        PwError::ConnectionFailed(_) | PwError::Io(_) => ProviderErrorKind::Unavailable,
        PwError::InvalidArgument(_) => ProviderErrorKind::Rejected,
        PwError::Context(_, inner) => return from_playwright(operation, clone_inner(inner)),
        _ => ProviderErrorKind::Other,
    };
    // The driver appends a JavaScript stack trace: keep the first line.
    let message = error.to_string();
    let first_line = message.lines().next().unwrap_or_default();
    ProviderError::new(kind, format!("{operation}: {}", redact_urls(first_line)))
}

/// The driver's way of saying the browser, context or page is gone.
fn is_closed_target(message: &str) -> bool {
    message.contains("TargetClosedError")
        || message.contains("has been closed")
        || message.contains("Browser closed")
        || message.contains("browser has disconnected")
}

/// Playwright errors are not `Clone`; keep the message and the kind that matters.
fn clone_inner(inner: &PwError) -> PwError {
    match inner {
        PwError::Timeout(m) => PwError::Timeout(m.clone()),
        PwError::ChannelClosed => PwError::ChannelClosed,
        other => PwError::ProtocolError(other.to_string()),
    }
}

/// Removes query strings from URLs in a message: CDP and live-view URLs carry tokens there
/// (`?jwt=`, `?apiKey=`).
pub(crate) fn redact_urls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match word.find("://").and_then(|_| word.find('?')) {
            Some(q) => {
                out.push_str(&word[..q]);
                out.push_str("?<redacted>");
            }
            None => out.push_str(word),
        }
    }
    out
}

/// An HTTP transport error talking to a remote provider, without its URL.
pub(crate) fn from_http(operation: &str, error: reqwest::Error) -> ProviderError {
    let kind = if error.is_timeout() {
        ProviderErrorKind::Timeout
    } else if error.is_connect() || error.is_request() {
        ProviderErrorKind::Unavailable
    } else if error.is_decode() {
        ProviderErrorKind::Rejected
    } else {
        ProviderErrorKind::Other
    };
    ProviderError::new(kind, format!("{operation}: {}", error.without_url()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_query_strings() {
        let m = redact_urls("connect ws://h:1/browser/cdp?jwt=secret failed");
        assert_eq!(m, "connect ws://h:1/browser/cdp?<redacted> failed");
    }

    #[test]
    fn a_missing_driver_names_the_setup_command() {
        let e = from_playwright("launch", PwError::ServerNotFound);
        assert_eq!(e.kind(), ProviderErrorKind::Misconfigured);
        assert!(e.message().contains("driver/setup"), "{}", e.message());
        assert!(!e.is_retryable());
    }

    #[test]
    fn a_closed_target_reported_by_the_driver_is_a_crash_without_its_stack() {
        let e = from_playwright(
            "export",
            PwError::ProtocolError(
                "Target page, context or browser has been closed\n    at Dispatcher (/x.js:1)"
                    .into(),
            ),
        );
        assert_eq!(e.kind(), ProviderErrorKind::Crashed);
        assert!(!e.message().contains("x.js"), "{}", e.message());
    }

    #[test]
    fn a_closed_target_is_a_crash() {
        let e = from_playwright("goto", PwError::ChannelClosed);
        assert_eq!(e.kind(), ProviderErrorKind::Crashed);
        assert!(e.is_retryable());
    }
}
