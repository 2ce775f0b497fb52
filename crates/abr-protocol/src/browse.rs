//! The browse API: a guarded browser session driven one action at a time by a brain outside
//! ABR (an orchestrator, an LLM agent). `POST /v1/browse` opens it, `GET …/snapshot` reads
//! the page as a compact list of elements with stable references, `POST …/act` performs one
//! action on a reference through the commit guard, `DELETE` closes it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use time::OffsetDateTime;

use crate::{
    AgentSessionState, BlockedAction, ErrorBody, PauseReason, PrincipalRef, SecretValue, Snapshot,
};

/// `POST /v1/browse`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowseRequest {
    /// The page to open.
    pub url: String,
    /// A platform whose policy (scope, read-only, screenshots) applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// A session stored on the runner (scoped by `scope` or the platform's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// A session to browse with, instead of `sessionId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<AgentSessionState>,
    /// A named browser profile on the runner instead of a session (as a task's `profile`:
    /// its owner's consent first, the sign-in check before a committing action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The scope of the session (required with a session, unless `platform` gives one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::SessionScopeSpec>,
    /// Every committing action is refused (`outcome: refused`, `blockedBy: read_only`). A
    /// read-only platform is read-only whatever this says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Rehearse: committing actions are refused (`blockedBy: dry_run`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The tenant (or the `x-tenant-id` header).
    #[serde(default, alias = "tenant_id", skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Seconds without a call after which the session is closed (1 to the runner's
    /// maximum; default the runner's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_seconds: Option<u64>,
    /// Wait for a person at a pause: the page's handoffs (a challenge, a sign-in, a control
    /// that keeps failing) and the brain's requests for a value register a takeover that
    /// waits this long, and the session's actions wait with it (`paused`) until a person
    /// resumes it. Without it a pause is reported and the brain decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<crate::HandoffOptions>,
}

impl std::fmt::Debug for BrowseRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowseRequest")
            .field("platform", &self.platform)
            .field("session", &self.session.is_some())
            .field("session_id", &self.session_id.is_some())
            .field("profile", &self.profile)
            .field("read_only", &self.read_only)
            .field("dry_run", &self.dry_run)
            .field("idle_seconds", &self.idle_seconds)
            .finish_non_exhaustive()
    }
}

/// The answer to `POST /v1/browse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowseOpened {
    /// The session's id (also its record: `GET /v1/tasks/{browseId}`, its frames:
    /// `GET /v1/runs/{browseId}/frames`).
    pub browse_id: String,
    /// Committing actions are refused because the session is read-only.
    pub read_only: bool,
    /// Committing actions are refused because the session is a rehearsal.
    pub dry_run: bool,
    /// Seconds without a call after which the session is closed.
    pub idle_seconds: u64,
    /// Opening the first page, as an action: `done`, `paused` (a handoff the page calls
    /// for), `failed` (it did not load: the session is open, navigate elsewhere or close
    /// it); and the page.
    #[serde(flatten)]
    pub first: ActResponse,
}

/// `POST /v1/browse/{browseId}/act`: one action.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum BrowseAction {
    /// Clicks an element.
    Click {
        /// The element.
        #[serde(rename = "ref")]
        reference: String,
    },
    /// Types into a field (the value is a secret: never logged, never stored).
    Type {
        /// The field.
        #[serde(rename = "ref")]
        reference: String,
        /// What to type.
        text: SecretValue,
        /// Press Enter after typing.
        #[serde(default)]
        submit: bool,
    },
    /// Sets a file input to one of the tenant's artifacts (`POST /v1/artifacts` first):
    /// never a path on the runner's disk. Committing, as a plan's `upload` step: refused
    /// in a read-only session, and asks an approver where committing actions do.
    Upload {
        /// The file input.
        #[serde(rename = "ref")]
        reference: String,
        /// The artifact's id (`art_…`).
        artifact: String,
    },
    /// Chooses an option of a list box, by its label.
    Select {
        /// The list box.
        #[serde(rename = "ref")]
        reference: String,
        /// The option's label.
        option: String,
    },
    /// Presses a key (`Enter`, `Tab`, `Escape`, `ArrowDown`, ...), on an element or the page.
    Press {
        /// The element, or the page when absent.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        /// The key, in Playwright's names.
        key: String,
    },
    /// Scrolls the page by a screen.
    Scroll {
        /// `down` (default) or `up`.
        #[serde(default)]
        direction: ScrollDirection,
    },
    /// Opens a URL.
    Navigate {
        /// The URL.
        url: String,
    },
    /// Goes back in the history.
    Back,
    /// Waits, instead of polling snapshots, for exactly one of: an element (`ref`) to be
    /// visible, a text (`text`) to show on the page, the URL to contain `url`, or `ms`
    /// milliseconds to pass. Bounded by the session's action deadline: a wait not met by
    /// then is `failed`, and `ms` beyond it is refused.
    Wait {
        /// An element of the latest snapshot to be visible.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        /// A text to show on the page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// A part of the URL to be reached.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// Milliseconds to let pass.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ms: Option<u64>,
    },
}

