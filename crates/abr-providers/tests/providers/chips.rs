//! Partitioned (CHIPS) cookies cannot be injected through Playwright 1.64's cookie API, and
//! injecting them unpartitioned would widen them to every top-level site. So they are not
//! injected, and they leave the job exactly as they came in: the refreshed session still
//! has them, partition key and all, instead of losing the user's partitioned sign-in.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_core::{AcquireMode, AcquireRequest, SessionContext, SessionProvider};
use abr_protocol::Cookie;
use abr_providers::conformance::{self, TestSite};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_cookies_are_carried_through_unchanged_and_never_widened() {
    let site = TestSite::start().await.unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    });
    let mut state = conformance::state_for(&site, "chips");
    let mut partitioned = Cookie::new("embed_sid", "partitioned-value", "127.0.0.1");
    partitioned.partition_key = Some("https://top.example".into());
    partitioned.secure = true;
    state.cookies.push(partitioned.clone());

    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "chips".into(),
            state: Some(state),
            start_url: None,
        })
        .await
        .unwrap();
    let seen = conformance::visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert!(
        !seen.cookies().contains_key("embed_sid"),
        "the partitioned cookie was injected unpartitioned: {:?}",
        seen.cookies()
    );
    assert!(
        seen.cookies().contains_key("sid"),
        "the control cookie went in"
    );
    let exported = lease.context().export_state().await.unwrap();
    let carried: Vec<_> = exported
        .cookies
        .iter()
        .filter(|c| c.name == "embed_sid")
        .collect();
    assert_eq!(
        carried.len(),
        1,
        "lost or duplicated: {:?}",
        exported.cookies
    );
    assert_eq!(carried[0], &partitioned, "changed on the way through");
    // The cookies alone (the session check before a commit) are the export's, carried too.
    let cookies = lease.context().cookies().await.unwrap();
    assert!(
        cookies == exported.cookies,
        "cookies() differs from the export's cookies"
    );
    lease.release().await.unwrap();
    provider.shutdown().await;
}
