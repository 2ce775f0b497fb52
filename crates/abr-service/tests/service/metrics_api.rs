//! `GET /metrics` in-process on the core's fakes: an operator's key reads it (an agent's is
//! 403, none 401); scraped around a post, a task, a refused task and a browse session, the
//! named counters, histograms and gauges move by what happened; the exposition parses with
//! the Prometheus project's own OpenMetrics parser (Python `prometheus-client`, pinned);
//! and no label value is an id, a tenant, a key's name or a URL.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::path::Path;

use axum::http::{Method, header};
use common::fake::*;
use serde_json::{Value, json};

use crate::common;
use crate::common::tools::{python_venv, run};

/// One sample: its name and labels.
type Key = (String, BTreeMap<String, String>);

/// What the Prometheus parser read: every sample's value by name and labels.
async fn parsed(text: &str) -> BTreeMap<Key, f64> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/metrics");
    let venv = python_venv("metrics-venv", &dir.join("requirements.txt")).await;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let out = run(
        "the OpenMetrics parser",
        tokio::process::Command::new(venv.join("bin/python"))
            .arg(dir.join("parse.py"))
            .arg(file.path()),
    )
    .await;
    let samples: Vec<(String, BTreeMap<String, String>, f64)> = serde_json::from_str(&out).unwrap();
    samples
        .into_iter()
        .map(|(name, labels, value)| ((name, labels), value))
        .collect()
}

