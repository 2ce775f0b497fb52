//! `abr serve`: the HTTP runner.

use std::path::PathBuf;
use std::sync::Arc;

use crate::cli::CliError;
use crate::config::{self, ConfigError, RunnerConfig};
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

/// Logs to stderr; `filter` (`RUST_LOG`) filters, default info (third-party targets that
/// dump secrets stay capped, see [`crate::logging`]).
fn init_logging(filter: Option<&str>) {
    crate::logging::init(filter, "info");
}

impl ServeArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        let env = config::process_env();
        init_logging(config::log_filter(&env));
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
            let ended = runner
                .recover()
                .await
                .map_err(|e| CliError::Run(format!("cannot read the store: {e}")))?;
            if ended > 0 {
                tracing::warn!(ended, "ended the tasks the previous run left unfinished");
            }
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
    let declared = match &config.platforms_dir {
        Some(dir) => declared_platforms(dir, &config.platform_vars)?,
        None => Vec::new(),
    };
    let mut builder = RunnerBuilder::new(config);
    for strategy in declared {
        let id = abr_core::WebPostStrategy::<abr_providers::BrowserSession>::platform(&strategy)
            .to_owned();
        builder = builder
            .strategy(Arc::new(strategy))
            .map_err(|e| ConfigError::Invalid {
                key: PLATFORMS_DIR.to_owned(),
                reason: format!("platform {id:?}: {e}"),
            })?;
    }
    match demo {
        None => Ok(builder),
        Some(url) => with_demo(builder, &url),
    }
}

/// The environment variable naming the platforms directory.
const PLATFORMS_DIR: &str = "ABR_PLATFORMS_DIR";

/// Reads the `*.toml` and `*.json` platform files of `dir` (not its subdirectories),
/// filling their `{{name}}` placeholders from `vars`.
fn declared_platforms(
    dir: &std::path::Path,
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<abr_engine::declared::DeclaredStrategy>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: PLATFORMS_DIR.to_owned(),
        reason,
    };
    let entries = std::fs::read_dir(dir)
        .map_err(|e| invalid(format!("cannot read {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| invalid(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if abr_engine::declared::PlatformFormat::from_file_name(&name).is_none()
            || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .map_err(|e| invalid(format!("cannot read {name}: {e}")))?;
        files.push((name, text));
    }
    abr_engine::declared::load_platform_files(
        files.iter().map(|(n, t)| (n.as_str(), t.as_str())),
        vars,
    )
    .map_err(|e| invalid(e.to_string()))
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use tower::ServiceExt as _;

    use super::*;

    const TOKEN: &str = "serve-test-token-0123456789";

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        [("ABR_API_TOKEN", TOKEN), ("HOME", "/home/abr-test")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The platform ids a runner built by [`runner_builder`] for `env` serves on
    /// `GET /v1/platforms`. No browser starts: providers launch on first use.
    async fn platforms(env: &HashMap<String, String>) -> Vec<String> {
        let mut config = RunnerConfig::load(env, None, false).unwrap();
        // Records in memory: these tests are about platforms.
        config.store.data_dir = None;
        let runner = Arc::new(runner_builder(config).unwrap().build().unwrap());
        let response = crate::http::app(Arc::clone(&runner))
            .oneshot(
                Request::get("/v1/platforms")
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        runner.shutdown().await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body: abr_protocol::PlatformsResponse = serde_json::from_slice(&body).unwrap();
        body.platforms.into_iter().map(|p| p.id).collect()
    }

    #[tokio::test]
    async fn a_plain_configuration_registers_no_demo_platform() {
        let config = RunnerConfig::load(&env(&[]), None, false).unwrap();
        assert_eq!(config.demo_site_url, None);
        assert_eq!(RunnerConfig::default().demo_site_url, None);
        assert_eq!(platforms(&env(&[])).await, Vec::<String>::new());
        let off = env(&[("ABR_DEMO_SITE_URL", "off")]);
        assert_eq!(platforms(&off).await, Vec::<String>::new());
    }

    #[cfg(feature = "demo")]
    #[tokio::test]
    async fn the_demo_platform_is_registered_when_its_site_is_named() {
        let demo = env(&[("ABR_DEMO_SITE_URL", "http://127.0.0.1:8788")]);
        assert_eq!(platforms(&demo).await, ["demo"]);
    }

    #[cfg(not(feature = "demo"))]
    #[tokio::test]
    async fn without_the_demo_feature_asking_for_the_demo_platform_is_refused() {
        let demo = env(&[("ABR_DEMO_SITE_URL", "http://127.0.0.1:8788")]);
        let err = RunnerConfig::load(&demo, None, false).unwrap_err();
        assert!(err.to_string().starts_with("ABR_DEMO_SITE_URL: "), "{err}");
        let config = RunnerConfig {
            demo_site_url: Some(url::Url::parse("http://127.0.0.1:8788").unwrap()),
            ..RunnerConfig::default()
        };
        let err = runner_builder(config).unwrap_err();
        assert!(err.to_string().contains("`demo` feature"), "{err}");
        assert_eq!(platforms(&env(&[])).await, Vec::<String>::new());
    }

    #[tokio::test]
    async fn platform_files_are_registered_and_a_bad_one_stops_the_start() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../abr-demo/platforms");
        let declared = env(&[
            ("ABR_PLATFORMS_DIR", dir),
            ("ABR_PLATFORM_VARS", "base=http://127.0.0.1:8788"),
        ]);
        assert_eq!(platforms(&declared).await, ["demo-declared"]);
        // Without its variable the file is refused, naming the setting, the file and field.
        let unfilled = env(&[("ABR_PLATFORMS_DIR", dir)]);
        let config = RunnerConfig::load(&unfilled, None, false).unwrap();
        let err = runner_builder(config).unwrap_err().to_string();
        assert!(
            err.starts_with("ABR_PLATFORMS_DIR: ")
                && err.contains("demo.toml")
                && err.contains("startUrl"),
            "{err}"
        );
        let missing = env(&[("ABR_PLATFORMS_DIR", "/nonexistent/abr-platforms")]);
        let config = RunnerConfig::load(&missing, None, false).unwrap();
        let err = runner_builder(config).unwrap_err().to_string();
        assert!(err.starts_with("ABR_PLATFORMS_DIR: cannot read"), "{err}");
    }
}
