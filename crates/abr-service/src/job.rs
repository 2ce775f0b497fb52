//! One job of a request (a post, a probe, a re-check): admitted by the runner's
//! [`JobGate`](crate::runner::JobGate), run in its own task holding its slot.

use std::future::Future;
use std::sync::Arc;

use abr_core::CoreError;
use abr_protocol::codes;

use crate::api_error::ApiError;
use crate::runner::{Runner, RunnerContext};

/// Runs `job` in a slot of the runner's job gate, in its own task: a panic stays there (this
/// request fails with `job_panicked` and `on_panic`, the server goes on, a lease is released
/// by its drop), and a client that disconnects does not cut the job in half.
///
/// # Errors
/// Not admitted (`503`), the job's own error, or `job_panicked`.
pub(crate) async fn in_slot<C, T, F, Fut>(
    runner: &Arc<Runner<C>>,
    on_panic: &'static str,
    job: F,
) -> Result<T, ApiError>
where
    C: RunnerContext,
    T: Send + 'static,
    F: FnOnce(Arc<Runner<C>>) -> Fut,
    Fut: Future<Output = Result<T, CoreError>> + Send + 'static,
{
    let slot = runner.jobs.enter().await?;
    let work = job(Arc::clone(runner));
    // A relayed request's commit watch goes with its job (see `abr_core::commit_watch`).
    let watch = abr_core::commit_watch::current();
    let handle = tokio::spawn(abr_core::commit_watch::carry(watch, async move {
        let _slot = slot;
        work.await
    }));
    match handle.await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ApiError::new(codes::JOB_PANICKED, on_panic)),
    }
}
