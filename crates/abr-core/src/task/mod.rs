//! Browser tasks: approved step plans run in an isolated browser with a truthful outcome.
//!
//! - [`StepRunner`]: the browser mechanics of a step, implemented by the providers' contexts
//!   (and by the fakes).
//! - [`validate`] → [`ValidPlan`]: plan validation (422 `invalid_plan` naming the step),
//!   templating from the task's inputs ([`ValidPlan::fill`]), the plan hash an approver
//!   approves ([`plan_hash`]) and the steps in words ([`describe_steps`]).
//! - [`commit_class`](crate::guard::commit_class): the one rule that decides which actions
//!   may commit (in [`crate::guard`]).
//! - [`ApprovalRule`]: which tasks wait for a person's approval.
//! - [`TaskRunner`]: create, approve, reject, run, re-check, assert, retry, recover; and
//!   browse sessions ([`TaskRunner::browse_open`]): a task whose steps come one at a time
//!   from a brain outside the runner.
//! - [`TaskStore`] ([`InMemoryTaskStore`]): records, idempotency keys, per-tenant counters
//!   ([`TenantLimits`]), screenshots; [`TaskSessions`]: sessions stored by id.

mod approval;
mod browse;
pub mod codes;
mod engine;
mod limits;
mod network;
mod pauses;
mod plan;
mod rails;
mod runner;
mod store;

pub use approval::{ApprovalRule, UnknownApprovalRule};
pub use browse::BrowseConfig;
pub(crate) use engine::Assertion;
pub use engine::{Created, TaskConfig, TaskEnd, TaskRunner};
pub use limits::{TenantAdmission, TenantLimit, TenantLimits, until_next_utc_day, utc_day};
pub(crate) use plan::keyed_hash;
pub use plan::{
    FilledStep, PlanError, PlanLimits, PlanLocation, PlanProblem, UrlProblem,
    VERIFICATION_SCREENSHOT, ValidPlan, describe_steps, plan_hash, request_hash, validate,
};
pub use runner::{BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner, UploadFile};
pub use store::{
    Counter, IdempotencyKey, InMemoryTaskStore, Inserted, StoredTask, TaskSessions, TaskStore,
};

/// What a task runs on: a browser context that steps ([`StepRunner`]), is read by the guard
/// rails ([`PageProbe`](crate::guard::PageProbe)) and can be handed to a person
/// ([`LiveSurface`](crate::LiveSurface)).
pub trait TaskContext:
    crate::SessionContext + StepRunner + crate::guard::PageProbe + crate::LiveSurface
{
}

impl<C> TaskContext for C where
    C: crate::SessionContext + StepRunner + crate::guard::PageProbe + crate::LiveSurface
{
}
