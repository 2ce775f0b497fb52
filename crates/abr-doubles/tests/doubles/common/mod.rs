//! Helpers shared by the integration tests: HTTP client, raw WebSockets, a local page server.
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these helpers"
)]

use std::future::Future;
use std::time::Duration;

use abr_doubles::CdpClient;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Bound for any single awaited step.
pub(crate) const STEP: Duration = Duration::from_secs(15);

/// Awaits `fut` or panics after [`STEP`].
pub(crate) async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// A plain HTTP response.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
}

impl Resp {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }

    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// Sends one request; `body` is sent as JSON when given.
pub(crate) async fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    let client = reqwest::Client::builder()
        .timeout(STEP)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut req = client.request(method.parse().unwrap(), url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = bounded(url, req.send()).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = bounded(url, resp.text()).await.unwrap();
    Resp {
        status,
        headers,
        text,
    }
}

pub(crate) type RawWs = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens a raw WebSocket (no Origin header).
pub(crate) async fn raw_ws(url: &str) -> RawWs {
    let (ws, _) = bounded(url, tokio_tungstenite::connect_async(url))
        .await
        .unwrap();
    ws
}

/// HTTP status of a refused WebSocket handshake (panics if it was accepted).
pub(crate) async fn ws_refused_status(url: &str) -> u16 {
    match bounded(url, tokio_tungstenite::connect_async(url)).await {
        Ok(_) => panic!("upgrade to {url} unexpectedly accepted"),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("unexpected handshake error for {url}: {e}"),
    }
}

/// Reads until the socket ends; returns `true` if it ended (close frame, error or EOF) within
/// the bound. Text/binary frames (CDP events) are skipped.
pub(crate) async fn ends_soon(ws: &mut RawWs) -> bool {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return true,
                Some(Ok(_)) => {}
            }
        }
    })
    .await
    .unwrap_or(false)
}

/// Serves a tiny HTML page on 127.0.0.1 for every request; returns its origin.
pub(crate) async fn page_server() -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let body = "<!doctype html><html><head><title>abr page</title></head><body>ok</body></html>";
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), task)
}

/// Attaches to the first page target and navigates it to `url`, waiting for the load.
/// Returns the flattened CDP session id.
pub(crate) async fn open_page(cdp: &CdpClient, url: &str) -> String {
    let targets = cdp.page_targets().await.unwrap();
    let (target, _) = targets.first().expect("a page target").clone();
    let sid = cdp.attach(&target).await.unwrap();
    cdp.call_in(Some(&sid), "Page.navigate", json!({ "url": url }))
        .await
        .unwrap();
    let expected = format!("{url}|complete");
    bounded("page load", async {
        loop {
            let state = cdp
                .evaluate(&sid, "location.href + '|' + document.readyState")
                .await;
            if state.as_ref().ok().and_then(Value::as_str) == Some(expected.as_str()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    sid
}

/// `Storage.getCookies` over `cdp`.
pub(crate) async fn cookies(cdp: &CdpClient) -> Vec<Value> {
    let res = cdp.call("Storage.getCookies", json!({})).await.unwrap();
    res["cookies"].as_array().cloned().unwrap_or_default()
}

/// Whether a cookie `name=value` is among `cookies`.
pub(crate) fn has_cookie(cookies: &[Value], name: &str, value: &str) -> bool {
    cookies
        .iter()
        .any(|c| c["name"] == name && c["value"] == value)
}

/// Polls until `pid` has disappeared (bounded).
pub(crate) async fn process_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !abr_doubles::process_exists(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
