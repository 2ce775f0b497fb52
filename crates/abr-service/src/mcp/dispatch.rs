//! A tool call dispatched in-process to the runner's own router, with the caller's
//! credentials and tenant, and its answer as a tool result: a 2xx body is the result, an
//! error envelope is a result with `isError` carrying its code and message.

use abr_protocol::codes::{self, ErrorCode};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode, header};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use super::settings::McpSettingsError;
use super::tools::{Forward, ToolRefusal};
use abr_core::principal::{DEFAULT_TENANT, Principal, Tenants};

/// The largest answer read back from the API (a snapshot or a task record is far smaller).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The tenant header of the API.
const TENANT_HEADER: HeaderName = HeaderName::from_static("x-tenant-id");

/// Who a tool call acts for: the `Authorization` and `x-tenant-id` values sent with the
/// in-process request, exactly as the API checks them.
#[derive(Clone)]
pub(crate) struct Caller {
    authorization: Vec<HeaderValue>,
    tenant: Vec<HeaderValue>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("authorization", &self.authorization.len())
            .field("tenant", &self.tenant)
            .finish()
    }
}

impl Caller {
    /// A fixed caller (`abr mcp`): `token` as a bearer token (none: no header, for a runner
    /// started with `--insecure-dev`), `tenant` (none: the runner's default tenant).
    ///
    /// # Errors
    /// [`McpSettingsError::NotAHeader`] when the token or the tenant cannot be a header
    /// value.
    pub(crate) fn fixed(
        token: Option<&str>,
        tenant: Option<&str>,
    ) -> Result<Self, McpSettingsError> {
        let authorization = match token {
            None => Vec::new(),
            Some(token) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| McpSettingsError::NotAHeader("API token"))?;
                value.set_sensitive(true);
                vec![value]
            }
        };
        let tenant = tenant.unwrap_or(DEFAULT_TENANT);
        let tenant =
            HeaderValue::from_str(tenant).map_err(|_| McpSettingsError::NotAHeader("tenant"))?;
        Ok(Self {
            authorization,
            tenant: vec![tenant],
        })
    }

    /// The caller of an MCP request over HTTP: its `Authorization` and `x-tenant-id`
    /// values, every one of them (the API refuses a header given twice, as it would over
    /// HTTP). Without a tenant header the tenant is pinned to the one of the key (the
    /// principal the auth layer found), else the default one, so a tool's arguments cannot
    /// choose another (a body naming another tenant is refused).
    pub(crate) fn from_parts(parts: &axum::http::request::Parts) -> Self {
        let headers = &parts.headers;
        let authorization = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .map(|v| {
                let mut v = v.clone();
                v.set_sensitive(true);
                v
            })
            .collect();
        let mut tenant: Vec<HeaderValue> =
            headers.get_all(&TENANT_HEADER).iter().cloned().collect();
        if tenant.is_empty() {
            let own = parts
                .extensions
                .get::<std::sync::Arc<Principal>>()
                .and_then(|p| match p.tenants() {
                    Tenants::One(t) => HeaderValue::from_str(t).ok(),
                    Tenants::All => None,
                });
            tenant.push(own.unwrap_or(HeaderValue::from_static(DEFAULT_TENANT)));
        }
        Self {
            authorization,
            tenant,
        }
    }
}

/// Sends `call` through `router` as `caller` and answers the tool result. A read-only
/// server's `browse_act` ([`Forward::read_only_session`]) is sent only once the session's
/// record says it is read-only.
pub(crate) async fn dispatch(router: &Router, caller: &Caller, call: Forward) -> CallToolResult {
    if let Some(id) = &call.read_only_session
        && let Some(refusal) = unless_read_only(router, caller, id).await
    {
        return refusal;
    }
    match send(router, caller, call).await {
        Ok((status, body)) => result(status, body),
        Err(refusal) => refusal,
    }
}

/// `None` when the browse session `id` is read-only by its record (`GET /v1/tasks/{id}`,
/// as `caller`: the platform's, or the request's that opened it); else the refusal. A
/// session opened writable (over the API) is not acted on by a read-only server, whatever
/// the action: the commit rule that would tell a harmless one needs the page, which only
/// the API sees.
async fn unless_read_only(router: &Router, caller: &Caller, id: &str) -> Option<CallToolResult> {
    let record = Forward::new(Method::GET, format!("/v1/tasks/{id}"), None);
    let (status, body) = match send(router, caller, record).await {
        Ok(answer) => answer,
        Err(refusal) => return Some(refusal),
    };
    if status == StatusCode::NOT_FOUND {
        return Some(local_error(
            codes::BROWSE_NOT_FOUND,
            "no open browse session with this id for this tenant",
        ));
    }
    if !status.is_success() {
        return Some(result(status, body));
    }
    let record = body.unwrap_or_default();
    if record["browse"] == json!(true) && record["readOnly"] == json!(true) {
        return None;
    }
    Some(local_error(
        codes::BLOCKED_ACTION,
        "this MCP server is read-only: it acts only on browse sessions that are read-only, \
         and this one was opened without readOnly (over the API). Nothing was done: open \
         a session with browse_open (read-only here) to act",
    ))
}

