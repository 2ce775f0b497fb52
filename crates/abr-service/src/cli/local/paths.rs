//! Where the local runner of an account keeps its lock, state file, log and data.
//!
//! The state directory is `ABR_STATE_DIR`, else `$XDG_STATE_HOME/abr`, else
//! `~/.local/state/abr`. In it, per account (see [`super::target::account_id`]):
//! `runner-<account>.lock`, `runner-<account>.json` (the state file),
//! `logs/runner-<account>.log` and `data-<account>/` (the runner's records, sessions and
//! browser profile, unless `ABR_DATA_DIR` names another directory). Directories are
//! created readable by their owner only.

use std::path::{Path, PathBuf};

use super::LocalError;
use crate::config::LocalSettings;

/// The files of one account's local runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalPaths {
    dir: PathBuf,
    account: String,
}

impl LocalPaths {
    /// The paths of `account` in the state directory of `local` (see
    /// [`LocalSettings::state_dir`]).
    ///
    /// # Errors
    /// [`LocalError::Invalid`] when no state directory can be found (`ABR_STATE_DIR`,
    /// `XDG_STATE_HOME` and `HOME` all unset).
    pub(crate) fn resolve(local: &LocalSettings, account: String) -> Result<Self, LocalError> {
        let Some(dir) = local.state_dir.clone() else {
            return Err(LocalError::Invalid {
                key: "ABR_STATE_DIR",
                reason: "no state directory: set ABR_STATE_DIR (HOME and XDG_STATE_HOME are \
                         unset)"
                    .to_owned(),
            });
        };
        Ok(Self { dir, account })
    }

    /// The single-instance lock file.
    pub(crate) fn lock(&self) -> PathBuf {
        self.dir.join(format!("runner-{}.lock", self.account))
    }

    /// The state file of the running runner.
    pub(crate) fn state(&self) -> PathBuf {
        self.dir.join(format!("runner-{}.json", self.account))
    }

    /// The background runner's log.
    pub(crate) fn log(&self) -> PathBuf {
        self.dir
            .join("logs")
            .join(format!("runner-{}.log", self.account))
    }

    /// The runner's data directory when `ABR_DATA_DIR` is not set.
    pub(crate) fn hub_credential(&self) -> PathBuf {
        self.dir
            .join(format!("hub-credential-{}.json", self.account))
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.join(format!("data-{}", self.account))
    }

    /// Creates the state directory and its `logs` directory (mode 0700) if missing.
    ///
    /// # Errors
    /// [`LocalError::Io`] when a directory cannot be created.
    pub(crate) fn create_dirs(&self) -> Result<(), LocalError> {
        for dir in [self.dir.clone(), self.dir.join("logs")] {
            private_dir(&dir)?;
        }
        Ok(())
    }
}

/// Creates `dir` (and its parents) for its owner only, if missing; refuses one other users
/// may write to (the runner's rule for its data directory).
pub(crate) fn private_dir(dir: &Path) -> Result<(), LocalError> {
    crate::runner::private_dir(dir)
        .map_err(|reason| LocalError::Run(format!("{}: {reason}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local settings of the environment `pairs`.
    fn env(pairs: &[(&str, &str)]) -> LocalSettings {
        LocalSettings::from_env(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn the_state_directory_follows_abr_state_dir_then_xdg_then_home() {
        let all = env(&[
            ("ABR_STATE_DIR", "/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        let paths = LocalPaths::resolve(&all, "local".to_owned()).unwrap();
        assert_eq!(paths.lock(), Path::new("/s/runner-local.lock"));
        assert_eq!(paths.state(), Path::new("/s/runner-local.json"));
        assert_eq!(paths.log(), Path::new("/s/logs/runner-local.log"));
        assert_eq!(paths.data_dir(), Path::new("/s/data-local"));
        let xdg = env(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]);
        let paths = LocalPaths::resolve(&xdg, "ab12".to_owned()).unwrap();
        assert_eq!(paths.lock(), Path::new("/x/abr/runner-ab12.lock"));
        let home = env(&[("HOME", "/h"), ("ABR_STATE_DIR", " ")]);
        let paths = LocalPaths::resolve(&home, "local".to_owned()).unwrap();
        assert_eq!(
            paths.log(),
            Path::new("/h/.local/state/abr/logs/runner-local.log")
        );
        let err = LocalPaths::resolve(&env(&[]), "local".to_owned()).unwrap_err();
        assert!(err.to_string().starts_with("ABR_STATE_DIR: "), "{err}");
    }
}
