//! What an actor reads of its tenant's records, and the decisions a person makes on them
//! (reject, assert, resolve a pause, decide a site, switch screenshots). Every call checks
//! the actor's right first, and reads or writes the actor's tenant only: another tenant's
//! ids are not found.

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome};
use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::guard::StoredFrame;
use abr_core::principal::{Actor, Right};
use abr_core::store::RecordStore;
use abr_protocol::{
    ActionApproval, ActionDecision, ApproveRequest, AssertNotPostedRequest, FrameInfo, PostRecord,
    ProfileConsentRequest, ProfileEntry, RejectRequest, RunScreenshots, RunTimeline, SiteEntry,
    StoredSession, TaskRecord, TaskState,
};

use crate::approval_links::MintedLink;
use crate::caller::Caller;
use crate::error::EngineError;

use crate::engine::Engine;
use crate::handoff::ActiveTakeover;
use abr_core::audit::SETTINGS_PLATFORM;

/// What an approval link's page shows.
#[derive(Debug, Clone)]
pub struct LinkedTask {
    /// The task's record (its steps in words, its risk, its state).
    pub record: TaskRecord,
    /// The URL its plan opens first.
    pub target_url: String,
    /// The approver whose key minted the link: the decision is recorded as theirs.
    pub approver: String,
    /// For a browse session's link: the committing action it decides, while it still
    /// waits (`None`: decided, replaced by a later action, or the session closed).
    pub action: Option<ActionApproval>,
    /// The link is for a browse session's committing action (not a task's plan).
    pub browse: bool,
    /// The preview's JPEG of what the link decides, when one was kept.
    pub preview: Option<Vec<u8>>,
}

impl<C: TaskContext> Engine<C> {
    // ---- tasks ----------------------------------------------------------------------------

    /// A task's record.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`CoreError::TaskNotFound`]
    /// (also for another tenant's id); a store failure.
    pub async fn task(&self, actor: &Actor, task_id: &str) -> Result<TaskRecord, EngineError> {
        actor.require(Right::Read)?;
        self.tasks.get(actor.tenant(), task_id).await
    }

