//! `abr up`: the runner on this machine, in the foreground (default) or `--background`.
//!
//! It starts the runner exactly as `abr serve` does (`start.rs`) and serves its API on
//! loopback only (also its health check), holding the account's single-instance lock; a
//! control endpoint on a second loopback port lets `abr down` stop it. With `--hub` it also links to a
//! hub (see [`super::local::link`]). `--background` re-executes the same command detached
//! (a new process group, stdin from /dev/null, output to its log) and reports success only
//! once the detached runner holds the lock and answers its own health check. It never
//! installs itself to start at login.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::cli::CliError;
use crate::cli::local::LocalError;
use crate::cli::local::control;
use crate::cli::local::credential;
use crate::cli::local::error::Holder;
use crate::cli::local::link::{self, LinkOptions, Shutdown};
use crate::cli::local::lock::{self, InstanceLock};
use crate::cli::local::logfile;
use crate::cli::local::paths::{LocalPaths, private_dir};
use crate::cli::local::state::{ControlToken, LaunchKind, RunnerState};
use crate::cli::local::target::{Target, account_id, first_api_token};
use crate::cli::local::update::{Restart, Updater};
use crate::cli::start;
use crate::config::RunnerConfig;
use crate::runner::ProviderLayer;
use crate::server::{RunningServer, Signals};

const UP_HELP: &str = "\
The runner is configured like `abr serve` (ABR_* environment variables, --config), except
that it listens on 127.0.0.1 only (--port, default a free port; ABR_BIND is not used) and
keeps its records, sessions and browser profile under its state directory unless
ABR_DATA_DIR is set. --headless makes the capture browser headless too.

One runner per account per machine, in either mode: a second `abr up` is refused naming
the running one; `abr up --replace` asks it to drain and takes over. `abr status`,
`abr logs` and `abr down` find it through its state directory:
  ABR_STATE_DIR   default $XDG_STATE_HOME/abr or ~/.local/state/abr
  ABR_HUB_URL     the hub (as --hub)       ABR_RUNNER_ID  the runner id (as --runner-id)

Linking to a hub: enroll once with a code the hub's operator or your tenant's approver made
(`abr hub enroll --runner-id ID` on the hub): `abr up --hub URL --runner-id ID --enroll CODE`.
The runner keeps its own credential in its state directory (0600) and connects with it from
then on: only as its runner id, reached only by your tenant's keys. Without one, an
operator's ABR_API_TOKEN of the hub still links (a runner only operators reach).

It does not start at login or boot, and does not restart after a crash.";

/// `abr up` arguments.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = UP_HELP)]
pub(crate) struct UpArgs {
    /// The hub to link to (default ABR_HUB_URL; none: this machine only).
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
    /// The capture browser without a window too (job browsers are headless anyway).
    #[arg(long)]
    headless: bool,
    /// The runner id at the hub (default ABR_RUNNER_ID, else this machine's host name).
    #[arg(long, value_name = "ID")]
    runner_id: Option<String>,
    /// Take the runner id over at the hub from the runner connected with it (on any machine
    /// holding this runner id's credential).
    #[arg(long)]
    force: bool,
    /// Enroll at the hub with this one-time code (`abr hub enroll`), keeping the runner's
    /// own credential in the state directory.
    #[arg(long, value_name = "CODE")]
    enroll: Option<String>,
    /// Let the hub read the sessions stored on this runner (default: refused, they stay on
    /// this machine; also ABR_RELAY_SESSION_EXPORT=true).
    #[arg(long)]
    allow_session_export: bool,
    /// Detach: keep running with no terminal open, logging to its log file.
    #[arg(long)]
    background: bool,
    /// Ask the running runner of this account to drain, wait for it to stop, then start.
    #[arg(long)]
    replace: bool,
    /// The loopback port of the runner's API (default: a free port).
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// How long --replace waits for the running runner to stop, and --background for the
    /// detached runner to be up, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    wait_secs: u64,
    /// TOML configuration file (environment variables override it).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Start without ABR_API_TOKEN, accepting every request on loopback. Only on a trusted
    /// machine.
    #[arg(long)]
    insecure_dev: bool,
    /// Set by `--background` on the detached runner it starts.
    #[arg(long, value_enum, hide = true)]
    launched_as: Option<LaunchKind>,
}

/// Everything `abr up` resolved before it starts anything.
struct Plan {
    args: UpArgs,
    config: RunnerConfig,
    target: Target,
    api_token: Option<SecretString>,
    paths: LocalPaths,
    /// Wraps the runner's providers ([`crate::cli::main_with`]).
    layer: Option<ProviderLayer>,
}

