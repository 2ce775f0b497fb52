//! [`AgentPoster`]: acquire → is_authenticated → post → verify → export, mapped to exactly
//! one outcome row.

use std::sync::Arc;

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use abr_core::budget::{Pacing, StepTimeouts};
use abr_core::clock::{Clock, OsRandom, RandomSource, SystemClock};
use abr_core::error::{CoreError, StrategyErrorKind};
use abr_core::guard::{RunFrames, RunFramesSource};
use abr_core::provider::{AcquireMode, AcquireRequest, DynSessionProvider, Lease, SessionContext};
use abr_core::scope_io;
use abr_core::scope_io::Scopes;
use abr_core::strategy::{
    PlatformPacing, PostProgress, RecheckOutcome, StrategyRegistry, SubmitGate, VerifyOutcome,
    WebPostStrategy,
};
use abr_protocol::{
    AgentPostResult, AgentSessionState, ErrorBody, FailureStage, FramePoint, PostContent,
    PostRequest, ProbeRequest, ProbeResponse, RecheckAnswer, RecheckResult, Timing, Verification,
};
use tokio::time::Instant;

use crate::error::EngineError;
use crate::step::{Step, guarded};

/// Longest post text, in bytes (a long article; far above what social platforms take).
const MAX_POST_TEXT: usize = 64 * 1024;
/// Longest post link, in bytes (the plans' and browse API's URL bound).
const MAX_POST_LINK: usize = 4096;
/// Most media files of one post.
const MAX_MEDIA: usize = 16;
/// Longest media file name or MIME type, in bytes.
const MAX_MEDIA_NAME: usize = 255;

/// The bounds of a post's content, checked before anything is recorded: the text, the
/// link, the number of media files and their names and types (their bytes are bounded by
/// the body limit). The error names the field and its bound, never a value.
fn check_content(content: &PostContent) -> Result<(), EngineError> {
    let too_long = |what: &str, max: usize| {
        CoreError::InvalidInput(format!("{what} is too long: at most {max} bytes"))
    };
    if content.text.len() > MAX_POST_TEXT {
        return Err(EngineError::from(too_long("content.text", MAX_POST_TEXT)));
    }
    if content
        .link
        .as_ref()
        .is_some_and(|l| l.len() > MAX_POST_LINK)
    {
        return Err(EngineError::from(too_long("content.link", MAX_POST_LINK)));
    }
    if content.media.len() > MAX_MEDIA {
        return Err(EngineError::from(CoreError::InvalidInput(format!(
            "content.media: at most {MAX_MEDIA} files"
        ))));
    }
    for media in &content.media {
        if media.file_name.len() > MAX_MEDIA_NAME {
            return Err(EngineError::from(too_long(
                "content.media[].fileName",
                MAX_MEDIA_NAME,
            )));
        }
        if media.mime_type.len() > MAX_MEDIA_NAME {
            return Err(EngineError::from(too_long(
                "content.media[].mimeType",
                MAX_MEDIA_NAME,
            )));
        }
    }
    Ok(())
}

/// The record a post runs under ([`AgentPoster::post_gated`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PostRun<'a> {
    /// The post's tenant.
    pub(crate) tenant: &'a str,
    /// The post's id: its frames are kept under it.
    pub(crate) id: &'a str,
    /// Whether the platform its stored session is bound to allows screenshots (`true`
    /// without one): a bound platform's `screenshots = false` holds whatever platform the
    /// request names, as for a task.
    pub(crate) screenshots: bool,
}

/// How posts are paced and how long each of their stages may take
/// ([`EngineBuilder::poster_config`](crate::EngineBuilder::poster_config)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PosterConfig {
    /// Randomized delay before acting, for platforms that use the runner's
    /// ([`PlatformPacing::Runner`]); `None`: act at once.
    pub pacing: Option<Pacing>,
    /// Step deadlines.
    pub timeouts: StepTimeouts,
}

