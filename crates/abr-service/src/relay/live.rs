//! The live view over the relay, on the hub: `/live/{token}` and `/live/{token}/ws` carried
//! to the runner for the tokens it knows (the table of those tokens is `live_tokens.rs`).
//!
//! The page a runner answers is served on the hub's origin, so the hub builds its response
//! itself and copies none of the runner's headers ([`served_page`]): the hub's CSP,
//! `nosniff`, `no-store`, `no-referrer` (the live page's headers, written by
//! `live::page::secure` as on the runner), and of the runner's answer only its status, its
//! body and a content type from a short list. The runner's viewer page carries inline
//! script and style with a nonce the runner chose: the hub keeps that nonce only when the
//! runner's CSP is exactly the viewer page's (scripts and styles by that nonce only, no
//! other source, connections to the page's own origin, no forms, no base), and frames it
//! only by its own origin and the embedding apps the hub allows too. Any other page gets a
//! CSP under which nothing runs, loads or frames it. The viewer page's script is still the
//! runner's: under that CSP it loads nothing and connects only to the hub's origin, where
//! every API call needs the bearer token and no cookie means anything (the hub sets and
//! reads none).

use std::time::Duration;

use abr_protocol::codes;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::extract::ws::{Message, WebSocket};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::live::LiveState;
use crate::live::page::{secure, viewer_csp};

use super::hub::{Hub, HubStream};
use super::stream::StreamMessage;
use super::valid_live_token;

/// Bound of one send to the viewer: a viewer that stops reading is not waited for.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// What a `/live/…` path asks for.
enum LivePath<'a> {
    Page(&'a str),
    Socket(&'a str),
}

fn live_path(path: &str) -> Option<LivePath<'_>> {
    let rest = path.strip_prefix("/live/")?;
    match rest.split_once('/') {
        None => Some(LivePath::Page(rest)),
        Some((token, "ws")) => Some(LivePath::Socket(token)),
        Some(_) => None,
    }
}

/// `/live/{token}` and `/live/{token}/ws` for a token of a runner: carried to it. Anything
/// else (the hub's own captures, unknown tokens) goes on to the hub's own live view.
pub(crate) async fn live_over_relay(
    hub: &Hub,
    live: &LiveState,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let (token, socket) = match live_path(&path) {
        Some(LivePath::Page(token)) => (token, false),
        Some(LivePath::Socket(token)) => (token, true),
        None => return next.run(request).await,
    };
    if request.method() != Method::GET || !valid_live_token(token) {
        return next.run(request).await;
    }
    let Some(conn) = hub.live_conn(token) else {
        return next.run(request).await;
    };
    if !socket {
        let accept = request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(|v| vec![("accept".to_owned(), v.to_owned())])
            .unwrap_or_default();
        let answer = hub
            .exchange(&conn, "GET", &path, accept, Bytes::new())
            .await;
        return match answer {
            Ok((status, headers, body)) => served_page(live, status, &headers, body),
            Err(mut relay_error) => {
                secure(relay_error.headers_mut(), INERT_CSP);
                relay_error
            }
        };
    }
    // The viewer's browser sends the hub's origin: checked here, against the hub's own.
    if let Err(refused) = crate::live::check_origin(live, request.headers()) {
        return refused.into_response();
    }
    let upgrade = match crate::live::upgrade_of(request).await {
        Ok(upgrade) => upgrade,
        Err(e) => return e.into_response(),
    };
    let stream = match hub.open_stream(&conn, &path).await {
        Ok(stream) => stream,
        Err(e) => return e.into_response(),
    };
    upgrade.on_upgrade(move |socket| pump(socket, stream))
}

/// The CSP of whatever a runner answers for a live page that is not its viewer page (an
/// error envelope, a page with another CSP or none): nothing runs, loads, or frames it.
const INERT_CSP: &str =
    "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether `nonce` can be a nonce of the runner's page: 16 to 128 of `A-Z a-z 0-9 - _`.
fn valid_nonce(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// Whether `source` is a plain origin (`https://app.example[:port]`): no wildcard, path,
/// query or credential.
fn plain_origin(source: &str) -> bool {
    let plain_bytes = source
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'/' | b'[' | b']'));
    plain_bytes
        && url::Url::parse(source).is_ok_and(|url| {
            matches!(url.scheme(), "http" | "https") && url.origin().ascii_serialization() == source
        })
}

