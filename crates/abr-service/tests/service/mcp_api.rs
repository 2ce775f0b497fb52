//! The MCP endpoint (`/mcp`, streamable HTTP, stateless JSON) in-process (`oneshot`) on the
//! core's fakes: the tool list; bad arguments as MCP invalid-params errors (and the server
//! still answering); `/mcp` behind the bearer check; an error envelope as an `isError`
//! result; the caller's tenant carried into every call (another tenant's task is not
//! found, a body cannot pick another tenant); read-only as the operator's switch (post and
//! task_create neither listed nor callable, browse sessions forced read-only whatever the
//! model sends); an idempotency key keeping a retried post from posting twice; a foreign
//! `Host` refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::sync::{Arc, Mutex};

use abr_service::mcp::McpSettings;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, header};
use axum::routing::post;
use common::fake::*;
use serde_json::{Value, json};

/// The protocol version the requests after `initialize` name.
const PROTOCOL: &str = "2025-06-18";

/// A JSON-RPC request to `/mcp` with the token, a tenant and extra headers.
async fn rpc_as(app: &Router, token: Option<&str>, tenant: Option<&str>, message: &Value) -> Reply {
    let mut builder = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", PROTOCOL);
    if let Some(token) = token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(tenant) = tenant {
        builder = builder.header("x-tenant-id", tenant);
    }
    call(app, builder.body(Body::from(message.to_string())).unwrap()).await
}

/// `method` with `params` as the fake runner's caller, for `tenant`; the JSON-RPC answer.
async fn request(app: &Router, tenant: Option<&str>, method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let reply = rpc_as(app, Some(FAKE_TOKEN), tenant, &message).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json();
    assert_eq!(answer["id"], 7, "{answer}");
    answer
}

async fn tool_names(app: &Router) -> Vec<String> {
    let answer = request(app, None, "tools/list", json!({})).await;
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `tools/call` of `name`; the JSON-RPC answer.
async fn call_tool(app: &Router, tenant: Option<&str>, name: &str, arguments: Value) -> Value {
    request(
        app,
        tenant,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

/// A tool result (not a protocol error): `(isError, structuredContent)`.
fn result(answer: &Value) -> (bool, Value) {
    let result = answer
        .get("result")
        .unwrap_or_else(|| panic!("not a tool result: {answer}"));
    (
        result["isError"].as_bool().unwrap_or(false),
        result["structuredContent"].clone(),
    )
}

/// A protocol error's JSON-RPC code.
fn rpc_error(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not a protocol error: {answer}"))
}

fn task_plan() -> Value {
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

fn post_args(text: &str) -> Value {
    json!({
        "platform": FAKE_PLATFORM,
        "session": {"cookies": [{"name": "sid", "value": "s", "domain": "fake.example", "path": "/"}], "origins": []},
        "content": {"text": text},
        "workspaceId": "ws"
    })
}

#[tokio::test]
async fn a_client_initializes_and_lists_the_tools() {
    let s = fake_stack();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}
        }
    });
    let reply = rpc_as(&s.app, Some(FAKE_TOKEN), None, &init).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let init = reply.json();
    assert_eq!(init["result"]["serverInfo"]["name"], "abr", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert_eq!(
        tool_names(&s.app).await,
        [
            "browse_open",
            "browse_snapshot",
            "browse_act",
            "browse_close",
            "browse_request_input",
            "post",
            "task_create",
            "task_status",
            "run_timeline",
            "set_browser_screenshots",
            "set_profile_consent"
        ]
    );
    // No tool takes or hands out screenshots (a record's answer may name its frames); the
    // switch only switches.
    let answer = request(&s.app, None, "tools/list", json!({})).await;
    for tool in answer["result"]["tools"].as_array().unwrap() {
        if tool["name"] == "set_browser_screenshots" {
            assert_eq!(
                tool["inputSchema"]["properties"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .collect::<Vec<_>>(),
                ["enabled"]
            );
            continue;
        }
        let offered = format!(
            "{} {} {}",
            tool["name"], tool["description"], tool["inputSchema"]
        );
        assert!(!offered.contains("screenshot"), "{offered}");
    }
}

#[tokio::test]
async fn bad_arguments_are_invalid_params_and_the_server_keeps_answering() {
    let s = fake_stack();
    let bad = [
        ("browse_open", json!({})),
        ("browse_act", json!({"browseId": "b1", "action": "rm -rf"})),
        ("browse_snapshot", json!({"browseId": "../tasks/x"})),
        (
            "browse_request_input",
            json!({"browseId": "b1", "ref": "e1"}),
        ),
        ("task_status", json!({"taskId": ["x"]})),
        ("task_create", json!({"plan": "do it"})),
        ("post", json!({"platform": FAKE_PLATFORM})),
        (
            "set_profile_consent",
            json!({"profile": "../etc", "decision": "allow", "decidedBy": "o"}),
        ),
        (
            "set_profile_consent",
            json!({"profile": "jobs", "decision": "maybe", "decidedBy": "o"}),
        ),
        ("no_such_tool", json!({})),
    ];
    for (name, arguments) in bad {
        let answer = call_tool(&s.app, None, name, arguments.clone()).await;
        assert_eq!(rpc_error(&answer), -32602, "{name} {arguments}: {answer}");
    }
    // Nothing ran, and the server still answers.
    assert_eq!(s.provider.acquired(), 0);
    assert_eq!(tool_names(&s.app).await.len(), 11);
    // A body that is not JSON-RPC at all is refused, not a crash.
    let reply = rpc_as(&s.app, Some(FAKE_TOKEN), None, &json!({"hello": 1})).await;
    assert!(
        reply.status.is_client_error(),
        "{} {}",
        reply.status,
        reply.body
    );
    assert_eq!(tool_names(&s.app).await.len(), 11);
}

#[tokio::test]
async fn without_the_bearer_token_mcp_is_a_401_envelope() {
    let s = fake_stack();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for token in [None, Some("not-the-token-0123456789")] {
        let reply = rpc_as(&s.app, token, None, &list).await;
        assert_eq!(reply.error(), (401, "unauthorized".to_owned(), false));
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    }
    // A tool call without the token runs nothing.
    let create = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "task_create", "arguments": task_plan()}});
    let reply = rpc_as(&s.app, None, None, &create).await;
    assert_eq!(reply.error().0, 401);
    let get = axum::http::Request::get("/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "text/event-stream")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&s.app, get).await.error().0, 401);
    // The token is the runner's: the second (rotation) token is accepted too.
    let reply = rpc_as(&s.app, Some(FAKE_TOKEN_NEXT), None, &list).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test]
