//! Shared set-up of the runner's end-to-end tests: the demo site, a runner on loopback with a
//! random token, and a client.

#![allow(
    dead_code,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_client::AgentRunnerClient;
use abr_core::{AcquireMode, AcquireRequest, SessionProvider};
use abr_demo::DemoSite;
use abr_protocol::{CaptureFinishResponse, CaptureRef, CaptureStartRequest};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};
use abr_service::config::RunnerConfig;
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use secrecy::SecretString;

pub mod fake;
pub mod tools;

pub const TOKEN: &str = "test-token-0123456789abcdef";
pub const WORKSPACE: &str = "ws-e2e";
pub const ACCOUNT: &str = "acct-e2e";

pub struct Stack {
    pub site: DemoSite,
    pub server: RunningServer,
    pub client: AgentRunnerClient,
}

pub fn config(site: &DemoSite) -> RunnerConfig {
    let mut config = RunnerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        api_tokens: vec![SecretString::from(TOKEN.to_owned())],
        ..RunnerConfig::default()
    };
    config.demo_site_url = Some(url::Url::parse(&site.base_url()).unwrap());
    config.egress = config.egress.allow_addr(site.local_addr());
    config
}

pub async fn stack_with(
    configure: impl FnOnce(&mut RunnerConfig),
    extend: impl FnOnce(RunnerBuilder) -> RunnerBuilder,
) -> Stack {
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let mut config = config(&site);
    configure(&mut config);
    let listener = tokio::net::TcpListener::bind(config.bind).await.unwrap();
    config.public_url =
        Some(url::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap());
    let demo = abr_demo::DemoStrategy::new(&site.base_url()).unwrap();
    let builder = RunnerBuilder::new(config).strategy(Arc::new(demo)).unwrap();
    let runner = extend(builder).build().unwrap();
    let server = RunningServer::start(Arc::new(runner), listener).unwrap();
    let client = AgentRunnerClient::new(server.base_url(), TOKEN.to_owned()).unwrap();
    Stack {
        site,
        server,
        client,
    }
}

pub async fn stack() -> Stack {
    stack_with(|_| {}, |b| b).await
}

pub fn start_request() -> CaptureStartRequest {
    CaptureStartRequest {
        workspace_id: WORKSPACE.into(),
        account_id: ACCOUNT.into(),
        platform: "demo".into(),
        scope: None,
    }
}

/// The runner's operator, acting for `WORKSPACE` (for calls on the engine itself).
pub fn operator() -> abr_core::principal::Actor {
    abr_core::testing::actor(abr_protocol::Role::Operator, WORKSPACE)
}

pub fn bound(capture_id: &str) -> CaptureRef {
    CaptureRef {
        capture_id: capture_id.into(),
        workspace_id: WORKSPACE.into(),
        account_id: ACCOUNT.into(),
    }
}

/// The user's own browser, kept open until the capture finished (as a person keeps the tab
/// open until they see they are signed in).
pub struct UserBrowser {
    provider: LocalBrowserSessionProvider,
    lease: abr_core::Lease<abr_providers::BrowserSession>,
}

