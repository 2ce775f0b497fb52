//! Browser tasks: approved step plans run in an isolated browser with a truthful outcome,
//! and browse sessions, whose steps come one at a time from a brain outside the runner.
//!
//! - [`TaskRunner`]: create, approve, reject, run, re-check, assert, retry, recover; and
//!   browse sessions ([`TaskRunner::browse_open`]).
//! - `rails`, `network` and `pauses`: a step through the guard rails, the network gate of a
//!   run, and the pause a person resolves.

pub(crate) mod announce;
pub(crate) mod approvals;
pub(crate) mod browse;
pub(crate) mod browse_act;
pub(crate) mod browse_handoff;
pub(crate) mod browses;
pub(crate) mod kit;
pub(crate) mod lifecycle;
pub(crate) mod network;
pub(crate) mod outcome;
pub(crate) mod pauses;
pub(crate) mod preview;
pub(crate) mod profiles;
pub(crate) mod rails;
pub(crate) mod run;
pub(crate) mod runner;
pub(crate) mod takeovers;

pub use runner::{Created, TaskEnd};
