//! Strict requests, written as the attacks of issue 16, in-process (`oneshot`) on the core's
//! fakes: a misspelt flag (`plan.readonly`, a top-level `dryrun`, a post's `dryRun`) is a
//! 422 naming the field and nothing is stored or run; unknown fields are refused on every
//! request type, in MCP tool arguments too (a JSON-RPC error naming them, and schemas that
//! say `additionalProperties: false`); a 10 MB `targetUrl` and other over-long strings are a
//! 422 before anything is stored; a placeholder may not choose a URL's scheme or host;
//! `committing_or_risky` asks the commit rule, not the plan's own `risk`; `/mcp` answers
//! malformed bodies, a foreign `Host` and wrong methods in JSON; a non-UTF-8 path segment is
//! the typed envelope; MCP read-only refuses to act on a browse session opened writable
//! over REST.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::Duration;

use abr_core::approval::ApprovalRule;
use abr_core::guard::ElementFacts;
use abr_core::testing::FakeProvider;
use abr_service::mcp::McpSettings;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, header};
use common::fake::*;
use serde_json::{Value, json};

use crate::common;

/// A value no error message may repeat.
const CANARY: &str = "canary-value-5f1e";

/// A request with the token, a tenant, a JSON body and extra headers.
async fn send(
    app: &Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let mut all = vec![("x-tenant-id", "acme")];
    all.extend_from_slice(headers);
    request_as(app, FAKE_TOKEN, method, path, &all, body).await
}

async fn post(app: &Router, path: &str, body: &Value) -> Reply {
    send(app, Method::POST, path, &[], Some(body)).await
}

/// A plan that clicks Pay: committing by the commit rule.
fn pay_plan() -> Value {
    json!({
        "plan": {
            "targetUrl": "https://fake.example/checkout",
            "steps": [
                {"type": "click", "selector": "#pay", "description": "Pay"}
            ],
            "verification": {"method": "dom_check", "text": "Paid"},
            "risk": "low"
        }
    })
}

/// A plan that only reads.
fn read_plan() -> Value {
    json!({
        "plan": {
            "targetUrl": "https://fake.example/users",
            "steps": [
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"}
            ],
            "verification": {"method": "dom_check", "selector": "#users"},
            "risk": "low"
        }
    })
}

/// A runner that runs every task at once (no approval): a misread flag would run.
fn runs_at_once() -> FakeStack {
    fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::Off;
        // The fresh plans run while the next case is sent (a read-only act settles 150 ms):
        // the tenant's limit of sessions at once is not what these tests are about.
        c.tasks.limits.concurrent_sessions = 100;
    })
}

/// `(status, code)` of an error envelope, and its message checked to name `field` and to
/// repeat no value.
fn refused(reply: &Reply, field: &str) -> (u16, String) {
    let (status, code, _) = reply.error();
    let message = reply.message();
    assert!(
        message.contains(&format!("`{field}`")),
        "the message names `{field}`: {message}"
    );
    assert!(!message.contains(CANARY), "{message}");
    (status, code)
}

