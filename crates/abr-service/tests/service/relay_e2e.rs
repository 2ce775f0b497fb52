//! The relay against the demo site's ground truth, on real Chromium: the hub is a separate
//! `abr serve` process (killed with SIGKILL and restarted on the same port), the runner is
//! in-process (a `Runner` on local Chromium, linked with `relay::link::run`).
//!
//! - the hub killed mid-post, after the submit: the runner finishes the post, reconnects
//!   to the restarted hub by itself, and the orchestrator's repeat with the same
//!   `Idempotency-Key` answers the original post: never a second one;
//! - the runner's link dropped while its post starts (before the submit): the hub answers
//!   `runner_disconnected`, retryable, and the post then stops at its submit (nobody to
//!   tell of the commit): nothing on the site, and its record says not submitted;
//! - the runner's link dropped mid-post, after the submit: the hub answers
//!   `runner_outcome_unknown`, never retryable; the site has the post exactly once, and the
//!   repeat after the runner is back answers it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use abr_demo::FaultMode;
use abr_service::relay::RelayError;
use abr_service::relay::link::{self, LinkOptions, Shutdown};
use common::*;
use secrecy::SecretString;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Bound of each test.
const TEST_LIMIT: Duration = Duration::from_secs(240);

/// The hub's API token (the orchestrator's credential, and the runner's to mint relay
/// tokens).
const HUB_TOKEN: &str = "hub-token-0123456789abcdef";
const SESSION_KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";
const RUNNER_ID: &str = "erins-laptop";

