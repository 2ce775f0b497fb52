//! Running one strategy or provider step under a deadline, catching panics.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt as _;

/// How a guarded step ended.
#[derive(Debug)]
pub(crate) enum Step<T, E> {
    /// Returned `Ok`.
    Done(T),
    /// Returned `Err`.
    Error(E),
    /// Did not finish before the deadline (the step's future was dropped).
    TimedOut,
    /// Panicked; the panic was contained.
    Panicked,
}

/// Runs `fut` with a deadline, turning a panic into [`Step::Panicked`].
pub(crate) async fn guarded<T, E>(
    deadline: Duration,
    fut: impl Future<Output = Result<T, E>>,
) -> Step<T, E> {
    match tokio::time::timeout(deadline, AssertUnwindSafe(fut).catch_unwind()).await {
        Err(_) => Step::TimedOut,
        Ok(Err(_panic)) => Step::Panicked,
        Ok(Ok(Ok(v))) => Step::Done(v),
        Ok(Ok(Err(e))) => Step::Error(e),
    }
}
