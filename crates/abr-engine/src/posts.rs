//! [`PostJournal`]: "never twice" for posts. Every post is recorded (`running`) before a
//! browser is acquired, its submit is recorded before it starts, its outcome after it ends;
//! an idempotency key names one post per tenant, so a repeated request answers the original
//! instead of posting again.
//!
//! The rules are the ledger's, as for tasks
//! ([`TaskRunner`](crate::task::runner::TaskRunner)):
//! - A repeated `Idempotency-Key` with the same body answers the original post: its result
//!   once it ended (waited for when its job runs in this process; without
//!   `refreshedSession`, which only the call that ran the job receives), or its `running`
//!   record when no job of this process runs it (a restart before
//!   [`PostJournal::recover_unfinished`]). Another body is
//!   [`EngineError::IdempotencyKeyReused`]. The body hash is keyed with a runner secret.
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
use tracing::Instrument as _;

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use abr_core::clock::{Clock, SystemClock};
use abr_core::codes;
use abr_core::digest::post_request_hash;
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::provider::SessionContext;
use abr_core::store::{IdempotencyKey, LedgerHeader, LedgerRecord, PostStore, StoredPost};
use abr_core::strategy::SubmitGate;
use abr_protocol::{
    AgentPostResult, AgentSessionState, AssertNotPostedRequest, ErrorBody, FailureStage,
    PostRecord, PostRequest, PostState, RecheckAnswer, RecheckResult, RunEvent, SecretValue,
    Timing, Verification, VerificationMethod,
};
use async_trait::async_trait;
use futures::FutureExt as _;
use tokio::sync::watch;

use crate::admission::TenantAdmission;
use crate::error::EngineError;
use crate::ledger::{CAS_ATTEMPTS, Ledger, Recorded, record_id};
use crate::poster::{AgentPoster, PostRun};
use crate::stored_sessions::{StoredSessions, bound_platform};

/// What a post answered ([`Engine::post`](crate::Engine::post)).
#[derive(Debug, Clone, PartialEq)]
pub enum PostReply {
    /// A post's result (`postId` set).
    Result(Box<AgentPostResult>),
    /// The record of a post that is `running` with no job in this process.
    Record(Box<PostRecord>),
}

/// [`Engine::post`](crate::Engine::post)'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// The result, or the record of a post still running elsewhere.
    pub reply: PostReply,
    /// Whether this answers an earlier request with the same idempotency key (nothing new
    /// ran).
    pub replayed: bool,
}

/// A post's tenant and id.
type TenantKey = (String, String);

fn tenant_key(tenant: &str, id: &str) -> TenantKey {
    (tenant.to_owned(), id.to_owned())
}

type Live = Arc<Mutex<HashMap<TenantKey, watch::Receiver<Option<AgentPostResult>>>>>;

fn live_lock(
    live: &Live,
) -> MutexGuard<'_, HashMap<TenantKey, watch::Receiver<Option<AgentPostResult>>>> {
    live.lock().unwrap_or_else(PoisonError::into_inner)
}

/// "Never twice" for posts: [`AgentPoster`] with a durable record per post (see the module
/// docs for the rules).
pub(crate) struct PostJournal<C: SessionContext> {
    poster: Arc<AgentPoster<C>>,
    ledger: Ledger<StoredPost>,
    sessions: Option<StoredSessions>,
    audit: Auditor,
    clock: Arc<dyn Clock>,
    body_key: SecretValue,
    live: Live,
    admission: Option<TenantAdmission>,
    events: Option<Arc<crate::events::Events>>,
}

