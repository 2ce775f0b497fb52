//! The relay as it is deployed: the hub is a child `abr serve` process and every runner a
//! child `abr up --hub <hub> --runner-id <id>` (its own state and data directories, so two
//! runners on this one machine do not share the single-instance lock; they report the
//! same host name), all on loopback, real Chromium posting to the demo site, whose
//! `/api/posts` is the ground truth.
//!
//! - routing: a call naming runner A runs on A, naming B runs on B (each post's record is
//!   on its own runner only); an unknown runner is `runner_offline`;
//! - the attacks on the connect endpoint: a relay token minted for A presented on B's, and
//!   the long-lived API token presented as a relay token;
//! - a second `abr up` with a runner id that is connected is refused (409, exit 1; the hub
//!   keeps one socket per id, whatever host a hello names: `relay.rs` tries another host);
//!   with `--force` it takes over: the first one stops, naming the takeover, and calls go
//!   to the new one;
//! - a runner killed (SIGKILL) mid-post: `runner_disconnected` (retryable) before the
//!   submit, nothing on the site; `runner_outcome_unknown` (not retryable) after it, the
//!   post on the site once, also after a repeat on the restarted runner;
//! - the hub killed (SIGKILL) mid-post and restarted on the same port: the runner
//!   reconnects by itself and the repeat with the same `Idempotency-Key` answers the
//!   original post, posted once.
//!
//! Every process a test starts runs in its own process group, killed by a guard when the
//! test ends, also when an assertion fails first. Each test pins the `abr` binary of this
//! build in its own temporary directory and runs that copy (a parallel build may relink
//! `target/debug/abr` mid-run).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use abr_demo::{DemoSite, FaultMode};
use common::{post_request, random_suffix, raw_http, signed_in_session};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

/// Bound of each test.
const TEST_LIMIT: Duration = Duration::from_secs(180);
/// How long a process may take to come up, a runner to (re)connect, a post to be saved.
const WAIT: Duration = Duration::from_secs(60);

/// The hub's API token: the orchestrator's credential, the runners' to mint relay tokens
/// with, and the runners' own API token (the hub forwards the caller's).
const HUB_TOKEN: &str = "hub-token-0123456789abcdef";
const SESSION_KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";

/// A test's own directory, with the `abr` binary of this build pinned in it.
struct Bench {
    dir: tempfile::TempDir,
    site: DemoSite,
    logs: AtomicU32,
}

