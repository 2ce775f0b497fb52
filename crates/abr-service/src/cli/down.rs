//! `abr down [--now]`: stops this account's runner on this machine.

use std::time::Duration;

use crate::cli::CliError;
use crate::cli::local::error::Holder;
use crate::cli::local::state::RunnerState;
use crate::cli::local::{self, LocalError, control, lock};

/// `abr down` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 stopped, 1 nothing was running (or it did not stop).")]
pub(crate) struct DownArgs {
    /// Stop at once: running work is cut (ended honestly at the next start) instead of
    /// finishing.
    #[arg(long)]
    now: bool,
    /// How long to wait for the runner to stop, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    wait_secs: u64,
    /// The hub of the runner (default ABR_HUB_URL; none: this machine only).
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
}

impl DownArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        let paths = local::locate(self.hub.as_deref())?;
        if !lock::is_held(&paths.lock())? {
            return Err(LocalError::NotRunning.into());
        }
        let Some(state) = RunnerState::read(&paths.state())? else {
            return Err(LocalError::Run(
                "a runner holds the lock but has no state file yet (it is starting); try again"
                    .to_owned(),
            )
            .into());
        };
        let runtime = super::up::small_runtime()?;
        runtime.block_on(control::request_stop(&state, !self.now))?;
        eprintln!(
            "abr: {} the runner (pid {})...",
            if self.now { "stopping" } else { "draining" },
            state.pid
        );
        let limit = Duration::from_secs(self.wait_secs);
        // The lock goes last in its exit; then the process itself ends.
        if !lock::released_within(&paths.lock(), limit)? || !lock::ended_within(state.pid, limit) {
            return Err(LocalError::StillRunning(Holder::from_state(Some(&state)), limit).into());
        }
        println!("abr: stopped the runner (pid {})", state.pid);
        Ok(())
    }
}
