//! [`PostJournal`]: "never twice" for posts. Every post is recorded (`running`) before a
//! browser is acquired, its submit is recorded before it starts, its outcome after it ends;
//! an idempotency key names one post per tenant, so a repeated request answers the original
//! instead of posting again.
//!
//! The rules, as for tasks ([`TaskRunner`](crate::task::TaskRunner)):
//! - A repeated `Idempotency-Key` with the same body answers the original post: its result
//!   once it ended (waited for when its job runs in this process; without
//!   `refreshedSession`, which only the call that ran the job receives), or its `running`
//!   record when no job of this process runs it (a restart before
//!   [`PostJournal::recover_unfinished`]). Another body is
//!   [`CoreError::IdempotencyKeyReused`]. The body hash is keyed with a runner secret.
//! - An `uncertain` post is never posted again on its own. [`PostJournal::recheck`] looks,
//!   read-only; [`PostJournal::assert_not_posted`] records the owner's word (never proof)
//!   and allows exactly one new attempt: the next `post` with the same idempotency key runs
//!   again, once, recorded with `retryOf`; later repeats answer that attempt.
//! - After a restart, [`PostJournal::recover_unfinished`] ends every `running` post:
//!   `uncertain` if its submit had started (recorded before the click), else `failed`.
//!
//! What a re-check changes: `confirmed` makes the post `succeeded` (its result `ok`, with the
//! verification method [`VerificationMethod::Recheck`]) and ends re-checks; `not_found`,
//! `ambiguous` and `unavailable` change nothing but the record's `recheck` (the post stays
//! `uncertain`: not finding a post is not proof that it was not published).
//!
//! The request a post was made with (its content, and its session or `sessionId`) is kept
//! with the record only while the post can be re-checked (while it is `running` or
//! `uncertain`); a durable store encrypts it at rest.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use abr_protocol::{
    AgentPostResult, AgentSessionState, AssertNotPostedRequest, ErrorBody, FailureStage,
    PostRecord, PostRequest, PostState, RecheckAnswer, RecheckResult, SecretValue, Timing,
    Verification, VerificationMethod,
};
use async_trait::async_trait;
use futures::FutureExt as _;
use tokio::sync::watch;

use crate::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use crate::records::{InMemoryRecords, Record, TenantKey, tenant_key};
use crate::task::{Assertion, IdempotencyKey, Inserted, TenantAdmission, codes, keyed_hash};
use crate::{
    AgentPoster, Clock, CoreError, SessionContext, SessionKey, SessionStore, SubmitGate,
    SystemClock, new_token,
};

/// How often a lost compare-and-swap is retried by an operation that re-reads the record.
const CAS_ATTEMPTS: usize = 8;

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
    /// The store's version, for [`PostStore::update`]'s compare-and-swap.
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

/// Where journaled posts live.
///
/// # Contract
/// - A post is found only with its tenant: [`get`](Self::get) with another tenant's id
///   answers `None`.
/// - [`insert`](Self::insert) stores the post and claims the idempotency key (per tenant,
///   a namespace of its own, apart from tasks') in one atomic step: when the key is taken,
///   nothing is stored and the existing post is named ([`Inserted::Existing`]'s `task_id`
///   is the post's id).
/// - [`update`](Self::update) is a compare-and-swap on [`StoredPost::version`](StoredPost#structfield.version), storing
///   `version + 1`.
/// - Every write that returned is durable (for a durable store).
/// - [`StoredPost::request`] holds content and credentials: a durable store encrypts it.
#[async_trait]
pub trait PostStore: Send + Sync + 'static {
    /// Stores a new post, claiming `idempotency` for its tenant when given.
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError>;

    /// The post an idempotency key of `tenant` names, and the hash of its first body.
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError>;

    /// The post `post_id` of `tenant`, if any.
    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError>;

    /// Replaces the post if the stored version is `post.version`; whether it did.
    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError>;

    /// Every post, of any tenant, that is `running`.
    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError>;
}

impl Record for StoredPost {
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
}

/// A process-local [`PostStore`] (tests, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemoryPostStore {
    inner: Mutex<InMemoryRecords<StoredPost>>,
}

impl InMemoryPostStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, InMemoryRecords<StoredPost>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every post of every tenant (for tests).
    pub fn all(&self) -> Vec<StoredPost> {
        self.lock().all()
    }
}

