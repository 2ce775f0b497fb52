//! [`AgentRunnerClient`] and its builder.

use std::fmt;
use std::time::Duration;

use abr_protocol::{
    AgentPostResult, CaptureCancelResponse, CaptureFinishResponse, CaptureRef, CaptureStartRequest,
    CaptureStartResponse, CaptureStatus, ErrorEnvelope, Health, PlatformsResponse, PostRequest,
    ProbeRequest, ProbeResponse,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use crate::error::{ClientError, Operation, redact_json_error, shorten};

/// Default deadline of a whole call, from sending to the last byte of the answer. A post
/// runs a browser (acquire, sign-in check, compose, submit, verify: about 200 s of step
/// deadlines in the runner by default, plus pacing), so this is generous.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Default deadline for establishing a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest 2xx body read (a session with many cookies is far smaller).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Largest error body read; an envelope is a few hundred bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Typed client of the ABR runner's HTTP API (`/v1/...`, JSON, bearer auth).
///
/// Cheap to clone (the connection pool is shared). Redirects are never followed, no cookie
/// is stored, and the token is sent only as `Authorization: Bearer` (marked sensitive) on
/// every call but [`health`](Self::health). `Debug` never prints the token.
///
/// # No retries
///
/// The client sends every request exactly once; it **never retries** anything by itself.
/// A post in particular may have been published even when the call failed. Orchestrators:
///
/// - on `Ok(result)` from [`post`](Self::post), retry or fall back only when
///   [`AgentPostResult::is_safe_to_retry`] is true (never on `uncertain`);
/// - on `Err(e)`, retry only when [`ClientError::is_retryable`] is true (the runner said so,
///   429/503, or a transport failure of a read-only call), after
///   [`ClientError::retry_after`]. Any other failure of a post (timeout, reset, unreadable
///   answer, a proxy's 502/504) leaves its outcome unknown: treat it as `uncertain`.
#[derive(Clone)]
pub struct AgentRunnerClient {
    http: reqwest::Client,
    base: Url,
    token: SecretString,
    timeout: Duration,
    user_agent: String,
    runner: Option<String>,
}

impl fmt::Debug for AgentRunnerClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunnerClient")
            .field("base_url", &self.base.as_str())
            .field("runner", &self.runner)
            .field("timeout", &self.timeout)
            .field("user_agent", &self.user_agent)
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgentRunnerClient`]; every check happens in [`build`](Self::build).
pub struct AgentRunnerClientBuilder {
    base_url: String,
    token: Option<SecretString>,
    timeout: Duration,
    connect_timeout: Duration,
    user_agent: String,
    runner: Option<String>,
}

impl fmt::Debug for AgentRunnerClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The base URL is not validated yet: it could carry credentials, so it is not shown.
        f.debug_struct("AgentRunnerClientBuilder")
            .field("has_token", &self.token.is_some())
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("user_agent", &self.user_agent)
            .finish_non_exhaustive()
    }
}

impl AgentRunnerClientBuilder {
    /// The bearer token (required). Accepts a [`SecretString`], a `String` or a `&str`.
    #[must_use]
    pub fn token(mut self, token: impl Into<SecretString>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Deadline of a whole call, from sending to the last byte of the answer. Default
    /// [`DEFAULT_TIMEOUT`]. A post that times out may still have been published.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Deadline for establishing a connection. Default [`DEFAULT_CONNECT_TIMEOUT`].
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The `User-Agent` header. Default `abr-client/<version>`.
    #[must_use]
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// Calls a hub (`abr serve` with runners connected over the relay) for the runner
    /// `runner_id`: every authenticated call carries `x-abr-runner: <runner_id>` and runs on
    /// that runner's machine. A 1 to 64 character id of `A-Z a-z 0-9 . _ -`.
    #[must_use]
    pub fn runner(mut self, runner_id: impl Into<String>) -> Self {
        self.runner = Some(runner_id.into());
        self
    }

    /// Validates the configuration and builds the client.
    ///
    /// The base URL must be `http(s)://host[:port][/prefix]`, with or without a trailing
    /// slash; a path prefix is kept (`http://host/abr/` calls `http://host/abr/v1/...`).
    /// User info, a query or a fragment are refused. The token must be non-empty visible
    /// ASCII. Error messages never echo the URL or the token.
    pub fn build(self) -> Result<AgentRunnerClient, ClientError> {
        let base = parse_base_url(&self.base_url)?;
        let token = self
            .token
            .ok_or_else(|| ClientError::config("a bearer token is required"))?;
        let raw = token.expose_secret();
        if raw.is_empty() {
            return Err(ClientError::config("the bearer token is empty"));
        }
        if !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ClientError::config(
                "the bearer token must be visible ASCII without spaces",
            ));
        }
        if let Some(runner) = &self.runner
            && !valid_runner_id(runner)
        {
            return Err(ClientError::config(
                "the runner id must be 1 to 64 of A-Z a-z 0-9 . _ - (not starting with a dot)",
            ));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(ClientError::config("timeouts must be greater than zero"));
        }
        let user_agent = HeaderValue::from_str(&self.user_agent)
            .map_err(|_| ClientError::config("the user agent is not a valid header value"))?;
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .user_agent(user_agent)
            .default_headers(headers)
            .build()
            .map_err(|e| {
                ClientError::config(format!(
                    "cannot build the HTTP client: {}",
                    shorten(&e.without_url().to_string())
                ))
            })?;
        Ok(AgentRunnerClient {
            http,
            base,
            token,
            timeout: self.timeout,
            user_agent: self.user_agent,
            runner: self.runner,
        })
    }
}