impl UserBrowser {
    /// Presses `key` on the live view; it travels over the socket to the browser shown.
    pub async fn press(&self, key: &str) {
        let page = self.lease.context().page();
        page.keyboard().press(key, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    /// Types `text` on the live view.
    pub async fn type_text(&self, text: &str) {
        let page = self.lease.context().page();
        page.keyboard().type_text(text, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    pub async fn close(self) {
        self.lease.release().await.unwrap();
        self.provider.shutdown().await;
    }
}

/// A second headless browser plays the user on the live-view page: waits for the picture,
/// focuses it and signs in with the keyboard.
pub async fn sign_in_as_a_user(live_view_url: &str, username: &str) -> UserBrowser {
    let user = open_live_view(live_view_url).await;
    let page = user.lease.context().page();
    page.keyboard().type_text(username, None).await.unwrap();
    page.keyboard().press("Tab", None).await.unwrap();
    page.keyboard()
        .type_text("demo-password", None)
        .await
        .unwrap();
    page.keyboard().press("Enter", None).await.unwrap();
    user
}

/// A second headless browser (the user's own) on the live-view page, once it shows a
/// picture, with the picture focused for the keyboard. It may reach the runner (on
/// loopback) and nothing else private.
pub async fn open_live_view(live_view_url: &str) -> UserBrowser {
    let runner = url::Url::parse(live_view_url).unwrap();
    let runner_addr: SocketAddr = format!(
        "{}:{}",
        runner.host_str().unwrap(),
        runner.port_or_known_default().unwrap()
    )
    .parse()
    .unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(abr_core::EgressPolicy::new().allow_addr(runner_addr)),
        ..LocalProviderConfig::default()
    });
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "user".into(),
            state: None,
            start_url: Some(live_view_url.into()),
        })
        .await
        .unwrap();
    let page = lease.context().page();
    page.wait_for_function(
        "() => +(document.getElementById('screen').dataset.frames || 0) > 0",
        None,
    )
    .await
    .expect("the live view showed no picture");
    page.locator("#screen").focus().await.unwrap();
    UserBrowser { provider, lease }
}

/// Polls finish until the capture's browser is signed in.
pub async fn finish_when_signed_in(
    client: &AgentRunnerClient,
    capture_id: &str,
) -> CaptureFinishResponse {
    for _ in 0..120 {
        match client.capture_finish(&bound(capture_id)).await {
            Ok(done) => return done,
            Err(e) if e.code() == Some("not_authenticated") => {
                tokio::time::sleep(Duration::from_millis(250)).await
            }
            Err(e) => panic!("finish failed: {e}"),
        }
    }
    panic!("never signed in");
}

// ---- Helpers of api_errors.rs, canary.rs and lifecycle.rs ----

/// Bound of every wait in the helpers below.
pub const WAIT: Duration = Duration::from_secs(60);

/// Signs `username` in on the demo site over plain HTTP, without a browser (POST /login, no
/// redirect followed): the value of the `demo_session` cookie it sets.
pub async fn demo_login(site: &DemoSite, username: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let response = http
        .post(format!("{}/login", site.base_url()))
        .form(&[
            ("username", username),
            ("password", abr_demo::site::DEMO_PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "the demo sign-in did not redirect");
    response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| cookie::Cookie::parse(v).ok())
        .find(|c| c.name() == abr_demo::site::SESSION_COOKIE && !c.value().is_empty())
        .expect("the sign-in set no demo_session cookie")
        .value()
        .to_owned()
}

/// A session holding the demo site's `demo_session` cookie, as a capture exports it
/// (host-only on 127.0.0.1, path /, HttpOnly).
pub fn demo_session(token: &str) -> abr_protocol::AgentSessionState {
    let mut cookie = abr_protocol::Cookie::new("demo_session", token, "127.0.0.1");
    cookie.http_only = true;
    abr_protocol::AgentSessionState {
        cookies: vec![cookie],
        ..abr_protocol::AgentSessionState::default()
    }
}

/// A signed-in session for the demo site, obtained without a browser.
pub async fn signed_in_session(site: &DemoSite, username: &str) -> abr_protocol::AgentSessionState {
    demo_session(&demo_login(site, username).await)
}

/// A post of `text` to `platform` with `session`, bound to the test tenant.
pub fn post_request(
    platform: &str,
    session: abr_protocol::AgentSessionState,
    text: &str,
) -> abr_protocol::PostRequest {
    abr_protocol::PostRequest {
        session_id: None,
        platform: platform.into(),
        session,
        content: abr_protocol::PostContent::text(text),
        workspace_id: Some(WORKSPACE.into()),
        account_id: Some(ACCOUNT.into()),
        scope: None,
    }
}

/// A probe of `session` on `platform`.
pub fn probe_request(
    platform: &str,
    session: abr_protocol::AgentSessionState,
) -> abr_protocol::ProbeRequest {
    abr_protocol::ProbeRequest {
        platform: platform.into(),
        session,
        workspace_id: Some(WORKSPACE.into()),
        account_id: Some(ACCOUNT.into()),
        scope: None,
    }
}

/// A reqwest client for raw calls: no redirects, bounded.
pub fn raw_http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

/// A raw answer that must be an error envelope: its status, headers and
/// `{"error": {"code", "message", "retryable"}}` body, checked to have exactly that shape.
pub struct RawError {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub code: String,
    pub message: String,
    pub retryable: bool,
    pub body: String,
}

/// Reads `response` as an error envelope, asserting its shape and JSON content type.
pub async fn raw_error(response: reqwest::Response) -> RawError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap();
    let content_type = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "HTTP {status}: not JSON ({content_type:?}): {body}"
    );
    let value: serde_json::Value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("HTTP {status}: not an envelope ({e}): {body}"));
    let root = value.as_object().expect("an object");
    assert_eq!(root.len(), 1, "only `error` at the top: {body}");
    let error = root["error"].as_object().expect("`error` is an object");
    let mut keys: Vec<_> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "retryable"], "{body}");
    let code = error["code"].as_str().expect("code is a string").to_owned();
    let message = error["message"]
        .as_str()
        .expect("message is a string")
        .to_owned();
    assert!(!code.is_empty() && !message.is_empty(), "{body}");
    let retryable = error["retryable"].as_bool().expect("retryable is a bool");
    RawError {
        status,
        headers,
        code,
        message,
        retryable,
        body,
    }
}

