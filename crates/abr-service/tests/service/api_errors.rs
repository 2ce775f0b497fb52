//! Every refusal of the HTTP API, with its status and its JSON error envelope
//! `{"error": {"code", "message", "retryable"}}`: authentication, unknown things, unreadable
//! or ill-typed bodies, over-broad scopes, body limit, capture binding, capture not signed in
//! yet, and a full runner. In-process (`oneshot`) on the core's fakes: no browser.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_core::testing::{Script, StrategyScript};
use axum::body::Body;
use axum::http::{Method, Request, header};
use common::fake::*;
use common::random_suffix;
use serde_json::json;

use crate::common;

fn post_body(platform: &str) -> serde_json::Value {
    json!({ "platform": platform, "session": {"cookies": [], "origins": []},
            "content": {"text": "hello"}, "workspaceId": "ws", "accountId": "acct" })
}

/// The body of `POST path` (`/v1/post` or `/v1/probe`, which has no content) for `platform`.
fn body_for(path: &str, platform: &str) -> serde_json::Value {
    let mut body = post_body(platform);
    if path == "/v1/probe"
        && let Some(fields) = body.as_object_mut()
    {
        fields.remove("content");
    }
    body
}

fn assert_unauthorized(reply: &Reply, case: &str) {
    assert_eq!(reply.error(), (401, "unauthorized".into(), false), "{case}");
    assert_eq!(
        reply.header("www-authenticate"),
        Some("Bearer"),
        "{case}: a 401 names the scheme"
    );
}

