//! [`InMemoryStore`]: every store contract in memory, in one object (tests, demos,
//! single-process embedders: everything is lost when the process ends).

use abr_protocol::{AgentSessionState, ArtifactInfo, FrameInfo, RunScreenshots, SiteEntry};
use async_trait::async_trait;

use crate::artifact::ArtifactQuota;
use crate::error::CoreError;
use crate::guard::frames::{FrameRefused, FrameStore, StoredFrame};
use crate::guard::memory::{InMemoryFrameStore, InMemorySiteStore};
use crate::guard::sites::SiteStore;
use crate::store::artifacts::{ArtifactPut, ArtifactStore, InMemoryArtifacts};
use crate::store::counters::{Counter, CounterStore, InMemoryCounters};
use crate::store::events::{Delivery, EventLog, InMemoryEvents, LoggedEvent, Settle};
use crate::store::keys::{InMemoryKeys, KeyStore, StoredKey};
use crate::store::links::{InMemoryLinks, LinkStore, StoredLink};
use crate::store::posts::{InMemoryPostStore, StoredPost};
use crate::store::records::{
    IdempotencyKey, InMemoryRecordStore, Inserted, ListQuery, Listed, RecordStore,
};
use crate::store::retention::{EvidenceStore, Expired};
use crate::store::screenshots::{InMemoryScreenshots, ScreenshotStore};
use crate::store::sessions::{InMemorySessionStore, SessionKey, SessionStore};
use crate::store::tasks::StoredTask;

/// Tasks, posts, counters, screenshots, sessions, frames, site decisions, keys, approval
/// links, run events and artifacts, in memory:
/// everything is lost when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    tasks: InMemoryRecordStore<StoredTask>,
    posts: InMemoryPostStore,
    counters: InMemoryCounters,
    screenshots: InMemoryScreenshots,
    sessions: InMemorySessionStore,
    frames: InMemoryFrameStore,
    sites: InMemorySiteStore,
    keys: InMemoryKeys,
    links: InMemoryLinks,
    events: InMemoryEvents,
    artifacts: InMemoryArtifacts,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every task of every tenant (for tests).
    pub fn all_tasks(&self) -> Vec<StoredTask> {
        self.tasks.all()
    }

    /// Every post of every tenant (for tests).
    pub fn all_posts(&self) -> Vec<StoredPost> {
        self.posts.all()
    }
}

#[async_trait]
impl RecordStore<StoredTask> for InMemoryStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        self.tasks.insert(task, idempotency).await
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.tasks.find_idempotency(tenant, key).await
    }

    async fn get(&self, tenant: &str, id: &str) -> Result<Option<StoredTask>, CoreError> {
        self.tasks.get(tenant, id).await
    }

    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        self.tasks.update(task).await
    }

    async fn mark(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        self.tasks.mark(tenant, id).await
    }

    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        self.tasks.unfinished().await
    }

    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredTask>, CoreError> {
        self.tasks.list(tenant, query).await
    }

    async fn count_in_state(
        &self,
        state: &str,
    ) -> Result<crate::store::records::StateCount, CoreError> {
        self.tasks.count_in_state(state).await
    }
}

#[async_trait]
impl RecordStore<StoredPost> for InMemoryStore {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        self.posts.insert(post, idempotency).await
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.posts.find_idempotency(tenant, key).await
    }

    async fn get(&self, tenant: &str, id: &str) -> Result<Option<StoredPost>, CoreError> {
        self.posts.get(tenant, id).await
    }

    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        self.posts.update(post).await
    }

    async fn mark(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        self.posts.mark(tenant, id).await
    }

    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        self.posts.unfinished().await
    }

    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredPost>, CoreError> {
        self.posts.list(tenant, query).await
    }

    async fn count_in_state(
        &self,
        state: &str,
    ) -> Result<crate::store::records::StateCount, CoreError> {
        self.posts.count_in_state(state).await
    }
}

#[async_trait]
impl CounterStore for InMemoryStore {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        self.counters.increment(tenant, counter, max).await
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        self.counters.decrement(tenant, counter).await
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        self.counters.count(tenant, counter).await
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.counters.clear_sessions().await
    }
}

#[async_trait]
impl ScreenshotStore for InMemoryStore {
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        image: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.screenshots
            .put_screenshot(tenant, task_id, name, image)
            .await
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        self.screenshots.screenshot(tenant, task_id, name).await
    }
}

#[async_trait]
impl SessionStore for InMemoryStore {
    async fn load(&self, key: &SessionKey) -> Result<Option<AgentSessionState>, CoreError> {
        self.sessions.load(key).await
    }

    async fn save(&self, key: &SessionKey, state: AgentSessionState) -> Result<(), CoreError> {
        self.sessions.save(key, state).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<bool, CoreError> {
        self.sessions.delete(key).await
    }

    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError> {
        self.sessions
            .accounts(workspace_id, platform, after, limit)
            .await
    }
}

#[async_trait]
impl FrameStore for InMemoryStore {
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        setting: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError> {
        self.frames.begin_run(tenant, run_id, setting).await
    }

    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError> {
        self.frames.run_setting(tenant, run_id).await
    }