/// Status, code and retryable flag of an error envelope the client decoded; panics on any
/// other error (a transport error, or an answer without an envelope).
pub fn api_error(error: &abr_client::ClientError) -> (u16, String, bool) {
    match error {
        abr_client::ClientError::Api {
            status,
            code,
            retryable,
            message,
            ..
        } => {
            assert!(
                !code.starts_with("http_"),
                "HTTP {status} without an envelope: {message}"
            );
            assert!(!message.is_empty(), "an envelope without a message");
            (*status, code.clone(), *retryable)
        }
        other => panic!("expected an API error envelope, got {other}"),
    }
}

/// Polls `condition` every 50 ms until it holds; panics after `limit` naming `what`.
pub async fn wait_for(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A random suffix for canary values.
pub fn random_suffix() -> String {
    abr_core::new_token().unwrap()
}

/// The live token of a live-view URL (its last path segment).
pub fn live_token(live_view_url: &str) -> String {
    live_view_url
        .rsplit('/')
        .next()
        .filter(|t| !t.is_empty())
        .expect("a live token")
        .to_owned()
}

/// Follows task `id` of `tenant` with long polls until it ended (at most 90 s).
pub async fn task_ended(
    client: &AgentRunnerClient,
    tenant: &str,
    id: &str,
) -> abr_protocol::TaskRecord {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let record = client
            .wait_task(tenant, id, Duration::from_secs(20))
            .await
            .unwrap();
        if record.state.is_final() {
            return record;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never ended: {record:?}"
        );
    }
}

/// A person's real browser, which may reach the runner at `base` and nothing else, opened
/// on `url`.
pub async fn person_opens(
    base: &str,
    url: &str,
) -> (
    LocalBrowserSessionProvider,
    abr_core::Lease<abr_providers::BrowserSession>,
) {
    let addr: SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let browser = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(abr_core::EgressPolicy::new().allow_addr(addr)),
        ..LocalProviderConfig::default()
    });
    let lease = browser
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "person".into(),
            state: None,
            start_url: Some(url.to_owned()),
        })
        .await
        .unwrap();
    (browser, lease)
}
