//! [`LaunchKind`]: how a local runner was started.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// How the runner was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LaunchKind {
    /// `abr up` in a terminal (foreground).
    Terminal,
    /// `abr up --background`: detached, logging to its log file.
    Background,
    /// `abr up` in a tmux pane (foreground there: its log is the pane).
    Tmux,
    /// `abr up` run by a service manager (a systemd unit: its log is the journal).
    Service,
}

impl LaunchKind {
    /// How a foreground `abr up` was started, from its environment: in a tmux pane
    /// (`TMUX`), by systemd (`INVOCATION_ID`, which it sets for every unit it starts),
    /// else a terminal.
    pub(crate) fn detect(env: &HashMap<String, String>) -> Self {
        let set = |name: &str| env.get(name).is_some_and(|v| !v.is_empty());
        if set("TMUX") {
            Self::Tmux
        } else if set("INVOCATION_ID") {
            Self::Service
        } else {
            Self::Terminal
        }
    }
}

impl std::fmt::Display for LaunchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Terminal => "terminal",
            Self::Background => "background",
            Self::Tmux => "tmux",
            Self::Service => "service",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::env_of as env;

    #[test]
    fn a_foreground_start_is_told_apart_by_its_environment() {
        assert_eq!(LaunchKind::detect(&env(&[])), LaunchKind::Terminal);
        let tmux = ("TMUX", "/tmp/tmux-0/default,4242,0");
        assert_eq!(LaunchKind::detect(&env(&[tmux])), LaunchKind::Tmux);
        let unit = ("INVOCATION_ID", "0f1e2d3c4b5a69788796a5b4c3d2e1f0");
        assert_eq!(LaunchKind::detect(&env(&[unit])), LaunchKind::Service);
        // A service that runs tmux is a tmux pane as far as its user can see.
        assert_eq!(LaunchKind::detect(&env(&[unit, tmux])), LaunchKind::Tmux);
        assert_eq!(
            LaunchKind::detect(&env(&[("TMUX", "")])),
            LaunchKind::Terminal
        );
        for kind in [
            LaunchKind::Terminal,
            LaunchKind::Background,
            LaunchKind::Tmux,
            LaunchKind::Service,
        ] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
        }
    }
}