impl UpArgs {
    pub(crate) fn run(self, layer: Option<ProviderLayer>) -> Result<(), CliError> {
        let config = start::configuration(self.config.as_deref(), self.insecure_dev)?;
        let target = Target::resolve(
            &config.local,
            self.hub.as_deref(),
            self.runner_id.as_deref(),
        )?;
        let api_token = first_api_token(&config.api_tokens);
        let account = account_id(target.hub.as_ref(), api_token.as_ref());
        let paths = LocalPaths::resolve(&config.local, account)?;
        paths.create_dirs()?;
        if let Some(hub) = &target.hub
            && api_token.is_none()
            && self.enroll.is_none()
            && credential::read(&paths.hub_credential(), hub, &target.runner_id)?.is_none()
        {
            return Err(LocalError::Invalid {
                key: "ABR_API_TOKEN",
                reason: "a hub needs a credential to link with: enroll this runner \
                         (abr hub enroll on the hub, then abr up --enroll CODE)"
                    .to_owned(),
            }
            .into());
        }
        let plan = Plan {
            args: self,
            config,
            target,
            api_token,
            paths,
            layer,
        };
        match (plan.args.background, plan.args.launched_as) {
            (true, None) => Ok(start_in_background(&plan)?),
            (_, launched_as) => {
                let launch = launched_as
                    .unwrap_or_else(|| LaunchKind::detect(&crate::config::process_env()));
                Ok(run_here(plan, launch)?)
            }
        }
    }
}

/// Takes the account's lock: refused naming the holder, or, with `--replace`, after asking
/// the holder to drain and waiting for it to let go.
fn take_lock(plan: &Plan) -> Result<InstanceLock, LocalError> {
    let path = plan.paths.lock();
    if let Some(lock) = lock::try_acquire(&path)? {
        return Ok(lock);
    }
    let mut state = RunnerState::read(&plan.paths.state()).ok().flatten();
    if state.is_none() {
        // Held without a state file: a runner that is starting, or `abr status` probing
        // the lock for an instant. Look again for a moment before naming a holder.
        if let Some(lock) = lock::acquire_within(&path, HOLDER_GRACE)? {
            return Ok(lock);
        }
        state = RunnerState::read(&plan.paths.state()).ok().flatten();
    }
    let holder = Holder::from_state(state.as_ref());
    if !plan.args.replace {
        return Err(LocalError::AlreadyRunning(holder));
    }
    if let Some(state) = &state {
        eprintln!("abr: asking the running runner ({holder}) to drain and stop");
        let runtime = small_runtime()?;
        runtime.block_on(control::request_stop(state, true))?;
    }
    let limit = Duration::from_secs(plan.args.wait_secs);
    let lock = lock::acquire_within(&path, limit)?
        .ok_or_else(|| LocalError::StillRunning(holder.clone(), limit))?;
    if let Some(state) = &state
        && !lock::ended_within(state.pid, limit)
    {
        return Err(LocalError::StillRunning(holder, limit));
    }
    Ok(lock)
}

/// How long `abr up` looks again at a lock held by a runner without a state file.
const HOLDER_GRACE: Duration = Duration::from_secs(1);

/// A current-thread runtime for the commands' few HTTP calls.
pub(crate) fn small_runtime() -> Result<tokio::runtime::Runtime, LocalError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LocalError::Run(format!("cannot start the async runtime: {e}")))
}

/// Runs the runner in this process until it is stopped; after an accepted remote update,
/// restarts on the newer release in this process with the same flags.
fn run_here(plan: Plan, launch: LaunchKind) -> Result<(), LocalError> {
    let lock = take_lock(&plan)?;
    let runtime = start::runtime().map_err(|e| LocalError::Run(e.to_string()))?;
    let state_path = plan.paths.state();
    let again = restart_args(&plan.args, launch);
    let restart = Restart::default();
    let result = runtime.block_on(serve_here(plan, launch, restart.clone()));
    // Tasks still running (cut by an immediate stop) end with the runtime. The state file
    // goes before the lock, and the lock last: whoever sees it free finds no stale state
    // file and no process of this runner still at work.
    runtime.shutdown_timeout(Duration::from_secs(5));
    RunnerState::remove(&state_path);
    drop(lock);
    if let Some(binary) = restart.take() {
        use std::os::unix::process::CommandExt as _;
        tracing::info!(binary = %binary.display(), "restarting on the newer release");
        let error = Command::new(&binary).args(&again).exec();
        return Err(LocalError::Run(format!(
            "cannot restart on {}: {error}",
            binary.display()
        )));
    }
    result
}

