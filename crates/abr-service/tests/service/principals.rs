//! Principals, from the attacker's side: an API key is bound to its tenant and its role, in
//! process over the whole router (HTTP handlers and `/mcp` alike), on the core's fakes.
//! Each attack is one a holder of a key tries; each must fail without changing anything.

use axum::body::Body;
use axum::http::{Method, header};
use serde_json::{Value, json};

use crate::common;
use common::fake::*;

/// A plan that clicks (it waits for approval under the default rule).
fn plan(tenant: Option<&str>) -> Value {
    let mut body = json!({"plan": {
        "targetUrl": "https://fake.example/form",
        "steps": [{"type": "click", "selector": "role=button[name=Submit]", "description": "Submit"}],
        "verification": {"method": "dom_check", "selector": "h1"}
    }});
    if let Some(t) = tenant {
        body["tenantId"] = t.into();
    }
    body
}

async fn created_task(app: &axum::Router, token: &str) -> Value {
    let reply = request_as(
        app,
        token,
        Method::POST,
        "/v1/tasks",
        &[],
        Some(&plan(None)),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()
}

fn post_body(text: &str) -> Value {
    json!({
        "platform": FAKE_PLATFORM,
        "session": {"cookies": [], "origins": []},
        "content": {"text": text}
    })
}

#[tokio::test]
async fn a_tenants_key_neither_sees_nor_changes_nor_spends_another_tenants() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.tasks.limits.daily_executions = 1;
    });
    let a_agent = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    let b_agent = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let b_approver = new_key(&s.app, "b's approver", "approver", Some("tenant-b")).await;
    let task = created_task(&s.app, &b_agent).await;
    let id = task["taskId"].as_str().unwrap();
    assert_eq!(task["proposedBy"]["name"], "b's agent");

    // A's key naming B's tenant is refused before anything, whatever the route.
    for (method, path, body) in [
        (Method::GET, format!("/v1/tasks/{id}"), None),
        (Method::POST, "/v1/tasks".to_owned(), Some(plan(None))),
        (Method::POST, "/v1/post".to_owned(), Some(post_body("hi"))),
        (Method::GET, "/v1/sites".to_owned(), None),
    ] {
        let reply = request_as(
            &s.app,
            &a_agent,
            method,
            &path,
            &[("x-tenant-id", "tenant-b")],
            body.as_ref(),
        )
        .await;
        assert_eq!(
            reply.error(),
            (403, "tenant_forbidden".into(), false),
            "{path}: {}",
            reply.body
        );
    }
    // Nor through a body naming B.
    let reply = request_as(
        &s.app,
        &a_agent,
        Method::POST,
        "/v1/tasks",
        &[],
        Some(&plan(Some("tenant-b"))),
    )
    .await;
    assert_eq!(reply.error().1, "tenant_forbidden", "{}", reply.body);
    // Without naming a tenant, A's key acts for A: B's ids are not found.
    for (method, path) in [
        (Method::GET, format!("/v1/tasks/{id}")),
        (Method::GET, format!("/v1/tasks/{id}/events")),
        (Method::POST, format!("/v1/tasks/{id}/recheck")),
        (Method::POST, format!("/v1/tasks/{id}/retry")),
    ] {
        let reply = request_as(&s.app, &a_agent, method, &path, &[], None).await;
        assert_eq!(reply.error().0, 404, "{path}: {}", reply.body);
    }
    // A's approver cannot approve or reject B's task either.
    let a_approver = new_key(&s.app, "a's approver", "approver", Some("tenant-a")).await;
    let approve = json!({"planHash": task["planHash"]});
    for verb in ["approve", "reject"] {
        let reply = request_as(
            &s.app,
            &a_approver,
            Method::POST,
            &format!("/v1/tasks/{id}/{verb}"),
            &[],
            Some(&approve_or_reject(verb, &approve)),
        )
        .await;
        assert_eq!(reply.error().1, "task_not_found", "{verb}: {}", reply.body);
    }
    // B's day is B's: A's post spends A's execution, and B still has its own.
    let reply = request_as(
        &s.app,
        &a_agent,
        Method::POST,
        "/v1/post",
        &[],
        Some(&post_body("a")),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = request_as(
        &s.app,
        &b_approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        &[],
        Some(&approve),
    )
    .await;
    assert_eq!(reply.status, 200, "B's own approval: {}", reply.body);
    assert_eq!(reply.json()["approval"]["approvedBy"], "b's approver");
    assert_eq!(reply.json()["approval"]["approver"]["role"], "approver");
}

