//! The guard rails end to end on real Chromium, through the HTTP API, each checked against
//! the demo site's ground truth:
//!
//! - a read-only run clicks every control of the guard corpus (`/guard`) and is refused on
//!   exactly the committing ones; the site records no write;
//! - every pause reason on its demo page: the run pauses with that reason, a second
//!   headless browser takes over through the live view and clears it, the run resumes and
//!   finishes; an expired takeover ends the run without acting;
//! - site consent: a link to a site nobody decided on pauses the run until the tenant
//!   allows it; the decision stands for the next run;
//! - replay frames of a run: taken, served to the tenant only, none with screenshots off.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abr_demo::DemoSite;
use abr_demo::site::GUARD_CORPUS;
use abr_protocol::{PauseReason, TakeoverState, TaskRecord, TaskState};
use common::*;
use serde_json::{Value, json};

use crate::common;

const TENANT: &str = "acme";
const SESSION_KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";

/// A runner whose plans need no approval (the tests are about the rails), with frames kept
/// (a session key), and `localhost:<site port>` allowed besides `127.0.0.1:<port>` (a second
/// site for consent).
async fn guard_stack() -> Stack {
    stack_with(
        |c| {
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.pacing = None;
            let port = c.demo_site_url.as_ref().and_then(url::Url::port).unwrap();
            c.egress = c.egress.clone().allow_private(abr_core::AllowedPrivate {
                host: "localhost".into(),
                port,
            });
        },
        |b| b,
    )
    .await
}

/// An authenticated call as the tenant.
async fn api(stack: &Stack, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let (status, value) = api_status(stack, method, path, body).await;
    assert!(status.is_success(), "{path}: {status} {value}");
    value
}

async fn api_status(
    stack: &Stack,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (reqwest::StatusCode, Value) {
    let mut request = raw_http()
        .request(method, format!("{}{path}", stack.server.base_url()))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", TENANT);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let bytes = response.bytes().await.unwrap();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

async fn create(stack: &Stack, body: Value) -> String {
    let record = api(stack, reqwest::Method::POST, "/v1/tasks", Some(body)).await;
    record["taskId"].as_str().unwrap().to_owned()
}

async fn record(stack: &Stack, id: &str) -> TaskRecord {
    let value = api(
        stack,
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    serde_json::from_value(value).unwrap()
}

async fn until(stack: &Stack, id: &str, done: impl Fn(&TaskRecord) -> bool) -> TaskRecord {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let r = record(stack, id).await;
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "never got there: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn ended(stack: &Stack, id: &str) -> TaskRecord {
    until(stack, id, |r| r.state.is_final()).await
}

async fn paused(stack: &Stack, id: &str) -> TaskRecord {
    until(stack, id, |r| {
        r.state == TaskState::Paused || r.state.is_final()
    })
    .await
}

fn page(site: &DemoSite, path: &str) -> String {
    format!("{}{path}", site.base_url())
}

// ---- the commit guard -------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_run_is_refused_on_exactly_the_committing_controls_of_the_corpus() {
    let stack = guard_stack().await;
    let mut steps = Vec::new();
    let mut expected_blocked = BTreeSet::new();
    for control in GUARD_CORPUS {
        let selector = format!("#{}", control.id);
        match control.enter_commits {
            Some(enter_commits) => {
                if enter_commits {
                    expected_blocked.insert(steps.len());
                }
                steps.push(
                    json!({"type": "type", "selector": selector, "value": "shoes", "submit": true,
                    "timeoutMs": 3000, "description": format!("Search in {}", control.id)}),
                );
            }
            None => {
                if control.read_only_commits {
                    expected_blocked.insert(steps.len());
                }
                steps.push(
                    json!({"type": "click", "selector": selector, "timeoutMs": 3000,
                    "description": format!("Click {}", control.id)}),
                );
            }
        }
    }
    let id = create(
        &stack,
        json!({
            "plan": {
                "targetUrl": page(&stack.site, "/guard"),
                "readOnly": true,
                "steps": steps,
                "verification": {"method": "dom_check", "selector": "#tab-overview"}
            },
            "handoff": {"waitSeconds": 60}
        }),
    )
    .await;
    // The corpus has card fields and a file input: a read-only run stops there first, and
    // the person lets it read the page.
    let r = paused(&stack, &id).await;
    assert_eq!(r.pause.unwrap().reason, PauseReason::WriteAffordance);
    api(
        &stack,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/takeover/resume"),
        None,
    )
    .await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Failed);
    assert_eq!(r.error.as_ref().unwrap().code, "blocked_action");
    assert!(!r.error.as_ref().unwrap().retryable);
    let blocked: BTreeSet<usize> = r.blocked.iter().map(|b| b.step.unwrap()).collect();
    assert_eq!(
        blocked, expected_blocked,
        "refused exactly the committing controls"
    );
    assert!(
        r.blocked
            .iter()
            .all(|b| b.blocked_by == abr_protocol::BlockedBy::ReadOnly)
    );
    assert_eq!(
        r.step_results.len(),
        GUARD_CORPUS.len(),
        "every control was tried"
    );
    for (i, result) in r.step_results.iter().enumerate() {
        assert_eq!(
            result.ok,
            !expected_blocked.contains(&i),
            "step {i}: {result:?}"
        );
    }
    // The site's ground truth: no write; every harmless click reached the page.
    assert_eq!(stack.site.guard_writes(), Vec::<String>::new());
    let seen: BTreeSet<String> = stack.site.guard_seen().into_iter().collect();
    for control in GUARD_CORPUS.iter().filter(|c| !c.read_only_commits) {
        if control.enter_commits.is_none() || control.enter_commits == Some(false) {
            assert!(
                seen.contains(control.id),
                "{} never reached the page",
                control.id
            );
        }
    }
    // Frames: taken at the blockers too, never more than 60.
    let frames = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/runs/{id}/frames"),
        None,
    )
    .await;
    let count = frames["frames"].as_array().unwrap().len();
    assert!(count > 20 && count <= 60, "{count} frames");
    stack.server.shutdown().await;
}

