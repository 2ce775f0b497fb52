//! A soak run, start to end:
//!
//! 1. the stack: the demo site, a fleet's database server, the replicas, the tenant's keys,
//!    the relay's hub and runner;
//! 2. the first session (a capture through the live view), a warm-up post on every replica
//!    (each launches its browser), a short idle, then the baseline: descriptors and gauges;
//! 3. the load for the run's length, a fleet's faults beside it, memory sampled every second;
//! 4. settling: every open operation waited to its end (at most the replicas' request
//!    deadline and 30 s), then idle until every replica's gauges are back at zero (at most
//!    30 s more): descriptors, gauges and, in a fleet, the tenant's sessions counter again;
//! 5. the replicas stopped gracefully (SIGTERM), then what they left: processes, profile
//!    folders, database connections; the faults they injected, from their files;
//! 6. the checks against the site's ground truth and the leaks, in the report.
//!
//! Ctrl-C (or SIGTERM) ends the load early and still checks; a second one aborts, and
//! everything started is killed as it is dropped.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::args::RunArgs;
use crate::checks;
use crate::faults::{self, FleetFault};
use crate::journal::Journal;
use crate::load::Load;
use crate::monitor::{self, Sampler};
use crate::processes::{chromium_processes, fd_count};
use crate::replica::Injected;
use crate::report::{ReplicaRow, Report};
use crate::stack::{Node, Part, Stack, TENANT, token};

/// How long settling may take beyond the replicas' request deadline (by which every run
/// they started has ended, or been given up).
const SETTLE_SLACK: Duration = Duration::from_secs(30);
/// How long the replicas idle after the load before they are measured.
const IDLE: Duration = Duration::from_secs(5);
/// How long they may take beyond that to hold nothing.
const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// How long the replicas may take to exit on SIGTERM (together).
const STOP_GRACE: Duration = Duration::from_secs(60);
/// How long what a replica started may take to end after it exited.
const LEFTOVER_GRACE: Duration = Duration::from_secs(15);
/// What a browser leaves in its `TMPDIR` (as `.ci/browser-leftovers` looks for it).
const FOLDERS: [&str; 3] = [
    "playwright_chromiumdev_profile-",
    "playwright-artifacts-",
    "org.chromium.Chromium.",
];

/// Runs the soak `args` describe: the report's verdict is the exit code (0 every check
/// held, 1 one failed, 2 the run itself failed).
pub(crate) fn main(args: RunArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("soak: error: a runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let outcome = runtime.block_on(async {
        let soak = run(&args, Arc::clone(&stop));
        tokio::pin!(soak);
        tokio::select! {
            outcome = &mut soak => outcome,
            () = interrupted() => {
                stop.store(true, Ordering::Relaxed);
                eprintln!("soak: stopping the load; the checks still run (again to abort)");
                tokio::select! {
                    outcome = &mut soak => outcome,
                    () = interrupted() => Err("aborted".to_owned()),
                }
            }
        }
    });
    // Whatever is left of the run (an abort) is dropped with the runtime.
    drop(runtime);
    match outcome {
        Ok(report) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(report.render().as_bytes());
            let _ = stdout.flush();
            if let Some(path) = &args.out
                && let Err(e) = write_json(path, &report)
            {
                eprintln!("soak: error: {e}");
                return ExitCode::from(2);
            }
            if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("soak: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn write_json(path: &Path, report: &Report) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(report).map_err(|e| format!("the report: {e}"))?;
    std::fs::write(path, json).map_err(|e| format!("{}: {e}", path.display()))
}

/// Ctrl-C or SIGTERM.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn say(line: &str) {
    eprintln!("soak: {line}");
}