fn key(name: &str, labels: &[(&str, &str)]) -> Key {
    (
        name.to_owned(),
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

async fn scrape(app: &axum::Router, token: &str) -> Reply {
    request_as(app, token, Method::GET, "/metrics", &[], None).await
}

async fn send(
    app: &axum::Router,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Reply {
    request_as(app, token, method, path, &[("x-tenant-id", "acme")], body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_scrapes_counts_that_move_with_runs_and_never_an_id_in_a_label() {
    let provider = abr_core::testing::FakeProvider::new();
    // A button whose label commits: a dry run's click on it is refused by the guard.
    provider.page().set_facts(
        "#publish",
        abr_core::guard::ElementFacts {
            tag: "button".into(),
            name: "Post".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    let s = fake_stack_with(provider, |c| {
        c.tasks.approval = abr_core::approval::ApprovalRule::Off;
    });
    let app = &s.app;
    let agent = new_key(app, "bot-alice", "agent", Some("acme")).await;

    // Who may read it.
    let keyless = get(app, "/metrics").await;
    assert_eq!(keyless.error().0, 401, "{}", keyless.body);
    let refused = scrape(app, &agent).await;
    assert_eq!(
        refused.error(),
        (403, "forbidden".into(), false),
        "{}",
        refused.body
    );
    let before_text = scrape(app, FAKE_TOKEN).await;
    assert_eq!(before_text.status, 200, "{}", before_text.body);
    assert!(
        before_text
            .header(header::CONTENT_TYPE.as_str())
            .is_some_and(|t| t.starts_with("application/openmetrics-text; version=1.0.0")),
        "{:?}",
        before_text.headers
    );
    let before = parsed(&before_text.body).await;
    let was = |k: &Key| before.get(k).copied().unwrap_or(0.0);

    // A post, a task, a task refused for its plan, a browse session (scraped while open).
    let post = send(
        app,
        &agent,
        Method::POST,
        "/v1/post",
        Some(&json!({
            "platform": FAKE_PLATFORM,
            "session": {"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []},
            "content": {"text": "hello"},
            "workspaceId": "acme"
        })),
    )
    .await;
    assert_eq!(post.status, 200, "{}", post.body);
    let post_id = post.json()["postId"].as_str().unwrap().to_owned();
    let task = send(
        app,
        &agent,
        Method::POST,
        "/v1/tasks",
        Some(&json!({"plan": {
            "targetUrl": "https://fake.example/admin/users",
            "steps": [{"type": "extract", "name": "users", "kind": "table", "selector": "#users",
                "description": "Read the users", "stage": "reading"}],
            "verification": {"method": "dom_check", "selector": "#users"},
            "risk": "low"
        }})),
    )
    .await;
    assert_eq!(task.status, 201, "{}", task.body);
    let task_id = task.json()["taskId"].as_str().unwrap().to_owned();
    let ended = send(
        app,
        &agent,
        Method::GET,
        &format!("/v1/tasks/{task_id}?waitSecs=20"),
        None,
    )
    .await;
    assert_eq!(ended.json()["state"], "succeeded", "{}", ended.body);
    let bad = send(
        app,
        &agent,
        Method::POST,
        "/v1/tasks",
        Some(&json!({"plan": {
            "targetUrl": "https://fake.example/",
            "steps": [{"type": "click", "selector": "#a", "description": "Go", "stage": "Not A Name"}],
            "verification": {"method": "dom_check", "text": "Done"},
            "risk": "low"
        }})),
    )
    .await;
    assert_eq!(bad.error().1, "invalid_plan", "{}", bad.body);
    // A dry run whose click would publish: refused inside the run (its answers are 2xx).
    let dry = send(
        app,
        &agent,
        Method::POST,
        "/v1/tasks",
        Some(&json!({"plan": {
            "targetUrl": "https://fake.example/",
            "steps": [{"type": "click", "selector": "#publish", "description": "Publish"}],
            "verification": {"method": "dom_check", "selector": "body"},
            "risk": "low"
        }, "dryRun": true})),
    )
    .await;
    assert_eq!(dry.status, 201, "{}", dry.body);
    let dry_id = dry.json()["taskId"].as_str().unwrap().to_owned();
    let refused_run = send(
        app,
        &agent,
        Method::GET,
        &format!("/v1/tasks/{dry_id}?waitSecs=20"),
        None,
    )
    .await;
    assert_eq!(
        refused_run.json()["state"],
        "failed",
        "{}",
        refused_run.body
    );
    assert_eq!(
        refused_run.json()["error"]["code"],
        "blocked_action",
        "{}",
        refused_run.body
    );
    let opened = send(
        app,
        &agent,
        Method::POST,
        "/v1/browse",
        Some(&json!({"url": "https://fake.example/"})),
    )
    .await;
    assert_eq!(opened.status, 201, "{}", opened.body);
    let browse_id = opened.json()["browseId"].as_str().unwrap().to_owned();
    let during = parsed(&scrape(app, FAKE_TOKEN).await.body).await;
    assert_eq!(during[&key("abr_browse_sessions_open", &[])], 1.0);
    let closed = send(
        app,
        &agent,
        Method::DELETE,
        &format!("/v1/browse/{browse_id}"),
        None,
    )
    .await;
    assert_eq!(closed.status, 200, "{}", closed.body);

    // The events reach the counters as the engine emits them: wait for the browse's end.
    let browse_ended = key(
        "abr_runs_ended_total",
        &[("kind", "browse"), ("state", "closed"), ("stage", "none")],
    );
    let mut after_text = String::new();
    for _ in 0..100 {
        after_text = scrape(app, FAKE_TOKEN).await.body;
        if after_text
            .contains(r#"abr_runs_ended_total{kind="browse",state="closed",stage="none"} 1"#)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let after = parsed(&after_text).await;
    let moved = |k: Key| after.get(&k).copied().unwrap_or(0.0) - was(&k);
    let ran = [
        (
            key(
                "abr_runs_ended_total",
                &[("kind", "post"), ("state", "succeeded"), ("stage", "none")],
            ),
            1.0,
        ),
        (
            key(
                "abr_runs_ended_total",
                &[("kind", "task"), ("state", "succeeded"), ("stage", "none")],
            ),
            1.0,
        ),
        (browse_ended, 1.0),
        (
            key("abr_run_duration_seconds_count", &[("kind", "post")]),
            1.0,
        ),
        (
            key("abr_run_duration_seconds_count", &[("kind", "task")]),
            2.0,
        ),
        (
            key("abr_steps_total", &[("action", "extract"), ("ok", "true")]),
            1.0,
        ),
        (key("abr_errors_total", &[("code", "invalid_plan")]), 1.0),
        (key("abr_refusals_total", &[("rule", "dry_run")]), 1.0),
        (
            key(
                "abr_run_failures_total",
                &[("kind", "task"), ("code", "blocked_action")],
            ),
            1.0,
        ),
        (
            key("abr_step_duration_seconds_count", &[("action", "extract")]),
            1.0,
        ),
        (
            key("abr_step_duration_seconds_count", &[("action", "click")]),
            1.0,
        ),
        (
            key(
                "abr_http_requests_total",
                &[("route", "/v1/post"), ("method", "POST"), ("status", "200")],
            ),
            1.0,
        ),
        (
            key(
                "abr_http_requests_total",
                &[
                    ("route", "/v1/tasks"),
                    ("method", "POST"),
                    ("status", "422"),
                ],
            ),
            1.0,
        ),
        (
            key(
                "abr_http_request_duration_seconds_count",
                &[("route", "/v1/browse/{id}")],
            ),
            1.0,
        ),
    ];
    for (k, by) in ran {
        assert_eq!(moved(k.clone()), by, "{k:?} in\n{after_text}");
    }
    // The browsers' starts, apart from the runs': the post's, the two tasks' and the
    // browse session's.
    let k = key(
        "abr_acquire_duration_seconds_count",
        &[("mode", "unattended"), ("ok", "true")],
    );
    assert_eq!(moved(k.clone()), 4.0, "{k:?} in\n{after_text}");
    // The engine's store calls, timed by operation: the two tasks and the browse session
    // (a task record) inserted, and the post.
    for (op, by) in [("task.insert", 3.0), ("post.insert", 1.0)] {
        let k = key("abr_store_duration_seconds_count", &[("op", op)]);
        assert_eq!(moved(k.clone()), by, "{k:?}");
    }
    assert!(
        moved(key(
            "abr_store_duration_seconds_count",
            &[("op", "event.append")]
        )) >= 1.0
    );
    for (name, labels) in after.keys() {
        if let Some(op) = labels.get("op") {
            assert!(
                name.starts_with("abr_store_")
                    && op.split_once('.').is_some_and(|(a, b)| {
                        [a, b].iter().all(|part| {
                            !part.is_empty()
                                && part.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
                        })
                    }),
                "{name}{{op={op:?}}}: an operation is one of the store's names"
            );
        }
    }
    // The refusals before the first scrape were counted too.
    assert!(after[&key("abr_errors_total", &[("code", "forbidden")])] >= 1.0);
    assert!(after[&key("abr_errors_total", &[("code", "unauthorized")])] >= 1.0);
    // Gauges read at the scrape.
    assert_eq!(after[&key("abr_browse_sessions_open", &[])], 0.0);
    assert_eq!(after[&key("abr_jobs_running", &[])], 0.0);
    assert!(after[&key("abr_job_capacity", &[])] >= 1.0);
    assert_eq!(after[&key("abr_draining", &[])], 0.0);
    assert_eq!(
        after[&key(
            "abr_info",
            &[("version", env!("CARGO_PKG_VERSION")), ("node", "")]
        )],
        1.0
    );

    // No label value names what a run was about.
    let secrets = [
        post_id.as_str(),
        task_id.as_str(),
        dry_id.as_str(),
        browse_id.as_str(),
        "acme",
        "bot-alice",
        "fake.example",
        "hello",
        &agent,
    ];
    for (name, labels) in after.keys() {
        for (label, value) in labels {
            for secret in secrets {
                assert!(
                    !value.contains(secret),
                    "{name}{{{label}={value:?}}} carries {secret:?}"
                );
            }
            assert!(value.len() <= 64, "{name}{{{label}={value:?}}}");
        }
    }
}

/// A task created by `agent` for acme, waiting for an approver; its id.
async fn create_task(app: &axum::Router, agent: &str) -> String {
    let created = send(
        app,
        agent,
        Method::POST,
        "/v1/tasks",
        Some(&json!({"plan": {
            "targetUrl": "https://fake.example/",
            "steps": [{"type": "extract", "name": "h", "kind": "text", "selector": "h1",
                "description": "Read the title"}],
            "verification": {"method": "dom_check", "selector": "h1"},
            "risk": "low"
        }})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.json()["state"],
        "pending_approval",
        "{}",
        created.body
    );
    created.json()["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_waiting_and_their_age_are_read_at_the_scrape() {
    // Every task waits for an approver (the default rule).
    let s = fake_stack();
    let app = &s.app;
    let agent = new_key(app, "bot-alice", "agent", Some("acme")).await;
    let waiting = key("abr_approvals_waiting", &[("kind", "task")]);
    let oldest = key("abr_approval_oldest_wait_seconds", &[("kind", "task")]);
    let before = parsed(&scrape(app, FAKE_TOKEN).await.body).await;
    assert_eq!(
        (before[&waiting], before[&oldest]),
        (0.0, 0.0),
        "nothing waits yet"
    );

    let first = create_task(app, &agent).await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let second = create_task(app, &agent).await;
    let two = parsed(&scrape(app, FAKE_TOKEN).await.body).await;
    assert_eq!(two[&waiting], 2.0);
    assert!(
        two[&oldest] >= 1.2 && two[&oldest] < 60.0,
        "the first has waited since it was created: {}",
        two[&oldest]
    );
    assert_eq!(
        two[&key("abr_approvals_waiting", &[("kind", "browse_action")])],
        0.0
    );

    // A rejected task waits no more; the oldest is now the second.
    let approver = new_key(app, "alice", "approver", Some("acme")).await;
    for id in [&first, &second] {
        let rejected = send(
            app,
            &approver,
            Method::POST,
            &format!("/v1/tasks/{id}/reject"),
            Some(&json!({"rejectedBy": "alice"})),
        )
        .await;
        assert_eq!(rejected.status, 200, "{}", rejected.body);
        let now = parsed(&scrape(app, FAKE_TOKEN).await.body).await;
        if id == &first {
            assert_eq!(now[&waiting], 1.0);
            assert!(
                now[&oldest] < two[&oldest],
                "{} then {}",
                two[&oldest],
                now[&oldest]
            );
        } else {
            assert_eq!((now[&waiting], now[&oldest]), (0.0, 0.0));
        }
    }
    // The labels are a kind, never an id.
    let text = scrape(app, FAKE_TOKEN).await.body;
    assert!(!text.contains(&first) && !text.contains(&second), "{text}");
}
