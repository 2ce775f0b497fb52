//! `abr up` / `status` / `logs` / `down` as a user runs them: the real `abr` binary, each
//! test in its own state and data directories, on loopback.
//!
//! Every runner a test starts is stopped by it: through `abr down` on the way that is
//! tested, and by a [`Stopper`] guard (SIGTERM to its process group, which drains and
//! closes its browsers, then SIGKILL) when an assertion fails first.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use abr_demo::{DemoSite, FaultMode};
use abr_protocol::PostOutcome;
use common::{TOKEN, post_request, signed_in_session};

const ABR: &str = env!("CARGO_BIN_EXE_abr");

/// How long a runner may take to come up or go down.
const WAIT: Duration = Duration::from_secs(60);

/// One user's machine: a state directory and a data directory of its own.
struct Machine {
    dir: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
}

impl Machine {
    /// A machine of its own, running its own link to the built `abr`: where several builds
    /// share a target directory, one relinking `abr` during the run cannot swap the binary
    /// under this test (a relink replaces the file; the link keeps the inode).
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("abr");
        if std::fs::hard_link(ABR, &bin).is_err() {
            std::fs::copy(ABR, &bin).unwrap();
        }
        Self {
            dir,
            extra_env: Vec::new(),
        }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("abr")
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn state_file(&self) -> PathBuf {
        self.state_dir().join("runner-local.json")
    }

    fn log(&self) -> PathBuf {
        self.state_dir().join("logs/runner-local.log")
    }

    /// `abr <args>` configured for this machine.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.bin());
        command
            .args(args)
            .env("ABR_STATE_DIR", self.state_dir())
            .env("ABR_DATA_DIR", self.dir.path().join("data"))
            .env("ABR_API_TOKEN", TOKEN)
            .env("ABR_SESSION_KEY", "11".repeat(32))
            .env("RUST_LOG", "info")
            .env_remove("ABR_HUB_URL")
            .env_remove("ABR_RUNNER_ID")
            .env_remove("ABR_BIND")
            // What tells a tmux pane or a systemd unit apart: the test's own, if it runs
            // in one, is not this runner's.
            .env_remove("TMUX")
            .env_remove("INVOCATION_ID")
            .stdin(Stdio::null());
        for (k, v) in &self.extra_env {
            command.env(k, v);
        }
        command
    }

    /// `program` (tmux, script) with this machine's environment for the `abr` it starts.
    fn wrapper(&self, program: &str) -> Command {
        let configured = self.command(&[]);
        let mut wrapper = Command::new(program);
        for (key, value) in configured.get_envs() {
            match value {
                Some(value) => wrapper.env(key, value),
                None => wrapper.env_remove(key),
            };
        }
        wrapper
    }

    /// Runs `abr <args>` to its end.
    fn abr(&self, args: &[&str]) -> Run {
        let output = self.command(args).output().unwrap();
        Run(output)
    }

    /// `abr up --background ...`, which must succeed: the guard of the runner it started.
    fn up_background(&self, args: &[&str]) -> Stopper {
        let mut all = vec!["up", "--background"];
        all.extend_from_slice(args);
        let run = self.abr(&all);
        assert_eq!(run.code(), 0, "{run:?}");
        let pid = self.state().pid;
        Stopper { pid, child: None }
    }

    /// The runner's state file.
    fn state(&self) -> State {
        let text = std::fs::read_to_string(self.state_file()).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    pid: u32,
    url: String,
    launch: String,
    log: Option<PathBuf>,
}

/// A finished `abr` command.
struct Run(Output);

impl Run {
    fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }
}