#[tokio::test]
async fn a_misspelt_read_only_or_dry_run_flag_is_a_422_naming_it_and_nothing_runs() {
    let s = runs_at_once();
    let mut cases = Vec::new();
    for (where_, field) in [
        ("plan", "readonly"),
        ("plan", "read_only"),
        ("plan", "dryRun"),
        ("top", "readOnly"),
        ("top", "dryrun"),
        ("top", "dry_run"),
    ] {
        let mut body = pay_plan();
        let target = if where_ == "plan" {
            &mut body["plan"]
        } else {
            &mut body
        };
        target[field] = json!(true);
        cases.push((field, body, where_));
    }
    // On a step, in the verification, in a selector and in an extraction too.
    let mut step = pay_plan();
    step["plan"]["steps"][0]["readOnly"] = json!(true);
    cases.push(("readOnly", step, "step"));
    let mut verification = pay_plan();
    verification["plan"]["verification"]["strict"] = json!(CANARY);
    cases.push(("strict", verification, "verification"));
    let mut selector = pay_plan();
    selector["plan"]["steps"][0]["selector"] = json!({"role": "button", "nmae": CANARY});
    cases.push(("nmae", selector, "step"));
    let mut extract = read_plan();
    extract["plan"]["steps"][0]["columns"] = json!(3);
    cases.push(("columns", extract, "step"));
    let mut text_extract = read_plan();
    text_extract["plan"]["steps"][0]["kind"] = json!("text");
    text_extract["plan"]["steps"][0]["attribute"] = json!("href");
    cases.push(("attribute", text_extract, "step"));
    let mut assert_step = read_plan();
    assert_step["plan"]["steps"][0] =
        json!({"type": "assert", "text": "Users", "optional": true, "description": "Check"});
    cases.push(("optional", assert_step, "step"));
    let mut handoff = pay_plan();
    handoff["handoff"] = json!({"waitSeconds": 60, "forever": true});
    cases.push(("forever", handoff, "top"));

    for (field, body, where_) in cases {
        let key = format!("key-{field}-{where_}");
        let reply = send(
            &s.app,
            Method::POST,
            "/v1/tasks",
            &[("idempotency-key", &key)],
            Some(&body),
        )
        .await;
        let (status, code) = refused(&reply, field);
        assert_eq!(status, 422, "{field} at {where_}: {}", reply.body);
        let want = if where_ == "step" {
            "invalid_plan"
        } else {
            "invalid_request"
        };
        assert_eq!(code, want, "{field} at {where_}: {}", reply.body);
        match where_ {
            "plan" => assert!(reply.message().contains("at plan"), "{}", reply.body),
            "step" => assert!(reply.message().contains("steps[0]"), "{}", reply.body),
            "verification" => {
                assert!(
                    reply.message().contains("plan.verification"),
                    "{}",
                    reply.body
                );
            }
            _ => {}
        }
        // Nothing was stored under the key: a valid request with it is a new task.
        let fresh = send(
            &s.app,
            Method::POST,
            "/v1/tasks",
            &[("idempotency-key", &key)],
            Some(&read_plan()),
        )
        .await;
        assert_eq!(fresh.status, 201, "{field}: {}", fresh.body);
    }
    // Only the fresh read plans ran; the refused plans never reached a browser.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.provider.page().clicks_on("#pay"), 0);
}

