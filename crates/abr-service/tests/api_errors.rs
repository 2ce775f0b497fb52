//! Every refusal of the HTTP API, with its status and its JSON error envelope
//! `{"error": {"code", "message", "retryable"}}`: authentication, unknown things, unreadable
//! or ill-typed bodies, over-broad scopes, body limit, capture binding, capture not signed in
//! yet, and a full runner. Raw cases go through reqwest, the rest through abr-client.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use abr_core::DynSessionProvider;
use abr_demo::FaultMode;
use abr_protocol::{CaptureRef, SessionScopeSpec, VerificationMethod};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use common::*;
use reqwest::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};

/// Bound of each test.
const TEST_LIMIT: Duration = Duration::from_secs(240);

fn over_broad_scope() -> Option<SessionScopeSpec> {
    Some(SessionScopeSpec {
        cookie_domains: vec!["com".into()],
        origins: vec![],
    })
}

fn assert_unauthorized(e: &RawError, case: &str) {
    assert_eq!(e.status, 401, "{case}: {}", e.body);
    assert_eq!(e.code, "unauthorized", "{case}");
    assert!(!e.retryable, "{case}");
    assert_eq!(
        e.headers
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok()),
        Some("Bearer"),
        "{case}: a 401 names the scheme"
    );
}

/// Authentication, unknown things, unreadable and ill-typed bodies, over-broad scopes (with no
/// browser started for any of them), then a capture: binding mismatch, not signed in yet,
/// cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_their_status_and_the_error_envelope() {
    tokio::time::timeout(TEST_LIMIT, refusals())
        .await
        .expect("the test took too long");
}

