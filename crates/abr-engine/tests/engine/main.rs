//! abr-engine's API, [`abr_engine::Engine`], on the core's fakes (the `testing` feature): no
//! browser, no HTTP. The tests of the engine's parts are unit tests of the crate
//! (`src/tests`).
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

mod facade;

use std::sync::Arc;

use abr_core::principal::{Actor, Principal, Tenants};
use abr_protocol::Role;

/// An agent's key of `tenant`: it proposes, never approves.
pub(crate) fn agent(tenant: &str) -> Actor {
    actor("key_agent", "the agent", Role::Agent, tenant)
}

/// An approver's key of `tenant` (named "alice").
pub(crate) fn approver(tenant: &str) -> Actor {
    actor("key_approver", "alice", Role::Approver, tenant)
}

fn actor(id: &str, name: &str, role: Role, tenant: &str) -> Actor {
    Arc::new(Principal::new(id, name, role, Tenants::One(tenant.to_owned()), false).unwrap())
        .act_for(None)
        .unwrap()
}
