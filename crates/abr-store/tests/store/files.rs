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
