//! [`SessionCaptureManager`]: interactive sign-in through a live view, bound to one tenant
//! and account, exported through the platform's scope.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, Auditor};
use abr_core::clock::{Clock, SystemClock, new_token};
use abr_core::error::{CoreError, StrategyErrorKind};
use abr_core::provider::{
    AcquireMode, AcquireRequest, DynSessionProvider, Lease, ProviderViewer, SessionContext,
};
use abr_core::scope::SessionScope;
use abr_core::scope_io;
use abr_core::scope_io::Scopes;
use abr_core::strategy::{StrategyRegistry, WebPostStrategy};
use abr_protocol::{
    CaptureCancelResponse, CaptureFinishResponse, CaptureRef, CaptureStartRequest,
    CaptureStartResponse, CaptureState, CaptureStatus,
};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::error::EngineError;
use crate::live_access::{LiveAttachment, LiveSites};
use crate::step::{Step, guarded};

/// Limits and addresses of captures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaptureConfig {
    /// How long a capture stays open before its browser is released.
    pub ttl: Duration,
    /// At most this many open captures; more are refused with [`EngineError::CaptureLimit`].
    pub max_open: usize,
    /// Prefix of live-view URLs; the live token is appended (e.g.
    /// `https://runner.example.com/live/`).
    pub live_view_base: String,
    /// Deadline for acquiring the interactive browser.
    pub acquire_timeout: Duration,
    /// Deadline for the sign-in check, export and release.
    pub step_timeout: Duration,
    /// Sockets one live token may hold open at once (screencast or proxied); more are
    /// refused with [`EngineError::LiveViewLimit`].
    pub max_live_sockets: usize,
}

impl CaptureConfig {
    /// The deadlines of `budget` with the other settings of `self`.
    #[must_use]
    pub(crate) fn with_budget(mut self, budget: &abr_core::budget::DeadlineBudget) -> Self {
        self.acquire_timeout = budget.capture_acquire;
        self.step_timeout = budget.capture_step;
        self
    }
}

impl Default for CaptureConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(15 * 60),
            max_open: 4,
            live_view_base: "http://127.0.0.1:8787/live/".to_owned(),
            acquire_timeout: Duration::from_secs(30),
            step_timeout: Duration::from_secs(30),
            max_live_sockets: 2,
        }
    }
}

/// What a live token resolves to without attaching: enough to serve the viewer page, and
/// nothing that can drive the browser (that takes a [`LiveAttachment`]).
#[derive(Clone)]
pub struct LiveTarget {
    /// Platform being captured.
    pub platform: String,
    /// The provider's own viewer, if the capture's browser has one.
    pub provider_viewer: Option<ProviderViewer>,
    /// When the capture (and so the live token) expires.
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for LiveTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTarget")
            .field("platform", &self.platform)
            .field("provider_viewer", &self.provider_viewer.is_some())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A capture start that can go ahead: the platform's strategy and the request's extra
/// scope.
type Checked<C> = (Arc<dyn WebPostStrategy<C>>, Option<SessionScope>);

struct Capture<C: SessionContext> {
    id: String,
    live_token: String,
    workspace_id: String,
    account_id: String,
    platform: String,
    expires_at: OffsetDateTime,
    context: Arc<C>,
    viewer: Option<ProviderViewer>,
    /// What the viewer's address bar may open.
    sites: LiveSites,
    /// Sockets of the live token.
    live_slots: Arc<Semaphore>,
    /// Set to `true` when the capture ends: every live socket closes on it.
    ended: watch::Sender<bool>,
    /// The start request's own scope, applied after the platform's.
    extra_scope: Option<SessionScope>,
    /// `None` once finished, cancelled or expired; the async mutex serializes those.
    lease: tokio::sync::Mutex<Option<Lease<C>>>,
    _slot: OwnedSemaphorePermit,
    /// One of the tenant's sessions, given back when the capture is gone.
    _tenant_session: Option<crate::admission::SessionHold>,
}

impl<C: SessionContext> Capture<C> {
    /// Ends every live socket of this capture.
    fn end_live(&self) {
        self.ended.send_replace(true);
    }

