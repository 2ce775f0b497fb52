//! The store conformance suite (`abr_core::testing::store`) on SQLite: every store contract
//! the engine relies on, with a restart (the file opened again, as after a `kill -9`) and a
//! look at every byte the store keeps on disk. The in-memory stores run the same suite in
//! `abr-core`; a shared database will run it too.

use std::path::PathBuf;
use std::sync::Arc;

use abr_core::testing::store::{self, StoreHarness};
use abr_store::{SealingKey, SqliteStore};
use async_trait::async_trait;

fn key() -> SealingKey {
    SealingKey::from_hex(&"3d".repeat(32)).unwrap()
}

/// A SQLite file in a temporary directory, sealed with a key.
struct Sqlite {
    dir: tempfile::TempDir,
}

impl Sqlite {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("abr.db")
    }
}

#[async_trait]
impl StoreHarness<SqliteStore> for Sqlite {
    async fn open(&mut self) -> Arc<SqliteStore> {
        // A fresh directory each time: a fresh, empty store.
        self.dir = tempfile::tempdir().unwrap();
        Arc::new(SqliteStore::open(&self.path(), Some(key()), false).unwrap())
    }

    async fn reopen(&mut self, store: Arc<SqliteStore>) -> Option<Arc<SqliteStore>> {
        drop(store);
        Some(Arc::new(
            SqliteStore::open(&self.path(), Some(key()), false).unwrap(),
        ))
    }

    fn at_rest(&self) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        Some(bytes)
    }
}

// The store runs its calls in place on a multi-threaded runtime and on the blocking pool on
// a current-thread one: some contracts run on each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_records_keep_the_record_contract() {
    store::task_records(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn post_records_keep_the_record_contract() {
    store::post_records(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn task_and_post_keys_are_apart() {
    store::keys_apart(&mut Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_keep_their_contract() {
    store::counters(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn screenshots_keep_their_contract() {
    store::screenshots(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn sessions_keep_their_contract() {
    store::sessions(&mut Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_keep_their_contract() {
    store::frames(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn evidence_expires_and_outcomes_stay() {
    store::evidence(&mut Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_keep_their_contract() {
    store::artifacts(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn keys_keep_their_contract() {
    store::keys(&mut Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_keep_their_contract() {
    store::links(&mut Sqlite::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_keep_their_contract() {
    store::events(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn sites_keep_their_contract() {
    store::sites(&mut Sqlite::new()).await;
}

#[tokio::test]
async fn nothing_that_holds_a_credential_or_a_page_is_readable_on_disk() {
    store::sealed(&mut Sqlite::new()).await;
}
