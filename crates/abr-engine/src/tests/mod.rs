//! The engine's parts on the core's fakes (the `testing` feature): no browser, no HTTP.
//! Unit tests of the crate, one test binary with the library: what they drive (the task
//! runner, the poster, the journal, captures, keys, handoffs) is the crate's own, not its
//! API. What drives [`Engine`](crate::Engine), the API, stays in `tests/engine`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    reason = "test code: a failed step is the test's failure"
)]

mod artifacts;
mod browse;
mod capture;
mod chaos;
mod codes;
mod declared;
mod guard;
mod keys;
mod live;
mod post_journal;
mod poster;
mod profiles;
mod tasks;

use std::sync::Arc;

use abr_core::principal::{Actor, Principal, Right, Tenants};
use abr_protocol::Role;

/// An agent's key of `tenant`: it proposes, never approves.
/// `actor` let through the door for `right`, as the engine does before it calls a part.
pub(crate) fn checked(actor: &Actor, right: Right) -> crate::caller::Caller {
    crate::caller::Caller::checked(actor, right).unwrap()
}

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

/// Every log line written on this thread (every level) while the answer lives: a canary test
/// looks for its secret there.
pub(crate) struct Logs {
    buffer: Arc<std::sync::Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Logs {
    /// What was logged so far.
    pub(crate) fn contents(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().unwrap()).into_owned()
    }
}

#[derive(Clone)]
struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures the logs of this thread (a current-thread test runtime's tasks included).
pub(crate) fn capture_logs() -> Logs {
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    let writer = LogWriter(Arc::clone(&buffer));
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    Logs {
        buffer,
        _guard: tracing::subscriber::set_default(subscriber),
    }
}
