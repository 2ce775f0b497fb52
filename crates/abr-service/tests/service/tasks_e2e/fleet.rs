//! Two `abr serve` replicas on one PostgreSQL database (a throwaway server this test starts
//! and stops), the demo site as ground truth: a key sent to both at once posts once and
//! either replica reads the record; a replica killed mid-task has its tasks ended honestly
//! by the other, which never restarted; a replica paused past its lease is fenced: when it
//! wakes it cannot pass the commit point of the task the other replica ended.

use super::*;
use abr_client::{PostAnswer, PostOptions};
use abr_store::testing::PgServer;
use std::sync::Arc;

/// A replica's heartbeat holds this long (seconds): short, so that the test waits little.
const LEASE_SECS: &str = "2";

struct Fleet {
    site: DemoSite,
    // Dropped last: the replicas first.
    server: PgServer,
    url: String,
    dirs: Vec<tempfile::TempDir>,
}

impl Fleet {
    async fn start() -> Self {
        let server = PgServer::start().unwrap();
        let url = server.create_database().await.unwrap();
        let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        Self {
            site,
            server,
            url,
            dirs: Vec::new(),
        }
    }

    /// A replica named `node`, with a marker of its own (killing one never touches the
    /// other's browsers).
    async fn replica(&mut self, node: &str) -> Serve {
        self.replica_with(node, &[]).await
    }

    /// A replica named `node` with more settings.
    async fn replica_with(&mut self, node: &str, more: &[(&str, &str)]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let marker = random_suffix();
        let mut envs = vec![
            ("ABR_DATABASE_URL", self.url.as_str()),
            ("ABR_NODE_ID", node),
            ("ABR_NODE_LEASE_SECS", LEASE_SECS),
            ("ABR_DRAIN_GRACE_SECS", "0"),
        ];
        envs.extend_from_slice(more);
        let serve = Serve::start_with(&self.site, dir.path(), &marker, &envs).await;
        self.dirs.push(dir);
        serve
    }
}

/// An event as a replica's `GET /v1/events` streamed it: (SSE id, event, run id).
type Streamed = (u64, String, String);

/// Follows `replica`'s event stream of the test tenant from now, in the background.
async fn follow_events(replica: &Serve) -> Arc<std::sync::Mutex<Vec<Streamed>>> {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let response = reqwest::Client::new()
        .get(format!("{}/v1/events", replica.base))
        .bearer_auth(BIN_TOKEN)
        .header("x-tenant-id", TENANT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let kept = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut response = response;
        let mut text = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let block: String = text.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::to_owned)
                };
                if let (Some(id), Some(name), Some(data)) =
                    (field("id: "), field("event: "), field("data: "))
                {
                    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
                    kept.lock().unwrap().push((
                        id.parse().unwrap(),
                        name,
                        data["runId"].as_str().unwrap().to_owned(),
                    ));
                }
            }
        }
    });
    // The stream starts from the log's head when the request is answered.
    seen
}

fn post(session: &abr_protocol::AgentSessionState, text: &str) -> abr_protocol::PostRequest {
    post_request("demo", session.clone(), text)
}

