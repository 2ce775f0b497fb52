//! [`ObservedStore`]: an engine's store that tells a [`StoreObserver`] how long each call
//! took and whether it answered, by operation (`task.update`, `event.append`, ...): the
//! store's latency for an operator's metrics, and the records' own cost in the task
//! benchmark. It changes nothing else: every call goes to the inner store as it came.
//!
//! The operation names are this file's literals, one per contract method: a bounded set,
//! never an id, a tenant or a value.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::CoreError;
use abr_core::chaos::StoreFaults;
use abr_core::guard::{FrameRefused, FrameStore, SiteStore, StoredFrame};
use abr_core::store::{
    ArtifactPut, ArtifactQuota, ArtifactStore, Counter, CounterStore, Delivery, EventLog,
    EvidenceStore, Expired, IdempotencyKey, Inserted, KeyStore, LinkStore, ListQuery, Listed,
    LoggedEvent, RecordStore, RunnerLink, ScreenshotStore, SessionKey, SessionStore, Settle,
    StateCount, StoredKey, StoredLink, StoredPost, StoredTask,
};
use abr_protocol::{AgentSessionState, ArtifactInfo, FrameInfo, RunScreenshots, SiteEntry};
use async_trait::async_trait;
use time::OffsetDateTime;
use tracing::Instrument as _;

use crate::engine::EngineStore;

/// Told of every call an [`ObservedStore`] passes on. Called on the caller's task right
/// after the call: it must not block.
pub trait StoreObserver: Send + Sync + 'static {
    /// The call `op` took `took` and answered `Ok` (`ok`) or an error.
    fn observe(&self, op: &'static str, took: Duration, ok: bool);
}

/// An engine's store whose every call is told to an observer (see the module's docs).
pub struct ObservedStore {
    inner: Arc<dyn EngineStore>,
    observer: Arc<dyn StoreObserver>,
    faults: Option<Arc<dyn StoreFaults>>,
}

impl std::fmt::Debug for ObservedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedStore").finish_non_exhaustive()
    }
}

impl ObservedStore {
    /// `inner`, observed by `observer`.
    pub fn new(inner: Arc<dyn EngineStore>, observer: Arc<dyn StoreObserver>) -> Self {
        Self {
            inner,
            observer,
            faults: None,
        }
    }

    /// Also injects `faults` around every call (the chaos layer's store faults: a call
    /// refused, an answer lost after the call, a slow commit), told to the observer as the
    /// answers they are.
    #[must_use]
    pub fn with_faults(mut self, faults: Arc<dyn StoreFaults>) -> Self {
        self.faults = Some(faults);
        self
    }

    async fn timed<T, E: From<CoreError>>(
        &self,
        op: &'static str,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let started = Instant::now();
        let span = tracing::debug_span!(
            target: crate::TRACE_TARGET,
            "store",
            otel.name = op,
            op,
            ok = tracing::field::Empty,
        );
        let answered = match &self.faults {
            None => call.instrument(span.clone()).await,
            Some(faults) => match faults.before(op).await {
                Err(e) => Err(E::from(e)),
                Ok(()) => {
                    let answered = call.instrument(span.clone()).await;
                    match faults.after(op, answered.is_ok()).await {
                        Ok(()) => answered,
                        Err(e) => Err(E::from(e)),
                    }
                }
            },
        };
        span.record("ok", answered.is_ok());
        self.observer
            .observe(op, started.elapsed(), answered.is_ok());
        answered
    }
}