/// The hub's bounds of a runner id.
fn valid_runner_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses and checks a base URL; messages never echo it.
fn parse_base_url(raw: &str) -> Result<Url, ClientError> {
    let url = Url::parse(raw.trim())
        .map_err(|e| ClientError::config(format!("the base URL is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ClientError::config(
            "the base URL must be http:// or https://",
        ));
    }
    if url.cannot_be_a_base() || url.host().is_none() {
        return Err(ClientError::config("the base URL must have a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ClientError::config(
            "the base URL must not carry credentials; use token()",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ClientError::config(
            "the base URL must not have a query or a fragment",
        ));
    }
    Ok(url)
}

impl AgentRunnerClient {
    /// A builder for a runner at `base_url` (checked in
    /// [`build`](AgentRunnerClientBuilder::build)).
    pub fn builder(base_url: impl Into<String>) -> AgentRunnerClientBuilder {
        AgentRunnerClientBuilder {
            base_url: base_url.into(),
            token: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            user_agent: concat!("abr-client/", env!("CARGO_PKG_VERSION")).to_owned(),
            runner: None,
        }
    }

    /// A client for `base_url` with `token` and default settings.
    pub fn new(
        base_url: impl Into<String>,
        token: impl Into<SecretString>,
    ) -> Result<Self, ClientError> {
        Self::builder(base_url).token(token).build()
    }

    /// The validated base URL.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// `GET /v1/health` (no authentication).
    pub async fn health(&self) -> Result<Health, ClientError> {
        let request = self.http.get(self.url(&["v1", "health"]));
        self.send(Operation::Health, request).await
    }

    /// `GET /v1/platforms`: the registered platforms and their policies.
    pub async fn platforms(&self) -> Result<PlatformsResponse, ClientError> {
        let request = self.authed(Method::GET, &["v1", "platforms"]);
        self.send(Operation::Platforms, request).await
    }

    /// `POST /v1/capture/start`: opens an interactive capture. The returned
    /// [`capture_id`](CaptureStartResponse::capture_id) is a credential: keep it server-side.
    ///
    /// Not idempotent: a retry would open a second capture.
    pub async fn capture_start(
        &self,
        request: &CaptureStartRequest,
    ) -> Result<CaptureStartResponse, ClientError> {
        self.post_json(
            Operation::CaptureStart,
            &["v1", "capture", "start"],
            request,
        )
        .await
    }

    /// `POST /v1/capture/finish`: exports the signed-in session, filtered to the platform's
    /// scope, and closes the capture.
    pub async fn capture_finish(
        &self,
        capture: &CaptureRef,
    ) -> Result<CaptureFinishResponse, ClientError> {
        self.post_json(
            Operation::CaptureFinish,
            &["v1", "capture", "finish"],
            capture,
        )
        .await
    }

    /// `POST /v1/capture/cancel`: closes the capture without exporting anything.
    pub async fn capture_cancel(
        &self,
        capture: &CaptureRef,
    ) -> Result<CaptureCancelResponse, ClientError> {
        self.post_json(
            Operation::CaptureCancel,
            &["v1", "capture", "cancel"],
            capture,
        )
        .await
    }

    /// `POST /v1/capture/status`: the capture's state, for the workspace and account it is
    /// bound to. The capture id travels in the body, never in a path (it is a credential).
    /// A read: safe to retry.
    pub async fn capture_status(&self, capture: &CaptureRef) -> Result<CaptureStatus, ClientError> {
        let request = self
            .authed(Method::POST, &["v1", "capture", "status"])
            .json(capture);
        self.send(Operation::CaptureStatus, request).await
    }

    /// `POST /v1/post`: acts with a stored session and proves the outcome.
    ///
    /// A post that ran always answers `Ok`, whatever its outcome; read
    /// [`AgentPostResult::outcome`]. **Never retried by this client.** Retry or fall back
    /// only when [`AgentPostResult::is_safe_to_retry`] is true, or on an `Err` whose
    /// [`is_retryable`](ClientError::is_retryable) is true. Any other `Err` (timeout, reset,
    /// unreadable answer, a proxy's 502/504) means the post may have been published: treat
    /// it as uncertain.
    pub async fn post(&self, request: &PostRequest) -> Result<AgentPostResult, ClientError> {
        self.post_json(Operation::Post, &["v1", "post"], request)
            .await
    }

    /// `POST /v1/probe`: is this session still signed in?
    pub async fn probe(&self, request: &ProbeRequest) -> Result<ProbeResponse, ClientError> {
        self.post_json(Operation::Probe, &["v1", "probe"], request)
            .await
    }

    /// `base` + `segments`, each percent-encoded as one path segment.
    pub(crate) fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        // Cannot fail: `parse_base_url` refused cannot-be-a-base URLs.
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// The runner every call is for, when this client calls a hub (see
    /// [`AgentRunnerClientBuilder::runner`]).
    pub fn runner(&self) -> Option<&str> {
        self.runner.as_deref()
    }

    /// A request with the bearer token (reqwest marks the header sensitive), and the
    /// runner it is for.
    pub(crate) fn authed(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        let request = self
            .http
            .request(method, self.url(segments))
            .bearer_auth(self.token.expose_secret());
        match &self.runner {
            Some(runner) => request.header("x-abr-runner", runner.as_str()),
            None => request,
        }
    }

    /// An authenticated `POST` of `body` as JSON.
    pub(crate) async fn post_json<B: Serialize, T: DeserializeOwned>(
        &self,
        operation: Operation,
        segments: &[&str],
        body: &B,
    ) -> Result<T, ClientError> {
        let json = serde_json::to_vec(body).map_err(|e| {
            ClientError::argument(format!(
                "{operation}: the request cannot be serialized ({})",
                redact_json_error(&e)
            ))
        })?;
        let request = self
            .authed(Method::POST, segments)
            .header(CONTENT_TYPE, "application/json")
            .body(json);
        self.send(operation, request).await
    }

    /// Sends `request` once and decodes a 2xx answer as `T`, anything else as an error.
    pub(crate) async fn send<T: DeserializeOwned>(
        &self,
        operation: Operation,
        request: RequestBuilder,
    ) -> Result<T, ClientError> {
        self.send_with_head(operation, request)
            .await
            .map(|(value, _)| value)
    }

    /// [`send`](Self::send), also answering the 2xx status and headers.
    pub(crate) async fn send_with_head<T: DeserializeOwned>(
        &self,
        operation: Operation,
        request: RequestBuilder,
    ) -> Result<(T, Head), ClientError> {
        let (body, head) = self.send_raw(operation, request).await?;
        let value = serde_json::from_slice(&body).map_err(|e| ClientError::Decode {
            operation,
            status: head.status.as_u16(),
            message: format!(
                "not a {}: {}",
                short_type_name::<T>(),
                redact_json_error(&e)
            ),
        })?;
        Ok((value, head))
    }

    /// Sends `request` once and reads a 2xx body (at most [`MAX_BODY`] bytes); anything else
    /// is an error.
    pub(crate) async fn send_raw(
        &self,
        operation: Operation,
        request: RequestBuilder,
    ) -> Result<(Vec<u8>, Head), ClientError> {
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::transport(operation, e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(api_error(response).await);
        }
        let head = Head {
            status,
            headers: response.headers().clone(),
        };
        let (body, complete) = read_limited(response, MAX_BODY)
            .await
            .map_err(|e| ClientError::transport(operation, e))?;
        if !complete {
            return Err(ClientError::Decode {
                operation,
                status: status.as_u16(),
                message: format!("the body is larger than {MAX_BODY} bytes"),
            });
        }
        Ok((body, head))
    }

    /// The client's deadline of a whole call.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// The status and headers of a 2xx answer.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
}

/// The last path segment of `T`'s name (`AgentPostResult`).
fn short_type_name<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// Reads at most `limit` bytes of the body; `false` when there was more.
async fn read_limited(
    mut response: Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// A non-2xx answer as [`ClientError::Api`]: the envelope's code and message exactly, or
/// `http_<status>` with a description of the answer (never its body).
async fn api_error(response: Response) -> ClientError {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| shorten_to(v, 60));
    let redirect = status.is_redirection();
    let body = read_limited(response, MAX_ERROR_BODY).await;
    if let Ok((bytes, true)) = &body
        && let Ok(envelope) = serde_json::from_slice::<ErrorEnvelope>(bytes)
    {
        return ClientError::Api {
            status: status.as_u16(),
            code: envelope.error.code,
            message: envelope.error.message,
            retryable: envelope.error.retryable,
            retry_after,
        };
    }
    let what = match &body {
        Ok((_, false)) => format!("more than {MAX_ERROR_BODY} bytes"),
        Ok((bytes, true)) if bytes.is_empty() => "empty body".to_owned(),
        Ok((bytes, true)) => format!("{} bytes", bytes.len()),
        Err(_) => "unreadable body".to_owned(),
    };
    let mut message = format!(
        "HTTP {} without an ABR error envelope ({what}",
        describe(status)
    );
    if let Some(content_type) = content_type {
        message.push_str(", ");
        message.push_str(&content_type);
    }
    message.push(')');
    if redirect {
        message.push_str("; redirects are not followed");
    }
    ClientError::Api {
        status: status.as_u16(),
        code: format!("http_{}", status.as_u16()),
        message,
        retryable: false,
        retry_after,
    }
}

/// `502 Bad Gateway`.
fn describe(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// `text` cut to `max` characters, without control characters.
fn shorten_to(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

/// `Retry-After` in whole seconds (the form the runner sends; HTTP dates are ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    value.parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use reqwest::header::AUTHORIZATION;

    use super::*;

    fn client(base: &str) -> AgentRunnerClient {
        AgentRunnerClient::new(base, "t0ken-canary").unwrap()
    }

    #[test]
    fn the_bearer_header_is_marked_sensitive() {
        let c = client("http://127.0.0.1:9/");
        let request = c.authed(Method::GET, &["v1", "platforms"]).build().unwrap();
        let header = request.headers().get(AUTHORIZATION).unwrap();
        assert_eq!(header.to_str().unwrap(), "Bearer t0ken-canary");
        assert!(header.is_sensitive());
    }

    #[test]
    fn a_client_for_a_runner_names_it_on_every_authenticated_call() {
        let c = AgentRunnerClient::builder("http://127.0.0.1:9/")
            .token("t0ken-canary")
            .runner("erins-laptop")
            .build()
            .unwrap();
        assert_eq!(c.runner(), Some("erins-laptop"));
        let request = c.authed(Method::POST, &["v1", "post"]).build().unwrap();
        assert_eq!(
            request.headers().get("x-abr-runner").unwrap(),
            "erins-laptop"
        );
        let plain = client("http://127.0.0.1:9/");
        let request = plain
            .authed(Method::GET, &["v1", "platforms"])
            .build()
            .unwrap();
        assert!(request.headers().get("x-abr-runner").is_none());
        for bad in ["", "a/b", "a\nb", ".x", &"x".repeat(65)] {
            let e = AgentRunnerClient::builder("http://127.0.0.1:9/")
                .token("t")
                .runner(bad)
                .build()
                .unwrap_err();
            assert!(e.to_string().contains("runner id"), "{e}");
        }
    }

    #[test]
    fn urls_keep_the_prefix_and_encode_segments() {
        for base in ["http://h:1/abr", "http://h:1/abr/"] {
            let url = client(base).url(&["v1", "capture", "a/b c?#"]);
            assert_eq!(url.as_str(), "http://h:1/abr/v1/capture/a%2Fb%20c%3F%23");
        }
        for base in ["http://h:1", "http://h:1/"] {
            assert_eq!(
                client(base).url(&["v1", "post"]).as_str(),
                "http://h:1/v1/post"
            );
        }
    }

    #[test]
    fn retry_after_takes_whole_seconds_only() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static(" 7 "));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn type_names_are_short() {
        assert_eq!(short_type_name::<AgentPostResult>(), "AgentPostResult");
    }
}
