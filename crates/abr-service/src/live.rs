//! The live view: how a person sees and drives a capture's browser.
//!
//! - Local and CDP browsers have no viewer of their own: the runner serves one. `GET
//!   /live/{token}` is a page showing the capture's page (CDP screencast) and `/live/{token}/ws`
//!   carries frames out and mouse, keyboard and navigation in.
//! - Remote providers (Steel, Kernel) have a viewer: `/live/{token}/view/...` proxies it (HTTP
//!   and WebSocket), so the provider's viewer URL, a credential, never leaves the runner.
//!
//! The live token resolves only its capture's browser, and only while the capture is open.

use std::sync::Arc;
use std::time::Duration;

use abr_core::LiveTarget;
use abr_providers::BrowserSession;
use axum::Router;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{ApiError, AppState};

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/live/{token}", get(viewer))
        .route("/live/{token}/ws", get(screencast))
        .route("/live/{token}/view/", get(proxy_root))
        .route("/live/{token}/view/{*rest}", get(proxy_rest))
}

fn gone() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "live_view_not_found",
        "no open capture has this live view",
    )
}

fn target(state: &AppState, token: &str) -> Result<LiveTarget<BrowserSession>, ApiError> {
    state.runner.captures.live_target(token).ok_or_else(gone)
}

async fn viewer(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let target = target(&state, &token)?;
    let page = if target.remote_url.is_some() {
        // The token resolved to an open capture, so it is one of ours: base64url, safe
        // inside an attribute.
        REMOTE_PAGE.replace("{view}", &format!("/live/{token}/view/"))
    } else {
        VIEWER_PAGE.to_owned()
    };
    let mut response = Html(page).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    Ok(response)
}

/// A message from the viewer.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Input {
    Mouse {
        event: String,
        x: f64,
        y: f64,
        #[serde(default)]
        button: Option<String>,
        #[serde(default)]
        click_count: Option<u32>,
        #[serde(default)]
        delta_x: Option<f64>,
        #[serde(default)]
        delta_y: Option<f64>,
    },
    Text {
        text: String,
    },
    Key {
        key: String,
    },
    Navigate {
        url: String,
    },
    Back,
    Forward,
    Reload,
}

/// Key name → (code, Windows virtual key code, text produced).
fn special_key(key: &str) -> Option<(&'static str, u32, Option<&'static str>)> {
    Some(match key {
        "Enter" => ("Enter", 13, Some("\r")),
        "Tab" => ("Tab", 9, None),
        "Backspace" => ("Backspace", 8, None),
        "Escape" => ("Escape", 27, None),
        "Delete" => ("Delete", 46, None),
        "ArrowLeft" => ("ArrowLeft", 37, None),
        "ArrowUp" => ("ArrowUp", 38, None),
        "ArrowRight" => ("ArrowRight", 39, None),
        "ArrowDown" => ("ArrowDown", 40, None),
        "Home" => ("Home", 36, None),
        "End" => ("End", 35, None),
        _ => return None,
    })
}

