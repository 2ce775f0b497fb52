//! `LocalChromium` and `CdpClient` against the installed Chromium.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use abr_doubles::{CdpClient, CdpError, ChromiumError, ChromiumOptions, LocalChromium};
use common::{http, process_gone};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_talk_cdp_and_kill() {
    let mut chromium = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    assert!(chromium.port() > 0);
    let pid = chromium.pid();
    assert!(chromium.is_running());

    let version = http(
        "GET",
        &format!("{}/json/version", chromium.http_url()),
        &[],
        None,
    )
    .await;
    assert_eq!(version.status, 200);
    assert_eq!(
        version.json()["webSocketDebuggerUrl"],
        json!(chromium.browser_ws_url())
    );

    let cdp = CdpClient::connect(&chromium.browser_ws_url())
        .await
        .unwrap();
    let v = cdp.call("Browser.getVersion", json!({})).await.unwrap();
    assert_eq!(v["protocolVersion"], "1.3");
    match cdp.call("No.suchMethod", json!({})).await {
        Err(CdpError::Protocol { code, .. }) => assert_eq!(code, -32601),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    let pages = cdp.page_targets().await.unwrap();
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0].1, "about:blank");

    chromium.kill();
    assert!(!chromium.is_running());
    assert!(process_gone(pid).await);
    tokio::time::timeout(Duration::from_secs(10), cdp.closed())
        .await
        .expect("CDP socket closes when Chromium dies");
    assert!(matches!(
        cdp.call("Browser.getVersion", json!({})).await,
        Err(CdpError::Closed)
    ));

    // Drop kills too.
    let second = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    let pid2 = second.pid();
    drop(second);
    assert!(process_gone(pid2).await);
}

#[tokio::test]
async fn missing_binary_names_the_install_command() {
    let opts = ChromiumOptions {
        binary: Some(PathBuf::from("/nonexistent/chromium-headless-shell")),
        ..ChromiumOptions::default()
    };
    let err = LocalChromium::launch(&opts).await.unwrap_err();
    assert!(matches!(err, ChromiumError::NotFound { .. }));
    assert!(
        err.to_string()
            .contains("apt-get install -y chromium-headless-shell"),
        "{err}"
    );
}

#[tokio::test]
async fn cdp_connect_failure_is_bounded() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let err = CdpClient::connect_with_timeout(
        &format!("ws://127.0.0.1:{port}/devtools/browser/x"),
        Duration::from_secs(2),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CdpError::Connect { .. }), "{err}");
}
