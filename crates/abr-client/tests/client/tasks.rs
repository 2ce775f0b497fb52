//! The task and session calls of `AgentRunnerClient` against a fake runner (axum on
//! 127.0.0.1:0) that records every request: methods, paths, headers, bodies, and how the
//! answers (201 / 200 replayed, envelopes with `Retry-After`, PNG bytes, 204) are read.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

use crate::common;

use std::time::Duration;

use abr_client::protocol::{
    ApproveRequest, AssertNotPostedRequest, RecheckAnswer, RejectRequest, StoreSessionRequest,
    TaskRequest, TaskState,
};
use abr_client::{AgentRunnerClient, ClientError, Operation, TaskOptions};
use serde_json::{Value, json};

use common::*;

const TOKEN: &str = "tok-tasks-canary";
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n-rest-of-a-png";

/// This module's runner: its answers and its token.
trait ThisRunner {
    /// A runner answering every route like the real one.
    async fn start() -> Self;
    fn client(&self) -> AgentRunnerClient;
}

impl ThisRunner for FakeRunner {
    async fn start() -> Self {
        Self::with(answers).await
    }

    fn client(&self) -> AgentRunnerClient {
        self.client_with(TOKEN)
    }
}

fn record(id: &str, state: &str) -> Value {
    json!({
        "taskId": id,
        "state": state,
        "planHash": "ab12",
        "steps": ["Open the users page", "Submit the form"],
        "risk": "medium",
        "approvalRule": "all",
        "createdAt": "2030-01-01T00:00:00Z"
    })
}

/// The real runner's answers, by method and path.
fn answers(seen: &Seen) -> Reply {
    match (seen.method.as_str(), seen.path.as_str()) {
        ("POST", "/v1/tasks") => {
            Reply::json(201, record("t-1", "pending_approval")).header("location", "/v1/tasks/t-1")
        }
        ("GET", "/v1/tasks/t-1" | "/v1/tasks/t-1?waitSecs=3") => {
            Reply::json(200, record("t-1", "succeeded"))
        }
        ("POST", "/v1/tasks/t-1/approve") => Reply::json(200, record("t-1", "queued")),
        ("POST", "/v1/tasks/t-1/reject") => Reply::json(200, record("t-1", "rejected")),
        ("POST", "/v1/tasks/t-1/recheck") => Reply::json(
            200,
            json!({"answer": "not_found",
                    "error": {"code": "verification_failed", "message": "no"}}),
        ),
        ("POST", "/v1/tasks/t-1/assert-not-posted") => {
            let mut r = record("t-1", "uncertain");
            r["assertion"] = json!({"assertedBy": "owner", "assertedAt": "2030-01-01T00:00:00Z"});
            Reply::json(200, r)
        }
        ("POST", "/v1/tasks/t-1/retry") => {
            let mut r = record("t-2", "pending_approval");
            r["retryOf"] = json!("t-1");
            Reply::json(201, r)
        }
        ("GET", "/v1/tasks/t-1/screenshots/step-3") => Reply::raw(200, "image/png", PNG),
        ("PUT", "/v1/sessions/main") => Reply::json(
            200,
            json!({"sessionId": "main", "cookieCount": 1, "originCount": 0,
                    "scopeReport": {"keptCookies": 1, "keptOrigins": 0, "dropped": {}}}),
        ),
        ("GET", "/v1/sessions/main") => Reply::json(
            200,
            json!({"sessionId": "main", "session": {"cookies": [], "origins": []}}),
        ),
        ("DELETE", "/v1/sessions/main") => Reply::empty(204),
        ("GET", "/v1/tasks?state=pending_approval&cursor=41&limit=2") => Reply::json(
            200,
            json!({"items": [record("t-1", "pending_approval")], "nextCursor": "40"}),
        ),
        _ => Reply::json(
            404,
            json!({"error": {"code": "task_not_found", "message": "no such task", "retryable": false}}),
        ),
    }
}