/// The CDP calls one viewer input turns into.
fn cdp_calls(input: Input) -> Vec<(&'static str, Value)> {
    match input {
        Input::Mouse {
            event,
            x,
            y,
            button,
            click_count,
            delta_x,
            delta_y,
        } => {
            let kind = match event.as_str() {
                "mousePressed" | "mouseReleased" | "mouseMoved" | "mouseWheel" => event,
                _ => return Vec::new(),
            };
            let button = match button.as_deref() {
                Some("right") => "right",
                Some("middle") => "middle",
                Some("none") | None if kind == "mouseMoved" || kind == "mouseWheel" => "none",
                _ => "left",
            };
            vec![(
                "Input.dispatchMouseEvent",
                json!({
                    "type": kind, "x": x.max(0.0), "y": y.max(0.0), "button": button,
                    "clickCount": click_count.unwrap_or(1),
                    "deltaX": delta_x.unwrap_or(0.0), "deltaY": delta_y.unwrap_or(0.0),
                }),
            )]
        }
        Input::Text { text } if !text.is_empty() && text.len() <= 4096 => {
            vec![("Input.insertText", json!({ "text": text }))]
        }
        Input::Text { .. } => Vec::new(),
        Input::Key { key } => match special_key(&key) {
            Some((code, vk, text)) => {
                let mut down = json!({
                    "type": "keyDown", "key": key, "code": code,
                    "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
                });
                if let Some(text) = text {
                    down["text"] = json!(text);
                }
                let up = json!({
                    "type": "keyUp", "key": key, "code": code,
                    "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
                });
                vec![
                    ("Input.dispatchKeyEvent", down),
                    ("Input.dispatchKeyEvent", up),
                ]
            }
            None => Vec::new(),
        },
        Input::Navigate { url } => match url::Url::parse(&url) {
            // Only web pages: no file:, chrome:, javascript: or data: URLs from the viewer.
            Ok(u) if matches!(u.scheme(), "http" | "https") => {
                vec![("Page.navigate", json!({ "url": u.as_str() }))]
            }
            _ => Vec::new(),
        },
        Input::Back => vec![(
            "Runtime.evaluate",
            json!({ "expression": "history.back()" }),
        )],
        Input::Forward => vec![(
            "Runtime.evaluate",
            json!({ "expression": "history.forward()" }),
        )],
        Input::Reload => vec![("Page.reload", json!({}))],
    }
}

async fn screencast(
    State(state): State<AppState>,
    Path(token): Path<String>,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let target = target(&state, &token)?;
    if target.remote_url.is_some() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "live_view_not_found",
            "this capture's live view is the provider's: open /live/{token}",
        ));
    }
    let session = Arc::clone(&target.context);
    Ok(upgrade.on_upgrade(move |socket| async move {
        if let Err(e) = stream(socket, session, state, token).await {
            tracing::debug!(error = %e, "live view closed");
        }
    }))
}

async fn stream(
    socket: WebSocket,
    session: Arc<BrowserSession>,
    state: AppState,
    token: String,
) -> Result<(), String> {
    let page = session.page().clone();
    let cdp = session
        .context()
        .new_cdp_session(&page)
        .await
        .map_err(|e| e.to_string())?;
    let (frames_tx, mut frames_rx) = tokio::sync::mpsc::channel::<Value>(4);
    cdp.on("Page.screencastFrame", move |frame: Value| {
        let tx = frames_tx.clone();
        async move {
            // Drop frames the viewer cannot keep up with; the ack below paces the browser.
            let _ = tx.try_send(frame);
            Ok(())
        }
    });
    cdp.send(
        "Page.startScreencast",
        Some(json!({ "format": "jpeg", "quality": 70, "maxWidth": 1280, "maxHeight": 800 })),
    )
    .await
    .map_err(|e| e.to_string())?;
    let (mut out, mut incoming) = socket.split();
    let mut open_check = tokio::time::interval(Duration::from_secs(1));
    // Once the viewer stops reading, frames stop, but the input it sent before leaving is
    // still delivered (a user who presses Enter and closes the tab has signed in).
    let mut viewer_reads = true;
    loop {
        tokio::select! {
            frame = frames_rx.recv(), if viewer_reads => {
                let Some(frame) = frame else { break };
                if let Some(id) = frame.get("sessionId").cloned() {
                    let _ = cdp.send("Page.screencastFrameAck", Some(json!({ "sessionId": id }))).await;
                }
                let message = json!({
                    "type": "frame",
                    "data": frame.get("data").cloned().unwrap_or(Value::Null),
                    "width": frame.pointer("/metadata/deviceWidth").cloned().unwrap_or(Value::Null),
                    "height": frame.pointer("/metadata/deviceHeight").cloned().unwrap_or(Value::Null),
                });
                if out.send(Message::Text(message.to_string().into())).await.is_err() {
                    viewer_reads = false;
                }
            }
            message = incoming.next() => {
                let Some(Ok(message)) = message else { break };
                let Message::Text(text) = message else { continue };
                let Ok(input) = serde_json::from_str::<Input>(&text) else { continue };
                for (method, params) in cdp_calls(input) {
                    if let Err(e) = cdp.send(method, Some(params)).await {
                        tracing::debug!(method, error = %e, "live input failed");
                    }
                }
            }
            _ = open_check.tick() => {
                if state.runner.captures.live_target(&token).is_none() {
                    let bye = json!({ "type": "closed", "reason": "the capture ended" });
                    let _ = out.send(Message::Text(bye.to_string().into())).await;
                    break;
                }
            }
        }
    }
    let _ = cdp.send("Page.stopScreencast", None).await;
    let _ = cdp.detach().await;
    Ok(())
}

