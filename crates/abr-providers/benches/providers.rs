//! Provider benchmark, side by side with Node Playwright in one run:
//!
//! `cargo bench -p abr-providers --bench providers`
//!
//! 1. acquire-with-state (50 cookies, 2 origins × 10 localStorage items) + goto a local page +
//!    release, through each provider, vs a Node playwright-core script doing the same on a
//!    shared browser (`newContext({ storageState })`): medians and the ratio, back to back
//!    (each acquire beside the warm pool's refill the last release started) and for the local
//!    provider also alone (the pool refilled between samples, outside the timing);
//! 2. a realistic job (state, goto, fill, click, read back, export state, release) at 2 and 4
//!    concurrent jobs: throughput of the local provider vs Node on one shared browser, and of
//!    the local provider with its egress guard (the egress proxy every context goes through)
//!    on vs off, interleaved, median of 3 runs each: the guard's cost.
//!
//! Both sides drive the same Chromium binary (Debian's headless shell, which is also what
//! Playwright launches by default for headless Chromium). Set `ABR_BENCH_QUICK=1` for a short
//! smoke run, `ABR_BENCH_ONLY=acquire` to stop after the local provider's acquire (and its
//! phases), `ABR_BENCH_ONLY=memory` to measure only the memory per concurrent job.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark binary"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::{AcquireMode, AcquireRequest, SessionContext, SessionProvider};
use abr_protocol::{AgentSessionState, Cookie, LocalStorageItem, OriginState};
use abr_providers::conformance::TestSite;
use abr_providers::{
    BrowserSession, ChromiumBinary, LocalBrowserSessionProvider, LocalProviderConfig, base_args,
};
use playwright_rs::protocol::GotoOptions;
use serde_json::{Value, json};

fn bench_state(site: &TestSite) -> AgentSessionState {
    let mut cookies = Vec::new();
    for i in 0..25 {
        cookies.push(Cookie::new(
            format!("a{i}"),
            format!("value-a-{i}"),
            "127.0.0.1",
        ));
        cookies.push(Cookie::new(
            format!("b{i}"),
            format!("value-b-{i}"),
            "localhost",
        ));
    }
    let items = |p: &str| {
        (0..10)
            .map(|i| LocalStorageItem::new(format!("{p}{i}"), format!("v{i}")))
            .collect()
    };
    AgentSessionState {
        cookies,
        origins: vec![
            OriginState::new(site.origin_a(), items("ka")),
            OriginState::new(site.origin_b(), items("kb")),
        ],
        ..AgentSessionState::default()
    }
}

fn request(state: &AgentSessionState) -> AcquireRequest {
    AcquireRequest {
        profile: None,
        mode: AcquireMode::Unattended,
        platform: "bench".into(),
        state: Some(state.clone()),
        start_url: None,
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

async fn goto(session: &BrowserSession, url: &str) {
    session
        .page()
        .goto(url, GotoOptions::new().timeout(Duration::from_secs(30)))
        .await
        .expect("goto");
}

/// Each phase's ms: the acquire (context, state, page), the page load, the release.
async fn acquire_goto_release<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    state: &AgentSessionState,
    url: &str,
) -> [f64; 3] {
    let t0 = Instant::now();
    let lease = provider.acquire(request(state)).await.expect("acquire");
    let t1 = Instant::now();
    goto(lease.context(), url).await;
    let t2 = Instant::now();
    lease.release().await.expect("release");
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1000.0;
    [ms(t0, t1), ms(t1, t2), ms(t2, Instant::now())]
}

async fn job<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    state: &AgentSessionState,
    url: &str,
    i: usize,
) {
    let lease = provider.acquire(request(state)).await.expect("acquire");
    let session = lease.context();
    work(session, url, i).await;
    let exported = session.export_state().await.expect("export");
    assert!(
        exported.cookies.len() >= state.cookies.len(),
        "job {i} lost cookies"
    );
    lease.release().await.expect("release");
}

/// A job's page work: the page, fill, click, read back.
async fn work(session: &BrowserSession, url: &str, i: usize) {
    goto(session, url).await;
    session
        .page()
        .locator("#name")
        .fill(&format!("job{i}"), None)
        .await
        .expect("fill");
    session
        .page()
        .locator("#go")
        .click(None)
        .await
        .expect("click");
    let text = session
        .page()
        .locator("#out")
        .text_content()
        .await
        .expect("read back");
    assert_eq!(text.as_deref(), Some(format!("Hello, job{i}").as_str()));
}

/// Medians of `n` sequential acquire+goto+release after 3 warm-ups.
struct AcquireTimes {
    total: f64,
    /// acquire, goto, release.
    phases: [f64; 3],
}

