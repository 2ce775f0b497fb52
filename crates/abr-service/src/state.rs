//! The state every handler shares: the runner, the accepted tokens, the live view's.

use std::sync::Arc;

use abr_core::context::TaskContext;

use axum::extract::FromRef;

use crate::live::{LiveApp, LiveState};
use crate::runner::Runner;
use crate::tokens::TokenSet;

/// Shared state of the HTTP handlers.
pub struct AppState<C: TaskContext> {
    /// The runner.
    pub runner: Arc<Runner<C>>,
    pub(crate) tokens: Arc<TokenSet>,
    pub(crate) live: Arc<LiveState>,
}

impl<C: TaskContext> Clone for AppState<C> {
    fn clone(&self) -> Self {
        Self {
            runner: Arc::clone(&self.runner),
            tokens: Arc::clone(&self.tokens),
            live: Arc::clone(&self.live),
        }
    }
}

impl<C: TaskContext> std::fmt::Debug for AppState<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("tokens", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext> FromRef<AppState<C>> for LiveApp<C> {
    fn from_ref(state: &AppState<C>) -> Self {
        Self {
            runner: Arc::clone(&state.runner),
            live: Arc::clone(&state.live),
        }
    }
}
