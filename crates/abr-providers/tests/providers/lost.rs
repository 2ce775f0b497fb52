//! A session knows when its browser is gone for good (its page closed, the browser died),
//! so a capture on it can say so instead of waiting for a sign-in that cannot come.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use abr_core::{AcquireMode, AcquireRequest, SessionContext, SessionProvider};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};

fn interactive() -> AcquireRequest {
    AcquireRequest {
        profile: None,
        mode: AcquireMode::Interactive,
        platform: "lost".into(),
        state: None,
        start_url: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_page_or_a_provider_check_makes_a_session_lost() {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        ..LocalProviderConfig::default()
    });
    let lease = provider.acquire(interactive()).await.unwrap();
    assert!(
        !lease.context().is_lost().await,
        "a fresh session is not lost"
    );
    lease.context().page().close().await.unwrap();
    assert!(lease.context().is_lost().await, "its page closed");
    lease.release().await.unwrap();

    // A provider's own check (a remote session replaced) is consulted too.
    let lease = provider.acquire(interactive()).await.unwrap();
    let replaced = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&replaced);
    let session = lease.context().clone().with_lost_check(Arc::new(move || {
        let flag = Arc::clone(&flag);
        Box::pin(async move { flag.load(Ordering::SeqCst) })
    }));
    assert!(!session.is_lost().await);
    replaced.store(true, Ordering::SeqCst);
    assert!(session.is_lost().await);
    lease.release().await.unwrap();
    provider.shutdown().await;
}
