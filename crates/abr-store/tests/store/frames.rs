//! Replay frames and site decisions: the same contract checks run against the core's
//! in-memory stores and the SQLite store; then what only SQLite promises: frames sealed at
//! rest and bound to their row, everything kept across a reopen, and a database of
//! migration 3 upgraded in place.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::path::Path;

use abr_core::CoreError;
use abr_core::guard::{
    FrameRefused, FrameStore, InMemoryFrameStore, InMemorySiteStore, MAX_FRAME_BYTES,
    MAX_FRAMES_PER_RUN, SiteStore, StoredFrame,
};
use abr_core::store::{Counter, CounterStore, ScreenshotStore};
use abr_protocol::{
    FrameInfo, FramePoint, RunScreenshots, ScreenshotsMode, SiteDecision, SiteEntry,
};
use abr_store::{SealingKey, SqliteStore};
use time::macros::datetime;

/// A byte pattern that must never be found on disk in the clear.
const CANARY: &[u8] = b"ABR-FRAME-CANARY-3f9e71";

fn key() -> SealingKey {
    SealingKey::from_hex(&"6c".repeat(32)).unwrap()
}

/// A JPEG-looking frame holding `tag` (so two frames differ).
fn jpeg(tag: u8) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, tag];
    for _ in 0..8 {
        bytes.extend_from_slice(CANARY);
    }
    bytes.extend_from_slice(&[0xFF, 0xD9]);
    bytes
}

fn info(point: FramePoint) -> FrameInfo {
    FrameInfo {
        seq: 0,
        point,
        url: "https://example.com/inbox".into(),
        domain: "example.com".into(),
        action: "click".into(),
        bytes: 0,
        // Not UTC, and to the nanosecond: the stored instant must be the same one.
        taken_at: datetime!(2026-03-04 05:06:07.123456789 +02:00),
        same_as: None,
    }
}

fn frame(tag: u8) -> StoredFrame {
    StoredFrame {
        info: info(FramePoint::Click),
        jpeg: jpeg(tag),
    }
}

fn on() -> RunScreenshots {
    RunScreenshots {
        screenshots: ScreenshotsMode::On,
        reason: None,
    }
}

fn off(reason: &str) -> RunScreenshots {
    RunScreenshots {
        screenshots: ScreenshotsMode::Off,
        reason: Some(reason.into()),
    }
}

fn site(domain: &str, decision: SiteDecision, by: &str) -> SiteEntry {
    SiteEntry {
        domain: domain.into(),
        decision,
        decided_by: by.into(),
        decided_at: datetime!(2026-05-06 07:08:09.5 UTC),
    }
}

// ---- The contract, for every store ----------------------------------------------------

