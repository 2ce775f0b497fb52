//! The run's report: operations by kind and outcome, faults injected by kind, every check
//! with its violations, each replica's memory, descriptors, gauges and leftovers. Printed
//! as tables, and written as JSON (`--out`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::faults::FleetFault;
use crate::monitor::{GAUGES, Rss};

/// How many violations of one check are listed (the count is always whole).
pub(crate) const LISTED: usize = 20;
/// How many events the timeline keeps.
pub(crate) const TIMELINE: usize = 300;

/// One check: passed, or what violated it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Check {
    /// What it checks.
    pub(crate) name: String,
    /// Whether it holds.
    pub(crate) ok: bool,
    /// What was looked at.
    pub(crate) detail: String,
    /// How many violations there were.
    pub(crate) violation_count: usize,
    /// The first [`LISTED`] of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) violations: Vec<String>,
}

impl Check {
    /// `name` holds when there is no violation.
    pub(crate) fn new(
        name: impl Into<String>,
        detail: impl Into<String>,
        mut violations: Vec<String>,
    ) -> Self {
        let violation_count = violations.len();
        violations.truncate(LISTED);
        Self {
            name: name.into(),
            ok: violation_count == 0,
            detail: detail.into(),
            violation_count,
            violations,
        }
    }
}

/// The operations of one kind.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct OpCount {
    /// How many.
    pub(crate) count: u64,
    /// By outcome.
    pub(crate) outcomes: BTreeMap<String, u64>,
}

impl OpCount {
    /// Counts one with `outcome`.
    pub(crate) fn add(&mut self, outcome: impl Into<String>) {
        self.count += 1;
        *self.outcomes.entry(outcome.into()).or_default() += 1;
    }
}

/// An operation that did not end as asked (an event of the run's timeline).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    /// When it started, in seconds after the run's start.
    pub(crate) at_secs: f64,
    /// `post`, `relayed post`, `task`, `browse`, `capture`.
    pub(crate) kind: &'static str,
    /// The replica.
    pub(crate) replica: String,
    /// How it ended.
    pub(crate) outcome: String,
}

/// One replica, measured.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReplicaRow {
    /// `r0`, ...
    pub(crate) name: String,
    /// Its resident memory.
    pub(crate) rss: Rss,
    /// Open file descriptors after the warm-up.
    pub(crate) fds_start: Option<usize>,
    /// Open file descriptors at the end, idle.
    pub(crate) fds_end: Option<usize>,
    /// Its gauges after the warm-up, idle.
    pub(crate) gauges_start: BTreeMap<String, f64>,
    /// Its gauges at the end, idle (or the last read when it never was).
    pub(crate) gauges_end: BTreeMap<String, f64>,
    /// How it stopped on SIGTERM.
    pub(crate) exit: String,
    /// Processes it started that outlived it.
    pub(crate) left_processes: Vec<String>,
    /// Browser profile and artifact folders left in its `TMPDIR`.
    pub(crate) left_folders: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    /// Every check held.
    pub(crate) ok: bool,
    /// The seed.
    pub(crate) seed: u64,
    /// Replicas.
    pub(crate) fleet: u16,
    /// Workers of the load.
    pub(crate) workers: u16,
    /// Relayed posts through a hub too.
    pub(crate) relay: bool,
    /// The chaos layer's rates.
    pub(crate) chaos: String,
    /// `ABR_LOCAL_RECYCLE_AFTER_JOBS`.
    pub(crate) recycle_after: u32,
    /// How the first session was got.
    pub(crate) session: String,
    /// How long the load ran, in seconds.
    pub(crate) load_secs: f64,
    /// How long the whole run took, in seconds.
    pub(crate) total_secs: f64,
    /// Operations by kind.
    pub(crate) operations: BTreeMap<String, OpCount>,
    /// Faults injected, by kind: the chaos layers' (all replicas and roles together) and the
    /// fleet's own (`pause`, `database_restart`, those done).
    pub(crate) faults_injected: BTreeMap<String, u64>,
    /// The same by replica, then role (`jobs`, `captures`).
    pub(crate) faults_by_replica: BTreeMap<String, BTreeMap<String, BTreeMap<String, u64>>>,
    /// The fleet's own faults (pauses, database restarts).
    pub(crate) fleet_faults: Vec<FleetFault>,
    /// The checks.
    pub(crate) checks: Vec<Check>,
    /// The operations that did not end as asked, in time order (the first
    /// [`TIMELINE`] of them).
    pub(crate) timeline: Vec<Event>,
    /// How many more there were.
    pub(crate) timeline_left_off: usize,
    /// Each replica.
    pub(crate) replicas: Vec<ReplicaRow>,
    /// Chromium processes on the machine before the run and after it stopped its replicas
    /// (other programs' included).
    pub(crate) chromium_before: usize,
    /// See [`Report::chromium_before`].
    pub(crate) chromium_after: usize,
    /// The fleet database's connections after the replicas stopped.
    pub(crate) database_connections_after: Option<i64>,
    /// The sessions the fleet's database counted for the tenant when idle.
    pub(crate) tenant_sessions_idle: Option<i64>,
    /// The run's directory, when kept.
    pub(crate) run_dir: Option<String>,
}

