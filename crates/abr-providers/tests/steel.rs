//! The Steel provider against the Steel OSS double (a real HTTP + WS server whose CDP URL
//! proxies to a real local Chromium): the conformance suite through `oss_serialized`, plus
//! what only Steel does: typed REST errors, the first-create retry, `0.0.0.0` URL rewriting,
//! server-side expiry, releasing after a failed acquire, and cleaning state an earlier
//! session left in the shared default context.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, Lease, ProviderErrorKind, SerializedProvider,
    SessionContext, SessionProvider,
};
use abr_doubles::{SteelDouble, SteelOptions};
use abr_providers::conformance::{self, LeakProbe, TestSite};
use abr_providers::{BrowserSession, SteelFlavor, SteelProviderConfig, SteelSessionProvider};
use playwright_rs::protocol::GotoOptions;

const STEP: Duration = Duration::from_secs(60);

async fn steel(opts: SteelOptions) -> SteelDouble {
    SteelDouble::start(opts)
        .await
        .expect("start the Steel double")
}

/// Test deadlines; the browser may reach what `egress` allows (the test site on loopback).
fn config(base_url: &str, egress: EgressPolicy) -> SteelProviderConfig {
    SteelProviderConfig {
        rest_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(10),
        navigation_timeout: Duration::from_secs(10),
        egress: Some(egress),
        ..SteelProviderConfig::oss(base_url)
    }
}

fn serialized(
    double: &SteelDouble,
    egress: EgressPolicy,
) -> SerializedProvider<SteelSessionProvider> {
    SteelSessionProvider::oss_serialized(
        config(&double.base_url(), egress),
        Duration::from_secs(60),
    )
}

fn request(mode: AcquireMode, state: Option<abr_protocol::AgentSessionState>) -> AcquireRequest {
    AcquireRequest {
        mode,
        platform: "test".into(),
        state,
        start_url: None,
    }
}