/// The hub's CSP for a runner's page whose CSP is `runner_csp`: the viewer page's with the
/// runner's nonce when `runner_csp` is exactly of that shape (framed by the hub's own
/// origin and by those of the runner's embedding apps the hub allows too), else
/// [`INERT_CSP`].
fn page_csp(live: &LiveState, runner_csp: Option<&str>) -> String {
    let shaped = runner_csp.and_then(|csp| {
        let rest = csp.strip_prefix("default-src 'none'; script-src 'nonce-")?;
        let (nonce, _) = rest.split_once('\'')?;
        let (_, ancestors) = csp.rsplit_once("; frame-ancestors ")?;
        let mut sources = ancestors.split(' ');
        let well_formed = valid_nonce(nonce)
            && csp == viewer_csp(nonce, ancestors)
            && sources.next() == Some("'self'");
        let embedders: Vec<&str> = sources.collect();
        (well_formed && embedders.iter().all(|s| plain_origin(s))).then_some((nonce, embedders))
    });
    let Some((nonce, embedders)) = shaped else {
        return INERT_CSP.to_owned();
    };
    let mut ancestors = vec!["'self'"];
    for source in embedders {
        let mut origin = HeaderMap::new();
        let allowed = HeaderValue::from_str(source).is_ok_and(|value| {
            origin.insert(header::ORIGIN, value);
            crate::live::check_origin(live, &origin).is_ok()
        });
        if allowed && !ancestors.contains(&source) {
            ancestors.push(source);
        }
    }
    viewer_csp(nonce, &ancestors.join(" "))
}

/// The one value of header `name` in `headers`, if it is there exactly once.
fn single<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut values = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str());
    match (values.next(), values.next()) {
        (Some(value), None) => Some(value),
        _ => None,
    }
}