#[async_trait]
impl PostStore for InMemoryPostStore {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        Ok(self.lock().insert(post, idempotency))
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        idempotency_key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        Ok(self.lock().find_idempotency(tenant, idempotency_key))
    }

    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError> {
        Ok(self.lock().get(tenant, post_id))
    }

    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        Ok(self.lock().update(post))
    }

    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        Ok(self
            .lock()
            .unfinished(|p| p.record.state == PostState::Running))
    }
}

/// The hash an idempotency key of a post is bound to: SHA-256 of the canonical JSON of the
/// whole request (platform, content, session or `sessionId`, scope, ids), keyed with a
/// runner secret, so that it can be neither computed from the key nor used to confirm a
/// guessed session or content offline. The same hashing as tasks'
/// ([`request_hash`](crate::task::request_hash)), with a tag of its own.
pub fn post_request_hash(request: &PostRequest, key: &SecretValue) -> String {
    keyed_hash(b"abr-post-request-v1\n", request, Some(key))
}

/// What [`PostJournal::post`] answered.
#[derive(Debug, Clone, PartialEq)]
pub enum PostReply {
    /// A post's result (`postId` set).
    Result(Box<AgentPostResult>),
    /// The record of a post that is `running` with no job in this process.
    Record(Box<PostRecord>),
}

/// [`PostJournal::post`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// The result, or the record of a post still running elsewhere.
    pub reply: PostReply,
    /// Whether this answers an earlier request with the same idempotency key (nothing new
    /// ran).
    pub replayed: bool,
}

type Live = Arc<Mutex<HashMap<TenantKey, watch::Receiver<Option<AgentPostResult>>>>>;

fn live_lock(
    live: &Live,
) -> MutexGuard<'_, HashMap<TenantKey, watch::Receiver<Option<AgentPostResult>>>> {
    live.lock().unwrap_or_else(PoisonError::into_inner)
}

/// "Never twice" for posts: [`AgentPoster`] with a durable record per post (see the module
/// docs for the rules).
pub struct PostJournal<C: SessionContext> {
    poster: Arc<AgentPoster<C>>,
    store: Arc<dyn PostStore>,
    sessions: Option<Arc<dyn SessionStore>>,
    audit: Auditor,
    clock: Arc<dyn Clock>,
    body_key: SecretValue,
    live: Live,
    admission: Option<TenantAdmission>,
}

impl<C: SessionContext> std::fmt::Debug for PostJournal<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostJournal")
            .field("poster", &self.poster)
            .field("sessions", &self.sessions.is_some())
            .finish_non_exhaustive()
    }
}

/// Whether a request ships a session of its own (an omitted `session` is empty).
fn ships_session(state: &AgentSessionState) -> bool {
    !state.cookies.is_empty() || !state.origins.is_empty() || !state.extra.is_empty()
}

fn audit_outcome(state: PostState) -> AuditOutcome {
    match state {
        PostState::Succeeded => AuditOutcome::Ok,
        PostState::Uncertain | PostState::Running => AuditOutcome::Uncertain,
        PostState::NeedsReauth => AuditOutcome::NeedsReauth,
        PostState::Failed => AuditOutcome::Failed,
    }
}

/// The result as a record keeps it: no credential.
fn stored_result(result: &AgentPostResult, post_id: &str) -> AgentPostResult {
    let mut stored = result.clone();
    stored.refreshed_session = None;
    stored.post_id = Some(post_id.to_owned());
    stored
}

/// A result for a post whose job ended without one (it could not start, or it panicked):
/// uncertain once the submit had started, else failed (retryable).
fn ended_without_result(submit_started: bool, error: ErrorBody) -> AgentPostResult {
    AgentPostResult {
        ok: false,
        verification: None,
        uncertain: submit_started,
        needs_reauth: false,
        failure_stage: Some(if submit_started {
            FailureStage::Submit
        } else {
            FailureStage::Precheck
        }),
        error: Some(error.retryable(!submit_started)),
        refreshed_session: None,
        timing: Timing::default(),
        post_id: None,
    }
}

/// Ends `post` with `result`: state, stored result, end time; the request is dropped unless
/// the post can still be re-checked.
fn finish(post: &mut StoredPost, result: &AgentPostResult, now: time::OffsetDateTime) {
    post.record.state = PostState::of(result);
    post.record.result = Some(stored_result(result, &post.record.post_id));
    post.record.finished_at = Some(now);
    if post.record.state != PostState::Uncertain {
        post.request = None;
    }
}

