//! [`CliError`]: everything a command can fail with, as one safe line of text.
//!
//! Input files hold credentials (cookie and localStorage values), so no message here may
//! contain a string taken from an input's values. In particular a raw `serde_json::Error` is
//! never stored or printed: `invalid type: string "<value>"` quotes the value. [`JsonDetail`]
//! keeps serde's category, a sanitised message and the line/column instead.

use std::fmt;

pub(crate) use crate::json_detail::{JsonDetail, single_line};
use std::io;
use std::path::PathBuf;

use abr_core::ScopeError;

/// A command failure. Its `Display` is the text after `abr: error: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// An input file (or stdin) could not be read.
    #[error("cannot read {input:#}: {source}")]
    Read {
        /// What was being read.
        input: Input,
        /// The I/O error (names no file content).
        source: io::Error,
    },
    /// An input is not well-formed JSON.
    #[error("{input} is not valid JSON: {detail}")]
    Syntax {
        /// What was being parsed.
        input: Input,
        /// Where and why, without input values.
        detail: JsonDetail,
    },
    /// An input is JSON of the wrong shape (wrong types, missing or unknown fields).
    #[error("{input} is not a valid {expected}: {detail}")]
    Shape {
        /// What was being parsed.
        input: Input,
        /// What it should have been (`storageState`, `session scope`, ...).
        expected: &'static str,
        /// Where and why, without input values.
        detail: JsonDetail,
    },
    /// The scope parsed but was rejected by [`abr_core::SessionScope::new`].
    #[error("invalid scope in {input}: {source}")]
    InvalidScope {
        /// The scope file.
        input: Input,
        /// Why it was rejected (names the offending scope entry: configuration, not a secret).
        source: ScopeError,
    },
    /// A platform policy whose `session` is `null`: there is no scope to filter with.
    #[error(
        "{input} is a platform policy without a session scope (\"session\" is null): give \
         {{\"session\": {{\"cookieDomains\": [...], \"origins\": [...]}}}}"
    )]
    NoSessionScope {
        /// The scope file.
        input: Input,
    },
    /// A top-level `session` key next to top-level `cookieDomains`/`origins`.
    #[error(
        "{input} mixes a platform policy (top-level \"session\") with a top-level \
         \"cookieDomains\"/\"origins\": give either a session scope or a policy whose scope is \
         under \"session\""
    )]
    MixedScope {
        /// The scope file.
        input: Input,
    },
    /// The filtered state could not be serialized.
    #[error("cannot serialize the filtered {what}: {detail}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// Why, without values.
        detail: JsonDetail,
    },
    /// The runner's configuration is unusable.
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// The runner or the demo could not run.
    #[error("{0}")]
    Run(String),
    /// Writing the result failed (closed pipe, full disk, ...).
    #[error("cannot write to {stream}: {source}")]
    Write {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The I/O error.
        source: io::Error,
    },
}

/// The broad class of a [`CliError`], which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The caller's input is unreadable, malformed or invalid: exit code 2, like a usage
    /// error.
    Input,
    /// The input was fine but the result could not be produced or written: exit code 1.
    Output,
}

impl CliError {
    /// The class of this error.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            Self::Read { .. }
            | Self::Syntax { .. }
            | Self::Shape { .. }
            | Self::InvalidScope { .. }
            | Self::NoSessionScope { .. }
            | Self::MixedScope { .. }
            | Self::Config(_) => ErrorKind::Input,
            Self::Serialize { .. } | Self::Write { .. } | Self::Run(_) => ErrorKind::Output,
        }
    }

    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        match self.kind() {
            ErrorKind::Input => 2,
            ErrorKind::Output => 1,
        }
    }

    /// A JSON parse failure of `input`, classified as a syntax or shape error.
    pub(crate) fn json(input: Input, expected: &'static str, err: &serde_json::Error) -> Self {
        let detail = JsonDetail::new(err);
        match err.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                Self::Syntax { input, detail }
            }
            serde_json::error::Category::Data | serde_json::error::Category::Io => Self::Shape {
                input,
                expected,
                detail,
            },
        }
    }
}

/// Which input a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The `--scope` file.
    Scope,
    /// The storageState to filter.
    State,
}

impl Role {
    fn noun(self) -> &'static str {
        match self {
            Self::Scope => "scope",
            Self::State => "state",
        }
    }
}

/// An input: a file or stdin, in a role.
///
/// `Display` gives its name (the path as given, or `stdin`); the alternate form (`{:#}`)
/// adds the role: `scope file scope.json`, `state from stdin`. Control characters in paths
/// are escaped so a message always stays on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Input {
    /// What the input is for.
    pub(crate) role: Role,
    /// Where it comes from: a path, or `None` for stdin.
    pub(crate) path: Option<PathBuf>,
}

impl Input {
    /// A file input.
    pub(crate) fn file(role: Role, path: PathBuf) -> Self {
        Self {
            role,
            path: Some(path),
        }
    }

    /// Standard input.
    pub(crate) fn stdin(role: Role) -> Self {
        Self { role, path: None }
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = self.role.noun();
        match (&self.path, f.alternate()) {
            (Some(path), false) => f.write_str(&single_line(&path.display().to_string())),
            (Some(path), true) => {
                write!(
                    f,
                    "{noun} file {}",
                    single_line(&path.display().to_string())
                )
            }
            (None, false) => f.write_str("stdin"),
            (None, true) => write!(f, "{noun} from stdin"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_names_stay_on_one_line() {
        let input = Input::file(Role::Scope, PathBuf::from("a\nb.json"));
        assert_eq!(input.to_string(), "a\\nb.json");
        assert_eq!(format!("{input:#}"), "scope file a\\nb.json");
        assert_eq!(
            format!("{:#}", Input::stdin(Role::State)),
            "state from stdin"
        );
    }
}
