//! The checks: every outcome against the demo site's ground truth (its posts and its admin
//! page's users), and the leaks the replicas left (processes, descriptors, contexts,
//! database connections, profile folders, memory growth).
//!
//! What an answer says about the site, for one idempotency key or one task:
//!
//! | answer | posts (users) on the site |
//! |---|---|
//! | confirmed (`succeeded`) | exactly one |
//! | `failed`, `needs_reauth`, `rejected`, an error that says nothing was done | none |
//! | `uncertain` | none or one |
//! | no answer, or an error that says it may have acted | none or one |
//!
//! and never two for one key, whatever was answered.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use abr_demo::site::{Post, User};
use abr_protocol::TaskState;

use crate::journal::{Answer, Ops, PostOp, state_name};
use crate::monitor::IDLE_ZERO;
use crate::report::{Check, Event, OpCount, ReplicaRow, TIMELINE};

/// RSS at the end may be at most this many times the start.
pub(crate) const RSS_GROWTH_LIMIT: u64 = 3;
/// Open descriptors at the end may exceed the start by at most this many.
pub(crate) const FD_GROWTH_LIMIT: usize = 64;

/// The operations by kind and outcome.
pub(crate) fn operations(ops: &Ops) -> BTreeMap<String, OpCount> {
    let mut counts: BTreeMap<String, OpCount> = BTreeMap::new();
    for op in &ops.posts {
        let kind = if op.relay { "relayed post" } else { "post" };
        counts.entry(kind.into()).or_default().add(post_label(op));
        for call in &op.calls {
            let mut label = call.answer.label();
            if let Some(code) = &call.code {
                label = format!("{label}:{code}");
            }
            if call.replayed {
                label.push_str(" (replayed)");
            }
            let kind = if op.relay {
                "relayed call"
            } else {
                "post call"
            };
            counts.entry(kind.into()).or_default().add(label);
        }
    }
    for op in &ops.tasks {
        counts.entry("task".into()).or_default().add(op.label());
    }
    for op in &ops.browses {
        counts
            .entry("browse".into())
            .or_default()
            .add(op.outcome.clone());
    }
    for op in &ops.captures {
        counts
            .entry("capture".into())
            .or_default()
            .add(op.outcome.clone());
    }
    counts
}

/// The operations that did not end as asked, in time order: the first [`TIMELINE`], and
/// how many more.
pub(crate) fn timeline(ops: &Ops) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    for op in &ops.posts {
        let kind = if op.relay { "relayed post" } else { "post" };
        for call in op.calls.iter().filter(|c| c.answer != Answer::Confirmed) {
            let mut outcome = call.answer.label();
            if let Some(code) = &call.code {
                outcome = format!("{outcome}:{code}");
            }
            events.push(Event {
                at_secs: op.at,
                kind,
                replica: call.replica.clone(),
                outcome,
            });
        }
    }
    for op in ops
        .tasks
        .iter()
        .filter(|t| t.state != Some(TaskState::Succeeded))
    {
        events.push(Event {
            at_secs: op.at,
            kind: "task",
            replica: op.replica.clone(),
            outcome: op.label(),
        });
    }
    for op in ops.browses.iter().filter(|b| b.outcome != "closed") {
        events.push(Event {
            at_secs: op.at,
            kind: "browse",
            replica: format!("r{}", op.replica),
            outcome: op.outcome.clone(),
        });
    }
    for op in ops.captures.iter().filter(|c| c.outcome != "captured") {
        events.push(Event {
            at_secs: op.at,
            kind: "capture",
            replica: format!("r{}", op.replica),
            outcome: op.outcome.clone(),
        });
    }
    events.sort_by(|a, b| a.at_secs.total_cmp(&b.at_secs));
    let left_off = events.len().saturating_sub(TIMELINE);
    events.truncate(TIMELINE);
    (events, left_off)
}

/// A post's outcome: its record's end, else its last call's answer.
fn post_label(op: &PostOp) -> String {
    op.records
        .values()
        .next()
        .or_else(|| op.calls.last().map(|c| &c.answer))
        .map_or_else(|| "none".into(), Answer::label)
}

