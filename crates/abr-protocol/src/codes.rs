//! Every error code the runner answers with, in one table: the server builds its error
//! envelopes from it, `abr-client` matches on it, and the error table of `docs/http-api.md`
//! is checked against it.

/// Whether retrying the same request may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retry {
    /// It may: the condition is temporary (the envelope says `retryable: true`).
    Yes,
    /// It will not: change the request, the configuration or the state first.
    No,
    /// The envelope's `retryable` says, case by case.
    Depends,
}

/// One error code: its wire name, the HTTP status it comes with, and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode {
    /// The stable snake_case name in `{"error": {"code": …}}`.
    pub code: &'static str,
    /// The HTTP status it is answered with.
    pub status: u16,
    /// Whether a retry may succeed.
    pub retry: Retry,
    /// What it means, for the docs' error table.
    pub meaning: &'static str,
}

impl ErrorCode {
    /// An envelope body with this code, `message`, and `retryable` from [`Retry`]
    /// ([`Retry::Depends`] answers `false`; set it with [`ErrorBody::retryable`]).
    ///
    /// [`ErrorBody::retryable`]: crate::ErrorBody::retryable
    pub fn body(&self, message: impl Into<String>) -> crate::ErrorBody {
        crate::ErrorBody::new(self.code, message).retryable(self.retry == Retry::Yes)
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.code
    }
}

impl PartialEq<ErrorCode> for str {
    fn eq(&self, other: &ErrorCode) -> bool {
        self == other.code
    }
}

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $status:literal, $retry:ident, $meaning:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: ErrorCode = ErrorCode {
                code: $code,
                status: $status,
                retry: Retry::$retry,
                meaning: $meaning,
            };
        )*
        /// Every code, by status.
        pub const ALL: &[ErrorCode] = &[$($name),*];
    };
}

