//! The providers on real Debian Chromium: the conformance suite, egress, probes, steps.
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

mod cdp;
mod chips;
mod egress;
mod faults;
mod kernel;
mod live;
mod local;
mod lost;
mod masks;
mod node_interop;
mod probe;
mod steel;
mod steps;
