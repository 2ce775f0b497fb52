//! A remote update of `abr up`: the hub asks (`POST /v1/runners/{id}/update`), the runner
//! reads the version of the release installed where its own binary is (`<binary>
//! --version`), and when it is newer, drains (running work finishes) and restarts on it in
//! the same process (`exec`) with the same flags. An older release is refused (no
//! downgrade), the same one is nothing to do; either way the hub hears the answer.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::cli::local::link::Shutdown;
use crate::relay::link::UpdateHandler;

/// Longest the installed binary may take to say its version.
const VERSION_WAIT: Duration = Duration::from_secs(10);

/// Where a runner that accepted an update restarts from, once it stopped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Restart(Arc<Mutex<Option<PathBuf>>>);

impl Restart {
    /// The binary to restart on, if an update was accepted.
    pub(crate) fn take(&self) -> Option<PathBuf> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn set(&self, binary: PathBuf) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(binary);
    }
}

/// The runner's answer to the hub's update.
pub(crate) struct Updater {
    /// The binary this runner was started from: where a newer release is installed.
    pub(crate) binary: PathBuf,
    /// This runner's version.
    pub(crate) running: semver::Version,
    /// Drains the runner when an update is accepted.
    pub(crate) shutdown: watch::Sender<Shutdown>,
    /// Set when an update is accepted.
    pub(crate) restart: Restart,
}

impl UpdateHandler for Updater {
    fn update(&self) -> (bool, String) {
        let installed = match installed_version(&self.binary) {
            Ok(version) => version,
            Err(why) => {
                return (
                    false,
                    format!(
                        "the release installed at {} cannot be read: {why}",
                        self.binary.display()
                    ),
                );
            }
        };
        let running = &self.running;
        match installed.cmp(running) {
            std::cmp::Ordering::Greater => {
                self.restart.set(self.binary.clone());
                self.shutdown
                    .send_if_modified(|s| s.advance(Shutdown::Drain));
                (
                    true,
                    format!(
                        "restarting on {installed} (from {running}) with the same flags once \
                         its running work finished"
                    ),
                )
            }
            std::cmp::Ordering::Equal => (
                false,
                format!("the installed release is {installed}, the one running: nothing to do"),
            ),
            std::cmp::Ordering::Less => (
                false,
                format!(
                    "the installed release {installed} is older than the running {running}: \
                     no downgrade"
                ),
            ),
        }
    }
}

/// The version `binary --version` prints (`abr 0.2.0`), within [`VERSION_WAIT`].
fn installed_version(binary: &Path) -> Result<semver::Version, String> {
    let mut child = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + VERSION_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("it did not say its version in time".into());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

/// The version in `abr --version`'s answer: its last word.
fn parse_version(said: &str) -> Result<semver::Version, String> {
    let word = said
        .split_whitespace()
        .last()
        .ok_or("it printed no version")?;
    semver::Version::parse(word).map_err(|_| "it printed no version".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_last_word_of_the_answer() {
        assert_eq!(
            parse_version("abr 0.2.0\n"),
            Ok(semver::Version::new(0, 2, 0))
        );
        assert!(parse_version("").is_err());
        assert!(parse_version("abr version unknown").is_err());
    }

    fn updater(script: &str) -> (tempfile::TempDir, Updater, watch::Receiver<Shutdown>) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let binary = dir.path().join("abr");
        std::fs::write(&binary, script).unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let (shutdown, stopping) = watch::channel(Shutdown::Running);
        let updater = Updater {
            binary,
            running: semver::Version::new(0, 1, 0),
            shutdown,
            restart: Restart::default(),
        };
        (dir, updater, stopping)
    }

    #[test]
    fn a_newer_release_drains_to_restart_and_an_older_or_the_same_is_refused() {
        let (_dir, newer, stopping) = updater("#!/bin/sh\necho abr 0.2.0\n");
        let (accepted, said) = newer.update();
        assert!(accepted, "{said}");
        assert!(said.contains("0.2.0 (from 0.1.0)"), "{said}");
        assert_eq!(*stopping.borrow(), Shutdown::Drain);
        assert_eq!(newer.restart.take(), Some(newer.binary));

        let (_dir, older, stopping) = updater("#!/bin/sh\necho abr 0.0.9\n");
        let (accepted, said) = older.update();
        assert!(!accepted && said.contains("no downgrade"), "{said}");
        assert_eq!(*stopping.borrow(), Shutdown::Running, "it keeps running");
        assert_eq!(older.restart.take(), None);

        let (_dir, same, _) = updater("#!/bin/sh\necho abr 0.1.0\n");
        assert!(!same.update().0);
        let (_dir, broken, _) = updater("#!/bin/sh\nexit 3\n");
        let (accepted, said) = broken.update();
        assert!(!accepted && said.contains("cannot be read"), "{said}");
    }
}