codes! {
    /// The body is not JSON.
    INVALID_JSON = "invalid_json", 400, No, "the body is not JSON";
    /// The body could not be read.
    INVALID_BODY = "invalid_body", 400, No, "the body could not be read";
    /// A live-view socket endpoint got a request that is not a WebSocket handshake.
    WEBSOCKET_REQUIRED = "websocket_required", 400, No, "a live-view socket endpoint got no WebSocket handshake";
    /// No or a wrong bearer token (with `WWW-Authenticate: Bearer`).
    UNAUTHORIZED = "unauthorized", 401, No, "no valid bearer token (`WWW-Authenticate: Bearer`)";
    /// The key's role does not allow this (or a read-only key asked to commit).
    FORBIDDEN = "forbidden", 403, No, "the key's role does not allow this, or a read-only key asked to commit (see the roles table)";
    /// The key is bound to another tenant than the one the request names.
    TENANT_FORBIDDEN = "tenant_forbidden", 403, No, "the key is bound to one tenant and the request names another (`x-tenant-id` or a body's tenant)";
    /// The task's proposer (or an agent) tried to approve it.
    SELF_APPROVAL = "self_approval", 403, No, "a task is approved or rejected by an approver other than the key that proposed it";
    /// The capture is bound to another workspace or account.
    BINDING_MISMATCH = "binding_mismatch", 403, No, "the capture is bound to another workspace or account";
    /// The platform's policy forbids this execution mode.
    EXECUTION_DENIED = "execution_denied", 403, No, "the platform's policy forbids this (unattended, or interactive capture)";
    /// A live-view socket from an origin that is neither the runner's nor an embedding app's.
    ORIGIN_NOT_ALLOWED = "origin_not_allowed", 403, No, "a live-view socket from another site (see `ABR_LIVE_EMBED_ORIGINS`)";
    /// `/mcp` got a `Host` that names no host of this runner (against DNS rebinding).
    HOST_NOT_ALLOWED = "host_not_allowed", 403, No, "`/mcp` got a `Host` header that names no host of this runner (loopback, the bind address, `ABR_PUBLIC_URL`'s host): refused against DNS rebinding";
    /// The runner's egress policy refuses the address a page went to (loopback, private,
    /// link-local, reserved): no site decision can allow it.
    EGRESS_REFUSED = "egress_refused", 403, No, "the runner's egress policy refuses this address (loopback, private, link-local or reserved, directly or by a redirect): no site decision can allow it (`ABR_EGRESS_ALLOW_PRIVATE` names the exceptions)";
    /// The tenant denied the site (or it is outside its allow list): nothing was opened.
    SITE_DENIED = "site_denied", 403, No, "the tenant denied this site (or it is outside the tenant's allow list): nothing was opened (PUT /v1/sites/{domain} decides)";
    /// The tenant's owner declined this browser profile.
    CONSENT_REFUSED = "consent_refused", 403, No, "the tenant's owner declined this named browser profile: nothing was opened (PUT /v1/profiles/{name}/consent decides)";
    /// No key with this id.
    KEY_NOT_FOUND = "key_not_found", 404, No, "no key with this id";
    /// No open approval link with this token.
    APPROVAL_LINK_NOT_FOUND = "approval_link_not_found", 404, No, "this approval link was used, expired or never existed: a link decides once";
    /// No such endpoint.
    NOT_FOUND = "not_found", 404, No, "no such endpoint";
    /// No platform with this id.
    UNKNOWN_PLATFORM = "unknown_platform", 404, No, "no platform with this id";
    /// No open capture with this id (never existed, finished, cancelled or expired).
    CAPTURE_NOT_FOUND = "capture_not_found", 404, No, "no open capture with this id";
    /// No open capture with this live token.
    LIVE_VIEW_NOT_FOUND = "live_view_not_found", 404, No, "no open capture with this live token";
    /// No stored session for this account and platform.
    SESSION_NOT_FOUND = "session_not_found", 404, No, "no stored session for this account and platform";
    /// No task with this id for this tenant (another tenant's task is not found either).
    TASK_NOT_FOUND = "task_not_found", 404, No, "no task with this id for this tenant (another tenant's id is not found either)";
    /// No journaled post with this id for this tenant.
    POST_NOT_FOUND = "post_not_found", 404, No, "no post with this id for this tenant (another tenant's id is not found either)";
    /// The task is not paused: there is no takeover to act on.
    NO_TAKEOVER = "no_takeover", 404, No, "the task is not paused for a person: no takeover to activate, resume or end";
    /// No task, browse session or post with this id for this tenant.
    RUN_NOT_FOUND = "run_not_found", 404, No, "no task, browse session or post with this id for this tenant (another tenant's id is not found either)";
    /// No artifact with this id for this tenant.
    ARTIFACT_NOT_FOUND = "artifact_not_found", 404, No, "no artifact with this id for this tenant (deleted, expired, or another tenant's)";
    /// `POST /v1/runners/{id}/update` for a runner not connected to the hub for the caller.
    RUNNER_NOT_FOUND = "runner_not_found", 404, No, "no runner with this id is connected to the hub for this tenant: nothing was asked";
    /// An approval or task that kept no preview.
    PREVIEW_NOT_FOUND = "preview_not_found", 404, No, "no preview was kept for this approval (screenshots off, none asked for, or the frame could not be redacted): its `previewNote` says why";
    /// No replay frame with this run and number for this tenant.
    FRAME_NOT_FOUND = "frame_not_found", 404, No, "no replay frame with this run and number for this tenant (another tenant's is not found either)";
    /// No open browse session with this id for this tenant (closed, expired, or another
    /// tenant's).
    BROWSE_NOT_FOUND = "browse_not_found", 404, No, "no open browse session with this id for this tenant (closed, idle too long, or another tenant's)";
    /// No decision about this site for this tenant.
    SITE_NOT_FOUND = "site_not_found", 404, No, "the tenant has no decision about this site (another tenant's is not found either)";
    /// The endpoint does not take this method (with `Allow`).
    METHOD_NOT_ALLOWED = "method_not_allowed", 405, No, "the endpoint does not take this method (`Allow` lists those it does)";
    /// No element with this reference on the page (take a new snapshot).
    REF_NOT_FOUND = "ref_not_found", 409, No, "no element with this reference on the page now: take a new snapshot and act on one of its references";
    /// The user has not signed in yet; the capture stays open.
    NOT_AUTHENTICATED = "not_authenticated", 409, Yes, "the capture's browser is not signed in yet: poll again";
    /// A stored session named with another platform than the one it is bound to.
    SESSION_BOUND = "session_bound", 409, No, "the session is bound to another platform (kept for it, or read out of it): store it again for that platform, or without naming one";
    /// Nobody decided on the named profile yet.
    CONSENT_REQUIRED = "consent_required", 409, No, "the run names a browser profile the tenant's owner has not decided on: the owner was asked once (`GET /v1/profiles`), nothing was opened; submit again after PUT /v1/profiles/{name}/consent allows it";
    /// `approve` named a plan hash other than the stored plan's.
    PLAN_HASH_MISMATCH = "plan_hash_mismatch", 409, No, "the approval names another plan than the one stored: read the task again and approve what it shows";
    /// A browse session's approval that is not the pending one.
    ACTION_NOT_PENDING = "action_not_pending", 409, No, "the browse session waits for no approval with this id (decided, replaced by a later action, or never asked): read `GET /v1/browse/{id}/approval`";
    /// `approve` or `reject` of a task that is not waiting for approval.
    TASK_NOT_PENDING = "task_not_pending", 409, No, "the task is not waiting for approval (approved, rejected, or never needed it)";
    /// `run` of a task that is not approved and waiting, or already running or ended.
    TASK_NOT_QUEUED = "task_not_queued", 409, No, "the task is not approved and waiting to run (an approved plan runs at most once)";
    /// `recheck` or `assert-not-posted` of a task or post whose outcome is not uncertain.
    NOT_UNCERTAIN = "not_uncertain", 409, No, "the task's or post's outcome is not uncertain: nothing to re-check or assert";
    /// `retry` of a task that may not be retried.
    TASK_NOT_RETRYABLE = "task_not_retryable", 409, No, "only a failed task, or an uncertain one with an unspent owner assertion, can be retried, once";
    /// The owner already asserted on this task or post.
    ALREADY_ASSERTED = "already_asserted", 409, No, "the owner already asserted on this task or post (one assertion, one new attempt)";
    /// The takeover is over (resumed, ended or expired).
    TAKEOVER_OVER = "takeover_over", 409, No, "the takeover is already resumed, ended or expired";
    /// A person is already asked for this run.
    TAKEOVER_PENDING = "takeover_pending", 409, No, "a person is already asked for this run (its takeover is requested or active): wait for it to be resumed";
    /// The field refused the value a person supplied.
    INPUT_NOT_ACCEPTED = "input_not_accepted", 409, No, "the field did not take the supplied value (read-only, gone, or not a field): the takeover still waits; supply it again or take over in the live view";
    /// A post through a read-only platform.
    BLOCKED_ACTION = "blocked_action", 409, No, "the platform, plan or browse session is read-only (or the request a dry run): the committing action was refused before it reached the page, or its request before it left the browser";
    /// An `Idempotency-Key` reused with a different body.
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused", 409, No, "the `Idempotency-Key` was used with a different body";
    /// A runner with this id is already connected to the hub.
    RUNNER_CONFLICT = "runner_conflict", 409, No, "a runner with this id is already connected to the hub (`abr up --force` replaces it)";
    /// The tenant holds its maximum of artifacts (count or bytes).
    ARTIFACT_QUOTA = "artifact_quota", 409, No, "the tenant holds its maximum of artifacts (`ABR_ARTIFACT_TENANT_MAX_COUNT` files or `ABR_ARTIFACT_TENANT_MAX_BYTES` bytes): delete some first";
    /// The capture's browser is gone: it can never finish.
    CAPTURE_BROWSER_LOST = "capture_browser_lost", 410, No, "the capture's browser was lost (closed, crashed, or its remote session replaced): cancel it and start a new one";
    /// The fleet replica that held the browse session, capture, run or relay runner stopped.
    REPLICA_LOST = "replica_lost", 410, No, "the fleet replica that held this browse session, capture, run or relay runner stopped or restarted: it is lost and never resumed; open a new one (a task is ended by the fleet's sweep as a restart ends it)";
    /// The body is over the limit.
    PAYLOAD_TOO_LARGE = "payload_too_large", 413, No, "the body is over `ABR_BODY_LIMIT_BYTES`";
    /// The artifact is over the runner's size cap for one file.
    ARTIFACT_TOO_LARGE = "artifact_too_large", 413, No, "the file is over `ABR_ARTIFACT_MAX_BYTES`";
    /// The artifact's sniffed type is not one the runner keeps.
    ARTIFACT_TYPE_REFUSED = "artifact_type_refused", 415, No, "the file's type (sniffed from its bytes) is not in `ABR_ARTIFACT_TYPES`";
    /// The body is not declared as JSON.
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type", 415, No, "the body is not declared as `application/json`";
    /// Well-formed JSON of the wrong shape; the message never echoes values.
    INVALID_REQUEST = "invalid_request", 422, No, "JSON of the wrong shape, or a field out of bounds (the message never echoes values)";
    /// An invalid or over-broad session scope.
    INVALID_SCOPE = "invalid_scope", 422, No, "an invalid or over-broad session scope, refused before any browser starts";
    /// A platform id registered twice.
    DUPLICATE_PLATFORM = "duplicate_platform", 422, No, "a platform id registered twice";
    /// An invalid step plan; the message names the step index (`steps[2]`).
    INVALID_PLAN = "invalid_plan", 422, No, "an invalid step plan, refused before any browser starts; the message names the step (`steps[2]`)";
    /// A runner older than the hub's minimum version connected.
    RUNNER_TOO_OLD = "runner_too_old", 426, No, "the hub takes no runner of this version (`ABR_HUB_MIN_RUNNER_VERSION`): upgrade the runner; the refusal names both versions";
    /// Too many captures are open.
    CAPTURE_LIMIT = "capture_limit", 429, Yes, "too many captures are open (`Retry-After`)";
    /// The provider is at capacity: a single-session backend busy with a capture, say (with
    /// `Retry-After`).
    PROVIDER_BUSY = "provider_busy", 429, Yes, "the browser provider is at capacity, e.g. a single-session backend holding a capture (`Retry-After`)";
    /// The live token holds its maximum of sockets.
    LIVE_VIEW_LIMIT = "live_view_limit", 429, Yes, "the live token already holds `ABR_LIVE_MAX_SOCKETS` sockets";
    /// The tenant holds its maximum of concurrent browser sessions (with `Retry-After`).
    TENANT_CONCURRENCY_LIMIT = "tenant_concurrency_limit", 429, Yes, "the tenant holds its maximum of concurrent browser sessions (`Retry-After`)";
    /// The tenant used its executions of the UTC day (with `Retry-After`: seconds to the next
    /// UTC day).
    TENANT_DAILY_LIMIT = "tenant_daily_limit", 429, Yes, "the tenant used its executions of the UTC day (`Retry-After`: seconds to the next UTC day)";
    /// One failed execution was retried its maximum number of times.
    TENANT_RETRY_LIMIT = "tenant_retry_limit", 429, No, "this execution was retried its maximum number of times";
    /// An internal failure; details are logged, not returned.
    INTERNAL = "internal", 500, No, "an internal failure (details are logged, not returned)";
    /// The job's task failed unexpectedly; a post may have been published.
    JOB_PANICKED = "job_panicked", 500, No, "the job failed unexpectedly; a post may have been published: do not retry";
    /// A strategy panicked outside of a post (probe, capture check).
    STRATEGY_PANICKED = "strategy_panicked", 500, No, "the platform's strategy failed unexpectedly";
    /// The provider panicked while acquiring or releasing a browser.
    PROVIDER_PANICKED = "provider_panicked", 500, No, "the browser provider failed unexpectedly";
    /// The runner's store is misconfigured (a missing or wrong `ABR_SESSION_KEY`, a database
    /// a newer binary migrated): the message names the setting; no retry passes before.
    STORE_MISCONFIGURED = "store_misconfigured", 500, No, "the runner's store is misconfigured: the message names the setting to fix (e.g. `ABR_SESSION_KEY`); no retry passes before";
    /// The configured provider cannot do this (interactive capture on a headless backend).
    UNSUPPORTED = "unsupported", 501, No, "the configured provider cannot do this";
    /// The provider refused as unsupported.
    PROVIDER_UNSUPPORTED = "provider_unsupported", 501, No, "the provider does not support this";
    /// The browser or remote service cannot be reached.
    PROVIDER_UNAVAILABLE = "provider_unavailable", 502, Yes, "the browser or remote service cannot be reached";
    /// The provider is configured wrongly or something it needs is missing.
    PROVIDER_MISCONFIGURED = "provider_misconfigured", 502, No, "the provider is configured wrongly or something it needs is not installed";
    /// The provider rejected the request.
    PROVIDER_REJECTED = "provider_rejected", 502, No, "the provider rejected the request";
    /// Any other provider failure.
    PROVIDER_ERROR = "provider_error", 502, No, "another provider failure";
    /// The browser died or the remote session expired mid-job.
    BROWSER_CRASHED = "browser_crashed", 502, Yes, "the browser died or the remote session ended mid-job";
    /// A strategy step failed outside of a post.
    STRATEGY_FAILED = "strategy_failed", 502, Depends, "a strategy step failed outside of a post (probe, capture check)";
    /// The session store failed.
    STORE_FAILED = "store_failed", 502, Yes, "the session store failed";
    /// The proxied provider viewer did not answer, answered too much, or redirected.
    LIVE_VIEW_UNAVAILABLE = "live_view_unavailable", 502, No, "the proxied provider viewer failed (no answer, too large, a redirect)";
    /// The relayed request's runner connection dropped before its commit point.
    RUNNER_DISCONNECTED = "runner_disconnected", 502, Yes, "the runner's connection dropped before the request reached its commit point: nothing was done, retry";
    /// The relayed request's runner connection dropped after its commit point.
    RUNNER_OUTCOME_UNKNOWN = "runner_outcome_unknown", 502, No, "the runner's connection dropped after the request passed its commit point: it may have happened; check the record on the runner (`GET /v1/posts/{id}`, `GET /v1/tasks/{id}`) once it reconnects, do not retry";
    /// The owner replica took the forwarded call and its answer was lost.
    REPLICA_OUTCOME_UNKNOWN = "replica_outcome_unknown", 502, No, "the fleet replica that holds it took the forwarded call and its answer was lost: it may have acted; read the record, do not retry";
    /// The runner's answer is over the relay's frame limit.
    RELAY_FRAME_TOO_LARGE = "relay_frame_too_large", 502, No, "the runner's answer is over the relay's frame limit";
    /// The runner is at capacity: every job slot busy and the queue full (with `Retry-After`).
    OVERLOADED = "overloaded", 503, Yes, "every job slot is busy and the queue is full (`Retry-After`)";
    /// The job waited for a slot past its queue deadline: nothing ran.
    QUEUE_TIMEOUT = "queue_timeout", 503, Yes, "the job waited for a slot past its queue deadline: nothing ran (`Retry-After`)";
    /// No live relay connection for the runner named in `x-abr-runner`.
    RUNNER_OFFLINE = "runner_offline", 503, Yes, "no runner with this id is connected to the hub (`x-abr-runner`): nothing was done";
    /// The owner replica did not take the forwarded call.
    REPLICA_UNREACHABLE = "replica_unreachable", 503, Yes, "the fleet replica that holds this browse session, capture, run or relay runner did not take the forwarded call: nothing was done, retry (once its heartbeat lapses the answer is `replica_lost`)";
    /// The named runner is draining (`abr down`): it takes no new work.
    RUNNER_DRAINING = "runner_draining", 503, Yes, "the runner is shutting down and takes no new work: nothing was done";
    /// A step did not finish in time (nothing that may have published had started).
    TIMEOUT = "timeout", 504, Yes, "a step did not finish in time; nothing that may have acted had started";
    /// The provider did not answer in time.
    PROVIDER_TIMEOUT = "provider_timeout", 504, Yes, "the provider did not answer in time";
    /// A post that had started did not finish before the request deadline: it may have been
    /// published.
    TIMEOUT_OUTCOME_UNKNOWN = "timeout_outcome_unknown", 504, No, "a started post passed the request deadline: it may have been published, do not retry";
}

