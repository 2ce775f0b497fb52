//! The MCP (Model Context Protocol) server of ABR, on the official Rust SDK (`rmcp`):
//! `abr mcp` serves it on stdin/stdout, `abr serve` on `/mcp` (streamable HTTP, behind the
//! bearer check).
//!
//! Tools: `browse_open`, `browse_snapshot`, `browse_act`, `browse_close` (the browse API),
//! `post` (`POST /v1/post`), `task_create` (`POST /v1/tasks`) and `task_status`
//! (`GET /v1/tasks/{id}`). No screenshot: artifacts are served only by the authenticated
//! artifacts endpoint.
//!
//! **Design:** every tool call is dispatched in-process to the runner's own axum router
//! ([`crate::http::app`]) as the HTTP request that does it, with the caller's credentials
//! and tenant. MCP therefore has exactly the API's auth, scope, guard, pause semantics and
//! error envelopes, and implements none of them a second time. A 2xx answer is the tool's
//! result (JSON text plus `structuredContent`); an error envelope is a result with
//! `isError: true` carrying its code and message; arguments that do not match a tool's
//! schema are an MCP invalid-params error.
//!
//! **Read-only** ([`McpSettings::read_only`]: `abr mcp --read-only`, `ABR_MCP_READ_ONLY`)
//! is the operator's: `post` and `task_create` are neither listed nor callable, every
//! browse session opened through MCP is read-only whatever the model sends, and
//! `browse_act` acts only on sessions whose record is read-only (a session the orchestrator
//! opened writable over the API is refused, `blocked_action`): read-only covers every
//! session MCP touches, not only the ones it opened.

mod dispatch;
mod endpoint;
mod server;
mod settings;
mod tools;

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::config::RunnerConfig;

pub use endpoint::McpEndpoint;
pub use server::McpServer;
pub use settings::{McpSettings, McpSettingsError};

/// The MCP service mounted at `/mcp`: rmcp's streamable-HTTP service behind checks that
/// answer every refusal in JSON ([`McpEndpoint`]).
pub type McpHttpService = McpEndpoint;

/// The streamable-HTTP MCP service of `abr serve`, dispatching to `api` (the runner's router
/// without `/mcp`).
///
/// Stateless, JSON answers: each MCP request is one POST answered with one JSON body, so no
/// stream outlives its request (GET, for a server-to-client stream, is 405) and the runner
/// keeps no MCP session. Each tool call is bounded by the request deadline of the API call
/// it makes (and the MCP request by that deadline plus a grace, so the API answers its own
/// timeout first). The `Host` header must name this runner (loopback, the bind address or
/// `ABR_PUBLIC_URL`'s host), against DNS rebinding.
///
/// Every refusal is JSON: a wrong method (`405`, `Allow: POST`), a foreign `Host` (`403
/// host_not_allowed`), a body that is not JSON or not declared as JSON, or too large, is the
/// API's envelope; a JSON-RPC message with an id that this server cannot take is a JSON-RPC
/// error object answering that id.
pub fn http_service(api: Router, config: &RunnerConfig, settings: McpSettings) -> McpHttpService {
    let server = McpServer::per_request(api, settings);
    let hosts = allowed_hosts(config);
    let http = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(hosts.clone())
        .with_max_request_body_bytes(config.limits.body_limit_bytes);
    let inner = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        http,
    );
    McpEndpoint::new(inner, hosts, config.limits.body_limit_bytes)
}

/// The `Host` values `/mcp` accepts: loopback names, the bind address and the public URL's
/// host.
fn allowed_hosts(config: &RunnerConfig) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let bind = config.bind.ip();
    if !bind.is_unspecified() {
        hosts.push(bind.to_string());
    }
    if let Some(host) = config.public_url.as_ref().and_then(|u| u.host_str()) {
        hosts.push(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        );
    }
    hosts.dedup();
    hosts
}
