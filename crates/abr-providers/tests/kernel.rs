//! The Kernel provider against the Kernel double (a real HTTP + WS server, one real local
//! Chromium per browser, `cdp_ws_url` proxied with a jwt): the conformance suite, plus what
//! only Kernel does: bearer auth, typed `{code, message}` errors with `Retry-After`, the live
//! view of headful browsers, server-side expiry, and deleting the browser after a failed
//! acquire.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, Lease, ProviderErrorKind, SessionContext,
    SessionProvider,
};
use abr_doubles::{KernelDouble, KernelOptions};
use abr_providers::conformance::{self, LeakProbe, TestSite};
use abr_providers::{BrowserSession, KernelProviderConfig, KernelSessionProvider};

const STEP: Duration = Duration::from_secs(60);

async fn kernel(opts: KernelOptions) -> KernelDouble {
    KernelDouble::start(opts)
        .await
        .expect("start the Kernel double")
}

/// Test deadlines; the browser may reach what `egress` allows (the test site on loopback).
fn config(double: &KernelDouble, egress: EgressPolicy) -> KernelProviderConfig {
    KernelProviderConfig {
        base_url: double.base_url(),
        rest_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(10),
        navigation_timeout: Duration::from_secs(10),
        egress: Some(egress),
        ..KernelProviderConfig::new(double.api_key())
    }
}

fn provider(double: &KernelDouble, egress: EgressPolicy) -> KernelSessionProvider {
    KernelSessionProvider::new(config(double, egress))
}

fn request(mode: AcquireMode, state: Option<abr_protocol::AgentSessionState>) -> AcquireRequest {
    AcquireRequest {
        mode,
        platform: "test".into(),
        state,
        start_url: None,
    }
}

async fn acquire(provider: &KernelSessionProvider, req: AcquireRequest) -> Lease<BrowserSession> {
    tokio::time::timeout(STEP, provider.acquire(req))
        .await
        .expect("acquire hung")
        .unwrap_or_else(|e| panic!("acquire failed: {e}"))
}

async fn release(lease: Lease<BrowserSession>) {
    tokio::time::timeout(STEP, lease.release())
        .await
        .expect("release hung")
        .expect("release");
}

/// Every browser the double created was deleted (or expired), and no proxied socket is open.
fn assert_clean(double: &KernelDouble) {
    assert_eq!(
        double.assert_all_released(),
        Ok(()),
        "a Kernel browser is still live"
    );
    assert_eq!(
        double.created(),
        double.released() + double.expired(),
        "created {} browsers, deleted {}, expired {}",
        double.created(),
        double.released(),
        double.expired()
    );
    assert_eq!(double.open_sockets(), 0, "proxied CDP sockets left open");
}

fn creates(double: &KernelDouble) -> Vec<abr_doubles::RecordedCall> {
    double
        .calls()
        .into_iter()
        .filter(|c| c.method == "POST" && c.path == "/browsers")
        .collect()
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

struct KernelLeaks<'a>(&'a KernelDouble);

