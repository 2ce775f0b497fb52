//! Pieces shared by the remote-browser providers ([Steel](crate::SteelSessionProvider),
//! [Kernel](crate::KernelSessionProvider)): REST calls with typed errors, attaching Playwright
//! over CDP, and the [`Teardown`] that ends a remote session exactly once, whatever happened.

use std::time::Duration;

use abr_core::{ProviderError, ProviderErrorKind};
use futures::future::BoxFuture;
use playwright_rs::ConnectOverCdpOptions;
use playwright_rs::protocol::{Browser, BrowserContext};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{RequestBuilder, StatusCode};

use crate::driver::playwright;
use crate::error::{from_http, from_playwright, redact_urls};

/// Longest server message kept in an error.
const MAX_MESSAGE: usize = 300;

/// A REST client on a provider's base URL.
#[derive(Debug, Clone)]
pub(crate) struct Rest {
    client: reqwest::Client,
    base: url::Url,
    /// Provider name, for error messages.
    provider: &'static str,
}

/// A REST answer: status, headers, body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as JSON of type `T`, or a typed error naming `operation`.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(
        &self,
        provider: &str,
        operation: &str,
    ) -> Result<T, ProviderError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Other,
                format!("{provider}: {operation}: unexpected response body ({e})"),
            )
        })
    }
}

impl Rest {
    /// A client for `base_url` with the given deadlines. Errors (bad URL, TLS setup) are
    /// configuration errors.
    pub(crate) fn new(
        provider: &'static str,
        base_url: &str,
        request_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Self, String> {
        let base = url::Url::parse(base_url)
            .map_err(|e| format!("{provider}: base URL is not a URL ({e})"))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(format!(
                "{provider}: base URL must be http(s)://host[:port][/prefix]"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(request_timeout)
            .connect_timeout(connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| {
                format!(
                    "{provider}: cannot build an HTTP client ({})",
                    e.without_url()
                )
            })?;
        Ok(Self {
            client,
            base,
            provider,
        })
    }

    /// The base URL.
    pub(crate) fn base(&self) -> &url::Url {
        &self.base
    }

    /// `base` + `segments` (each percent-encoded as one path segment).
    pub(crate) fn url(&self, segments: &[&str]) -> url::Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// A request builder for `method` on `segments`.
    pub(crate) fn request(&self, method: reqwest::Method, segments: &[&str]) -> RequestBuilder {
        self.client.request(method, self.url(segments))
    }

    /// Sends `request` and reads the whole answer; transport failures are typed, without URLs.
    pub(crate) async fn send(
        &self,
        request: RequestBuilder,
        operation: &str,
    ) -> Result<Answer, ProviderError> {
        let provider = self.provider;
        let response = request
            .send()
            .await
            .map_err(|e| from_http(&format!("{provider}: {operation}"), e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .map_err(|e| from_http(&format!("{provider}: {operation}"), e))?
            .to_vec();
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A typed error for a non-success answer.
    pub(crate) fn status_error(&self, operation: &str, answer: &Answer) -> ProviderError {
        status_error(self.provider, operation, answer)
    }
}

/// Maps an HTTP error status to a typed error: 429 → [`Busy`](ProviderErrorKind::Busy)
/// (with `Retry-After`), 401/403 → `Misconfigured`, 400/404/409/422 → `Rejected`,
/// 408/504 → `Timeout`, other 5xx → `Unavailable`. The message carries the server's own
/// message (JSON `message`/`code`/`error`), shortened and with URL query strings removed.
pub(crate) fn status_error(provider: &str, operation: &str, answer: &Answer) -> ProviderError {
    let status = answer.status;
    let kind = match status.as_u16() {
        429 => ProviderErrorKind::Busy,
        401 | 403 => ProviderErrorKind::Misconfigured,
        408 | 504 => ProviderErrorKind::Timeout,
        400 | 404 | 409 | 410 | 413 | 415 | 422 => ProviderErrorKind::Rejected,
        500..=599 => ProviderErrorKind::Unavailable,
        _ => ProviderErrorKind::Other,
    };
    let detail = server_message(&answer.body);
    let mut message = format!("{provider}: {operation}: HTTP {}", status.as_u16());
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(&detail);
    }
    if kind == ProviderErrorKind::Misconfigured {
        message.push_str(" (check the API key)");
    }
    let error = ProviderError::new(kind, message);
    match retry_after(&answer.headers) {
        Some(after)
            if kind == ProviderErrorKind::Busy || kind == ProviderErrorKind::Unavailable =>
        {
            error.with_retry_after(after)
        }
        _ => error,
    }
}

/// The server's explanation in an error body: `code` and `message` (Kernel's `ErrorModel`),
/// or `message`/`error` (Steel, Fastify); plain text otherwise.
fn server_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(obj)) => {
            let field = |k: &str| {
                obj.get(k)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
            };
            let (code, message, error) = (field("code"), field("message"), field("error"));
            match (code.is_empty(), message.is_empty()) {
                (false, false) => format!("{code}: {message}"),
                (true, false) => message.to_owned(),
                (false, true) => code.to_owned(),
                (true, true) => error.to_owned(),
            }
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    };
    let text = redact_urls(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .as_str(),
    );
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by these services).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = value.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Attaches Playwright to `endpoint` (a `ws(s)://` CDP URL, a secret), within `timeout`.
pub(crate) async fn connect_cdp(
    provider: &str,
    endpoint: &str,
    timeout: Duration,
) -> Result<Browser, ProviderError> {
    let pw = playwright().await?;
    let options = ConnectOverCdpOptions::new().timeout(timeout.as_secs_f64() * 1000.0);
    let connect = pw.chromium().connect_over_cdp(endpoint, options);
    tokio::time::timeout(timeout + Duration::from_secs(1), connect)
        .await
        .map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Timeout,
                format!("{provider}: attaching over CDP timed out after {timeout:?}"),
            )
        })?
        .map_err(|e| {
            let e = from_playwright(&format!("{provider}: attaching over CDP"), e);
            // The session exists but its browser cannot be reached: the service is at fault.
            if e.kind() == ProviderErrorKind::Other {
                ProviderError::new(ProviderErrorKind::Unavailable, e.message().to_owned())
            } else {
                e
            }
        })
}

