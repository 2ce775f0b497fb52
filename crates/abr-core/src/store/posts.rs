//! [`StoredPost`], a post as its journal keeps it, and [`PostStore`], where journaled posts
//! live (the one [`RecordStore`] contract); [`InMemoryPostStore`] for tests and
//! single-process embedders.

use abr_protocol::{OwnerAssertion, PostRecord, PostRequest, PostState};

use crate::audit::{AuditAction, AuditEvent, AuditOutcome};
use crate::error::CoreError;
use crate::store::records::{InMemoryRecordStore, LedgerRecord, RecordStore};

/// A post as stored: its tenant, its record, and what the journal needs to end it honestly
/// after a restart and to re-check it.
#[derive(Clone, PartialEq)]
pub struct StoredPost {
    /// The tenant; a post is visible to its tenant only.
    pub tenant_id: String,
    /// The record, as `GET /v1/posts/{postId}` returns it.
    pub record: PostRecord,
    /// The request as it was made (content, and `session` or `sessionId`): credentials and
    /// user content, kept only while the post may be re-checked (`running`, `uncertain`). A
    /// durable store encrypts it at rest.
    pub request: Option<PostRequest>,
    /// The store's version, for [`RecordStore::update`]'s compare-and-swap.
    pub version: u64,
    /// Whether the submit had started (saved *before* it starts), so that a post found
    /// `running` after a restart is known to be uncertain.
    pub submit_started: bool,
    /// The new attempt an owner's assertion allowed, once there is one.
    pub retried_by: Option<String>,
}

impl StoredPost {
    /// The post's id.
    pub fn id(&self) -> &str {
        &self.record.post_id
    }
}

impl std::fmt::Debug for StoredPost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredPost")
            .field("tenant_id", &self.tenant_id)
            .field("post_id", &self.record.post_id)
            .field("state", &self.record.state)
            .field("keeps_request", &self.request.is_some())
            .field("version", &self.version)
            .field("submit_started", &self.submit_started)
            .field("retried_by", &self.retried_by)
            .finish_non_exhaustive()
    }
}

impl LedgerRecord for StoredPost {
    const KIND: &'static str = "post";

    fn tenant(&self) -> &str {
        &self.tenant_id
    }

    fn id(&self) -> &str {
        StoredPost::id(self)
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn version_mut(&mut self) -> &mut u64 {
        &mut self.version
    }

    fn state_name(&self) -> String {
        crate::store::records::wire_name(&self.record.state)
    }

    /// `running`.
    fn is_unfinished(&self) -> bool {
        self.record.state == PostState::Running
    }

    fn is_uncertain(&self) -> bool {
        self.record.state == PostState::Uncertain
    }

    fn is_marked(&self) -> bool {
        self.submit_started
    }

    fn set_marked(&mut self) {
        self.submit_started = true;
    }

    fn assertion_mut(&mut self) -> &mut Option<OwnerAssertion> {
        &mut self.record.assertion
    }

    fn retried_by(&self) -> Option<&str> {
        self.retried_by.as_deref()
    }

    fn set_retried_by(&mut self, attempt: &str) {
        self.retried_by = Some(attempt.to_owned());
    }

    fn first_attempt(&self) -> &str {
        self.record.retry_of.as_deref().unwrap_or(self.id())
    }

    fn not_found() -> CoreError {
        CoreError::PostNotFound
    }

    const ASSERTED: AuditAction = AuditAction::PostAsserted;
    const RECHECKED: AuditAction = AuditAction::PostRechecked;

    fn audit_event(
        &self,
        action: AuditAction,
        outcome: AuditOutcome,
        now: time::OffsetDateTime,
    ) -> AuditEvent {
        let mut event = AuditEvent::new(now, action, outcome, self.record.platform.as_str());
        event.workspace_id = Some(self.tenant_id.clone());
        event.post_id = Some(self.id().to_owned());
        event.retry_of = self.record.retry_of.clone();
        event
    }
}

/// Where journaled posts live: the one [`RecordStore`] contract (idempotency keys of posts
/// are a namespace apart from tasks'). Every record store of posts is one.
pub trait PostStore: RecordStore<StoredPost> {}

impl<S: RecordStore<StoredPost>> PostStore for S {}

/// A process-local [`PostStore`] (tests, single-process embedders).
pub type InMemoryPostStore = InMemoryRecordStore<StoredPost>;
