//! A fleet's own faults, at moments drawn from the seed while the load runs: a replica
//! paused past its lease (SIGSTOP for twice the lease, then SIGCONT: the others end its
//! work, and it wakes up fenced), and the database restarted (`pg_ctl restart`: every
//! replica loses its connections at once).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abr_store::testing::PgServer;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;
use tokio::time::Instant;

use crate::processes::signal;
use crate::replica::derive_seed;

/// A fault planned at a moment of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Planned {
    /// Replica `i` paused past its lease.
    Pause(usize),
    /// The database restarted.
    DatabaseRestart,
}

/// A fault as it happened.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FleetFault {
    /// `pause` or `database_restart`.
    pub(crate) kind: &'static str,
    /// The replica paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replica: Option<String>,
    /// When, in seconds after the load started.
    pub(crate) at_secs: f64,
    /// How long it lasted, in seconds.
    pub(crate) took_secs: f64,
    /// Whether it was done as planned (else why not).
    pub(crate) error: Option<String>,
}

/// The faults of a run of `duration` over `replicas` replicas, from `seed`: a pause every
/// two minutes (at least one), one database restart (two from five minutes on), each at a
/// moment drawn between 15 % and 85 % of the run, in order.
pub(crate) fn plan(seed: u64, duration: Duration, replicas: usize) -> Vec<(Duration, Planned)> {
    let mut rng = StdRng::seed_from_u64(derive_seed(seed, 7));
    let secs = duration.as_secs_f64();
    let pauses = (duration.as_secs() / 120).max(1);
    let restarts = if duration >= Duration::from_secs(300) {
        2
    } else {
        1
    };
    let mut at = || Duration::from_secs_f64(rng.random_range(0.15..0.85) * secs);
    let mut planned: Vec<(Duration, Planned)> = Vec::new();
    for _ in 0..restarts {
        planned.push((at(), Planned::DatabaseRestart));
    }
    for _ in 0..pauses {
        planned.push((at(), Planned::Pause(0)));
    }
    // The replicas paused, drawn after the moments (one stream, one order).
    for (_, fault) in &mut planned {
        if let Planned::Pause(i) = fault {
            *i = rng.random_range(0..replicas.max(1));
        }
    }
    planned.sort_by_key(|(at, _)| *at);
    planned
}

/// Carries out `planned` from `start` on, one fault at a time, until done or `stop`:
/// `replicas` are the replicas' names and process ids, `lease` their heartbeat lease.
pub(crate) async fn run(
    planned: Vec<(Duration, Planned)>,
    replicas: Vec<(String, u32)>,
    database: Option<Arc<PgServer>>,
    lease: Duration,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> Vec<FleetFault> {
    let mut done = Vec::new();
    for (at, fault) in planned {
        while start.elapsed() < at {
            if stop.load(Ordering::Relaxed) {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let began = start.elapsed();
        let (kind, replica, error) = match fault {
            Planned::Pause(i) => {
                let Some((name, pid)) = replicas.get(i).cloned() else {
                    continue;
                };
                let error = pause(pid, 2 * lease, &stop).await;
                ("pause", Some(name), error)
            }
            Planned::DatabaseRestart => {
                let error = match database.clone() {
                    None => Some("no database".to_owned()),
                    Some(server) => tokio::task::spawn_blocking(move || server.restart())
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|restarted| restarted)
                        .err(),
                };
                ("database_restart", None, error)
            }
        };
        done.push(FleetFault {
            kind,
            replica,
            at_secs: began.as_secs_f64(),
            took_secs: (start.elapsed() - began).as_secs_f64(),
            error,
        });
    }
    done
}

/// SIGSTOP to `pid`, SIGCONT after `for_` (or at once on a stop).
async fn pause(pid: u32, for_: Duration, stop: &AtomicBool) -> Option<String> {
    if !signal(pid, "STOP") {
        return Some("SIGSTOP was refused".into());
    }
    let until = Instant::now() + for_;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (!signal(pid, "CONT")).then(|| "SIGCONT was refused".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_plans_the_same_faults_within_the_run() {
        let minute = Duration::from_secs(60);
        let planned = plan(1, minute, 3);
        assert_eq!(planned, plan(1, minute, 3));
        assert_eq!(planned.len(), 2);
        assert!(
            planned
                .iter()
                .all(|(at, _)| *at >= minute.mul_f64(0.15) && *at <= minute.mul_f64(0.85))
        );
        let long = plan(1, 10 * minute, 3);
        let pauses = long
            .iter()
            .filter(|(_, f)| matches!(f, Planned::Pause(i) if *i < 3))
            .count();
        assert_eq!((pauses, long.len() - pauses), (5, 2));
        assert!(long.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