/// A page target of a browser's default context, as CDP reports it.
#[derive(Debug, Clone)]
pub(crate) struct PageTarget {
    /// CDP target id.
    pub(crate) id: String,
    /// Current URL.
    pub(crate) url: String,
}

/// The page targets of `browser`'s default context, straight from CDP (`Target.getTargets`).
/// Playwright's own list (`context.pages()`) fills asynchronously after attaching, so it
/// cannot tell whether a page exists yet.
pub(crate) async fn default_context_pages(
    provider: &str,
    browser: &Browser,
) -> Result<Vec<PageTarget>, ProviderError> {
    let op = |what: &str| format!("{provider}: {what}");
    let cdp = browser
        .new_browser_cdp_session()
        .await
        .map_err(|e| from_playwright(&op("opening a browser CDP session"), e))?;
    let contexts = cdp
        .send("Target.getBrowserContexts", None)
        .await
        .map_err(|e| from_playwright(&op("listing browser contexts"), e))?;
    let targets = cdp
        .send("Target.getTargets", None)
        .await
        .map_err(|e| from_playwright(&op("listing targets"), e))?;
    let _ = cdp.detach().await;
    // playwright-rs wraps the CDP answer in `{"result": …}`.
    let (contexts, targets) = (unwrap_result(contexts), unwrap_result(targets));
    let str_of = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let default_id = str_of(&contexts, "defaultBrowserContextId");
    let others: Vec<String> = contexts
        .get("browserContextIds")
        .and_then(serde_json::Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let pages = targets
        .get("targetInfos")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|t| str_of(t, "type") == "page")
        .filter(|t| {
            let context = str_of(t, "browserContextId");
            if default_id.is_empty() {
                !others.contains(&context)
            } else {
                context == default_id
            }
        })
        .map(|t| PageTarget {
            id: str_of(t, "targetId"),
            url: str_of(t, "url"),
        })
        .collect();
    Ok(pages)
}