fn task_json() -> Value {
    json!({
        "plan": {
            "targetUrl": "https://app.example/admin/users",
            "steps": [
                {"type": "click", "selector": "#add-user-btn", "description": "Open the form"}
            ],
            "verification": {"method": "dom_check", "text": "Saved"},
            "risk": "medium"
        },
        "inputs": {"email": "input-canary@example.com"}
    })
}

fn task_request() -> TaskRequest {
    serde_json::from_value(task_json()).unwrap()
}

fn assert_call(seen: &Seen, method: &str, path: &str, tenant: Option<&str>) {
    assert_eq!((seen.method.as_str(), seen.path.as_str()), (method, path));
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(seen.header("x-tenant-id"), tenant, "{seen:?}");
    if !seen.body.is_empty() {
        assert_eq!(seen.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn create_task_sends_the_plan_and_its_headers_and_reads_a_new_task() {
    let runner = FakeRunner::start().await;
    let options = TaskOptions::tenant("acme")
        .with_proposal_id("prop-7")
        .with_idempotency_key("key-1");
    let (record, replayed) = runner
        .client()
        .create_task(&task_request(), &options)
        .await
        .unwrap();
    let seen = runner.single();
    assert_call(&seen, "POST", "/v1/tasks", Some("acme"));
    assert_eq!(seen.header("x-proposal-id"), Some("prop-7"));
    assert_eq!(seen.header("idempotency-key"), Some("key-1"));
    assert_eq!(seen.json()["plan"], task_json()["plan"]);
    assert_eq!(seen.json()["inputs"], task_json()["inputs"]);
    assert!(!replayed);
    assert_eq!(record.task_id, "t-1");
    assert_eq!(record.state, TaskState::PendingApproval);
    assert_eq!(record.plan_hash, "ab12");
}

#[tokio::test]
async fn create_task_without_options_sends_no_optional_header() {
    let runner = FakeRunner::start().await;
    runner
        .client()
        .create_task(&task_request(), &TaskOptions::default())
        .await
        .unwrap();
    let seen = runner.single();
    assert_call(&seen, "POST", "/v1/tasks", None);
    assert_eq!(seen.header("x-proposal-id"), None);
    assert_eq!(seen.header("idempotency-key"), None);
}

#[tokio::test]
async fn a_replayed_create_is_reported_as_replayed() {
    let runner = FakeRunner::with(|_| {
        Reply::json(200, record("t-1", "queued")).header("idempotent-replayed", "true")
    })
    .await;
    let (record, replayed) = runner
        .client()
        .create_task(&task_request(), &TaskOptions::tenant("acme"))
        .await
        .unwrap();
    assert!(replayed);
    assert_eq!(record.state, TaskState::Queued);
}

#[tokio::test]
async fn refusals_are_typed_with_code_retryability_and_retry_after() {
    let runner = FakeRunner::with(|_| {
        Reply::json(
            429,
            json!({"error": {"code": "tenant_limit", "message": "100 a day", "retryable": true}}),
        )
        .header("retry-after", "42")
    })
    .await;
    let e = runner
        .client()
        .create_task(&task_request(), &TaskOptions::tenant("acme"))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(429));
    assert_eq!(e.code(), Some("tenant_limit"));
    assert!(e.is_retryable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(42)));
    // Another tenant's task is a plain 404 envelope.
    let runner = FakeRunner::start().await;
    let e = runner.client().get_task("other", "t-9").await.unwrap_err();
    assert_eq!(
        (e.status(), e.code(), e.is_retryable()),
        (Some(404), Some("task_not_found"), false)
    );
}

#[tokio::test]
async fn every_task_call_names_the_tenant_and_its_path() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    assert_eq!(
        c.get_task("acme", "t-1").await.unwrap().state,
        TaskState::Succeeded
    );
    let approve = ApproveRequest {
        approved_by: Some("alice".into()),
        plan_hash: "ab12".into(),
    };
    assert_eq!(
        c.approve_task("acme", "t-1", &approve).await.unwrap().state,
        TaskState::Queued
    );
    let reject = RejectRequest {
        rejected_by: Some("bob".into()),
        reason: Some("no".into()),
    };
    assert_eq!(
        c.reject_task("acme", "t-1", &reject).await.unwrap().state,
        TaskState::Rejected
    );
    let recheck = c.recheck_task("acme", "t-1").await.unwrap();
    assert_eq!(recheck.answer, RecheckAnswer::NotFound);
    let assert = AssertNotPostedRequest {
        asserted_by: "owner".into(),
        note: None,
    };
    let asserted = c
        .assert_task_not_posted("acme", "t-1", &assert)
        .await
        .unwrap();
    assert_eq!(asserted.assertion.unwrap().asserted_by, "owner");
    let retried = c.retry_task("acme", "t-1").await.unwrap();
    assert_eq!(
        (retried.task_id.as_str(), retried.retry_of.as_deref()),
        ("t-2", Some("t-1"))
    );
    let seen = runner.seen();
    let calls: Vec<_> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/tasks/t-1"),
            ("POST", "/v1/tasks/t-1/approve"),
            ("POST", "/v1/tasks/t-1/reject"),
            ("POST", "/v1/tasks/t-1/recheck"),
            ("POST", "/v1/tasks/t-1/assert-not-posted"),
            ("POST", "/v1/tasks/t-1/retry"),
        ]
    );
    for s in &seen {
        assert_call(s, &s.method, &s.path, Some("acme"));
    }
    assert_eq!(
        seen[1].json(),
        json!({"approvedBy": "alice", "planHash": "ab12"})
    );
    assert_eq!(seen[2].json(), json!({"rejectedBy": "bob", "reason": "no"}));
    assert_eq!(seen[4].json(), json!({"assertedBy": "owner"}));
    assert!(seen[3].body.is_empty() && seen[5].body.is_empty());
}

