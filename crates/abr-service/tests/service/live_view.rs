//! The live view tried as an attacker would, on the core's fakes (no browser): the page's
//! headers, the socket's Origin check, the socket cap, the message cap, sockets closed with
//! their capture, navigation outside the platform's sites refused before the browser, and
//! the opt-in provider-viewer proxy confined to the viewer's own paths. Plus the HTTP
//! server's header-read timeout and connection cap.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abr_client::{ClientError, LiveMessage, LiveViewChannel};
use abr_core::testing::FakeProvider;
use abr_core::{LiveFrame, LiveInput, ProviderViewer};
use abr_protocol::{LiveViewEvent, LiveViewInput, SecretValue};
use axum::body::Body;
use axum::http::{Method, Request, header};
use common::fake::*;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The bound the issue sets for closing a socket once its capture ended.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(10);

fn frame(byte: u8) -> LiveFrame {
    LiveFrame {
        jpeg: vec![0xff, 0xd8, byte, 0xff, 0xd9],
        width: 1280,
        height: 800,
    }
}

fn upgrade_request(path: &str, origin: Option<&str>) -> Request<Body> {
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::HOST, "runner.test")
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==");
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    request.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn the_viewer_page_has_a_strict_csp_and_only_embedding_apps_may_frame_it() {
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.live.embed_origins = vec!["https://app.example.com".into()];
    });
    let (_, live) = fake_capture(&s.app).await;
    let page = get(&s.app, &format!("/live/{live}")).await;
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap().to_owned();
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .expect("a script nonce");
    assert!(page.body.contains(&format!("<script nonce=\"{nonce}\">")));
    for part in [
        "default-src 'none'",
        "connect-src 'self'",
        "frame-ancestors 'self' https://app.example.com",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // Each page gets its own nonce.
    let again = get(&s.app, &format!("/live/{live}")).await;
    assert!(!again.body.contains(nonce));
    // Unknown tokens, and the capture id used as a live token, show nothing.
    let (capture_id, _) = fake_capture(&s.app).await;
    for token in ["nope", capture_id.as_str()] {
        let reply = get(&s.app, &format!("/live/{token}")).await;
        assert_eq!(reply.error(), (404, "live_view_not_found".into(), false));
    }
}

#[tokio::test]
async fn a_socket_from_another_origin_is_refused_before_it_attaches() {
    let s = fake_stack_with(FakeProvider::new(), |c| {
        c.live.embed_origins = vec!["https://app.example.com".into()];
    });
    let (_, live) = fake_capture(&s.app).await;
    let path = format!("/live/{live}/ws");
    for origin in [
        Some("https://evil.example"),
        Some("http://runner.test.evil.example"),
        Some("null"),
        None,
    ] {
        let reply = call(&s.app, upgrade_request(&path, origin)).await;
        assert_eq!(
            reply.error(),
            (403, "origin_not_allowed".into(), false),
            "{origin:?}"
        );
    }
    let page = s.provider.context(1).unwrap();
    assert_eq!(page.live.feeds_started(), 0, "a refused socket attached");
    // The controls: the runner's own origin and an embedding app's pass the check (and
    // fail only at the upgrade, which needs a real connection).
    for origin in [FAKE_ORIGIN, "https://app.example.com"] {
        let reply = call(&s.app, upgrade_request(&path, Some(origin))).await;
        assert_ne!(reply.status, 403, "{origin}: {}", reply.body);
    }
    let reply = call(&s.app, upgrade_request("/live/nope/ws", Some(FAKE_ORIGIN))).await;
    assert_eq!(reply.error(), (404, "live_view_not_found".into(), false));
}

async fn open(server_base: &str, live: &str) -> Result<LiveViewChannel, ClientError> {
    LiveViewChannel::connect(&format!("{server_base}/live/{live}"), WAIT).await
}

