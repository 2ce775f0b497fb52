//! Faults inside a leased local browser, injected as the chaos layer does
//! ([`FaultTarget`]): a browser that freezes (its connection open, nothing answering) is
//! ended by its process at the release and at the next acquire, within their deadlines,
//! never waited for; a crash or a closed page loses the session and the next acquire
//! relaunches; a stall only delays. And wear: a shared browser is replaced after its set
//! number of leases, and closed only once its last lease ended.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::time::{Duration, Instant};

use abr_core::chaos::{Fault, FaultTarget};
use abr_core::{AcquireMode, ProviderErrorKind, SessionContext, SessionProvider};
use abr_providers::conformance::{self, TestSite};
use abr_providers::{BrowserProcess, LocalBrowserSessionProvider, LocalProviderConfig};

/// A call that gets no answer is cut after this (the test's own bound, not the provider's).
const NO_ANSWER: Duration = Duration::from_secs(2);

fn provider(
    site: &TestSite,
    recycle_after: Option<usize>,
    prewarm: usize,
) -> LocalBrowserSessionProvider {
    LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        prewarm,
        recycle_after,
        ..LocalProviderConfig::default()
    })
}

fn request() -> abr_core::AcquireRequest {
    conformance::request(AcquireMode::Unattended, None)
}

