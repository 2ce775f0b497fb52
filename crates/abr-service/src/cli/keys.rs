//! `abr keys create|list|revoke`: the runner's API keys, in its data directory's database
//! (as the operator of this machine: whoever can open the data directory). The same as
//! `POST|GET|DELETE /v1/keys` with an operator's key; a running runner sees the change at
//! once (the keys are read at every request).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use abr_core::audit::Auditor;
use abr_core::clock::SystemClock;
use abr_core::principal::Principal;
use abr_engine::Keys;
use abr_protocol::{KeyRequest, KeysResponse, Role};
use abr_store::{PgStore, SqliteStore};

use crate::cli::CliError;
use crate::config;

const KEYS_HELP: &str = "\
Roles:
  agent     create tasks, post, browse, keep sessions, re-check and retry; read its tenant's records
  approver  approve or reject tasks, resolve a person's pauses and takeovers, assert that an
            uncertain action did not happen, decide sites and screenshots; read its tenant's records
  operator  everything, for every tenant (keys, the hub)
An agent's or an approver's key acts for one tenant (--tenant); `x-tenant-id` cannot change it.

The data directory is ABR_DATA_DIR, else $XDG_DATA_HOME/abr, else ~/.local/share/abr
(--data-dir wins).

Example:
  abr keys create --name 'posting bot' --role agent --tenant acme
  abr keys create --name 'Ada (approves)' --role approver --tenant acme --expires-in-days 90
  abr keys list
  abr keys revoke key_4kq…";

/// `abr keys <command>`.
#[derive(Debug, clap::Args)]
#[command(after_help = KEYS_HELP)]
pub(crate) struct KeysArgs {
    /// The runner's data directory.
    #[arg(long, value_name = "DIR", global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: KeysCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KeysCommand {
    /// Create a key; prints it as JSON with its token, which is shown this once.
    Create {
        /// Who holds it (shown in lists and on the records it approves).
        #[arg(long)]
        name: String,
        /// agent, approver or operator.
        #[arg(long)]
        role: Role,
        /// The one tenant it acts for (required for agent and approver keys).
        #[arg(long)]
        tenant: Option<String>,
        /// It never commits: no post, no task, read-only browse sessions.
        #[arg(long)]
        read_only: bool,
        /// It is refused after this many days.
        #[arg(long, value_name = "DAYS")]
        expires_in_days: Option<u32>,
    },
    /// List every key (revoked ones too), as JSON; never a token.
    List,
    /// Revoke a key: from now on it authenticates nobody.
    Revoke {
        /// The key's id (`key_…`).
        id: String,
    },
}

/// Runs `work` on the keys of the runner whose data directory is `data_dir` (default
/// `ABR_DATA_DIR`, …), as this machine's operator (whoever can open it), and prints what it
/// answers.
pub(super) fn on_local_keys<F, Fut>(data_dir: Option<PathBuf>, work: F) -> Result<(), CliError>
where
    F: FnOnce(Keys, Arc<Principal>) -> Fut,
    Fut: std::future::Future<Output = Result<String, CliError>>,
{
    let env = config::process_env();
    let dir = match data_dir {
        Some(dir) => dir,
        None => config::data_dir(&env)?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Run(format!("cannot start the async runtime: {e}")))?;
    // A fleet's keys are in its shared database (`ABR_DATABASE_URL`), else in this
    // machine's SQLite file.
    let database_url = env
        .get("ABR_DATABASE_URL")
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty());
    runtime.block_on(async move {
        let store: Arc<dyn abr_core::store::KeyStore> = match database_url {
            Some(url) => Arc::new(
                PgStore::connect(&url, None, false, 2)
                    .await
                    .map_err(|e| CliError::Run(format!("cannot open the database: {e}")))?,
            ),
            None => Arc::new(
                SqliteStore::open(&dir.join("abr.db"), None, false)
                    .map_err(|e| CliError::Run(format!("cannot open {}: {e}", dir.display())))?,
            ),
        };
        let keys = Keys::new(store, Arc::new(SystemClock), Auditor::none());
        let me = Arc::new(Principal::operator(
            "local",
            "this machine's operator (abr keys, abr hub)",
        ));
        let text = work(keys, me).await?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::Run(format!("cannot write the answer: {e}")))
    })
}

impl KeysArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        on_local_keys(self.data_dir, |keys, me| async move {
            let text = match self.command {
                KeysCommand::Create {
                    name,
                    role,
                    tenant,
                    read_only,
                    expires_in_days,
                } => {
                    let request = KeyRequest {
                        name,
                        role,
                        tenant_id: tenant,
                        read_only,
                        expires_at: expires_in_days.map(|days| {
                            time::OffsetDateTime::now_utc() + time::Duration::days(days.into())
                        }),
                    };
                    let created = keys.create(&me, &request).await.map_err(run_error)?;
                    let mut json = serde_json::to_value(&created.key).map_err(json_error)?;
                    json["token"] = created.token.expose().into();
                    serde_json::to_string_pretty(&json).map_err(json_error)?
                }
                KeysCommand::List => {
                    let keys = keys.list(&me).await.map_err(run_error)?;
                    serde_json::to_string_pretty(&KeysResponse { keys }).map_err(json_error)?
                }
                KeysCommand::Revoke { id } => {
                    let key = keys.revoke(&me, &id).await.map_err(run_error)?;
                    serde_json::to_string_pretty(&key).map_err(json_error)?
                }
            };
            Ok(text)
        })
    }
}

pub(super) fn run_error(e: impl Into<abr_engine::EngineError>) -> CliError {
    let e = e.into();
    CliError::Run(e.to_string())
}

pub(super) fn json_error(e: serde_json::Error) -> CliError {
    CliError::Run(format!("cannot write the answer as JSON: {e}"))
}
