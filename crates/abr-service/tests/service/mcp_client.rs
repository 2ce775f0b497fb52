//! ABR's MCP server driven by a real MCP client that ABR did not write: the official
//! TypeScript SDK (`@modelcontextprotocol/sdk`, pinned in `tests/mcp-client/package-lock.json`,
//! installed with `npm ci` when missing), through `tests/mcp-client/client.mjs`.
//!
//! Over stdio (the client spawns `abr mcp`, which runs the runner in-process) and over
//! streamable HTTP (`/mcp` of a runner on loopback, with the bearer token): the tools are
//! listed; an unknown task is an `isError` result carrying the API's 404 envelope; bad tool
//! arguments are MCP invalid-params errors, never a crash; and a browse session on the demo
//! site goes open → snapshot → act → close, checked against the site's own ledger (the
//! click reached the page; in a read-only session the committing "Post" is refused and
//! never reaches it). When the stdio client closes, `abr mcp` shuts down and no process it
//! started (driver, Chromium) is left.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use abr_demo::DemoSite;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// The client's folder.
fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-client")
}

/// One `npm ci` at a time (the tests of this file run in parallel).
static INSTALL: Mutex<()> = Mutex::const_new(());

/// Installs the pinned SDK (`npm ci`) unless it is there already.
async fn ensure_installed() {
    let _one = INSTALL.lock().await;
    let dir = client_dir();
    let installed = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if installed.exists() {
        return;
    }
    let status = tokio::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .expect("npm is needed to install the MCP test client (apt-get install npm)");
    assert!(status.success(), "npm ci failed in {}", dir.display());
    assert!(installed.exists());
}

/// What the client printed: one JSON value per step, and its stderr (with `abr mcp`'s log
/// for stdio).
struct Run {
    steps: Vec<Value>,
    stderr: String,
}

impl Run {
    fn step(&self, i: usize) -> &Value {
        self.steps
            .iter()
            .find(|s| s["step"] == i)
            .unwrap_or_else(|| panic!("no step {i}: {:#?}\n{}", self.steps, self.stderr))
    }

    /// The result of tool step `i`: `(isError, structuredContent)`.
    fn result(&self, i: usize) -> (bool, &Value) {
        let step = self.step(i);
        assert!(step.get("mcpError").is_none(), "step {i}: {step}");
        (
            step["isError"].as_bool().unwrap(),
            &step["structuredContent"],
        )
    }

    /// The MCP error code of step `i`.
    fn mcp_error(&self, i: usize) -> i64 {
        let step = self.step(i);
        step["mcpError"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("step {i} is no MCP error: {step}"))
    }
}

/// Runs `client.mjs` with `script`; waits for it to end.
async fn run_client(script: &Value) -> Run {
    ensure_installed().await;
    let child = tokio::process::Command::new("node")
        .arg("client.mjs")
        .arg(script.to_string())
        .current_dir(client_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node is needed for the MCP test client");
    let output = tokio::time::timeout(Duration::from_secs(240), child.wait_with_output())
        .await
        .expect("the MCP client did not finish")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "the MCP client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let steps: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        steps.last(),
        Some(&json!({"done": true})),
        "{stdout}\n{stderr}"
    );
    Run { steps, stderr }
}

/// The steps every transport runs before browsing: list the tools, an unknown task (the
/// API's 404 as an isError result), bad arguments (MCP errors), then the tools again.
fn harness_steps() -> Vec<Value> {
    vec![
        json!({"listTools": true}),
        json!({"tool": "task_status", "arguments": {"taskId": "task_unknown"}}),
        json!({"tool": "browse_act", "arguments": {"browseId": "b_1"}}),
        json!({"tool": "browse_open", "arguments": {"url": 5}}),
        json!({"tool": "task_status", "arguments": {"taskId": "../posts/x"}}),
        json!({"tool": "format_disk", "arguments": {}}),
        json!({"listTools": true}),
    ]
}