async fn an_error_envelope_is_an_is_error_result_with_its_code_and_message() {
    let s = fake_stack();
    let answer = call_tool(&s.app, None, "task_status", json!({"taskId": "task_nope"})).await;
    let (is_error, content) = result(&answer);
    assert!(is_error, "{answer}");
    assert_eq!(content["status"], 404, "{content}");
    assert_eq!(content["error"]["code"], "task_not_found", "{content}");
    assert!(
        content["error"]["message"].as_str().unwrap().len() > 5,
        "{content}"
    );
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("task_not_found"), "{text}");
}

#[tokio::test]
async fn a_task_created_over_mcp_is_its_callers_tenants_only() {
    let s = fake_stack();
    let answer = call_tool(&s.app, Some("tenant-a"), "task_create", task_plan()).await;
    let (is_error, created) = result(&answer);
    assert!(!is_error, "{answer}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["state"], "pending_approval", "{created}");
    // The same tenant reads it (waitSecs 0: at once) ...
    let mine = call_tool(
        &s.app,
        Some("tenant-a"),
        "task_status",
        json!({"taskId": id, "waitSecs": 0}),
    )
    .await;
    let (is_error, record) = result(&mine);
    assert!(!is_error, "{mine}");
    assert_eq!(record["taskId"], id.as_str());
    // ... and its timeline: markdown for the model, the JSON beside it.
    let timeline = call_tool(
        &s.app,
        Some("tenant-a"),
        "run_timeline",
        json!({"runId": id}),
    )
    .await;
    let (is_error, content) = result(&timeline);
    assert!(!is_error, "{timeline}");
    assert_eq!(content["runId"], id.as_str(), "{content}");
    assert_eq!(content["entries"][0]["event"], "created", "{content}");
    let text = timeline["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("# Timeline of task `") && text.contains("| +0.000 s | created by "),
        "{text}"
    );
    // ... another tenant, or a caller naming none, does not see it.
    for tenant in [Some("tenant-b"), None] {
        let theirs = call_tool(&s.app, tenant, "task_status", json!({"taskId": id})).await;
        let (is_error, content) = result(&theirs);
        assert!(is_error, "{tenant:?}: {theirs}");
        assert_eq!(content["error"]["code"], "task_not_found");
        let theirs = call_tool(&s.app, tenant, "run_timeline", json!({"runId": id})).await;
        let (is_error, content) = result(&theirs);
        assert!(is_error, "{tenant:?}: {theirs}");
        assert_eq!(content["error"]["code"], "run_not_found");
    }
}

#[tokio::test]
async fn a_model_cannot_pick_another_tenant_in_the_arguments() {
    let s = fake_stack();
    // The caller is tenant-a (or names no tenant: the default one); the model asks for the
    // victim's tenant in the body. The API refuses the disagreement; nothing is created.
    for tenant in [Some("tenant-a"), None] {
        let mut args = task_plan();
        args["tenantId"] = json!("victim");
        let answer = call_tool(&s.app, tenant, "task_create", args).await;
        let (is_error, content) = result(&answer);
        assert!(is_error, "{tenant:?}: {answer}");
        assert_eq!(content["error"]["code"], "invalid_request", "{content}");
        let mut post = post_args("hello");
        post["workspaceId"] = json!("victim");
        let answer = call_tool(&s.app, tenant, "post", post).await;
        assert!(result(&answer).0, "{tenant:?}: {answer}");
    }
    assert!(s.strategy.posted().is_empty());
    assert_eq!(s.provider.acquired(), 0);
}

#[tokio::test]
async fn a_retried_post_with_its_idempotency_key_posts_once() {
    let s = fake_stack();
    let mut args = post_args("hello from mcp");
    args["idempotencyKey"] = json!("mcp-post-1");
    let first = call_tool(&s.app, Some("ws"), "post", args.clone()).await;
    let (is_error, outcome) = result(&first);
    assert!(!is_error, "{first}");
    assert_eq!(outcome["ok"], true, "{outcome}");
    let again = call_tool(&s.app, Some("ws"), "post", args).await;
    let (is_error, replayed) = result(&again);
    assert!(!is_error, "{again}");
    assert_eq!(replayed["postId"], outcome["postId"], "{replayed}");
    assert_eq!(s.strategy.posted(), ["hello from mcp"]);
}

/// A read-only MCP endpoint on the fake runner.
fn read_only_app(s: &FakeStack) -> Router {
    abr_service::http::app_with_mcp(
        Arc::clone(&s.runner),
        McpSettings {
            read_only: true,
            tenant: None,
        },
    )
}

#[tokio::test]
async fn read_only_lists_neither_post_nor_task_create_and_refuses_them() {
    let s = fake_stack();
    let app = read_only_app(&s);
    let names = tool_names(&app).await;
    assert_eq!(
        names,
        [
            "browse_open",
            "browse_snapshot",
            "browse_act",
            "browse_close",
            "browse_request_input",
            "task_status",
            "run_timeline"
        ]
    );
    // A model calling them anyway (they are not listed) is refused; nothing runs.
    let mut post = post_args("should never be posted");
    post["idempotencyKey"] = json!("k");
    let answer = call_tool(&app, Some("ws"), "post", post).await;
    assert_eq!(rpc_error(&answer), -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only")
    );
    let answer = call_tool(&app, None, "task_create", task_plan()).await;
    assert_eq!(rpc_error(&answer), -32602, "{answer}");
    assert!(s.strategy.posted().is_empty());
    assert_eq!(s.provider.acquired(), 0);
    // The same runner's read-write endpoint lists them.
    assert_eq!(tool_names(&s.app).await.len(), 11);
}

/// What the API received: the bodies and headers of `POST /v1/browse`.
type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// A stand-in for the runner's router that records `POST /v1/browse` and answers 201.
fn recording_api() -> (Router, Seen) {
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    let api = Router::new().route(
        "/v1/browse",
        post(move |request: Request| {
            let record = Arc::clone(&record);
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                record.lock().unwrap().push((parts.headers, body));
                (
                    axum::http::StatusCode::CREATED,
                    axum::Json(json!({"browseId": "b_1", "readOnly": true})),
                )
            }
        }),
    );
    (api, seen)
}

