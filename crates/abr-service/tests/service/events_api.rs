//! `GET /v1/events`, in process on the core's fakes: a tenant's stream tells what waits for
//! an approver, each step and the end of its runs, and never another tenant's.

use std::time::Duration;

use axum::body::Body;
use axum::http::Method;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::common;
use common::fake::*;

/// The stream of `token`'s tenant, opened now.
async fn open_stream(app: &axum::Router, token: &str) -> axum::body::BodyDataStream {
    resume_stream(app, token, None).await
}

/// The stream of `token`'s tenant, resumed after the event `last` (`Last-Event-ID`), or
/// from now.
async fn resume_stream(
    app: &axum::Router,
    token: &str,
    last: Option<&str>,
) -> axum::body::BodyDataStream {
    let mut request = authed_with(token, Method::GET, "/v1/events");
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    response.into_body().into_data_stream()
}

/// The events read from `stream` until `until` says stop (or 10 s pass), as
/// (SSE event name, data).
async fn read_until(
    stream: &mut axum::body::BodyDataStream,
    until: impl Fn(&[(String, Value)]) -> bool,
) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !until(&events) {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("the stream stopped at {events:?}"))
            .expect("the stream ended")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let name = block.lines().find_map(|l| l.strip_prefix("event: "));
            let data = block.lines().find_map(|l| l.strip_prefix("data: "));
            let id = block.lines().find_map(|l| l.strip_prefix("id: "));
            if let (Some(name), Some(data)) = (name, data) {
                let mut data: Value = serde_json::from_str(data).unwrap();
                // The SSE id, kept beside the event's own fields for the checks.
                if let (Some(id), Some(fields)) = (id, data.as_object_mut()) {
                    fields.insert("sseId".into(), json!(id.parse::<u64>().unwrap()));
                }
                events.push((name.to_owned(), data));
            }
        }
    }
    events
}

fn plan() -> Value {
    json!({"plan": {
        "targetUrl": "https://fake.example/form",
        "steps": [{"type": "click", "selector": "role=button[name=Submit]", "description": "Submit"}],
        "verification": {"method": "dom_check", "text": "Saved"}
    }})
}

