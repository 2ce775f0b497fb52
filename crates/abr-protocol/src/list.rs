//! Lists: what waits for a person and what ran, per tenant. `GET /v1/tasks`, `/v1/posts`,
//! `/v1/approvals`, `/v1/takeovers` and `/v1/sessions` answer a [`Page`] (newest first; a
//! `nextCursor` while there is more), filtered by [`ListParams`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{ActionApproval, PauseReason, TakeoverState, TaskRecord};

/// The query of a list: `?state=&cursor=&limit=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListParams {
    /// Only records in this state (`pending_approval`, `succeeded`, ...; tasks and posts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// At most this many (1 to 100, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    /// The items, newest first (stored sessions: by id).
    pub items: Vec<T>,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /v1/approvals`: what waits for an approver of the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingApprovals {
    /// Tasks pending approval, newest first, one page of them.
    pub tasks: Page<TaskRecord>,
    /// The committing actions open browse sessions wait on (every one: there are at most as
    /// many as sessions may be open).
    pub actions: Vec<ActionApproval>,
}

/// `GET /v1/takeovers`: a paused run's takeover that is not over (`requested` or
/// `active`). Every one is listed: there are at most as many as runs may be paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TakeoverSummary {
    /// The takeover.
    pub takeover_id: String,
    /// The paused run (a task's id).
    pub run_id: String,
    /// Why it paused.
    pub reason: PauseReason,
    /// `requested` or `active`.
    pub state: TakeoverState,
    /// When it expires unless resumed.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
}
