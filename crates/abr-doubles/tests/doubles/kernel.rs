//! Kernel double against real Chromium processes over real sockets.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_doubles::{CdpClient, KernelDouble, KernelOptions};
use common::{
    bounded, cookies, ends_soon, has_cookie, http, open_page, page_server, process_gone, raw_ws,
    ws_refused_status,
};
use serde_json::json;

const KEY: &str = "sk_test_secret_KEY_value";

fn auth() -> [(&'static str, &'static str); 1] {
    [("authorization", "Bearer sk_test_secret_KEY_value")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_lifecycle_auth_jwt_live_view_and_delete() {
    let d = KernelDouble::start(KernelOptions::with_api_key(KEY))
        .await
        .unwrap();
    let base = d.base_url();
    let port = d.port();
    let browsers = format!("{base}/browsers");

    // Bearer auth: missing or wrong → 401 {code, message}; no browser launched.
    let none = http("POST", &browsers, &[], Some(json!({}))).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.json()["code"], "unauthorized");
    assert!(none.json()["message"].is_string());
    let wrong = http("GET", &browsers, &[("authorization", "Bearer nope")], None).await;
    assert_eq!(wrong.status, 401);

    // timeout_seconds bounds.
    let bad = http(
        "POST",
        &browsers,
        &auth(),
        Some(json!({"timeout_seconds": 5})),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert!(bad.json()["code"].is_string() && bad.json()["message"].is_string());
    assert_eq!(d.created(), 0);

    // Headful create (unknown fields ignored).
    let created = http(
        "POST",
        &browsers,
        &auth(),
        Some(json!({"headless": false, "name": "n1", "made_up_field": 1})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let b = created.json();
    let id = b["session_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 24);
    assert!(
        id.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    );
    let cdp_url = b["cdp_ws_url"].as_str().unwrap().to_owned();
    assert!(
        cdp_url.starts_with(&format!("ws://127.0.0.1:{port}/browser/cdp?jwt=")),
        "{cdp_url}"
    );
    let live_url = b["browser_live_view_url"].as_str().unwrap().to_owned();
    assert!(live_url.starts_with(&format!("http://127.0.0.1:{port}/browser/live/")));
    assert_eq!(b["timeout_seconds"], 60);
    assert_eq!(b["headless"], false);
    assert_eq!(b["stealth"], false);
    assert_eq!(b["name"], "n1");
    assert_eq!(b["viewport"], json!({"width": 1920, "height": 1080}));
    assert!(b["created_at"].is_string() && b["webdriver_ws_url"].is_string());
    assert!(b.get("deleted_at").is_none());

    // jwt: missing or wrong → 401 on the upgrade.
    let no_jwt = format!("ws://127.0.0.1:{port}/browser/cdp");
    assert_eq!(ws_refused_status(&no_jwt).await, 401);
    assert_eq!(
        ws_refused_status(&format!("{no_jwt}?jwt=forged")).await,
        401
    );

    // The real jwt reaches this browser's Chromium.
    let cdp = CdpClient::connect(&cdp_url).await.unwrap();
    let targets = cdp.call("Target.getTargets", json!({})).await.unwrap();
    assert!(
        targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "page")
    );
    let mut raw = raw_ws(&cdp_url).await;
    assert_eq!(d.open_sockets_for(&id), 2);

    let live = http("GET", &live_url, &[], None).await;
    assert_eq!(live.status, 200);
    assert!(
        live.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(live.text.contains(&format!("data-session-id=\"{id}\"")));

    let list = http("GET", &browsers, &auth(), None).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.json().as_array().unwrap().len(), 1);
    assert_eq!(list.header("x-has-more").as_deref(), Some("false"));
    assert_eq!(list.header("x-next-offset").as_deref(), Some("1"));
    let by_name = http("GET", &format!("{browsers}/n1"), &auth(), None).await;
    assert_eq!(by_name.json()["session_id"], json!(id));

    // Delete: 204 empty, sockets closed, Chromium gone, live view and lookups 404.
    let pid = d.chromium_pid(&id).unwrap();
    let del = http("DELETE", &format!("{browsers}/{id}"), &auth(), None).await;
    assert_eq!((del.status, del.text.as_str()), (204, ""));
    assert!(ends_soon(&mut raw).await, "raw socket not closed on delete");
    bounded("cdp closed on delete", cdp.closed()).await;
    assert!(
        process_gone(pid).await,
        "Chromium still running after delete"
    );
    assert_eq!(http("GET", &live_url, &[], None).await.status, 404);
    let gone = http("GET", &format!("{browsers}/{id}"), &auth(), None).await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["code"], "not_found");
    let with_deleted = http(
        "GET",
        &format!("{browsers}/{id}?include_deleted=true"),
        &auth(),
        None,
    )
    .await;
    assert_eq!(with_deleted.status, 200);
    assert!(with_deleted.json()["deleted_at"].is_string());
    let again = http("DELETE", &format!("{browsers}/{id}"), &auth(), None).await;
    assert_eq!(again.status, 404);
    assert_ne!(ws_refused_status(&cdp_url).await, 101);

    assert_eq!((d.created(), d.released(), d.live_sessions()), (1, 1, 0));
    assert_eq!(d.assert_all_released(), Ok(()));

    // Every request recorded, with statuses; the bearer token by presence only.
    let calls = d.calls();
    let summary: Vec<(String, u16, bool)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.status, c.headers.authorization))
        .collect();
    let expect = |m: &str, s: u16, a: bool| (m.to_owned(), s, a);
    assert_eq!(
        summary,
        vec![
            expect("POST", 401, false),
            expect("GET", 401, true),
            expect("POST", 400, true),
            expect("POST", 200, true),
            expect("GET", 401, false),
            expect("GET", 401, false),
            expect("GET", 101, false),
            expect("GET", 101, false),
            expect("GET", 200, false),
            expect("GET", 200, true),
            expect("GET", 200, true),
            expect("DELETE", 204, true),
            expect("GET", 404, false),
            expect("GET", 404, true),
            expect("GET", 200, true),
            expect("DELETE", 404, true),
            expect("GET", 404, false),
        ]
    );
    assert!(!serde_json::to_string(&calls).unwrap().contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_limit_faults_expiry_and_dropped_sockets() {
    let d = KernelDouble::start(KernelOptions {
        max_live: Some(1),
        ..KernelOptions::with_api_key(KEY)
    })
    .await
    .unwrap();
    let browsers = format!("{}/browsers", d.base_url());

    let first = http("POST", &browsers, &auth(), Some(json!({"headless": true}))).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert!(first.get("browser_live_view_url").is_none());
    let a = first["session_id"].as_str().unwrap().to_owned();

    // max_live reached → 429 rate_limited with Retry-After.
    let limited = http("POST", &browsers, &auth(), Some(json!({}))).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.json()["code"], "rate_limited");
    assert!(limited.header("retry-after").is_some());

    // Injected 429 carries Retry-After: 2.
    d.set_max_live(Some(2));
    d.fail_next_create(429);
    let injected = http("POST", &browsers, &auth(), Some(json!({}))).await;
    assert_eq!(injected.status, 429);
    assert_eq!(injected.header("retry-after").as_deref(), Some("2"));

    let second = http("POST", &browsers, &auth(), Some(json!({}))).await;
    assert_eq!(second.status, 200, "{}", second.text);
    let second = second.json();
    let b = second["session_id"].as_str().unwrap().to_owned();
    // Each browser is its own Chromium process.
    let (pid_a, pid_b) = (d.chromium_pid(&a).unwrap(), d.chromium_pid(&b).unwrap());
    assert_ne!(pid_a, pid_b);

    // drop_sockets: sockets die, browsers stay; reconnect works.
    let cdp_a = CdpClient::connect(first["cdp_ws_url"].as_str().unwrap())
        .await
        .unwrap();
    let mut raw_b = raw_ws(second["cdp_ws_url"].as_str().unwrap()).await;
    assert_eq!(d.drop_sockets(), 2);
    bounded("cdp a closed", cdp_a.closed()).await;
    assert!(ends_soon(&mut raw_b).await);
    assert_eq!(d.live_sessions(), 2);
    let cdp_b = CdpClient::connect(second["cdp_ws_url"].as_str().unwrap())
        .await
        .unwrap();
    cdp_b.call("Target.getTargets", json!({})).await.unwrap();

    // Expiry (inactivity timeout stand-in): like a delete done by the provider.
    assert!(d.expire_session(&b).await);
    bounded("cdp b closed on expiry", cdp_b.closed()).await;
    assert!(process_gone(pid_b).await);
    assert_eq!(
        http("GET", &format!("{browsers}/{b}"), &auth(), None)
            .await
            .status,
        404
    );
    assert_eq!(d.unreleased(), vec![a.clone()]);
    assert_eq!(d.assert_all_released(), Err(vec![a.clone()]));

    let del = http("DELETE", &format!("{browsers}/{a}"), &auth(), None).await;
    assert_eq!(del.status, 204);
    assert!(process_gone(pid_a).await);
    assert_eq!(
        (d.created(), d.released(), d.expired(), d.live_sessions()),
        (2, 1, 1, 0)
    );
    assert_eq!(d.assert_all_released(), Ok(()));

    // Deleted listing via status filter.
    let deleted = http("GET", &format!("{browsers}?status=deleted"), &auth(), None).await;
    assert_eq!(deleted.json().as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_save_changes_round_trip() {
    let d = KernelDouble::start(KernelOptions::with_api_key(KEY))
        .await
        .unwrap();
    let base = d.base_url();
    let (origin, _page) = page_server().await;

    let p = http(
        "POST",
        &format!("{base}/profiles"),
        &auth(),
        Some(json!({"name": "p1"})),
    )
    .await;
    assert_eq!(p.status, 200, "{}", p.text);
    assert_eq!(p.json()["name"], "p1");
    let dup = http(
        "POST",
        &format!("{base}/profiles"),
        &auth(),
        Some(json!({"name": "p1"})),
    )
    .await;
    assert_eq!(dup.status, 409);
    let unknown = http(
        "POST",
        &format!("{base}/browsers"),
        &auth(),
        Some(json!({"profile": {"name": "nope"}})),
    )
    .await;
    assert_eq!(unknown.status, 404);

    // Browser 1 writes a cookie + localStorage; deleting it saves them into the profile.
    let b1 = http(
        "POST",
        &format!("{base}/browsers"),
        &auth(),
        Some(json!({"headless": true, "profile": {"name": "p1", "save_changes": true}})),
    )
    .await
    .json();
    assert_eq!(b1["profile"]["name"], "p1");
    let cdp1 = CdpClient::connect(b1["cdp_ws_url"].as_str().unwrap())
        .await
        .unwrap();
    let page = open_page(&cdp1, &format!("{origin}/")).await;
    cdp1.evaluate(
        &page,
        "document.cookie = 'pc=42; path=/; max-age=3600'; localStorage.setItem('lk', 'lv'); true",
    )
    .await
    .unwrap();
    let id1 = b1["session_id"].as_str().unwrap();
    let del = http("DELETE", &format!("{base}/browsers/{id1}"), &auth(), None).await;
    assert_eq!(del.status, 204);
    let saved = d.profile_state("p1").unwrap();
    assert!(has_cookie(&saved.cookies, "pc", "42"));
    assert_eq!(saved.local_storage[origin.as_str()]["lk"], "lv");

    // Browser 2 (a fresh Chromium) loads the profile into its default context.
    let b2 = http(
        "POST",
        &format!("{base}/browsers"),
        &auth(),
        Some(json!({"headless": true, "profile": {"name": "p1"}})),
    )
    .await
    .json();
    let cdp2 = CdpClient::connect(b2["cdp_ws_url"].as_str().unwrap())
        .await
        .unwrap();
    assert!(has_cookie(&cookies(&cdp2).await, "pc", "42"));
    let page2 = open_page(&cdp2, &format!("{origin}/")).await;
    assert_eq!(
        cdp2.evaluate(&page2, "localStorage.getItem('lk')")
            .await
            .unwrap(),
        "lv"
    );
    let id2 = b2["session_id"].as_str().unwrap();
    assert_eq!(
        http("DELETE", &format!("{base}/browsers/{id2}"), &auth(), None)
            .await
            .status,
        204
    );
    d.shutdown().await;
}