#[tokio::test]
async fn credentials_are_checked_before_anything_else() {
    let s = fake_stack();
    let app = &s.app;
    assert_unauthorized(&get(app, "/v1/platforms").await, "no Authorization");
    for (case, value) in [
        (
            "wrong token",
            "Bearer wrong-token-0123456789abcdef".to_owned(),
        ),
        (
            "Basic scheme with the right token",
            format!("Basic {FAKE_TOKEN}"),
        ),
        (
            "Token scheme with the right token",
            format!("Token {FAKE_TOKEN}"),
        ),
        ("no scheme", FAKE_TOKEN.to_owned()),
        ("empty bearer", "Bearer ".to_owned()),
        (
            "a prefix of the token",
            format!("Bearer {}", &FAKE_TOKEN[..20]),
        ),
    ] {
        let request = Request::builder()
            .uri("/v1/platforms")
            .header(header::AUTHORIZATION, value)
            .body(Body::empty())
            .unwrap();
        assert_unauthorized(&call(app, request).await, case);
    }
    let twice = Request::builder()
        .uri("/v1/platforms")
        .header(header::AUTHORIZATION, format!("Bearer {FAKE_TOKEN}"))
        .header(header::AUTHORIZATION, format!("Bearer {FAKE_TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_unauthorized(&call(app, twice).await, "two Authorization headers");
    // Authentication comes before the body is read: a bad body without a token is a 401.
    let bad = Request::builder()
        .method(Method::POST)
        .uri("/v1/post")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{not json"))
        .unwrap();
    assert_unauthorized(&call(app, bad).await, "post without a token");
    assert_unauthorized(
        &get(app, "/v1/capture/some-capture-id").await,
        "capture status without a token",
    );
    // The controls: the scheme is case-insensitive, and both rotated tokens are accepted.
    for value in [
        format!("bearer {FAKE_TOKEN}"),
        format!("Bearer {FAKE_TOKEN_NEXT}"),
    ] {
        let request = Request::builder()
            .uri("/v1/platforms")
            .header(header::AUTHORIZATION, value)
            .body(Body::empty())
            .unwrap();
        let reply = call(app, request).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.json()["platforms"][0]["id"], FAKE_PLATFORM);
    }
    // Health needs no token.
    let health = get(app, "/v1/health").await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    assert_eq!(
        s.provider.acquired(),
        0,
        "no refused request acquired a browser"
    );
}

#[tokio::test]
async fn unknown_things_are_404_and_other_methods_405() {
    let s = fake_stack();
    let app = &s.app;
    for path in ["/v1/post", "/v1/probe"] {
        let reply = post_json(app, path, &body_for(path, "nope")).await;
        assert_eq!(
            reply.error(),
            (404, "unknown_platform".into(), false),
            "{path}"
        );
    }
    let reply = post_json(
        app,
        "/v1/capture/start",
        &json!({"workspaceId": "ws", "accountId": "acct", "platform": "nope"}),
    )
    .await;
    assert_eq!(reply.error(), (404, "unknown_platform".into(), false));
    let missing = json!({"captureId": "no-such-capture", "workspaceId": "ws", "accountId": "acct"});
    for path in ["/v1/capture/finish", "/v1/capture/cancel"] {
        let reply = post_json(app, path, &missing).await;
        assert_eq!(
            reply.error(),
            (404, "capture_not_found".into(), false),
            "{path}"
        );
    }
    let reply = get_authed(
        app,
        "/v1/capture/no-such-capture?workspaceId=ws&accountId=acct",
    )
    .await;
    assert_eq!(reply.error(), (404, "capture_not_found".into(), false));
    let reply = post_json(app, "/v1/capture/status", &missing).await;
    assert_eq!(reply.error(), (404, "capture_not_found".into(), false));
    for (path, authed) in [
        ("/v1/nope", true),
        ("/v1/nope", false),
        ("/nope", false),
        ("/v1/capture/a/b", true),
    ] {
        let reply = if authed {
            get_authed(app, path).await
        } else {
            get(app, path).await
        };
        assert_eq!(reply.error(), (404, "not_found".into(), false), "{path}");
    }
    for (path, expected_allow) in [("/v1/post", "POST"), ("/v1/health", "GET")] {
        let reply = call(
            app,
            authed(Method::DELETE, path).body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(
            reply.error(),
            (405, "method_not_allowed".into(), false),
            "{path}"
        );
        assert!(
            reply
                .header("allow")
                .is_some_and(|a| a.contains(expected_allow)),
            "{path}: {:?}",
            reply.header("allow")
        );
    }
    assert_eq!(s.provider.acquired(), 0);
}

#[tokio::test]
async fn unreadable_and_ill_typed_bodies_are_400_415_and_422_without_echo() {
    let s = fake_stack();
    let app = &s.app;
    let valid = post_body("nope").to_string();
    for (case, body) in [
        ("truncated", r#"{"platform": "fake","#.to_owned()),
        ("empty", String::new()),
        ("trailing garbage", format!("{valid} x")),
        ("a single quote", "'".to_owned()),
    ] {
        let reply = call(
            app,
            authed(Method::POST, "/v1/post")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
        assert_eq!(reply.error(), (400, "invalid_json".into(), false), "{case}");
    }
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut request = authed(Method::POST, "/v1/post");
        if let Some(ct) = content_type {
            request = request.header(header::CONTENT_TYPE, ct);
        }
        let reply = call(app, request.body(Body::from(valid.clone())).unwrap()).await;
        assert_eq!(
            reply.error(),
            (415, "unsupported_media_type".into(), false),
            "{content_type:?}"
        );
    }
    // The control: JSON with a charset parameter is read (and the platform is unknown).
    let reply = call(
        app,
        authed(Method::POST, "/v1/post")
            .header(header::CONTENT_TYPE, "Application/JSON; charset=utf-8")
            .body(Body::from(valid))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.error().1, "unknown_platform");

    let canary = format!("CANARY-422-{}", random_suffix());
    let cookie = |field: &str| {
        let mut c = json!({
            "name": "sid", "value": "v", "domain": "fake.example", "path": "/",
            "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"
        });
        c[field] = serde_json::Value::String(canary.clone());
        json!({"cookies": [c], "origins": []})
    };
    for (case, body) in [
        (
            "session is a string",
            json!({"platform": "fake", "session": canary, "content": {"text": "x"}}),
        ),
        (
            "content is a string",
            json!({"platform": "fake", "session": {}, "content": canary}),
        ),
        (
            "cookie expires is a string",
            json!({"platform": "fake", "session": cookie("expires"), "content": {"text": "x"}}),
        ),
        (
            "unknown sameSite",
            json!({"platform": "fake", "session": cookie("sameSite"), "content": {"text": "x"}}),
        ),
        (
            "scope domains are a string",
            json!({"platform": "fake", "session": {}, "content": {"text": "x"}, "scope": {"cookieDomains": canary}}),
        ),
    ] {
        let reply = post_json(app, "/v1/post", &body).await;
        assert_eq!(
            reply.error(),
            (422, "invalid_request".into(), false),
            "{case}"
        );
        assert!(
            !reply.body.contains("CANARY"),
            "{case}: the error echoes the value: {}",
            reply.body
        );
    }
    let reply = post_json(app, "/v1/post", &json!({"platform": "fake"})).await;
    assert_eq!(reply.error().1, "invalid_request");
    assert!(reply.message().contains("content"), "{}", reply.message());

    // An over-broad request scope is refused before any browser is acquired.
    let broad = json!({"cookieDomains": ["com"], "origins": []});
    let mut post = post_body(FAKE_PLATFORM);
    post["scope"] = broad.clone();
    let mut probe = body_for("/v1/probe", FAKE_PLATFORM);
    probe["scope"] = broad.clone();
    let mut start = fake_start("ws", "acct");
    start["scope"] = broad;
    for (path, body) in [
        ("/v1/post", &post),
        ("/v1/probe", &probe),
        ("/v1/capture/start", &start),
    ] {
        let reply = post_json(app, path, body).await;
        assert_eq!(
            reply.error(),
            (422, "invalid_scope".into(), false),
            "{path}"
        );
    }
    assert_eq!(
        s.provider.acquired(),
        0,
        "no refused request may start a browser"
    );
    assert!(s.strategy.posted().is_empty());
}

#[tokio::test]
async fn a_capture_is_bound_to_its_tenant_and_gone_once_cancelled() {
    let s = fake_stack();
    let app = &s.app;
    let (id, live) = fake_capture(app).await;
    assert_eq!(s.provider.acquired(), 1);
    for wrong in [
        json!({"captureId": id, "workspaceId": "ws", "accountId": "acct-other"}),
        json!({"captureId": id, "workspaceId": "ws-other", "accountId": "acct"}),
    ] {
        for path in [
            "/v1/capture/finish",
            "/v1/capture/cancel",
            "/v1/capture/status",
        ] {
            let reply = post_json(app, path, &wrong).await;
            assert_eq!(
                reply.error(),
                (403, "binding_mismatch".into(), false),
                "{path}"
            );
        }
        let query = format!(
            "/v1/capture/{id}?workspaceId={}&accountId={}",
            wrong["workspaceId"].as_str().unwrap(),
            wrong["accountId"].as_str().unwrap()
        );
        let reply = get_authed(app, &query).await;
        assert_eq!(
            reply.error(),
            (403, "binding_mismatch".into(), false),
            "GET"
        );
    }
    // The capture id alone does not tell the status either.
    let reply = get_authed(app, &format!("/v1/capture/{id}")).await;
    assert_eq!(reply.error(), (422, "invalid_request".into(), false));
    // A refused finish or cancel leaves the capture open.
    let status = get_authed(
        app,
        &format!("/v1/capture/{id}?workspaceId=ws&accountId=acct"),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(status.json()["state"], "open");
    let right = json!({"captureId": id, "workspaceId": "ws", "accountId": "acct"});
    assert_eq!(
        post_json(app, "/v1/capture/status", &right).await.status,
        200
    );
    assert_eq!(get(app, &format!("/live/{live}")).await.status, 200);
    let reply = post_json(app, "/v1/capture/finish", &right).await;
    assert_eq!(reply.error(), (409, "not_authenticated".into(), true));

    let reply = post_json(app, "/v1/capture/cancel", &right).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["cancelled"], true);
    assert_eq!(s.provider.released(), 1, "cancel released the browser");
    let reply = post_json(app, "/v1/capture/status", &right).await;
    assert_eq!(reply.error(), (404, "capture_not_found".into(), false));
    let reply = post_json(app, "/v1/capture/finish", &right).await;
    assert_eq!(reply.error(), (404, "capture_not_found".into(), false));
    let reply = get(app, &format!("/live/{live}")).await;
    assert_eq!(reply.error(), (404, "live_view_not_found".into(), false));
}

#[tokio::test]
async fn an_oversized_body_is_a_413_envelope() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.limits.body_limit_bytes = 1024;
    });
    let mut big = post_body(FAKE_PLATFORM);
    big["content"]["text"] = json!("x".repeat(4096));
    let reply = post_json(&s.app, "/v1/post", &big).await;
    assert_eq!(reply.error(), (413, "payload_too_large".into(), false));
    // Under the limit the body is read (and the platform is unknown: no browser).
    let reply = post_json(&s.app, "/v1/post", &post_body("nope")).await;
    assert_eq!(reply.error().1, "unknown_platform");
    assert_eq!(s.provider.acquired(), 0);
}

/// With one job slot and no queue, a request while a post runs is a 503 with Retry-After.
#[tokio::test]
async fn a_full_runner_answers_503_with_retry_after() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.limits.max_concurrent_jobs = 1;
        c.limits.max_queued_jobs = 0;
    });
    s.strategy
        .edit(|script: &mut StrategyScript| script.post = Script::Hang);
    let app = s.app.clone();
    let running =
        tokio::spawn(async move { post_json(&app, "/v1/post", &post_body(FAKE_PLATFORM)).await });
    for _ in 0..200 {
        if s.provider.acquired() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(s.provider.acquired(), 1, "the first post holds the slot");
    for (path, body) in [
        ("/v1/post", post_body(FAKE_PLATFORM)),
        ("/v1/probe", body_for("/v1/probe", FAKE_PLATFORM)),
        ("/v1/capture/start", fake_start("ws", "acct")),
    ] {
        let reply = post_json(&s.app, path, &body).await;
        assert_eq!(reply.error(), (503, "overloaded".into(), true), "{path}");
        let after: u64 = reply
            .header("retry-after")
            .and_then(|v| v.trim().parse().ok())
            .expect("Retry-After in whole seconds");
        assert!(after >= 1, "{path}: Retry-After {after}");
    }
    assert_eq!(s.provider.acquired(), 1, "the refused requests never ran");
    running.abort();
}

