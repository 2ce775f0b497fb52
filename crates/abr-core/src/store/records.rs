//! [`RecordStore`]: the one contract of the records a ledger keeps (tasks and posts): one
//! record per tenant and id, an idempotency key per tenant naming one record, a
//! compare-and-swap on a version, a mark saved before the commit point, and the unfinished
//! records a restart must end. [`InMemoryRecordStore`] implements it for any
//! [`LedgerRecord`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use abr_protocol::OwnerAssertion;
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::audit::{AuditAction, AuditEvent, AuditOutcome};
use crate::error::CoreError;

/// An idempotency key and the hash of the body it was first used with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    /// The key (`Idempotency-Key`), per tenant.
    pub key: String,
    /// The keyed hash of the body ([`request_hash`](crate::digest::request_hash),
    /// [`post_request_hash`](crate::digest::post_request_hash)).
    pub body_hash: String,
}

/// What [`RecordStore::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    /// The record is stored (and the key, if one was given, now names it).
    New,
    /// The key was already taken: nothing was stored.
    Existing {
        /// The record the key names.
        id: String,
        /// The hash of the body it was used with.
        body_hash: String,
    },
}

/// The most records one page of a list holds.
pub const MAX_PAGE: usize = 100;

/// What [`RecordStore::count_in_state`] answers: how many records of every tenant are in
/// one state, and when the oldest of them was created (an operator's gauge: the tasks
/// waiting for an approver, and how long the longest has waited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateCount {
    /// How many.
    pub count: u64,
    /// When the oldest was created; none when there is none.
    pub oldest: Option<OffsetDateTime>,
}

/// What [`RecordStore::list`] is asked for: a tenant's records, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Only records in this state (its wire name: `pending_approval`, `succeeded`, ...).
    pub state: Option<String>,
    /// Where the previous page stopped (its [`Listed::next`]); `None`: from the newest.
    pub cursor: Option<String>,
    /// At most this many (1 to [`MAX_PAGE`]).
    pub limit: usize,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<R> {
    /// The records, newest first.
    pub items: Vec<R>,
    /// The cursor of the next page; `None` when this page is the last.
    pub next: Option<String>,
}

/// The name a state serializes to (`pending_approval`): the name lists filter by.
pub fn wire_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A cursor as a list gave it: the id of the last record of the page before, one of the
/// tenant's own, so that it says nothing of another tenant's records (a position shared by
/// every tenant would count them). The store refuses one that names no record of the
/// tenant ([`bad_cursor`]); this checks only its shape.
///
/// # Errors
/// [`CoreError::InvalidInput`] for a cursor no list could have given.
pub fn parse_cursor(cursor: Option<&str>) -> Result<Option<&str>, CoreError> {
    cursor
        .map(|c| {
            crate::tenant::check("cursor", Some(c))
                .map(|()| c)
                .map_err(|_| bad_cursor())
        })
        .transpose()
}

/// The refusal of a cursor no list of the tenant gave (a made-up one, another tenant's).
pub fn bad_cursor() -> CoreError {
    CoreError::InvalidInput("the cursor is not one this list gave".into())
}

/// What every record a ledger keeps holds alike (tasks and posts): its tenant, its version,
/// its mark and its retry. [`LedgerRecord::header`] answers it; a store reads and writes
/// these fields the same way for every kind of record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerHeader {
    /// The tenant; a record is visible to its tenant only.
    pub tenant_id: String,
    /// The store's version of the record, for [`RecordStore::update`]'s compare-and-swap.
    pub version: u64,
    /// The mark saved *before* the commit point (a task's first committing step, a post's
    /// submit), so that a record found running after a restart is known to be uncertain
    /// even if the commit never reported.
    pub marked: bool,
    /// The attempt that retries the record, once there is one (a record is retried at most
    /// once; further retries retry the latest attempt).
    pub retried_by: Option<String>,
}

