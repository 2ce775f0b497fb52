//! Browser tasks end to end on real Chromium, through the HTTP API and abr-client, each
//! outcome checked against the demo site's ground truth (`/api/users`):
//!
//! - the admin "Add user" plan: create → `pending_approval` → approve → `succeeded`, with a
//!   session given inline (with `platform`) and one kept on the runner (`sessionId`, written
//!   back after the run);
//! - a verification that fails after the submit is `uncertain` (re-check, owner assertion,
//!   exactly one new attempt); a step that fails before anything committing is `failed`,
//!   retryable, and nothing was added;
//! - `kill -9` of the real `abr serve` mid-task, then a restart on the same data directory:
//!   a task past its submit is `uncertain` (`runner_stopped`), one before anything
//!   committing is `failed` and its retry succeeds; no browser process outlives the test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use abr_client::protocol::{
    AgentSessionState, ApproveRequest, AssertNotPostedRequest, RecheckAnswer, RejectRequest,
    StoreSessionRequest, TaskRecord, TaskRequest, TaskState,
};
use abr_client::{AgentRunnerClient, TaskOptions};
use abr_demo::{DemoSite, FaultMode};
use common::*;
use serde_json::{Value, json};

mod fleet;

const TENANT: &str = "acme";
/// 32 bytes, hex: lets the runner keep sessions and task credentials (encrypted).
const SESSION_KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";
const JPEG_MAGIC: &[u8] = b"\xFF\xD8\xFF";
/// The site's `.success-message` text.
const CREATED: &str = abr_demo::site::USER_CREATED_MESSAGE;

/// A runner that keeps sessions, takes no pacing, and whose verification deadline (a share
/// of the request deadline) is a few seconds, so that a failing verification ends quickly.
async fn task_stack() -> Stack {
    stack_with(
        |c| {
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.limits.request_timeout = Duration::from_secs(48);
            c.pacing = None;
        },
        |b| b,
    )
    .await
}

fn options() -> TaskOptions {
    TaskOptions::tenant(TENANT)
}

/// A fresh address for the admin form.
fn new_email(tag: &str) -> String {
    format!("{tag}-{}@example.com", &random_suffix()[..10]).to_lowercase()
}

