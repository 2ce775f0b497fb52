//! The codes of the errors a task record carries (`error.code`, `stepResults[].error.code`,
//! a re-check's `error.code`): outcomes inside a 200 answer, not HTTP errors (those are the
//! table in [`abr_protocol::codes`]; a record may also carry one of those, e.g. a provider
//! failure's `provider_unavailable`, or `invalid_plan`).
//!
//! A code that is also an HTTP error's is defined once, in that table: its name here is the
//! table's wire name ([`BROWSER_CRASHED`], [`BLOCKED_ACTION`], [`SITE_DENIED`]).

use abr_protocol::codes as wire;

/// The element, URL or text did not appear within the step's deadline.
pub const ELEMENT_NOT_FOUND: &str = "element_not_found";
/// The page did not load.
pub const NAVIGATION_FAILED: &str = "navigation_failed";
/// The page or browser is gone ([`wire::BROWSER_CRASHED`]).
pub const BROWSER_CRASHED: &str = wire::BROWSER_CRASHED.code;
/// The site sent the browser to a sign-in page.
pub const NEEDS_REAUTH: &str = "needs_reauth";
/// The browser refused the step (an element not editable, an option missing).
pub const STEP_REJECTED: &str = "step_rejected";
/// The step did not finish within its deadline.
pub const STEP_TIMEOUT: &str = "step_timeout";
/// The browser failed unexpectedly during the step (a panic, contained).
pub const STEP_PANICKED: &str = "step_panicked";
/// An `assert` step's DOM check did not hold.
pub const ASSERTION_FAILED: &str = "assertion_failed";
/// The verification ran and did not prove the outcome.
pub const VERIFICATION_FAILED: &str = "verification_failed";
/// `api_callback` verification after a committing step: the orchestrator proves it.
pub const VERIFIED_BY_CALLBACK: &str = "verified_by_callback";
/// A `screenshot` step (or the screenshot verification) kept no image: screenshots are off
/// for the tenant or platform, or the blur over its fields could not be confirmed (on the
/// step's result; the run goes on).
pub const SCREENSHOT_NOT_TAKEN: &str = "screenshot_not_taken";
/// An `extract` result over the task's cap: kept in part (on the step's result).
pub const EXTRACT_TRUNCATED: &str = "extract_truncated";
/// The runner stopped (a restart, a kill) while the task was queued or running.
pub const RUNNER_STOPPED: &str = "runner_stopped";
/// A browse session's committing action waits for an approver: nothing of it left the
/// browser (a step's error; the answer's `pause.reason`).
pub const APPROVAL_REQUIRED: &str = "approval_required";
/// The approver rejected the task (or a browse session's committing action: the session
/// closed).
pub const REJECTED: &str = "rejected";
/// The stored plan is not the approved one, or has no approval: nothing ran.
pub const PLAN_NOT_APPROVED: &str = "plan_not_approved";
/// The read-only or dry-run guard refused a committing action (nothing reached the page;
/// [`wire::BLOCKED_ACTION`]).
pub const BLOCKED_ACTION: &str = wire::BLOCKED_ACTION.code;
/// The run reached a site the tenant denied, or one outside its allow list
/// ([`wire::SITE_DENIED`]).
pub const SITE_DENIED: &str = wire::SITE_DENIED.code;
/// The page went to an address the runner's egress policy refuses: no site decision can
/// allow it ([`wire::EGRESS_REFUSED`]).
pub const EGRESS_REFUSED: &str = wire::EGRESS_REFUSED.code;
/// The person (or the orchestrator) ended the takeover: the run stopped without acting.
pub const TAKEOVER_ENDED: &str = "takeover_ended";
/// Nobody resumed the takeover in time: the run stopped without acting.
pub const TAKEOVER_EXPIRED: &str = "takeover_expired";
/// A committing step that paused for a person was not run again after the takeover: the
/// person acted in the live view and may have done it themselves. The run is uncertain; the
/// owner's assertion that it was not done allows the one new attempt.
pub const PERSON_MAY_HAVE_ACTED: &str = "person_may_have_acted";
/// A browse session was closed after its idle time without a call.
pub const BROWSE_IDLE: &str = "browse_idle";