/// A record a ledger keeps: found by its tenant and id, replaced by version, marked before
/// its commit point, ended honestly after a restart, asserted on by its owner and retried
/// at most once. Its tenant, version, mark and retry are its [`LedgerHeader`]
/// ([`header`](Self::header)); the rest is asked of it here.
pub trait LedgerRecord: Clone + Send + Sync + 'static {
    /// What it is, in messages ("task", "post").
    const KIND: &'static str;

    /// What it holds as every record does: its tenant, its version (for the
    /// compare-and-swap), its mark and the attempt that retries it.
    fn header(&self) -> &LedgerHeader;
    /// The header, to follow the stored version, set the mark or name the retry.
    fn header_mut(&mut self) -> &mut LedgerHeader;
    /// Its id.
    fn id(&self) -> &str;
    /// Its state's wire name (`running`, `succeeded`, ...), as [`ListQuery::state`] names it.
    fn state_name(&self) -> String;
    /// When it was created (its record's `createdAt`).
    fn created_at(&self) -> OffsetDateTime;
    /// Whether it is work a stopped runner left unfinished (`running`, ...).
    fn is_unfinished(&self) -> bool;
    /// Whether its outcome is uncertain (it may have happened).
    fn is_uncertain(&self) -> bool;
    /// The owner's assertion that it did not happen, if any.
    fn assertion_mut(&mut self) -> &mut Option<OwnerAssertion>;
    /// The first attempt of its chain (itself, or the one it retries).
    fn first_attempt(&self) -> &str;
    /// The error for an unknown id (or another tenant's).
    fn not_found() -> CoreError;
    /// What its owner's assertion is audited as.
    const ASSERTED: AuditAction;
    /// What a re-check of it is audited as.
    const RECHECKED: AuditAction;
    /// An audit event about it (its ids, never its request).
    fn audit_event(
        &self,
        action: AuditAction,
        outcome: AuditOutcome,
        now: OffsetDateTime,
    ) -> AuditEvent;
}

/// Where a ledger's records live.
///
/// # Contract
/// - A record is found only with its tenant: [`get`](Self::get) with another tenant's id
///   answers `None`, as if it did not exist.
/// - [`insert`](Self::insert) stores the record and claims the idempotency key (per tenant
///   and per kind of record: tasks' keys and posts' keys are namespaces of their own) in
///   one atomic step: when the key is already taken, nothing is stored and the existing
///   record is named.
/// - [`update`](Self::update) is a compare-and-swap on the version: it replaces the stored
///   record only if the stored version equals the record's, and stores it with
///   `version + 1`. This is what makes approval, running, retries and assertions happen
///   exactly once. It never clears the mark.
/// - [`mark`](Self::mark) sets the mark alone, outside the compare-and-swap (the version
///   stays), and is durable when it returns: it is written before the commit point, whatever
///   the run loop is doing. On a store runners share it is fenced: it marks only a record
///   the calling runner still holds, and says so.
/// - [`unfinished`](Self::unfinished) answers every record, of any tenant, that
///   [`LedgerRecord::is_unfinished`] keeps and no live runner holds.
/// - Every write that returned is durable (for a durable store): a process killed after a
///   write finds it after the restart.
/// - A record's request holds credentials (inputs, sessions, content): a durable store
///   encrypts it at rest.
#[async_trait]
pub trait RecordStore<R: LedgerRecord>: Send + Sync + 'static {
    /// Stores a new record (with its version as given, normally 0), claiming `idempotency`
    /// for its tenant when given.
    async fn insert(
        &self,
        record: &R,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError>;

    /// The record an idempotency key of `tenant` names, and the hash of the body it was
    /// first used with.
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError>;

    /// The record `id` of `tenant`, if any.
    async fn get(&self, tenant: &str, id: &str) -> Result<Option<R>, CoreError>;

    /// Replaces the record if the stored version is the record's; whether it did. The mark
    /// is sticky: an update never clears a mark that is set.
    async fn update(&self, record: &R) -> Result<bool, CoreError>;

    /// Sets the mark of the record `id` of `tenant` without touching its version, durably,
    /// before it returns; answers whether it did. `false` for an unknown record, and, on a
    /// store runners share, for a record another runner took over (it found this runner's
    /// heartbeat lapsed and ended the record): the commit point must then not be passed.
    async fn mark(&self, tenant: &str, id: &str) -> Result<bool, CoreError>;

    /// Every unfinished record, of any tenant, that no live runner holds: on a store one
    /// process owns, every one; on a store runners share, those written last by a runner
    /// that restarted or whose heartbeat lapsed.
    async fn unfinished(&self) -> Result<Vec<R>, CoreError>;

    /// One page of `tenant`'s records, newest first (by when they were stored), in
    /// `query.state` when given, after `query.cursor`. Another tenant's records are never on
    /// it; a record stored while a caller pages is on no page it has already read.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] for a cursor no list gave.
    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<R>, CoreError>;

    /// How many records of every tenant are in the state `state` (its wire name), and when
    /// the oldest of them was created: a count for an operator, never a record.
    async fn count_in_state(&self, state: &str) -> Result<StateCount, CoreError>;
}

/// A record's (or an idempotency key's) tenant and id.
type TenantKey = (String, String);

fn tenant_key(tenant: &str, id: &str) -> TenantKey {
    (tenant.to_owned(), id.to_owned())
}

