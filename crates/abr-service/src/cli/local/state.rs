//! The state file of a running local runner: JSON next to its lock, readable and writable
//! by its owner only (mode 0600, written to a temporary file and renamed into place), so
//! `abr status` and `abr down` can find it, and only the same user can stop it.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::LocalError;
use super::error::Holder;
pub(crate) use super::launch::LaunchKind;

/// The control token of one start: whoever presents it may stop the runner. 256 bits from
/// the OS CSPRNG; never printed.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct ControlToken(String);

impl std::fmt::Debug for ControlToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlToken(<redacted>)")
    }
}

impl ControlToken {
    /// A new random token.
    ///
    /// # Errors
    /// [`LocalError::Run`] when the OS has no randomness to give.
    pub(crate) fn generate() -> Result<Self, LocalError> {
        abr_core::new_token()
            .map(Self)
            .map_err(|e| LocalError::Run(format!("cannot make a control token: {e}")))
    }

    /// The token, to send to the runner.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, compared in constant time (over digests, so the
    /// time depends on neither's length).
    pub(crate) fn matches(&self, presented: &str) -> bool {
        let ours: [u8; 32] = Sha256::digest(self.0.as_bytes()).into();
        let theirs: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        ours.ct_eq(&theirs).into()
    }
}

/// What a running local runner tells the other commands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunnerState {
    /// Its process id.
    pub(crate) pid: u32,
    /// When it started (Unix seconds).
    pub(crate) started_at: i64,
    /// The `abr` version it runs.
    pub(crate) version: String,
    /// Terminal or background.
    pub(crate) launch: LaunchKind,
    /// Its API on loopback (also its health check).
    pub(crate) url: String,
    /// Its control endpoint on loopback (`abr down`).
    pub(crate) control_url: String,
    /// The hub it links to (`None`: this machine only).
    pub(crate) hub: Option<String>,
    /// Its runner id.
    pub(crate) runner_id: String,
    /// Whether the capture browser is headless too (`--headless`).
    pub(crate) headless: bool,
    /// Its log file (a background runner's; `None` in a terminal).
    pub(crate) log: Option<PathBuf>,
    /// The token its control endpoint takes.
    pub(crate) control_token: ControlToken,
}

impl RunnerState {
    /// Writes the state to `path`, mode 0600, atomically.
    ///
    /// # Errors
    /// [`LocalError::Io`] when it cannot be written.
    pub(crate) fn write(&self, path: &Path) -> Result<(), LocalError> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| LocalError::Run(format!("cannot encode the state file: {e}")))?;
        write_private(path, &json)
    }

    /// Reads the state at `path`: `None` when there is none.
    ///
    /// # Errors
    /// [`LocalError::Io`] when it cannot be read, [`LocalError::Run`] when it is not a
    /// state file.
    pub(crate) fn read(path: &Path) -> Result<Option<Self>, LocalError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LocalError::io("read", path, e)),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            LocalError::Run(format!(
                "{} is not a runner state file (line {}, column {})",
                path.display(),
                e.line(),
                e.column()
            ))
        })
    }

    /// Removes the state file at `path`, if any.
    pub(crate) fn remove(path: &Path) {
        if let Err(e) = std::fs::remove_file(path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the state file");
        }
    }
}

impl Holder {
    /// The holder described by `state`.
    pub(crate) fn from_state(state: Option<&RunnerState>) -> Self {
        Self {
            known: state.map(|s| (s.pid, s.launch, s.started_at)),
        }
    }
}

/// Writes `bytes` to `path` readable and writable by its owner only (`0600`), atomically
/// (a temporary file renamed over it), synced.
///
/// # Errors
/// [`LocalError::Io`].
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), LocalError> {
    let tmp = path.with_extension("json.tmp");
    let io = |e| LocalError::io("write", &tmp, e);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    // A left-over temporary file keeps its mode on open: make sure.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| LocalError::io("write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(token: ControlToken) -> RunnerState {
        RunnerState {
            pid: 42,
            started_at: 1_700_000_000,
            version: "0.0.0".to_owned(),
            launch: LaunchKind::Background,
            url: "http://127.0.0.1:1".to_owned(),
            control_url: "http://127.0.0.1:2".to_owned(),
            hub: None,
            runner_id: "host".to_owned(),
            headless: true,
            log: Some(PathBuf::from("/tmp/x.log")),
            control_token: token,
        }
    }

    #[test]
    fn the_state_file_round_trips_and_only_its_owner_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner-local.json");
        assert!(RunnerState::read(&path).unwrap().is_none());
        let token = ControlToken::generate().unwrap();
        state(token.clone()).write(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let read = RunnerState::read(&path).unwrap().unwrap();
        assert_eq!(read.pid, 42);
        assert_eq!(read.launch, LaunchKind::Background);
        assert!(read.control_token.matches(token.expose()));
        RunnerState::remove(&path);
        assert!(RunnerState::read(&path).unwrap().is_none());
        std::fs::write(&path, b"{not json").unwrap();
        let err = RunnerState::read(&path).unwrap_err().to_string();
        assert!(err.contains("not a runner state file"), "{err}");
    }

    #[test]
    fn the_control_token_never_prints_and_matches_only_itself() {
        let token = ControlToken::generate().unwrap();
        assert!(token.expose().len() >= 32);
        assert!(!format!("{token:?}").contains(token.expose()));
        assert!(!format!("{:?}", state(token.clone())).contains(token.expose()));
        assert!(token.matches(token.expose()));
        assert!(!token.matches(""));
        assert!(!token.matches(&token.expose()[1..]));
        assert!(!token.matches(&ControlToken::generate().unwrap().0));
    }
}