async fn acquire<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    req: AcquireRequest,
) -> Lease<BrowserSession> {
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

/// Every session the double created was released (or expired), none is live, no proxied
/// socket is open.
fn assert_clean(double: &SteelDouble) {
    assert_eq!(
        double.assert_all_released(),
        Ok(()),
        "a Steel session is still live"
    );
    assert_eq!(
        double.created(),
        double.released() + double.expired(),
        "created {} sessions, released {}, expired {}",
        double.created(),
        double.released(),
        double.expired()
    );
    assert!(
        double.replaced().is_empty(),
        "a create replaced a live session: {:?}",
        double.replaced()
    );
    assert_eq!(double.open_sockets(), 0, "proxied CDP sockets left open");
}

fn posts(double: &SteelDouble, path: &str) -> usize {
    double
        .calls()
        .iter()
        .filter(|c| c.method == "POST" && c.path == path)
        .count()
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

struct SteelLeaks<'a>(&'a SteelDouble);

#[async_trait::async_trait]
impl LeakProbe for SteelLeaks<'_> {
    async fn open(&self) -> usize {
        self.0.live_sessions() + self.0.open_sockets()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_oss_conformance() {
    let started = Instant::now();
    let double = steel(SteelOptions::default()).await;
    let site = Arc::new(TestSite::start().await.unwrap());
    let provider = Arc::new(serialized(&double, site.egress()));
    let caps = provider.capabilities();
    assert!(caps.interactive && caps.remote_live_view);
    assert!(
        !caps.isolated_contexts,
        "OSS jobs share the one browser's default context"
    );
    assert_eq!(caps.max_concurrent, Some(1));
    assert_eq!(provider.name(), "steel");

    conformance::sees_exactly_the_injected_state(provider.as_ref(), &site).await;
    conformance::export_follows_page_changes(provider.as_ref(), &site).await;
    conformance::no_state_from_an_earlier_job(provider.as_ref(), &site).await;
    assert_clean(&double);
    eprintln!("steel: state checks {:?}", started.elapsed());
    conformance::concurrent_acquires(Arc::clone(&provider), Arc::clone(&site), 3).await;
    assert_clean(&double);
    conformance::survives_a_browser_crash(provider.as_ref(), &site).await;
    assert_clean(&double);
    assert_eq!(
        double.created(),
        1 + 1 + 2 + 3 + 2,
        "one session per acquire"
    );
    eprintln!("steel: conformance {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_oss_cycles_leak_nothing() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    let started = Instant::now();
    conformance::cycles_leak_nothing(&provider, &site, 50, &SteelLeaks(&double)).await;
    eprintln!("steel: 50 cycles {:?}", started.elapsed());
    assert_eq!(double.created(), 50);
    assert_clean(&double);
}

#[tokio::test]
async fn steel_dead_endpoint_is_unavailable() {
    let base = format!("http://127.0.0.1:{}", closed_port());
    let provider = SteelSessionProvider::oss_serialized(
        config(&base, EgressPolicy::new()),
        Duration::from_secs(5),
    );
    let e = conformance::dead_endpoint_is_a_typed_error(&provider, Duration::from_secs(5)).await;
    assert_eq!(e.kind(), ProviderErrorKind::Unavailable, "{e}");
    assert!(e.is_retryable());
    assert!(
        !e.message().contains("127.0.0.1"),
        "no URL in the message: {e}"
    );
}

#[tokio::test]
async fn steel_a_malformed_base_url_is_misconfigured() {
    let provider = SteelSessionProvider::new(config("127.0.0.1:3000", EgressPolicy::new()));
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Misconfigured, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_create_errors_are_typed() {
    let double = steel(SteelOptions::default()).await;
    let provider = serialized(&double, EgressPolicy::new());
    // Warm up: only the provider's first create is retried.
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;

    double.fail_next_create(429);
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Busy, "{e}");
    assert_eq!(
        e.retry_after(),
        Some(Duration::from_secs(2)),
        "Retry-After is carried"
    );
    assert!(e.is_retryable());

    double.fail_next_create(500);
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Unavailable, "{e}");
    assert!(e.is_retryable());
    assert!(
        e.message().contains("injected failure"),
        "the server's message is kept: {e}"
    );
    assert_eq!(
        posts(&double, "/v1/sessions"),
        3,
        "a warm provider does not retry"
    );

    // The provider still works after the failures.
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    assert_eq!(double.created(), 2);
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_the_first_create_is_retried_briefly() {
    let double = steel(SteelOptions::default()).await;
    // A server still starting its browser (profile lock) fails the first create.
    double.fail_next_create(500);
    let provider = serialized(&double, EgressPolicy::new());
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    assert_eq!(
        posts(&double, "/v1/sessions"),
        2,
        "one failed create, one retry"
    );
    assert_clean(&double);

    // The retry is bounded: a server that keeps failing gives a typed error quickly.
    let double = steel(SteelOptions::default()).await;
    for _ in 0..5 {
        double.fail_next_create(500);
    }
    let provider = serialized(&double, EgressPolicy::new());
    let started = Instant::now();
    let e = provider
        .acquire(request(AcquireMode::Unattended, None))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Unavailable, "{e}");
    assert_eq!(posts(&double, "/v1/sessions"), 3, "two retries at most");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(double.created(), 0);
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_rewrites_0000_urls_and_serves_the_live_view() {
    let double = steel(SteelOptions {
        advertise_host_0000: true,
        ..SteelOptions::default()
    })
    .await;
    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    let lease = acquire(
        &provider,
        request(
            AcquireMode::Interactive,
            Some(conformance::state_for(&site, "z")),
        ),
    )
    .await;
    let seen = conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(seen.cookies().get("sid").map(String::as_str), Some("a-z"));
    let upgrades: Vec<_> = double
        .calls()
        .into_iter()
        .filter(|c| c.headers.websocket_upgrade && c.status == 101)
        .collect();
    assert_eq!(
        upgrades.len(),
        1,
        "attached through the double's rewritten ws URL"
    );

    let Some(viewer) = lease.provider_viewer() else {
        panic!("expected Steel's viewer, got none")
    };
    let url = viewer.url.expose().to_owned();
    assert!(!url.contains("0.0.0.0"), "{url}");
    assert!(url.starts_with(&double.base_url()), "{url}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let page = http.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains(&double.active_session_id())
    );
    // (After release the double answers 404; the real OSS viewer would show the next idle
    // browser, so that is not asserted here.)
    release(lease).await;
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_expiry_mid_job_is_a_typed_retryable_error() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    let lease = acquire(
        &provider,
        request(
            AcquireMode::Unattended,
            Some(conformance::state_for(&site, "e")),
        ),
    )
    .await;
    conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert!(double.expire_session(&double.active_session_id()).await);

    let e = tokio::time::timeout(Duration::from_secs(20), async {
        // The disconnect may take a moment to be noticed: retry a few calls.
        loop {
            if let Err(e) = lease.context().export_state().await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a call on an expired session hung or kept succeeding");
    assert!(e.is_retryable(), "{e}");
    assert!(
        matches!(
            e.kind(),
            ProviderErrorKind::Crashed | ProviderErrorKind::Unavailable
        ),
        "{e}"
    );

    tokio::time::timeout(Duration::from_secs(20), lease.release())
        .await
        .expect("release hung")
        .expect("release");
    assert_eq!(double.released(), 0);
    assert!(
        !double
            .calls()
            .iter()
            .any(|c| c.method == "POST" && c.path.ends_with("/release")),
        "the session had ended: no release that would end whatever session is current"
    );
    // The next job works.
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
async fn steel_a_failure_after_create_still_releases() {
    let double = steel(SteelOptions::default()).await;
    // The start page is allowed and unreachable: the navigation itself fails.
    let closed = closed_port();
    let provider = serialized(
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
        "the session was released"
    );
    assert_clean(&double);
    // The queue moved on.
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_dropped_and_cancelled_leases_are_released() {
    let double = steel(SteelOptions::default()).await;
    // A start page that never answers (allowed, so the browser does wait for it).
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_addr = hang.local_addr().unwrap();
    let provider = serialized(&double, EgressPolicy::new().allow_addr(hang_addr));
    drop(acquire(&provider, request(AcquireMode::Unattended, None)).await);
    // The next acquire queues behind the background release (the permit is held until then).
    let lease = acquire(&provider, request(AcquireMode::Unattended, None)).await;
    assert_eq!(
        double.released(),
        1,
        "the dropped lease was released before the next job"
    );
    release(lease).await;

    // An acquire cancelled after the session was created (stuck on its start page).
    let port = hang_addr.port();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = hang.accept().await {
            held.push(socket);
        }
    });
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://127.0.0.1:{port}/"));
    let created = double.created();
    let cancelled = tokio::time::timeout(Duration::from_secs(3), provider.acquire(req)).await;
    assert!(
        cancelled.is_err(),
        "the acquire should still be waiting for the start page"
    );
    assert_eq!(double.created(), created + 1);
    wait_until(Duration::from_secs(15), || double.live_sessions() == 0).await;
    holder.abort();
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_cleans_state_an_earlier_session_left_behind() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    // Another client created a session, left a cookie, localStorage and an open tab, and never
    // released it (OSS would also carry localStorage over a release, providers.md §2.9).
    leave_state_behind(&double, &site).await;

    let provider = serialized(&double, site.egress());
    let lease = acquire(
        &provider,
        request(
            AcquireMode::Unattended,
            Some(conformance::state_for(&site, "new")),
        ),
    )
    .await;
    assert_eq!(
        double.replaced().len(),
        1,
        "the provider's create replaced the foreign session"
    );
    assert_eq!(
        lease.context().context().pages().len(),
        1,
        "leftover tabs were replaced"
    );
    let seen = conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(
        seen.cookies(),
        BTreeMap::from([("sid".to_owned(), "a-new".to_owned())]),
        "leftover cookie"
    );
    assert_eq!(
        seen.ls,
        BTreeMap::from([("k1".to_owned(), "v1-new".to_owned())]),
        "leftover localStorage"
    );
    release(lease).await;
    assert_eq!(double.assert_all_released(), Ok(()));
    assert_eq!(
        (double.created(), double.released()),
        (2, 1),
        "ours was released"
    );

    // Without the storage clean-up the leftover localStorage is visible: the check above
    // is not vacuous.
    let double = steel(SteelOptions::default()).await;
    leave_state_behind(&double, &site).await;
    let provider = SteelSessionProvider::oss_serialized(
        SteelProviderConfig {
            clear_leftover_storage: false,
            ..config(&double.base_url(), site.egress())
        },
        Duration::from_secs(30),
    );
    let lease = acquire(
        &provider,
        request(
            AcquireMode::Unattended,
            Some(conformance::state_for(&site, "new")),
        ),
    )
    .await;
    let seen = conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(
        seen.cookies(),
        BTreeMap::from([("sid".to_owned(), "a-new".to_owned())]),
        "cookies are always cleared"
    );
    assert_eq!(
        seen.ls.get("stale").map(String::as_str),
        Some("l"),
        "{:?}",
        seen.ls
    );
    release(lease).await;
    assert_eq!(double.assert_all_released(), Ok(()));
    assert_eq!(
        (double.created(), double.released()),
        (2, 1),
        "ours was released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_cloud_sends_the_key_on_rest_and_cdp() {
    // The OSS double ignores keys but records them; the CDP proxy accepts any path and query.
    let double = steel(SteelOptions::default()).await;
    let provider = SteelSessionProvider::new(SteelProviderConfig {
        base_url: double.base_url(),
        ..SteelProviderConfig::cloud("ste-test-key")
    });
    assert_eq!(provider.config().flavor, SteelFlavor::Cloud);
    let caps = provider.capabilities();
    assert!(caps.isolated_contexts && caps.max_concurrent.is_none());
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    let calls = double.calls();
    let rest: Vec<_> = calls
        .iter()
        .filter(|c| c.path.starts_with("/v1/"))
        .collect();
    assert!(
        !rest.is_empty() && rest.iter().all(|c| c.headers.steel_api_key),
        "steel-api-key on every REST call"
    );
    let upgrade = calls
        .iter()
        .find(|c| c.headers.websocket_upgrade)
        .expect("a CDP upgrade");
    assert_eq!(upgrade.query.as_deref(), Some("apiKey=ste-test-key"));
    assert!(
        !calls.iter().any(|c| c.path.ends_with("/context")),
        "Cloud sessions are fresh browsers"
    );
    assert_clean(&double);
}

/// Creates a session outside the provider, leaves a cookie, localStorage and an open tab on
/// origin A, and disconnects without releasing.
async fn leave_state_behind(double: &SteelDouble, site: &TestSite) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let created = http
        .post(format!("{}/v1/sessions", double.base_url()))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let pw = abr_providers::driver::playwright().await.unwrap();
    let browser = pw
        .chromium()
        .connect_over_cdp(&double.ws_url(), None)
        .await
        .unwrap();
    let page = browser.contexts()[0].new_page().await.unwrap();
    page.goto(
        &format!("{}/set?name=stale&value=s", site.origin_a()),
        GotoOptions::new().timeout(Duration::from_secs(10)),
    )
    .await
    .unwrap();
    page.evaluate::<(), ()>("() => localStorage.setItem('stale', 'l')", None)
        .await
        .unwrap();
    browser.close().await.unwrap();
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
