//! [`McpServer`]: the rmcp server handler of ABR. It lists the tools and dispatches every
//! call to the runner's own router; it implements nothing the API does not.

use std::sync::Arc;

use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::dispatch::{Caller, dispatch};
use super::settings::{McpSettings, McpSettingsError};
use super::tools;

/// What the model is told about the server when it connects.
const INSTRUCTIONS: &str = "ABR (Agent Browser Runtime) drives a real browser behind guard \
    rails. Browse: browse_open a page, read the snapshot's elements and act on their refs with \
    browse_act, one action at a time, then browse_close. A committing action (post, send, buy, \
    delete...) in a read-only or dry-run session is refused, never performed: do not try to \
    get around a refusal. A paused outcome means a person must take over. Screenshots are not \
    offered here.";

/// Where the caller of a tool call comes from.
#[derive(Debug, Clone)]
enum CallerSource {
    /// One caller for the whole connection (`abr mcp` on stdio).
    Fixed(Caller),
    /// The headers of each MCP request over HTTP (`/mcp` on `abr serve`).
    HttpRequest,
}

/// ABR's MCP server: every tool call becomes one request to `router` (the runner's own
/// [`crate::http::app`]), with the caller's credentials and tenant, so MCP has exactly the
/// API's auth, scope, guard, pause semantics and error envelopes.
#[derive(Debug, Clone)]
pub struct McpServer {
    router: Router,
    settings: Arc<McpSettings>,
    caller: CallerSource,
}

impl McpServer {
    /// A server for one local client (`abr mcp`): every call acts with `token` (none: no
    /// `Authorization`, for a runner started with `--insecure-dev`) for `settings.tenant`.
    ///
    /// # Errors
    /// [`McpSettingsError::NotAHeader`] when the token or the tenant cannot be sent as a
    /// header.
    pub fn local(
        router: Router,
        token: Option<&str>,
        settings: McpSettings,
    ) -> Result<Self, McpSettingsError> {
        let caller = Caller::fixed(token, settings.tenant.as_deref())?;
        Ok(Self {
            router,
            settings: Arc::new(settings),
            caller: CallerSource::Fixed(caller),
        })
    }

    /// A server behind HTTP: each call acts with the `Authorization` and `x-tenant-id` of
    /// the MCP request that carried it.
    pub fn per_request(router: Router, settings: McpSettings) -> Self {
        Self {
            router,
            settings: Arc::new(settings),
            caller: CallerSource::HttpRequest,
        }
    }

    /// The caller of a call made in `context`.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        match &self.caller {
            CallerSource::Fixed(caller) => Ok(caller.clone()),
            CallerSource::HttpRequest => context
                .extensions
                .get::<axum::http::request::Parts>()
                .map(Caller::from_parts)
                // Without the HTTP request there is no credential to act with: refuse.
                .ok_or_else(|| ErrorData::internal_error("no HTTP request to act for", None)),
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("abr", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list(
            self.settings.read_only,
        )))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::tool(name, self.settings.read_only)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = tools::forward(&request.name, request.arguments, self.settings.read_only)?;
        let caller = self.caller(&context)?;
        tracing::info!(target: "abr::mcp", tool = %request.name, "tool call");
        Ok(dispatch(&self.router, &caller, call).await.into())
    }
}