/// The journal's hold on a running post: every write of the job goes through it, in order.
struct JobGate {
    store: Arc<dyn PostStore>,
    post: Arc<tokio::sync::Mutex<StoredPost>>,
}

impl JobGate {
    async fn mark(
        store: &dyn PostStore,
        post: &tokio::sync::Mutex<StoredPost>,
    ) -> Result<(), CoreError> {
        let mut held = post.lock().await;
        if held.submit_started {
            return Ok(());
        }
        let mut next = held.clone();
        next.submit_started = true;
        if !store.update(&next).await? {
            return Err(CoreError::Store(
                "the post record changed while the post ran".into(),
            ));
        }
        next.version += 1;
        *held = next;
        Ok(())
    }
}

#[async_trait]
impl SubmitGate for JobGate {
    async fn before_submit(&self) -> Result<(), CoreError> {
        crate::commit_watch::committing().await?;
        Self::mark(self.store.as_ref(), &self.post).await
    }

    fn submit_entered(&self) {
        let (store, post) = (Arc::clone(&self.store), Arc::clone(&self.post));
        tokio::spawn(async move {
            if let Err(e) = Self::mark(store.as_ref(), &post).await {
                tracing::warn!(error = %e, "could not record that a post's submit started");
            }
        });
    }
}

impl<C: SessionContext> PostJournal<C> {
    /// A journal posting through `poster`, keeping records in `store`, binding idempotency
    /// keys to bodies with the keyed hash [`post_request_hash`] under `body_key` (a runner
    /// secret that survives restarts: a replay after a restart must hash the same). No
    /// stored sessions, no audit sink, system clock.
    pub fn new(
        poster: Arc<AgentPoster<C>>,
        store: Arc<dyn PostStore>,
        body_key: SecretValue,
    ) -> Self {
        Self {
            poster,
            store,
            sessions: None,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            body_key,
            live: Arc::default(),
            admission: None,
        }
    }

    /// Counts every post that runs (a new one, or the one new attempt an assertion allows)
    /// against the tenant's limits, like a task: a browser session while it runs and an
    /// execution of the UTC day. Replays count nothing. Beyond a limit, `post` answers
    /// [`CoreError::TenantLimit`] and stores nothing.
    #[must_use]
    pub fn with_admission(mut self, admission: TenantAdmission) -> Self {
        self.admission = Some(admission);
        self
    }

    async fn admit(&self, tenant: &str) -> Result<Option<time::Date>, CoreError> {
        match &self.admission {
            Some(a) => a.admit(tenant).await.map(Some),
            None => Ok(None),
        }
    }

    async fn refund(&self, tenant: &str, admitted: Option<time::Date>) {
        if let Some(a) = &self.admission {
            a.refund(tenant, admitted).await;
        }
    }

    /// Sessions stored on the runner (`sessionId`, under [`SessionKey::stored`]): loaded
    /// before a post, the refreshed (scoped) state written back after it.
    #[must_use]
    pub fn with_sessions(mut self, sessions: Arc<dyn SessionStore>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Sends the journal's audit events (replays, re-checks, assertions, recoveries)
    /// through `audit`; the post itself is audited by the poster.
    #[must_use]
    pub fn with_audit(mut self, audit: Auditor) -> Self {
        self.audit = audit;
        self
    }

    /// Uses `clock` for the records' times.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn PostStore> {
        &self.store
    }