#[async_trait]
impl RecordStore<StoredTask> for ObservedStore {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        self.timed(
            "task.insert",
            RecordStore::<StoredTask>::insert(&*self.inner, task, idempotency),
        )
        .await
    }
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.timed(
            "task.find_idempotency",
            RecordStore::<StoredTask>::find_idempotency(&*self.inner, tenant, key),
        )
        .await
    }
    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError> {
        self.timed(
            "task.get",
            RecordStore::<StoredTask>::get(&*self.inner, tenant, task_id),
        )
        .await
    }
    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        self.timed(
            "task.update",
            RecordStore::<StoredTask>::update(&*self.inner, task),
        )
        .await
    }
    async fn mark(&self, tenant: &str, task_id: &str) -> Result<bool, CoreError> {
        self.timed(
            "task.mark",
            RecordStore::<StoredTask>::mark(&*self.inner, tenant, task_id),
        )
        .await
    }
    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        self.timed(
            "task.unfinished",
            RecordStore::<StoredTask>::unfinished(&*self.inner),
        )
        .await
    }
    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredTask>, CoreError> {
        self.timed(
            "task.list",
            RecordStore::<StoredTask>::list(&*self.inner, tenant, query),
        )
        .await
    }

    async fn count_in_state(&self, state: &str) -> Result<StateCount, CoreError> {
        self.timed(
            "task.count_in_state",
            RecordStore::<StoredTask>::count_in_state(&*self.inner, state),
        )
        .await
    }
}

#[async_trait]
impl CounterStore for ObservedStore {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        self.timed(
            "counter.increment",
            CounterStore::increment(&*self.inner, tenant, counter, max),
        )
        .await
    }
    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        self.timed(
            "counter.decrement",
            CounterStore::decrement(&*self.inner, tenant, counter),
        )
        .await
    }
    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        self.timed(
            "counter.count",
            CounterStore::count(&*self.inner, tenant, counter),
        )
        .await
    }
    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.timed(
            "counter.clear_sessions",
            CounterStore::clear_sessions(&*self.inner),
        )
        .await
    }
}

#[async_trait]
impl ArtifactStore for ObservedStore {
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError> {
        self.timed(
            "artifact.put",
            self.inner.put_artifact(tenant, info, bytes, quota),
        )
        .await
    }
    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError> {
        self.timed("artifact.info", self.inner.artifact_info(tenant, id))
            .await
    }
    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError> {
        self.timed("artifact.get", self.inner.artifact(tenant, id))
            .await
    }
    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError> {
        self.timed("artifact.list", self.inner.artifacts(tenant))
            .await
    }
    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        self.timed("artifact.delete", self.inner.delete_artifact(tenant, id))
            .await
    }
    async fn expire_artifacts(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        self.timed("artifact.expire", self.inner.expire_artifacts(before))
            .await
    }
}

#[async_trait]
impl ScreenshotStore for ObservedStore {
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.timed(
            "screenshot.put",
            ScreenshotStore::put_screenshot(&*self.inner, tenant, task_id, name, png),
        )
        .await
    }
    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        self.timed(
            "screenshot.get",
            ScreenshotStore::screenshot(&*self.inner, tenant, task_id, name),
        )
        .await
    }
}

#[async_trait]
impl RecordStore<StoredPost> for ObservedStore {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        self.timed(
            "post.insert",
            RecordStore::<StoredPost>::insert(&*self.inner, post, idempotency),
        )
        .await
    }
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.timed(
            "post.find_idempotency",
            RecordStore::<StoredPost>::find_idempotency(&*self.inner, tenant, key),
        )
        .await
    }
    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError> {
        self.timed(
            "post.get",
            RecordStore::<StoredPost>::get(&*self.inner, tenant, post_id),
        )
        .await
    }
    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        self.timed(
            "post.update",
            RecordStore::<StoredPost>::update(&*self.inner, post),
        )
        .await
    }
    async fn mark(&self, tenant: &str, post_id: &str) -> Result<bool, CoreError> {
        self.timed(
            "post.mark",
            RecordStore::<StoredPost>::mark(&*self.inner, tenant, post_id),
        )
        .await
    }
    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        self.timed(
            "post.unfinished",
            RecordStore::<StoredPost>::unfinished(&*self.inner),
        )
        .await
    }
    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredPost>, CoreError> {
        self.timed(
            "post.list",
            RecordStore::<StoredPost>::list(&*self.inner, tenant, query),
        )
        .await
    }

    async fn count_in_state(&self, state: &str) -> Result<StateCount, CoreError> {
        self.timed(
            "post.count_in_state",
            RecordStore::<StoredPost>::count_in_state(&*self.inner, state),
        )
        .await
    }
}