    async fn put_frame(
        &self,
        tenant: &str,
        run_id: &str,
        frame: StoredFrame,
    ) -> Result<u32, FrameRefused> {
        self.frames.put_frame(tenant, run_id, frame).await
    }

    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError> {
        self.frames.frames(tenant, run_id).await
    }

    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError> {
        self.frames.frame(tenant, run_id, seq).await
    }

    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError> {
        self.frames.screenshots_enabled(tenant).await
    }

    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError> {
        self.frames.set_screenshots_enabled(tenant, enabled).await
    }
}

#[async_trait]
impl SiteStore for InMemoryStore {
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError> {
        self.sites.sites(tenant).await
    }

    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError> {
        self.sites.decide(tenant, entry).await
    }

    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError> {
        self.sites.remove(tenant, domain).await
    }
}

#[async_trait]
impl KeyStore for InMemoryStore {
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError> {
        self.keys.insert_key(key).await
    }

    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError> {
        self.keys.key(id).await
    }

    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError> {
        self.keys.key_by_digest(digest).await
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError> {
        self.keys.keys().await
    }

    async fn revoke_key(&self, id: &str, at: time::OffsetDateTime) -> Result<bool, CoreError> {
        self.keys.revoke_key(id, at).await
    }

    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: time::OffsetDateTime,
    ) -> Result<(), CoreError> {
        self.keys.link_runner(runner_id, key_id, at).await
    }

    async fn runner_link(
        &self,
        runner_id: &str,
    ) -> Result<Option<crate::store::keys::RunnerLink>, CoreError> {
        self.keys.runner_link(runner_id).await
    }
}

#[async_trait]
impl EvidenceStore for InMemoryStore {
    async fn expire_evidence(
        &self,
        before: time::OffsetDateTime,
        now: time::OffsetDateTime,
    ) -> Result<Expired, CoreError> {
        let mut ended = Vec::new();
        let records = self.tasks.change_all(|task| {
            let record = &mut task.record;
            let old = record.finished_at.is_some_and(|at| at < before);
            if !old || record.evidence_expired_at.is_some() {
                return false;
            }
            record.extracted.clear();
            record.screenshots.clear();
            record.downloads.clear();
            for step in &mut record.step_results {
                step.target = None;
                step.url = None;
            }
            record.evidence_expired_at = Some(now);
            ended.push((task.ledger.tenant_id.clone(), record.task_id.clone()));
            true
        });
        for (tenant, id) in &ended {
            self.screenshots.forget_task(tenant, id);
        }
        Ok(Expired {
            records,
            frames: self.frames.forget_before(before),
            artifacts: self.artifacts.expire_artifacts(before).await?,
        })
    }
}

#[async_trait]
impl LinkStore for InMemoryStore {
    async fn put_link(
        &self,
        link: &StoredLink,
        now: time::OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError> {
        self.links.put_link(link, now, max_open).await
    }

    async fn link(
        &self,
        digest: &[u8; 32],
        now: time::OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        self.links.link(digest, now).await
    }

    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: time::OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        self.links.take_link(digest, now).await
    }
}

#[async_trait]
impl EventLog for InMemoryStore {
    async fn append_event(
        &self,
        event: &abr_protocol::RunEvent,
        deliver: bool,
    ) -> Result<u64, CoreError> {
        self.events.append_event(event, deliver).await
    }

    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError> {
        self.events.events_after(tenant, after, limit).await
    }

    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError> {
        self.events.last_event(tenant).await
    }

    async fn claim_deliveries(
        &self,
        now: time::OffsetDateTime,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError> {
        self.events.claim_deliveries(now, lease, limit).await
    }

    async fn settle_delivery(
        &self,
        tenant: &str,
        seq: u64,
        attempt: u32,
        how: Settle,
    ) -> Result<bool, CoreError> {
        self.events.settle_delivery(tenant, seq, attempt, how).await
    }

    async fn prune_events(&self, before: time::OffsetDateTime) -> Result<u64, CoreError> {
        self.events.prune_events(before).await
    }
}

#[async_trait]
impl ArtifactStore for InMemoryStore {
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError> {
        self.artifacts
            .put_artifact(tenant, info, bytes, quota)
            .await
    }

    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError> {
        self.artifacts.artifact_info(tenant, id).await
    }

    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError> {
        self.artifacts.artifact(tenant, id).await
    }

    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError> {
        self.artifacts.artifacts(tenant).await
    }

    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        self.artifacts.delete_artifact(tenant, id).await
    }

    async fn expire_artifacts(&self, before: time::OffsetDateTime) -> Result<u64, CoreError> {
        self.artifacts.expire_artifacts(before).await
    }
}