/// Waits until `process` is gone (a killed process is reaped by its parent, the driver).
async fn gone(process: &BrowserProcess) -> bool {
    for _ in 0..100 {
        if process.pid().is_none() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_browser_is_ended_at_the_release_not_waited_for() {
    let site = TestSite::start().await.unwrap();
    let provider = provider(&site, None, 0);
    let page = format!("{}/page", site.origin_a());
    let lease = provider.acquire(request()).await.unwrap();
    conformance::visit(lease.context(), &page).await;
    let process = lease
        .context()
        .process()
        .cloned()
        .expect("a launched browser");
    assert!(process.pid().is_some());

    assert!(lease.context().inject(Fault::Freeze, Duration::ZERO).await);
    assert!(
        tokio::time::timeout(NO_ANSWER, lease.context().page().title())
            .await
            .is_err(),
        "a frozen browser answers nothing (and closes nothing)"
    );

    // The release would wait forever on the context's close: it is bounded, and the
    // browser is ended by its process.
    let started = Instant::now();
    let released = tokio::time::timeout(Duration::from_secs(15), lease.release())
        .await
        .expect("the release of a frozen browser ends");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let error = released.expect_err("a browser ended by its process is reported");
    assert_eq!(error.kind(), ProviderErrorKind::Unavailable);
    assert!(
        gone(&process).await,
        "the frozen browser's process was ended"
    );
    assert_eq!(provider.killed(), 1);

    // A release its caller gives up on (the engine's release deadline, shorter than the
    // provider's when the request's deadline is short) still ends a frozen browser.
    let lease = provider.acquire(request()).await.unwrap();
    let process = lease.context().process().cloned().unwrap();
    assert!(process.freeze());
    assert!(
        tokio::time::timeout(Duration::from_secs(1), lease.release())
            .await
            .is_err()
    );
    assert!(gone(&process).await, "the abandoned release still ended it");
    assert_eq!(provider.killed(), 2);

    // The next acquire runs on a new browser.
    let next = provider.acquire(request()).await.unwrap();
    conformance::visit(next.context(), &page).await;
    assert_ne!(next.context().process(), Some(&process));
    assert_eq!(provider.launches(), 3);
    next.release().await.unwrap();
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_on_a_frozen_browser_ends_it_typed_and_the_next_relaunches() {
    let site = TestSite::start().await.unwrap();
    let provider = provider(&site, None, 0);
    let first = provider.acquire(request()).await.unwrap();
    let process = first.context().process().cloned().unwrap();
    first.release().await.unwrap();
    // Frozen between two leases (a fault that struck after its run): the shared browser
    // still looks connected.
    assert!(process.freeze());

    let started = Instant::now();
    let refused = tokio::time::timeout(Duration::from_secs(20), provider.acquire(request()))
        .await
        .expect("an acquire on a frozen browser ends within its own deadline")
        .expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refused.kind(), ProviderErrorKind::Unavailable);
    assert!(refused.is_retryable(), "{refused}");
    assert!(gone(&process).await);

    let next = provider.acquire(request()).await.unwrap();
    assert_eq!(provider.launches(), 2);
    let process = next.context().process().cloned().unwrap();
    next.release().await.unwrap();

    // A caller that gives up first (the engine's own acquire deadline, shorter than the
    // provider's) does not leave the frozen browser to the next acquire: it is ended all
    // the same, within the provider's deadline.
    assert!(process.freeze());
    assert!(
        tokio::time::timeout(Duration::from_secs(2), provider.acquire(request()))
            .await
            .is_err(),
        "no answer from a frozen browser"
    );
    let mut ended = false;
    for _ in 0..150 {
        if process.pid().is_none() {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "the abandoned setup still ended the frozen browser");
    let next = provider.acquire(request()).await.unwrap();
    assert_eq!(provider.launches(), 3);
    next.release().await.unwrap();
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_or_a_closed_page_loses_the_session_and_a_stall_only_delays() {
    let site = TestSite::start().await.unwrap();
    let provider = provider(&site, None, 0);
    let page = format!("{}/page", site.origin_a());

    // Slow steps: the browser stalls, then answers.
    let lease = provider.acquire(request()).await.unwrap();
    let stall = Duration::from_millis(700);
    let context = lease.context().clone();
    let stalled = tokio::spawn(async move { context.inject(Fault::SlowSteps, stall).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    conformance::visit(lease.context(), &page).await;
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert!(stalled.await.unwrap());
    assert!(!lease.context().is_lost().await);

    // A closed page.
    assert!(
        lease
            .context()
            .inject(Fault::ClosePage, Duration::ZERO)
            .await
    );
    assert!(lease.context().is_lost().await);
    lease.release().await.unwrap();

    // A crash: the browser's process dies; the release is prompt; the next acquire relaunches.
    let lease = provider.acquire(request()).await.unwrap();
    let process = lease.context().process().cloned().unwrap();
    assert!(lease.context().inject(Fault::Crash, Duration::ZERO).await);
    assert!(gone(&process).await);
    let mut lost = false;
    for _ in 0..50 {
        lost = lease.context().is_lost().await;
        if lost {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(lost, "a crashed browser's session is lost");
    let started = Instant::now();
    lease.release().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    let next = provider.acquire(request()).await.unwrap();
    conformance::visit(next.context(), &page).await;
    assert_eq!(provider.launches(), 2, "the next acquire relaunched");
    next.release().await.unwrap();
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worn_out_browser_is_replaced_and_closed_after_its_last_lease() {
    let site = TestSite::start().await.unwrap();
    let provider = provider(&site, Some(3), 2);
    let page = format!("{}/page", site.origin_a());
    for _ in 0..2 {
        let lease = provider.acquire(request()).await.unwrap();
        lease.release().await.unwrap();
    }
    // The third lease is the old browser's last: kept open across the replacement.
    let last = provider.acquire(request()).await.unwrap();
    let old = last.context().process().cloned().unwrap();
    provider.settle().await;

    let fresh = provider.acquire(request()).await.unwrap();
    let new = fresh.context().process().cloned().unwrap();
    assert_ne!(new, old, "the fourth lease runs on a new browser");
    assert_eq!((provider.launches(), provider.recycled()), (2, 1));
    assert!(
        old.pid().is_some(),
        "the old browser stays while its last lease runs"
    );
    conformance::visit(last.context(), &page).await;
    conformance::visit(fresh.context(), &page).await;

    last.release().await.unwrap();
    assert!(gone(&old).await, "closed once its last lease ended");
    provider.settle().await;
    // Warm contexts made in the old browser are never handed out from the new one.
    for _ in 0..2 {
        let lease = provider.acquire(request()).await.unwrap();
        assert_eq!(lease.context().process(), Some(&new));
        conformance::visit(lease.context(), &page).await;
        lease.release().await.unwrap();
    }
    fresh.release().await.unwrap();
    assert_eq!(provider.killed(), 0, "a worn-out browser closes politely");
    provider.shutdown().await;
    assert!(gone(&new).await, "shutdown closes the current one");
}
