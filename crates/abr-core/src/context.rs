//! [`TaskContext`]: what a task runs on.

use crate::guard::probe::PageProbe;
use crate::live::LiveSurface;
use crate::provider::SessionContext;
use crate::step_runner::StepRunner;

/// What a task runs on: a browser context that steps ([`StepRunner`]), is read by the guard
/// rails ([`PageProbe`]) and can be handed to a person ([`LiveSurface`]).
pub trait TaskContext: SessionContext + StepRunner + PageProbe + LiveSurface {}

impl<C> TaskContext for C where C: SessionContext + StepRunner + PageProbe + LiveSurface {}
