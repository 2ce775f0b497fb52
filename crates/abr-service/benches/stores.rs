//! Store benchmark (issue 36), in one run: what keeping the ledger costs a post and a task on
//! each store, with the browser taken out (the core's fake provider and scripted strategy,
//! so a job is pure engine + store work):
//!
//! `cargo bench -p abr-service --bench stores`
//!
//! For each of: the in-memory store, SQLite (a file in a temp dir, sealed), PostgreSQL with
//! one replica, and PostgreSQL with three replicas (three engines, each with its own pool,
//! on one database; jobs spread over them), it runs posts with idempotency keys and tasks
//! (create → approve → the end, told to a completion sink), 8 at a time, and reports
//! operations per second and the latency per operation (median, p99); the store's added
//! latency is the difference to the in-memory store of the same run. On PostgreSQL it also
//! reads the server's own counters (`pg_stat_database`: transactions committed and rows
//! written) around each phase: writes per post and per task. The PostgreSQL server is a
//! throwaway one this benchmark starts and stops (`abr_store::testing::PgServer`; `fsync`
//! off, so the figures are the database's work, not the disk's).
//!
//! `ABR_BENCH_QUICK=1` for a short run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark binary"
)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abr_core::DynSessionProvider;
use abr_core::limits::TenantLimits;
use abr_core::store::InMemoryStore;
use abr_core::testing::{FakeContext, FakeProvider, ScriptedStrategy, actor};
use abr_engine::{Engine, EngineBuilder, EngineConfig, EngineStore, TaskCompletion, TaskEnd};
use abr_protocol::{
    AgentSessionState, ApproveRequest, Cookie, PlatformPolicy, PostContent, PostRequest, Role,
    SecretValue, StepPlan, TaskRequest, TaskState,
};
use abr_store::testing::PgServer;
use abr_store::{PgStore, SealingKey, SqliteStore};
use serde_json::json;
use tokio::sync::{Semaphore, oneshot};

const CONCURRENCY: usize = 8;

fn key() -> SealingKey {
    SealingKey::from_hex(&"7c".repeat(32)).unwrap()
}

/// Tells each task's end to whoever waits for it.
#[derive(Debug, Default)]
struct Ends(Mutex<HashMap<String, oneshot::Sender<TaskEnd>>>);

impl TaskCompletion for Ends {
    fn completed(&self, end: TaskEnd) {
        if let Some(tx) = self.0.lock().unwrap().remove(&end.record.task_id) {
            let _ = tx.send(end);
        }
    }
}

struct Replica {
    engine: Engine<FakeContext>,
    ends: Arc<Ends>,
}

fn replica(store: Arc<dyn EngineStore>) -> Replica {
    let provider = Arc::new(FakeProvider::new());
    provider
        .page()
        .text_after("role=button[name=Submit]", "Saved");
    let jobs: DynSessionProvider<FakeContext> = provider;
    let ends = Arc::new(Ends::default());
    let engine = EngineBuilder::new(
        EngineConfig {
            max_concurrent_jobs: CONCURRENCY,
            max_queued_jobs: 10_000,
            tenant_limits: TenantLimits {
                concurrent_sessions: 1_000,
                daily_executions: 1_000_000,
                retries: 5,
            },
            ..EngineConfig::default()
        },
        Arc::clone(&jobs),
        jobs,
        store,
    )
    .strategy(Arc::new(ScriptedStrategy::new(
        "fake",
        &PlatformPolicy::default(),
    )))
    .unwrap()
    .body_hash_key(SecretValue::new("bench-secret"))
    .completion(ends.clone())
    .build()
    .unwrap();
    Replica { engine, ends }
}

fn post(text: &str) -> PostRequest {
    PostRequest {
        platform: "fake".into(),
        session: AgentSessionState {
            cookies: vec![Cookie::new("sid", "v", ".example.com")],
            ..AgentSessionState::default()
        },
        session_id: None,
        content: PostContent::text(text),
        workspace_id: None,
        account_id: None,
        scope: None,
    }
}