fn post_id(answer: &PostAnswer) -> String {
    match answer {
        PostAnswer::Done { result, .. } => result.post_id.clone().unwrap(),
        PostAnswer::Running(record) => record.post_id.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_sent_to_two_replicas_at_once_posts_once_and_either_reads_it() {
    let mut fleet = Fleet::start().await;
    let a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let session = signed_in_session(&fleet.site, "alice").await;
    let run = random_suffix();
    let mut answers = Vec::new();
    for i in 0..4 {
        let text = format!("fleet {run} {i}");
        let key = PostOptions::idempotency_key(format!("fleet-{run}-{i}"));
        let request = post(&session, &text);
        let (to_a, to_b) = tokio::join!(
            a.client.post_with(&request, &key),
            b.client.post_with(&request, &key)
        );
        answers.push((text, to_a.unwrap(), to_b.unwrap()));
    }
    let stored = fleet.site.posts();
    for (text, to_a, to_b) in &answers {
        assert_eq!(
            stored.iter().filter(|p| &p.text == text).count(),
            1,
            "{text:?} posted once: {to_a:?} {to_b:?}"
        );
        let id = post_id(to_a);
        assert_eq!(id, post_id(to_b), "both replicas name one record");
        // Either replica reads it, finished.
        for client in [&a.client, &b.client] {
            let record = until_post_ended(client, &id).await;
            assert_eq!(
                record.state,
                abr_protocol::PostState::Succeeded,
                "{record:?}"
            );
        }
    }
    // Each replica says who it is.
    let ready: abr_protocol::Readiness = raw_http()
        .get(format!("{}v1/ready", b.client.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready.node.as_deref(), Some("node-b"));
    assert!(ready.ready);
    drop((a, b));
    fleet.site.shutdown().await;
}

async fn until_post_ended(client: &AgentRunnerClient, id: &str) -> abr_protocol::PostRecord {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let record = client.get_post(WORKSPACE, id).await.unwrap();
        if record.state != abr_protocol::PostState::Running {
            return record;
        }
        assert!(Instant::now() < deadline, "never ended: {record:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Replica A is killed past a task's submit and during another's wait before anything
/// committing; replica B, which never restarts, ends the first `uncertain` and the second
/// `failed` (retryable) once A's lease lapsed, and B's retry of the second runs it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_tasks_are_ended_honestly_by_the_live_one() {
    let mut fleet = Fleet::start().await;
    let mut a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    // B's stream carries the events of the runs on A too: the fleet's one log.
    let on_b = follow_events(&b).await;
    let site = &fleet.site;
    let (after, email_a, before, email_b) = killed_plans(site).await;
    let (task_after, _) = a
        .client
        .create_task(&task_request(after), &options())
        .await
        .unwrap();
    let (task_before, _) = a
        .client
        .create_task(&task_request(before), &options())
        .await
        .unwrap();
    approve(&a.client, &task_after).await;
    approve(&a.client, &task_before).await;
    // Followed on B: any replica reads any record.
    until(&b.client, &task_after.task_id, "A past its submit", |r| {
        r.state == TaskState::Running && r.step_results.len() == 5 && r.step_results[4].committing
    })
    .await;
    until(&b.client, &task_before.task_id, "B in its wait", |r| {
        r.state == TaskState::Running
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // While A lives, B leaves its tasks alone.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let running = b
        .client
        .get_task(TENANT, &task_after.task_id)
        .await
        .unwrap();
    assert_eq!(
        running.state,
        TaskState::Running,
        "B took a live replica's task"
    );
    a.kill();
    assert_eq!(
        users_with(site, &email_a).await.len(),
        1,
        "the submit happened"
    );

    let ended_after = ended(&b.client, &task_after.task_id).await;
    assert_eq!(ended_after.state, TaskState::Uncertain, "{ended_after:#?}");
    let error = ended_after.error.as_ref().unwrap();
    assert_eq!(error.code, "runner_stopped");
    assert!(!error.retryable);
    let ended_before = ended(&b.client, &task_before.task_id).await;
    assert_eq!(ended_before.state, TaskState::Failed, "{ended_before:#?}");
    assert!(ended_before.error.as_ref().unwrap().retryable);
    // The retry runs on B, once.
    add_user_over_http(site, &email_b).await;
    let attempt = b
        .client
        .retry_task(TENANT, &task_before.task_id)
        .await
        .unwrap();
    approve(&b.client, &attempt).await;
    let done = ended(&b.client, &attempt.task_id).await;
    assert_eq!(done.state, TaskState::Succeeded, "{done:#?}");
    assert_eq!(users_with(site, &email_a).await.len(), 1);
    // B's stream: A's steps and B's ends, each once, numbered without a gap.
    let deadline = Instant::now() + Duration::from_secs(10);
    let ended_on_b = |seen: &[Streamed], id: &str| {
        seen.iter()
            .any(|(_, name, run)| name == "run_ended" && run == id)
    };
    loop {
        let seen = on_b.lock().unwrap().clone();
        if [&task_after.task_id, &task_before.task_id, &attempt.task_id]
            .iter()
            .all(|id| ended_on_b(&seen, id))
        {
            break;
        }
        assert!(Instant::now() < deadline, "B's stream: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = on_b.lock().unwrap().clone();
    let ids: Vec<u64> = seen.iter().map(|(id, _, _)| *id).collect();
    let first = ids[0];
    assert_eq!(
        ids,
        (first..first + ids.len() as u64).collect::<Vec<_>>(),
        "in order, no gap, no repeat: {seen:?}"
    );
    let of = |id: &str, name: &str| {
        seen.iter()
            .filter(|(_, n, run)| n == name && run == id)
            .count()
    };
    assert_eq!(
        of(&task_after.task_id, "step_progress"),
        ended_after.step_results.len(),
        "each of A's steps: {seen:?}"
    );
    assert_eq!(of(&task_after.task_id, "run_ended"), 1, "B's end: {seen:?}");
    assert_eq!(of(&task_before.task_id, "run_ended"), 1, "{seen:?}");
    drop(b);
    fleet.site.shutdown().await;
}

/// Replica A is paused (SIGSTOP) while its task's committing click waits for its button
/// (a slow page shows it 6 s after it loaded); B ends the task `failed` (retryable:
/// nothing was done) once A's lease lapsed. A is resumed: the button appears, and A saves
/// the mark before the click over the version it read, which B's end moved: the
/// compare-and-swap refuses it, so the click never happens and the site has no such user.
/// B's retry adds it once. (A post's mark is outside the compare-and-swap: the store's
/// owner check fences it, `post_journal::a_submit_that_cannot_be_recorded_does_not_happen`
/// and `races_pg::a_lapsed_runner_is_fenced_…`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_paused_past_its_lease_is_fenced_at_its_commit_point() {
    let mut fleet = Fleet::start().await;
    let a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let site = &fleet.site;
    let session = serde_json::to_value(signed_in_session(site, "alice").await).unwrap();
    let email = new_email("fenced");
    let base = site.base_url();
    let slow = format!("{base}/slow?ms=6000&email={}", email.replace('@', "%40"));
    let mut plan = json!({
        "plan": {
            "targetUrl": slow,
            "steps": [
                {"type": "navigate", "url": slow, "description": "Open the slow form"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "timeoutMs": 60000,
                 "description": "Submit the form once it shows"},
                {"type": "wait", "selector": ".success-message", "timeoutMs": 10000,
                 "description": "Wait for the success message"}
            ],
            "verification": {"method": "dom_check", "selector": ".success-message", "text": CREATED},
            "risk": "medium"
        }
    });
    plan["session"] = session;
    plan["platform"] = json!("demo");
    let (task, _) = a
        .client
        .create_task(&task_request(plan), &options())
        .await
        .unwrap();
    approve(&a.client, &task).await;
    until(&b.client, &task.task_id, "A in the slow page's wait", |r| {
        r.state == TaskState::Running && r.step_results.len() == 1
    })
    .await;
    a.signal("STOP");
    let ended_on_b = ended(&b.client, &task.task_id).await;
    assert_eq!(ended_on_b.state, TaskState::Failed, "{ended_on_b:#?}");
    assert_eq!(ended_on_b.error.as_ref().unwrap().code, "runner_stopped");
    assert!(ended_on_b.error.as_ref().unwrap().retryable);
    a.signal("CONT");
    // A's page says ready 9 s after it loaded; give A time to reach its commit point and
    // be refused there.
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(
        users_with(site, &email).await.is_empty(),
        "the fenced replica passed its commit point"
    );
    let kept = b.client.get_task(TENANT, &task.task_id).await.unwrap();
    assert_eq!(
        kept.state,
        TaskState::Failed,
        "A overwrote B's end: {kept:#?}"
    );
    assert_eq!(kept.error.as_ref().unwrap().code, "runner_stopped");
    // Nothing was done, so a retry is safe: B adds the user once.
    let attempt = b.client.retry_task(TENANT, &task.task_id).await.unwrap();
    approve(&b.client, &attempt).await;
    let done = ended(&b.client, &attempt.task_id).await;
    assert_eq!(done.state, TaskState::Succeeded, "{done:#?}");
    assert_eq!(users_with(site, &email).await.len(), 1);
    drop((a, b));
    fleet.site.shutdown().await;
}

/// HAProxy on the committed `deploy/haproxy.cfg`, in the foreground; killed when dropped.
struct Balancer {
    child: Child,
    url: String,
}

impl Balancer {
    fn start(replicas: [&Serve; 3]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/haproxy.cfg");
        let address = |serve: &Serve| {
            serve
                .client
                .base_url()
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned()
        };
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .env("ABR_LB_BIND", format!("127.0.0.1:{port}"))
            .env("ABR_REPLICA_A", address(replicas[0]))
            .env("ABR_REPLICA_B", address(replicas[1]))
            .env("ABR_REPLICA_C", address(replicas[2]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy (driver/setup-postgres installs it)");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Posts `request` under `key` through `client` until it has an outcome: a lost answer
/// (the replica killed under it) or a record still running is asked again with the same
/// key, which never posts twice.
async fn post_until_done(
    client: &AgentRunnerClient,
    request: &abr_protocol::PostRequest,
    key: &str,
) -> abr_protocol::PostRecord {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match client
            .post_with(request, &PostOptions::idempotency_key(key))
            .await
        {
            Ok(PostAnswer::Done { result, .. }) => {
                let id = result.post_id.clone().unwrap();
                return client.get_post(WORKSPACE, &id).await.unwrap();
            }
            Ok(PostAnswer::Running(_)) | Err(_) => {}
        }
        assert!(Instant::now() < deadline, "{key}: no outcome");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The largest number of browser sessions any tenant held at once in the fleet, sampled
/// from the database's counters every 50 ms until `stop`.
fn sample_sessions(
    fleet: &Fleet,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<(i64, usize)> {
    let url = fleet.url.clone();
    let name = url.rsplit('/').next().unwrap().to_owned();
    let server_url = fleet.server.url(&name);
    tokio::spawn(async move {
        let (client, connection) = tokio_postgres::connect(&server_url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        let (mut most, mut samples) = (0i64, 0usize);
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let Ok(row) = client
                .query_one(
                    "SELECT COALESCE(MAX(value), 0) FROM counters WHERE counter = 'sessions'",
                    &[],
                )
                .await
            else {
                // The server is gone: the test is over.
                break;
            };
            most = most.max(row.get::<_, i64>(0));
            samples += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(client);
        let _ = driver.await;
        (most, samples)
    })
}

/// Creates the task `request` under `key` on `client` until it is created (a refusal that
/// may pass later, such as the tenant's limit or a draining replica, is asked again): its
/// id.
async fn create_until_taken(
    client: &AgentRunnerClient,
    request: &TaskRequest,
    key: &str,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let options = options().with_idempotency_key(key);
        match client.create_task(request, &options).await {
            Ok((record, _)) => return record.task_id,
            Err(e) => assert!(Instant::now() < deadline, "{key}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The tenants' concurrent sessions in the fleet, the limit the test sets (the fleet has six
/// job slots: the limit binds).
const FLEET_TENANT_SESSIONS: i64 = 4;

/// Waves of 8 posts and 2 tasks the fleet test sends: `ABR_FLEET_WAVES`, 20 by default
/// (200 keys; about 95 s on two cores); fewer to iterate.
fn fleet_waves() -> usize {
    std::env::var("ABR_FLEET_WAVES")
        .ok()
        .and_then(|w| w.parse().ok())
        .filter(|w| *w >= 3)
        .unwrap_or(20)
}

/// Three replicas behind HAProxy (the committed configuration), 160 posts and 40 tasks (20
/// waves of 8 and 2), each under its own `Idempotency-Key`: the posts sent through the
/// balancer, a quarter of them at once straight to a live replica under the same key; the
/// tasks (they add a user on the site) created on replica A, a quarter of them at once on B;
/// one replica killed (`kill -9`) mid-run and restarted under its node id, another drained
/// (SIGTERM) mid-run. Every key is posted at most once, every `succeeded` is on the site
/// once, every `failed` is not, every `uncertain` is resolved by a re-check; every task key
/// is one task, which added its user once if it succeeded, none if it failed, and at most
/// once if it is `uncertain` (the site's table is the re-check); the
/// tenants' limit of concurrent sessions (4) held in the fleet, sampled from the database;
/// and A's event stream carried every task's end exactly once, numbered without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_haproxy_take_each_key_once_through_a_kill_and_a_drain() {
    let started = Instant::now();
    let waves = fleet_waves();
    // C is killed once it ran a wave (its browsers are up), B drained after it came back.
    let kill_wave = (waves * 3 / 10).max(1);
    let drain_wave = (waves * 7 / 10).max(kill_wave + 1);
    let mut fleet = Fleet::start().await;
    let limits = [
        ("ABR_TENANT_MAX_SESSIONS", "4"),
        ("ABR_TENANT_MAX_EXECUTIONS_PER_DAY", "1000"),
        ("ABR_TASK_APPROVAL", "off"),
    ];
    let a = fleet.replica_with("node-a", &limits).await;
    let mut b = fleet.replica_with("node-b", &limits).await;
    let mut c = fleet.replica_with("node-c", &limits).await;
    let lb = Balancer::start([&a, &b, &c]);
    let through = AgentRunnerClient::new(lb.url.clone(), BIN_TOKEN).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while through.health().await.is_err() {
        assert!(Instant::now() < deadline, "HAProxy never answered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let on_a = follow_events(&a).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = sample_sessions(&fleet, Arc::clone(&stop));
    let session = signed_in_session(&fleet.site, "alice").await;
    let run = random_suffix();
    let mut posts = Vec::new();
    let mut tasks = Vec::new();
    let mut c_restarted: Option<Serve> = None;
    for wave in 0..waves {
        let mut racers = Vec::new();
        for i in 0..8 {
            let n = wave * 8 + i;
            let text = format!("balanced {run} {n}");
            let key = format!("lb-{run}-{n}");
            let request = post(&session, &text);
            let lb_client = through.clone();
            let (r, k) = (request.clone(), key.clone());
            racers.push(tokio::spawn(async move {
                let _ = lb_client
                    .post_with(&r, &PostOptions::idempotency_key(k))
                    .await;
            }));
            if i % 4 == 0 {
                // The same key at once, straight to a replica that is up.
                let direct = match (n / 4) % 3 {
                    0 => a.client.clone(),
                    1 if wave < drain_wave => b.client.clone(),
                    _ => c_restarted.as_ref().map_or(&a, |c| c).client.clone(),
                };
                let (r, k) = (request.clone(), key.clone());
                racers.push(tokio::spawn(async move {
                    let _ = direct.post_with(&r, &PostOptions::idempotency_key(k)).await;
                }));
            }
            posts.push((text, key, request));
        }
        for i in 0..2 {
            let n = wave * 2 + i;
            let email = format!("fleet-{}-{n}@example.com", &run[..8]).to_lowercase();
            let mut plan = add_user_plan(&fleet.site, &email, "viewer");
            plan["plan"]["steps"].as_array_mut().unwrap().truncate(6);
            // Three replicas' browsers on two cores: the page may take its time.
            plan["plan"]["steps"][5]["timeoutMs"] = serde_json::json!(15000);
            plan["session"] = serde_json::to_value(&session).unwrap();
            plan["platform"] = serde_json::json!("demo");
            let request = task_request(plan);
            let key = format!("task-{run}-{n}");
            let on = a.client.clone();
            let (r, k) = (request.clone(), key.clone());
            racers.push(tokio::spawn(async move {
                let _ = create_until_taken(&on, &r, &k).await;
            }));
            if i == 0 && wave % 2 == 0 && wave < drain_wave {
                let also = b.client.clone();
                let (r, k) = (request.clone(), key.clone());
                racers.push(tokio::spawn(async move {
                    let _ = also
                        .create_task(&r, &options().with_idempotency_key(k))
                        .await;
                }));
            }
            tasks.push((email, key, request));
        }
        if wave == kill_wave {
            // Killed under whatever it was running, then back under its node id.
            tokio::time::sleep(Duration::from_millis(300)).await;
            c.kill();
        }
        if wave == drain_wave {
            b.signal("TERM");
        }
        for racer in racers {
            racer.await.unwrap();
        }
        if wave == kill_wave + 1 {
            c_restarted = Some(fleet.replica_with("node-c", &limits).await);
        }
    }
    let sent_in = started.elapsed();
    // Every post key to its outcome, asked again through the balancer where the answer was
    // lost, six at a time.
    let mut outcomes = Vec::new();
    for chunk in posts.chunks(6) {
        let asked: Vec<_> = chunk
            .iter()
            .map(|(text, key, request)| {
                let (client, text, key, request) =
                    (through.clone(), text.clone(), key.clone(), request.clone());
                tokio::spawn(async move { (text, post_until_done(&client, &request, &key).await) })
            })
            .collect();
        for one in asked {
            outcomes.push(one.await.unwrap());
        }
    }
    let stored = fleet.site.posts();
    let (mut succeeded, mut failed, mut uncertain) = (0, 0, 0);
    for (text, record) in &outcomes {
        let on_site = stored.iter().filter(|p| &p.text == text).count();
        assert!(on_site <= 1, "{text:?} posted {on_site} times");
        match record.state {
            abr_protocol::PostState::Succeeded => {
                succeeded += 1;
                assert_eq!(on_site, 1, "{text:?} succeeded but is not on the site");
            }
            abr_protocol::PostState::Failed => {
                failed += 1;
                assert_eq!(on_site, 0, "{text:?} failed but is on the site");
            }
            abr_protocol::PostState::Uncertain => {
                uncertain += 1;
                let checked = a
                    .client
                    .recheck_post(WORKSPACE, &record.post_id)
                    .await
                    .unwrap();
                let expected = match checked.answer {
                    abr_protocol::RecheckAnswer::Confirmed => 1,
                    abr_protocol::RecheckAnswer::NotFound => 0,
                    other => panic!("{text:?}: the re-check did not resolve it: {other:?}"),
                };
                assert_eq!(on_site, expected, "{text:?}: re-check {:?}", checked.answer);
            }
            other => panic!("{text:?} ended {other:?}"),
        }
    }
    // Every task key: one task; its user added once if it succeeded, none if it failed.
    let mut task_ids = BTreeSet::new();
    let (mut tasks_done, mut tasks_refused, mut tasks_unproven) = (0, 0, 0);
    let mut refusals = std::collections::BTreeMap::<String, usize>::new();
    for (email, key, request) in &tasks {
        let id = create_until_taken(&a.client, request, key).await;
        let record = ended(&a.client, &id).await;
        let added = users_with(&fleet.site, email).await.len();
        match record.state {
            TaskState::Succeeded => {
                tasks_done += 1;
                assert_eq!(added, 1, "{key}: {email}");
            }
            TaskState::Failed => {
                tasks_refused += 1;
                assert_eq!(added, 0, "{key} failed: {record:#?}");
                let code = record.error.as_ref().map_or("?", |e| e.code.as_str());
                *refusals.entry(code.to_owned()).or_default() += 1;
            }
            TaskState::Uncertain => {
                // Submitted, not proven: the site says whether it happened, never twice.
                tasks_unproven += 1;
                assert!(added <= 1, "{key}: {email} added {added} times");
            }
            other => panic!("{key} ended {other:?}: {record:#?}"),
        }
        task_ids.insert(id);
    }
    assert_eq!(task_ids.len(), tasks.len(), "one task per key");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (most, samples) = sampler.await.unwrap();
    assert!(
        most <= FLEET_TENANT_SESSIONS,
        "a tenant held {most} sessions at once in the fleet"
    );
    // A's stream: each task's end once, numbered without a gap or a repeat.
    let deadline = Instant::now() + Duration::from_secs(10);
    let ends = |seen: &[Streamed], id: &str| {
        seen.iter()
            .filter(|(_, name, run)| name == "run_ended" && run == id)
            .count()
    };
    loop {
        let seen = on_a.lock().unwrap().clone();
        if task_ids.iter().all(|id| ends(&seen, id) >= 1) {
            break;
        }
        assert!(Instant::now() < deadline, "A's stream lacks ends: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = on_a.lock().unwrap().clone();
    for id in &task_ids {
        assert_eq!(ends(&seen, id), 1, "{id}: {seen:?}");
    }
    let ids: Vec<u64> = seen.iter().map(|(id, _, _)| *id).collect();
    let first = ids[0];
    assert_eq!(
        ids,
        (first..first + ids.len() as u64).collect::<Vec<_>>(),
        "in order, no gap, no repeat"
    );
    eprintln!(
        "fleet: {} post keys: {succeeded} succeeded, {failed} failed, {uncertain} uncertain; \
         {} task keys: {tasks_done} succeeded, {tasks_refused} failed {refusals:?}, \
         {tasks_unproven} uncertain; at most {most} \
         sessions of a tenant at once ({samples} samples); {} events on A's stream; sent in \
         {:.0} s, all ended in {:.0} s",
        posts.len(),
        tasks.len(),
        seen.len(),
        sent_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        succeeded >= posts.len() / 2,
        "most keys posted: {succeeded}"
    );
    // The drained replica finished what it ran and exited by itself.
    let mut exited = None;
    for _ in 0..300 {
        exited = b.child.try_wait().unwrap();
        if exited.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        exited.is_some_and(|s| s.success()),
        "the drained replica exits cleanly: {exited:?}"
    );
    // Killed with every process they started (their drop).
    drop((lb, a, b, c_restarted));
    fleet.site.shutdown().await;
}

/// An approver's one-time link minted on replica A works on replica B (a person's browser
/// reaches whichever replica the balancer picks), once: the decision on B runs the task, and
/// the same link is gone on A too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_link_minted_on_one_replica_is_used_once_on_another() {
    let mut fleet = Fleet::start().await;
    let a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let site = &fleet.site;
    let email = new_email("linked");
    let mut plan = add_user_plan(site, &email, "viewer");
    plan["session"] = serde_json::to_value(signed_in_session(site, "alice").await).unwrap();
    plan["platform"] = json!("demo");
    let (task, _) = a
        .client
        .create_task(&task_request(plan), &options())
        .await
        .unwrap();
    // An approver's key, made on A, mints the link on A.
    let approver = a
        .client
        .create_key(&abr_protocol::KeyRequest {
            name: "alice@acme.example".into(),
            role: abr_protocol::Role::Approver,
            tenant_id: Some(TENANT.into()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap()
        .token
        .expose()
        .to_owned();
    let http = raw_http();
    let minted: Value = http
        .post(format!(
            "{}v1/tasks/{}/approval-link",
            a.client.base_url(),
            task.task_id
        ))
        .bearer_auth(&approver)
        .header("x-tenant-id", TENANT)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = minted["url"].as_str().unwrap_or_else(|| panic!("{minted}"));
    let token = url.rsplit('/').next().unwrap().to_owned();
    let on = |serve: &Serve| format!("{}approve/{token}", serve.client.base_url());
    // The person's browser reaches B.
    let page = http.get(on(&b)).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link shows on the other replica");
    let decided = http
        .post(on(&b))
        .form(&[("decision", "approve"), ("name", "Ada")])
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());
    let done = ended(&b.client, &task.task_id).await;
    assert_eq!(done.state, TaskState::Succeeded, "{done:#?}");
    assert_eq!(
        done.approval.as_ref().unwrap().stated_by.as_deref(),
        Some("Ada")
    );
    assert_eq!(users_with(site, &email).await.len(), 1);
    // Used up, on every replica.
    for serve in [&a, &b] {
        let again = http
            .post(on(serve))
            .form(&[("decision", "approve")])
            .send()
            .await
            .unwrap();
        assert_eq!(
            again.status(),
            404,
            "a used link on {}",
            serve.client.base_url()
        );
    }
    drop((a, b));
    fleet.site.shutdown().await;
}

/// The code of a call's refusal.
fn refusal<T: std::fmt::Debug>(answer: Result<T, abr_client::ClientError>) -> (u16, String) {
    match answer {
        Err(abr_client::ClientError::Api { status, code, .. }) => (status, code),
        other => panic!("not a refusal: {other:?}"),
    }
}

/// A browse session and a capture live in the browser of the replica that opened them: a
/// call for them through another replica is forwarded there (any replica answers them);
/// once that replica is killed and its heartbeat lapsed, both are `410 replica_lost`,
/// naming it, on every replica, and they stay lost when the node comes back under its id.
/// The browse session's record is ended by the live replica's sweep, as a restart ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_replica_holds_is_reached_through_any_and_lost_with_it() {
    let mut fleet = Fleet::start().await;
    let mut a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let request: abr_protocol::BrowseRequest = serde_json::from_value(serde_json::json!({
        "url": format!("{}/", fleet.site.base_url()),
        "readOnly": true,
    }))
    .unwrap();
    let opened = a.client.browse_open(TENANT, &request).await.unwrap();
    let id = opened.browse_id.clone();
    // Through B: forwarded to A's browser.
    let snapshot = b.client.browse_snapshot(TENANT, &id).await.unwrap();
    assert!(!snapshot.url.is_empty(), "{snapshot:?}");
    // Another tenant's call for it finds nothing, through either replica.
    assert_eq!(
        refusal(b.client.browse_snapshot("someone-else", &id).await).0,
        404
    );
    // The attacker's side: without a key nothing is forwarded or told (401 before the
    // lookup), and a forged hop mark only keeps the call on B, which has no such session.
    let snapshot_on_b = format!("{}/v1/browse/{id}/snapshot", b.base);
    let anonymous = reqwest::Client::new()
        .get(&snapshot_on_b)
        .header("x-tenant-id", TENANT)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let forged = reqwest::Client::new()
        .get(&snapshot_on_b)
        .bearer_auth(BIN_TOKEN)
        .header("x-tenant-id", TENANT)
        .header("abr-fleet-hop", "node-a")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 404, "a forged hop reached A's browser");
    let capture = a.client.capture_start(&start_request()).await.unwrap();
    let status = b
        .client
        .capture_status(&bound(&capture.capture_id))
        .await
        .unwrap();
    assert_eq!(status.platform, "demo");

    a.kill();
    // Until A's heartbeat lapses, B cannot reach it (nothing was done); then it is lost.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, code) = refusal(b.client.browse_snapshot(TENANT, &id).await);
        if code == "replica_lost" {
            assert_eq!(status, 410);
            break;
        }
        assert_eq!((status, code.as_str()), (503, "replica_unreachable"));
        assert!(Instant::now() < deadline, "never reported lost");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        refusal(b.client.capture_status(&bound(&capture.capture_id)).await),
        (410, "replica_lost".to_owned())
    );
    let anonymous = reqwest::Client::new()
        .get(&snapshot_on_b)
        .send()
        .await
        .unwrap();
    assert_eq!(
        anonymous.status(),
        401,
        "a caller without a key learns nothing"
    );
    match b
        .client
        .browse_act(TENANT, &id, &abr_protocol::BrowseAction::Back)
        .await
    {
        Err(abr_client::ClientError::Api { code, message, .. }) => {
            assert_eq!(code, "replica_lost");
            assert!(message.contains("node-a"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The record: ended by B's sweep, as a restart ends it.
    let record = ended(&b.client, &id).await;
    assert!(record.state.is_final(), "{record:?}");

    // Node A comes back: a new boot. What its previous boot held stays lost.
    let a = fleet.replica("node-a").await;
    assert_eq!(
        refusal(a.client.browse_snapshot(TENANT, &id).await),
        (410, "replica_lost".to_owned())
    );
    assert_eq!(
        refusal(a.client.capture_status(&bound(&capture.capture_id)).await),
        (410, "replica_lost".to_owned())
    );
    drop((a, b));
    fleet.site.shutdown().await;
}

/// An `abr up` relay runner, killed with its browsers when dropped.
struct RelayRunner {
    child: std::process::Child,
    marker: String,
    _home: tempfile::TempDir,
}

impl RelayRunner {
    /// `abr up --headless --hub <hub> --runner-id <id>`, with the replicas' token.
    fn start(site: &DemoSite, hub: &str, id: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let marker = random_suffix();
        let log = std::fs::File::create(home.path().join("up.log")).unwrap();
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(env!("CARGO_BIN_EXE_abr"))
                .args(["up", "--headless", "--hub", hub, "--runner-id", id])
                .env("TMPDIR", home.path())
                .env("ABR_STATE_DIR", home.path().join("state"))
                .env("ABR_DATA_DIR", home.path().join("data"))
                .env("ABR_API_TOKEN", BIN_TOKEN)
                .env("ABR_SESSION_KEY", SESSION_KEY)
                .env("ABR_DEMO_SITE_URL", site.base_url())
                .env("ABR_EGRESS_ALLOW_PRIVATE", site.local_addr().to_string())
                .env("ABR_E2E_RUN", &marker)
                .env_remove("ABR_HUB_URL")
                .env_remove("ABR_RUNNER_ID")
                .env_remove("ABR_BIND")
                .env_remove("ABR_DATABASE_URL")
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log),
            0,
        )
        .spawn()
        .unwrap();
        Self {
            child,
            marker,
            _home: home,
        }
    }
}

impl Drop for RelayRunner {
    fn drop(&mut self) {
        kill_all(self.child.id(), &self.marker);
        let _ = self.child.wait();
    }
}

/// `GET /v1/platforms` on `replica` naming the relay runner `runner`: its status.
async fn platforms_through(replica: &Serve, runner: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/v1/platforms", replica.base))
        .bearer_auth(BIN_TOKEN)
        .header("x-abr-runner", runner)
        .send()
        .await
        .map_or(0, |r| r.status().as_u16())
}

/// A relay runner linked to replica A is reached through replica B (B forwards the call to
/// A, A relays it), and a relay token minted on B opens a runner's socket on A: a runner
/// behind a balancer may mint through one replica and connect to another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_runner_linked_to_one_replica_is_reached_through_another() {
    let mut fleet = Fleet::start().await;
    let a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let _runner = RelayRunner::start(&fleet.site, &a.base, "laptop-1");
    let deadline = Instant::now() + Duration::from_secs(60);
    while platforms_through(&a, "laptop-1").await != 200 {
        assert!(Instant::now() < deadline, "the runner never connected to A");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(platforms_through(&b, "laptop-1").await, 200, "through B");
    // A post relayed through B runs on the runner: its record is the runner's.
    let session = signed_in_session(&fleet.site, "alice").await;
    let text = format!("relayed through B {}", random_suffix());
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/post", b.base))
        .bearer_auth(BIN_TOKEN)
        .header("x-abr-runner", "laptop-1")
        .header("idempotency-key", random_suffix())
        .json(&post(&session, &text))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    assert_eq!(
        fleet.site.posts().iter().filter(|p| p.text == text).count(),
        1
    );

    // A relay token minted on B opens a socket on A (and only once).
    let minted: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/v1/relay/tokens", b.base))
        .bearer_auth(BIN_TOKEN)
        .json(&serde_json::json!({"runnerId": "laptop-2"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = minted["token"].as_str().unwrap().to_owned();
    let connect = |replica: &Serve| {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        let mut request = format!(
            "{}/v1/relay/laptop-2/connect",
            replica.base.replace("http://", "ws://")
        )
        .into_client_request()
        .unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        request
    };
    let opened = tokio_tungstenite::connect_async(connect(&a)).await;
    assert!(
        opened.is_ok(),
        "the token minted on B was refused on A: {opened:?}"
    );
    let again = tokio_tungstenite::connect_async(connect(&b)).await;
    assert!(again.is_err(), "a relay token opened two sockets");
    drop((a, b));
    fleet.site.shutdown().await;
}

/// Replica A is paused (SIGSTOP) past its lease after its task's committing submit (the
/// user is added), while it waits for a confirmation: B ends the task `uncertain` (a
/// committing step had started: never run again), and A, resumed, ends its own run: its late
/// write is refused by the record's version (the fencing token), so the record keeps B's
/// end, and the site has the user once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_paused_past_its_lease_after_its_submit_cannot_write_its_late_end() {
    let mut fleet = Fleet::start().await;
    let a = fleet.replica("node-a").await;
    let b = fleet.replica("node-b").await;
    let site = &fleet.site;
    let (mut plan, email, _, _) = killed_plans(site).await;
    // The wait after the submit gives up after 6 s: A's own end comes soon after it wakes.
    plan["plan"]["steps"][5]["timeoutMs"] = json!(6000);
    let (task, _) = a
        .client
        .create_task(&task_request(plan), &options())
        .await
        .unwrap();
    approve(&a.client, &task).await;
    until(&b.client, &task.task_id, "A past its submit", |r| {
        r.state == TaskState::Running && r.step_results.len() == 5 && r.step_results[4].committing
    })
    .await;
    a.signal("STOP");
    let ended_on_b = ended(&b.client, &task.task_id).await;
    assert_eq!(ended_on_b.state, TaskState::Uncertain, "{ended_on_b:#?}");
    let error = ended_on_b.error.clone().unwrap();
    assert_eq!(error.code, "runner_stopped");
    assert!(!error.retryable, "never run again");
    assert_eq!(
        users_with(site, &email).await.len(),
        1,
        "the submit happened"
    );
    a.signal("CONT");
    // A's wait gives up within 6 s of its resumption; it then writes its end, refused.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let kept = b.client.get_task(TENANT, &task.task_id).await.unwrap();
    assert_eq!(kept.state, TaskState::Uncertain, "{kept:#?}");
    assert_eq!(
        kept.error.as_ref().unwrap().code,
        "runner_stopped",
        "A's late end overwrote B's: {kept:#?}"
    );
    assert_eq!(kept.step_results.len(), ended_on_b.step_results.len());
    assert_eq!(users_with(site, &email).await.len(), 1, "once");
    drop((a, b));
    fleet.site.shutdown().await;
}

/// A read of the users table on the site: a task that ends at once.
fn read_users(site: &DemoSite, session: &Value) -> TaskRequest {
    let base = site.base_url();
    task_request(json!({
        "plan": {
            "targetUrl": format!("{base}/admin/users"),
            "steps": [
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
            ],
            "verification": {"method": "dom_check", "selector": "#users"},
            "risk": "low"
        },
        "session": session,
        "platform": "demo"
    }))
}

/// Replica A has one job slot, held by a task that waits (for a user who is never listed);
/// two more tasks created on A find no free slot there: A gives them to the fleet, and B,
/// which has free slots, claims and runs them while A's first task still waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_is_run_by_the_replica_with_a_free_slot() {
    let mut fleet = Fleet::start().await;
    let approval_off = [("ABR_TASK_APPROVAL", "off")];
    let a = fleet
        .replica_with(
            "node-a",
            &[
                ("ABR_TASK_APPROVAL", "off"),
                ("ABR_MAX_CONCURRENT_JOBS", "1"),
            ],
        )
        .await;
    let b = fleet.replica_with("node-b", &approval_off).await;
    let site = &fleet.site;
    let (_, _, waits, _) = killed_plans(site).await;
    let session = waits["session"].clone();
    let (holder, _) = a
        .client
        .create_task(&task_request(waits), &options())
        .await
        .unwrap();
    until(&a.client, &holder.task_id, "A's slot taken", |r| {
        r.state == TaskState::Running
    })
    .await;
    let mut queued = Vec::new();
    for _ in 0..2 {
        let (task, _) = a
            .client
            .create_task(&read_users(site, &session), &options())
            .await
            .unwrap();
        queued.push(task.task_id);
    }
    for id in &queued {
        let done = ended(&b.client, id).await;
        assert_eq!(done.state, TaskState::Succeeded, "{done:#?}");
    }
    let still = a.client.get_task(TENANT, &holder.task_id).await.unwrap();
    assert_eq!(
        still.state,
        TaskState::Running,
        "the queued tasks waited for A's slot instead of running on B"
    );
    drop((a, b));
    fleet.site.shutdown().await;
}
