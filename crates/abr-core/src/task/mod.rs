//! Browser tasks: approved step plans run in an isolated browser with a truthful outcome.
//!
//! - [`StepRunner`]: the browser mechanics of a step, implemented by the providers' contexts
//!   (and by the fakes).

mod runner;

pub use runner::{BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner};