// ---- pauses and takeovers -------------------------------------------------------------------

/// The person: a second headless browser on the live-view page, with a keyboard.
type Person = UserBrowser;

/// Waits (at most 10 s) for the site to show what the person did.
async fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "the person's input never reached the site"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Takes the paused run over: the live view is refused before, served while active.
async fn take_over(stack: &Stack, id: &str) -> (String, Person) {
    let started = api(
        stack,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/takeover"),
        None,
    )
    .await;
    assert_eq!(started["state"], "active");
    let url = started["liveViewUrl"].as_str().unwrap().to_owned();
    let person = open_live_view(&url).await;
    (url, person)
}

async fn resume(stack: &Stack, id: &str) {
    let answer = api(
        stack,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/takeover/resume"),
        None,
    )
    .await;
    assert_eq!(answer["state"], "resumed");
}

/// A plan that opens `path` and proves the page shows `#content` with `text`.
fn cleared_plan(site: &DemoSite, path: &str, text: &str) -> Value {
    json!({
        "plan": {
            "targetUrl": page(site, path),
            "steps": [
                {"type": "wait", "selector": "#content", "timeoutMs": 5000, "description": "Wait for the content"}
            ],
            "verification": {"method": "dom_check", "selector": "#content", "text": text}
        },
        "handoff": {"waitSeconds": 60}
    })
}

