//! Running one strategy or provider step under a deadline, catching panics.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use abr_core::error::{CoreError, ProviderError, StrategyError};
use futures::FutureExt as _;

use crate::error::EngineError;

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

impl<T> Step<T, ProviderError> {
    /// The one mapping of a provider step's end to a result: its error as is, a timeout as
    /// [`CoreError::Timeout`], a panic as [`CoreError::ProviderPanicked`], whichever
    /// operation (post, probe, capture) ran it.
    pub(crate) fn provider(self, what: &'static str) -> Result<T, EngineError> {
        match self {
            Self::Done(v) => Ok(v),
            Self::Error(e) => Err(e.into()),
            Self::TimedOut => Err(EngineError::from(CoreError::Timeout(what))),
            Self::Panicked => Err(EngineError::from(CoreError::ProviderPanicked(what))),
        }
    }
}

impl<T> Step<T, StrategyError> {
    /// The one mapping of a strategy step's end to a result (outside a post's outcome
    /// rules): its error as [`CoreError::Strategy`], a timeout as [`CoreError::Timeout`], a
    /// panic as [`CoreError::StrategyPanicked`].
    pub(crate) fn strategy(self, what: &'static str) -> Result<T, EngineError> {
        match self {
            Self::Done(v) => Ok(v),
            Self::Error(e) => Err(EngineError::from(CoreError::Strategy(e))),
            Self::TimedOut => Err(EngineError::from(CoreError::Timeout(what))),
            Self::Panicked => Err(EngineError::from(CoreError::StrategyPanicked(what))),
        }
    }
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
