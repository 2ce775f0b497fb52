//! What the load did and what it was answered, operation by operation: the record the
//! checks hold against the demo site's ground truth, and the report counts.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use abr_client::ClientError;
use abr_protocol::{AgentPostResult, CaptureRef, PostOutcome, PostRequest, PostState, TaskState};

/// What one call answered, reduced to what the checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A post confirmed.
    Confirmed,
    /// A post that may have happened.
    Uncertain,
    /// The session was signed out: nothing done.
    NeedsReauth,
    /// Failed with nothing posted.
    Failed,
    /// `202`: the key's post still runs (on another call, or replica).
    Running,
    /// An error envelope: its code and whether it says a retry is safe (nothing was done).
    Error {
        /// Its code.
        code: String,
        /// Its `retryable`.
        retryable: bool,
    },
    /// No answer (the connection failed or timed out): it may have acted.
    Transport(String),
}

impl Answer {
    /// A post's result.
    pub(crate) fn of_result(result: &AgentPostResult) -> Self {
        match result.outcome() {
            PostOutcome::Confirmed => Self::Confirmed,
            PostOutcome::Uncertain => Self::Uncertain,
            PostOutcome::NeedsReauth => Self::NeedsReauth,
            PostOutcome::Failed => Self::Failed,
        }
    }

    /// A post record's state.
    pub(crate) fn of_state(state: PostState) -> Self {
        match state {
            PostState::Running => Self::Running,
            PostState::Succeeded => Self::Confirmed,
            PostState::Uncertain => Self::Uncertain,
            PostState::NeedsReauth => Self::NeedsReauth,
            PostState::Failed => Self::Failed,
        }
    }

    /// A failed call.
    pub(crate) fn of_error(error: &ClientError) -> Self {
        match error {
            ClientError::Api {
                code, retryable, ..
            } => Self::Error {
                code: code.clone(),
                retryable: *retryable,
            },
            // Never connected: nothing was sent, nothing done.
            other if other.is_connect() => Self::Error {
                code: "connect_failed".into(),
                retryable: true,
            },
            other => Self::Transport(other.to_string()),
        }
    }

    /// Its label in the report.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Confirmed => "succeeded".into(),
            Self::Uncertain => "uncertain".into(),
            Self::NeedsReauth => "needs_reauth".into(),
            Self::Failed => "failed".into(),
            Self::Running => "running".into(),
            Self::Error { code, .. } => format!("error:{code}"),
            Self::Transport(_) => "no_answer".into(),
        }
    }

    /// An error that says it may have acted (or no answer at all): only the record knows.
    pub(crate) fn is_ambiguous(&self) -> bool {
        match self {
            Self::Transport(_) => true,
            Self::Error { code, retryable } => {
                !retryable
                    && (code.ends_with("_outcome_unknown")
                        || matches!(code.as_str(), "internal" | "job_panicked"))
            }
            _ => false,
        }
    }
}

/// One call of a post.
#[derive(Debug, Clone)]
pub(crate) struct PostCall {
    /// The replica called (`relay`: the relay runner, through the hub).
    pub(crate) replica: String,
    /// What it answered.
    pub(crate) answer: Answer,
    /// The error code of a result that was not confirmed.
    pub(crate) code: Option<String>,
    /// The record it named.
    pub(crate) post_id: Option<String>,
    /// `idempotent-replayed: true`.
    pub(crate) replayed: bool,
    /// Sent at once with another call of the same key.
    pub(crate) concurrent: bool,
    /// Sent after the load, to learn what an ambiguous answer left.
    pub(crate) resolution: bool,
}

/// A post: one idempotency key, its text, every call made with it.
#[derive(Debug, Clone)]
pub(crate) struct PostOp {
    /// When it started, in seconds after the run's start.
    pub(crate) at: f64,
    /// The idempotency key.
    pub(crate) key: String,
    /// The post's text (unique to it).
    pub(crate) text: String,
    /// The request (a repeat under the key must send the same body).
    pub(crate) request: PostRequest,
    /// Sent through the hub to the relay runner.
    pub(crate) relay: bool,
    /// The calls, in order.
    pub(crate) calls: Vec<PostCall>,
    /// The records' states after the load, by post id.
    pub(crate) records: BTreeMap<String, Answer>,
}

