//! [`StoredPost`], a post as its journal keeps it, and [`PostStore`], where journaled posts
//! live (the one [`RecordStore`] contract); [`InMemoryPostStore`] for tests and
//! single-process embedders.

use abr_protocol::{OwnerAssertion, PostRecord, PostRequest, PostState};

use crate::audit::{AuditAction, AuditEvent, AuditOutcome};
use crate::error::CoreError;
use crate::store::records::{InMemoryRecordStore, LedgerHeader, LedgerRecord, RecordStore};

/// A post as stored: its ledger header (its tenant, version, submit mark and retry), its
/// record, and the request the journal needs to re-check it.
#[derive(Clone, PartialEq)]
pub struct StoredPost {
    /// What every ledger record holds: the tenant (a post is visible to its tenant only),
    /// the store's version, the mark saved before the submit starts (so that a post found
    /// `running` after a restart is known to be uncertain) and the new attempt an owner's
    /// assertion allowed, once there is one.
    pub ledger: LedgerHeader,
    /// The record, as `GET /v1/posts/{postId}` returns it.
    pub record: PostRecord,
    /// The request as it was made (content, and `session` or `sessionId`): credentials and
    /// user content, kept only while the post may be re-checked (`running`, `uncertain`). A
    /// durable store encrypts it at rest.
    pub request: Option<PostRequest>,
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
            .field("ledger", &self.ledger)
            .field("post_id", &self.record.post_id)
            .field("state", &self.record.state)
            .field("keeps_request", &self.request.is_some())
            .finish_non_exhaustive()
    }
}

impl LedgerRecord for StoredPost {
    const KIND: &'static str = "post";

    fn header(&self) -> &LedgerHeader {
        &self.ledger
    }

    fn header_mut(&mut self) -> &mut LedgerHeader {
        &mut self.ledger
    }

    fn id(&self) -> &str {
        StoredPost::id(self)
    }

    fn state_name(&self) -> String {
        crate::store::records::wire_name(&self.record.state)
    }

    fn created_at(&self) -> time::OffsetDateTime {
        self.record.created_at
    }

    /// `running`.
    fn is_unfinished(&self) -> bool {
        self.record.state == PostState::Running
    }

    fn is_uncertain(&self) -> bool {
        self.record.state == PostState::Uncertain
    }

    fn assertion_mut(&mut self) -> &mut Option<OwnerAssertion> {
        &mut self.record.assertion
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
        event.workspace_id = Some(self.ledger.tenant_id.clone());
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
