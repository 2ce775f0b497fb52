//! `abr ready`: whether the runner on this host takes new work (`GET /v1/ready`), as an
//! exit code: the container image's health check, a Kubernetes exec probe, a script's wait.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::CliError;

/// `abr ready` arguments.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 ready; 1 not ready (draining, full, its store \
                        unreachable) or not answering."
)]
pub(crate) struct ReadyArgs {
    /// The runner's base URL (default: this host at the port of ABR_BIND, else 8787).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

/// This host's runner, at the port `bind` names (`ABR_BIND`).
fn local_url(bind: Option<&str>) -> String {
    let port = bind
        .and_then(|b| b.parse::<SocketAddr>().ok())
        .map_or(8787, |addr| addr.port());
    format!("http://127.0.0.1:{port}")
}

impl ReadyArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        let env = crate::config::process_env();
        let url = self
            .url
            .unwrap_or_else(|| local_url(env.get("ABR_BIND").map(String::as_str)));
        let runtime = super::up::small_runtime().map_err(|e| CliError::Run(e.to_string()))?;
        runtime.block_on(ready(&url))
    }
}

async fn ready(url: &str) -> Result<(), CliError> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| CliError::Run(format!("cannot make an HTTP client: {e}")))?;
    let answer = client
        .get(format!("{}/v1/ready", url.trim_end_matches('/')))
        .send()
        .await
        .map_err(|e| CliError::Run(format!("{url} does not answer: {e}")))?;
    let status = answer.status();
    let readiness: Option<abr_protocol::Readiness> = answer.json().await.ok();
    match (status.is_success(), readiness) {
        (true, _) => Ok(()),
        (false, Some(readiness)) => Err(CliError::Run(format!(
            "not ready ({status}): {}",
            serde_json::to_string(&readiness).unwrap_or_default()
        ))),
        (false, None) => Err(CliError::Run(format!("not ready ({status})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_url_is_the_binds_port_on_loopback() {
        assert_eq!(local_url(None), "http://127.0.0.1:8787");
        assert_eq!(local_url(Some("0.0.0.0:9000")), "http://127.0.0.1:9000");
        assert_eq!(local_url(Some("[::]:9001")), "http://127.0.0.1:9001");
        assert_eq!(local_url(Some("nonsense")), "http://127.0.0.1:8787");
    }
}
