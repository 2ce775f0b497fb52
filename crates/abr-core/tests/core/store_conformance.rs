//! The store conformance suite (`abr_core::testing::store`) on the core's in-memory stores.
//! They keep nothing across processes and nothing at rest: the suite says so and skips
//! only those checks. `abr-store` runs the same suite on SQLite.

use std::sync::Arc;

use abr_core::guard::{InMemoryFrameStore, InMemorySiteStore};
use abr_core::store::{
    InMemoryCounters, InMemoryKeys, InMemoryPostStore, InMemoryRecordStore, InMemoryScreenshots,
    InMemorySessionStore, InMemoryStore, StoredTask,
};
use abr_core::testing::store::{self, StoreHarness};
use async_trait::async_trait;

/// A store in memory: a fresh one each time, nothing after a restart, nothing at rest.
struct InMemory;

#[async_trait]
impl<S: Default + Send + Sync + 'static> StoreHarness<S> for InMemory {
    async fn open(&mut self) -> Arc<S> {
        Arc::new(S::default())
    }

    async fn reopen(&mut self, _store: Arc<S>) -> Option<Arc<S>> {
        None
    }

    fn at_rest(&self) -> Option<Vec<u8>> {
        None
    }
}

#[tokio::test]
async fn in_memory_task_records_keep_the_record_contract() {
    store::task_records::<InMemoryRecordStore<StoredTask>>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_post_records_keep_the_record_contract() {
    store::post_records::<InMemoryPostStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_counters_keep_their_contract() {
    store::counters::<InMemoryCounters>(&mut InMemory).await;
    store::counters::<InMemoryStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_screenshots_keep_their_contract() {
    store::screenshots::<InMemoryScreenshots>(&mut InMemory).await;
    store::screenshots::<InMemoryStore>(&mut InMemory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_artifacts_keep_their_contract() {
    store::artifacts::<abr_core::store::InMemoryArtifacts>(&mut InMemory).await;
    store::artifacts::<InMemoryStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_keys_keep_their_contract() {
    store::keys::<InMemoryKeys>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_sessions_keep_their_contract() {
    store::sessions::<InMemorySessionStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_frames_keep_their_contract() {
    store::frames::<InMemoryFrameStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_sites_keep_their_contract() {
    store::sites::<InMemorySiteStore>(&mut InMemory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_links_keep_their_contract() {
    store::links::<abr_core::store::InMemoryLinks>(&mut InMemory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_events_keep_their_contract() {
    store::events::<abr_core::store::InMemoryEvents>(&mut InMemory).await;
}

#[tokio::test]
async fn the_in_memory_store_of_every_contract_keeps_them_all() {
    store::task_records::<InMemoryStore>(&mut InMemory).await;
    store::post_records::<InMemoryStore>(&mut InMemory).await;
    store::keys_apart::<InMemoryStore>(&mut InMemory).await;
    store::counters::<InMemoryStore>(&mut InMemory).await;
    store::screenshots::<InMemoryStore>(&mut InMemory).await;
    store::sessions::<InMemoryStore>(&mut InMemory).await;
    store::frames::<InMemoryStore>(&mut InMemory).await;
    store::sites::<InMemoryStore>(&mut InMemory).await;
    store::keys::<InMemoryStore>(&mut InMemory).await;
    store::links::<InMemoryStore>(&mut InMemory).await;
    store::events::<InMemoryStore>(&mut InMemory).await;
    store::sealed::<InMemoryStore>(&mut InMemory).await;
}

#[tokio::test]
async fn in_memory_evidence_expires_and_outcomes_stay() {
    store::evidence::<InMemoryStore>(&mut InMemory).await;
}
