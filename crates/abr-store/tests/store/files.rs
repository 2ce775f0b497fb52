//! The database's files are the owner's alone: another user of the machine cannot read task
//! records, sealed sessions or key digests (0600, its write-ahead log too), even when the
//! file was first made readable to them.

use std::os::unix::fs::PermissionsExt as _;

use abr_core::store::KeyStore;
use abr_core::testing::store::sample_key;
use abr_store::SqliteStore;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn the_database_and_its_log_are_readable_by_their_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    // A file other users could read, as an older version (or a umask) left it.
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = SqliteStore::open(&path, None, false).unwrap();
    store.insert_key(&sample_key("key_a", 1)).await.unwrap();
    assert_eq!(mode(&path), 0o600);
    let wal = dir.path().join("abr.db-wal");
    assert!(wal.exists(), "the write-ahead log holds the last writes");
    assert_eq!(mode(&wal), 0o600, "the log holds the same records");
}

#[tokio::test]
async fn a_killed_runners_log_left_readable_is_the_owners_alone_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let killed = SqliteStore::open(&path, None, false).unwrap();
    killed.insert_key(&sample_key("key_a", 1)).await.unwrap();
    // Killed: its connection never closes, so its log and shared memory stay behind...
    std::mem::forget(killed);
    let wal = dir.path().join("abr.db-wal");
    let shm = dir.path().join("abr.db-shm");
    assert!(wal.exists() && shm.exists(), "a killed runner leaves both");
    // ...readable by every user of the machine, as an older version (or a umask) left them.
    for file in [&wal, &shm] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    // Another user reads the log at their leisure unless the restart takes it back.
    let restarted = SqliteStore::open(&path, None, false).unwrap();
    restarted.insert_key(&sample_key("key_b", 2)).await.unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&wal), 0o600, "the log holds the last records");
    assert_eq!(mode(&shm), 0o600, "the shared memory indexes the log");
}

#[test]
fn a_database_a_newer_binary_migrated_is_refused_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    drop(SqliteStore::open(&path, None, false).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let known: u32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    conn.pragma_update(None, "user_version", known + 1).unwrap();
    drop(conn);
    let refused = SqliteStore::open(&path, None, false).unwrap_err();
    assert!(
        matches!(refused, abr_store::StoreError::NewerSchema { found, known: k }
            if found == known + 1 && k == known),
        "{refused:?}"
    );
}