/// The code named `code`, if the runner has one.
pub fn lookup(code: &str) -> Option<&'static ErrorCode> {
    ALL.iter().find(|c| c.code == code)
}

/// The docs' error table (`docs/http-api.md`): one row per status, its codes, and what each
/// means.
pub fn markdown_table() -> String {
    let mut out = String::from("| status | code | retry | meaning |\n|---|---|---|---|\n");
    for c in ALL {
        let retry = match c.retry {
            Retry::Yes => "yes",
            Retry::No => "no",
            Retry::Depends => "see `retryable`",
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            c.status, c.code, retry, c.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_sorted_by_status() {
        let mut seen = std::collections::BTreeSet::new();
        for c in ALL {
            assert!(seen.insert(c.code), "{} twice", c.code);
            assert!(
                c.code
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{}",
                c.code
            );
            assert!((400..600).contains(&c.status), "{}", c.code);
        }
        assert!(ALL.windows(2).all(|w| w[0].status <= w[1].status));
        assert_eq!(lookup("not_authenticated"), Some(&NOT_AUTHENTICATED));
        assert!("overloaded" == OVERLOADED);
        assert!(NOT_AUTHENTICATED.body("x").retryable);
        assert!(!BINDING_MISMATCH.body("x").retryable);
    }
}
