//! The task API (`/v1/tasks`) and stored sessions (`/v1/sessions`) over HTTP, in-process
//! (`oneshot`) on the core's fakes: create → pending → approve → succeeded, tenant
//! isolation (another tenant's id is a 404), idempotency keys, bad input as typed 4xx with
//! nothing stored, the daily limit as a 429 with `Retry-After`, the event stream, sessions
//! kept by id and written back, the callback refused toward loopback, and a restart that
//! ends an interrupted task honestly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::Duration;

use abr_core::approval::ApprovalRule;
use abr_core::testing::{FakeContext, FakeFault, FakeProvider};
use abr_core::{DynSessionProvider, WebPostStrategy};
use abr_engine::EngineStore;
use abr_service::runner::RunnerBuilder;
use abr_store::{SealingKey as StoreKey, SqliteStore};
use axum::http::Method;
use common::fake::*;
use serde_json::{Value, json};

use crate::common;

const SUBMIT: &str = "role=button[name=Submit]";

fn form_plan(email: &str) -> Value {
    json!({
        "plan": {
            "targetUrl": "https://fake.example/admin/users",
            "steps": [
                {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the email"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"},
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"}
            ],
            "verification": {"method": "dom_check", "text": "Saved"},
            "risk": "medium"
        },
        "inputs": {"email": email}
    })
}

/// A read-only plan (no committing step).
fn read_plan() -> Value {
    json!({
        "plan": {
            "targetUrl": "https://fake.example/admin/users",
            "steps": [
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"}
            ],
            "verification": {"method": "dom_check", "selector": "#users"},
            "risk": "low"
        }
    })
}

/// A request with the token, a tenant, a JSON body and extra headers.
async fn send(
    app: &axum::Router,
    method: Method,
    path: &str,
    tenant: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    send_as(app, FAKE_TOKEN, method, path, tenant, headers, body).await
}

/// [`send`] with another token (a key's).
async fn send_as(
    app: &axum::Router,
    token: &str,
    method: Method,
    path: &str,
    tenant: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let mut all: Vec<(&str, &str)> = tenant.map(|t| ("x-tenant-id", t)).into_iter().collect();
    all.extend_from_slice(headers);
    request_as(app, token, method, path, &all, body).await
}

