//! A task's run in the browser: acquire, the rails, the target page, each step through
//! the guard, the verification; and a re-check, which only reads.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use abr_core::codes;
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::guard::{
    FrameRecorder, MAX_FRAME_BYTES, OwnSites, PageRedaction, PlatformFrames, ReadOnlySource,
    RedactedFrame, RequestGate, RunGuard, SitePolicy, SiteVerdict,
};
use abr_core::plan::{FilledStep, VERIFICATION_SCREENSHOT, ValidPlan, validate};
use abr_core::provider::{AcquireMode, AcquireRequest, Lease};
use abr_core::scope_io::Scopes;
use abr_core::step_runner::{BrowserAction, StepOutput};
use abr_core::store::StoredTask;
use abr_core::strategy::StrategyPolicy;
use abr_protocol::{
    AgentSessionState, ErrorBody, FramePoint, RecheckAnswer, RecheckResult, StepPlan, StepResult,
    TaskState, TaskVerification,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::error::EngineError;
use crate::poster::ACQUIRING;
use crate::step::{Step, guarded};
use crate::task::kit::RunPolicy;
use crate::task::network::{MarkCommitting, RunNetwork};
use crate::task::outcome::{
    Failure, Outcome, blocked_or, callback_url, ms, network_truth, unscoped_policy,
};
use crate::task::rails;
use crate::task::rails::Rails;
use crate::task::rails::RunProfile;
use crate::task::runner::NO_PLATFORM;
use crate::task::runner::{TaskEnd, TaskRunner};

/// What `keep` keeps a step's output with.
struct Kept<'a> {
    extracted_bytes: &'a mut usize,
    result: &'a mut StepResult,
    /// The run takes screenshots, redacted so.
    evidence: Option<&'a PageRedaction>,
}

/// Whether `page` shows `text`, with runs of whitespace counting as one space.
fn shows(page: &str, text: &str) -> bool {
    let normalize = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    normalize(page).contains(&normalize(text))
}

/// The length of `value` as compact JSON.
fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