async fn next_event(channel: &mut LiveViewChannel) -> LiveViewEvent {
    loop {
        match tokio::time::timeout(WAIT, channel.next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(LiveMessage::Event(event)) => return event,
            Some(LiveMessage::Picture(_)) => {}
            None => panic!("the socket closed"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_go_out_inputs_come_in_and_outside_navigation_is_refused() {
    let (server, provider, _) = serve_fake(FakeProvider::new(), |_| {}).await;
    let (_, live) = fake_capture_on(&server).await;
    let page = provider.context(1).unwrap();
    page.live
        .set_location("https://fake.example/login", "Sign in");
    let mut channel = open(&server.base_url(), &live).await.unwrap();
    page.live.show(frame(7));
    let mut saw_location = false;
    let picture = loop {
        match tokio::time::timeout(WAIT, channel.next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(LiveMessage::Picture(jpeg)) => break jpeg,
            Some(LiveMessage::Event(LiveViewEvent::Location { url, title })) => {
                assert_eq!(
                    (url.as_str(), title.as_str()),
                    ("https://fake.example/login", "Sign in")
                );
                saw_location = true;
            }
            Some(_) => {}
            None => panic!("closed"),
        }
    };
    assert_eq!(picture, frame(7).jpeg);

    channel.type_text("日本語 ✓ alice").await.unwrap();
    channel.press("Tab").await.unwrap();
    channel
        .send(&LiveViewInput::Navigate {
            url: format!("http://{}/v1/health", server.local_addr()),
        })
        .await
        .unwrap();
    assert_eq!(
        next_event_skipping_location(&mut channel).await,
        LiveViewEvent::Refused {
            reason: "outside_sites".into()
        }
    );
    channel
        .send(&LiveViewInput::Navigate {
            url: "file:///etc/hostname".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        next_event_skipping_location(&mut channel).await,
        LiveViewEvent::Refused {
            reason: "scheme".into()
        }
    );
    channel
        .send(&LiveViewInput::Navigate {
            url: "https://www.fake.example/help".into(),
        })
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while page.live.inputs().len() < 3 {
        assert!(Instant::now() < deadline, "inputs never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let inputs = page.live.inputs();
    assert_eq!(
        inputs[0],
        LiveInput::Text {
            text: "日本語 ✓ alice".into()
        }
    );
    assert!(matches!(inputs[1], LiveInput::Key { .. }));
    assert!(
        matches!(&inputs[2], LiveInput::Navigate { url } if url.as_str() == "https://www.fake.example/help"),
        "only the navigation inside the platform's sites reached the browser: {inputs:?}"
    );
    assert!(
        saw_location
            || matches!(
                next_event(&mut channel).await,
                LiveViewEvent::Location { .. }
            )
    );
    channel.close().await;
    server.shutdown().await;
}

async fn next_event_skipping_location(channel: &mut LiveViewChannel) -> LiveViewEvent {
    loop {
        match next_event(channel).await {
            LiveViewEvent::Location { .. } | LiveViewEvent::Frame { .. } => {}
            other => return other,
        }
    }
}

async fn fake_capture_on(
    server: &abr_service::server::RunningServer<abr_core::testing::FakeContext>,
) -> (String, String) {
    let client =
        abr_client::AgentRunnerClient::new(server.base_url(), FAKE_TOKEN.to_owned()).unwrap();
    let started = client
        .capture_start(&abr_protocol::CaptureStartRequest {
            workspace_id: "ws".into(),
            account_id: "acct".into(),
            platform: FAKE_PLATFORM.into(),
            scope: None,
        })
        .await
        .unwrap();
    let live = started.live_view_url.rsplit('/').next().unwrap().to_owned();
    (started.capture_id, live)
}

async fn cancel_on(
    server: &abr_service::server::RunningServer<abr_core::testing::FakeContext>,
    capture_id: &str,
) {
    let client =
        abr_client::AgentRunnerClient::new(server.base_url(), FAKE_TOKEN.to_owned()).unwrap();
    client
        .capture_cancel(&abr_protocol::CaptureRef {
            capture_id: capture_id.into(),
            workspace_id: "ws".into(),
            account_id: "acct".into(),
        })
        .await
        .unwrap();
}

/// Reads until the socket says closed or closes; how long that took.
async fn closed_after(channel: &mut LiveViewChannel) -> Duration {
    let started = Instant::now();
    loop {
        match tokio::time::timeout(WAIT, channel.next()).await {
            Ok(Ok(Some(LiveMessage::Event(LiveViewEvent::Closed { .. }))))
            | Ok(Ok(None))
            | Ok(Err(_)) => {
                return started.elapsed();
            }
            Ok(Ok(Some(_))) => {}
            Err(_) => panic!("the socket stayed open"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_open_before_cancel_is_closed_within_a_second_after_it() {
    let (server, provider, _) = serve_fake(FakeProvider::new(), |_| {}).await;
    let (capture_id, live) = fake_capture_on(&server).await;
    let mut channel = open(&server.base_url(), &live).await.unwrap();
    let page = provider.context(1).unwrap();
    page.live.show(frame(1));
    channel.wait_for_picture(WAIT).await.unwrap();
    cancel_on(&server, &capture_id).await;
    let took = closed_after(&mut channel).await;
    assert!(
        took <= CLOSE_WITHIN,
        "the socket outlived its capture by {took:?}"
    );
    // And a late input after the end reaches nothing.
    let before = page.live.inputs().len();
    let _ = channel.type_text("after the end").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(page.live.inputs().len(), before);
    let deadline = Instant::now() + WAIT;
    while page.live.feeds_open() > 0 {
        assert!(Instant::now() < deadline, "the feed was not closed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = open(&server.base_url(), &live).await.unwrap_err();
    assert_eq!(refused.code(), Some("live_view_not_found"), "{refused}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_token_opens_at_most_its_limit_of_sockets() {
    let (server, _provider, _) = serve_fake(FakeProvider::new(), |c| {
        c.live.max_sockets_per_token = 2;
    })
    .await;
    let (_, live) = fake_capture_on(&server).await;
    let first = open(&server.base_url(), &live).await.unwrap();
    let second = open(&server.base_url(), &live).await.unwrap();
    let refused = open(&server.base_url(), &live).await.unwrap_err();
    assert_eq!(refused.status(), Some(429), "{refused}");
    assert_eq!(refused.code(), Some("live_view_limit"));
    first.close().await;
    let deadline = Instant::now() + WAIT;
    let third = loop {
        match open(&server.base_url(), &live).await {
            Ok(channel) => break channel,
            Err(e) if e.code() == Some("live_view_limit") && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    second.close().await;
    third.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_closes_the_socket_and_reaches_nothing() {
    let (server, provider, _) = serve_fake(FakeProvider::new(), |_| {}).await;
    let (_, live) = fake_capture_on(&server).await;
    let mut channel = open(&server.base_url(), &live).await.unwrap();
    let huge = json!({ "type": "text", "text": "x".repeat(100 * 1024) }).to_string();
    let mut raw = {
        // The same socket as a raw client, to send what LiveViewChannel would refuse to.
        let url = format!("ws://{}/live/{live}/ws", server.local_addr());
        let mut request = url.into_client_request().unwrap();
        request
            .headers_mut()
            .insert("origin", server.base_url().parse().unwrap());
        tokio_tungstenite::connect_async(request).await.unwrap().0
    };
    let _ = raw.send(Message::Text(huge.into())).await;
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match raw.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "a 100 KiB message did not close the socket");
    assert!(provider.context(1).unwrap().live.inputs().is_empty());
    // The other socket is unaffected.
    channel.type_text("fine").await.unwrap();
    let deadline = Instant::now() + WAIT;
    while provider.context(1).unwrap().live.inputs().is_empty() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    channel.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_from_another_origin_is_refused_on_the_wire() {
    let (server, provider, _) = serve_fake(FakeProvider::new(), |_| {}).await;
    let (_, live) = fake_capture_on(&server).await;
    let url = format!("ws://{}/live/{live}/ws", server.local_addr());
    for origin in [Some("https://evil.example"), None] {
        let mut request = url.clone().into_client_request().unwrap();
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert("origin", origin.parse().unwrap());
        }
        match tokio_tungstenite::connect_async(request).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 403, "{origin:?}");
            }
            other => panic!("{origin:?}: {other:?}"),
        }
    }
    assert_eq!(provider.context(1).unwrap().live.feeds_started(), 0);
    server.shutdown().await;
}

// ---- The opt-in provider-viewer proxy, against a stand-in of self-hosted Steel that serves
// its REST API, its viewer and CDP on one origin, like steel-browser.

#[derive(Default)]
struct StandIn {
    hits: Mutex<Vec<String>>,
    sockets: AtomicUsize,
}

fn record(seen: &StandIn, what: String) {
    seen.hits.lock().unwrap().push(what);
}

async fn stand_in() -> (SocketAddr, Arc<StandIn>) {
    use axum::extract::ws::WebSocketUpgrade;
    use axum::extract::{Query, State};
    use axum::routing::get;
    let seen = Arc::new(StandIn::default());
    let app = axum::Router::new()
        .route(
            "/v1/sessions/debug",
            get(
                |State(s): State<Arc<StandIn>>, Query(q): Query<std::collections::HashMap<String, String>>| async move {
                    record(&s, "GET /v1/sessions/debug".into());
                    let body = if q.contains_key("big") {
                        "x".repeat(9 * 1024 * 1024)
                    } else {
                        "<!doctype html><title>steel viewer</title><script>new WebSocket('ws://' + location.host + '/v1/sessions/cast')</script>".to_owned()
                    };
                    ([(header::CONTENT_TYPE, "text/html")], body)
                },
            ),
        )
        .route(
            "/v1/sessions/cast",
            get(|State(s): State<Arc<StandIn>>, ws: WebSocketUpgrade| async move {
                record(&s, "WS /v1/sessions/cast".into());
                s.sockets.fetch_add(1, Ordering::SeqCst);
                ws.on_upgrade(|mut socket| async move {
                    while let Some(Ok(m)) = socket.recv().await {
                        if socket.send(m).await.is_err() {
                            break;
                        }
                    }
                })
            }),
        )
        .fallback(|State(s): State<Arc<StandIn>>, request: Request<Body>| async move {
            // The REST API and the CDP endpoint at the root: never for a live token.
            record(&s, format!("{} {}", request.method(), request.uri().path()));
            axum::Json(json!({"sessions": [], "webSocketDebuggerUrl": "ws://stand-in/"}))
        })
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

fn steel_like(addr: SocketAddr) -> FakeProvider {
    FakeProvider::new().with_provider_viewer(ProviderViewer {
        url: SecretValue::new(format!("http://{addr}/v1/sessions/debug?showControls=true")),
        paths: vec!["/v1/sessions/debug".into(), "/v1/sessions/cast".into()],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_escapes_through_the_viewer_proxy_never_reach_the_provider() {
    let (addr, seen) = stand_in().await;
    let s = fake_stack_with(steel_like(addr), |c| c.live.proxy_provider_viewer = true);
    let (_, live) = fake_capture(&s.app).await;
    for escape in [
        "//v1/sessions",
        "//",
        "/../../v1/sessions",
        "/./../v1/sessions",
        "/%2Fv1%2Fsessions",
        "/v1%2Fsessions",
        "/%2e%2e/%2e%2e/v1/sessions",
        "/v1/sessions",
        "/v1/sessions/abc/release",
        "/json/version",
        "/devtools/browser/x",
        "/v1/sessions/debug/../../sessions",
        "/v1\\sessions",
    ] {
        let path = format!("/live/{live}/view{escape}");
        let reply = call(
            &s.app,
            Request::builder()
                .uri(path.as_str())
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(reply.error().0, 404, "{escape}: {}", reply.body);
        let reply = call(&s.app, upgrade_request(&path, Some(FAKE_ORIGIN))).await;
        assert_eq!(reply.error().0, 404, "WS {escape}: {}", reply.body);
    }
    assert!(
        seen.hits.lock().unwrap().is_empty(),
        "escapes reached the provider: {:?}",
        seen.hits.lock().unwrap()
    );
    // The control: the viewer's own page comes through, with the proxied-content CSP that
    // keeps it from connecting anywhere but the runner.
    let reply = get(&s.app, &format!("/live/{live}/view/")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.body.contains("steel viewer"));
    let csp = reply.header("content-security-policy").unwrap();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(
        seen.hits.lock().unwrap().as_slice(),
        ["GET /v1/sessions/debug"]
    );
    // The page framing it.
    let frame = get(&s.app, &format!("/live/{live}")).await;
    assert!(
        frame.body.contains(&format!("/live/{live}/view/")),
        "{}",
        frame.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_the_provider_viewer_is_not_proxied_at_all() {
    let (addr, seen) = stand_in().await;
    let s = fake_stack_with(steel_like(addr), |_| {});
    let (_, live) = fake_capture(&s.app).await;
    let reply = get(&s.app, &format!("/live/{live}/view/")).await;
    assert_eq!(reply.error(), (404, "live_view_not_found".into(), false));
    let page = get(&s.app, &format!("/live/{live}")).await;
    assert!(
        page.body.contains("Connecting to the browser"),
        "the runner's own view"
    );
    assert!(seen.hits.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_proxied_answer_is_cut_off() {
    let (addr, _seen) = stand_in().await;
    let s = fake_stack_with(
        FakeProvider::new().with_provider_viewer(ProviderViewer {
            url: SecretValue::new(format!("http://{addr}/v1/sessions/debug?big=1")),
            paths: vec!["/v1/sessions/debug".into()],
        }),
        |c| c.live.proxy_provider_viewer = true,
    );
    let (_, live) = fake_capture(&s.app).await;
    let reply = get(&s.app, &format!("/live/{live}/view/")).await;
    assert_eq!(reply.error(), (502, "live_view_unavailable".into(), false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_socket_is_closed_within_a_second_after_cancel() {
    let (addr, seen) = stand_in().await;
    let (server, _provider, _) =
        serve_fake(steel_like(addr), |c| c.live.proxy_provider_viewer = true).await;
    let (capture_id, live) = fake_capture_on(&server).await;
    let url = format!(
        "ws://{}/live/{live}/view/v1/sessions/cast",
        server.local_addr()
    );
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("origin", server.base_url().parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket.send(Message::Text("ping".into())).await.unwrap();
    let echoed = tokio::time::timeout(WAIT, socket.next()).await.unwrap();
    assert!(matches!(echoed, Some(Ok(Message::Text(t))) if t.as_str() == "ping"));
    assert_eq!(seen.sockets.load(Ordering::SeqCst), 1);

    cancel_on(&server, &capture_id).await;
    let started = Instant::now();
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            match socket.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the proxied socket stayed open after cancel"
    );
    assert!(
        started.elapsed() <= CLOSE_WITHIN,
        "closed {:?} after cancel",
        started.elapsed()
    );
    server.shutdown().await;
}

// ---- The HTTP server itself.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    let (server, _, _) = serve_fake(FakeProvider::new(), |c| {
        c.limits.header_read_timeout = Duration::from_secs(1);
    })
    .await;
    let mut half_open = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    half_open
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(WAIT, half_open.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the half-open connection was kept: {read:?}"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800) && took <= Duration::from_secs(3),
        "closed after {took:?}"
    );
    // An idle keep-alive connection goes the same way.
    let mut idle = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    idle.write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let n = idle.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let rest = tokio::time::timeout(WAIT, async {
        loop {
            match idle.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(rest.is_ok(), "an idle keep-alive connection was kept");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    let (server, _, _) = serve_fake(FakeProvider::new(), |c| {
        c.limits.max_connections = 2;
        c.limits.header_read_timeout = Duration::from_secs(30);
    })
    .await;
    let addr = server.local_addr();
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _second = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    third
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "a third connection was served beyond the cap of 2"
    );
    drop(first);
    let n = tokio::time::timeout(WAIT, third.read(&mut buf))
        .await
        .expect("the waiting connection was never served")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    server.shutdown().await;
}