#[tokio::test]
async fn ids_are_one_encoded_path_segment() {
    let runner = FakeRunner::start().await;
    let _ = runner.client().get_task("acme", "../a b?c").await;
    assert_eq!(runner.single().path, "/v1/tasks/..%2Fa%20b%3Fc");
}

#[tokio::test]
async fn wait_task_long_polls_beyond_the_client_timeout() {
    let runner = FakeRunner::with(|seen| {
        let mut reply = answers(seen);
        reply.delay = Some(Duration::from_millis(1500));
        reply
    })
    .await;
    // A client whose own deadline is shorter than the wait.
    let client = AgentRunnerClient::builder(format!("http://{}/", runner.addr))
        .token(TOKEN)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let record = client
        .wait_task("acme", "t-1", Duration::from_millis(2500))
        .await
        .unwrap();
    assert_eq!(record.state, TaskState::Succeeded);
    assert_call(
        &runner.single(),
        "GET",
        "/v1/tasks/t-1?waitSecs=3",
        Some("acme"),
    );
    // Without a wait the client's deadline applies.
    let e = client.get_task("acme", "t-1").await.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(e.is_retryable(), "a read times out retryably: {e:?}");
}

#[tokio::test]
async fn a_screenshot_is_png_bytes_and_anything_else_is_a_decode_error() {
    let runner = FakeRunner::start().await;
    let png = runner
        .client()
        .task_screenshot("acme", "t-1", "step-3")
        .await
        .unwrap();
    assert_eq!(png, PNG);
    let seen = runner.single();
    assert_call(
        &seen,
        "GET",
        "/v1/tasks/t-1/screenshots/step-3",
        Some("acme"),
    );
    assert_eq!(seen.header("accept"), Some("image/jpeg, image/png"));

    // A redacted frame is JPEG.
    let jpeg_bytes: &[u8] = b"\xff\xd8\xff\xe0-rest-of-a-jpeg";
    let jpeg =
        FakeRunner::with(move |_| Reply::raw(200, "image/jpeg; charset=binary", jpeg_bytes)).await;
    let got = jpeg
        .client()
        .task_screenshot("acme", "t-1", "step-3")
        .await
        .unwrap();
    assert_eq!(got, jpeg_bytes);

    let html =
        FakeRunner::with(|_| Reply::raw(200, "text/html", b"<html>a portal</html>".to_vec())).await;
    let e = html
        .client()
        .task_screenshot("acme", "t-1", "step-3")
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Decode {
                operation: Operation::TaskScreenshot,
                status: 200,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.to_string().contains("portal"), "{e}");
}

