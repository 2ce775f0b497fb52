//! Opt-in proxy of a provider's own viewer (`ABR_LIVE_PROXY_PROVIDER_VIEWER`), confined to
//! the viewer's own paths.
//!
//! `/live/{token}/view/` is the viewer page itself; `/live/{token}/view/<path>` reaches
//! `<path>` on the viewer's origin only when `<path>`, normalised, is one of the paths the
//! provider declared for its viewer ([`ProviderViewer::paths`]). Everything else (the
//! provider's REST API, a CDP endpoint at its root, `..`, `//`, encoded slashes) is a 404
//! that never reaches the upstream. Responses are capped, the upstream client never uses a
//! system proxy and never follows redirects, and every upgraded socket is tracked by its
//! capture like the runner's own view.

use std::time::Duration;

use abr_core::ProviderViewer;
use abr_engine::LiveAttachment;
use abr_protocol::codes;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message as Upstream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::wire::MAX_MESSAGE;
use crate::api_error::ApiError;

/// Largest proxied response body.
pub(crate) const MAX_BODY: usize = 8 * 1024 * 1024;
/// Bound of connecting to the provider.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound of a whole proxied HTTP exchange.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP client of the proxy: no system proxy, no redirects, bounded.
pub(crate) fn upstream_client() -> Option<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .ok()
}

/// The part of a raw request path after `/live/{token}/view`, or `None` if the path is not
/// of that shape. Works on the raw (still percent-encoded) path.
pub(crate) fn view_suffix(raw_path: &str) -> Option<&str> {
    let rest = raw_path.strip_prefix("/live/")?;
    let (_token, rest) = rest.split_once('/')?;
    rest.strip_prefix("view")
        .filter(|r| r.is_empty() || r.starts_with('/'))
}

/// Normalises a viewer path: `None` for anything that is not a plain absolute path of
/// non-empty segments (`//`, `.`, `..`, backslashes, any percent-encoding, control
/// characters).
pub(crate) fn normalise(path: &str) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    if path.contains(['%', '\\']) || path.chars().any(char::is_control) {
        return None;
    }
    let segments: Vec<&str> = rest.split('/').collect();
    let last = segments.len() - 1;
    for (i, segment) in segments.iter().enumerate() {
        let trailing_slash = i == last && segment.is_empty() && i > 0;
        if (segment.is_empty() && !trailing_slash) || *segment == "." || *segment == ".." {
            return None;
        }
    }
    Some(path.to_owned())
}

/// Whether `path` (normalised) is one of the viewer's own paths: equal to a declared path,
/// or under a declared prefix ending in `/`.
pub(crate) fn is_viewer_path(viewer: &ProviderViewer, path: &str) -> bool {
    viewer.paths.iter().any(|allowed| {
        normalise(allowed).is_some()
            && (allowed == path || (allowed.ends_with('/') && path.starts_with(allowed.as_str())))
    })
}

/// The upstream URL for a request to `/live/{token}/view<suffix>?<query>`, or `None` when
/// the suffix is not one of the viewer's paths.
pub(crate) fn upstream_url(
    viewer: &ProviderViewer,
    suffix: &str,
    query: Option<&str>,
) -> Option<url::Url> {
    let base = url::Url::parse(viewer.url.expose()).ok()?;
    if !matches!(base.scheme(), "http" | "https") {
        return None;
    }
    if suffix.is_empty() || suffix == "/" {
        // The viewer page itself, with its own query (which may carry its credential).
        return Some(base);
    }
    let path = normalise(suffix)?;
    if !is_viewer_path(viewer, &path) {
        return None;
    }
    let mut url = base;
    url.set_path(&path);
    url.set_query(query);
    url.set_fragment(None);
    Some(url)
}

fn unavailable(message: &str) -> ApiError {
    ApiError::new(
        codes::LIVE_VIEW_UNAVAILABLE,
        format!("the provider's viewer {message}"),
    )
}

