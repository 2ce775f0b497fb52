//! The live view over the relay, on real Chromium and the demo site: a hub
//! (`http::app_with_relay` on a real loopback listener, its own runner on the core's fakes)
//! and a runner on another "machine" (a `Runner` on local Chromium, linked with
//! `relay::link::run`, whose public URL the viewer never reaches).
//!
//! - a capture started through the hub answers a live-view URL on the hub; a user signs in
//!   through it (a second browser that may reach the hub only) to the runner's browser, and
//!   `capture/finish` through the hub answers the signed-in session (the runner allows
//!   session export);
//! - an unknown token, and a live token of a capture the hub never handed out, are the
//!   hub's `404` and never forwarded; a foreign Origin is refused by the hub; a network
//!   client on the runner claiming a foreign Origin (or the hub's) is still refused;
//! - when the runner's relay socket drops, the viewer's socket is closed and the token is
//!   forgotten.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_core::testing::FakeProvider;
use abr_service::relay::link::{self, LinkOptions, Shutdown};
use abr_service::relay::{Hub, HubSettings, RelayError};
use common::fake::{FAKE_TOKEN, fake_stack_with};
use common::*;
use futures::StreamExt;
use secrecy::SecretString;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

/// Bound of each test.
const TEST_LIMIT: Duration = Duration::from_secs(240);
const RUNNER_ID: &str = "erins-laptop";

/// The hub: in-process, on a real loopback listener, its public URL its own address.
struct HubServer {
    addr: SocketAddr,
    hub: Hub,
    task: JoinHandle<()>,
}

impl HubServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hub_runner = fake_stack_with(FakeProvider::new(), |c| {
            c.public_url = Some(url::Url::parse(&format!("http://{addr}")).unwrap());
        });
        let hub = Hub::new(HubSettings {
            heartbeat: Duration::from_millis(200),
            dead_after: Duration::from_millis(1_500),
            ..HubSettings::default()
        });
        let app = abr_service::http::app_with_relay(Arc::clone(&hub_runner.runner), hub.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, hub, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A call to the hub for the runner.
    fn call(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        raw_http()
            .request(method, format!("{}{path}", self.url()))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", RUNNER_ID)
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        self.hub.kill();
        self.task.abort();
    }
}

/// The runner's link to the hub; aborted when dropped.
struct Linked {
    task: JoinHandle<Result<(), RelayError>>,
    _stop: watch::Sender<Shutdown>,
}

