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
    AcquireMode, EgressPolicy, ProviderErrorKind, SerializedProvider, SessionContext,
    SessionProvider,
};
use abr_doubles::{SteelDouble, SteelOptions};
use abr_providers::conformance::{
    self, RemoteService, TestSite, acquire_with as acquire, closed_port, release, request,
};
use abr_providers::{SteelFlavor, SteelProviderConfig, SteelSessionProvider};
use playwright_rs::protocol::GotoOptions;

/// Test deadlines; the browser may reach what `egress` allows (the test site on loopback).
fn config(base_url: &str, egress: EgressPolicy) -> SteelProviderConfig {
    SteelProviderConfig {
        // The double starts a real Chromium per browser: a cold start beside the suite's
        // other browsers took over 20 s once; the runner's default is 60 s.
        rest_timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(10),
        navigation_timeout: Duration::from_secs(10),
        egress: Some(egress),
        ..SteelProviderConfig::oss(base_url)
    }
}

async fn steel(opts: SteelOptions) -> SteelDouble {
    SteelDouble::start(opts)
        .await
        .expect("start the Steel double")
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

/// The double as the conformance suite sees a remote service.
struct Service<'a>(&'a SteelDouble, std::sync::Mutex<Vec<String>>);

impl<'a> Service<'a> {
    fn of(double: &'a SteelDouble) -> Self {
        Self(double, std::sync::Mutex::default())
    }