async fn measure_acquire<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    state: &AgentSessionState,
    url: &str,
    n: usize,
) -> AcquireTimes {
    measure_acquire_between(provider, state, url, n, None).await
}

/// As [`measure_acquire`] on the local provider, with its warm pool refilled between samples
/// (outside the timing): one acquire as a lone job sees it, no refill of the last beside it.
async fn measure_acquire_settled(
    provider: &LocalBrowserSessionProvider,
    state: &AgentSessionState,
    url: &str,
    n: usize,
) -> AcquireTimes {
    measure_acquire_between(provider, state, url, n, Some(provider)).await
}

/// The samples of [`measure_acquire`], each after `settle`'s warm pool refilled, if given.
async fn measure_acquire_between<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    state: &AgentSessionState,
    url: &str,
    n: usize,
    settle: Option<&LocalBrowserSessionProvider>,
) -> AcquireTimes {
    for _ in 0..3 {
        acquire_goto_release(provider, state, url).await;
    }
    let mut totals = Vec::with_capacity(n);
    let mut phases: [Vec<f64>; 3] = Default::default();
    for _ in 0..n {
        if let Some(local) = settle {
            local.settle().await;
        }
        let sample = acquire_goto_release(provider, state, url).await;
        totals.push(sample.iter().sum());
        for (list, ms) in phases.iter_mut().zip(sample) {
            list.push(ms);
        }
    }
    AcquireTimes {
        total: median(&mut totals),
        phases: phases.map(|mut list| median(&mut list)),
    }
}

/// What one page read and one redacted frame cost on a loaded page, against the floor of a
/// round trip to the page and a plain screenshot: where a task's rails and frames spend.
async fn reads(local: &LocalBrowserSessionProvider, state: &AgentSessionState, url: &str) {
    use abr_core::guard::PageProbe as _;
    use abr_protocol::Selector;
    use playwright_rs::protocol::{ScreenshotOptions, ScreenshotType};

    const N: usize = 30;
    let lease = local.acquire(request(state)).await.expect("acquire");
    let session = lease.context();
    goto(session, url).await;
    let t = Duration::from_secs(10);
    let selector = Selector::Css("#go".into());
    let mut rows: Vec<(&str, Vec<f64>)> = Vec::new();
    for name in [
        "evaluate `() => 1` (one round trip to the page)",
        "locator evaluate `(el) => 1` on `#go` (the floor of an element read)",
        "signals (the probe: the page's signals)",
        "inspect `#go` (the probe: one element's facts)",
        "plain viewport JPEG, quality 70",
        "redacted frame (blur, confirm, JPEG, confirm, unblur)",
    ] {
        rows.push((name, Vec::with_capacity(N)));
    }
    for _ in 0..N + 3 {
        let mut sample = Vec::new();
        let t0 = Instant::now();
        session.page().evaluate_value("1").await.expect("eval");
        sample.push(t0.elapsed());
        let t0 = Instant::now();
        let _: Value = session
            .page()
            .locator("#go")
            .first()
            .evaluate("(el) => 1", None::<()>)
            .await
            .expect("locator eval");
        sample.push(t0.elapsed());
        let t0 = Instant::now();
        session.signals(t).await.expect("signals");
        sample.push(t0.elapsed());
        let t0 = Instant::now();
        session
            .inspect(&selector, abr_core::guard::Reach::FirstVisible, t)
            .await
            .expect("inspect");
        sample.push(t0.elapsed());
        let t0 = Instant::now();
        let options = ScreenshotOptions::builder()
            .screenshot_type(ScreenshotType::Jpeg)
            .quality(70)
            .build();
        session
            .page()
            .screenshot(options)
            .await
            .expect("screenshot");
        sample.push(t0.elapsed());
        let t0 = Instant::now();
        session
            .redacted_frame(512 * 1024, &abr_core::guard::PageRedaction::default(), t)
            .await
            .expect("redacted frame");
        sample.push(t0.elapsed());
        for ((_, list), d) in rows.iter_mut().zip(sample) {
            list.push(d.as_secs_f64() * 1000.0);
        }
    }
    // The same page with text to mask: 400 paragraphs of prose, 100 of them with an email
    // address or a card number in view or below it (every run is found and masked, not only
    // those in the viewport).
    session
        .page()
        .evaluate_value(
            "(() => { const rows = []; for (let i = 0; i < 400; i++) { \
             const extra = i % 4 === 0 ? (i % 8 === 0 ? ` write to user${i}@example.com` \
             : ' card 4111 1111 1111 1111') : ''; \
             rows.push(`<p>Paragraph ${i} of ordinary prose about the order and its items${extra}.</p>`); } \
             document.body.insertAdjacentHTML('beforeend', rows.join('')); return 1; })()",
        )
        .await
        .expect("text to mask");
    let mut plain_text = Vec::with_capacity(N);
    let mut masked_text = Vec::with_capacity(N);
    let mut masked_runs = 0;
    for _ in 0..N + 3 {
        let options = ScreenshotOptions::builder()
            .screenshot_type(ScreenshotType::Jpeg)
            .quality(70)
            .build();
        let t0 = Instant::now();
        session
            .page()
            .screenshot(options)
            .await
            .expect("screenshot");
        plain_text.push(t0.elapsed().as_secs_f64() * 1000.0);
        let t0 = Instant::now();
        let frame = session
            .redacted_frame(512 * 1024, &abr_core::guard::PageRedaction::default(), t)
            .await
            .expect("redacted frame with masks");
        masked_text.push(t0.elapsed().as_secs_f64() * 1000.0);
        masked_runs = frame.masked;
    }
    rows.push((
        "plain viewport JPEG, quality 70, the page with 400 paragraphs",
        plain_text,
    ));
    rows.push((
        "redacted frame of that page (every sensitive run masked: see the count below)",
        masked_text,
    ));
    lease.release().await.expect("release");
    println!("\n## page reads and frames on one loaded page, median ms of {N}\n");
    println!("| read | median ms |");
    println!("|---|---|");
    for (name, mut list) in rows {
        // The first three are warm-ups.
        let mut list = list.split_off(3);
        println!("| {name} | {:.1} |", median(&mut list));
    }
    println!("\nmasked runs in the last frame: {masked_runs}");
}