impl Bench {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pinned = dir.path().join("abr");
        let built = env!("CARGO_BIN_EXE_abr");
        if std::fs::hard_link(built, &pinned).is_err() {
            std::fs::copy(built, &pinned).unwrap();
        }
        let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        Self {
            dir,
            site,
            logs: AtomicU32::new(0),
        }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("abr")
    }

    /// A fresh log file for one process.
    fn log(&self, name: &str) -> PathBuf {
        let n = self.logs.fetch_add(1, Ordering::SeqCst);
        self.dir.path().join(format!("{n:02}-{name}.log"))
    }

    /// `abr serve` as the hub, on `addr` (a free port if none), its data in the bench's `hub`
    /// directory (a restart finds it again).
    async fn hub(&self, addr: Option<SocketAddr>) -> Process {
        let addr = addr.unwrap_or_else(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
        });
        let data = self.dir.path().join("hub");
        std::fs::create_dir_all(&data).unwrap();
        let mut command = Command::new(self.bin());
        command
            .arg("serve")
            .env("TMPDIR", &data)
            .env("ABR_API_TOKEN", HUB_TOKEN)
            .env("ABR_BIND", addr.to_string())
            .env("ABR_DATA_DIR", &data)
            .env("ABR_HUB_RUNNER_WAIT_SECS", "1")
            .env("ABR_SESSION_KEY", SESSION_KEY)
            .env("RUST_LOG", "info");
        let hub = Process::spawn(command, self.log("hub"), Some(addr));
        let deadline = Instant::now() + WAIT;
        loop {
            let health = raw_http()
                .get(format!("{}/v1/health", hub.url()))
                .send()
                .await;
            if health.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "abr serve did not start; its log: {}",
                hub.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        hub
    }

    /// A foreground `abr up --headless --hub <hub> --runner-id <id> <extra>` on the machine
    /// `machine` (its own state and data directories under this bench).
    fn runner(&self, hub: &Process, machine: &str, id: &str, extra: &[&str]) -> Process {
        self.runner_with_token(hub, machine, id, extra, HUB_TOKEN)
    }

    /// [`Self::runner`] whose own API token is `api_token`.
    fn runner_with_token(
        &self,
        hub: &Process,
        machine: &str,
        id: &str,
        extra: &[&str],
        api_token: &str,
    ) -> Process {
        self.runner_keyed(hub, machine, id, extra, api_token, Some(SESSION_KEY))
    }

    /// [`Self::runner_with_token`] with `session_key` as its `ABR_SESSION_KEY` (none: as the
    /// README's relay example starts one, without it).
    fn runner_keyed(
        &self,
        hub: &Process,
        machine: &str,
        id: &str,
        extra: &[&str],
        api_token: &str,
        session_key: Option<&str>,
    ) -> Process {
        let command =
            self.runner_command(&self.bin(), hub, machine, id, extra, api_token, session_key);
        Process::spawn(command, self.log(&format!("{machine}-{id}")), None)
    }

    /// The command of [`Self::runner_keyed`], running `binary`.
    #[allow(
        clippy::too_many_arguments,
        reason = "a test's one place for the runner's command"
    )]
    fn runner_command(
        &self,
        binary: &std::path::Path,
        hub: &Process,
        machine: &str,
        id: &str,
        extra: &[&str],
        api_token: &str,
        session_key: Option<&str>,
    ) -> Command {
        let home = self.dir.path().join(machine);
        std::fs::create_dir_all(&home).unwrap();
        let mut command = Command::new(binary);
        command
            .args(["up", "--headless", "--hub", &hub.url(), "--runner-id", id])
            .args(extra)
            .env("TMPDIR", &home)
            .env("ABR_STATE_DIR", home.join("state"))
            .env("ABR_DATA_DIR", home.join("data"))
            .env("ABR_API_TOKEN", api_token)
            .env_remove("ABR_SESSION_KEY")
            .env("ABR_DEMO_SITE_URL", self.site.base_url())
            .env(
                "ABR_EGRESS_ALLOW_PRIVATE",
                self.site.local_addr().to_string(),
            )
            .env("RUST_LOG", "info")
            .env_remove("ABR_HUB_URL")
            .env_remove("ABR_RUNNER_ID")
            .env_remove("ABR_BIND");
        if let Some(key) = session_key {
            command.env("ABR_SESSION_KEY", key);
        }
        command
    }
}

/// A child process in its own process group: killed (the group) when dropped.
struct Process {
    child: Child,
    log: PathBuf,
    addr: Option<SocketAddr>,
}

