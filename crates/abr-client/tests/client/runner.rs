//! `AgentRunnerClient` against a fake runner (axum on 127.0.0.1:0) that records every request.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

use crate::common;

use std::time::Duration;

use abr_client::protocol::{
    CaptureRef, CaptureStartRequest, CaptureState, DropReason, OffsetDateTime, PostOutcome,
    PostRequest, ProbeRequest, VerificationMethod,
};
use abr_client::{AgentRunnerClient, ClientError, Operation, SecretString, TransportKind};
use serde_json::{Value, json};

use common::*;

const TOKEN: &str = "tok-3f9a-canary";

/// This module's runner: its answers and its token.
trait ThisRunner {
    /// A runner answering every route like the real one.
    async fn start() -> Self;
    fn client(&self) -> AgentRunnerClient;
}

impl ThisRunner for FakeRunner {
    async fn start() -> Self {
        Self::with(runner_answers).await
    }

    fn client(&self) -> AgentRunnerClient {
        self.client_with(TOKEN)
    }
}

const EXPIRES: &str = "2030-01-01T00:00:00Z";

fn expires() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_893_456_000).unwrap()
}

/// The real runner's answers, by method and path.
fn runner_answers(seen: &Seen) -> Reply {
    match (seen.method.as_str(), seen.path.as_str()) {
        ("GET", "/v1/health") => Reply::json(200, json!({"status": "ok", "version": "9.9.9"})),
        ("GET", "/v1/platforms") => Reply::json(
            200,
            json!({"platforms": [{
                "id": "demo",
                "startUrl": "http://127.0.0.1:9/compose",
                "policy": {"allowUnattended": false, "session": {"cookieDomains": ["example.com"]}}
            }]}),
        ),
        ("POST", "/v1/capture/start") => Reply::json(
            200,
            json!({"captureId": "cap-1", "liveViewUrl": "http://h/live?t=v", "expiresAt": EXPIRES}),
        ),
        ("POST", "/v1/capture/finish") => Reply::json(
            200,
            json!({
                "session": {"cookies": [{"name": "sid", "value": "fresh", "domain": ".example.com"}],
                            "origins": []},
                "scopeReport": {"keptCookies": 1, "keptOrigins": 0, "dropped": {"cookieOutOfScope": 2}}
            }),
        ),
        ("POST", "/v1/capture/cancel") => Reply::json(200, json!({"cancelled": true})),
        ("POST", "/v1/capture/status") => Reply::json(
            200,
            json!({"platform": "demo", "state": "open", "expiresAt": EXPIRES}),
        ),
        ("POST", "/v1/post") => Reply::json(
            200,
            json!({
                "ok": true,
                "verification": {"method": "permalink",
                                 "evidence": {"permalink": "https://example.com/p/42", "postId": "42"}},
                "uncertain": false,
                "needsReauth": false,
                "refreshedSession": {"cookies": [], "origins": []},
                "timing": {"totalMs": 1234, "postMs": 1000}
            }),
        ),
        ("POST", "/v1/probe") => {
            Reply::json(200, json!({"authenticated": false, "needsReauth": true}))
        }
        _ => Reply::envelope(404, "not_found", "no such route", false),
    }
}

/// The wire form of [`post_request`]; built from JSON so that optional fields added to the
/// protocol later do not break these tests.
fn post_json() -> Value {
    json!({
        "platform": "demo",
        "session": {
            "cookies": [{"name": "sid", "value": "cookie-secret-value", "domain": ".example.com",
                         "path": "/", "expires": -1, "httpOnly": false, "secure": false,
                         "sameSite": "Lax"}],
            "origins": []
        },
        "content": {"text": "hello world"},
        "workspaceId": "ws-1",
        "accountId": "acct-1",
        "scope": {"cookieDomains": ["example.com"], "origins": []}
    })
}

fn post_request() -> PostRequest {
    serde_json::from_value(post_json()).unwrap()
}

fn probe_request(account_id: Option<&str>) -> ProbeRequest {
    let mut body = json!({"platform": "demo", "session": {"cookies": [], "origins": []}});
    if let Some(account_id) = account_id {
        body["accountId"] = json!(account_id);
    }
    serde_json::from_value(body).unwrap()
}

fn capture_start_request() -> CaptureStartRequest {
    serde_json::from_value(
        json!({"workspaceId": "ws-1", "accountId": "acct-1", "platform": "demo"}),
    )
    .unwrap()
}

