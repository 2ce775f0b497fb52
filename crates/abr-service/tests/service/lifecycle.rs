//! The runner's lifecycle on real Chromium: a graceful shutdown lets an in-flight post finish
//! and releases every capture; a panicking strategy fails only its own request; a policy
//! without unattended execution is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use abr_core::{
    PostProgress, StrategyError, StrategyPolicy, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};
use abr_demo::FaultMode;
use abr_protocol::{FailureStage, PostContent, PostOutcome, VerificationMethod};
use abr_providers::BrowserSession;
use async_trait::async_trait;
use common::*;

/// Bound of each test.
const TEST_LIMIT: Duration = Duration::from_secs(240);

/// Stop the server while a post runs: the post completes and its client gets the result; the
/// capture is released, its live view is gone, and no new connection is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_the_running_post_and_releases_captures() {
    tokio::time::timeout(TEST_LIMIT, graceful_shutdown())
        .await
        .expect("the test took too long");
}

async fn graceful_shutdown() {
    let stack = stack().await;
    let runner = Arc::clone(stack.server.runner());
    let addr = stack.server.local_addr();

    let capture = stack.client.capture_start(&start_request()).await.unwrap();
    let token = live_token(&capture.live_view_url);
    assert!(runner.engine.live_target(&token).is_some());
    assert_eq!(runner.engine.load().open_captures, 1);

    let session = signed_in_session(&stack.site, "erin").await;
    stack.site.set_fault(FaultMode::SlowToast);
    let text = format!("posted across a shutdown {}", random_suffix());
    let post = {
        let client = stack.client.clone();
        let request = post_request("demo", session, &text);
        tokio::spawn(async move { client.post(&request).await })
    };
    // Saved by the site: the post now waits about 3 s for its toast.
    wait_for("the post to be saved", WAIT, || {
        stack.site.posts().iter().any(|p| p.text == text)
    })
    .await;

    let Stack {
        site,
        server,
        client,
    } = stack;
    let shutdown = tokio::spawn(server.shutdown());

    // New connections are refused at once, while the post is still finishing.
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the runner kept accepting connections after shutdown began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    tokio::time::timeout(WAIT, shutdown)
        .await
        .expect("the shutdown never finished")
        .unwrap();
    let result = tokio::time::timeout(WAIT, post)
        .await
        .expect("the post never answered")
        .unwrap()
        .expect("the in-flight post lost its answer");
    assert!(result.ok, "{result:?}");
    assert_eq!(result.outcome(), PostOutcome::Confirmed);
    assert_eq!(
        result.verification.as_ref().map(|v| v.method),
        Some(VerificationMethod::Toast),
        "{result:?}"
    );
    assert_eq!(
        site.posts().iter().filter(|p| p.text == text).count(),
        1,
        "posted exactly once"
    );

    // The capture was released with the runner.
    assert_eq!(runner.engine.load().open_captures, 0);
    assert!(runner.engine.live_target(&token).is_none());
    assert!(
        runner
            .engine
            .capture_status(&operator(), &bound(&capture.capture_id))
            .await
            .is_err()
    );
    // Nothing answers any more: not the live view, not the API.
    let live = raw_http().get(&capture.live_view_url).send().await;
    assert!(
        live.as_ref().is_err_and(reqwest::Error::is_connect),
        "the live view still answered: {live:?}"
    );
    let e = client.health().await.unwrap_err();
    assert!(e.is_connect(), "{e}");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    // New jobs are refused by the runner itself too.
    assert!(runner.engine.hold_job_slot().await.is_err());

    site.shutdown().await;
}

/// Where a [`TestStrategy`] panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Panics {
    /// In `post`, after entering the compose stage.
    InPost,
    /// In `is_authenticated`.
    InSignInCheck,
    /// Never (it reports that nothing was posted).
    Never,
}

/// A strategy that touches no page: it panics where told, or reports nothing posted.
#[derive(Debug)]
struct TestStrategy {
    id: &'static str,
    policy: StrategyPolicy,
    panics: Panics,
}

impl TestStrategy {
    fn new(id: &'static str, panics: Panics, allow_unattended: bool) -> Arc<Self> {
        Arc::new(Self {
            id,
            policy: StrategyPolicy {
                allow_interactive_capture: true,
                allow_unattended,
                scope: None,
                read_only: false,
                screenshots: true,
                network: abr_core::guard::NetworkRules::default(),
                guard: None,
                redaction: abr_core::guard::PageRedaction::default(),
            },
            panics,
        })
    }
}

#[async_trait]
impl WebPostStrategy<BrowserSession> for TestStrategy {
    fn platform(&self) -> &str {
        self.id
    }

    fn policy(&self) -> &StrategyPolicy {
        &self.policy
    }

    fn start_url(&self) -> &str {
        "about:blank"
    }