/// Every outcome against the site's ground truth.
pub(crate) fn truth(ops: &Ops, posts: &[Post], users: &[User], run: &str) -> Vec<Check> {
    let mut on_site: HashMap<&str, usize> = HashMap::new();
    for post in posts {
        *on_site.entry(post.text.as_str()).or_default() += 1;
    }
    let mut checks = vec![posts_true(ops, &on_site), never_twice(ops, &on_site)];
    checks.push(tasks_true(ops, users));
    checks.push(browses_true(ops, &on_site));
    checks.push(captures_true(ops));
    checks.push(nothing_unknown(ops, posts, users, run));
    checks
}

fn posts_true(ops: &Ops, on_site: &HashMap<&str, usize>) -> Check {
    let mut violations = Vec::new();
    let mut repeats = 0;
    for op in &ops.posts {
        let n = on_site.get(op.text.as_str()).copied().unwrap_or(0);
        let labels: Vec<String> = op
            .calls
            .iter()
            .map(|c| format!("{}:{}", c.replica, c.answer.label()))
            .collect();
        let ids: BTreeSet<&String> = op
            .calls
            .iter()
            .filter_map(|c| c.post_id.as_ref())
            .chain(op.records.keys())
            .collect();
        if ids.len() > 1 {
            violations.push(format!("key {}: {} records {ids:?}", op.key, ids.len()));
        }
        if op.records.values().any(|a| *a == Answer::Running) {
            violations.push(format!("key {}: its record never ended", op.key));
        }
        let answers: Vec<&Answer> = op
            .calls
            .iter()
            .map(|c| &c.answer)
            .chain(op.records.values())
            .collect();
        let (lo, hi) = expected(&answers, ids.is_empty());
        if lo > hi {
            violations.push(format!(
                "key {}: answers disagree {labels:?}, records {:?}",
                op.key,
                op.records.values().map(Answer::label).collect::<Vec<_>>()
            ));
        } else if n < lo || n > hi {
            violations.push(format!(
                "key {}: {n} on the site, answered {labels:?}, records {:?}",
                op.key,
                op.records.values().map(Answer::label).collect::<Vec<_>>()
            ));
        }
        // A repeat after the first answer names the first's record, as a replay.
        let first = op.calls.first().and_then(|c| c.post_id.as_ref());
        for call in op
            .calls
            .iter()
            .skip(1)
            .filter(|c| !c.concurrent && !c.resolution)
        {
            repeats += 1;
            if first.is_some() && call.post_id.is_some() && !call.replayed {
                violations.push(format!(
                    "key {}: a repeat was not answered as a replay",
                    op.key
                ));
            }
        }
    }
    Check::new(
        "posts true to the site",
        format!(
            "{} keys, {repeats} repeated after an answer, {} raced",
            ops.posts.len(),
            ops.posts
                .iter()
                .filter(|o| o.calls.iter().any(|c| c.concurrent))
                .count()
        ),
        violations,
    )
}

/// How many posts one key's answers allow on the site: `(at least, at most)`.
fn expected(answers: &[&Answer], no_record: bool) -> (usize, usize) {
    let (mut lo, mut hi) = (0, 1);
    for answer in answers {
        match answer {
            Answer::Confirmed => lo = 1,
            Answer::Failed | Answer::NeedsReauth => hi = 0,
            _ => {}
        }
    }
    // Only errors that say nothing was done, and no record: nothing was done.
    if no_record
        && answers
            .iter()
            .all(|a| matches!(a, Answer::Error { .. }) && !a.is_ambiguous())
    {
        hi = 0;
    }
    (lo, hi)
}

fn never_twice(ops: &Ops, on_site: &HashMap<&str, usize>) -> Check {
    let violations = ops
        .posts
        .iter()
        .filter_map(|op| {
            let n = on_site.get(op.text.as_str()).copied().unwrap_or(0);
            (n > 1).then(|| format!("key {}: {n} posts on the site", op.key))
        })
        .collect();
    Check::new(
        "never two posts for one idempotency key",
        format!("{} keys", ops.posts.len()),
        violations,
    )
}

