//! The command line of `abr`: argument parsing, dispatch and error reporting.
//!
//! `Cli` is the clap parser; each top-level subcommand is one variant of `Command` and
//! lives in its own module. Runners return `Result<(), CliError>`; [`main`] turns an error
//! into exactly one `abr: error: ...` line on stderr and the error's exit code.
//!
//! `abr demo` exists only with the crate's `demo` feature (on by default, for the `abr`
//! binary). Every command that runs a runner starts it the one way (`start.rs`): assembled
//! with [`RunnerBuilder::from_config`](crate::runner::RunnerBuilder::from_config), built,
//! recovered.

#[cfg(feature = "demo")]
mod demo;
mod down;
pub(crate) mod error;
mod hub;
mod keys;
pub(crate) mod local;
mod logs;
mod mcp;
mod ready;
mod serve;
mod session;
mod start;
mod status;
mod up;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) use error::CliError;

use crate::runner::ProviderLayer;

/// Exit codes, also listed in `abr --help`.
const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  the output could not be written (e.g. closed pipe)
  2  usage error, unreadable file, malformed input or invalid scope
`abr up`, `status`, `logs` and `down` exit 1 when they fail: nothing running (`status`,
`down`), a runner already running for the account (`up`), a background start that did not
come up (`up --background`).";

/// Agent Browser Runtime: run, capture and scope browser sessions for agents.
#[derive(Debug, Parser)]
#[command(name = "abr", version, propagate_version = true, after_help = EXIT_CODES_HELP)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The top-level subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Work with stored browser sessions (Playwright storageState files).
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// Run the HTTP runner (configured by ABR_* environment variables).
    Serve(serve::ServeArgs),
    /// Create, list and revoke the runner's API keys (agents, approvers, operators).
    Keys(keys::KeysArgs),
    /// On a hub: enroll a runner (`abr hub enroll --runner-id ID`), a one-time code it
    /// trades for its own credential.
    Hub(hub::HubArgs),
    /// Serve MCP (Model Context Protocol) on stdin/stdout for a local MCP client: browse,
    /// post and task tools on an in-process runner (configured as `abr serve`).
    Mcp(mcp::McpArgs),
    /// Run the runner on this machine (foreground; --background detaches).
    Up(up::UpArgs),
    /// Whether this account's runner runs on this machine: pid, uptime, version, launch
    /// kind, what it serves, log.
    Status(status::StatusArgs),
    /// The background runner's log.
    Logs(logs::LogsArgs),
    /// Whether the runner on this host takes new work (GET /v1/ready), as the exit code:
    /// a container's health check.
    Ready(ready::ReadyArgs),
    /// Stop this account's runner on this machine (drains running work unless --now).
    Down(down::DownArgs),
    /// Run the whole round trip on this machine: demo site, runner, capture through the live
    /// view, post with an image, proof, ground truth and a screenshot.
    #[cfg(feature = "demo")]
    Demo(demo::DemoArgs),
}

impl Cli {
    /// Runs the selected subcommand.
    pub(crate) fn run(self, layer: Option<ProviderLayer>) -> Result<(), CliError> {
        match self.command {
            Command::Session(command) => command.run(),
            Command::Serve(args) => args.run(layer),
            Command::Keys(args) => args.run(),
            Command::Hub(args) => args.run(),
            Command::Mcp(args) => args.run(layer),
            Command::Up(args) => args.run(layer),
            Command::Status(args) => args.run(),
            Command::Logs(args) => args.run(),
            Command::Ready(args) => args.run(),
            Command::Down(args) => args.run(),
            #[cfg(feature = "demo")]
            Command::Demo(args) => args.run(),
        }
    }
}

/// Parses the command line, runs it and reports the outcome.
///
/// Usage errors are clap's (message on stderr, exit code 2; `--help`/`--version` exit 0).
/// A command's error is printed as one `abr: error: <message>` line on stderr.
pub fn main() -> ExitCode {
    run(Cli::parse(), None)
}

/// As [`main`], on `args` (the program name first), with every runner it starts (`serve`,
/// `up`, `mcp`) using its providers wrapped in `layer`
/// ([`RunnerBuilder::provider_layer`](crate::runner::RunnerBuilder::provider_layer)): for a
/// binary that embeds the whole command line with providers of its own making, as the soak
/// does with its chaos layer.
pub fn main_with<I, T>(args: I, layer: ProviderLayer) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => run(cli, Some(layer)),
        Err(e) => {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
    }
}

fn run(cli: Cli, layer: Option<ProviderLayer>) -> ExitCode {
    let ran = cli.run(layer);
    // The spans still batched go out before the process ends (its runtime is gone by now).
    crate::traces::shutdown();
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            report_error(&err);
            ExitCode::from(err.exit_code())
        }
    }
}

/// Writes `err` as a single line on stderr. Best effort: if stderr itself is gone there is
/// nowhere left to report to, and the exit code still says what happened.
fn report_error(err: &CliError) {
    let line = error::single_line(&err.to_string());
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "abr: error: {line}");
    let _ = stderr.flush();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
