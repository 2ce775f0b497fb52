//! The runner on the user's own machine: what `abr up`, `abr status`, `abr logs` and
//! `abr down` share.
//!
//! One runner per account per machine, in either launch mode: it holds an exclusive lock
//! ([`lock`]) on a file in the account's state directory ([`paths`]) for as long as it
//! runs, and writes next to it a state file readable by its owner only ([`state`]) that
//! tells the other commands its pid, start time, version, launch kind, loopback URLs, what
//! it serves, its log and a control token valid for this start. `abr down` (and
//! `abr up --replace`) stop it over its loopback control endpoint ([`control`]) with that
//! token. [`link`] is where the relay to a hub is hooked in; [`logfile`] rotates and reads
//! the background runner's log.

pub(crate) mod control;
pub(crate) mod credential;
pub(crate) mod error;
pub(crate) mod keys;
pub(crate) mod launch;
pub(crate) mod link;
pub(crate) mod lock;
pub(crate) mod logfile;
pub(crate) mod paths;
pub(crate) mod state;
pub(crate) mod target;
pub(crate) mod update;

pub(crate) use error::LocalError;

use crate::config::{self, LocalSettings};

/// The paths of the runner that `abr status`, `logs` and `down` are about: the account of
/// `hub` (`--hub`, else `ABR_HUB_URL`) and the first `ABR_API_TOKEN`, as `abr up` computed
/// it. Only the local settings and the tokens are read, not the whole configuration: these
/// commands need no session key, provider or other setting of the runner.
///
/// # Errors
/// [`LocalError::Invalid`] for a bad hub, a hub without a token, or no state directory.
pub(crate) fn locate(hub: Option<&str>) -> Result<paths::LocalPaths, LocalError> {
    let env = config::process_env();
    let local = LocalSettings::from_env(&env);
    let target = target::Target::resolve(&local, hub, None)?;
    let token = target::first_api_token(&config::api_tokens(&env));
    if target.hub.is_some() && token.is_none() {
        return Err(LocalError::Invalid {
            key: "ABR_API_TOKEN",
            reason: "the runner of a hub is found by the hub and the API token it links with"
                .to_owned(),
        });
    }
    let account = target::account_id(target.hub.as_ref(), token.as_ref());
    paths::LocalPaths::resolve(&local, account)
}
