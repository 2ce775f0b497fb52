//! `abr serve`: the HTTP runner.

use std::path::PathBuf;

use crate::cli::CliError;
use crate::cli::start;
use crate::runner::ProviderLayer;
use crate::server::{RunningServer, Signals};

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
  ABR_LOCAL_RECYCLE_AFTER_JOBS  the shared browser is replaced after this many jobs
                          (default 200; 0: never)
  ABR_CDP_URL             CDP endpoint for the cdp provider
  ABR_STEEL_URL           Steel REST base (default http://127.0.0.1:3000; Steel Cloud with a key)
  ABR_STEEL_API_KEY       Steel Cloud API key
  ABR_KERNEL_URL          Kernel API base (default Kernel's)
  ABR_KERNEL_API_KEY      Kernel API key (required for the kernel provider)
  ABR_DEMO_SITE_URL       demo site for the built-in `demo` platform (default unset: no
                          demo platform; needs an abr built with the `demo` feature)
  ABR_MAX_CONCURRENT_JOBS (2)  ABR_MAX_QUEUED_JOBS (16)  ABR_BODY_LIMIT_BYTES (10485760)
  ABR_REQUEST_TIMEOUT_SECS (240)  ABR_CAPTURE_TTL_SECS (900)  ABR_MAX_OPEN_CAPTURES (4)
  ABR_MAX_OPEN_BROWSES (4)
  ABR_DATA_DIR            durable records, abr.db (default $XDG_DATA_HOME/abr or
                          ~/.local/share/abr)
  ABR_SESSION_KEY         64 hex chars: encrypts stored sessions and task credentials;
                          without it they are refused (plaintext only with --insecure-dev)
  ABR_TASK_APPROVAL       all (default) | committing_or_risky | off
  ABR_EVENTS_WEBHOOK      where takeover events are posted; ABR_EVENTS_WEBHOOK_SECRET
                          (32+ bytes, required with it) signs each delivery
  ABR_TENANT_MAX_SESSIONS (10)  ABR_TENANT_MAX_EXECUTIONS_PER_DAY (100)
  ABR_TENANT_MAX_RETRIES (5)
  ABR_HUB_MIN_RUNNER_VERSION  oldest runner version this hub takes (default its own x.y.0)
  ABR_HUB_RUNNER_WAIT_SECS    how long a call waits for its runner to connect (15; 0-300)
  ABR_PLATFORMS_DIR       directory of platform files (*.toml, *.json) to register
  ABR_PLATFORM_VARS       name=value,... for their {{name}} placeholders
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

impl ServeArgs {
    pub(crate) fn run(self, layer: Option<ProviderLayer>) -> Result<(), CliError> {
        let config = start::configuration(self.config.as_deref(), self.insecure_dev)?;
        if config.insecure_dev && config.api_tokens.is_empty() {
            tracing::warn!("--insecure-dev: the API accepts requests without a token");
        }
        start::runtime()?.block_on(async move {
            let bind = config.bind;
            let runner = start::runner(config, layer).await?;
            let signals = Signals::install();
            let server = RunningServer::bind(runner, bind)
                .await
                .map_err(|e| CliError::Run(format!("cannot listen on {bind}: {e}")))?;
            println!("abr: listening on {}", server.base_url());
            server.run_until(signals).await;
            Ok(())
        })
    }
}
