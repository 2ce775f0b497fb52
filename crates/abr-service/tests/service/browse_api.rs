//! The browse API over HTTP, in-process (`oneshot`) on the core's fakes: status codes and
//! envelopes, tenant isolation, the runner's cap on open sessions, and the browsers given
//! back when a session closes or the runner shuts down.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_core::guard::ElementFacts;
use abr_core::testing::FakeProvider;
use axum::body::Body;
use axum::http::{Method, StatusCode, header};
use common::fake::*;
use serde_json::{Value, json};

async fn send(
    app: &axum::Router,
    method: Method,
    path: &str,
    tenant: &str,
    body: Option<Value>,
) -> Reply {
    let builder = authed(method, path).header("x-tenant-id", tenant);
    let request = match body {
        Some(b) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => builder.body(Body::empty()),
    };
    call(app, request.unwrap()).await
}

fn fake_with_a_page() -> FakeStack {
    let provider = FakeProvider::new();
    provider.page().set_facts(
        "#go",
        ElementFacts {
            tag: "a".into(),
            name: "Go".into(),
            ..ElementFacts::default()
        },
    );
    fake_stack_with(provider, |c| c.limits.max_open_browses = 2)
}

#[tokio::test]
async fn browse_over_http_answers_typed_statuses_and_keeps_tenants_apart() {
    let stack = fake_with_a_page();
    let app = &stack.app;
    let opened = send(
        app,
        Method::POST,
        "/v1/browse",
        "acme",
        Some(json!({"url": "https://fake.example/"})),
    )
    .await;
    assert_eq!(opened.status, StatusCode::CREATED, "{}", opened.body);
    let body = opened.json();
    assert_eq!(body["outcome"], "done");
    assert_eq!(body["snapshot"]["elements"][0]["ref"], "e1");
    assert_eq!(body["snapshot"]["elements"][0]["name"], "Go");
    let id = body["browseId"].as_str().unwrap().to_owned();

    let snapshot = send(
        app,
        Method::GET,
        &format!("/v1/browse/{id}/snapshot"),
        "acme",
        None,
    )
    .await;
    assert_eq!(snapshot.status, StatusCode::OK);
    let acted = send(
        app,
        Method::POST,
        &format!("/v1/browse/{id}/act"),
        "acme",
        Some(json!({"action": "click", "ref": "e1"})),
    )
    .await;
    assert_eq!(acted.status, StatusCode::OK, "{}", acted.body);
    assert_eq!(acted.json()["outcome"], "done");

    // Bad input: typed envelopes, never a panic.
    for (body, status, code) in [
        (
            json!({"action": "click", "ref": "e77"}),
            409,
            "ref_not_found",
        ),
        (
            json!({"action": "click", "ref": "#go"}),
            422,
            "invalid_request",
        ),
        (json!({"action": "fly"}), 422, "invalid_request"),
        (
            json!({"action": "type", "ref": "e1"}),
            422,
            "invalid_request",
        ),
    ] {
        let reply = send(
            app,
            Method::POST,
            &format!("/v1/browse/{id}/act"),
            "acme",
            Some(body.clone()),
        )
        .await;
        let (got, got_code, _) = reply.error();
        assert_eq!((got, got_code.as_str()), (status, code), "{body}");
    }
    for body in [
        json!({"url": "ftp://fake.example/"}),
        json!({"url": "https://fake.example/", "idleSeconds": 0}),
        json!({"url": "https://fake.example/", "surprise": true}),
        json!({"url": "https://fake.example/", "session": {"cookies": [], "origins": []}}),
    ] {
        let reply = send(app, Method::POST, "/v1/browse", "acme", Some(body.clone())).await;
        assert_eq!(reply.error().0, 422, "{body}: {}", reply.body);
    }

    // Another tenant: not found, on every verb.
    for (method, path, body) in [
        (Method::GET, format!("/v1/browse/{id}/snapshot"), None),
        (
            Method::POST,
            format!("/v1/browse/{id}/act"),
            Some(json!({"action": "back"})),
        ),
        (Method::DELETE, format!("/v1/browse/{id}"), None),
    ] {
        let reply = send(app, method, &path, "mallory", body).await;
        assert_eq!(reply.error().1, "browse_not_found", "{path}");
    }
    // No token: 401.
    let anonymous = call(
        app,
        axum::http::Request::builder()
            .method(Method::GET)
            .uri(format!("/v1/browse/{id}/snapshot"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    // The record is the tenant's task record.
    let record = send(app, Method::GET, &format!("/v1/tasks/{id}"), "acme", None).await;
    assert_eq!(record.json()["browse"], true);

    let closed = send(
        app,
        Method::DELETE,
        &format!("/v1/browse/{id}"),
        "acme",
        None,
    )
    .await;
    assert_eq!(closed.status, StatusCode::OK);
    assert_eq!(closed.json()["actions"], 2);
    assert_eq!(stack.provider.open_leases(), 0);
    let again = send(
        app,
        Method::DELETE,
        &format!("/v1/browse/{id}"),
        "acme",
        None,
    )
    .await;
    assert_eq!(again.error().1, "browse_not_found");
}

#[tokio::test]
async fn the_runner_caps_open_sessions_and_closes_them_at_shutdown() {
    let stack = fake_with_a_page();
    let app = &stack.app;
    let open = || {
        send(
            app,
            Method::POST,
            "/v1/browse",
            "acme",
            Some(json!({"url": "https://fake.example/"})),
        )
    };
    assert_eq!(open().await.status, StatusCode::CREATED);
    assert_eq!(open().await.status, StatusCode::CREATED);
    let third = open().await;
    let (status, code, retryable) = third.error();
    assert_eq!(
        (status, code.as_str()),
        (429, "provider_busy"),
        "{}",
        third.body
    );
    assert!(retryable);
    assert_eq!(stack.provider.open_leases(), 2);
    stack.runner.shutdown().await;
    assert_eq!(
        stack.provider.open_leases(),
        0,
        "shutdown closes open sessions"
    );
}

/// The brain asks for a value over HTTP; the agent's own key cannot hand it over (a person
/// does, with an approver's key); the takeover is listed while it waits, and the value never
/// comes back in an answer.
#[tokio::test]
async fn an_input_request_waits_for_a_persons_value_and_never_echoes_it() {
    const VALUE: &str = "canary-http-supplied-93c1";
    let stack = fake_with_a_page();
    let app = &stack.app;
    let agent = new_key(app, "brain", "agent", Some("acme")).await;
    let person = new_key(app, "ada", "approver", Some("acme")).await;
    let opened = request_as(
        app,
        &agent,
        Method::POST,
        "/v1/browse",
        &[],
        Some(&json!({"url": "https://fake.example/"})),
    )
    .await;
    assert_eq!(opened.status, StatusCode::CREATED, "{}", opened.body);
    let id = opened.json()["browseId"].as_str().unwrap().to_owned();
    let asked = request_as(
        app,
        &agent,
        Method::POST,
        &format!("/v1/browse/{id}/input-request"),
        &[],
        Some(&json!({"ref": "e1", "prompt": "Your one-time code"})),
    )
    .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    assert_eq!(asked.json()["reason"], "needs_input");
    let takeover = asked.json()["takeoverId"].as_str().unwrap().to_owned();
    // Listed while it waits.
    let listed = request_as(app, &person, Method::GET, "/v1/takeovers", &[], None).await;
    assert_eq!(
        listed.json()[0]["takeoverId"],
        takeover.as_str(),
        "{}",
        listed.body
    );
    assert_eq!(listed.json()[0]["reason"], "needs_input");
    let record = request_as(
        app,
        &person,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        &[],
        None,
    )
    .await;
    assert_eq!(record.json()["pause"]["prompt"], "Your one-time code");
    assert_eq!(record.json()["pause"]["ref"], "e1");
    // The brain's key cannot answer its own question.
    let supply = |token: String| {
        let app = app.clone();
        let id = id.clone();
        async move {
            request_as(
                &app,
                &token,
                Method::POST,
                &format!("/v1/tasks/{id}/takeover/input"),
                &[],
                Some(&json!({"value": VALUE})),
            )
            .await
        }
    };
    let refused = supply(agent.clone()).await;
    assert_eq!(refused.error().1, "forbidden", "{}", refused.body);
    let given = supply(person.clone()).await;
    assert_eq!(given.status, StatusCode::OK, "{}", given.body);
    assert_eq!(given.json()["takeoverId"], takeover.as_str());
    assert_eq!(given.json()["state"], "resumed");
    assert!(!given.body.contains(VALUE));
    // Nothing waits now; a second value is refused.
    let again = supply(person.clone()).await;
    assert_eq!(again.error().1, "no_takeover", "{}", again.body);
    let record = request_as(
        app,
        &person,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        &[],
        None,
    )
    .await;
    assert!(!record.body.contains(VALUE), "{}", record.body);
    assert_eq!(record.json()["state"], "running");
    // Bad bodies are typed errors.
    let bad = request_as(
        app,
        &agent,
        Method::POST,
        &format!("/v1/browse/{id}/input-request"),
        &[],
        Some(&json!({"ref": "e1", "prompt": ""})),
    )
    .await;
    assert_eq!(bad.error().1, "invalid_request", "{}", bad.body);
    let unknown = request_as(
        app,
        &agent,
        Method::POST,
        &format!("/v1/browse/{id}/input-request"),
        &[],
        Some(&json!({"ref": "e1", "prompt": "x", "value": "y"})),
    )
    .await;
    assert_eq!(unknown.error().1, "invalid_request", "{}", unknown.body);
}

/// A page with `n` links (`#l0`, `#l1`, ...) for the fake probe to list.
fn fake_with_links(n: usize) -> FakeStack {
    let provider = FakeProvider::new();
    for i in 0..n {
        provider.page().set_facts(
            &format!("#l{i:02}"),
            ElementFacts {
                tag: "a".into(),
                name: format!("Link {i:02}"),
                ..ElementFacts::default()
            },
        );
    }
    provider.page().set_text("Some prose.");
    fake_stack_with(provider, |_| {})
}

#[tokio::test]
async fn a_snapshot_is_paged_by_query_answered_as_text_on_request_and_a_bad_query_is_typed() {
    let stack = fake_with_links(5);
    let app = &stack.app;
    let opened = send(
        app,
        Method::POST,
        "/v1/browse",
        "acme",
        Some(json!({"url": "https://fake.example/"})),
    )
    .await;
    let id = opened.json()["browseId"].as_str().unwrap().to_owned();
    let page = send(
        app,
        Method::GET,
        &format!("/v1/browse/{id}/snapshot?from=3&limit=2"),
        "acme",
        None,
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = page.json();
    let names: Vec<&str> = body["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Link 02", "Link 03"]);
    assert_eq!(
        body["page"],
        json!({"from": 3, "count": 2, "total": 5, "next": 5, "textTotal": 11})
    );
    // The text form, for a model that reads the API directly.
    let text = call(
        app,
        authed(Method::GET, &format!("/v1/browse/{id}/snapshot?limit=2"))
            .header("x-tenant-id", "acme")
            .header(header::ACCEPT, "text/plain")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(text.status, StatusCode::OK);
    assert!(
        text.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert!(
        text.body.contains(
            "elements 1-2 of 5; more with from=3\ne1 a Link 00\ne2 a Link 01\ntext:\nSome prose.\n"
        ),
        "{}",
        text.body
    );
    // Out of bounds, unknown or not a number: a typed 422, nothing read.
    for query in [
        "from=0",
        "limit=0",
        "limit=2001",
        "maxText=50001",
        "form=2",
        "from=x",
    ] {
        let reply = send(
            app,
            Method::GET,
            &format!("/v1/browse/{id}/snapshot?{query}"),
            "acme",
            None,
        )
        .await;
        let (status, code, _) = reply.error();
        assert_eq!((status, code.as_str()), (422, "invalid_request"), "{query}");
    }
}