fn unwrap_result(answer: serde_json::Value) -> serde_json::Value {
    match answer {
        serde_json::Value::Object(mut obj) if obj.len() == 1 && obj.contains_key("result") => {
            obj.remove("result").unwrap_or_default()
        }
        other => other,
    }
}

/// Waits (at most `timeout`) until Playwright lists at least `count` pages in `context`, so
/// that the session uses the browser's existing tab (the one the provider's live view shows)
/// instead of opening another.
pub(crate) async fn settle_pages(context: &BrowserContext, count: usize, timeout: Duration) {
    let started = tokio::time::Instant::now();
    while context.pages().len() < count {
        if started.elapsed() >= timeout {
            tracing::debug!(
                count,
                "the browser's existing pages did not show up in time"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs `step` (a browser call during acquire) within `timeout`, typed.
pub(crate) async fn bounded<T>(
    provider: &str,
    what: &str,
    timeout: Duration,
    step: impl Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    tokio::time::timeout(timeout, step)
        .await
        .unwrap_or_else(|_| {
            Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                format!("{provider}: {what} timed out after {timeout:?}"),
            ))
        })
}

/// Ends a remote session (DELETE it, release it). Runs once.
pub(crate) type EndSession =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<(), ProviderError>> + Send + Sync>;

/// Everything to undo for one remote session: the Playwright connection (if made) and the
/// remote session itself. [`Teardown::run`] disconnects, then ends the session; if the
/// teardown is dropped without running (the acquire was cancelled, or a lease's release
/// closure was dropped), it runs in the background on the current tokio runtime, so a remote
/// session is never left behind.
pub(crate) struct Teardown {
    provider: &'static str,
    browser: Option<Browser>,
    end: Option<EndSession>,
    disconnect_timeout: Duration,
}

impl std::fmt::Debug for Teardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teardown")
            .field("provider", &self.provider)
            .field("connected", &self.browser.is_some())
            .field("pending", &self.end.is_some())
            .finish()
    }
}

impl Teardown {
    /// A teardown that ends the session with `end`.
    pub(crate) fn new(
        provider: &'static str,
        end: EndSession,
        disconnect_timeout: Duration,
    ) -> Self {
        Self {
            provider,
            browser: None,
            end: Some(end),
            disconnect_timeout,
        }
    }

    /// Disconnects `browser` too (instead of an earlier one, which the caller disconnected).
    pub(crate) fn set_browser(&mut self, browser: Browser) {
        self.browser = Some(browser);
    }

    /// Disconnects Playwright (bounded; a dead browser is fine), then ends the remote
    /// session. The session is ended even when disconnecting failed.
    ///
    /// The work runs in its own task: if the caller stops waiting (a timeout around the
    /// release, a cancelled acquire), the remote session is still ended.
    pub(crate) async fn run(mut self) -> Result<(), ProviderError> {
        let provider = self.provider;
        let browser = self.browser.take();
        let end = self.end.take();
        let timeout = self.disconnect_timeout;
        tokio::spawn(finish(provider, browser, end, timeout))
            .await
            .unwrap_or_else(|e| {
                Err(ProviderError::new(
                    ProviderErrorKind::Other,
                    format!("{provider}: ending the remote session failed: {e}"),
                ))
            })
    }
}

async fn finish(
    provider: &'static str,
    browser: Option<Browser>,
    end: Option<EndSession>,
    disconnect_timeout: Duration,
) -> Result<(), ProviderError> {
    if let Some(browser) = browser {
        disconnect(provider, &browser, disconnect_timeout).await;
    }
    match end {
        Some(end) => end().await,
        None => Ok(()),
    }
}

