//! The run kit every task service shares: a task's record loaded and saved, the policy of
//! the platform it runs under, the tenant's admission (a session held, an execution of the
//! day counted) and what the audit is told. It calls nothing above it: the task lifecycle,
//! plan runs and browse sessions call it.

use std::sync::Arc;
use tracing::Instrument as _;

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome, AuditStep};
use abr_core::context::TaskContext;
use abr_core::digest::approval_hash;
use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
use abr_core::plan::shown_inputs;
use abr_core::provider::Lease;
use abr_core::scope::SessionScope;
use abr_core::scope_io;
use abr_core::scope_io::Scopes;
use abr_core::store::{Counter, CounterStore, LedgerRecord, StoredTask};
use abr_core::strategy::StrategyPolicy;
use abr_protocol::{AgentSessionState, InputShown, TaskAccount, TaskRequest};

use crate::admission::TenantAdmission;
use crate::error::EngineError;
use crate::step::{Step, guarded};
use crate::stored_sessions::StoredSessions;
use crate::task::outcome::{Failure, audit_outcome};
use crate::task::runner::TaskRunner;

impl<C: TaskContext> TaskRunner<C> {
    /// The stored task `task_id` of `tenant`: its record and its request.
    ///
    /// # Errors
    /// [`abr_core::error::CoreError::TaskNotFound`] (also for another tenant's id), a
    /// store failure.
    pub(crate) async fn load(
        &self,
        tenant: &str,
        task_id: &str,
    ) -> Result<StoredTask, EngineError> {
        self.ledger.load(tenant, task_id).await
    }

    /// Compare-and-swap; on success the in-memory copy follows the stored version.
    pub(super) async fn save(&self, task: &mut StoredTask) -> Result<bool, EngineError> {
        self.ledger.save(task).await
    }

    /// Saves a task's end, patient with a store unavailable for a while
    /// ([`Ledger::save_end`](crate::ledger::Ledger::save_end)).
    pub(super) async fn save_end(&self, task: &mut StoredTask) -> Result<bool, EngineError> {
        self.ledger.save_end(task).await
    }

    /// What the approver of `request` sees besides its steps (the values they are filled
    /// with, secrets masked; whose session it runs with and under which platform) and the
    /// hash that binds all of it with the plan ([`approval_hash`]): the record's
    /// `planHash`, which an approval must name and a run must still match.
    ///
    /// # Errors
    /// `secretInputs` naming an input not given, an unknown `sessionId`, a store failure.
    pub(super) async fn approval_subject(
        &self,
        tenant: &str,
        request: &TaskRequest,
    ) -> Result<ApprovalSubject, EngineError> {
        let inputs = shown_inputs(&request.inputs, &request.secret_inputs)?;
        let session_platform = match &request.session_id {
            Some(_) => match self.session_state(tenant, request).await? {
                Some(stored) => self.bound_platform(&stored)?.map(|(name, _)| name),
                None => None,
            },
            None => None,
        };
        let sent_session_sites = request.session.as_ref().map(|session| {
            let mut sites: Vec<String> = session
                .cookies
                .iter()
                .map(|c| c.domain.trim_start_matches('.').to_ascii_lowercase())
                .collect();
            sites.sort();
            sites.dedup();
            sites
        });
        let account = TaskAccount {
            profile: request.profile.clone(),
            session_id: request.session_id.clone(),
            sent_session_sites,
            platform: request.platform.clone(),
            session_platform,
        };
        let account = (account != TaskAccount::default()).then_some(account);
        let hash = approval_hash(request, &inputs, account.as_ref(), self.body_key.as_ref());
        Ok(ApprovalSubject {
            inputs,
            account,
            hash,
        })
    }

