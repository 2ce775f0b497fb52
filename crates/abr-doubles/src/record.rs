//! Recording of the requests a double has seen.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use serde::Serialize;
use serde_json::Value;

use crate::util::lock;

/// Largest request body the doubles buffer.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Headers a test may want to assert on. Credentials are recorded by presence only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HeadersOfInterest {
    /// An `Authorization` header was present (its value is never recorded).
    pub authorization: bool,
    /// A `steel-api-key` header was present (its value is never recorded).
    pub steel_api_key: bool,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `User-Agent`, if any.
    pub user_agent: Option<String>,
    /// `Accept`, if any.
    pub accept: Option<String>,
    /// `Origin`, if any.
    pub origin: Option<String>,
    /// The request asked for a WebSocket upgrade.
    pub websocket_upgrade: bool,
}

impl HeadersOfInterest {
    fn from_headers(h: &HeaderMap) -> Self {
        let text =
            |name: header::HeaderName| h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Self {
            authorization: h.contains_key(header::AUTHORIZATION),
            steel_api_key: h.contains_key("steel-api-key"),
            content_type: text(header::CONTENT_TYPE),
            user_agent: text(header::USER_AGENT),
            accept: text(header::ACCEPT),
            origin: text(header::ORIGIN),
            websocket_upgrade: h
                .get(header::UPGRADE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("websocket")),
        }
    }
}

/// One request the double answered (control endpoints under `/__mock` are not recorded).
#[derive(Debug, Clone, Serialize)]
pub struct RecordedCall {
    /// HTTP method.
    pub method: String,
    /// Request path (no query).
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// Response status (101 for accepted WebSocket upgrades).
    pub status: u16,
    /// Selected request headers.
    pub headers: HeadersOfInterest,
    /// The request body, when it was JSON.
    pub body: Option<Value>,
    /// When the request arrived.
    pub at: SystemTime,
}

/// Shared, append-only call log.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder {
    calls: Arc<Mutex<Vec<RecordedCall>>>,
}

impl Recorder {
    pub(crate) fn snapshot(&self) -> Vec<RecordedCall> {
        lock(&self.calls).clone()
    }

    fn push(&self, call: RecordedCall) {
        lock(&self.calls).push(call);
    }
}

/// Axum middleware that records every non-control request with its response status.
pub(crate) async fn record_middleware(
    State(rec): State<Recorder>,
    req: Request,
    next: Next,
) -> Response {
    let at = SystemTime::now();
    let path = req.uri().path().to_owned();
    if path.starts_with("/__mock") {
        return next.run(req).await;
    }
    let method = req.method().as_str().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let headers = HeadersOfInterest::from_headers(req.headers());
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        rec.push(RecordedCall {
            method,
            path,
            query,
            status: 413,
            headers,
            body: None,
            at,
        });
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let body_json = if bytes.is_empty() {
        None
    } else {
        serde_json::from_slice::<Value>(&bytes).ok()
    };
    let req = Request::from_parts(parts, Body::from(bytes));
    let resp = next.run(req).await;
    rec.push(RecordedCall {
        method,
        path,
        query,
        status: resp.status().as_u16(),
        headers,
        body: body_json,
        at,
    });
    resp
}
