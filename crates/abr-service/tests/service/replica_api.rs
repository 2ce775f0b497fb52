//! A replica behind a load balancer, in process: `GET /v1/ready` says whether it takes new
//! work and why not (without a token, like `/v1/health`), and a draining replica refuses
//! every request that could start work before anything runs, while reads still answer.

use axum::http::Method;
use common::fake::*;
use serde_json::{Value, json};

use crate::common;

fn body(text: &str) -> Value {
    json!({
        "platform": FAKE_PLATFORM,
        "session": {"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []},
        "content": {"text": text},
        "workspaceId": "ws"
    })
}

#[tokio::test]
async fn ready_says_what_the_replica_holds_and_needs_no_token() {
    let s = fake_stack();
    let ready = get(&s.app, "/v1/ready").await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    let doc = ready.json();
    assert_eq!(doc["ready"], true);
    assert!(doc.get("reason").is_none(), "{doc}");
    assert_eq!(doc["jobCapacity"], 2);
    assert_eq!(doc["queueCapacity"], 16);
    assert_eq!(doc["jobsRunning"], 0);
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    // Every job slot taken and the queue full: not ready, `full`.
    let full = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.limits.max_concurrent_jobs = 1;
        c.limits.max_queued_jobs = 0;
    });
    let hold = full.runner.engine.hold_job_slot().await.unwrap();
    let busy = get(&full.app, "/v1/ready").await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(busy.json()["reason"], "full");
    drop(hold);
    assert_eq!(get(&full.app, "/v1/ready").await.status, 200);
}

#[tokio::test]
async fn a_draining_replica_refuses_new_work_before_anything_runs_and_still_answers_reads() {
    let s = fake_stack();
    let before = request_as(
        &s.app,
        FAKE_TOKEN,
        Method::POST,
        "/v1/post",
        &[],
        Some(&body("before")),
    )
    .await;
    assert_eq!(before.status, 200, "{}", before.body);
    let post_id = before.json()["postId"].as_str().unwrap().to_owned();
    assert_eq!(s.strategy.submits(), 1);

    s.runner.status().begin_draining();
    let ready = get(&s.app, "/v1/ready").await;
    assert_eq!(ready.status, 503);
    assert_eq!(ready.json()["reason"], "draining");
    for (method, path, body) in [
        (Method::POST, "/v1/post", Some(body("during"))),
        (Method::POST, "/v1/tasks", Some(json!({}))),
        (Method::POST, "/v1/browse", Some(json!({}))),
        (
            Method::POST,
            "/v1/capture/start",
            Some(fake_start("ws", "a")),
        ),
    ] {
        let refused = request_as(&s.app, FAKE_TOKEN, method, path, &[], body.as_ref()).await;
        assert_eq!(
            refused.error(),
            (503, "runner_draining".into(), true),
            "{path}: {}",
            refused.body
        );
        assert_eq!(refused.header("retry-after"), Some("1"), "{path}");
    }
    assert_eq!(s.strategy.submits(), 1, "nothing was posted while draining");
    assert_eq!(
        s.provider.acquired(),
        1,
        "no browser was started while draining"
    );
    // Reads still answer: the record of what ran before.
    let read = request_as(
        &s.app,
        FAKE_TOKEN,
        Method::GET,
        &format!("/v1/posts/{post_id}"),
        &[("x-tenant-id", "ws")],
        None,
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(get(&s.app, "/v1/health").await.status, 200);
}