impl<C: SessionContext> Clone for PostJournal<C> {
    fn clone(&self) -> Self {
        Self {
            poster: Arc::clone(&self.poster),
            ledger: self.ledger.clone(),
            sessions: self.sessions.clone(),
            audit: self.audit.clone(),
            clock: Arc::clone(&self.clock),
            body_key: self.body_key.clone(),
            live: Arc::clone(&self.live),
            admission: self.admission.clone(),
            events: self.events.clone(),
        }
    }
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

/// The `run_ended` event of a post that ended with `answer`: its state, how long it ran
/// since `started`, and the stage a failed or uncertain one ended in.
fn post_ended(
    tenant: &str,
    post_id: &str,
    answer: &AgentPostResult,
    started: time::OffsetDateTime,
    at: time::OffsetDateTime,
) -> RunEvent {
    let state = PostState::of(answer);
    RunEvent {
        kind: Some("post".to_owned()),
        state: Some(abr_core::store::wire_name(&state)),
        check: (state == PostState::Uncertain).then(|| format!("/v1/posts/{post_id}/recheck")),
        stage: answer
            .failure_stage
            .filter(|_| state != PostState::Succeeded)
            .map(|stage| abr_core::store::wire_name(&stage)),
        elapsed_ms: Some(u64::try_from((at - started).whole_milliseconds()).unwrap_or(0)),
        code: matches!(state, PostState::Failed | PostState::Uncertain)
            .then(|| answer.error.as_ref().map(|e| e.code.clone()))
            .flatten(),
        ..RunEvent::new("run_ended", tenant, post_id, at)
    }
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

/// A re-check that confirmed `post`: it is `succeeded`, its result `ok` with the
/// verification method [`VerificationMethod::Recheck`]; its request is no longer kept.
fn confirm(post: &mut StoredPost, verified: &Verification) {
    post.record.state = PostState::Succeeded;
    let post_id = post.record.post_id.clone();
    let mut confirmed = post.record.result.clone().unwrap_or(AgentPostResult {
        ok: true,
        verification: None,
        uncertain: false,
        needs_reauth: false,
        failure_stage: None,
        error: None,
        refreshed_session: None,
        timing: Timing::default(),
        post_id: Some(post_id),
    });
    confirmed.ok = true;
    confirmed.uncertain = false;
    confirmed.failure_stage = None;
    confirmed.error = None;
    confirmed.verification = Some(Verification {
        method: VerificationMethod::Recheck,
        evidence: verified.evidence.clone(),
    });
    post.record.result = Some(confirmed);
    post.request = None;
}

/// The journal's hold on a running post's submit mark: written durably before the submit
/// (outside the compare-and-swap), and on the job's own copy, so that its outcome says
/// whether the submit had started.
struct SubmitMark {
    ledger: Ledger<StoredPost>,
    post: Arc<tokio::sync::Mutex<StoredPost>>,
}

impl SubmitMark {
    async fn mark(
        ledger: &Ledger<StoredPost>,
        post: &tokio::sync::Mutex<StoredPost>,
    ) -> Result<(), CoreError> {
        let mut held = post.lock().await;
        if held.ledger.marked {
            return Ok(());
        }
        ledger.mark(&held.ledger.tenant_id, held.id()).await?;
        held.ledger.marked = true;
        Ok(())
    }
}

#[async_trait]
impl SubmitGate for SubmitMark {
    async fn before_submit(&self) -> Result<(), CoreError> {
        crate::commit_watch::committing().await?;
        Self::mark(&self.ledger, &self.post).await
    }

    fn submit_entered(&self) {
        let (ledger, post) = (self.ledger.clone(), Arc::clone(&self.post));
        tokio::spawn(async move {
            if let Err(e) = Self::mark(&ledger, &post).await {
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
    pub(crate) fn new(
        poster: Arc<AgentPoster<C>>,
        store: Arc<dyn PostStore>,
        body_key: SecretValue,
    ) -> Self {
        Self {
            poster,
            ledger: Ledger::new(store),
            sessions: None,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            body_key,
            live: Arc::default(),
            admission: None,
            events: None,
        }
    }

    /// Posts join the tenant's event stream: watched for stalls while they run, and
    /// `run_ended` (`kind: post`, with the re-check to make when `uncertain`) when they end.
    pub(crate) fn with_events(mut self, events: Arc<crate::events::Events>) -> Self {
        self.events = Some(events);
        self
    }

    /// Counts every post that runs (a new one, or the one new attempt an assertion allows)
    /// against the tenant's limits, like a task: a browser session while it runs and an
    /// execution of the UTC day. Replays count nothing. Beyond a limit, `post` answers
    /// [`EngineError::TenantLimit`] and stores nothing.
    #[must_use]
    pub(crate) fn with_admission(mut self, admission: TenantAdmission) -> Self {
        self.admission = Some(admission);
        self
    }

    async fn admit(&self, tenant: &str) -> Result<Option<time::Date>, EngineError> {
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

    /// Sessions stored on the runner (`sessionId`): loaded before a post, the refreshed
    /// (scoped) state written back after it.
    #[must_use]
    pub(crate) fn with_sessions(mut self, sessions: StoredSessions) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Sends the journal's audit events (replays, re-checks, assertions, recoveries)
    /// through `audit`; the post itself is audited by the poster.
    #[must_use]
    pub(crate) fn with_audit(mut self, audit: Auditor) -> Self {
        self.ledger.audit = audit.clone();
        self.audit = audit;
        self
    }

    /// Uses `clock` for the records' times.
    #[must_use]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.ledger.clock = Arc::clone(&clock);
        self.clock = clock;
        self
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn abr_core::store::RecordStore<StoredPost>> {
        self.ledger.store()
    }

    /// Posts `request` for `tenant`, recorded, at most once per idempotency key (see the
    /// module docs). With `sessionId` the stored session is loaded, and the refreshed state
    /// is written back to it (and not returned: the runner keeps it).
    ///
    /// # Errors
    /// Bad ids; both or neither of `session` and `sessionId` ([`CoreError::InvalidInput`]);
    /// an unknown `sessionId` ([`EngineError::SessionNotFound`]: nothing is stored); an
    /// unknown platform or one that forbids unattended posts; a reused key
    /// ([`EngineError::IdempotencyKeyReused`]); a store failure. Everything after the record
    /// is stored is an outcome in the result.
    pub(crate) async fn post(
        &self,
        tenant: &str,
        idempotency_key: Option<&str>,
        request: PostRequest,
    ) -> Result<Posted, EngineError> {
        let span = tracing::info_span!(
            target: crate::TRACE_TARGET,
            "post",
            otel.name = "post",
            tenant,
            platform = tracing::field::Empty,
            post_id = tracing::field::Empty,
        );
        self.post_traced(tenant, idempotency_key, request)
            .instrument(span)
            .await
    }

    async fn post_traced(
        &self,
        tenant: &str,
        idempotency_key: Option<&str>,
        request: PostRequest,
    ) -> Result<Posted, EngineError> {
        abr_core::tenant::check("tenantId", Some(tenant))?;
        abr_core::tenant::check("Idempotency-Key", idempotency_key)?;
        abr_core::tenant::check("sessionId", request.session_id.as_deref())?;
        // Without either the post runs signed out (and says so: needs re-auth).
        if request.session_id.is_some() && ships_session(&request.session) {
            return Err(EngineError::from(CoreError::InvalidInput(
                "give `session` or `sessionId`, not both".into(),
            )));
        }
        self.poster.check_request(&request)?;
        let idempotency = idempotency_key.map(|key| IdempotencyKey {
            key: key.to_owned(),
            body_hash: post_request_hash(&request, &self.body_key),
        });
        if let Some(idem) = &idempotency
            && let Some(post_id) = self.ledger.find(tenant, idem).await?
        {
            return self.follow(tenant, &post_id, request).await;
        }
        let session = self.session(tenant, &request).await?;
        if request.session_id.is_some()
            && let Some(bound) = session.as_ref().and_then(bound_platform)
        {
            self.poster.check_bound(bound, &request)?;
        }
        // A backend that refuses a job now (a capture holds it) refuses this post before
        // anything is recorded: its key stays free, the answer says when to come back.
        self.poster.refused_now()?;
        let post = self.new_post(tenant, &request, None)?;
        // A declared platform's name (checked above), the post's id: never a value.
        tracing::Span::current()
            .record("platform", request.platform.as_str())
            .record("post_id", post.id());
        let admitted = self.admit(tenant).await?;
        let (sender, receiver) = watch::channel(None);
        live_lock(&self.live).insert(tenant_key(tenant, post.id()), receiver);
        match self.ledger.record(&post, idempotency.as_ref()).await {
            Ok(Recorded::New) => {}
            Ok(Recorded::Existing(first)) => {
                live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
                self.refund(tenant, admitted).await;
                return self.follow(tenant, &first, request).await;
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
    pub(crate) async fn get(&self, tenant: &str, post_id: &str) -> Result<PostRecord, EngineError> {
        Ok(self.load(tenant, post_id).await?.record)
    }

    /// Re-checks an uncertain post: a fresh browser with its session runs only the
    /// strategy's read-only [`recheck`](abr_core::strategy::WebPostStrategy::recheck). The answer is
    /// stored on the record (`recheck`); `confirmed` makes the post `succeeded` (method
    /// `recheck`), every other answer leaves it `uncertain`.
    ///
    /// # Errors
    /// An unknown post, [`EngineError::NotUncertain`], a store failure.
    pub(crate) async fn recheck(
        &self,
        tenant: &str,
        post_id: &str,
    ) -> Result<RecheckResult, EngineError> {
        let post = self.load(tenant, post_id).await?;
        if post.record.state != PostState::Uncertain {
            return Err(EngineError::NotUncertain);
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
        let post = self
            .ledger
            .update_with(post, |post| {
                if post.record.state != PostState::Uncertain {
                    return Ok(false);
                }
                post.record.recheck = Some(result.clone());
                if let Some(v) = &verification {
                    confirm(post, v);
                }
                Ok(true)
            })
            .await?;
        self.ledger.audit_recheck(&post, &result);
        Ok(result)
    }

    /// Records the owner's assertion that an uncertain post was not published: an
    /// assertion, never proof (the post stays `uncertain`). It allows exactly one new
    /// attempt: the next [`Self::post`] with the same idempotency key (and body).
    ///
    /// # Errors
    /// An empty `asserted_by`, an over-long note, an unknown post,
    /// [`EngineError::NotUncertain`], [`EngineError::AlreadyAsserted`], a store failure.
    pub(crate) async fn assert_not_posted(
        &self,
        tenant: &str,
        post_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<PostRecord, EngineError> {
        Ok(self
            .ledger
            .assert_not_happened(tenant, post_id, request)
            .await?
            .record)
    }

    /// Ends every post a stopped runner left `running`: `uncertain` if its submit had
    /// started, else `failed` (retryable); the error (`runner_stopped`) says the runner
    /// stopped. Posts whose job runs in this process are left alone. Call it at start-up,
    /// before serving.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn recover_unfinished(&self) -> Result<Vec<PostRecord>, EngineError> {
        let now = self.clock.now();
        let live = |post: &StoredPost| {
            live_lock(&self.live).contains_key(&tenant_key(&post.ledger.tenant_id, post.id()))
        };
        let ended = self
            .ledger
            .recover(live, |post| {
                let error = if post.ledger.marked {
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
                let result = ended_without_result(post.ledger.marked, error);
                finish(post, &result, now);
            })
            .await?;
        Ok(ended
            .into_iter()
            .map(|post| {
                let result = post.record.result.as_ref();
                let mut event = self.event(
                    AuditAction::PostRecovered,
                    audit_outcome(post.record.state),
                    &post,
                );
                event.failure_stage = result.and_then(|r| r.failure_stage);
                event.error_code = result
                    .and_then(|r| r.error.as_ref())
                    .map(|e| e.code.clone());
                self.audit.emit(event);
                post.record
            })
            .collect())
    }

    // ---- helpers --------------------------------------------------------------------------

    /// A repeated key (with the same body): the latest attempt of the chain it names, a new
    /// attempt when that one is uncertain with an unspent assertion.
    async fn follow(
        &self,
        tenant: &str,
        first_id: &str,
        request: PostRequest,
    ) -> Result<Posted, EngineError> {
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
            if let Some(next) = &post.ledger.retried_by {
                id = next.clone();
                continue;
            }
            if Ledger::has_unspent_assertion(&mut post) {
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
        Err(EngineError::from(CoreError::Store(StoreFailure::conflict(
            "the post's record kept changing while it was read",
        ))))
    }

    /// The original `result` answered again, audited with its own outcome (a replayed
    /// failure is no success).
    fn replayed(&self, tenant: &str, platform: &str, result: AgentPostResult) -> Posted {
        let mut event = AuditEvent::new(
            self.clock.now(),
            AuditAction::PostReplayed,
            audit_outcome(PostState::of(&result)),
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

    /// A replay of `post` answered with its record: audited with the record's state (one
    /// still running is `uncertain`: it may yet happen).
    fn audit_replay(&self, post: &StoredPost) {
        self.audit.emit(self.event(
            AuditAction::PostReplayed,
            audit_outcome(post.record.state),
            post,
        ));
    }

    /// The one new attempt an unspent assertion on `original` allows; `None` when another
    /// request claimed it first.
    async fn attempt_again(
        &self,
        tenant: &str,
        original: &mut StoredPost,
        request: &PostRequest,
    ) -> Result<Option<Posted>, EngineError> {
        let session = self.session(tenant, request).await?;
        let first = original.first_attempt().to_owned();
        let post = self.new_post(tenant, request, Some(first))?;
        let admitted = self.admit(tenant).await?;
        let (sender, receiver) = watch::channel(None);
        // Live before the claim, so that a request following the claim waits for the job.
        live_lock(&self.live).insert(tenant_key(tenant, post.id()), receiver);
        let claimed = self.ledger.claim_attempt(original, post.id()).await;
        if !matches!(claimed, Ok(true)) {
            live_lock(&self.live).remove(&tenant_key(tenant, post.id()));
            self.refund(tenant, admitted).await;
            return match claimed {
                Err(e) => Err(e),
                _ => Ok(None),
            };
        }
        if let Err(e) = self.ledger.record(&post, None).await {
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
    ) -> Result<AgentPostResult, EngineError> {
        // The tenant's browser session is given back by the job itself, also when the
        // caller goes away while it runs.
        let admission = admitted.and(self.admission.clone());
        let tenant = post.ledger.tenant_id.clone();
        let post_id = post.id().to_owned();
        let session_id = request.session_id.clone();
        // A stored session's platform keeps its screenshots setting, as for a task.
        let screenshots = session
            .as_ref()
            .and_then(bound_platform)
            .is_none_or(|bound| self.poster.bound_screenshots(bound));
        let mut resolved = request;
        if let Some(session) = session {
            resolved.session = session;
        }
        // `resolved.session_id` stays: the poster ignores it on this path.
        let held = Arc::new(tokio::sync::Mutex::new(post));
        let gate: Arc<dyn SubmitGate> = Arc::new(SubmitMark {
            ledger: self.ledger.clone(),
            post: Arc::clone(&held),
        });
        let poster = Arc::clone(&self.poster);
        let ledger = self.ledger.clone();
        let sessions = self.sessions.clone();
        let clock = Arc::clone(&self.clock);
        let live = Arc::clone(&self.live);
        let events = self.events.clone();
        if let Some(events) = &events {
            events.started(&tenant, &post_id);
        }
        let started = self.clock.now();
        let job = async move {
            let ran = AssertUnwindSafe(poster.post_gated(
                resolved,
                Some(gate),
                Some(PostRun {
                    tenant: &tenant,
                    id: &post_id,
                    screenshots,
                }),
            ))
            .catch_unwind()
            .await;
            // The browser is closed: its session is the tenant's again before the end is read.
            if let Some(admission) = &admission {
                admission.release_session(&tenant).await;
            }
            let mut held = held.lock().await;
            let (result, error) = match ran {
                Ok(Ok(result)) => (result, None),
                Ok(Err(e)) => (
                    ended_without_result(held.ledger.marked, e.to_body()),
                    Some(e),
                ),
                Err(_panic) => (
                    ended_without_result(
                        held.ledger.marked,
                        CoreError::StrategyPanicked("posting").to_body(),
                    ),
                    None,
                ),
            };
            if let (Some(session_id), Some(sessions), Some(refreshed)) =
                (&session_id, &sessions, &result.refreshed_session)
            {
                sessions
                    .write_back(&tenant, session_id, refreshed.clone())
                    .await;
            }
            let mut next = held.clone();
            finish(&mut next, &result, clock.now());
            match ledger.save_end(&mut next).await {
                Ok(true) => *held = next,
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
            if let Some(events) = &events {
                events.emit(post_ended(&tenant, &post_id, &answer, started, clock.now()));
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
    ) -> Result<Option<AgentSessionState>, EngineError> {
        StoredSessions::for_job(
            self.sessions.as_ref(),
            tenant,
            request.session_id.as_deref(),
        )
        .await
    }

    fn new_post(
        &self,
        tenant: &str,
        request: &PostRequest,
        retry_of: Option<String>,
    ) -> Result<StoredPost, EngineError> {
        Ok(StoredPost {
            ledger: LedgerHeader {
                tenant_id: tenant.to_owned(),
                ..LedgerHeader::default()
            },
            record: PostRecord {
                post_id: record_id("post_")?,
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
        })
    }

    async fn load(&self, tenant: &str, post_id: &str) -> Result<StoredPost, EngineError> {
        self.ledger.load(tenant, post_id).await
    }

    fn event(&self, action: AuditAction, outcome: AuditOutcome, post: &StoredPost) -> AuditEvent {
        post.audit_event(action, outcome, self.clock.now())
    }
}
