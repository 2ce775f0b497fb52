//! [`Ledger`]: "never twice", once, for posts and tasks alike, over the one
//! [`RecordStore`] contract.
//!
//! - Record before acting: a record is stored (and its idempotency key claimed) before
//!   anything runs ([`Ledger::record`]); a repeated key with the same body names the
//!   original ([`Ledger::find`]), with another body it is
//!   [`EngineError::IdempotencyKeyReused`].
//! - Every change is a compare-and-swap on the record's version ([`Ledger::save`]), retried
//!   on a fresh read where the change can be made again ([`Ledger::update_with`]).
//! - The mark before the commit point is written durably before it, outside the
//!   compare-and-swap ([`Ledger::mark`]).
//! - An uncertain record is never run again on its own: the owner's assertion that it did
//!   not happen is recorded as an assertion, never proof ([`Ledger::assert_not_happened`]),
//!   and allows exactly one new attempt ([`Ledger::claim_attempt`]).
//! - After a restart, every unfinished record is ended honestly ([`Ledger::recover`]).

use std::sync::Arc;
use std::time::Duration;

use abr_core::audit::{AuditOutcome, Auditor};
use abr_core::clock::{Clock, SystemClock, new_token};
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::store::{IdempotencyKey, Inserted, LedgerRecord, RecordStore};
use abr_protocol::{AssertNotPostedRequest, OwnerAssertion, RecheckResult};

use crate::error::EngineError;

/// How often a lost compare-and-swap is retried by an operation that re-reads the record.
pub(crate) const CAS_ATTEMPTS: usize = 8;

/// How long a record's end is tried again while the store is unavailable
/// ([`Ledger::save_end`]): a database restart takes seconds.
pub(crate) const END_PATIENCE: Duration = Duration::from_secs(60);

/// Longest free text (a rejection reason, an assertion's note), in bytes.
pub(crate) const MAX_NOTE: usize = 4096;

/// A free-text field of at most [`MAX_NOTE`] bytes.
///
/// # Errors
/// [`CoreError::InvalidInput`] naming `field`.
pub(crate) fn note(field: &str, value: Option<&String>) -> Result<(), EngineError> {
    match value {
        Some(v) if v.len() > MAX_NOTE => Err(EngineError::from(CoreError::InvalidInput(format!(
            "{field} is at most {MAX_NOTE} bytes"
        )))),
        _ => Ok(()),
    }
}

/// A new record's id: `prefix` and 22 characters of a 256-bit random token (132 bits).
///
/// # Errors
/// [`CoreError::Internal`] when the OS random source fails.
pub(crate) fn record_id(prefix: &str) -> Result<String, EngineError> {
    let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
    Ok(format!("{prefix}{}", token.get(..22).unwrap_or(&token)))
}

/// What [`Ledger::record`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// The record is stored; the key, if any, names it.
    New,
    /// The key already names this record (with the same body): nothing was stored.
    Existing(String),
}

/// An owner's assertion that an uncertain task or post did not happen, checked
/// (`assertedBy` not empty, `note` not over-long) before the record is read.
pub(crate) struct Assertion<'a> {
    /// Who asserts.
    pub(crate) by: String,
    request: &'a AssertNotPostedRequest,
}

impl<'a> Assertion<'a> {
    /// Checks `request`.
    ///
    /// # Errors
    /// An empty `assertedBy`, an over-long note.
    pub(crate) fn check(request: &'a AssertNotPostedRequest) -> Result<Self, EngineError> {
        let by = abr_core::tenant::person("assertedBy", &request.asserted_by)?;
        note("note", request.note.as_ref())?;
        Ok(Self { by, request })
    }

    /// Records it in `assertion`, the slot of a record that is `uncertain` (an assertion,
    /// never proof: the record stays `uncertain`).
    fn record(
        &self,
        uncertain: bool,
        assertion: &mut Option<OwnerAssertion>,
        now: time::OffsetDateTime,
    ) -> Result<(), EngineError> {
        if !uncertain {
            return Err(EngineError::NotUncertain);
        }
        if assertion.is_some() {
            return Err(EngineError::AlreadyAsserted);
        }
        *assertion = Some(OwnerAssertion {
            asserted_by: self.by.clone(),
            note: self.request.note.clone(),
            asserted_at: now,
            spent_by: None,
        });
        Ok(())
    }
}

/// The records of one kind (tasks, or posts) and the rules that keep them honest.
pub(crate) struct Ledger<R: LedgerRecord> {
    store: Arc<dyn RecordStore<R>>,
    /// Where the ledger's own transitions (an assertion) are audited.
    pub(crate) audit: Auditor,
    /// Times of what the ledger records.
    pub(crate) clock: Arc<dyn Clock>,
}