async fn serve_here(plan: Plan, launch: LaunchKind, restart: Restart) -> Result<(), LocalError> {
    let Plan {
        args,
        mut config,
        target,
        api_token,
        paths,
        layer,
    } = plan;
    let port = args.port.unwrap_or(0);
    let bind = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| LocalError::Run(format!("cannot listen on {bind}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| LocalError::Run(format!("cannot listen on {bind}: {e}")))?;
    config.bind = addr;
    config.providers.local_headless_capture = args.headless;
    config.relay_session_export |= args.allow_session_export;
    if !config.local.data_dir_given {
        let data = paths.data_dir();
        private_dir(&data)?;
        config.store.data_dir = Some(data);
    }
    if config.providers.profile_dir.is_none()
        && let Some(data) = &config.store.data_dir
    {
        // A local runner keeps named profiles beside its records.
        config.providers.profile_dir = Some(data.join("profiles"));
    }
    if config.insecure_dev && config.api_tokens.is_empty() {
        tracing::warn!("--insecure-dev: the API accepts requests without a token");
    }
    let runner = start::runner(config, layer)
        .await
        .map_err(|e| LocalError::Run(e.to_string()))?;

    let (shutdown, stopping) = watch::channel(Shutdown::Running);
    let token = ControlToken::generate()?;
    let control_listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(|e| LocalError::Run(format!("cannot listen for control requests: {e}")))?;
    let control_addr = control_listener
        .local_addr()
        .map_err(|e| LocalError::Run(format!("cannot listen for control requests: {e}")))?;
    let control_app = control::router(token.clone(), shutdown.clone());
    let control_task = tokio::spawn(async move {
        if let Err(e) = axum::serve(control_listener, control_app).await {
            tracing::warn!(error = %e, "the control endpoint stopped");
        }
    });

    let mut signals = Signals::install();
    // In a terminal: `q` drains and stops, `l` hides or shows the log (restored at the end).
    let _keys = match launch {
        LaunchKind::Terminal | LaunchKind::Tmux => crate::cli::local::keys::watch(shutdown.clone()),
        LaunchKind::Background | LaunchKind::Service => None,
    };
    let app = crate::http::app(Arc::clone(&runner));
    let server = RunningServer::start_app(Arc::clone(&runner), listener, app.clone())
        .map_err(|e| LocalError::Run(format!("cannot serve on {addr}: {e}")))?;
    let state = RunnerState {
        pid: std::process::id(),
        started_at: time::OffsetDateTime::now_utc().unix_timestamp(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        launch,
        url: server.base_url(),
        control_url: format!("http://{control_addr}"),
        hub: target.hub.as_ref().map(|h| h.as_str().to_owned()),
        runner_id: target.runner_id.clone(),
        headless: args.headless,
        log: (launch == LaunchKind::Background).then(|| paths.log()),
        control_token: token,
    };
    state.write(&paths.state())?;
    println!(
        "abr: runner up at {} (pid {}, {launch}); `abr down` stops it",
        state.url, state.pid
    );
    tracing::info!(url = %state.url, pid = state.pid, %launch, "the local runner is up");

    // The relay link: the one call site (see `link`). The link gets the API router only,
    // never the control endpoint.
    let link_credential = match &target.hub {
        None => None,
        Some(hub) => {
            let path = paths.hub_credential();
            match &args.enroll {
                Some(code) => Some(credential::enroll(&path, hub, &target.runner_id, code).await?),
                None => credential::read(&path, hub, &target.runner_id)?.or(api_token),
            }
        }
    };
    let mut link_task = match (target.hub, link_credential) {
        (Some(hub), Some(link_credential)) => {
            let mut options = LinkOptions::new(hub, link_credential, target.runner_id, target.host);
            options.force = args.force;
            options.launch = launch.to_string();
            options.updates = updater(shutdown.clone(), restart);
            Some(tokio::spawn(link::run(app, options, stopping.clone())))
        }
        _ => None,
    };

    let mut link_error = None;
    let mut watching = stopping.clone();
    tokio::select! {
        () = signals.next() => {
            tracing::info!("signal: draining (a second signal stops at once)");
            shutdown.send_if_modified(|s| s.advance(Shutdown::Drain));
        }
        _ = watching.wait_for(|s| *s != Shutdown::Running) => {}
        ended = async { match link_task.as_mut() {
            Some(task) => task.await,
            None => std::future::pending().await,
        } } => {
            link_error = Some(match ended {
                Ok(Ok(())) => LocalError::Run("the relay link ended".to_owned()),
                Ok(Err(e)) => e,
                Err(e) => LocalError::Run(format!("the relay link failed: {e}")),
            });
            shutdown.send_if_modified(|s| s.advance(Shutdown::Now));
        }
    }

    let mode = *stopping.borrow();
    if mode == Shutdown::Now {
        tracing::info!("stopping now");
        server.stop_now().await;
    } else {
        tracing::info!("draining: no new work, running work finishes");
        let escalate = async {
            let mut watching = stopping.clone();
            tokio::select! {
                () = signals.next() => {}
                _ = watching.wait_for(|s| *s == Shutdown::Now) => {}
            }
        };
        tokio::select! {
            () = server.drain() => {}
            () = escalate => {
                tracing::info!("stopping now");
                shutdown.send_if_modified(|s| s.advance(Shutdown::Now));
                runner.shutdown().await;
            }
        }
    }
    if let Some(task) = link_task {
        task.abort();
    }
    control_task.abort();
    tracing::info!("the local runner stopped");
    link_error.map_or(Ok(()), Err)
}

/// How many lines of its log a failed background start prints.
const TAIL_ON_FAILURE: usize = 20;

/// `abr up --background`: starts the same `abr up` detached and waits until it is up.
fn start_in_background(plan: &Plan) -> Result<(), LocalError> {
    // Refused (or taken over) exactly as in the foreground; the log is rotated by whoever
    // holds the lock, then the lock is left for the detached runner to take.
    let log = plan.paths.log();
    {
        let _lock = take_lock(plan)?;
        if logfile::rotate_if_larger(&log, logfile::ROTATE_AT)? {
            eprintln!(
                "abr: moved the log to {} (over 5 MB)",
                logfile::rotated(&log).display()
            );
        }
    }
    let out = logfile::open_for_append(&log)?;
    let err = out
        .try_clone()
        .map_err(|e| LocalError::io("open", &log, e))?;
    let exe = std::env::current_exe()
        .map_err(|e| LocalError::Run(format!("cannot find the abr executable: {e}")))?;
    let mut command = Command::new(exe);
    command
        .args(detached_args(&plan.args))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    {
        use std::os::unix::process::CommandExt as _;
        // Its own process group: a Ctrl-C or hang-up of this terminal does not reach it.
        command.process_group(0);
    }
    let mut child = command
        .spawn()
        .map_err(|e| LocalError::Run(format!("cannot start the background runner: {e}")))?;
    let pid = child.id();
    let runtime = small_runtime()?;
    let limit = Duration::from_secs(plan.args.wait_secs);
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                print_tail(&log);
                return Err(LocalError::StartFailed(
                    format!("it exited ({status}) before it was up"),
                    log,
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(LocalError::Run(format!("cannot watch the runner: {e}"))),
        }
        if let Some(state) = is_up(plan, pid, &runtime)? {
            println!(
                "abr: runner up in the background at {} (pid {pid}); log: {}; `abr down` \
                 stops it",
                state.url,
                log.display()
            );
            return Ok(());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            print_tail(&log);
            return Err(LocalError::StartFailed(
                format!("it was not up within {limit:?}; it was stopped"),
                log,
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The detached runner's state once it holds the lock, has written its state file and
/// answers its own health check.
fn is_up(
    plan: &Plan,
    pid: u32,
    runtime: &tokio::runtime::Runtime,
) -> Result<Option<RunnerState>, LocalError> {
    // The state file first: the runner writes it only once it holds the lock, so probing
    // the lock (which takes it for an instant when free) cannot get in its way.
    let Some(state) = RunnerState::read(&plan.paths.state()).ok().flatten() else {
        return Ok(None);
    };
    if state.pid != pid || !lock::is_held(&plan.paths.lock())? {
        return Ok(None);
    }
    Ok(runtime.block_on(healthy(&state.url)).then_some(state))
}

/// Whether `GET <url>/v1/health` answers 200 within 2 s.
pub(crate) async fn healthy(url: &str) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
    else {
        return false;
    };
    client
        .get(format!("{}/v1/health", url.trim_end_matches('/')))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

/// Prints the last lines of the log at `log` on stderr.
fn print_tail(log: &Path) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "abr: the end of its log ({}):", log.display());
    if let Ok(tail) = logfile::tail_of(log, TAIL_ON_FAILURE) {
        let _ = stderr.write_all(&tail);
        if !tail.ends_with(b"\n") {
            let _ = writeln!(stderr);
        }
    }
}

/// What answers the hub's remote update: the binary this runner was started from, read
/// again for a newer release (none when it cannot tell where that is).
fn updater(
    shutdown: watch::Sender<Shutdown>,
    restart: Restart,
) -> Option<Arc<dyn crate::relay::link::UpdateHandler>> {
    let binary = std::env::current_exe().ok()?;
    let running = semver::Version::parse(env!("CARGO_PKG_VERSION")).ok()?;
    Some(Arc::new(Updater {
        binary,
        running,
        shutdown,
        restart,
    }))
}

/// The arguments of the detached runner: the same `abr up` minus `--background` and
/// `--replace` (the lock is free by then), marked as a background launch.
fn detached_args(args: &UpArgs) -> Vec<String> {
    up_args(args, Some(LaunchKind::Background))
}

/// The arguments a runner restarts with after a remote update: its own flags, minus
/// `--background`, `--replace` and `--enroll` (its credential is kept by then), launched
/// as it was (a background runner stays one).
fn restart_args(args: &UpArgs, launch: LaunchKind) -> Vec<String> {
    up_args(args, (launch == LaunchKind::Background).then_some(launch))
}

/// `abr up` with `args`' flags but `--background`, `--replace` and `--enroll`, and
/// `--launched-as` when given.
fn up_args(args: &UpArgs, launched_as: Option<LaunchKind>) -> Vec<String> {
    let mut out = vec!["up".to_owned()];
    if let Some(launch) = launched_as {
        out.push("--launched-as".to_owned());
        out.push(launch.to_string());
    }
    out.push("--wait-secs".to_owned());
    out.push(args.wait_secs.to_string());
    let mut put = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(flag.to_owned());
            out.push(value);
        }
    };
    put("--hub", args.hub.clone());
    put("--runner-id", args.runner_id.clone());
    put("--port", args.port.map(|p| p.to_string()));
    put(
        "--config",
        args.config.as_ref().map(|p| p.display().to_string()),
    );
    for (on, flag) in [
        (args.headless, "--headless"),
        (args.force, "--force"),
        (args.allow_session_export, "--allow-session-export"),
        (args.insecure_dev, "--insecure-dev"),
    ] {
        if on {
            out.push(flag.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn parse(args: &[&str]) -> UpArgs {
        let cli = crate::cli::Cli::try_parse_from(["abr", "up"].iter().chain(args)).unwrap();
        match cli.command {
            crate::cli::Command::Up(args) => args,
            other => panic!("not up: {other:?}"),
        }
    }

    #[test]
    fn the_detached_runner_gets_the_same_flags_minus_background_and_replace() {
        let args = parse(&[
            "--background",
            "--replace",
            "--hub",
            "https://hub.example.com",
            "--runner-id",
            "r1",
            "--port",
            "8790",
            "--headless",
            "--force",
            "--allow-session-export",
            "--insecure-dev",
        ]);
        let detached = detached_args(&args);
        assert!(
            !detached
                .iter()
                .any(|a| a == "--background" || a == "--replace")
        );
        let again = parse(&detached[1..].iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(again.launched_as, Some(LaunchKind::Background));
        assert_eq!(again.hub.as_deref(), Some("https://hub.example.com"));
        assert_eq!(again.runner_id.as_deref(), Some("r1"));
        assert_eq!(again.port, Some(8790));
        assert!(again.headless && again.force && again.insecure_dev);
        assert!(again.allow_session_export);
        assert!(!again.background && !again.replace);
    }

    #[test]
    fn a_restart_keeps_the_flags_and_the_launch_but_not_the_used_enrollment_code() {
        let args = parse(&[
            "--hub",
            "https://hub.example.com",
            "--runner-id",
            "r1",
            "--enroll",
            "code-used-once",
            "--headless",
        ]);
        let foreground = restart_args(&args, LaunchKind::Terminal);
        assert!(
            !foreground
                .iter()
                .any(|a| a.contains("enroll") || a.contains("code"))
        );
        let again = parse(
            &foreground[1..]
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            again.launched_as, None,
            "detected again, as at the first start"
        );
        assert_eq!(again.hub.as_deref(), Some("https://hub.example.com"));
        assert!(again.headless && again.enroll.is_none());
        let background = restart_args(&args, LaunchKind::Background);
        let again = parse(
            &background[1..]
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            again.launched_as,
            Some(LaunchKind::Background),
            "it stays one"
        );
    }
}