#[tokio::test]
async fn every_request_type_refuses_an_unknown_field_by_name() {
    let s = fake_stack();
    let session = json!({"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []});
    let post_body =
        json!({"platform": FAKE_PLATFORM, "session": session, "content": {"text": "hello"}});
    let mut post_dry = post_body.clone();
    post_dry["dryRun"] = json!(true);
    let mut post_content = post_body.clone();
    post_content["content"]["draft"] = json!(true);
    let mut post_media = post_body.clone();
    post_media["content"]["media"] =
        json!([{"fileName": "a.png", "mimeType": "image/png", "dataBase64": "", "alt": CANARY}]);
    let capture = json!({"captureId": "cap_x", "workspaceId": "ws", "accountId": "acct"});
    let mut finish = capture.clone();
    finish["storeAs"] = json!("s1");
    finish["keep"] = json!(true);
    let mut cancel = capture.clone();
    cancel["force"] = json!(true);
    let mut start = fake_start("ws", "acct");
    start["readOnly"] = json!(true);
    let cases: Vec<(&str, &str, Value)> = vec![
        ("/v1/post", "dryRun", post_dry),
        ("/v1/post", "draft", post_content),
        ("/v1/post", "alt", post_media),
        ("/v1/capture/start", "readOnly", start),
        ("/v1/capture/finish", "keep", finish),
        ("/v1/capture/cancel", "force", cancel.clone()),
        ("/v1/capture/status", "force", cancel),
        (
            "/v1/probe",
            "deep",
            json!({"platform": FAKE_PLATFORM, "session": session, "deep": true}),
        ),
        (
            "/v1/browse",
            "readonly",
            json!({"url": "https://fake.example/", "readonly": true}),
        ),
        (
            "/v1/tasks/task_x/approve",
            "force",
            json!({"approvedBy": "ada", "planHash": "00", "force": true}),
        ),
        (
            "/v1/tasks/task_x/reject",
            "silent",
            json!({"rejectedBy": "ada", "silent": true}),
        ),
        (
            "/v1/tasks/task_x/assert-not-posted",
            "proof",
            json!({"assertedBy": "ada", "proof": CANARY}),
        ),
        (
            "/v1/posts/post_x/assert-not-posted",
            "proof",
            json!({"assertedBy": "ada", "proof": CANARY}),
        ),
        (
            "/v1/relay/tokens",
            "force",
            json!({"runnerId": "r1", "force": true}),
        ),
    ];
    for (path, field, body) in cases {
        let reply = post(&s.app, path, &body).await;
        let (status, code) = refused(&reply, field);
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_request"),
            "{path} {field}: {}",
            reply.body
        );
    }
    for (method, path, field, body) in [
        (
            Method::PUT,
            "/v1/sessions/s1",
            "platfrom",
            json!({"session": session, "platfrom": FAKE_PLATFORM}),
        ),
        (
            Method::PUT,
            "/v1/settings/screenshots",
            "blur",
            json!({"enabled": true, "blur": false}),
        ),
        (
            Method::PUT,
            "/v1/sites/example.com",
            "note",
            json!({"decision": "allow", "decidedBy": "ada", "note": CANARY}),
        ),
    ] {
        let reply = send(&s.app, method, path, &[], Some(&body)).await;
        let (status, code) = refused(&reply, field);
        assert_eq!((status, code.as_str()), (422, "invalid_request"), "{path}");
    }
    // Nothing was posted, probed or opened.
    assert!(s.strategy.posted().is_empty());
    assert_eq!(s.provider.acquired(), 0);
}

#[tokio::test]
async fn a_browse_action_with_an_unknown_field_is_refused_before_the_page() {
    let provider = FakeProvider::new();
    provider.page().set_facts(
        "#go",
        ElementFacts {
            tag: "a".into(),
            name: "Go".into(),
            ..ElementFacts::default()
        },
    );
    let s = fake_stack_with(provider, |_| {});
    let opened = post(
        &s.app,
        "/v1/browse",
        &json!({"url": "https://fake.example/"}),
    )
    .await;
    assert_eq!(opened.status, 201, "{}", opened.body);
    let id = opened.json()["browseId"].as_str().unwrap().to_owned();
    let reply = post(
        &s.app,
        &format!("/v1/browse/{id}/act"),
        &json!({"action": "click", "ref": "e1", "force": true}),
    )
    .await;
    let (status, code) = refused(&reply, "force");
    assert_eq!((status, code.as_str()), (422, "invalid_request"));
    assert_eq!(s.provider.page().count("click"), 0);
}

#[tokio::test]
async fn over_long_urls_and_texts_are_a_422_before_anything_is_stored() {
    // A body limit that lets a 10 MB URL through: the cap, not the body limit, refuses it.
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.limits.body_limit_bytes = 32 * 1024 * 1024;
        c.tasks.approval = ApprovalRule::Off;
    });
    let huge = format!("https://fake.example/{}", "a".repeat(10 * 1024 * 1024));
    let long = format!("https://fake.example/{}", "a".repeat(100 * 1024));
    let mut cases = Vec::new();
    for url in [&huge, &long] {
        let mut target = read_plan();
        target["plan"]["targetUrl"] = json!(url);
        cases.push(("targetUrl", target));
    }
    let mut navigate = read_plan();
    navigate["plan"]["steps"][0] = json!({"type": "navigate", "url": long, "description": "Open"});
    cases.push(("navigate", navigate));
    let mut callback = read_plan();
    callback["plan"]["verification"] = json!({"method": "api_callback", "url": long});
    cases.push(("callback", callback));
    let mut description = read_plan();
    description["plan"]["steps"][0]["description"] = json!("d".repeat(100 * 1024));
    cases.push(("description", description));
    let mut reasoning = read_plan();
    reasoning["plan"]["reasoning"] = json!("r".repeat(1024 * 1024));
    cases.push(("reasoning", reasoning));
    let mut selector = read_plan();
    selector["plan"]["steps"][0]["selector"] = json!("#".repeat(100 * 1024));
    cases.push(("selector", selector));
    let mut value = read_plan();
    value["plan"]["steps"][0] = json!({"type": "type", "selector": "#q", "value": "v".repeat(1024 * 1024), "description": "Type"});
    cases.push(("value", value));
    let mut input = read_plan();
    input["inputs"] = json!({"q": "i".repeat(1024 * 1024)});
    cases.push(("input", input));
    let mut wait = read_plan();
    wait["plan"]["steps"][0] =
        json!({"type": "wait", "text": "t".repeat(100 * 1024), "description": "Wait"});
    cases.push(("wait text", wait));
    for (i, (case, body)) in cases.into_iter().enumerate() {
        let key = format!("long-{i}");
        let reply = send(
            &s.app,
            Method::POST,
            "/v1/tasks",
            &[("idempotency-key", &key)],
            Some(&body),
        )
        .await;
        let (status, code, _) = reply.error();
        assert_eq!(
            status,
            422,
            "{case}: {}",
            &reply.body[..reply.body.len().min(300)]
        );
        assert!(
            matches!(code.as_str(), "invalid_plan" | "invalid_request"),
            "{case}: {code}"
        );
        assert!(
            reply.body.len() < 1024,
            "{case}: the answer repeats no input"
        );
        assert!(
            reply.message().contains("at most"),
            "{case}: {}",
            reply.message()
        );
        let fresh = send(
            &s.app,
            Method::POST,
            "/v1/tasks",
            &[("idempotency-key", &key)],
            Some(&read_plan()),
        )
        .await;
        assert_eq!(
            fresh.status, 201,
            "{case}: nothing was stored under the key"
        );
    }
    // A post's text and link are bounded too.
    let session = json!({"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []});
    for content in [
        json!({"text": "p".repeat(1024 * 1024)}),
        json!({"text": "hi", "link": long}),
    ] {
        let body = json!({"platform": FAKE_PLATFORM, "session": session, "content": content});
        let reply = post(&s.app, "/v1/post", &body).await;
        assert_eq!(
            reply.error().0,
            422,
            "{}",
            &reply.body[..reply.body.len().min(300)]
        );
    }
    assert!(s.strategy.posted().is_empty());
}

#[tokio::test]
async fn a_placeholder_may_not_choose_a_urls_scheme_or_host() {
    let s = runs_at_once();
    for url in [
        "http://{{h}}/x",
        "{{u}}/path",
        "https://a{{x}}.example.com/",
        "//{{h}}/x",
        "https://fake.example{{x}}/",
        "https://{{x}}@fake.example/",
        "{{u}}",
        "ht{{x}}tp://fake.example/",
    ] {
        let mut body = read_plan();
        body["plan"]["steps"][0] = json!({"type": "navigate", "url": url, "description": "Open"});
        body["inputs"] = json!({"h": "evil.example", "u": "https://evil.example", "x": "evil"});
        let reply = post(&s.app, "/v1/tasks", &body).await;
        let (status, code, _) = reply.error();
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_plan"),
            "{url}: {}",
            reply.body
        );
        assert!(
            reply.message().contains("steps[0]"),
            "{url}: {}",
            reply.message()
        );
        assert!(!reply.message().contains("evil"), "{}", reply.message());
    }
    // In the path, the query and the fragment they stay allowed.
    let mut body = read_plan();
    body["plan"]["steps"] = json!([
        {"type": "navigate", "url": "https://fake.example/users/{{id}}?q={{q}}#{{f}}", "description": "Open"},
        {"type": "navigate", "url": "/users/{{id}}", "description": "Open"},
        {"type": "navigate", "url": "users?page={{id}}", "description": "Open"}
    ]);
    body["inputs"] = json!({"id": "42", "q": "a b", "f": "top"});
    let reply = post(&s.app, "/v1/tasks", &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

#[tokio::test]
async fn committing_or_risky_waits_for_a_click_whatever_risk_the_plan_declares() {
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.tasks.approval = ApprovalRule::CommittingOrRisky;
    });
    let submit = json!({"type": "type", "selector": "#q", "value": "x", "submit": true, "description": "Search"});
    let select =
        json!({"type": "select", "selector": "#role", "value": "admin", "description": "Role"});
    for step in [pay_plan()["plan"]["steps"][0].clone(), submit, select] {
        let mut body = pay_plan();
        body["plan"]["steps"][0] = step.clone();
        body["plan"]["risk"] = json!("low");
        let reply = post(&s.app, "/v1/tasks", &body).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        assert_eq!(reply.json()["state"], "pending_approval", "{step}");
    }
    // A plan that only reads, at low risk, runs at once.
    let reply = post(&s.app, "/v1/tasks", &read_plan()).await;
    assert_eq!(reply.json()["state"], "queued", "{}", reply.body);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.provider.page().clicks_on("#pay"), 0);
}