#[async_trait]
impl SessionStore for ObservedStore {
    async fn load(&self, key: &SessionKey) -> Result<Option<AgentSessionState>, CoreError> {
        self.timed("session.load", SessionStore::load(&*self.inner, key))
            .await
    }
    async fn save(&self, key: &SessionKey, state: AgentSessionState) -> Result<(), CoreError> {
        self.timed("session.save", SessionStore::save(&*self.inner, key, state))
            .await
    }
    async fn delete(&self, key: &SessionKey) -> Result<bool, CoreError> {
        self.timed("session.delete", SessionStore::delete(&*self.inner, key))
            .await
    }
    async fn accounts(
        &self,
        workspace_id: &str,
        platform: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, CoreError> {
        self.timed(
            "session.accounts",
            SessionStore::accounts(&*self.inner, workspace_id, platform, after, limit),
        )
        .await
    }
}

#[async_trait]
impl FrameStore for ObservedStore {
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        setting: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError> {
        self.timed(
            "frame.begin_run",
            FrameStore::begin_run(&*self.inner, tenant, run_id, setting),
        )
        .await
    }
    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError> {
        self.timed(
            "frame.run_setting",
            FrameStore::run_setting(&*self.inner, tenant, run_id),
        )
        .await
    }
    async fn put_frame(
        &self,
        tenant: &str,
        run_id: &str,
        frame: StoredFrame,
    ) -> Result<u32, FrameRefused> {
        self.timed(
            "frame.put",
            FrameStore::put_frame(&*self.inner, tenant, run_id, frame),
        )
        .await
    }
    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError> {
        self.timed(
            "frame.list",
            FrameStore::frames(&*self.inner, tenant, run_id),
        )
        .await
    }
    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError> {
        self.timed(
            "frame.get",
            FrameStore::frame(&*self.inner, tenant, run_id, seq),
        )
        .await
    }
    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError> {
        self.timed(
            "frame.screenshots_enabled",
            FrameStore::screenshots_enabled(&*self.inner, tenant),
        )
        .await
    }
    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError> {
        self.timed(
            "frame.set_screenshots_enabled",
            FrameStore::set_screenshots_enabled(&*self.inner, tenant, enabled),
        )
        .await
    }
}

#[async_trait]
impl SiteStore for ObservedStore {
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError> {
        self.timed("site.list", SiteStore::sites(&*self.inner, tenant))
            .await
    }
    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError> {
        self.timed(
            "site.decide",
            SiteStore::decide(&*self.inner, tenant, entry),
        )
        .await
    }
    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError> {
        self.timed(
            "site.remove",
            SiteStore::remove(&*self.inner, tenant, domain),
        )
        .await
    }
}

#[async_trait]
impl KeyStore for ObservedStore {
    async fn insert_key(&self, key: &StoredKey) -> Result<(), CoreError> {
        self.timed("key.insert", KeyStore::insert_key(&*self.inner, key))
            .await
    }
    async fn key(&self, id: &str) -> Result<Option<StoredKey>, CoreError> {
        self.timed("key.get", KeyStore::key(&*self.inner, id)).await
    }
    async fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<StoredKey>, CoreError> {
        self.timed(
            "key.by_digest",
            KeyStore::key_by_digest(&*self.inner, digest),
        )
        .await
    }
    async fn keys(&self) -> Result<Vec<StoredKey>, CoreError> {
        self.timed("key.list", KeyStore::keys(&*self.inner)).await
    }
    async fn revoke_key(&self, id: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        self.timed("key.revoke", KeyStore::revoke_key(&*self.inner, id, at))
            .await
    }
    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: OffsetDateTime,
    ) -> Result<(), CoreError> {
        self.timed(
            "key.link_runner",
            KeyStore::link_runner(&*self.inner, runner_id, key_id, at),
        )
        .await
    }
    async fn runner_link(&self, runner_id: &str) -> Result<Option<RunnerLink>, CoreError> {
        self.timed(
            "key.runner_link",
            KeyStore::runner_link(&*self.inner, runner_id),
        )
        .await
    }
}