fn capture_ref() -> CaptureRef {
    CaptureRef {
        capture_id: "cap-1".into(),
        workspace_id: "ws-1".into(),
        account_id: "acct-1".into(),
    }
}

fn assert_authed_json(seen: &Seen, method: &str, path: &str) {
    assert_eq!(seen.method, method);
    assert_eq!(seen.path, path);
    assert_eq!(
        seen.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    if method == "POST" {
        assert_eq!(seen.content_type.as_deref(), Some("application/json"));
    }
}

// ---------------------------------------------------------------- endpoints

#[tokio::test]
async fn health_is_a_get_without_the_bearer_token() {
    let runner = FakeRunner::start().await;
    let health = runner.client().health().await.unwrap();
    assert_eq!(
        (health.status.as_str(), health.version.as_str()),
        ("ok", "9.9.9")
    );
    let seen = runner.single();
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("GET", "/v1/health")
    );
    assert_eq!(seen.authorization, None);
    assert!(seen.body.is_empty());
}

#[tokio::test]
async fn platforms_sends_the_token_and_decodes_the_policy() {
    let runner = FakeRunner::start().await;
    let platforms = runner.client().platforms().await.unwrap();
    assert_authed_json(&runner.single(), "GET", "/v1/platforms");
    let demo = &platforms.platforms[0];
    assert_eq!(demo.id, "demo");
    assert_eq!(demo.policy.allow_unattended, Some(false));
    assert_eq!(
        demo.policy.session.as_ref().unwrap().cookie_domains,
        vec!["example.com".to_owned()]
    );
}

#[tokio::test]
async fn capture_start_posts_the_binding_and_decodes_the_capture() {
    let runner = FakeRunner::start().await;
    let started = runner
        .client()
        .capture_start(&capture_start_request())
        .await
        .unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/capture/start");
    assert_eq!(
        seen.json(),
        json!({"workspaceId": "ws-1", "accountId": "acct-1", "platform": "demo"})
    );
    assert_eq!(started.capture_id, "cap-1");
    assert_eq!(started.live_view_url, "http://h/live?t=v");
    assert_eq!(started.expires_at, expires());
}

#[tokio::test]
async fn capture_finish_posts_the_ref_and_decodes_the_scoped_session() {
    let runner = FakeRunner::start().await;
    let finished = runner
        .client()
        .capture_finish(&capture_ref())
        .await
        .unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/capture/finish");
    assert_eq!(
        seen.json(),
        json!({"captureId": "cap-1", "workspaceId": "ws-1", "accountId": "acct-1"})
    );
    assert_eq!(finished.session.cookies[0].value.expose(), "fresh");
    assert_eq!(finished.scope_report.kept_cookies, 1);
    assert_eq!(
        finished
            .scope_report
            .dropped_for(DropReason::CookieOutOfScope),
        2
    );
}

#[tokio::test]
async fn capture_cancel_posts_the_ref() {
    let runner = FakeRunner::start().await;
    let cancelled = runner
        .client()
        .capture_cancel(&capture_ref())
        .await
        .unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/capture/cancel");
    assert_eq!(seen.json()["captureId"], "cap-1");
    assert!(cancelled.cancelled);
}

#[tokio::test]
async fn capture_status_posts_the_bound_ref_and_never_puts_the_id_in_a_path() {
    let runner = FakeRunner::start().await;
    let reference = CaptureRef {
        capture_id: "a/b c?d".into(),
        ..capture_ref()
    };
    let status = runner.client().capture_status(&reference).await.unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/capture/status");
    assert_eq!(seen.json()["captureId"], "a/b c?d");
    assert_eq!(seen.json()["workspaceId"], capture_ref().workspace_id);
    assert_eq!(seen.json()["accountId"], capture_ref().account_id);
    assert_eq!(status.platform, "demo");
    assert_eq!(status.state, CaptureState::Open);
    assert_eq!(status.expires_at, expires());
}

#[tokio::test]
async fn post_sends_the_request_and_decodes_the_outcome() {
    let runner = FakeRunner::start().await;
    let result = runner.client().post(&post_request()).await.unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/post");
    assert_eq!(seen.json(), post_json());
    assert_eq!(result.outcome(), PostOutcome::Confirmed);
    let verification = result.verification.unwrap();
    assert_eq!(verification.method, VerificationMethod::Permalink);
    assert_eq!(verification.evidence.post_id.as_deref(), Some("42"));
    assert_eq!(result.timing.total_ms, 1234);
    assert!(result.refreshed_session.is_some());
}