fn task() -> TaskRequest {
    let plan: StepPlan = serde_json::from_value(json!({
        "targetUrl": "https://tool.example/admin/users",
        "steps": [
            {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the email"},
            {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"}
        ],
        "verification": {"method": "dom_check", "text": "Saved"},
        "risk": "medium"
    }))
    .unwrap();
    TaskRequest {
        profile: None,
        plan,
        inputs: BTreeMap::from([("email".to_owned(), SecretValue::new("a@example.com"))]),
        secret_inputs: Vec::new(),
        session: None,
        session_id: None,
        scope: None,
        platform: None,
        tenant_id: None,
        proposal_id: None,
        dry_run: false,
        handoff: None,
    }
}

/// Latencies (ms) and the wall time of one phase.
struct Phase {
    latencies: Vec<f64>,
    wall: Duration,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
    fn percentile(&self, p: f64) -> f64 {
        let mut v = self.latencies.clone();
        v.sort_by(f64::total_cmp);
        let i = ((v.len() as f64 - 1.0) * p).round() as usize;
        v[i]
    }
}

/// `n` operations of `kind` over `replicas`, `CONCURRENCY` at a time.
async fn run(replicas: &[Arc<Replica>], tenant: &str, kind: &str, n: usize) -> Phase {
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let started = Instant::now();
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let permit = Arc::clone(&gate).acquire_owned().await.unwrap();
        let replica = Arc::clone(&replicas[i % replicas.len()]);
        let (tenant, kind) = (tenant.to_owned(), kind.to_owned());
        handles.push(tokio::spawn(async move {
            let _permit = permit;
            let t = Instant::now();
            if kind == "post" {
                let posted = replica
                    .engine
                    .post(
                        &actor(Role::Agent, &tenant),
                        Some(&format!("k{i}")),
                        post(&format!("bench {i}")),
                    )
                    .await
                    .unwrap();
                let abr_engine::PostReply::Result(result) = posted.reply else {
                    panic!("a post of this engine answers its result");
                };
                assert!(result.ok, "{result:?}");
            } else {
                let created = replica
                    .engine
                    .create_task(&actor(Role::Agent, &tenant), task(), Some(&format!("t{i}")))
                    .await
                    .unwrap();
                let (tx, rx) = oneshot::channel();
                replica
                    .ends
                    .0
                    .lock()
                    .unwrap()
                    .insert(created.record.task_id.clone(), tx);
                replica
                    .engine
                    .approve_task(
                        &actor(Role::Approver, &tenant),
                        &created.record.task_id,
                        &ApproveRequest {
                            approved_by: Some("bench".into()),
                            plan_hash: created.record.plan_hash.clone(),
                        },
                    )
                    .await
                    .unwrap();
                let end = rx.await.unwrap();
                assert_eq!(end.record.state, TaskState::Succeeded, "{:?}", end.record);
            }
            t.elapsed().as_secs_f64() * 1000.0
        }));
    }
    let mut latencies = Vec::with_capacity(n);
    for h in handles {
        latencies.push(h.await.unwrap());
    }
    Phase {
        latencies,
        wall: started.elapsed(),
    }
}

/// `(transactions committed, rows written)` of database `db` so far.
async fn pg_counters(server: &PgServer, db: &str) -> (f64, f64) {
    // A backend flushes its statistics when it goes idle, at most once a second, and an
    // idle one whose flush was held back does it within 10 s (PostgreSQL 15).
    tokio::time::sleep(Duration::from_secs(11)).await;
    let row = server
        .query_row(
            db,
            &format!(
                "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted \
                 FROM pg_stat_database WHERE datname = '{db}'"
            ),
        )
        .await
        .unwrap();
    let number = |i: usize| row[i].as_deref().unwrap().parse::<f64>().unwrap();
    (number(0), number(1))
}

struct Variant {
    name: String,
    posts: Phase,
    tasks: Phase,
    /// Per post and per task: transactions, rows written (PostgreSQL only).
    writes: Option<((f64, f64), (f64, f64))>,
}

async fn measure(
    name: &str,
    replicas: Vec<Arc<Replica>>,
    pg: Option<(&PgServer, &str)>,
    n_posts: usize,
    n_tasks: usize,
) -> Variant {
    let tenant = name.replace(' ', "-");
    // Warm-up: prepared statements, pools, the engines' first jobs.
    run(&replicas, &format!("{tenant}-warm"), "post", 16).await;
    run(&replicas, &format!("{tenant}-warm"), "task", 8).await;
    let c0 = match pg {
        Some((server, db)) => Some(pg_counters(server, db).await),
        None => None,
    };
    let posts = run(&replicas, &tenant, "post", n_posts).await;
    let c1 = match pg {
        Some((server, db)) => Some(pg_counters(server, db).await),
        None => None,
    };
    let tasks = run(&replicas, &tenant, "task", n_tasks).await;
    let c2 = match pg {
        Some((server, db)) => Some(pg_counters(server, db).await),
        None => None,
    };
    let writes = match (c0, c1, c2) {
        (Some(a), Some(b), Some(c)) => Some((
            ((b.0 - a.0) / n_posts as f64, (b.1 - a.1) / n_posts as f64),
            ((c.0 - b.0) / n_tasks as f64, (c.1 - b.1) / n_tasks as f64),
        )),
        _ => None,
    };
    Variant {
        name: name.to_owned(),
        posts,
        tasks,
        writes,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var_os("ABR_BENCH_QUICK").is_some();
    let (n_posts, n_tasks) = if quick { (200, 100) } else { (1_000, 500) };
    let server = tokio::task::spawn_blocking(PgServer::start)
        .await
        .unwrap()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut variants = Vec::new();

    let memory: Arc<dyn EngineStore> = Arc::new(InMemoryStore::new());
    variants.push(
        measure(
            "memory",
            vec![Arc::new(replica(memory))],
            None,
            n_posts,
            n_tasks,
        )
        .await,
    );

    let sqlite: Arc<dyn EngineStore> =
        Arc::new(SqliteStore::open(&dir.path().join("abr.db"), Some(key()), false).unwrap());
    variants.push(
        measure(
            "sqlite",
            vec![Arc::new(replica(sqlite))],
            None,
            n_posts,
            n_tasks,
        )
        .await,
    );

    for replicas in [1, 3] {
        let url = server.create_database().await.unwrap();
        let db = url.rsplit('/').next().unwrap().to_owned();
        let mut engines = Vec::new();
        for _ in 0..replicas {
            let store: Arc<dyn EngineStore> = Arc::new(
                PgStore::connect(&url, Some(key()), false, 16)
                    .await
                    .unwrap(),
            );
            engines.push(Arc::new(replica(store)));
        }
        let name = format!("postgres x{replicas}");
        variants.push(measure(&name, engines, Some((&server, &db)), n_posts, n_tasks).await);
    }

    let base_post = variants[0].posts.percentile(0.5);
    let base_task = variants[0].tasks.percentile(0.5);
    println!(
        "\n{n_posts} posts and {n_tasks} tasks per store, {CONCURRENCY} at a time, fake provider\n"
    );
    println!(
        "| store | posts/s | post ms p50 | p99 | added p50 | tasks/s | task ms p50 | p99 | added p50 | tx per post | rows per post | tx per task | rows per task |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for v in &variants {
        let (wp, wt) = match v.writes {
            Some((p, t)) => (
                format!("{:.1} | {:.1}", p.0, p.1),
                format!("{:.1} | {:.1}", t.0, t.1),
            ),
            None => ("— | —".to_owned(), "— | —".to_owned()),
        };
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:+.2} | {:.0} | {:.2} | {:.2} | {:+.2} | {wp} | {wt} |",
            v.name,
            v.posts.per_second(),
            v.posts.percentile(0.5),
            v.posts.percentile(0.99),
            v.posts.percentile(0.5) - base_post,
            v.tasks.per_second(),
            v.tasks.percentile(0.5),
            v.tasks.percentile(0.99),
            v.tasks.percentile(0.5) - base_task,
        );
    }
    drop(server);
}