    async fn is_authenticated(&self, _context: &BrowserSession) -> Result<bool, StrategyError> {
        if self.panics == Panics::InSignInCheck {
            panic!("{}: the sign-in check blew up", self.id);
        }
        Ok(true)
    }

    async fn post(
        &self,
        _context: &BrowserSession,
        _content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError> {
        progress.enter(FailureStage::Compose);
        if self.panics == Panics::InPost {
            panic!("{}: composing blew up", self.id);
        }
        Err(StrategyError::not_posted(
            "test_not_posted",
            "the test strategy never posts",
        ))
    }

    async fn verify(
        &self,
        _context: &BrowserSession,
        _receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError> {
        Ok(VerifyOutcome::NotPosted {
            detail: "the test strategy never posts".into(),
        })
    }
}

/// A strategy panic fails its own request only (as an outcome, or a 500 for a probe); the
/// demo posts next to it and after it succeed; the server goes on serving. A platform whose
/// policy forbids unattended execution is refused with 403 for post and probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_strategy_fails_only_its_own_request() {
    tokio::time::timeout(TEST_LIMIT, panicking_strategies())
        .await
        .expect("the test took too long");
}

async fn panicking_strategies() {
    let stack = stack_with(
        |_| {},
        |b| {
            b.strategy(TestStrategy::new("boom", Panics::InPost, true))
                .unwrap()
                .strategy(TestStrategy::new("boom2", Panics::InSignInCheck, true))
                .unwrap()
                .strategy(TestStrategy::new("locked", Panics::Never, false))
                .unwrap()
        },
    )
    .await;
    let client = &stack.client;
    let listed: Vec<String> = client
        .platforms()
        .await
        .unwrap()
        .platforms
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(listed, ["boom", "boom2", "demo", "locked"]);
    let session = signed_in_session(&stack.site, "frank").await;

    // A panic while composing, next to a demo post running at the same time.
    let text = format!("next to a panic {}", random_suffix());
    let boom_request = post_request("boom", session.clone(), "never posted");
    let demo_request = post_request("demo", session.clone(), &text);
    let (boom, demo) = tokio::join!(client.post(&boom_request), client.post(&demo_request));
    let boom = boom.expect("a strategy panic is an outcome, not an HTTP error");
    assert!(
        !boom.ok && !boom.uncertain && !boom.needs_reauth,
        "{boom:?}"
    );
    assert_eq!(boom.outcome(), PostOutcome::Failed);
    assert_eq!(boom.failure_stage, Some(FailureStage::Compose), "{boom:?}");
    let error = boom.error.as_ref().expect("an error body");
    assert_eq!(error.code, "strategy_panicked");
    assert!(
        !error.message.contains("blew up"),
        "the panic message is not returned"
    );
    let demo = demo.unwrap();
    assert!(demo.ok, "{demo:?}");
    assert_eq!(
        stack.site.posts().iter().filter(|p| p.text == text).count(),
        1
    );

    // A panic in the sign-in check: a failed post at precheck, a 500 envelope for a probe.
    let boom2 = client
        .post(&post_request("boom2", session.clone(), "never posted"))
        .await
        .unwrap();
    assert!(!boom2.ok && !boom2.uncertain, "{boom2:?}");
    assert_eq!(
        boom2.failure_stage,
        Some(FailureStage::Precheck),
        "{boom2:?}"
    );
    assert_eq!(
        boom2.error.as_ref().map(|e| e.code.as_str()),
        Some("strategy_panicked")
    );
    let e = client
        .probe(&probe_request("boom2", session.clone()))
        .await
        .unwrap_err();
    assert_eq!(
        api_error(&e),
        (500, "strategy_panicked".into(), false),
        "{e}"
    );
    assert!(
        !e.api_message().unwrap_or_default().contains("blew up"),
        "{e}"
    );

    // Unattended execution denied by policy: refused for post and probe.
    let e = client
        .post(&post_request("locked", session.clone(), "never posted"))
        .await
        .unwrap_err();
    assert_eq!(
        api_error(&e),
        (403, "execution_denied".into(), false),
        "{e}"
    );
    let e = client
        .probe(&probe_request("locked", session.clone()))
        .await
        .unwrap_err();
    assert_eq!(
        api_error(&e),
        (403, "execution_denied".into(), false),
        "{e}"
    );

    // The server goes on: health, a probe and another post on the demo platform.
    assert_eq!(client.health().await.unwrap().status, "ok");
    let session = demo.refreshed_session.unwrap_or(session);
    let probe = client
        .probe(&probe_request("demo", session.clone()))
        .await
        .unwrap();
    assert!(probe.authenticated, "{probe:?}");
    let after = format!("after the panics {}", random_suffix());
    let result = client
        .post(&post_request("demo", session, &after))
        .await
        .unwrap();
    assert!(result.ok, "{result:?}");
    let texts: Vec<String> = stack.site.posts().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, [text, after], "only the demo posts were published");
    assert_eq!(stack.server.runner().engine.load().jobs_queued, 0);

    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
