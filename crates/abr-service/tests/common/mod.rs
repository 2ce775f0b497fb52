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
    pub async fn close(self) {
        self.lease.release().await.unwrap();
        self.provider.shutdown().await;
    }
}

/// A second headless browser plays the user on the live-view page: waits for the picture,
/// focuses it and signs in with the keyboard.
pub async fn sign_in_as_a_user(live_view_url: &str, username: &str) -> UserBrowser {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        ..LocalProviderConfig::default()
    });
    let lease = provider
        .acquire(AcquireRequest {
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
    page.keyboard().type_text(username, None).await.unwrap();
    page.keyboard().press("Tab", None).await.unwrap();
    page.keyboard()
        .type_text("demo-password", None)
        .await
        .unwrap();
    page.keyboard().press("Enter", None).await.unwrap();
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
