//! A person's takeover of a paused run, for tasks and browse sessions alike: the person
//! takes it over (the live view), resumes it or ends it. A browse session's record follows
//! at once ([`TaskRunner::browse_takeover_moved`]).

use abr_core::context::TaskContext;

use crate::error::EngineError;
use crate::task::runner::TaskRunner;

impl<C: TaskContext> TaskRunner<C> {
    /// `requested → active` for a paused task of `tenant`: the live token for the person.
    ///
    /// # Errors
    /// [`CoreError::TaskNotFound`], [`EngineError::NoTakeover`] (not paused),
    /// [`EngineError::TakeoverState`] (already over).
    pub(crate) async fn take_over(
        &self,
        tenant: &str,
        task_id: &str,
        by: &str,
    ) -> Result<crate::handoff::ActiveTakeover, EngineError> {
        self.load(tenant, task_id).await?;
        let active = self.handoffs.activate(tenant, task_id, by)?;
        self.browse_takeover_moved(tenant, task_id).await;
        Ok(active)
    }

    /// `requested | active → resumed`: the run continues where it stopped.
    ///
    /// # Errors
    /// As [`Self::take_over`].
    pub(crate) async fn resume(
        &self,
        tenant: &str,
        task_id: &str,
        by: &str,
    ) -> Result<String, EngineError> {
        self.load(tenant, task_id).await?;
        let id = self.handoffs.resume(tenant, task_id, by)?;
        self.browse_takeover_moved(tenant, task_id).await;
        Ok(id)
    }

    /// `requested | active → ended`: the run stops without acting.
    ///
    /// # Errors
    /// As [`Self::take_over`].
    pub(crate) async fn end_takeover(
        &self,
        tenant: &str,
        task_id: &str,
        by: &str,
    ) -> Result<String, EngineError> {
        self.load(tenant, task_id).await?;
        let id = self.handoffs.end(tenant, task_id, by)?;
        self.browse_takeover_moved(tenant, task_id).await;
        Ok(id)
    }
}
