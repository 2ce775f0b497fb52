//! What the replicas hold, measured from outside: their resident memory every second (a
//! background sampler), their open file descriptors, and the gauges of their own
//! `GET /metrics` (jobs running and queued, open browse sessions and captures, the jobs'
//! browser pool).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::processes::rss_kib;
use crate::stack::Node;

/// The gauges read from `GET /metrics`, as the report names them.
pub(crate) const GAUGES: [(&str, &str); 8] = [
    ("jobs_running", "abr_jobs_running"),
    ("jobs_queued", "abr_jobs_queued"),
    ("browse_sessions_open", "abr_browse_sessions_open"),
    ("captures_open", "abr_captures_open"),
    (
        "contexts_in_use",
        "abr_browser_pool{kind=\"contexts_in_use\"}",
    ),
    ("browsers", "abr_browser_pool{kind=\"browsers\"}"),
    ("contexts_warm", "abr_browser_pool{kind=\"contexts_warm\"}"),
    ("database_reachable", "abr_database_reachable"),
];

/// The gauges that are back at zero when a replica is idle.
pub(crate) const IDLE_ZERO: [&str; 5] = [
    "jobs_running",
    "jobs_queued",
    "browse_sessions_open",
    "captures_open",
    "contexts_in_use",
];

/// One second's resident sizes, in KiB, replica by replica (`None`: not readable).
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// Since the sampler started.
    pub(crate) at: Duration,
    /// By replica.
    pub(crate) rss: Vec<Option<u64>>,
}

/// Samples the replicas' resident memory every second until stopped.
#[derive(Debug)]
pub(crate) struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    task: JoinHandle<()>,
    started: Instant,
}

impl Sampler {
    /// Starts sampling `pids`.
    pub(crate) fn start(pids: Vec<u32>) -> Self {
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let kept = Arc::clone(&samples);
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let rss = pids.iter().map(|pid| rss_kib(*pid)).collect();
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Sample {
                        at: started.elapsed(),
                        rss,
                    });
            }
        });
        Self {
            samples,
            task,
            started,
        }
    }

    /// How long it has sampled.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops it: every sample taken.
    pub(crate) fn stop(self) -> Vec<Sample> {
        self.task.abort();
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A replica's resident memory over the run, in KiB: after the warm-up, its highest, at
/// the end.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Rss {
    /// The first sample after the warm-up.
    pub(crate) start_kib: u64,
    /// The highest sample after the warm-up.
    pub(crate) peak_kib: u64,
    /// The last sample (idle, before the replicas stop).
    pub(crate) end_kib: u64,
}

/// Replica `replica`'s [`Rss`] from `samples`, counting from `warm` on.
pub(crate) fn rss_of(samples: &[Sample], replica: usize, warm: Duration) -> Rss {
    let after: Vec<u64> = samples
        .iter()
        .filter(|s| s.at >= warm)
        .filter_map(|s| s.rss.get(replica).copied().flatten())
        .collect();
    Rss {
        start_kib: after.first().copied().unwrap_or_default(),
        peak_kib: after.iter().copied().max().unwrap_or_default(),
        end_kib: after.last().copied().unwrap_or_default(),
    }
}

/// `node`'s gauges now (an operator's `GET /metrics`).
pub(crate) async fn gauges(
    http: &reqwest::Client,
    node: &Node,
) -> Result<BTreeMap<String, f64>, String> {
    let text = http
        .get(format!("{}/metrics", node.base))
        .bearer_auth(&node.token)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("{}'s metrics: {}", node.name, e.without_url()))?
        .text()
        .await
        .map_err(|e| format!("{}'s metrics: {}", node.name, e.without_url()))?;
    let mut found = BTreeMap::new();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        if let Some((name, _)) = GAUGES.iter().find(|(_, s)| *s == series)
            && let Ok(value) = value.parse::<f64>()
        {
            found.insert((*name).to_owned(), value);
        }
    }
    Ok(found)
}

/// Whether `gauges` say the replica is idle: nothing running, queued or open.
pub(crate) fn idle(gauges: &BTreeMap<String, f64>) -> bool {
    IDLE_ZERO
        .iter()
        .all(|name| gauges.get(*name).is_none_or(|v| *v == 0.0))
}
