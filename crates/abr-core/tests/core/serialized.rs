//! Integration tests of `SerializedProvider`: one lease at a time, queueing with a deadline,
//! the permit handed on only after the previous lease was released, and the policy between
//! jobs and captures: a capture beyond the one session is refused at once, a job is refused
//! at once while a capture holds the session, and neither ever replaces the other.

use std::sync::Arc;
use std::time::Duration;

use abr_core::testing::FakeProvider;
use abr_core::{
    AcquireMode, AcquireRequest, ProviderCapabilities, ProviderErrorKind, SerializedProvider,
    SessionProvider,
};

fn request() -> AcquireRequest {
    request_for(AcquireMode::Unattended)
}

fn capture() -> AcquireRequest {
    request_for(AcquireMode::Interactive)
}

fn request_for(mode: AcquireMode) -> AcquireRequest {
    AcquireRequest {
        profile: None,
        mode,
        platform: "demo".into(),
        state: None,
        start_url: None,
    }
}

fn serialized(queue_timeout: Duration) -> Arc<SerializedProvider<FakeProvider>> {
    Arc::new(SerializedProvider::new(FakeProvider::new(), queue_timeout))
}

async fn yield_many(n: usize) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_second_acquire_waits_until_the_first_lease_was_released() {
    let p = serialized(Duration::from_secs(3600));
    let first = p.acquire(request()).await.unwrap();

    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let waiter = {
        let p = Arc::clone(&p);
        tokio::spawn(async move {
            started_tx.send(()).unwrap();
            let lease = p.acquire(request()).await?;
            // What the second job sees the moment it gets its browser.
            let released_before = p.inner().released_ids();
            Ok::<_, abr_core::ProviderError>((lease, released_before))
        })
    };
    started_rx.await.unwrap();
    yield_many(50).await;
    assert!(
        !waiter.is_finished(),
        "the second acquire must queue while the first is held"
    );
    assert_eq!(
        p.inner().acquired(),
        1,
        "the inner provider is not asked while busy"
    );

    let first_id = first.context().id;
    first.release().await.unwrap();
    let (second, released_before) = waiter.await.unwrap().unwrap();
    assert_eq!(
        released_before,
        vec![first_id],
        "the first lease was released before"
    );
    assert_ne!(second.context().id, first_id);
    assert_eq!(p.inner().max_open_seen(), 1);

    second.release().await.unwrap();
    assert_eq!(p.inner().released(), 2);
    assert_eq!(p.inner().open_leases(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_acquires_all_succeed_one_at_a_time() {
    let p = serialized(Duration::from_secs(3600));
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            let p = Arc::clone(&p);
            tokio::spawn(async move {
                let lease = p.acquire(request()).await?;
                // Hold the browser for a few scheduler turns, like a job would.
                yield_many(20).await;
                lease.release().await
            })
        })
        .collect();
    for job in futures::future::join_all(jobs).await {
        job.unwrap().unwrap();
    }
    assert_eq!(p.inner().acquired(), 4);
    assert_eq!(p.inner().released(), 4);
    assert_eq!(p.inner().max_open_seen(), 1);
    assert_eq!(p.inner().open_leases(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_queue_timeout_is_a_retryable_busy_error() {
    let p = serialized(Duration::from_secs(5));
    let held = p.acquire(request()).await.unwrap();

    let err = p.acquire(request()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Busy);
    assert!(err.is_retryable());
    assert_eq!(p.inner().acquired(), 1);

    held.release().await.unwrap();
    let next = p.acquire(request()).await.unwrap();
    next.release().await.unwrap();
    assert_eq!(p.inner().max_open_seen(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_inner_acquire_gives_the_permit_back() {
    // With a leaked permit the next acquire would time out as Busy.
    let p = serialized(Duration::from_secs(1));
    p.inner().fail_next_acquire(ProviderErrorKind::Unavailable);

    let err = p.acquire(request()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Unavailable);

    let lease = p.acquire(request()).await.unwrap();
    assert_eq!(p.inner().acquired(), 1);
    lease.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_dropped_lease_is_released_in_the_background_and_frees_the_permit() {
    let p = serialized(Duration::from_secs(5));
    let lease = p.acquire(request()).await.unwrap();
    let first_id = lease.context().id;
    // A cancelled job: the lease goes out of scope without `release`.
    drop(lease);

    let next = p.acquire(request()).await.unwrap();
    assert_eq!(p.inner().released_ids(), vec![first_id]);
    assert_eq!(p.inner().max_open_seen(), 1);
    next.release().await.unwrap();
    assert_eq!(p.inner().released(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_acquire_does_not_hold_the_permit() {
    let p = serialized(Duration::from_secs(5));
    p.inner().hang_acquires(true);
    let cancelled = tokio::time::timeout(Duration::from_secs(1), p.acquire(request())).await;
    assert!(
        cancelled.is_err(),
        "the hanging acquire was cut off by the caller"
    );

    p.inner().hang_acquires(false);
    let lease = p.acquire(request()).await.unwrap();
    lease.release().await.unwrap();
}

#[test]
fn capabilities_and_name_are_forwarded() {
    let p = SerializedProvider::new(FakeProvider::new(), Duration::from_secs(1));
    assert!(p.capabilities().interactive);
    assert_eq!(p.name(), "fake");
    let headless = FakeProvider::new().with_capabilities(ProviderCapabilities {
        interactive: false,
        profiles: false,
    });
    let caps = SerializedProvider::new(headless, Duration::from_secs(1)).capabilities();
    assert!(!caps.interactive);
}

/// Asserts `err` is an immediate `Busy` refusal with `retry_after`.
fn assert_refused(err: &abr_core::ProviderError, retry_after: Duration) {
    assert_eq!(err.kind(), ProviderErrorKind::Busy, "{err}");
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(retry_after), "{err}");
    assert!(err.message().starts_with("fake holds one session"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_capture_is_refused_at_once_while_a_job_holds_the_session() {
    let p = serialized(Duration::from_secs(3600));
    let job = p.acquire(request()).await.unwrap();

    let started = tokio::time::Instant::now();
    let err = p.acquire(capture()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
    assert_refused(&err, Duration::from_secs(2));
    assert_eq!(p.inner().acquired(), 1, "the inner provider is not asked");

    job.release().await.unwrap();
    let cap = p.acquire(capture()).await.unwrap();
    assert_eq!(p.inner().max_open_seen(), 1);
    cap.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_second_capture_is_refused_at_once_and_the_first_keeps_its_session() {
    let p = serialized(Duration::from_secs(3600));
    let first = p.acquire(capture()).await.unwrap();

    let started = tokio::time::Instant::now();
    let err = p.acquire(capture()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
    assert_refused(&err, Duration::from_secs(15));
    assert!(err.message().contains("a capture is using it"), "{err}");
    assert_eq!(p.inner().acquired(), 1);
    assert_eq!(p.inner().released(), 0, "the open capture was not touched");

    first.release().await.unwrap();
    assert_eq!(p.inner().max_open_seen(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_job_is_refused_at_once_while_a_capture_holds_the_session() {
    let p = serialized(Duration::from_secs(3600));
    let cap = p.acquire(capture()).await.unwrap();

    let started = tokio::time::Instant::now();
    let err = p.acquire(request()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
    assert_refused(&err, Duration::from_secs(15));
    assert_eq!(
        p.inner().acquired(),
        1,
        "the capture's session was not replaced"
    );
    assert_eq!(p.inner().open_leases(), 1);

    // Once the capture is done, jobs run (and queue behind each other) again.
    cap.release().await.unwrap();
    let job = p.acquire(request()).await.unwrap();
    let waiter = {
        let p = Arc::clone(&p);
        tokio::spawn(async move { p.acquire(request()).await })
    };
    yield_many(50).await;
    assert!(!waiter.is_finished(), "a job queues behind a job");
    job.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();
    assert_eq!(p.inner().max_open_seen(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_capture_does_not_overtake_jobs_already_waiting() {
    let p = serialized(Duration::from_secs(3600));
    let job = p.acquire(request()).await.unwrap();
    let waiter = {
        let p = Arc::clone(&p);
        tokio::spawn(async move { p.acquire(request()).await })
    };
    yield_many(50).await;

    job.release().await.unwrap();
    // The permit went to the waiting job: a capture arriving now finds the session taken.
    let err = p.acquire(capture()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Busy, "{err}");
    let queued = waiter.await.unwrap().unwrap();
    queued.release().await.unwrap();
    assert_eq!(p.inner().acquired(), 2);
    assert_eq!(p.inner().max_open_seen(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_waits_of_captures_and_of_jobs_behind_captures_are_configurable() {
    let p = Arc::new(
        SerializedProvider::new(FakeProvider::new(), Duration::from_secs(60))
            .with_capture_wait(Duration::from_secs(10))
            .with_job_wait_behind_capture(Duration::from_secs(5)),
    );
    // A capture waits for a job.
    let job = p.acquire(request()).await.unwrap();
    let cap = {
        let p = Arc::clone(&p);
        tokio::spawn(async move { p.acquire(capture()).await })
    };
    yield_many(50).await;
    assert!(!cap.is_finished(), "the capture waits for the job");
    job.release().await.unwrap();
    let cap = cap.await.unwrap().unwrap();

    // A job waits behind the capture, up to its own bound.
    let started = tokio::time::Instant::now();
    let err = p.acquire(request()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(err.kind(), ProviderErrorKind::Busy);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(15)), "{err}");
    cap.release().await.unwrap();
    assert_eq!(p.inner().max_open_seen(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_capture_acquire_frees_the_session_for_jobs() {
    let p = serialized(Duration::from_secs(1));
    p.inner().fail_next_acquire(ProviderErrorKind::Unavailable);
    let err = p.acquire(capture()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Unavailable);
    // A stale capture mark would refuse this job at once.
    let job = p.acquire(request()).await.unwrap();
    job.release().await.unwrap();
}

#[tokio::test]
async fn refuses_now_foretells_the_policys_refusals_and_nothing_else() {
    let p = serialized(Duration::from_secs(3600));
    assert!(p.refuses_now(AcquireMode::Interactive).is_none(), "free");
    assert!(p.refuses_now(AcquireMode::Unattended).is_none(), "free");

    let job = p.acquire(request()).await.unwrap();
    let refusal = p.refuses_now(AcquireMode::Interactive).unwrap();
    assert_refused(&refusal, Duration::from_secs(2));
    assert!(
        p.refuses_now(AcquireMode::Unattended).is_none(),
        "a job would wait behind a job"
    );
    job.release().await.unwrap();

    let cap = p.acquire(capture()).await.unwrap();
    for mode in [AcquireMode::Interactive, AcquireMode::Unattended] {
        let refusal = p.refuses_now(mode).unwrap();
        assert_refused(&refusal, Duration::from_secs(15));
    }
    // Through an `Arc<dyn …>` as the engine holds it.
    let shared: abr_core::DynSessionProvider<_> = p.clone();
    assert!(shared.refuses_now(AcquireMode::Interactive).is_some());
    cap.release().await.unwrap();
    assert!(
        p.refuses_now(AcquireMode::Interactive).is_none(),
        "free again"
    );

    // A capture allowed to wait is not foretold a refusal.
    let waits = SerializedProvider::new(FakeProvider::new(), Duration::from_secs(60))
        .with_capture_wait(Duration::from_secs(10));
    let job = waits.acquire(request()).await.unwrap();
    assert!(waits.refuses_now(AcquireMode::Interactive).is_none());
    job.release().await.unwrap();
}