fn approve_or_reject(verb: &str, approve: &Value) -> Value {
    if verb == "approve" {
        approve.clone()
    } else {
        json!({"reason": "not mine"})
    }
}

#[tokio::test]
async fn an_agent_never_approves_its_own_plan_nor_resolves_a_persons_pause() {
    let s = fake_stack();
    let agent = new_key(&s.app, "the agent", "agent", Some("t1")).await;
    let task = created_task(&s.app, &agent).await;
    let id = task["taskId"].as_str().unwrap();
    let approve = json!({"approvedBy": "a person, honestly", "planHash": task["planHash"]});
    let reply = request_as(
        &s.app,
        &agent,
        Method::POST,
        &format!("/v1/tasks/{id}/approve"),
        &[],
        Some(&approve),
    )
    .await;
    assert_eq!(
        reply.error(),
        (403, "forbidden".into(), false),
        "{}",
        reply.body
    );
    for path in ["takeover", "takeover/resume", "takeover/end"] {
        let reply = request_as(
            &s.app,
            &agent,
            Method::POST,
            &format!("/v1/tasks/{id}/{path}"),
            &[],
            None,
        )
        .await;
        assert_eq!(reply.error().1, "forbidden", "{path}: {}", reply.body);
        // An approver passes the right (and finds no pause to resolve).
        let approver = new_key(&s.app, "ada", "approver", Some("t1")).await;
        let reply = request_as(
            &s.app,
            &approver,
            Method::POST,
            &format!("/v1/tasks/{id}/{path}"),
            &[],
            None,
        )
        .await;
        assert_eq!(reply.error().1, "no_takeover", "{path}: {}", reply.body);
    }
    // Nor asserts that an uncertain action did not happen (that allows a new attempt).
    let reply = request_as(
        &s.app,
        &agent,
        Method::POST,
        &format!("/v1/tasks/{id}/assert-not-posted"),
        &[],
        Some(&json!({"assertedBy": "me"})),
    )
    .await;
    assert_eq!(reply.error().1, "forbidden", "{}", reply.body);
    let record = request_as(
        &s.app,
        &agent,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        &[],
        None,
    )
    .await;
    assert_eq!(record.json()["state"], "pending_approval");
    assert_eq!(s.provider.acquired(), 0, "nothing ran");
}

