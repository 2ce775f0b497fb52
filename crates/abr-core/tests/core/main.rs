//! abr-core's contracts and services on the fakes (the `testing` feature).
//!
//! One test binary for the crate: each former test file is a module here, with one
//! shared harness (`common`) where the crate has one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    reason = "test code: a failed step is the test's failure"
)]

mod browse;
mod capture;
mod codes;
mod declared;
mod guard;
mod lease;
mod live;
mod plan_rules;
mod post_journal;
mod poster;
mod serialized;
mod tasks;
