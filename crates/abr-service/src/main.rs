//! `abr`: the Agent Browser Runtime binary.
//!
//! Today it carries the command line (`abr session filter`); the HTTP runner (`abr serve`)
//! and the demo (`abr demo`) are added as further subcommands of [`cli::Cli`].

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
