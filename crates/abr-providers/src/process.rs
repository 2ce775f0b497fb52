//! [`BrowserProcess`]: the Chromium process behind a browser this provider launched, found
//! by a switch of its own on the command line (`--abr-browser=<mark>`; Chromium ignores a
//! switch it does not know, and its child processes do not carry it).
//!
//! Playwright talks to its browser over a pipe and never gives the process out; a browser
//! that stops answering (frozen, a half-open connection) answers no close either. The
//! provider then ends it by its process: [`BrowserProcess::kill`]. The chaos layer freezes,
//! thaws and kills it on purpose ([`FaultTarget`](abr_core::chaos::FaultTarget)).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::process::{Pid, Signal, kill_process};

const SWITCH: &str = "--abr-browser=";

/// The Chromium process of one launched browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserProcess {
    mark: String,
}

impl BrowserProcess {
    /// A mark no other browser on this machine carries: this process's id, a count, and the
    /// time (a reused process id of an earlier runner cannot collide).
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            mark: format!(
                "{}-{}-{nanos:x}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    /// The switch that marks the browser's command line.
    pub(crate) fn switch(&self) -> String {
        format!("{SWITCH}{}", self.mark)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_unique_and_a_mark_nobody_carries_finds_no_process() {
        let (a, b) = (BrowserProcess::new(), BrowserProcess::new());
        assert_ne!(a, b);
        assert!(a.switch().starts_with("--abr-browser="));
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
}