/// Checks what [`harness_steps`] answered (steps 0 to 6).
fn check_harness(run: &Run) {
    let tools = run.step(0)["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "browse_open",
            "browse_snapshot",
            "browse_act",
            "browse_close",
            "browse_request_input",
            "post",
            "task_create",
            "task_status",
            "run_timeline",
            "set_browser_screenshots",
            "set_profile_consent"
        ]
    );
    let (is_error, content) = run.result(1);
    assert!(is_error, "{content}");
    assert_eq!(content["status"], 404, "{content}");
    assert_eq!(content["error"]["code"], "task_not_found", "{content}");
    for i in 2..=5 {
        assert_eq!(run.mcp_error(i), -32602, "step {i}");
    }
    assert_eq!(run.step(6)["tools"].as_array().unwrap().len(), 11);
}

/// open → snapshot → act (click a harmless button) → close on the demo site's guard page
/// (steps 7 to 11), then a read-only session refusing the committing "Post" (12 to 14).
fn browse_steps(site: &DemoSite) -> Vec<Value> {
    let page = format!("{}/guard", site.base_url());
    vec![
        json!({"tool": "browse_open", "arguments": {"url": page, "platform": "demo"},
               "save": {"browseId": "/browseId"}}),
        json!({"tool": "browse_snapshot", "arguments": {"browseId": "{{browseId}}"},
               "saveRef": {"showMore": {"role": "button", "name": "Show more"}}}),
        json!({"tool": "browse_act", "arguments": {"browseId": "{{browseId}}", "action": "click", "ref": "{{showMore}}"}}),
        json!({"tool": "browse_close", "arguments": {"browseId": "{{browseId}}"}}),
        json!({"tool": "browse_snapshot", "arguments": {"browseId": "{{browseId}}"}}),
        json!({"tool": "browse_open", "arguments": {"url": page, "platform": "demo", "readOnly": true},
               "save": {"readOnlyId": "/browseId"},
               "saveRef": {"post": {"role": "button", "name": "Post"}}}),
        json!({"tool": "browse_act", "arguments": {"browseId": "{{readOnlyId}}", "action": "click", "ref": "{{post}}"}}),
        json!({"tool": "browse_close", "arguments": {"browseId": "{{readOnlyId}}"}}),
        json!({"tool": "browse_request_input", "arguments": {"browseId": "{{readOnlyId}}", "ref": "{{post}}", "prompt": "Your name?"}}),
    ]
}

/// Checks what [`browse_steps`] answered, and the site's ledger.
fn check_browse(run: &Run, site: &DemoSite) {
    let (is_error, opened) = run.result(7);
    assert!(!is_error, "{opened}");
    assert!(opened["browseId"].is_string(), "{opened}");
    assert!(opened["snapshot"]["elements"].is_array(), "{opened}");
    let (is_error, snapshot) = run.result(8);
    assert!(!is_error, "{snapshot}");
    assert!(
        snapshot["url"].as_str().unwrap().ends_with("/guard"),
        "{snapshot}"
    );
    let (is_error, acted) = run.result(9);
    assert!(!is_error, "{acted}");
    assert_eq!(acted["outcome"], "done", "{acted}");
    assert!(acted["snapshot"].is_object(), "{acted}");
    let (is_error, closed) = run.result(10);
    assert!(!is_error, "{closed}");
    assert_eq!(closed["closed"], true, "{closed}");
    // A closed session is gone: the API's 404 envelope.
    let (is_error, gone) = run.result(11);
    assert!(is_error, "{gone}");
    assert_eq!(gone["error"]["code"], "browse_not_found", "{gone}");
    // Read-only: the committing click is refused with the guard's reason, never done.
    let (is_error, opened) = run.result(12);
    assert!(!is_error, "{opened}");
    assert_eq!(opened["readOnly"], true, "{opened}");
    let (is_error, refused) = run.result(13);
    assert!(!is_error, "{refused}");
    assert_eq!(refused["outcome"], "refused", "{refused}");
    assert!(refused["blocked"].is_object(), "{refused}");
    assert!(!run.result(14).0);
    // Asking a person for a value on a closed session: the typed refusal, in its schema.
    let (is_error, refused) = run.result(15);
    assert!(is_error, "{refused}");
    assert_eq!(refused["error"]["code"], "browse_not_found", "{refused}");
    // The site's own ledger: the harmless click arrived, the post never did.
    assert!(
        site.guard_seen().iter().any(|id| id == "show-more"),
        "{:?}",
        site.guard_seen()
    );
    assert_eq!(site.guard_writes(), Vec::<String>::new());
}

