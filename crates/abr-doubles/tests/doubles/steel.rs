//! Steel OSS double against a real Chromium over real sockets.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_doubles::{CdpClient, SteelDouble, SteelOptions};
use common::{
    bounded, cookies, ends_soon, has_cookie, http, open_page, page_server, process_gone, raw_ws,
};
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_lifecycle_context_and_release() {
    let d = SteelDouble::start(SteelOptions::default()).await.unwrap();
    let base = d.base_url();
    let port = d.port();
    let (origin, _page) = page_server().await;

    let health = http("GET", &format!("{base}/v1/health"), &[], None).await;
    assert_eq!(
        (health.status, health.json()),
        (200, json!({"status": "ok"}))
    );

    // Create with cookies + localStorage, an unknown Cloud-only field, and a Cloud API key.
    let body = json!({
        "timeout": 900000,
        "blockAds": true,
        "dimensions": {"width": 1280, "height": 720},
        "sessionContext": {
            "cookies": [{"name": "sid", "value": "abc", "domain": "127.0.0.1", "path": "/"}],
            "localStorage": { origin.clone(): {"token": "t1"} }
        }
    });
    let created = http(
        "POST",
        &format!("{base}/v1/sessions"),
        &[("steel-api-key", "secret-steel-key")],
        Some(body),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let s = created.json();
    let id = s["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36);
    assert_eq!(s["status"], "live");
    assert_eq!(s["websocketUrl"], format!("ws://127.0.0.1:{port}/"));
    assert_eq!(
        s["debugUrl"],
        format!("http://127.0.0.1:{port}/v1/sessions/debug")
    );
    assert_eq!(
        s["debuggerUrl"],
        format!("http://127.0.0.1:{port}/v1/devtools/inspector.html")
    );
    assert_eq!(s["sessionViewerUrl"], format!("http://127.0.0.1:{port}/"));
    assert_eq!(s["dimensions"], json!({"width": 1280, "height": 720}));
    for (k, v) in [
        ("timeout", json!(0)),
        ("creditsUsed", json!(0)),
        ("eventCount", json!(0)),
        ("proxy", json!("")),
        ("proxyTxBytes", json!(0)),
        ("proxyRxBytes", json!(0)),
        ("solveCaptcha", json!(false)),
        ("isSelenium", json!(false)),
    ] {
        assert_eq!(s[k], v, "field {k}");
    }
    assert!(s["duration"].is_u64() && s["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(s["deviceConfig"].is_object());
    assert!(s["userAgent"].as_str().unwrap().contains("Chrome"));
    assert!(s.get("headless").is_none());

    // CDP through the proxy: targets answer, the injected cookie is visible.
    let ws_url = s["websocketUrl"].as_str().unwrap().to_owned();
    let cdp = CdpClient::connect(&ws_url).await.unwrap();
    let targets = cdp.call("Target.getTargets", json!({})).await.unwrap();
    assert!(
        targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "page")
    );
    assert!(has_cookie(&cookies(&cdp).await, "sid", "abc"));

    // localStorage is applied when a page of that origin loads.
    let page = open_page(&cdp, &format!("{origin}/")).await;
    let token = cdp
        .evaluate(&page, "localStorage.getItem('token')")
        .await
        .unwrap();
    assert_eq!(token, "t1");
    cdp.evaluate(&page, "localStorage.setItem('extra', 'x'); true")
        .await
        .unwrap();

    // The session recorder, as on the real server: the page sends its load and each click
    // to the API port (a client that lets it leave; ABR's egress does not).
    cdp.evaluate(&page, "document.body.click(); true")
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while d.recorded_events() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the recorder sent {} of the load and the click",
            d.recorded_events()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // Context export: CDP cookies without sameSite, localStorage keyed by origin.
    let ctx = http(
        "GET",
        &format!("{base}/v1/sessions/{id}/context"),
        &[],
        None,
    )
    .await;
    assert_eq!(ctx.status, 200, "{}", ctx.text);
    let ctx = ctx.json();
    let sid_cookie = ctx["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sid")
        .expect("exported cookie")
        .clone();
    assert_eq!(sid_cookie["value"], "abc");
    assert!(sid_cookie.get("sameSite").is_none(), "{sid_cookie}");
    assert!(sid_cookie.get("domain").is_some() && sid_cookie.get("session").is_some());
    assert_eq!(
        ctx["localStorage"][origin.as_str()],
        json!({"token": "t1", "extra": "x"})
    );
    assert_eq!(ctx["sessionStorage"], json!({}));
    assert_eq!(ctx["indexedDB"], json!({}));

    // Live viewer while live; lookup by id.
    let viewer = http("GET", &format!("{base}/v1/sessions/debug"), &[], None).await;
    assert_eq!(viewer.status, 200);
    assert!(
        viewer
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(viewer.text.contains(&format!("data-session-id=\"{id}\"")));
    let got = http("GET", &format!("{base}/v1/sessions/{id}"), &[], None).await;
    assert_eq!(
        (got.status, got.json()["status"].clone()),
        (200, json!("live"))
    );

    // Cast socket (tab discovery mode): one tabList message listing the page.
    let mut cast = raw_ws(&format!("ws://127.0.0.1:{port}/v1/sessions/cast")).await;
    let first = bounded("tabList", cast.next()).await.unwrap().unwrap();
    let tab_list: Value = serde_json::from_str(first.to_text().unwrap()).unwrap();
    assert_eq!(tab_list["type"], "tabList");
    assert!(
        tab_list["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["url"] == format!("{origin}/"))
    );

    // Release: proxied sockets close, this Chromium dies, a fresh idle one replaces it.
    let mut raw = raw_ws(&ws_url).await;
    assert_eq!(d.open_sockets(), 3);
    let old_pid = d.chromium_pid().unwrap();
    assert!(abr_doubles::process_exists(old_pid));
    let rel = http(
        "POST",
        &format!("{base}/v1/sessions/{id}/release"),
        &[],
        None,
    )
    .await;
    assert_eq!(rel.status, 200, "{}", rel.text);
    let rel = rel.json();
    assert_eq!(
        (
            rel["success"].clone(),
            rel["status"].clone(),
            rel["id"].clone()
        ),
        (json!(true), json!("released"), json!(id))
    );
    assert!(ends_soon(&mut raw).await, "raw proxied socket not closed");
    assert!(ends_soon(&mut cast).await, "cast socket not closed");
    bounded("cdp client closed", cdp.closed()).await;
    assert!(process_gone(old_pid).await, "old Chromium still running");
    let new_pid = d.chromium_pid().unwrap();
    assert_ne!(new_pid, old_pid);
    assert_eq!(d.open_sockets(), 0);

    let got = http("GET", &format!("{base}/v1/sessions/{id}"), &[], None).await;
    assert_eq!(got.json()["status"], "released");
    let list = http("GET", &format!("{base}/v1/sessions"), &[], None)
        .await
        .json();
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions[0]["status"], "idle");
    assert_ne!(sessions[0]["id"], json!(id));
    assert!(
        sessions
            .iter()
            .any(|x| x["id"] == json!(id) && x["status"] == "released")
    );
    let viewer = http("GET", &format!("{base}/v1/sessions/debug"), &[], None).await;
    assert_eq!(viewer.status, 404);

    // Reconnecting after release lands on the fresh idle browser (steel-browser#74), clean.
    let cdp2 = CdpClient::connect(&ws_url).await.unwrap();
    assert!(!has_cookie(&cookies(&cdp2).await, "sid", "abc"));
    drop(cdp2);

    assert_eq!((d.created(), d.released(), d.live_sessions()), (1, 1, 0));
    assert_eq!(d.assert_all_released(), Ok(()));

    // Every request was recorded; the API key by presence only.
    let calls = d.calls();
    let create_call = calls
        .iter()
        .find(|c| c.method == "POST" && c.path == "/v1/sessions")
        .unwrap();
    assert_eq!(create_call.status, 200);
    assert!(create_call.headers.steel_api_key);
    assert!(!create_call.headers.authorization);
    assert_eq!(create_call.body.as_ref().unwrap()["timeout"], 900000);
    let upgrades = calls
        .iter()
        .filter(|c| c.status == 101 && c.headers.websocket_upgrade && c.path == "/")
        .count();
    assert_eq!(upgrades, 3);
    // health, create, context, debug, get, release, get, list, debug + cast + 3 CDP upgrades,
    // and the recorder's load and click
    assert_eq!(calls.len(), 15, "{calls:#?}");
    assert!(
        !serde_json::to_string(&calls)
            .unwrap()
            .contains("secret-steel-key")
    );

    d.shutdown().await;
    assert!(process_gone(new_pid).await, "Chromium survived shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_slot_advertised_hosts_faults_and_errors() {
    let d = SteelDouble::start(SteelOptions {
        advertise_host_0000: true,
        ..SteelOptions::default()
    })
    .await
    .unwrap();
    let base = d.base_url();
    let port = d.port();
    let sessions_url = format!("{base}/v1/sessions");

    // Validation: non-UUID sessionId → Fastify 400.
    let bad = http(
        "POST",
        &sessions_url,
        &[],
        Some(json!({"sessionId": "not-a-uuid"})),
    )
    .await;
    assert_eq!(bad.status, 400);
    let bad = bad.json();
    assert_eq!(bad["code"], "FST_ERR_VALIDATION");
    assert_eq!(bad["statusCode"], 400);
    assert_eq!(bad["error"], "Bad Request");
    assert!(bad["message"].as_str().unwrap().contains("sessionId"));

    // Fault knobs: Rust API and control endpoint.
    d.fail_next_create(500);
    let failed = http("POST", &sessions_url, &[], Some(json!({}))).await;
    assert_eq!(failed.status, 500);
    assert_eq!(failed.json()["success"], false);
    assert!(failed.json()["message"].is_string());
    let ctl = http(
        "POST",
        &format!("{base}/__mock/fail-next-create"),
        &[],
        Some(json!({"status": 503})),
    )
    .await;
    assert_eq!(ctl.status, 200);
    assert_eq!(
        http("POST", &sessions_url, &[], Some(json!({})))
            .await
            .status,
        503
    );
    assert_eq!(d.created(), 0);

    // First session with a caller-chosen id; URLs advertise 0.0.0.0 like the real default.
    let u1 = "123e4567-e89b-42d3-a456-426614174000";
    let first = http("POST", &sessions_url, &[], Some(json!({"sessionId": u1}))).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(first["id"], u1);
    assert_eq!(first["websocketUrl"], format!("ws://0.0.0.0:{port}/"));
    assert_eq!(
        first["debugUrl"],
        format!("http://0.0.0.0:{port}/v1/sessions/debug")
    );

    // A client that rewrites the host to its configured base gets through.
    let cdp = CdpClient::connect(&d.ws_url()).await.unwrap();
    cdp.call("Target.getTargets", json!({})).await.unwrap();

    // Single slot: a second create replaces the first (no error), recorded as a replacement.
    let second = http("POST", &sessions_url, &[], Some(json!({}))).await;
    assert_eq!(second.status, 200);
    let u2 = second.json()["id"].as_str().unwrap().to_owned();
    assert_ne!(u2, u1);
    assert_eq!(d.replaced(), vec![u1.to_owned()]);
    let list = http("GET", &sessions_url, &[], None).await.json();
    let live: Vec<&Value> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "live")
        .collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0]["id"], json!(u2));
    let old = http("GET", &format!("{sessions_url}/{u1}"), &[], None).await;
    assert_eq!(old.status, 200);
    assert_eq!(old.json()["status"], "released");
    assert_eq!(d.live_sessions(), 1);
    assert_eq!(d.unreleased(), vec![u2.clone()]);
    // The browser is reused on replace, so the existing socket still works.
    cdp.call("Target.getTargets", json!({})).await.unwrap();

    // drop_sockets closes proxied sockets but keeps the session.
    let mut raw = raw_ws(&d.ws_url()).await;
    assert_eq!(d.drop_sockets(), 2);
    assert!(ends_soon(&mut raw).await);
    bounded("cdp closed after drop", cdp.closed()).await;
    assert_eq!(d.live_sessions(), 1);
    let cdp = CdpClient::connect(&d.ws_url()).await.unwrap();
    cdp.call("Target.getTargets", json!({})).await.unwrap();

    // Expiry behaves like a provider-side end: socket closed, Chromium replaced, released.
    let pid = d.chromium_pid().unwrap();
    assert!(!d.expire_session("not-the-live-one").await);
    assert!(d.expire_session(&u2).await);
    bounded("cdp closed after expiry", cdp.closed()).await;
    assert!(process_gone(pid).await);
    assert_eq!((d.live_sessions(), d.expired(), d.released()), (0, 1, 0));
    let gone = http("GET", &format!("{sessions_url}/{u2}"), &[], None).await;
    assert_eq!(gone.json()["status"], "released");

    // Fastify-shaped 404s (also for a wrong method on a known path).
    let nf = http("GET", &format!("{base}/v1/nope?x=1"), &[], None).await;
    assert_eq!(nf.status, 404);
    assert_eq!(
        nf.json(),
        json!({"message": "Route GET:/v1/nope?x=1 not found", "error": "Not Found", "statusCode": 404})
    );
    let wrong_method = http("DELETE", &format!("{base}/v1/health"), &[], None).await;
    assert_eq!(wrong_method.status, 404);

    // Control plane: state and calls (control requests themselves are not recorded).
    let state = http("GET", &format!("{base}/__mock/state"), &[], None)
        .await
        .json();
    assert_eq!(state["created"], 2);
    assert_eq!(state["replaced"], json!([u1]));
    let calls = http("GET", &format!("{base}/__mock/calls"), &[], None)
        .await
        .json();
    let calls = calls.as_array().unwrap();
    assert_eq!(calls.len(), d.calls().len());
    assert!(
        calls
            .iter()
            .all(|c| !c["path"].as_str().unwrap().starts_with("/__mock"))
    );
    let statuses: Vec<u16> = d
        .calls()
        .iter()
        .filter(|c| c.method == "POST" && c.path == "/v1/sessions")
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, vec![400, 500, 503, 200, 200]);
}

/// The next JSON text message of `ws`, skipping pings.
async fn next_json(ws: &mut common::RawWs, what: &str) -> Value {
    loop {
        let msg = bounded(what, ws.next())
            .await
            .unwrap_or_else(|| panic!("{what}: socket ended"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Ok(text) = msg.to_text()
            && !text.is_empty()
        {
            return serde_json::from_str(text).unwrap();
        }
    }
}

/// The next JSON message of `ws` that satisfies `pred`.
async fn next_json_where(
    ws: &mut common::RawWs,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    loop {
        let msg = next_json(ws, what).await;
        if pred(&msg) {
            return msg;
        }
    }
}

/// Sends a viewer's navigation of tab `page` to `url` over a cast socket.
async fn navigate_on(ws: &mut common::RawWs, page: &str, url: &str) {
    let message = json!({"type": "navigation", "pageId": page, "event": {"url": url}});
    ws.send(tokio_tungstenite::tungstenite::Message::text(
        message.to_string(),
    ))
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_page_opens_an_absolute_cast_address() {
    for advertise_host_0000 in [false, true] {
        let d = SteelDouble::start(SteelOptions {
            advertise_host_0000,
            ..SteelOptions::default()
        })
        .await
        .unwrap();
        let base = d.base_url();
        assert_eq!(
            http("POST", &format!("{base}/v1/sessions"), &[], Some(json!({})))
                .await
                .status,
            200
        );
        let page = http("GET", &format!("{base}/v1/sessions/debug"), &[], None).await;
        let host = if advertise_host_0000 {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        let absolute = format!("\"ws://{host}:{}/v1/sessions/cast\"", d.port());
        assert!(
            page.text.contains(&absolute),
            "the page's socket address is absolute, from the server's own HOST:PORT: {}",
            page.text
        );
        assert!(!page.text.contains("location.host"), "{}", page.text);
        d.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cast_socket_lists_tabs_streams_frames_and_takes_input() {
    let d = SteelDouble::start(SteelOptions::default()).await.unwrap();
    let base = d.base_url();
    let (origin, _server) = page_server().await;
    let created = http(
        "POST",
        &format!("{base}/v1/sessions"),
        &[],
        Some(json!({"dimensions": {"width": 800, "height": 600}})),
    )
    .await;
    assert_eq!(created.status, 200);
    let cdp = CdpClient::connect(&d.ws_url()).await.unwrap();
    open_page(&cdp, &format!("{origin}/first")).await;

    // Tab discovery: the list now, and again when a tab opens and closes.
    let mut tabs = raw_ws(&format!("{}?tabInfo=true", d.cast_url())).await;
    let list = next_json(&mut tabs, "tabList").await;
    assert_eq!(list["type"], "tabList");
    let first = list["firstTabId"].as_str().unwrap().to_owned();
    assert!(
        list["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == json!(first) && t["url"] == format!("{origin}/first"))
    );
    let opened = cdp
        .call("Target.createTarget", json!({"url": "about:blank"}))
        .await
        .unwrap();
    let second = opened["targetId"].as_str().unwrap().to_owned();
    next_json_where(&mut tabs, "tabList with the new tab", |m| {
        m["type"] == "tabList" && m["tabs"].as_array().is_some_and(|t| t.len() == 2)
    })
    .await;
    cdp.call("Target.closeTarget", json!({"targetId": second}))
        .await
        .unwrap();
    let closed = next_json_where(&mut tabs, "tabClosed", |m| m["type"] == "tabClosed").await;
    assert_eq!(closed["pageId"], json!(second));

    // Page mode: JPEG frames of that tab, with its URL and title.
    let mut frames = raw_ws(&format!("{}?pageId={first}", d.cast_url())).await;
    let frame = next_json_where(&mut frames, "a frame", |m| m.get("data").is_some()).await;
    assert_eq!(frame["pageId"], json!(first));
    assert_eq!(frame["url"], format!("{origin}/first"));
    assert_eq!(frame["title"], "abr page");
    assert!(
        frame["data"].as_str().unwrap().starts_with("/9j/"),
        "a base64 JPEG"
    );
    // Input goes back to the tab: a navigation shows up in the next frames.
    navigate_on(&mut frames, &first, &format!("{origin}/second")).await;
    next_json_where(&mut frames, "a frame after navigating", |m| {
        m["url"] == format!("{origin}/second")
    })
    .await;
    // Also by index. Chromium sends a screencast frame when the page paints, and a static tab
    // that a first screencast already drew may not paint again for a second one: the viewer's
    // own input makes it paint, and its frames come back on that socket.
    let mut by_index = raw_ws(&format!("{}?pageIndex=0", d.cast_url())).await;
    navigate_on(&mut by_index, &first, &format!("{origin}/first")).await;
    next_json_where(&mut by_index, "a frame by index", |m| {
        m.get("data").is_some() && m["url"] == format!("{origin}/first")
    })
    .await;
    drop(by_index);

    // An unknown tab: the socket closes at once.
    let mut unknown = raw_ws(&format!("{}?pageId=NOPE", d.cast_url())).await;
    assert!(ends_soon(&mut unknown).await);

    // Release ends every cast socket.
    assert_eq!(
        http("POST", &format!("{base}/v1/sessions/release"), &[], None)
            .await
            .status,
        200
    );
    assert!(
        ends_soon(&mut tabs).await,
        "tab discovery outlived the session"
    );
    assert!(
        ends_soon(&mut frames).await,
        "the screencast outlived the session"
    );
    assert_eq!(d.open_sockets(), 0);
    drop(cdp);
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_racing_a_release_is_counted_as_the_real_server_would_crash() {
    let d = SteelDouble::start(SteelOptions::default()).await.unwrap();
    let sessions = format!("{}/v1/sessions", d.base_url());
    // Sequential use never overlaps.
    for _ in 0..2 {
        assert_eq!(
            http("POST", &sessions, &[], Some(json!({}))).await.status,
            200
        );
        assert_eq!(
            http("POST", &format!("{sessions}/release"), &[], None)
                .await
                .status,
            200
        );
    }
    assert_eq!(d.overlapping_lifecycle_calls(), 0);
    assert!(d.replaced().is_empty());

    // A create sent while a release (which relaunches Chromium) is still running.
    assert_eq!(
        http("POST", &sessions, &[], Some(json!({}))).await.status,
        200
    );
    let release_url = format!("{sessions}/release");
    let release = http("POST", &release_url, &[], None);
    let create = async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        http("POST", &sessions, &[], Some(json!({}))).await
    };
    let (released, created) = tokio::join!(release, create);
    assert_eq!((released.status, created.status), (200, 200));
    assert_eq!(d.overlapping_lifecycle_calls(), 1);
    let state = http("GET", &format!("{}/__mock/state", d.base_url()), &[], None)
        .await
        .json();
    assert_eq!(state["overlappingLifecycleCalls"], 1);
    d.shutdown().await;
}