/// A post that waited in the queue past its queue deadline never ran: a retryable 503
/// `queue_timeout`, not the "outcome unknown" of a post that started.
#[tokio::test]
async fn a_post_that_never_left_the_queue_is_retryable() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.limits.max_concurrent_jobs = 1;
        c.limits.max_queued_jobs = 4;
        c.limits.request_timeout = std::time::Duration::from_secs(4);
    });
    // The fake platform takes no pacing: the queue deadline is the request's share of it.
    let (budget, _) = s
        .runner
        .config
        .engine()
        .deadlines(std::time::Duration::ZERO, None)
        .unwrap();
    let queue_wait = budget.queue_wait;
    assert!(
        queue_wait < std::time::Duration::from_secs(1),
        "{queue_wait:?}"
    );
    s.strategy
        .edit(|script: &mut StrategyScript| script.post = Script::Hang);
    let app = s.app.clone();
    let running =
        tokio::spawn(async move { post_json(&app, "/v1/post", &post_body(FAKE_PLATFORM)).await });
    for _ in 0..200 {
        if s.provider.acquired() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let started = std::time::Instant::now();
    let reply = post_json(&s.app, "/v1/post", &post_body(FAKE_PLATFORM)).await;
    assert_eq!(
        reply.error(),
        (503, "queue_timeout".into(), true),
        "{}",
        reply.body
    );
    assert!(reply.header("retry-after").is_some());
    assert!(
        started.elapsed() >= queue_wait,
        "refused before its queue deadline"
    );
    assert_eq!(
        s.provider.acquired(),
        1,
        "the queued post never acquired a browser"
    );
    // The post that started and hung past its steps is uncertain, not a timeout of
    // unknown outcome at the HTTP level: its steps fit inside the request deadline.
    let first = running.await.unwrap();
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["uncertain"], true, "{}", first.body);
}