/// The seed's "Add user" proposal against the demo site's admin page: open the form, type
/// the email from the inputs, choose the role, submit, wait for the success message, read
/// the table, take a screenshot; verified by the success message.
fn add_user_plan(site: &DemoSite, email: &str, role: &str) -> Value {
    let base = site.base_url();
    json!({
        "plan": {
            "targetUrl": format!("{base}/admin/users"),
            "steps": [
                {"type": "navigate", "url": format!("{base}/admin/users"), "description": "Open the user admin page"},
                {"type": "click", "selector": "#add-user-btn", "description": "Click 'Add user'"},
                {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter the user's email"},
                {"type": "select", "selector": "#role-dropdown", "value": role, "description": format!("Select the {role} role")},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"},
                {"type": "wait", "selector": ".success-message", "timeoutMs": 5000, "description": "Wait for the success message"},
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"},
                {"type": "screenshot", "name": "done", "description": "Capture the success state for audit"}
            ],
            "verification": {"method": "dom_check", "selector": ".success-message", "text": CREATED},
            "risk": "medium",
            "reasoning": "the admin tool has no API",
            "confidence": 0.8
        },
        "inputs": {"email": email}
    })
}

fn task_request(body: Value) -> TaskRequest {
    serde_json::from_value(body).unwrap()
}

/// `/api/users`, the site's ground truth.
async fn api_users(site: &DemoSite) -> Vec<Value> {
    raw_http()
        .get(format!("{}/api/users", site.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The users of `/api/users` with `email`.
async fn users_with(site: &DemoSite, email: &str) -> Vec<Value> {
    api_users(site)
        .await
        .into_iter()
        .filter(|u| u["email"] == email)
        .collect()
}

/// Follows a task with long polls until it ended.
async fn ended(client: &AgentRunnerClient, id: &str) -> TaskRecord {
    task_ended(client, TENANT, id).await
}

/// Approves as a person of the tenant (an approver's key: the proposer's never approves).
async fn approve(client: &AgentRunnerClient, record: &TaskRecord) -> TaskRecord {
    approver(client)
        .await
        .approve_task(TENANT, &record.task_id, &approval(record))
        .await
        .unwrap()
}

fn approval(record: &TaskRecord) -> ApproveRequest {
    ApproveRequest {
        approved_by: Some("alice@acme.example".into()),
        plan_hash: record.plan_hash.clone(),
    }
}

/// A client holding a new approver's key of the tenant, made with `client`'s (operator's).
async fn approver(client: &AgentRunnerClient) -> AgentRunnerClient {
    let created = client
        .create_key(&abr_protocol::KeyRequest {
            name: "alice@acme.example".into(),
            role: abr_protocol::Role::Approver,
            tenant_id: Some(TENANT.into()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap();
    AgentRunnerClient::new(client.base_url(), created.token.expose().to_owned()).unwrap()
}

/// Creates, checks it waits for approval, approves, and follows it to its end.
async fn create_and_run(client: &AgentRunnerClient, request: &TaskRequest) -> TaskRecord {
    let (created, replayed) = client.create_task(request, &options()).await.unwrap();
    assert!(!replayed);
    assert_eq!(created.state, TaskState::PendingApproval);
    approve(client, &created).await;
    ended(client, &created.task_id).await
}

/// The success path's common checks: succeeded, the table read with the new row, the user
/// in the ground truth exactly once, the screenshot a PNG.
async fn assert_user_added(stack: &Stack, record: &TaskRecord, email: &str, role: &str) {
    assert_eq!(record.state, TaskState::Succeeded, "{record:#?}");
    assert_eq!(record.failed_step, None);
    assert!(record.error.is_none(), "{record:#?}");
    assert!(record.step_results.iter().all(|r| r.ok), "{record:#?}");
    let rows = record.extracted["users"]
        .as_array()
        .expect("the table as rows");
    assert!(
        rows.contains(&json!({"Email": email, "Role": role})),
        "the new row is read from the table: {rows:?}"
    );
    let users = users_with(&stack.site, email).await;
    assert_eq!(users.len(), 1, "added exactly once: {users:?}");
    assert_eq!(users[0]["role"], role);
    assert_eq!(users[0]["createdBy"], "alice");
    assert!(record.screenshots.iter().any(|s| s == "done"));
    // The screenshot is a redacted frame, as every image of a page ABR keeps.
    let jpeg = stack
        .client
        .task_screenshot(TENANT, &record.task_id, "done")
        .await
        .unwrap();
    assert!(jpeg.starts_with(JPEG_MAGIC), "not a JPEG");
    assert!(jpeg.len() > 1000, "an actual picture: {} bytes", jpeg.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_plan_adds_the_user_once_with_an_inline_session() {
    let stack = task_stack().await;
    let client = &stack.client;
    let email = new_email("inline");
    let mut body = add_user_plan(&stack.site, &email, "editor");
    body["session"] = serde_json::to_value(signed_in_session(&stack.site, "alice").await).unwrap();
    body["platform"] = json!("demo");
    let request = task_request(body);

    let keyed = options()
        .with_proposal_id("proposal-17")
        .with_idempotency_key("add-user-1");
    let (created, replayed) = client.create_task(&request, &keyed).await.unwrap();
    assert!(!replayed);
    assert_eq!(created.state, TaskState::PendingApproval);
    assert_eq!(created.proposal_id.as_deref(), Some("proposal-17"));
    assert_eq!(created.steps.len(), 8);
    // In words, for the approver: the planner's description and what the step does.
    assert!(
        created.steps[1].contains("Click 'Add user'"),
        "{:?}",
        created.steps
    );
    assert!(
        created.steps[1].contains("#add-user-btn"),
        "{:?}",
        created.steps
    );
    assert!(
        created.steps[4].contains("Submit the form"),
        "{:?}",
        created.steps
    );
    assert_eq!(created.plan_hash.len(), 64);
    assert!(created.plan_hash.bytes().all(|b| b.is_ascii_hexdigit()));
    // The same key and request: the same task, replayed.
    let (again, replayed) = client.create_task(&request, &keyed).await.unwrap();
    assert!(replayed);
    assert_eq!(again.task_id, created.task_id);
    // Nothing runs before the approval.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting = client.get_task(TENANT, &created.task_id).await.unwrap();
    assert_eq!(waiting.state, TaskState::PendingApproval);
    assert!(users_with(&stack.site, &email).await.is_empty());
    // A hash other than the one shown is refused.
    let wrong = ApproveRequest {
        approved_by: Some("alice".into()),
        plan_hash: "0".repeat(64),
    };
    let person = approver(client).await;
    let e = person
        .approve_task(TENANT, &created.task_id, &wrong)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409), "{e}");
    // The key that proposed it (here the operator's) never approves it.
    let e = client
        .approve_task(TENANT, &created.task_id, &approval(&created))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("self_approval"), "{e}");

    let approved = approve(client, &created).await;
    assert!(approved.approval.is_some());
    let record = ended(client, &created.task_id).await;
    assert_user_added(&stack, &record, &email, "editor").await;
    // Another tenant sees nothing of it.
    let e = client
        .get_task("other", &created.task_id)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(404));
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_runs_the_plan_and_is_written_back() {
    let stack = task_stack().await;
    let client = &stack.client;
    let mut session = signed_in_session(&stack.site, "alice").await;
    session.cookies.push(abr_protocol::Cookie::new(
        "tracker",
        "foreign-canary",
        "ads.example",
    ));
    let stored = client
        .store_session(
            TENANT,
            "alice-demo",
            &StoreSessionRequest {
                session,
                platform: Some("demo".into()),
                scope: None,
            },
        )
        .await
        .unwrap();
    assert_eq!((stored.cookie_count, stored.origin_count), (1, 0));
    let before = client.session(TENANT, "alice-demo").await.unwrap();
    assert!(before.session.origins.is_empty());

    let email = new_email("stored");
    let mut body = add_user_plan(&stack.site, &email, "admin");
    // First the composer, whose script keeps the site's preferences in localStorage: the
    // state written back after the run holds them.
    body["plan"]["steps"].as_array_mut().unwrap().insert(
        0,
        json!({"type": "navigate", "url": format!("{}/compose", stack.site.base_url()),
               "description": "Open the composer"}),
    );
    body["sessionId"] = json!("alice-demo");
    body["platform"] = json!("demo");
    let record = create_and_run(client, &task_request(body)).await;
    assert_user_added(&stack, &record, &email, "admin").await;

    let after = client.session(TENANT, "alice-demo").await.unwrap();
    assert_written_back(&stack.site, &after.session);
    // Scoped to its tenant.
    let e = client.session("other", "alice-demo").await.unwrap_err();
    assert_eq!(
        (e.status(), e.code()),
        (Some(404), Some("session_not_found"))
    );
    client.delete_session(TENANT, "alice-demo").await.unwrap();
    let e = client.session(TENANT, "alice-demo").await.unwrap_err();
    assert_eq!(e.status(), Some(404));
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

/// The session kept after a run: still signed in, refreshed with what the run's browser
/// stored (the composer's `demo_prefs`), nothing outside the site's scope.
fn assert_written_back(site: &DemoSite, session: &AgentSessionState) {
    assert!(
        session
            .cookies
            .iter()
            .any(|c| c.name == abr_demo::site::SESSION_COOKIE),
        "still signed in"
    );
    assert!(
        session.cookies.iter().all(|c| c.domain == "127.0.0.1"),
        "scoped: {:?}",
        session
            .cookies
            .iter()
            .map(|c| &c.domain)
            .collect::<Vec<_>>()
    );
    let origin = site.base_url();
    assert!(
        session
            .origins
            .iter()
            .any(|o| o.origin == origin && o.local_storage.iter().any(|i| i.name == "demo_prefs")),
        "the run's localStorage was written back: {:?}",
        session
            .origins
            .iter()
            .map(|o| &o.origin)
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unproven_after_the_submit_is_uncertain_and_failing_before_it_is_failed() {
    let stack = task_stack().await;
    let client = &stack.client;
    let session = serde_json::to_value(signed_in_session(&stack.site, "alice").await).unwrap();

    // The site saves the user but shows no success message: the verification fails after
    // the submit.
    let email = new_email("uncertain");
    let mut body = add_user_plan(&stack.site, &email, "viewer");
    body["plan"]["steps"].as_array_mut().unwrap().truncate(5);
    body["session"] = session.clone();
    body["platform"] = json!("demo");
    stack.site.set_fault(FaultMode::NoToast);
    let record = create_and_run(client, &task_request(body)).await;
    assert_eq!(record.state, TaskState::Uncertain, "{record:#?}");
    let error = record.error.as_ref().unwrap();
    assert!(!error.retryable, "{error:?}");
    assert_eq!(error.code, "verification_failed", "{error:?}");
    assert_eq!(record.step_results.len(), 5);
    assert!(record.step_results[4].committing && record.step_results[4].ok);
    assert_eq!(
        users_with(&stack.site, &email).await.len(),
        1,
        "it did happen"
    );
    // Never retried without the owner's word.
    let e = client
        .retry_task(TENANT, &record.task_id)
        .await
        .unwrap_err();
    assert_eq!(
        (e.status(), e.code()),
        (Some(409), Some("task_not_retryable"))
    );
    // A read-only re-check: the page shows no success message now either.
    let recheck = client.recheck_task(TENANT, &record.task_id).await.unwrap();
    assert!(
        matches!(
            recheck.answer,
            RecheckAnswer::Confirmed
                | RecheckAnswer::NotFound
                | RecheckAnswer::Ambiguous
                | RecheckAnswer::Unavailable
        ),
        "{recheck:?}"
    );
    assert_eq!(recheck.answer, RecheckAnswer::NotFound, "{recheck:?}");
    let still = client.get_task(TENANT, &record.task_id).await.unwrap();
    assert_eq!(still.state, TaskState::Uncertain);
    assert_eq!(
        users_with(&stack.site, &email).await.len(),
        1,
        "nothing acted"
    );
    // The owner's assertion allows exactly one new attempt.
    let asserted = client
        .assert_task_not_posted(
            TENANT,
            &record.task_id,
            &AssertNotPostedRequest {
                asserted_by: "owner@acme.example".into(),
                note: Some("checked the admin page".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        asserted.state,
        TaskState::Uncertain,
        "an assertion, not proof"
    );
    assert_eq!(
        asserted.assertion.as_ref().unwrap().asserted_by,
        "owner@acme.example"
    );
    let attempt = client.retry_task(TENANT, &record.task_id).await.unwrap();
    assert_ne!(attempt.task_id, record.task_id);
    assert_eq!(attempt.retry_of.as_deref(), Some(record.task_id.as_str()));
    assert_eq!(attempt.state, TaskState::PendingApproval);
    let e = client
        .retry_task(TENANT, &record.task_id)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("task_not_retryable"), "only one: {e}");
    let spent = client.get_task(TENANT, &record.task_id).await.unwrap();
    assert_eq!(
        spent.assertion.unwrap().spent_by.as_deref(),
        Some(attempt.task_id.as_str())
    );
    let rejected = client
        .reject_task(
            TENANT,
            &attempt.task_id,
            &RejectRequest {
                rejected_by: Some("owner@acme.example".into()),
                reason: Some("the user exists after all".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(rejected.state, TaskState::Rejected);

    // A field that does not exist, before anything committing: failed at that step,
    // retryable, and the site has no new user.
    let email = new_email("failed");
    let before = api_users(&stack.site).await.len();
    let mut body = add_user_plan(&stack.site, &email, "viewer");
    body["plan"]["steps"][1] = json!({"type": "type", "selector": "#no-such-field",
        "value": "{{email}}", "timeoutMs": 1500, "description": "Enter the email"});
    body["session"] = session;
    body["platform"] = json!("demo");
    let record = create_and_run(client, &task_request(body)).await;
    assert_eq!(record.state, TaskState::Failed, "{record:#?}");
    assert_eq!(record.failed_step, Some(1));
    assert!(record.error.as_ref().unwrap().retryable, "{record:#?}");
    assert!(record.step_results.iter().all(|r| !r.committing));
    assert!(users_with(&stack.site, &email).await.is_empty());
    assert_eq!(api_users(&stack.site).await.len(), before, "no new user");
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

// ---------------------------------------------------------------- kill -9 and restart

const BIN_TOKEN: &str = "kill-test-token-0123456789";

/// `abr serve` in its own process group, marked in its environment. The group alone does
/// not hold what it starts: the Playwright driver and Chromium run in groups of their own.
/// They inherit the environment, and Chromium's helpers (zygotes, renderers, which do not)
/// are their descendants: marked processes plus their descendants are everything the
/// runner started.
struct Serve {
    child: Child,
    marker: String,
    client: AgentRunnerClient,
    /// `http://127.0.0.1:port`.
    base: String,
}

impl Serve {
    /// With `database`, its records in that PostgreSQL database (`ABR_DATABASE_URL`), not
    /// in the data directory's SQLite file.
    async fn start_on(
        site: &DemoSite,
        data_dir: &std::path::Path,
        marker: &str,
        database: Option<&str>,
    ) -> Self {
        // The restarted runner comes back under the same node id: it ends what its previous
        // process left at once (under another id it would wait for the lease).
        let envs: Vec<(&str, &str)> = database
            .map(|url| [("ABR_DATABASE_URL", url), ("ABR_NODE_ID", "kill-test")])
            .into_iter()
            .flatten()
            .collect();
        Self::start_with(site, data_dir, marker, &envs).await
    }

    /// With more environment variables.
    async fn start_with(
        site: &DemoSite,
        data_dir: &std::path::Path,
        marker: &str,
        envs: &[(&str, &str)],
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bind = SocketAddr::from(([127, 0, 0, 1], port));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data_dir.join("abr.log"))
            .unwrap();
        // A killed runner's browser leaves its profile and artifacts folders behind (nothing
        // runs to remove them): they go to a temporary directory the test owns and removes.
        let tmp = data_dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(env!("CARGO_BIN_EXE_abr"))
                .arg("serve")
                .env("TMPDIR", &tmp)
                .env("ABR_API_TOKEN", BIN_TOKEN)
                .env("ABR_BIND", bind.to_string())
                .env("ABR_DATA_DIR", data_dir)
                .env("ABR_SESSION_KEY", SESSION_KEY)
                .env("ABR_EGRESS_ALLOW_PRIVATE", site.local_addr().to_string())
                .env("ABR_DEMO_SITE_URL", site.base_url())
                .env("ABR_PACING_MS", "off")
                .env("ABR_E2E_RUN", marker)
                .envs(envs.iter().copied())
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log),
            0,
        )
        .spawn()
        .unwrap();
        let client = AgentRunnerClient::new(format!("http://{bind}/"), BIN_TOKEN).unwrap();
        let serve = Self {
            child,
            marker: marker.to_owned(),
            client,
            base: format!("http://{bind}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while serve.client.health().await.is_err() {
            assert!(
                Instant::now() < deadline,
                "abr serve did not start; its log: {}",
                std::fs::read_to_string(data_dir.join("abr.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        serve
    }

    /// Sends `signal` (`STOP`, `CONT`) to the runner's own process only: its browsers go on.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// SIGKILL to the runner's process group and to every process it started; waits until
    /// none is left (zombies aside).
    fn kill(&mut self) {
        let started = self.processes();
        assert!(
            started.iter().any(|(_, cmd)| cmd.contains("chrom")),
            "the runner's browsers are found: {started:?}"
        );
        kill_all(self.child.id(), &self.marker);
        self.child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut left = self.processes();
            left.extend(started.iter().filter(|(pid, _)| is_alive(*pid)).cloned());
            if left.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "processes outlived the kill: {left:?}"
            );
            kill_all(self.child.id(), &self.marker);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The runner's live processes: its group, the marked ones, and their descendants.
    fn processes(&self) -> Vec<(u32, String)> {
        let table = process_table();
        let mut found: BTreeSet<u32> = marked_processes(&self.marker)
            .into_iter()
            .map(|(pid, _)| pid)
            .collect();
        found.extend(
            table
                .iter()
                .filter(|p| p.pgrp == self.child.id())
                .map(|p| p.pid),
        );
        loop {
            let before = found.len();
            found.extend(
                table
                    .iter()
                    .filter(|p| found.contains(&p.ppid))
                    .map(|p| p.pid)
                    .collect::<Vec<_>>(),
            );
            if found.len() == before {
                break;
            }
        }
        table
            .iter()
            .filter(|p| found.contains(&p.pid) && !p.zombie)
            .map(|p| (p.pid, cmdline(p.pid)))
            .collect()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // A failed assertion must not leave browsers behind either.
        kill_all(self.child.id(), &self.marker);
        let _ = self.child.wait();
    }
}

/// SIGKILL to process group `pgid` and to the marked processes (Chromium's helpers end
/// with their browser).
fn kill_all(pgid: u32, marker: &str) {
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    for (pid, _) in marked_processes(marker) {
        let _ = Command::new("kill")
            .args(["-9", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// Live processes (zombies have no environment left) whose environment holds
/// `ABR_E2E_RUN=<marker>`, with their command lines.
fn marked_processes(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("ABR_E2E_RUN={marker}");
    proc_pids()
        .filter_map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|v| v == needle.as_bytes())
                .then(|| (pid, cmdline(pid)))
        })
        .collect()
}

/// One row of `/proc/<pid>/stat`.
struct Process {
    pid: u32,
    ppid: u32,
    pgrp: u32,
    zombie: bool,
}

fn process_table() -> Vec<Process> {
    proc_pids().filter_map(process).collect()
}

fn process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses.
    let mut fields = stat[stat.rfind(')')? + 2..].split_whitespace();
    let zombie = fields.next()? == "Z";
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Process {
        pid,
        ppid,
        pgrp,
        zombie,
    })
}

fn is_alive(pid: u32) -> bool {
    process(pid).is_some_and(|p| !p.zombie)
}

fn proc_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// Polls the task until `ready` holds for its record.
async fn until(
    client: &AgentRunnerClient,
    id: &str,
    what: &str,
    ready: impl Fn(&TaskRecord) -> bool,
) -> TaskRecord {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let record = client.get_task(TENANT, id).await.unwrap();
        if ready(&record) {
            return record;
        }
        assert!(!record.state.is_final(), "{what}: ended first: {record:#?}");
        assert!(Instant::now() < deadline, "{what}: {record:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Adds a user through the admin form over plain HTTP, as another admin would.
async fn add_user_over_http(site: &DemoSite, email: &str) {
    let token = demo_login(site, "bob").await;
    let response = raw_http()
        .post(format!("{}/admin/users", site.base_url()))
        .header(
            reqwest::header::COOKIE,
            format!("{}={token}", abr_demo::site::SESSION_COOKIE),
        )
        .form(&[("email", email), ("role", "viewer")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_task_then_restart_ends_tasks_honestly_and_leaves_no_browser() {
    kill_9_mid_task_then_restart(None).await;
}

/// The same on a shared PostgreSQL database instead of the SQLite file: the mark a task
/// saved before its committing step is in the database when the runner is killed, and the
/// next runner on that database ends the task as the SQLite one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_task_then_restart_on_postgres_ends_tasks_honestly() {
    let server = abr_store::testing::PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    kill_9_mid_task_then_restart(Some(&url)).await;
    // Nothing of it in a file: the records are the database's.
    drop(server);
}

/// The two tasks a runner is killed under: one past its submit, in a wait that never ends
/// (its user added), and one in a long wait before anything committing (for a user another
/// admin adds later). Answers `(past the submit, its email, before it, its email)`.
async fn killed_plans(site: &DemoSite) -> (Value, String, Value, String) {
    let session = serde_json::to_value(signed_in_session(site, "alice").await).unwrap();
    let never = format!("never-shown-{}", &random_suffix()[..8]);
    let email_a = new_email("killed-after");
    let mut a = add_user_plan(site, &email_a, "editor");
    a["plan"]["steps"][5] = json!({"type": "wait", "text": never, "timeoutMs": 30000,
        "description": "Wait for a confirmation that never comes"});
    a["plan"]["steps"].as_array_mut().unwrap().truncate(6);
    a["session"] = session.clone();
    a["platform"] = json!("demo");
    let email_b = new_email("killed-before");
    let base = site.base_url();
    let b = json!({
        "plan": {
            "targetUrl": format!("{base}/admin/users"),
            "steps": [
                {"type": "wait", "text": email_b, "timeoutMs": 30000, "description": "Wait until the user is listed"},
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
            ],
            "verification": {"method": "dom_check", "selector": "#users", "text": email_b},
            "risk": "low"
        },
        "session": session,
        "platform": "demo"
    });
    (a, email_a, b, email_b)
}

async fn kill_9_mid_task_then_restart(database: Option<&str>) {
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = random_suffix();
    let mut first = Serve::start_on(&site, dir.path(), &marker, database).await;
    let (a, email_a, b, email_b) = killed_plans(&site).await;
    let client = first.client.clone();
    let (task_a, _) = client
        .create_task(&task_request(a), &options())
        .await
        .unwrap();
    let (task_b, _) = client
        .create_task(&task_request(b), &options())
        .await
        .unwrap();
    approve(&client, &task_a).await;
    approve(&client, &task_b).await;
    until(&client, &task_a.task_id, "A past its submit", |r| {
        r.state == TaskState::Running
            && r.step_results.len() == 5
            && r.step_results[4].committing
            && r.step_results[4].ok
    })
    .await;
    until(&client, &task_b.task_id, "B in its wait", |r| {
        r.state == TaskState::Running
    })
    .await;
    // The wait of B has started once its browser is on the page: give it a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    first.kill();
    drop(first);
    assert_eq!(
        users_with(&site, &email_a).await.len(),
        1,
        "A's submit happened"
    );

    let second = Serve::start_on(&site, dir.path(), &marker, database).await;
    let client = second.client.clone();
    if database.is_some() {
        assert!(
            !dir.path().join("abr.db").exists(),
            "no SQLite file beside a shared database"
        );
    }
    let a = client.get_task(TENANT, &task_a.task_id).await.unwrap();
    assert_eq!(a.state, TaskState::Uncertain, "{a:#?}");
    let error = a.error.as_ref().unwrap();
    assert_eq!(error.code, "runner_stopped", "{error:?}");
    assert!(!error.retryable);
    assert_eq!(a.failed_step, Some(5), "the wait was running: {a:#?}");
    let e = client.retry_task(TENANT, &a.task_id).await.unwrap_err();
    assert_eq!(e.code(), Some("task_not_retryable"));

    let b = client.get_task(TENANT, &task_b.task_id).await.unwrap();
    assert_eq!(b.state, TaskState::Failed, "{b:#?}");
    let error = b.error.as_ref().unwrap();
    assert_eq!(error.code, "runner_stopped", "{error:?}");
    assert!(error.retryable);
    // Its retry runs once the user is there, and proves it.
    add_user_over_http(&site, &email_b).await;
    let attempt = client.retry_task(TENANT, &b.task_id).await.unwrap();
    assert_eq!(attempt.retry_of.as_deref(), Some(b.task_id.as_str()));
    approve(&client, &attempt).await;
    let done = ended(&client, &attempt.task_id).await;
    assert_eq!(done.state, TaskState::Succeeded, "{done:#?}");
    let emails: BTreeSet<_> = done.extracted["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["Email"].as_str().unwrap().to_owned())
        .collect();
    assert!(emails.contains(&email_a) && emails.contains(&email_b));
    assert_eq!(users_with(&site, &email_a).await.len(), 1);
    assert_eq!(users_with(&site, &email_b).await.len(), 1);

    let mut second = second;
    second.kill();
    assert!(marked_processes(&marker).is_empty());
    site.shutdown().await;
}

/// A tenant with plan previews on: the proposed plan runs as a dry run up to its submit on
/// real Chromium against the demo site, nothing reaches the site (its ground truth has no
/// such user), and the approver's page shows the redacted frame there, the submit
/// outlined, in a person's real browser; approved, the plan then adds the user once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_previewed_plan_shows_the_approver_its_submit_and_writes_nothing() {
    let stack = stack_with(
        |c| {
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.limits.request_timeout = Duration::from_secs(48);
            c.pacing = None;
            c.tasks.plan_previews = abr_core::approval::PlanPreviews::All;
        },
        |b| b,
    )
    .await;
    let client = &stack.client;
    let email = new_email("previewed");
    let mut body = add_user_plan(&stack.site, &email, "editor");
    body["session"] = serde_json::to_value(signed_in_session(&stack.site, "alice").await).unwrap();
    body["platform"] = json!("demo");
    let users_before = api_users(&stack.site).await.len();
    let started = Instant::now();
    let (created, _) = client
        .create_task(&task_request(body), &options())
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(created.state, TaskState::PendingApproval);
    let preview = created.preview.clone().unwrap_or_else(|| {
        panic!("a preview: {:?}", created.preview_note);
    });
    eprintln!(
        "a plan preview took {took:?} (creating the task, its dry run included); note {:?}",
        created.preview_note
    );
    assert_eq!(created.preview_note, None, "the dry run reached the submit");
    let outline = preview.outline.expect("the submit's box");
    assert!(outline.width > 10 && outline.height > 10, "{outline:?}");
    // Nothing reached the site: the dry run refused the submit before it acted, and the
    // gate below the page refuses every write of a dry run.
    assert!(users_with(&stack.site, &email).await.is_empty());
    assert_eq!(api_users(&stack.site).await.len(), users_before);
    assert!(
        created.step_results.is_empty(),
        "the task itself ran nothing"
    );
    let jpeg = client
        .task_screenshot(TENANT, &created.task_id, "approval-preview")
        .await
        .unwrap();
    assert_eq!(
        abr_core::guard::jpeg_size(&jpeg).map(|(w, h)| (u32::from(w), u32::from(h))),
        Some((preview.width, preview.height))
    );

    // The approval page of a one-time link shows it, the submit outlined.
    let approver = approver(client).await;
    let url = approver
        .approval_link(TENANT, &created.task_id)
        .await
        .unwrap()
        .url;
    let (browser, lease) = person_opens(&stack.server.base_url(), url.expose()).await;
    let shown = lease
        .context()
        .page()
        .evaluate::<(), Value>(
            "() => { const img = document.getElementById('preview'); \
             const box = document.getElementById('outline'); \
             return [img && img.complete && img.naturalWidth, \
             box && Number(box.getAttribute('y'))]; }",
            None,
        )
        .await
        .unwrap();
    assert_eq!(shown, json!([preview.width, outline.y - 3]));
    lease.release().await.unwrap();
    browser.shutdown().await;

    // Approved, the plan runs as any other: the user is added once.
    approver
        .approve_task(TENANT, &created.task_id, &approval(&created))
        .await
        .unwrap();
    let record = ended(client, &created.task_id).await;
    assert_user_added(&stack, &record, &email, "editor").await;
    // The submit (step 5) is the plan's first committing step: where the preview stopped.
    let committing: Vec<bool> = record.step_results.iter().map(|r| r.committing).collect();
    assert_eq!(
        committing.iter().position(|c| *c),
        Some(4),
        "{committing:?}"
    );
}
