//! `abr`: the Agent Browser Runtime binary. See `abr --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    abr_service::cli::main()
}