    fn is_bound_to(&self, workspace_id: &str, account_id: &str) -> bool {
        let w = self.workspace_id.as_bytes().ct_eq(workspace_id.as_bytes());
        let a = self.account_id.as_bytes().ct_eq(account_id.as_bytes());
        (w & a).into()
    }
}

struct Captures<C: SessionContext> {
    by_id: HashMap<String, Arc<Capture<C>>>,
    by_live_token: HashMap<String, String>,
}

/// Runs interactive captures.
///
/// The capture id is the management credential (finish, cancel, status); the live token in
/// the live-view URL is a different credential that only resolves the browser to show
/// ([`SessionCaptureManager::live_target`]). Both are 256-bit random tokens.
pub(crate) struct SessionCaptureManager<C: SessionContext> {
    provider: DynSessionProvider<C>,
    strategies: Arc<StrategyRegistry<C>>,
    audit: Auditor,
    clock: Arc<dyn Clock>,
    config: CaptureConfig,
    slots: Arc<Semaphore>,
    captures: Mutex<Captures<C>>,
    /// The tenants' limits: an open capture holds one of its tenant's sessions.
    admission: Option<crate::admission::TenantAdmission>,
}

impl<C: SessionContext> std::fmt::Debug for SessionCaptureManager<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCaptureManager")
            .field("provider", &self.provider.name())
            .field("open", &self.open_count())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: SessionContext> SessionCaptureManager<C> {
    /// A manager capturing through `provider` for the registered `strategies`.
    pub(crate) fn new(
        provider: DynSessionProvider<C>,
        strategies: Arc<StrategyRegistry<C>>,
        config: CaptureConfig,
    ) -> Self {
        Self {
            provider,
            strategies,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            slots: Arc::new(Semaphore::new(config.max_open)),
            config,
            captures: Mutex::new(Captures {
                by_id: HashMap::new(),
                by_live_token: HashMap::new(),
            }),
            admission: None,
        }
    }

    /// Counts each open capture as one of its tenant's (`workspaceId`'s) concurrent
    /// sessions, from its start to its end (finished, cancelled, expired).
    #[must_use]
    pub(crate) fn with_admission(mut self, admission: crate::admission::TenantAdmission) -> Self {
        self.admission = Some(admission);
        self
    }

    /// Sends audit events through `audit`.
    #[must_use]
    pub(crate) fn with_audit(mut self, audit: Auditor) -> Self {
        self.audit = audit;
        self
    }

    /// Uses `clock` for expiry and timestamps.
    #[must_use]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Captures<C>> {
        self.captures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of open captures.
    pub(crate) fn open_count(&self) -> usize {
        self.lock().by_id.len()
    }

    fn event(&self, action: AuditAction, outcome: AuditOutcome, c: &Capture<C>) -> AuditEvent {
        AuditEvent::new(self.clock.now(), action, outcome, c.platform.as_str())
            .tenant(Some(&c.workspace_id), Some(&c.account_id))
    }

    /// Refuses a capture the provider would refuse at once (a single-session backend in
    /// use), before the caller queues for a job slot: a person is not kept waiting for a
    /// refusal. A hint only: [`Self::start`]'s acquire decides.
    ///
    /// # Errors
    /// The provider's refusal, typically `provider_busy` with its `Retry-After`.
    pub(crate) fn refused_now(&self) -> Result<(), EngineError> {
        self.provider
            .refuses_now(AcquireMode::Interactive)
            .map_or(Ok(()), |refusal| Err(refusal.into()))
    }

    /// The refusal of a capture its platform's policy does not allow, audited.
    fn denied(&self, request: &CaptureStartRequest) -> EngineError {
        self.audit.emit(
            AuditEvent::new(
                self.clock.now(),
                AuditAction::ExecutionDenied,
                AuditOutcome::Denied,
                request.platform.as_str(),
            )
            .tenant(Some(&request.workspace_id), Some(&request.account_id)),
        );
        EngineError::from(CoreError::ExecutionDenied {
            platform: request.platform.clone(),
            mode: "interactive capture",
        })
    }

    /// What refuses `request` whatever waits: bad ids or scope, an unknown platform, a
    /// policy without interactive capture, a provider that cannot be interactive, every
    /// capture slot taken. Asked before a job slot is waited for, so that a start that
    /// cannot succeed is refused at once (`start` asks again: the answer may change).
    ///
    /// # Errors
    /// As [`Self::start`], short of the provider's own failures.
    pub(crate) async fn refused_before_start(
        &self,
        request: &CaptureStartRequest,
    ) -> Result<(), EngineError> {
        self.checked(request)?;
        // Expired captures give their slots back first.
        self.sweep_expired().await;
        if self.slots.available_permits() == 0 {
            return Err(EngineError::CaptureLimit(self.config.max_open));
        }
        self.refused_now()
    }

    /// What `request` itself decides: its ids, its extra scope, its platform, the
    /// platform's policy (a refusal is audited) and whether the provider can be interactive.
    /// The platform's strategy and the extra scope when it can start.
    fn checked(&self, request: &CaptureStartRequest) -> Result<Checked<C>, EngineError> {
        abr_core::tenant::check("workspaceId", Some(&request.workspace_id))?;
        abr_core::tenant::check("accountId", Some(&request.account_id))?;
        let extra_scope = scope_io::request_scope(request.scope.as_ref())?;
        let strategy = Arc::clone(self.strategies.get(&request.platform)?);
        if !strategy.policy().allow_interactive_capture {
            return Err(self.denied(request));
        }
        if !self.provider.capabilities().interactive {
            return Err(EngineError::from(CoreError::Unsupported {
                provider: self.provider.name().to_owned(),
                what: "interactive capture",
            }));
        }
        Ok((strategy, extra_scope))
    }

    /// Starts a capture: opens an interactive browser on the platform's start URL.
    ///
    /// # Errors
    /// Invalid ids, unknown platform, a policy without interactive capture, a provider that
    /// cannot be interactive, too many open captures, or a provider failure.
    pub(crate) async fn start(
        &self,
        request: CaptureStartRequest,
    ) -> Result<CaptureStartResponse, EngineError> {
        let (strategy, extra_scope) = self.checked(&request)?;
        self.sweep_expired().await;
        let slot = Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| EngineError::CaptureLimit(self.config.max_open))?;
        // Given back by its drop if the capture does not open.
        let tenant_session = match &self.admission {
            Some(admission) => Some(admission.hold_session(&request.workspace_id).await?),
            None => None,
        };
        let acquire = AcquireRequest {
            profile: None,
            mode: AcquireMode::Interactive,
            platform: request.platform.clone(),
            state: None,
            start_url: Some(strategy.start_url().to_owned()),
        };
        let lease = guarded(self.config.acquire_timeout, self.provider.acquire(acquire))
            .await
            .provider(crate::poster::ACQUIRING)?;
        let (Ok(id), Ok(live_token)) = (new_token(), new_token()) else {
            // The lease is released by its Drop.
            return Err(EngineError::from(CoreError::Internal(
                "the OS random source failed",
            )));
        };
        let viewer = lease.provider_viewer().cloned();
        let sites = LiveSites::new(
            strategy.start_url(),
            match &extra_scope {
                Some(extra) => Some(extra),
                None => strategy.policy().scope.as_ref(),
            },
        );
        let expires_at = self.clock.now() + self.config.ttl;
        let capture = Arc::new(Capture {
            id: id.clone(),
            live_token: live_token.clone(),
            workspace_id: request.workspace_id,
            account_id: request.account_id,
            platform: request.platform,
            expires_at,
            context: lease.context_handle(),
            viewer,
            sites,
            live_slots: Arc::new(Semaphore::new(self.config.max_live_sockets)),
            ended: watch::Sender::new(false),
            extra_scope,
            lease: tokio::sync::Mutex::new(Some(lease)),
            _slot: slot,
            _tenant_session: tenant_session,
        });
        self.audit
            .emit(self.event(AuditAction::CaptureStarted, AuditOutcome::Ok, &capture));
        {
            let mut captures = self.lock();
            captures
                .by_live_token
                .insert(live_token.clone(), id.clone());
            captures.by_id.insert(id.clone(), capture);
        }
        Ok(CaptureStartResponse {
            capture_id: id,
            live_view_url: format!("{}{}", self.config.live_view_base, live_token),
            expires_at,
        })
    }

