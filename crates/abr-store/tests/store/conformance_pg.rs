//! The store conformance suite (`abr_core::testing::store`) on PostgreSQL: the contracts the
//! engine relies on, on a throwaway server this test starts and stops, with a reopen (a new
//! pool on the same database, as the next replica finds it) and a look at every byte the
//! server keeps on disk.

use std::sync::Arc;

use abr_core::testing::store::{self, StoreHarness};
use abr_store::testing::PgServer;
use abr_store::{PgStore, SealingKey};
use async_trait::async_trait;

fn key() -> SealingKey {
    SealingKey::from_hex(&"3d".repeat(32)).unwrap()
}

/// A database on a server of its own.
pub(crate) struct Pg {
    pub(crate) server: Arc<PgServer>,
    url: String,
}

impl Pg {
    pub(crate) fn new() -> Self {
        Self {
            server: Arc::new(PgServer::start().unwrap()),
            url: String::new(),
        }
    }

    pub(crate) async fn connect(&self) -> PgStore {
        PgStore::connect(&self.url, Some(key()), false, 8)
            .await
            .unwrap()
    }
}

#[async_trait]
impl StoreHarness<PgStore> for Pg {
    async fn open(&mut self) -> Arc<PgStore> {
        self.url = self.server.create_database().await.unwrap();
        Arc::new(self.connect().await)
    }

    async fn reopen(&mut self, store: Arc<PgStore>) -> Option<Arc<PgStore>> {
        store.close();
        drop(store);
        Some(Arc::new(self.connect().await))
    }

    fn at_rest(&self) -> Option<Vec<u8>> {
        Some(self.server.at_rest())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_records_keep_the_record_contract() {
    store::task_records(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_records_keep_the_record_contract() {
    store::post_records(&mut Pg::new()).await;
}

#[tokio::test]
async fn task_and_post_keys_are_apart() {
    store::keys_apart(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_keep_their_contract() {
    store::counters(&mut Pg::new()).await;
}

#[tokio::test]
async fn screenshots_keep_their_contract() {
    store::screenshots(&mut Pg::new()).await;
}

#[tokio::test]
async fn sessions_keep_their_contract() {
    store::sessions(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_keep_their_contract() {
    store::frames(&mut Pg::new()).await;
}

#[tokio::test]
async fn evidence_expires_and_outcomes_stay() {
    store::evidence(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_keep_their_contract() {
    store::artifacts(&mut Pg::new()).await;
}

#[tokio::test]
async fn keys_keep_their_contract() {
    store::keys(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_keep_their_contract() {
    store::links(&mut Pg::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_keep_their_contract() {
    store::events(&mut Pg::new()).await;
}

#[tokio::test]
async fn sites_keep_their_contract() {
    store::sites(&mut Pg::new()).await;
}

#[tokio::test]
async fn nothing_that_holds_a_credential_or_a_page_is_readable_on_disk() {
    store::sealed(&mut Pg::new()).await;
}