#[test]
fn deadlines_that_do_not_fit_the_request_are_refused_when_the_runner_is_built() {
    use abr_core::StepTimeouts;
    use abr_engine::PosterConfig;
    let mut config = fake_config();
    config.limits.request_timeout = std::time::Duration::from_secs(60);
    let provider: abr_core::DynSessionProvider<abr_core::testing::FakeContext> =
        std::sync::Arc::new(abr_core::testing::FakeProvider::new());
    let built =
        abr_service::runner::RunnerBuilder::with_providers(config, provider.clone(), provider)
            .poster_config(PosterConfig {
                pacing: None,
                timeouts: StepTimeouts::default(),
            })
            .build();
    let e = built.unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    assert!(e.to_string().contains("request deadline"), "{e}");
}

/// Tenant ids are bounded on every operation, before anything records them: a 2 MiB
/// workspaceId is a 422, never a 2 MiB audit line.
#[tokio::test]
async fn tenant_ids_are_bounded_on_post_probe_and_capture() {
    let s = fake_stack();
    let huge = "w".repeat(2 * 1024 * 1024);
    for path in ["/v1/post", "/v1/probe"] {
        for field in ["workspaceId", "accountId"] {
            let mut body = body_for(path, FAKE_PLATFORM);
            body[field] = json!(huge);
            let reply = post_json(&s.app, path, &body).await;
            assert_eq!(
                reply.error(),
                (422, "invalid_request".into(), false),
                "{path} {field}"
            );
            assert!(reply.message().contains(field), "{}", reply.message());
            assert!(reply.body.len() < 1024, "the error echoes the value");
        }
    }
    let mut start = fake_start("ws", "acct");
    start["workspaceId"] = json!(huge);
    let reply = post_json(&s.app, "/v1/capture/start", &start).await;
    assert_eq!(reply.error(), (422, "invalid_request".into(), false));
    assert_eq!(s.provider.acquired(), 0);
}

