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

/// Path segments after which providers put a credential (`/browser/live/<token>`,
/// `/devtools/browser/<id>`, `/sessions/<id>`, ...): the segment that follows is redacted.
const CREDENTIAL_SEGMENTS: [&str; 7] = [
    "live", "browser", "browsers", "sessions", "session", "token", "cdp",
];

/// Removes what carries credentials from URLs in a message: query strings (`?jwt=`,
/// `?apiKey=`), user names and passwords (`wss://user:key@host`), and the path segment after
/// a segment providers put tokens or session ids behind (`/browser/live/<token>`).
pub(crate) fn redact_urls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match word.find("://") {
            Some(scheme_end) => out.push_str(&redact_url(word, scheme_end + 3)),
            None => out.push_str(word),
        }
    }
    out
}

/// `word` with a URL whose authority starts at `authority`, redacted.
fn redact_url(word: &str, authority: usize) -> String {
    let (head, rest) = word.split_at(authority);
    let (rest, query) = match rest.find(['?', '#']) {
        Some(q) => (&rest[..q], Some("?<redacted>")),
        None => (rest, None),
    };
    let (authority_part, path) = match rest.find('/') {
        Some(p) => rest.split_at(p),
        None => (rest, ""),
    };
    let host = match authority_part.rfind('@') {
        Some(at) => format!("<redacted>@{}", &authority_part[at + 1..]),
        None => authority_part.to_owned(),
    };
    let mut redact_next = false;
    let path: Vec<String> = path
        .split('/')
        .map(|segment| {
            if CREDENTIAL_SEGMENTS.contains(&segment.to_ascii_lowercase().as_str()) {
                redact_next = true;
                segment.to_owned()
            } else if std::mem::take(&mut redact_next) && !segment.is_empty() {
                "<redacted>".to_owned()
            } else {
                segment.to_owned()
            }
        })
        .collect();
    format!(
        "{head}{host}{}{}",
        path.join("/"),
        query.unwrap_or_default()
    )
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
        let m = redact_urls("connect ws://h:1/cdp?jwt=secret failed");
        assert_eq!(m, "connect ws://h:1/cdp?<redacted> failed");
    }

    #[test]
    fn urls_lose_userinfo_and_credential_path_segments() {
        for (given, expected) in [
            (
                "attach wss://user:s3cret@connect.example/x failed",
                "attach wss://<redacted>@connect.example/x failed",
            ),
            (
                "viewer https://api.onkernel.com/browser/live/T0KEN-abc?readOnly=1 gone",
                "viewer https://api.onkernel.com/browser/live/<redacted>?<redacted> gone",
            ),
            (
                "ws://127.0.0.1:9222/devtools/browser/8f1e-uuid closed",
                "ws://127.0.0.1:9222/devtools/browser/<redacted> closed",
            ),
            (
                "POST http://steel:3000/v1/sessions/5c1d/release: HTTP 500",
                "POST http://steel:3000/v1/sessions/<redacted>/release: HTTP 500",
            ),
            ("no url here", "no url here"),
        ] {
            let got = redact_urls(given);
            assert_eq!(got, expected);
            for secret in ["s3cret", "T0KEN", "8f1e", "5c1d", "readOnly"] {
                assert!(!got.contains(secret), "{got}");
            }
        }
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

    /// Fuzz target (bolero; `cargo test fuzz_`): a URL in any message, after any text,
    /// loses every query value and its user name and password, whatever the scheme's case
    /// or what separates it from the text around it.
    #[test]
    fn fuzz_url_redaction() {
        const SCHEMES: [&str; 5] = ["https", "wss", "WSS", "http", "ws"];
        const SEPARATORS: [&str; 6] = [" ", "\n", "\t", "(", "\"", ": "];
        bolero::check!()
            .with_type::<(String, u8, u8, String, String, bool)>()
            .for_each(|(before, scheme, sep, path, after, userinfo)| {
                let secret = "SECRETvalue42";
                let scheme = SCHEMES[usize::from(*scheme) % SCHEMES.len()];
                let sep = SEPARATORS[usize::from(*sep) % SEPARATORS.len()];
                let path: String = path
                    .chars()
                    .filter(|c| !matches!(c, '?' | '#' | ' ' | '@'))
                    .collect();
                let user = if *userinfo {
                    format!("user:{secret}@")
                } else {
                    String::new()
                };
                let url = format!("{scheme}://{user}host.example/{path}?jwt={secret}&a=1");
                let after: String = after
                    .chars()
                    .filter(|c| *c == ' ' || c.is_alphanumeric())
                    .take(8)
                    .collect();
                let message = format!("{before}{sep}{url} {after}");
                let redacted = redact_urls(&message);
                let leaked = redacted.matches(secret).count();
                let around = before.matches(secret).count() + after.matches(secret).count();
                assert!(leaked <= around, "{message:?} -> {redacted:?}");
            });
        bolero::check!().for_each(|bytes: &[u8]| {
            if let Ok(text) = std::str::from_utf8(bytes) {
                let _ = redact_urls(text);
            }
        });
    }
}
