//! What a fleet asks of the shared database, raced from several replicas' pools at once (one
//! [`PgStore`] per replica, on one throwaway server): an idempotency key claimed once, a
//! counter never past its bound, one winner of a compare-and-swap, cursors stable while
//! other replicas add rows, migrations run once by replicas starting together, and a
//! database a newer binary migrated refused.

use std::collections::BTreeSet;
use std::sync::Arc;

use abr_core::store::{
    Counter, CounterStore, IdempotencyKey, Inserted, ListQuery, RecordStore, StoredPost, StoredTask,
};
use abr_core::testing::store::{sample_post, sample_task};
use abr_protocol::{PostState, TaskState};
use abr_store::testing::PgServer;
use abr_store::{PgStore, SealingKey, StoreError};

const REPLICAS: usize = 3;

fn key() -> SealingKey {
    SealingKey::from_hex(&"5e".repeat(32)).unwrap()
}

async fn replicas(server: &PgServer) -> (String, Vec<Arc<PgStore>>) {
    let url = server.create_database().await.unwrap();
    let mut stores = Vec::new();
    for _ in 0..REPLICAS {
        stores.push(Arc::new(
            PgStore::connect(&url, Some(key()), false, 4).await.unwrap(),
        ));
    }
    (url, stores)
}

fn db_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