async fn refusals() {
    // One local provider for jobs and captures, to count the browsers it launches.
    let provider = Arc::new(LocalBrowserSessionProvider::new(
        LocalProviderConfig::default(),
    ));
    let stack = {
        let jobs = Arc::clone(&provider) as DynSessionProvider<BrowserSession>;
        let captures = Arc::clone(&provider) as DynSessionProvider<BrowserSession>;
        stack_with(
            |_| {},
            move |b| b.job_provider(jobs).capture_provider(captures),
        )
        .await
    };
    let client = &stack.client;
    let base = stack.server.base_url();
    let http = raw_http();
    let platforms = format!("{base}/v1/platforms");
    let bearer = format!("Bearer {TOKEN}");

    // --- 401: no, wrong, malformed or ambiguous credentials.
    let e = raw_error(http.get(&platforms).send().await.unwrap()).await;
    assert_unauthorized(&e, "no Authorization");
    for (case, value) in [
        (
            "wrong token",
            "Bearer wrong-token-0123456789abcdef".to_owned(),
        ),
        (
            "Basic scheme with the right token",
            format!("Basic {TOKEN}"),
        ),
        (
            "Token scheme with the right token",
            format!("Token {TOKEN}"),
        ),
        ("no scheme", TOKEN.to_owned()),
        ("empty bearer", "Bearer ".to_owned()),
    ] {
        let response = http
            .get(&platforms)
            .header(AUTHORIZATION, value)
            .send()
            .await
            .unwrap();
        assert_unauthorized(&raw_error(response).await, case);
    }
    let response = http
        .get(&platforms)
        .header(AUTHORIZATION, &bearer)
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_unauthorized(&raw_error(response).await, "two Authorization headers");
    // Authentication comes before the body is read: a bad body without a token is a 401.
    let response = http
        .post(format!("{base}/v1/post"))
        .header(CONTENT_TYPE, "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_unauthorized(&raw_error(response).await, "post without a token");
    let response = http
        .get(format!("{base}/v1/capture/some-capture-id"))
        .send()
        .await
        .unwrap();
    assert_unauthorized(&raw_error(response).await, "capture status without a token");
    // The controls: the scheme is case-insensitive, and the client's calls are accepted.
    let response = http
        .get(&platforms)
        .header(AUTHORIZATION, format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let listed = client.platforms().await.unwrap();
    assert!(listed.platforms.iter().any(|p| p.id == "demo"));

    // --- Health needs no token.
    let response = http.get(format!("{base}/v1/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let health: serde_json::Value = response.json().await.unwrap();
    assert_eq!(health["status"], "ok");

    // --- 404: unknown platform, capture id, route.
    let session = demo_session("not-a-real-session-token");
    for e in [
        client
            .post(&post_request("nope", session.clone(), "hello"))
            .await
            .unwrap_err(),
        client
            .probe(&probe_request("nope", session.clone()))
            .await
            .unwrap_err(),
        client
            .capture_start(&abr_protocol::CaptureStartRequest {
                platform: "nope".into(),
                ..start_request()
            })
            .await
            .unwrap_err(),
    ] {
        assert_eq!(
            api_error(&e),
            (404, "unknown_platform".into(), false),
            "{e}"
        );
    }
    for e in [
        client.capture_status("no-such-capture").await.unwrap_err(),
        client
            .capture_finish(&bound("no-such-capture"))
            .await
            .unwrap_err(),
        client
            .capture_cancel(&bound("no-such-capture"))
            .await
            .unwrap_err(),
    ] {
        assert_eq!(
            api_error(&e),
            (404, "capture_not_found".into(), false),
            "{e}"
        );
    }
    for (path, authed) in [
        ("/v1/nope", true),
        ("/v1/nope", false),
        ("/nope", false),
        ("/v1/capture/a/b", true),
    ] {
        let mut request = http.get(format!("{base}{path}"));
        if authed {
            request = request.header(AUTHORIZATION, &bearer);
        }
        let e = raw_error(request.send().await.unwrap()).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (404, "not_found", false),
            "{path}: {}",
            e.body
        );
    }

    // --- 405: a known route with another method is an envelope too.
    for (path, authed, expected_allow) in [
        ("/v1/post", true, "POST"),
        ("/v1/post", false, "POST"),
        ("/v1/health", false, "GET"),
    ] {
        let mut request = http.delete(format!("{base}{path}"));
        if authed {
            request = request.header(AUTHORIZATION, &bearer);
        }
        let e = raw_error(request.send().await.unwrap()).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (405, "method_not_allowed", false),
            "{path}: {}",
            e.body
        );
        let allow = e.headers.get(ALLOW).and_then(|v| v.to_str().ok());
        assert!(
            allow.is_some_and(|a| a.contains(expected_allow)),
            "{path}: Allow: {allow:?}"
        );
    }

    // --- 400 / 415: the body is not JSON, or not declared as JSON.
    let post_url = format!("{base}/v1/post");
    let valid_body = serde_json::to_string(&post_request("nope", session.clone(), "x")).unwrap();
    for (case, body) in [
        ("truncated", r#"{"platform": "demo","#.to_owned()),
        ("empty", String::new()),
        ("trailing garbage", format!("{valid_body} x")),
        ("a single quote", "'".to_owned()),
    ] {
        let response = http
            .post(&post_url)
            .header(AUTHORIZATION, &bearer)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let e = raw_error(response).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (400, "invalid_json", false),
            "{case}: {}",
            e.body
        );
    }
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut request = http
            .post(&post_url)
            .header(AUTHORIZATION, &bearer)
            .body(valid_body.clone());
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        let e = raw_error(request.send().await.unwrap()).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (415, "unsupported_media_type", false),
            "{content_type:?}: {}",
            e.body
        );
    }
    // The control: JSON with a charset parameter is read (and the platform is unknown).
    let response = http
        .post(&post_url)
        .header(AUTHORIZATION, &bearer)
        .header(CONTENT_TYPE, "Application/JSON; charset=utf-8")
        .body(valid_body.clone())
        .send()
        .await
        .unwrap();
    let e = raw_error(response).await;
    assert_eq!((e.status, e.code.as_str()), (404, "unknown_platform"));

    // --- 422: well-formed JSON of the wrong shape; the message never echoes the value.
    let canary = format!("CANARY-422-{}", random_suffix());
    let cookie = |field: &str| {
        let mut c = serde_json::json!({
            "name": "sid", "value": "v", "domain": "127.0.0.1", "path": "/",
            "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"
        });
        c[field] = serde_json::Value::String(canary.clone());
        serde_json::json!({"cookies": [c], "origins": []})
    };
    let ill_typed = [
        (
            "session is a string",
            serde_json::json!({"platform": "demo", "session": canary, "content": {"text": "x"}}),
        ),
        (
            "content is a string",
            serde_json::json!({"platform": "demo", "session": {}, "content": canary}),
        ),
        (
            "cookie expires is a string",
            serde_json::json!({"platform": "demo", "session": cookie("expires"), "content": {"text": "x"}}),
        ),
        (
            "unknown sameSite",
            serde_json::json!({"platform": "demo", "session": cookie("sameSite"), "content": {"text": "x"}}),
        ),
        (
            "scope domains are a string",
            serde_json::json!({"platform": "demo", "session": {}, "content": {"text": "x"},
                               "scope": {"cookieDomains": canary}}),
        ),
    ];
    for (case, body) in ill_typed {
        let response = http
            .post(&post_url)
            .header(AUTHORIZATION, &bearer)
            .json(&body)
            .send()
            .await
            .unwrap();
        let e = raw_error(response).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (422, "invalid_request", false),
            "{case}: {}",
            e.body
        );
        assert!(
            !e.body.contains(&canary) && !e.body.contains("CANARY"),
            "{case}: the error echoes the value: {}",
            e.body
        );
    }
    let response = http
        .post(&post_url)
        .header(AUTHORIZATION, &bearer)
        .json(&serde_json::json!({"platform": "demo"}))
        .send()
        .await
        .unwrap();
    let e = raw_error(response).await;
    assert_eq!((e.status, e.code.as_str()), (422, "invalid_request"));
    assert!(
        e.message.contains("session"),
        "names the missing field: {}",
        e.message
    );

    // --- 422: an over-broad request scope, refused before any browser starts.
    let mut post = post_request("demo", session.clone(), "never posted");
    post.scope = over_broad_scope();
    let mut probe = probe_request("demo", session.clone());
    probe.scope = over_broad_scope();
    let mut start = start_request();
    start.scope = over_broad_scope();
    for e in [
        client.post(&post).await.unwrap_err(),
        client.probe(&probe).await.unwrap_err(),
        client.capture_start(&start).await.unwrap_err(),
    ] {
        assert_eq!(api_error(&e), (422, "invalid_scope".into(), false), "{e}");
    }
    assert_eq!(
        provider.launches(),
        0,
        "no refused request may start a browser"
    );
    assert_eq!(stack.server.runner().captures.open_count(), 0);
    assert!(stack.site.posts().is_empty());

    // --- A capture: 403 for the wrong binding, 409 until signed in, cancel with the right one.
    let capture = client.capture_start(&start_request()).await.unwrap();
    assert_eq!(provider.launches(), 1, "the capture started a browser");
    let id = capture.capture_id.clone();
    for wrong in [
        CaptureRef {
            account_id: "acct-other".into(),
            ..bound(&id)
        },
        CaptureRef {
            workspace_id: "ws-other".into(),
            ..bound(&id)
        },
    ] {
        let e = client.capture_finish(&wrong).await.unwrap_err();
        assert_eq!(
            api_error(&e),
            (403, "binding_mismatch".into(), false),
            "{e}"
        );
        let e = client.capture_cancel(&wrong).await.unwrap_err();
        assert_eq!(
            api_error(&e),
            (403, "binding_mismatch".into(), false),
            "{e}"
        );
    }
    // A refused finish or cancel leaves the capture open.
    assert_eq!(client.capture_status(&id).await.unwrap().platform, "demo");
    let live = http.get(&capture.live_view_url).send().await.unwrap();
    assert_eq!(live.status(), 200, "the live view is served while open");

    let e = client.capture_finish(&bound(&id)).await.unwrap_err();
    assert_eq!(
        api_error(&e),
        (409, "not_authenticated".into(), true),
        "{e}"
    );
    assert!(e.is_retryable());
    assert_eq!(client.capture_status(&id).await.unwrap().platform, "demo");

    let cancelled = client.capture_cancel(&bound(&id)).await.unwrap();
    assert!(cancelled.cancelled);
    assert_eq!(stack.server.runner().captures.open_count(), 0);
    let e = client.capture_status(&id).await.unwrap_err();
    assert_eq!(
        api_error(&e),
        (404, "capture_not_found".into(), false),
        "{e}"
    );
    let e = client.capture_finish(&bound(&id)).await.unwrap_err();
    assert_eq!(
        api_error(&e),
        (404, "capture_not_found".into(), false),
        "{e}"
    );
    let e = raw_error(http.get(&capture.live_view_url).send().await.unwrap()).await;
    assert_eq!(
        (e.status, e.code.as_str()),
        (404, "live_view_not_found"),
        "{}",
        e.body
    );

    stack.server.shutdown().await;
    provider.shutdown().await;
    stack.site.shutdown().await;
}

