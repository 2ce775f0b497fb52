//! [`McpEndpoint`]: `/mcp` as `abr serve` mounts it. rmcp's streamable-HTTP service answers
//! what it refuses in plain text (a wrong method, a foreign `Host`, a body that does not
//! parse, which it even quotes); this service in front of it answers every refusal in JSON
//! instead: a JSON-RPC error object when the body is a JSON-RPC message with an id, else the
//! API's envelope with its status. Nothing it answers repeats the body.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use abr_protocol::codes::{self, ErrorCode};
use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde_json::{Value, json};

use super::server::McpServer;
use crate::api_error::{ApiError, is_json};
use crate::json_detail::JsonDetail;

/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i64 = -32600;

/// What `/mcp` accepts from a client: JSON, answered as JSON (never a stream).
const ACCEPT: &str = "application/json, text/event-stream";

/// `/mcp`: rmcp's streamable-HTTP service behind checks that answer in JSON.
#[derive(Clone)]
pub struct McpEndpoint {
    inner: StreamableHttpService<McpServer, NeverSessionManager>,
    hosts: Arc<[String]>,
    body_limit: usize,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("hosts", &self.hosts)
            .field("body_limit", &self.body_limit)
            .finish_non_exhaustive()
    }
}

impl McpEndpoint {
    pub(super) fn new(
        inner: StreamableHttpService<McpServer, NeverSessionManager>,
        hosts: Vec<String>,
        body_limit: usize,
    ) -> Self {
        Self {
            inner,
            hosts: hosts.into(),
            body_limit,
        }
    }

    async fn handle(&self, request: Request<Body>) -> Response {
        if request.method() != Method::POST {
            let mut response = envelope(
                codes::METHOD_NOT_ALLOWED,
                "/mcp takes POST only: one JSON-RPC message per request, answered as JSON",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        if !self.host_is_ours(&request) {
            return foreign_host();
        }
        if !is_json(request.headers()) {
            return envelope(
                codes::UNSUPPORTED_MEDIA_TYPE,
                "the body must be a JSON-RPC message (Content-Type: application/json)",
            );
        }
        let (mut parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.body_limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return envelope(codes::PAYLOAD_TOO_LARGE, "the request body is too large");
            }
            Err(_) => return envelope(codes::INVALID_BODY, "the request body could not be read"),
        };
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(e) => {
                return envelope(
                    codes::INVALID_JSON,
                    &format!("the body is not valid JSON: {}", JsonDetail::new(&e)),
                );
            }
        };
        if let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
            let reason = JsonDetail::new(&e).message;
            return match value
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
            {
                Some(id) => rpc_error(
                    id.clone(),
                    &format!("not a JSON-RPC 2.0 request this server takes: {reason}"),
                ),
                None => envelope(
                    codes::INVALID_REQUEST,
                    "the body is not a JSON-RPC 2.0 message (jsonrpc, id, method, params)",
                ),
            };
        }
        // Answers are JSON whatever the client said it accepts (this endpoint never streams),
        // so rmcp's own Accept check never refuses in plain text.
        parts
            .headers
            .insert(header::ACCEPT, HeaderValue::from_static(ACCEPT));
        let response = self
            .inner
            .handle(Request::from_parts(parts, Body::from(bytes)))
            .await
            .map(Body::new);
        in_json(response)
    }

    /// Whether the request's `Host` names this runner (rmcp checks it again).
    fn host_is_ours(&self, request: &Request<Body>) -> bool {
        let Some(host) = request.headers().get(header::HOST) else {
            // rmcp decides from the URI's authority.
            return true;
        };
        let Ok(host) = host.to_str() else {
            return false;
        };
        let host = host.trim();
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => host.rsplit_once(':').map_or(host, |(name, port)| {
                if port.bytes().all(|b| b.is_ascii_digit()) {
                    name
                } else {
                    host
                }
            }),
        };
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
    }
}

impl tower::Service<Request<Body>> for McpEndpoint {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

/// The API's envelope for `code`.
fn envelope(code: ErrorCode, message: &str) -> Response {
    ApiError::new(code, message).into_response()
}

fn foreign_host() -> Response {
    envelope(
        codes::HOST_NOT_ALLOWED,
        "the Host header does not name this runner (loopback, its bind address or \
         ABR_PUBLIC_URL's host): refused against DNS rebinding",
    )
}

/// A JSON-RPC error object answering the message `id`.
fn rpc_error(id: Value, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": INVALID_REQUEST, "message": message},
    });
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// rmcp's answer, with a refusal that is not JSON replaced by the envelope its status calls
/// for (its text is dropped: it may quote the request).
fn in_json(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(response.headers()) {
        return response;
    }
    match status {
        StatusCode::FORBIDDEN => foreign_host(),
        StatusCode::METHOD_NOT_ALLOWED => {
            let mut out = envelope(codes::METHOD_NOT_ALLOWED, "/mcp takes POST only");
            out.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            out
        }
        StatusCode::PAYLOAD_TOO_LARGE => {
            envelope(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
        }
        StatusCode::NOT_FOUND => envelope(codes::NOT_FOUND, "no such MCP session or endpoint"),
        s if s.is_server_error() => {
            tracing::warn!(target: "abr::mcp", status = s.as_u16(), "the MCP service failed");
            envelope(codes::INTERNAL, "internal error")
        }
        _ => envelope(
            codes::INVALID_REQUEST,
            "the MCP request was refused: it is not a request this server takes",
        ),
    }
}
