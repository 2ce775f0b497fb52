//! [`TaskRunner`]: the task part of the engine, its settings and its parts. What it does
//! is split by concern: `lifecycle` (create → approve → reject → retry → recover), `run`
//! (the browser part of a run), `browse`, `pauses`, with `outcome`, `rails` and `network`
//! below them.

use std::sync::Arc;
use std::time::Duration;

use abr_core::approval::ApprovalRule;
use abr_core::audit::Auditor;
use abr_core::clock::{Clock, SystemClock};
use abr_core::context::TaskContext;
use abr_core::guard::{FrameStore, ProfileStore, SiteStore};
use abr_core::limits::TenantLimits;
use abr_core::plan::PlanLimits;
use abr_core::provider::DynSessionProvider;
use abr_core::store::{RecordStore, StoredTask, TaskStore};
use abr_core::strategy::StrategyRegistry;
use abr_protocol::{SecretValue, TaskRecord, TaskState};
use url::Url;

use crate::events::Events;
use crate::handoff::Handoffs;
use crate::ledger::Ledger;
use crate::stored_sessions::StoredSessions;

/// The platform name of tasks that name none (labels, audit).
pub(super) use abr_core::store::NO_PLATFORM;

/// Settings of a [`TaskRunner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskConfig {
    /// Plan limits: steps, longest step deadline.
    pub plan: PlanLimits,
    /// Deadline of a step without `timeoutMs`, and of the first navigation.
    pub default_step_timeout: Duration,
    /// Added to a step's deadline before the runner gives up on a browser that does not
    /// return (the [`StepRunner`](abr_core::step_runner::StepRunner) contract: it returns within the deadline plus a margin).
    pub step_grace: Duration,
    /// Acquiring the browser.
    pub acquire_timeout: Duration,
    /// The verification (a DOM check, a screenshot, the page's text).
    pub verify_timeout: Duration,
    /// Exporting the refreshed session.
    pub export_timeout: Duration,
    /// Releasing the browser.
    pub release_timeout: Duration,
    /// Most JSON bytes of extracted data kept per task (default 256 KiB); beyond, results
    /// are cut and the step's result says so (`extract_truncated`).
    pub extract_cap_bytes: usize,
    /// Which tasks wait for a person's approval.
    pub approval: ApprovalRule,
    /// Per-tenant limits.
    pub limits: TenantLimits,
    /// Longest a paused run waits for a person (a request's `handoff.waitSeconds` above it
    /// is refused; default one hour).
    pub max_handoff_wait: Duration,
    /// Where the providers' browsers may connect (see `EngineConfig::egress`).
    pub egress: abr_core::egress::EgressPolicy,
    /// Whose plans waiting for approval get a dry-run preview (default: none).
    pub plan_previews: abr_core::approval::PlanPreviews,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            plan: PlanLimits::default(),
            default_step_timeout: Duration::from_secs(30),
            step_grace: Duration::from_secs(2),
            acquire_timeout: Duration::from_secs(30),
            verify_timeout: Duration::from_secs(30),
            export_timeout: Duration::from_secs(10),
            release_timeout: Duration::from_secs(10),
            extract_cap_bytes: 256 * 1024,
            approval: ApprovalRule::All,
            limits: TenantLimits::default(),
            max_handoff_wait: Duration::from_secs(3600),
            egress: abr_core::egress::EgressPolicy::new(),
            plan_previews: abr_core::approval::PlanPreviews::Off,
        }
    }
}

impl TaskConfig {
    /// The deadlines of `budget` with the other settings of `self`: a step may take up to
    /// the post step's share (`timeoutMs` above it is refused), a step without `timeoutMs`
    /// and the verification the verify step's, acquire, export and release theirs.
    #[must_use]
    pub(crate) fn with_budget(mut self, budget: &abr_core::budget::DeadlineBudget) -> Self {
        let s = budget.steps;
        self.plan.max_step_timeout = s.post;
        self.default_step_timeout = s.verify.min(s.post);
        self.acquire_timeout = s.acquire;
        self.verify_timeout = s.verify;
        self.export_timeout = s.export;
        self.release_timeout = s.release;
        self
    }
}

/// What `create` (or `retry`) answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The task's record.
    pub record: TaskRecord,
    /// Whether this is the task an earlier request with the same idempotency key created
    /// (nothing new was stored or started).
    pub replayed: bool,
}

