//! The wire types' contracts, from outside the crate.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "test code: a failed step is the test's failure"
)]

mod schema;