#[tokio::test]
async fn a_path_segment_that_is_not_utf8_is_the_typed_envelope() {
    let s = fake_stack();
    for (method, path) in [
        (Method::GET, "/v1/tasks/%FF"),
        (Method::GET, "/v1/tasks/%FF/events"),
        (Method::POST, "/v1/tasks/%FF/retry"),
        (Method::GET, "/v1/posts/%FF"),
        (Method::GET, "/v1/sessions/%C3%28"),
        (Method::GET, "/v1/browse/%FF/snapshot"),
        (Method::DELETE, "/v1/browse/%FF"),
        (Method::GET, "/v1/capture/%FF?workspaceId=w&accountId=a"),
        (Method::GET, "/v1/tasks/%FF/screenshots/x"),
        (Method::GET, "/v1/relay/%FF/connect"),
    ] {
        let reply = send(&s.app, method.clone(), path, &[], None).await;
        let (status, code, _) = reply.error();
        assert!((400..500).contains(&status), "{method} {path}: {status}");
        assert_eq!(code, "invalid_request", "{method} {path}: {}", reply.body);
    }
}

// ---- MCP ------------------------------------------------------------------------------------

/// The protocol version the requests name.
const PROTOCOL: &str = "2025-06-18";

/// A raw request to `/mcp`: the token, `Host: localhost`, the MCP headers.
fn mcp_request(method: Method) -> axum::http::request::Builder {
    authed(method, "/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL)
}

async fn mcp_raw(app: &Router, body: &str) -> Reply {
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    call(app, request).await
}

async fn call_tool(app: &Router, name: &str, arguments: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let reply = mcp_raw(app, &message.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

/// A JSON-RPC error's `(code, message)`.
fn rpc_error(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    (
        error["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not a protocol error: {answer}")),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn an_unknown_mcp_argument_is_a_json_rpc_error_naming_it() {
    let s = runs_at_once();
    let mut task = pay_plan();
    task["plan"]["readonly"] = json!(true);
    let mut top = pay_plan();
    top["dryrun"] = json!(true);
    let session = json!({"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []});
    let post_args = json!({"platform": FAKE_PLATFORM, "session": session, "content": {"text": "hi"}, "workspaceId": "acme", "dryRun": true});
    for (tool, field, arguments) in [
        ("task_create", "readonly", task),
        ("task_create", "dryrun", top),
        ("post", "dryRun", post_args),
        (
            "browse_open",
            "readonly",
            json!({"url": "https://fake.example/", "readonly": true}),
        ),
        (
            "browse_act",
            "force",
            json!({"browseId": "b1", "action": "click", "ref": "e1", "force": true}),
        ),
        (
            "task_status",
            "verbose",
            json!({"taskId": "t1", "verbose": true}),
        ),
        (
            "run_timeline",
            "format",
            json!({"runId": "t1", "format": "markdown"}),
        ),
        (
            "set_profile_consent",
            "forever",
            json!({"profile": "jobs", "decision": "allow", "decidedBy": "o", "forever": true}),
        ),
    ] {
        let answer = call_tool(&s.app, tool, arguments).await;
        let (code, message) = rpc_error(&answer);
        assert_eq!(code, -32602, "{tool}: {answer}");
        assert!(message.contains(&format!("`{field}`")), "{tool}: {message}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(s.strategy.posted().is_empty());
    assert_eq!(s.provider.acquired(), 0);
}

#[tokio::test]
async fn every_tool_schema_refuses_additional_properties() {
    let s = fake_stack();
    let reply = mcp_raw(
        &s.app,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
    )
    .await;
    let answer = reply.json();
    let tools = answer["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 11);
    for tool in tools {
        assert_eq!(
            tool["inputSchema"]["additionalProperties"],
            json!(false),
            "{}",
            tool["name"]
        );
    }
}

#[tokio::test]
async fn mcp_answers_wrong_methods_malformed_bodies_and_a_foreign_host_in_json() {
    let s = fake_stack();
    // GET, DELETE, PUT: the envelope, with Allow.
    for method in [Method::GET, Method::DELETE, Method::PUT] {
        let request = mcp_request(method.clone()).body(Body::empty()).unwrap();
        let reply = call(&s.app, request).await;
        assert_eq!(
            reply.error(),
            (405, "method_not_allowed".into(), false),
            "{method}"
        );
        assert_eq!(reply.header("allow"), Some("POST"), "{method}");
    }
    // Not JSON: the envelope.
    let reply = mcp_raw(&s.app, "{\"jsonrpc\": ").await;
    assert_eq!(reply.error(), (400, "invalid_json".into(), false));
    // JSON, but no JSON-RPC message and no id: the envelope, quoting nothing.
    let reply = mcp_raw(&s.app, &json!({"hello": CANARY}).to_string()).await;
    assert_eq!(reply.error().1, "invalid_request", "{}", reply.body);
    assert!(!reply.body.contains(CANARY), "{}", reply.body);
    // A message with an id that is not a valid request: a JSON-RPC error with that id.
    for body in [
        json!({"jsonrpc": "2.0", "id": 9, "method": 5}),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": CANARY}),
        json!({"jsonrpc": "1.0", "id": 9, "method": "tools/list"}),
    ] {
        let reply = mcp_raw(&s.app, &body.to_string()).await;
        assert!(
            reply
                .header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{body}: {}",
            reply.body
        );
        let answer = reply.json();
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], 9, "{answer}");
        assert_eq!(rpc_error(&answer).0, -32600, "{answer}");
        assert!(!reply.body.contains(CANARY), "{}", reply.body);
    }
    // Not declared as JSON: the envelope.
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("{}"))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.error(), (415, "unsupported_media_type".into(), false));
    // A foreign Host: the envelope.
    let request = authed(Method::POST, "/mcp")
        .header(header::HOST, "attacker.example")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
        ))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.error(), (403, "host_not_allowed".into(), false));
    // A client that accepts JSON only is answered in JSON.
    let request = authed(Method::POST, "/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", PROTOCOL)
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string(),
        ))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["id"], 3);
    // The server still answers.
    let reply = mcp_raw(
        &s.app,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(reply.json()["id"], 4);
}

