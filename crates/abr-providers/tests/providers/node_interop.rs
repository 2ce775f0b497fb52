//! A state exported by ABR loads in Node Playwright's `newContext({storageState})` and shows
//! the same cookies and localStorage, and a state written by Node Playwright's
//! `context.storageState()` loads in ABR and shows the same.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::path::PathBuf;

use abr_core::{AcquireMode, AcquireRequest, SessionContext, SessionProvider};
use abr_protocol::AgentSessionState;
use abr_providers::conformance::{Seen, TestSite, state_for, visit};
use abr_providers::{ChromiumBinary, LocalBrowserSessionProvider, LocalProviderConfig, base_args};
use serde_json::json;

fn node(mode: &str, config: &serde_json::Value) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("node")
        .arg(root.join("tests/node/interop.mjs"))
        .arg(mode)
        .arg(config.to_string())
        .output()
        .expect("node (run driver/setup)");
    assert!(
        out.status.success(),
        "node {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn base_config(site: &TestSite) -> serde_json::Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../driver/package.json");
    json!({
        "driverPackage": root,
        "executablePath": ChromiumBinary::HeadlessShell.path(),
        "args": base_args(),
        "urls": [format!("{}/page", site.origin_a()), format!("{}/page", site.origin_b())],
        "setUrl": format!("{}/set?name=node_cookie&value=nc1", site.origin_a()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abr_exports_load_in_node_playwright_and_node_states_load_in_abr() {
    let site = TestSite::start().await.unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    });
    let request = |state: Option<AgentSessionState>| AcquireRequest {
        profile: None,
        mode: AcquireMode::Unattended,
        platform: "interop".into(),
        state,
        start_url: None,
    };

    // ABR → Node: acquire with a state, let the page change it, export, load in Node.
    let lease = provider
        .acquire(request(Some(state_for(&site, "abr"))))
        .await
        .unwrap();
    let abr_a = visit(
        lease.context(),
        &format!("{}/set?name=fresh&value=f1", site.origin_a()),
    )
    .await;
    lease
        .context()
        .page()
        .evaluate::<(), ()>("() => localStorage.setItem('added', 'x')", None)
        .await
        .unwrap();
    let abr_a_after = visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    let abr_b = visit(lease.context(), &format!("{}/page", site.origin_b())).await;
    let exported = lease.context().export_state().await.unwrap();
    lease.release().await.unwrap();
    assert!(abr_a.cookies().contains_key("sid"));

    let mut config = base_config(&site);
    config["state"] = serde_json::to_value(&exported).unwrap();
    let seen: Vec<Seen> = serde_json::from_str(&node("load", &config)).unwrap();
    assert_eq!(
        seen[0].cookies(),
        abr_a_after.cookies(),
        "Node sees ABR's cookies on origin A"
    );
    assert_eq!(
        seen[0].ls, abr_a_after.ls,
        "Node sees ABR's localStorage on origin A"
    );
    assert_eq!(
        seen[1].cookies(),
        abr_b.cookies(),
        "Node sees ABR's cookies on origin B"
    );
    assert_eq!(
        seen[1].ls, abr_b.ls,
        "Node sees ABR's localStorage on origin B"
    );
    assert_eq!(seen[0].ls.get("added").map(String::as_str), Some("x"));

    // Node → ABR: a state written by context.storageState() loads unchanged in ABR.
    let written = node("write", &base_config(&site));
    let state: AgentSessionState = serde_json::from_str(&written).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        serde_json::to_value(&state).unwrap(),
        raw,
        "a Playwright file round-trips unchanged"
    );
    let lease = provider.acquire(request(Some(state))).await.unwrap();
    let a = visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    let b = visit(lease.context(), &format!("{}/page", site.origin_b())).await;
    lease.release().await.unwrap();
    assert_eq!(
        a.cookies().get("node_cookie").map(String::as_str),
        Some("nc1")
    );
    assert_eq!(a.ls.get("from_node").map(String::as_str), Some("n1"));
    assert_eq!(b.ls.get("from_node_b").map(String::as_str), Some("n2"));
    assert!(
        !a.ls.contains_key("from_node_b") && !b.ls.contains_key("from_node"),
        "origins stay apart"
    );
    provider.shutdown().await;
}
