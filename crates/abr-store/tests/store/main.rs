//! The SQLite store: records, sealed sessions, frames, migrations.
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

mod conformance;
mod conformance_pg;
mod files;
mod frames;
mod posts;
mod profiles;
mod races_pg;
mod sessions;
mod tasks;