async fn count_rows(server: &PgServer, url: &str, sql: &str) -> i64 {
    let rows = server.execute(db_name(url), sql).await.unwrap();
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v.parse().unwrap()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_raced_from_three_replicas_stores_one_record() {
    let server = PgServer::start().unwrap();
    let (url, stores) = replicas(&server).await;
    let idem = IdempotencyKey {
        key: "same-key".into(),
        body_hash: "h1".into(),
    };
    let mut racers = Vec::new();
    for i in 0..30 {
        let store = Arc::clone(&stores[i % REPLICAS]);
        let idem = idem.clone();
        racers.push(tokio::spawn(async move {
            let task = sample_task("t", &format!("task-{i}"), TaskState::Queued);
            let inserted = RecordStore::<StoredTask>::insert(&*store, &task, Some(&idem))
                .await
                .unwrap();
            (format!("task-{i}"), inserted)
        }));
    }
    let mut winners = Vec::new();
    let mut named = BTreeSet::new();
    for racer in racers {
        match racer.await.unwrap() {
            (id, Inserted::New) => winners.push(id),
            (_, Inserted::Existing { id, body_hash }) => {
                assert_eq!(body_hash, "h1");
                named.insert(id);
            }
        }
    }
    assert_eq!(winners.len(), 1, "exactly one insert stores: {winners:?}");
    assert_eq!(
        named,
        BTreeSet::from([winners[0].clone()]),
        "the losers name it"
    );
    assert_eq!(
        count_rows(&server, &url, "SELECT count(*) FROM tasks").await,
        1
    );
    // Posts' keys are a namespace apart: the same key stores one post, on any replica.
    let post = sample_post("t", "post-1", PostState::Running);
    let inserted = RecordStore::<StoredPost>::insert(&*stores[1], &post, Some(&idem))
        .await
        .unwrap();
    assert!(matches!(inserted, Inserted::New));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_raced_from_three_replicas_never_pass_their_bound() {
    let server = PgServer::start().unwrap();
    let (url, stores) = replicas(&server).await;
    let day = Counter::Executions {
        day: time::macros::date!(2026 - 12 - 06),
    };
    let mut racers = Vec::new();
    for i in 0..60 {
        let store = Arc::clone(&stores[i % REPLICAS]);
        let day = day.clone();
        racers.push(tokio::spawn(async move {
            store.increment("t", &day, 10).await.unwrap()
        }));
    }
    let mut granted = 0;
    for racer in racers {
        if racer.await.unwrap() {
            granted += 1;
        }
    }
    assert_eq!(granted, 10, "one daily count for the fleet");
    assert_eq!(stores[2].count("t", &day).await.unwrap(), 10);
    // Sessions held and given back from every replica: never below zero.
    let mut racers = Vec::new();
    for i in 0..12 {
        let store = Arc::clone(&stores[i % REPLICAS]);
        racers.push(tokio::spawn(async move {
            if i % 2 == 0 {
                store.increment("t", &Counter::Sessions, 4).await.unwrap();
            } else {
                store.decrement("t", &Counter::Sessions).await.unwrap();
            }
        }));
    }
    for racer in racers {
        racer.await.unwrap();
    }
    let held = stores[0].count("t", &Counter::Sessions).await.unwrap();
    assert!(held <= 4, "{held} sessions held with a bound of 4");
    assert_eq!(
        count_rows(
            &server,
            &url,
            "SELECT count(*) FROM counters WHERE value < 0"
        )
        .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_updates_raced_from_one_version_on_three_replicas_one_wins() {
    let server = PgServer::start().unwrap();
    let (_url, stores) = replicas(&server).await;
    let task = sample_task("t", "cas", TaskState::Queued);
    RecordStore::<StoredTask>::insert(&*stores[0], &task, None)
        .await
        .unwrap();
    for round in 0..5 {
        let read: StoredTask = stores[round % REPLICAS]
            .get("t", "cas")
            .await
            .unwrap()
            .unwrap();
        let mut racers = Vec::new();
        for i in 0..9 {
            let store = Arc::clone(&stores[i % REPLICAS]);
            let mut mine = read.clone();
            mine.record.plan_hash = format!("writer-{round}-{i}");
            racers.push(tokio::spawn(async move {
                RecordStore::<StoredTask>::update(&*store, &mine)
                    .await
                    .unwrap()
            }));
        }
        let mut won = 0;
        for racer in racers {
            if racer.await.unwrap() {
                won += 1;
            }
        }
        assert_eq!(won, 1, "round {round}: exactly one writer wins");
        let after: StoredTask = stores[0].get("t", "cas").await.unwrap().unwrap();
        assert_eq!(after.ledger.version, read.ledger.version + 1);
        assert!(
            after
                .record
                .plan_hash
                .starts_with(&format!("writer-{round}-"))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_is_stable_while_other_replicas_add_rows() {
    let server = PgServer::start().unwrap();
    let (_url, stores) = replicas(&server).await;
    for i in 0..30 {
        let post = sample_post("t", &format!("old-{i:02}"), PostState::Succeeded);
        RecordStore::<StoredPost>::insert(&*stores[i % REPLICAS], &post, None)
            .await
            .unwrap();
    }
    let writers: Vec<_> = (1..REPLICAS)
        .map(|r| {
            let store = Arc::clone(&stores[r]);
            tokio::spawn(async move {
                for i in 0..20 {
                    let post = sample_post("t", &format!("new-{r}-{i:02}"), PostState::Running);
                    RecordStore::<StoredPost>::insert(&*store, &post, None)
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = RecordStore::<StoredPost>::list(
            &*stores[0],
            "t",
            &ListQuery {
                state: None,
                cursor: cursor.clone(),
                limit: 7,
            },
        )
        .await
        .unwrap();
        seen.extend(page.items.iter().map(|p| p.record.post_id.clone()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
        tokio::task::yield_now().await;
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no record on two pages: {seen:?}");
    for i in 0..30 {
        assert!(
            unique.contains(&format!("old-{i:02}")),
            "old-{i:02} was skipped"
        );
    }
    // The old ones come newest first, after whatever new ones the first page caught.
    let old: Vec<_> = seen.iter().filter(|id| id.starts_with("old-")).collect();
    let mut sorted = old.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(old, sorted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once_and_a_newer_schema_is_refused() {
    let server = PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url, Some(key()), false, 2).await })
        })
        .collect();
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let versions = i64::from(PgStore::schema_version());
    assert_eq!(
        count_rows(&server, &url, "SELECT count(*) FROM abr_schema").await,
        versions,
        "each migration ran once"
    );
    server
        .execute(
            db_name(&url),
            &format!("INSERT INTO abr_schema (version) VALUES ({})", versions + 1),
        )
        .await
        .unwrap();
    let refused = PgStore::connect(&url, Some(key()), false, 2)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::NewerSchema { found, known }
            if i64::from(found) == versions + 1 && i64::from(known) == versions),
        "{refused:?}"
    );
    assert_eq!(
        refused.failure_kind(),
        abr_core::error::store::StoreFailureKind::Misconfigured
    );
}

#[tokio::test]
async fn a_server_that_went_away_is_a_retryable_store_failure_never_a_panic() {
    let server = PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    let store = PgStore::connect(&url, Some(key()), false, 2).await.unwrap();
    drop(server);
    let failed = store.count("t", &Counter::Sessions).await.unwrap_err();
    let abr_core::CoreError::Store(failure) = &failed else {
        panic!("not a store failure: {failed:?}");
    };
    assert!(failure.is_retryable(), "{failure:?}");
    // And a URL that is not PostgreSQL's never repeats its text (it may hold a password).
    let bad = PgStore::connect("mysql://root:hunter2@db/x", None, false, 1)
        .await
        .unwrap_err();
    assert!(!bad.to_string().contains("hunter2"), "{bad}");
}

async fn runner(url: &str, node: &str, lease_ms: u64) -> PgStore {
    let store = PgStore::connect(url, Some(key()), false, 2)
        .await
        .unwrap()
        .with_lease(std::time::Duration::from_millis(lease_ms));
    store.heartbeat(node, None, "test", false).await.unwrap();
    store
}

fn unfinished_ids(tasks: &[StoredTask]) -> BTreeSet<String> {
    tasks.iter().map(|t| t.record.task_id.clone()).collect()
}

/// Replica A runs a task and holds two sessions; its heartbeat lapses (it is paused, not
/// dead). Replica B then finds the task no live runner holds, ends it, and gives back A's
/// sessions and only those; A, resumed, can neither mark the task before a commit nor
/// write its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_runner_is_fenced_and_another_ends_its_records_and_frees_its_sessions() {
    let server = PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    let a = runner(&url, "node-a", 1_000).await;
    let b = runner(&url, "node-b", 1_000).await;
    let task = sample_task("t", "held-by-a", TaskState::Running);
    RecordStore::<StoredTask>::insert(&a, &task, None)
        .await
        .unwrap();
    let held: StoredTask = a.get("t", "held-by-a").await.unwrap().unwrap();
    for store in [&a, &a, &b] {
        assert!(store.increment("t", &Counter::Sessions, 5).await.unwrap());
    }

    // While A beats, its task and sessions are its own.
    let seen: Vec<StoredTask> = b.unfinished().await.unwrap();
    assert!(!unfinished_ids(&seen).contains("held-by-a"), "A is live");
    b.clear_sessions().await.unwrap();
    assert_eq!(b.count("t", &Counter::Sessions).await.unwrap(), 3);
    assert!(
        RecordStore::<StoredTask>::mark(&a, "t", "held-by-a")
            .await
            .unwrap()
    );

    // A stops beating; B goes on.
    tokio::time::sleep(std::time::Duration::from_millis(1_300)).await;
    b.heartbeat("node-b", None, "test", false).await.unwrap();
    let nodes = b.nodes().await.unwrap();
    let live: Vec<_> = nodes.iter().map(|n| (n.node_id.as_str(), n.live)).collect();
    assert_eq!(live, [("node-a", false), ("node-b", true)]);
    let seen: Vec<StoredTask> = b.unfinished().await.unwrap();
    let mut orphan = seen
        .into_iter()
        .find(|t| t.record.task_id == "held-by-a")
        .expect("B sees A's task once A's lease lapsed");
    orphan.record.state = TaskState::Uncertain;
    assert!(
        RecordStore::<StoredTask>::update(&b, &orphan)
            .await
            .unwrap()
    );
    b.clear_sessions().await.unwrap();
    assert_eq!(
        b.count("t", &Counter::Sessions).await.unwrap(),
        1,
        "A's two sessions are given back, B's stays"
    );

    // A resumes: fenced.
    assert!(
        !RecordStore::<StoredTask>::mark(&a, "t", "held-by-a")
            .await
            .unwrap(),
        "a lapsed runner marks nothing: it must not pass its commit point"
    );
    let mut late = held.clone();
    late.record.state = TaskState::Succeeded;
    assert!(!RecordStore::<StoredTask>::update(&a, &late).await.unwrap());
    let kept: StoredTask = b.get("t", "held-by-a").await.unwrap().unwrap();
    assert_eq!(kept.record.state, TaskState::Uncertain);
}

/// A node that restarts (a new boot under the same node id) finds its previous boot's
/// records at once, without waiting for a lease: they are nobody's now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_finds_its_previous_boots_records_at_once() {
    let server = PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    let first = runner(&url, "node-a", 60_000).await;
    let task = sample_task("t", "before-restart", TaskState::Running);
    RecordStore::<StoredTask>::insert(&first, &task, None)
        .await
        .unwrap();
    let other = runner(&url, "node-b", 60_000).await;
    let seen: Vec<StoredTask> = other.unfinished().await.unwrap();
    assert!(seen.is_empty(), "node-a's first boot is live");
    let second = runner(&url, "node-a", 60_000).await;
    assert_ne!(first.boot(), second.boot());
    let seen: Vec<StoredTask> = second.unfinished().await.unwrap();
    assert_eq!(
        unfinished_ids(&seen),
        BTreeSet::from(["before-restart".to_owned()])
    );
    assert!(
        !RecordStore::<StoredTask>::mark(&second, "t", "before-restart")
            .await
            .unwrap(),
        "the new boot does not hold the old boot's record"
    );
}

/// A fleet-wide lease (a row) is one boot's at a time: the others are refused until it
/// expires on the database's clock, then one of them takes it; its holder renews it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_lease_is_held_by_one_replica_at_a_time() {
    let server = PgServer::start().unwrap();
    let (_url, stores) = replicas(&server).await;
    let ttl = std::time::Duration::from_millis(800);
    let racers: Vec<_> = stores
        .iter()
        .map(|s| {
            let s = Arc::clone(s);
            tokio::spawn(async move { s.hold_lease("sweep", ttl).await.unwrap() })
        })
        .collect();
    let mut holders = Vec::new();
    for (i, racer) in racers.into_iter().enumerate() {
        if racer.await.unwrap() {
            holders.push(i);
        }
    }
    assert_eq!(holders.len(), 1, "one holder: {holders:?}");
    let holder = holders[0];
    let other = (holder + 1) % REPLICAS;
    assert!(
        stores[holder].hold_lease("sweep", ttl).await.unwrap(),
        "renewed"
    );
    assert!(!stores[other].hold_lease("sweep", ttl).await.unwrap());
    assert!(
        stores[other].hold_lease("another", ttl).await.unwrap(),
        "leases are per name"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    assert!(
        stores[other].hold_lease("sweep", ttl).await.unwrap(),
        "taken once expired"
    );
    assert!(!stores[holder].hold_lease("sweep", ttl).await.unwrap());
}

/// What lives in one replica's memory is placed under its boot: another replica finds the
/// owner (live, with its address) while it beats; once its heartbeat lapses, or its node
/// comes back as a new boot, the placement says lost (never the new boot's), and a running
/// task's owner is its record's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placement_names_its_live_owner_and_is_lost_with_its_boot() {
    use abr_store::PlacementKind::{Browse, Capture};
    let server = PgServer::start().unwrap();
    let url = server.create_database().await.unwrap();
    let a = runner(&url, "node-a", 1_000).await;
    a.heartbeat("node-a", Some("http://127.0.0.1:1111"), "test", false)
        .await
        .unwrap();
    let b = runner(&url, "node-b", 1_000).await;
    a.place(Browse, "brw-1", Some("t"), "node-a").await.unwrap();
    a.place(Capture, "cap-1", Some("t"), "node-a")
        .await
        .unwrap();
    let task = sample_task("t", "task-on-a", TaskState::Running);
    RecordStore::<StoredTask>::insert(&a, &task, None)
        .await
        .unwrap();

    let seen = b.placed(Browse, "brw-1").await.unwrap().unwrap();
    assert_eq!(seen.node_id.as_deref(), Some("node-a"));
    assert_eq!(seen.tenant.as_deref(), Some("t"));
    assert_eq!(seen.address.as_deref(), Some("http://127.0.0.1:1111"));
    assert!(seen.live && !seen.here, "{seen:?}");
    assert!(a.placed(Browse, "brw-1").await.unwrap().unwrap().here);
    assert_eq!(b.placed(Browse, "brw-x").await.unwrap(), None);
    assert_eq!(
        b.placed(Capture, "brw-1").await.unwrap(),
        None,
        "kinds are apart"
    );
    let running = b.running("task-on-a").await.unwrap().unwrap();
    assert!(running.live && !running.here);
    assert_eq!(running.tenant.as_deref(), Some("t"));
    assert_eq!(running.address.as_deref(), Some("http://127.0.0.1:1111"));
    // Unplaced by another boot: kept; by its own: gone.
    b.unplace(Capture, "cap-1").await.unwrap();
    assert!(b.placed(Capture, "cap-1").await.unwrap().is_some());
    a.unplace(Capture, "cap-1").await.unwrap();
    assert_eq!(b.placed(Capture, "cap-1").await.unwrap(), None);

    // A's heartbeat lapses: lost.
    tokio::time::sleep(std::time::Duration::from_millis(1_300)).await;
    let lost = b.placed(Browse, "brw-1").await.unwrap().unwrap();
    assert!(!lost.live, "{lost:?}");
    assert!(!b.running("task-on-a").await.unwrap().unwrap().live);
    // Node A comes back (a new boot, beating): what its previous boot held stays lost.
    let a2 = runner(&url, "node-a", 1_000).await;
    let after = a2.placed(Browse, "brw-1").await.unwrap().unwrap();
    assert!(!after.live && !after.here, "resurrected: {after:?}");
    assert_eq!(after.node_id.as_deref(), Some("node-a"));
    let task_after = a2.running("task-on-a").await.unwrap().unwrap();
    assert!(
        !task_after.live && task_after.node_id.is_none(),
        "{task_after:?}"
    );
}

/// A relay token minted on one replica opens one connection on any replica: taken once of
/// racing takes, only for its runner id, never once expired, and bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_token_minted_on_one_replica_is_spent_once_on_any() {
    use abr_store::RelayGrant;
    let server = PgServer::start().unwrap();
    let (_, stores) = replicas(&server).await;
    let grant = RelayGrant::new(Some("t".into()), "key_1".into());
    let minute = std::time::Duration::from_secs(60);
    assert!(
        stores[0]
            .put_relay_token(&[1; 32], "runner-a", &grant, minute, 3)
            .await
            .unwrap()
    );
    let racers: Vec<_> = stores
        .iter()
        .map(|store| {
            let store = Arc::clone(store);
            tokio::spawn(async move { store.take_relay_token(&[1; 32], "runner-a").await })
        })
        .collect();
    let mut taken = Vec::new();
    for racer in racers {
        taken.extend(racer.await.unwrap().unwrap());
    }
    assert_eq!(taken, vec![grant.clone()], "spent once, by one replica");
    // Presented for another runner id: spent, and refused.
    stores[0]
        .put_relay_token(&[2; 32], "runner-a", &grant, minute, 3)
        .await
        .unwrap();
    assert_eq!(
        stores[1]
            .take_relay_token(&[2; 32], "runner-b")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores[1]
            .take_relay_token(&[2; 32], "runner-a")
            .await
            .unwrap(),
        None,
        "one attempt per token"
    );
    // Expired: refused.
    stores[0]
        .put_relay_token(
            &[3; 32],
            "runner-a",
            &grant,
            std::time::Duration::from_millis(50),
            3,
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        stores[2]
            .take_relay_token(&[3; 32], "runner-a")
            .await
            .unwrap(),
        None
    );
    // Bounded: three unexpired at most.
    for d in 4..7 {
        assert!(
            stores[d % 3]
                .put_relay_token(&[d as u8; 32], "runner-a", &grant, minute, 3)
                .await
                .unwrap()
        );
    }
    assert!(
        !stores[0]
            .put_relay_token(&[9; 32], "runner-a", &grant, minute, 3)
            .await
            .unwrap()
    );
}

/// Queued tasks given to the fleet are claimed oldest first, each by one of the replicas
/// racing for them, and held by the claimer from then on; only a queued task its holder
/// gives is given; and a given task is nobody's unfinished work (a sweep leaves it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_tasks_given_to_the_fleet_are_claimed_once_oldest_first() {
    use abr_core::store::TaskQueue;
    let server = PgServer::start().unwrap();
    let (_, stores) = replicas(&server).await;
    for store in &stores {
        store
            .heartbeat(store.boot(), None, "test", false)
            .await
            .unwrap();
    }
    let a = &stores[0];
    for n in 0..9 {
        let task = sample_task("t", &format!("q{n}"), TaskState::Queued);
        RecordStore::<StoredTask>::insert(&**a, &task, None)
            .await
            .unwrap();
    }
    let running = sample_task("t", "started", TaskState::Running);
    RecordStore::<StoredTask>::insert(&**a, &running, None)
        .await
        .unwrap();
    assert!(
        !stores[1].release("t", "q0").await.unwrap(),
        "only its holder gives a task"
    );
    assert!(
        !a.release("t", "started").await.unwrap(),
        "a started task is never given"
    );
    for n in 0..9 {
        assert!(a.release("t", &format!("q{n}")).await.unwrap());
    }
    assert!(
        stores[2]
            .unfinished()
            .await
            .unwrap()
            .iter()
            .all(|t: &StoredTask| !t.record.task_id.starts_with('q')),
        "a task given to the fleet is not a dead replica's work"
    );
    assert_eq!(
        stores[1].claim().await.unwrap(),
        Some(("t".to_owned(), "q0".to_owned())),
        "oldest first"
    );
    let racers: Vec<_> = stores
        .iter()
        .map(|store| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some((_, id)) = store.claim().await.unwrap() {
                    got.push(id);
                }
                got
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for racer in racers {
        claimed.extend(racer.await.unwrap());
    }
    claimed.sort();
    assert_eq!(
        claimed,
        (1..9).map(|n| format!("q{n}")).collect::<Vec<_>>(),
        "each claimed once"
    );
    // Held by its claimer: it marks it, the others do not.
    assert!(
        RecordStore::<StoredTask>::mark(&*stores[1], "t", "q0")
            .await
            .unwrap()
    );
    assert!(
        !RecordStore::<StoredTask>::mark(&**a, "t", "q0")
            .await
            .unwrap()
    );
}
