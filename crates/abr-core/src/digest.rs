//! Canonical digests: the plan hash an approver approves ([`plan_hash`]), the keyed
//! hashes idempotency keys are bound to ([`request_hash`], [`post_request_hash`]), and the
//! digest an API key's token is kept as ([`token_digest`]).

use std::collections::{BTreeMap, BTreeSet};

use abr_protocol::{
    AgentSessionState, InputShown, PostRequest, SecretValue, SessionScopeSpec, StepPlan,
    TaskAccount, TaskRequest,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 (lowercase hex) of the plan's canonical JSON: object keys sorted, no
/// whitespace, prefixed with a version tag. It covers every field of the plan (target URL,
/// steps, verification, risk, reasoning, confidence) and nothing else: not the inputs, the
/// session or the tenant. The same plan written with keys in another order, or with the
/// snake_case spellings, has the same hash. A task's approval binds more
/// ([`approval_hash`]); a browse session's record names this one.
pub fn plan_hash(plan: &StepPlan) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"abr-plan-v1\n");
    hasher.update(canonical_json(plan));
    hex(&hasher.finalize())
}

/// What an approval binds, besides the plan: the values the steps are filled with (and
/// which of them the approver saw masked), the session and the platform it runs with.
#[derive(serde::Serialize)]
struct Approved<'a> {
    plan: &'a StepPlan,
    inputs: &'a BTreeMap<String, SecretValue>,
    secret: BTreeSet<&'a str>,
    account: Option<&'a TaskAccount>,
    session: Option<&'a AgentSessionState>,
    scope: Option<&'a SessionScopeSpec>,
    dry_run: bool,
}

/// The hash a task's approval binds (its record's `planHash`): SHA-256 of the canonical
/// JSON of the plan, the filled values (`inputs`, with which of them are `shown` masked),
/// the session it runs with (the stored session's id and the platform it is bound to, as
/// `account` says; a session sent with the task whole) and its scope, the platform the task
/// names and whether it is a dry run. Two tasks that differ in any of these, the same
/// steps filled with other values among them, have different hashes. Keyed with `key` (a
/// runner secret) when given, so that the hash, shown to every reader of the record,
/// confirms no guessed secret offline.
pub fn approval_hash(
    request: &TaskRequest,
    shown: &[InputShown],
    account: Option<&TaskAccount>,
    key: Option<&SecretValue>,
) -> String {
    let approved = Approved {
        plan: &request.plan,
        inputs: &request.inputs,
        secret: shown
            .iter()
            .filter(|i| i.secret)
            .map(|i| i.name.as_str())
            .collect(),
        account,
        session: request.session.as_ref(),
        scope: request.scope.as_ref(),
        dry_run: request.dry_run,
    };
    keyed_hash(b"abr-approval-v1\n", &approved, key)
}

/// SHA-256 of a bearer token: what the store keeps of an API key, and what a presented
/// token is compared with (in constant time).
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The hash an idempotency key is bound to: SHA-256 of the canonical JSON of the whole
/// request (plan, inputs, session, scope, platform, ids), keyed with `key` when given (a
/// runner secret, so that the stored hash cannot be used to confirm a guessed input
/// offline).
pub fn request_hash(request: &TaskRequest, key: Option<&SecretValue>) -> String {
    keyed_hash(b"abr-task-request-v1\n", request, key)
}

/// SHA-256 (lowercase hex) of `tag`, then `key` when given, then the canonical JSON of
/// `value`: the one body hash idempotency keys are bound to (tasks and posts).
pub(crate) fn keyed_hash(
    tag: &[u8],
    value: &impl serde::Serialize,
    key: Option<&SecretValue>,
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tag);
    if let Some(key) = key {
        hasher.update(key.expose().as_bytes());
        hasher.update(b"\n");
    }
    hasher.update(canonical_json(value));
    hex(&hasher.finalize())
}

fn canonical_json(value: &impl serde::Serialize) -> Vec<u8> {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut out = Vec::new();
    write_canonical(&value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a scalar into a Vec cannot fail.
    if let Ok(bytes) = serde_json::to_vec(value) {
        out.extend_from_slice(&bytes);
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash an idempotency key of a post is bound to: SHA-256 of the canonical JSON of the
/// whole request (platform, content, session or `sessionId`, scope, ids), keyed with a
/// runner secret, so that it can be neither computed from the key nor used to confirm a
/// guessed session or content offline. The same hashing as tasks'
/// ([`request_hash`]), with a tag of its own.
pub fn post_request_hash(request: &PostRequest, key: &SecretValue) -> String {
    keyed_hash(b"abr-post-request-v1\n", request, Some(key))
}