/// A body over `body_limit_bytes` is a 413 envelope; a body under it is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_a_413_envelope() {
    tokio::time::timeout(TEST_LIMIT, async {
        let stack = stack_with(|c| c.limits.body_limit_bytes = 1024, |b| b).await;
        let session = demo_session("not-a-real-session-token");
        let big = post_request("demo", session.clone(), &"x".repeat(4096));

        let e = stack.client.post(&big).await.unwrap_err();
        assert_eq!(
            api_error(&e),
            (413, "payload_too_large".into(), false),
            "{e}"
        );
        let response = raw_http()
            .post(format!("{}/v1/post", stack.server.base_url()))
            .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
            .json(&big)
            .send()
            .await
            .unwrap();
        let e = raw_error(response).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (413, "payload_too_large", false),
            "{}",
            e.body
        );
        // Under the limit the body is read (and the platform is unknown: no browser).
        let e = stack
            .client
            .post(&post_request("nope", session, "small"))
            .await
            .unwrap_err();
        assert_eq!(
            api_error(&e),
            (404, "unknown_platform".into(), false),
            "{e}"
        );
        assert!(stack.site.posts().is_empty());

        stack.server.shutdown().await;
        stack.site.shutdown().await;
    })
    .await
    .expect("the test took too long");
}

