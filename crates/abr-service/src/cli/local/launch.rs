//! [`LaunchKind`]: how a local runner was started.

use serde::{Deserialize, Serialize};

/// How the runner was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LaunchKind {
    /// `abr up` in a terminal (foreground).
    Terminal,
    /// `abr up --background`: detached, logging to its log file.
    Background,
}

impl std::fmt::Display for LaunchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Terminal => "terminal",
            Self::Background => "background",
        })
    }
}