fn tasks_true(ops: &Ops, users: &[User]) -> Check {
    let mut added: HashMap<&str, usize> = HashMap::new();
    for user in users {
        *added.entry(user.email.as_str()).or_default() += 1;
    }
    let mut violations = Vec::new();
    for op in &ops.tasks {
        let n = added.get(op.email.as_str()).copied().unwrap_or(0);
        let id = op.task_id.as_deref().unwrap_or("(not created)");
        let (lo, hi) = if op.create_error.is_some() {
            (0, 0)
        } else {
            match op.state {
                Some(TaskState::Succeeded) => (1, 1),
                Some(TaskState::Failed | TaskState::NeedsReauth | TaskState::Rejected) => (0, 0),
                Some(TaskState::Uncertain) => (0, 1),
                Some(state) => {
                    violations.push(format!("task {id}: not ended ({})", state_name(state)));
                    (0, 1)
                }
                None => {
                    violations.push(format!("task {id}: its state was never read"));
                    (0, 1)
                }
            }
        };
        if n < lo || n > hi {
            violations.push(format!(
                "task {id}: {n} user(s) {} on the site, the task {}",
                op.email,
                op.label()
            ));
        }
    }
    Check::new(
        "tasks true to the site",
        format!("{} tasks", ops.tasks.len()),
        violations,
    )
}

fn browses_true(ops: &Ops, on_site: &HashMap<&str, usize>) -> Check {
    let mut violations = Vec::new();
    for op in &ops.browses {
        let id = op.browse_id.as_deref().unwrap_or("(not opened)");
        if op.committing {
            violations.push(format!("browse {id}: typing was committing"));
        }
        if on_site.get(op.text.as_str()).copied().unwrap_or(0) > 0 {
            violations.push(format!("browse {id}: its typed text was posted"));
        }
        // Closed by its caller, or ended by the runner (a replica paused past its lease has
        // its sessions ended by another, `failed`): never left open.
        let ended = matches!(op.state, Some(TaskState::Closed | TaskState::Failed));
        if op.browse_id.is_some() && !ended {
            let state = op.state.map_or("unknown", state_name);
            violations.push(format!("browse {id}: not ended after the load ({state})"));
        }
    }
    Check::new(
        "browse sessions commit nothing and end (closed, or failed by the runner)",
        format!("{} sessions", ops.browses.len()),
        violations,
    )
}

fn captures_true(ops: &Ops) -> Check {
    let mut violations = Vec::new();
    for op in &ops.captures {
        if let Some(Err(e)) = &op.session_ok {
            violations.push(format!(
                "capture of {} on r{}: {e}",
                op.username, op.replica
            ));
        }
        if op.left_open.is_some() {
            violations.push(format!(
                "capture of {} on r{}: never cancelled",
                op.username, op.replica
            ));
        }
    }
    let captured = ops
        .captures
        .iter()
        .filter(|c| c.session_ok.is_some())
        .count();
    Check::new(
        "captured sessions are scoped and signed in",
        format!("{} captures, {captured} captured", ops.captures.len()),
        violations,
    )
}

/// Nothing of this run on the site that no operation made.
fn nothing_unknown(ops: &Ops, posts: &[Post], users: &[User], run: &str) -> Check {
    let texts: BTreeSet<&str> = ops.posts.iter().map(|p| p.text.as_str()).collect();
    let emails: BTreeSet<&str> = ops.tasks.iter().map(|t| t.email.as_str()).collect();
    let tag = format!("soak {run} ");
    let mut violations: Vec<String> = posts
        .iter()
        .filter(|p| p.text.starts_with(&tag) && !texts.contains(p.text.as_str()))
        .map(|p| format!("a post no key made: {:?}", p.text))
        .collect();
    violations.extend(
        users
            .iter()
            .filter(|u| u.email.contains(run) && !emails.contains(u.email.as_str()))
            .map(|u| format!("a user no task added: {}", u.email)),
    );
    Check::new(
        "nothing on the site that no operation made",
        format!("{} posts, {} users on the site", posts.len(), users.len()),
        violations,
    )
}

