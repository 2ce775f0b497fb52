//! abr-core's contracts and policies on the fakes (the `testing` feature).
//!
//! One test binary for the crate: each former test file is a module here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    reason = "test code: a failed step is the test's failure"
)]

mod fuzz;
mod lease;
mod plan_rules;
mod serialized;
mod store_conformance;