#[async_trait::async_trait]
impl LeakProbe for KernelLeaks<'_> {
    async fn open(&self) -> usize {
        self.0.live_sessions() + self.0.open_sockets()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_conformance() {
    let started = Instant::now();
    let double = kernel(KernelOptions::default()).await;
    let site = Arc::new(TestSite::start().await.unwrap());
    let provider = Arc::new(provider(&double, site.egress()));
    let caps = provider.capabilities();
    assert!(caps.interactive && caps.remote_live_view && caps.isolated_contexts);
    assert_eq!(caps.max_concurrent, None);
    assert_eq!(provider.name(), "kernel");

    conformance::sees_exactly_the_injected_state(provider.as_ref(), &site).await;
    conformance::export_follows_page_changes(provider.as_ref(), &site).await;
    conformance::no_state_from_an_earlier_job(provider.as_ref(), &site).await;
    assert_clean(&double);
    conformance::concurrent_acquires(Arc::clone(&provider), Arc::clone(&site), 3).await;
    assert_clean(&double);
    conformance::survives_a_browser_crash(provider.as_ref(), &site).await;
    assert_clean(&double);
    assert_eq!(
        double.created(),
        1 + 1 + 2 + 3 + 2,
        "one browser per acquire"
    );
    // Every create asked for what the job needs, with the bearer key.
    for call in creates(&double) {
        assert!(call.headers.authorization);
        assert_eq!(
            call.body,
            Some(serde_json::json!({"headless": true, "timeout_seconds": 60}))
        );
    }
    eprintln!("kernel: conformance {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_cycles_leak_nothing() {
    let double = kernel(KernelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = provider(&double, site.egress());
    let started = Instant::now();
    conformance::cycles_leak_nothing(&provider, &site, 50, &KernelLeaks(&double)).await;
    eprintln!("kernel: 50 cycles {:?}", started.elapsed());
    assert_eq!(double.created(), 50);
    assert_clean(&double);
}

#[tokio::test]
async fn kernel_dead_endpoint_is_unavailable() {
    let provider = KernelSessionProvider::new(KernelProviderConfig {
        base_url: format!("http://127.0.0.1:{}", closed_port()),
        ..KernelProviderConfig::new("sk_test")
    });
    let e = conformance::dead_endpoint_is_a_typed_error(&provider, Duration::from_secs(5)).await;
    assert_eq!(e.kind(), ProviderErrorKind::Unavailable, "{e}");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn kernel_create_errors_are_typed() {
    let double = kernel(KernelOptions::default()).await;
    let provider = provider(&double, EgressPolicy::new());

    double.fail_next_create(429);
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Busy, "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    assert!(e.is_retryable());
    assert!(
        e.message().contains("rate_limited"),
        "Kernel's error code is kept: {e}"
    );

    double.fail_next_create(500);
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Unavailable, "{e}");
    assert!(e.is_retryable());

    let wrong = KernelSessionProvider::new(KernelProviderConfig {
        api_key: "sk_wrong".to_owned().into(),
        ..config(&double, EgressPolicy::new())
    });
    let e = wrong
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Misconfigured, "{e}");
    assert!(!e.is_retryable());
    assert!(!e.message().contains("sk_wrong"), "{e}");

    assert_eq!(creates(&double).len(), 3, "no retries");
    assert_eq!(double.created(), 0);
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_concurrency_limit_is_busy_with_retry_after() {
    let double = kernel(KernelOptions {
        max_live: Some(1),
        ..KernelOptions::default()
    })
    .await;
    let provider = provider(&double, EgressPolicy::new());
    let first = acquire(&provider, request(AcquireMode::Unattended, None)).await;
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Busy, "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    release(first).await;
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_interactive_leases_have_a_live_view_and_unattended_ones_do_not() {
    let double = kernel(KernelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = provider(&double, site.egress());
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();

    let lease = acquire(
        &provider,
        request(
            AcquireMode::Interactive,
            Some(conformance::state_for(&site, "i")),
        ),
    )
    .await;
    let Some(viewer) = lease.provider_viewer() else {
        panic!("expected Kernel's viewer, got none")
    };
    let url = viewer.url.expose().to_owned();
    let page = http.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let id = double.unreleased().pop().unwrap();
    assert!(
        page.text().await.unwrap().contains(&id),
        "the viewer shows this lease's browser"
    );
    let seen = conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(seen.cookies().get("sid").map(String::as_str), Some("a-i"));
    release(lease).await;
    assert_eq!(
        http.get(&url).send().await.unwrap().status(),
        404,
        "the viewer ends with the browser"
    );

    let lease = acquire(&provider, request(AcquireMode::Unattended, None)).await;
    assert!(
        lease.provider_viewer().is_none(),
        "a headless browser has no live view"
    );
    release(lease).await;

    let bodies: Vec<_> = creates(&double)
        .into_iter()
        .map(|c| c.body.unwrap()["headless"].clone())
        .collect();
    assert_eq!(bodies, [serde_json::json!(false), serde_json::json!(true)]);
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_expiry_mid_job_is_a_typed_retryable_error() {
    let double = kernel(KernelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = provider(&double, site.egress());
    let lease = acquire(
        &provider,
        request(
            AcquireMode::Unattended,
            Some(conformance::state_for(&site, "e")),
        ),
    )
    .await;
    conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    let id = double.unreleased().pop().unwrap();
    assert!(double.expire_session(&id).await);

    let e = tokio::time::timeout(Duration::from_secs(20), async {
        // The socket close may take a moment to be noticed.
        loop {
            if let Err(e) = lease.context().export_state().await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a call on an expired browser hung or kept succeeding");
    assert!(e.is_retryable(), "{e}");
    assert!(
        matches!(
            e.kind(),
            ProviderErrorKind::Crashed | ProviderErrorKind::Unavailable
        ),
        "{e}"
    );
    assert!(
        !e.message().contains("jwt="),
        "the CDP URL's token is not in errors: {e}"
    );

    // Release completes: DELETE of a browser already gone (404) is fine.
    tokio::time::timeout(Duration::from_secs(20), lease.release())
        .await
        .expect("release hung")
        .expect("release");
    let deletes: Vec<_> = double
        .calls()
        .into_iter()
        .filter(|c| c.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].status, 404);

    let next = acquire(
        &provider,
        request(
            AcquireMode::Unattended,
            Some(conformance::state_for(&site, "n")),
        ),
    )
    .await;
    let seen = conformance::visit(next.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(seen.cookies().get("sid").map(String::as_str), Some("a-n"));
    release(next).await;
    assert_eq!(
        (double.created(), double.released(), double.expired()),
        (2, 1, 1)
    );
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_a_failure_after_create_still_deletes_the_browser() {
    let double = kernel(KernelOptions::default()).await;
    // The start page is allowed and unreachable: the navigation itself fails.
    let closed = closed_port();
    let provider = provider(
        &double,
        EgressPolicy::new().allow_addr(([127, 0, 0, 1], closed).into()),
    );
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://127.0.0.1:{closed}/"));
    let e = tokio::time::timeout(STEP, provider.acquire(req))
        .await
        .expect("hung")
        .unwrap_err();
    assert!(e.message().contains("start page"), "{e}");
    assert_eq!(
        (double.created(), double.released()),
        (1, 1),
        "the browser was deleted"
    );
    assert!(
        creates(&double)[0]
            .body
            .as_ref()
            .unwrap()
            .get("start_url")
            .is_none(),
        "the provider navigates itself"
    );
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_dropped_and_cancelled_leases_are_deleted() {
    let double = kernel(KernelOptions::default()).await;
    // A start page that never answers (allowed, so the browser does wait for it).
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_addr = hang.local_addr().unwrap();
    let provider = provider(&double, EgressPolicy::new().allow_addr(hang_addr));
    drop(acquire(&provider, request(AcquireMode::Unattended, None)).await);
    wait_until(Duration::from_secs(15), || double.released() == 1).await;

    // An acquire cancelled after the browser was created (stuck on its start page).
    let port = hang_addr.port();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = hang.accept().await {
            held.push(socket);
        }
    });
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://127.0.0.1:{port}/"));
    let cancelled = tokio::time::timeout(Duration::from_secs(3), provider.acquire(req)).await;
    assert!(
        cancelled.is_err(),
        "the acquire should still be waiting for the start page"
    );
    assert_eq!(double.created(), 2);
    wait_until(Duration::from_secs(15), || double.released() == 2).await;
    holder.abort();
    assert_clean(&double);
}

async fn wait_until(deadline: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < deadline,
            "condition not met within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