/// `abr serve` as a child process: the hub.
struct HubProcess {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl HubProcess {
    async fn start(addr: Option<SocketAddr>, dir: Option<tempfile::TempDir>) -> Self {
        let addr = addr.unwrap_or_else(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
        });
        let dir = dir.unwrap_or_else(|| tempfile::tempdir().unwrap());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("hub.log"))
            .unwrap();
        let child = Command::new(hub_binary(&dir))
            .arg("serve")
            .env("TMPDIR", dir.path())
            .env("ABR_API_TOKEN", HUB_TOKEN)
            .env("ABR_BIND", addr.to_string())
            .env("ABR_DATA_DIR", dir.path())
            .env("ABR_SESSION_KEY", SESSION_KEY)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let hub = Self { child, addr, dir };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let health = raw_http()
                .get(format!("{}/v1/health", hub.url()))
                .send()
                .await;
            if health.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "abr serve did not start; its log: {}",
                std::fs::read_to_string(hub.dir.path().join("hub.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let relay = raw_http()
            .post(format!("{}/v1/relay/tokens", hub.url()))
            .bearer_auth(HUB_TOKEN)
            .json(&serde_json::json!({ "runnerId": "probe" }))
            .send()
            .await
            .unwrap();
        assert_eq!(
            relay.status(),
            200,
            "the abr binary has no relay (replaced by another build?)"
        );
        hub
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, then the same hub again on the same port and data directory.
    async fn kill_and_restart(mut self) -> Self {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let addr = self.addr;
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        drop(self);
        Self::start(Some(addr), Some(dir)).await
    }

    /// A call to the hub for the runner.
    fn call(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        raw_http()
            .request(method, format!("{}{path}", self.url()))
            .bearer_auth(HUB_TOKEN)
            .header("x-abr-runner", RUNNER_ID)
    }

    /// Waits until the runner is connected (a relayed call answers).
    async fn wait_for_runner(&self) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let answer = self
                .call(reqwest::Method::GET, "/v1/platforms")
                .send()
                .await;
            if answer.is_ok_and(|r| r.status() == 200) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the runner never connected to the hub"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The `abr` binary this test run built, pinned in `dir` (a hard link, else a copy) so that
/// a restart runs the same binary even when a later build replaces it.
fn hub_binary(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let pinned = dir.path().join("abr");
    if !pinned.exists() {
        let built = env!("CARGO_BIN_EXE_abr");
        if std::fs::hard_link(built, &pinned).is_err() {
            std::fs::copy(built, &pinned).unwrap();
        }
    }
    pinned
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The runner's link to the hub.
fn link(
    stack: &Stack,
    hub: &HubProcess,
) -> (watch::Sender<Shutdown>, JoinHandle<Result<(), RelayError>>) {
    let mut options = LinkOptions::new(
        url::Url::parse(&hub.url()).unwrap(),
        SecretString::from(HUB_TOKEN.to_owned()),
        RUNNER_ID.into(),
        "erins-laptop.local".into(),
    );
    options.backoff_base = Duration::from_millis(50);
    options.backoff_cap = Duration::from_millis(500);
    options.heartbeat = Duration::from_millis(500);
    options.dead_after = Duration::from_secs(3);
    let app = abr_service::http::app(Arc::clone(stack.server.runner()));
    let (stop, stopped) = watch::channel(Shutdown::Running);
    (stop, tokio::spawn(link::run(app, options, stopped)))
}

fn post_through(
    hub: &HubProcess,
    request: &abr_protocol::PostRequest,
    key: &str,
) -> JoinHandle<Result<reqwest::Response, reqwest::Error>> {
    let call = hub
        .call(reqwest::Method::POST, "/v1/post")
        .header("idempotency-key", key)
        .json(request);
    tokio::spawn(call.send())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_mid_post_never_causes_a_second_post() {
    tokio::time::timeout(TEST_LIMIT, hub_killed())
        .await
        .expect("the test took too long");
}

async fn hub_killed() {
    let stack = stack().await;
    let hub = HubProcess::start(None, None).await;
    let (_stop, linked) = link(&stack, &hub);
    hub.wait_for_runner().await;

    let session = signed_in_session(&stack.site, "erin").await;
    stack.site.set_fault(FaultMode::SlowToast);
    let text = format!("posted across a hub restart {}", random_suffix());
    let request = post_request("demo", session, &text);
    let first = post_through(&hub, &request, "hub-kill-1");
    // Saved by the site: the post now waits about 3 s for its toast, on the runner.
    wait_for("the post to be saved", WAIT, || {
        stack.site.posts().iter().any(|p| p.text == text)
    })
    .await;

    let hub = hub.kill_and_restart().await;
    // The first call died with the hub: no answer, or an uncertain one; never a success
    // nor "retry".
    match first.await.unwrap() {
        Err(_) => {}
        Ok(response) => {
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap_or_default();
            assert_eq!(status, 502, "{body}");
            assert_eq!(body["error"]["retryable"], false, "{body}");
        }
    }

    // The runner reconnects by itself; the orchestrator repeats with the same key.
    hub.wait_for_runner().await;
    let repeat = post_through(&hub, &request, "hub-kill-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(repeat.status(), 200);
    assert_eq!(
        repeat
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let result: serde_json::Value = repeat.json().await.unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        stack.site.posts().iter().filter(|p| p.text == text).count(),
        1,
        "posted exactly once"
    );
    linked.abort();
    stack.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_lost_mid_post_is_uncertain_and_posted_once() {
    tokio::time::timeout(TEST_LIMIT, runner_lost())
        .await
        .expect("the test took too long");
}

async fn runner_lost() {
    let stack = stack().await;
    let hub = HubProcess::start(None, None).await;
    let (_stop, linked) = link(&stack, &hub);
    hub.wait_for_runner().await;

    let session = signed_in_session(&stack.site, "erin").await;
    stack.site.set_fault(FaultMode::SlowToast);
    let text = format!("posted across a runner drop {}", random_suffix());
    let request = post_through_request(session, &text);
    let first = post_through(&hub, &request, "runner-drop-1");
    wait_for("the post to be saved", WAIT, || {
        stack.site.posts().iter().any(|p| p.text == text)
    })
    .await;
    // The runner's socket drops (its link is gone) while the post waits for its toast.
    linked.abort();
    let response = first.await.unwrap().unwrap();
    assert_eq!(response.status(), 502);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "runner_outcome_unknown", "{body}");
    assert_eq!(body["error"]["retryable"], false, "{body}");

    // Back: the repeat with the same key answers the post the runner finished.
    let (_stop, linked) = link(&stack, &hub);
    hub.wait_for_runner().await;
    let repeat = post_through(&hub, &request, "runner-drop-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(repeat.status(), 200);
    let result: serde_json::Value = repeat.json().await.unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        stack.site.posts().iter().filter(|p| p.text == text).count(),
        1,
        "posted exactly once"
    );
    linked.abort();
    stack.server.shutdown().await;
}

fn post_through_request(
    session: abr_protocol::AgentSessionState,
    text: &str,
) -> abr_protocol::PostRequest {
    post_request("demo", session, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_lost_before_the_submit_is_retryable_and_posts_nothing() {
    tokio::time::timeout(TEST_LIMIT, runner_lost_before_submit())
        .await
        .expect("the test took too long");
}

async fn runner_lost_before_submit() {
    let stack = stack_with(|c| c.limits.max_concurrent_jobs = 1, |b| b).await;
    let hub = HubProcess::start(None, None).await;
    let (_stop, linked) = link(&stack, &hub);
    hub.wait_for_runner().await;

    // The runner's one job slot is taken: the relayed post waits for it, before anything.
    let runner = Arc::clone(stack.server.runner());
    let slot = runner.engine.hold_job_slot().await.unwrap();
    let session = signed_in_session(&stack.site, "erin").await;
    let text = format!("never posted {}", random_suffix());
    let request = post_request("demo", session, &text);
    let first = post_through(&hub, &request, "before-submit-1");
    wait_for("the post to wait for a slot", WAIT, || {
        runner.engine.load().jobs_queued == 1
    })
    .await;
    // Admitted: its job now runs in its own task (a browser starts), before its submit.
    drop(slot);
    wait_for("the post to take the slot", WAIT, || {
        runner.engine.load().jobs_queued == 0
    })
    .await;
    linked.abort();
    let response = first.await.unwrap().unwrap();
    assert_eq!(response.status(), 502);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "runner_disconnected", "{body}");
    assert_eq!(body["error"]["retryable"], true, "{body}");

    // The post goes on on the runner, on real Chromium, up to its submit, and stops there.
    let done = runner.engine.hold_job_slot().await;
    assert!(done.is_ok(), "the post never ended");
    drop(done);
    assert!(
        !stack.site.posts().iter().any(|p| p.text == text),
        "posted after the hub was told nothing was done"
    );

    // Its record says so: the repeat with the same key answers it, not submitted.
    let (_stop, linked) = link(&stack, &hub);
    hub.wait_for_runner().await;
    let repeat = post_through(&hub, &request, "before-submit-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(repeat.status(), 200);
    let result: serde_json::Value = repeat.json().await.unwrap();
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["uncertain"], false, "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing was submitted")),
        "{result}"
    );
    assert!(!stack.site.posts().iter().any(|p| p.text == text));
    linked.abort();
    stack.server.shutdown().await;
}