impl Created {
    /// Whether the caller should now [`TaskRunner::run`] it: a new task the approval rule
    /// let through.
    pub(crate) fn should_run(&self) -> bool {
        !self.replayed && self.record.state == TaskState::Queued
    }
}

/// A task that ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnd {
    /// Its final record.
    pub record: TaskRecord,
    /// With `api_callback` verification: where the service posts `record` (ABR reports, the
    /// orchestrator proves).
    pub callback_url: Option<Url>,
}

/// Runs step plans: the task API of the core.
///
/// - [`create`](Self::create) validates the plan (422 naming the step), binds an
///   idempotency key, and stores the task `pending_approval`, or `queued` when the
///   [`ApprovalRule`] lets it through (`approvedBy: "auto:<rule>"`).
/// - [`approve`](Self::approve) (the exact plan hash, a non-empty approver) moves it
///   `pending_approval → queued` exactly once; [`reject`](Self::reject) ends it.
/// - [`run`](Self::run) moves it `queued → running` exactly once and runs it: acquire
///   (session scoped in and out as posts are), the target URL, the steps in order each under
///   its deadline, then the verification; each change saved to the store as it happens.
/// - [`recheck`](Self::recheck), [`assert_not_posted`](Self::assert_not_posted) and
///   [`retry`](Self::retry) handle what ended uncertain or failed;
///   [`recover_unfinished`](Self::recover_unfinished) ends what a restart interrupted.
///
/// Per-tenant limits: a task takes a browser session and counts as an execution of the
/// UTC day when it is admitted to run (approved, or let through by the rule); the session
/// is given back when the run ends. Every operation emits an [`AuditEvent`](abr_core::audit::AuditEvent) with ids,
/// step types and descriptions only: never a typed value, an input or extracted data.
pub(crate) struct TaskRunner<C: TaskContext> {
    pub(super) provider: DynSessionProvider<C>,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) ledger: Ledger<StoredTask>,
    pub(super) platforms: Option<Arc<StrategyRegistry<C>>>,
    pub(super) sessions: Option<StoredSessions>,
    pub(super) audit: Auditor,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) config: TaskConfig,
    pub(super) body_key: Option<SecretValue>,
    pub(super) frames: Option<Arc<dyn FrameStore>>,
    pub(super) sites: Option<Arc<dyn SiteStore>>,
    pub(super) profiles: Option<Arc<dyn ProfileStore>>,
    pub(super) handoffs: Arc<Handoffs<C>>,
    pub(super) events: Arc<Events>,
    pub(super) browses: crate::task::browses::Browses<C>,
    pub(super) artifacts: Option<crate::artifacts::Artifacts>,
}