/// A runner's answer to `GET /live/{token}` as the hub serves it on its own origin: a page
/// (`200`, `text/html`) or an error envelope (`4xx`/`5xx`, `application/json`), with the
/// hub's headers only; anything else is the hub's `502 live_view_unavailable`.
fn served_page(
    live: &LiveState,
    status: u16,
    headers: &[(String, String)],
    body: Bytes,
) -> Response {
    let essence = single(headers, "content-type")
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    let status = StatusCode::from_u16(status).ok();
    let (status, content_type, csp) = match (status, essence.as_deref()) {
        (Some(StatusCode::OK), Some("text/html")) => (
            StatusCode::OK,
            "text/html; charset=utf-8",
            page_csp(live, single(headers, "content-security-policy")),
        ),
        (Some(status), Some("application/json"))
            if status.is_client_error() || status.is_server_error() =>
        {
            (status, "application/json", INERT_CSP.to_owned())
        }
        _ => {
            let mut refused = ApiError::new(
                codes::LIVE_VIEW_UNAVAILABLE,
                "the runner's live view answered something the hub does not serve",
            )
            .into_response();
            secure(refused.headers_mut(), INERT_CSP);
            return refused;
        }
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure(response.headers_mut(), &csp);
    response
}

/// Carries the viewer's socket to the runner's and back until either ends (or the runner's
/// relay socket goes: then the viewer's is closed).
async fn pump(mut socket: WebSocket, mut stream: HubStream) {
    loop {
        tokio::select! {
            from_runner = stream.recv() => {
                let Some(message) = from_runner else { break };
                let message = if message.text {
                    match String::from_utf8(message.payload.to_vec()) {
                        Ok(text) => Message::Text(text.into()),
                        Err(_) => break,
                    }
                } else {
                    Message::Binary(message.payload)
                };
                match tokio::time::timeout(SEND_TIMEOUT, socket.send(message)).await {
                    Ok(Ok(())) => {}
                    _ => break,
                }
            }
            from_viewer = socket.recv() => {
                let message = match from_viewer {
                    Some(Ok(Message::Text(text))) => StreamMessage {
                        text: true,
                        payload: Bytes::copy_from_slice(text.as_str().as_bytes()),
                    },
                    Some(Ok(Message::Binary(payload))) => StreamMessage { text: false, payload },
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    _ => break,
                };
                if !stream.send(message).await {
                    break;
                }
            }
        }
    }
    drop(stream);
    let _ = tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Close(None))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hub's live settings: public at `https://hub.example`, embedded by `app`.
    fn hub_live() -> LiveState {
        let mut config = crate::config::RunnerConfig {
            public_url: Some(url::Url::parse("https://hub.example").unwrap()),
            ..crate::config::RunnerConfig::default()
        };
        config.live.embed_origins = vec!["https://app.example".into()];
        LiveState::new(&config)
    }

    const NONCE: &str = "AbCdEfGhIjKlMnOpQrStUv-_0123456789";

    #[test]
    fn only_the_viewer_pages_exact_csp_keeps_its_nonce() {
        let live = hub_live();
        // The runner's viewer CSP: kept, framed by the hub and the embedders both allow.
        let runner = viewer_csp(
            NONCE,
            "'self' https://app.example https://other.example https://hub.example",
        );
        assert_eq!(
            page_csp(&live, Some(&runner)),
            viewer_csp(NONCE, "'self' https://app.example https://hub.example")
        );
        assert_eq!(
            page_csp(&live, Some(&viewer_csp(NONCE, "'self'"))),
            viewer_csp(NONCE, "'self'")
        );
        // Anything else: nothing runs.
        let other_nonce =
            viewer_csp(NONCE, "'self'").replacen(NONCE, "Zz0123456789Zz0123456789", 1);
        for bad in [
            String::new(),
            "default-src *".to_owned(),
            other_nonce,
            viewer_csp("short", "'self'"),
            viewer_csp("has space in it 0123456789", "'self'"),
            viewer_csp(NONCE, "'self' *"),
            viewer_csp(NONCE, "*"),
            viewer_csp(NONCE, "https://app.example"),
            viewer_csp(NONCE, "'self' https://app.example/path"),
            viewer_csp(NONCE, "'self' https://*.example"),
            viewer_csp(NONCE, "'self'  https://app.example"),
            format!("{}; script-src *", viewer_csp(NONCE, "'self'")),
            format!("{}; frame-ancestors *", viewer_csp(NONCE, "'self'")),
            viewer_csp(NONCE, "'self'").replace("img-src blob:", "img-src *"),
            viewer_csp(NONCE, "'self'").replace("connect-src 'self'", "connect-src *"),
            viewer_csp(&format!("{NONCE}' 'unsafe-inline"), "'self'"),
        ] {
            assert_eq!(page_csp(&live, Some(&bad)), INERT_CSP, "{bad}");
        }
        assert_eq!(page_csp(&live, None), INERT_CSP);
    }

    #[test]
    fn a_runners_page_keeps_no_header_of_its_own() {
        let live = hub_live();
        let headers = vec![
            (
                "Content-Type".to_owned(),
                "TEXT/HTML; charset=latin1".to_owned(),
            ),
            ("set-cookie".to_owned(), "a=1".to_owned()),
            (
                "content-security-policy".to_owned(),
                viewer_csp(NONCE, "'self'"),
            ),
        ];
        let page = served_page(&live, 200, &headers, Bytes::from_static(b"<p>"));
        assert_eq!(page.status(), StatusCode::OK);
        let names: Vec<&str> = page.headers().keys().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "content-security-policy",
                "x-content-type-options",
                "cache-control",
                "referrer-policy"
            ]
        );
        assert_eq!(
            page.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        // Two content types, none, a page with an error status, JSON as a page: refused.
        for (status, types) in [
            (200, vec!["text/html", "text/plain"]),
            (200, vec![]),
            (200, vec!["application/json"]),
            (404, vec!["text/html"]),
            (204, vec!["text/html"]),
            (101, vec!["text/html"]),
        ] {
            let headers: Vec<(String, String)> = types
                .iter()
                .map(|t| ("content-type".to_owned(), (*t).to_owned()))
                .collect();
            let page = served_page(&live, status, &headers, Bytes::new());
            assert_eq!(page.status(), StatusCode::BAD_GATEWAY, "{status} {types:?}");
            assert_eq!(page.headers()[header::CONTENT_SECURITY_POLICY], INERT_CSP);
        }
    }
}