/// Pauses on `path` for `reason`, lets the person do `clear` in the live view, resumes,
/// and checks the run finished, the events, and that the live view is refused after.
async fn pause_clear_resume<F, Fut>(
    stack: &Stack,
    body: Value,
    reason: PauseReason,
    clear: F,
) -> TaskRecord
where
    F: FnOnce(Person) -> Fut,
    Fut: std::future::Future<Output = Person>,
{
    let id = create(stack, body).await;
    let r = paused(stack, &id).await;
    assert_eq!(r.state, TaskState::Paused, "{r:?}");
    let pause = r.pause.clone().unwrap();
    assert_eq!(pause.reason, reason);
    assert_eq!(pause.state, TakeoverState::Requested);
    let (url, person) = take_over(stack, &id).await;
    let person = clear(person).await;
    // The person resumes once they see the page cleared (its reload done).
    tokio::time::sleep(Duration::from_millis(800)).await;
    resume(stack, &id).await;
    let r = ended(stack, &id).await;
    // The live view is over with the takeover.
    let (status, _) = api_status(
        stack,
        reqwest::Method::GET,
        url.trim_start_matches(&stack.server.base_url()),
        None,
    )
    .await;
    assert!(
        status.is_client_error(),
        "the live view after the resume: {status}"
    );
    person.close().await;
    let events: Vec<&str> = r.takeover_events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        events,
        ["takeover_required", "takeover_active", "takeover_resumed"],
        "{r:?}"
    );
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pause_reason_is_detected_taken_over_cleared_and_resumed() {
    let stack = guard_stack().await;
    let site = &stack.site;

    // challenge: a captcha widget; the person ticks "I am human".
    let r = pause_clear_resume(
        &stack,
        cleared_plan(site, "/pause/challenge", "Cleared"),
        PauseReason::Challenge,
        |p| async move {
            p.press("Tab").await;
            p.press("Enter").await;
            p
        },
    )
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert!(site.pause_state().challenge);

    // paywall
    let r = pause_clear_resume(
        &stack,
        cleared_plan(site, "/pause/paywall", "Cleared"),
        PauseReason::Paywall,
        |p| async move {
            p.press("Tab").await;
            p.press("Enter").await;
            p
        },
    )
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");

    // access_blocked: a 403 "Access Denied" page.
    let r = pause_clear_resume(
        &stack,
        cleared_plan(site, "/pause/blocked", "Cleared"),
        PauseReason::AccessBlocked,
        |p| async move {
            p.press("Tab").await;
            p.press("Enter").await;
            p
        },
    )
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");

    // login_required: a run with a session must not sign in; the person does.
    let mut body = cleared_plan(site, "/pause/login", "Cleared");
    body["session"] = serde_json::to_value(signed_in_session(site, "ada").await).unwrap();
    body["scope"] = json!({"cookieDomains": ["127.0.0.1"]});
    let r = pause_clear_resume(&stack, body, PauseReason::LoginRequired, |p| async move {
        p.press("Tab").await;
        p.type_text("person-typed-password").await;
        p.press("Enter").await;
        wait_until(|| site.pause_state().login).await;
        p
    })
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert!(site.pause_state().login);

    // stuck: an overlay covers "Next step"; the person closes it.
    let body = json!({
        "plan": {
            "targetUrl": page(site, "/pause/stuck"),
            "steps": [
                {"type": "click", "selector": "#go", "timeoutMs": 1500, "description": "Next step"},
                {"type": "wait", "selector": "#content", "timeoutMs": 5000, "description": "Wait"}
            ],
            "verification": {"method": "dom_check", "selector": "#content", "text": "Cleared"}
        },
        "handoff": {"waitSeconds": 60}
    });
    let r = pause_clear_resume(&stack, body, PauseReason::Stuck, |p| async move {
        p.press("Tab").await;
        p.press("Tab").await;
        p.press("Enter").await;
        wait_until(|| site.pause_state().stuck).await;
        p
    })
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert_eq!(site.pause_state().go_clicks, 1);

    // needs_input: the form requires a code the plan does not have; the person types it.
    let body = json!({
        "plan": {
            "targetUrl": page(site, "/pause/needs-input"),
            "steps": [
                {"type": "click", "selector": "#send", "timeoutMs": 3000, "description": "Continue"},
                {"type": "wait", "selector": "#content", "timeoutMs": 5000, "description": "Wait"}
            ],
            "verification": {"method": "dom_check", "selector": "#content", "text": "Cleared"}
        },
        "handoff": {"waitSeconds": 60}
    });
    let before = site.pause_state().submissions.len();
    let r = pause_clear_resume(&stack, body, PauseReason::NeedsInput, |p| async move {
        p.press("Tab").await;
        p.type_text("REF-42").await;
        p
    })
    .await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    let state = site.pause_state();
    assert_eq!(state.submissions.len(), before + 1, "submitted once");
    assert_eq!(state.submissions.last(), Some(&6));

    // write_affordance: a read-only run reaches an application form; the person lets it
    // read the page; the form stays untouchable.
    let body = json!({
        "plan": {
            "targetUrl": page(site, "/pause/write"),
            "readOnly": true,
            "steps": [
                {"type": "extract", "name": "job", "kind": "text", "selector": "#content", "description": "Read the job"},
                {"type": "click", "selector": "#apply", "timeoutMs": 3000, "description": "Apply"}
            ],
            "verification": {"method": "dom_check", "selector": "#content"}
        },
        "handoff": {"waitSeconds": 60}
    });
    let r = pause_clear_resume(
        &stack,
        body,
        PauseReason::WriteAffordance,
        |p| async move { p },
    )
    .await;
    assert_eq!(r.state, TaskState::Failed);
    assert_eq!(r.error.unwrap().code, "blocked_action");
    assert!(
        r.extracted["job"]
            .as_str()
            .unwrap()
            .starts_with("Job details")
    );
    assert_eq!(site.pause_state().applications, 0);

    stack.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_takeover_ends_the_run_without_acting_and_an_ended_one_too() {
    let stack = guard_stack().await;
    let site = &stack.site;
    let body = json!({
        "plan": {
            "targetUrl": page(site, "/pause/challenge"),
            "steps": [
                {"type": "click", "selector": "#human", "timeoutMs": 3000, "description": "Tick it"}
            ],
            "verification": {"method": "dom_check", "selector": "#content"}
        },
        "handoff": {"waitSeconds": 2}
    });
    let id = create(&stack, body.clone()).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Failed);
    assert_eq!(r.error.as_ref().unwrap().code, "takeover_expired");
    assert_eq!(r.pause.as_ref().unwrap().state, TakeoverState::Expired);
    assert!(
        !site.pause_state().challenge,
        "the run never clicked past the challenge"
    );
    let (status, error) = api_status(
        &stack,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/takeover"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{error}");
    assert_eq!(error["error"]["code"], "no_takeover");

    let mut body = body;
    body["handoff"] = json!({"waitSeconds": 60});
    let id = create(&stack, body).await;
    paused(&stack, &id).await;
    // Another tenant cannot take it over.
    let intruder = raw_http()
        .post(format!(
            "{}/v1/tasks/{id}/takeover",
            stack.server.base_url()
        ))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", "intruder")
        .send()
        .await
        .unwrap();
    assert_eq!(intruder.status(), 404);
    api(
        &stack,
        reqwest::Method::POST,
        &format!("/v1/tasks/{id}/takeover/end"),
        None,
    )
    .await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.error.unwrap().code, "takeover_ended");
    assert!(!site.pause_state().challenge);
    stack.server.shutdown().await;
}