/// Sends `call` through `router` as `caller`: the status and the JSON body (if it is JSON).
async fn send(
    router: &Router,
    caller: &Caller,
    call: Forward,
) -> Result<(StatusCode, Option<Value>), CallToolResult> {
    let request = match build(caller, call) {
        Ok(request) => request,
        Err(message) => return Err(local_error(codes::INVALID_REQUEST, &message)),
    };
    let response = match router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let status = response.status();
    let Ok(bytes) = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES).await else {
        return Err(local_error(
            codes::INTERNAL,
            "the runner's answer could not be read",
        ));
    };
    Ok((status, serde_json::from_slice(&bytes).ok()))
}

/// The tool result of an API answer.
fn result(status: StatusCode, body: Option<Value>) -> CallToolResult {
    match (status.is_success(), body) {
        (true, Some(value @ Value::Object(_))) => {
            let text = snapshot_text(&value).or_else(|| timeline_text(&value));
            let mut answer = CallToolResult::structured(value);
            if let Some(text) = text {
                answer.content = vec![rmcp::model::ContentBlock::text(text)];
            }
            answer
        }
        (true, Some(value)) => {
            CallToolResult::success(vec![rmcp::model::ContentBlock::text(value.to_string())])
        }
        (true, None) => CallToolResult::success(Vec::new()),
        (false, Some(Value::Object(mut envelope))) if envelope.contains_key("error") => {
            envelope.insert("status".to_owned(), json!(status.as_u16()));
            CallToolResult::structured_error(Value::Object(envelope))
        }
        (false, _) => CallToolResult::structured_error(json!({
            "status": status.as_u16(),
            "error": {
                "code": "http_error",
                "message": format!("the runner answered HTTP {}", status.as_u16()),
                "retryable": false,
            }
        })),
    }
}

/// The text a model reads of an answer that is or carries a snapshot (the browse tools):
/// the answer's other fields as one line of JSON, then the snapshot's compact text form
/// ([`abr_protocol::Snapshot::to_text`]). The JSON stays whole in `structuredContent`.
fn snapshot_text(value: &Value) -> Option<String> {
    let Value::Object(fields) = value else {
        return None;
    };
    if fields.contains_key("elements") && fields.contains_key("url") {
        let snapshot: abr_protocol::Snapshot = serde_json::from_value(value.clone()).ok()?;
        return Some(snapshot.to_text());
    }
    let snapshot = fields.get("snapshot")?;
    let snapshot: abr_protocol::Snapshot = serde_json::from_value(snapshot.clone()).ok()?;
    let mut rest = fields.clone();
    rest.remove("snapshot");
    Some(format!("{}\n{}", Value::Object(rest), snapshot.to_text()))
}

/// The text a model reads of a run's timeline (`run_timeline`): its markdown form
/// ([`abr_protocol::RunTimeline::to_markdown`]). The JSON stays whole in
/// `structuredContent`.
fn timeline_text(value: &Value) -> Option<String> {
    let Value::Object(fields) = value else {
        return None;
    };
    if !(fields.contains_key("entries") && fields.contains_key("runId")) {
        return None;
    }
    let timeline: abr_protocol::RunTimeline = serde_json::from_value(value.clone()).ok()?;
    Some(timeline.to_markdown())
}

/// The in-process request of `call`.
fn build(caller: &Caller, call: Forward) -> Result<Request<Body>, String> {
    let mut builder = Request::builder().method(call.method).uri(&call.path);
    for value in &caller.authorization {
        builder = builder.header(header::AUTHORIZATION, value.clone());
    }
    for value in &caller.tenant {
        builder = builder.header(&TENANT_HEADER, value.clone());
    }
    if let Some(key) = call.idempotency_key {
        let key = HeaderValue::from_str(&key)
            .map_err(|_| "idempotencyKey is not a valid header value".to_owned())?;
        builder = builder.header("idempotency-key", key);
    }
    let body = match call.body {
        Some(body) => {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
            Body::from(body.to_string())
        }
        None => Body::empty(),
    };
    builder
        .body(body)
        .map_err(|_| "the request could not be built".to_owned())
}

/// A tool result for a failure on this side of the API, as the API's envelope.
fn local_error(code: ErrorCode, message: &str) -> CallToolResult {
    let refusal = ToolRefusal {
        status: code.status,
        error: code.body(message),
    };
    CallToolResult::structured_error(serde_json::to_value(refusal).unwrap_or_else(|_| json!({})))
}
