//! [`TaskQueue`]: tasks waiting to run, shared by a fleet. A replica whose job slots are all
//! busy gives a queued task to the fleet instead of holding it; any replica with a free slot
//! claims the oldest one (one claimer per task, whatever races) and runs it as its own.
//! A task that never started is safe to run anywhere; one that started is never given away.

use async_trait::async_trait;

use crate::error::CoreError;

/// Where queued tasks wait for a replica with a free slot.
///
/// # Contract
/// - [`release`](Self::release) gives the task `id` of `tenant` to the fleet, only if it is
///   queued (never started) and held by this process: whether it did.
/// - [`claim`](Self::claim) takes the oldest released task for this process (it holds it
///   from then on, as a task it created): of racing claimers, each task goes to one.
/// - A released task is not a dead replica's unfinished work: a restart or the fleet's
///   sweep never ends it; it waits to be claimed.
#[async_trait]
pub trait TaskQueue: Send + Sync + 'static {
    /// Gives a queued task to the fleet.
    async fn release(&self, tenant: &str, id: &str) -> Result<bool, CoreError>;

    /// Takes the oldest released task: its tenant and id.
    async fn claim(&self) -> Result<Option<(String, String)>, CoreError>;
}
