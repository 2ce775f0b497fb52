//! Launching a real, local, headless Chromium with remote debugging on an ephemeral port.
//!
//! [`LocalChromium`] owns the browser process and a fresh temporary directory that holds the
//! user-data-dir and the process' stderr log. The process is killed (and waited for, so no
//! zombie is left) by [`LocalChromium::kill`] or on drop; the directory is deleted on drop.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Environment variable that overrides the default Chromium binary.
pub const CHROMIUM_ENV: &str = "ABR_DOUBLES_CHROMIUM";

/// The command that installs the default binary on Debian.
pub const INSTALL_HINT: &str = "apt-get install -y chromium-headless-shell";

/// Binaries tried, in order, when none is configured.
const DEFAULT_CANDIDATES: &[&str] = &[
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
];

/// Flags every launch gets (root, headless, offline, light).
const BASE_FLAGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--mute-audio",
    "--password-store=basic",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// Errors from launching Chromium.
#[derive(Debug, thiserror::Error)]
pub enum ChromiumError {
    /// The configured (or default) binary does not exist.
    #[error(
        "Chromium binary not found at {path}; install it with `{INSTALL_HINT}` (or set {CHROMIUM_ENV})"
    )]
    NotFound {
        /// Path that was looked up.
        path: PathBuf,
    },
    /// Creating the temporary directory or log file failed.
    #[error("could not prepare Chromium's temporary directory: {0}")]
    TempDir(#[source] std::io::Error),
    /// Spawning the process failed.
    #[error("could not spawn Chromium at {path}: {source}")]
    Spawn {
        /// Binary that failed to start.
        path: PathBuf,
        /// Underlying OS error.
        #[source]
        source: std::io::Error,
    },
    /// The process exited before writing `DevToolsActivePort`.
    #[error("Chromium exited early with {status}; stderr tail:\n{log_tail}")]
    Exited {
        /// Exit status.
        status: ExitStatus,
        /// Last part of Chromium's stderr.
        log_tail: String,
    },
    /// `DevToolsActivePort` did not appear in time.
    #[error("Chromium did not report a DevTools port within {after:?}; stderr tail:\n{log_tail}")]
    Timeout {
        /// How long we waited.
        after: Duration,
        /// Last part of Chromium's stderr.
        log_tail: String,
    },
}

/// How to launch a [`LocalChromium`].
#[derive(Debug, Clone)]
pub struct ChromiumOptions {
    /// Binary to run. `None`: `$ABR_DOUBLES_CHROMIUM`, else the Debian headless shell
    /// (`/usr/lib/chromium/chromium-headless-shell`), else the full Chromium with
    /// `--headless=new`. (`/usr/bin/chromium-headless-shell` is a non-`exec`ing shell wrapper, so
    /// the real binary is used instead.)
    pub binary: Option<PathBuf>,
    /// Extra command-line flags appended after the defaults.
    pub extra_args: Vec<String>,
    /// `--window-size=W,H` when set.
    pub window_size: Option<(u32, u32)>,
    /// URL the first tab opens (default `about:blank`).
    pub initial_url: String,
    /// How long to wait for `DevToolsActivePort`.
    pub startup_timeout: Duration,
}

impl Default for ChromiumOptions {
    fn default() -> Self {
        Self {
            binary: None,
            extra_args: Vec::new(),
            window_size: None,
            initial_url: "about:blank".to_owned(),
            startup_timeout: Duration::from_secs(20),
        }
    }
}

impl ChromiumOptions {
    /// The binary a launch with these options would use (no existence check for explicit paths).
    pub fn resolved_binary(&self) -> PathBuf {
        if let Some(b) = &self.binary {
            return b.clone();
        }
        if let Some(env) = std::env::var_os(CHROMIUM_ENV).filter(|v| !v.is_empty()) {
            return PathBuf::from(env);
        }
        DEFAULT_CANDIDATES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CANDIDATES[0]))
    }
}

/// A running local Chromium with remote debugging on `127.0.0.1:<ephemeral port>`.
#[derive(Debug)]
pub struct LocalChromium {
    child: Option<Child>,
    pid: u32,
    port: u16,
    ws_path: String,
    binary: PathBuf,
    dir: Option<TempDir>,
}

