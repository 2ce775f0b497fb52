//! The engine's lists: a tenant's tasks and posts (by state), what waits for an approver,
//! the takeovers not over yet, and the sessions it keeps by id. One page at a time, never
//! another tenant's item.

use abr_core::context::TaskContext;
use abr_core::error::CoreError;
use abr_core::principal::{Actor, Right};
use abr_core::store::{ListQuery, Listed, MAX_PAGE, RecordStore};
use abr_protocol::{
    ListParams, Page, PendingApprovals, PostRecord, PostState, StoredSessionInfo, TakeoverSummary,
    TaskRecord, TaskState,
};

use crate::engine::Engine;
use crate::error::EngineError;

/// A page's size when the caller names none.
pub(super) const DEFAULT_PAGE: usize = 50;

/// The limit `params` asks for, checked.
fn limit(params: &ListParams) -> Result<usize, EngineError> {
    match params.limit {
        None => Ok(DEFAULT_PAGE),
        Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        Some(_) => Err(EngineError::from(CoreError::InvalidInput(format!(
            "limit must be 1 to {MAX_PAGE}"
        )))),
    }
}

/// The store's query for `params`, its state read as an `S` (a task's or a post's).
fn query<S: serde::de::DeserializeOwned + serde::Serialize>(
    params: &ListParams,
    states: &str,
) -> Result<ListQuery, EngineError> {
    let state = params
        .state
        .as_deref()
        .map(|name| {
            serde_json::from_value::<S>(serde_json::Value::String(name.to_owned()))
                .map(|s| abr_core::store::wire_name(&s))
                .map_err(|_| CoreError::InvalidInput(format!("unknown state: use {states}")))
        })
        .transpose()?;
    Ok(ListQuery {
        state,
        cursor: params.cursor.clone(),
        limit: limit(params)?,
    })
}

fn page<R, T>(listed: Listed<R>, map: impl Fn(R) -> T) -> Page<T> {
    Page {
        items: listed.items.into_iter().map(map).collect(),
        next_cursor: listed.next,
    }
}

const TASK_STATES: &str = "pending_approval, queued, running, paused, succeeded, uncertain, \
                           failed, needs_reauth, rejected";
const POST_STATES: &str = "running, succeeded, uncertain, failed, needs_reauth";

impl<C: TaskContext> Engine<C> {
    /// One page of the actor's tenant's tasks (browse sessions included, `browse: true`),
    /// newest first, in `params.state` when given.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; [`CoreError::InvalidInput`] for an
    /// unknown state, a limit outside 1 to 100 or a cursor no list gave.
    pub async fn list_tasks(
        &self,
        actor: &Actor,
        params: &ListParams,
    ) -> Result<Page<TaskRecord>, EngineError> {
        actor.require(Right::Read)?;
        let query = query::<TaskState>(params, TASK_STATES)?;
        let listed = RecordStore::list(&**self.tasks.store(), actor.tenant(), &query).await?;
        Ok(page(listed, |t| t.record))
    }

    /// One page of the actor's tenant's posts, newest first, in `params.state` when given.
    ///
    /// # Errors
    /// As [`Self::list_tasks`].
    pub async fn list_posts(
        &self,
        actor: &Actor,
        params: &ListParams,
    ) -> Result<Page<PostRecord>, EngineError> {
        actor.require(Right::Read)?;
        let query = query::<PostState>(params, POST_STATES)?;
        let listed = self.posts.store().list(actor.tenant(), &query).await?;
        Ok(page(listed, |p| p.record))
    }

    /// What waits for an approver of the actor's tenant: one page of its tasks pending
    /// approval, and every committing action its open browse sessions wait on.
    ///
    /// # Errors
    /// As [`Self::list_tasks`] (a `state` is refused: the list is of one state).
    pub async fn pending_approvals(
        &self,
        actor: &Actor,
        params: &ListParams,
    ) -> Result<PendingApprovals, EngineError> {
        actor.require(Right::Read)?;
        if params.state.is_some() {
            return Err(EngineError::from(CoreError::InvalidInput(
                "approvals are all pending: no state to filter by".into(),
            )));
        }
        let query = ListQuery {
            state: Some(abr_core::store::wire_name(&TaskState::PendingApproval)),
            cursor: params.cursor.clone(),
            limit: limit(params)?,
        };
        let listed = RecordStore::list(&**self.tasks.store(), actor.tenant(), &query).await?;
        Ok(PendingApprovals {
            tasks: page(listed, |t| t.record),
            actions: self.tasks.pending_browse_approvals(actor.tenant()).await,
        })
    }

    /// The actor's tenant's run events (`approval_required`, takeovers, step progress,
    /// `run_stalled`, `run_ended`) of every replica sharing the store, in the log's order:
    /// after the sequence `after` (a stream resumed where it stopped), or from now on
    /// (`None`); for as long as the actor's key stands: once it is revoked or expires, the
    /// subscription ends ([`Received::Revoked`]).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read; the store's error when the log
    /// cannot be read.
    ///
    /// [`Received::Revoked`]: crate::events::Received::Revoked
    pub async fn subscribe_events(
        &self,
        actor: &Actor,
        after: Option<u64>,
    ) -> Result<crate::events::TenantEvents, EngineError> {
        actor.require(Right::Read)?;
        Ok(self
            .tasks
            .events()
            .subscribe(actor.tenant(), after)
            .await?
            .held_by(self.keys().watch(actor.principal().key_id())))
    }

    /// The actor's tenant's takeovers that are not over (`requested` or `active`).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] unless the actor may read.
    pub fn takeovers(&self, actor: &Actor) -> Result<Vec<TakeoverSummary>, EngineError> {
        actor.require(Right::Read)?;
        Ok(self.tasks.handoffs().of_tenant(actor.tenant()))
    }

    /// One page of the sessions the actor's tenant keeps by id, by id, with counts only.
    ///
    /// # Errors
    /// As [`Self::list_tasks`] (a `state` is refused).
    pub async fn list_sessions(
        &self,
        actor: &Actor,
        params: &ListParams,
    ) -> Result<Page<StoredSessionInfo>, EngineError> {
        actor.require(Right::Read)?;
        if params.state.is_some() {
            return Err(EngineError::from(CoreError::InvalidInput(
                "sessions have no state".into(),
            )));
        }
        let limit = limit(params)?;
        let mut items = self
            .sessions
            .list(actor.tenant(), params.cursor.as_deref(), limit + 1)
            .await?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|s| s.session_id.clone())
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }
}