/// The escaped length of one character in a JSON string.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `value` cut to at most about `budget` JSON bytes: leading items of an array, leading
/// entries of an object, a prefix of a string; anything else that does not fit is `null`.
fn truncate(value: Value, budget: usize) -> Value {
    match value {
        Value::Array(items) => {
            let mut used = 2;
            let mut kept = Vec::new();
            for item in items {
                let len = json_len(&item) + 1;
                if used + len > budget {
                    break;
                }
                used += len;
                kept.push(item);
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let mut used = 2;
            let mut kept = serde_json::Map::new();
            for (key, item) in map {
                let len = json_len(&item) + key.len() + 4;
                if used + len > budget {
                    break;
                }
                used += len;
                kept.insert(key, item);
            }
            Value::Object(kept)
        }
        Value::String(s) => {
            let mut used = 2;
            let mut end = 0;
            for (i, c) in s.char_indices() {
                let len = escaped_len(c);
                if used + len > budget {
                    break;
                }
                used += len;
                end = i + c.len_utf8();
            }
            if budget < 2 {
                Value::Null
            } else {
                Value::String(s[..end].to_owned())
            }
        }
        other if json_len(&other) <= budget => other,
        _ => Value::Null,
    }
}

impl<C: TaskContext> TaskRunner<C> {
    // ---- run ------------------------------------------------------------------------------

    /// Runs a queued task, once: `queued → running` is a compare-and-swap, so of two calls
    /// one runs and the other is [`EngineError::TaskNotQueued`]. Every step result is saved
    /// as it happens; the lease and the tenant's session are always given back.
    ///
    /// Outcome rows: the verification proved it → `succeeded`; a step failed, timed out or
    /// panicked before any committing step started → `failed` (retryable, `failedStep`);
    /// from the first committing step on ([`commit_class`](abr_core::guard::commit_class), the failing step included) →
    /// `uncertain`; the site signed the browser out before any committing step →
    /// `needs_reauth`; a verification that fails or cannot run → `uncertain` after a
    /// committing step, else `failed`; `api_callback` verification → `uncertain` after a
    /// committing step (the orchestrator proves it), else `succeeded`.
    ///
    /// # Errors
    /// An unknown task, [`EngineError::TaskNotQueued`], or a store failure when the final
    /// record could not be saved (the outcome is then in the store's last saved progress;
    /// [`Self::recover_unfinished`] ends it after a restart).
    pub(crate) async fn run(&self, tenant: &str, task_id: &str) -> Result<TaskEnd, EngineError> {
        let span = tracing::info_span!(
            target: crate::TRACE_TARGET,
            "task.run",
            otel.name = "task run",
            task_id,
            tenant,
            state = tracing::field::Empty,
            failed_step = tracing::field::Empty,
        );
        let ended = self
            .run_traced(tenant, task_id)
            .instrument(span.clone())
            .await;
        if let Ok(end) = &ended {
            if let Ok(Value::String(state)) = serde_json::to_value(end.record.state) {
                span.record("state", state);
            }
            if let Some(step) = end.record.failed_step {
                span.record("failed_step", step);
            }
        }
        ended
    }

    async fn run_traced(&self, tenant: &str, task_id: &str) -> Result<TaskEnd, EngineError> {
        let mut task = self.load(tenant, task_id).await?;
        if task.record.state != TaskState::Queued {
            return Err(EngineError::TaskNotQueued);
        }
        task.record.state = TaskState::Running;
        task.record.started_at = Some(self.clock.now());
        if !self.save(&mut task).await? {
            return Err(EngineError::TaskNotQueued);
        }
        self.announce_started(&task);
        let started = Instant::now();
        let outcome = self.execute(&mut task).await;
        outcome.apply(&mut task.record);
        task.record.finished_at = Some(self.clock.now());
        // The browser is closed: its session is the tenant's again before anyone can read the
        // end (a caller told "succeeded" may start the next one at once).
        self.release_session(tenant).await;
        let saved = self.save_end(&mut task).await;
        self.audit_run(&task, ms(started));
        self.announce_end(&task);
        match saved {
            Ok(true) => Ok(TaskEnd {
                callback_url: callback_url(&task),
                record: task.record,
            }),
            Ok(false) => Err(EngineError::from(CoreError::Store(StoreFailure::conflict(
                "the task record changed while the task ran",
            )))),
            Err(e) => Err(e),
        }
    }

    /// Everything between `running` and the outcome.
    async fn execute(&self, task: &mut StoredTask) -> Outcome {
        // The plan that runs, filled with the values, on the session and under the platform
        // that were approved, or nothing runs.
        let approved = match self
            .approval_subject(&task.ledger.tenant_id, &task.request)
            .await
        {
            Ok(subject) => subject.hash == task.record.plan_hash,
            Err(e) => return Outcome::not_started(e.to_body()),
        };
        if task.record.approval.is_none() || !approved {
            return Outcome::not_started(ErrorBody::new(
                codes::PLAN_NOT_APPROVED,
                "the stored plan, its values, its session or its platform are not the approved \
                 ones: nothing ran",
            ));
        }
        let valid = match validate(&task.request.plan, &task.request.inputs, &self.config.plan) {
            Ok(valid) => valid,
            Err(e) => {
                return Outcome::Failed {
                    step: e.step(),
                    error: CoreError::InvalidPlan(e).to_body(),
                };
            }
        };
        let mut steps = match valid.fill(&task.request.inputs) {
            Ok(steps) => steps,
            Err(e) => {
                return Outcome::Failed {
                    step: e.step(),
                    error: CoreError::InvalidPlan(e).to_body(),
                };
            }
        };
        // The uploads' files, read before any browser starts: one deleted or expired since
        // the task was created ends it with nothing done.
        let tenant = &task.ledger.tenant_id;
        if let Err(e) = self
            .fill_uploads(tenant, &task.request.plan, &mut steps)
            .await
        {
            return Outcome::not_started(e.to_body());
        }
        let RunPolicy {
            policy,
            extra,
            platform,
            state,
            profile,
        } = match self
            .resolve_policy(&task.ledger.tenant_id, &task.request, NO_PLATFORM)
            .await
        {
            Ok(resolved) => resolved,
            Err(e) => return Outcome::not_started(e.to_body()),
        };
        let mut rails = match self
            .rails(
                task,
                valid.plan().read_only,
                valid.target_url().as_str(),
                &steps,
                policy.as_ref(),
                state.is_some(),
            )
            .await
        {
            Ok(rails) => rails,
            Err((step, failure)) => return Outcome::interrupted(false, step, failure),
        };
        if profile.is_some() {
            // A profile is its owner's signed-in browser: the run never signs in itself.
            rails.rules.may_sign_in = false;
            rails.profile.clone_from(&profile);
        }
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let lease = match self
            .acquire(&platform, state, scopes, profile.as_ref())
            .await
        {
            Ok(lease) => lease,
            Err(e) => return Outcome::not_started(e.to_body().retryable(true)),
        };
        let armed = match self.arm(&rails, &lease).await {
            Ok(()) => self.catch_downloads(valid.plan(), &lease).await,
            Err(failure) => Err(failure),
        };
        let outcome = match armed {
            Ok(()) => self.drive(task, &valid, &steps, &lease, &mut rails).await,
            Err(failure) => Outcome::interrupted(false, None, failure),
        };
        // What the last steps and the verification downloaded.
        let last = task.record.step_results.len().checked_sub(1);
        self.keep_downloads(task, lease.context(), last).await;
        // From here on nothing the page sends leaves: the outcome is decided.
        rails.network.close();
        if let Err(failure) = self.late_network(task, &mut rails, &lease).await {
            tracing::warn!(code = %failure.body.code, "the network after the run");
        }
        let outcome = network_truth(outcome, rails.network.committed());
        // Taken beside the write-back, which only reads the browser's state.
        rails.completion_frame(&lease);
        if !matches!(outcome, Outcome::NeedsReauth { .. })
            && let Some(session_id) = task.request.session_id.clone()
        {
            self.write_back(
                &task.ledger.tenant_id,
                &session_id,
                &lease,
                &platform,
                scopes,
            )
            .await;
        }
        if let Some(profile) = &profile {
            self.refresh_profile(&task.ledger.tenant_id, profile, &lease)
                .await;
        }
        rails.settle_frames().await;
        self.release(lease).await;
        outcome
    }

    /// Has the page's downloads kept when the approved plan asks (`downloads: true`);
    /// otherwise they stay refused. `Err`: the browser cannot keep them, and the run ends
    /// there, having done nothing.
    async fn catch_downloads(&self, plan: &StepPlan, lease: &Lease<C>) -> Result<(), Failure> {
        let Some(artifacts) = self.artifacts.as_ref().filter(|_| plan.downloads) else {
            return Ok(());
        };
        match guarded(
            self.config.default_step_timeout,
            lease.context().catch_downloads(artifacts.download_limits()),
        )
        .await
        {
            Step::Done(()) => Ok(()),
            Step::Error(e) => Err(Failure::new(
                abr_protocol::codes::PROVIDER_UNSUPPORTED.code,
                e.message,
            )),
            Step::TimedOut | Step::Panicked => Err(Failure::new(
                abr_protocol::codes::PROVIDER_UNSUPPORTED.code,
                "the browser could not keep the page's downloads",
            )),
        }
    }

    /// Keeps what the page downloaded since the last call as artifacts of the task's
    /// tenant, each listed in the record's `downloads` (kept, or refused with why).
    pub(super) async fn keep_downloads(
        &self,
        task: &mut StoredTask,
        context: &C,
        step: Option<usize>,
    ) {
        // A plan that does not keep downloads has none caught: nothing to ask the page.
        let Some(artifacts) = self
            .artifacts
            .as_ref()
            .filter(|_| task.request.plan.downloads)
        else {
            return;
        };
        for caught in context.take_downloads() {
            let record = artifacts
                .keep_download(&task.ledger.tenant_id, task.id(), step, caught)
                .await;
            task.record.downloads.push(record);
        }
    }

    /// A fresh browser for an unattended run on `platform`, with `state` scoped by `scopes`.
    pub(super) async fn acquire(
        &self,
        platform: &str,
        state: Option<AgentSessionState>,
        scopes: Scopes<'_>,
        profile: Option<&RunProfile>,
    ) -> Result<Lease<C>, EngineError> {
        let request = AcquireRequest {
            profile: profile.map(|p| p.folder.clone()),
            mode: AcquireMode::Unattended,
            platform: platform.to_owned(),
            state: state.map(|s| scopes.apply(&s).0),
            start_url: None,
        };
        let span = tracing::debug_span!(target: crate::TRACE_TARGET, "acquire", platform);
        guarded(self.config.acquire_timeout, self.provider.acquire(request))
            .instrument(span)
            .await
            .provider(ACQUIRING)
    }

    /// The rails of a run, decided before any browser starts: read-only (from the platform
    /// or the approved plan, never the request), dry run (the request), the tenant's sites
    /// plus the plan's own hosts. A plan that would open a denied site stops here, at that
    /// step, with nothing opened.
    pub(super) async fn rails(
        &self,
        task: &mut StoredTask,
        plan_read_only: bool,
        target_url: &str,
        steps: &[FilledStep],
        policy: Option<&StrategyPolicy>,
        has_session: bool,
    ) -> Result<Rails, (Option<usize>, Failure)> {
        let mut rails = self
            .unrecorded_rails(task, plan_read_only, target_url, steps, policy, has_session)
            .await?;
        let platform_frames = policy.map_or_else(PlatformFrames::on, StrategyPolicy::frames);
        if let Some(store) = &self.frames {
            match FrameRecorder::begin(
                Arc::clone(store),
                Arc::clone(&self.clock),
                &task.ledger.tenant_id,
                &task.record.task_id,
                &platform_frames,
            )
            .await
            {
                Ok((recorder, setting)) => {
                    task.record.replay = Some(setting);
                    rails.evidence = recorder
                        .is_on()
                        .then(|| Arc::clone(&platform_frames.redaction));
                    rails.frames = Some(recorder);
                }
                Err(e) => return Err((None, Failure::store(e.to_body()))),
            }
        }
        Ok(rails)
    }

    /// [`Self::rails`] without the run's replay frames: its evidence as the platform
    /// takes it (a preview's dry run, which records nothing of its own).
    pub(super) async fn unrecorded_rails(
        &self,
        task: &mut StoredTask,
        plan_read_only: bool,
        target_url: &str,
        steps: &[FilledStep],
        policy: Option<&StrategyPolicy>,
        has_session: bool,
    ) -> Result<Rails, (Option<usize>, Failure)> {
        let read_only = if policy.is_some_and(|p| p.read_only) {
            Some(ReadOnlySource::Platform)
        } else if plan_read_only {
            Some(ReadOnlySource::Plan)
        } else {
            None
        };
        task.record.read_only = read_only.is_some();
        task.record.dry_run = task.request.dry_run;
        let wait = match task.request.handoff {
            None => None,
            Some(h) => {
                let wait = Duration::from_secs(h.wait_seconds);
                if h.wait_seconds == 0 || wait > self.config.max_handoff_wait {
                    return Err((
                        None,
                        Failure::refusal(
                            abr_protocol::codes::INVALID_REQUEST.code,
                            format!(
                                "handoff.waitSeconds is 1 to {}",
                                self.config.max_handoff_wait.as_secs()
                            ),
                        ),
                    ));
                }
                Some(wait)
            }
        };
        let mut sites = match &self.sites {
            None => SitePolicy::default(),
            Some(store) => match store.sites(&task.ledger.tenant_id).await {
                Ok(entries) => SitePolicy::new(entries.into_iter().map(|e| (e.domain, e.decision))),
                Err(e) => return Err((None, Failure::store(e.to_body()))),
            },
        };
        let mut hosts = vec![(None, rails::host_of(target_url))];
        for (i, step) in steps.iter().enumerate() {
            if let BrowserAction::Navigate { url } = &step.action {
                hosts.push((Some(i), rails::host_of(url.as_str())));
            }
        }
        if self.sites.is_some() {
            for (_, host) in &hosts {
                sites = sites.with_run_site(host);
            }
            if let Some((step, _)) = hosts
                .iter()
                .find(|(_, host)| sites.verdict(host) == SiteVerdict::Denied)
            {
                return Err((
                    *step,
                    Failure::refusal(
                        codes::SITE_DENIED,
                        "the plan opens a site the tenant denied (or one outside its allow \
                         list): nothing was opened",
                    ),
                ));
            }
        } else {
            // No site store: every site is allowed.
            sites = SitePolicy::open();
        }
        let platform_frames = policy.map_or_else(PlatformFrames::on, StrategyPolicy::frames);
        let guard = RunGuard::new(read_only, task.request.dry_run)
            .with_platform(policy.and_then(|p| p.guard.as_ref()));
        let network = self.run_network(task, &guard, target_url, steps, policy);
        let mut rails = Rails::new(guard, network, has_session, sites, wait);
        rails.evidence = platform_frames
            .enabled
            .then(|| Arc::clone(&platform_frames.redaction));
        Ok(rails)
    }

    /// The gate below the page of `task`'s run: the platform's network rules; the run's own
    /// sites (the target's, the plan's navigations', the scope's domains); refusing every
    /// write when `guard` refuses commits, else marking the task in the store before its
    /// first write leaves.
    fn run_network(
        &self,
        task: &StoredTask,
        guard: &RunGuard,
        target_url: &str,
        steps: &[FilledStep],
        policy: Option<&StrategyPolicy>,
    ) -> Arc<RunNetwork> {
        let mut own = OwnSites::default();
        own.add_url(target_url);
        for step in steps {
            if let BrowserAction::Navigate { url } = &step.action {
                own.add_url(url.as_str());
            }
        }
        let scope_domains = policy
            .and_then(|p| p.scope.as_ref())
            .map(|s| s.cookie_domains().to_vec())
            .unwrap_or_default();
        let request_domains = task
            .request
            .scope
            .as_ref()
            .map(|s| s.cookie_domains.clone())
            .unwrap_or_default();
        for domain in scope_domains.iter().chain(&request_domains) {
            own.add_host(domain);
        }
        let rules = policy.map(|p| p.network.clone()).unwrap_or_default();
        let ledger = self.ledger.clone();
        let (tenant, id) = (task.ledger.tenant_id.clone(), task.record.task_id.clone());
        let mark: MarkCommitting = Arc::new(move || {
            let (ledger, tenant, id) = (ledger.clone(), tenant.clone(), id.clone());
            Box::pin(async move { ledger.mark(&tenant, &id).await })
        });
        RunNetwork::new(rules, own, guard.refuses(), mark)
    }

    /// Arms the browser: the network gate (and the relayed request's commit watch), and the
    /// site filter when the tenant has decisions.
    pub(super) async fn arm(&self, rails: &Rails, lease: &Lease<C>) -> Result<(), Failure> {
        rails.network.set_watch(crate::commit_watch::current());
        let gate: Arc<dyn RequestGate> = rails.network.clone();
        match guarded(
            self.config.default_step_timeout,
            lease.context().guard_network(gate),
        )
        .await
        {
            Step::Done(()) => {}
            Step::Error(e) => return Err(Failure::from_step(e)),
            Step::TimedOut | Step::Panicked => {
                return Err(Failure::new(
                    codes::STEP_REJECTED,
                    "the browser could not install the network gate",
                ));
            }
        }
        if self.sites.is_none() || !rails.sites.has_entries() {
            return Ok(());
        }
        let filter: Arc<dyn abr_core::guard::SiteFilter> = rails.sites.clone();
        match guarded(
            self.config.default_step_timeout,
            lease.context().filter_sites(filter),
        )
        .await
        {
            Step::Done(()) => Ok(()),
            Step::Error(e) => Err(Failure::from_step(e)),
            Step::TimedOut | Step::Panicked => Err(Failure::new(
                codes::STEP_REJECTED,
                "the browser could not install the site filter",
            )),
        }
    }

    /// Opens the plan's target URL before its first step, with its frame and the page read
    /// after it (once more after a person cleared an error page that may be a block).
    /// `Err`: the run ends there, having done nothing.
    async fn open_target(
        &self,
        task: &mut StoredTask,
        target: &BrowserAction,
        steps: &[FilledStep],
        lease: &Lease<C>,
        rails: &mut Rails,
    ) -> Result<(), Outcome> {
        let context = lease.context();
        let mut reopened = false;
        loop {
            match self
                .step(context, target, self.config.default_step_timeout)
                .await
            {
                Ok(_) => break,
                Err(failure) if failure.body.code == codes::NAVIGATION_FAILED && !reopened => {
                    reopened = true;
                    // An error page may be a block (a 403, a bot check): read it, and open
                    // the page again after a person cleared it.
                    match self.checkpoint(task, rails, lease, None, None).await {
                        Ok(true) => {}
                        Ok(false) => return Err(Outcome::interrupted(false, None, failure)),
                        Err(failure) => return Err(Outcome::interrupted(false, None, failure)),
                    }
                }
                Err(failure) => return Err(Outcome::interrupted(false, None, failure)),
            }
        }
        rails.frame_behind(lease, FramePoint::Navigation, "navigate");
        self.checkpoint(task, rails, lease, None, look_ahead(steps, 0))
            .await
            .map(|_| ())
            .map_err(|failure| Outcome::interrupted(false, None, failure))
    }

    /// The browser part of a run: the target URL, the steps (each through the guard, with a
    /// checkpoint after it), the verification.
    async fn drive(
        &self,
        task: &mut StoredTask,
        valid: &ValidPlan,
        steps: &[FilledStep],
        lease: &Lease<C>,
        rails: &mut Rails,
    ) -> Outcome {
        let context = lease.context();
        let target = BrowserAction::Navigate {
            url: valid.target_url().clone(),
        };
        // A plan whose first step opens its target URL is not made to load it twice: that
        // step opens it (with its frame and the page read after it).
        let opens_itself = steps.first().is_some_and(|step| step.action == target);
        if !opens_itself
            && let Err(outcome) = self.open_target(task, &target, steps, lease, rails).await
        {
            return outcome;
        }
        let mut committed = false;
        let mut extracted_bytes = 0;
        for (index, (filled, planned)) in steps.iter().zip(&valid.plan().steps).enumerate() {
            // What the page sent since the last step ended (a timer, a script the last
            // action started) is that step's.
            if let Err(failure) = self.late_network(task, rails, lease).await {
                let committed = committed || rails.network.committed();
                return Outcome::interrupted(committed, index.checked_sub(1), failure);
            }
            committed |= rails.network.committed();
            let timeout = planned
                .timeout_ms
                .map_or(self.config.default_step_timeout, Duration::from_millis);
            let started = Instant::now();
            let at = self.clock.now();
            let url = rails::shown_url(&rails.last_url);
            // A frame still being taken goes on beside a step that only reads the page.
            if !rails::reads_only(&filled.action) {
                rails.settle_frames().await;
            }
            let span = tracing::debug_span!(
                target: crate::TRACE_TARGET,
                "step",
                otel.name = format!("step {index} {}", filled.action.kind()),
                index,
                action = filled.action.kind(),
                ok = tracing::field::Empty,
                committing = tracing::field::Empty,
            );
            let done = if matches!(filled.action, BrowserAction::Screenshot) {
                // Evidence, not an action: a redacted frame kept below (`keep`).
                Ok((StepOutput::Done, false))
            } else {
                self.guarded_step(task, rails, lease, index, &filled.action, timeout)
                    .instrument(span.clone())
                    .await
            };
            let mut committing = match &done {
                Ok((_, committing)) | Err((_, committing)) => *committing,
            };
            committed |= committing;
            // A write seen while this step only read or waited is the last acting step's.
            if committing
                && !rails::acts(&filled.action)
                && let Some(owner) = rails
                    .writes_owner
                    .and_then(|i| task.record.step_results.get_mut(i))
            {
                owner.committing = true;
                committing = false;
            }
            let mut result = StepResult {
                index,
                action: filled.action.kind().to_owned(),
                ok: true,
                committing,
                ms: 0,
                error: None,
                at: Some(at),
                target: rails.acted_on.take(),
                url,
                typed_chars: filled.action.typed_chars(),
            };
            let failure = match done {
                Ok((output, _)) => {
                    let kept = Kept {
                        extracted_bytes: &mut extracted_bytes,
                        result: &mut result,
                        evidence: rails.evidence.as_deref(),
                    };
                    self.keep(task, context, filled, output, kept).await
                }
                Err((failure, _)) => Some(failure),
            };
            result.ms = ms(started);
            if let Some(failure) = &failure {
                result.ok = false;
                result.error = Some(failure.body.clone());
                // Not done: nothing was typed that counts.
                result.typed_chars = None;
            }
            span.record("ok", result.ok);
            span.record("committing", result.committing);
            drop(span);
            self.announce_step(task, &result, true);
            task.record.step_results.push(result);
            if rails::acts(&filled.action) {
                rails.writes_owner = task.record.step_results.len().checked_sub(1);
                rails.acted_since_frame = true;
            }
            self.keep_downloads(task, context, Some(index)).await;
            let saved = self.save_progress(task).await;
            if let Err(failure) = saved {
                return Outcome::interrupted(committed, Some(index), failure);
            }
            match failure {
                // A refused action is a wasted step: the run goes on with the next one.
                Some(f) if f.body.code == codes::BLOCKED_ACTION => continue,
                Some(failure) => return blocked_or(task, committed, Some(index), failure),
                None => {}
            }
            if let Some(point) = rails::frame_point(&filled.action)
                && !rails::left_to_completion(point, steps.get(index + 1..).unwrap_or_default())
            {
                rails.frame_behind(lease, point, filled.action.kind());
            }
            if rails::may_change_page(&filled.action)
                && let Err(failure) = self
                    .checkpoint(
                        task,
                        rails,
                        lease,
                        Some(index + 1),
                        look_ahead(steps, index + 1),
                    )
                    .await
            {
                return Outcome::interrupted(committed, Some(index), failure);
            }
        }
        if let Err(failure) = self.late_network(task, rails, lease).await {
            let committed = committed || rails.network.committed();
            return Outcome::interrupted(committed, steps.len().checked_sub(1), failure);
        }
        committed |= rails.network.committed();
        if let Some(first) = task.record.blocked.first() {
            // Nothing is proven by verifying a run whose commits were refused.
            return Outcome::Failed {
                step: first.step,
                error: ErrorBody::new(
                    codes::BLOCKED_ACTION,
                    format!(
                        "{} committing action(s) refused (see `blocked`); the run did every \
                         other step and committed nothing",
                        task.record.blocked.len()
                    ),
                ),
            };
        }
        // A DOM check only reads the page; a verification screenshot is a frame of its own.
        if !matches!(valid.plan().verification, TaskVerification::DomCheck { .. }) {
            rails.settle_frames().await;
        }
        let span = tracing::debug_span!(target: crate::TRACE_TARGET, "verify");
        self.verify(task, valid, context, committed, rails.evidence.as_deref())
            .instrument(span)
            .await
    }

    /// What the network did since the last step ended, put on the result of the last step
    /// that acted ([`Rails::writes_owner`](rails::Rails), else the last step) and the
    /// record's `blocked`: a refusal there makes it a refused step, a write makes it
    /// committing. Before the first step, a write still counts for the outcome
    /// ([`RunNetwork::committed`]). `Err`: a write could not be announced or marked (it
    /// never left the browser), and the run stops.
    pub(super) async fn late_network(
        &self,
        task: &mut StoredTask,
        rails: &mut Rails,
        lease: &Lease<C>,
    ) -> Result<(), Failure> {
        let last = rails
            .writes_owner
            .or_else(|| task.record.step_results.len().checked_sub(1));
        let index = last.unwrap_or(0);
        let outcome = self.network_after(task, rails, lease, index).await;
        let Some(result) = last.and_then(|i| task.record.step_results.get_mut(i)) else {
            // Before any step: the first step is the one the page's load belongs to.
            return match outcome {
                Err(failure) if failure.body.code == codes::BLOCKED_ACTION => {
                    for blocked in &mut task.record.blocked {
                        blocked.step = None;
                    }
                    Ok(())
                }
                other => other.map(|_| ()),
            };
        };
        match outcome {
            Ok(false) => return Ok(()),
            Ok(true) => result.committing = true,
            Err(failure) if failure.body.code == codes::BLOCKED_ACTION => {
                result.ok = false;
                result.error = Some(failure.body);
            }
            Err(failure) => return Err(failure),
        }
        self.save_progress(task).await
    }

    /// Keeps what a step produced (extracted data, a screenshot) and checks what it
    /// answered (an `assert`).
    async fn keep(
        &self,
        task: &mut StoredTask,
        context: &C,
        filled: &FilledStep,
        output: StepOutput,
        kept: Kept<'_>,
    ) -> Option<Failure> {
        let Kept {
            extracted_bytes,
            result,
            evidence,
        } = kept;
        match &filled.action {
            BrowserAction::Extract { .. } => {
                let name = filled.name.clone().unwrap_or_default();
                let value = match output {
                    StepOutput::Extracted(value) => value,
                    _ => Value::Null,
                };
                let cap = self.config.extract_cap_bytes;
                let overhead = name.len() + 4;
                let size = json_len(&value).saturating_add(overhead);
                // Two bytes for the braces of the extracted map.
                let room = cap.saturating_sub(2).saturating_sub(*extracted_bytes);
                let value = if size <= room {
                    value
                } else {
                    let cut = truncate(value, room.saturating_sub(overhead));
                    result.error = Some(ErrorBody::new(
                        codes::EXTRACT_TRUNCATED,
                        format!(
                            "the extracted data is over the task's cap of {cap} bytes: \
                             {} of {size} bytes kept",
                            json_len(&cut) + overhead
                        ),
                    ));
                    cut
                };
                *extracted_bytes += json_len(&value) + overhead;
                task.record.extracted.insert(name, value);
                None
            }
            BrowserAction::Screenshot => {
                let name = filled.name.clone().unwrap_or_default();
                match self.evidence(task, context, &name, evidence).await {
                    Ok(()) => None,
                    Err(note) => {
                        // Evidence that could not be taken is said, not fatal.
                        result.error = Some(note);
                        None
                    }
                }
            }
            BrowserAction::Assert { .. } => match output {
                StepOutput::Checked(true) => None,
                StepOutput::Checked(false) => Some(Failure::new(
                    codes::ASSERTION_FAILED,
                    "the step's DOM check did not hold",
                )),
                _ => Some(Failure::new(
                    codes::STEP_REJECTED,
                    "the browser did not answer the DOM check",
                )),
            },
            _ => None,
        }
    }

    /// A redacted frame of `context`'s page within the verification's deadline; `Err`: why
    /// none was taken.
    pub(super) async fn frame_of(
        &self,
        context: &C,
        redaction: &PageRedaction,
    ) -> Result<RedactedFrame, String> {
        let timeout = self.config.verify_timeout;
        match guarded(
            timeout + self.config.step_grace,
            context.redacted_frame(MAX_FRAME_BYTES, redaction, timeout),
        )
        .await
        {
            Step::Done(frame) => Ok(frame),
            Step::Error(e) => Err(e.to_string()),
            Step::TimedOut | Step::Panicked => Err("the browser did not take it in time".into()),
        }
    }

    /// A screenshot of the page kept as the task's evidence under `name`: a redacted frame
    /// (every field blurred and the blur confirmed, as every replay frame), only when the
    /// run takes screenshots. `Err`: the note why none was kept (screenshots off, or the
    /// blur could not be confirmed, or the store refused it).
    async fn evidence(
        &self,
        task: &mut StoredTask,
        context: &C,
        name: &str,
        on: Option<&PageRedaction>,
    ) -> Result<(), ErrorBody> {
        let Some(redaction) = on else {
            return Err(ErrorBody::new(
                codes::SCREENSHOT_NOT_TAKEN,
                "screenshots are off for this tenant or platform: none was taken",
            ));
        };
        let frame = self.frame_of(context, redaction).await.map_err(|why| {
            ErrorBody::new(
                codes::SCREENSHOT_NOT_TAKEN,
                format!("no screenshot was kept: {why}"),
            )
        })?;
        self.store
            .put_screenshot(
                &task.ledger.tenant_id,
                &task.record.task_id,
                name,
                frame.jpeg,
            )
            .await
            .map_err(|e| {
                ErrorBody::new(
                    codes::SCREENSHOT_NOT_TAKEN,
                    format!("no screenshot was kept: {e}"),
                )
            })?;
        task.record.screenshots.push(name.to_owned());
        Ok(())
    }

    /// The verification, after the last step.
    async fn verify(
        &self,
        task: &mut StoredTask,
        valid: &ValidPlan,
        context: &C,
        committed: bool,
        evidence: Option<&PageRedaction>,
    ) -> Outcome {
        let timeout = self.config.verify_timeout;
        match &valid.plan().verification {
            TaskVerification::DomCheck { check } => {
                let action = BrowserAction::Assert {
                    check: check.clone(),
                };
                match self.step(context, &action, timeout).await {
                    Ok(StepOutput::Checked(true)) => Outcome::Succeeded,
                    Ok(_) => Outcome::interrupted(
                        committed,
                        None,
                        Failure::new(
                            codes::VERIFICATION_FAILED,
                            "the verification's DOM check did not hold",
                        ),
                    ),
                    Err(failure) => Outcome::interrupted(committed, None, failure),
                }
            }
            TaskVerification::Screenshot { text } => {
                // The image is evidence (redacted, only with screenshots on); the proof is
                // the text the page shows.
                if let Err(note) = self
                    .evidence(task, context, VERIFICATION_SCREENSHOT, evidence)
                    .await
                {
                    tracing::info!(code = %note.code, "verification screenshot not kept");
                }
                match self.page_text(context).await {
                    Ok(page) if shows(&page, text) => Outcome::Succeeded,
                    Ok(_) => Outcome::interrupted(
                        committed,
                        None,
                        Failure::new(
                            codes::VERIFICATION_FAILED,
                            "the page does not show the verification's text",
                        ),
                    ),
                    Err(failure) => Outcome::interrupted(committed, None, failure),
                }
            }
            TaskVerification::ApiCallback { .. } if committed => Outcome::Uncertain {
                step: None,
                error: ErrorBody::new(
                    codes::VERIFIED_BY_CALLBACK,
                    "a committing step ran and the runner cannot prove the outcome itself: \
                     the orchestrator proves it from the record posted to its callback URL",
                ),
            },
            // Every step ran and none could commit: there is nothing else to prove.
            TaskVerification::ApiCallback { .. } => Outcome::Succeeded,
        }
    }

    async fn page_text(&self, context: &C) -> Result<String, Failure> {
        let timeout = self.config.verify_timeout;
        match guarded(timeout + self.config.step_grace, context.page_text(timeout)).await {
            Step::Done(text) => Ok(text),
            Step::Error(failure) => Err(Failure::from_step(failure)),
            Step::TimedOut => Err(Failure::new(
                codes::STEP_TIMEOUT,
                "reading the page's text did not finish in time",
            )),
            Step::Panicked => Err(Failure::new(
                codes::STEP_PANICKED,
                "the browser failed unexpectedly reading the page's text",
            )),
        }
    }

    pub(super) async fn release(&self, lease: Lease<C>) {
        let span = tracing::debug_span!(target: crate::TRACE_TARGET, "release");
        match tokio::time::timeout(self.config.release_timeout, lease.release())
            .instrument(span)
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing the browser failed"),
            Err(_) => tracing::warn!("releasing the browser timed out"),
        }
    }

    pub(super) async fn recheck_in_browser(&self, task: &StoredTask) -> RecheckResult {
        let unavailable = |error: ErrorBody| RecheckResult {
            answer: RecheckAnswer::Unavailable,
            error: Some(error),
        };
        let valid = match validate(&task.request.plan, &task.request.inputs, &self.config.plan) {
            Ok(valid) => valid,
            Err(e) => return unavailable(CoreError::InvalidPlan(e).to_body()),
        };
        let RunPolicy {
            policy,
            extra,
            platform,
            state,
            profile,
        } = match self
            .resolve_policy(&task.ledger.tenant_id, &task.request, NO_PLATFORM)
            .await
        {
            Ok(resolved) => resolved,
            Err(e) => return unavailable(e.to_body()),
        };
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let lease = match self
            .acquire(&platform, state, scopes, profile.as_ref())
            .await
        {
            Ok(lease) => lease,
            Err(e) => return unavailable(e.to_body().retryable(true)),
        };
        let context = lease.context();
        // A re-check only reads: below the page, nothing but reads leaves its browser.
        let network = self.run_network(
            task,
            &RunGuard::new(Some(ReadOnlySource::Plan), false),
            valid.target_url().as_str(),
            &[],
            policy.as_ref(),
        );
        let gate: Arc<dyn RequestGate> = network;
        if let Step::Error(_) | Step::TimedOut | Step::Panicked = guarded(
            self.config.default_step_timeout,
            context.guard_network(gate),
        )
        .await
        {
            self.release(lease).await;
            return unavailable(ErrorBody::new(
                codes::STEP_REJECTED,
                "the browser could not install the read-only network gate",
            ));
        }
        let target = BrowserAction::Navigate {
            url: valid.target_url().clone(),
        };
        let result = match self
            .step(context, &target, self.config.default_step_timeout)
            .await
        {
            Err(failure) => unavailable(failure.body),
            Ok(_) => self.recheck_verification(&valid, context).await,
        };
        self.release(lease).await;
        result
    }

    async fn recheck_verification(&self, valid: &ValidPlan, context: &C) -> RecheckResult {
        let answer = |answer, error| RecheckResult { answer, error };
        let not_found = |message: &str| {
            answer(
                RecheckAnswer::NotFound,
                Some(ErrorBody::new(codes::VERIFICATION_FAILED, message)),
            )
        };
        match &valid.plan().verification {
            TaskVerification::DomCheck { check } => {
                let action = BrowserAction::Assert {
                    check: check.clone(),
                };
                match self
                    .step(context, &action, self.config.verify_timeout)
                    .await
                {
                    Ok(StepOutput::Checked(true)) => answer(RecheckAnswer::Confirmed, None),
                    Ok(_) => not_found("the verification's DOM check did not hold"),
                    Err(failure) => answer(RecheckAnswer::Unavailable, Some(failure.body)),
                }
            }
            TaskVerification::Screenshot { text } => match self.page_text(context).await {
                Ok(page) if shows(&page, text) => answer(RecheckAnswer::Confirmed, None),
                Ok(_) => not_found("the page does not show the verification's text"),
                Err(failure) => answer(RecheckAnswer::Unavailable, Some(failure.body)),
            },
            TaskVerification::ApiCallback { .. } => answer(RecheckAnswer::Ambiguous, None),
        }
    }
}

/// The action of step `index` when it acts on an element: what the checkpoint before it
/// reads with the page.
fn look_ahead(steps: &[FilledStep], index: usize) -> Option<&BrowserAction> {
    steps
        .get(index)
        .map(|step| &step.action)
        .filter(|action| rails::target(action).is_some())
}