/// Whether process `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(sig: &str, target: &str) {
    let _ = Command::new("kill")
        .args([sig, "--", target])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stops a runner (and its process group) when dropped, if it still runs: SIGTERM (it
/// drains and closes its browsers), then SIGKILL after a while.
struct Stopper {
    pid: u32,
    /// The foreground `abr up` this test spawned, to reap.
    child: Option<Child>,
}

impl Stopper {
    /// Spawns a foreground `abr up` in its own process group.
    fn foreground(machine: &Machine, args: &[&str]) -> Self {
        let mut all = vec!["up"];
        all.extend_from_slice(args);
        let child = machine
            .command(&all)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Self {
            pid: child.id(),
            child: Some(child),
        }
    }

    fn gone(&mut self) -> bool {
        if let Some(child) = &mut self.child {
            return child.try_wait().unwrap().is_some();
        }
        !alive(self.pid)
    }
}

impl Drop for Stopper {
    fn drop(&mut self) {
        if self.gone() {
            return;
        }
        let group = format!("-{}", self.pid);
        signal("-TERM", &group);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.gone() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        signal("-KILL", &group);
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The value of a `status` line (`pid       4242` → `4242`).
fn field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with(' ')))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| panic!("no {name} in\n{status}"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The whole background round trip: `up --background`, `status` (0, its fields),
/// `logs -n 5`, a post in flight while `down` drains (it finishes, posted once), then
/// `status` (1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_up_status_logs_then_down_drains_the_running_post() {
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let mut machine = Machine::new();
    machine.extra_env = vec![
        ("ABR_DEMO_SITE_URL".to_owned(), site.base_url()),
        (
            "ABR_EGRESS_ALLOW_PRIVATE".to_owned(),
            site.local_addr().to_string(),
        ),
    ];
    let machine = std::sync::Arc::new(machine);

    let m = std::sync::Arc::clone(&machine);
    let (runner, state) = tokio::task::spawn_blocking(move || {
        let runner = m.up_background(&["--headless"]);
        (runner, m.state())
    })
    .await
    .unwrap();
    assert_eq!(state.launch, "background");
    assert_eq!(state.log.as_deref(), Some(machine.log().as_path()));
    assert!(state.url.starts_with("http://127.0.0.1:"), "{}", state.url);
    assert_eq!(
        mode(&machine.state_file()),
        0o600,
        "the state file holds a token"
    );
    assert!(alive(runner.pid));

    // A few more lines in its log than `logs -n 5` shows.
    let client = abr_client::AgentRunnerClient::new(state.url.clone(), TOKEN.to_owned()).unwrap();
    for _ in 0..6 {
        client.health().await.unwrap();
    }
    let m = std::sync::Arc::clone(&machine);
    let (status, logs) =
        tokio::task::spawn_blocking(move || (m.abr(&["status"]), m.abr(&["logs", "-n", "5"])))
            .await
            .unwrap();
    assert_eq!(status.code(), 0, "{status:?}");
    let text = status.stdout();
    assert_eq!(field(&text, "pid"), runner.pid.to_string());
    assert_eq!(field(&text, "version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(field(&text, "launch"), "background");
    assert_eq!(field(&text, "serves"), "this machine only (no hub)");
    assert_eq!(field(&text, "headless"), "yes");
    assert_eq!(field(&text, "log"), machine.log().display().to_string());
    let uptime = field(&text, "uptime");
    assert!(
        uptime.starts_with(|c: char| c.is_ascii_digit()) && uptime.contains("s (since 20"),
        "{text}"
    );
    assert_eq!(field(&text, "api"), format!("{} (healthy)", state.url));

    assert_eq!(logs.code(), 0, "{logs:?}");
    let shown = logs.stdout();
    let whole = std::fs::read_to_string(machine.log()).unwrap();
    assert!(whole.lines().count() > 5, "{whole}");
    assert_eq!(shown.lines().count(), 5, "{shown}");
    let last_five: Vec<&str> = whole.lines().rev().take(5).collect::<Vec<_>>();
    let shown_lines: Vec<&str> = shown.lines().rev().collect();
    assert_eq!(shown_lines, last_five);
    assert!(whole.contains("the local runner is up"), "{whole}");

    // A post that takes a few seconds after it was saved, in flight while `down` drains.
    let session = signed_in_session(&site, "erin").await;
    site.set_fault(FaultMode::SlowToast);
    let text = format!("posted across abr down {}", common::random_suffix());
    let post = {
        let request = post_request("demo", session, &text);
        tokio::spawn(async move { client.post(&request).await })
    };
    let deadline = Instant::now() + WAIT;
    while !site.posts().iter().any(|p| p.text == text) {
        if post.is_finished() || Instant::now() > deadline {
            let log = std::fs::read_to_string(machine.log()).unwrap_or_default();
            panic!("the post was not saved: {:?}\n{log}", post.await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = std::sync::Arc::clone(&machine);
    let down = tokio::task::spawn_blocking(move || m.abr(&["down"]))
        .await
        .unwrap();
    assert_eq!(down.code(), 0, "{down:?}");
    assert!(
        down.stdout()
            .contains(&format!("stopped the runner (pid {})", runner.pid)),
        "{down:?}"
    );
    // `down` came back only once the runner was gone.
    assert!(!alive(runner.pid));
    let result = tokio::time::timeout(WAIT, post)
        .await
        .expect("the post never answered")
        .unwrap()
        .expect("the drained post lost its answer");
    assert!(result.ok, "{result:?}");
    assert_eq!(result.outcome(), PostOutcome::Confirmed);
    assert_eq!(site.posts().iter().filter(|p| p.text == text).count(), 1);

    let m = std::sync::Arc::clone(&machine);
    let after = tokio::task::spawn_blocking(move || m.abr(&["status"]))
        .await
        .unwrap();
    assert_eq!(after.code(), 1, "{after:?}");
    assert!(after.stderr().contains("no runner is running"), "{after:?}");
    assert!(!machine.state_file().exists());
    let log = std::fs::read_to_string(machine.log()).unwrap();
    assert!(log.contains("draining"), "{log}");
    drop(runner);
    site.shutdown().await;
}

/// While a runner runs in a terminal, a second `up` (foreground or background) is refused
/// naming it; Ctrl-C (SIGINT) in its terminal drains and stops it.
#[test]
fn a_second_up_in_either_mode_is_refused_naming_the_holder() {
    let machine = Machine::new();
    let mut first = Stopper::foreground(&machine, &[]);
    wait_until("the foreground runner", WAIT, || {
        machine.state_file().exists() && machine.abr(&["status"]).code() == 0
    });
    let state = machine.state();
    assert_eq!(state.pid, first.pid);
    assert_eq!(state.launch, "terminal");
    assert_eq!(state.log, None);

    for args in [&["up"][..], &["up", "--background"][..]] {
        let second = machine.abr(args);
        assert_eq!(second.code(), 1, "{args:?}: {second:?}");
        let err = second.stderr();
        assert!(err.contains("already running"), "{err}");
        assert!(
            err.contains(&format!("pid {}, terminal, since ", first.pid)),
            "{args:?}: {err}"
        );
    }
    // Still the first one, untouched.
    assert_eq!(machine.state().pid, first.pid);
    assert!(!first.gone());

    signal("-INT", &first.pid.to_string());
    let status = first.child.as_mut().map(|c| wait_child(c, WAIT)).unwrap();
    assert!(status.success(), "{status}");
    let after = machine.abr(&["status"]);
    assert_eq!(after.code(), 1, "{after:?}");
}

fn wait_child(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the runner did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `up --replace` asks the running runner to drain, waits for it, and takes over; then
/// `down --now` stops the new one.
#[test]
fn replace_takes_over_from_the_running_runner() {
    let machine = Machine::new();
    let old = machine.up_background(&[]);
    let new = machine.up_background(&["--replace"]);
    assert_ne!(new.pid, old.pid);
    assert!(!alive(old.pid), "the old runner still runs");
    let status = machine.abr(&["status"]);
    assert_eq!(status.code(), 0, "{status:?}");
    assert_eq!(field(&status.stdout(), "pid"), new.pid.to_string());

    let down = machine.abr(&["down", "--now"]);
    assert_eq!(down.code(), 0, "{down:?}");
    assert!(!alive(new.pid));
    assert_eq!(machine.abr(&["status"]).code(), 1);
}

/// A log over 5 MB is moved to `.1` when the next runner starts; the new log starts empty
/// of it.
#[test]
fn a_log_over_5_mb_is_rotated_at_start() {
    let machine = Machine::new();
    std::fs::create_dir_all(machine.log().parent().unwrap()).unwrap();
    let big = 5 * 1024 * 1024 + 1;
    {
        let mut log = std::fs::File::create(machine.log()).unwrap();
        log.write_all(b"OLD-GENERATION\n").unwrap();
        log.write_all(&vec![b'x'; big - 15]).unwrap();
    }
    let runner = machine.up_background(&[]);
    let rotated = machine.state_dir().join("logs/runner-local.log.1");
    assert_eq!(std::fs::metadata(&rotated).unwrap().len(), big as u64);
    assert!(
        std::fs::read(&rotated)
            .unwrap()
            .starts_with(b"OLD-GENERATION")
    );
    let fresh = std::fs::read_to_string(machine.log()).unwrap();
    assert!(!fresh.contains("OLD-GENERATION"));
    assert!(fresh.contains("the local runner is up"), "{fresh}");
    assert!(fresh.len() < 1024 * 1024);

    assert_eq!(machine.abr(&["down"]).code(), 0);
    assert!(!alive(runner.pid));
    // Under the limit: not rotated again.
    let again = machine.up_background(&[]);
    assert_eq!(std::fs::metadata(&rotated).unwrap().len(), big as u64);
    assert!(
        std::fs::read_to_string(machine.log())
            .unwrap()
            .starts_with(&fresh)
    );
    assert_eq!(machine.abr(&["down"]).code(), 0);
    assert!(!alive(again.pid));
}

/// `down` and `status` with nothing running exit 1; so does a stale state file (its
/// runner is gone, the lock is free), which `down` does not act on.
#[test]
fn down_and_status_with_nothing_running_exit_1() {
    let machine = Machine::new();
    let down = machine.abr(&["down"]);
    assert_eq!(down.code(), 1, "{down:?}");
    assert!(down.stderr().contains("no runner is running"), "{down:?}");
    assert_eq!(machine.abr(&["status"]).code(), 1);

    std::fs::create_dir_all(machine.state_dir()).unwrap();
    std::fs::write(
        machine.state_file(),
        r#"{"pid":999999,"startedAt":0,"version":"0","launch":"background",
            "url":"http://127.0.0.1:9","controlUrl":"http://127.0.0.1:9","hub":null,
            "runnerId":"x","headless":false,"log":null,"controlToken":"t"}"#,
    )
    .unwrap();
    let status = machine.abr(&["status"]);
    assert_eq!(status.code(), 1, "{status:?}");
    assert!(status.stderr().contains("stale"), "{status:?}");
    assert_eq!(machine.abr(&["down"]).code(), 1);
}

/// A background runner that cannot start (its port is taken) is reported with the end of
/// its log and exit code 1, and leaves nothing running.
#[test]
fn a_background_start_that_fails_shows_its_log_and_exits_1() {
    let machine = Machine::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = machine.abr(&["up", "--background", "--port", &port]);
    assert_eq!(run.code(), 1, "{run:?}");
    let err = run.stderr();
    assert!(err.contains("did not start"), "{err}");
    assert!(err.contains("the end of its log"), "{err}");
    assert!(err.contains("cannot listen on 127.0.0.1:"), "{err}");
    assert_eq!(machine.abr(&["status"]).code(), 1);
}

/// A hub URL that is not http(s) is a usage error, before anything starts.
#[test]
fn a_bad_hub_url_is_a_usage_error() {
    let machine = Machine::new();
    for hub in [
        "ftp://hub.example.com",
        "https://user:pw@hub.example.com",
        "not a url",
    ] {
        let bad = machine.abr(&["up", "--hub", hub]);
        assert_eq!(bad.code(), 2, "{hub}: {bad:?}");
        assert!(bad.stderr().contains("--hub: "), "{bad:?}");
    }
    assert!(!machine.state_file().exists());
}

/// `logs -f` shows the last lines, then what the runner appends, as it happens.
#[test]
fn logs_follow_prints_what_the_runner_appends() {
    use std::io::{BufRead as _, Read as _};
    let machine = Machine::new();
    let runner = machine.up_background(&[]);
    let mut child = machine
        .command(&["logs", "-n", "1", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let follower = Stopper {
        pid: child.id(),
        child: Some(child),
    };
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let first = seen.recv_timeout(WAIT).expect("the last line of the log");
    assert!(!first.is_empty());

    // A request the runner logs after `logs -f` started.
    let addr = machine.state().url.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .write_all(b"GET /v1/platforms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let deadline = Instant::now() + WAIT;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let line = seen
            .recv_timeout(remaining)
            .expect("the new log line was not followed");
        if line.contains("route=\"/v1/platforms\"") && line.contains("status=401") {
            break;
        }
    }
    drop(follower);
    assert_eq!(machine.abr(&["down"]).code(), 0);
    assert!(!alive(runner.pid));
}

/// A raw HTTP/1.1 request to `addr` on a new connection, sent; the stream to read the
/// answer from.
fn send_raw(addr: &str, method: &str, path: &str, body: &str) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         X-Tenant-Id: ws-cli\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// While `down` drains (a long poll keeps the API busy), the control endpoint still
/// answers: `status` says running but not answering, and `down --now` stops it at once,
/// cutting the request instead of waiting for it.
#[test]
fn down_now_stops_a_runner_that_is_still_draining() {
    use std::io::Read as _;
    let machine = std::sync::Arc::new(Machine::new());
    let runner = machine.up_background(&[]);
    let addr = machine.state().url.trim_start_matches("http://").to_owned();
    let plan = r##"{"plan":{"targetUrl":"https://example.com/","steps":[{"type":"extract",
        "name":"t","kind":"text","selector":"#x","description":"Read"}],
        "verification":{"method":"dom_check","selector":"#x"},"risk":"low"}}"##;
    let mut created = String::new();
    send_raw(&addr, "POST", "/v1/tasks", plan)
        .read_to_string(&mut created)
        .unwrap();
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let id = created
        .split("\"taskId\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a task id")
        .to_owned();
    // Pending approval: the long poll waits its whole minute.
    let mut long_poll = send_raw(&addr, "GET", &format!("/v1/tasks/{id}?waitSecs=60"), "");
    std::thread::sleep(Duration::from_millis(300));

    let m = std::sync::Arc::clone(&machine);
    let draining = std::thread::spawn(move || m.abr(&["down"]));
    wait_until("the API to stop accepting", WAIT, || {
        std::net::TcpStream::connect(&addr).is_err()
    });
    let status = machine.abr(&["status"]);
    assert_eq!(status.code(), 0, "{status:?}");
    assert!(
        field(&status.stdout(), "api").ends_with("(not answering)"),
        "{status:?}"
    );
    assert!(alive(runner.pid));

    let now = machine.abr(&["down", "--now"]);
    assert_eq!(now.code(), 0, "{now:?}");
    assert!(!alive(runner.pid));
    let drained = draining.join().unwrap();
    assert_eq!(drained.code(), 0, "{drained:?}");
    // The long poll was cut, not answered.
    let mut answer = Vec::new();
    let _ = long_poll.read_to_end(&mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "the long poll was answered: the runner waited for it"
    );
    assert_eq!(machine.abr(&["status"]).code(), 1);
}

/// A tmux server of its own (`-L`), killed with everything in its panes when dropped.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A runner started in a tmux pane says so: its state file and `abr status` name `tmux`
/// (what the hub's runner list shows of it), and `abr down` stops it there.
#[test]
fn a_runner_started_in_a_tmux_pane_is_launched_as_tmux() {
    let machine = Machine::new();
    let server = TmuxServer(format!("abr-test-{}", std::process::id()));
    // The runner's environment is the machine's: the tmux server this command starts
    // passes its own to the pane.
    let started = machine
        .wrapper("tmux")
        .args([
            "-L",
            &server.0,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "abr",
        ])
        .arg(format!("{} up", machine.bin().display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.status.success(), "{started:?}");
    wait_until("the runner in the tmux pane", WAIT, || {
        machine.state_file().exists() && machine.abr(&["status"]).code() == 0
    });
    let mut runner = Stopper {
        pid: machine.state().pid,
        child: None,
    };
    assert_eq!(machine.state().launch, "tmux");
    assert_eq!(machine.state().log, None, "its log is the pane");
    let status = machine.abr(&["status"]);
    assert_eq!(field(&status.stdout(), "launch"), "tmux", "{status:?}");
    let down = machine.abr(&["down"]);
    assert_eq!(down.code(), 0, "{down:?}");
    wait_until("the runner to stop", WAIT, || runner.gone());
}

/// In a terminal (a pty that `script` gives it), the runner reads its keys: `l` hides its
/// log lines, `q` drains and stops it. With its input from a pipe or `/dev/null` (every
/// other test here) no key is read.
#[test]
fn in_a_terminal_l_hides_the_log_and_q_stops_the_runner() {
    use std::io::{Read as _, Write as _};
    let machine = Machine::new();
    let mut child = machine
        .wrapper("script")
        .args([
            "-qfec",
            &format!("{} up", machine.bin().display()),
            "/dev/null",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_until("the runner in the terminal", WAIT, || {
        machine.state_file().exists() && machine.abr(&["status"]).code() == 0
    });
    let mut runner = Stopper {
        pid: machine.state().pid,
        child: None,
    };
    assert_eq!(machine.state().launch, "terminal");
    let mut keys = child.stdin.take().unwrap();
    keys.write_all(b"l").unwrap();
    keys.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    keys.write_all(b"q").unwrap();
    keys.flush().unwrap();
    wait_until("the runner to stop on q", WAIT, || runner.gone());
    drop(keys);
    let status = wait_child(&mut child, WAIT);
    assert!(status.success(), "{status}");
    let mut shown = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut shown)
        .unwrap();
    for said in [
        "keys: q stops",
        "log lines hidden (l shows them)",
        "q: draining, then stopping",
    ] {
        assert!(shown.contains(said), "{said:?} not in:\n{shown}");
    }
    // Hidden: the runner's drain, logged at info, is not on the terminal.
    let after_hide = shown.split("log lines hidden").nth(1).unwrap_or_default();
    assert!(!after_hide.contains(" INFO "), "{after_hide}");
    assert_eq!(machine.abr(&["status"]).code(), 1);
}