/// The [`FrameStore`] contract: the first setting of a run wins, frames are refused for an
/// unknown run, a run recorded off, over the size cap or beyond the count cap (and then not
/// stored), numbered from 1, and every read and switch is per tenant.
async fn frame_contract(store: &dyn FrameStore) {
    // An unknown run takes nothing.
    assert!(matches!(
        store.put_frame("t1", "run-a", frame(0)).await,
        Err(FrameRefused::UnknownRun)
    ));
    assert_eq!(store.run_setting("t1", "run-a").await.unwrap(), None);
    assert!(store.frames("t1", "run-a").await.unwrap().is_empty());

    // The first setting recorded wins.
    assert_eq!(store.begin_run("t1", "run-a", &on()).await.unwrap(), on());
    assert_eq!(
        store
            .begin_run("t1", "run-a", &off("tenant_setting"))
            .await
            .unwrap(),
        on(),
        "a second begin_run changes nothing"
    );
    assert_eq!(store.run_setting("t1", "run-a").await.unwrap(), Some(on()));

    // Frames are numbered from 1, their size is recorded by the store, and the 61st is
    // refused and not stored.
    for n in 1..=MAX_FRAMES_PER_RUN {
        let seq = store
            .put_frame("t1", "run-a", frame(u8::try_from(n).unwrap()))
            .await
            .unwrap();
        assert_eq!(seq, n);
    }
    assert!(matches!(
        store.put_frame("t1", "run-a", frame(0)).await,
        Err(FrameRefused::TooMany(MAX_FRAMES_PER_RUN))
    ));
    let listed = store.frames("t1", "run-a").await.unwrap();
    assert_eq!(
        listed.iter().map(|f| f.seq).collect::<Vec<_>>(),
        (1..=MAX_FRAMES_PER_RUN).collect::<Vec<_>>()
    );
    assert!(
        store
            .frame("t1", "run-a", MAX_FRAMES_PER_RUN + 1)
            .await
            .unwrap()
            .is_none()
    );
    let first = store.frame("t1", "run-a", 1).await.unwrap().unwrap();
    let expected = FrameInfo {
        seq: 1,
        bytes: jpeg(1).len(),
        ..info(FramePoint::Click)
    };
    assert_eq!(first.info, expected);
    assert_eq!(listed[0], expected);
    assert_eq!(first.jpeg, jpeg(1));
    assert_eq!(
        store.frame("t1", "run-a", 7).await.unwrap().unwrap().jpeg,
        jpeg(7)
    );

    // The size cap: at it is kept, over it is refused.
    store.begin_run("t1", "run-big", &on()).await.unwrap();
    assert!(matches!(
        store
            .put_frame(
                "t1",
                "run-big",
                StoredFrame {
                    info: info(FramePoint::Navigation),
                    jpeg: vec![7; MAX_FRAME_BYTES + 1],
                },
            )
            .await,
        Err(FrameRefused::TooLarge(MAX_FRAME_BYTES))
    ));
    assert!(store.frames("t1", "run-big").await.unwrap().is_empty());
    let at_cap = StoredFrame {
        info: info(FramePoint::Navigation),
        jpeg: vec![7; MAX_FRAME_BYTES],
    };
    assert_eq!(
        store
            .put_frame("t1", "run-big", at_cap.clone())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store.frame("t1", "run-big", 1).await.unwrap().unwrap().jpeg,
        at_cap.jpeg
    );

    // A run recorded off refuses every frame, and stays off when begun again with on.
    assert_eq!(
        store
            .begin_run("t1", "run-off", &off("tenant_setting"))
            .await
            .unwrap(),
        off("tenant_setting")
    );
    assert_eq!(
        store.begin_run("t1", "run-off", &on()).await.unwrap(),
        off("tenant_setting"),
        "switching on mid-run changes nothing for the run"
    );
    assert_eq!(
        store.run_setting("t1", "run-off").await.unwrap(),
        Some(off("tenant_setting"))
    );
    for point in [FramePoint::Navigation, FramePoint::Completion] {
        assert!(matches!(
            store
                .put_frame(
                    "t1",
                    "run-off",
                    StoredFrame {
                        info: info(point),
                        jpeg: jpeg(1),
                    }
                )
                .await,
            Err(FrameRefused::ScreenshotsOff)
        ));
    }
    assert!(store.frames("t1", "run-off").await.unwrap().is_empty());
    assert!(store.frame("t1", "run-off", 1).await.unwrap().is_none());

    // Another tenant sees t1's runs exactly as missing ones, and cannot write into them.
    assert_eq!(store.run_setting("t2", "run-a").await.unwrap(), None);
    assert!(store.frames("t2", "run-a").await.unwrap().is_empty());
    assert!(store.frame("t2", "run-a", 1).await.unwrap().is_none());
    assert!(matches!(
        store.put_frame("t2", "run-a", frame(9)).await,
        Err(FrameRefused::UnknownRun)
    ));
    // The same run id is its own run for t2: its own setting, its own numbering.
    assert_eq!(store.begin_run("t2", "run-off", &on()).await.unwrap(), on());
    assert_eq!(
        store.put_frame("t2", "run-off", frame(42)).await.unwrap(),
        1
    );
    assert_eq!(
        store.frame("t2", "run-off", 1).await.unwrap().unwrap().jpeg,
        jpeg(42)
    );
    assert!(store.frames("t1", "run-off").await.unwrap().is_empty());
    assert_eq!(
        store.run_setting("t1", "run-off").await.unwrap(),
        Some(off("tenant_setting"))
    );
    assert_eq!(
        store.frames("t1", "run-a").await.unwrap().len(),
        usize::try_from(MAX_FRAMES_PER_RUN).unwrap()
    );

    // The screenshots switch: on by default, per tenant.
    assert!(store.screenshots_enabled("t1").await.unwrap());
    store.set_screenshots_enabled("t1", false).await.unwrap();
    assert!(!store.screenshots_enabled("t1").await.unwrap());
    assert!(store.screenshots_enabled("t2").await.unwrap());
    store.set_screenshots_enabled("t1", false).await.unwrap();
    assert!(!store.screenshots_enabled("t1").await.unwrap());
    store.set_screenshots_enabled("t1", true).await.unwrap();
    assert!(store.screenshots_enabled("t1").await.unwrap());
}