#[tokio::test]
async fn a_post_outcome_that_is_not_ok_is_still_ok_at_the_http_level() {
    let runner = FakeRunner::with(|_| {
        Reply::json(
            200,
            json!({"ok": false, "uncertain": true, "needsReauth": false, "failureStage": "verify",
                   "error": {"code": "unconfirmed", "message": "no toast"}, "timing": {"totalMs": 5}}),
        )
    })
    .await;
    let result = runner.client().post(&post_request()).await.unwrap();
    assert_eq!(result.outcome(), PostOutcome::Uncertain);
    assert!(!result.is_safe_to_retry());
    assert_eq!(runner.seen().len(), 1);
}

#[tokio::test]
async fn probe_posts_the_session_and_decodes_the_answer() {
    let runner = FakeRunner::start().await;
    let answer = runner
        .client()
        .probe(&probe_request(Some("acct-1")))
        .await
        .unwrap();
    let seen = runner.single();
    assert_authed_json(&seen, "POST", "/v1/probe");
    assert_eq!(
        seen.json(),
        json!({"platform": "demo", "session": {"cookies": [], "origins": []}, "accountId": "acct-1"})
    );
    assert!(!answer.authenticated);
    assert!(answer.needs_reauth);
    assert!(answer.refreshed_session.is_none());
}

// ---------------------------------------------------------------- base URL and config

#[tokio::test]
async fn a_base_path_prefix_is_kept_with_or_without_a_trailing_slash() {
    let runner = FakeRunner::with(|seen| match seen.path.as_str() {
        "/abr/v1/health" => Reply::json(200, json!({"status": "ok", "version": "1"})),
        _ => Reply::envelope(404, "not_found", "no", false),
    })
    .await;
    for base in [runner.url("/abr"), runner.url("/abr/")] {
        AgentRunnerClient::new(base, TOKEN)
            .unwrap()
            .health()
            .await
            .unwrap();
    }
    let paths: Vec<_> = runner.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/abr/v1/health", "/abr/v1/health"]);
}

#[tokio::test]
async fn no_trailing_slash_on_a_bare_host_works_too() {
    let runner = FakeRunner::start().await;
    let client = AgentRunnerClient::new(format!("http://{}", runner.addr), TOKEN).unwrap();
    client.platforms().await.unwrap();
    assert_eq!(runner.single().path, "/v1/platforms");
}

#[test]
fn bad_base_urls_are_config_errors_that_do_not_echo_the_url() {
    for base in [
        "not a url",
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "mailto:a@b.c",
        "http://user:pw-canary@127.0.0.1/",
        "http://127.0.0.1/?key=pw-canary",
        "http://127.0.0.1/#pw-canary",
    ] {
        let e = AgentRunnerClient::new(base, TOKEN).unwrap_err();
        assert!(
            matches!(e, ClientError::InvalidConfig { .. }),
            "{base}: {e:?}"
        );
        assert!(!e.to_string().contains("canary"), "{e}");
        assert!(!e.to_string().contains("passwd"), "{e}");
    }
}

#[test]
fn the_token_is_required_non_empty_and_header_safe() {
    let base = "http://127.0.0.1:9/";
    let missing = AgentRunnerClient::builder(base).build().unwrap_err();
    assert!(matches!(missing, ClientError::InvalidConfig { .. }));
    for token in ["", "two words", "line\nbreak-canary", "tab\tcanary"] {
        let e = AgentRunnerClient::new(base, token).unwrap_err();
        assert!(matches!(e, ClientError::InvalidConfig { .. }), "{e:?}");
        assert!(!format!("{e} {e:?}").contains("canary"), "{e:?}");
    }
    let secret: SecretString = TOKEN.into();
    assert!(AgentRunnerClient::new(base, secret).is_ok());
    assert!(AgentRunnerClient::new(base, TOKEN.to_owned()).is_ok());
}

#[test]
fn debug_of_the_client_and_builder_never_shows_the_token() {
    let builder = AgentRunnerClient::builder("http://127.0.0.1:9/abr/")
        .token(TOKEN)
        .timeout(Duration::from_secs(3));
    let builder_dbg = format!("{builder:?}");
    assert!(!builder_dbg.contains("canary"), "{builder_dbg}");
    let client = builder.build().unwrap();
    let dbg = format!("{client:?} {client:#?}");
    assert!(!dbg.contains("canary"), "{dbg}");
    assert!(!dbg.contains("3f9a"), "{dbg}");
    assert!(dbg.contains("http://127.0.0.1:9/abr/"), "{dbg}");
    assert_eq!(client.base_url(), "http://127.0.0.1:9/abr/");
}