    /// The open, unexpired capture with this id.
    fn find(&self, capture_id: &str) -> Result<Arc<Capture<C>>, EngineError> {
        let now = self.clock.now();
        self.lock()
            .by_id
            .get(capture_id)
            .filter(|c| c.expires_at > now)
            .cloned()
            .ok_or(EngineError::CaptureNotFound)
    }

    fn find_bound(&self, r: &CaptureRef) -> Result<Arc<Capture<C>>, EngineError> {
        let capture = self.find(&r.capture_id)?;
        if capture.is_bound_to(&r.workspace_id, &r.account_id) {
            Ok(capture)
        } else {
            Err(EngineError::BindingMismatch)
        }
    }

    fn forget(&self, capture: &Capture<C>) {
        {
            let mut captures = self.lock();
            captures.by_id.remove(&capture.id);
            captures.by_live_token.remove(&capture.live_token);
        }
        capture.end_live();
    }

    async fn release(&self, lease: Lease<C>) {
        match tokio::time::timeout(self.config.step_timeout, lease.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing the capture browser failed"),
            Err(_) => tracing::warn!("releasing the capture browser timed out"),
        }
    }

    /// Finishes a capture: checks that the browser is signed in, exports the state through
    /// the platform's scope, and releases the browser.
    ///
    /// # Errors
    /// [`EngineError::CaptureNotFound`], [`EngineError::BindingMismatch`] (the capture stays
    /// open), [`EngineError::NotAuthenticated`] (the capture stays open: the user may still be
    /// signing in), or a strategy/provider failure (the capture stays open).
    pub(crate) async fn finish(
        &self,
        r: &CaptureRef,
    ) -> Result<CaptureFinishResponse, EngineError> {
        self.sweep_expired().await;
        let capture = self.find_bound(r)?;
        let strategy = Arc::clone(self.strategies.get(&capture.platform)?);
        let mut slot = capture.lease.lock().await;
        let Some(lease) = slot.as_ref() else {
            // Released when its browser was lost: it can never finish.
            if self.is_lost(&capture).await {
                return Err(EngineError::CaptureBrowserLost);
            }
            return Err(EngineError::CaptureNotFound);
        };
        let t = self.config.step_timeout;
        if tokio::time::timeout(t, lease.context().is_lost())
            .await
            .unwrap_or(false)
        {
            // Not "not signed in yet" (retryable, forever): it can never finish.
            return Err(EngineError::CaptureBrowserLost);
        }
        match guarded(t, strategy.is_authenticated(lease.context())).await {
            Step::Done(true) => {}
            Step::Done(false) => return Err(EngineError::NotAuthenticated),
            Step::Error(e) if e.kind == StrategyErrorKind::NeedsReauth => {
                return Err(EngineError::NotAuthenticated);
            }
            step => step.strategy(crate::poster::SIGN_IN_CHECK).map(|_| ())?,
        }
        let exported = guarded(t, lease.context().export_state())
            .await
            .provider("exporting the session")?;
        let scopes = Scopes::new(strategy.policy(), capture.extra_scope.as_ref());
        let (session, scope_report) =
            scopes.apply_out(&exported, &capture.platform, self.clock.now());
        let lease = slot.take();
        drop(slot);
        self.forget(&capture);
        if let Some(lease) = lease {
            self.release(lease).await;
        }
        let mut event = self.event(AuditAction::CaptureFinished, AuditOutcome::Ok, &capture);
        event.cookie_count = Some(scope_report.kept_cookies);
        event.origin_count = Some(scope_report.kept_origins);
        event.dropped_count = Some(scope_report.dropped_total());
        self.audit.emit(event);
        Ok(CaptureFinishResponse {
            session,
            scope_report,
            stored_as: None,
        })
    }