/// `/mcp` alone on `api`, as `abr serve` mounts it (without the bearer check, which is the
/// API's: these tests look at what reaches the API).
fn mcp_on(api: Router, read_only: bool) -> Router {
    let config = fake_config();
    let service = abr_service::mcp::http_service(
        api,
        &config,
        McpSettings {
            read_only,
            tenant: None,
        },
    );
    Router::new().route_service("/mcp", service)
}

#[tokio::test]
async fn read_only_forces_every_browse_session_read_only_whatever_the_model_sends() {
    let (api, seen) = recording_api();
    let app = mcp_on(api, true);
    for asked in [json!(false), json!(true), Value::Null] {
        let mut args = json!({"url": "https://fake.example/", "platform": FAKE_PLATFORM});
        if !asked.is_null() {
            args["readOnly"] = asked.clone();
        }
        let answer = call_tool(&app, Some("tenant-a"), "browse_open", args).await;
        assert!(!result(&answer).0, "{answer}");
        let (headers, body) = seen.lock().unwrap().pop().unwrap();
        assert_eq!(body["readOnly"], true, "asked {asked}: {body}");
        assert_eq!(body["url"], "https://fake.example/");
        // The caller's credentials and tenant went with it.
        assert_eq!(
            headers.get(header::AUTHORIZATION).unwrap(),
            &format!("Bearer {FAKE_TOKEN}")
        );
        assert_eq!(headers.get("x-tenant-id").unwrap(), "tenant-a");
    }
    // Without read-only, the model's choice is forwarded as it is.
    let (api, seen) = recording_api();
    let app = mcp_on(api, false);
    let args = json!({"url": "https://fake.example/", "readOnly": false});
    let answer = call_tool(&app, None, "browse_open", args).await;
    assert!(!result(&answer).0, "{answer}");
    let (headers, body) = seen.lock().unwrap().pop().unwrap();
    assert_eq!(body["readOnly"], false, "{body}");
    assert_eq!(headers.get("x-tenant-id").unwrap(), "default");
}

