//! The guard-rail API over HTTP, in-process (`oneshot`) on the core's fakes: replay frames
//! (`/v1/runs/{runId}/frames`) served to their tenant only, as JPEG with headers that keep
//! them out of caches and browsers' sniffing; the screenshots switch and its audit event;
//! a tenant's site decisions (`/v1/sites`), validated and isolated; the bearer token on
//! every endpoint; and the client's calls over a socket.
//!
//! Frames are written through the runner's own `FrameStore` (the endpoints only read).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use abr_core::guard::{FrameRecorder, FrameRefused, FrameStore, StoredFrame};
use abr_core::testing::{FakeProvider, ScriptedStrategy};
use abr_core::{
    AuditAction, AuditEvent, DynSessionProvider, MemoryAuditSink, SystemClock, WebPostStrategy,
};
use abr_protocol::{FrameInfo, FramePoint, RunScreenshots, ScreenshotsMode, SiteDecision};
use abr_service::runner::{Runner, RunnerBuilder};
use abr_service::server::RunningServer;
use abr_store::SqliteStore;
use axum::body::Body;
use axum::http::{Method, Request, header};
use common::fake::*;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// A JPEG as far as anyone serving it can tell (its magic bytes).
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00-frame-";
const VICTIM: &str = "acme";
const ATTACKER: &str = "mallory";

struct GuardStack {
    runner: Arc<Runner<abr_core::testing::FakeContext>>,
    app: axum::Router,
    audit: Arc<MemoryAuditSink>,
    /// The runner's store, for frames recorded beneath the API.
    store: Arc<SqliteStore>,
}

/// A runner on the fakes whose audit events are kept in memory.
fn stack() -> GuardStack {
    stack_keeping_profiles(None)
}

/// [`stack`], keeping named profiles in `profile_dir` (none without).
fn stack_keeping_profiles(profile_dir: Option<std::path::PathBuf>) -> GuardStack {
    let provider = Arc::new(FakeProvider::new().with_profiles());
    let as_dyn: DynSessionProvider<_> = provider;
    let strategy: Arc<dyn WebPostStrategy<_>> =
        Arc::new(ScriptedStrategy::new(FAKE_PLATFORM, &fake_policy()));
    let audit = Arc::new(MemoryAuditSink::new());
    let store = Arc::new(SqliteStore::in_memory(None).unwrap());
    let mut config = fake_config();
    config.providers.profile_dir = profile_dir;
    let runner = RunnerBuilder::with_providers(config, as_dyn.clone(), as_dyn)
        .store(store.clone())
        .profiles(store.clone())
        .strategy(strategy)
        .unwrap()
        .audit(Arc::clone(&audit) as Arc<dyn abr_core::AuditSink>)
        .build()
        .unwrap();
    let runner = Arc::new(runner);
    let app = abr_service::http::app(Arc::clone(&runner));
    GuardStack {
        runner,
        app,
        audit,
        store,
    }
}

/// A request with the token, a tenant, extra headers and a JSON body.
async fn send(
    app: &axum::Router,
    method: Method,
    path: &str,
    tenant: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let mut all: Vec<(&str, &str)> = tenant.map(|t| ("x-tenant-id", t)).into_iter().collect();
    all.extend_from_slice(headers);
    request_as(app, FAKE_TOKEN, method, path, &all, body).await
}

async fn get_as(app: &axum::Router, tenant: &str, path: &str) -> Reply {
    send(app, Method::GET, path, Some(tenant), &[], None).await
}

/// The exact bytes of a frame the tenant fetches (a [`Reply`] body is text).
async fn jpeg_of(app: &axum::Router, tenant: &str, path: &str) -> Vec<u8> {
    let request = authed(Method::GET, path)
        .header("x-tenant-id", tenant)
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    axum::body::to_bytes(response.into_body(), 1024 * 1024)
        .await
        .unwrap()
        .to_vec()
}