/// The [`SiteStore`] contract: `decide` replaces the entry for its domain, entries list
/// sorted by domain, `remove` answers whether one existed, and tenants never see or change
/// each other's entries.
async fn site_contract(store: &dyn SiteStore) {
    assert!(store.sites("t1").await.unwrap().is_empty());
    assert!(!store.remove("t1", "a.com").await.unwrap());
    store
        .decide("t1", site("b.com", SiteDecision::Allow, "alice"))
        .await
        .unwrap();
    store
        .decide("t1", site("a.com", SiteDecision::Deny, "alice"))
        .await
        .unwrap();
    store
        .decide("t1", site("c.org", SiteDecision::Allow, "alice"))
        .await
        .unwrap();
    // The same domain again replaces its entry.
    store
        .decide("t1", site("a.com", SiteDecision::Allow, "bob"))
        .await
        .unwrap();
    assert_eq!(
        store.sites("t1").await.unwrap(),
        vec![
            site("a.com", SiteDecision::Allow, "bob"),
            site("b.com", SiteDecision::Allow, "alice"),
            site("c.org", SiteDecision::Allow, "alice"),
        ]
    );

    // Another tenant: nothing to see, nothing to remove, and its own entries apart.
    assert!(store.sites("t2").await.unwrap().is_empty());
    assert!(!store.remove("t2", "a.com").await.unwrap());
    store
        .decide("t2", site("a.com", SiteDecision::Deny, "carol"))
        .await
        .unwrap();
    assert_eq!(
        store.sites("t2").await.unwrap(),
        vec![site("a.com", SiteDecision::Deny, "carol")]
    );
    assert_eq!(
        store.sites("t1").await.unwrap()[0],
        site("a.com", SiteDecision::Allow, "bob")
    );

    assert!(store.remove("t1", "a.com").await.unwrap());
    assert!(!store.remove("t1", "a.com").await.unwrap());
    assert_eq!(
        store
            .sites("t1")
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.domain)
            .collect::<Vec<_>>(),
        ["b.com", "c.org"]
    );
    assert_eq!(store.sites("t2").await.unwrap().len(), 1, "t2's entry kept");
}

#[tokio::test]
async fn the_in_memory_stores_keep_the_contract() {
    frame_contract(&InMemoryFrameStore::default()).await;
    site_contract(&InMemorySiteStore::default()).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = SqliteStore::open(&dir.path().join("abr.db"), Some(key()), false).unwrap();
    frame_contract(&on_disk).await;
    site_contract(&on_disk).await;
    // In memory, with and without a key (plaintext is allowed there).
    for store in [
        SqliteStore::in_memory(Some(key())).unwrap(),
        SqliteStore::in_memory(None).unwrap(),
    ] {
        frame_contract(&store).await;
        site_contract(&store).await;
    }
}

// ---- SQLite only ------------------------------------------------------------------------

fn files_contain(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}