impl PosterConfig {
    /// Pacing in `pacing` and the step deadlines of `budget`.
    pub fn from_budget(budget: &abr_core::budget::DeadlineBudget, pacing: Option<Pacing>) -> Self {
        Self {
            pacing,
            timeouts: budget.steps,
        }
    }
}

/// Posts with a stored session and proves the outcome.
pub(crate) struct AgentPoster<C: SessionContext> {
    provider: DynSessionProvider<C>,
    strategies: Arc<StrategyRegistry<C>>,
    audit: Auditor,
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
    config: PosterConfig,
    frames: Option<Arc<dyn RunFramesSource<C>>>,
}

impl<C: SessionContext> std::fmt::Debug for AgentPoster<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentPoster")
            .field("provider", &self.provider.name())
            .field("strategies", &self.strategies)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The journal's submit gate, with a frame of the page taken just before the submit.
struct FramingGate<C> {
    inner: Option<Arc<dyn SubmitGate>>,
    frames: Arc<dyn RunFrames<C>>,
    context: Arc<C>,
}

#[async_trait::async_trait]
impl<C: Send + Sync + 'static> SubmitGate for FramingGate<C> {
    async fn before_submit(&self) -> Result<(), CoreError> {
        self.frames
            .capture(&self.context, FramePoint::BeforeSubmit, "submit")
            .await;
        match &self.inner {
            Some(inner) => inner.before_submit().await,
            None => Ok(()),
        }
    }

    fn submit_entered(&self) {
        if let Some(inner) = &self.inner {
            inner.submit_entered();
        }
    }
}

/// The single outcome row a job ended in, before it becomes an [`AgentPostResult`].
enum Outcome {
    Confirmed(Verification),
    Uncertain(FailureStage, ErrorBody),
    NeedsReauth(FailureStage, ErrorBody),
    Failed(FailureStage, ErrorBody),
}

impl Outcome {
    /// Whether the post got as far as its verification.
    fn reached_verification(&self) -> bool {
        match self {
            Self::Confirmed(_) => true,
            Self::Uncertain(stage, _) | Self::NeedsReauth(stage, _) | Self::Failed(stage, _) => {
                *stage == FailureStage::Verify
            }
        }
    }

    fn failed(stage: FailureStage, error: ErrorBody) -> Self {
        Self::Failed(stage, error.retryable(true))
    }

    /// A step that failed, timed out or panicked at `stage` without evidence either way:
    /// before submit nothing can have been published; from submit on it may have.
    fn interrupted(stage: FailureStage, error: ErrorBody) -> Self {
        if stage.is_before_submit() {
            Self::failed(stage, error)
        } else {
            Self::Uncertain(stage, error)
        }
    }

    fn exports_session(&self) -> bool {
        !matches!(self, Self::NeedsReauth(..))
    }

    fn audit_outcome(&self) -> AuditOutcome {
        match self {
            Self::Confirmed(_) => AuditOutcome::Ok,
            Self::Uncertain(..) => AuditOutcome::Uncertain,
            Self::NeedsReauth(..) => AuditOutcome::NeedsReauth,
            Self::Failed(..) => AuditOutcome::Failed,
        }
    }

    fn into_result(self, refreshed: Option<AgentSessionState>, timing: Timing) -> AgentPostResult {
        let mut result = AgentPostResult {
            ok: false,
            verification: None,
            uncertain: false,
            needs_reauth: false,
            failure_stage: None,
            error: None,
            refreshed_session: refreshed,
            timing,
            post_id: None,
        };
        match self {
            Self::Confirmed(v) => {
                result.ok = true;
                result.verification = Some(v);
            }
            Self::Uncertain(stage, e) => {
                result.uncertain = true;
                result.failure_stage = Some(stage);
                result.error = Some(e.retryable(false));
            }
            Self::NeedsReauth(stage, e) => {
                result.needs_reauth = true;
                result.failure_stage = Some(stage);
                result.error = Some(e.retryable(false));
            }
            Self::Failed(stage, e) => {
                result.failure_stage = Some(stage);
                result.error = Some(e);
            }
        }
        result
    }
}