    /// Posts `request` for `tenant`, recorded, at most once per idempotency key (see the
    /// module docs). With `sessionId` the stored session is loaded, and the refreshed state
    /// is written back to it (and not returned: the runner keeps it).
    ///
    /// # Errors
    /// Bad ids; both or neither of `session` and `sessionId` ([`CoreError::InvalidInput`]);
    /// an unknown `sessionId` ([`CoreError::SessionNotFound`]: nothing is stored); an
    /// unknown platform or one that forbids unattended posts; a reused key
    /// ([`CoreError::IdempotencyKeyReused`]); a store failure. Everything after the record
    /// is stored is an outcome in the result.
    pub async fn post(
        &self,
        tenant: &str,
        idempotency_key: Option<&str>,
        request: PostRequest,
    ) -> Result<Posted, CoreError> {
        crate::tenant::check("tenantId", Some(tenant))?;
        crate::tenant::check("Idempotency-Key", idempotency_key)?;
        crate::tenant::check("sessionId", request.session_id.as_deref())?;
        // Without either the post runs signed out (and says so: needs re-auth).
        if request.session_id.is_some() && ships_session(&request.session) {
            return Err(CoreError::InvalidInput(
                "give `session` or `sessionId`, not both".into(),
            ));
        }
        self.poster.check_request(&request)?;
        let idempotency = idempotency_key.map(|key| IdempotencyKey {
            key: key.to_owned(),
            body_hash: post_request_hash(&request, &self.body_key),
        });
        if let Some(idem) = &idempotency
            && let Some((post_id, body_hash)) =
                self.store.find_idempotency(tenant, &idem.key).await?
        {
            return self
                .follow(tenant, &post_id, &body_hash, idem, request)
                .await;
        }
        let session = self.session(tenant, &request).await?;
        let post = self.new_post(tenant, &request, None)?;
        let admitted = self.admit(tenant).await?;
        let (sender, receiver) = watch::channel(None);
        live_lock(&self.live).insert(tenant_key(tenant, post.id()), receiver);
        match self.store.insert(&post, idempotency.as_ref()).await {
            Ok(Inserted::New) => {}
            Ok(Inserted::Existing { task_id, body_hash }) => {
                live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
                self.refund(tenant, admitted).await;
                let Some(idem) = &idempotency else {
                    return Err(CoreError::Internal(
                        "the store named a key it was not given",
                    ));
                };
                return self
                    .follow(tenant, &task_id, &body_hash, idem, request)
                    .await;
            }
            Err(e) => {
                live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
                self.refund(tenant, admitted).await;
                return Err(e);
            }
        }
        let result = self.run(post, request, session, sender, admitted).await?;
        Ok(Posted {
            reply: PostReply::Result(Box::new(result)),
            replayed: false,
        })
    }

    /// The record of the post `post_id` of `tenant`.
    ///
    /// # Errors
    /// [`CoreError::PostNotFound`] (also for another tenant's id), a store failure.
    pub async fn get(&self, tenant: &str, post_id: &str) -> Result<PostRecord, CoreError> {
        Ok(self.load(tenant, post_id).await?.record)
    }

    /// Re-checks an uncertain post: a fresh browser with its session runs only the
    /// strategy's read-only [`recheck`](crate::WebPostStrategy::recheck). The answer is
    /// stored on the record (`recheck`); `confirmed` makes the post `succeeded` (method
    /// `recheck`), every other answer leaves it `uncertain`.
    ///
    /// # Errors
    /// An unknown post, [`CoreError::NotUncertain`], a store failure.
    pub async fn recheck(&self, tenant: &str, post_id: &str) -> Result<RecheckResult, CoreError> {
        let post = self.load(tenant, post_id).await?;
        if post.record.state != PostState::Uncertain {
            return Err(CoreError::NotUncertain);
        }
        let (result, verification) = match &post.request {
            None => (
                RecheckResult {
                    answer: RecheckAnswer::Unavailable,
                    error: Some(ErrorBody::new(
                        "recheck_unavailable",
                        "the post's content is no longer kept",
                    )),
                },
                None,
            ),
            Some(request) => match self.session(tenant, request).await {
                Err(e) => (
                    RecheckResult {
                        answer: RecheckAnswer::Unavailable,
                        error: Some(e.to_body()),
                    },
                    None,
                ),
                Ok(session) => {
                    let mut resolved = request.clone();
                    if let Some(session) = session {
                        resolved.session = session;
                    }
                    self.poster.recheck(&resolved).await
                }
            },
        };
        let mut post = post;
        for _ in 0..CAS_ATTEMPTS {
            if post.record.state != PostState::Uncertain {
                break;
            }
            post.record.recheck = Some(result.clone());
            if let Some(v) = &verification {
                post.record.state = PostState::Succeeded;
                let mut confirmed = post.record.result.clone().unwrap_or(AgentPostResult {
                    ok: true,
                    verification: None,
                    uncertain: false,
                    needs_reauth: false,
                    failure_stage: None,
                    error: None,
                    refreshed_session: None,
                    timing: Timing::default(),
                    post_id: Some(post_id.to_owned()),
                });
                confirmed.ok = true;
                confirmed.uncertain = false;
                confirmed.failure_stage = None;
                confirmed.error = None;
                confirmed.verification = Some(Verification {
                    method: VerificationMethod::Recheck,
                    evidence: v.evidence.clone(),
                });
                post.record.result = Some(confirmed);
                post.request = None;
            }
            if self.save(&mut post).await? {
                break;
            }
            post = self.load(tenant, post_id).await?;
        }
        let outcome = match result.answer {
            RecheckAnswer::Confirmed => AuditOutcome::Ok,
            RecheckAnswer::Ambiguous => AuditOutcome::Uncertain,
            RecheckAnswer::NotFound | RecheckAnswer::Unavailable => AuditOutcome::Failed,
        };
        let mut event = self.event(AuditAction::PostRechecked, outcome, &post);
        event.error_code = result.error.as_ref().map(|e| e.code.clone());
        self.audit.emit(event);
        Ok(result)
    }