impl LocalChromium {
    /// Launches Chromium and waits (bounded by `opts.startup_timeout`) until its DevTools
    /// endpoint is announced in `DevToolsActivePort`.
    pub async fn launch(opts: &ChromiumOptions) -> Result<Self, ChromiumError> {
        let binary = opts.resolved_binary();
        if !binary.is_file() {
            return Err(ChromiumError::NotFound { path: binary });
        }
        let dir = tempfile::Builder::new()
            .prefix("abr-doubles-chromium-")
            .tempdir()
            .map_err(ChromiumError::TempDir)?;
        let profile = dir.path().join("profile");
        std::fs::create_dir(&profile).map_err(ChromiumError::TempDir)?;
        let log_path = dir.path().join("chromium.log");
        let log = File::create(&log_path).map_err(ChromiumError::TempDir)?;

        let mut cmd = Command::new(&binary);
        cmd.args(BASE_FLAGS);
        if !is_headless_shell(&binary) {
            cmd.arg("--headless=new");
        }
        cmd.arg(format!("--user-data-dir={}", profile.display()));
        if let Some((w, h)) = opts.window_size {
            cmd.arg(format!("--window-size={w},{h}"));
        }
        cmd.args(&opts.extra_args);
        cmd.arg(&opts.initial_url);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        // Own process group, so `kill` can sweep helper processes (and wrapper scripts' children).
        cmd.process_group(0);
        let child = cmd.spawn().map_err(|source| ChromiumError::Spawn {
            path: binary.clone(),
            source,
        })?;
        let pid = child.id();
        let mut me = Self {
            child: Some(child),
            pid,
            port: 0,
            ws_path: String::new(),
            binary,
            dir: Some(dir),
        };

        let started = Instant::now();
        let active_port = profile.join("DevToolsActivePort");
        loop {
            if let Some((port, path)) = read_active_port(&active_port) {
                me.port = port;
                me.ws_path = path;
                tracing::debug!(pid, port, "local chromium ready");
                return Ok(me);
            }
            if let Some(status) = me.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                me.child = None;
                return Err(ChromiumError::Exited {
                    status,
                    log_tail: log_tail(&log_path),
                });
            }
            if started.elapsed() >= opts.startup_timeout {
                let log_tail = log_tail(&log_path);
                me.kill();
                return Err(ChromiumError::Timeout {
                    after: opts.startup_timeout,
                    log_tail,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The DevTools port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The OS process id of the browser process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The binary that was launched.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// `ws://127.0.0.1:<port>/devtools/browser/<uuid>`: the browser-level CDP endpoint.
    pub fn browser_ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}{}", self.port, self.ws_path)
    }

    /// `http://127.0.0.1:<port>`: base of `/json/version`, `/json/list`.
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether the browser process is still running (reaps it if it exited).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the browser process (and its process group) and waits for it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            // Best effort: sweep the whole process group (renderers, zygotes, wrapper children).
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pid)])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = child.wait();
            tracing::debug!(pid = self.pid, "local chromium killed");
        }
    }
}

impl Drop for LocalChromium {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = self.dir.take() {
            // Chromium's helper processes exit right after the browser process; retry briefly
            // in case one of them still writes into the profile.
            let path = dir.path().to_path_buf();
            if dir.close().is_err() {
                for _ in 0..5 {
                    std::thread::sleep(Duration::from_millis(20));
                    if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
                        break;
                    }
                }
            }
        }
    }
}

/// Whether `/proc/<pid>` exists (Linux): handy for asserting a browser process is gone.
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn is_headless_shell(binary: &Path) -> bool {
    binary
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("headless-shell"))
}

fn read_active_port(path: &Path) -> Option<(u16, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let port = lines.next()?.trim().parse::<u16>().ok()?;
    let ws_path = lines.next()?.trim();
    (port != 0 && ws_path.starts_with("/devtools/browser/")).then(|| (port, ws_path.to_owned()))
}

fn log_tail(path: &Path) -> String {
    const MAX: u64 = 2048;
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
