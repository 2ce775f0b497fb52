//! Nothing secret is logged or audited: a full flow on real Chromium with canary values in
//! every secret place (bearer token, a wrong bearer token, cookie, localStorage, posted text,
//! an ill-typed field, the capture id and live token), every log line at trace level captured
//! in memory together with every audit event, and none of them may contain a canary.
//!
//! One global subscriber per test binary: this file holds exactly one test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

#[path = "service/common/mod.rs"]
mod common;

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_client::AgentRunnerClient;
use abr_core::{AuditAction, AuditSink, MemoryAuditSink};
use abr_protocol::{Cookie, LocalStorageItem, OriginState};
use common::*;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use secrecy::SecretString;
use tracing_subscriber::fmt::MakeWriter;

/// Bound of the test.
const TEST_LIMIT: Duration = Duration::from_secs(240);

/// Every log line, in memory.
#[derive(Debug, Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogBuffer {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_log_line_or_an_audit_event() {
    // Before anything logs: the runner's own logging setup at trace for every target (the
    // `log` crate's records too). Its caps on third-party crates that dump what they carry
    // (playwright-rs, tungstenite) are part of what is tested.
    let logs = LogBuffer::default();
    tracing_subscriber::util::SubscriberInitExt::try_init(abr_service::logging::subscriber(
        "trace",
        logs.clone(),
    ))
    .expect("the only global subscriber of this binary");
    tracing::info!(target: "abr::canary_test", "subscriber installed");

    tokio::time::timeout(TEST_LIMIT, flow(&logs))
        .await
        .expect("the test took too long");
}