/// A task: proposed by the agent's key, approved by the approver's.
#[derive(Debug, Clone)]
pub(crate) struct TaskOp {
    /// When it started, in seconds after the run's start.
    pub(crate) at: f64,
    /// The replica it was proposed on.
    pub(crate) replica: String,
    /// The email the plan adds (unique to it).
    pub(crate) email: String,
    /// The task's id, once created.
    pub(crate) task_id: Option<String>,
    /// What the create answered when it failed.
    pub(crate) create_error: Option<Answer>,
    /// What the approval answered when it failed.
    pub(crate) approve_error: Option<Answer>,
    /// Rejected after the load (its approval never went through).
    pub(crate) rejected_after: bool,
    /// The last state read.
    pub(crate) state: Option<TaskState>,
    /// Its error code, when it ended with one.
    pub(crate) error_code: Option<String>,
}

impl TaskOp {
    /// Its label in the report.
    pub(crate) fn label(&self) -> String {
        if let Some(error) = &self.create_error {
            return format!("create_{}", error.label());
        }
        match (self.state, &self.error_code) {
            (Some(state), Some(code)) if !matches!(state, TaskState::Succeeded) => {
                format!("{}:{code}", state_name(state))
            }
            (Some(state), _) => state_name(state).to_owned(),
            (None, _) => "unknown".into(),
        }
    }
}

/// A browse session: open the composer, snapshot, type a text (nothing committing), close.
#[derive(Debug, Clone)]
pub(crate) struct BrowseOp {
    /// When it started, in seconds after the run's start.
    pub(crate) at: f64,
    /// The replica that holds it.
    pub(crate) replica: usize,
    /// The text typed (unique to it): never posted.
    pub(crate) text: String,
    /// Its id, once open.
    pub(crate) browse_id: Option<String>,
    /// How it went: `closed`, or the step that failed and how.
    pub(crate) outcome: String,
    /// Whether its close was answered (else closed after the load, or by its idle time).
    pub(crate) closed: bool,
    /// Whether the typing was reported committing (it must not be).
    pub(crate) committing: bool,
    /// Its record's state after the load (`closed`).
    pub(crate) state: Option<TaskState>,
}

/// A capture: a person (this program) signs in through the live view's socket.
#[derive(Debug, Clone)]
pub(crate) struct CaptureOp {
    /// When it started, in seconds after the run's start.
    pub(crate) at: f64,
    /// The replica that holds it.
    pub(crate) replica: usize,
    /// The username typed.
    pub(crate) username: String,
    /// How it went: `captured`, or the step that failed and how.
    pub(crate) outcome: String,
    /// For a captured session: whether it holds the site's session cookie, only cookies of
    /// the site, and is signed in on the site (its composer answers).
    pub(crate) session_ok: Option<Result<(), String>>,
    /// A capture whose cancel was not answered: cancelled again after the load.
    pub(crate) left_open: Option<CaptureRef>,
}

/// Everything the load did.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    inner: Mutex<Ops>,
}

/// The operations, by kind.
#[derive(Debug, Default, Clone)]
pub(crate) struct Ops {
    /// Posts.
    pub(crate) posts: Vec<PostOp>,
    /// Tasks.
    pub(crate) tasks: Vec<TaskOp>,
    /// Browse sessions.
    pub(crate) browses: Vec<BrowseOp>,
    /// Captures.
    pub(crate) captures: Vec<CaptureOp>,
}

impl Journal {
    /// Runs `f` on the operations.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Ops) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A copy of the operations.
    pub(crate) fn ops(&self) -> Ops {
        self.with(|ops| ops.clone())
    }
}

/// A task state's wire name.
pub(crate) fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::PendingApproval => "pending_approval",
        TaskState::Queued => "queued",
        TaskState::Running => "running",
        TaskState::Paused => "paused",
        TaskState::Succeeded => "succeeded",
        TaskState::Uncertain => "uncertain",
        TaskState::Failed => "failed",
        TaskState::NeedsReauth => "needs_reauth",
        TaskState::Rejected => "rejected",
        TaskState::Closed => "closed",
    }
}