    /// Records the owner's assertion that an uncertain post was not published: an
    /// assertion, never proof (the post stays `uncertain`). It allows exactly one new
    /// attempt: the next [`Self::post`] with the same idempotency key (and body).
    ///
    /// # Errors
    /// An empty `asserted_by`, an over-long note, an unknown post,
    /// [`CoreError::NotUncertain`], [`CoreError::AlreadyAsserted`], a store failure.
    pub async fn assert_not_posted(
        &self,
        tenant: &str,
        post_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<PostRecord, CoreError> {
        let assertion = Assertion::check(request)?;
        let mut post = self.load(tenant, post_id).await?;
        let uncertain = post.record.state == PostState::Uncertain;
        assertion.record(uncertain, &mut post.record.assertion, self.clock.now())?;
        if !self.save(&mut post).await? {
            return Err(CoreError::AlreadyAsserted);
        }
        let mut event = self.event(AuditAction::PostAsserted, AuditOutcome::Ok, &post);
        event.actor = Some(assertion.by);
        self.audit.emit(event);
        Ok(post.record)
    }

    /// Ends every post a stopped runner left `running`: `uncertain` if its submit had
    /// started, else `failed` (retryable); the error (`runner_stopped`) says the runner
    /// stopped. Posts whose job runs in this process are left alone. Call it at start-up,
    /// before serving.
    ///
    /// # Errors
    /// A store failure.
    pub async fn recover_unfinished(&self) -> Result<Vec<PostRecord>, CoreError> {
        let mut ended = Vec::new();
        for mut post in self.store.unfinished().await? {
            if live_lock(&self.live).contains_key(&tenant_key(&post.tenant_id, post.id())) {
                continue;
            }
            let error = if post.submit_started {
                ErrorBody::new(
                    codes::RUNNER_STOPPED,
                    "the runner stopped after the post's submit had started: it may have been \
                     published",
                )
            } else {
                ErrorBody::new(
                    codes::RUNNER_STOPPED,
                    "the runner stopped before the post's submit: nothing was published, safe \
                     to post again",
                )
            };
            let result = ended_without_result(post.submit_started, error);
            finish(&mut post, &result, self.clock.now());
            if !self.save(&mut post).await? {
                continue;
            }
            let mut event = self.event(
                AuditAction::PostRecovered,
                audit_outcome(post.record.state),
                &post,
            );
            event.failure_stage = result.failure_stage;
            event.error_code = result.error.as_ref().map(|e| e.code.clone());
            self.audit.emit(event);
            ended.push(post.record);
        }
        Ok(ended)
    }

    // ---- helpers --------------------------------------------------------------------------

    /// A repeated key with `body_hash`: the latest attempt of the chain it names, a new
    /// attempt when that one is uncertain with an unspent assertion.
    async fn follow(
        &self,
        tenant: &str,
        first_id: &str,
        body_hash: &str,
        idempotency: &IdempotencyKey,
        request: PostRequest,
    ) -> Result<Posted, CoreError> {
        if body_hash != idempotency.body_hash {
            return Err(CoreError::IdempotencyKeyReused);
        }
        let mut id = first_id.to_owned();
        for _ in 0..CAS_ATTEMPTS * 4 {
            let live = live_lock(&self.live).get(&tenant_key(tenant, &id)).cloned();
            if let Some(mut receiver) = live {
                let result = receiver
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|r| r.clone());
                if let Some(result) = result {
                    let result = stored_result(&result, &id);
                    return Ok(self.replayed(tenant, &request.platform, result));
                }
                // The job ended without a result: read what it recorded.
            }
            let mut post = self.load(tenant, &id).await?;
            if let Some(next) = &post.retried_by {
                id = next.clone();
                continue;
            }
            let unspent = post.record.state == PostState::Uncertain
                && post
                    .record
                    .assertion
                    .as_ref()
                    .is_some_and(|a| a.spent_by.is_none());
            if unspent {
                if let Some(posted) = self.attempt_again(tenant, &mut post, &request).await? {
                    return Ok(posted);
                }
                continue; // Claimed concurrently: follow to that attempt.
            }
            return Ok(match (post.record.state, &post.record.result) {
                (PostState::Running, _) | (_, None) => {
                    self.audit_replay(&post);
                    Posted {
                        reply: PostReply::Record(Box::new(post.record)),
                        replayed: true,
                    }
                }
                (_, Some(result)) => {
                    self.replayed(tenant, &request.platform, stored_result(result, &id))
                }
            });
        }
        Err(CoreError::Store(
            "the post's record kept changing while it was read".into(),
        ))
    }