impl BrowseAction {
    /// The action's name (`click`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Click { .. } => "click",
            Self::Type { .. } => "type",
            Self::Select { .. } => "select",
            Self::Upload { .. } => "upload",
            Self::Press { .. } => "press",
            Self::Scroll { .. } => "scroll",
            Self::Navigate { .. } => "navigate",
            Self::Back => "back",
            Self::Wait { .. } => "wait",
        }
    }
}

impl std::fmt::Debug for BrowseAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Type {
                reference, submit, ..
            } => f
                .debug_struct("Type")
                .field("reference", reference)
                .field("submit", submit)
                .finish_non_exhaustive(),
            Self::Click { reference } => f.debug_tuple("Click").field(reference).finish(),
            Self::Select { reference, .. } => f.debug_tuple("Select").field(reference).finish(),
            Self::Upload {
                reference,
                artifact,
            } => f
                .debug_struct("Upload")
                .field("reference", reference)
                .field("artifact", artifact)
                .finish(),
            Self::Press { reference, key } => f
                .debug_struct("Press")
                .field("reference", reference)
                .field("key", key)
                .finish(),
            Self::Scroll { direction } => f.debug_tuple("Scroll").field(direction).finish(),
            Self::Navigate { .. } => f.write_str("Navigate"),
            Self::Back => f.write_str("Back"),
            Self::Wait {
                reference, url, ms, ..
            } => f
                .debug_struct("Wait")
                .field("reference", reference)
                .field("url", &url.is_some())
                .field("ms", ms)
                .finish_non_exhaustive(),
        }
    }
}

/// Which way [`BrowseAction::Scroll`] goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScrollDirection {
    /// Towards the end of the page.
    #[default]
    Down,
    /// Towards the start.
    Up,
}

/// What became of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActOutcome {
    /// It was performed.
    Done,
    /// The guard refused it before it reached the page (see `blocked`): nothing happened.
    Refused,
    /// It was performed, and the page now calls for a person (see `pause`).
    Paused,
    /// It failed on the page (see `error`).
    Failed,
}

/// A handoff the page calls for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowsePause {
    /// Why.
    pub reason: PauseReason,
    /// What the page shows, in words.
    pub message: String,
    /// The takeover a person resolves (`POST /v1/tasks/{browseId}/takeover`, `…/resume`,
    /// `…/end`, `…/input`), when the session waits for a person (`handoff`, or an input
    /// request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover_id: Option<String>,
    /// When that takeover expires unless resumed (the session then closes).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    pub expires_at: Option<OffsetDateTime>,
}

impl BrowsePause {
    /// A pause for `reason`, said in `message`, with no takeover.
    pub fn new(reason: PauseReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
            takeover_id: None,
            expires_at: None,
        }
    }
}