#[tokio::test]
async fn the_user_agent_is_configurable_and_has_a_default() {
    let runner = FakeRunner::start().await;
    runner.client().health().await.unwrap();
    AgentRunnerClient::builder(runner.url("/"))
        .token(TOKEN)
        .user_agent("orchestrator/2")
        .build()
        .unwrap()
        .health()
        .await
        .unwrap();
    let agents: Vec<_> = runner.seen().into_iter().map(|s| s.user_agent).collect();
    assert_eq!(
        agents,
        [
            Some(format!("abr-client/{}", env!("CARGO_PKG_VERSION"))),
            Some("orchestrator/2".to_owned())
        ]
    );
}

#[tokio::test]
async fn cookies_set_by_the_server_are_not_sent_back() {
    let runner = FakeRunner::with(|seen| {
        runner_answers(seen).header("set-cookie", "sid=server-canary; Path=/")
    })
    .await;
    let client = runner.client();
    client.health().await.unwrap();
    client.platforms().await.unwrap();
    let seen = runner.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].cookie, None);
}

// ---------------------------------------------------------------- errors

#[tokio::test]
async fn an_error_envelope_keeps_the_runners_code_message_and_status() {
    let runner = FakeRunner::with(|_| {
        Reply::envelope(
            403,
            "binding_mismatch",
            "capture belongs to another account",
            false,
        )
    })
    .await;
    let e = runner
        .client()
        .capture_finish(&capture_ref())
        .await
        .unwrap_err();
    match &e {
        ClientError::Api {
            status,
            code,
            message,
            retryable,
            retry_after,
        } => {
            assert_eq!(*status, 403);
            assert_eq!(code, "binding_mismatch");
            assert_eq!(message, "capture belongs to another account");
            assert!(!retryable);
            assert_eq!(*retry_after, None);
        }
        other => panic!("expected Api, got {other:?}"),
    }
    assert_eq!(e.status(), Some(403));
    assert_eq!(e.code(), Some("binding_mismatch"));
    assert_eq!(e.api_message(), Some("capture belongs to another account"));
    assert!(!e.is_retryable());
    assert!(!e.is_transport());
    assert!(e.to_string().contains("binding_mismatch"), "{e}");
}

#[tokio::test]
async fn a_503_with_retry_after_is_retryable_after_that_delay() {
    let runner = FakeRunner::with(|_| {
        Reply::envelope(503, "busy", "all browsers are in use", false).header("retry-after", "7")
    })
    .await;
    let e = runner.client().post(&post_request()).await.unwrap_err();
    assert_eq!(e.status(), Some(503));
    assert_eq!(e.code(), Some("busy"));
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    assert!(e.is_retryable());
    assert_eq!(
        runner.seen().len(),
        1,
        "the client must not retry by itself"
    );
}

#[tokio::test]
async fn retryability_follows_the_envelope_flag_and_429() {
    let runner = FakeRunner::with(|seen| match seen.path.as_str() {
        "/v1/capture/start" => Reply::envelope(409, "capture_limit", "too many", true),
        "/v1/probe" => Reply::envelope(422, "invalid_scope", "bad scope", false),
        _ => Reply::raw(429, "text/plain", "slow down"),
    })
    .await;
    let client = runner.client();
    let conflict = client
        .capture_start(&capture_start_request())
        .await
        .unwrap_err();
    assert_eq!(conflict.status(), Some(409));
    assert!(conflict.is_retryable());
    let invalid = client.probe(&probe_request(None)).await.unwrap_err();
    assert_eq!(invalid.code(), Some("invalid_scope"));
    assert!(!invalid.is_retryable());
    let limited = client.platforms().await.unwrap_err();
    assert_eq!(limited.code(), Some("http_429"));
    assert!(limited.is_retryable());
    assert_eq!(limited.retry_after(), None);
}

#[tokio::test]
async fn a_non_envelope_502_gets_a_synthetic_code_and_a_short_message() {
    let page = format!(
        "<html><body>upstream-canary {}</body></html>",
        "x".repeat(1 << 20)
    );
    let runner = FakeRunner::with(move |_| Reply::raw(502, "text/html", page.clone())).await;
    let e = runner.client().platforms().await.unwrap_err();
    let ClientError::Api {
        status,
        code,
        message,
        retryable,
        ..
    } = &e
    else {
        panic!("expected Api, got {e:?}");
    };
    assert_eq!((*status, code.as_str()), (502, "http_502"));
    assert!(!retryable);
    assert!(!e.is_retryable());
    assert!(message.len() < 200, "{message}");
    assert!(message.contains("502"), "{message}");
    assert!(!message.contains("canary"), "{message}");
    assert!(!message.contains("xxxx"), "{message}");
}