impl<R: LedgerRecord> Clone for Ledger<R> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            audit: self.audit.clone(),
            clock: Arc::clone(&self.clock),
        }
    }
}

impl<R: LedgerRecord> std::fmt::Debug for Ledger<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("kind", &R::KIND).finish()
    }
}

impl<R: LedgerRecord> Ledger<R> {
    /// The records in `store`; no audit sink, the system clock.
    pub(crate) fn new(store: Arc<dyn RecordStore<R>>) -> Self {
        Self {
            store,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn RecordStore<R>> {
        &self.store
    }

    /// The record `id` of `tenant`.
    ///
    /// # Errors
    /// A bad tenant id, [`LedgerRecord::not_found`] (also for another tenant's id), a store
    /// failure.
    pub(crate) async fn load(&self, tenant: &str, id: &str) -> Result<R, EngineError> {
        abr_core::tenant::check("tenantId", Some(tenant))?;
        Ok(self.store.get(tenant, id).await?.ok_or_else(R::not_found)?)
    }

    /// Compare-and-swap; on success the in-memory copy follows the stored version.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn save(&self, record: &mut R) -> Result<bool, EngineError> {
        let saved = self.store.update(record).await?;
        if saved {
            record.header_mut().version += 1;
        }
        Ok(saved)
    }

    /// Saves a record's end (its outcome known, its browser closed), as [`Self::save`], but
    /// patient with a store that is unavailable for a while (a database restarting, a
    /// connection lost): tried again with backoff for up to [`END_PATIENCE`] rather than
    /// leaving the record `running` while its runner lives (only a restart or a lapsed
    /// heartbeat would end it then). A retry after a lost answer finds its own write (the
    /// stored record one version on, ended in the same state) and counts it saved.
    ///
    /// # Errors
    /// A store failure that is not passing, or one that outlasted the patience.
    pub(crate) async fn save_end(&self, record: &mut R) -> Result<bool, EngineError> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(250);
        let mut failed_once = false;
        loop {
            match self.save(record).await {
                Ok(false) if failed_once => {
                    // Our earlier write may have been made and its answer lost.
                    let stored = self.load(&record.header().tenant_id, record.id()).await?;
                    let ours = stored.header().version == record.header().version + 1
                        && !stored.is_unfinished()
                        && stored.state_name() == record.state_name();
                    if ours {
                        record.header_mut().version += 1;
                    }
                    return Ok(ours);
                }
                Err(e) if e.is_retryable() && started.elapsed() + pause <= END_PATIENCE => {
                    tracing::warn!(error = %e, kind = R::KIND, "the store did not take a record's end: trying again");
                    failed_once = true;
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(8));
                }
                answered => return answered,
            }
        }
    }

    /// The record an idempotency key of `tenant` names, if any.
    ///
    /// # Errors
    /// [`EngineError::IdempotencyKeyReused`] when the key was used with another body; a store
    /// failure.
    pub(crate) async fn find(
        &self,
        tenant: &str,
        key: &IdempotencyKey,
    ) -> Result<Option<String>, EngineError> {
        match self.store.find_idempotency(tenant, &key.key).await? {
            Some((id, body_hash)) => same_body(id, &body_hash, key).map(Some),
            None => Ok(None),
        }
    }

    /// Records `record` before anything acts, claiming `key` when given, in one atomic step.
    ///
    /// # Errors
    /// [`EngineError::IdempotencyKeyReused`] when another request claimed the key first with
    /// another body; a store failure.
    pub(crate) async fn record(
        &self,
        record: &R,
        key: Option<&IdempotencyKey>,
    ) -> Result<Recorded, EngineError> {
        match self.store.insert(record, key).await? {
            Inserted::New => Ok(Recorded::New),
            Inserted::Existing { id, body_hash } => {
                let key = key.ok_or(CoreError::Internal(
                    "the store named a key it was not given",
                ))?;
                same_body(id, &body_hash, key).map(Recorded::Existing)
            }
        }
    }

    /// Changes `record` with `change` and saves it; on a lost compare-and-swap, reads it again
    /// and changes that, at most [`CAS_ATTEMPTS`] times. `change` answers whether it changed
    /// anything (nothing to save: the record as it is is answered).
    ///
    /// # Errors
    /// `change`'s error; a store failure; a record that kept changing.
    pub(crate) async fn update_with(
        &self,
        mut record: R,
        mut change: impl FnMut(&mut R) -> Result<bool, EngineError>,
    ) -> Result<R, EngineError> {
        for _ in 0..CAS_ATTEMPTS {
            if !change(&mut record)? || self.save(&mut record).await? {
                return Ok(record);
            }
            record = self.load(&record.header().tenant_id, record.id()).await?;
        }
        Err(EngineError::from(CoreError::Store(StoreFailure::conflict(
            format!(
                "the {}'s record kept changing while it was written",
                R::KIND
            ),
        ))))
    }

    /// Marks the record durably before its commit point (outside the compare-and-swap).
    ///
    /// # Errors
    /// A store failure, or a record the store did not mark (gone, or taken over by another
    /// runner that found this one's heartbeat lapsed: a conflict): the commit point must
    /// then not be passed.
    pub(crate) async fn mark(&self, tenant: &str, id: &str) -> Result<(), CoreError> {
        if self.store.mark(tenant, id).await? {
            Ok(())
        } else {
            Err(CoreError::Store(StoreFailure::conflict(format!(
                "the {} was taken over by another runner (or is gone): it does not commit here",
                R::KIND
            ))))
        }
    }

    /// Records the owner's assertion that the uncertain record `id` did not happen (an
    /// assertion, never proof: it stays uncertain), and audits it with who asserted. It
    /// allows exactly one new attempt.
    ///
    /// # Errors
    /// An empty `assertedBy`, an over-long note, an unknown record,
    /// [`EngineError::NotUncertain`], [`EngineError::AlreadyAsserted`] (also when another
    /// assertion won the race), a store failure.
    pub(crate) async fn assert_not_happened(
        &self,
        tenant: &str,
        id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<R, EngineError> {
        let assertion = Assertion::check(request)?;
        let mut record = self.load(tenant, id).await?;
        let uncertain = record.is_uncertain();
        let now = self.clock.now();
        assertion.record(uncertain, record.assertion_mut(), now)?;
        if !self.save(&mut record).await? {
            return Err(EngineError::AlreadyAsserted);
        }
        let mut event = record.audit_event(R::ASSERTED, AuditOutcome::Ok, now);
        event.actor = Some(assertion.by);
        self.audit.emit(event);
        Ok(record)
    }

    /// Audits a re-check of `record` (read-only: the record changes only by what the caller
    /// saved).
    pub(crate) fn audit_recheck(&self, record: &R, result: &RecheckResult) {
        let mut event = record.audit_event(R::RECHECKED, result.answer.into(), self.clock.now());
        event.error_code = result.error.as_ref().map(|e| e.code.clone());
        self.audit.emit(event);
    }

    /// Whether `record` may be attempted again on its owner's word: uncertain, with an
    /// assertion not spent yet.
    pub(crate) fn has_unspent_assertion(record: &mut R) -> bool {
        record.is_uncertain()
            && record
                .assertion_mut()
                .as_ref()
                .is_some_and(|a| a.spent_by.is_none())
    }

    /// Claims `original`'s one new attempt for `attempt` (its assertion, if any, spent by
    /// it), by compare-and-swap: `false` when another request claimed it first. A claimed
    /// original stays claimed even if the attempt is then lost: a lost attempt, never a
    /// second one.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn claim_attempt(
        &self,
        original: &mut R,
        attempt: &str,
    ) -> Result<bool, EngineError> {
        original.header_mut().retried_by = Some(attempt.to_owned());
        if let Some(assertion) = original.assertion_mut() {
            assertion.spent_by = Some(attempt.to_owned());
        }
        self.save(original).await
    }

    /// Ends every unfinished record a stopped runner left (except those `skip` keeps:
    /// records whose job runs in this process) with `end`, and saves it; answers the ended
    /// ones. A record another writer changed meanwhile is left to it.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn recover(
        &self,
        skip: impl Fn(&R) -> bool,
        mut end: impl FnMut(&mut R),
    ) -> Result<Vec<R>, EngineError> {
        let mut ended = Vec::new();
        for mut record in self.store.unfinished().await? {
            if skip(&record) {
                continue;
            }
            end(&mut record);
            if self.save(&mut record).await? {
                ended.push(record);
            }
        }
        Ok(ended)
    }
}

/// `id` when the key was first used with `key`'s body.
fn same_body(id: String, body_hash: &str, key: &IdempotencyKey) -> Result<String, EngineError> {
    if body_hash == key.body_hash {
        Ok(id)
    } else {
        Err(EngineError::IdempotencyKeyReused)
    }
}
