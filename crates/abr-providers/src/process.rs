//! [`BrowserProcess`]: the Chromium process behind a browser this provider launched, found
//! by a switch of its own on the command line (`--abr-browser=<mark>`; Chromium ignores a
//! switch it does not know, and its child processes do not carry it).
//!
//! Playwright talks to its browser over a pipe and never gives the process out; a browser
//! that stops answering (frozen, a half-open connection) answers no close either. The
//! provider then ends it by its process: [`BrowserProcess::kill`]. The chaos layer freezes,
//! thaws and kills it on purpose ([`FaultTarget`](abr_core::chaos::FaultTarget)).
//!
//! A killed Chromium leaves what it removes only on a clean exit (its singleton folder,
//! `org.chromium.Chromium.*`, in its `TMPDIR`): each browser gets a temporary folder of its
//! own ([`BrowserProcess::temp_dir`]), and a [`BrowserTemp`] removes such a folder once the
//! browser is gone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::process::{Pid, Signal, kill_process};

const SWITCH: &str = "--abr-browser=";

/// The name of a browser's own temporary folder, before its mark.
const TEMP_PREFIX: &str = "abr-br-";

/// The Chromium process of one launched browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserProcess {
    mark: String,
}

impl BrowserProcess {
    /// A mark no other browser on this machine carries: this process's id, a count, and the
    /// time's low bits (a reused process id of an earlier runner cannot collide), in hex and
    /// short: it names the browser's temporary folder, and Chromium's singleton socket lives
    /// in there, under the 107 bytes a Unix socket's path may have (a longer `TMPDIR` made
    /// full Chromium fail at launch: found by the soak, whose runners' `TMPDIR` is deep).
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Self {
            mark: format!(
                "{:x}{:x}{:x}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed),
                nanos & 0xffff
            ),
        }
    }

    /// The switch that marks the browser's command line.
    pub(crate) fn switch(&self) -> String {
        format!("{SWITCH}{}", self.mark)
    }

    /// The browser's own temporary folder, `abr-br-<mark>` in this process's temp dir:
    /// the local provider launches it with this folder as its `TMPDIR` and removes the
    /// folder, with what a killed Chromium left in it (its `org.chromium.Chromium.*`
    /// singleton folder), once the browser is gone. A profile's browser has none (Playwright
    /// takes no environment for a persistent context): only its singleton folder is removed.
    pub fn temp_dir(&self) -> PathBuf {
        std::env::temp_dir().join(format!("{TEMP_PREFIX}{}", self.mark))
    }

    /// The browser process's id, while it runs (its children, `--type=...`, are not it).
    pub fn pid(&self) -> Option<Pid> {
        let switch = self.switch();
        let entries = std::fs::read_dir("/proc").ok()?;
        entries.flatten().find_map(|entry| {
            let id: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let mut args = cmdline
                .split(|b| *b == 0)
                .map(|a| std::str::from_utf8(a).unwrap_or(""));
            let (mut marked, mut child) = (false, false);
            for arg in &mut args {
                marked |= arg == switch;
                child |= arg.starts_with("--type=");
            }
            (marked && !child).then(|| Pid::from_raw(id)).flatten()
        })
    }

    fn signal(&self, signal: Signal) -> bool {
        self.pid()
            .is_some_and(|pid| kill_process(pid, signal).is_ok())
    }

    /// Ends the browser at once (`SIGKILL`; a frozen one too). Its children follow it, and
    /// Playwright sees the browser disconnected. `false`: it was not running.
    pub fn kill(&self) -> bool {
        self.signal(Signal::KILL)
    }

    /// Stops the browser (`SIGSTOP`): its connection stays open and nothing answers.
    pub fn freeze(&self) -> bool {
        self.signal(Signal::STOP)
    }

    /// Lets a frozen browser run again (`SIGCONT`).
    pub fn thaw(&self) -> bool {
        self.signal(Signal::CONT)
    }
}

/// A temporary folder one browser writes to, removed when this guard is dropped (best
/// effort, errors ignored), once the browser's process is gone: at once if it is (or
/// without a tokio runtime to wait in), else by a task that waits for it, up to
/// [`GONE_WAIT`]. Removing a folder a dying process still writes to is harmless.
#[derive(Debug)]
pub(crate) struct BrowserTemp {
    path: PathBuf,
}

impl BrowserTemp {
    /// Creates `process`'s own temporary folder ([`BrowserProcess::temp_dir`], mode 0700).
    pub(crate) async fn create(process: &BrowserProcess) -> std::io::Result<Self> {
        let path = process.temp_dir();
        tokio::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .await?;
        Ok(Self { path })
    }