impl Linked {
    async fn start(stack: &Stack, hub: &HubServer) -> Self {
        let mut options = LinkOptions::new(
            url::Url::parse(&hub.url()).unwrap(),
            SecretString::from(FAKE_TOKEN.to_owned()),
            RUNNER_ID.into(),
            "erins-laptop.local".into(),
        );
        options.heartbeat = Duration::from_millis(200);
        options.dead_after = Duration::from_millis(1_500);
        options.backoff_base = Duration::from_millis(50);
        options.backoff_cap = Duration::from_millis(300);
        let app = abr_service::http::app(Arc::clone(stack.server.runner()));
        let (stop, stopped) = watch::channel(Shutdown::Running);
        let linked = Self {
            task: tokio::spawn(link::run(app, options, stopped)),
            _stop: stop,
        };
        wait_for("the runner to connect", WAIT, || {
            hub.hub.connected(RUNNER_ID).is_some()
        })
        .await;
        linked
    }
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a capture of the demo platform through the hub: its JSON answer.
async fn start_through(hub: &HubServer) -> serde_json::Value {
    let response = hub
        .call(reqwest::Method::POST, "/v1/capture/start")
        .json(&start_request())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

fn capture_ref(capture_id: &str) -> serde_json::Value {
    serde_json::json!({ "captureId": capture_id, "workspaceId": WORKSPACE, "accountId": ACCOUNT })
}

/// A WebSocket handshake at `base` for the live socket of `token`, claiming `origin`.
async fn live_socket(
    base: &str,
    token: &str,
    origin: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tungstenite::Error,
> {
    let ws = base.replacen("http://", "ws://", 1);
    let mut request = format!("{ws}/live/{token}/ws")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", origin.parse().unwrap());
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio_tungstenite::connect_async(request),
    )
    .await
    .expect("the handshake hung")
    .map(|(socket, _)| socket)
}

/// The status of a refused handshake.
fn refused_status(
    result: Result<
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        tungstenite::Error,
    >,
) -> u16 {
    match result {
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("not an HTTP refusal: {other}"),
        Ok(_) => panic!("the handshake was accepted"),
    }
}

/// `csp` with every `'nonce-…'` source written `'nonce-N'`.
fn without_nonce(csp: &str) -> String {
    let mut out = String::new();
    let mut rest = csp;
    while let Some((before, after)) = rest.split_once("'nonce-") {
        out.push_str(before);
        out.push_str("'nonce-N'");
        rest = after.split_once('\'').map_or("", |(_, tail)| tail);
    }
    out.push_str(rest);
    out
}

/// Reads the socket until a picture (a binary message) arrives.
async fn first_picture(
    socket: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> usize {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("no picture came")
            .expect("the socket ended before a picture")
            .unwrap();
        if let Message::Binary(jpeg) = message {
            assert!(jpeg.starts_with(&[0xff, 0xd8]), "not a JPEG");
            return jpeg.len();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_signs_in_through_the_hubs_live_view_to_a_runner_elsewhere() {
    tokio::time::timeout(TEST_LIMIT, signs_in_through_the_hub())
        .await
        .expect("the test took too long");
}

async fn signs_in_through_the_hub() {
    // The runner's user allows session export: the hub gets the session it captured
    // (without it, a relayed finish answers no cookie: `relay.rs`).
    let stack = stack_with(|c| c.relay_session_export = true, |b| b).await;
    let hub = HubServer::start().await;
    let linked = Linked::start(&stack, &hub).await;

    let capture = start_through(&hub).await;
    let live_view_url = capture["liveViewUrl"].as_str().unwrap().to_owned();
    assert!(
        live_view_url.starts_with(&format!("{}/live/", hub.url())),
        "the live view is on the hub: {live_view_url}"
    );
    assert!(!live_view_url.contains(&stack.server.base_url()));
    let capture_id = capture["captureId"].as_str().unwrap().to_owned();

    // The user's browser may reach the hub, and nothing else private (not the runner).
    let user = sign_in_as_a_user(&live_view_url, "erin").await;
    let mut finished = None;
    for _ in 0..120 {
        let response = hub
            .call(reqwest::Method::POST, "/v1/capture/finish")
            .json(&capture_ref(&capture_id))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        if status == 200 {
            finished = Some(body);
            break;
        }
        assert_eq!(body["error"]["code"], "not_authenticated", "{body}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    user.close().await;
    let finished = finished.expect("never signed in through the hub");
    let cookie = finished["session"]["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == abr_demo::site::SESSION_COOKIE)
        .expect("the demo site's session cookie");
    let value = cookie["value"].as_str().unwrap();
    assert!(!value.is_empty());
    // The site's own word: that cookie is erin's session.
    let page = raw_http()
        .get(stack.site.base_url())
        .header(
            "cookie",
            format!("{}={value}", abr_demo::site::SESSION_COOKIE),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("erin"), "not signed in as erin: {page}");

    // The capture is over: its live view is gone on the hub too.
    let token = live_token(&live_view_url);
    let gone = raw_http()
        .get(format!("{}/live/{token}", hub.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    drop(linked);
    stack.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_carries_only_tokens_it_handed_out_and_origins_stay_checked() {
    tokio::time::timeout(TEST_LIMIT, only_known_tokens())
        .await
        .expect("the test took too long");
}

async fn only_known_tokens() {
    let stack = stack().await;
    let hub = HubServer::start().await;
    let linked = Linked::start(&stack, &hub).await;
    let runner_base = stack.server.base_url();
    let hub_origin = hub.url();

    // A capture started on the runner directly: its live token works there, but the hub
    // never handed it out, so the hub does not forward it.
    let direct = stack.client.capture_start(&start_request()).await.unwrap();
    let direct_token = live_token(&direct.live_view_url);
    let on_runner = raw_http()
        .get(format!("{runner_base}/live/{direct_token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(on_runner.status(), 200, "the control: the runner serves it");
    let runner_csp = on_runner.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    for token in [
        direct_token.as_str(),
        "nope",
        "a-token-nobody-minted_0123456789",
    ] {
        let page = raw_http()
            .get(format!("{}/live/{token}", hub.url()))
            .send()
            .await
            .unwrap();
        let error = raw_error(page).await;
        assert_eq!(
            (error.status, error.code.as_str()),
            (404, "live_view_not_found")
        );
        let socket = live_socket(&hub.url(), token, &hub_origin).await;
        assert_eq!(refused_status(socket), 404, "{token}");
    }

    // Through the hub: the hub's token and the hub's origin reach the runner's browser.
    let capture = start_through(&hub).await;
    let token = live_token(capture["liveViewUrl"].as_str().unwrap());
    let page = raw_http()
        .get(format!("{}/live/{token}", hub.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    // The hub's CSP and headers: the runner's viewer CSP kept only because it is exactly
    // that (its nonce, which the page's scripts carry), framed by the hub's origin.
    assert_eq!(without_nonce(&csp), without_nonce(&runner_csp));
    assert!(csp.ends_with("frame-ancestors 'self'"), "{csp}");
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
    ] {
        assert_eq!(page.headers()[name], value, "{name}");
    }
    assert!(page.headers().get("set-cookie").is_none());
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap()
        .to_owned();
    let html = page.text().await.unwrap();
    assert!(html.contains("/live/"));
    assert!(
        html.contains(&format!("<script nonce=\"{nonce}\">")),
        "{html}"
    );
    let mut viewer = live_socket(&hub.url(), &token, &hub_origin).await.unwrap();
    assert!(first_picture(&mut viewer).await > 0);

    // The attacks. A page elsewhere opening the hub's socket with the token it found:
    for origin in ["https://evil.example", &runner_base, "null"] {
        let socket = live_socket(&hub.url(), &token, origin).await;
        assert_eq!(refused_status(socket), 403, "{origin}");
    }
    // A network client on the runner itself: the relay's exception is not for it, whatever
    // Origin it claims (a foreign one, or the hub's).
    for origin in ["https://evil.example", hub_origin.as_str()] {
        let socket = live_socket(&runner_base, &token, origin).await;
        assert_eq!(refused_status(socket), 403, "{origin}");
    }
    // The control: the runner's own origin still opens its socket directly.
    let mut own = live_socket(&runner_base, &token, &runner_base)
        .await
        .unwrap();
    assert!(first_picture(&mut own).await > 0);
    drop(own);

    drop(viewer);
    drop(linked);
    stack.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_runners_socket_drops_the_viewers_socket_is_closed() {
    tokio::time::timeout(TEST_LIMIT, socket_drops())
        .await
        .expect("the test took too long");
}

async fn socket_drops() {
    let stack = stack().await;
    let hub = HubServer::start().await;
    let linked = Linked::start(&stack, &hub).await;
    let capture = start_through(&hub).await;
    let token = live_token(capture["liveViewUrl"].as_str().unwrap());
    let mut viewer = live_socket(&hub.url(), &token, &hub.url()).await.unwrap();
    assert!(first_picture(&mut viewer).await > 0);

    // The runner's machine goes away: its relay socket drops.
    drop(linked);
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match viewer.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the viewer's socket stayed open");
    wait_for("the runner to be gone", WAIT, || {
        hub.hub.connected(RUNNER_ID).is_none()
    })
    .await;
    // Its token is forgotten with the socket: the hub's own 404, nothing forwarded.
    let page = raw_http()
        .get(format!("{}/live/{token}", hub.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 404);
    stack.server.shutdown().await;
}