/// Environment variables `abr mcp` needs from this process (the driver's location, the
/// toolchain's PATH), passed on when set.
fn passed_on() -> serde_json::Map<String, Value> {
    ["PATH", "HOME", "XDG_CACHE_HOME", "PLAYWRIGHT_DRIVER_PATH"]
        .into_iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_owned(), json!(v))))
        .collect()
}

/// Processes whose environment holds `ABR_E2E_RUN=<marker>` (`abr mcp` and everything it
/// started), with their command lines.
fn marked_processes(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("ABR_E2E_RUN={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let state = stat[stat.rfind(')')? + 2..].split_whitespace().next()?;
            if state == "Z" {
                return None;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|v| v == needle.as_bytes())
                .then(|| {
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    (pid, String::from_utf8_lossy(&cmd).replace('\0', " "))
                })
        })
        .collect()
}

/// Kills what is left of a marked run when a test fails halfway (nothing when it passed).
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for (pid, _) in marked_processes(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// `abr <args>` for `site`.
fn stdio_script_with(
    site: &DemoSite,
    data_dir: &Path,
    marker: &str,
    args: &[&str],
    steps: Vec<Value>,
) -> Value {
    let mut env = passed_on();
    for (k, v) in [
        ("ABR_API_TOKEN", common::TOKEN.to_owned()),
        ("ABR_DATA_DIR", data_dir.join("data").display().to_string()),
        ("TMPDIR", data_dir.join("tmp").display().to_string()),
        ("ABR_DEMO_SITE_URL", site.base_url()),
        ("ABR_EGRESS_ALLOW_PRIVATE", site.local_addr().to_string()),
        ("ABR_PACING_MS", "off".to_owned()),
        ("ABR_E2E_RUN", marker.to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ] {
        env.insert(k.to_owned(), json!(v));
    }
    json!({
        "transport": "stdio",
        "command": env!("CARGO_BIN_EXE_abr"),
        "args": args,
        "env": env,
        "steps": steps,
    })
}

/// Runs `steps` over stdio against `site`; checks that `abr mcp` stopped by itself when the
/// client closed, leaving no process behind.
async fn over_stdio(site: &DemoSite, steps: Vec<Value>) -> Run {
    over_stdio_with(site, &["mcp"], steps).await
}

/// [`over_stdio`] with `abr <args>`.
async fn over_stdio_with(site: &DemoSite, args: &[&str], steps: Vec<Value>) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let marker = format!("mcp-stdio-{}-{}", std::process::id(), rand_suffix());
    let reaper = Reaper(marker.clone());
    let script = stdio_script_with(site, dir.path(), &marker, args, steps);
    let run = run_client(&script).await;
    // Stdin closed: `abr mcp` shut its runner down and closed its browsers on its own.
    assert!(
        run.stderr.contains("abr mcp: stopped; browsers closed"),
        "{}",
        run.stderr
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = marked_processes(&marker);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left behind: {left:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(reaper);
    run
}

/// A suffix telling this test's runs apart.
fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// Runs `steps` over streamable HTTP against `stack`'s runner.
async fn over_http(stack: &common::Stack, steps: Vec<Value>) -> Run {
    let script = json!({
        "transport": "http",
        "url": format!("{}/mcp", stack.server.base_url()),
        "token": common::TOKEN,
        "steps": steps,
    });
    run_client(&script).await
}

async fn demo_site() -> DemoSite {
    DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap()
}

#[tokio::test]
async fn over_stdio_the_sdk_client_lists_tools_and_gets_typed_errors() {
    let site = demo_site().await;
    let run = over_stdio(&site, harness_steps()).await;
    check_harness(&run);
    site.shutdown().await;
}

#[tokio::test]
async fn abr_mcp_read_only_offers_no_post_no_task_creation_and_only_read_only_browsing() {
    let site = demo_site().await;
    let page = format!("{}/guard", site.base_url());
    let steps = vec![
        json!({"listTools": true}),
        json!({"tool": "post", "arguments": {"platform": "demo", "sessionId": "s1", "content": {"text": "never"}}}),
        json!({"tool": "task_create", "arguments": {"plan": {}}}),
        // The model asks for a read-write session and clicks the committing "Post".
        json!({"tool": "browse_open", "arguments": {"url": page, "platform": "demo", "readOnly": false},
               "save": {"browseId": "/browseId"},
               "saveRef": {"post": {"role": "button", "name": "Post"}}}),
        json!({"tool": "browse_act", "arguments": {"browseId": "{{browseId}}", "action": "click", "ref": "{{post}}"}}),
        json!({"tool": "browse_close", "arguments": {"browseId": "{{browseId}}"}}),
    ];
    let run = over_stdio_with(&site, &["mcp", "--read-only"], steps).await;
    let tools = run.step(0)["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "browse_open",
            "browse_snapshot",
            "browse_act",
            "browse_close",
            "browse_request_input",
            "task_status",
            "run_timeline"
        ]
    );
    assert_eq!(run.mcp_error(1), -32602);
    assert_eq!(run.mcp_error(2), -32602);
    assert!(site.posts().is_empty());
    // The session is read-only anyway, and the click is refused before the page.
    let (is_error, opened) = run.result(3);
    assert!(!is_error, "{opened}");
    assert_eq!(opened["readOnly"], true, "{opened}");
    let (is_error, refused) = run.result(4);
    assert!(!is_error, "{refused}");
    assert_eq!(refused["outcome"], "refused", "{refused}");
    assert!(!run.result(5).0);
    assert_eq!(site.guard_writes(), Vec::<String>::new());
    site.shutdown().await;
}

#[tokio::test]
async fn abr_mcp_refuses_a_bad_read_only_setting_naming_it() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_abr"))
        .arg("mcp")
        .env("ABR_API_TOKEN", common::TOKEN)
        .env("ABR_MCP_READ_ONLY", "maybe")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .unwrap()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("abr: error: ABR_MCP_READ_ONLY: use true or false"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "stdout is the protocol's");
}

#[tokio::test]
async fn over_http_the_sdk_client_lists_tools_and_gets_typed_errors() {
    let stack = common::stack().await;
    let run = over_http(&stack, harness_steps()).await;
    check_harness(&run);
    // A client with a wrong token is refused before any MCP exchange.
    let script = json!({
        "transport": "http",
        "url": format!("{}/mcp", stack.server.base_url()),
        "token": "not-the-token-0123456789",
        "steps": [{"listTools": true}],
    });
    let child = tokio::process::Command::new("node")
        .arg("client.mjs")
        .arg(script.to_string())
        .current_dir(client_dir())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .unwrap()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("\"code\":\"unauthorized\""),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

#[tokio::test]
async fn over_stdio_the_sdk_client_browses_the_demo_site() {
    let site = demo_site().await;
    let mut steps = harness_steps();
    steps.extend(browse_steps(&site));
    let run = over_stdio(&site, steps).await;
    check_harness(&run);
    check_browse(&run, &site);
    site.shutdown().await;
}

#[tokio::test]
async fn over_http_the_sdk_client_browses_the_demo_site() {
    let stack = common::stack().await;
    let mut steps = harness_steps();
    steps.extend(browse_steps(&stack.site));
    let run = over_http(&stack, steps).await;
    check_harness(&run);
    check_browse(&run, &stack.site);
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
