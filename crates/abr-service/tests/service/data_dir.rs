//! One runner per data directory: a second runner on a directory in use (an `abr mcp` or a
//! second `abr serve` started by mistake) is refused before it touches the records, instead
//! of ending the first one's running posts and tasks as unfinished at its start.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::sync::Arc;

use abr_core::DynSessionProvider;
use abr_core::testing::{FakeContext, FakeProvider};
use abr_service::runner::RunnerBuilder;
use common::fake::fake_config;

const KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";

fn build(dir: &std::path::Path) -> Result<abr_service::runner::Runner<FakeContext>, String> {
    let mut config = fake_config();
    config.store.data_dir = Some(dir.to_owned());
    config.store.session_key = Some(KEY.to_owned().into());
    let provider: DynSessionProvider<FakeContext> = Arc::new(FakeProvider::new());
    RunnerBuilder::with_providers(config, provider.clone(), provider)
        .build()
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_second_runner_on_a_data_directory_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = build(dir.path()).unwrap();
    let Err(second) = build(dir.path()) else {
        panic!("the second runner must be refused");
    };
    assert!(second.contains("ABR_DATA_DIR"), "{second}");
    assert!(second.contains("another abr runner"), "{second}");
    // Another directory is fine, and the lock goes with the runner.
    let other = tempfile::tempdir().unwrap();
    build(other.path()).unwrap();
    first.shutdown().await;
    drop(first);
    build(dir.path()).unwrap();
}

/// `abr keys` on a data directory: the key it prints is accepted by a runner on that
/// directory, listed without its token, and refused once revoked.
#[tokio::test]
async fn abr_keys_creates_lists_and_revokes_the_keys_a_runner_accepts() {
    use axum::body::Body;
    use axum::http::Method;
    use common::fake::{authed_with, call};

    let dir = tempfile::tempdir().unwrap();
    let abr = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_abr"))
            .args(["keys", "--data-dir"])
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "abr keys {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let created = abr(&[
        "create", "--name", "bot", "--role", "agent", "--tenant", "acme",
    ]);
    let token = created["token"].as_str().unwrap().to_owned();
    let id = created["keyId"].as_str().unwrap().to_owned();
    assert_eq!(created["tenantId"], "acme");
    let listed = abr(&["list"]);
    assert_eq!(listed["keys"][0]["keyId"], id.as_str());
    assert!(
        !listed.to_string().contains(&token),
        "the list shows no token"
    );

    let runner = std::sync::Arc::new(build(dir.path()).unwrap());
    let app = abr_service::http::app(std::sync::Arc::clone(&runner));
    let sites = |token: String| {
        let app = app.clone();
        async move {
            call(
                &app,
                authed_with(&token, Method::GET, "/v1/sites")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
        }
    };
    assert_eq!(sites(token.clone()).await.status, 200);
    let revoked = abr(&["revoke", &id]);
    assert!(revoked["revokedAt"].is_string());
    assert_eq!(sites(token).await.status, 401, "a revoked key is nobody");
}

/// A data directory other users may write to is refused (they could swap the database);
/// one the runner creates is its owner's alone.
#[tokio::test]
async fn a_data_directory_others_may_write_is_refused_and_a_new_one_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let Err(refused) = build(dir.path()) else {
        panic!("a world-writable data directory was used");
    };
    assert!(refused.contains("chmod 700"), "{refused}");
    let fresh = dir.path().join("new");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(build(&fresh).unwrap());
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let db = std::fs::metadata(fresh.join("abr.db"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(db, 0o600);
}

/// `abr mcp` on stdio acts as `ABR_MCP_KEY`: a key that names nobody is refused at start,
/// and an agent's key of one tenant reads that tenant's records only (its tenant pinned
/// without `ABR_MCP_TENANT`).
#[tokio::test]
async fn abr_mcp_acts_as_its_key_and_refuses_one_that_names_nobody() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let dir = tempfile::tempdir().unwrap();
    let abr = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_abr"))
            .args(["keys", "--data-dir"])
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let key = abr(&[
        "create", "--name", "agent", "--role", "agent", "--tenant", "acme",
    ]);
    let token = key["token"].as_str().unwrap().to_owned();
    let mcp = |mcp_key: &str| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_abr"))
            .arg("mcp")
            .env("ABR_API_TOKEN", common::fake::FAKE_TOKEN)
            .env("ABR_DATA_DIR", dir.path())
            .env("ABR_SESSION_KEY", KEY)
            .env("ABR_MCP_KEY", mcp_key)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };

    let nobody = mcp("abrk.key_nobody.secret").wait_with_output();
    let nobody = tokio::time::timeout(std::time::Duration::from_secs(60), nobody)
        .await
        .unwrap()
        .unwrap();
    assert!(!nobody.status.success());
    let stderr = String::from_utf8_lossy(&nobody.stderr);
    assert!(stderr.contains("ABR_MCP_KEY names no key"), "{stderr}");

    let mut child = mcp(&token);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for message in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "task_status", "arguments": {"taskId": "task_of_another_tenant"}}}),
    ] {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("abr mcp closed stdout");
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["id"] == 2 {
                return value;
            }
        }
    })
    .await
    .unwrap();
    // Acting as the agent of `acme` (not refused as a stranger to the default tenant).
    let text = answer.to_string();
    assert!(text.contains("task_not_found"), "{text}");
    assert!(!text.contains("tenant_forbidden"), "{text}");
    drop(stdin);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await;
}