/// With one job slot and no queue, a request while a post runs is a 503 with Retry-After;
/// the running post is not disturbed, and the slot is free again afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_runner_answers_503_with_retry_after() {
    tokio::time::timeout(TEST_LIMIT, async {
        let stack = stack_with(
            |c| {
                c.limits.max_concurrent_jobs = 1;
                c.limits.max_queued_jobs = 0;
            },
            |b| b,
        )
        .await;
        let session = signed_in_session(&stack.site, "carol").await;
        stack.site.set_fault(FaultMode::SlowToast);
        let text = format!("the slow post {}", random_suffix());
        let first = {
            let client = stack.client.clone();
            let request = post_request("demo", session.clone(), &text);
            tokio::spawn(async move { client.post(&request).await })
        };
        // Saved by the site: the post is in its job slot, waiting for the toast (3 s).
        wait_for("the first post to be saved", WAIT, || {
            stack.site.posts().iter().any(|p| p.text == text)
        })
        .await;

        let e = stack
            .client
            .post(&post_request("demo", session.clone(), "refused"))
            .await
            .unwrap_err();
        assert_eq!(api_error(&e), (503, "overloaded".into(), true), "{e}");
        assert!(
            e.retry_after()
                .is_some_and(|after| after >= Duration::from_secs(1)),
            "{e:?}"
        );
        assert!(e.is_retryable());
        let e = stack
            .client
            .capture_start(&start_request())
            .await
            .unwrap_err();
        assert_eq!(api_error(&e), (503, "overloaded".into(), true), "{e}");
        let response = raw_http()
            .post(format!("{}/v1/probe", stack.server.base_url()))
            .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
            .json(&probe_request("demo", session.clone()))
            .send()
            .await
            .unwrap();
        let e = raw_error(response).await;
        assert_eq!(
            (e.status, e.code.as_str(), e.retryable),
            (503, "overloaded", true),
            "{}",
            e.body
        );
        let retry_after: u64 = e
            .headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .expect("Retry-After in whole seconds");
        assert!(retry_after >= 1, "Retry-After: {retry_after}");

        let result = tokio::time::timeout(WAIT, first)
            .await
            .expect("the first post never finished")
            .unwrap()
            .unwrap();
        assert!(result.ok, "{result:?}");
        assert_eq!(
            result.verification.as_ref().map(|v| v.method),
            Some(VerificationMethod::Toast),
            "{result:?}"
        );
        assert_eq!(stack.site.posts().len(), 1, "the refused post never ran");
        assert_eq!(stack.server.runner().captures.open_count(), 0);

        // The slot is free again.
        let session = result.refreshed_session.unwrap_or(session);
        let probe = stack
            .client
            .probe(&probe_request("demo", session))
            .await
            .unwrap();
        assert!(probe.authenticated, "{probe:?}");

        stack.server.shutdown().await;
        stack.site.shutdown().await;
    })
    .await
    .expect("the test took too long");
}
