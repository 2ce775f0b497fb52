//! The guard-rail calls of `AgentRunnerClient` (replay frames, the screenshots switch, site
//! decisions, takeovers) against a fake runner (axum on 127.0.0.1:0) that records every
//! request: methods, paths, tenant and actor headers, bodies, and how the answers (JSON,
//! JPEG bytes, 204, envelopes) are read.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

use crate::common;

use abr_client::protocol::{ScreenshotsMode, SiteDecision, TakeoverState};
use abr_client::{AgentRunnerClient, ClientError};
use serde_json::{Value, json};

use common::*;

const TOKEN: &str = "tok-guard-canary";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0-rest-of-a-jpeg";

/// This module's runner: its answers and its token.
trait ThisRunner {
    /// A runner answering every route like the real one.
    async fn start() -> Self;
    fn client(&self) -> AgentRunnerClient;
}

impl ThisRunner for FakeRunner {
    async fn start() -> Self {
        Self::with(answers).await
    }

    fn client(&self) -> AgentRunnerClient {
        self.client_with(TOKEN)
    }
}

fn frame_info(seq: u32) -> Value {
    json!({
        "seq": seq,
        "point": "navigation",
        "url": "https://app.example/users",
        "domain": "app.example",
        "action": "navigate",
        "bytes": JPEG.len(),
        "takenAt": "2030-01-01T00:00:00Z"
    })
}

fn site(domain: &str, decision: &str, by: &str) -> Value {
    json!({"domain": domain, "decision": decision, "decidedBy": by,
           "decidedAt": "2030-01-01T00:00:00Z"})
}

/// The real runner's answers, by method and path.
fn answers(seen: &Seen) -> Reply {
    match (seen.method.as_str(), seen.path.as_str()) {
        ("GET", "/v1/runs/t-1/frames") => Reply::json(
            200,
            json!({"runId": "t-1", "screenshots": {"screenshots": "on"},
                    "frames": [frame_info(1), frame_info(2)]}),
        ),
        ("GET", "/v1/runs/t-off/frames") => Reply::json(
            200,
            json!({"runId": "t-off",
                    "screenshots": {"screenshots": "off", "reason": "tenant_setting"},
                    "frames": []}),
        ),
        ("GET", "/v1/runs/t-1/frames/2") => Reply::raw(200, "image/jpeg", JPEG),
        ("GET", "/v1/settings/screenshots") => Reply::json(200, json!({"enabled": true})),
        ("PUT", "/v1/settings/screenshots") => {
            Reply::raw(200, "application/json", seen.body.clone())
        }
        ("GET", "/v1/sites") => Reply::json(
            200,
            json!({"sites": [site("a.example", "allow", "alice"),
                              site("b.example", "deny", "bob")]}),
        ),
        ("PUT", "/v1/sites/news.example") => {
            Reply::json(200, site("news.example", "deny", "carol"))
        }
        ("DELETE", "/v1/sites/news.example") => Reply::empty(204),
        ("POST", "/v1/tasks/t-1/takeover") => Reply::json(
            200,
            json!({"takeoverId": "to-1", "state": "active",
                    "liveViewUrl": "http://runner.test/live/live-token-canary",
                    "expiresAt": "2030-01-01T00:10:00Z"}),
        ),
        ("POST", "/v1/tasks/t-1/takeover/resume") => {
            Reply::json(200, json!({"takeoverId": "to-1", "state": "resumed"}))
        }
        ("POST", "/v1/tasks/t-1/takeover/end") => {
            Reply::json(200, json!({"takeoverId": "to-1", "state": "ended"}))
        }
        ("GET", p) if p.starts_with("/v1/runs/") => Reply::error(404, "frame_not_found"),
        ("DELETE", p) if p.starts_with("/v1/sites/") => Reply::error(404, "site_not_found"),
        ("POST", p) if p.contains("/takeover") => Reply::error(409, "takeover_over"),
        _ => Reply::error(404, "not_found"),
    }
}

