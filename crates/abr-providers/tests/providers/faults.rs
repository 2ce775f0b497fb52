//! Faults inside a leased local browser, injected as the chaos layer does
//! ([`FaultTarget`]): a browser that freezes (its connection open, nothing answering) is
//! ended by its process at the release and at the next acquire, within their deadlines,
//! never waited for; a crash or a closed page loses the session and the next acquire
//! relaunches; a stall only delays. And wear: a shared browser is replaced after its set
//! number of leases, and closed only once its last lease ended. A killed browser leaves no
//! temporary folder behind: not its own, nor the singleton folder full Chromium removes
//! only on a clean exit. And a released lease's page is freed, though its browser stays.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use abr_core::chaos::{Fault, FaultTarget};
use abr_core::{AcquireMode, ProviderErrorKind, SessionContext, SessionProvider};
use abr_providers::conformance::{self, TestSite};
use abr_providers::{
    BrowserProcess, ChromiumBinary, Isolation, LocalBrowserSessionProvider, LocalProviderConfig,
};

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
    for _ in 0..150 {
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
    assert!(
        gone(&process).await,
        "the abandoned setup still ended the frozen browser"
    );
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

/// The singleton folders full Chromium makes in its `TMPDIR` (`org.chromium.Chromium.*`,
/// holding its `SingletonSocket`) found in `folder`.
fn singleton_folders(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("org.chromium.Chromium."))
        })
        .collect()
}

/// Waits until `path` is no more (a folder removed in the background).
async fn removed(path: &Path) -> bool {
    for _ in 0..100 {
        if !path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The browser behind `lease`, checked to run in its own temporary folder.
fn in_own_folder(lease: &abr_core::Lease<abr_providers::BrowserSession>) -> BrowserProcess {
    let process = lease
        .context()
        .process()
        .cloned()
        .expect("a launched browser");
    assert!(process.pid().is_some());
    assert!(process.temp_dir().is_dir(), "{:?}", process.temp_dir());
    process
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shared_browser_leaves_no_temporary_folder() {
    let site = TestSite::start().await.unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        prewarm: 0,
        recycle_after: None,
        headful_interactive: Some(false),
        ..LocalProviderConfig::default()
    });
    // A capture (full Chromium) and a job (the headless shell), each in a shared browser.
    let capture = provider
        .acquire(conformance::request(AcquireMode::Interactive, None))
        .await
        .unwrap();
    let job = provider.acquire(request()).await.unwrap();
    let (capture_process, job_process) = (in_own_folder(&capture), in_own_folder(&job));
    let (capture_folder, job_folder) = (capture_process.temp_dir(), job_process.temp_dir());
    // Full Chromium makes its singleton folder in its own `TMPDIR`, not the global one.
    let singletons = singleton_folders(&capture_folder);
    assert_eq!(singletons.len(), 1, "{capture_folder:?}");
    assert!(singletons[0].join("SingletonSocket").exists());

    assert!(capture_process.kill() && job_process.kill());
    assert!(gone(&capture_process).await && gone(&job_process).await);
    assert!(
        singletons[0].exists(),
        "a killed Chromium leaves its singleton folder"
    );
    // Released on a dead browser: whatever the release says, nothing is left afterwards.
    let _ = capture.release().await;
    let _ = job.release().await;

    // The next acquires find the browsers dead and replace them; the dead ones' folders go.
    let capture = provider
        .acquire(conformance::request(AcquireMode::Interactive, None))
        .await
        .unwrap();
    let job = provider.acquire(request()).await.unwrap();
    assert_eq!(provider.launches(), 4);
    assert!(
        removed(&capture_folder).await,
        "the killed capture browser's folder stays: {:?}",
        std::fs::read_dir(&capture_folder)
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
    assert!(
        removed(&job_folder).await,
        "the killed job browser's folder stays"
    );
    assert!(!singletons[0].exists());

    // Closed at the shutdown: their folders go too.
    let (capture_process, job_process) = (in_own_folder(&capture), in_own_folder(&job));
    capture.release().await.unwrap();
    job.release().await.unwrap();
    provider.shutdown().await;
    assert!(gone(&capture_process).await && gone(&job_process).await);
    assert!(removed(&capture_process.temp_dir()).await);
    assert!(removed(&job_process.temp_dir()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_per_job_or_profile_leaves_no_temporary_folder() {
    let site = TestSite::start().await.unwrap();
    let profiles = tempfile::tempdir().unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        job_binary: ChromiumBinary::Chromium,
        isolation: Isolation::BrowserPerJob,
        prewarm: 0,
        headful_interactive: Some(false),
        profiles: Some(profiles.path().to_owned()),
        ..LocalProviderConfig::default()
    });

    // A browser per job: killed, its folder goes with its release.
    let job = provider.acquire(request()).await.unwrap();
    let process = in_own_folder(&job);
    let folder = process.temp_dir();
    let singletons = singleton_folders(&folder);
    assert_eq!(singletons.len(), 1, "{folder:?}");
    assert!(process.kill());
    assert!(gone(&process).await);
    assert!(singletons[0].exists());
    let _ = job.release().await;
    assert!(!folder.exists(), "gone with the release");

    // A profile's browser (full Chromium, a persistent context) makes its singleton folder
    // in the global temp dir (Playwright takes no environment for it): killed, it goes
    // with the release.
    let mut on_profile = conformance::request(AcquireMode::Interactive, None);
    on_profile.profile = Some("killed".into());
    let lease = provider.acquire(on_profile).await.unwrap();
    let process = lease.context().process().cloned().unwrap();
    let socket = std::fs::read_link(profiles.path().join("killed/SingletonSocket"))
        .expect("full Chromium links its singleton socket in the profile");
    let singleton = socket.parent().unwrap().to_owned();
    assert_eq!(singleton.parent(), Some(std::env::temp_dir().as_path()));
    assert!(singleton.is_dir());
    assert!(process.kill());
    assert!(gone(&process).await);
    assert!(
        singleton.exists(),
        "a killed Chromium leaves its singleton folder"
    );
    let _ = lease.release().await;
    assert!(
        removed(&singleton).await,
        "the killed profile's singleton folder stays"
    );
    provider.shutdown().await;
}

/// Sets its flag when dropped: a handler that holds one is dropped with the page it was
/// given to, and only then.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lease_frees_its_page_in_a_browser_that_stays() {
    let site = TestSite::start().await.unwrap();
    let provider = provider(&site, None, 0);
    let mut freed = Vec::new();
    for _ in 0..3 {
        let lease = provider.acquire(request()).await.unwrap();
        conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
        let flag = Arc::new(AtomicBool::new(false));
        let sentinel = Dropped(Arc::clone(&flag));
        lease
            .context()
            .page()
            .on_close(move || {
                let _held = &sentinel;
                async { Ok(()) }
            })
            .await
            .unwrap();
        lease.release().await.unwrap();
        freed.push(flag);
    }
    // Playwright's client (the driver's connection) let go of the pages once their
    // contexts closed: nothing of them stays for the browser's life (each leaked one held
    // its frames, requests and handlers: about 40 KiB an operation).
    let mut all = false;
    for _ in 0..50 {
        all = freed.iter().all(|flag| flag.load(Ordering::SeqCst));
        if all {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(all, "pages still held after their release: {freed:?}");
    assert_eq!(provider.launches(), 1, "one browser served them all");
    provider.shutdown().await;
}
