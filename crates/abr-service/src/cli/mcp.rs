//! `abr mcp`: the MCP server on stdin/stdout, for a local MCP client that starts `abr` as
//! its child process.
//!
//! The runner is built in-process from the same configuration as `abr serve` (but binds no
//! port); every tool call goes through its router as the key `ABR_MCP_KEY` (default: the
//! first `ABR_API_TOKEN`, none with `--insecure-dev`) for the tenant `ABR_MCP_TENANT`
//! (default: the key's own, else the runner's default tenant). Stdout carries the protocol only: logs go to stderr. When stdin closes (the
//! client exited) the runner shuts down and closes its browsers.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ServiceExt as _;
use secrecy::ExposeSecret;

use crate::cli::CliError;
use crate::cli::start;
use crate::config::RunnerConfig;
use crate::mcp::{McpServer, McpSettings};
use crate::runner::ProviderLayer;

const MCP_HELP: &str = "\
Configuration: the ABR_* environment variables of `abr serve` (see `abr serve --help`), and
  ABR_MCP_KEY        the API key the tools act as, with its role and tenant (default: the
                     first ABR_API_TOKEN, an operator)
  ABR_MCP_TENANT     the tenant the tools act for (default: the key's own, else the
                     runner's default tenant)
  ABR_MCP_READ_ONLY  true: as --read-only

An MCP client's configuration: command `abr`, args [\"mcp\"], with ABR_API_TOKEN (or args
[\"mcp\", \"--insecure-dev\"]) in its env.";

/// `abr mcp` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = MCP_HELP)]
pub(crate) struct McpArgs {
    /// TOML configuration file (environment variables override it).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Start without ABR_API_TOKEN. Only on a trusted machine.
    #[arg(long)]
    insecure_dev: bool,
    /// Offer no posting and no tasks, and open every browse session read-only, whatever
    /// the model asks.
    #[arg(long)]
    read_only: bool,
}

impl McpArgs {
    pub(crate) fn run(self, layer: Option<ProviderLayer>) -> Result<(), CliError> {
        // Stdout is the protocol: every log line goes to stderr.
        let config = start::configuration(self.config.as_deref(), self.insecure_dev)?;
        if config.insecure_dev && config.api_tokens.is_empty() {
            tracing::warn!("--insecure-dev: the tools act without a token");
        }
        let mut settings = McpSettings::from_config(&config.mcp);
        settings.read_only |= self.read_only;
        start::runtime()?.block_on(serve_stdio(config, settings, layer))
    }
}

/// Builds the runner and serves MCP on stdin/stdout until stdin closes (or a signal), then
/// shuts the runner down.
async fn serve_stdio(
    config: RunnerConfig,
    mut settings: McpSettings,
    layer: Option<ProviderLayer>,
) -> Result<(), CliError> {
    let key = config
        .mcp
        .key
        .as_ref()
        .map(|k| k.expose_secret().to_owned());
    let token = key.clone().or_else(|| {
        config
            .api_tokens
            .first()
            .map(|t| t.expose_secret().to_owned())
    });
    let runner = start::runner(config, layer).await?;
    if let Some(key) = &key {
        // The key must name someone; its tenant is the tools' unless ABR_MCP_TENANT says.
        let principal = runner
            .engine
            .keys()
            .authenticate(key)
            .await
            .map_err(|e| CliError::Run(format!("cannot read the keys: {e}")))?
            .ok_or_else(|| {
                CliError::Run("ABR_MCP_KEY names no key (unknown, revoked or expired)".into())
            })?;
        if settings.tenant.is_none()
            && let abr_core::principal::Tenants::One(own) = principal.tenants()
        {
            settings.tenant = Some(own.clone());
        }
    }
    let read_only = settings.read_only;
    let router = crate::http::app_with_mcp(Arc::clone(&runner), settings.clone());
    let server = McpServer::local(router, token.as_deref(), settings)
        .map_err(|e| CliError::Run(e.to_string()))?;
    tracing::info!(read_only, "abr mcp: serving MCP on stdin/stdout");
    let mut signals = crate::server::Signals::install();
    let served = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            tokio::select! {
                quit = running.waiting() => {
                    if let Err(e) = quit {
                        tracing::error!(error = %e, "the MCP service stopped unexpectedly");
                    }
                }
                () = signals.next() => {
                    tracing::info!("abr mcp: signal received");
                }
            }
            Ok(())
        }
        Err(e) => Err(CliError::Run(format!(
            "the MCP client did not connect: {e}"
        ))),
    };
    runner.shutdown().await;
    tracing::info!("abr mcp: stopped; browsers closed");
    served
}