async fn create(app: &axum::Router, tenant: &str, body: &Value) -> Value {
    let reply = send(
        app,
        Method::POST,
        "/v1/tasks",
        Some(tenant),
        &[],
        Some(body),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

/// Approves `task` as an approver of `tenant` named alice (the bootstrap token proposed
/// it: it never approves its own proposal).
async fn approve(app: &axum::Router, tenant: &str, task: &Value) -> Reply {
    let id = task["taskId"].as_str().unwrap();
    let body = json!({"approvedBy": "alice", "planHash": task["planHash"]});
    let approver = new_key(app, "alice", "approver", Some(tenant)).await;
    send_as(
        app,
        &approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        Some(tenant),
        &[],
        Some(&body),
    )
    .await
}

/// The record once it ended (long poll).
async fn ended(app: &axum::Router, tenant: &str, id: &str) -> Value {
    let reply = send(
        app,
        Method::GET,
        &format!("/v1/tasks/{id}?waitSecs=20"),
        Some(tenant),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let record = reply.json();
    let state = record["state"].as_str().unwrap();
    assert!(
        !matches!(state, "pending_approval" | "queued" | "running"),
        "{record}"
    );
    record
}

fn stack() -> FakeStack {
    fake_stack()
}

#[tokio::test]
async fn create_waits_for_approval_then_runs_the_exact_plan_once() {
    let s = stack();
    let page = s.provider.page();
    page.text_after(SUBMIT, "User Saved");
    page.extract_result("#users", json!([{"email": "a@x"}, {"email": "b@x"}]));

    let task = create(&s.app, "t1", &form_plan("new@x")).await;
    assert_eq!(task["state"], "pending_approval");
    assert_eq!(task["approvalRule"], "all");
    assert_eq!(task["steps"].as_array().unwrap().len(), 3);
    assert!(
        !task["steps"].to_string().contains("new@x"),
        "the steps in words carry no input: {task}"
    );
    // The value is shown beside them, for the approver (issue 34: the approver sees what
    // will be typed).
    assert_eq!(
        task["inputs"],
        json!([{"name": "email", "value": "new@x", "length": 5}])
    );
    let id = task["taskId"].as_str().unwrap().to_owned();
    // Nothing ran before approval.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.provider.acquired(), 0);

    // The key that proposed it never approves it.
    let own = json!({"planHash": task["planHash"]});
    let reply = send(
        &s.app,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        Some("t1"),
        &[],
        Some(&own),
    )
    .await;
    assert_eq!(
        reply.error(),
        (403, "self_approval".into(), false),
        "{}",
        reply.body
    );
    // Another plan's hash is refused, and nothing runs.
    let approver = new_key(&s.app, "alice", "approver", Some("t1")).await;
    let wrong = json!({"approvedBy": "alice", "planHash": "0".repeat(64)});
    let reply = send_as(
        &s.app,
        &approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        Some("t1"),
        &[],
        Some(&wrong),
    )
    .await;
    assert_eq!(reply.error().0, 409);
    assert_eq!(reply.error().1, "plan_hash_mismatch");
    // An over-long approver's statement is a 4xx too.
    let empty = json!({"approvedBy": "x".repeat(300), "planHash": task["planHash"]});
    let reply = send_as(
        &s.app,
        &approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        Some("t1"),
        &[],
        Some(&empty),
    )
    .await;
    assert_eq!(
        reply.error(),
        (422, "invalid_request".into(), false),
        "{}",
        reply.body
    );
    assert_eq!(s.provider.acquired(), 0);

    let reply = approve(&s.app, "t1", &task).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["approval"]["approvedBy"], "alice");
    // A second approval is refused: an approved plan runs once.
    assert_eq!(
        approve(&s.app, "t1", &task).await.error().1,
        "task_not_pending"
    );

    let record = ended(&s.app, "t1", &id).await;
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(
        record["extracted"]["users"],
        json!([{"email": "a@x"}, {"email": "b@x"}])
    );
    assert_eq!(record["stepResults"].as_array().unwrap().len(), 3);
    assert_eq!(page.clicks_on(SUBMIT), 1, "the submit ran exactly once");
    assert_eq!(s.provider.acquired(), 1);
    assert_eq!(s.provider.open_leases(), 0);
}

#[tokio::test]
async fn another_tenants_task_is_not_found_anywhere() {
    let s = stack();
    let task = create(&s.app, "tenant-a", &form_plan("a@x")).await;
    let id = task["taskId"].as_str().unwrap();
    let body = json!({"approvedBy": "mallory", "planHash": task["planHash"]});
    for (method, path, body) in [
        (Method::GET, format!("/v1/tasks/{id}"), None),
        (Method::GET, format!("/v1/tasks/{id}/events"), None),
        (Method::POST, format!("/v1/tasks/{id}/approve"), Some(&body)),
        (
            Method::POST,
            format!("/v1/tasks/{id}/reject"),
            Some(&json!({"rejectedBy": "mallory"})),
        ),
        (Method::POST, format!("/v1/tasks/{id}/recheck"), None),
        (Method::POST, format!("/v1/tasks/{id}/retry"), None),
        (
            Method::GET,
            format!("/v1/tasks/{id}/screenshots/step-0"),
            None,
        ),
    ] {
        for tenant in [Some("tenant-b"), None] {
            let reply = send(&s.app, method.clone(), &path, tenant, &[], body).await;
            assert_eq!(
                reply.error(),
                (404, "task_not_found".into(), false),
                "{method} {path} as {tenant:?}"
            );
        }
    }
    // The owner still sees it pending: nothing the other tenant did touched it.
    let reply = send(
        &s.app,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        Some("tenant-a"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.json()["state"], "pending_approval");
    // A body tenant that contradicts the header is refused.
    let mut body = form_plan("a@x");
    body["tenantId"] = json!("tenant-b");
    let reply = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("tenant-a"),
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(reply.error().0, 422);
}

#[tokio::test]
async fn a_repeated_idempotency_key_answers_the_original_and_a_reused_one_is_409() {
    let s = stack();
    let key = [("idempotency-key", "order-42")];
    let first = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("t"),
        &key,
        Some(&form_plan("a@x")),
    )
    .await;
    assert_eq!(first.status, 201);
    let again = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("t"),
        &key,
        Some(&form_plan("a@x")),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["taskId"], first.json()["taskId"]);
    let other = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("t"),
        &key,
        Some(&form_plan("b@x")),
    )
    .await;
    assert_eq!(other.error(), (409, "idempotency_key_reused".into(), false));
    // The same key of another tenant is another key.
    let elsewhere = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("u"),
        &key,
        Some(&form_plan("b@x")),
    )
    .await;
    assert_eq!(elsewhere.status, 201);
    assert_ne!(elsewhere.json()["taskId"], first.json()["taskId"]);
}