    /// Ids of the sessions [`RemoteService::expire_latest`] expired.
    fn expired_ids(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl RemoteService for Service<'_> {
    fn created(&self) -> u64 {
        self.0.created()
    }
    fn ended(&self) -> u64 {
        self.0.released()
    }
    fn expired(&self) -> u64 {
        self.0.expired()
    }
    fn live(&self) -> usize {
        self.0.live_sessions()
    }
    fn open_sockets(&self) -> usize {
        self.0.open_sockets()
    }
    async fn expire_latest(&self) -> bool {
        let id = self.0.active_session_id();
        self.1.lock().unwrap().push(id.clone());
        self.0.expire_session(&id).await
    }
}

/// Every session the double created was released (or expired), none is live, none was
/// replaced, no create or release raced another, no proxied socket is open.
fn assert_clean(double: &SteelDouble) {
    conformance::assert_all_ended(&Service::of(double));
    assert!(
        double.replaced().is_empty(),
        "a create replaced a live session: {:?}",
        double.replaced()
    );
    assert_eq!(
        double.overlapping_lifecycle_calls(),
        0,
        "a create or release raced another"
    );
}

fn posts(double: &SteelDouble, path: &str) -> usize {
    double
        .calls()
        .iter()
        .filter(|c| c.method == "POST" && c.path == path)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_oss_conformance() {
    let started = Instant::now();
    let double = steel(SteelOptions::default()).await;
    let site = Arc::new(TestSite::start().await.unwrap());
    let provider = Arc::new(serialized(&double, site.egress()));
    assert!(provider.capabilities().interactive);
    assert_eq!(provider.name(), "steel");

    conformance::sees_exactly_the_injected_state(provider.as_ref(), &site).await;
    conformance::frames_capture_the_viewport(provider.as_ref(), &site).await;
    conformance::the_network_gate_holds_every_write(provider.as_ref(), &site).await;
    conformance::no_socket_leaves_a_guarded_context(provider.as_ref(), &site).await;
    conformance::export_follows_page_changes(provider.as_ref(), &site).await;
    conformance::no_state_from_an_earlier_job(provider.as_ref(), &site).await;
    conformance::profiles_keep_their_own_state(provider.as_ref(), &site, "t00/none").await;
    assert_clean(&double);
    eprintln!("steel: state checks {:?}", started.elapsed());
    conformance::concurrent_acquires(Arc::clone(&provider), Arc::clone(&site), 3).await;
    assert_clean(&double);
    conformance::survives_a_browser_crash(provider.as_ref(), &site).await;
    assert_clean(&double);
    assert_eq!(
        double.created(),
        1 + 1 + 2 + 2 + 1 + 2 + 3 + 2,
        "one session per acquire"
    );
    eprintln!("steel: conformance {:?}", started.elapsed());
}

/// Steel's session recorder runs in the job's pages and sends their events to Steel's own
/// API port (real Steel v0.5.2 did): that address is no site of the job's, so the egress
/// refuses every upload, and the page's own requests stay the only ones the network gate
/// judges (the conformance suite's gate checks that under the recorder).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_the_session_recorders_uploads_are_refused_by_the_egress() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    let lease = acquire(&provider, request(AcquireMode::Unattended, None)).await;
    let page = lease.context().page();
    conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    let recording: bool = page
        .evaluate::<(), bool>("() => window.__steelDoubleRecorder === true", None)
        .await
        .unwrap();
    assert!(recording, "the recorder runs in the job's page");
    page.evaluate::<(), bool>("() => { document.body.click(); return true }", None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        double.recorded_events(),
        0,
        "a recorder upload left the browser"
    );
    release(lease).await;
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_oss_cycles_leak_nothing() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    let started = Instant::now();
    conformance::cycles_leak_nothing(&provider, &site, 20, &Service::of(&double)).await;
    eprintln!("steel: 20 cycles {:?}", started.elapsed());
    assert_eq!(double.created(), 20);
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
    let page = page.text().await.unwrap();
    assert!(page.contains(&double.active_session_id()));
    // What a user's browser does with it: the page's screencast socket is Steel's own
    // absolute address (here the unusable 0.0.0.0 the server advertises), not a path a
    // proxy of the page could confine or rewrite.
    assert!(
        page.contains(&format!("ws://0.0.0.0:{}/v1/sessions/cast", double.port())),
        "{page}"
    );
    // (After release the double answers 404; the real OSS viewer would show the next idle
    // browser, so that is not asserted here.)
    release(lease).await;
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_remote_lifecycle() {
    let double = steel(SteelOptions::default()).await;
    let service = Service::of(&double);
    let base = double.base_url();
    let make = |egress| {
        SteelSessionProvider::oss_serialized(config(&base, egress), Duration::from_secs(60))
    };
    conformance::a_failure_after_create_still_ends_the_session(make, &service).await;
    conformance::dropped_and_cancelled_leases_are_ended(make, &service).await;
    assert_clean(&double);

    let site = TestSite::start().await.unwrap();
    let provider = serialized(&double, site.egress());
    conformance::expiry_mid_job_is_a_typed_retryable_error(&provider, &site, &service).await;
    let expired_ids = service.expired_ids();
    let [expired] = &expired_ids[..] else {
        panic!("one session expired")
    };
    assert!(
        !double
            .calls()
            .iter()
            .any(|c| c.method == "POST" && c.path.ends_with(&format!("/{expired}/release"))),
        "the expired session had ended: a release would have ended whatever session is current"
    );
    assert_clean(&double);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_cleans_state_an_earlier_session_left_behind() {
    let double = steel(SteelOptions::default()).await;
    let site = TestSite::start().await.unwrap();
    // Another client created a session, left a cookie, localStorage and an open tab, and never
    // released it (OSS would also carry localStorage over a release).
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

/// `POST /v1/sessions` from another client; the new session's id.
async fn foreign_create(double: &SteelDouble) -> String {
    let created = reqwest::Client::new()
        .post(format!("{}/v1/sessions", double.base_url()))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let body: serde_json::Value = created.json().await.unwrap();
    body["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_a_replaced_session_is_lost_and_not_released() {
    let double = steel(SteelOptions::default()).await;
    let provider = serialized(&double, EgressPolicy::new());
    let lease = acquire(&provider, request(AcquireMode::Interactive, None)).await;
    assert!(
        !lease.context().is_lost().await,
        "a live session is not lost"
    );
    // Another client creates a session: the server silently replaces ours (and keeps the
    // browser, so Playwright stays connected and the page is still open).
    let foreign = foreign_create(&double).await;
    assert_eq!(double.replaced().len(), 1);
    assert!(
        lease.context().is_lost().await,
        "a replaced session is lost, though its browser is still there"
    );

    release(lease).await;
    assert_eq!(
        double.released(),
        0,
        "ours had ended: a release would have ended the other client's session"
    );
    assert_eq!(double.unreleased(), vec![foreign]);
    let released = reqwest::Client::new()
        .post(format!("{}/v1/sessions/release", double.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(released.status(), 200);
    assert_eq!(double.open_sockets(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_one_provider_never_replaces_its_own_session() {
    let double = steel(SteelOptions::default()).await;
    // Even without the serializing wrapper, the provider never creates while one of its
    // sessions is live: the second acquire waits for the first release.
    let provider = Arc::new(SteelSessionProvider::new(config(
        &double.base_url(),
        EgressPolicy::new(),
    )));
    let first = acquire(provider.as_ref(), request(AcquireMode::Unattended, None)).await;
    let second = {
        let provider = Arc::clone(&provider);
        tokio::spawn(async move {
            acquire(provider.as_ref(), request(AcquireMode::Unattended, None)).await
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !second.is_finished(),
        "a second create would have replaced the first session"
    );
    assert_eq!(double.created(), 1);
    release(first).await;
    release(second.await.unwrap()).await;
    assert_clean(&double);

    // An acquire cancelled after its create (stuck on a start page that never answers): its
    // session is released in the background, and the next create waits for that instead of
    // racing it (which crashed the real server) or replacing it.
    let (hang_addr, holder) = conformance::silent_server().await;
    let provider = serialized(&double, EgressPolicy::new().allow_addr(hang_addr));
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://{hang_addr}/"));
    let cancelled = tokio::time::timeout(Duration::from_secs(3), provider.acquire(req)).await;
    assert!(cancelled.is_err(), "the acquire should still be waiting");
    release(acquire(&provider, request(AcquireMode::Unattended, None)).await).await;
    holder.abort();
    assert_eq!(double.created(), 4);
    assert_clean(&double);
}

/// A small deterministic generator for the race's offsets (the seed is printed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ran,
    Refused,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steel_jobs_and_captures_racing_on_one_provider() {
    let double = steel(SteelOptions::default()).await;
    let site = Arc::new(TestSite::start().await.unwrap());
    let provider = Arc::new(serialized(&double, site.egress()));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    eprintln!("race seed {seed}");
    let mut rng = Lcg(seed);
    // A capture first, then a job and a second capture while it holds the session (both
    // refused at once), then jobs and captures at random offsets.
    let mut plan = vec![
        (AcquireMode::Interactive, 0),
        (AcquireMode::Unattended, 400),
        (AcquireMode::Interactive, 600),
    ];
    for _ in 0..5 {
        let mode = if rng.below(3) == 0 {
            AcquireMode::Interactive
        } else {
            AcquireMode::Unattended
        };
        plan.push((mode, 2_500 + rng.below(3_000)));
    }
    let tasks = plan.into_iter().enumerate().map(|(i, (mode, offset))| {
        let provider = Arc::clone(&provider);
        let site = Arc::clone(&site);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(offset)).await;
            let tag = format!("r{i}");
            let mut req = request(mode, Some(conformance::state_for(&site, &tag)));
            req.platform = tag.clone();
            let started = Instant::now();
            let lease = match provider.acquire(req).await {
                Ok(lease) => lease,
                Err(e) => {
                    assert_eq!(e.kind(), ProviderErrorKind::Busy, "{i}: {e}");
                    assert!(e.retry_after().is_some(), "{i}: {e}");
                    assert!(
                        started.elapsed() < Duration::from_secs(1),
                        "{i} ({mode:?}) was refused only after {:?}",
                        started.elapsed()
                    );
                    return (i, mode, Outcome::Refused);
                }
            };
            let page = format!("{}/page", site.origin_a());
            let mine = Some(format!("a-{tag}"));
            let seen = conformance::visit(lease.context(), &page).await;
            assert_eq!(seen.cookies().get("sid"), mine.as_ref(), "{i} ({mode:?})");
            // A capture is held while a person signs in; a job only briefly.
            let hold = match mode {
                AcquireMode::Interactive => 1_500,
                AcquireMode::Unattended => 200,
            };
            tokio::time::sleep(Duration::from_millis(hold)).await;
            // Still this lease's browser: nothing replaced or destroyed it meanwhile.
            let seen = conformance::visit(lease.context(), &page).await;
            assert_eq!(
                seen.cookies().get("sid"),
                mine.as_ref(),
                "{i} ({mode:?}): another acquire took over its browser"
            );
            assert!(!lease.context().is_lost().await, "{i} ({mode:?}) was lost");
            release(lease).await;
            (i, mode, Outcome::Ran)
        })
    });
    let outcomes: Vec<_> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|t| t.expect("a racer panicked"))
        .collect();
    eprintln!("race outcomes {outcomes:?}");
    assert_eq!(outcomes[0], (0, AcquireMode::Interactive, Outcome::Ran));
    assert_eq!(
        outcomes[1],
        (1, AcquireMode::Unattended, Outcome::Refused),
        "a job is refused at once while a capture holds the session"
    );
    assert_eq!(
        outcomes[2],
        (2, AcquireMode::Interactive, Outcome::Refused),
        "a second capture is refused at once"
    );
    let ran = outcomes.iter().filter(|o| o.2 == Outcome::Ran).count();
    assert_eq!(
        double.created(),
        ran as u64,
        "one session per lease that ran"
    );
    assert_clean(&double);
}
