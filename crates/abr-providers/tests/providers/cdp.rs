//! The conformance suite on the CDP-attach provider, against a Chromium this test launches
//! with a remote-debugging port (as a user's own browser would be), plus: it never closes a
//! browser it did not launch, and attaches by http or ws URL.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::Duration;

use abr_core::ProviderErrorKind;
use abr_doubles::chromium::{ChromiumOptions, LocalChromium};
use abr_providers::conformance::{self, LeakProbe, TestSite};
use abr_providers::{CdpProviderConfig, CdpSessionProvider};

/// Browser contexts open in the attached Chromium, read over its own CDP endpoint.
struct ChromiumContexts(String);

#[async_trait::async_trait]
impl LeakProbe for ChromiumContexts {
    async fn open(&self) -> usize {
        let cdp = abr_doubles::cdp::CdpClient::connect(&self.0).await.unwrap();
        let contexts = cdp
            .call("Target.getBrowserContexts", serde_json::json!({}))
            .await
            .unwrap();
        let targets = cdp
            .call("Target.getTargets", serde_json::json!({}))
            .await
            .unwrap();
        let pages = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "page")
            .count();
        contexts["browserContextIds"].as_array().unwrap().len() + pages
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdp_attach_conformance_over_http_endpoint() {
    let mut chromium = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    let site = Arc::new(TestSite::start().await.unwrap());
    let provider = Arc::new(CdpSessionProvider::new(CdpProviderConfig {
        egress: Some(site.egress()),
        ..CdpProviderConfig::new(chromium.http_url())
    }));
    let probe = ChromiumContexts(chromium.browser_ws_url());
    conformance::sees_exactly_the_injected_state(provider.as_ref(), &site).await;
    conformance::frames_capture_the_viewport(provider.as_ref(), &site).await;
    conformance::the_network_gate_holds_every_write(provider.as_ref(), &site).await;
    conformance::no_socket_leaves_a_guarded_context(provider.as_ref(), &site).await;
    conformance::export_follows_page_changes(provider.as_ref(), &site).await;
    conformance::no_state_from_an_earlier_job(provider.as_ref(), &site).await;
    conformance::profiles_keep_their_own_state(provider.as_ref(), &site, "t00/none").await;
    conformance::cycles_leak_nothing(provider.as_ref(), &site, 50, &probe).await;
    conformance::concurrent_acquires(provider.clone(), site.clone(), 3).await;
    provider.shutdown().await;
    assert!(
        chromium.is_running(),
        "the provider closed a browser it did not launch"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdp_attach_by_ws_url_and_a_crash_is_typed() {
    let chromium = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    let site = TestSite::start().await.unwrap();
    let provider = CdpSessionProvider::new(CdpProviderConfig {
        egress: Some(site.egress()),
        ..CdpProviderConfig::new(chromium.browser_ws_url())
    });
    conformance::sees_exactly_the_injected_state(&provider, &site).await;
    conformance::the_network_gate_holds_every_write(&provider, &site).await;
    // The attached browser dies: the job fails typed and the next acquire is a typed error
    // too (nobody relaunches a browser the provider does not own).
    let lease = abr_core::SessionProvider::acquire(
        &provider,
        abr_core::AcquireRequest {
            profile: None,
            mode: abr_core::AcquireMode::Unattended,
            platform: "t".into(),
            state: None,
            start_url: None,
        },
    )
    .await
    .unwrap();
    drop(chromium);
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        abr_core::SessionContext::export_state(lease.context()),
    )
    .await
    .expect("export on a dead browser hung")
    .expect_err("export on a dead browser worked");
    assert!(err.is_retryable(), "{err}");
    tokio::time::timeout(Duration::from_secs(20), lease.release())
        .await
        .expect("release hung")
        .ok();
    let e = conformance::dead_endpoint_is_a_typed_error(&provider, Duration::from_secs(30)).await;
    assert!(
        matches!(
            e.kind(),
            ProviderErrorKind::Unavailable | ProviderErrorKind::Timeout
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_dead_cdp_endpoint_is_a_typed_error_before_its_deadline() {
    let mut config = CdpProviderConfig::new("http://127.0.0.1:9");
    config.connect_timeout = Duration::from_secs(5);
    let provider = CdpSessionProvider::new(config);
    let e = conformance::dead_endpoint_is_a_typed_error(&provider, Duration::from_secs(10)).await;
    assert!(
        matches!(
            e.kind(),
            ProviderErrorKind::Unavailable | ProviderErrorKind::Timeout
        ),
        "{e}"
    );
    assert!(e.is_retryable());
}