impl<C: TaskContext> std::fmt::Debug for TaskRunner<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRunner")
            .field("provider", &self.provider.name())
            .field("platforms", &self.platforms)
            .field("sessions", &self.sessions.is_some())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// A runner acting through `provider`, keeping tasks in `store`; default settings, no
    /// platforms, no stored sessions, no audit sink, system clock.
    pub(crate) fn new(provider: DynSessionProvider<C>, store: Arc<dyn TaskStore>) -> Self {
        Self {
            provider,
            ledger: Ledger::new(Arc::clone(&store) as Arc<dyn RecordStore<StoredTask>>),
            store,
            platforms: None,
            sessions: None,
            audit: Auditor::none(),
            clock: Arc::new(SystemClock),
            config: TaskConfig::default(),
            body_key: None,
            frames: None,
            sites: None,
            profiles: None,
            handoffs: Arc::new(Handoffs::new(Arc::new(SystemClock))),
            events: Arc::new(Events::new(
                crate::events::EventLogConfig::in_memory(),
                None,
                Arc::new(SystemClock),
                crate::events::DEFAULT_STALL,
            )),
            browses: crate::task::browses::Browses::default(),
            artifacts: None,
        }
    }

    /// Reads the artifacts plans' `upload` steps name from `artifacts`. Without them a plan
    /// with an upload is refused (its artifact is not found).
    #[must_use]
    pub(crate) fn with_artifacts(mut self, artifacts: crate::artifacts::Artifacts) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// The files of a browse session's upload of the tenant's artifact `id`.
    ///
    /// # Errors
    /// [`EngineError::ArtifactNotFound`] (another tenant's, deleted, expired, or no
    /// artifact store); a store failure.
    pub(super) async fn upload_files(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<abr_core::step_runner::UploadFile>, crate::error::EngineError> {
        match &self.artifacts {
            Some(artifacts) => artifacts.files(tenant, id).await,
            None => Err(crate::error::EngineError::ArtifactNotFound(id.to_owned())),
        }
    }

    /// Checks that the artifacts `plan`'s uploads name are the tenant's.
    pub(super) async fn check_artifacts(
        &self,
        tenant: &str,
        plan: &abr_protocol::StepPlan,
    ) -> Result<(), crate::error::EngineError> {
        match &self.artifacts {
            Some(artifacts) => artifacts.check_plan(tenant, plan).await,
            None => crate::artifacts::none_kept(plan),
        }
    }

    /// Sets the files of `steps`' uploads from the tenant's artifacts they name.
    pub(super) async fn fill_uploads(
        &self,
        tenant: &str,
        plan: &abr_protocol::StepPlan,
        steps: &mut [abr_core::plan::FilledStep],
    ) -> Result<(), crate::error::EngineError> {
        match &self.artifacts {
            Some(artifacts) => artifacts.fill(tenant, steps).await,
            None => crate::artifacts::none_kept(plan),
        }
    }

    /// Keeps replay frames in `frames` (and reads the tenants' screenshots switch there).
    /// Without a frame store no frame is taken.
    #[must_use]
    pub(crate) fn with_frames(mut self, frames: Arc<dyn FrameStore>) -> Self {
        self.frames = Some(frames);
        self
    }

    /// Applies the tenants' site decisions in `sites`, and records consent given during a
    /// pause there. Without a site store every site is allowed.
    #[must_use]
    pub(crate) fn with_sites(mut self, sites: Arc<dyn SiteStore>) -> Self {
        self.sites = Some(sites);
        self
    }

    /// Opens named profiles whose consent and sign-ins `profiles` keeps (the provider must
    /// open them too). Without it a task naming a profile is refused.
    #[must_use]
    pub(crate) fn with_profiles(mut self, profiles: Arc<dyn ProfileStore>) -> Self {
        self.profiles = Some(profiles);
        self
    }

    /// Sends its runs' events (approvals required, takeovers, steps, stalls, ends) to
    /// `events`.
    #[must_use]
    pub(crate) fn with_events(mut self, events: Arc<Events>) -> Self {
        self.events = events;
        self
    }

    /// Where its runs' events go.
    pub(crate) fn events(&self) -> &Arc<Events> {
        &self.events
    }

    /// Bounds of browse sessions ([`Self::browse_open`]).
    #[must_use]
    pub(crate) fn with_browse_config(mut self, config: crate::task::browses::BrowseConfig) -> Self {
        self.browses.config = config;
        self
    }

    /// The paused runs' takeovers (the live view attaches through them).
    pub(crate) fn handoffs(&self) -> &Arc<Handoffs<C>> {
        &self.handoffs
    }

    /// Sets the settings.
    #[must_use]
    pub(crate) fn with_config(mut self, config: TaskConfig) -> Self {
        self.config = config;
        self
    }

    /// Platforms a task may name (`platform`): their policy (unattended execution) and
    /// session scope apply.
    #[must_use]
    pub(crate) fn with_platforms(mut self, platforms: Arc<StrategyRegistry<C>>) -> Self {
        self.platforms = Some(platforms);
        self
    }

    /// Sessions stored on the runner (`sessionId`): loaded before a run, the refreshed
    /// state written back after it.
    #[must_use]
    pub(crate) fn with_sessions(mut self, sessions: StoredSessions) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Sends audit events through `audit`.
    #[must_use]
    pub(crate) fn with_audit(mut self, audit: Auditor) -> Self {
        self.ledger.audit = audit.clone();
        self.audit = audit;
        self
    }

    /// Uses `clock` for timestamps and the UTC day.
    #[must_use]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.handoffs = Arc::new(Handoffs::new(Arc::clone(&clock)));
        self.ledger.clock = Arc::clone(&clock);
        self.clock = clock;
        self
    }

    /// Keys the hash an idempotency key is bound to with a runner secret (see
    /// [`request_hash`](abr_core::digest::request_hash)).
    #[must_use]
    pub(crate) fn with_body_hash_key(mut self, key: SecretValue) -> Self {
        self.body_key = Some(key);
        self
    }

    /// The settings.
    pub(crate) fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }
}