/// Jobs per second of `jobs` jobs on `concurrency` workers, after 3 warm-ups, and the CPU
/// ms they took in the runner, the driver and the browsers ([`cpu_split`]).
async fn measure_jobs<P: SessionProvider<Context = BrowserSession>>(
    provider: Arc<P>,
    state: Arc<AgentSessionState>,
    url: Arc<String>,
    jobs: usize,
    concurrency: usize,
) -> (f64, [f64; 4]) {
    for w in 0..3 {
        job(provider.as_ref(), &state, &url, 1_000_000 + w).await;
    }
    let cpu_before = cpu_split();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (provider, state, url, next) =
                (provider.clone(), state.clone(), url.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= jobs {
                        break;
                    }
                    job(provider.as_ref(), &state, &url, i).await;
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("worker");
    }
    let rate = jobs as f64 / t0.elapsed().as_secs_f64();
    let cpu_after = cpu_split();
    (rate, std::array::from_fn(|i| cpu_after[i] - cpu_before[i]))
}

#[derive(serde::Deserialize)]
struct NodeRun {
    #[serde(rename = "samplesMs")]
    samples_ms: Vec<f64>,
    #[serde(rename = "wallMs")]
    wall_ms: f64,
    jobs: usize,
    /// acquire mode: the samples of each phase.
    #[serde(default)]
    phases: Option<NodePhases>,
    /// CPU ms after the warm-up: the script (client and driver in one process), the browser.
    #[serde(rename = "cpuMs")]
    cpu_ms: NodeCpu,
}

#[derive(serde::Deserialize)]
struct NodeCpu {
    script: f64,
    browser: f64,
}

impl NodeRun {
    /// Jobs per second.
    fn rate(&self) -> f64 {
        self.jobs as f64 / (self.wall_ms / 1000.0)
    }

    /// CPU ms per job: the script, the browser.
    fn cpu_per_job(&self) -> [f64; 2] {
        [self.cpu_ms.script, self.cpu_ms.browser].map(|ms| ms / self.jobs as f64)
    }
}

/// One throughput cell, for the CPU tables after the throughput table.
struct Cell {
    concurrency: usize,
    /// Node's CPU ms per job: script, browser.
    node_cpu: [f64; 2],
    /// ABR's with the guard on, per job: runner, driver, browser, the whole machine.
    abr_cpu: [f64; 4],
    abr_rate: f64,
    recipe_rate: f64,
    /// The recipe's CPU ms per job: script, browser.
    recipe_cpu: [f64; 2],
}