#[tokio::test]
async fn a_json_body_that_is_not_an_envelope_is_not_taken_for_one() {
    let runner = FakeRunner::with(|_| Reply::json(500, json!({"message": "boom-canary"}))).await;
    let e = runner.client().platforms().await.unwrap_err();
    assert_eq!(e.code(), Some("http_500"));
    assert!(!e.to_string().contains("boom-canary"), "{e}");
}

#[tokio::test]
async fn a_post_that_gets_a_500_is_sent_exactly_once() {
    let runner = FakeRunner::with(|_| {
        Reply::envelope(500, "internal", "strategy crashed", true).header("retry-after", "0")
    })
    .await;
    let e = runner.client().post(&post_request()).await.unwrap_err();
    assert_eq!(e.status(), Some(500));
    assert_eq!(e.code(), Some("internal"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runner.seen().len(), 1);
}

#[tokio::test]
async fn a_post_that_times_out_is_sent_exactly_once_and_is_not_retryable() {
    let runner =
        FakeRunner::with(|seen| runner_answers(seen).delayed(Duration::from_secs(3))).await;
    let client = AgentRunnerClient::builder(runner.url("/"))
        .token(TOKEN)
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let e = client.post(&post_request()).await.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(e.is_transport());
    assert!(!e.is_connect());
    assert!(
        !e.is_retryable(),
        "a post that may have run is never retryable"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runner.seen().len(), 1);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let target = FakeRunner::start().await;
    let location = target.url("/v1/platforms");
    let runner = FakeRunner::with(move |_| {
        Reply::raw(307, "text/plain", "moved").header("location", &location)
    })
    .await;
    let e = runner.client().platforms().await.unwrap_err();
    assert_eq!(e.status(), Some(307));
    assert_eq!(e.code(), Some("http_307"));
    assert!(!e.to_string().contains(&target.addr.to_string()), "{e}");
    assert_eq!(runner.seen().len(), 1);
    assert!(target.seen().is_empty(), "the redirect was followed");
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error_without_the_url() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = AgentRunnerClient::new(format!("http://{addr}/"), TOKEN).unwrap();

    let e = client
        .capture_status(&CaptureRef {
            capture_id: "capture-id-canary".into(),
            ..capture_ref()
        })
        .await
        .unwrap_err();
    match &e {
        ClientError::Transport {
            operation, kind, ..
        } => {
            assert_eq!(*operation, Operation::CaptureStatus);
            assert_eq!(*kind, TransportKind::Connect);
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    assert!(e.is_transport() && e.is_connect());
    assert_eq!(e.status(), None);
    assert!(e.is_retryable(), "a read-only GET may be retried");
    let text = format!("{e} {e:?}");
    assert!(!text.contains("canary"), "{text}");
    assert!(!text.contains("/v1/capture"), "{text}");

    let e = client.post(&post_request()).await.unwrap_err();
    assert!(e.is_connect(), "{e:?}");
    assert!(!e.is_retryable(), "a post is never reported retryable");
}

#[tokio::test]
async fn a_2xx_body_of_the_wrong_shape_is_a_decode_error_without_its_values() {
    let runner = FakeRunner::with(|_| {
        Reply::json(
            200,
            json!({"ok": "session-value-canary", "timing": {"totalMs": 1}}),
        )
    })
    .await;
    let e = runner.client().post(&post_request()).await.unwrap_err();
    match &e {
        ClientError::Decode {
            operation, status, ..
        } => {
            assert_eq!((*operation, *status), (Operation::Post, 200));
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    assert!(!e.is_retryable());
    let text = format!("{e} {e:?}");
    assert!(text.contains("AgentPostResult"), "{text}");
    assert!(!text.contains("canary"), "{text}");
}

#[tokio::test]
async fn an_empty_2xx_body_is_a_decode_error() {
    let runner = FakeRunner::with(|_| Reply::raw(204, "application/json", "")).await;
    let e = runner.client().health().await.unwrap_err();
    assert!(
        matches!(e, ClientError::Decode { status: 204, .. }),
        "{e:?}"
    );
}