/// The leaks, replica by replica, and the database's connections.
pub(crate) fn leaks(
    rows: &[ReplicaRow],
    database_connections: Option<i64>,
    tenant_sessions: Option<i64>,
) -> Vec<Check> {
    let mut processes = Vec::new();
    let mut folders = Vec::new();
    let mut stopped = Vec::new();
    let mut contexts = Vec::new();
    let mut fds = Vec::new();
    let mut rss = Vec::new();
    for r in rows {
        processes.extend(r.left_processes.iter().map(|p| format!("{}: {p}", r.name)));
        folders.extend(r.left_folders.iter().map(|f| format!("{}: {f}", r.name)));
        if r.exit != "exited 0" {
            stopped.push(format!("{}: {}", r.name, r.exit));
        }
        if r.gauges_end.is_empty() {
            contexts.push(format!("{}: its gauges were never read", r.name));
        }
        for name in IDLE_ZERO {
            if let Some(v) = r.gauges_end.get(name).filter(|v| **v != 0.0) {
                contexts.push(format!("{}: {name} {v} when idle", r.name));
            }
        }
        match (r.fds_start, r.fds_end) {
            (Some(start), Some(end)) if end > start + FD_GROWTH_LIMIT => {
                fds.push(format!("{}: {start} -> {end} open descriptors", r.name));
            }
            (Some(_), Some(_)) => {}
            _ => fds.push(format!("{}: its descriptors were not counted", r.name)),
        }
        if r.rss.start_kib == 0 || r.rss.end_kib > RSS_GROWTH_LIMIT * r.rss.start_kib {
            rss.push(format!(
                "{}: {} KiB -> {} KiB (peak {} KiB)",
                r.name, r.rss.start_kib, r.rss.end_kib, r.rss.peak_kib
            ));
        }
    }
    let mut checks = vec![
        Check::new(
            "replicas stop gracefully on SIGTERM",
            "SIGTERM, then 60 s to exit 0",
            stopped,
        ),
        Check::new(
            "no process outlives its replica",
            "Chromium, the driver: the replica's marked processes and their descendants, 15 s after it exited",
            processes,
        ),
        Check::new(
            "no browser profile or artifacts folder left",
            "the replicas' TMPDIR after they stopped",
            folders,
        ),
        Check::new(
            "idle replicas hold nothing",
            format!("{} at 0 when idle after the load", IDLE_ZERO.join(", ")),
            contexts,
        ),
        Check::new(
            "file descriptors bounded",
            format!("at most {FD_GROWTH_LIMIT} more at the end, idle, than after the warm-up"),
            fds,
        ),
        Check::new(
            "memory growth bounded",
            format!("RSS at the end at most {RSS_GROWTH_LIMIT}x the RSS after the warm-up"),
            rss,
        ),
    ];
    if let Some(n) = tenant_sessions {
        let violations = if n == 0 {
            Vec::new()
        } else {
            vec![format!("{n} session(s) still counted for the tenant")]
        };
        checks.push(Check::new(
            "the tenant holds no session when idle",
            "the fleet database's sessions counter (the tenant's concurrency limit)",
            violations,
        ));
    }
    if let Some(n) = database_connections {
        let violations = if n == 0 {
            Vec::new()
        } else {
            vec![format!(
                "{n} connection(s) to the database after the replicas stopped"
            )]
        };
        checks.push(Check::new(
            "no database connection left",
            "pg_stat_activity of the fleet's database",
            violations,
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_answers_allow_on_the_site() {
        let busy = Answer::Error {
            code: "provider_busy".into(),
            retryable: true,
        };
        let lost = Answer::Error {
            code: "timeout_outcome_unknown".into(),
            retryable: false,
        };
        assert_eq!(expected(&[&Answer::Confirmed], false), (1, 1));
        assert_eq!(expected(&[&Answer::Failed, &Answer::Failed], false), (0, 0));
        assert_eq!(expected(&[&Answer::Uncertain], false), (0, 1));
        assert_eq!(expected(&[&busy], true), (0, 0));
        assert_eq!(expected(&[&busy, &Answer::Confirmed], false), (1, 1));
        assert_eq!(expected(&[&lost], true), (0, 1));
        assert_eq!(
            expected(&[&Answer::Transport("reset".into())], true),
            (0, 1)
        );
        assert_eq!(
            expected(&[&Answer::Confirmed, &Answer::Failed], false),
            (1, 0)
        );
    }
}