/// What the provider's acquire step is called in errors.
pub(crate) const ACQUIRING: &str = "acquiring the browser";
/// What the strategy's sign-in check is called in errors.
pub(crate) const SIGN_IN_CHECK: &str = "the sign-in check";

/// A strategy step that timed out, as a post outcome's error: the same code and message as
/// the [`CoreError::Timeout`] a probe or capture answers for the same failure.
fn timeout_body(step: &'static str) -> ErrorBody {
    CoreError::Timeout(step).to_body()
}

/// A strategy step that panicked, as a post outcome's error (see [`timeout_body`]).
fn panic_body(step: &'static str) -> ErrorBody {
    CoreError::StrategyPanicked(step).to_body()
}

fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl<C: SessionContext> AgentPoster<C> {
    /// A poster acting through `provider` with the registered `strategies`; no pacing, no
    /// audit sink, system clock.
    pub(crate) fn new(
        provider: DynSessionProvider<C>,
        strategies: Arc<StrategyRegistry<C>>,
    ) -> Self {
        Self {
            provider,
            strategies,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
            config: PosterConfig::default(),
            frames: None,
        }
    }

    /// Takes replay frames of journaled posts (before the submit and after the
    /// verification, so that an uncertain post can be inspected) through `frames`.
    #[must_use]
    pub(crate) fn with_frames(mut self, frames: Arc<dyn RunFramesSource<C>>) -> Self {
        self.frames = Some(frames);
        self
    }

    /// Sends audit events through `audit`.
    #[must_use]
    pub(crate) fn with_audit(mut self, audit: Auditor) -> Self {
        self.audit = audit;
        self
    }

    /// Uses `clock` for timestamps and pacing sleeps.
    #[must_use]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `random` for pacing jitter.
    #[must_use]
    pub(crate) fn with_random(mut self, random: Arc<dyn RandomSource>) -> Self {
        self.random = random;
        self
    }

    /// Sets pacing and deadlines.
    #[must_use]
    pub(crate) fn with_config(mut self, config: PosterConfig) -> Self {
        self.config = config;
        self
    }

    /// The registered strategies.
    pub(crate) fn strategies(&self) -> &StrategyRegistry<C> {
        &self.strategies
    }

    fn strategy_for(
        &self,
        platform: &str,
        workspace_id: Option<&str>,
        account_id: Option<&str>,
    ) -> Result<Arc<dyn WebPostStrategy<C>>, EngineError> {
        // Bounded before anything records them (an audit line carries them).
        abr_core::tenant::check("workspaceId", workspace_id)?;
        abr_core::tenant::check("accountId", account_id)?;
        let strategy = Arc::clone(self.strategies.get(platform)?);
        let denied = |mode| {
            self.audit.emit(
                AuditEvent::new(
                    self.clock.now(),
                    AuditAction::ExecutionDenied,
                    AuditOutcome::Denied,
                    platform,
                )
                .tenant(workspace_id, account_id),
            );
            mode
        };
        if strategy.policy().read_only {
            return Err(denied(EngineError::Blocked(format!(
                "platform `{platform}` is read-only: posting through it is refused before any \
                 browser starts"
            ))));
        }
        if !strategy.policy().allow_unattended {
            return Err(denied(EngineError::from(CoreError::ExecutionDenied {
                platform: platform.to_owned(),
                mode: "unattended execution",
            })));
        }
        Ok(strategy)
    }

    /// Posts `request.content` with `request.session` and proves the outcome, outside any
    /// journal (the part's own tests; the engine posts through the journal).
    ///
    /// # Errors
    /// As [`Self::post_gated`]; a request naming a stored session (`sessionId`) is refused
    /// ([`CoreError::InvalidInput`]): only the journal resolves it.
    #[cfg(test)]
    pub(crate) async fn post(&self, request: PostRequest) -> Result<AgentPostResult, EngineError> {
        if request.session_id.is_some() {
            return Err(CoreError::InvalidInput(
                "`sessionId` names a stored session: this runner takes `session` only".into(),
            )
            .into());
        }
        check_content(&request.content)?;
        self.post_gated(request, None, None).await
    }

    /// The provider's refusal of a job right now, if it has one (a single-session backend a
    /// capture holds): the post is refused before anything is recorded, with the
    /// provider's `Retry-After`.
    ///
    /// # Errors
    /// The provider's refusal.
    pub(crate) fn refused_now(&self) -> Result<(), EngineError> {
        self.provider
            .refuses_now(AcquireMode::Unattended)
            .map_or(Ok(()), |refusal| Err(CoreError::Provider(refusal).into()))
    }

    /// Refuses, before anything is recorded, what a post would refuse: content over
    /// its bounds, an invalid extra scope, bad tenant ids, an unknown platform, a policy
    /// against unattended runs.
    pub(crate) fn check_request(&self, request: &PostRequest) -> Result<(), EngineError> {
        check_content(&request.content)?;
        scope_io::request_scope(request.scope.as_ref())?;
        self.strategy_for(
            &request.platform,
            request.workspace_id.as_deref(),
            request.account_id.as_deref(),
        )
        .map(drop)
    }

    /// Whether a post with a stored session kept for `bound` may take screenshots: not when
    /// that platform (still registered) turned them off, whatever platform the request names.
    pub(crate) fn bound_screenshots(&self, bound: &str) -> bool {
        self.strategies
            .get(bound)
            .map_or(true, |strategy| strategy.policy().screenshots)
    }

    /// Refuses a post with a stored session kept for `bound`, a registered platform that is
    /// read-only or forbids unattended runs: the session's platform policy travels with it,
    /// whatever platform the request names. A platform no longer registered adds nothing.
    ///
    /// # Errors
    /// [`EngineError::Blocked`] or [`CoreError::ExecutionDenied`], audited.
    pub(crate) fn check_bound(
        &self,
        bound: &str,
        request: &PostRequest,
    ) -> Result<(), EngineError> {
        if self.strategies.get(bound).is_err() {
            return Ok(());
        }
        self.strategy_for(
            bound,
            request.workspace_id.as_deref(),
            request.account_id.as_deref(),
        )
        .map(drop)
    }

    /// Posts `request.content` with `request.session` and proves the outcome, with the
    /// submit stage passing through `gate` (the journal's record
    /// of it); `request.session_id` is ignored (the journal resolved it into `session`).
    pub(crate) async fn post_gated(
        &self,
        request: PostRequest,
        gate: Option<Arc<dyn SubmitGate>>,
        run: Option<PostRun<'_>>,
    ) -> Result<AgentPostResult, EngineError> {
        let post_id = run.as_ref().map(|run| run.id);
        let started = Instant::now();
        let PostRequest {
            platform,
            session,
            content,
            workspace_id,
            account_id,
            scope,
            session_id: _,
        } = request;
        let extra = scope_io::request_scope(scope.as_ref())?;
        let strategy =
            self.strategy_for(&platform, workspace_id.as_deref(), account_id.as_deref())?;
        let scopes = Scopes::new(strategy.policy(), extra.as_ref());
        let (state, report_in) = scopes.apply(&session);
        let mut timing = Timing::default();

        let pacing = match strategy.pacing() {
            PlatformPacing::Runner => self.config.pacing,
            PlatformPacing::Off => None,
            PlatformPacing::Range(range) => Some(range),
        };
        if let Some(pacing) = pacing {
            let delay = pacing.pick(self.random.as_ref());
            self.clock.sleep(delay).await;
            timing.pacing_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        }

        let cookie_count = u32::try_from(state.cookies.len()).unwrap_or(u32::MAX);
        let origin_count = u32::try_from(state.origins.len()).unwrap_or(u32::MAX);
        let frames = match (&self.frames, run) {
            (Some(source), Some(run)) => {
                let platform = strategy.policy().frames().and(run.screenshots);
                source.begin(run.tenant, run.id, &platform).await
            }
            _ => None,
        };
        let (outcome, refreshed) = match self.acquire(&platform, state, &mut timing).await {
            Err(outcome) => (outcome, None),
            Ok(lease) => {
                let gate = match &frames {
                    Some(frames) => Some(Arc::new(FramingGate {
                        inner: gate,
                        frames: Arc::clone(frames),
                        context: lease.context_handle(),
                    }) as Arc<dyn SubmitGate>),
                    None => gate,
                };
                let outcome = self
                    .run(
                        strategy.as_ref(),
                        lease.context(),
                        &content,
                        gate,
                        &mut timing,
                    )
                    .await;
                if let Some(frames) = &frames {
                    let point = if outcome.reached_verification() {
                        FramePoint::AfterVerification
                    } else {
                        FramePoint::Completion
                    };
                    frames.capture(lease.context(), point, "post").await;
                }
                let refreshed = if outcome.exports_session() {
                    self.export(lease.context(), &platform, scopes).await
                } else {
                    None
                };
                self.release(lease).await;
                (outcome, refreshed)
            }
        };
        timing.total_ms = ms(started);

        let mut event = AuditEvent::new(
            self.clock.now(),
            AuditAction::Post,
            outcome.audit_outcome(),
            platform.as_str(),
        )
        .tenant(workspace_id.as_deref(), account_id.as_deref());
        event.cookie_count = Some(cookie_count);
        event.origin_count = Some(origin_count);
        event.dropped_count = Some(report_in.dropped_total());
        event.duration_ms = Some(timing.total_ms);
        event.post_id = post_id.map(str::to_owned);
        if let Outcome::Uncertain(stage, e)
        | Outcome::NeedsReauth(stage, e)
        | Outcome::Failed(stage, e) = &outcome
        {
            event.failure_stage = Some(*stage);
            event.error_code = Some(e.code.clone());
        }
        self.audit.emit(event);
        Ok(outcome.into_result(refreshed, timing))
    }

    /// A read-only re-check of `request` (its `session` resolved): a fresh browser with the
    /// scoped session, then only [`WebPostStrategy::recheck`]; the verification it found,
    /// when confirmed.
    pub(crate) async fn recheck(
        &self,
        request: &PostRequest,
    ) -> (RecheckResult, Option<Verification>) {
        let answer = |answer, error| (RecheckResult { answer, error }, None);
        let unavailable = |error: ErrorBody| answer(RecheckAnswer::Unavailable, Some(error));
        let extra = match scope_io::request_scope(request.scope.as_ref()) {
            Ok(extra) => extra,
            Err(e) => return unavailable(e.to_body()),
        };
        let strategy = match self.strategy_for(
            &request.platform,
            request.workspace_id.as_deref(),
            request.account_id.as_deref(),
        ) {
            Ok(strategy) => strategy,
            Err(e) => return unavailable(e.to_body()),
        };
        let scopes = Scopes::new(strategy.policy(), extra.as_ref());
        let (state, _report) = scopes.apply(&request.session);
        let t = self.config.timeouts;
        let acquire = AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: request.platform.clone(),
            state: Some(state),
            start_url: None,
        };
        let lease = match guarded(t.acquire, self.provider.acquire(acquire))
            .await
            .provider(ACQUIRING)
        {
            Ok(lease) => lease,
            Err(e) => return unavailable(e.to_body().retryable(true)),
        };
        let step = guarded(
            t.verify,
            strategy.recheck(lease.context(), &request.content),
        )
        .await;
        self.release(lease).await;
        match step {
            Step::Done(RecheckOutcome::Confirmed(v)) => (
                RecheckResult {
                    answer: RecheckAnswer::Confirmed,
                    error: None,
                },
                Some(v),
            ),
            Step::Done(RecheckOutcome::NotFound { detail }) => answer(
                RecheckAnswer::NotFound,
                Some(ErrorBody::new(abr_core::codes::VERIFICATION_FAILED, detail)),
            ),
            Step::Done(RecheckOutcome::Ambiguous { detail }) => answer(
                RecheckAnswer::Ambiguous,
                Some(ErrorBody::new("unconfirmed", detail)),
            ),
            Step::Done(RecheckOutcome::Unavailable { detail }) => {
                unavailable(ErrorBody::new("recheck_unavailable", detail))
            }
            Step::Error(e) => unavailable(e.to_body()),
            Step::TimedOut => unavailable(timeout_body("the re-check")),
            Step::Panicked => unavailable(panic_body("the re-check")),
        }
    }

    /// Checks whether `request.session` is still signed in, and returns it refreshed.
    ///
    /// # Errors
    /// Unknown platform, denied by policy, provider failure, or a strategy failure other
    /// than an invalid session.
    pub(crate) async fn probe(&self, request: ProbeRequest) -> Result<ProbeResponse, EngineError> {
        let started = Instant::now();
        let ProbeRequest {
            platform,
            session,
            workspace_id,
            account_id,
            scope,
        } = request;
        let extra = scope_io::request_scope(scope.as_ref())?;
        let strategy =
            self.strategy_for(&platform, workspace_id.as_deref(), account_id.as_deref())?;
        let scopes = Scopes::new(strategy.policy(), extra.as_ref());
        let (state, _report) = scopes.apply(&session);
        let t = self.config.timeouts;
        let acquire = AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: platform.clone(),
            state: Some(state),
            start_url: None,
        };
        let lease = guarded(t.acquire, self.provider.acquire(acquire))
            .await
            .provider(ACQUIRING)?;
        let checked = match guarded(t.precheck, strategy.is_authenticated(lease.context())).await {
            Step::Error(e) if e.kind == StrategyErrorKind::NeedsReauth => Ok(false),
            step => step.strategy(SIGN_IN_CHECK),
        };
        let refreshed = match checked {
            Ok(true) => self.export(lease.context(), &platform, scopes).await,
            _ => None,
        };
        self.release(lease).await;

        let outcome = match &checked {
            Ok(true) => AuditOutcome::Ok,
            Ok(false) => AuditOutcome::NeedsReauth,
            Err(_) => AuditOutcome::Failed,
        };
        let mut event = AuditEvent::new(self.clock.now(), AuditAction::Probe, outcome, platform)
            .tenant(workspace_id.as_deref(), account_id.as_deref());
        event.duration_ms = Some(ms(started));
        if let Some(r) = &refreshed {
            event.cookie_count = Some(u32::try_from(r.cookies.len()).unwrap_or(u32::MAX));
            event.origin_count = Some(u32::try_from(r.origins.len()).unwrap_or(u32::MAX));
        }
        if let Err(e) = &checked {
            event.error_code = Some(e.code().to_owned());
        }
        self.audit.emit(event);

        let authenticated = checked?;
        Ok(ProbeResponse {
            authenticated,
            needs_reauth: !authenticated,
            refreshed_session: refreshed,
        })
    }

    async fn acquire(
        &self,
        platform: &str,
        state: AgentSessionState,
        timing: &mut Timing,
    ) -> Result<Lease<C>, Outcome> {
        let t0 = Instant::now();
        // No start URL: the strategy navigates where it needs to, so no navigation is wasted.
        let request = AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: platform.to_owned(),
            state: Some(state),
            start_url: None,
        };
        let step = guarded(self.config.timeouts.acquire, self.provider.acquire(request)).await;
        timing.acquire_ms = ms(t0);
        step.provider(ACQUIRING)
            .map_err(|e| Outcome::failed(FailureStage::Precheck, e.to_body()))
    }

    /// The strategy part of a job: every result, error, timeout and panic maps to one row.
    async fn run(
        &self,
        strategy: &dyn WebPostStrategy<C>,
        context: &C,
        content: &PostContent,
        gate: Option<Arc<dyn SubmitGate>>,
        timing: &mut Timing,
    ) -> Outcome {
        let t = self.config.timeouts;
        let t0 = Instant::now();
        let precheck = guarded(t.precheck, strategy.is_authenticated(context)).await;
        timing.precheck_ms = ms(t0);
        let stage = FailureStage::Precheck;
        match precheck {
            Step::Done(true) => {}
            Step::Done(false) => {
                return Outcome::NeedsReauth(
                    stage,
                    ErrorBody::new("needs_reauth", "the session is not signed in"),
                );
            }
            Step::Error(e) if e.kind == StrategyErrorKind::NeedsReauth => {
                return Outcome::NeedsReauth(stage, e.to_body());
            }
            Step::Error(e) => return Outcome::failed(stage, e.to_body()),
            Step::TimedOut => return Outcome::failed(stage, timeout_body(SIGN_IN_CHECK)),
            Step::Panicked => return Outcome::failed(stage, panic_body(SIGN_IN_CHECK)),
        }

        let progress = PostProgress::gated(gate);
        progress.enter(FailureStage::Compose);
        let t0 = Instant::now();
        let posted = guarded(t.post, strategy.post(context, content, &progress)).await;
        timing.post_ms = ms(t0);
        let stage = progress.current();
        let receipt = match posted {
            Step::Done(receipt) => receipt,
            Step::Error(e) => {
                return match e.kind {
                    StrategyErrorKind::NeedsReauth => Outcome::NeedsReauth(stage, e.to_body()),
                    StrategyErrorKind::NotPosted => Outcome::failed(stage, e.to_body()),
                    _ => Outcome::interrupted(stage, e.to_body()),
                };
            }
            Step::TimedOut => return Outcome::interrupted(stage, timeout_body("posting")),
            Step::Panicked => return Outcome::interrupted(stage, panic_body("posting")),
        };

        let stage = FailureStage::Verify;
        let t0 = Instant::now();
        let verified = guarded(t.verify, strategy.verify(context, &receipt)).await;
        timing.verify_ms = ms(t0);
        match verified {
            Step::Done(VerifyOutcome::Confirmed(v)) => Outcome::Confirmed(v),
            Step::Done(VerifyOutcome::NotPosted { detail }) => {
                Outcome::failed(stage, ErrorBody::new("not_posted", detail))
            }
            Step::Done(VerifyOutcome::Unconfirmed { detail }) => {
                Outcome::Uncertain(stage, ErrorBody::new("unconfirmed", detail))
            }
            Step::Error(e) if e.kind == StrategyErrorKind::NotPosted => {
                Outcome::failed(stage, e.to_body())
            }
            Step::Error(e) => Outcome::Uncertain(stage, e.to_body()),
            Step::TimedOut => Outcome::Uncertain(stage, timeout_body("verification")),
            Step::Panicked => Outcome::Uncertain(stage, panic_body("verification")),
        }
    }

    /// The context's state, scoped for leaving the runtime; `None` if it cannot be read.
    async fn export(
        &self,
        context: &C,
        platform: &str,
        scopes: Scopes<'_>,
    ) -> Option<AgentSessionState> {
        match guarded(self.config.timeouts.export, context.export_state()).await {
            Step::Done(state) => Some(scopes.apply_out(&state, platform, self.clock.now()).0),
            Step::Error(e) => {
                tracing::warn!(error = %e, "could not export the refreshed session");
                None
            }
            Step::TimedOut | Step::Panicked => {
                tracing::warn!("exporting the refreshed session timed out or panicked");
                None
            }
        }
    }

    async fn release(&self, lease: Lease<C>) {
        match tokio::time::timeout(self.config.timeouts.release, lease.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing the browser failed"),
            Err(_) => tracing::warn!("releasing the browser timed out"),
        }
    }
}