fn frame(url: &str) -> StoredFrame {
    StoredFrame {
        info: FrameInfo {
            seq: 0,
            point: FramePoint::Navigation,
            url: url.to_owned(),
            domain: "app.example".to_owned(),
            action: "navigate".to_owned(),
            bytes: 0,
            taken_at: time::OffsetDateTime::now_utc(),
            same_as: None,
        },
        jpeg: JPEG.to_vec(),
    }
}

fn on() -> RunScreenshots {
    RunScreenshots {
        screenshots: ScreenshotsMode::On,
        reason: None,
    }
}

/// Records `frames` frames for `tenant`'s run `run_id`, screenshots on.
async fn record_run(store: &dyn FrameStore, tenant: &str, run_id: &str, frames: u32) {
    store.begin_run(tenant, run_id, &on()).await.unwrap();
    for i in 1..=frames {
        let seq = store
            .put_frame(
                tenant,
                run_id,
                frame(&format!("https://app.example/page/{i}")),
            )
            .await
            .unwrap();
        assert_eq!(seq, i);
    }
}

/// Waits for the audit events of `action`.
async fn audited(sink: &MemoryAuditSink, action: AuditAction, count: usize) -> Vec<AuditEvent> {
    common::wait_for("the audit events", Duration::from_secs(10), || {
        sink.events().iter().filter(|e| e.action == action).count() >= count
    })
    .await;
    sink.events()
        .into_iter()
        .filter(|e| e.action == action)
        .collect()
}

