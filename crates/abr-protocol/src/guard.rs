//! Guard rails on the wire: blocked actions, handoff pauses and takeovers, replay frames,
//! the screenshot switch and site decisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Which rule refused an action. `readOnly` wins when both apply: a permanent property is
/// never described as a rehearsal that could be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlockedBy {
    /// The platform or the approved plan is read-only.
    ReadOnly,
    /// The request asked for a dry run.
    DryRun,
    /// A browse session's committing action waits for an approver (`approval_required`):
    /// until one approves that action, nothing it would send leaves the browser.
    AwaitingApproval,
}

/// Why the commit guard counts an action as committing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommitClass {
    /// A submit button or input (`<button>` without a type in a form, `type=submit|image`).
    SubmitControl,
    /// Any other button inside a form.
    ButtonInForm,
    /// The accessible name or value has a committing verb (`Pay`, `Post`, `Löschen`...).
    CommittingLabel,
    /// A file input (an upload).
    FileInput,
    /// A payment card field (number, expiry, security code).
    CardField,
    /// Enter in a field of a form that Enter submits: one with a submit control, or with a
    /// single text field (HTML's implicit submission).
    EnterSubmitsForm,
    /// Enter in an editable region or a text field outside any form (a chat box that sends
    /// on Enter). Read-only runs only.
    EnterInEditor,
    /// A choice (a `<select>`, a checkbox, a radio button, a switch) whose change may save or
    /// submit: outside a form or in one that posts. Read-only runs only, unless the
    /// platform marks choices harmless.
    ChoiceMaySubmit,
    /// A button with no recognised harmless meaning (search, next, show more, filter, sort,
    /// open, close, cancel, tabs...): read-only runs refuse what they cannot tell is
    /// harmless. Read-only runs only.
    UnrecognisedButton,
    /// Typing into a field of a form that does not submit with GET (one that posts: a
    /// compose box, a profile form), or into an editable region: a site may save what is
    /// typed as a draft, without a submit. Read-only runs only (a dry run rehearses the
    /// typing and stops at the submit); a search field and a GET form stay typeable.
    WriteFormField,
    /// Setting files on an input.
    Upload,
    /// A request with a method other than GET, HEAD or OPTIONS left (or, refused, would have
    /// left) the browser: below the page, whatever the element looked like.
    NetworkWrite,
    /// A WebSocket connection, refused in a read-only run unless the platform allows them.
    WebSocket,
    /// The element could not be inspected: counted as committing.
    Unknown,
}

/// A refused action: nothing reached the page, or (`network_write`, `web_socket`) the
/// request the action caused never left the browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockedAction {
    /// The step (0-based) that was refused, when a plan was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The rule that refused it.
    pub blocked_by: BlockedBy,
    /// Why the action counts as committing.
    pub class: CommitClass,
    /// The committing verb matched, when `class` is `committing_label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// The request's method, when `class` is `network_write` (never its body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The request's (or WebSocket's) host, when `class` is `network_write` or `web_socket`
    /// (never its path or query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Why a run stopped for a person. Detected by the runner from the page, never claimed by
/// the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    /// A captcha, a two-factor prompt or a security check.
    Challenge,
    /// A password field on a run that must not sign in.
    LoginRequired,
    /// A page asking to subscribe.
    Paywall,
    /// A bot check or an access-control page ("unusual traffic", "Access Denied", 403).
    AccessBlocked,
    /// A form that submits, pays or uploads, in a read-only run.
    WriteAffordance,
    /// A site the tenant has neither allowed nor denied.
    ConsentRequired,
    /// Repeated failure on one control.
    Stuck,
    /// The page requires a value the plan does not give.
    NeedsInput,
    /// A browse session's committing action waits for an approver to approve that action
    /// (see the answer's `approval`); nothing of it left the browser.
    ApprovalRequired,
}

impl PauseReason {
    /// Every reason, in a fixed order.
    pub const ALL: [Self; 9] = [
        Self::Challenge,
        Self::LoginRequired,
        Self::Paywall,
        Self::AccessBlocked,
        Self::WriteAffordance,
        Self::ConsentRequired,
        Self::Stuck,
        Self::NeedsInput,
        Self::ApprovalRequired,
    ];

    /// The snake_case name on the wire (also the error code when a run ends on it).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Challenge => "challenge",
            Self::LoginRequired => "login_required",
            Self::Paywall => "paywall",
            Self::AccessBlocked => "access_blocked",
            Self::WriteAffordance => "write_affordance",
            Self::ConsentRequired => "consent_required",
            Self::Stuck => "stuck",
            Self::NeedsInput => "needs_input",
            Self::ApprovalRequired => "approval_required",
        }
    }
}

/// Where a takeover is: `requested → active → resumed`, or `ended` / `expired`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TakeoverState {
    /// The run paused and asks for a person; no live view yet.
    Requested,
    /// A person holds the browser through the live view.
    Active,
    /// The person handed back: the run continues where it stopped.
    Resumed,
    /// The person (or the orchestrator) ended the run: it stops without acting.
    Ended,
    /// Nobody resumed in time: the run stopped without acting.
    Expired,
}