#[derive(Debug)]
struct Records<R> {
    records: HashMap<TenantKey, R>,
    /// The records' keys, in the order they were stored.
    order: Vec<TenantKey>,
    /// (tenant, key) → (record id, body hash).
    idempotency: HashMap<TenantKey, (String, String)>,
}

impl<R> Default for Records<R> {
    fn default() -> Self {
        Self {
            records: HashMap::new(),
            order: Vec::new(),
            idempotency: HashMap::new(),
        }
    }
}

/// A process-local [`RecordStore`] for any record (tests, demos, single-process embedders):
/// everything is lost when the process ends.
#[derive(Debug)]
pub struct InMemoryRecordStore<R> {
    inner: Mutex<Records<R>>,
}

impl<R> Default for InMemoryRecordStore<R> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Records::default()),
        }
    }
}

impl<R: LedgerRecord> InMemoryRecordStore<R> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Records<R>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every record of every tenant (for tests).
    pub fn all(&self) -> Vec<R> {
        self.lock().records.values().cloned().collect()
    }

    /// Applies `change` to every record, of every tenant; a record it changed (it answered
    /// `true`) moves to its next version. Answers how many changed.
    pub(crate) fn change_all(&self, mut change: impl FnMut(&mut R) -> bool) -> u64 {
        let mut changed = 0;
        for record in self.lock().records.values_mut() {
            if change(record) {
                record.header_mut().version += 1;
                changed += 1;
            }
        }
        changed
    }
}

#[async_trait]
impl<R: LedgerRecord> RecordStore<R> for InMemoryRecordStore<R> {
    async fn insert(
        &self,
        record: &R,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        let mut inner = self.lock();
        if let Some(idem) = idempotency {
            let k = tenant_key(&record.header().tenant_id, &idem.key);
            if let Some((id, body_hash)) = inner.idempotency.get(&k) {
                return Ok(Inserted::Existing {
                    id: id.clone(),
                    body_hash: body_hash.clone(),
                });
            }
            inner
                .idempotency
                .insert(k, (record.id().to_owned(), idem.body_hash.clone()));
        }
        let k = tenant_key(&record.header().tenant_id, record.id());
        if inner.records.insert(k.clone(), record.clone()).is_none() {
            inner.order.push(k);
        }
        Ok(Inserted::New)
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        Ok(self
            .lock()
            .idempotency
            .get(&tenant_key(tenant, key))
            .cloned())
    }

    async fn get(&self, tenant: &str, id: &str) -> Result<Option<R>, CoreError> {
        Ok(self.lock().records.get(&tenant_key(tenant, id)).cloned())
    }

    async fn update(&self, record: &R) -> Result<bool, CoreError> {
        let mut inner = self.lock();
        match inner
            .records
            .get_mut(&tenant_key(&record.header().tenant_id, record.id()))
        {
            Some(stored) if stored.header().version == record.header().version => {
                let marked = stored.header().marked;
                *stored = record.clone();
                let header = stored.header_mut();
                header.version += 1;
                header.marked |= marked;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn mark(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        Ok(match self.lock().records.get_mut(&tenant_key(tenant, id)) {
            Some(stored) => {
                stored.header_mut().marked = true;
                true
            }
            None => false,
        })
    }

    async fn unfinished(&self) -> Result<Vec<R>, CoreError> {
        Ok(self
            .lock()
            .records
            .values()
            .filter(|r| r.is_unfinished())
            .cloned()
            .collect())
    }

    async fn count_in_state(&self, state: &str) -> Result<StateCount, CoreError> {
        let inner = self.lock();
        let matching = || inner.records.values().filter(|r| r.state_name() == state);
        Ok(StateCount {
            count: matching().count() as u64,
            oldest: matching().map(LedgerRecord::created_at).min(),
        })
    }

    /// The cursor is the id of the last record given: the next page starts below it in
    /// storing order.
    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<R>, CoreError> {
        let after = parse_cursor(query.cursor.as_deref())?;
        let inner = self.lock();
        let mut items = Vec::new();
        let mut next = None;
        let end = match after {
            None => inner.order.len(),
            Some(id) => {
                let key = tenant_key(tenant, id);
                inner
                    .order
                    .iter()
                    .position(|k| *k == key)
                    .ok_or_else(bad_cursor)?
            }
        };
        for k in inner.order.iter().take(end).rev() {
            let Some(record) = inner.records.get(k) else {
                continue;
            };
            if record.header().tenant_id != tenant
                || query
                    .state
                    .as_ref()
                    .is_some_and(|s| *s != record.state_name())
            {
                continue;
            }
            if items.len() == query.limit {
                // One more exists: the page ends at the last one given.
                next = items.last().map(|last: &R| last.id().to_owned());
                break;
            }
            items.push(record.clone());
        }
        Ok(Listed { items, next })
    }
}