/// The run: the report, or why there is none.
async fn run(args: &RunArgs, stop: Arc<AtomicBool>) -> Result<Report, String> {
    let began = Instant::now();
    let run: String = token()?
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect::<String>()
        .to_lowercase();
    let chromium_before = chromium_processes().len();
    let mut stack = Stack::start(args, &run).await?;
    let relay = if stack.relayed.is_some() {
        " with the relay's hub and runner"
    } else {
        ""
    };
    say(&format!(
        "run {run}: site {}, {} replica(s){relay} up in {:.1} s ({})",
        stack.site.base_url(),
        args.fleet,
        began.elapsed().as_secs_f64(),
        stack.dir.path().display()
    ));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("an HTTP client: {e}"))?;
    let journal = Arc::new(Journal::default());
    let replicas: Vec<Node> = stack
        .nodes
        .iter()
        .filter(|n| n.part == Part::Replica)
        .cloned()
        .collect();
    let load = Arc::new(Load::new(
        replicas.clone(),
        stack.relayed.clone(),
        stack.site.base_url(),
        run.clone(),
        Arc::clone(&journal),
        Arc::clone(&stop),
    )?);
    let sampler = Sampler::start(stack.nodes.iter().map(|n| n.pid).collect());

    let session = load.sign_in().await?;
    load.warm_up().await;
    let broken = journal.with(|ops| {
        !ops.posts.is_empty()
            && ops
                .posts
                .iter()
                .flat_map(|p| &p.calls)
                .all(|c| c.code.as_deref() == Some("provider_misconfigured"))
    });
    if broken {
        return Err(
            "the replicas cannot start a browser (provider_misconfigured): run `driver/setup`, \
             and run the soak through cargo (`cargo run -p abr-soak --bin soak`), which points \
             PLAYWRIGHT_DRIVER_PATH at driver/dist"
                .into(),
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let warm = sampler.elapsed();
    let mut rows = Vec::new();
    for node in &stack.nodes {
        rows.push(ReplicaRow {
            name: node.name.clone(),
            fds_start: fd_count(node.pid),
            gauges_start: monitor::gauges(&http, node).await.unwrap_or_default(),
            ..ReplicaRow::default()
        });
    }
    say(&format!(
        "warmed up ({session}); load for {} s with {} workers",
        args.duration().as_secs(),
        args.workers
    ));

    let load_began = Instant::now();
    let until = load_began + args.duration();
    let faults = (args.fleet > 1).then(|| {
        let planned = faults::plan(args.seed(), args.duration(), replicas.len());
        let replicas = replicas.iter().map(|n| (n.name.clone(), n.pid)).collect();
        let database = stack
            .database
            .as_ref()
            .map(|(server, _)| Arc::clone(server));
        tokio::spawn(faults::run(
            planned,
            replicas,
            database,
            Duration::from_secs(args.lease_secs),
            load_began,
            Arc::clone(&stop),
        ))
    });
    let progress = tokio::spawn(progress(Arc::clone(&journal), load_began));
    load.run(args.workers, args.seed(), until).await;
    progress.abort();
    let mut fleet_faults: Vec<FleetFault> = match faults {
        Some(task) => task.await.unwrap_or_default(),
        None => Vec::new(),
    };
    // On the operations' clock.
    let shift = load_began.duration_since(load.origin()).as_secs_f64();
    for fault in &mut fleet_faults {
        fault.at_secs += shift;
    }
    let load_secs = load_began.elapsed().as_secs_f64();
    say(&format!("load done after {load_secs:.0} s; settling"));

    load.settle(Duration::from_secs(args.request_timeout) + SETTLE_SLACK)
        .await;
    tokio::time::sleep(IDLE).await;
    let deadline = Instant::now() + IDLE_LIMIT;
    loop {
        let mut all_idle = true;
        for (row, node) in rows.iter_mut().zip(&stack.nodes) {
            match monitor::gauges(&http, node).await {
                Ok(gauges) => {
                    all_idle &= monitor::idle(&gauges);
                    row.gauges_end = gauges;
                }
                Err(_) => all_idle = false,
            }
        }
        if all_idle || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for (row, node) in rows.iter_mut().zip(&stack.nodes) {
        row.fds_end = fd_count(node.pid);
    }
    let tenant_sessions_idle = tenant_sessions(&stack).await;
    let samples = sampler.stop();
    for (i, row) in rows.iter_mut().enumerate() {
        row.rss = monitor::rss_of(&samples, i, warm);
    }

    say("stopping the replicas (SIGTERM)");
    stop_replicas(&mut stack, &mut rows).await;
    let database_connections_after = database_connections(&stack).await;
    let chromium_after = chromium_processes().len();
    let (faults_by_replica, mut faults_injected) = injected(&stack);
    for fault in fleet_faults.iter().filter(|f| f.error.is_none()) {
        *faults_injected.entry(fault.kind.to_owned()).or_default() += 1;
    }

    let ops = journal.ops();
    let mut checks = checks::truth(&ops, &stack.site.posts(), &stack.site.users(), &run);
    checks.extend(checks::leaks(
        &rows,
        database_connections_after,
        tenant_sessions_idle,
    ));
    let (timeline, timeline_left_off) = checks::timeline(&ops);
    let run_dir = stack.finish(args.keep_dir).await;
    Ok(Report {
        ok: checks.iter().all(|c| c.ok),
        seed: args.seed(),
        fleet: args.fleet,
        workers: args.workers,
        relay: args.relay(),
        chaos: args.chaos.to_string(),
        recycle_after: args.recycle_after,
        session: session.to_owned(),
        load_secs,
        total_secs: began.elapsed().as_secs_f64(),
        operations: checks::operations(&ops),
        faults_injected,
        faults_by_replica,
        fleet_faults,
        checks,
        timeline,
        timeline_left_off,
        replicas: rows,
        chromium_before,
        chromium_after,
        database_connections_after,
        tenant_sessions_idle,
        run_dir: run_dir.map(|d| d.display().to_string()),
    })
}

/// A line every 15 s while the load runs.
async fn progress(journal: Arc<Journal>, began: Instant) {
    loop {
        tokio::time::sleep(Duration::from_secs(15)).await;
        let (posts, tasks, browses, captures) = journal.with(|ops| {
            (
                ops.posts.len(),
                ops.tasks.len(),
                ops.browses.len(),
                ops.captures.len(),
            )
        });
        say(&format!(
            "{:>5.0} s: {posts} posts, {tasks} tasks, {browses} browse sessions, {captures} captures",
            began.elapsed().as_secs_f64()
        ));
    }
}

/// SIGTERM to every replica, each awaited; then what each left: processes (given a while
/// to end), browser folders in its `TMPDIR`.
async fn stop_replicas(stack: &mut Stack, rows: &mut [ReplicaRow]) {
    for replica in &mut stack.replicas {
        replica.ask_to_stop();
    }
    let deadline = std::time::Instant::now() + STOP_GRACE;
    for (replica, row) in stack.replicas.iter_mut().zip(rows.iter_mut()) {
        let (status, killed) = tokio::task::block_in_place(|| replica.wait_stopped(deadline));
        row.exit = match (status, killed) {
            (_, true) => format!("killed after {} s", STOP_GRACE.as_secs()),
            (Some(status), false) => match status.code() {
                Some(code) => format!("exited {code}"),
                None => format!("ended by {status}"),
            },
            (None, false) => "unknown".into(),
        };
    }
    let deadline = Instant::now() + LEFTOVER_GRACE;
    loop {
        let left: Vec<Vec<(u32, String)>> =
            stack.replicas.iter_mut().map(|r| r.descendants()).collect();
        if left.iter().all(Vec::is_empty) || Instant::now() > deadline {
            for (row, left) in rows.iter_mut().zip(left) {
                row.left_processes = left
                    .into_iter()
                    .map(|(pid, cmd)| format!("{pid} {}", shorten(&cmd)))
                    .collect();
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for (node, row) in stack.nodes.iter().zip(rows.iter_mut()) {
        row.left_folders = std::fs::read_dir(&node.tmp)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|name| FOLDERS.iter().any(|p| name.starts_with(p)))
            .collect();
        row.left_folders.sort();
    }
}

fn shorten(cmd: &str) -> String {
    if cmd.chars().count() > 120 {
        format!("{}...", cmd.chars().take(120).collect::<String>())
    } else {
        cmd.to_owned()
    }
}

/// The fleet's database's connections, once they are gone (at most 10 s).
async fn database_connections(stack: &Stack) -> Option<i64> {
    let (server, name) = stack.database.as_ref()?;
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{name}'");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = server
            .query_row("postgres", &sql)
            .await
            .ok()
            .and_then(|row| row.first().cloned().flatten())
            .and_then(|n| n.parse::<i64>().ok());
        if n == Some(0) || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The sessions the fleet's database counts for the tenant (its concurrency limit's count),
/// when idle.
async fn tenant_sessions(stack: &Stack) -> Option<i64> {
    let (server, name) = stack.database.as_ref()?;
    let sql = format!(
        "SELECT coalesce(sum(value), 0) FROM counters WHERE tenant_id = '{TENANT}' \
         AND counter = 'sessions'"
    );
    server
        .query_row(name, &sql)
        .await
        .ok()?
        .first()
        .cloned()
        .flatten()?
        .parse()
        .ok()
}

/// The faults each replica wrote it injected, and their sum by kind.
fn injected(stack: &Stack) -> (BTreeMap<String, Injected>, BTreeMap<String, u64>) {
    let mut by_replica = BTreeMap::new();
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for node in &stack.nodes {
        let injected: Injected = std::fs::read(&node.injected)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .unwrap_or_default();
        for (fault, n) in injected.values().flatten() {
            *total.entry(fault.clone()).or_default() += n;
        }
        by_replica.insert(node.name.clone(), injected);
    }
    (by_replica, total)
}