async fn flow(logs: &LogBuffer) {
    let r = random_suffix();
    let token = format!("CANARY-TOKEN-{r}");
    let wrong_token = format!("CANARY-WRONG-TOKEN-{r}");
    let cookie_value = format!("CANARY-COOKIE-{r}");
    let storage_value = format!("CANARY-STORAGE-{r}");
    let text = format!("CANARY-TEXT-{r}");
    let field_value = format!("CANARY-FIELD-{r}");

    let sink = Arc::new(MemoryAuditSink::new());
    let stack = {
        let token = token.clone();
        let sink = Arc::clone(&sink) as Arc<dyn AuditSink>;
        stack_with(
            move |c| c.api_tokens = vec![SecretString::from(token)],
            move |b| b.audit(sink),
        )
        .await
    };
    let base = stack.server.base_url();
    let client = AgentRunnerClient::new(base.clone(), token.clone()).unwrap();
    let http = raw_http();

    // A signed-in session plus a canary cookie and a canary localStorage item, both in scope.
    let session_token = demo_login(&stack.site, "grace").await;
    let mut session = demo_session(&session_token);
    session
        .cookies
        .push(Cookie::new("canary", cookie_value.as_str(), "127.0.0.1"));
    session.origins.push(OriginState::new(
        stack.site.base_url(),
        vec![LocalStorageItem::new(
            "canary_storage",
            storage_value.as_str(),
        )],
    ));

    assert_eq!(client.health().await.unwrap().status, "ok");
    assert!(
        client
            .platforms()
            .await
            .unwrap()
            .platforms
            .iter()
            .any(|p| p.id == "demo")
    );

    // A wrong bearer token that is itself a canary, in every form.
    let wrong = AgentRunnerClient::new(base.clone(), wrong_token.clone()).unwrap();
    let e = wrong.platforms().await.unwrap_err();
    assert_eq!(e.status(), Some(401), "{e}");
    let e = wrong
        .post(&post_request("demo", session.clone(), &text))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(401), "{e}");
    for value in [
        format!("Basic {wrong_token}"),
        format!("Bearer {wrong_token} {token}"),
        wrong_token.clone(),
    ] {
        let response = http
            .get(format!("{base}/v1/platforms"))
            .header(AUTHORIZATION, value)
            .send()
            .await
            .unwrap();
        assert_eq!(raw_error(response).await.status, 401);
    }

    // Ill-typed requests carrying canaries: 422, and the answer does not echo them either.
    let mut ill_typed_cookie = serde_json::to_value(&session).unwrap();
    ill_typed_cookie["cookies"][0]["sameSite"] = serde_json::Value::String(field_value.clone());
    for body in [
        serde_json::json!({"platform": "demo", "session": field_value, "content": {"text": text}}),
        serde_json::json!({"platform": "demo", "session": ill_typed_cookie, "content": {"text": text}}),
    ] {
        let response = http
            .post(format!("{base}/v1/post"))
            .header(AUTHORIZATION, format!("Bearer {token}"))
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let e = raw_error(response).await;
        assert_eq!((e.status, e.code.as_str()), (422, "invalid_request"));
        assert!(!e.body.contains("CANARY"), "{}", e.body);
    }

    // A probe and a post with the canary session: the canaries really went through the
    // browser (they come back in the refreshed sessions, and the post exists).
    let probe = client
        .probe(&probe_request("demo", session.clone()))
        .await
        .unwrap();
    assert!(probe.authenticated, "{probe:?}");
    let refreshed = probe.refreshed_session.expect("a refreshed session");
    assert!(
        refreshed
            .cookies
            .iter()
            .any(|c| c.value.expose() == cookie_value),
        "the canary cookie went through the browser"
    );
    assert!(
        refreshed
            .origins
            .iter()
            .flat_map(|o| &o.local_storage)
            .any(|i| i.value.expose() == storage_value),
        "the canary localStorage item went through the browser"
    );
    let result = client
        .post(&post_request("demo", refreshed, &text))
        .await
        .unwrap();
    assert!(result.ok, "{result:?}");
    assert!(stack.site.posts().iter().any(|p| p.text == text));

    // A capture: its id and live token are credentials too.
    let capture = client.capture_start(&start_request()).await.unwrap();
    let capture_id = capture.capture_id.clone();
    let live = live_token(&capture.live_view_url);
    assert_eq!(
        http.get(&capture.live_view_url)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        client
            .capture_status(&bound(&capture_id))
            .await
            .unwrap()
            .platform,
        "demo"
    );
    // What a person types into the live view, and addresses they try, are secrets too.
    let typed = format!("CANARY-typed-{}", random_suffix());
    let tried = format!("CANARY-url-{}", random_suffix());
    let mut live_channel = abr_client::LiveViewChannel::connect(&capture.live_view_url, WAIT)
        .await
        .unwrap();
    live_channel.wait_for_picture(WAIT).await.unwrap();
    live_channel.type_text(&typed).await.unwrap();
    live_channel
        .send(&abr_protocol::LiveViewInput::Navigate {
            url: format!("https://elsewhere.example/?t={tried}"),
        })
        .await
        .unwrap();
    let refused = loop {
        match live_channel.next().await.unwrap() {
            Some(abr_client::LiveMessage::Event(abr_protocol::LiveViewEvent::Refused {
                reason,
            })) => break reason,
            Some(_) => {}
            None => panic!("the live view closed"),
        }
    };
    assert_eq!(refused, "outside_sites");
    live_channel.close().await;
    let e = client
        .capture_finish(&bound(&capture_id))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("not_authenticated"), "{e}");
    assert!(
        client
            .capture_cancel(&bound(&capture_id))
            .await
            .unwrap()
            .cancelled
    );
    let e = client
        .capture_status(&bound(&capture_id))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(404), "{e}");

    // A browse session's brain asks for a value it must not invent; a person hands it over.
    // It reaches the page (the page's own script shows it) and nothing else.
    let supplied = format!("CANARY-supplied-{}", random_suffix());
    let opened = client
        .browse_open(
            "default",
            &serde_json::from_value(serde_json::json!({
                "url": format!("{}/guard", stack.site.base_url()),
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let browse_id = opened.browse_id.clone();
    let find = opened
        .first
        .snapshot
        .elements
        .iter()
        .find(|e| e.name == "Find on page")
        .unwrap_or_else(|| panic!("no search box in {:#?}", opened.first.snapshot.elements))
        .reference
        .clone();
    let pause = client
        .browse_request_input(
            "default",
            &browse_id,
            &serde_json::from_value(
                serde_json::json!({"ref": find, "prompt": "What should I look for?"}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(pause.reason, abr_protocol::PauseReason::NeedsInput);
    let answer = client
        .supply_input(
            "default",
            &browse_id,
            &serde_json::from_value(serde_json::json!({"value": supplied})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(Some(answer.takeover_id), pause.takeover_id);
    let pressed = client
        .browse_act(
            "default",
            &browse_id,
            &abr_protocol::BrowseAction::Press {
                reference: Some(find.clone()),
                key: "Enter".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        pressed.outcome,
        abr_protocol::ActOutcome::Done,
        "{pressed:?}"
    );
    assert!(
        pressed.snapshot.text.contains(&supplied),
        "the supplied value reached the page's field: {}",
        pressed.snapshot.text
    );
    let record = client.get_task("default", &browse_id).await.unwrap();
    assert!(!serde_json::to_string(&record).unwrap().contains(&supplied));
    client.browse_close("default", &browse_id).await.unwrap();

    stack.server.shutdown().await;
    stack.site.shutdown().await;

    // Audit events are delivered in the background.
    wait_for("the audit events", WAIT, || {
        let actions: Vec<_> = sink.events().iter().map(|e| e.action).collect();
        [
            AuditAction::Probe,
            AuditAction::Post,
            AuditAction::CaptureStarted,
            AuditAction::CaptureCancelled,
        ]
        .iter()
        .all(|a| actions.contains(a))
    })
    .await;

    let secrets = [
        ("bearer token", token.as_str()),
        ("wrong bearer token", wrong_token.as_str()),
        ("cookie value", cookie_value.as_str()),
        ("session cookie value", session_token.as_str()),
        ("localStorage value", storage_value.as_str()),
        ("posted text", text.as_str()),
        ("ill-typed field value", field_value.as_str()),
        ("capture id", capture_id.as_str()),
        ("live token", live.as_str()),
        ("text typed into the live view", typed.as_str()),
        ("address tried in the live view", tried.as_str()),
        ("value a person supplied", supplied.as_str()),
    ];

    let events = sink.events();
    for event in &events {
        let json = serde_json::to_string(event).unwrap();
        for (what, secret) in secrets {
            assert!(
                !json.contains(secret),
                "an audit event holds the {what}: {json}"
            );
        }
        assert!(
            !json.contains("CANARY"),
            "an audit event holds a canary: {json}"
        );
    }
    let post_event = events
        .iter()
        .find(|e| e.action == AuditAction::Post)
        .unwrap();
    assert!(
        post_event.cookie_count.is_some_and(|n| n >= 2),
        "the post went in with both cookies: {post_event:?}"
    );

    let text_of_logs = logs.text();
    let lines: Vec<&str> = text_of_logs.lines().collect();
    // The check can fail: the logs are verbose and cover the requests above.
    assert!(lines.len() > 20, "too few log lines: {}", lines.len());
    for needle in [
        "abr::canary_test",
        "abr::http",
        "\"/v1/post\"",
        "\"/v1/probe\"",
        "\"/v1/capture/status\"",
        "\"/live/{token}\"",
        "status=401",
        "status=422",
        "DEBUG",
    ] {
        assert!(
            text_of_logs.contains(needle),
            "no log line has {needle:?}:\n{text_of_logs}"
        );
    }
    for line in &lines {
        for (what, secret) in secrets {
            assert!(
                !line.contains(secret),
                "a log line holds the {what}: {line}"
            );
        }
        assert!(
            !line.contains("CANARY"),
            "a log line holds a canary: {line}"
        );
    }
}
