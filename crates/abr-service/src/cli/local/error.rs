//! [`LocalError`]: what the local runner commands fail with.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::CliError;
use crate::config::ConfigError;

use super::launch::LaunchKind;

/// A failure of `abr up`, `status`, `logs` or `down`. Messages never carry a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LocalError {
    /// A setting or flag is unusable (exit code 2).
    #[error("{key}: {reason}")]
    Invalid {
        /// The flag or variable.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// Reading or writing a file of the state directory failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `write`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Another runner holds this account's lock on this machine.
    #[error(
        "a runner is already running for this account on this machine ({0}); `abr down` \
         stops it, `abr up --replace` takes over from it"
    )]
    AlreadyRunning(Holder),
    /// No runner holds this account's lock on this machine.
    #[error("no runner is running for this account on this machine")]
    NotRunning,
    /// The running runner's control endpoint did not take the request.
    #[error("the runner (pid {pid}) did not take the stop request: {reason}")]
    Control {
        /// The runner's pid.
        pid: u32,
        /// Why (never the token).
        reason: String,
    },
    /// The runner still held the lock when the wait ended.
    #[error("the runner ({0}) still runs after {1:?}; `abr down --now` stops it at once")]
    StillRunning(Holder, Duration),
    /// The background runner did not come up.
    #[error("the background runner did not start: {0} (its log: {1})")]
    StartFailed(String, PathBuf),
    /// The runner could not be built or served.
    #[error("{0}")]
    Run(String),
}

impl LocalError {
    /// An I/O failure of `action` on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

impl From<LocalError> for CliError {
    fn from(err: LocalError) -> Self {
        match err {
            LocalError::Invalid { key, reason } => CliError::Config(ConfigError::Invalid {
                key: key.to_owned(),
                reason,
            }),
            other => CliError::Run(other.to_string()),
        }
    }
}

/// Who holds the lock, as far as its state file tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    /// Its pid, launch kind and start time; `None` while it has not written its state file
    /// yet (it is starting) or the file is unreadable.
    pub(crate) known: Option<(u32, LaunchKind, i64)>,
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.known {
            Some((pid, launch, since)) => {
                write!(f, "pid {pid}, {launch}, since {}", format_time(since))
            }
            None => f.write_str("held by a runner that is still starting"),
        }
    }
}

/// A Unix time as RFC 3339 (UTC), or the raw number if it is out of range.
pub(crate) fn format_time(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("@{unix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_the_rest_1() {
        let usage: CliError = LocalError::Invalid {
            key: "--runner-id",
            reason: "bad".to_owned(),
        }
        .into();
        assert_eq!(usage.exit_code(), 2);
        assert_eq!(usage.to_string(), "--runner-id: bad");
        let failed: CliError = LocalError::NotRunning.into();
        assert_eq!(failed.exit_code(), 1);
    }

    #[test]
    fn the_holder_is_named_by_pid_launch_kind_and_start() {
        let holder = Holder {
            known: Some((4242, LaunchKind::Background, 0)),
        };
        let message = LocalError::AlreadyRunning(holder).to_string();
        assert!(
            message.contains("pid 4242, background, since 1970-01-01T00:00:00Z"),
            "{message}"
        );
    }
}