    /// A task's screenshot by name (`None`: the task has none by that name).
    ///
    /// # Errors
    /// As [`Self::task`].
    pub async fn task_screenshot(
        &self,
        actor: &Actor,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, EngineError> {
        // The task must be the tenant's (not found otherwise), then the screenshot exist.
        self.task(actor, task_id).await?;
        Ok(self
            .tasks
            .store()
            .screenshot(actor.tenant(), task_id, name)
            .await?)
    }

    /// A one-time link for a person without a key to approve or reject, as the actor, the
    /// pending task `task_id` or the committing action a browse session `task_id` waits on:
    /// single-use, bound to the task's plan hash, expiring within the hour, kept in the
    /// store by the digest of its token (it outlives a restart, and works on any replica of a
    /// fleet).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may approve; [`EngineError::SelfApproval`]
    /// for the key that proposed the task or opened the session; an unknown task,
    /// [`EngineError::TaskNotPending`] (a task not waiting), [`EngineError::ActionNotPending`]
    /// (a session waiting for nobody).
    pub async fn approval_link(
        &self,
        actor: &Actor,
        task_id: &str,
    ) -> Result<MintedLink, EngineError> {
        let caller = Caller::checked(actor, Right::Approve)?;
        let record = self.tasks.get(actor.tenant(), task_id).await?;
        crate::task::lifecycle::not_the_proposer(&record, &caller)?;
        let action = if record.browse {
            let pending = self.tasks.browse_approval(actor.tenant(), task_id).await?;
            Some(pending.approval_id)
        } else if record.state != TaskState::PendingApproval {
            return Err(EngineError::TaskNotPending);
        } else {
            None
        };
        self.links
            .mint(
                actor.tenant(),
                task_id,
                action,
                std::sync::Arc::new(actor.principal().clone()),
            )
            .await
    }

    /// The task an approval link shows, with the site its plan opens (or the browse
    /// session's action it decides); nothing is used up.
    ///
    /// # Errors
    /// [`EngineError::LinkNotFound`] for a link never minted, used or expired, or whose
    /// approver's key was revoked or expired since; a store failure.
    pub async fn task_by_link(&self, token: &str) -> Result<LinkedTask, EngineError> {
        let grant = self
            .links
            .peek(token)
            .await?
            .ok_or(EngineError::LinkNotFound)?;
        if !self.keys().stands(grant.minted_by.key_id()).await? {
            return Err(EngineError::LinkNotFound);
        }
        let task = RecordStore::get(self.tasks.store().as_ref(), &grant.tenant, &grant.task_id)
            .await?
            .ok_or(CoreError::TaskNotFound)?;
        let (action, preview) = match &grant.action {
            None if task.record.preview.is_some() => (
                None,
                self.tasks
                    .store()
                    .screenshot(
                        &grant.tenant,
                        &grant.task_id,
                        abr_core::plan::PREVIEW_SCREENSHOT,
                    )
                    .await?,
            ),
            None => (None, None),
            Some(id) => match self
                .tasks
                .browse_approval_shown(&grant.tenant, &grant.task_id)
                .await
            {
                Ok((action, preview)) if &action.approval_id == id => (Some(action), preview),
                _ => (None, None),
            },
        };
        Ok(LinkedTask {
            target_url: task.request.plan.target_url.clone(),
            approver: grant.minted_by.name().to_owned(),
            record: task.record,
            action,
            browse: grant.action.is_some(),
            preview,
        })
    }

    /// Approves (and runs) or rejects the task of an approval link, or the browse session's
    /// committing action it names, as the approver who minted it, `person` being what the
    /// person said of themself. The link is used up first: a second decision, however sent,
    /// is [`EngineError::LinkNotFound`]; so is a decision once the approver's key was revoked
    /// or expired (a link is that key's, and ends with it).
    ///
    /// # Errors
    /// [`EngineError::LinkNotFound`]; [`Self::approve_task`]'s, [`Self::reject_task`]'s or
    /// [`Self::browse_decide`]'s.
    pub async fn decide_by_link(
        &self,
        token: &str,
        approve: bool,
        person: Option<String>,
    ) -> Result<TaskRecord, EngineError> {
        let grant = self
            .links
            .take(token)
            .await?
            .ok_or(EngineError::LinkNotFound)?;
        if !self.keys().stands(grant.minted_by.key_id()).await? {
            return Err(EngineError::LinkNotFound);
        }
        let actor = grant.minted_by.act_for(Some(&grant.tenant))?;
        if let Some(approval_id) = grant.action {
            let decision = ActionDecision {
                approval_id,
                stated_by: person,
            };
            self.browse_decide(&actor, &grant.task_id, &decision, approve)
                .await?;
            return self.tasks.get(&grant.tenant, &grant.task_id).await;
        }
        let record = self.tasks.get(&grant.tenant, &grant.task_id).await?;
        if approve {
            let request = ApproveRequest {
                approved_by: person,
                plan_hash: record.plan_hash,
            };
            self.approve_task(&actor, &grant.task_id, &request).await
        } else {
            let request = RejectRequest {
                rejected_by: person,
                reason: Some("rejected through an approval link".to_owned()),
            };
            self.reject_task(&actor, &grant.task_id, &request).await
        }
    }

    /// Rejects a pending task.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] for an actor that may not approve, an over-long
    /// `rejectedBy` or reason, an unknown task, [`EngineError::TaskNotPending`], a store
    /// failure.
    pub async fn reject_task(
        &self,
        actor: &Actor,
        task_id: &str,
        request: &RejectRequest,
    ) -> Result<TaskRecord, EngineError> {
        let caller = Caller::checked(actor, Right::Approve)?;
        self.tasks.reject(&caller, task_id, request).await
    }

    /// Records a person's assertion that an uncertain task did not happen (it allows one
    /// new attempt).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may assert (an approver or an operator); an
    /// empty `assertedBy`, an over-long note, an unknown task, [`EngineError::NotUncertain`],
    /// [`EngineError::AlreadyAsserted`], a store failure.
    pub async fn assert_task(
        &self,
        actor: &Actor,
        task_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<TaskRecord, EngineError> {
        actor.require(Right::Assert)?;
        self.tasks
            .assert_not_posted(actor.tenant(), task_id, request)
            .await
    }

    /// `requested → active` for a run paused for a person: the live view's token for the
    /// person taking over.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may resolve a person's pause (an approver
    /// or an operator); an unknown task, [`EngineError::NoTakeover`], a takeover that is over.
    pub async fn take_over(
        &self,
        actor: &Actor,
        task_id: &str,
    ) -> Result<ActiveTakeover, EngineError> {
        actor.require(Right::ResolvePause)?;
        self.tasks
            .take_over(actor.tenant(), task_id, actor.principal().name())
            .await
    }

    /// `requested | active → resumed`: the paused run continues. Answers the takeover id.
    ///
    /// # Errors
    /// As [`Self::take_over`].
    pub async fn resume_takeover(
        &self,
        actor: &Actor,
        task_id: &str,
    ) -> Result<String, EngineError> {
        actor.require(Right::ResolvePause)?;
        self.tasks
            .resume(actor.tenant(), task_id, actor.principal().name())
            .await
    }

    /// `requested | active → ended`: the paused run stops without acting. Answers the
    /// takeover id.
    ///
    /// # Errors
    /// As [`Self::take_over`].
    pub async fn end_takeover(&self, actor: &Actor, task_id: &str) -> Result<String, EngineError> {
        actor.require(Right::ResolvePause)?;
        self.tasks
            .end_takeover(actor.tenant(), task_id, actor.principal().name())
            .await
    }

    // ---- posts ----------------------------------------------------------------------------

    /// A journaled post's record.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`CoreError::PostNotFound`] (also
    /// for another tenant's id); a store failure.
    pub async fn post_record(
        &self,
        actor: &Actor,
        post_id: &str,
    ) -> Result<PostRecord, EngineError> {
        actor.require(Right::Read)?;
        self.posts.get(actor.tenant(), post_id).await
    }

    /// Records a person's assertion that an uncertain post did not happen.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may assert; an empty `assertedBy`, an
    /// over-long note, an unknown post, [`EngineError::NotUncertain`],
    /// [`EngineError::AlreadyAsserted`], a store failure.
    pub async fn assert_post(
        &self,
        actor: &Actor,
        post_id: &str,
        request: &AssertNotPostedRequest,
    ) -> Result<PostRecord, EngineError> {
        actor.require(Right::Assert)?;
        self.posts
            .assert_not_posted(actor.tenant(), post_id, request)
            .await
    }

    // ---- stored sessions ------------------------------------------------------------------

    /// A stored session as kept, with its cookies (restore): for those who keep sessions,
    /// never for an approver; one bound to a read-only or attended-only platform for an
    /// operator only.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may keep sessions (and, for such a
    /// session, is an operator); [`EngineError::SessionNotFound`]; a store failure.
    pub async fn restore_session(
        &self,
        actor: &Actor,
        session_id: &str,
    ) -> Result<StoredSession, EngineError> {
        actor.require(Right::Sessions)?;
        let (session, takes) = self
            .sessions
            .export(actor.tenant(), session_id, &|name| {
                self.platform_policy(name)
            })
            .await?;
        if let Some(right) = takes {
            actor.require(right)?;
        }
        Ok(session)
    }

    /// Forgets a stored session.
    ///
    /// # Errors
    /// As [`Self::restore_session`].
    pub async fn delete_session(&self, actor: &Actor, session_id: &str) -> Result<(), EngineError> {
        actor.require(Right::Sessions)?;
        self.sessions.delete(actor.tenant(), session_id).await
    }

    // ---- the tenant's settings ------------------------------------------------------------

    /// The tenant's site decisions, sorted by domain.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; a store failure.
    pub async fn sites_of(&self, actor: &Actor) -> Result<Vec<SiteEntry>, EngineError> {
        actor.require(Right::Read)?;
        let mut sites = self.sites.sites(actor.tenant()).await?;
        sites.sort_by(|a, b| a.domain.cmp(&b.domain));
        Ok(sites)
    }

    /// Allows or denies a site for the tenant (replacing an earlier decision); audited
    /// (`site_decided`, with the person who decided).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may change the tenant's settings (an
    /// approver or an operator); a store failure.
    pub async fn decide_site(&self, actor: &Actor, entry: SiteEntry) -> Result<(), EngineError> {
        actor.require(Right::TenantSettings)?;
        let (domain, decided_by, decision) = (
            entry.domain.clone(),
            entry.decided_by.clone(),
            entry.decision,
        );
        self.sites.decide(actor.tenant(), entry).await?;
        let mut event = self.settings_event(AuditAction::SiteDecided, actor);
        event.domain = Some(domain);
        event.actor = Some(decided_by);
        event.decision = Some(decision);
        self.audit.emit(event);
        Ok(())
    }

    /// Removes the tenant's decision about `domain`; `false` when it had none. Audited
    /// (`site_removed`) when there was one.
    ///
    /// # Errors
    /// As [`Self::decide_site`].
    pub async fn remove_site(&self, actor: &Actor, domain: &str) -> Result<bool, EngineError> {
        actor.require(Right::TenantSettings)?;
        let removed = self.sites.remove(actor.tenant(), domain).await?;
        if removed {
            let mut event = self.settings_event(AuditAction::SiteRemoved, actor);
            event.domain = Some(domain.to_owned());
            self.audit.emit(event);
        }
        Ok(removed)
    }

    /// The tenant's named browser profiles (consent and recorded sign-ins), sorted by
    /// name; none on an engine without profiles.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; a store failure.
    pub async fn profiles_of(&self, actor: &Actor) -> Result<Vec<ProfileEntry>, EngineError> {
        actor.require(Right::Read)?;
        let Some(store) = &self.profiles else {
            return Ok(Vec::new());
        };
        let mut profiles = store.profiles(actor.tenant()).await?;
        profiles.sort_by(|a, b| a.profile.cmp(&b.profile));
        Ok(profiles)
    }

    /// Allows or declines the named browser profile `name` for the tenant (replacing an
    /// earlier decision), recording who decided and with which key; audited
    /// (`profile_decided`).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may change the tenant's settings (an
    /// approver or an operator); a bad name or an empty `decidedBy`;
    /// [`CoreError::Unsupported`] on an engine without profiles; a store failure.
    pub async fn decide_profile(
        &self,
        actor: &Actor,
        name: &str,
        request: &ProfileConsentRequest,
    ) -> Result<ProfileEntry, EngineError> {
        actor.require(Right::TenantSettings)?;
        let name = abr_core::guard::profile_name(name)?;
        let decided_by = abr_core::tenant::person("decidedBy", request.decided_by.trim())?;
        let Some(store) = &self.profiles else {
            return Err(EngineError::from(CoreError::Unsupported {
                provider: "this runner".into(),
                what: "named profiles (a local runner with ABR_PROFILE_DIR)",
            }));
        };
        let key = actor.principal().key_id().to_owned();
        store
            .decide(
                actor.tenant(),
                name,
                abr_core::guard::ProfileDecision {
                    decision: request.decision,
                    decided_by: decided_by.clone(),
                    decided_by_key: Some(key),
                    decided_at: self.now(),
                },
            )
            .await?;
        let mut event = self.settings_event(AuditAction::ProfileDecided, actor);
        event.profile = Some(name.to_owned());
        event.actor = Some(decided_by);
        event.decision = Some(request.decision);
        self.audit.emit(event);
        store.profile(actor.tenant(), name).await?.ok_or_else(|| {
            EngineError::from(CoreError::Internal("a profile decision was not kept"))
        })
    }

    /// An audit event about a change of the tenant's own settings (no platform involved),
    /// with the key that made it.
    fn settings_event(&self, action: AuditAction, actor: &Actor) -> AuditEvent {
        let mut event = AuditEvent::new(self.now(), action, AuditOutcome::Ok, SETTINGS_PLATFORM)
            .tenant(Some(actor.tenant()), None);
        event.key_id = Some(actor.principal().key_id().to_owned());
        event
    }

    /// A run's screenshots setting and its frames.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`EngineError::FrameNotFound`]
    /// for a run of no frames record (also another tenant's); a store failure.
    pub async fn run_frames(
        &self,
        actor: &Actor,
        run_id: &str,
    ) -> Result<(RunScreenshots, Vec<FrameInfo>), EngineError> {
        actor.require(Right::Read)?;
        let setting = self
            .frames
            .run_setting(actor.tenant(), run_id)
            .await?
            .ok_or(EngineError::FrameNotFound)?;
        Ok((setting, self.frames.frames(actor.tenant(), run_id).await?))
    }

    /// A run's action timeline: a task's, a browse session's or a post's (the same ids as
    /// its frames and events).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`EngineError::RunNotFound`]
    /// (also for another tenant's id); a store failure.
    pub async fn run_timeline(
        &self,
        actor: &Actor,
        run_id: &str,
    ) -> Result<RunTimeline, EngineError> {
        actor.require(Right::Read)?;
        let tenant = actor.tenant();
        match self.tasks.load(tenant, run_id).await {
            Ok(task) => {
                let frames = self.frames.frames(tenant, run_id).await?;
                return Ok(crate::timeline::of_task(&task, &frames));
            }
            Err(EngineError::Core(CoreError::TaskNotFound)) => {}
            Err(e) => return Err(e),
        }
        match self.posts.get(tenant, run_id).await {
            Ok(post) => {
                let frames = self.frames.frames(tenant, run_id).await?;
                Ok(crate::timeline::of_post(&post, &frames))
            }
            Err(EngineError::Core(CoreError::PostNotFound)) => Err(EngineError::RunNotFound),
            Err(e) => Err(e),
        }
    }

    /// One frame of a run.
    ///
    /// # Errors
    /// As [`Self::run_frames`].
    pub async fn frame(
        &self,
        actor: &Actor,
        run_id: &str,
        seq: u32,
    ) -> Result<StoredFrame, EngineError> {
        actor.require(Right::Read)?;
        self.frames
            .frame(actor.tenant(), run_id, seq)
            .await?
            .ok_or(EngineError::FrameNotFound)
    }

    /// Whether the tenant keeps replay screenshots.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; a store failure.
    pub async fn screenshots_enabled(&self, actor: &Actor) -> Result<bool, EngineError> {
        actor.require(Right::Read)?;
        Ok(self.frames.screenshots_enabled(actor.tenant()).await?)
    }

    /// Switches the tenant's replay screenshots on or off; audited
    /// (`screenshots_changed`, with the key that changed it and `person`: the one a caller
    /// names, or `unknown`).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may change the tenant's settings; a store
    /// failure.
    pub async fn set_screenshots_enabled(
        &self,
        actor: &Actor,
        enabled: bool,
        person: &str,
    ) -> Result<(), EngineError> {
        actor.require(Right::TenantSettings)?;
        self.frames
            .set_screenshots_enabled(actor.tenant(), enabled)
            .await?;
        let mut event = self.settings_event(AuditAction::ScreenshotsChanged, actor);
        event.actor = Some(person.to_owned());
        event.screenshots_enabled = Some(enabled);
        self.audit.emit(event);
        Ok(())
    }
}