/// The keys an event serializes with, sorted.
fn keys(event: &AuditEvent) -> Vec<String> {
    let value = serde_json::to_value(event).unwrap();
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn the_owner_lists_its_frames_and_fetches_each_as_a_jpeg_nobody_caches() {
    let s = stack();
    record_run(s.store.as_ref(), VICTIM, "task-1", 2).await;

    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-1/frames").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let listed = reply.json();
    assert_eq!(listed["runId"], "task-1");
    assert_eq!(listed["screenshots"], json!({"screenshots": "on"}));
    let frames = listed["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0]["seq"], 1);
    assert_eq!(frames[1]["seq"], 2);
    assert_eq!(frames[1]["url"], "https://app.example/page/2");
    assert_eq!(frames[1]["bytes"], JPEG.len());
    assert!(
        !reply.body.contains("JFIF"),
        "metadata only: {}",
        reply.body
    );

    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-1/frames/2").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        jpeg_of(&s.app, VICTIM, "/v1/runs/task-1/frames/2").await,
        JPEG
    );
    assert_eq!(reply.header("content-type"), Some("image/jpeg"));
    assert_eq!(reply.header("cache-control"), Some("no-store, private"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(reply.header("content-disposition"), Some("inline"));
    let csp = reply.header("content-security-policy").unwrap_or_default();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");

    // A frame number the run never reached.
    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-1/frames/3").await;
    assert_eq!(reply.error(), (404, "frame_not_found".to_owned(), false));
}

#[tokio::test]
async fn another_tenants_frames_are_not_found_from_the_attackers_side() {
    let s = stack();
    record_run(s.store.as_ref(), VICTIM, "task-secret", 1).await;

    // What the attacker gets for a run that exists (the victim's) ...
    let list = get_as(&s.app, ATTACKER, "/v1/runs/task-secret/frames").await;
    let one = get_as(&s.app, ATTACKER, "/v1/runs/task-secret/frames/1").await;
    // ... and for one that never existed.
    let list_none = get_as(&s.app, ATTACKER, "/v1/runs/task-none/frames").await;
    let one_none = get_as(&s.app, ATTACKER, "/v1/runs/task-none/frames/1").await;
    for reply in [&list, &one, &list_none, &one_none] {
        assert_eq!(reply.error(), (404, "frame_not_found".to_owned(), false));
        assert!(!reply.body.contains("JFIF"), "{}", reply.body);
    }
    // Indistinguishable: the same answer, word for word.
    assert_eq!(list.body, list_none.body);
    assert_eq!(one.body, one_none.body);

    // Without a tenant header the attacker is the `default` tenant: no better.
    let reply = send(
        &s.app,
        Method::GET,
        "/v1/runs/task-secret/frames/1",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(reply.error(), (404, "frame_not_found".to_owned(), false));
    // A tenant header that names the victim twice is refused, not merged.
    let reply = call(
        &s.app,
        authed(Method::GET, "/v1/runs/task-secret/frames/1")
            .header("x-tenant-id", ATTACKER)
            .header("x-tenant-id", VICTIM)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.error().0, 422, "{}", reply.body);

    // The victim still sees its frame.
    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-secret/frames/1").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test]
async fn a_run_recorded_with_screenshots_off_lists_no_frame() {
    let s = stack();
    // The tenant switches frames off through the API; a run then starts and records it.
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/settings/screenshots",
        Some(VICTIM),
        &[],
        Some(&json!({"enabled": false})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (recorder, setting) = FrameRecorder::begin(
        s.store.clone(),
        Arc::new(SystemClock),
        VICTIM,
        "task-off",
        &abr_core::guard::PlatformFrames::on(),
    )
    .await
    .unwrap();
    assert!(!recorder.is_on());
    assert_eq!(setting.screenshots, ScreenshotsMode::Off);
    // Even a frame written past the recorder is refused by the store.
    let refused = s
        .store
        .put_frame(VICTIM, "task-off", frame("https://app.example/"))
        .await;
    assert!(
        matches!(refused, Err(FrameRefused::ScreenshotsOff)),
        "{refused:?}"
    );

    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-off/frames").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({"runId": "task-off",
               "screenshots": {"screenshots": "off", "reason": "tenant_setting"},
               "frames": []})
    );
    let reply = get_as(&s.app, VICTIM, "/v1/runs/task-off/frames/1").await;
    assert_eq!(reply.error(), (404, "frame_not_found".to_owned(), false));
}

#[tokio::test]
async fn a_frame_number_that_is_not_a_positive_integer_is_a_422_envelope() {
    let s = stack();
    record_run(s.store.as_ref(), VICTIM, "task-1", 1).await;
    for bad in ["0", "-1", "%2B1", "abc", "1.5", "1e3", "4294967296", "%20"] {
        let reply = get_as(&s.app, VICTIM, &format!("/v1/runs/task-1/frames/{bad}")).await;
        assert_eq!(
            reply.error(),
            (422, "invalid_request".to_owned(), false),
            "{bad}: {}",
            reply.body
        );
        assert!(reply.message().contains("seq"), "{}", reply.message());
    }
    // A path that is not UTF-8 once decoded is an envelope too, never axum's plain text.
    let reply = get_as(&s.app, VICTIM, "/v1/runs/%FF/frames/1").await;
    assert_eq!(reply.error(), (422, "invalid_request".to_owned(), false));
}

#[tokio::test]
async fn the_screenshots_switch_round_trips_per_tenant_and_is_audited() {
    let s = stack();
    let get = |tenant| {
        let app = s.app.clone();
        async move {
            get_as(&app, tenant, "/v1/settings/screenshots")
                .await
                .json()
        }
    };
    assert_eq!(get(VICTIM).await, json!({"enabled": true}), "on by default");

    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/settings/screenshots",
        Some(VICTIM),
        &[("x-actor", "  Alice Admin ")],
        Some(&json!({"enabled": false})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json(), json!({"enabled": false}));
    assert_eq!(get(VICTIM).await, json!({"enabled": false}));
    assert_eq!(get(ATTACKER).await, json!({"enabled": true}), "per tenant");

    let events = audited(&s.audit, AuditAction::ScreenshotsChanged, 1).await;
    let event = &events[0];
    assert_eq!(event.workspace_id.as_deref(), Some(VICTIM));
    assert_eq!(event.actor.as_deref(), Some("Alice Admin"));
    // The key that changed it, whatever name the caller gave.
    assert_eq!(event.key_id.as_deref(), Some("bootstrap"));
    assert_eq!(event.screenshots_enabled, Some(false));
    assert_eq!(
        keys(event),
        [
            "action",
            "actor",
            "at",
            "keyId",
            "outcome",
            "platform",
            "screenshotsEnabled",
            "workspaceId"
        ]
    );

    // Without x-actor the change is still audited, as made by `unknown`.
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/settings/screenshots",
        Some(VICTIM),
        &[],
        Some(&json!({"enabled": true})),
    )
    .await;
    assert_eq!(reply.json(), json!({"enabled": true}));
    let events = audited(&s.audit, AuditAction::ScreenshotsChanged, 2).await;
    assert!(
        events
            .iter()
            .any(|e| e.actor.as_deref() == Some("unknown") && e.screenshots_enabled == Some(true)),
        "{events:?}"
    );

    // Bad bodies and actors are 4xx envelopes that change nothing.
    for (headers, body, status) in [
        (vec![], json!({"enabled": false, "changedBy": "eve"}), 422),
        (vec![], json!({"enabled": "no"}), 422),
        (vec![], json!({}), 422),
        (vec![("x-actor", "   ")], json!({"enabled": false}), 422),
    ] {
        let reply = send(
            &s.app,
            Method::PUT,
            "/v1/settings/screenshots",
            Some(VICTIM),
            &headers,
            Some(&body),
        )
        .await;
        assert_eq!(reply.error().0, status, "{body}: {}", reply.body);
    }
    assert_eq!(get(VICTIM).await, json!({"enabled": true}));
}

#[tokio::test]
async fn site_decisions_are_made_listed_replaced_and_removed() {
    let s = stack();
    let decide = |domain: &'static str, decision: &'static str, by: &'static str| {
        let app = s.app.clone();
        async move {
            send(
                &app,
                Method::PUT,
                &format!("/v1/sites/{domain}"),
                Some(VICTIM),
                &[],
                Some(&json!({"decision": decision, "decidedBy": by})),
            )
            .await
        }
    };
    let reply = decide("news.example.org", "allow", "alice").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let entry = reply.json();
    assert_eq!(entry["domain"], "news.example.org");
    assert_eq!(entry["decision"], "allow");
    assert_eq!(entry["decidedBy"], "alice");
    assert!(entry["decidedAt"].is_string());
    // Normalized: lower case, no trailing dot; the person's name trimmed.
    let reply = decide("Ads.Example.COM.", "deny", "  bob ").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["domain"], "ads.example.com");
    assert_eq!(reply.json()["decidedBy"], "bob");

    let listed = get_as(&s.app, VICTIM, "/v1/sites").await.json();
    let sites = listed["sites"].as_array().unwrap();
    let pairs: Vec<_> = sites
        .iter()
        .map(|e| {
            (
                e["domain"].as_str().unwrap(),
                e["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [("ads.example.com", "deny"), ("news.example.org", "allow")]
    );
    assert_eq!(sites[1], entry, "the list shows the entry as answered");

    // A second decision replaces the first.
    let reply = decide("news.example.org", "deny", "carol").await;
    assert_eq!(reply.json()["decision"], "deny");
    let listed = get_as(&s.app, VICTIM, "/v1/sites").await.json();
    assert_eq!(listed["sites"].as_array().unwrap().len(), 2);
    assert_eq!(listed["sites"][1]["decidedBy"], "carol");

    let remove = |domain: &'static str| {
        let app = s.app.clone();
        async move {
            send(
                &app,
                Method::DELETE,
                &format!("/v1/sites/{domain}"),
                Some(VICTIM),
                &[],
                None,
            )
            .await
        }
    };
    let reply = remove("NEWS.example.org").await;
    assert_eq!(reply.status, 204, "{}", reply.body);
    assert!(reply.body.is_empty());
    let reply = remove("news.example.org").await;
    assert_eq!(reply.error(), (404, "site_not_found".to_owned(), false));
    let listed = get_as(&s.app, VICTIM, "/v1/sites").await.json();
    assert_eq!(listed["sites"].as_array().unwrap().len(), 1);

    let decided = audited(&s.audit, AuditAction::SiteDecided, 3).await;
    let last = decided
        .iter()
        .find(|e| e.actor.as_deref() == Some("carol"))
        .expect("carol's decision is audited");
    assert_eq!(last.workspace_id.as_deref(), Some(VICTIM));
    assert_eq!(last.domain.as_deref(), Some("news.example.org"));
    assert_eq!(last.decision, Some(SiteDecision::Deny));
    let removed = audited(&s.audit, AuditAction::SiteRemoved, 1).await;
    assert_eq!(removed.len(), 1, "a 404 removes nothing and audits nothing");
    assert_eq!(removed[0].domain.as_deref(), Some("news.example.org"));
}

#[tokio::test]
async fn bad_domains_and_deciders_are_422_envelopes_and_store_nothing() {
    let s = stack();
    let ok_body = json!({"decision": "allow", "decidedBy": "alice"});
    for domain in [
        "https:%2F%2Fx.com",
        "x.com%2Fpath",
        "*.x.com",
        "x.com:443",
        "a..b",
        ".x.com",
        "x%20y.com",
        "%FF",
    ] {
        let reply = send(
            &s.app,
            Method::PUT,
            &format!("/v1/sites/{domain}"),
            Some(VICTIM),
            &[],
            Some(&ok_body),
        )
        .await;
        assert_eq!(
            reply.error(),
            (422, "invalid_request".to_owned(), false),
            "{domain}: {}",
            reply.body
        );
        let reply = send(
            &s.app,
            Method::DELETE,
            &format!("/v1/sites/{domain}"),
            Some(VICTIM),
            &[],
            None,
        )
        .await;
        assert_eq!(reply.error().0, 422, "{domain}: {}", reply.body);
    }
    let long = "x".repeat(257);
    for body in [
        json!({"decision": "allow", "decidedBy": ""}),
        json!({"decision": "allow", "decidedBy": "   "}),
        json!({"decision": "allow", "decidedBy": "a\nb"}),
        json!({"decision": "allow", "decidedBy": long}),
        json!({"decision": "allow"}),
        json!({"decision": "maybe", "decidedBy": "alice"}),
        json!({"decision": "allow", "decidedBy": "alice", "note": "x"}),
    ] {
        let reply = send(
            &s.app,
            Method::PUT,
            "/v1/sites/x.com",
            Some(VICTIM),
            &[],
            Some(&body),
        )
        .await;
        assert_eq!(reply.error().0, 422, "{body}: {}", reply.body);
    }
    let listed = get_as(&s.app, VICTIM, "/v1/sites").await.json();
    assert_eq!(listed, json!({"sites": []}));
}

#[tokio::test]
async fn another_tenant_neither_sees_nor_changes_site_decisions() {
    let s = stack();
    let body = json!({"decision": "deny", "decidedBy": "alice"});
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/sites/evil.example",
        Some(VICTIM),
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);

    assert_eq!(
        get_as(&s.app, ATTACKER, "/v1/sites").await.json(),
        json!({"sites": []})
    );
    let reply = send(&s.app, Method::GET, "/v1/sites", None, &[], None).await;
    assert_eq!(
        reply.json(),
        json!({"sites": []}),
        "nor does the default tenant"
    );
    let reply = send(
        &s.app,
        Method::DELETE,
        "/v1/sites/evil.example",
        Some(ATTACKER),
        &[],
        None,
    )
    .await;
    assert_eq!(reply.error(), (404, "site_not_found".to_owned(), false));
    let allow = json!({"decision": "allow", "decidedBy": "mallory"});
    let reply = send(
        &s.app,
        Method::PUT,
        "/v1/sites/evil.example",
        Some(ATTACKER),
        &[],
        Some(&allow),
    )
    .await;
    assert_eq!(reply.status, 200, "its own entry: {}", reply.body);

    let listed = get_as(&s.app, VICTIM, "/v1/sites").await.json();
    assert_eq!(listed["sites"].as_array().unwrap().len(), 1);
    assert_eq!(listed["sites"][0]["decision"], "deny");
    assert_eq!(listed["sites"][0]["decidedBy"], "alice");
}

#[tokio::test]
async fn every_guard_endpoint_requires_the_bearer_token() {
    let s = stack();
    record_run(s.store.as_ref(), VICTIM, "task-1", 1).await;
    let body = json!({"enabled": false});
    let site = json!({"decision": "allow", "decidedBy": "alice"});
    let endpoints: [(Method, &str, Option<&Value>); 7] = [
        (Method::GET, "/v1/runs/task-1/frames", None),
        (Method::GET, "/v1/runs/task-1/frames/1", None),
        (Method::GET, "/v1/settings/screenshots", None),
        (Method::PUT, "/v1/settings/screenshots", Some(&body)),
        (Method::GET, "/v1/sites", None),
        (Method::PUT, "/v1/sites/x.example", Some(&site)),
        (Method::DELETE, "/v1/sites/x.example", None),
    ];
    for (method, path, body) in endpoints {
        for token in [None, Some("Bearer wrong-token-0123456789abcdef")] {
            let mut builder = Request::builder()
                .method(method.clone())
                .uri(path)
                .header("x-tenant-id", VICTIM);
            if let Some(token) = token {
                builder = builder.header(header::AUTHORIZATION, token);
            }
            let body = match body {
                Some(b) => {
                    builder = builder.header(header::CONTENT_TYPE, "application/json");
                    Body::from(b.to_string())
                }
                None => Body::empty(),
            };
            let reply = call(&s.app, builder.body(body).unwrap()).await;
            assert_eq!(
                reply.error(),
                (401, "unauthorized".to_owned(), false),
                "{method} {path}"
            );
            assert!(!reply.body.contains("JFIF"));
        }
    }
    // Nothing changed.
    let reply = get_as(&s.app, VICTIM, "/v1/settings/screenshots").await;
    assert_eq!(reply.json(), json!({"enabled": true}));
    assert_eq!(
        get_as(&s.app, VICTIM, "/v1/sites").await.json(),
        json!({"sites": []})
    );
    assert!(s.audit.events().is_empty());
}

#[tokio::test]
async fn the_client_reads_frames_and_sets_the_guard_over_a_socket() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let s = stack();
    record_run(s.store.as_ref(), VICTIM, "task-1", 2).await;
    let server = RunningServer::start(Arc::clone(&s.runner), listener).unwrap();
    let client = abr_client::AgentRunnerClient::new(server.base_url(), FAKE_TOKEN).unwrap();

    let listed = client.frames(VICTIM, "task-1").await.unwrap();
    assert_eq!(listed.frames.len(), 2);
    assert_eq!(listed.screenshots.screenshots, ScreenshotsMode::On);
    assert_eq!(client.frame(VICTIM, "task-1", 2).await.unwrap(), JPEG);
    let e = client.frame(ATTACKER, "task-1", 2).await.unwrap_err();
    assert!(e.is(abr_protocol::codes::FRAME_NOT_FOUND), "{e:?}");

    assert!(client.screenshots_setting(VICTIM).await.unwrap().enabled);
    let set = client
        .set_screenshots(VICTIM, false, "alice")
        .await
        .unwrap();
    assert!(!set.enabled);
    assert!(!client.screenshots_setting(VICTIM).await.unwrap().enabled);

    let entry = client
        .decide_site(VICTIM, "Docs.Example.com", SiteDecision::Allow, "alice")
        .await
        .unwrap();
    assert_eq!(entry.domain, "docs.example.com");
    let sites = client.sites(VICTIM).await.unwrap().sites;
    assert_eq!(sites, [entry]);
    let e = client
        .decide_site(VICTIM, "https://x.com/path", SiteDecision::Deny, "alice")
        .await
        .unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(422), Some("invalid_request")));
    client
        .remove_site(VICTIM, "docs.example.com")
        .await
        .unwrap();
    let e = client
        .remove_site(VICTIM, "docs.example.com")
        .await
        .unwrap_err();
    assert!(e.is(abr_protocol::codes::SITE_NOT_FOUND), "{e:?}");
    assert!(client.sites(VICTIM).await.unwrap().sites.is_empty());
    server.shutdown().await;
}