#[tokio::test]
async fn a_read_only_key_commits_nothing_and_browses_read_only() {
    let s = fake_stack();
    let created = post_json(
        &s.app,
        "/v1/keys",
        &json!({"name": "reader", "role": "agent", "tenantId": "t1", "readOnly": true}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let reader = created.json()["token"].as_str().unwrap().to_owned();
    let reply = request_as(
        &s.app,
        &reader,
        Method::POST,
        "/v1/post",
        &[],
        Some(&post_body("x")),
    )
    .await;
    assert_eq!(
        reply.error(),
        (403, "forbidden".into(), false),
        "{}",
        reply.body
    );
    let reply = request_as(
        &s.app,
        &reader,
        Method::POST,
        "/v1/tasks",
        &[],
        Some(&plan(None)),
    )
    .await;
    assert_eq!(reply.error().1, "forbidden", "{}", reply.body);
    assert_eq!(s.strategy.submits(), 0, "nothing was posted");
    assert_eq!(s.provider.acquired(), 0, "no browser was started");
    // Browsing is allowed, and read-only whatever the request asks.
    let reply = request_as(
        &s.app,
        &reader,
        Method::POST,
        "/v1/browse",
        &[],
        Some(&json!({"url": "https://fake.example/", "readOnly": false})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["readOnly"], true, "{}", reply.body);
}

#[tokio::test]
async fn a_revoked_or_forged_key_is_nobody_and_none_is_born_expired() {
    let s = fake_stack();
    let created = post_json(
        &s.app,
        "/v1/keys",
        &json!({"name": "soon gone", "role": "agent", "tenantId": "t1"}),
    )
    .await;
    let key = created.json();
    let token = key["token"].as_str().unwrap().to_owned();
    let key_id = key["key"]["keyId"].as_str().unwrap().to_owned();
    assert!(token.starts_with(&format!("abrk.{key_id}.")));
    let ok = request_as(&s.app, &token, Method::GET, "/v1/sites", &[], None).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // The list never shows a token.
    let list = get_authed(&s.app, "/v1/keys").await;
    assert_eq!(list.status, 200);
    assert!(!list.body.contains(&token), "{}", list.body);
    assert!(list.body.contains(&key_id));

    let revoked = call(
        &s.app,
        authed(Method::DELETE, &format!("/v1/keys/{key_id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert!(revoked.json()["revokedAt"].is_string());
    let gone = request_as(&s.app, &token, Method::GET, "/v1/sites", &[], None).await;
    assert_eq!(gone.error(), (401, "unauthorized".into(), false));

    // A forged secret under a real id, and a key past its expiry, are nobody too.
    let other = new_key(&s.app, "other", "agent", Some("t1")).await;
    let forged = format!("{}.{}", other.rsplit_once('.').unwrap().0, "A".repeat(43));
    let reply = request_as(&s.app, &forged, Method::GET, "/v1/sites", &[], None).await;
    assert_eq!(reply.error().0, 401);
    let past = json!({"name": "expired", "role": "agent", "tenantId": "t1",
        "expiresAt": "2001-01-01T00:00:00Z"});
    let reply = post_json(&s.app, "/v1/keys", &past).await;
    assert_eq!(reply.error().0, 422, "a key born expired: {}", reply.body);
}

#[tokio::test]
async fn only_operators_make_keys_or_connect_runners() {
    let s = fake_stack();
    for role in ["agent", "approver"] {
        let key = new_key(&s.app, role, role, Some("t1")).await;
        let reply = request_as(
            &s.app,
            &key,
            Method::POST,
            "/v1/keys",
            &[],
            Some(&json!({"name": "mine", "role": "operator"})),
        )
        .await;
        assert_eq!(reply.error(), (403, "forbidden".into(), false), "{role}");
        let reply = request_as(&s.app, &key, Method::GET, "/v1/keys", &[], None).await;
        assert_eq!(reply.error().1, "forbidden", "{role}");
        let reply = request_as(
            &s.app,
            &key,
            Method::POST,
            "/v1/relay/tokens",
            &[],
            Some(&json!({"runnerId": "someone-elses-laptop"})),
        )
        .await;
        assert_eq!(reply.error().1, "forbidden", "{role}: {}", reply.body);
    }
    // Keys are bound as their role says: an agent for every tenant is refused.
    let reply = post_json(&s.app, "/v1/keys", &json!({"name": "x", "role": "agent"})).await;
    assert_eq!(reply.error().0, 422, "{}", reply.body);
}

#[tokio::test]
async fn mcp_acts_as_its_key_within_its_tenant() {
    let s = fake_stack();
    let b_agent = new_key(&s.app, "b", "agent", Some("tenant-b")).await;
    let task = created_task(&s.app, &b_agent).await;
    let id = task["taskId"].as_str().unwrap();
    let a_agent = new_key(&s.app, "a", "agent", Some("tenant-a")).await;
    let call_tool = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "task_status", "arguments": {"taskId": id}}});
    let reply = mcp(&s.app, &a_agent, &call_tool).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.body.contains("task_not_found") && !reply.body.contains("pending_approval"),
        "tenant A's key read B's task over MCP: {}",
        reply.body
    );
    // The owner's key reads it.
    let reply = mcp(&s.app, &b_agent, &call_tool).await;
    assert!(reply.body.contains("pending_approval"), "{}", reply.body);
}

async fn mcp(app: &axum::Router, token: &str, body: &Value) -> Reply {
    call(
        app,
        authed_with(token, Method::POST, "/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::HOST, "localhost")
            .header("mcp-protocol-version", "2025-06-18")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn an_agent_over_mcp_waits_for_a_person_and_never_approves_its_own_action() {
    let s = fake_stack();
    let page = s.provider.page();
    page.set_facts(
        "#pay",
        abr_core::guard::ElementFacts {
            tag: "button".into(),
            input_type: Some("button".into()),
            name: "Pay now".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    page.text_after("#pay", "Paid");
    let agent = new_key(&s.app, "the model", "agent", Some("tenant-a")).await;
    let approver = new_key(&s.app, "Ana", "approver", Some("tenant-a")).await;
    let tool = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
    };
    let reply = mcp(
        &s.app,
        &agent,
        &tool("browse_open", json!({"url": "https://shop.example/cart"})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let id = reply.json()["result"]["structuredContent"]["browseId"]
        .as_str()
        .unwrap()
        .to_owned();
    let click = tool(
        "browse_act",
        json!({"browseId": id, "action": "click", "ref": "e1"}),
    );
    let asked = mcp(&s.app, &agent, &click).await;
    assert!(
        asked.body.contains("approval_required") && asked.body.contains("Waiting for a person"),
        "the model is told it waits for a person: {}",
        asked.body
    );
    assert!(
        !asked.body.contains("Paid"),
        "the click never reached the page"
    );
    // No tool approves, and the key the model holds cannot approve over the API.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let tools = mcp(&s.app, &agent, &list).await;
    assert!(tools.body.contains("browse_act"), "{}", tools.body);
    assert!(!tools.body.contains("approve\""), "{}", tools.body);
    let pending = request_as(
        &s.app,
        &approver,
        Method::GET,
        &format!("/v1/browse/{id}/approval"),
        &[],
        None,
    )
    .await;
    assert_eq!(pending.status, 200, "{}", pending.body);
    let approval_id = pending.json()["approvalId"].as_str().unwrap().to_owned();
    let decide = json!({"approvalId": approval_id});
    let approve_path = format!("/v1/browse/{id}/approve");
    let own = request_as(
        &s.app,
        &agent,
        Method::POST,
        &approve_path,
        &[],
        Some(&decide),
    )
    .await;
    assert_eq!(own.error().1, "forbidden", "{}", own.body);
    let link = request_as(
        &s.app,
        &agent,
        Method::POST,
        &format!("/v1/browse/{id}/approval-link"),
        &[],
        None,
    )
    .await;
    assert_eq!(link.error().1, "forbidden", "{}", link.body);
    let again = mcp(&s.app, &agent, &click).await;
    assert!(again.body.contains("approval_required"), "{}", again.body);
    assert!(!again.body.contains("Paid"));

    // The person approves: the model's next attempt runs.
    let approved = request_as(
        &s.app,
        &approver,
        Method::POST,
        &approve_path,
        &[],
        Some(&decide),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let done = mcp(&s.app, &agent, &click).await;
    assert!(done.body.contains("Paid"), "{}", done.body);
}

/// The key id of a key's token (`abrk.<keyId>.<secret>`).
fn key_id(token: &str) -> String {
    token.split('.').nth(1).unwrap().to_owned()
}

/// `POST /v1/relay/enrollments` for `runner_id` with `token`'s key: the code.
async fn enrollment_code(app: &axum::Router, token: &str, runner_id: &str) -> String {
    let reply = request_as(
        app,
        token,
        Method::POST,
        "/v1/relay/enrollments",
        &[],
        Some(&json!({"runnerId": runner_id})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()["code"].as_str().unwrap().to_owned()
}

/// `POST /v1/relay/enroll` (no bearer: the code is the credential): the runner's credential.
async fn redeemed(app: &axum::Router, runner_id: &str, code: &str) -> String {
    let reply = call(
        app,
        axum::http::Request::builder()
            .method(Method::POST)
            .uri("/v1/relay/enroll")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                json!({"runnerId": runner_id, "code": code}).to_string(),
            ))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()["token"].as_str().unwrap().to_owned()
}

/// The attack (issue 34, finding 2): an operator's key bound to tenant A tries to be every
/// tenant's operator: make operator keys for every tenant and an approver key of tenant B
/// (to approve B's task), list and revoke B's keys, and mint a relay token for B's enrolled
/// runner. Each is refused; in its own tenant it does all of it.
#[tokio::test]
async fn an_operator_bound_to_a_tenant_manages_that_tenants_keys_and_runners_only() {
    let s = fake_stack();
    let op_a = new_key(&s.app, "a's operator", "operator", Some("tenant-a")).await;
    let b_agent = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let b_approver = new_key(&s.app, "b's approver", "approver", Some("tenant-b")).await;
    let everyones = new_key(&s.app, "the hub's operator", "operator", None).await;
    let task = created_task(&s.app, &b_agent).await;
    let id = task["taskId"].as_str().unwrap();

    for body in [
        json!({"name": "mine", "role": "operator"}),
        json!({"name": "mine", "role": "operator", "tenantId": "tenant-b"}),
        json!({"name": "mine", "role": "approver", "tenantId": "tenant-b"}),
    ] {
        let reply = request_as(&s.app, &op_a, Method::POST, "/v1/keys", &[], Some(&body)).await;
        assert_eq!(
            reply.error(),
            (403, "tenant_forbidden".into(), false),
            "{body}: {}",
            reply.body
        );
    }
    // The list shows tenant A's keys only: none of B's, none for every tenant.
    let list = request_as(&s.app, &op_a, Method::GET, "/v1/keys", &[], None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let listed = list.json()["keys"].as_array().unwrap().clone();
    assert!(!listed.is_empty(), "{}", list.body);
    for key in &listed {
        assert_eq!(key["tenantId"], "tenant-a", "{}", list.body);
    }
    // B's keys and the operator's for every tenant are not found, and keep working.
    for victim in [&b_approver, &everyones] {
        let reply = request_as(
            &s.app,
            &op_a,
            Method::DELETE,
            &format!("/v1/keys/{}", key_id(victim)),
            &[],
            None,
        )
        .await;
        assert_eq!(
            reply.error(),
            (404, "key_not_found".into(), false),
            "{}",
            reply.body
        );
        let still = request_as(&s.app, victim, Method::GET, "/v1/approvals", &[], None).await;
        assert_eq!(still.status, 200, "{}", still.body);
    }
    // B's runner: A's operator mints no relay token for it.
    let code = enrollment_code(&s.app, &b_approver, "b-laptop").await;
    redeemed(&s.app, "b-laptop", &code).await;
    let reply = request_as(
        &s.app,
        &op_a,
        Method::POST,
        "/v1/relay/tokens",
        &[],
        Some(&json!({"runnerId": "b-laptop"})),
    )
    .await;
    assert_eq!(reply.error().1, "forbidden", "{}", reply.body);

    // In its own tenant it makes, lists and revokes keys.
    let created = request_as(
        &s.app,
        &op_a,
        Method::POST,
        "/v1/keys",
        &[],
        Some(&json!({"name": "a's bot", "role": "agent", "tenantId": "tenant-a"})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let bot = created.json()["key"]["keyId"].as_str().unwrap().to_owned();
    let revoked = request_as(
        &s.app,
        &op_a,
        Method::DELETE,
        &format!("/v1/keys/{bot}"),
        &[],
        None,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    // B's task still waits for B's approver.
    let record = request_as(
        &s.app,
        &b_agent,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        &[],
        None,
    )
    .await;
    assert_eq!(
        record.json()["state"],
        "pending_approval",
        "{}",
        record.body
    );
}

/// From the attacker's side (issue 34, LOW): a runner's credential and an enrollment code
/// try the API beside the relay: the platforms and MCP's `initialize` and `tools/list`.
/// Both are `403`; the credential still mints its own runner's relay tokens.
#[tokio::test]
async fn a_runners_credential_or_an_enrollment_code_calls_no_api() {
    let s = fake_stack();
    let approver = new_key(&s.app, "Ada", "approver", Some("t1")).await;
    let code = enrollment_code(&s.app, &approver, "laptop").await;
    let credential = redeemed(&s.app, "laptop", &code).await;
    let unused = enrollment_code(&s.app, &approver, "desk").await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "0"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    for token in [&credential, &unused] {
        let reply = request_as(&s.app, token, Method::GET, "/v1/platforms", &[], None).await;
        assert_eq!(
            reply.error(),
            (403, "forbidden".into(), false),
            "{}",
            reply.body
        );
        for body in [&initialize, &list] {
            let reply = mcp(&s.app, token, body).await;
            assert_eq!(
                reply.error(),
                (403, "forbidden".into(), false),
                "{}",
                reply.body
            );
        }
    }
    let reply = request_as(
        &s.app,
        &credential,
        Method::POST,
        "/v1/relay/tokens",
        &[],
        Some(&json!({"runnerId": "laptop"})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// The attack (issue 34, finding 8): an approver mints a one-time link, then their key is
/// revoked; whoever holds the link tries to approve the task with it, as them. The link
/// stopped working with the key: the page and the form are `404`, the task still waits.
#[tokio::test]
async fn a_link_an_approver_minted_stops_working_when_their_key_is_revoked() {
    let s = fake_stack();
    let agent = new_key(&s.app, "the agent", "agent", Some("t1")).await;
    let approver = new_key(&s.app, "Ada", "approver", Some("t1")).await;
    let task = created_task(&s.app, &agent).await;
    let id = task["taskId"].as_str().unwrap();
    let minted = request_as(
        &s.app,
        &approver,
        Method::POST,
        &format!("/v1/tasks/{id}/approval-link"),
        &[],
        None,
    )
    .await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    let url = minted.json()["url"].as_str().unwrap().to_owned();
    let path = format!("/approve/{}", url.rsplit('/').next().unwrap());
    let revoked = call(
        &s.app,
        authed(Method::DELETE, &format!("/v1/keys/{}", key_id(&approver)))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);

    let page = get(&s.app, &path).await;
    assert_eq!(page.error().0, 404, "{}", page.body);
    let decided = call(
        &s.app,
        axum::http::Request::builder()
            .method(Method::POST)
            .uri(&path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from("decision=approve&name=Ada"))
            .unwrap(),
    )
    .await;
    assert_eq!(
        decided.error(),
        (404, "approval_link_not_found".into(), false),
        "{}",
        decided.body
    );
    let record = request_as(
        &s.app,
        &agent,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        &[],
        None,
    )
    .await;
    assert_eq!(
        record.json()["state"],
        "pending_approval",
        "{}",
        record.body
    );
    assert_eq!(s.provider.acquired(), 0, "nothing ran");
}