#[tokio::test]
async fn mcp_read_only_does_not_act_on_a_session_opened_writable_over_rest() {
    let provider = FakeProvider::new();
    provider.page().set_facts(
        "#go",
        ElementFacts {
            tag: "a".into(),
            name: "Go".into(),
            ..ElementFacts::default()
        },
    );
    let s = fake_stack_with(provider, |_| {});
    let read_only = abr_service::http::app_with_mcp(
        Arc::clone(&s.runner),
        McpSettings {
            read_only: true,
            tenant: None,
        },
    );
    // The orchestrator opens a writable session over REST ...
    let opened = post(
        &s.app,
        "/v1/browse",
        &json!({"url": "https://fake.example/"}),
    )
    .await;
    assert_eq!(opened.status, 201, "{}", opened.body);
    assert_eq!(opened.json()["readOnly"], false);
    let writable = opened.json()["browseId"].as_str().unwrap().to_owned();
    // ... and a read-only MCP endpoint (the same tenant) is asked to act on it: refused.
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "browse_act", "arguments": {"browseId": writable, "action": "click", "ref": "e1"}}});
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-tenant-id", "acme")
        .body(Body::from(message.to_string()))
        .unwrap();
    let answer = call(&read_only, request).await.json();
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(
        result["structuredContent"]["error"]["code"], "blocked_action",
        "{answer}"
    );
    assert_eq!(
        s.provider.page().count("click"),
        0,
        "nothing reached the page"
    );
    // Reading it is harmless, and allowed.
    let message = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "browse_snapshot", "arguments": {"browseId": writable}}});
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-tenant-id", "acme")
        .body(Body::from(message.to_string()))
        .unwrap();
    let answer = call(&read_only, request).await.json();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // A session the read-only endpoint opened itself is read-only, and acts.
    let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "browse_open", "arguments": {"url": "https://fake.example/"}}});
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-tenant-id", "acme")
        .body(Body::from(message.to_string()))
        .unwrap();
    let answer = call(&read_only, request).await.json();
    let own = answer["result"]["structuredContent"]["browseId"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    let message = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "browse_act", "arguments": {"browseId": own, "action": "click", "ref": "e1"}}});
    let request = mcp_request(Method::POST)
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-tenant-id", "acme")
        .body(Body::from(message.to_string()))
        .unwrap();
    let answer = call(&read_only, request).await.json();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["outcome"], "done",
        "{answer}"
    );
    assert_eq!(s.provider.page().count("click"), 1);
}