/// A key of `role` for `tenant`: `(its id, its token)`.
async fn key_of(app: &axum::Router, role: &str, tenant: &str) -> (String, String) {
    let body = json!({"name": format!("{role} of {tenant}"), "role": role, "tenantId": tenant});
    let reply = post_json(app, "/v1/keys", &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let created = reply.json();
    (
        created["key"]["keyId"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

/// `set_browser_screenshots` over `/mcp` as `token`, naming `tenant` or not: the tool's
/// `(isError, structuredContent)`.
async fn mcp_switch(
    app: &axum::Router,
    token: &str,
    tenant: Option<&str>,
    enabled: bool,
) -> (bool, Value) {
    let message = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "set_browser_screenshots", "arguments": {"enabled": enabled}}
    });
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2025-06-18")
        .header(header::AUTHORIZATION, format!("Bearer {token}"));
    if let Some(tenant) = tenant {
        builder = builder.header("x-tenant-id", tenant);
    }
    let reply = call(app, builder.body(Body::from(message.to_string())).unwrap()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = reply.json()["result"].clone();
    (
        result["isError"].as_bool().unwrap_or(false),
        result["structuredContent"].clone(),
    )
}

#[tokio::test]
async fn the_mcp_screenshots_switch_is_an_approvers_for_its_own_tenant_audited_with_its_key() {
    let s = stack();
    let enabled = |tenant| {
        let app = s.app.clone();
        async move {
            get_as(&app, tenant, "/v1/settings/screenshots")
                .await
                .json()["enabled"]
                .as_bool()
                .unwrap()
        }
    };
    let (_, agent) = key_of(&s.app, "agent", VICTIM).await;
    let (approver_id, approver) = key_of(&s.app, "approver", VICTIM).await;
    let (attacker_id, attacker) = key_of(&s.app, "approver", ATTACKER).await;

    // An agent's key may not change the tenant's settings.
    let (refused, body) = mcp_switch(&s.app, &agent, None, false).await;
    assert!(refused, "{body}");
    assert_eq!(body["error"]["code"], "forbidden", "{body}");
    // Another tenant's approver naming the victim: refused, the victim's switch unchanged.
    let (refused, body) = mcp_switch(&s.app, &attacker, Some(VICTIM), false).await;
    assert!(refused, "{body}");
    assert_eq!(body["error"]["code"], "tenant_forbidden", "{body}");
    assert!(enabled(VICTIM).await);
    // Its own tenant's only.
    let (refused, body) = mcp_switch(&s.app, &attacker, None, false).await;
    assert!(!refused, "{body}");
    assert!(!enabled(ATTACKER).await);
    assert!(
        enabled(VICTIM).await,
        "another tenant's switch is untouched"
    );

    let (refused, body) = mcp_switch(&s.app, &approver, None, false).await;
    assert!(!refused, "{body}");
    assert_eq!(body, json!({"enabled": false}));
    assert!(!enabled(VICTIM).await);
    let events = audited(&s.audit, AuditAction::ScreenshotsChanged, 2).await;
    let by = |key: &str, tenant: &str| {
        events
            .iter()
            .any(|e| e.key_id.as_deref() == Some(key) && e.workspace_id.as_deref() == Some(tenant))
    };
    assert!(by(&attacker_id, ATTACKER), "{events:?}");
    assert!(by(&approver_id, VICTIM), "{events:?}");
    assert_eq!(
        events.len(),
        2,
        "the refused calls changed nothing: {events:?}"
    );
}

/// A tenant's owner decides on its named profiles: an agent's key may not, another tenant's
/// approver naming the victim is refused and sees nothing of it, a bad name or decision is a
/// 422 that stores nothing, each decision is audited with the key; the client does the same
/// over a socket; a runner without profiles lists none and refuses a decision.
#[tokio::test]
async fn profile_consent_is_the_owners_per_tenant_and_audited_with_the_key() {
    let profiles = tempfile::tempdir().unwrap();
    let s = stack_keeping_profiles(Some(profiles.path().to_owned()));
    let (_, agent) = key_of(&s.app, "agent", VICTIM).await;
    let (approver_id, approver) = key_of(&s.app, "approver", VICTIM).await;
    let (_, attacker) = key_of(&s.app, "approver", ATTACKER).await;
    let put = |token: String, tenant: Option<&'static str>, path: &'static str, body: Value| {
        let app = s.app.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                tenant.map(|t| ("x-tenant-id", t)).into_iter().collect();
            request_as(&app, &token, Method::PUT, path, &headers, Some(&body)).await
        }
    };
    let allow = json!({"decision": "allow", "decidedBy": "the owner"});

    let reply = put(agent, None, "/v1/profiles/jobs/consent", allow.clone()).await;
    assert_eq!(reply.error().0, 403);
    assert_eq!(reply.error().1, "forbidden");
    let reply = put(
        attacker.clone(),
        Some(VICTIM),
        "/v1/profiles/jobs/consent",
        allow.clone(),
    )
    .await;
    assert_eq!(reply.error().1, "tenant_forbidden");
    for (path, body) in [
        ("/v1/profiles/..%2Fetc/consent", allow.clone()),
        ("/v1/profiles/Jobs/consent", allow.clone()),
        (
            "/v1/profiles/jobs/consent",
            json!({"decision": "maybe", "decidedBy": "x"}),
        ),
        (
            "/v1/profiles/jobs/consent",
            json!({"decision": "allow", "decidedBy": ""}),
        ),
        (
            "/v1/profiles/jobs/consent",
            json!({"decision": "allow", "decidedBy": "x", "extra": 1}),
        ),
    ] {
        let reply = put(approver.clone(), None, path, body).await;
        assert_eq!(reply.error().0, 422, "{path}: {}", reply.body);
    }
    assert_eq!(
        get_as(&s.app, VICTIM, "/v1/profiles").await.json(),
        json!({"profiles": []}),
        "nothing refused was stored"
    );

    let reply = put(approver, None, "/v1/profiles/jobs/consent", allow.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let entry = reply.json();
    assert_eq!(entry["decision"], "allow");
    assert_eq!(entry["decidedByKey"], approver_id.as_str());
    let reply = put(
        attacker,
        None,
        "/v1/profiles/jobs/consent",
        json!({"decision": "deny", "decidedBy": "mallory"}),
    )
    .await;
    assert_eq!(reply.status, 200, "its own profile: {}", reply.body);
    let listed = get_as(&s.app, VICTIM, "/v1/profiles").await.json();
    assert_eq!(listed["profiles"].as_array().unwrap().len(), 1);
    assert_eq!(listed["profiles"][0]["decision"], "allow");
    let events = audited(&s.audit, AuditAction::ProfileDecided, 2).await;
    assert!(
        events
            .iter()
            .any(|e| e.key_id.as_deref() == Some(approver_id.as_str())
                && e.profile.as_deref() == Some("jobs")
                && e.workspace_id.as_deref() == Some(VICTIM)),
        "{events:?}"
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = RunningServer::start(Arc::clone(&s.runner), listener).unwrap();
    let client = abr_client::AgentRunnerClient::new(server.base_url(), FAKE_TOKEN).unwrap();
    let decided = client
        .decide_profile_consent(VICTIM, "work", SiteDecision::Deny, "the owner")
        .await
        .unwrap();
    assert_eq!(decided.decision, Some(SiteDecision::Deny));
    let names: Vec<_> = client
        .profiles(VICTIM)
        .await
        .unwrap()
        .profiles
        .into_iter()
        .map(|p| p.profile)
        .collect();
    assert_eq!(names, ["jobs", "work"]);
    let e = client
        .decide_profile_consent(VICTIM, "no/slash", SiteDecision::Allow, "x")
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(422), "{e:?}");
    server.shutdown().await;

    let plain = stack();
    assert_eq!(
        get_as(&plain.app, VICTIM, "/v1/profiles").await.json(),
        json!({"profiles": []})
    );
    let reply = send(
        &plain.app,
        Method::PUT,
        "/v1/profiles/jobs/consent",
        Some(VICTIM),
        &[],
        Some(&allow),
    )
    .await;
    assert_eq!(reply.error().1, "unsupported");
}
