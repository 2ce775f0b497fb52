//! The runner: HTTP handlers in-process on the core's fakes, and end to end on Chromium.
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

mod api_contract;
mod api_errors;
mod approval_page;
mod artifacts_e2e;
mod browse_api;
mod browse_e2e;
mod chaos_e2e;
mod cli_session_filter;
mod cli_up;
mod clients;
mod common;
mod data_dir;
mod declared_demo;
mod e2e;
mod egress;
mod events_api;
mod guard_api;
mod guard_e2e;
mod lifecycle;
mod lists;
mod live_view;
mod mcp_api;
mod mcp_client;
mod metrics_api;
mod openapi;
mod posts_api;
mod principals;
mod read_only_attacks;
mod readme;
mod relay;
mod relay_e2e;
mod relay_live;
mod relay_process;
mod remote_live_view;
mod replica_api;
mod strict_requests;
mod tasks_api;
mod tasks_e2e;
mod timeline_e2e;
mod traces;
