//! `abr session ...`: commands on stored browser sessions.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use abr_core::SessionScope;
use abr_protocol::{AgentSessionState, PlatformPolicy, SessionScopeSpec};
use clap::{Args, Subcommand};

use super::error::{CliError, Input, JsonDetail, Role};

/// Shown after `abr session filter --help`.
const FILTER_AFTER_HELP: &str = "\
Scope file (--scope):
  a session scope:
    {\"cookieDomains\": [\"example.com\", \"localhost\"], \"origins\": [\"https://app.example.com\"]}
  or a platform policy, recognised by a top-level \"session\" key (only \"session\" is used):
    {\"allowUnattended\": true, \"session\": {\"cookieDomains\": [...], \"origins\": [...]}}
  cookieDomains: at least one; bare domains, \"localhost\" or IP addresses, no scheme, port,
    path, wildcard or public suffix (\"com\", \"co.uk\"). A domain also covers its subdomains;
    localhost and IP addresses match exactly. A cookie whose own domain is a public suffix is
    always dropped.
  origins: exact http(s) origins (scheme, host, port); empty or absent drops all localStorage.

Output:
  stdout  the filtered storageState, pretty-printed JSON
  stderr  one line of JSON with counts only, never names or values:
          {\"keptCookies\":1,\"keptOrigins\":1,\"dropped\":{\"cookieOutOfScope\":2}}
          dropped reasons: cookieOutOfScope, cookiePublicSuffix, cookieInvalidDomain,
          originOutOfScope, originInvalid, unscopedField

Exit codes:
  0  success
  1  the output could not be written (e.g. closed pipe)
  2  usage error, unreadable file, malformed JSON, wrong types or invalid scope;
     one line \"abr: error: ...\" on stderr and nothing on stdout

Example:
  abr session filter --scope scope.json state.json > scoped.json";

/// `abr session <command>`.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionCommand {
    /// Reduce a storageState to the cookies and localStorage origins a scope allows.
    ///
    /// Reads a Playwright storageState (as written by `context.storageState()`), keeps the
    /// cookies whose domain is inside an allowed cookie domain and the origins that exactly
    /// equal an allowed origin, and drops everything else, including top-level fields that
    /// cannot be attributed to a domain (such as `credentials`). Kept items are copied
    /// unchanged: a host-only cookie stays host-only, unknown per-cookie and per-origin fields
    /// (`partitionKey`, `indexedDB`, ...) are preserved.
    #[command(after_help = FILTER_AFTER_HELP)]
    Filter(FilterArgs),
}

impl SessionCommand {
    /// Runs the selected session command.
    pub(crate) fn run(self) -> Result<(), CliError> {
        match self {
            Self::Filter(args) => args.run(),
        }
    }
}

/// Arguments of `abr session filter`.
#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// Session scope file (JSON): a session scope, or a platform policy with a top-level
    /// "session" key (see "Scope file" below).
    #[arg(long, value_name = "SCOPE.json")]
    pub(crate) scope: PathBuf,

    /// Playwright storageState to filter; read from stdin when absent or "-".
    #[arg(value_name = "STATE.json")]
    pub(crate) state: Option<PathBuf>,
}

impl FilterArgs {
    /// Reads, filters and writes: the filtered state on stdout, the report on stderr.
    ///
    /// Everything that can fail on input happens before the first byte is written, so on an
    /// input error stdout stays empty.
    pub(crate) fn run(self) -> Result<(), CliError> {
        let scope_input = Input::file(Role::Scope, self.scope);
        let scope = load_scope(&scope_input)?;

        let state_input = match self.state {
            Some(path) if path.as_os_str() != "-" => Input::file(Role::State, path),
            _ => Input::stdin(Role::State),
        };
        let state = load_state(&state_input)?;

        let (output, report) = filter_to_text(&scope, &state)?;

        let mut stdout = io::stdout().lock();
        stdout
            .write_all(output.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|source| CliError::Write {
                stream: "stdout",
                source,
            })?;
        let mut stderr = io::stderr().lock();
        stderr
            .write_all(report.as_bytes())
            .and_then(|()| stderr.flush())
            .map_err(|source| CliError::Write {
                stream: "stderr",
                source,
            })
    }
}

/// Filters `state` and renders the results: the state as pretty JSON and the report as one
/// line of JSON, each ending in a newline.
pub(crate) fn filter_to_text(
    scope: &SessionScope,
    state: &AgentSessionState,
) -> Result<(String, String), CliError> {
    let (filtered, report) = scope.filter(state);
    let mut output =
        serde_json::to_string_pretty(&filtered).map_err(|err| CliError::Serialize {
            what: "state",
            detail: JsonDetail::new(&err),
        })?;
    output.push('\n');
    let mut report = serde_json::to_string(&report).map_err(|err| CliError::Serialize {
        what: "report",
        detail: JsonDetail::new(&err),
    })?;
    report.push('\n');
    Ok((output, report))
}

/// Reads and validates the scope file: a [`SessionScopeSpec`], or a [`PlatformPolicy`] when
/// the top-level object has a `session` key.
pub(crate) fn load_scope(input: &Input) -> Result<SessionScope, CliError> {
    let bytes = read_input(input)?;
    // First pass: is it JSON at all, and which shape? Second pass: the typed parse, from the
    // bytes, so that errors carry a line and column.
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|err| CliError::json(input.clone(), "scope", &err))?;
    let Some(object) = value.as_object() else {
        // serde would also accept a struct written as an array (`[["example.com"], []]`):
        // a scope file is an object, say so.
        return Err(CliError::Shape {
            input: input.clone(),
            expected: "scope",
            detail: JsonDetail {
                message: format!(
                    "expected a JSON object at the top level, found {}",
                    json_kind(&value)
                ),
                line: 0,
                column: 0,
            },
        });
    };
    let is_policy = object.contains_key("session");
    if is_policy && (object.contains_key("cookieDomains") || object.contains_key("origins")) {
        // A policy ignores unknown keys: a top-level scope next to "session" would be
        // silently unused. Say so instead.
        return Err(CliError::MixedScope {
            input: input.clone(),
        });
    }
    let spec = if is_policy {
        let policy: PlatformPolicy = serde_json::from_slice(&bytes)
            .map_err(|err| CliError::json(input.clone(), "platform policy", &err))?;
        policy.session.ok_or_else(|| CliError::NoSessionScope {
            input: input.clone(),
        })?
    } else {
        serde_json::from_slice::<SessionScopeSpec>(&bytes)
            .map_err(|err| CliError::json(input.clone(), "session scope", &err))?
    };
    SessionScope::new(&spec).map_err(|source| CliError::InvalidScope {
        input: input.clone(),
        source,
    })
}

/// Reads and parses the storageState.
pub(crate) fn load_state(input: &Input) -> Result<AgentSessionState, CliError> {
    let bytes = read_input(input)?;
    serde_json::from_slice(&bytes)
        .map_err(|err| CliError::json(input.clone(), "storageState", &err))
}

/// The whole content of a file, or of stdin.
fn read_input(input: &Input) -> Result<Vec<u8>, CliError> {
    let read = match &input.path {
        Some(path) => std::fs::read(path),
        None => {
            let mut bytes = Vec::new();
            io::stdin().lock().read_to_end(&mut bytes).map(|_| bytes)
        }
    };
    read.map_err(|source| CliError::Read {
        input: input.clone(),
        source,
    })
}

/// The JSON type of `value`, for messages (never the value itself).
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