/// Fetches `url` (GET, no client headers forwarded) and answers it with a capped body, its
/// content type and the proxied-content CSP.
pub(crate) async fn fetch(
    client: &reqwest::Client,
    url: url::Url,
    csp: &str,
) -> Result<Response, ApiError> {
    let mut upstream = client
        .get(url)
        .send()
        .await
        .map_err(|_| unavailable("did not answer"))?;
    let status =
        StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    if status.is_redirection() {
        return Err(unavailable("redirected elsewhere"));
    }
    if upstream
        .content_length()
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(unavailable("answered too much"));
    }
    let content_type = upstream
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
    let mut body = Vec::new();
    while let Some(chunk) = upstream
        .chunk()
        .await
        .map_err(|_| unavailable("failed mid-answer"))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(unavailable("answered too much"));
        }
        body.extend_from_slice(&chunk);
    }
    let mut out = Response::new(Body::from(body));
    *out.status_mut() = status;
    if let Some(ct) = content_type {
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    super::page::secure(out.headers_mut(), csp);
    Ok(out)
}

/// Opens the upstream socket for `url` (http(s) → ws(s)), bounded, with capped messages.
pub(crate) async fn connect(
    mut url: url::Url,
) -> Option<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
> {
    let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
    url.set_scheme(scheme).ok()?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), false);
    match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok((socket, _))) => Some(socket),
        _ => None,
    }
}

/// Pipes the viewer's socket and the provider's until either side closes or the capture
/// ends.
pub(crate) async fn pipe<C>(
    client: WebSocket,
    server: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    live: LiveAttachment<C>,
) {
    let (mut client_tx, mut client_rx) = client.split();
    let (mut server_tx, mut server_rx) = server.split();
    let to_server = async {
        while let Some(Ok(m)) = client_rx.next().await {
            let m = match m {
                Message::Text(t) => Upstream::Text(t.as_str().into()),
                Message::Binary(b) => Upstream::Binary(b),
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
                Upstream::Text(t) => Message::Text(t.as_str().into()),
                Upstream::Binary(b) => Message::Binary(b),
                Upstream::Close(_) => break,
                _ => continue,
            };
            if client_tx.send(m).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        () = to_server => {}
        () = to_client => {}
        () = live.ended() => {}
    }
    drop(live);
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::SecretValue;

    fn steel() -> ProviderViewer {
        ProviderViewer {
            url: SecretValue::new("http://steel.test:3000/v1/sessions/debug?showControls=true"),
            paths: vec!["/v1/sessions/debug".into(), "/v1/sessions/cast".into()],
        }
    }

    #[test]
    fn the_suffix_is_read_from_the_raw_path() {
        assert_eq!(view_suffix("/live/tok/view"), Some(""));
        assert_eq!(view_suffix("/live/tok/view/"), Some("/"));
        assert_eq!(view_suffix("/live/tok/view//v1/x"), Some("//v1/x"));
        assert_eq!(view_suffix("/live/tok/viewer"), None);
        assert_eq!(view_suffix("/live/tok"), None);
    }

    #[test]
    fn path_escapes_never_reach_the_upstream() {
        let viewer = steel();
        for escape in [
            "//v1/sessions",
            "/..",
            "/../../v1/sessions",
            "/v1/sessions/debug/../../sessions",
            "/v1/sessions/./debug",
            "/%2Fv1%2Fsessions",
            "/v1%2fsessions%2fdebug",
            "/v1/sessions/%2e%2e/x",
            "/v1\\sessions",
            "/v1/sessions",
            "/json/version",
            "/devtools/browser/abc",
            "/v1/sessions/debug/extra",
            "/v1/sessions/debugger",
            "//",
        ] {
            assert_eq!(upstream_url(&viewer, escape, None), None, "{escape}");
        }
    }

    #[test]
    fn the_viewers_own_paths_are_reached_on_its_origin() {
        let viewer = steel();
        assert_eq!(
            upstream_url(&viewer, "/", None)
                .map(String::from)
                .as_deref(),
            Some("http://steel.test:3000/v1/sessions/debug?showControls=true")
        );
        assert_eq!(
            upstream_url(&viewer, "/v1/sessions/cast", Some("pageId=1"))
                .map(String::from)
                .as_deref(),
            Some("http://steel.test:3000/v1/sessions/cast?pageId=1")
        );
        let prefixed = ProviderViewer {
            url: SecretValue::new("https://k.test/browser/live/tok"),
            paths: vec!["/browser/live/assets/".into()],
        };
        assert!(upstream_url(&prefixed, "/browser/live/assets/app.js", None).is_some());
        assert!(upstream_url(&prefixed, "/browser/live/assets/", None).is_some());
        assert!(upstream_url(&prefixed, "/browser/live/other", None).is_none());
    }
}