impl Process {
    fn spawn(mut command: Command, log: PathBuf, addr: Option<SocketAddr>) -> Self {
        let out = std::fs::File::create(&log).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap();
        Self { child, log, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr.unwrap())
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL to it, its process group and every process it started (its browsers, in
    /// groups of their own), then reaped.
    fn kill(&mut self) {
        let mut targets = vec![format!("-{}", self.child.id())];
        targets.extend(descendants(self.child.id()).iter().map(u32::to_string));
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg("--")
            .args(&targets)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (bounded) for it to exit by itself: its exit code.
    async fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "it did not exit; its log: {}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `(pid, ppid)` of every process.
fn processes() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`
            let ppid = stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// Every process descended from `root` (the browsers Playwright starts run in process
/// groups of their own, so the group of `root` does not hold them all).
fn descendants(root: u32) -> Vec<u32> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            all.iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// How many browser (Chromium) processes descend from `root`.
fn browsers_under(root: u32) -> usize {
    descendants(root)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| String::from_utf8_lossy(&cmd).contains("chrom"))
        })
        .count()
}

/// A call to the hub for `runner` (none: for the hub itself).
fn call(
    hub: &Process,
    runner: Option<&str>,
    method: reqwest::Method,
    path: &str,
) -> reqwest::RequestBuilder {
    let request = raw_http()
        .request(method, format!("{}{path}", hub.url()))
        .bearer_auth(HUB_TOKEN);
    match runner {
        Some(id) => request.header("x-abr-runner", id),
        None => request,
    }
}

/// Waits until `runner` is connected to the hub (a relayed call answers); fails with the
/// runner's log if it exits or takes too long.
async fn wait_for_runner(hub: &Process, runner: &mut Process, id: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = call(hub, Some(id), reqwest::Method::GET, "/v1/platforms")
            .send()
            .await;
        if answer.is_ok_and(|r| r.status() == 200) {
            return;
        }
        assert!(
            runner.running(),
            "runner {id} exited; its log: {}",
            runner.log_text()
        );
        assert!(
            Instant::now() < deadline,
            "runner {id} never connected; its log: {}",
            runner.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A post through the hub on `runner` with `key`, in its own task: the status (0 when the
/// hub's connection broke without an answer), headers and JSON body.
fn post_on(
    hub: &Process,
    runner: &str,
    request: &abr_protocol::PostRequest,
    key: &str,
) -> tokio::task::JoinHandle<(u16, reqwest::header::HeaderMap, serde_json::Value)> {
    let call = call(hub, Some(runner), reqwest::Method::POST, "/v1/post")
        .header("idempotency-key", key)
        .json(request);
    tokio::spawn(async move {
        let Ok(response) = call.send().await else {
            // No answer at all: the connection to the hub broke.
            return (
                0,
                reqwest::header::HeaderMap::new(),
                serde_json::Value::Null,
            );
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or_default();
        (status, headers, body)
    })
}

/// How many posts with `text` the demo site has.
fn on_site(site: &DemoSite, text: &str) -> usize {
    site.posts().iter().filter(|p| p.text == text).count()
}

/// Waits (bounded) until the demo site saved a post with `text`.
async fn wait_saved(site: &DemoSite, text: &str, runner: &Process) {
    let deadline = Instant::now() + WAIT;
    while on_site(site, text) == 0 {
        assert!(
            Instant::now() < deadline,
            "the post was not saved; the runner's log: {}",
            runner.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The error envelope's `(code, retryable)`.
fn error_of(body: &serde_json::Value) -> (String, bool) {
    (
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body["error"]["retryable"].as_bool().unwrap_or_default(),
    )
}

/// Opens `runner_id`'s connect endpoint presenting `bearer`, as an attacker would: the
/// HTTP status of a refused handshake, or 101.
async fn try_connect(hub: &Process, runner_id: &str, bearer: &str) -> u16 {
    let mut request = format!("ws://{}/v1/relay/{runner_id}/connect", hub.addr.unwrap())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {bearer}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((_socket, response)) => response.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("{e}"),
    }
}

/// A relay token minted at the hub for `runner_id` with the API token.
async fn mint(hub: &Process, runner_id: &str) -> String {
    let response = call(hub, None, reqwest::Method::POST, "/v1/relay/tokens")
        .json(&serde_json::json!({ "runnerId": runner_id }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    body["token"].as_str().unwrap().to_owned()
}

async fn bounded(test: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(TEST_LIMIT, test)
        .await
        .expect("the test took too long");
}

/// Where a post ran: its record answers on `owner` and is unknown on `other`.
async fn record_is_only_on(hub: &Process, post_id: &str, owner: &str, other: &str) {
    let path = format!("/v1/posts/{post_id}");
    let mine = call(hub, Some(owner), reqwest::Method::GET, &path)
        .header("x-tenant-id", common::WORKSPACE)
        .send()
        .await
        .unwrap();
    assert_eq!(mine.status(), 200, "no record of {post_id} on {owner}");
    let record: serde_json::Value = mine.json().await.unwrap();
    assert_eq!(record["postId"], post_id, "{record}");
    let theirs = call(hub, Some(other), reqwest::Method::GET, &path)
        .header("x-tenant-id", common::WORKSPACE)
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 404, "{post_id} also on {other}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_on_the_runner_they_name_and_relay_tokens_are_not_interchangeable() {
    bounded(async {
        let bench = Bench::new().await;
        let hub = bench.hub(None).await;
        let mut a = bench.runner(&hub, "machine-a", "runner-a", &[]);
        let mut b = bench.runner(&hub, "machine-b", "runner-b", &[]);
        wait_for_runner(&hub, &mut a, "runner-a").await;
        wait_for_runner(&hub, &mut b, "runner-b").await;

        // One post on each, through the hub.
        let session = signed_in_session(&bench.site, "erin").await;
        let text_a = format!("routed to a {}", random_suffix());
        let text_b = format!("routed to b {}", random_suffix());
        let on_a = post_on(
            &hub,
            "runner-a",
            &post_request("demo", session.clone(), &text_a),
            "route-a",
        );
        let on_b = post_on(
            &hub,
            "runner-b",
            &post_request("demo", session, &text_b),
            "route-b",
        );
        let (status_a, _, body_a) = on_a.await.unwrap();
        let (status_b, _, body_b) = on_b.await.unwrap();
        assert_eq!(status_a, 200, "{body_a}\n{}", a.log_text());
        assert_eq!(status_b, 200, "{body_b}\n{}", b.log_text());
        assert_eq!(body_a["ok"], true, "{body_a}");
        assert_eq!(body_b["ok"], true, "{body_b}");
        assert_eq!(on_site(&bench.site, &text_a), 1);
        assert_eq!(on_site(&bench.site, &text_b), 1);
        // Each ran where it was sent: its record is on that runner, not on the other.
        let id_a = body_a["postId"].as_str().unwrap();
        let id_b = body_b["postId"].as_str().unwrap();
        assert_ne!(id_a, id_b);
        record_is_only_on(&hub, id_a, "runner-a", "runner-b").await;
        record_is_only_on(&hub, id_b, "runner-b", "runner-a").await;

        // Nobody connected as that id: the hub says so, and did nothing.
        let (status, _, body) = post_on(
            &hub,
            "runner-c",
            &post_request(
                "demo",
                signed_in_session(&bench.site, "erin").await,
                "never",
            ),
            "route-c",
        )
        .await
        .unwrap();
        assert_eq!(status, 503, "{body}");
        assert_eq!(error_of(&body).0, "runner_offline", "{body}");
        assert_eq!(on_site(&bench.site, "never"), 0);

        // The attacks on the connect endpoint. A relay token minted for A, presented on
        // B's connect endpoint: refused.
        let for_a = mint(&hub, "runner-a").await;
        assert_eq!(try_connect(&hub, "runner-b", &for_a).await, 401);
        // The long-lived API token is no relay token, on any runner's endpoint.
        assert_eq!(try_connect(&hub, "runner-a", HUB_TOKEN).await, 401);
        assert_eq!(try_connect(&hub, "runner-b", HUB_TOKEN).await, 401);
        // Nor is a guess.
        assert_eq!(try_connect(&hub, "runner-b", "x").await, 401);
        // The refusals were real: a token minted for B opens B's endpoint.
        let for_b = mint(&hub, "runner-b").await;
        assert_eq!(try_connect(&hub, "runner-b", &for_b).await, 101);
        // And the real runners were not disturbed: both still answer, each as itself.
        record_is_only_on(&hub, id_a, "runner-a", "runner-b").await;
        record_is_only_on(&hub, id_b, "runner-b", "runner-a").await;

        // The README's relay example as a user first runs it, without ABR_SESSION_KEY on the
        // runner: keeping a session through the hub is refused as a setting to fix, not
        // retryable, naming it (it was a retryable `502 store_failed`, and so was every post
        // with a stored session).
        let mut keyless = bench.runner_keyed(&hub, "machine-k", "runner-k", &[], HUB_TOKEN, None);
        wait_for_runner(&hub, &mut keyless, "runner-k").await;
        let kept = call(
            &hub,
            Some("runner-k"),
            reqwest::Method::PUT,
            "/v1/sessions/erin",
        )
        .json(&serde_json::json!({
            "session": signed_in_session(&bench.site, "erin").await,
            "platform": "demo"
        }))
        .send()
        .await
        .unwrap();
        let status = kept.status().as_u16();
        let body: serde_json::Value = kept.json().await.unwrap();
        assert_eq!(
            (status, error_of(&body)),
            (500, ("store_misconfigured".to_owned(), false)),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("ABR_SESSION_KEY")),
            "{body}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_runner_id_is_refused_unless_forced_and_force_takes_over() {
    bounded(async {
        let bench = Bench::new().await;
        let hub = bench.hub(None).await;
        let mut first = bench.runner(&hub, "machine-1", "laptop", &[]);
        wait_for_runner(&hub, &mut first, "laptop").await;
        // A post on the first runner: its record tells which runner answers "laptop".
        let session = signed_in_session(&bench.site, "erin").await;
        let text = format!("on the first runner {}", random_suffix());
        let (status, _, body) = post_on(
            &hub,
            "laptop",
            &post_request("demo", session, &text),
            "dup-1",
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{body}\n{}", first.log_text());
        let post_id = body["postId"].as_str().unwrap().to_owned();
        let record_status = || async {
            call(
                &hub,
                Some("laptop"),
                reqwest::Method::GET,
                &format!("/v1/posts/{post_id}"),
            )
            .header("x-tenant-id", common::WORKSPACE)
            .send()
            .await
            .unwrap()
        };
        assert_eq!(record_status().await.status(), 200);

        // The same id again: refused by the hub (409), `abr up` exits 1 saying why; the
        // first runner keeps the id.
        let mut second = bench.runner(&hub, "machine-2", "laptop", &[]);
        let code = second.exit_code().await;
        let said = second.log_text();
        assert_eq!(code, 1, "{said}");
        assert!(
            said.contains("refused by the hub (409 runner_conflict)")
                && said.contains("a runner with this id is already connected to the hub")
                && said.contains("abr up --force"),
            "{said}"
        );
        assert!(first.running(), "{}", first.log_text());
        assert_eq!(record_status().await.status(), 200, "the id moved");

        // With --force it takes over: the first runner is told, stops, and says so.
        let mut third = bench.runner(&hub, "machine-3", "laptop", &["--force"]);
        let code = first.exit_code().await;
        let said = first.log_text();
        assert_eq!(code, 1, "{said}");
        assert!(
            said.contains("another runner with this id took the connection over"),
            "{said}"
        );
        assert!(third.running(), "{}", third.log_text());
        // Calls for "laptop" now run on the third runner: it answers, and it never saw the
        // first one's post.
        wait_for_runner(&hub, &mut third, "laptop").await;
        let response = record_status().await;
        assert_eq!(response.status(), 404);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_ne!(error_of(&body).0, "runner_offline", "{body}");
        assert_eq!(on_site(&bench.site, &text), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_mid_post_is_retryable_before_the_submit_and_uncertain_after() {
    bounded(async {
        let bench = Bench::new().await;
        let hub = bench.hub(None).await;
        let session = signed_in_session(&bench.site, "erin").await;

        // After the submit: saved on the site, the toast 3 s away, the runner killed.
        let mut victim = bench.runner(&hub, "machine-v", "victim", &[]);
        wait_for_runner(&hub, &mut victim, "victim").await;
        bench.site.set_fault(FaultMode::SlowToast);
        let text = format!("posted, then the runner died {}", random_suffix());
        let request = post_request("demo", session.clone(), &text);
        let first = post_on(&hub, "victim", &request, "kill-after");
        wait_saved(&bench.site, &text, &victim).await;
        victim.kill();
        let (status, _, body) = first.await.unwrap();
        assert_eq!(status, 502, "{body}");
        assert_eq!(
            error_of(&body),
            ("runner_outcome_unknown".to_owned(), false),
            "{body}"
        );
        assert_eq!(on_site(&bench.site, &text), 1);

        // The runner again on the same machine (its records survived): the repeat with
        // the same key answers the post's record, uncertain, and never posts again.
        drop(victim);
        let mut again = bench.runner(&hub, "machine-v", "victim", &[]);
        wait_for_runner(&hub, &mut again, "victim").await;
        let (status, headers, body) = post_on(&hub, "victim", &request, "kill-after")
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            headers
                .get("idempotent-replayed")
                .and_then(|v| v.to_str().ok()),
            Some("true")
        );
        assert_eq!(body["ok"], false, "{body}");
        assert_eq!(body["uncertain"], true, "{body}");
        assert_eq!(on_site(&bench.site, &text), 1, "posted twice");

        // Before the submit: killed as soon as its job browser starts (the request reached
        // the runner: its record below proves it).
        let text = format!("never posted {}", random_suffix());
        let request = post_request("demo", session, &text);
        let idle = browsers_under(again.child.id());
        let before = post_on(&hub, "victim", &request, "kill-before");
        let deadline = Instant::now() + WAIT;
        while browsers_under(again.child.id()) <= idle {
            assert!(
                Instant::now() < deadline && !before.is_finished(),
                "no job browser started; the runner's log: {}",
                again.log_text()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        again.kill();
        let (status, _, body) = before.await.unwrap();
        assert_eq!(status, 502, "{body}");
        assert_eq!(
            error_of(&body),
            ("runner_disconnected".to_owned(), true),
            "{body}"
        );
        assert_eq!(
            on_site(&bench.site, &text),
            0,
            "posted after nothing was done"
        );

        // Its record, after a restart, says it was not submitted; the repeat posts nothing.
        drop(again);
        let mut third = bench.runner(&hub, "machine-v", "victim", &[]);
        wait_for_runner(&hub, &mut third, "victim").await;
        let (status, _, body) = post_on(&hub, "victim", &request, "kill-before")
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["ok"], false, "{body}");
        assert_eq!(body["uncertain"], false, "{body}");
        assert_eq!(
            error_of(&body),
            ("runner_stopped".to_owned(), true),
            "{body}"
        );
        assert_eq!(
            on_site(&bench.site, &text),
            0,
            "posted after nothing was done"
        );
        // "Retryable" was the truth: a retry (a new key) posts it, once.
        let (status, _, body) = post_on(&hub, "victim", &request, "kill-before-retry")
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["ok"], true, "{body}");
        assert_eq!(on_site(&bench.site, &text), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_mid_post_and_restarted_gets_its_runner_back_and_never_a_second_post() {
    bounded(async {
        let bench = Bench::new().await;
        let mut hub = bench.hub(None).await;
        let addr = hub.addr.unwrap();
        let mut runner = bench.runner(&hub, "machine-r", "steady", &[]);
        wait_for_runner(&hub, &mut runner, "steady").await;

        let session = signed_in_session(&bench.site, "erin").await;
        bench.site.set_fault(FaultMode::SlowToast);
        let text = format!("posted across a hub restart {}", random_suffix());
        let request = post_request("demo", session, &text);
        let first = post_on(&hub, "steady", &request, "hub-kill");
        wait_saved(&bench.site, &text, &runner).await;
        // The hub dies while the post waits for its toast on the runner.
        hub.kill();
        let (status, _, body) = first.await.unwrap();
        // No answer, or an uncertain one; never a success nor "retry".
        if status != 0 {
            assert_eq!(status, 502, "{body}");
            assert_eq!(body["error"]["retryable"], false, "{body}");
        }
        drop(hub);
        let hub = bench.hub(Some(addr)).await;
        // The runner reconnects by itself (its link backs off, mints a fresh token); it
        // never stopped.
        wait_for_runner(&hub, &mut runner, "steady").await;
        let (status, headers, body) = post_on(&hub, "steady", &request, "hub-kill").await.unwrap();
        assert_eq!(status, 200, "{body}\n{}", runner.log_text());
        assert_eq!(
            headers
                .get("idempotent-replayed")
                .and_then(|v| v.to_str().ok()),
            Some("true")
        );
        assert_eq!(body["ok"], true, "{body}");
        assert_eq!(on_site(&bench.site, &text), 1, "posted exactly once");
        assert!(
            runner.log_text().contains("reconnecting"),
            "{}",
            runner.log_text()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_enrolls_with_a_code_and_connects_with_its_own_credential_for_its_tenant() {
    bounded(async {
        let bench = Bench::new().await;
        let hub = bench.hub(None).await;
        // On the hub: `abr hub enroll`, on its data directory while it runs.
        let enrolled = Command::new(bench.bin())
            .args(["hub", "enroll", "--runner-id", "laptop", "--tenant", "acme"])
            .arg("--data-dir")
            .arg(bench.dir.path().join("hub"))
            .output()
            .unwrap();
        assert!(enrolled.status.success(), "{enrolled:?}");
        let answer: serde_json::Value = serde_json::from_slice(&enrolled.stdout).unwrap();
        assert_eq!(answer["tenantId"], "acme");
        let code = answer["code"].as_str().unwrap().to_owned();

        // On the runner's machine: enroll with the code, holding no token of the hub.
        let local_token = "the-runners-own-local-token-0123";
        let mut runner =
            bench.runner_with_token(&hub, "erin", "laptop", &["--enroll", &code], local_token);
        wait_for_runner(&hub, &mut runner, "laptop").await;
        let state = bench.dir.path().join("erin").join("state");
        let credential = std::fs::read_dir(&state)
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("hub-credential-")
            })
            .unwrap()
            .path();
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&credential).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the credential is the runner's alone");
        assert!(
            !std::fs::read_to_string(&credential)
                .unwrap()
                .contains(&code)
        );

        // Another tenant's key does not reach it; the hub's operator does, pinned to acme.
        let key =
            |tenant: &str| serde_json::json!({"name": "bot", "role": "agent", "tenantId": tenant});
        let made = call(&hub, None, reqwest::Method::POST, "/v1/keys")
            .json(&key("other"))
            .send()
            .await
            .unwrap();
        let other: serde_json::Value = made.json().await.unwrap();
        let other = other["token"].as_str().unwrap();
        let refused = raw_http()
            .get(format!("{}/v1/platforms", hub.url()))
            .bearer_auth(other)
            .header("x-abr-runner", "laptop")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 503);
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(error_of(&body).0, "runner_offline");

        // The code was used: a second machine cannot enroll with it. The first runner,
        // restarted without it, connects again with the credential it kept.
        let mut copycat =
            bench.runner_with_token(&hub, "mallory", "laptop", &["--enroll", &code], local_token);
        assert_ne!(copycat.exit_code().await, 0, "a used code enrolled again");
        assert!(
            copycat.log_text().contains("refused the enrollment code"),
            "{}",
            copycat.log_text()
        );
        drop(runner);
        let mut again = bench.runner_with_token(&hub, "erin", "laptop", &[], local_token);
        wait_for_runner(&hub, &mut again, "laptop").await;
    })
    .await;
}

/// The runners the hub lists now.
async fn runners(hub: &Process) -> Vec<serde_json::Value> {
    let listed: serde_json::Value = call(hub, None, reqwest::Method::GET, "/v1/runners")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed["runners"].as_array().cloned().unwrap_or_default()
}

/// Puts at `at` (atomically, as an install does) a release that says it is `version` and
/// otherwise writes its arguments to `marker` and runs `real` with them.
fn install_release(
    at: &std::path::Path,
    version: &str,
    marker: &std::path::Path,
    real: &std::path::Path,
) {
    use std::os::unix::fs::PermissionsExt as _;
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo \"abr {version}\"; exit 0; fi\n\
         echo \"$@\" > '{}'\nexec '{}' \"$@\"\n",
        marker.display(),
        real.display()
    );
    let staged = at.with_extension("new");
    std::fs::write(&staged, script).unwrap();
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&staged, at).unwrap();
}

/// A remote update, as the hub asks it: an older release installed where the runner's
/// binary is, is refused (the runner goes on; the hub lists why); a newer one is taken: the
/// runner drains, restarts in the same process on it with the same flags, and connects
/// again. A key without the right cannot ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_update_restarts_a_runner_on_a_newer_release_and_refuses_an_older_one() {
    bounded(async {
        let bench = Bench::new().await;
        let hub = bench.hub(None).await;
        let install = bench.dir.path().join("install");
        std::fs::create_dir_all(&install).unwrap();
        let real = install.join("abr-real");
        let installed = install.join("abr");
        for copy in [&real, &installed] {
            if std::fs::hard_link(bench.bin(), copy).is_err() {
                std::fs::copy(bench.bin(), copy).unwrap();
            }
        }
        let marker = install.join("restarted-with");
        let command = bench.runner_command(
            &installed,
            &hub,
            "ivy",
            "r-up",
            &[],
            HUB_TOKEN,
            Some(SESSION_KEY),
        );
        let mut runner = Process::spawn(command, bench.log("ivy-r-up"), None);
        wait_for_runner(&hub, &mut runner, "r-up").await;
        let first = runners(&hub).await;
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(first[0]["version"], env!("CARGO_PKG_VERSION"));
        let connected_at = first[0]["connectedAt"].as_str().unwrap().to_owned();
        let ask = || async {
            call(&hub, None, reqwest::Method::POST, "/v1/runners/r-up/update")
                .send()
                .await
                .unwrap()
        };

        // An agent's key may not ask; an unknown runner is offline.
        let made = call(&hub, None, reqwest::Method::POST, "/v1/keys")
            .json(&serde_json::json!({"name": "bot", "role": "agent", "tenantId": "acme"}))
            .send()
            .await
            .unwrap();
        let agent: serde_json::Value = made.json().await.unwrap();
        let refused = raw_http()
            .post(format!("{}/v1/runners/r-up/update", hub.url()))
            .bearer_auth(agent["token"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403);
        let unknown = call(
            &hub,
            None,
            reqwest::Method::POST,
            "/v1/runners/nobody/update",
        )
        .send()
        .await
        .unwrap();
        assert_eq!(unknown.status(), 404);

        // An older release: refused, the runner goes on.
        install_release(&installed, "0.0.9", &marker, &real);
        let asked = ask().await;
        assert_eq!(asked.status(), 202);
        let body: serde_json::Value = asked.json().await.unwrap();
        assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
        let deadline = Instant::now() + WAIT;
        let refusal = loop {
            let listed = runners(&hub).await;
            if let Some(said) = listed
                .first()
                .and_then(|r| r["update"].as_str())
                .filter(|s| s.starts_with("refused"))
            {
                break said.to_owned();
            }
            assert!(Instant::now() < deadline, "no answer: {listed:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            refusal.contains("0.0.9") && refusal.contains("no downgrade"),
            "{refusal}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(runner.running() && !marker.exists(), "it went on as it was");
        assert_eq!(runners(&hub).await[0]["connectedAt"], connected_at.as_str());

        // A newer one: the runner restarts on it, with the same flags, and connects again.
        install_release(&installed, "99.0.0", &marker, &real);
        assert_eq!(ask().await.status(), 202);
        let deadline = Instant::now() + WAIT;
        while !marker.exists() {
            assert!(
                Instant::now() < deadline,
                "it did not restart; its log: {}",
                runner.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let flags = std::fs::read_to_string(&marker).unwrap();
        assert_eq!(
            flags.trim(),
            format!(
                "up --wait-secs 300 --hub {} --runner-id r-up --headless",
                hub.url()
            ),
            "the same flags"
        );
        let deadline = Instant::now() + WAIT;
        loop {
            let listed = runners(&hub).await;
            if listed
                .first()
                .is_some_and(|r| r["connectedAt"] != connected_at.as_str() && r["health"] == "ok")
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "it did not connect again: {listed:?}; its log: {}",
                runner.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(runner.running(), "the same process, restarted in place");
        wait_for_runner(&hub, &mut runner, "r-up").await;
        assert!(
            runner
                .log_text()
                .contains("restarting on the newer release"),
            "{}",
            runner.log_text()
        );
    })
    .await;
}