    /// The policy a run of `request` is under, and the platform name a session it writes
    /// back is stamped with (`unnamed` when neither the request nor its session names one). A stored session (`sessionId`) carries the platform it was kept
    /// for: that platform's policy applies whatever the request omits (a request without
    /// `platform` runs under it whole), and a request naming another platform only tightens
    /// it ([`StrategyPolicy::tightened_by`]). A session kept with a scope of its own carries
    /// no platform.
    ///
    /// # Errors
    /// An unknown platform, one that forbids unattended execution (the request's or the
    /// session's), an unknown `sessionId`, a session without a scope, both `session` and
    /// `sessionId`.
    pub(super) async fn resolve_policy(
        &self,
        tenant: &str,
        request: &TaskRequest,
        unnamed: &str,
    ) -> Result<RunPolicy, EngineError> {
        let extra = scope_io::request_scope(request.scope.as_ref())?;
        if request.session.is_some() && request.session_id.is_some() {
            return Err(EngineError::from(CoreError::InvalidInput(
                "give `session` or `sessionId`, not both".into(),
            )));
        }
        let named = match &request.platform {
            None => None,
            Some(platform) => Some((platform.clone(), self.unattended_policy(platform)?)),
        };
        let state = self.session_state(tenant, request).await?;
        let bound = match (&request.session_id, &state) {
            (Some(_), Some(stored)) => self.bound_platform(stored)?,
            _ => None,
        };
        let (policy, platform) = match (named, bound) {
            (None, None) => (None, unnamed.to_owned()),
            (Some((name, policy)), None) => (Some(policy), name),
            (None, Some((name, bound))) => (Some(bound), name),
            (Some((_, policy)), Some((name, bound))) => (Some(policy.tightened_by(&bound)), name),
        };
        let has_session = request.session.is_some() || request.session_id.is_some();
        let scoped = extra.is_some() || policy.as_ref().is_some_and(|p| p.scope.is_some());
        if has_session && !scoped {
            return Err(EngineError::from(CoreError::InvalidInput(
                "a task with a session needs a scope: `scope`, or a `platform` that declares one"
                    .into(),
            )));
        }
        let profile = self.allowed_profile(tenant, request).await?;
        Ok(RunPolicy {
            policy,
            extra,
            platform,
            state,
            profile,
        })
    }

    /// The registered platform `platform`'s policy, if it allows unattended runs.
    pub(super) fn unattended_policy(&self, platform: &str) -> Result<StrategyPolicy, EngineError> {
        let registry = self
            .platforms
            .as_ref()
            .ok_or_else(|| CoreError::UnknownPlatform(platform.to_owned()))?;
        let policy = registry.get(platform)?.policy().clone();
        if !policy.allow_unattended {
            return Err(EngineError::from(CoreError::ExecutionDenied {
                platform: platform.to_owned(),
                mode: "unattended execution",
            }));
        }
        Ok(policy)
    }

    /// The registered platform a stored session was kept for, with its policy (`None`: one
    /// kept with a scope of its own, or for a platform no longer registered).
    pub(super) fn bound_platform(
        &self,
        stored: &AgentSessionState,
    ) -> Result<Option<(String, StrategyPolicy)>, EngineError> {
        let Some(name) = crate::stored_sessions::bound_platform(stored).map(str::to_owned) else {
            return Ok(None);
        };
        let registered = self
            .platforms
            .as_ref()
            .is_some_and(|r| r.get(&name).is_ok());
        if !registered {
            return Ok(None);
        }
        let policy = self.unattended_policy(&name)?;
        Ok(Some((name, policy)))
    }

    /// The session the task runs with (unscoped yet).
    pub(super) async fn session_state(
        &self,
        tenant: &str,
        request: &TaskRequest,
    ) -> Result<Option<AgentSessionState>, EngineError> {
        if let Some(state) = &request.session {
            return Ok(Some(state.clone()));
        }
        StoredSessions::for_job(
            self.sessions.as_ref(),
            tenant,
            request.session_id.as_deref(),
        )
        .await
    }

    /// Admission by the tenant limits of the current settings.
    pub(super) fn admission(&self) -> TenantAdmission {
        TenantAdmission::new(
            Arc::clone(&self.store) as Arc<dyn CounterStore>,
            self.config.limits,
            Arc::clone(&self.clock),
        )
    }

    pub(super) async fn admit(&self, tenant: &str) -> Result<time::Date, EngineError> {
        self.admission().admit(tenant).await
    }

    pub(super) async fn take_session(&self, tenant: &str) -> Result<(), EngineError> {
        self.admission().take_session(tenant).await
    }