#[tokio::test]
async fn bad_plans_are_typed_4xx_naming_the_step_and_nothing_runs() {
    let s = stack();
    let mut file_url = form_plan("a@x");
    file_url["plan"]["steps"][0] =
        json!({"type": "navigate", "url": "file:///etc/passwd", "description": "Read a file"});
    let mut no_selector = form_plan("a@x");
    no_selector["plan"]["steps"][1] = json!({"type": "click", "description": "Click"});
    let mut unknown = form_plan("a@x");
    unknown["plan"]["steps"][2] = json!({"type": "pay", "description": "Pay"});
    let mut too_slow = form_plan("a@x");
    too_slow["plan"]["steps"][1]["timeoutMs"] = json!(86_400_000);
    for (case, body, status, step) in [
        ("file URL", file_url, 422, Some("steps[0]")),
        ("missing selector", no_selector, 422, Some("steps[1]")),
        ("unknown step", unknown, 422, Some("steps[2]")),
        (
            "timeout above the deadline",
            too_slow,
            422,
            Some("steps[1]"),
        ),
        ("not a plan", json!({"plan": 3}), 422, None),
    ] {
        let reply = send(
            &s.app,
            Method::POST,
            "/v1/tasks",
            Some("t"),
            &[],
            Some(&body),
        )
        .await;
        let (got, code, _) = reply.error();
        assert_eq!(got, status, "{case}: {}", reply.body);
        assert!(
            matches!(code.as_str(), "invalid_plan" | "invalid_request"),
            "{case}: {code}"
        );
        if let Some(step) = step {
            assert!(
                reply.message().contains(step),
                "{case}: {}",
                reply.message()
            );
        }
    }
    // Unknown ids, and a long poll's bad query.
    let reply = send(&s.app, Method::GET, "/v1/tasks/nope", Some("t"), &[], None).await;
    assert_eq!(reply.error(), (404, "task_not_found".into(), false));
    let task = create(&s.app, "t", &form_plan("a@x")).await;
    let id = task["taskId"].as_str().unwrap();
    let reply = send(
        &s.app,
        Method::GET,
        &format!("/v1/tasks/{id}?waitSecs=soon"),
        Some("t"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.error().0, 422);
    // No browser started for any of them.
    assert_eq!(s.provider.acquired(), 0);
}

#[tokio::test]
async fn the_101st_execution_of_the_day_is_a_429_with_retry_after() {
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off;
        c.limits.max_concurrent_jobs = 2;
    });
    let mut ids = Vec::new();
    for _ in 0..100 {
        let task = create(&s.app, "busy", &read_plan()).await;
        assert_eq!(task["state"], "queued", "rule off: runs at once");
        assert_eq!(task["approval"]["approvedBy"], "auto:off");
        ids.push(task["taskId"].as_str().unwrap().to_owned());
        // Keep within the concurrent-session limit (10): let it finish.
        ended(&s.app, "busy", ids.last().unwrap()).await;
    }
    let reply = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("busy"),
        &[],
        Some(&read_plan()),
    )
    .await;
    assert_eq!(
        reply.error(),
        (429, "tenant_daily_limit".into(), true),
        "{}",
        reply.body
    );
    let after: u64 = reply
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {:?}", reply.headers))
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&after), "{after}");
    // Another tenant is not limited by it.
    let quiet = create(&s.app, "quiet", &read_plan()).await;
    assert_eq!(
        ended(&s.app, "quiet", quiet["taskId"].as_str().unwrap()).await["state"],
        "succeeded"
    );
    assert_eq!(s.provider.acquired(), 101);
}