impl TakeoverState {
    /// The snake_case name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::Active => "active",
            Self::Resumed => "resumed",
            Self::Ended => "ended",
            Self::Expired => "expired",
        }
    }

    /// Whether the takeover is over.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Resumed | Self::Ended | Self::Expired)
    }
}

/// A paused run and its takeover, as the task record shows it. Ids only: never a URL, a
/// token or a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    /// The takeover's id (the handle for `…/takeover/*`).
    pub takeover_id: String,
    /// Why the run paused.
    pub reason: PauseReason,
    /// The step it paused before (0-based), when a plan was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// Where the takeover is.
    pub state: TakeoverState,
    /// When the pause began.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub paused_at: OffsetDateTime,
    /// When it expires unless resumed.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
    /// What the brain asks the person for (`needs_input` of a browse session), in its
    /// words; never a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The field the supplied value goes into (a snapshot's reference).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub input_ref: Option<String>,
}

/// One takeover transition, as polled or posted to the events webhook. Ids only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TakeoverEvent {
    /// `takeover_required`, `takeover_active`, `takeover_resumed`, `takeover_ended` or
    /// `takeover_expired`.
    pub event: String,
    /// The run (task id or post id).
    pub run_id: String,
    /// The takeover.
    pub takeover_id: String,
    /// Why the run paused.
    pub reason: PauseReason,
    /// The state after the transition.
    pub state: TakeoverState,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub at: OffsetDateTime,
    /// Who moved it: the key holder's name who took it over, resumed it, ended it or
    /// supplied the value it waited for (none when the run moved it: a request, an expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// `POST /v1/tasks/{id}/takeover/resume` and `…/end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TakeoverAnswer {
    /// The takeover.
    pub takeover_id: String,
    /// Its state now (`resumed` or `ended`).
    pub state: TakeoverState,
}

/// `POST /v1/tasks/{id}/takeover`: the live view for the paused browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TakeoverStarted {
    /// The takeover.
    pub takeover_id: String,
    /// `active`.
    pub state: TakeoverState,
    /// The live view page (carries a token: give it only to the person taking over).
    pub live_view_url: String,
    /// When the takeover expires unless resumed.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
}

/// Where a replay frame was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FramePoint {
    /// After a navigation.
    Navigation,
    /// After a click the guard accepted.
    Click,
    /// After a wait.
    Wait,
    /// After a page read: a plan's `extract` step, a browse session's snapshot (evidence of
    /// what was read, under the same redaction as every frame).
    Read,
    /// At a pause.
    Pause,
    /// At a blocked action.
    Blocker,
    /// Before a post's submit.
    BeforeSubmit,
    /// After a post's verification.
    AfterVerification,
    /// When the run ended.
    Completion,
}

/// A replay frame's metadata: never page text or values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrameInfo {
    /// 1-based sequence number within the run.
    pub seq: u32,
    /// Where it was taken.
    pub point: FramePoint,
    /// The page URL without query or fragment.
    pub url: String,
    /// The page's host.
    pub domain: String,
    /// The kind of action before it (`navigate`, `click`, ...).
    pub action: String,
    /// Size of the JPEG.
    pub bytes: usize,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub taken_at: OffsetDateTime,
    /// The frame (its `seq`) whose image this one is: the page had not changed since that
    /// frame was taken (the same document and URL, no change to its DOM, no scroll, load,
    /// focus or animation, nothing in it that changes unseen), so its image was kept again
    /// instead of capturing the same page twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<u32>,
}

/// Whether a run takes replay screenshots, fixed when it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunScreenshots {
    /// `on` or `off`.
    pub screenshots: ScreenshotsMode,
    /// Why off (`tenant_setting`, `platform_setting`), when off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenshotsMode {
    /// Frames are taken.
    On,
    /// No frame at any layer.
    Off,
}

/// `GET /v1/runs/{runId}/frames`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FramesResponse {
    /// The run.
    pub run_id: String,
    /// What the run recorded when it started.
    pub screenshots: RunScreenshots,
    /// The frames, in order.
    pub frames: Vec<FrameInfo>,
}

/// `PUT /v1/settings/screenshots` (tenant from `x-tenant-id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenshotsSetting {
    /// Whether runs take replay frames (default true).
    pub enabled: bool,
}

/// A tenant's decision about a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SiteDecision {
    /// Jobs may open it (and its subdomains).
    Allow,
    /// Jobs never open it (or its subdomains).
    Deny,
}

/// `PUT /v1/sites/{domain}` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteDecisionRequest {
    /// Allow or deny.
    pub decision: SiteDecision,
    /// Who decided (audited).
    pub decided_by: String,
}

/// One entry of a tenant's site list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteEntry {
    /// The domain (covers its subdomains).
    pub domain: String,
    /// Allow or deny.
    pub decision: SiteDecision,
    /// Who decided.
    pub decided_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub decided_at: OffsetDateTime,
}

/// `GET /v1/sites`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SitesResponse {
    /// The tenant's decisions, sorted by domain.
    pub sites: Vec<SiteEntry>,
}

/// A cookie as a session check records it: name and expiry, never the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CookieFact {
    /// The cookie's name.
    pub name: String,
    /// Its domain.
    pub domain: String,
    /// Unix seconds, absent for a session cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
    /// Whether it had expired when checked.
    pub expired: bool,
}