/// A runner whose store has no `ABR_SESSION_KEY` cannot keep a session: every such call
/// fails the same way until the setting is fixed, so the refusal names the setting and
/// says no retry passes (it was `502 store_failed`, `retryable` by its code's table).
#[tokio::test]
async fn a_store_without_its_session_key_is_a_non_retryable_refusal_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let store = abr_store::SqliteStore::open(&dir.path().join("abr.db"), None, false).unwrap();
    let s = fake_stack_on(
        std::sync::Arc::new(store),
        abr_core::testing::FakeProvider::new(),
        |_| {},
    );
    let body = json!({"session": {"cookies": [{"name": "sid", "value": "v", "domain": "fake.example",
        "path": "/"}], "origins": []}, "platform": FAKE_PLATFORM});
    let reply = call(
        &s.app,
        authed(Method::PUT, "/v1/sessions/alice")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(
        reply.error(),
        (500, "store_misconfigured".into(), false),
        "{}",
        reply.body
    );
    assert!(
        reply.message().contains("ABR_SESSION_KEY"),
        "{}",
        reply.body
    );
    assert!(reply.header("retry-after").is_none());
}

/// A capture start that cannot succeed is refused at once, never after waiting for a job
/// slot: with the runner's only slot held by a post, an unknown platform and a full set of
/// capture slots answer in well under the wait a slot would take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_start_that_cannot_succeed_is_refused_before_it_waits_for_a_slot() {
    let s = fake_stack_with(abr_core::testing::FakeProvider::new(), |c| {
        c.limits.max_concurrent_jobs = 1;
        c.limits.max_open_captures = 1;
    });
    // One capture open: every capture slot is taken.
    let open = post_json(&s.app, "/v1/capture/start", &fake_start("ws", "acct")).await;
    assert_eq!(open.status, 200, "{}", open.body);
    // The only job slot, held by a post mid-job.
    let hold = s.strategy.hold_posts();
    let app = s.app.clone();
    let held =
        tokio::spawn(async move { post_json(&app, "/v1/post", &post_body(FAKE_PLATFORM)).await });
    for _ in 0..100 {
        if s.provider.open_leases() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for (body, refusal) in [
        (
            fake_start_on("ws", "acct", "nowhere"),
            (404, "unknown_platform"),
        ),
        (fake_start("ws", "acct"), (429, "capture_limit")),
    ] {
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            post_json(&s.app, "/v1/capture/start", &body),
        )
        .await
        .expect("refused at once, not after a job slot");
        let (status, code, _) = answered.error();
        assert_eq!((status, code.as_str()), refusal, "{}", answered.body);
    }
    hold.add_permits(10);
    assert_eq!(held.await.unwrap().status, 200);
}

fn fake_start_on(workspace: &str, account: &str, platform: &str) -> serde_json::Value {
    json!({ "workspaceId": workspace, "accountId": account, "platform": platform })
}