async fn proxy_root(
    state: State<AppState>,
    Path(token): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy(state, token, String::new(), request).await
}

async fn proxy_rest(
    state: State<AppState>,
    Path((token, rest)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy(state, token, rest, request).await
}

/// Proxies the provider's viewer: `view/` is its URL, `view/<rest>` is resolved against it.
async fn proxy(
    State(state): State<AppState>,
    token: String,
    rest: String,
    request: Request,
) -> Result<Response, ApiError> {
    let target = target(&state, &token)?;
    let Some(remote) = target.remote_url else {
        return Err(gone());
    };
    let base = url::Url::parse(remote.expose()).map_err(|_| gone())?;
    let mut upstream = if rest.is_empty() {
        base.clone()
    } else {
        base.join(&rest).map_err(|_| gone())?
    };
    if !rest.is_empty() {
        upstream.set_query(request.uri().query());
    }
    // Only the viewer's own origin: a path cannot lead the proxy anywhere else.
    if upstream.origin() != base.origin() {
        return Err(gone());
    }
    let (mut parts, _body) = request.into_parts();
    if let Ok(upgrade) = WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        let mut ws_url = upstream;
        let scheme = if ws_url.scheme() == "https" {
            "wss"
        } else {
            "ws"
        };
        let _ = ws_url.set_scheme(scheme);
        return Ok(upgrade.on_upgrade(move |client| async move {
            let Ok((server, _)) = tokio_tungstenite::connect_async(ws_url.as_str()).await else {
                return;
            };
            pipe(client, server).await;
        }));
    }
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|_| gone())?
        .get(upstream)
        .send()
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "live_view_unavailable",
                format!("the provider's viewer did not answer: {}", e.without_url()),
            )
        })?;
    let status =
        StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .cloned();
    let body = response.bytes().await.map_err(|_| gone())?;
    let mut out = Response::new(Body::from(body));
    *out.status_mut() = status;
    if let Some(ct) = content_type.and_then(|v| header::HeaderValue::from_bytes(v.as_bytes()).ok())
    {
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    out.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Ok(out)
}

async fn pipe(
    client: WebSocket,
    server: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) {
    use tokio_tungstenite::tungstenite::Message as Up;
    let (mut client_tx, mut client_rx) = client.split();
    let (mut server_tx, mut server_rx) = server.split();
    let to_server = async {
        while let Some(Ok(m)) = client_rx.next().await {
            let m = match m {
                Message::Text(t) => Up::Text(t.as_str().into()),
                Message::Binary(b) => Up::Binary(b),
                Message::Close(_) => break,
                _ => continue,
            };
            if server_tx.send(m).await.is_err() {
                break;
            }
        }
    };
    let to_client = async {
        while let Some(Ok(m)) = server_rx.next().await {
            let m = match m {
                Up::Text(t) => Message::Text(t.as_str().into()),
                Up::Binary(b) => Message::Binary(b),
                Up::Close(_) => break,
                _ => continue,
            };
            if client_tx.send(m).await.is_err() {
                break;
            }
        }
    };
    tokio::select! { () = to_server => {}, () = to_client => {} }
}

