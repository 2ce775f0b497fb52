//! The live viewer tried as an attacker would, end to end on real Chromium: from the
//! address bar, through a redirect of an allowed site, through a host name resolving to
//! 127.0.0.1 and through a subresource, a loopback service of the runner's machine that is
//! not allowed receives no request. The allowed site itself works (the control).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use abr_client::{AgentRunnerClient, LiveMessage, LiveViewChannel};
use abr_protocol::{CaptureRef, CaptureStartRequest, LiveViewEvent, LiveViewInput};
use abr_service::config::RunnerConfig;
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use common::*;
use secrecy::SecretString;

/// A server counting every request it receives.
async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

async fn victim() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = axum::Router::new().fallback(move || {
        let counted = Arc::clone(&counted);
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            "the runner's machine"
        }
    });
    (serve(app).await, hits)
}

/// The platform's site: a sign-in page, and three ways towards the victim.
async fn site(victim: SocketAddr, hits: Arc<AtomicUsize>) -> SocketAddr {
    let page = |title: &'static str, body: String| {
        Html(format!(
            "<!doctype html><title>{title}</title><body>{body}</body>"
        ))
    };
    let count = move || {
        hits.fetch_add(1, Ordering::SeqCst);
    };
    let c1 = count.clone();
    let c2 = count.clone();
    let app = axum::Router::new()
        .route(
            "/login",
            get(move || {
                c1();
                async move { page("Sign in", "<input id=u>".into()).into_response() }
            }),
        )
        .route(
            "/go",
            get(move || async move { Redirect::to(&format!("http://{victim}/secret")) }),
        )
        .route(
            "/named",
            get(move || async move {
                Redirect::to(&format!("http://localhost:{}/secret", victim.port()))
            }),
        )
        .route(
            "/embeds",
            get(move || {
                c2();
                async move {
                    page(
                        "Embeds",
                        format!(
                            "<img src=\"http://{victim}/pixel\"><script>fetch('http://{victim}/api').catch(() => {{}})</script>"
                        ),
                    )
                }
            }),
        );
    serve(app).await
}

async fn navigate(live: &mut LiveViewChannel, url: String) {
    live.send(&LiveViewInput::Navigate { url }).await.unwrap();
}