// ---- sites ----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_site_asks_for_consent_once_and_a_denied_site_is_never_opened() {
    let stack = guard_stack().await;
    let site = &stack.site;
    let body = json!({
        "plan": {
            "targetUrl": page(site, "/pause/elsewhere"),
            "steps": [
                {"type": "click", "selector": "#away", "timeoutMs": 3000, "description": "Next page"},
                {"type": "wait", "selector": "#content", "timeoutMs": 5000, "description": "Wait"}
            ],
            "verification": {"method": "dom_check", "selector": "#content", "text": "Landing"}
        },
        "handoff": {"waitSeconds": 60}
    });
    let id = create(&stack, body.clone()).await;
    let r = paused(&stack, &id).await;
    assert_eq!(r.pause.unwrap().reason, PauseReason::ConsentRequired);
    // The owner looks at the page through the live view, allows the site, resumes.
    let (_, person) = take_over(&stack, &id).await;
    api(
        &stack,
        reqwest::Method::PUT,
        "/v1/sites/localhost",
        Some(json!({"decision": "allow", "decidedBy": "alice"})),
    )
    .await;
    resume(&stack, &id).await;
    person.close().await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");

    // The decision stands: the next run does not ask.
    let id = create(&stack, body.clone()).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert!(r.pause.is_none());

    // Denied: a run whose plan opens the site never starts a browser there; a link to it
    // is aborted before the request leaves.
    api(
        &stack,
        reqwest::Method::PUT,
        "/v1/sites/localhost",
        Some(json!({"decision": "deny", "decidedBy": "alice"})),
    )
    .await;
    let id = create(&stack, body).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Failed);
    assert_eq!(r.error.unwrap().code, "site_denied", "{:?}", r.step_results);
    stack.server.shutdown().await;
}