impl Report {
    /// The report as tables.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let fleet = if self.fleet > 1 {
            format!("a fleet of {} on PostgreSQL", self.fleet)
        } else {
            "one runner on SQLite".to_owned()
        };
        let _ = writeln!(
            out,
            "soak: seed {}, {fleet}, {} workers, load {:.0} s, total {:.0} s",
            self.seed, self.workers, self.load_secs, self.total_secs
        );
        let _ = writeln!(out, "chaos: {}", self.chaos);
        if self.relay {
            let _ = writeln!(
                out,
                "relay: a hub and a runner linked to it (`abr up --hub`)"
            );
        }
        let _ = writeln!(out, "first session: {}", self.session);

        let _ = writeln!(out, "\noperations");
        for (kind, count) in &self.operations {
            let outcomes: Vec<String> = count
                .outcomes
                .iter()
                .map(|(outcome, n)| format!("{outcome} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "  {kind:<12} {:>5}  {}",
                count.count,
                outcomes.join(", ")
            );
        }

        let _ = writeln!(out, "\nfaults injected");
        if self.faults_injected.is_empty() {
            let _ = writeln!(out, "  (none)");
        }
        for (fault, n) in &self.faults_injected {
            let _ = writeln!(out, "  {fault:<18} {n:>5}");
        }
        for fault in &self.fleet_faults {
            let what = match &fault.replica {
                Some(replica) => format!("{} {replica}", fault.kind),
                None => fault.kind.to_owned(),
            };
            let outcome = fault.error.as_deref().unwrap_or("done");
            let _ = writeln!(
                out,
                "  {what:<18} at {:>6.1} s for {:>5.1} s: {outcome}",
                fault.at_secs, fault.took_secs
            );
        }

        let _ = writeln!(out, "\nreplicas");
        let _ = writeln!(
            out,
            "  {:<5} {:>10} {:>10} {:>10} {:>9} {:>7}  exit",
            "", "rss start", "rss peak", "rss end", "fds start", "fds end"
        );
        let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
        let fds = |n: Option<usize>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
        for r in &self.replicas {
            let _ = writeln!(
                out,
                "  {:<5} {:>10} {:>10} {:>10} {:>9} {:>7}  {}",
                r.name,
                mib(r.rss.start_kib),
                mib(r.rss.peak_kib),
                mib(r.rss.end_kib),
                fds(r.fds_start),
                fds(r.fds_end),
                r.exit
            );
        }
        let _ = writeln!(out, "  gauges (after warm-up -> end):");
        for r in &self.replicas {
            let shown: Vec<String> = GAUGES
                .iter()
                .filter_map(|(name, _)| {
                    let start = r.gauges_start.get(*name);
                    let end = r.gauges_end.get(*name);
                    (start.is_some() || end.is_some()).then(|| {
                        let v = |x: Option<&f64>| x.map_or_else(|| "-".to_owned(), f64::to_string);
                        format!("{name} {}->{}", v(start), v(end))
                    })
                })
                .collect();
            let _ = writeln!(out, "  {:<5} {}", r.name, shown.join(", "));
        }
        let _ = writeln!(
            out,
            "  Chromium processes on the machine: {} before, {} after",
            self.chromium_before, self.chromium_after
        );
        if let Some(n) = self.tenant_sessions_idle {
            let _ = writeln!(
                out,
                "  the tenant's sessions counted by the database, idle: {n}"
            );
        }
        if let Some(n) = self.database_connections_after {
            let _ = writeln!(
                out,
                "  database connections after the replicas stopped: {n}"
            );
        }

        let _ = writeln!(out, "\nchecks");
        for check in &self.checks {
            let verdict = if check.ok { "ok  " } else { "FAIL" };
            let _ = writeln!(out, "  {verdict} {}: {}", check.name, check.detail);
            for v in &check.violations {
                let _ = writeln!(out, "         - {v}");
            }
            if check.violation_count > check.violations.len() {
                let _ = writeln!(
                    out,
                    "         ... {} more",
                    check.violation_count - check.violations.len()
                );
            }
        }
        if let Some(dir) = &self.run_dir {
            let _ = writeln!(out, "\nrun directory (logs, data): {dir}");
        }
        let _ = writeln!(
            out,
            "\nsoak: {}",
            if self.ok {
                "every check held"
            } else {
                "a check FAILED"
            }
        );
        out
    }
}