#[tokio::test]
async fn a_foreign_host_is_refused_against_dns_rebinding() {
    let s = fake_stack();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let request = axum::http::Request::post("/mcp")
        .header(header::HOST, "attacker.example")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {FAKE_TOKEN}"))
        .body(Body::from(list.to_string()))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    // The public URL's host is this runner's own.
    let request = axum::http::Request::post("/mcp")
        .header(header::HOST, "runner.test")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {FAKE_TOKEN}"))
        .body(Body::from(list.to_string()))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test]
async fn a_model_reads_the_snapshot_as_compact_text_and_pages_through_it() {
    let provider = abr_core::testing::FakeProvider::new();
    for i in 0..3 {
        provider.page().set_facts(
            &format!("#b{i}"),
            abr_core::guard::ElementFacts {
                tag: "button".into(),
                name: format!("Button {i}"),
                ..abr_core::guard::ElementFacts::default()
            },
        );
    }
    let s = fake_stack_with(provider, |_| {});
    let app = &s.app;
    let answer = call_tool(
        app,
        None,
        "browse_open",
        json!({"url": "https://fake.example/"}),
    )
    .await;
    let (failed, structured) = result(&answer);
    assert!(!failed, "{answer}");
    let id = structured["browseId"].as_str().unwrap().to_owned();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let (head, page) = text.split_once('\n').unwrap();
    let head: Value = serde_json::from_str(head).unwrap();
    assert_eq!(
        head["outcome"], "done",
        "the answer's fields first, as JSON"
    );
    assert!(head.get("snapshot").is_none());
    assert!(
        page.contains("3 elements\ne1 button Button 0\ne2 button Button 1\n"),
        "{page}"
    );
    assert_eq!(
        structured["snapshot"]["elements"][2]["name"], "Button 2",
        "the whole JSON stays in structuredContent"
    );

    let answer = call_tool(
        app,
        None,
        "browse_snapshot",
        json!({"browseId": id, "from": 2, "limit": 1}),
    )
    .await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("elements 2-2 of 3; more with from=3\ne2 button Button 1\n"),
        "{text}"
    );
    assert!(!text.contains("Button 0") && !text.contains("{"), "{text}");
    // Out of bounds: the API's typed refusal; a misspelt argument: invalid params.
    let answer = call_tool(
        app,
        None,
        "browse_snapshot",
        json!({"browseId": id, "limit": 0}),
    )
    .await;
    let (failed, structured) = result(&answer);
    assert!(failed, "{answer}");
    assert_eq!(structured["error"]["code"], "invalid_request");
    let answer = call_tool(
        app,
        None,
        "browse_snapshot",
        json!({"browseId": id, "form": 2}),
    )
    .await;
    assert_eq!(rpc_error(&answer), -32602, "{answer}");
}