#[tokio::test]
async fn frames_are_sealed_at_rest_and_everything_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        store.begin_run("t1", "run-1", &on()).await.unwrap();
        store
            .begin_run("t1", "run-2", &off("platform_setting"))
            .await
            .unwrap();
        for tag in 1..=3 {
            store.put_frame("t1", "run-1", frame(tag)).await.unwrap();
        }
        store.set_screenshots_enabled("t2", false).await.unwrap();
        SiteStore::decide(
            &store,
            "t1",
            site("example.com", SiteDecision::Deny, "alice"),
        )
        .await
        .unwrap();
        // While the store is open the frames are in the write-ahead log (`-wal`).
        assert!(dir.path().join("abr.db-wal").exists());
        assert!(
            !files_contain(dir.path(), CANARY),
            "a frame is on disk in the clear"
        );
    }
    assert!(
        !files_contain(dir.path(), CANARY),
        "a frame is on disk in the clear"
    );
    // The scan finds a frame kept in plaintext (so its silence above means something).
    let dev_dir = tempfile::tempdir().unwrap();
    {
        let dev = SqliteStore::open(&dev_dir.path().join("abr.db"), None, true).unwrap();
        dev.begin_run("t1", "run-1", &on()).await.unwrap();
        dev.put_frame("t1", "run-1", frame(1)).await.unwrap();
        assert!(files_contain(dev_dir.path(), CANARY));
        assert_eq!(
            dev.frame("t1", "run-1", 1).await.unwrap().unwrap().jpeg,
            jpeg(1)
        );
    }

    // Reopened: every frame, setting, switch and decision is still there.
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    assert_eq!(store.run_setting("t1", "run-1").await.unwrap(), Some(on()));
    assert_eq!(
        store.run_setting("t1", "run-2").await.unwrap(),
        Some(off("platform_setting"))
    );
    assert_eq!(
        store.begin_run("t1", "run-2", &on()).await.unwrap(),
        off("platform_setting"),
        "the first value wins across a restart too"
    );
    let frames = store.frames("t1", "run-1").await.unwrap();
    assert_eq!(frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [1, 2, 3]);
    for tag in 1..=3 {
        let stored = store
            .frame("t1", "run-1", u32::from(tag))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.jpeg, jpeg(tag));
        assert_eq!(stored.info.taken_at, info(FramePoint::Click).taken_at);
    }
    assert_eq!(store.put_frame("t1", "run-1", frame(4)).await.unwrap(), 4);
    assert!(store.screenshots_enabled("t1").await.unwrap());
    assert!(!store.screenshots_enabled("t2").await.unwrap());
    assert_eq!(
        SiteStore::sites(&store, "t1").await.unwrap(),
        vec![site("example.com", SiteDecision::Deny, "alice")]
    );
}

#[tokio::test]
async fn a_wrong_key_or_a_moved_row_cannot_read_a_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        store.begin_run("t1", "run-1", &on()).await.unwrap();
        store.put_frame("t1", "run-1", frame(1)).await.unwrap();
        store.put_frame("t1", "run-1", frame(2)).await.unwrap();
    }
    let wrong = SqliteStore::open(&path, Some(SealingKey::from_bytes([1; 32])), false).unwrap();
    let e = wrong.frame("t1", "run-1", 1).await.unwrap_err();
    assert!(matches!(e, CoreError::Store(_)), "{e:?}");
    assert_eq!(e.code(), "store_failed");
    // The metadata is not sealed (it never holds page content): it still lists.
    assert_eq!(wrong.frames("t1", "run-1").await.unwrap().len(), 2);
    drop(wrong);

    // A sealed JPEG is bound to its row: copied onto frame 2, it does not open there.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE frames SET jpeg = (SELECT jpeg FROM frames WHERE seq = 1) WHERE seq = 2",
            [],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    assert_eq!(
        store.frame("t1", "run-1", 1).await.unwrap().unwrap().jpeg,
        jpeg(1)
    );
    let e = store.frame("t1", "run-1", 2).await.unwrap_err();
    assert!(matches!(e, CoreError::Store(_)), "{e:?}");
}

#[tokio::test]
async fn without_a_key_frames_are_refused_unless_plaintext_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let strict = SqliteStore::open(&dir.path().join("abr.db"), None, false).unwrap();
    strict.begin_run("t1", "run-1", &on()).await.unwrap();
    let refused = strict.put_frame("t1", "run-1", frame(1)).await.unwrap_err();
    assert!(matches!(refused, FrameRefused::Store(_)), "{refused:?}");
    assert!(refused.to_string().contains("ABR_SESSION_KEY"), "{refused}");
    assert!(
        strict.frames("t1", "run-1").await.unwrap().is_empty(),
        "nothing stored half-way"
    );
    // The rest holds no secret, and works without a key.
    strict.set_screenshots_enabled("t1", false).await.unwrap();
    assert!(!strict.screenshots_enabled("t1").await.unwrap());
    SiteStore::decide(&strict, "t1", site("a.com", SiteDecision::Allow, "alice"))
        .await
        .unwrap();
    assert_eq!(SiteStore::sites(&strict, "t1").await.unwrap().len(), 1);
}

