//! Integration tests of `Lease`: released exactly once, in the background when dropped, and
//! guards dropped only after the release finished.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use abr_core::{Lease, ProviderError, ProviderErrorKind};

type Log = Arc<Mutex<Vec<&'static str>>>;

fn push(log: &Log, entry: &'static str) {
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(entry);
}

fn entries(log: &Log) -> Vec<&'static str> {
    log.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A guard that records when it is dropped.
struct Guard(Log);

impl Drop for Guard {
    fn drop(&mut self) {
        push(&self.0, "guard dropped");
    }
}

/// A lease on `"ctx"` whose release counts calls, checks its context, and logs its start and
/// end across a few suspension points.
fn counted_lease(calls: &Arc<AtomicUsize>, log: &Log) -> Lease<&'static str> {
    let calls = Arc::clone(calls);
    let log = Arc::clone(log);
    Lease::new("ctx", move |ctx: Arc<&'static str>| {
        Box::pin(async move {
            assert_eq!(*ctx, "ctx", "the release gets the lease's context");
            calls.fetch_add(1, Ordering::SeqCst);
            push(&log, "release started");
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            push(&log, "release finished");
            Ok(())
        })
    })
}

async fn yield_until(mut done: impl FnMut() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    assert!(done(), "condition not reached after 100 scheduler turns");
}

#[tokio::test]
async fn release_runs_the_release_function_exactly_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Log::default();
    let lease = counted_lease(&calls, &log);
    assert_eq!(*lease.context(), "ctx");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "nothing is released before asked"
    );

    lease.release().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(entries(&log), ["release started", "release finished"]);

    // Dropping the released lease (inside `release`) must not release again.
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_dropped_lease_is_released_in_the_background_exactly_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Log::default();
    drop(counted_lease(&calls, &log));

    yield_until(|| entries(&log).contains(&"release finished")).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(entries(&log), ["release started", "release finished"]);
}

#[tokio::test]
async fn guards_outlive_an_explicit_release() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Log::default();
    let lease = counted_lease(&calls, &log)
        .hold(Guard(Arc::clone(&log)))
        .hold(Guard(Arc::clone(&log)));
    assert!(entries(&log).is_empty(), "guards live as long as the lease");

    lease.release().await.unwrap();
    assert_eq!(
        entries(&log),
        [
            "release started",
            "release finished",
            "guard dropped",
            "guard dropped"
        ]
    );
}

#[tokio::test]
async fn guards_outlive_a_background_release() {
    let calls = Arc::new(AtomicUsize::new(0));
    let log = Log::default();
    drop(counted_lease(&calls, &log).hold(Guard(Arc::clone(&log))));
    assert!(
        !entries(&log).contains(&"guard dropped"),
        "the guard is not dropped before the release ran"
    );

    yield_until(|| entries(&log).contains(&"guard dropped")).await;
    assert_eq!(
        entries(&log),
        ["release started", "release finished", "guard dropped"]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_release_is_reported_and_still_drops_the_guards() {
    let log = Log::default();
    let lease = Lease::new((), |_ctx: Arc<()>| {
        Box::pin(async {
            Err(ProviderError::new(
                ProviderErrorKind::Crashed,
                "already dead",
            ))
        })
    })
    .hold(Guard(Arc::clone(&log)));

    let err = lease.release().await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Crashed);
    assert_eq!(entries(&log), ["guard dropped"]);
}