fn assert_call(seen: &Seen, method: &str, path: &str, tenant: &str) {
    assert_eq!((seen.method.as_str(), seen.path.as_str()), (method, path));
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(seen.header("x-tenant-id"), Some(tenant), "{seen:?}");
    if seen.body.is_empty() {
        assert_eq!(seen.header("content-type"), None, "{seen:?}");
    } else {
        assert_eq!(seen.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn frames_are_listed_and_fetched_as_jpeg_bytes_for_the_tenant() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let listed = c.frames("acme", "t-1").await.unwrap();
    assert_eq!(listed.run_id, "t-1");
    assert_eq!(listed.screenshots.screenshots, ScreenshotsMode::On);
    let seqs: Vec<u32> = listed.frames.iter().map(|f| f.seq).collect();
    assert_eq!(seqs, [1, 2]);
    let off = c.frames("acme", "t-off").await.unwrap();
    assert_eq!(off.screenshots.screenshots, ScreenshotsMode::Off);
    assert_eq!(off.screenshots.reason.as_deref(), Some("tenant_setting"));
    assert!(off.frames.is_empty());
    assert_eq!(c.frame("acme", "t-1", 2).await.unwrap(), JPEG);
    let seen = runner.seen();
    assert_call(&seen[0], "GET", "/v1/runs/t-1/frames", "acme");
    assert_call(&seen[1], "GET", "/v1/runs/t-off/frames", "acme");
    assert_call(&seen[2], "GET", "/v1/runs/t-1/frames/2", "acme");
    assert_eq!(seen[2].header("accept"), Some("image/jpeg"));
}

#[tokio::test]
async fn a_missing_or_foreign_frame_is_a_typed_404() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    for e in [
        c.frames("mallory", "t-9").await.unwrap_err(),
        c.frame("mallory", "t-9", 1).await.unwrap_err(),
    ] {
        assert_eq!(
            (e.status(), e.code(), e.is_retryable()),
            (Some(404), Some("frame_not_found"), false),
            "{e:?}"
        );
        assert!(e.is(abr_client::protocol::codes::FRAME_NOT_FOUND));
    }
}

#[tokio::test]
async fn a_frame_that_is_not_jpeg_is_a_decode_error_without_its_body() {
    let runner = FakeRunner::with(|_| {
        Reply::raw(200, "text/html", b"<html>a portal-canary</html>".to_vec())
    })
    .await;
    let e = runner.client().frame("acme", "t-1", 1).await.unwrap_err();
    assert!(
        matches!(e, ClientError::Decode { status: 200, .. }),
        "{e:?}"
    );
    assert!(!e.to_string().contains("canary"), "{e}");
}

#[tokio::test]
async fn the_screenshots_switch_is_read_and_set_with_its_actor() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    assert!(c.screenshots_setting("acme").await.unwrap().enabled);
    let set = c
        .set_screenshots("acme", false, "Alice Admin")
        .await
        .unwrap();
    assert!(!set.enabled);
    let seen = runner.seen();
    assert_call(&seen[0], "GET", "/v1/settings/screenshots", "acme");
    assert_call(&seen[1], "PUT", "/v1/settings/screenshots", "acme");
    assert_eq!(seen[1].json(), json!({"enabled": false}));
    assert_eq!(seen[1].header("x-actor"), Some("Alice Admin"));
}

#[tokio::test]
async fn site_decisions_are_listed_made_and_removed() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let listed = c.sites("acme").await.unwrap();
    let domains: Vec<_> = listed.sites.iter().map(|s| s.domain.as_str()).collect();
    assert_eq!(domains, ["a.example", "b.example"]);
    let entry = c
        .decide_site("acme", "news.example", SiteDecision::Deny, "carol")
        .await
        .unwrap();
    assert_eq!(
        (
            entry.domain.as_str(),
            entry.decision,
            entry.decided_by.as_str()
        ),
        ("news.example", SiteDecision::Deny, "carol")
    );
    c.remove_site("acme", "news.example").await.unwrap();
    let e = c.remove_site("acme", "gone.example").await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(404), Some("site_not_found")));
    let seen = runner.seen();
    assert_call(&seen[0], "GET", "/v1/sites", "acme");
    assert_call(&seen[1], "PUT", "/v1/sites/news.example", "acme");
    assert_eq!(
        seen[1].json(),
        json!({"decision": "deny", "decidedBy": "carol"})
    );
    assert_call(&seen[2], "DELETE", "/v1/sites/news.example", "acme");
    assert_call(&seen[3], "DELETE", "/v1/sites/gone.example", "acme");
}

#[tokio::test]
async fn a_domain_is_one_encoded_path_segment() {
    let runner = FakeRunner::start().await;
    let _ = runner
        .client()
        .decide_site("acme", "https://x.com/a b", SiteDecision::Allow, "alice")
        .await;
    assert_eq!(runner.single().path, "/v1/sites/https:%2F%2Fx.com%2Fa%20b");
}

#[tokio::test]
async fn takeovers_are_started_resumed_and_ended_by_task() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let started = c.take_over("acme", "t-1").await.unwrap();
    assert_eq!(
        (started.takeover_id.as_str(), started.state),
        ("to-1", TakeoverState::Active)
    );
    assert!(started.live_view_url.ends_with("/live/live-token-canary"));
    let resumed = c.resume_takeover("acme", "t-1").await.unwrap();
    assert_eq!(resumed.state, TakeoverState::Resumed);
    let ended = c.end_takeover("acme", "t-1").await.unwrap();
    assert_eq!(ended.state, TakeoverState::Ended);
    let e = c.end_takeover("acme", "t-2").await.unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(409), Some("takeover_over")));
    let seen = runner.seen();
    assert_call(&seen[0], "POST", "/v1/tasks/t-1/takeover", "acme");
    assert_call(&seen[1], "POST", "/v1/tasks/t-1/takeover/resume", "acme");
    assert_call(&seen[2], "POST", "/v1/tasks/t-1/takeover/end", "acme");
    assert!(seen.iter().all(|s| s.body.is_empty()));
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let runner = FakeRunner::start().await;
    let c = runner.client();
    let errors = [
        c.frames("acme", "").await.unwrap_err(),
        c.frames("", "t-1").await.unwrap_err(),
        c.frame("acme", "t-1", 0).await.unwrap_err(),
        c.frame("acme", "", 1).await.unwrap_err(),
        c.screenshots_setting("a\nb-canary").await.unwrap_err(),
        c.set_screenshots("acme", true, "").await.unwrap_err(),
        c.set_screenshots("acme", true, "eve\r\nx-tenant-id: canary")
            .await
            .unwrap_err(),
        c.sites("").await.unwrap_err(),
        c.decide_site("acme", "", SiteDecision::Allow, "alice")
            .await
            .unwrap_err(),
        c.remove_site("acme", "").await.unwrap_err(),
        c.take_over("acme", "").await.unwrap_err(),
        c.resume_takeover("", "t-1").await.unwrap_err(),
        c.end_takeover("acme", "").await.unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, ClientError::InvalidArgument { .. }), "{e:?}");
        assert!(!e.to_string().contains("canary"), "{e}");
    }
    assert!(runner.seen().is_empty());
}