    /// Cancels a capture and releases its browser.
    ///
    /// # Errors
    /// [`EngineError::CaptureNotFound`] or [`EngineError::BindingMismatch`].
    pub(crate) async fn cancel(
        &self,
        r: &CaptureRef,
    ) -> Result<CaptureCancelResponse, EngineError> {
        self.sweep_expired().await;
        let capture = self.find_bound(r)?;
        let lease = capture.lease.lock().await.take();
        // A lost capture gave its browser back already: cancelling it forgets it.
        if lease.is_none() && !self.is_lost(&capture).await {
            return Err(EngineError::CaptureNotFound);
        }
        self.forget(&capture);
        if let Some(lease) = lease {
            self.release(lease).await;
        }
        self.audit
            .emit(self.event(AuditAction::CaptureCancelled, AuditOutcome::Ok, &capture));
        Ok(CaptureCancelResponse { cancelled: true })
    }

    /// Whether `capture`'s browser is gone for good (within the step deadline).
    async fn is_lost(&self, capture: &Capture<C>) -> bool {
        tokio::time::timeout(self.config.step_timeout, capture.context.is_lost())
            .await
            .unwrap_or(false)
    }

    /// Gives back at once the browser of `capture` when it was lost (closed, crashed, its
    /// remote session replaced): a single-session backend's gate opens for the next job
    /// without waiting for someone to cancel it. The capture stays, answering
    /// `browser_lost`, until it is cancelled or expires. Whether it was lost.
    async fn release_if_lost(&self, capture: &Capture<C>) -> bool {
        if !self.is_lost(capture).await {
            return false;
        }
        // A finish or cancel under way holds the lease: it ends it.
        let taken = match capture.lease.try_lock() {
            Ok(mut slot) => slot.take(),
            Err(_) => None,
        };
        if let Some(lease) = taken {
            capture.ended.send_replace(true);
            self.release(lease).await;
            tracing::info!(capture = %capture.id, "a capture's browser was lost: released");
        }
        true
    }

