//! The `demo` strategy keeps the real cause of a failed step: a page closed while the
//! strategy waits for the page after submitting is reported as closed (`page_closed`), at
//! once, and not as a submit that got no answer within its navigation deadline.
//!
//! Real Chromium (local provider) and the demo site; the submit's request is held in the
//! browser (a route that never answers), then the page is closed 2 s later.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::time::{Duration, Instant};

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, PostProgress, SessionProvider, StrategyErrorKind,
    WebPostStrategy,
};
use abr_demo::strategy::PAGE_CLOSED;
use abr_demo::{DemoSite, DemoStrategy, DemoTimeouts};
use abr_protocol::{AgentSessionState, Cookie, FailureStage, PostContent};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};

/// Signs in over plain HTTP and returns the session the site's cookie makes.
async fn signed_in(site: &DemoSite) -> AgentSessionState {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http
        .post(format!("{}/login", site.base_url()))
        .form(&[("username", "carol"), ("password", "demo-password")])
        .send()
        .await
        .unwrap();
    let set_cookie = response.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap();
    let parsed = cookie::Cookie::parse(set_cookie).unwrap();
    let mut cookie = Cookie::new(parsed.name(), parsed.value(), "127.0.0.1");
    cookie.http_only = parsed.http_only().unwrap_or(false);
    AgentSessionState {
        cookies: vec![cookie],
        ..AgentSessionState::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_closed_after_submit_is_reported_closed_not_as_a_navigation_timeout() {
    let site = DemoSite::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    });
    let navigation = Duration::from_secs(15);
    let strategy = DemoStrategy::new(&site.base_url())
        .unwrap()
        .with_timeouts(DemoTimeouts {
            navigation,
            ..DemoTimeouts::default()
        });
    let session = signed_in(&site).await;
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "demo".into(),
            state: Some(session),
            start_url: None,
        })
        .await
        .expect("a browser for the post");
    let page = lease.context().page().clone();

    // The submit (POST /compose) is held in the browser: no answer, no new page.
    let (submitted, mut on_submit) = tokio::sync::mpsc::unbounded_channel::<()>();
    page.route("**/compose", move |route| {
        let submitted = submitted.clone();
        async move {
            if route.request().method() == "POST" {
                let _ = submitted.send(());
                Ok(())
            } else {
                route.continue_(None).await
            }
        }
    })
    .await
    .unwrap();
    let to_close = page.clone();
    let closer = tokio::spawn(async move {
        let seen = tokio::time::timeout(Duration::from_secs(60), on_submit.recv()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let closed_at = Instant::now();
        to_close.close().await.unwrap();
        (matches!(seen, Ok(Some(()))), closed_at)
    });

    let progress = PostProgress::default();
    let result = strategy
        .post(
            lease.context(),
            &PostContent::text("held at submit"),
            &progress,
        )
        .await;
    let returned_at = Instant::now();
    let (submit_seen, closed_at) = closer.await.unwrap();
    let _ = lease.release().await;
    provider.shutdown().await;
    site.shutdown().await;

    assert!(submit_seen, "the strategy never submitted: {result:?}");
    let error = result.expect_err("a closed page cannot have landed");
    assert_eq!(error.code, PAGE_CLOSED, "{error}");
    // The click happened: the outcome stays uncertain, never "safe to retry".
    assert_eq!(error.kind, StrategyErrorKind::Failed, "{error}");
    assert_eq!(progress.current(), FailureStage::Submit);
    assert!(error.message.contains("closed"), "{error}");
    assert!(!error.message.contains("within"), "{error}");
    let after_close = returned_at.saturating_duration_since(closed_at);
    assert!(
        after_close < navigation / 3,
        "reported {after_close:?} after the page was closed"
    );
}