// ---- frames ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_are_served_to_their_tenant_only_and_none_are_taken_with_screenshots_off() {
    let stack = guard_stack().await;
    let site = &stack.site;
    let mut body = cleared_plan(site, "/guard", "Overview");
    body["plan"]["steps"] = json!([
        {"type": "click", "selector": "#show-more", "timeoutMs": 3000, "description": "Show more"}
    ]);
    body["plan"]["verification"] = json!({"method": "dom_check", "selector": "#tab-overview"});
    body["plan"]["readOnly"] = json!(false);
    let id = create(&stack, body.clone()).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert_eq!(
        r.replay.unwrap().screenshots,
        abr_protocol::ScreenshotsMode::On
    );
    let frames = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/runs/{id}/frames"),
        None,
    )
    .await;
    let points: Vec<&str> = frames["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["point"].as_str().unwrap())
        .collect();
    assert_eq!(points, ["navigation", "click", "completion"]);
    let first = &frames["frames"][0];
    assert!(!first["url"].as_str().unwrap().contains('?'));
    let jpeg = raw_http()
        .get(format!("{}/v1/runs/{id}/frames/1", stack.server.base_url()))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", TENANT)
        .send()
        .await
        .unwrap();
    assert_eq!(jpeg.status(), 200);
    assert_eq!(jpeg.headers()["content-type"], "image/jpeg");
    assert!(jpeg.bytes().await.unwrap().starts_with(&[0xFF, 0xD8]));
    // Another tenant asks for it by its ids.
    let stolen = raw_http()
        .get(format!("{}/v1/runs/{id}/frames/1", stack.server.base_url()))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", "intruder")
        .send()
        .await
        .unwrap();
    let status = stolen.status();
    let text = stolen.text().await.unwrap_or_default();
    assert_eq!(status, 404, "{}", &text[..text.len().min(300)]);

    api(
        &stack,
        reqwest::Method::PUT,
        "/v1/settings/screenshots",
        Some(json!({"enabled": false})),
    )
    .await;
    let id = create(&stack, body).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    let replay = r.replay.unwrap();
    assert_eq!(replay.screenshots, abr_protocol::ScreenshotsMode::Off);
    assert_eq!(replay.reason.as_deref(), Some("tenant_setting"));
    let frames = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/runs/{id}/frames"),
        None,
    )
    .await;
    assert_eq!(frames["frames"], json!([]));
    assert_eq!(frames["screenshots"]["screenshots"], "off");
    stack.server.shutdown().await;
}

// ---- the events webhook ---------------------------------------------------------------------

/// The secret the webhook's deliveries are signed with.
const WEBHOOK_SECRET: &str = "the-receivers-secret-0123456789abcdef";
/// The receiver's tolerance for a delivery's timestamp (short, to see a replay refused).
const TOLERANCE_SECS: i64 = 2;

/// One delivery as the receiver saw it: the raw body, its signature and delivery id.
#[derive(Debug, Clone)]
struct Delivery {
    body: Vec<u8>,
    signature: String,
    id: String,
}

/// An HTTP receiver on loopback that verifies each delivery's signature (refusing one that
/// does not verify, `401`), fails the first attempt of each delivery (`503`, so the runner
/// retries), and keeps the JSON body of every delivery it accepted, once per delivery id.
async fn receiver() -> (SocketAddr, Arc<Mutex<Vec<Value>>>) {
    let (addr, bodies, _) = verifying_receiver().await;
    (addr, bodies)
}

type Deliveries = Arc<Mutex<Vec<Delivery>>>;

async fn verifying_receiver() -> (SocketAddr, Arc<Mutex<Vec<Value>>>, Deliveries) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen: Deliveries = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&bodies);
    let attempts = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/events",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let kept = Arc::clone(&kept);
                let attempts = Arc::clone(&attempts);
                async move {
                    use abr_protocol::webhook::{DELIVERY_HEADER, SIGNATURE_HEADER, verify};
                    let text = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let delivery = Delivery {
                        body: body.to_vec(),
                        signature: text(SIGNATURE_HEADER),
                        id: text(DELIVERY_HEADER),
                    };
                    let now = time::OffsetDateTime::now_utc().unix_timestamp();
                    let checked = verify(
                        WEBHOOK_SECRET.as_bytes(),
                        &delivery.signature,
                        &delivery.body,
                        now,
                        TOLERANCE_SECS,
                    );
                    if checked.is_err() {
                        return axum::http::StatusCode::UNAUTHORIZED;
                    }
                    let mut seen = attempts.lock().unwrap();
                    let first = !seen.iter().any(|d| d.id == delivery.id);
                    seen.push(delivery.clone());
                    if first {
                        return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let body: Value = serde_json::from_slice(&delivery.body).unwrap();
                    let mut kept = kept.lock().unwrap();
                    if !kept.contains(&body) {
                        kept.push(body);
                    }
                    axum::http::StatusCode::NO_CONTENT
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, bodies, seen)
}