/// A long poll answers as its task ends, not at its next look at the store. In paused
/// time: the plan's one step hangs until its deadline (1 130 ms and the grace), which is
/// not a multiple of the 200 ms between looks.
#[tokio::test(start_paused = true)]
async fn a_long_poll_answers_as_its_task_ends() {
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off;
    });
    s.provider.page().fault_on("#users", FakeFault::Hang);
    let mut plan = read_plan();
    plan["plan"]["steps"][0]["timeoutMs"] = json!(1130);
    let mut events = s
        .runner
        .engine
        .subscribe_events(&abr_core::principal::Actor::operator("busy").unwrap(), None)
        .await
        .unwrap();
    let task = create(&s.app, "busy", &plan).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let app = s.app.clone();
    let (tenant, path) = ("busy", format!("/v1/tasks/{id}?waitSecs=30"));
    let poll = tokio::spawn(async move {
        let reply = send(&app, Method::GET, &path, Some(tenant), &[], None).await;
        (tokio::time::Instant::now(), reply)
    });
    let ended_at = loop {
        match events.next().await {
            abr_engine::Received::Event(e) if e.event == "run_ended" && e.run_id == id => {
                break tokio::time::Instant::now();
            }
            abr_engine::Received::Event(_) => {}
            other => panic!("{other:?}"),
        }
    };
    let (answered_at, reply) = poll.await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["state"], "failed", "{}", reply.body);
    assert_eq!(
        answered_at.duration_since(ended_at),
        Duration::ZERO,
        "the long poll answered when the task ended"
    );
}

