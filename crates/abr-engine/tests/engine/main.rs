//! abr-engine's application on the core's fakes (the `testing` feature): no browser, no
//! HTTP.
//!
//! One test binary for the crate: each test file is a module here.

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
mod facade;
mod guard;
mod live;
mod post_journal;
mod poster;
mod tasks;