    /// Releases the browsers of every open capture whose browser was lost (one already
    /// released is not asked again).
    pub(crate) async fn release_lost(&self) {
        let open: Vec<Arc<Capture<C>>> = self.lock().by_id.values().cloned().collect();
        for capture in open {
            if capture.lease.try_lock().is_ok_and(|slot| slot.is_some()) {
                self.release_if_lost(&capture).await;
            }
        }
    }

    /// Status of an open capture, for the workspace and account it is bound to (the capture
    /// id alone is not enough, as for finish and cancel).
    ///
    /// # Errors
    /// [`EngineError::CaptureNotFound`] or [`EngineError::BindingMismatch`].
    pub(crate) async fn status(&self, r: &CaptureRef) -> Result<CaptureStatus, EngineError> {
        let capture = self.find_bound(r)?;
        let lost = self.release_if_lost(&capture).await;
        Ok(CaptureStatus {
            platform: capture.platform.clone(),
            state: if lost {
                CaptureState::BrowserLost
            } else {
                CaptureState::Open
            },
            expires_at: capture.expires_at,
        })
    }

    fn by_live_token(&self, live_token: &str) -> Option<Arc<Capture<C>>> {
        let now = self.clock.now();
        let captures = self.lock();
        let id = captures.by_live_token.get(live_token)?;
        captures
            .by_id
            .get(id)
            .filter(|c| c.expires_at > now)
            .cloned()
    }

    /// What an open capture's live token shows, without attaching to its browser.
    pub(crate) fn live_target(&self, live_token: &str) -> Option<LiveTarget> {
        let capture = self.by_live_token(live_token)?;
        Some(LiveTarget {
            platform: capture.platform.clone(),
            provider_viewer: capture.viewer.clone(),
            expires_at: capture.expires_at,
        })
    }

    /// Attaches one viewer socket to the browser of the capture whose live token this is.
    /// This is all a live token can do: watch and drive that one browser, within the rules
    /// of [`LiveAttachment`], until the capture ends.
    ///
    /// # Errors
    /// [`EngineError::LiveViewNotFound`] (no open capture has this token) or
    /// [`EngineError::LiveViewLimit`] (the token holds its maximum of sockets).
    pub(crate) fn attach_live(&self, live_token: &str) -> Result<LiveAttachment<C>, EngineError> {
        let capture = self
            .by_live_token(live_token)
            .ok_or(EngineError::LiveViewNotFound)?;
        let slot = Arc::clone(&capture.live_slots)
            .try_acquire_owned()
            .map_err(|_| EngineError::LiveViewLimit(self.config.max_live_sockets))?;
        Ok(LiveAttachment {
            on_input: None,
            platform: capture.platform.clone(),
            surface: Arc::clone(&capture.context),
            viewer: capture.viewer.clone(),
            sites: capture.sites.clone(),
            expires_at: capture.expires_at,
            ended: capture.ended.subscribe(),
            clock: Arc::clone(&self.clock),
            _slot: slot,
        })
    }

    async fn close(&self, doomed: Vec<Arc<Capture<C>>>, action: AuditAction) -> usize {
        let mut closed = 0;
        for capture in doomed {
            capture.end_live();
            let lease = capture.lease.lock().await.take();
            if let Some(lease) = lease {
                self.release(lease).await;
                self.audit
                    .emit(self.event(action, AuditOutcome::Ok, &capture));
                closed += 1;
            }
        }
        closed
    }

    /// Releases every expired capture; how many were released.
    pub(crate) async fn sweep_expired(&self) -> usize {
        let now = self.clock.now();
        let doomed: Vec<_> = {
            let mut captures = self.lock();
            let expired: Vec<String> = captures
                .by_id
                .values()
                .filter(|c| c.expires_at <= now)
                .map(|c| c.id.clone())
                .collect();
            let mut doomed = Vec::with_capacity(expired.len());
            for id in expired {
                if let Some(c) = captures.by_id.remove(&id) {
                    captures.by_live_token.remove(&c.live_token);
                    doomed.push(c);
                }
            }
            doomed
        };
        self.close(doomed, AuditAction::CaptureExpired).await
    }

    /// Cancels every open capture (graceful shutdown); how many were released.
    pub(crate) async fn close_all(&self) -> usize {
        let doomed: Vec<_> = {
            let mut captures = self.lock();
            captures.by_live_token.clear();
            captures.by_id.drain().map(|(_, c)| c).collect()
        };
        self.close(doomed, AuditAction::CaptureCancelled).await
    }

    /// Sweeps expired captures every `every` until the manager is dropped.
    pub(crate) fn spawn_reaper(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.sweep_expired().await;
                manager.release_lost().await;
            }
        })
    }
}