fn expiring_challenge(site: &DemoSite) -> Value {
    json!({
        "plan": {
            "targetUrl": page(site, "/pause/challenge"),
            "steps": [
                {"type": "click", "selector": "#human", "timeoutMs": 3000, "description": "Tick it"}
            ],
            "verification": {"method": "dom_check", "selector": "#content"}
        },
        "handoff": {"waitSeconds": 1}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_events_reach_the_webhook_with_ids_only_and_never_an_unallowed_loopback() {
    // Allowed: the receiver's exact address is in the egress allowances.
    let (addr, bodies, deliveries) = verifying_receiver().await;
    let stack = stack_with(
        |c| {
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.tasks.events_webhook =
                Some(url::Url::parse(&format!("http://{addr}/events")).unwrap());
            c.tasks.events_webhook_secret = Some(abr_protocol::SecretValue::new(WEBHOOK_SECRET));
            c.egress = c.egress.clone().allow_addr(addr);
        },
        |b| b,
    )
    .await;
    let id = create(&stack, expiring_challenge(&stack.site)).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.error.unwrap().code, "takeover_expired");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Every delivery accepted (each after its retry), the last two included.
    let settled = || {
        let got = bodies.lock().unwrap();
        let has = |e: &str| got.iter().any(|b| b["event"] == e);
        let ids: BTreeSet<String> = deliveries
            .lock()
            .unwrap()
            .iter()
            .map(|d| d.id.clone())
            .collect();
        has("run_ended") && has("takeover_expired") && ids.len() == got.len()
    };
    while !settled() {
        assert!(
            Instant::now() < deadline,
            "the webhook got {:?}",
            bodies.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = bodies.lock().unwrap().clone();
    let events: Vec<&str> = got.iter().map(|b| b["event"].as_str().unwrap()).collect();
    let takeovers: Vec<&str> = events
        .iter()
        .copied()
        .filter(|e| e.starts_with("takeover_"))
        .collect();
    assert_eq!(
        takeovers,
        ["takeover_required", "takeover_expired"],
        "{events:?}"
    );
    let end = got.iter().find(|b| b["event"] == "run_ended").unwrap();
    assert_eq!(end["state"], "failed", "{end}");
    let allowed = BTreeSet::from([
        "event",
        "tenantId",
        "runId",
        "takeoverId",
        "reason",
        "state",
        "approvalId",
        "step",
        "action",
        "ok",
        "idleSecs",
        "at",
        // Names and counts: what the run is, its stage, its plan's size, how long it ran.
        "kind",
        "stage",
        "steps",
        "elapsedMs",
        "check",
        // A step's duration, an error code, the rule that refused a step.
        "ms",
        "code",
        "refusedBy",
    ]);
    for body in &got {
        assert_eq!(body["runId"], id.as_str());
        assert_eq!(body["tenantId"], "acme");
        let keys: BTreeSet<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(keys.is_subset(&allowed), "ids only: {body}");
        if body["event"].as_str().unwrap().starts_with("takeover_") {
            assert_eq!(
                keys,
                BTreeSet::from([
                    "event",
                    "tenantId",
                    "runId",
                    "takeoverId",
                    "reason",
                    "state",
                    "at"
                ]),
                "ids only"
            );
        }
        assert!(!body.to_string().contains("127.0.0.1"), "no URL: {body}");
    }
    // Each delivery was signed, failed once (503) and was retried with the same delivery id
    // and a valid signature.
    let seen = deliveries.lock().unwrap().clone();
    let ids: BTreeSet<&str> = seen.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids.len(), got.len(), "one delivery id per event: {seen:?}");
    assert!(
        seen.len() >= 2 * got.len(),
        "a retry per delivery: {seen:?}"
    );
    assert!(seen.iter().all(|d| d.signature.starts_with("t=")));
    assert!(
        !seen
            .iter()
            .any(|d| String::from_utf8_lossy(&d.body).contains(WEBHOOK_SECRET)),
        "the secret never travels"
    );
    // A replay: a delivery captured and sent again after the receiver's tolerance, and one
    // with its body changed, are refused by the receiver's check.
    let captured = seen.last().unwrap().clone();
    let resend = |body: Vec<u8>| {
        let captured = captured.clone();
        async move {
            reqwest::Client::new()
                .post(format!("http://{addr}/events"))
                .header(abr_protocol::webhook::SIGNATURE_HEADER, &captured.signature)
                .header(abr_protocol::webhook::DELIVERY_HEADER, "replayed")
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let mut tampered = captured.body.clone();
    tampered.extend_from_slice(b" ");
    assert_eq!(resend(tampered).await, 401, "a changed body");
    let wait = u64::try_from(TOLERANCE_SECS).unwrap() + 1;
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert_eq!(resend(captured.body.clone()).await, 401, "a stale replay");
    stack.server.shutdown().await;

    // The attack: a webhook pointing at a service on the runner's own machine that the
    // operator did not allow. It is never reached.
    let (victim, hits) = receiver().await;
    let stack = stack_with(
        |c| {
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.tasks.events_webhook =
                Some(url::Url::parse(&format!("http://{victim}/events")).unwrap());
            c.tasks.events_webhook_secret = Some(abr_protocol::SecretValue::new(WEBHOOK_SECRET));
        },
        |b| b,
    )
    .await;
    let id = create(&stack, expiring_challenge(&stack.site)).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.error.unwrap().code, "takeover_expired");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(hits.lock().unwrap().is_empty(), "the victim was reached");
    stack.server.shutdown().await;
}

/// A browse session opened with `handoff` meets a captcha: it pauses with a takeover, the
/// brain's actions wait, a person takes over in the live view and clears it, resumes, and
/// the brain goes on on the cleared page. Real Chromium, the demo site's challenge page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_browse_session_is_taken_over_in_the_live_view_and_the_brain_goes_on() {
    let stack = guard_stack().await;
    let site = &stack.site;
    let opened = api(
        &stack,
        reqwest::Method::POST,
        "/v1/browse",
        Some(json!({
            "url": page(site, "/pause/challenge"),
            "handoff": {"waitSeconds": 120},
        })),
    )
    .await;
    let id = opened["browseId"].as_str().unwrap().to_owned();
    assert_eq!(opened["outcome"], "paused", "{opened}");
    assert_eq!(opened["pause"]["reason"], "challenge");
    let takeover = opened["pause"]["takeoverId"].as_str().unwrap().to_owned();
    let record = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    assert_eq!(record["state"], "paused");
    // The brain's action waits: the captcha is not clicked by it.
    let human = opened["snapshot"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "I am human")
        .unwrap_or_else(|| panic!("{opened}"))["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let waited = api(
        &stack,
        reqwest::Method::POST,
        &format!("/v1/browse/{id}/act"),
        Some(json!({"action": "click", "ref": human})),
    )
    .await;
    assert_eq!(waited["outcome"], "paused", "{waited}");
    assert_eq!(waited["pause"]["takeoverId"], takeover.as_str());
    assert!(
        !site.pause_state().challenge,
        "the brain cleared the captcha"
    );
    // The person takes over, clears it in the live view, and resumes.
    let (url, person) = take_over(&stack, &id).await;
    person.press("Tab").await;
    person.press("Enter").await;
    wait_until(|| site.pause_state().challenge).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    resume(&stack, &id).await;
    let (status, _) = api_status(
        &stack,
        reqwest::Method::GET,
        url.trim_start_matches(&stack.server.base_url()),
        None,
    )
    .await;
    assert!(
        status.is_client_error(),
        "the live view after the resume: {status}"
    );
    person.close().await;
    // The brain goes on, on the cleared page.
    let snapshot = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/browse/{id}/snapshot"),
        None,
    )
    .await;
    assert!(
        snapshot["text"].as_str().unwrap().contains("Cleared"),
        "{snapshot}"
    );
    let acted = api(
        &stack,
        reqwest::Method::POST,
        &format!("/v1/browse/{id}/act"),
        Some(json!({"action": "scroll", "direction": "down"})),
    )
    .await;
    assert_eq!(acted["outcome"], "done", "{acted}");
    let record = api(
        &stack,
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    assert_eq!(record["state"], "running");
    let events: Vec<&str> = record["takeoverEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        ["takeover_required", "takeover_active", "takeover_resumed"]
    );
    api(
        &stack,
        reqwest::Method::DELETE,
        &format!("/v1/browse/{id}"),
        None,
    )
    .await;
    stack.server.shutdown().await;
}

// ---- named profiles ---------------------------------------------------------------------

/// A named profile on real Chromium, through the HTTP API: its owner is asked once and a
/// decline stops every run before a browser opens it; a committing press on a profile never
/// signed in to the site stops `login_required` with nothing sent; a person signs in once
/// through the live view (the run never does), the sign-in is recorded by cookie name and
/// expiry only, and the next run reuses the profile's sign-in from disk without a pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_profile_asks_its_owner_once_and_keeps_the_sign_in_a_person_made() {
    let profiles = tempfile::tempdir().unwrap();
    let dir = profiles.path().to_owned();
    let stack = stack_with(
        |c| {
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.pacing = None;
            c.providers.profile_dir = Some(dir);
        },
        |b| b,
    )
    .await;
    let site = &stack.site;
    // A site that keeps you signed in: its cookie outlives the browser.
    site.keep_sign_ins(Some(time::Duration::days(30)));
    let post = |text: &str, target: &str, handoff: bool| {
        let mut body = json!({
            "plan": {
                "targetUrl": page(site, target),
                "steps": [
                    {"type": "type", "selector": "#post-text", "value": text, "description": "Write the post", "timeoutMs": 10000},
                    {"type": "click", "selector": "#submit", "description": "Post", "timeoutMs": 5000}
                ],
                "verification": {"method": "dom_check", "selector": "h1", "text": "Thanks!"}
            },
            "profile": "jobs"
        });
        if handoff {
            body["handoff"] = json!({"waitSeconds": 60});
        }
        body
    };

    // Asked once; declined, refused; nothing opened either time.
    let (status, body) = api_status(
        &stack,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(post("first", "/login", true)),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "consent_required");
    let listed = api(&stack, reqwest::Method::GET, "/v1/profiles", None).await;
    assert_eq!(listed["profiles"][0]["profile"], "jobs");
    let asked_at = listed["profiles"][0]["askedAt"].clone();
    assert!(asked_at.is_string() && listed["profiles"][0]["decision"].is_null());
    let (status, _) = api_status(
        &stack,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(post("first", "/login", true)),
    )
    .await;
    assert_eq!(status, 409);
    let listed = api(&stack, reqwest::Method::GET, "/v1/profiles", None).await;
    assert_eq!(listed["profiles"][0]["askedAt"], asked_at, "asked once");
    let decide = |decision: &str| json!({"decision": decision, "decidedBy": "the owner"});
    let entry = api(
        &stack,
        reqwest::Method::PUT,
        "/v1/profiles/jobs/consent",
        Some(decide("deny")),
    )
    .await;
    assert_eq!(entry["decision"], "deny");
    assert!(entry["decidedByKey"].is_string());
    let (status, body) = api_status(
        &stack,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(post("first", "/login", true)),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "consent_refused");
    assert!(
        std::fs::read_dir(profiles.path()).unwrap().next().is_none(),
        "no profile folder was made"
    );
    api(
        &stack,
        reqwest::Method::PUT,
        "/v1/profiles/jobs/consent",
        Some(decide("allow")),
    )
    .await;

    // Never signed in, a committing press, no handoff: it stops before pressing.
    site.set_page(
        "order",
        "<!doctype html><title>Order</title><form method=post action=/api/order>\
         <textarea id=post-text name=t></textarea><button id=submit>Place order</button></form>",
    )
    .unwrap();
    let writes = site.ledger().len();
    let id = create(&stack, post("never", "/attack/custom/order", false)).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Failed, "{r:?}");
    let error = r.error.unwrap();
    assert_eq!(error.code, "login_required");
    assert!(
        error.message.contains("never signed in"),
        "{}",
        error.message
    );
    assert_eq!(site.ledger().len(), writes, "nothing reached the site");

    // The run opens the sign-in page: it pauses (a profile never signs in itself); the person
    // signs in through the live view; the run posts; the sign-in is recorded.
    let id = create(&stack, post("first", "/login", true)).await;
    let r = paused(&stack, &id).await;
    assert_eq!(r.pause.unwrap().reason, PauseReason::LoginRequired);
    let (_, person) = take_over(&stack, &id).await;
    person.type_text("ada").await;
    person.press("Tab").await;
    person.type_text("demo-password").await;
    person.press("Enter").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    resume(&stack, &id).await;
    let r = ended(&stack, &id).await;
    person.close().await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert_eq!(r.account.unwrap().profile.as_deref(), Some("jobs"));
    let listed = api(&stack, reqwest::Method::GET, "/v1/profiles", None).await;
    let sign_in = &listed["profiles"][0]["signIns"][0];
    assert_eq!(sign_in["site"], "127.0.0.1");
    assert_eq!(
        sign_in["cookies"][0]["name"],
        abr_demo::site::SESSION_COOKIE
    );
    assert!(sign_in["cookies"][0]["expires"].as_f64().unwrap() > 0.0);
    let authors: Vec<_> = site.posts().into_iter().map(|p| p.author).collect();
    assert_eq!(authors, ["ada"], "posted as the person who signed in");
    assert!(
        !listed.to_string().contains("demo-password"),
        "no value is recorded"
    );

    // The next run (a new browser on the profile's folder) is signed in: no pause.
    let id = create(&stack, post("second", "/compose", false)).await;
    let r = ended(&stack, &id).await;
    assert_eq!(r.state, TaskState::Succeeded, "{r:?}");
    assert!(r.pause.is_none());
    let texts: Vec<_> = site.posts().into_iter().map(|p| p.text).collect();
    assert_eq!(
        texts,
        ["first", "second"],
        "the ground truth: one post each"
    );
}