#[async_trait]
impl EvidenceStore for ObservedStore {
    async fn expire_evidence(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Expired, CoreError> {
        self.timed(
            "evidence.expire",
            EvidenceStore::expire_evidence(&*self.inner, before, now),
        )
        .await
    }
}

#[async_trait]
impl LinkStore for ObservedStore {
    async fn put_link(
        &self,
        link: &StoredLink,
        now: OffsetDateTime,
        max_open: usize,
    ) -> Result<bool, CoreError> {
        self.timed(
            "link.put",
            LinkStore::put_link(&*self.inner, link, now, max_open),
        )
        .await
    }
    async fn link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        self.timed("link.get", LinkStore::link(&*self.inner, digest, now))
            .await
    }
    async fn take_link(
        &self,
        digest: &[u8; 32],
        now: OffsetDateTime,
    ) -> Result<Option<StoredLink>, CoreError> {
        self.timed("link.take", LinkStore::take_link(&*self.inner, digest, now))
            .await
    }
}

#[async_trait]
impl EventLog for ObservedStore {
    async fn append_event(
        &self,
        event: &abr_protocol::RunEvent,
        deliver: bool,
    ) -> Result<u64, CoreError> {
        self.timed(
            "event.append",
            EventLog::append_event(&*self.inner, event, deliver),
        )
        .await
    }
    async fn events_after(
        &self,
        tenant: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, CoreError> {
        self.timed(
            "event.after",
            EventLog::events_after(&*self.inner, tenant, after, limit),
        )
        .await
    }
    async fn last_event(&self, tenant: &str) -> Result<u64, CoreError> {
        self.timed("event.last", EventLog::last_event(&*self.inner, tenant))
            .await
    }
    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>, CoreError> {
        self.timed(
            "event.claim",
            EventLog::claim_deliveries(&*self.inner, now, lease, limit),
        )
        .await
    }
    async fn settle_delivery(
        &self,
        tenant: &str,
        seq: u64,
        attempt: u32,
        how: Settle,
    ) -> Result<bool, CoreError> {
        self.timed(
            "event.settle",
            EventLog::settle_delivery(&*self.inner, tenant, seq, attempt, how),
        )
        .await
    }
    async fn prune_events(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        self.timed("event.prune", EventLog::prune_events(&*self.inner, before))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use abr_core::store::InMemoryStore;

    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(&'static str, bool)>>);

    impl StoreObserver for Seen {
        fn observe(&self, op: &'static str, _took: Duration, ok: bool) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((op, ok));
        }
    }

    #[tokio::test]
    async fn every_call_is_told_by_its_operation_and_whether_it_answered() {
        let seen = Arc::new(Seen::default());
        let store = ObservedStore::new(Arc::new(InMemoryStore::new()), seen.clone());
        let found = RecordStore::<StoredTask>::get(&store, "t1", "task_x").await;
        assert!(matches!(found, Ok(None)));
        let refused = RecordStore::<StoredTask>::list(
            &store,
            "t1",
            &ListQuery {
                state: None,
                cursor: Some("not-a-cursor".into()),
                limit: 10,
            },
        )
        .await;
        assert!(refused.is_err());
        assert_eq!(
            store.last_event("t1").await.ok(),
            Some(0),
            "answers as the inner store does"
        );
        let told = seen
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        assert_eq!(
            told,
            [
                ("task.get", true),
                ("task.list", false),
                ("event.last", true)
            ]
        );
    }
}