    fn replayed(&self, tenant: &str, platform: &str, result: AgentPostResult) -> Posted {
        let mut event = AuditEvent::new(
            self.clock.now(),
            AuditAction::PostReplayed,
            AuditOutcome::Ok,
            platform,
        );
        event.workspace_id = Some(tenant.to_owned());
        event.post_id = result.post_id.clone();
        self.audit.emit(event);
        Posted {
            reply: PostReply::Result(Box::new(result)),
            replayed: true,
        }
    }

    fn audit_replay(&self, post: &StoredPost) {
        self.audit
            .emit(self.event(AuditAction::PostReplayed, AuditOutcome::Ok, post));
    }

    /// The one new attempt an unspent assertion on `original` allows; `None` when another
    /// request claimed it first.
    async fn attempt_again(
        &self,
        tenant: &str,
        original: &mut StoredPost,
        request: &PostRequest,
    ) -> Result<Option<Posted>, CoreError> {
        let session = self.session(tenant, request).await?;
        let first = original
            .record
            .retry_of
            .clone()
            .unwrap_or_else(|| original.id().to_owned());
        let post = self.new_post(tenant, request, Some(first))?;
        let admitted = self.admit(tenant).await?;
        let (sender, receiver) = watch::channel(None);
        // Live before the claim, so that a request following the claim waits for the job.
        live_lock(&self.live).insert(tenant_key(tenant, post.id()), receiver);
        original.retried_by = Some(post.id().to_owned());
        if let Some(assertion) = &mut original.record.assertion {
            assertion.spent_by = Some(post.id().to_owned());
        }
        let claimed = self.save(original).await;
        if !matches!(claimed, Ok(true)) {
            live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
            self.refund(tenant, admitted).await;
            return match claimed {
                Err(e) => Err(e),
                _ => Ok(None),
            };
        }
        if let Err(e) = self.store.insert(&post, None).await {
            // The assertion stays spent: a lost attempt, never a second one.
            live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
            self.refund(tenant, admitted).await;
            return Err(e);
        }
        let result = self
            .run(post, request.clone(), session, sender, admitted)
            .await?;
        Ok(Some(Posted {
            reply: PostReply::Result(Box::new(result)),
            replayed: false,
        }))
    }