/// Reads the socket for `for_at_least`, returning the refusals seen.
async fn drain(live: &mut LiveViewChannel, for_at_least: Duration) -> Vec<String> {
    let mut refused = Vec::new();
    let until = Instant::now() + for_at_least;
    while let Ok(message) = tokio::time::timeout_at(until.into(), live.next()).await {
        match message.unwrap() {
            Some(LiveMessage::Event(LiveViewEvent::Refused { reason })) => refused.push(reason),
            Some(_) => {}
            None => panic!("the live view closed"),
        }
    }
    refused
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_way_through_the_viewer_reaches_a_loopback_service() {
    let (victim_addr, victim_hits) = victim().await;
    let site_hits = Arc::new(AtomicUsize::new(0));
    let site_addr = site(victim_addr, Arc::clone(&site_hits)).await;
    let site_base = format!("http://{site_addr}");

    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let runner_addr = listener.local_addr().unwrap();
    let mut config = RunnerConfig {
        bind: runner_addr,
        public_url: Some(url::Url::parse(&format!("http://{runner_addr}")).unwrap()),
        api_tokens: vec![SecretString::from(TOKEN.to_owned())],
        ..RunnerConfig::default()
    };
    config.demo_site_url = None;
    // The platform's site is the one private address the browsers may reach.
    config.egress = config.egress.allow_addr(site_addr);
    let runner = RunnerBuilder::new(config)
        .strategy(Arc::new(abr_demo::DemoStrategy::new(&site_base).unwrap()))
        .unwrap()
        .build()
        .unwrap();
    let server = RunningServer::start(Arc::new(runner), listener).unwrap();
    let client = AgentRunnerClient::new(server.base_url(), TOKEN.to_owned()).unwrap();
    let capture = client
        .capture_start(&CaptureStartRequest {
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
            platform: "demo".into(),
            scope: None,
        })
        .await
        .unwrap();
    assert_eq!(
        site_hits.load(Ordering::SeqCst),
        1,
        "the sign-in page loaded"
    );
    let mut live = LiveViewChannel::connect(&capture.live_view_url, WAIT)
        .await
        .unwrap();
    live.wait_for_picture(WAIT).await.unwrap();

    // 1. The address bar: the runner's own API and the victim are outside the sites.
    for target in [
        format!("http://{victim_addr}/secret"),
        format!("http://localhost:{}/secret", victim_addr.port()),
        format!("http://{runner_addr}/v1/health"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        navigate(&mut live, target.clone()).await;
        let refused = drain(&mut live, Duration::from_millis(300)).await;
        assert_eq!(refused, ["outside_sites"], "{target}");
    }
    // 2. Through the allowed site: a redirect to the victim's address, a redirect to a name
    //    resolving to 127.0.0.1, and subresources.
    for path in ["/go", "/named", "/embeds"] {
        navigate(&mut live, format!("{site_base}{path}")).await;
        let refused = drain(&mut live, Duration::from_millis(1500)).await;
        assert!(refused.is_empty(), "{path}: inside the sites: {refused:?}");
    }
    assert_eq!(
        site_hits.load(Ordering::SeqCst),
        2,
        "the control: the allowed site's pages loaded"
    );
    assert_eq!(
        victim_hits.load(Ordering::SeqCst),
        0,
        "a loopback service received a request through the live view"
    );
    // 3. The control: navigating back to the sign-in page works.
    navigate(&mut live, format!("{site_base}/login")).await;
    let deadline = Instant::now() + WAIT;
    while site_hits.load(Ordering::SeqCst) < 3 {
        assert!(Instant::now() < deadline, "the allowed site never loaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    live.close().await;
    client
        .capture_cancel(&CaptureRef {
            capture_id: capture.capture_id,
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
        })
        .await
        .unwrap();
    server.shutdown().await;
    assert_eq!(victim_hits.load(Ordering::SeqCst), 0);
}

/// A browse session opened on an address the egress policy refuses (a loopback service,
/// directly or through a redirect of an allowed site) is not a site anyone could allow:
/// the first answer is a failure naming the egress refusal, never a `consent_required`
/// pause on the browser's error page; and the service received nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browse_session_refused_by_the_egress_policy_fails_it_never_asks_for_consent() {
    let (victim_addr, victim_hits) = victim().await;
    let site_addr = site(victim_addr, Arc::new(AtomicUsize::new(0))).await;
    let stack =
        common::stack_with(|c| c.egress = c.egress.clone().allow_addr(site_addr), |b| b).await;
    for url in [
        format!("http://{victim_addr}/secret"),
        format!("http://{site_addr}/go"),
    ] {
        let opened = stack
            .client
            .browse_open(
                WORKSPACE,
                &abr_protocol::BrowseRequest {
                    profile: None,
                    url: url.clone(),
                    platform: None,
                    session_id: None,
                    session: None,
                    scope: None,
                    read_only: true,
                    dry_run: false,
                    tenant_id: None,
                    idle_seconds: None,
                    handoff: None,
                },
            )
            .await
            .unwrap();
        let first = &opened.first;
        assert_eq!(
            first.outcome,
            abr_protocol::ActOutcome::Failed,
            "{url}: {first:?}"
        );
        assert!(first.pause.is_none(), "{url}: no pause: {first:?}");
        let code = first
            .error
            .as_ref()
            .map(|e| e.code.clone())
            .unwrap_or_default();
        assert_eq!(code, "egress_refused", "{url}: {first:?}");
        stack
            .client
            .browse_close(WORKSPACE, &opened.browse_id)
            .await
            .unwrap();
    }
    assert_eq!(
        victim_hits.load(Ordering::SeqCst),
        0,
        "the service received nothing"
    );
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