#[tokio::test]
async fn a_tenants_stream_tells_its_approvals_steps_and_ends_and_nothing_of_another() {
    let s = fake_stack();
    s.provider
        .page()
        .text_after("role=button[name=Submit]", "Saved");
    let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    let a_approver = new_key(&s.app, "a's approver", "approver", Some("tenant-a")).await;
    let b = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let mut a_stream = open_stream(&s.app, &a).await;
    let mut b_stream = open_stream(&s.app, &b).await;

    let reply = request_as(&s.app, &a, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let task = reply.json();
    let id = task["taskId"].as_str().unwrap().to_owned();
    let first = read_until(&mut a_stream, |e| !e.is_empty()).await;
    assert_eq!(first[0].0, "approval_required");
    assert_eq!(first[0].1["runId"], id.as_str());
    assert_eq!(first[0].1["tenantId"], "tenant-a");

    let reply = request_as(
        &s.app,
        &a_approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        &[],
        Some(&json!({"planHash": task["planHash"]})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let rest = read_until(&mut a_stream, |e| e.iter().any(|(n, _)| n == "run_ended")).await;
    let names: Vec<&str> = rest.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["step_progress", "run_ended"]);
    assert_eq!(rest[0].1["step"], 0);
    assert_eq!(rest[0].1["action"], "click");
    assert_eq!(rest[1].1["state"], "succeeded");

    // B's stream saw none of it: B's own task is the first thing it hears of.
    let reply = request_as(&s.app, &b, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
    let b_id = reply.json()["taskId"].as_str().unwrap().to_owned();
    let b_events = read_until(&mut b_stream, |e| !e.is_empty()).await;
    assert_eq!(b_events.len(), 1, "{b_events:?}");
    assert_eq!(b_events[0].1["runId"], b_id.as_str());
}

#[tokio::test]
async fn the_stream_needs_a_key() {
    let s = fake_stack();
    let reply = call(
        &s.app,
        axum::http::Request::builder()
            .uri("/v1/events")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 401, "{}", reply.body);
}

/// Reads `stream` until it ends; panics if it is still open after `limit`. Answers the
/// SSE event names it delivered meanwhile.
async fn ends_within(stream: &mut axum::body::BodyDataStream, limit: Duration) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut text = String::new();
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => panic!("the stream is still open {limit:?} after the key was revoked"),
            Ok(Some(Ok(chunk))) => text.push_str(std::str::from_utf8(&chunk).unwrap()),
            Ok(Some(Err(_)) | None) => break,
        }
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .map(str::to_owned)
        .collect()
}

/// The attack (issue 34, finding 8): an agent's key opens its tenant's event stream and
/// its task's stream, then the key is revoked (leaked, the agent retired). The streams
/// must not keep delivering: both close promptly, and the tenant's next task is not told
/// on them.
#[tokio::test]
async fn a_revoked_keys_open_streams_close() {
    let s = fake_stack();
    let agent = new_key(&s.app, "retired agent", "agent", Some("tenant-a")).await;
    let other = new_key(&s.app, "new agent", "agent", Some("tenant-a")).await;
    let reply = request_as(
        &s.app,
        &agent,
        Method::POST,
        "/v1/tasks",
        &[],
        Some(&plan()),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let id = reply.json()["taskId"].as_str().unwrap().to_owned();
    let mut events = open_stream(&s.app, &agent).await;
    let response = s
        .app
        .clone()
        .oneshot(
            authed_with(&agent, Method::GET, &format!("/v1/tasks/{id}/events"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut task_events = response.into_body().into_data_stream();
    let first = read_until(&mut task_events, |e| !e.is_empty()).await;
    assert_eq!(first[0].0, "task");

    let key_id = agent.split('.').nth(1).unwrap();
    let revoked = call(
        &s.app,
        authed(Method::DELETE, &format!("/v1/keys/{key_id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let reply = request_as(
        &s.app,
        &other,
        Method::POST,
        "/v1/tasks",
        &[],
        Some(&plan()),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);

    let told = ends_within(&mut events, Duration::from_secs(5)).await;
    assert!(
        !told.iter().any(|e| e == "approval_required"),
        "the revoked key was told of the next task: {told:?}"
    );
    ends_within(&mut task_events, Duration::from_secs(5)).await;
}

/// The stream refuses a query parameter it does not know, as the lists do.
#[tokio::test]
async fn the_stream_refuses_an_unknown_query_parameter() {
    let s = fake_stack();
    let response = s
        .app
        .clone()
        .oneshot(
            authed(Method::GET, "/v1/events?x=1")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 422, "a stream opened");
    let body = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["code"], "invalid_request", "{body}");
    let list = get_authed(&s.app, "/v1/tasks?x=1").await;
    assert_eq!(
        list.error(),
        (422, "invalid_request".into(), false),
        "{}",
        list.body
    );
}

/// Each event carries its place in the tenant's log as its SSE id; a client that reconnects
/// with `Last-Event-ID` gets what happened while it was away, first, in order, and then the
/// rest; an id that is not a number is refused.
#[tokio::test]
async fn a_stream_resumed_with_last_event_id_misses_nothing_of_the_time_away() {
    let s = fake_stack();
    s.provider
        .page()
        .text_after("role=button[name=Submit]", "Saved");
    let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    let mut stream = open_stream(&s.app, &a).await;
    let reply = request_as(&s.app, &a, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
    let first_id = reply.json()["taskId"].as_str().unwrap().to_owned();
    let seen = read_until(&mut stream, |e| !e.is_empty()).await;
    assert_eq!(seen[0].0, "approval_required");
    let last = seen[0].1["sseId"].as_u64().unwrap();
    assert_eq!(last, 1, "the tenant's first event");
    drop(stream);

    // Away: two more tasks ask for approval.
    let mut away = Vec::new();
    for _ in 0..2 {
        let reply = request_as(&s.app, &a, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
        away.push(reply.json()["taskId"].as_str().unwrap().to_owned());
    }
    let mut resumed = resume_stream(&s.app, &a, Some(&last.to_string())).await;
    let caught_up = read_until(&mut resumed, |e| e.len() == 2).await;
    let runs: Vec<&str> = caught_up
        .iter()
        .map(|(_, d)| d["runId"].as_str().unwrap())
        .collect();
    assert_eq!(runs, [away[0].as_str(), away[1].as_str()], "{caught_up:?}");
    let ids: Vec<u64> = caught_up
        .iter()
        .map(|(_, d)| d["sseId"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [2, 3], "no gap, no repeat");
    assert!(
        !runs.contains(&first_id.as_str()),
        "nothing before the id again"
    );
    // And it goes on live.
    let reply = request_as(&s.app, &a, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
    let live = reply.json()["taskId"].as_str().unwrap().to_owned();
    let next = read_until(&mut resumed, |e| !e.is_empty()).await;
    assert_eq!(next[0].1["runId"], live.as_str());
    assert_eq!(next[0].1["sseId"], 4);

    // Another tenant resuming from 0 hears nothing of these.
    let b = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let mut theirs = resume_stream(&s.app, &b, Some("0")).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(300), theirs.next())
            .await
            .map_or(true, |chunk| {
                let chunk = chunk.unwrap().unwrap();
                !std::str::from_utf8(&chunk).unwrap().contains("tenant-a")
            }),
        "another tenant's log was read"
    );

    for bad in ["abc", "-1", "1.5"] {
        let response = s
            .app
            .clone()
            .oneshot(
                authed_with(&a, Method::GET, "/v1/events")
                    .header("last-event-id", bad)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "Last-Event-ID {bad:?}");
    }
}
