//! The conformance suite on the local provider (real Debian Chromium), plus what only the
//! local provider does: the shared browser, relaunch, a browser per job, setup errors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::Duration;

use abr_core::{AcquireMode, ProviderErrorKind, SessionProvider};
use abr_providers::conformance::{self, LeakProbe, TestSite};
use abr_providers::{ChromiumBinary, Isolation, LocalBrowserSessionProvider, LocalProviderConfig};

struct OpenContexts<'a>(&'a LocalBrowserSessionProvider);

#[async_trait::async_trait]
impl LeakProbe for OpenContexts<'_> {
    async fn open(&self) -> usize {
        self.0.open_contexts().await
    }
}

/// The default provider, its egress guard letting it reach exactly `site`.
/// The warm pool is topped up when a lease ends, never while a job that claimed a warm
/// context loads its pages (a refill starts a renderer process, which slows that load); a
/// job that found none ready starts the refill at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_warm_pool_is_topped_up_when_a_lease_ends_not_while_a_job_runs() {
    let site = TestSite::start().await.unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        prewarm: 2,
        ..LocalProviderConfig::default()
    });
    let page = format!("{}/page", site.origin_a());
    let state = conformance::state_for(&site, "w");
    let request = || conformance::request(AcquireMode::Unattended, Some(state.clone()));

    // What the pool holds, as an operator's gauges read it (`SessionProvider::pool`).
    let pool = |browsers, contexts_in_use, contexts_warm| {
        Some(abr_core::PoolStats {
            browsers,
            contexts_in_use,
            contexts_warm,
        })
    };
    assert_eq!(provider.pool(), pool(0, 0, 0), "nothing launched yet");

    // None ready: the first job makes its own context and fills the pool meanwhile.
    let first = conformance::acquire_with(&provider, request()).await;
    provider.settle().await;
    assert_eq!(
        provider.warm_pool(),
        (2, 0),
        "filled while the first job ran"
    );
    assert_eq!(
        provider.pool(),
        pool(1, 1, 2),
        "one browser, one job, two warm"
    );
    conformance::release(first).await;
    assert_eq!(provider.pool().map(|p| p.contexts_in_use), Some(0));

    let second = conformance::acquire_with(&provider, request()).await;
    conformance::visit(second.context(), &page).await;
    assert_eq!(
        provider.warm_pool(),
        (1, 0),
        "a job that claimed a warm context starts no refill while it runs"
    );
    conformance::release(second).await;
    provider.settle().await;
    assert_eq!(
        provider.warm_pool(),
        (2, 0),
        "its release topped the pool up"
    );

    // More jobs at once than the pool holds: the third makes its own and starts a refill.
    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(conformance::acquire_with(&provider, request()).await);
    }
    provider.settle().await;
    assert_eq!(provider.warm_pool(), (2, 0));
    assert_eq!(
        provider.pool(),
        pool(1, 3, 2),
        "three jobs on the one browser"
    );
    for lease in leases {
        conformance::release(lease).await;
    }
    provider.settle().await;
    assert_eq!(provider.warm_pool(), (2, 0), "never more than the target");
    assert_eq!(
        provider.open_contexts().await,
        0,
        "every job's context closed"
    );
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_shared_browser_conformance() {
    let site = Arc::new(TestSite::start().await.unwrap());
    let profiles = tempfile::tempdir().unwrap();
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        profiles: Some(profiles.path().to_owned()),
        ..LocalProviderConfig::default()
    }));
    conformance::sees_exactly_the_injected_state(provider.as_ref(), &site).await;
    conformance::frames_capture_the_viewport(provider.as_ref(), &site).await;
    conformance::export_follows_page_changes(provider.as_ref(), &site).await;
    conformance::no_state_from_an_earlier_job(provider.as_ref(), &site).await;
    conformance::cycles_leak_nothing(provider.as_ref(), &site, 50, &OpenContexts(&provider)).await;
    conformance::concurrent_acquires(provider.clone(), site.clone(), 4).await;
    conformance::the_network_gate_holds_every_write(provider.as_ref(), &site).await;
    conformance::no_socket_leaves_a_guarded_context(provider.as_ref(), &site).await;
    assert_eq!(provider.launches(), 1, "one warm browser serves every job");
    assert_eq!(provider.open_contexts().await, 0);
    conformance::survives_a_browser_crash(provider.as_ref(), &site).await;
    assert_eq!(
        provider.launches(),
        2,
        "the dead browser was relaunched once"
    );
    conformance::profiles_keep_their_own_state(provider.as_ref(), &site, "t7431/jobs").await;
    assert!(
        profiles.path().join("t7431/jobs").is_dir(),
        "the profile lives in its folder"
    );
    assert_eq!(provider.open_contexts().await, 0);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_browser_per_job_conformance() {
    let site = TestSite::start().await.unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        isolation: Isolation::BrowserPerJob,
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    });
    conformance::sees_exactly_the_injected_state(&provider, &site).await;
    conformance::no_state_from_an_earlier_job(&provider, &site).await;
    assert_eq!(provider.launches(), 3, "a browser per job");
    assert_eq!(
        provider.open_contexts().await,
        0,
        "per-job browsers are not kept"
    );
}

#[tokio::test]
async fn a_missing_chromium_is_a_setup_error_naming_the_install_command() {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        job_binary: ChromiumBinary::Custom("/nonexistent/chromium".into()),
        ..LocalProviderConfig::default()
    });
    let e = conformance::dead_endpoint_is_a_typed_error(&provider, Duration::from_secs(10)).await;
    assert_eq!(e.kind(), ProviderErrorKind::Misconfigured);
    assert!(e.message().contains("apt-get install"), "{e}");
    assert_eq!(provider.name(), "local");
}
