//! abr-client against a fake runner on loopback: requests sent, answers read.
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

mod common;
mod guard;
mod runner;
mod tasks;
