//! `abr serve`: the HTTP runner.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::cli::CliError;
use crate::config::{ConfigError, RunnerConfig};
use crate::runner::RunnerBuilder;
use crate::server::RunningServer;

const SERVE_HELP: &str = "\
Configuration (environment variables; a --config TOML file uses the same names without ABR_,
lowercased; the environment wins):
  ABR_API_TOKEN           bearer token(s), comma-separated; required unless --insecure-dev
  ABR_BIND                listen address (default 127.0.0.1:8787)
  ABR_PUBLIC_URL          base of live-view URLs (default http://<bind>)
  ABR_JOB_PROVIDER        local | cdp | steel | kernel (default local)
  ABR_CAPTURE_PROVIDER    local | cdp | steel | kernel (default local)
  ABR_LOCAL_JOB_BROWSER   headless-shell (default) | chromium
  ABR_LOCAL_ISOLATION     shared (default) | browser-per-job
  ABR_CDP_URL             CDP endpoint for the cdp provider
  ABR_STEEL_URL           Steel REST base (default http://127.0.0.1:3000; Steel Cloud with a key)
  ABR_STEEL_API_KEY       Steel Cloud API key
  ABR_KERNEL_URL          Kernel API base (default Kernel's)
  ABR_KERNEL_API_KEY      Kernel API key (required for the kernel provider)
  ABR_DEMO_SITE_URL       demo site for the built-in `demo` platform (default unset: no
                          demo platform; needs an abr built with the `demo` feature)
  ABR_MAX_CONCURRENT_JOBS (2)  ABR_MAX_QUEUED_JOBS (16)  ABR_BODY_LIMIT_BYTES (10485760)
  ABR_REQUEST_TIMEOUT_SECS (240)  ABR_CAPTURE_TTL_SECS (900)  ABR_MAX_OPEN_CAPTURES (4)
  RUST_LOG                log filter (default info)";

/// `abr serve` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = SERVE_HELP)]
pub(crate) struct ServeArgs {
    /// TOML configuration file (environment variables override it).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Start without ABR_API_TOKEN, accepting every request. Only on a trusted machine.
    #[arg(long)]
    insecure_dev: bool,
}

/// Logs to stderr; `RUST_LOG` filters (third-party targets that dump secrets stay capped,
/// see [`crate::logging`]).
pub(crate) fn init_logging() {
    crate::logging::init("info");
}

impl ServeArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        init_logging();
        let env: HashMap<String, String> = std::env::vars().collect();
        let config = RunnerConfig::load(&env, self.config.as_deref(), self.insecure_dev)?;
        if config.insecure_dev && config.api_tokens.is_empty() {
            tracing::warn!("--insecure-dev: the API accepts requests without a token");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::Run(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(async move {
            let bind = config.bind;
            let runner = runner_builder(config)?
                .build()
                .map_err(|e| CliError::Run(format!("cannot build the runner: {e}")))?;
            let server = RunningServer::bind(Arc::new(runner), bind)
                .await
                .map_err(|e| CliError::Run(format!("cannot listen on {bind}: {e}")))?;
            println!("abr: listening on {}", server.base_url());
            server.run_until_signal().await;
            Ok(())
        })
    }
}

/// The environment variable that asks for the built-in `demo` platform.
const DEMO_SITE_URL: &str = "ABR_DEMO_SITE_URL";

/// The runner `abr serve` runs for `config`: the providers it names, plus the built-in
/// platforms it asks for, which is `demo` only when [`RunnerConfig::demo_site_url`] is set
/// (`ABR_DEMO_SITE_URL`; needs the crate's `demo` feature). A plain configuration registers
/// no platform: add your own with [`RunnerBuilder::strategy`].
///
/// # Errors
/// [`ConfigError::Invalid`] naming `ABR_DEMO_SITE_URL` when the demo site URL is set but
/// the `demo` strategy refuses it, or this crate was built without the `demo` feature.
pub fn runner_builder(config: RunnerConfig) -> Result<RunnerBuilder, ConfigError> {
    let demo = config.demo_site_url.clone();
    let builder = RunnerBuilder::new(config);
    match demo {
        None => Ok(builder),
        Some(url) => with_demo(builder, &url),
    }
}

/// Registers the `demo` platform for the demo site at `url`.
#[cfg(feature = "demo")]
fn with_demo(builder: RunnerBuilder, url: &url::Url) -> Result<RunnerBuilder, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: DEMO_SITE_URL.to_owned(),
        reason,
    };
    let demo = abr_demo::DemoStrategy::new(url.as_str().trim_end_matches('/'))
        .map_err(|e| invalid(e.to_string()))?;
    builder
        .strategy(Arc::new(demo))
        .map_err(|e| invalid(e.to_string()))
}

/// Without the `demo` feature there is no `demo` platform to register.
#[cfg(not(feature = "demo"))]
fn with_demo(_: RunnerBuilder, _: &url::Url) -> Result<RunnerBuilder, ConfigError> {
    Err(ConfigError::Invalid {
        key: DEMO_SITE_URL.to_owned(),
        reason: "this abr was built without the `demo` feature".to_owned(),
    })
}
