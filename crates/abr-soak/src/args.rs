//! The command line: a soak run (`soak --minutes N --seed S [--fleet K] ...`), or, hidden,
//! one replica of it (`soak replica --chaos-seed S --chaos-rates R --injected-file F -- serve`),
//! which the run starts as its own child processes.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::rates::Rates;

/// Runs real runners under a mixed load and injected faults, then checks every outcome
/// against the demo site's ground truth and looks for leaks. Exits 1 when a check fails.
#[derive(Debug, Parser)]
#[command(
    name = "soak",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub(crate) struct Cli {
    /// The hidden replica mode.
    #[command(subcommand)]
    pub(crate) mode: Option<Mode>,
    /// A soak run.
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

/// The hidden modes.
#[derive(Debug, Subcommand)]
pub(crate) enum Mode {
    /// One replica: `abr` with its providers wrapped in the chaos layer (started by a run).
    #[command(hide = true)]
    Replica(ReplicaArgs),
}

/// A soak run's settings.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("length").required(true).args(["minutes", "seconds"])))]
pub(crate) struct RunArgs {
    /// How long the load runs, in minutes.
    #[arg(long, value_name = "N")]
    pub(crate) minutes: Option<u64>,
    /// How long the load runs, in seconds (short runs).
    #[arg(long, value_name = "N")]
    pub(crate) seconds: Option<u64>,
    /// The seed every draw comes from: the load's mix, the chaos layer's faults, the
    /// fleet's faults.
    #[arg(long, value_name = "S", required = true)]
    pub(crate) seed: Option<u64>,
    /// Replicas on one throwaway PostgreSQL database (1: one runner on its SQLite file).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub(crate) fleet: u16,
    /// Concurrent workers of the load.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=32))]
    pub(crate) workers: u16,
    /// Where to write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// The chaos layer's rates, `name=rate,...` (busy, unavailable, timeout, hang, slow at
    /// an acquire; crash, freeze, close_page, slow_steps per lease; slow_ms, stall_ms,
    /// within_ms), or `off`.
    #[arg(long, value_name = "RATES", default_value = Rates::DEFAULT)]
    pub(crate) chaos: Rates,
    /// Each replica's shared browser is replaced after this many job leases
    /// (`ABR_LOCAL_RECYCLE_AFTER_JOBS`).
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub(crate) recycle_after: u32,
    /// A fleet replica's heartbeat lease (`ABR_NODE_LEASE_SECS`); a paused replica sleeps
    /// twice this.
    #[arg(long, value_name = "SECS", default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=60))]
    pub(crate) lease_secs: u64,
    /// The replicas' request deadline (`ABR_REQUEST_TIMEOUT_SECS`): every step, acquire and
    /// wait of theirs is a share of it.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(10..=600))]
    pub(crate) request_timeout: u64,
    /// No relayed posts (by default a hub and a runner linked to it by the outbound relay,
    /// `abr up --hub`, take a share of the posts, called through the hub).
    #[arg(long)]
    pub(crate) no_relay: bool,
    /// Keep the run's directory (replicas' logs and data) instead of removing it.
    #[arg(long)]
    pub(crate) keep_dir: bool,
}

impl RunArgs {
    /// How long the load runs.
    pub(crate) fn duration(&self) -> Duration {
        match (self.minutes, self.seconds) {
            (Some(m), _) => Duration::from_secs(m.saturating_mul(60)),
            (None, Some(s)) => Duration::from_secs(s),
            (None, None) => Duration::ZERO,
        }
    }

    /// Whether relayed posts are part of the load.
    pub(crate) fn relay(&self) -> bool {
        !self.no_relay
    }

    /// The seed (clap requires it).
    pub(crate) fn seed(&self) -> u64 {
        self.seed.unwrap_or_default()
    }
}

/// One replica's settings (after `--`: the `abr` command line, without the program name).
#[derive(Debug, Args)]
pub(crate) struct ReplicaArgs {
    /// The seed of this replica's chaos layer (each role derives its own).
    #[arg(long, value_name = "S")]
    pub(crate) chaos_seed: u64,
    /// The chaos layer's rates.
    #[arg(long, value_name = "RATES")]
    pub(crate) chaos_rates: Rates,
    /// Where the faults injected so far are written, as JSON, every second.
    #[arg(long, value_name = "FILE")]
    pub(crate) injected_file: PathBuf,
    /// The `abr` command line (`serve`).
    #[arg(last = true, required = true, value_name = "ABR ARGS")]
    pub(crate) abr: Vec<OsString>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_run_and_a_replica_parse() {
        let cli = Cli::try_parse_from(["soak", "--seconds", "60", "--seed", "1"]).unwrap();
        assert!(cli.mode.is_none());
        assert_eq!(cli.run.duration(), Duration::from_secs(60));
        assert_eq!((cli.run.seed(), cli.run.fleet, cli.run.workers), (1, 1, 3));
        let cli = Cli::try_parse_from([
            "soak",
            "replica",
            "--chaos-seed",
            "7",
            "--chaos-rates",
            "off",
            "--injected-file",
            "/tmp/x",
            "--",
            "serve",
        ])
        .unwrap();
        let Some(Mode::Replica(replica)) = cli.mode else {
            panic!("not a replica")
        };
        assert_eq!(replica.abr, vec![OsString::from("serve")]);
        assert!(Cli::try_parse_from(["soak", "--seed", "1"]).is_err());
        assert!(Cli::try_parse_from(["soak", "--minutes", "1"]).is_err());
    }
}