/// `POST /v1/browse/{browseId}/input-request`: the brain needs a value it must not invent
/// (a one-time code, an answer only the user knows) for the field `ref`. A person supplies
/// it (`POST /v1/tasks/{browseId}/takeover/input`, or by typing in the live view); the
/// session's actions wait (`paused`, `needs_input`) until then. The answer is the pause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputRequest {
    /// The field the value goes into (a snapshot's reference).
    #[serde(rename = "ref")]
    pub reference: String,
    /// What to ask the person, in words (shown to them; at most 500 characters).
    pub prompt: String,
    /// Seconds to wait for the person (default the session's `handoff`, else 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_seconds: Option<u64>,
}

/// `POST /v1/tasks/{id}/takeover/input`: the value a person supplies for a `needs_input`
/// pause. It is typed into the field the brain named and never logged, recorded or
/// echoed; the takeover is then resumed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuppliedInput {
    /// The value.
    pub value: crate::SecretValue,
}

impl std::fmt::Debug for SuppliedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuppliedInput").finish_non_exhaustive()
    }
}

/// The answer to `POST /v1/browse/{browseId}/act`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActResponse {
    /// What became of the action.
    pub outcome: ActOutcome,
    /// Whether the action was a committing one (it may have changed something).
    pub committing: bool,
    /// The refusal, when `refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<BlockedAction>,
    /// The handoff, when `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<BrowsePause>,
    /// The failure, when `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// The approval this action waits for, when `paused` with `approval_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ActionApproval>,
    /// The page after the action.
    pub snapshot: Snapshot,
    /// What the guard holds on this page without stopping the session (a read-only
    /// session's form that would submit, pay or upload): the page is usable, and using
    /// that is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarded: Vec<GuardNotice>,
}

/// Something on the page the guard holds, said once for the page: the session goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardNotice {
    /// What it is (`write_affordance`: a form that would submit, pay or upload).
    pub reason: PauseReason,
    /// In words.
    pub message: String,
}

/// A committing action of a browse session that waits for a person (`GET
/// /v1/browse/{browseId}/approval`). An approver decides it by its `approvalId`
/// (`POST /v1/browse/{browseId}/approve` or `/reject`), or mints a one-time link for a person
/// (`POST /v1/browse/{browseId}/approval-link`). Approved, it covers that one action (the
/// same element, page and value): the brain sends it again and it runs; rejected, the
/// session closes with nothing committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionApproval {
    /// What a decision names.
    pub approval_id: String,
    /// The session.
    pub browse_id: String,
    /// The action in words (`click e5 (button "Post")`); never what is typed.
    pub action: String,
    /// The element's role, when the action names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The element's accessible name, when the action names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The page it acts on (without its query).
    pub page: String,
    /// Where it is.
    pub state: ActionApprovalState,
    /// When it was asked for.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub requested_at: OffsetDateTime,
    /// The approver who decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<PrincipalRef>,
    /// What happens next, in words (for a person and for a model).
    pub message: String,
    /// A redacted frame of the page with the element the action acts on outlined, taken
    /// when it was asked for (`GET /v1/browse/{id}/approval/preview`); `None` with
    /// `previewNote` saying why when none was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::preview::ApprovalPreview>,
    /// Why there is no preview (screenshots off, the frame could not be redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_note: Option<String>,
}

/// Where an [`ActionApproval`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionApprovalState {
    /// Waiting for an approver.
    Pending,
    /// Approved: the next time the brain sends this action, it runs.
    Approved,
    /// Rejected: the session closed with nothing of it committed.
    Rejected,
}

/// `POST /v1/browse/{browseId}/approve` and `/reject` (an approver's key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionDecision {
    /// The approval decided (the one the approver read: a session that asked for another
    /// action since answers `action_not_pending`).
    pub approval_id: String,
    /// What the person says of themself (optional): the record names the approving key's
    /// holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stated_by: Option<String>,
}

/// The answer to `DELETE /v1/browse/{browseId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowseClosed {
    /// The session.
    pub browse_id: String,
    /// It is closed (its browser is gone).
    pub closed: bool,
    /// How many actions it performed.
    pub actions: usize,
    /// How many of them were committing (`committing` is a boolean of one action
    /// everywhere: this is the count).
    pub committing_actions: usize,
}