/// Every `format` a schema uses (a property named `format` is an object, not one).
fn formats(schema: &Value) -> Vec<String> {
    match schema {
        Value::Object(map) => map
            .iter()
            .flat_map(|(key, value)| match (key.as_str(), value) {
                ("format", Value::String(f)) => vec![f.clone()],
                _ => formats(value),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(formats).collect(),
        _ => Vec::new(),
    }
}

/// Every tool's `outputSchema`, by name, as a JSON Schema 2020-12 validator.
async fn output_validators(
    app: &Router,
) -> std::collections::BTreeMap<String, jsonschema::Validator> {
    let answer = request(app, None, "tools/list", json!({})).await;
    let mut validators = std::collections::BTreeMap::new();
    for tool in answer["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap().to_owned();
        let schema = &tool["outputSchema"];
        assert_eq!(schema["type"], "object", "{name}: an object schema");
        for input_or_output in [&tool["inputSchema"], schema] {
            jsonschema::meta::validate(input_or_output)
                .unwrap_or_else(|e| panic!("{name}: not a valid 2020-12 schema: {e}"));
            for format in formats(input_or_output) {
                assert!(
                    ["date-time", "uri", "email", "uuid"].contains(&format.as_str()),
                    "{name}: format {format} is not a standard one"
                );
            }
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(schema)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        validators.insert(name, validator);
    }
    validators
}

/// Calls `name` and checks its `structuredContent` against the tool's `outputSchema`.
async fn checked(
    app: &Router,
    validators: &std::collections::BTreeMap<String, jsonschema::Validator>,
    name: &str,
    arguments: Value,
) -> (bool, Value) {
    checked_as(app, validators, FAKE_TOKEN, name, arguments).await
}

/// [`checked`], as the key of `token`.
async fn checked_as(
    app: &Router,
    validators: &std::collections::BTreeMap<String, jsonschema::Validator>,
    token: &str,
    name: &str,
    arguments: Value,
) -> (bool, Value) {
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let reply = rpc_as(app, Some(token), None, &message).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json();
    let (failed, structured) = result(&answer);
    let errors: Vec<String> = validators[name]
        .iter_errors(&structured)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name} answered outside its outputSchema: {errors:#?}\n{structured}"
    );
    (failed, structured)
}

#[tokio::test]
async fn every_tools_answers_and_refusals_validate_against_its_output_schema() {
    let provider = abr_core::testing::FakeProvider::new();
    provider.page().set_facts(
        "#go",
        abr_core::guard::ElementFacts {
            tag: "button".into(),
            name: "Go".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    let profiles = tempfile::tempdir().unwrap();
    let dir = profiles.path().to_owned();
    let s = fake_stack_with(provider.with_profiles(), |c| {
        c.providers.profile_dir = Some(dir);
    });
    let app = &s.app;
    let validators = output_validators(app).await;
    assert_eq!(validators.len(), 11, "every tool declares its output");
    let mut seen = std::collections::BTreeSet::new();
    let mut note = |name: &str, failed: bool| {
        seen.insert((name.to_owned(), failed));
    };
    // Answers.
    let (failed, opened) = checked(
        app,
        &validators,
        "browse_open",
        json!({"url": "https://fake.example/"}),
    )
    .await;
    note("browse_open", failed);
    let id = opened["browseId"].as_str().unwrap().to_owned();
    let (failed, _) = checked(app, &validators, "browse_snapshot", json!({"browseId": id})).await;
    note("browse_snapshot", failed);
    let (failed, _) = checked(
        app,
        &validators,
        "browse_act",
        json!({"browseId": id, "action": "click", "ref": "e1"}),
    )
    .await;
    note("browse_act", failed);
    // A wait instead of a polled snapshot.
    let (failed, waited) = checked(
        app,
        &validators,
        "browse_act",
        json!({"browseId": id, "action": "wait", "ms": 10}),
    )
    .await;
    assert!(!failed && waited["outcome"] == "done", "{waited}");
    let (failed, _) = checked(
        app,
        &validators,
        "browse_request_input",
        json!({"browseId": id, "ref": "e1", "prompt": "Your name?"}),
    )
    .await;
    note("browse_request_input", failed);
    let (failed, _) = checked(app, &validators, "browse_close", json!({"browseId": id})).await;
    note("browse_close", failed);
    let (failed, _) = checked(app, &validators, "post", post_args("hello")).await;
    note("post", failed);
    let (failed, created) = checked(app, &validators, "task_create", task_plan()).await;
    note("task_create", failed);
    let task = created["taskId"].as_str().unwrap().to_owned();
    let (failed, _) = checked(app, &validators, "task_status", json!({"taskId": task})).await;
    note("task_status", failed);
    let (failed, _) = checked(app, &validators, "run_timeline", json!({"runId": task})).await;
    note("run_timeline", failed);
    let switch = json!({"enabled": true});
    let (failed, _) = checked(app, &validators, "set_browser_screenshots", switch.clone()).await;
    note("set_browser_screenshots", failed);
    // An agent's key may not change the tenant's settings: the API's 403 envelope.
    let agent = new_key(app, "agent", "agent", Some("ws")).await;
    let (failed, refused) =
        checked_as(app, &validators, &agent, "set_browser_screenshots", switch).await;
    assert!(failed, "{refused}");
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    note("set_browser_screenshots", failed);
    let consent = json!({"profile": "jobs", "decision": "allow", "decidedBy": "the owner"});
    let (failed, decided) = checked(app, &validators, "set_profile_consent", consent.clone()).await;
    assert!(!failed, "{decided}");
    assert_eq!(decided["profile"], "jobs");
    assert_eq!(decided["decision"], "allow");
    assert_eq!(decided["decidedBy"], "the owner");
    assert!(decided["decidedByKey"].is_string(), "{decided}");
    note("set_profile_consent", failed);
    let (failed, refused) =
        checked_as(app, &validators, &agent, "set_profile_consent", consent).await;
    assert!(failed, "{refused}");
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    note("set_profile_consent", failed);
    // Refusals: the API's envelope with its status.
    for (name, arguments) in [
        ("browse_snapshot", json!({"browseId": "nobody"})),
        (
            "browse_act",
            json!({"browseId": "nobody", "action": "click", "ref": "e1"}),
        ),
        ("browse_close", json!({"browseId": "nobody"})),
        (
            "browse_request_input",
            json!({"browseId": "nobody", "ref": "e1", "prompt": "x"}),
        ),
        ("task_status", json!({"taskId": "nobody"})),
        ("run_timeline", json!({"runId": "nobody"})),
        (
            "browse_open",
            json!({"url": "https://fake.example/", "platform": "nowhere"}),
        ),
        (
            "post",
            json!({"platform": "nowhere", "session": {"cookies": [], "origins": []},
            "content": {"text": "x"}}),
        ),
        (
            "task_create",
            json!({"plan": {"targetUrl": "https://fake.example/", "steps": [],
            "verification": {"method": "dom_check", "selector": "h1"}, "risk": "low"}}),
        ),
    ] {
        let (failed, refused) = checked(app, &validators, name, arguments).await;
        assert!(failed, "{name}: {refused}");
        assert!(refused["status"].as_u64().unwrap() >= 400, "{refused}");
        note(name, failed);
    }
    // Each tool was seen answering and refusing.
    for name in validators.keys() {
        assert!(
            seen.contains(&(name.clone(), true)),
            "{name} refused nowhere"
        );
    }
    assert!(
        seen.iter().filter(|(_, failed)| !failed).count() >= 9,
        "answers: {seen:?}"
    );
}
