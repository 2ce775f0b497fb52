//! The approval page, driven in a real headless Chromium: an approver's key mints a
//! one-time link, a person without a key reads the task in words and approves it; the task
//! runs once; a second click, a reload or a replayed form does nothing. The same for a
//! browse session's committing action (its words escaped; approved, the agent's next
//! attempt runs once). The runner runs on the core's fakes on loopback; the person's
//! browser is Debian's Chromium.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::fake::*;
use crate::common::person_opens;

const SUBMIT: &str = "role=button[name=Submit]";

/// A plan whose step description tries to inject markup into the page.
fn plan() -> Value {
    json!({"plan": {
        "targetUrl": "https://fake.example/admin",
        "steps": [{"type": "click", "selector": {"role": "button", "name": "Submit"},
            "description": "Submit <img src=x id=injected onerror=\"document.title='owned'\">"}],
        "verification": {"method": "dom_check", "text": "Saved"},
        "risk": "medium"
    }})
}

async fn rest(
    base: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn wait_ended(base: &str, id: &str) -> Value {
    for _ in 0..200 {
        let (_, record) = rest(
            base,
            FAKE_TOKEN,
            reqwest::Method::GET,
            &format!("/v1/tasks/{id}"),
            None,
        )
        .await;
        if matches!(
            record["state"].as_str(),
            Some("succeeded" | "failed" | "uncertain")
        ) {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task never ended");
}

#[tokio::test]
async fn a_person_approves_through_the_link_once_and_the_task_runs_once() {
    let (server, provider, _strategy) =
        serve_fake(abr_core::testing::FakeProvider::new(), |_| {}).await;
    provider.page().text_after(SUBMIT, "Saved");
    let base = server.base_url();
    let (status, task) = rest(
        &base,
        FAKE_TOKEN,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(plan()),
    )
    .await;
    assert_eq!(status, 201, "{task}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    let link_path = format!("/v1/tasks/{id}/approval-link");

    // The proposer's key and an agent's cannot mint the link (it is the approval itself).
    let (status, body) = rest(&base, FAKE_TOKEN, reqwest::Method::POST, &link_path, None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("self_approval"))
    );
    let keys = |name: &'static str, role: &'static str| {
        let base = base.clone();
        async move {
            let (status, created) = rest(
                &base,
                FAKE_TOKEN,
                reqwest::Method::POST,
                "/v1/keys",
                Some(json!({"name": name, "role": role, "tenantId": "default"})),
            )
            .await;
            assert_eq!(status, 201, "{created}");
            created["token"].as_str().unwrap().to_owned()
        }
    };
    let agent = keys("bot", "agent").await;
    let (status, _) = rest(&base, &agent, reqwest::Method::POST, &link_path, None).await;
    assert_eq!(status, 403);
    let approver = keys("Ada's approver key", "approver").await;
    let (status, link) = rest(&base, &approver, reqwest::Method::POST, &link_path, None).await;
    assert_eq!(status, 201, "{link}");
    let url = link["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{base}/approve/")), "{url}");

    // A person opens it in a real browser that may reach the runner and nothing else.
    let (browser, lease) = person_opens(&base, &url).await;
    let page = lease.context().page();
    let text = |selector: &'static str| async move {
        page.locator(selector)
            .text_content()
            .await
            .unwrap()
            .unwrap_or_default()
    };
    assert!(
        text("#steps").await.contains("Submit <img"),
        "the step, in words, as text"
    );
    assert_eq!(
        page.locator("#steps img").count().await.unwrap(),
        0,
        "no markup got in"
    );
    assert_eq!(text("#target").await, "https://fake.example/admin");
    assert_eq!(text("#risk").await, "medium");
    assert_eq!(
        page.title().await.unwrap(),
        "Approve · ABR",
        "no injected script ran"
    );
    assert_eq!(
        provider.acquired(),
        0,
        "nothing ran before the person approved"
    );
    page.locator("input[name=name]")
        .fill("Ada Lovelace", None)
        .await
        .unwrap();
    page.locator("#approve").click(None).await.unwrap();
    if page.locator("#done").wait_for(None).await.is_err() {
        panic!(
            "no answer page: {}",
            page.content().await.unwrap_or_default()
        );
    }
    assert!(text("#done").await.starts_with("Approved"));

    let record = wait_ended(&base, &id).await;
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["approval"]["approvedBy"], "Ada's approver key");
    assert_eq!(record["approval"]["statedBy"], "Ada Lovelace");
    assert_eq!(provider.acquired(), 1);

    // The link is used up: the page is gone, a replayed form does nothing.
    page.goto(&url, None).await.unwrap();
    assert!(
        page.content()
            .await
            .unwrap()
            .contains("approval_link_not_found"),
        "the page of a used link"
    );
    let replay = reqwest::Client::new()
        .post(&url)
        .form(&[("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status().as_u16(), 404);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(provider.acquired(), 1, "the task ran once");
    lease.release().await.unwrap();
    browser.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_form_from_another_site_is_refused_and_rejecting_runs_nothing() {
    let (server, provider, _strategy) =
        serve_fake(abr_core::testing::FakeProvider::new(), |_| {}).await;
    let base = server.base_url();
    let (_, task) = rest(
        &base,
        FAKE_TOKEN,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(plan()),
    )
    .await;
    let id = task["taskId"].as_str().unwrap().to_owned();
    let (_, created) = rest(
        &base,
        FAKE_TOKEN,
        reqwest::Method::POST,
        "/v1/keys",
        Some(json!({"name": "ada", "role": "approver", "tenantId": "default"})),
    )
    .await;
    let approver = created["token"].as_str().unwrap().to_owned();
    let (_, link) = rest(
        &base,
        &approver,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/approval-link"),
        None,
    )
    .await;
    let url = link["url"].as_str().unwrap().to_owned();
    let client = reqwest::Client::new();
    let forged = client
        .post(&url)
        .header("origin", "https://attacker.example")
        .form(&[("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 403);
    // A browser on another site's page says so, whatever its Origin.
    let cross_site = client
        .post(&url)
        .header("origin", "null")
        .header("sec-fetch-site", "cross-site")
        .form(&[("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status().as_u16(), 403);
    let rejected = client
        .post(&url)
        .header("origin", base.as_str())
        .form(&[("decision", "reject"), ("name", "Ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(rejected.status().as_u16(), 200);
    let (_, record) = rest(
        &base,
        FAKE_TOKEN,
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    assert_eq!(record["state"], "rejected", "{record}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(provider.acquired(), 0, "nothing ran");
    server.shutdown().await;
}

#[tokio::test]
async fn a_person_approves_a_browse_sessions_committing_action_through_the_link_once() {
    let (server, provider, _strategy) =
        serve_fake(abr_core::testing::FakeProvider::new(), |_| {}).await;
    let page_of_the_run = provider.page();
    page_of_the_run.set_facts(
        "#pay",
        abr_core::guard::ElementFacts {
            tag: "button".into(),
            input_type: Some("button".into()),
            // The page tries to inject markup into the approval page through its label.
            name: "Pay <img src=x id=injected onerror=\"document.title='owned'\">".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    page_of_the_run.text_after("#pay", "Paid");
    let base = server.base_url();
    let key = |name: &'static str, role: &'static str| {
        let base = base.clone();
        async move {
            let (status, created) = rest(
                &base,
                FAKE_TOKEN,
                reqwest::Method::POST,
                "/v1/keys",
                Some(json!({"name": name, "role": role, "tenantId": "default"})),
            )
            .await;
            assert_eq!(status, 201, "{created}");
            created["token"].as_str().unwrap().to_owned()
        }
    };
    let agent = key("bot", "agent").await;
    let approver = key("Ada's approver key", "approver").await;
    let (status, opened) = rest(
        &base,
        &agent,
        reqwest::Method::POST,
        "/v1/browse",
        Some(json!({"url": "https://fake.example/cart"})),
    )
    .await;
    assert_eq!(status, 201, "{opened}");
    let id = opened["browseId"].as_str().unwrap().to_owned();
    let act = format!("/v1/browse/{id}/act");
    let click = json!({"action": "click", "ref": "e1"});
    let (_, asked) = rest(
        &base,
        &agent,
        reqwest::Method::POST,
        &act,
        Some(click.clone()),
    )
    .await;
    assert_eq!(asked["pause"]["reason"], "approval_required", "{asked}");
    let link_path = format!("/v1/browse/{id}/approval-link");
    let (status, _) = rest(&base, &agent, reqwest::Method::POST, &link_path, None).await;
    assert_eq!(status, 403, "the agent cannot mint its own approval");
    let (status, link) = rest(&base, &approver, reqwest::Method::POST, &link_path, None).await;
    assert_eq!(status, 201, "{link}");
    let url = link["url"].as_str().unwrap().to_owned();

    let (browser, lease) = person_opens(&base, &url).await;
    let page = lease.context().page();
    let text = |selector: &'static str| async move {
        page.locator(selector)
            .text_content()
            .await
            .unwrap()
            .unwrap_or_default()
    };
    assert!(
        text("#action")
            .await
            .starts_with("click e1 (button \"Pay <img"),
        "the action in words, as text: {}",
        text("#action").await
    );
    assert_eq!(page.locator("#injected").count().await.unwrap(), 0);
    assert_eq!(text("#page").await, "https://fake.example/cart");
    assert_eq!(page.title().await.unwrap(), "Approve · ABR");
    page.locator("input[name=name]")
        .fill("Ada Lovelace", None)
        .await
        .unwrap();
    page.locator("#approve").click(None).await.unwrap();
    if page.locator("#done").wait_for(None).await.is_err() {
        panic!(
            "no answer page: {}",
            page.content().await.unwrap_or_default()
        );
    }
    assert!(text("#done").await.starts_with("Approved"));

    // The agent's next attempt runs, once.
    let (_, done) = rest(
        &base,
        &agent,
        reqwest::Method::POST,
        &act,
        Some(click.clone()),
    )
    .await;
    assert_eq!(done["outcome"], "done", "{done}");
    assert_eq!(done["snapshot"]["text"], "Paid");
    let (_, record) = rest(
        &base,
        &agent,
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    assert_eq!(record["approval"]["approvedBy"], "Ada's approver key");
    assert_eq!(record["approval"]["statedBy"], "Ada Lovelace");
    // The link is used up.
    let replay = reqwest::Client::new()
        .post(&url)
        .form(&[("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status().as_u16(), 404);
    lease.release().await.unwrap();
    browser.shutdown().await;
    let (status, _) = rest(
        &base,
        &agent,
        reqwest::Method::DELETE,
        &format!("/v1/browse/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// The attack on the approval page (issue 34, finding 6), read as the person without a key
/// reads it (in process, no browser needed: the page is HTML without script): a task that
/// types an attacker's address into an admin form, with a password beside it and markup in
/// its reasoning and values. The page shows the value that will be typed, never the
/// password (its length only), whose session it runs with, the plan's reasoning and the
/// hash the decision binds, every text escaped.
#[tokio::test]
async fn the_page_shows_the_values_the_session_and_the_reasoning_never_a_secret() {
    let s = fake_stack();
    let agent = new_key(&s.app, "planner", "agent", Some("acme")).await;
    let approver = new_key(&s.app, "Ada", "approver", Some("acme")).await;
    let session = json!({
        "session": {"cookies": [{"name": "sid", "value": "cookie-canary-4d1e", "domain": ".fake.example", "path": "/"}], "origins": []},
        "platform": FAKE_PLATFORM
    });
    let reply = request_as(
        &s.app,
        &agent,
        axum::http::Method::PUT,
        "/v1/sessions/ada-admin",
        &[],
        Some(&session),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let task = json!({
        "plan": {
            "targetUrl": "https://fake.example/admin",
            "steps": [
                {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the new admin's email"},
                {"type": "type", "selector": "#pw", "value": "{{pin}}", "description": "Confirm with the PIN"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Add the admin"}
            ],
            "verification": {"method": "dom_check", "text": "Saved"},
            "risk": "high",
            "reasoning": "Onboarding <b id=\"injected\">ticket 42</b>"
        },
        "inputs": {"email": "mallory@evil.example<script>", "pin": "secret-pin-7731"},
        "secretInputs": ["pin"],
        "sessionId": "ada-admin"
    });
    let created = request_as(
        &s.app,
        &agent,
        axum::http::Method::POST,
        "/v1/tasks",
        &[],
        Some(&task),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let record = created.json();
    let id = record["taskId"].as_str().unwrap();
    let hash = record["planHash"].as_str().unwrap();
    let link = request_as(
        &s.app,
        &approver,
        axum::http::Method::POST,
        &format!("/v1/tasks/{id}/approval-link"),
        &[],
        None,
    )
    .await;
    assert_eq!(link.status, 201, "{}", link.body);
    let url = link.json()["url"].as_str().unwrap().to_owned();
    let path = url.trim_start_matches(FAKE_ORIGIN);
    let page = get(&s.app, path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let html = &page.body;
    // The value that will be typed, escaped; the secret never, its length only.
    assert!(
        html.contains("<code>mallory@evil.example&lt;script&gt;</code>"),
        "{html}"
    );
    assert!(
        !html.contains("secret-pin-7731"),
        "the secret is on the page"
    );
    assert!(
        html.contains("a secret of 15 characters, not shown"),
        "{html}"
    );
    assert!(!html.contains("cookie-canary"), "a cookie is on the page");
    // Whose session, under which platform, why, and the hash the decision binds.
    assert!(
        html.contains("the stored session <strong>ada-admin</strong>"),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "bound to the platform <strong>{FAKE_PLATFORM}</strong>"
        )),
        "{html}"
    );
    assert!(
        html.contains("Onboarding &lt;b id=&quot;injected&quot;&gt;ticket 42&lt;/b&gt;"),
        "{html}"
    );
    assert!(
        !html.contains("id=\"injected\""),
        "markup from the plan ran"
    );
    assert!(
        html.contains(&format!("<code id=\"hash\">{hash}</code>")),
        "{html}"
    );
}