    pub(super) async fn release_session(&self, tenant: &str) {
        self.admission().release_session(tenant).await;
    }

    pub(super) async fn refund(&self, tenant: &str, admitted: Option<time::Date>) {
        self.admission().refund(tenant, admitted).await;
    }

    pub(super) async fn uncount(&self, tenant: &str, counter: &Counter) {
        self.admission().uncount(tenant, counter).await;
    }

    pub(super) fn event(
        &self,
        action: AuditAction,
        outcome: AuditOutcome,
        task: &StoredTask,
    ) -> AuditEvent {
        task.audit_event(action, outcome, self.clock.now())
    }

    pub(super) fn audit_run(&self, task: &StoredTask, duration_ms: u64) {
        let mut event = self.event(AuditAction::TaskRun, audit_outcome(task.record.state), task);
        event.approved_by = task.record.approval.as_ref().map(|a| a.approved_by.clone());
        event.executed_at = task.record.started_at;
        event.steps = Some(
            task.record
                .step_results
                .iter()
                .map(|r| AuditStep {
                    index: r.index,
                    action: r.action.clone(),
                    description: task
                        .request
                        .plan
                        .steps
                        .get(r.index)
                        .map(|s| s.description.clone())
                        .unwrap_or_default(),
                })
                .collect(),
        );
        event.screenshots = Some(task.record.screenshots.clone());
        event.failed_step = task.record.failed_step;
        event.error_code = task.record.error.as_ref().map(|e| e.code.clone());
        event.duration_ms = Some(duration_ms);
        self.audit.emit(event);
    }
}

impl<C: TaskContext> TaskRunner<C> {
    /// Saves the running task; a lost compare-and-swap is a store failure (the runner is
    /// the only writer of a running task).
    pub(super) async fn save_progress(&self, task: &mut StoredTask) -> Result<(), Failure> {
        match self.save(task).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure::store(
                CoreError::Store(StoreFailure::conflict(
                    "the task record changed while the task ran",
                ))
                .to_body(),
            )),
            Err(e) => Err(Failure::store(e.to_body())),
        }
    }

    pub(super) async fn write_back(
        &self,
        tenant: &str,
        session_id: &str,
        lease: &Lease<C>,
        platform: &str,
        scopes: Scopes<'_>,
    ) {
        let Some(sessions) = &self.sessions else {
            return;
        };
        let span = tracing::debug_span!(target: crate::TRACE_TARGET, "write_back");
        async {
            match guarded(self.config.export_timeout, lease.context().export_state()).await {
                Step::Done(state) => {
                    let (state, _) = scopes.apply_out(&state, platform, self.clock.now());
                    sessions.write_back(tenant, session_id, state).await;
                }
                Step::Error(e) => {
                    tracing::warn!(error = %e, "could not export the refreshed session");
                }
                Step::TimedOut | Step::Panicked => {
                    tracing::warn!("exporting the refreshed session timed out or panicked");
                }
            }
        }
        .instrument(span)
        .await;
    }
}

/// What a task's approver sees besides its steps, and the hash that binds it
/// ([`TaskRunner::approval_subject`]).
pub(super) struct ApprovalSubject {
    /// The values the steps are filled with (secrets masked).
    pub(super) inputs: Vec<InputShown>,
    /// Whose session, under which platform.
    pub(super) account: Option<TaskAccount>,
    /// The record's `planHash`.
    pub(super) hash: String,
}

/// The policy a run is under ([`TaskRunner::resolve_policy`]).
pub(super) struct RunPolicy {
    /// The platform's policy (the request's, the stored session's, or both: tightened).
    pub(super) policy: Option<StrategyPolicy>,
    /// The request's own scope.
    pub(super) extra: Option<SessionScope>,
    /// The name a written-back session is stamped with: the session's platform, else the
    /// request's, else none.
    pub(super) platform: String,
    /// The session the run starts with (unscoped yet), loaded once.
    pub(super) state: Option<AgentSessionState>,
    /// The named profile it opens instead, allowed by its owner.
    pub(super) profile: Option<crate::task::rails::RunProfile>,
}
