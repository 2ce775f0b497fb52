//! [`RunEvent`]: what happens to a tenant's runs, as `GET /v1/events` streams it and the
//! events webhook receives it. Ids, names and states only: never a value typed, a page's
//! text, a URL's query or a token.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{PauseReason, TakeoverEvent};

/// One event of a run.
///
/// | `event` | when | fields besides `tenantId`, `runId`, `at` |
/// |---|---|---|
/// | `approval_required` | a task waits for an approver, or a browse session's committing action does | `approvalId` (browse) |
/// | `takeover_required`, `takeover_active`, `takeover_resumed`, `takeover_ended`, `takeover_expired` | a paused run's takeover moved | `takeoverId`, `reason`, `state` |
/// | `step_progress` | a step (or a browse action) ended | `step`, `action`, `ok`, `ms`, `elapsedMs`; a task's `steps` and `stage`; `code` when not done, `refusedBy` when refused |
/// | `run_stalled` | a running run made no progress for `ABR_STALL_SECS` (once per stall) | `idleSecs` |
/// | `run_ended` | a run ended (a task's or a post's outcome, a browse session closed) | `state`, `kind` (`task`, `browse`, `post`), `elapsedMs`; `check` when `uncertain`; `code` when it failed or is uncertain; a post's failure `stage` |
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    /// What happened (see the table).
    pub event: String,
    /// The run's tenant.
    pub tenant_id: String,
    /// The run (a task's, a browse session's or a post's id).
    pub run_id: String,
    /// What the run is (`run_ended`): `task`, `browse` or `post` (a post's record is at
    /// `GET /v1/posts/{runId}`, the others' at `GET /v1/tasks/{runId}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The takeover (takeover events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover_id: Option<String>,
    /// Why the run paused (takeover events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
    /// The state after the event: the takeover's, or the run's (`run_ended`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The browse action an approver is asked about (`approval_required` of a session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The step's index (`step_progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The step's type (`click`, `extract`, ...) (`step_progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Whether the step was done (`step_progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// Seconds since the run's last progress (`run_stalled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_secs: Option<u64>,
    /// How many steps the task's plan has (`step_progress` of a task: step `step + 1` of
    /// `steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
    /// The stage the step is in, as the plan names it (`step_progress` of a task whose plan
    /// names stages: the step's own, or the last one a step before it started); the stage a
    /// failed or uncertain post ended in (`run_ended` of a post: `precheck`, `compose`,
    /// `media`, `submit`, `verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// Milliseconds since the run started (`step_progress`; `run_ended`: how long it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// The decision an `uncertain` end asks for (`run_ended`): the read-only re-check to
    /// `POST` (it may have happened: never retry blindly; re-check it, or a person asserts it
    /// did not happen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// How long the step took, in milliseconds (`step_progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Why the step was not done, or why the run failed or is uncertain: its error code
    /// (`step_progress` not `ok`; `run_ended` `failed` or `uncertain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The rule that refused the step's action (`step_progress` of a refused step:
    /// `read_only`, `dry_run`, `awaiting_approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_by: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub at: OffsetDateTime,
}

impl RunEvent {
    /// An event `event` of `run_id` of `tenant`, with nothing else.
    pub fn new(event: &str, tenant: &str, run_id: &str, at: OffsetDateTime) -> Self {
        Self {
            event: event.to_owned(),
            tenant_id: tenant.to_owned(),
            run_id: run_id.to_owned(),
            kind: None,
            takeover_id: None,
            reason: None,
            state: None,
            approval_id: None,
            step: None,
            action: None,
            ok: None,
            idle_secs: None,
            steps: None,
            stage: None,
            elapsed_ms: None,
            check: None,
            ms: None,
            code: None,
            refused_by: None,
            at,
        }
    }

    /// A takeover transition of `tenant`'s run.
    pub fn takeover(tenant: &str, event: &TakeoverEvent) -> Self {
        Self {
            takeover_id: Some(event.takeover_id.clone()),
            reason: Some(event.reason),
            state: Some(event.state.as_str().to_owned()),
            ..Self::new(&event.event, tenant, &event.run_id, event.at)
        }
    }
}