/// Drops Playwright's connection to `browser` (bounded; a dead browser is fine). On a browser
/// attached over CDP, `close()` only disconnects: the remote browser keeps running.
pub(crate) async fn disconnect(provider: &str, browser: &Browser, timeout: Duration) {
    match tokio::time::timeout(timeout, browser.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(
            provider,
            error = %redact_urls(&e.to_string()),
            "disconnecting from the remote browser failed (already gone?)"
        ),
        Err(_) => tracing::warn!(provider, "disconnecting from the remote browser timed out"),
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if self.end.is_none() && self.browser.is_none() {
            return;
        }
        let provider = self.provider;
        let browser = self.browser.take();
        let end = self.end.take();
        let timeout = self.disconnect_timeout;
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                tracing::debug!(
                    provider,
                    "remote session abandoned; ending it in the background"
                );
                handle.spawn(async move {
                    if let Err(e) = finish(provider, browser, end, timeout).await {
                        tracing::warn!(provider, error = %e, "ending an abandoned remote session failed");
                    }
                });
            }
            Err(_) => tracing::warn!(
                provider,
                "remote session abandoned outside a tokio runtime; it was not ended"
            ),
        }
    }
}

/// Runs `attempt` and, when it fails with a transient error (`Unavailable`, `Timeout`), once
/// more after `pause`. For ending sessions: a leaked remote browser costs money.
pub(crate) async fn with_one_retry<F, Fut>(
    pause: Duration,
    mut attempt: F,
) -> Result<(), ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    match attempt().await {
        Err(e)
            if matches!(
                e.kind(),
                ProviderErrorKind::Unavailable | ProviderErrorKind::Timeout
            ) =>
        {
            tracing::debug!(error = %e, "ending the remote session failed; retrying once");
            tokio::time::sleep(pause).await;
            attempt().await
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&'static str, &'static str)], body: &str) -> Answer {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, reqwest::header::HeaderValue::from_static(v));
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers: map,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (429, ProviderErrorKind::Busy),
            (401, ProviderErrorKind::Misconfigured),
            (403, ProviderErrorKind::Misconfigured),
            (400, ProviderErrorKind::Rejected),
            (422, ProviderErrorKind::Rejected),
            (500, ProviderErrorKind::Unavailable),
            (503, ProviderErrorKind::Unavailable),
            (504, ProviderErrorKind::Timeout),
            (418, ProviderErrorKind::Other),
        ];
        for (status, kind) in cases {
            assert_eq!(
                status_error("p", "op", &answer(status, &[], "{}")).kind(),
                kind,
                "{status}"
            );
        }
    }

    #[test]
    fn a_429_carries_retry_after_and_the_server_message() {
        let e = status_error(
            "kernel",
            "creating a browser",
            &answer(
                429,
                &[("retry-after", "2")],
                r#"{"code":"rate_limited","message":"slow down"}"#,
            ),
        );
        assert_eq!(e.kind(), ProviderErrorKind::Busy);
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        assert!(e.is_retryable());
        assert!(
            e.message().contains("rate_limited: slow down"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn server_messages_lose_query_strings_and_length() {
        let long = "x".repeat(1000);
        let body = format!(r#"{{"message":"see wss://h/cdp?jwt=secret {long}"}}"#);
        let m = server_message(body.as_bytes());
        assert!(!m.contains("secret"), "{m}");
        assert!(m.chars().count() <= MAX_MESSAGE + 1, "{}", m.len());
        assert_eq!(server_message(b"plain\n text"), "plain text");
    }

    #[test]
    fn urls_join_under_the_base_path() {
        let rest = Rest::new(
            "p",
            "http://h:1/api/",
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rest.url(&["v1", "sessions", "a/b"]).as_str(),
            "http://h:1/api/v1/sessions/a%2Fb"
        );
        assert!(
            Rest::new(
                "p",
                "ftp://h",
                Duration::from_secs(1),
                Duration::from_secs(1)
            )
            .is_err()
        );
        assert!(
            Rest::new(
                "p",
                "not a url",
                Duration::from_secs(1),
                Duration::from_secs(1)
            )
            .is_err()
        );
    }
}
