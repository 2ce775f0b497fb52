//! Posts over HTTP with durable records, in-process on the core's fakes: a repeated
//! `Idempotency-Key` answers the original and the strategy submitted once; a reused key
//! with another body is a 409; a post's record is its tenant's only; an uncertain post is
//! never reposted by a repeat, is re-checked read-only, and an owner assertion allows
//! exactly one new attempt.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_core::testing::Script;
use abr_core::{RecheckOutcome, VerifyOutcome};
use axum::body::Body;
use axum::http::{Method, header};
use common::fake::*;
use serde_json::{Value, json};

fn body(text: &str) -> Value {
    json!({
        "platform": FAKE_PLATFORM,
        "session": {"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []},
        "content": {"text": text},
        "workspaceId": "ws"
    })
}

async fn send(
    app: &axum::Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    request_as(app, FAKE_TOKEN, method, path, headers, body).await
}

#[tokio::test]
async fn a_repeated_key_answers_the_original_and_posts_once() {
    let s = fake_stack();
    let key = [("idempotency-key", "post-1")];
    let first = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("hello"))).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let first = first.json();
    assert_eq!(first["ok"], true);
    let post_id = first["postId"].as_str().unwrap().to_owned();

    let again = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("hello"))).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["postId"], post_id.as_str());
    assert_eq!(s.strategy.submits(), 1, "the repeat did not post again");

    let other = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("bye"))).await;
    assert_eq!(other.error(), (409, "idempotency_key_reused".into(), false));
    assert_eq!(s.strategy.submits(), 1);

    // The record is the tenant's (workspaceId "ws"): another tenant's 404.
    let record = send(
        &s.app,
        Method::GET,
        &format!("/v1/posts/{post_id}"),
        &[("x-tenant-id", "ws")],
        None,
    )
    .await;
    assert_eq!(record.status, 200, "{}", record.body);
    assert_eq!(record.json()["state"], "succeeded");
    assert!(!record.body.contains("refreshedSession"), "{}", record.body);
    for tenant in ["other", "default"] {
        let reply = send(
            &s.app,
            Method::GET,
            &format!("/v1/posts/{post_id}"),
            &[("x-tenant-id", tenant)],
            None,
        )
        .await;
        assert_eq!(
            reply.error(),
            (404, "post_not_found".into(), false),
            "{tenant}"
        );
    }
}

#[tokio::test]
async fn an_uncertain_post_is_rechecked_and_reposted_only_after_an_assertion() {
    let s = fake_stack();
    s.strategy.edit(|script| {
        script.verify = Script::Return(VerifyOutcome::Unconfirmed {
            detail: "no toast".into(),
        });
    });
    let key = [("idempotency-key", "post-2")];
    let first = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("maybe")))
        .await
        .json();
    assert_eq!(first["uncertain"], true, "{first}");
    let id = first["postId"].as_str().unwrap().to_owned();
    let tenant = [("x-tenant-id", "ws")];

    // A repeat never reposts an uncertain post.
    let again = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("maybe"))).await;
    assert_eq!(again.json()["uncertain"], true);
    assert_eq!(s.strategy.submits(), 1);

    // The re-check is read-only and answers; the post stays uncertain.
    s.strategy
        .set_recheck(Script::Return(RecheckOutcome::NotFound {
            detail: "not in the feed".into(),
        }));
    let recheck = send(
        &s.app,
        Method::POST,
        &format!("/v1/posts/{id}/recheck"),
        &tenant,
        None,
    )
    .await;
    assert_eq!(recheck.status, 200, "{}", recheck.body);
    assert_eq!(recheck.json()["answer"], "not_found");
    assert_eq!(s.strategy.submits(), 1);
    let record = send(
        &s.app,
        Method::GET,
        &format!("/v1/posts/{id}"),
        &tenant,
        None,
    )
    .await
    .json();
    assert_eq!(record["state"], "uncertain");

    // The owner asserts once; a second assertion is refused.
    let assertion = json!({"assertedBy": "owner@ws", "note": "not on the site"});
    let reply = send(
        &s.app,
        Method::POST,
        &format!("/v1/posts/{id}/assert-not-posted"),
        &tenant,
        Some(&assertion),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = send(
        &s.app,
        Method::POST,
        &format!("/v1/posts/{id}/assert-not-posted"),
        &tenant,
        Some(&assertion),
    )
    .await;
    assert_eq!(reply.error().0, 409);

    // Exactly one new attempt, then the repeat answers that attempt.
    s.strategy
        .edit(|script| *script = abr_core::testing::StrategyScript::default());
    let retried = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("maybe")))
        .await
        .json();
    assert_eq!(retried["ok"], true, "{retried}");
    assert_eq!(s.strategy.submits(), 2);
    let again = send(&s.app, Method::POST, "/v1/post", &key, Some(&body("maybe"))).await;
    assert_eq!(again.json()["postId"], retried["postId"]);
    assert_eq!(s.strategy.submits(), 2);

    // Only uncertain posts are re-checked or asserted on.
    let done = retried["postId"].as_str().unwrap();
    let reply = send(
        &s.app,
        Method::POST,
        &format!("/v1/posts/{done}/recheck"),
        &tenant,
        None,
    )
    .await;
    assert_eq!(reply.error(), (409, "not_uncertain".into(), false));
}

