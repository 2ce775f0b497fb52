//! The replicas as child processes, and what `/proc` says about them.
//!
//! A replica is this binary re-executed in its hidden mode, in a process group of its own,
//! marked in its environment (`ABR_SOAK_RUN=<marker>`). The group alone does not hold what
//! it starts: the Playwright driver and Chromium run in groups of their own. They inherit
//! the environment, and Chromium's helpers (zygotes, renderers, which do not) are their
//! descendants: the marked processes, the group and their descendants are everything a
//! replica started. Dropping a [`Replica`] kills all of it (SIGKILL), so an error, a panic
//! or a Ctrl-C leaves nothing behind; [`Replica::ask_to_stop`] stops it gracefully first.
//!
//! Signals go through `kill(1)`: the workspace forbids `unsafe`, and the tests do the same.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that marks a replica and everything it starts.
pub(crate) const MARKER_VAR: &str = "ABR_SOAK_RUN";

/// What a replica is started with.
#[derive(Debug)]
pub(crate) struct Spec {
    /// `r0`, `r1`, ...
    pub(crate) name: String,
    /// Its marker (unique to the run and the replica).
    pub(crate) marker: String,
    /// The replica mode's arguments (`replica --chaos-seed ... -- serve`).
    pub(crate) args: Vec<String>,
    /// Its environment, besides the marker.
    pub(crate) envs: Vec<(String, String)>,
    /// Where its stdout and stderr go.
    pub(crate) log: PathBuf,
}

/// A running replica process.
#[derive(Debug)]
pub(crate) struct Replica {
    child: Child,
    marker: String,
    /// `r0`, `r1`, ...
    pub(crate) name: String,
    /// Its log file.
    pub(crate) log: PathBuf,
    /// The processes it started that were alive when last seen, by pid and start time (a
    /// pid reused by another process is not theirs): looked for again after it exited.
    started: BTreeSet<(u32, u64)>,
}

impl Replica {
    /// Starts `spec` (this binary again).
    pub(crate) fn spawn(spec: Spec) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .map_err(|e| format!("{}: {e}", spec.log.display()))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", spec.log.display()))?;
        let mut command = Command::new(exe);
        // Its settings are the run's alone, never the caller's environment's.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ABR_") {
                command.env_remove(name);
            }
        }
        let child = std::os::unix::process::CommandExt::process_group(
            command
                .args(&spec.args)
                .envs(spec.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env(MARKER_VAR, &spec.marker)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err),
            0,
        )
        .spawn()
        .map_err(|e| format!("starting replica {}: {e}", spec.name))?;
        Ok(Self {
            child,
            marker: spec.marker,
            name: spec.name,
            log: spec.log,
            started: BTreeSet::new(),
        })
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it still runs (not exited).
    pub(crate) fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Its live processes besides itself: the marked ones, its group, and their descendants,
    /// and those seen before that still live (reparented once it exited).
    pub(crate) fn descendants(&mut self) -> Vec<(u32, String)> {
        let table = process_table();
        let root = self.pid();
        let mut found: BTreeSet<u32> = marked(&table, &self.marker);
        found.extend(table.iter().filter(|p| p.pgrp == root).map(|p| p.pid));
        found.insert(root);
        loop {
            let before = found.len();
            let children: Vec<u32> = table
                .iter()
                .filter(|p| found.contains(&p.ppid))
                .map(|p| p.pid)
                .collect();
            found.extend(children);
            if found.len() == before {
                break;
            }
        }
        let alive: Vec<Process> = table
            .into_iter()
            .filter(|p| !p.zombie && p.pid != root)
            .filter(|p| found.contains(&p.pid) || self.started.contains(&(p.pid, p.start)))
            .collect();
        self.started = alive.iter().map(|p| (p.pid, p.start)).collect();
        alive.iter().map(|p| (p.pid, cmdline(p.pid))).collect()
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`) to its own process only: its browsers go on.
    pub(crate) fn signal(&self, sig: &str) -> bool {
        signal(self.pid(), sig)
    }

    /// Asks it to stop gracefully: SIGCONT (a paused replica cannot handle its SIGTERM),
    /// then SIGTERM. What it started, seen now, is looked for again after it exited.
    pub(crate) fn ask_to_stop(&mut self) {
        let _ = self.descendants();
        self.signal("CONT");
        self.signal("TERM");
    }

    /// Waits until it exited or `deadline` passed; then SIGKILL to all of it. Answers its
    /// exit status and whether it had to be killed.
    pub(crate) fn wait_stopped(&mut self, deadline: Instant) -> (Option<ExitStatus>, bool) {
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return (Some(status), false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill();
        (self.child.wait().ok(), true)
    }

    /// SIGKILL to its group, to the marked processes and to everything it started.
    pub(crate) fn kill(&mut self) {
        let _ = send("KILL", &format!("-{}", self.pid()));
        let left: Vec<String> = self
            .descendants()
            .into_iter()
            .map(|(pid, _)| pid.to_string())
            .collect();
        for pid in left {
            let _ = send("KILL", &pid);
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if self.running() {
            self.kill();
            let _ = self.child.wait();
        }
        // Anything it started that outlived it: the report has counted it by now.
        let left: Vec<String> = self
            .descendants()
            .into_iter()
            .map(|(pid, _)| pid.to_string())
            .collect();
        for pid in left {
            let _ = send("KILL", &pid);
        }
    }
}

/// Sends `sig` (`STOP`, `CONT`, `TERM`, ...) to process `pid` only.
pub(crate) fn signal(pid: u32, sig: &str) -> bool {
    send(sig, &pid.to_string())
}

/// `kill -<signal> -- <target>` (a negative target is a process group).
fn send(signal: &str, target: &str) -> bool {
    Command::new("kill")
        .args([&format!("-{signal}"), "--", target])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One row of `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
struct Process {
    pid: u32,
    ppid: u32,
    pgrp: u32,
    zombie: bool,
    /// When it started (clock ticks after boot): with the pid, names one process.
    start: u64,
}

fn process_table() -> Vec<Process> {
    pids().filter_map(process).collect()
}

fn process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses.
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split_whitespace();
    let zombie = fields.next()? == "Z";
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Field 22 of the whole line, the 20th after the command's.
    let start = fields.nth(16)?.parse().ok()?;
    Some(Process {
        pid,
        ppid,
        pgrp,
        zombie,
        start,
    })
}

fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
}

/// Live processes whose environment holds `ABR_SOAK_RUN=<marker>`.
fn marked(table: &[Process], marker: &str) -> BTreeSet<u32> {
    let needle = format!("{MARKER_VAR}={marker}");
    table
        .iter()
        .filter(|p| !p.zombie)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/environ", p.pid))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|p| p.pid)
        .collect()
}

/// A process's command line, spaces between its arguments.
pub(crate) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

/// Live Chromium processes on this machine (Debian's, as `.ci/browser-leftovers` finds them).
pub(crate) fn chromium_processes() -> Vec<u32> {
    process_table()
        .into_iter()
        .filter(|p| !p.zombie && cmdline(p.pid).contains("/usr/lib/chromium/"))
        .map(|p| p.pid)
        .collect()
}

/// Its resident set size (`VmRSS`), in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many file descriptors it holds open.
pub(crate) fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_from_proc() {
        let me = std::process::id();
        assert!(rss_kib(me).is_some_and(|kib| kib > 0));
        assert!(fd_count(me).is_some_and(|n| n >= 3));
        assert!(process(me).is_some_and(|p| !p.zombie));
        assert!(!cmdline(me).is_empty());
    }
}