#[tokio::test]
async fn the_event_stream_follows_a_task_to_its_end() {
    let s = stack();
    s.provider.page().text_after(SUBMIT, "Saved");
    let task = create(&s.app, "t", &form_plan("a@x")).await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let app = s.app.clone();
    let events = tokio::spawn(async move {
        send(
            &app,
            Method::GET,
            &format!("/v1/tasks/{id}/events"),
            Some("t"),
            &[],
            None,
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(approve(&s.app, "t", &task).await.status, 200);
    let reply = tokio::time::timeout(Duration::from_secs(20), events)
        .await
        .expect("the stream did not end with the task")
        .unwrap();
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let states: Vec<String> = reply
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["state"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        states.first().map(String::as_str),
        Some("pending_approval"),
        "{states:?}"
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("succeeded"),
        "{states:?}"
    );
    // An event is sent on a change of the record only (a running task's record changes
    // with each step result: two `running` events may follow each other, never two equal).
    let records: Vec<&str> = reply
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let mut distinct = records.clone();
    distinct.dedup();
    assert_eq!(distinct, records, "an event is sent on a change only");
}

fn session_with_foreign_cookie() -> Value {
    json!({
        "cookies": [
            {"name": "sid", "value": "in-scope-secret", "domain": "fake.example", "path": "/"},
            {"name": "track", "value": "foreign-secret", "domain": "ads.example", "path": "/"}
        ],
        "origins": []
    })
}

#[tokio::test]
async fn sessions_are_kept_scoped_per_tenant_and_tasks_run_with_them() {
    let s = stack();
    let put = json!({"session": session_with_foreign_cookie(), "platform": FAKE_PLATFORM});
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/sessions/main",
        Some("t"),
        &[],
        Some(&put),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["cookieCount"], 1);
    assert!(
        !reply.body.contains("secret"),
        "counts only: {}",
        reply.body
    );
    // Unscoped storage is refused.
    let unscoped = json!({"session": session_with_foreign_cookie()});
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/sessions/raw",
        Some("t"),
        &[],
        Some(&unscoped),
    )
    .await;
    assert_eq!(reply.error().0, 422);

    let reply = send(
        &s.app,
        Method::GET,
        "/v1/sessions/main",
        Some("t"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(reply.body.contains("in-scope-secret") && !reply.body.contains("foreign-secret"));
    let reply = send(
        &s.app,
        Method::GET,
        "/v1/sessions/main",
        Some("other"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.error(), (404, "session_not_found".into(), false));

    // A task with the session id gets the stored session.
    s.provider.page().text_after(SUBMIT, "Saved");
    let mut body = form_plan("a@x");
    body["sessionId"] = json!("main");
    body["platform"] = json!(FAKE_PLATFORM);
    let task = create(&s.app, "t", &body).await;
    approve(&s.app, "t", &task).await;
    let record = ended(&s.app, "t", task["taskId"].as_str().unwrap()).await;
    assert_eq!(record["state"], "succeeded", "{record}");
    let injected = s.provider.injected();
    let state = injected.last().unwrap().as_ref().unwrap();
    assert_eq!(state.cookies.len(), 1);
    assert_eq!(state.cookies[0].name, "sid");
    // Another tenant cannot run with it.
    let reply = send(
        &s.app,
        Method::POST,
        "/v1/tasks",
        Some("other"),
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(reply.error(), (404, "session_not_found".into(), false));

    let reply = send(
        &s.app,
        Method::DELETE,
        "/v1/sessions/main",
        Some("t"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.status, 204);
    let reply = send(
        &s.app,
        Method::DELETE,
        "/v1/sessions/main",
        Some("t"),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.error().0, 404);
}

/// A loopback listener counting connections.
async fn listener() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = socket.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
                let mut buf = vec![0u8; 65536];
                let _ = conn.read(&mut buf).await;
                let _ = conn
                    .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (addr, hits)
}

fn callback_plan(url: &str) -> Value {
    let mut body = read_plan();
    body["plan"]["verification"] = json!({"method": "api_callback", "url": url});
    body
}

#[tokio::test]
async fn the_callback_never_reaches_loopback_unless_allowed() {
    // The attack: a plan whose callback points at a service on the runner's own machine.
    let (victim, hits) = listener().await;
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off
    });
    for url in [
        format!("http://{victim}/steal"),
        format!("http://localhost:{}/steal", victim.port()),
    ] {
        let task = create(&s.app, "t", &callback_plan(&url)).await;
        let record = ended(&s.app, "t", task["taskId"].as_str().unwrap()).await;
        assert_eq!(record["state"], "succeeded", "read-only: nothing to prove");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);

    // The control: allowed explicitly, the orchestrator gets the record.
    let (allowed, hits) = listener().await;
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off;
        c.egress = c
            .egress
            .clone()
            .allow_private(format!("127.0.0.1:{}", allowed.port()).parse().unwrap());
    });
    let task = create(
        &s.app,
        "t",
        &callback_plan(&format!("http://{allowed}/done")),
    )
    .await;
    ended(&s.app, "t", task["taskId"].as_str().unwrap()).await;
    for _ in 0..50 {
        if hits.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A runner on `store` (shared across "restarts").
fn stack_on(store: Arc<dyn EngineStore>) -> FakeStack {
    let provider = Arc::new(FakeProvider::new());
    let strategy = Arc::new(abr_core::testing::ScriptedStrategy::new(
        FAKE_PLATFORM,
        &fake_policy(),
    ));
    let as_dyn: DynSessionProvider<FakeContext> = provider.clone();
    let strategy_dyn: Arc<dyn WebPostStrategy<FakeContext>> = strategy.clone();
    let runner = Arc::new(
        RunnerBuilder::with_providers(fake_config(), as_dyn.clone(), as_dyn)
            .strategy(strategy_dyn)
            .unwrap()
            .store(store.clone())
            .build()
            .unwrap(),
    );
    let app = abr_service::http::app(Arc::clone(&runner));
    FakeStack {
        provider,
        strategy,
        runner,
        app,
        store,
    }
}

#[tokio::test]
async fn a_restart_ends_interrupted_tasks_honestly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let key = || Some(StoreKey::from_bytes([7; 32]));
    let (before, after) = {
        let s = stack_on(Arc::new(SqliteStore::open(&path, key(), false).unwrap()));
        // One task hangs in its committing click, one before anything committing.
        s.provider.page().fault_on(SUBMIT, FakeFault::Hang);
        s.provider.page().fault_on("#email", FakeFault::Hang);
        let mut read_first = form_plan("a@x");
        read_first["plan"]["steps"][0] =
            json!({"type": "wait", "selector": "#email", "description": "Wait"});
        let mut click_first = form_plan("b@x");
        click_first["plan"]["steps"] = json!([{"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit"}]);
        let a = create(&s.app, "t", &read_first).await;
        let b = create(&s.app, "t", &click_first).await;
        approve(&s.app, "t", &a).await;
        approve(&s.app, "t", &b).await;
        for _ in 0..100 {
            let ra = send(
                &s.app,
                Method::GET,
                &format!("/v1/tasks/{}", a["taskId"].as_str().unwrap()),
                Some("t"),
                &[],
                None,
            )
            .await
            .json();
            let rb = send(
                &s.app,
                Method::GET,
                &format!("/v1/tasks/{}", b["taskId"].as_str().unwrap()),
                Some("t"),
                &[],
                None,
            )
            .await
            .json();
            // Both running and both at their hanging action: the click's committing start is
            // saved before the click is played (a drop before it would rightly be `failed`).
            let page = s.provider.page();
            if ra["state"] == "running"
                && rb["state"] == "running"
                && page.count("click") == 1
                && page.count("wait") >= 1
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (a, b)
        // The runner is dropped with both tasks running: what a kill leaves in the store.
    };
    let s = stack_on(Arc::new(SqliteStore::open(&path, key(), false).unwrap()));
    assert_eq!(s.runner.recover().await.unwrap(), 2);
    let a = send(
        &s.app,
        Method::GET,
        &format!("/v1/tasks/{}", before["taskId"].as_str().unwrap()),
        Some("t"),
        &[],
        None,
    )
    .await
    .json();
    let b = send(
        &s.app,
        Method::GET,
        &format!("/v1/tasks/{}", after["taskId"].as_str().unwrap()),
        Some("t"),
        &[],
        None,
    )
    .await
    .json();
    assert_eq!(a["state"], "failed", "nothing committing had started: {a}");
    assert_eq!(a["error"]["retryable"], true);
    assert_eq!(b["state"], "uncertain", "the click had started: {b}");
    assert_eq!(b["error"]["retryable"], false);
}

#[tokio::test]
async fn a_capture_can_be_kept_on_the_runner_as_it_finishes() {
    let s = fake_stack();
    let (id, _live) = fake_capture(&s.app).await;
    // A bad id is refused before the capture ends: the user keeps the signed-in browser.
    let bad = json!({"captureId": id, "workspaceId": "ws", "accountId": "acct", "storeAs": ""});
    let reply = post_json(&s.app, "/v1/capture/finish", &bad).await;
    assert_eq!(reply.error(), (422, "invalid_request".into(), false));
    let status = post_json(
        &s.app,
        "/v1/capture/status",
        &json!({"captureId": id, "workspaceId": "ws", "accountId": "acct"}),
    )
    .await;
    assert_eq!(status.json()["state"], "open", "{}", status.body);

    // The person signs in.
    s.strategy
        .edit(|script| script.precheck = abr_core::testing::Script::Return(Some(true)));
    let finish =
        json!({"captureId": id, "workspaceId": "ws", "accountId": "acct", "storeAs": "captured"});
    let reply = post_json(&s.app, "/v1/capture/finish", &finish).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["storedAs"], "captured");
    // Kept for the capture's tenant (its workspaceId), and for no other.
    let kept = send(
        &s.app,
        Method::GET,
        "/v1/sessions/captured",
        Some("ws"),
        &[],
        None,
    )
    .await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(kept.json()["session"], reply.json()["session"]);
    let other = send(
        &s.app,
        Method::GET,
        "/v1/sessions/captured",
        Some("other"),
        &[],
        None,
    )
    .await;
    assert_eq!(other.error(), (404, "session_not_found".into(), false));
}