/// The schema of migrations 1 to 3 exactly as they shipped (a fixture: it must never change
/// with the code).
const SCHEMA_AT_3: &str = "
    CREATE TABLE sessions (
        workspace_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        platform TEXT NOT NULL,
        encrypted INTEGER NOT NULL,
        payload BLOB NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace_id, account_id, platform)
    ) STRICT;
    CREATE TABLE tasks (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        record TEXT NOT NULL,
        request_encrypted INTEGER NOT NULL,
        request BLOB NOT NULL,
        committing_started INTEGER NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, task_id)
    ) STRICT;
    CREATE INDEX tasks_by_state ON tasks (state);
    CREATE TABLE idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    ) STRICT;
    CREATE TABLE counters (
        tenant_id TEXT NOT NULL,
        counter TEXT NOT NULL,
        value INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, counter)
    ) STRICT;
    CREATE TABLE screenshots (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        name TEXT NOT NULL,
        png BLOB NOT NULL,
        PRIMARY KEY (tenant_id, task_id, name)
    ) STRICT;
    CREATE TABLE posts (
        tenant_id TEXT NOT NULL,
        post_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        record TEXT NOT NULL,
        request_encrypted INTEGER NOT NULL,
        request BLOB,
        submit_started INTEGER NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, post_id)
    ) STRICT;
    CREATE INDEX posts_by_state ON posts (state);
    CREATE TABLE post_idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        post_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    ) STRICT;";

/// Every table and index of the database at `path`, by name (whitespace normalized).
fn schema(path: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut statement = conn
        .prepare("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
        .unwrap();
    statement
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (name, sql) = row.unwrap();
            (name, sql.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn a_migration_3_database_upgrades_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(&format!(
            "BEGIN; {SCHEMA_AT_3} PRAGMA user_version = 3; COMMIT;"
        ))
        .unwrap();
        conn.execute(
            "INSERT INTO screenshots (tenant_id, task_id, name, png) VALUES ('t1', 'task-1', 'end', x'89504E47')",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO counters (tenant_id, counter, value) VALUES ('t1', 'sessions', 2)",
            [],
        )
        .unwrap();
    }
    assert_eq!(user_version(&path), 3);

    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        // What was there is still there.
        assert_eq!(
            store.screenshot("t1", "task-1", "end").await.unwrap(),
            Some(vec![0x89, 0x50, 0x4E, 0x47])
        );
        assert_eq!(store.count("t1", &Counter::Sessions).await.unwrap(), 2);
        // And the new tables work.
        store.begin_run("t1", "run-1", &on()).await.unwrap();
        assert_eq!(store.put_frame("t1", "run-1", frame(1)).await.unwrap(), 1);
        SiteStore::decide(&store, "t1", site("a.com", SiteDecision::Allow, "alice"))
            .await
            .unwrap();
        store.set_screenshots_enabled("t1", false).await.unwrap();
    }
    assert_eq!(user_version(&path), 14);

    // The upgraded schema is exactly the one a new database gets.
    let fresh = dir.path().join("fresh.db");
    drop(SqliteStore::open(&fresh, None, false).unwrap());
    assert_eq!(schema(&path), schema(&fresh));
    assert_eq!(user_version(&fresh), 14);

    // Opening it again migrates nothing more and keeps everything.
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    assert_eq!(user_version(&path), 14);
    assert_eq!(
        store.frame("t1", "run-1", 1).await.unwrap().unwrap().jpeg,
        jpeg(1)
    );
    assert_eq!(SiteStore::sites(&store, "t1").await.unwrap().len(), 1);
    assert!(!store.screenshots_enabled("t1").await.unwrap());
}

/// The database itself refuses a frame that would be the same as itself or a later frame,
/// whoever writes the row.
#[tokio::test]
async fn the_database_refuses_a_frame_the_same_as_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        store.begin_run("t1", "run-1", &on()).await.unwrap();
        assert_eq!(store.put_frame("t1", "run-1", frame(1)).await.unwrap(), 1);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let insert = |seq: u32, same_as: u32| {
        conn.execute(
            "INSERT INTO frames (tenant_id, run_id, seq, point, url, domain, action, bytes,
                taken_at, encrypted, jpeg, same_as)
             SELECT tenant_id, run_id, ?1, point, url, domain, action, bytes, taken_at,
                encrypted, jpeg, ?2 FROM frames WHERE seq = 1",
            (seq, same_as),
        )
    };
    for (seq, same_as) in [(2, 2), (2, 3), (2, 0)] {
        let error = insert(seq, same_as).unwrap_err();
        assert!(
            error.to_string().contains("CHECK constraint failed"),
            "frame {seq} the same as {same_as}: {error}"
        );
    }
    assert_eq!(insert(2, 1).unwrap(), 1);
}