    /// Runs the job of a stored `running` post to its end, in a task of its own (a caller
    /// that goes away does not stop it); saves the submit before it starts and the outcome
    /// after; writes a stored session back.
    async fn run(
        &self,
        post: StoredPost,
        request: PostRequest,
        session: Option<AgentSessionState>,
        sender: watch::Sender<Option<AgentPostResult>>,
        admitted: Option<time::Date>,
    ) -> Result<AgentPostResult, CoreError> {
        // The tenant's browser session is given back by the job itself, also when the
        // caller goes away while it runs.
        let admission = admitted.and(self.admission.clone());
        let tenant = post.tenant_id.clone();
        let post_id = post.id().to_owned();
        let session_id = request.session_id.clone();
        let mut resolved = request;
        if let Some(session) = session {
            resolved.session = session;
        }
        // `resolved.session_id` stays: the poster ignores it on this path.
        let held = Arc::new(tokio::sync::Mutex::new(post));
        let gate: Arc<dyn SubmitGate> = Arc::new(JobGate {
            store: Arc::clone(&self.store),
            post: Arc::clone(&held),
        });
        let poster = Arc::clone(&self.poster);
        let store = Arc::clone(&self.store);
        let sessions = self.sessions.clone();
        let clock = Arc::clone(&self.clock);
        let live = Arc::clone(&self.live);
        let job = async move {
            let ran = AssertUnwindSafe(poster.post_gated(
                resolved,
                Some(gate),
                Some((&tenant, &post_id)),
            ))
            .catch_unwind()
            .await;
            let mut held = held.lock().await;
            let (result, error) = match ran {
                Ok(Ok(result)) => (result, None),
                Ok(Err(e)) => (
                    ended_without_result(held.submit_started, e.to_body()),
                    Some(e),
                ),
                Err(_panic) => (
                    ended_without_result(
                        held.submit_started,
                        CoreError::StrategyPanicked("posting").to_body(),
                    ),
                    None,
                ),
            };
            if let (Some(session_id), Some(sessions), Some(refreshed)) =
                (&session_id, &sessions, &result.refreshed_session)
                && let Err(e) = sessions
                    .save(&SessionKey::stored(&tenant, session_id), refreshed.clone())
                    .await
            {
                tracing::warn!(error = %e, "could not store the refreshed session");
            }
            let mut next = held.clone();
            finish(&mut next, &result, clock.now());
            match store.update(&next).await {
                Ok(true) => {
                    next.version += 1;
                    *held = next;
                }
                Ok(false) => tracing::warn!("a post's record changed while it ran"),
                Err(e) => tracing::warn!(error = %e, "could not record a post's outcome"),
            }
            drop(held);
            let mut answer = result;
            answer.post_id = Some(post_id.clone());
            if session_id.is_some() {
                // The runner keeps a stored session; it does not hand it out.
                answer.refreshed_session = None;
            }
            sender.send_replace(Some(stored_result(&answer, &post_id)));
            live_lock(&live).remove(&tenant_key(&tenant, &post_id));
            if let Some(admission) = admission {
                admission.release_session(&tenant).await;
            }
            match error {
                Some(e) => Err(e),
                None => Ok(answer),
            }
        };
        // A relayed request's commit watch goes with its job (see `crate::commit_watch`).
        tokio::spawn(crate::commit_watch::carry(
            crate::commit_watch::current(),
            job,
        ))
        .await
        .map_err(|_| CoreError::Internal("the post's job failed"))?
    }

    /// The session a request posts with: its own, or the stored one it names.
    async fn session(
        &self,
        tenant: &str,
        request: &PostRequest,
    ) -> Result<Option<AgentSessionState>, CoreError> {
        let Some(session_id) = &request.session_id else {
            return Ok(None);
        };
        let Some(sessions) = &self.sessions else {
            return Err(CoreError::InvalidInput(
                "this runner keeps no sessions: send `session` instead of `sessionId`".into(),
            ));
        };
        sessions
            .load(&SessionKey::stored(tenant, session_id))
            .await?
            .map(Some)
            .ok_or(CoreError::SessionNotFound)
    }

    fn new_post(
        &self,
        tenant: &str,
        request: &PostRequest,
        retry_of: Option<String>,
    ) -> Result<StoredPost, CoreError> {
        let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        Ok(StoredPost {
            tenant_id: tenant.to_owned(),
            record: PostRecord {
                post_id: format!("post_{}", token.get(..22).unwrap_or(&token)),
                platform: request.platform.clone(),
                state: PostState::Running,
                result: None,
                created_at: self.clock.now(),
                finished_at: None,
                retry_of,
                assertion: None,
                recheck: None,
            },
            request: Some(request.clone()),
            version: 0,
            submit_started: false,
            retried_by: None,
        })
    }

    async fn load(&self, tenant: &str, post_id: &str) -> Result<StoredPost, CoreError> {
        crate::tenant::check("tenantId", Some(tenant))?;
        self.store
            .get(tenant, post_id)
            .await?
            .ok_or(CoreError::PostNotFound)
    }

    /// Compare-and-swap; on success the in-memory copy follows the stored version.
    async fn save(&self, post: &mut StoredPost) -> Result<bool, CoreError> {
        let saved = self.store.update(post).await?;
        if saved {
            post.version += 1;
        }
        Ok(saved)
    }

    fn event(&self, action: AuditAction, outcome: AuditOutcome, post: &StoredPost) -> AuditEvent {
        let mut event = AuditEvent::new(
            self.clock.now(),
            action,
            outcome,
            post.record.platform.as_str(),
        );
        event.workspace_id = Some(post.tenant_id.clone());
        event.post_id = Some(post.id().to_owned());
        event.retry_of = post.record.retry_of.clone();
        event
    }
}