    /// The folder the browser of the profile folder `profile` made for its singleton socket
    /// (`org.chromium.Chromium.*` in the temp dir), found by the `SingletonSocket` link it
    /// keeps in the profile while it runs. `None`: no such link (a headless shell makes
    /// none), or it does not point into a folder of its own right in this process's temp
    /// dir (nothing else is removed).
    pub(crate) fn singleton_of(profile: &Path) -> Option<Self> {
        let socket = std::fs::read_link(profile.join("SingletonSocket")).ok()?;
        let folder = socket.parent()?;
        let own = socket.file_name()? == "SingletonSocket"
            && folder.parent()? == std::env::temp_dir()
            && folder.is_dir();
        own.then(|| Self {
            path: folder.to_path_buf(),
        })
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for BrowserTemp {
    /// Removes the folder at once, also when the browser still runs (one being killed, or
    /// left to the driver's exit): Chromium makes its singleton folder at start-up only, and
    /// a removal deferred to a task or a thread dies with the runtime or the process that
    /// would run it (a test's end left folders behind that way).
    fn drop(&mut self) {
        remove(&std::mem::take(&mut self.path));
    }
}

/// Removes `path` and what it holds, ignoring errors (gone already, say).
fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!(error = %e, path = %path.display(), "a browser's temporary folder stays");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_unique_and_a_mark_nobody_carries_finds_no_process() {
        let (a, b) = (BrowserProcess::new(), BrowserProcess::new());
        assert_ne!(a, b);
        assert!(a.switch().starts_with("--abr-browser="));
        // Chromium's singleton socket goes in this folder: a Unix socket's path has at most
        // 107 bytes, so the folder's name is kept short.
        let name = a.temp_dir().file_name().map(|n| n.len()).unwrap_or(0);
        assert!(name <= 24, "{name} bytes: {:?}", a.temp_dir());
        assert_eq!(a.pid(), None);
        assert!(!a.kill() && !a.freeze() && !a.thaw());
    }

    #[test]
    fn finds_a_marked_process_but_not_its_children_and_kills_it() {
        let mark = BrowserProcess::new();
        // `sleep` ignores nothing it is given: a marked command line of our own.
        let mut marked = std::process::Command::new("sh")
            .args(["-c", "sleep 30; true", "sh", &mark.switch()])
            .spawn()
            .expect("sh runs");
        let child = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 30; true",
                "sh",
                &mark.switch(),
                "--type=renderer",
            ])
            .spawn()
            .expect("sh runs");
        let found = mark.pid().map(Pid::as_raw_nonzero);
        let expected = i32::try_from(marked.id()).ok();
        assert_eq!(found.map(|p| p.get()), expected);
        assert!(mark.kill());
        assert!(
            marked.wait().expect("waited").code().is_none(),
            "killed by a signal"
        );
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(mark.pid(), None);
    }

    #[tokio::test]
    async fn a_browsers_own_folder_is_private_and_goes_with_its_guard() {
        use std::os::unix::fs::PermissionsExt as _;

        let process = BrowserProcess::new();
        let temp = BrowserTemp::create(&process).await.expect("created");
        let folder = process.temp_dir();
        assert_eq!(temp.path(), folder);
        assert!(
            folder
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(TEMP_PREFIX))
        );
        let mode = std::fs::metadata(&folder)
            .expect("there")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        // What a killed Chromium leaves: its singleton folder, with a socket.
        let singleton = folder.join("org.chromium.Chromium.abc123");
        std::fs::create_dir(&singleton).expect("created");
        std::fs::write(singleton.join("SingletonCookie"), "1").expect("written");
        // A second browser with the same mark cannot get the folder.
        assert!(BrowserTemp::create(&process).await.is_err());
        // No process carries the mark: removed at once.
        drop(temp);
        assert!(!folder.exists());
    }

    #[tokio::test]
    async fn a_profiles_singleton_folder_is_found_only_right_in_the_temp_dir() {
        let profile = tempfile::tempdir().expect("created");
        assert!(BrowserTemp::singleton_of(profile.path()).is_none());

        let singleton = tempfile::Builder::new()
            .prefix("org.chromium.Chromium.")
            .tempdir()
            .expect("created")
            .keep();
        let link = profile.path().join("SingletonSocket");
        std::os::unix::fs::symlink(singleton.join("SingletonSocket"), &link).expect("linked");
        let found = BrowserTemp::singleton_of(profile.path()).expect("found");
        assert_eq!(found.path(), singleton);
        drop(found);
        assert!(!singleton.exists());

        // A link into anything else than a folder of its own in the temp dir is left alone.
        let elsewhere = profile.path().join("nested");
        std::fs::create_dir(&elsewhere).expect("created");
        std::fs::remove_file(&link).expect("removed");
        std::os::unix::fs::symlink(elsewhere.join("SingletonSocket"), &link).expect("linked");
        assert!(BrowserTemp::singleton_of(profile.path()).is_none());
        std::fs::remove_file(&link).expect("removed");
        std::os::unix::fs::symlink(std::env::temp_dir().join("SingletonSocket"), &link)
            .expect("linked");
        assert!(BrowserTemp::singleton_of(profile.path()).is_none());
        assert!(elsewhere.exists());
    }
}
