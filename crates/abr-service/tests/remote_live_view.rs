//! Capture on a remote provider (the Kernel double, whose CDP proxies to a real Chromium):
//! the runner proxies the provider's own viewer under `/live/{token}/view/`, never hands out
//! the provider's URL, and the view dies with the capture.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

mod common;

use abr_doubles::{KernelDouble, KernelOptions};
use abr_service::config::ProviderChoice;
use common::*;
use secrecy::SecretString;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_proxies_the_providers_viewer_and_only_while_the_capture_is_open() {
    let kernel = KernelDouble::start(KernelOptions::default()).await.unwrap();
    let kernel_url = kernel.base_url();
    let key = kernel.api_key().to_owned();
    let stack = stack_with(
        move |config| {
            config.capture_provider = ProviderChoice::Kernel;
            config.kernel_url = Some(url::Url::parse(&kernel_url).unwrap());
            config.kernel_api_key = Some(SecretString::from(key));
        },
        |b| b,
    )
    .await;
    let capture = stack.client.capture_start(&start_request()).await.unwrap();
    assert!(
        !capture.live_view_url.contains(&kernel.base_url()),
        "the provider's viewer URL must not leak"
    );
    assert_eq!(kernel.live_sessions(), 1);

    let page = reqwest::get(&capture.live_view_url).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text().await.unwrap().contains("view/"),
        "the runner's page frames the proxied viewer"
    );
    let proxied = reqwest::get(format!("{}/view/", capture.live_view_url))
        .await
        .unwrap();
    assert_eq!(
        proxied.status(),
        200,
        "the provider's viewer through the proxy"
    );
    assert!(
        proxied.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = proxied.text().await.unwrap();
    assert!(
        html.contains("data-session-id"),
        "it is the provider's page: {html}"
    );
    // The runner-served screencast is not offered for a remote browser.
    let ws_url = format!("{}/ws", capture.live_view_url.replacen("http", "ws", 1));
    let refused = tokio_tungstenite::connect_async(ws_url.as_str()).await;
    assert!(
        refused.is_err(),
        "the screencast channel must not open for a remote browser"
    );

    stack
        .client
        .capture_cancel(&bound(&capture.capture_id))
        .await
        .unwrap();
    let after = reqwest::get(format!("{}/view/", capture.live_view_url))
        .await
        .unwrap();
    assert_eq!(after.status(), 404, "the live token dies with its capture");
    assert_eq!(
        kernel.live_sessions(),
        0,
        "cancel deleted the remote browser"
    );
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
