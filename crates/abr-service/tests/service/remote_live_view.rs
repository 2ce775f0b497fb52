//! Capture on a remote provider (the Kernel double, whose CDP proxies to a real Chromium):
//! the runner serves its own view of the remote browser by default, never hands out the
//! provider's viewer URL, and proxies the provider's own viewer only when the operator opted
//! in, and only its own page.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::time::{Duration, Instant};

use abr_client::{LiveMessage, LiveViewChannel};
use abr_doubles::{KernelDouble, KernelOptions};
use abr_protocol::LiveViewEvent;
use abr_service::config::{ProviderChoice, RunnerConfig};
use common::*;
use secrecy::SecretString;

fn on_kernel(kernel: &KernelDouble) -> impl FnOnce(&mut RunnerConfig) + use<> {
    let url = kernel.base_url();
    let key = kernel.api_key().to_owned();
    move |config| {
        config.providers.capture_provider = ProviderChoice::Kernel;
        config.providers.kernel_url = Some(url::Url::parse(&url).unwrap());
        config.providers.kernel_api_key = Some(SecretString::from(key));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_browser_gets_the_runners_own_view_and_it_dies_with_the_capture() {
    let kernel = KernelDouble::start(KernelOptions::default()).await.unwrap();
    let stack = stack_with(on_kernel(&kernel), |b| b).await;
    let capture = stack.client.capture_start(&start_request()).await.unwrap();
    assert!(
        !capture.live_view_url.contains(&kernel.base_url()),
        "the provider's viewer URL must not leak"
    );
    assert_eq!(kernel.live_sessions(), 1);
    let page = reqwest::get(&capture.live_view_url).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Connecting to the browser"),
        "the runner's own viewer"
    );
    // Not opted in: the provider's viewer is not reachable through the runner.
    let proxied = reqwest::get(format!("{}/view/", capture.live_view_url))
        .await
        .unwrap();
    assert_eq!(proxied.status(), 404);

    // The runner's view shows the remote browser's page, over the runner's CDP connection.
    let mut live = LiveViewChannel::connect(&capture.live_view_url, WAIT)
        .await
        .unwrap();
    live.wait_for_picture(WAIT).await.unwrap();

    stack
        .client
        .capture_cancel(&bound(&capture.capture_id))
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        match tokio::time::timeout(WAIT, live.next()).await.unwrap() {
            Ok(Some(LiveMessage::Event(LiveViewEvent::Closed { .. }))) | Ok(None) | Err(_) => break,
            Ok(Some(_)) => {}
        }
    }
    assert!(
        started.elapsed() <= Duration::from_secs(1),
        "the view outlived its capture by {:?}",
        started.elapsed()
    );
    let after = reqwest::get(&capture.live_view_url).await.unwrap();
    assert_eq!(after.status(), 404, "the live token dies with its capture");
    assert_eq!(
        kernel.live_sessions(),
        0,
        "cancel deleted the remote browser"
    );
    stack.server.shutdown().await;
    stack.site.shutdown().await;
    kernel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_the_runner_proxies_only_the_providers_viewer_page() {
    let kernel = KernelDouble::start(KernelOptions::default()).await.unwrap();
    let on = on_kernel(&kernel);
    let stack = stack_with(
        move |c| {
            on(c);
            c.live.proxy_provider_viewer = true;
        },
        |b| b,
    )
    .await;
    let capture = stack.client.capture_start(&start_request()).await.unwrap();
    let page = reqwest::get(&capture.live_view_url).await.unwrap();
    assert!(
        page.text().await.unwrap().contains("/view/"),
        "the runner's page frames the proxied viewer"
    );
    let proxied = reqwest::get(format!("{}/view/", capture.live_view_url))
        .await
        .unwrap();
    assert_eq!(proxied.status(), 200);
    assert!(
        proxied
            .headers()
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|csp| csp.contains("connect-src 'self'"))
    );
    let html = proxied.text().await.unwrap();
    assert!(
        html.contains("data-session-id"),
        "it is the provider's page: {html}"
    );
    let before = kernel.calls().len();
    for escape in [
        "browsers",
        "browsers/",
        "json/version",
        "devtools/browser/x",
    ] {
        let refused = reqwest::get(format!("{}/view/{escape}", capture.live_view_url))
            .await
            .unwrap();
        assert_eq!(refused.status(), 404, "{escape}");
    }
    assert_eq!(
        kernel.calls().len(),
        before,
        "an escape reached the provider: {:?}",
        &kernel.calls()[before..]
    );
    stack
        .client
        .capture_cancel(&bound(&capture.capture_id))
        .await
        .unwrap();
    let after = reqwest::get(format!("{}/view/", capture.live_view_url))
        .await
        .unwrap();
    assert_eq!(after.status(), 404);
    stack.server.shutdown().await;
    stack.site.shutdown().await;
    kernel.shutdown().await;
}
