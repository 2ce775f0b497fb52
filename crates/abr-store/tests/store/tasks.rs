//! The SQLite task store keeps the store contract across a reopen: tenants are isolated, an
//! idempotency key names one task, updates are compare-and-swap, counters never pass their
//! limit even when raced, and a task's inputs and session are encrypted at rest.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;

use abr_core::store::{
    Counter, CounterStore, IdempotencyKey, Inserted, RecordStore, ScreenshotStore, SessionKey,
    SessionStore, StoredTask,
};
use abr_core::testing::store::{COOKIE_CANARY, INPUT_CANARY, sample_task};
use abr_protocol::{AgentSessionState, Cookie, TaskState};
use abr_store::{SealingKey, SqliteStore};
use time::OffsetDateTime;

/// Pixels of a screenshot: the page it shows must not be readable on disk.
const SHOT_CANARY: &str = "canary-task-screenshot-77d0";

/// A task with an input and a session (the conformance suite's sample).
fn task(tenant: &str, id: &str, state: TaskState) -> StoredTask {
    sample_task(tenant, id, state)
}

/// The task records of `store` (it also keeps posts: the kind is named).
fn tasks(store: &SqliteStore) -> &dyn RecordStore<StoredTask> {
    store
}

fn key() -> SealingKey {
    SealingKey::from_hex(&"5b".repeat(32)).unwrap()
}

/// The network gate marks a running task committing outside the compare-and-swap: the mark
/// keeps the version, survives a reopen, and a later update written from a copy read
/// before it never clears it.
#[tokio::test]
async fn the_committing_mark_is_set_alone_and_never_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let running = {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        store
            .insert(&task("t1", "task-m", TaskState::Running), None)
            .await
            .unwrap();
        let before = tasks(&store).get("t1", "task-m").await.unwrap().unwrap();
        tasks(&store).mark("t1", "task-m").await.unwrap();
        // Unknown tasks and other tenants' are left alone.
        tasks(&store).mark("t2", "task-m").await.unwrap();
        tasks(&store).mark("t1", "nope").await.unwrap();
        before
    };
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    let marked = tasks(&store).get("t1", "task-m").await.unwrap().unwrap();
    assert!(marked.ledger.marked, "durable across a reopen");
    assert_eq!(
        marked.ledger.version, running.ledger.version,
        "the version is the run loop's"
    );
    // The run loop saves its copy, read before the mark: the mark stays.
    assert!(!running.ledger.marked);
    assert!(store.update(&running).await.unwrap());
    let after = tasks(&store).get("t1", "task-m").await.unwrap().unwrap();
    assert!(after.ledger.marked, "an update never clears the mark");
    assert_eq!(after.ledger.version, running.ledger.version + 1);
    let unfinished = tasks(&store).unfinished().await.unwrap();
    assert!(unfinished.iter().all(|t| t.ledger.marked));
}

