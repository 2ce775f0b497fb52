//! `abr hub enroll`: on the hub's machine, a one-time enrollment code for one runner id,
//! serving one tenant (the same as `POST /v1/relay/enrollments` with an operator's or the
//! tenant's approver's key). The runner's machine then runs
//! `abr up --hub URL --runner-id ID --enroll CODE` once; it keeps its runner credential in
//! its state directory and needs no API token of the hub.

use std::path::PathBuf;

use abr_core::principal::DEFAULT_TENANT;
use abr_engine::RunnerPresence;
use abr_protocol::relay::Enrollment;

use crate::cli::CliError;
use crate::cli::keys::{json_error, on_local_keys, run_error};

const HUB_HELP: &str = "\
An enrollment code works once, for ten minutes, for the runner id it names. The runner
trades it for its own credential (kept 0600 in its state directory) and from then on
connects with that credential: it can connect only as its runner id, only keys of its
tenant (and operators) reach it through the hub, and nobody without its credential can take
its runner id over (`abr up --force` replaces only its own connection). Enrolling a runner
id again for the same tenant revokes its older credential; a runner id enrolled for one
tenant cannot be enrolled for another. `abr keys list` shows runner credentials (role
runner); `abr keys revoke` disconnects one at its next token.

Example (on the hub):
  abr hub enroll --runner-id erins-laptop --tenant acme
then on the runner's machine:
  abr up --hub https://hub.example --runner-id erins-laptop --enroll abrk.key_…";

/// `abr hub <command>`.
#[derive(Debug, clap::Args)]
#[command(after_help = HUB_HELP)]
pub(crate) struct HubArgs {
    /// The hub's data directory.
    #[arg(long, value_name = "DIR", global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: HubCommand,
}

#[derive(Debug, clap::Subcommand)]
enum HubCommand {
    /// A one-time enrollment code for a runner id; prints it as JSON, this once.
    Enroll {
        /// The runner id (1 to 64 of A-Z a-z 0-9 . _ -).
        #[arg(long, value_name = "ID")]
        runner_id: String,
        /// The tenant the runner serves.
        #[arg(long, default_value = DEFAULT_TENANT)]
        tenant: String,
    },
}

impl HubArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        on_local_keys(self.data_dir, |keys, me| async move {
            match self.command {
                HubCommand::Enroll { runner_id, tenant } => {
                    let actor = me.act_for(Some(&tenant)).map_err(run_error)?;
                    // The hub's sockets are not seen from here: a code is refused at
                    // redemption while the id is connected.
                    let minted = keys
                        .enroll(&actor, &runner_id, RunnerPresence::Offline)
                        .await
                        .map_err(run_error)?;
                    eprintln!(
                        "abr: on the runner's machine, within ten minutes: abr up --hub <this \
                         hub's URL> --runner-id {} --enroll <code>",
                        minted.runner_id
                    );
                    serde_json::to_string_pretty(&Enrollment {
                        runner_id: minted.runner_id,
                        tenant_id: minted.tenant,
                        code: minted.code,
                        expires_at: minted.expires_at,
                    })
                    .map_err(json_error)
                }
            }
        })
    }
}