#[derive(serde::Deserialize)]
struct NodePhases {
    acquire: Vec<f64>,
    goto: Vec<f64>,
    release: Vec<f64>,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the Node peer runs on.
struct NodeCase {
    binary: ChromiumBinary,
    /// false: cookies only, no localStorage (the floor of a context).
    with_origins: bool,
    /// ABR's recipe written in Node (warm contexts, cookies on claim, localStorage by init
    /// script) instead of `newContext({ storageState })`.
    abr_recipe: bool,
}

const SAME_BINARY: NodeCase = NodeCase {
    binary: ChromiumBinary::HeadlessShell,
    with_origins: true,
    abr_recipe: false,
};

/// What ABR does, done by a Node script: ABR's own overhead is what it costs beyond this.
const ABR_RECIPE: NodeCase = NodeCase {
    abr_recipe: true,
    ..SAME_BINARY
};

async fn node(
    mode: &str,
    iterations: usize,
    concurrency: usize,
    site: &TestSite,
    state: &AgentSessionState,
    case: &NodeCase,
) -> NodeRun {
    let config = json!({
        "mode": mode,
        "iterations": iterations,
        "concurrency": concurrency,
        "withOrigins": case.with_origins,
        "recipe": if case.abr_recipe { "abr" } else { "storageState" },
        "executablePath": case.binary.path(),
        "args": base_args(),
        "originA": site.origin_a(),
        "originB": site.origin_b(),
        "cookies": serde_json::to_value(&state.cookies).unwrap(),
        "origins": serde_json::to_value(&state.origins).unwrap(),
    });
    let out = tokio::process::Command::new("node")
        .arg(repo_root().join("bench/node-peer.mjs"))
        .arg(config.to_string())
        .output()
        .await
        .expect("run node (install it and run driver/setup)");
    assert!(
        out.status.success(),
        "node peer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("node peer output")
}

/// The proportional set size (kB) of `root` and every process under it (`/proc`, Linux):
/// shared pages counted once across the tree, as `smaps_rollup` splits them.
fn tree_pss_kb(root: u32) -> u64 {
    let procs = processes();
    descendants(root, &procs)
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|rollup| {
            rollup.lines().find_map(|l| {
                l.strip_prefix("Pss:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .sum()
}

/// A process as `/proc/<pid>/stat` shows it.
struct Proc {
    pid: u32,
    ppid: u32,
    /// User + system CPU, in clock ticks (10 ms).
    ticks: u64,
    /// The same of its children that ended and were waited for (a closed context's
    /// renderer).
    ended_children: u64,
}

/// Every process now (Linux `/proc`).
fn processes() -> Vec<Proc> {
    let mut procs = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return procs;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ... utime stime ...`: the command may hold spaces and
        // parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
        if let (Some(ppid), Some(utime), Some(stime), Some(cutime), Some(cstime)) =
            (num(1), num(11), num(12), num(13), num(14))
        {
            procs.push(Proc {
                pid,
                ppid: ppid as u32,
                ticks: utime + stime,
                ended_children: cutime + cstime,
            });
        }
    }
    procs
}

/// `root` and every process under it.
fn descendants(root: u32, procs: &[Proc]) -> Vec<u32> {
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(procs.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    tree
}

/// CPU ms the whole machine spent so far (every core; `/proc/stat`).
fn machine_busy_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0.0;
    };
    let ticks: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...: all but idle and iowait.
    let busy: u64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    busy as f64 * 10.0
}

/// CPU ms so far of this process (the runner, and the test site it serves), of the
/// Playwright driver it started, of the browsers under the driver, and of the machine.
fn cpu_split() -> [f64; 4] {
    let procs = processes();
    let me = std::process::id();
    // With the children that ended (renderers come and go with contexts), except for this
    // process: the Node peers it ran and waited for are not the runner's.
    let ms = |pids: &[u32]| {
        procs
            .iter()
            .filter(|p| pids.contains(&p.pid))
            .map(|p| {
                let ended = if p.pid == me { 0 } else { p.ended_children };
                (p.ticks + ended) as f64 * 10.0
            })
            .sum::<f64>()
    };
    let drivers: Vec<u32> = procs
        .iter()
        .filter(|p| p.ppid == me)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("run-driver"))
        })
        .map(|p| p.pid)
        .collect();
    let browsers: Vec<u32> = drivers
        .iter()
        .flat_map(|d| descendants(*d, &procs).into_iter().skip(1))
        .collect();
    [ms(&[me]), ms(&drivers), ms(&browsers), machine_busy_ms()]
}

/// A process tree's memory once it is still: its PSS (kB) and how many processes it has.
#[derive(Clone, Copy)]
struct TreeMemory {
    pss_kb: u64,
    processes: usize,
}

/// The memory of `root`'s tree once it has settled: sampled every 250 ms until two samples
/// in a row have the same processes and a PSS within 1% (at most 10 s), then the median of
/// three more. A browser just launched is still growing a second after it says it is ready
/// (it starts helpers, and Chromium may start a spare renderer for the next page), and a
/// baseline read while it grows makes a job look free.
async fn settled_tree(root: u32) -> TreeMemory {
    let sample = || TreeMemory {
        pss_kb: tree_pss_kb(root),
        processes: descendants(root, &processes()).len(),
    };
    let mut last = sample();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = sample();
        let still = now.processes == last.processes
            && now.pss_kb.abs_diff(last.pss_kb) * 100 <= last.pss_kb.max(1);
        last = now;
        if still {
            break;
        }
    }
    let mut samples = vec![last];
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        samples.push(sample());
    }
    samples.sort_by_key(|m| m.pss_kb);
    samples[1]
}

/// Below this, a tree's growth is not what a held job costs (a job's page needs a renderer,
/// tens of MB): the idle tree already held the process the job took (Chromium's spare
/// renderer), or memory was handed back meanwhile. Reported as such, never as a ratio.
const LEAST_JOB_GROWTH_MB: f64 = 5.0;

/// Memory per concurrent job at 1, 2 and 4 jobs held open (state, page, fill, click), ABR's
/// local provider (this process: the runner's side, its driver and browser) against Node
/// (its script and browser): the growth of each side's process tree over the same tree
/// idle (browser warm, no job), per job, and the whole tree; each tree read once it is
/// still ([`settled_tree`]). A growth too small to be a job's ([`LEAST_JOB_GROWTH_MB`]) is
/// printed as not measured, with the processes of both trees, and gives no ratio.
async fn memory(
    local: &Arc<LocalBrowserSessionProvider>,
    state: &Arc<AgentSessionState>,
    url: &Arc<String>,
    site: &TestSite,
) {
    println!(
        "\n## memory per concurrent job (PSS of the process tree: runner + driver + browser for ABR, script + browser for Node)\n"
    );
    println!(
        "| concurrent jobs | Node per job MB | ABR per job MB | ABR / Node | Node tree MB | ABR tree MB | ABR / Node (tree) | Node processes idle → held | ABR processes idle → held |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let me = std::process::id();
    let mut unmeasured = Vec::new();
    for concurrency in [1usize, 2, 4] {
        // Node: idle, then the jobs held.
        let config = json!({
            "mode": "hold",
            "iterations": 0,
            "concurrency": concurrency,
            "executablePath": SAME_BINARY.binary.path(),
            "args": base_args(),
            "originA": site.origin_a(),
            "originB": site.origin_b(),
            "cookies": serde_json::to_value(&state.cookies).unwrap(),
            "origins": serde_json::to_value(&state.origins).unwrap(),
        });
        let mut child = tokio::process::Command::new("node")
            .arg(repo_root().join("bench/node-peer.mjs"))
            .arg(config.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node peer");
        let pid = child.id().expect("node pid");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stdout.take().expect("stdout"),
        ));
        lines
            .next_line()
            .await
            .expect("node ready")
            .expect("node idle");
        let node_idle = settled_tree(pid).await;
        tokio::io::AsyncWriteExt::write_all(&mut stdin, b"go\n")
            .await
            .expect("go");
        lines
            .next_line()
            .await
            .expect("node held")
            .expect("node held line");
        let node_held = settled_tree(pid).await;
        tokio::io::AsyncWriteExt::write_all(&mut stdin, b"end\n")
            .await
            .expect("end");
        child.wait().await.expect("node exit");

        // ABR: the same jobs held on leases of the local provider (guard on; its browser is
        // up from the cell before, or launched by a first job released here).
        if concurrency == 1 {
            let lease = local.acquire(request(state)).await.expect("acquire");
            lease.release().await.expect("release");
        }
        let abr_idle = settled_tree(me).await;
        let mut leases = Vec::new();
        for i in 0..concurrency {
            let lease = local.acquire(request(state)).await.expect("acquire");
            work(lease.context(), url, i).await;
            leases.push(lease);
        }
        let abr_held = settled_tree(me).await;
        for lease in leases {
            lease.release().await.expect("release");
        }
        let mb = |kb: u64| kb as f64 / 1024.0;
        // Signed: a tree that shrank says so.
        let per = |held: TreeMemory, idle: TreeMemory| {
            (mb(held.pss_kb) - mb(idle.pss_kb)) / concurrency as f64
        };
        let (node_per, abr_per) = (per(node_held, node_idle), per(abr_held, abr_idle));
        let measured = |per: f64| per >= LEAST_JOB_GROWTH_MB;
        let cell = |per: f64| {
            if measured(per) {
                format!("{per:.1}")
            } else {
                format!("not measured ({per:.1})")
            }
        };
        let ratio = if measured(node_per) && measured(abr_per) {
            format!("{:.2}", abr_per / node_per)
        } else {
            unmeasured.push(concurrency);
            "—".to_owned()
        };
        println!(
            "| {concurrency} | {} | {} | {ratio} | {:.1} | {:.1} | {:.2} | {} → {} | {} → {} |",
            cell(node_per),
            cell(abr_per),
            mb(node_held.pss_kb),
            mb(abr_held.pss_kb),
            abr_held.pss_kb as f64 / node_held.pss_kb.max(1) as f64,
            node_idle.processes,
            node_held.processes,
            abr_idle.processes,
            abr_held.processes,
        );
        if measured(node_per) && measured(abr_per) {
            println!(
                "BENCH memory_per_job_n{concurrency} {:.3} 0.5",
                abr_per / node_per
            );
        }
    }
    if !unmeasured.is_empty() {
        println!(
            "\nNot measured at {unmeasured:?} concurrent job(s): a tree grew by less than \
             {LEAST_JOB_GROWTH_MB} MB per job, less than a job's renderer costs (the idle tree \
             already held the process the job took, or memory was handed back while it ran). \
             No ratio is given for it: run again."
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var_os("ABR_BENCH_QUICK").is_some();
    let (n_acquire, n_jobs) = if quick { (5, 8) } else { (30, 40) };
    let site = TestSite::start().await.expect("test site");
    let state = bench_state(&site);
    let url = format!("{}/page", site.origin_a());
    if std::env::var("ABR_BENCH_ONLY").is_ok_and(|only| only == "memory") {
        bare_memory(&site, &state, &url).await;
        return;
    }

    println!(
        "# ABR provider benchmark ({} acquire samples, {} jobs per throughput cell)\n",
        n_acquire, n_jobs
    );
    println!(
        "## acquire-with-state (50 cookies, 2 origins x 10 items) + goto + release, median ms\n"
    );
    println!("| implementation | median ms | ratio to Node |");
    println!("|---|---|---|");
    let mut node_run = node("acquire", n_acquire, 1, &site, &state, &SAME_BINARY).await;
    let node_median = median(&mut node_run.samples_ms);
    println!(
        "| Node playwright-core, newContext({{storageState}}), headless shell | {node_median:.1} | 1.00 |"
    );

    let local = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    }));
    let local_times = measure_acquire(local.as_ref(), &state, &url, n_acquire).await;
    let local_median = local_times.total;
    // The same provider without the egress proxy (its own warm browser), for the guard's
    // cost: here, and in the throughput cells.
    let unguarded = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: None,
        ..LocalProviderConfig::default()
    }));
    let unguarded_times = measure_acquire(unguarded.as_ref(), &state, &url, n_acquire).await;
    println!(
        "| **ABR local provider** (headless shell, shared browser) | {local_median:.1} | {:.2} |",
        local_median / node_median
    );
    println!(
        "BENCH acquire_vs_node {:.3} 0.25",
        local_median / node_median
    );
    let settled = measure_acquire_settled(local.as_ref(), &state, &url, n_acquire).await;
    println!(
        "| ABR local provider, a lone acquire (warm pool refilled between samples) | {:.1} | {:.2} |",
        settled.total,
        settled.total / node_median
    );
    println!(
        "BENCH acquire_lone_vs_node {:.3} 0.25",
        settled.total / node_median
    );
    println!(
        "BENCH acquire_lone_own_overhead_ms {:.1} 15",
        settled.phases[0] + settled.phases[2]
    );

    let floor = NodeCase {
        binary: ChromiumBinary::HeadlessShell,
        with_origins: false,
        abr_recipe: false,
    };
    let mut floor_run = node("acquire", n_acquire, 1, &site, &state, &floor).await;
    let floor_median = median(&mut floor_run.samples_ms);
    println!(
        "| Node, cookies only (no localStorage: the floor of its context) | {floor_median:.1} | {:.2} |",
        floor_median / node_median
    );
    let full = NodeCase {
        binary: ChromiumBinary::Chromium,
        with_origins: true,
        abr_recipe: false,
    };
    let mut full_run = node("acquire", n_acquire, 1, &site, &state, &full).await;
    let full_median = median(&mut full_run.samples_ms);
    println!(
        "| Node, newContext({{storageState}}) on full Chromium (the reference baseline's binary) | {full_median:.1} | {:.2} |",
        full_median / node_median
    );
    println!(
        "\nABR local / Node on full Chromium: {:.2}; ABR local / Node cookies-only floor: {:.2}",
        local_median / full_median,
        local_median / floor_median
    );

    println!(
        "\nA lone acquire (warm pool ready; phases: acquire {:.1}, goto {:.1}, release {:.1} ms) \
         against back-to-back ones (each beside the refill the last one started): the first is \
         a job's latency on a runner with a moment between jobs, the second at full load.\n",
        settled.phases[0], settled.phases[1], settled.phases[2]
    );
    // Where the time goes: the page load is the floor under both; the rest is each side's
    // own overhead (the context with its state and page, and the close).
    let node_phases = node_run.phases.as_mut().expect("the Node peer's phases");
    let node_times = [
        median(&mut node_phases.acquire),
        median(&mut node_phases.goto),
        median(&mut node_phases.release),
    ];
    println!("\n### acquire phases, median ms\n");
    println!("| phase | ABR local | ABR local, egress guard off | Node | ABR / Node |");
    println!("|---|---|---|---|---|");
    for (i, phase) in [
        "acquire (context, state, page)",
        "goto (the page load)",
        "release (close)",
    ]
    .iter()
    .enumerate()
    {
        println!(
            "| {phase} | {:.1} | {:.1} | {:.1} | {:.2} |",
            local_times.phases[i],
            unguarded_times.phases[i],
            node_times[i],
            local_times.phases[i] / node_times[i]
        );
    }
    let own = local_times.phases[0] + local_times.phases[2];
    println!(
        "\nABR's own overhead (acquire + release): {own:.1} ms; Node's: {:.1} ms",
        node_times[0] + node_times[2]
    );
    println!("BENCH acquire_own_overhead_ms {own:.1} 15");
    reads(local.as_ref(), &state, &url).await;
    if std::env::var("ABR_BENCH_ONLY").is_ok_and(|only| only == "acquire") {
        unguarded.shutdown().await;
        local.shutdown().await;
        return;
    }

    // The other providers, same work. CDP attaches to a Chromium (headless shell) launched
    // here; Steel and Kernel run against the local doubles, whose CDP proxies to a real
    // Chromium and which create a browser per session (their cost is in the numbers).
    let n_remote = (n_acquire / 3).max(3);
    let chromium = abr_doubles::chromium::LocalChromium::launch(
        &abr_doubles::chromium::ChromiumOptions::default(),
    )
    .await
    .expect("chromium for CDP");
    let cdp = abr_providers::CdpSessionProvider::new(abr_providers::CdpProviderConfig {
        egress: Some(site.egress()),
        ..abr_providers::CdpProviderConfig::new(chromium.http_url())
    });
    let cdp_median = measure_acquire(&cdp, &state, &url, n_acquire).await.total;
    println!(
        "| ABR CDP attach (new context per job) | {cdp_median:.1} | {:.2} |",
        cdp_median / node_median
    );
    cdp.shutdown().await;
    drop(chromium);
    let steel_double = abr_doubles::SteelDouble::start(abr_doubles::SteelOptions::default())
        .await
        .expect("steel double");
    let steel = abr_providers::SteelSessionProvider::oss_serialized(
        abr_providers::SteelProviderConfig {
            egress: Some(site.egress()),
            ..abr_providers::SteelProviderConfig::oss(steel_double.base_url())
        },
        Duration::from_secs(60),
    );
    let steel_median = measure_acquire(&steel, &state, &url, n_remote).await.total;
    println!(
        "| ABR Steel (local double: create session, attach, release) | {steel_median:.1} | {:.2} |",
        steel_median / node_median
    );
    drop(steel_double);
    let kernel_double = abr_doubles::KernelDouble::start(abr_doubles::KernelOptions::default())
        .await
        .expect("kernel double");
    let kernel = abr_providers::KernelSessionProvider::new(abr_providers::KernelProviderConfig {
        base_url: kernel_double.base_url(),
        egress: Some(site.egress()),
        ..abr_providers::KernelProviderConfig::new(kernel_double.api_key())
    });
    let kernel_median = measure_acquire(&kernel, &state, &url, n_remote).await.total;
    println!(
        "| ABR Kernel (local double: a browser per lease) | {kernel_median:.1} | {:.2} |",
        kernel_median / node_median
    );
    drop(kernel_double);

    println!(
        "\n## realistic job (state, goto, fill, click, read back, export, release): throughput\n"
    );
    println!(
        "| concurrency | Node jobs/s | ABR local jobs/s (egress guard on) | ABR / Node | ABR local, guard off (`egress: None`) | guard on / off |"
    );
    println!("|---|---|---|---|---|---|");
    let state = Arc::new(state);
    let url = Arc::new(url);
    let reps = if quick { 1 } else { 3 };
    let mut cells = Vec::new();
    for concurrency in [2, 4] {
        let node_run = node("job", n_jobs, concurrency, &site, &state, &SAME_BINARY).await;
        let recipe_run = node("job", n_jobs, concurrency, &site, &state, &ABR_RECIPE).await;
        // Interleaved (on, off, off, on, ...) so that drift of the machine cancels out.
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let mut abr_cpu = [0.0; 4];
        for rep in 0..reps {
            for guarded in [rep % 2 == 0, rep % 2 != 0] {
                let provider = if guarded { &local } else { &unguarded };
                let (rate, cpu) = measure_jobs(
                    provider.clone(),
                    state.clone(),
                    url.clone(),
                    n_jobs,
                    concurrency,
                )
                .await;
                if guarded {
                    on.push(rate);
                    for (sum, ms) in abr_cpu.iter_mut().zip(cpu) {
                        *sum += ms;
                    }
                } else {
                    off.push(rate)
                }
            }
        }
        let guarded_jobs = (on.len() * n_jobs) as f64;
        let node_rate = node_run.rate();
        let (on, off) = (median(&mut on), median(&mut off));
        println!(
            "| {concurrency} | {node_rate:.2} | {on:.2} | {:.2} | {off:.2} | {:.3} |",
            on / node_rate,
            on / off
        );
        println!(
            "BENCH throughput_n{concurrency} {:.3} 3.0 higher",
            on / node_rate
        );
        cells.push(Cell {
            concurrency,
            node_cpu: node_run.cpu_per_job(),
            abr_cpu: abr_cpu.map(|ms| ms / guarded_jobs),
            abr_rate: on,
            recipe_rate: recipe_run.rate(),
            recipe_cpu: recipe_run.cpu_per_job(),
        });
    }
    println!(
        "\n### CPU per job in the throughput cells, ms (runner: this process, with the test \
         site it serves; Node's script holds its client and driver in one process)\n"
    );
    println!(
        "| concurrency | Node script | Node browser | Node total | ABR runner | ABR driver | ABR browser | ABR total | ABR / Node | ABR: machine busy, share of 2 cores |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let abr_total = |cell: &Cell| cell.abr_cpu[..3].iter().sum::<f64>();
    for cell in &cells {
        let node_total = cell.node_cpu.iter().sum::<f64>();
        let [runner, driver, browser, machine] = cell.abr_cpu;
        // The machine's CPU per job over what 2 cores give a job's share of the wall time.
        let busy = machine * cell.abr_rate / (1000.0 * cores);
        println!(
            "| {} | {:.0} | {:.0} | {node_total:.0} | {runner:.0} | {driver:.0} | {browser:.0} | {:.0} | {:.2} | {:.0}% |",
            cell.concurrency,
            cell.node_cpu[0],
            cell.node_cpu[1],
            abr_total(cell),
            abr_total(cell) / node_total,
            100.0 * busy
        );
    }
    println!(
        "\n### ABR against its own recipe done by a Node script (warm contexts, cookies on claim, \
         localStorage by init script): ABR's own overhead\n"
    );
    println!(
        "| concurrency | recipe in Node jobs/s | ABR jobs/s | ABR / recipe | recipe CPU ms per job | ABR CPU ms per job |"
    );
    println!("|---|---|---|---|---|---|");
    for cell in &cells {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} |",
            cell.concurrency,
            cell.recipe_rate,
            cell.abr_rate,
            cell.abr_rate / cell.recipe_rate,
            cell.recipe_cpu.iter().sum::<f64>(),
            abr_total(cell)
        );
    }
    unguarded.shutdown().await;
    if let Some(proxy) = local.egress_proxy().await {
        println!(
            "\negress proxy: {} connections allowed, {} refused, {} failed",
            proxy.allowed(),
            proxy.refused(),
            proxy.failed()
        );
    }
    local.shutdown().await;
    bare_memory(&site, &state, &url).await;
}

/// Memory on a provider with no warm pool: a held job claims a warm context and the pool is
/// topped up only when it ends, so with a pool the tree would not grow by what a job costs.
/// Without one, it grows by exactly that.
async fn bare_memory(site: &TestSite, state: &AgentSessionState, url: &str) {
    let bare = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(site.egress()),
        prewarm: 0,
        ..LocalProviderConfig::default()
    }));
    memory(
        &bare,
        &Arc::new(state.clone()),
        &Arc::new(url.to_owned()),
        site,
    )
    .await;
    bare.shutdown().await;
}