#[tokio::test]
async fn a_stored_session_posts_without_shipping_cookies() {
    let s = fake_stack();
    let put = json!({"session": body("x")["session"], "platform": FAKE_PLATFORM});
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/sessions/main",
        &[("x-tenant-id", "ws")],
        Some(&put),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let request = json!({
        "platform": FAKE_PLATFORM, "sessionId": "main", "content": {"text": "from the store"},
        "workspaceId": "ws"
    });
    let reply = send(&s.app, Method::POST, "/v1/post", &[], Some(&request)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["ok"], true);
    let injected = s.provider.injected();
    assert_eq!(
        injected.last().unwrap().as_ref().unwrap().cookies[0].name,
        "sid"
    );
    // Another tenant's session id is unknown to it; both session forms at once are refused.
    let mut foreign = request.clone();
    foreign["workspaceId"] = json!("other");
    let reply = send(&s.app, Method::POST, "/v1/post", &[], Some(&foreign)).await;
    assert_eq!(reply.error(), (404, "session_not_found".into(), false));
    let mut both = body("x");
    both["sessionId"] = json!("main");
    let reply = send(&s.app, Method::POST, "/v1/post", &[], Some(&both)).await;
    assert_eq!(reply.error().0, 422);
    assert_eq!(s.strategy.submits(), 1);
}

#[tokio::test]
async fn posts_count_against_the_tenants_limits_with_tasks_and_replays_do_not() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.tasks.limits.daily_executions = 3;
        c.tasks.limits.concurrent_sessions = 1;
    });
    let first = send(
        &s.app,
        Method::POST,
        "/v1/post",
        &[("idempotency-key", "a")],
        Some(&body("one")),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    // A replay is not an execution.
    for _ in 0..3 {
        let again = send(
            &s.app,
            Method::POST,
            "/v1/post",
            &[("idempotency-key", "a")],
            Some(&body("one")),
        )
        .await;
        assert_eq!(again.status, 200);
    }
    // One session at a time: a post held mid-job keeps the tenant's only session.
    let hold = s.strategy.hold_posts();
    let app = s.app.clone();
    let held =
        tokio::spawn(
            async move { send(&app, Method::POST, "/v1/post", &[], Some(&body("two"))).await },
        );
    for _ in 0..100 {
        if s.provider.open_leases() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let busy = send(&s.app, Method::POST, "/v1/post", &[], Some(&body("three"))).await;
    assert_eq!(
        busy.error(),
        (429, "tenant_concurrency_limit".into(), true),
        "{}",
        busy.body
    );
    assert!(busy.header("retry-after").is_some());
    // Let this and every later post through.
    hold.add_permits(100);
    assert_eq!(held.await.unwrap().status, 200);
    // The session came back; the day's third execution is a task, the fourth is refused.
    let task = json!({"plan": {"targetUrl": "https://fake.example/x", "steps": [
        {"type": "extract", "name": "t", "kind": "text", "selector": "h1", "description": "Read"}],
        "verification": {"method": "dom_check", "selector": "h1"}, "risk": "low"},
        "tenantId": "ws"});
    let created = send(&s.app, Method::POST, "/v1/tasks", &[], Some(&task))
        .await
        .json();
    let approve = json!({"approvedBy": "alice", "planHash": created["planHash"]});
    let id = created["taskId"].as_str().unwrap();
    let approver = new_key(&s.app, "alice", "approver", Some("ws")).await;
    let reply = call(
        &s.app,
        authed_with(&approver, Method::POST, &format!("/v1/tasks/{id}/approve"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(approve.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let done = send(
        &s.app,
        Method::GET,
        &format!("/v1/tasks/{id}?waitSecs=10"),
        &[("x-tenant-id", "ws")],
        None,
    )
    .await
    .json();
    assert_eq!(done["state"], "succeeded", "{done}");
    let over = send(
        &s.app,
        Method::POST,
        "/v1/post",
        &[("idempotency-key", "b")],
        Some(&body("four")),
    )
    .await;
    assert_eq!(
        over.error(),
        (429, "tenant_daily_limit".into(), true),
        "{}",
        over.body
    );
    assert_eq!(
        s.strategy.submits(),
        2,
        "refused posts never reached the site"
    );
    // Nothing was stored for the refused post: its key is still free for tomorrow.
    let other_tenant = {
        let mut b = body("four");
        b["workspaceId"] = json!("other");
        b
    };
    assert_eq!(
        send(
            &s.app,
            Method::POST,
            "/v1/post",
            &[("idempotency-key", "b")],
            Some(&other_tenant)
        )
        .await
        .status,
        200
    );
}

/// The typed client over a real socket: a resend with the same key is a replay, the record
/// reads back, and refusals come back typed.
#[tokio::test]
async fn the_client_resends_with_a_key_safely_and_reads_the_record() {
    let (server, _provider, strategy) =
        serve_fake(abr_core::testing::FakeProvider::new(), |_| {}).await;
    let client = abr_client::AgentRunnerClient::new(server.base_url(), FAKE_TOKEN).unwrap();
    let request: abr_protocol::PostRequest =
        serde_json::from_value(body("via the client")).unwrap();
    let options = abr_client::PostOptions::idempotency_key("client-1");
    let mut ids = Vec::new();
    for expect_replay in [false, true] {
        match client.post_with(&request, &options).await.unwrap() {
            abr_client::PostAnswer::Done { result, replayed } => {
                assert!(result.ok);
                assert_eq!(replayed, expect_replay);
                ids.push(result.post_id.unwrap());
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(ids[0], ids[1]);
    assert_eq!(strategy.submits(), 1);
    let record = client.get_post("ws", &ids[0]).await.unwrap();
    assert_eq!(record.post_id, ids[0]);
    let e = client.recheck_post("ws", &ids[0]).await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(409), Some("not_uncertain")));
    let e = client.get_post("other", &ids[0]).await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(404), Some("post_not_found")));
    let mut reused = request.clone();
    reused.content.text = "another body".into();
    let e = client.post_with(&reused, &options).await.unwrap_err();
    assert_eq!(e.code(), Some("idempotency_key_reused"));
    server.shutdown().await;
}
