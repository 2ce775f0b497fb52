//! `abr logs [-n N] [-f]`: the background runner's log.

use std::io::Write as _;

use crate::cli::CliError;
use crate::cli::local::logfile::{self, FollowError};
use crate::cli::local::{self, LocalError};

/// `abr logs` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct LogsArgs {
    /// How many of the last lines to show.
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 50)]
    lines: usize,
    /// Keep printing what is appended (until Ctrl-C).
    #[arg(short = 'f', long)]
    follow: bool,
    /// The hub of the runner (default ABR_HUB_URL; none: this machine only).
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
}

impl LogsArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        let paths = local::locate(self.hub.as_deref())?;
        let log = paths.log();
        let mut file = std::fs::File::open(&log).map_err(|e| LocalError::io("read", &log, e))?;
        let tail =
            logfile::tail(&mut file, self.lines).map_err(|e| LocalError::io("read", &log, e))?;
        let end = file
            .metadata()
            .map_err(|e| LocalError::io("read", &log, e))?
            .len();
        let write = |source| CliError::Write {
            stream: "stdout",
            source,
        };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&tail).map_err(write)?;
        stdout.flush().map_err(write)?;
        if !self.follow {
            return Ok(());
        }
        match logfile::follow(&log, end, &mut stdout) {
            Ok(()) => Ok(()),
            Err(FollowError::Read(e)) => Err(e.into()),
            Err(FollowError::Write(e)) => Err(write(e)),
        }
    }
}