#[tokio::test]
async fn sessions_are_put_read_and_deleted_by_tenant() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let request: StoreSessionRequest = serde_json::from_value(json!({
        "session": {"cookies": [{"name": "sid", "value": "cookie-canary", "domain": "app.example"}],
                    "origins": []},
        "platform": "demo"
    }))
    .unwrap();
    let info = c.store_session("acme", "main", &request).await.unwrap();
    assert_eq!((info.session_id.as_str(), info.cookie_count), ("main", 1));
    let stored = c.session("acme", "main").await.unwrap();
    assert_eq!(stored.session_id, "main");
    c.delete_session("acme", "main").await.unwrap();
    let e = c.delete_session("acme", "gone").await.unwrap_err();
    assert_eq!(e.status(), Some(404));
    let seen = runner.seen();
    assert_call(&seen[0], "PUT", "/v1/sessions/main", Some("acme"));
    assert_eq!(
        seen[0].json()["session"]["cookies"][0]["value"],
        "cookie-canary"
    );
    assert_eq!(seen[0].json()["platform"], "demo");
    assert_call(&seen[1], "GET", "/v1/sessions/main", Some("acme"));
    assert_call(&seen[2], "DELETE", "/v1/sessions/main", Some("acme"));
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let errors = [
        c.get_task("acme", "").await.unwrap_err(),
        c.get_task("", "t-1").await.unwrap_err(),
        c.get_task("line\nbreak-canary", "t-1").await.unwrap_err(),
        c.task_screenshot("acme", "t-1", "").await.unwrap_err(),
        c.session("acme", "").await.unwrap_err(),
        c.create_task(&task_request(), &TaskOptions::tenant("a\rb-canary"))
            .await
            .unwrap_err(),
        c.create_task(
            &task_request(),
            &TaskOptions::default().with_idempotency_key(""),
        )
        .await
        .unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, ClientError::InvalidArgument { .. }), "{e:?}");
        assert!(!e.to_string().contains("canary"), "{e}");
    }
    assert!(runner.seen().is_empty());
}

#[test]
fn reads_and_session_writes_are_idempotent_and_acting_calls_are_not() {
    for op in [
        Operation::GetTask,
        Operation::RecheckTask,
        Operation::TaskScreenshot,
        Operation::StoreSession,
        Operation::GetSession,
        Operation::DeleteSession,
    ] {
        assert!(op.is_idempotent(), "{op}");
    }
    for op in [
        Operation::CreateTask,
        Operation::ApproveTask,
        Operation::RejectTask,
        Operation::AssertTaskNotPosted,
        Operation::RetryTask,
    ] {
        assert!(!op.is_idempotent(), "{op}");
    }
}

#[tokio::test]
async fn list_tasks_sends_its_query_and_reads_a_page() {
    let runner = FakeRunner::start().await;
    let params = abr_client::protocol::ListParams {
        state: Some("pending_approval".into()),
        cursor: Some("41".into()),
        limit: Some(2),
    };
    let page = runner.client().list_tasks("acme", &params).await.unwrap();
    let seen = runner.single();
    assert_call(
        &seen,
        "GET",
        "/v1/tasks?state=pending_approval&cursor=41&limit=2",
        Some("acme"),
    );
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].task_id, "t-1");
    assert_eq!(page.next_cursor.as_deref(), Some("40"));
    assert!(Operation::List.is_idempotent());
}
