//! `soak`: real ABR runners under a mixed load and injected faults for minutes, every
//! outcome checked against the demo site's ground truth, then leaks and memory growth.
//!
//! ```sh
//! cargo run --release -p abr-soak --bin soak -- --minutes 10 --seed 1 [--fleet 3] [--out report.json]
//! ```
//!
//! It starts the demo site in-process, for `--fleet K` a throwaway PostgreSQL server, and
//! the replicas as child processes of this very binary in a hidden mode (`soak replica ...
//! -- serve`: the whole `abr` command line with every provider wrapped in the core's chaos
//! layer), and, unless `--no-relay`, a hub and a runner linked to it (`-- up --hub ...`).
//! It prints a report (`--out`: as JSON too) and exits 1 when a check failed, 2 when the
//! run itself could not be done. Nothing it starts outlives it: the processes are killed
//! when it ends (an error, a panic, a second Ctrl-C), and a replica whose parent died stops
//! itself.

mod args;
mod checks;
mod faults;
mod journal;
mod load;
mod monitor;
mod processes;
mod rates;
mod replica;
mod report;
mod soak;
mod stack;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match cli.mode {
        Some(args::Mode::Replica(replica)) => replica::run(replica),
        None => soak::main(cli.run),
    }
}