#[tokio::test]
async fn the_store_contract_holds_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        let idem = IdempotencyKey {
            key: "k1".into(),
            body_hash: "b1".into(),
        };
        let a = task("t1", "task-a", TaskState::PendingApproval);
        assert_eq!(store.insert(&a, Some(&idem)).await.unwrap(), Inserted::New);
        // The same key names the first task; nothing new is stored.
        let b = task("t1", "task-b", TaskState::PendingApproval);
        assert_eq!(
            store.insert(&b, Some(&idem)).await.unwrap(),
            Inserted::Existing {
                id: "task-a".into(),
                body_hash: "b1".into()
            }
        );
        assert!(tasks(&store).get("t1", "task-b").await.unwrap().is_none());
        // Another tenant may use the same key, and cannot see t1's task.
        let c = task("t2", "task-c", TaskState::PendingApproval);
        assert_eq!(store.insert(&c, Some(&idem)).await.unwrap(), Inserted::New);
        assert!(tasks(&store).get("t2", "task-a").await.unwrap().is_none());
        // Compare-and-swap.
        let mut approved = tasks(&store).get("t1", "task-a").await.unwrap().unwrap();
        assert_eq!(approved.ledger.version, 0);
        approved.record.state = TaskState::Running;
        approved.ledger.marked = true;
        assert!(store.update(&approved).await.unwrap());
        assert!(
            !store.update(&approved).await.unwrap(),
            "a stale version wins nothing"
        );
        store
            .put_screenshot("t1", "task-a", "done", SHOT_CANARY.as_bytes().to_vec())
            .await
            .unwrap();
        // Sealed, bound to its row: another task's (or name's) row does not open it.
        assert_eq!(
            store.screenshot("t1", "task-b", "done").await.unwrap(),
            None
        );
    }
    // Nothing secret in the clear on disk.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for canary in [INPUT_CANARY, COOKIE_CANARY, SHOT_CANARY] {
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{canary} on disk in the clear"
            );
        }
    }
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    let a = tasks(&store).get("t1", "task-a").await.unwrap().unwrap();
    assert_eq!(
        (a.ledger.version, a.record.state, a.ledger.marked),
        (1, TaskState::Running, true)
    );
    assert_eq!(
        a.request.inputs["password"].expose(),
        INPUT_CANARY,
        "inputs read back to run after a restart"
    );
    let unfinished = tasks(&store).unfinished().await.unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!(unfinished[0].id(), "task-a");
    assert_eq!(
        store.screenshot("t1", "task-a", "done").await.unwrap(),
        Some(SHOT_CANARY.as_bytes().to_vec())
    );
    assert_eq!(
        store.screenshot("t2", "task-a", "done").await.unwrap(),
        None
    );
    assert_eq!(
        tasks(&store).find_idempotency("t1", "k1").await.unwrap(),
        Some(("task-a".into(), "b1".into()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_increments_never_pass_the_limit_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let day = Counter::Executions {
        day: OffsetDateTime::UNIX_EPOCH.date(),
    };
    {
        let store = Arc::new(SqliteStore::open(&path, Some(key()), false).unwrap());
        let mut racers = Vec::new();
        for _ in 0..40 {
            let (store, day) = (Arc::clone(&store), day.clone());
            racers.push(tokio::spawn(async move {
                store.increment("t1", &day, 25).await.unwrap()
            }));
        }
        let mut granted = 0;
        for r in racers {
            granted += u32::from(r.await.unwrap());
        }
        assert_eq!(granted, 25);
        assert!(store.increment("t1", &Counter::Sessions, 2).await.unwrap());
        store.decrement("t1", &Counter::Sessions).await.unwrap();
        store.decrement("t1", &Counter::Sessions).await.unwrap();
        assert_eq!(
            store.count("t1", &Counter::Sessions).await.unwrap(),
            0,
            "not below zero"
        );
        assert!(store.increment("t1", &Counter::Sessions, 2).await.unwrap());
    }
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    assert_eq!(
        store.count("t1", &day).await.unwrap(),
        25,
        "counters survive a restart"
    );
    assert_eq!(store.count("t2", &day).await.unwrap(), 0);
    store.clear_sessions().await.unwrap();
    assert_eq!(store.count("t1", &Counter::Sessions).await.unwrap(), 0);
}

#[tokio::test]
async fn without_a_key_a_task_holding_secrets_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("abr.db"), None, false).unwrap();
    let e = store
        .insert(&task("t1", "task-a", TaskState::PendingApproval), None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("ABR_SESSION_KEY"), "{e}");
    assert!(
        tasks(&store).get("t1", "task-a").await.unwrap().is_none(),
        "nothing half-stored"
    );
    // A task with no inputs and no session holds nothing secret.
    let mut plain = task("t1", "task-b", TaskState::PendingApproval);
    plain.request.inputs.clear();
    plain.request.session = None;
    assert_eq!(store.insert(&plain, None).await.unwrap(), Inserted::New);
    // A screenshot shows a page: without a key it is refused too.
    let e = store
        .put_screenshot("t1", "task-b", "shot", b"pixels".to_vec())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("ABR_SESSION_KEY"), "{e}");
    assert_eq!(
        store.screenshot("t1", "task-b", "shot").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn sessions_stored_by_id_belong_to_their_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("abr.db"), Some(key()), false).unwrap();
    let state = AgentSessionState {
        cookies: vec![Cookie::new("sid", COOKIE_CANARY, "example.com")],
        ..AgentSessionState::default()
    };
    store
        .save(&SessionKey::stored("t1", "s1"), state.clone())
        .await
        .unwrap();
    assert_eq!(
        store.load(&SessionKey::stored("t1", "s1")).await.unwrap(),
        Some(state)
    );
    assert_eq!(
        store.load(&SessionKey::stored("t2", "s1")).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_paused_task_is_unfinished_work_and_a_pending_one_is_not() {
    let store = SqliteStore::in_memory(Some(key())).unwrap();
    for (id, state) in [
        ("paused", TaskState::Paused),
        ("pending", TaskState::PendingApproval),
        ("done", TaskState::Succeeded),
    ] {
        store.insert(&task("t1", id, state), None).await.unwrap();
    }
    let unfinished: Vec<String> = tasks(&store)
        .unfinished()
        .await
        .unwrap()
        .iter()
        .map(|t| t.id().to_owned())
        .collect();
    assert_eq!(unfinished, ["paused"]);
}