const REMOTE_PAGE: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>ABR live view</title>
<style>html,body{margin:0;height:100%;background:#1e1e1e}iframe{border:0;width:100%;height:100%}</style></head>
<body><iframe src="{view}" allow="autoplay; clipboard-read; clipboard-write"></iframe></body></html>"#;

const VIEWER_PAGE: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>ABR live view</title>
<style>
body{margin:0;background:#1e1e1e;color:#ddd;font:14px system-ui,sans-serif}
#bar{display:flex;gap:8px;align-items:center;padding:6px 8px;background:#2b2b2b}
#url{flex:1;min-width:0;background:#111;color:#ddd;border:1px solid #444;padding:4px}
button{background:#3a3a3a;color:#ddd;border:1px solid #555;padding:4px 8px}
#screen{display:block;max-width:100%;outline:none;cursor:default;margin:0 auto}
#status{min-width:7em;text-align:right}
</style></head><body>
<div id="bar"><button id="back" title="Back">&larr;</button><button id="fwd" title="Forward">&rarr;</button>
<button id="reload" title="Reload">&#8635;</button>
<form id="nav" style="display:flex;flex:1"><input id="url" placeholder="https://" autocomplete="off"></form>
<span id="status">connecting&hellip;</span></div>
<img id="screen" tabindex="0" alt="live browser">
<script>
(() => {
  const token = location.pathname.split('/').filter(Boolean)[1];
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live/' + token + '/ws');
  const img = document.getElementById('screen'), status = document.getElementById('status');
  let dw = 1280, dh = 800;
  const send = (m) => { if (ws.readyState === 1) ws.send(JSON.stringify(m)); };
  ws.onopen = () => { status.textContent = 'connected'; };
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.type === 'frame') { img.src = 'data:image/jpeg;base64,' + m.data; dw = m.width || dw; dh = m.height || dh; status.textContent = 'live'; img.dataset.frames = (+(img.dataset.frames || 0) + 1); }
    else if (m.type === 'closed') { status.textContent = m.reason; }
  };
  ws.onclose = () => { status.textContent = 'disconnected'; };
  const pos = (e) => { const r = img.getBoundingClientRect(); return { x: (e.clientX - r.left) * dw / r.width, y: (e.clientY - r.top) * dh / r.height }; };
  img.addEventListener('mousedown', (e) => { img.focus(); const p = pos(e); send({ type: 'mouse', event: 'mousePressed', x: p.x, y: p.y, button: 'left', clickCount: 1 }); e.preventDefault(); });
  img.addEventListener('mouseup', (e) => { const p = pos(e); send({ type: 'mouse', event: 'mouseReleased', x: p.x, y: p.y, button: 'left', clickCount: 1 }); });
  img.addEventListener('wheel', (e) => { const p = pos(e); send({ type: 'mouse', event: 'mouseWheel', x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY }); e.preventDefault(); }, { passive: false });
  img.addEventListener('keydown', (e) => {
    if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) send({ type: 'text', text: e.key });
    else send({ type: 'key', key: e.key });
    e.preventDefault();
  });
  img.addEventListener('paste', (e) => { send({ type: 'text', text: e.clipboardData.getData('text') }); e.preventDefault(); });
  document.getElementById('nav').addEventListener('submit', (e) => { e.preventDefault(); send({ type: 'navigate', url: document.getElementById('url').value }); });
  document.getElementById('back').onclick = () => send({ type: 'back' });
  document.getElementById('fwd').onclick = () => send({ type: 'forward' });
  document.getElementById('reload').onclick = () => send({ type: 'reload' });
})();
</script></body></html>"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_input_maps_to_cdp_and_refuses_non_web_navigation() {
        let calls = cdp_calls(Input::Key {
            key: "Enter".into(),
        });
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].1["text"], "\r");
        assert!(cdp_calls(Input::Key { key: "F13".into() }).is_empty());
        assert!(
            cdp_calls(Input::Navigate {
                url: "file:///etc/passwd".into()
            })
            .is_empty()
        );
        assert!(
            cdp_calls(Input::Navigate {
                url: "javascript:alert(1)".into()
            })
            .is_empty()
        );
        assert_eq!(
            cdp_calls(Input::Navigate {
                url: "https://example.com/".into()
            })[0]
                .0,
            "Page.navigate"
        );
        let typed = cdp_calls(Input::Text {
            text: "alice".into(),
        });
        assert_eq!(typed[0], ("Input.insertText", json!({ "text": "alice" })));
        let mouse: Input = serde_json::from_str(r#"{"type":"mouse","event":"mousePressed","x":10,"y":20,"button":"left","clickCount":1}"#).unwrap();
        assert_eq!(cdp_calls(mouse)[0].1["type"], "mousePressed");
        let bogus: Input =
            serde_json::from_str(r#"{"type":"mouse","event":"explode","x":1,"y":1}"#).unwrap();
        assert!(cdp_calls(bogus).is_empty());
    }
}
