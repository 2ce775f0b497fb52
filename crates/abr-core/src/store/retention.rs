//! [`EvidenceStore`]: evidence (what a run saw) expires; outcomes (what it did) stay.
//!
//! A run's evidence is its replay frames, its screenshots and the data its `extract` steps
//! read: pictures and text of a user's pages; the files a tenant uploaded for its runs are
//! kept as long. The runner keeps them `ABR_RETENTION_DAYS`
//! (30 by default) and then forgets them in a background sweep; the record keeps its state,
//! its steps, its errors and its approval, and says when its evidence expired.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreError;

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expired {
    /// Task records whose evidence expired in this sweep.
    pub records: u64,
    /// Replay frames removed.
    pub frames: u64,
    /// Artifacts removed (kept before the cutoff).
    pub artifacts: u64,
}

/// Where evidence is kept, and forgotten.
///
/// # Contract
/// - [`expire_evidence`](Self::expire_evidence) forgets, for every tenant, the replay frames
///   taken before `before`, and for every task record that ended (`finishedAt`) before
///   `before` and was not expired yet: its extracted data, its screenshots (the names in the
///   record and the images) and sets `evidenceExpiredAt` to `now` (the version moves on, like
///   any update). Everything else of the record (state, steps, errors, approval, assertion)
///   is kept as it was. A record that has not ended is never touched, however old.
/// - It forgets the artifacts ([`ArtifactStore`](crate::store::ArtifactStore)) kept before
///   `before`, for every tenant.
/// - It is idempotent: a second sweep with the same `before` removes nothing.
/// - A durable store's sweep is durable when it returns.
#[async_trait]
pub trait EvidenceStore: Send + Sync + 'static {
    /// Forgets the evidence older than `before`, stamping the records it expires `now`.
    async fn expire_evidence(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Expired, CoreError>;
}
