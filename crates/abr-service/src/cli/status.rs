//! `abr status`: whether this account's runner runs on this machine, and what it is.

use std::io::Write as _;

use crate::cli::CliError;
use crate::cli::local::error::format_time;
use crate::cli::local::state::RunnerState;
use crate::cli::local::{self, LocalError, lock};

/// `abr status` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 running, 1 not running (or a stale state file).")]
pub(crate) struct StatusArgs {
    /// The hub of the runner to look for (default ABR_HUB_URL; none: this machine only).
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
}

impl StatusArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        let paths = local::locate(self.hub.as_deref())?;
        let state = RunnerState::read(&paths.state());
        if !lock::is_held(&paths.lock())? {
            if let Ok(Some(stale)) = state {
                eprintln!(
                    "abr: a state file names pid {}, but that runner is gone (stale: {})",
                    stale.pid,
                    paths.state().display()
                );
            }
            return Err(LocalError::NotRunning.into());
        }
        let state = match state {
            Ok(Some(state)) => state,
            Ok(None) => {
                write_out("running   yes (starting: no state file yet)\n")?;
                return Ok(());
            }
            Err(e) => {
                write_out(&format!("running   yes ({e})\n"))?;
                return Ok(());
            }
        };
        let healthy = super::up::small_runtime()
            .map(|rt| rt.block_on(super::up::healthy(&state.url)))
            .unwrap_or(false);
        write_out(&describe(&state, now(), healthy))?;
        Ok(())
    }
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn write_out(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|source| CliError::Write {
            stream: "stdout",
            source,
        })
}

/// The status lines of a running runner.
fn describe(state: &RunnerState, now: i64, healthy: bool) -> String {
    let uptime = u64::try_from(now.saturating_sub(state.started_at)).unwrap_or(0);
    let serves = match &state.hub {
        Some(hub) => format!("hub {hub} as runner {}", state.runner_id),
        None => "this machine only (no hub)".to_owned(),
    };
    let log = state.log.as_ref().map_or_else(
        || "- (in its terminal)".to_owned(),
        |p| p.display().to_string(),
    );
    format!(
        "running   yes\n\
         pid       {}\n\
         uptime    {} (since {})\n\
         version   {}\n\
         launch    {}\n\
         serves    {serves}\n\
         api       {} ({})\n\
         headless  {}\n\
         log       {log}\n",
        state.pid,
        human(uptime),
        format_time(state.started_at),
        state.version,
        state.launch,
        state.url,
        if healthy { "healthy" } else { "not answering" },
        if state.headless { "yes" } else { "no" },
    )
}

/// `1h 02m 03s`, `2m 03s`, `3s`.
fn human(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h {m:02}m {s:02}s")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::cli::local::state::{ControlToken, LaunchKind};

    #[test]
    fn the_status_names_pid_uptime_version_launch_what_it_serves_and_the_log() {
        let token = ControlToken::generate().unwrap();
        let state = RunnerState {
            pid: 4242,
            started_at: 1_000,
            version: "1.2.3".to_owned(),
            launch: LaunchKind::Background,
            url: "http://127.0.0.1:5000".to_owned(),
            control_url: "http://127.0.0.1:5001".to_owned(),
            hub: Some("https://hub.example.com/".to_owned()),
            runner_id: "laptop".to_owned(),
            headless: false,
            log: Some(PathBuf::from("/state/logs/runner-x.log")),
            control_token: token.clone(),
        };
        let text = describe(&state, 1_000 + 3_723, true);
        for line in [
            "pid       4242",
            "uptime    1h 02m 03s (since 1970-01-01T00:16:40Z)",
            "version   1.2.3",
            "launch    background",
            "serves    hub https://hub.example.com/ as runner laptop",
            "api       http://127.0.0.1:5000 (healthy)",
            "log       /state/logs/runner-x.log",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        assert!(!text.contains(token.expose()));
        assert_eq!(human(59), "59s");
        assert_eq!(human(61), "1m 01s");
    }
}
