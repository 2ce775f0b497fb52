//! [`CommitWatch`]: who must hear, before it happens, that a piece of work passes its commit
//! point (a post's submit, a task's first committing step).
//!
//! A request relayed from a hub to a runner runs with a watch set around it
//! ([`scope`]); the journal's submit gate and the task engine call `committing` right
//! before the action that may publish. The watch tells the hub and waits for its
//! acknowledgement: from then on, a dropped connection is answered "it may have happened,
//! never retry" instead of "nothing was done, retry". When the watch cannot tell the hub (the
//! connection is gone), the commit is refused and nothing is published, so the hub's
//! "nothing was done" stays true.
//!
//! Work with no watch set (a local request, a background task run) passes at once. The
//! watch is a `tokio::task_local!`: a job spawned into its own task carries it with
//! `current` and `carry`.

use std::future::Future;
use std::sync::Arc;

use abr_core::error::{CoreError, ProviderError, ProviderErrorKind};
use async_trait::async_trait;

/// Why a watch refused a commit: the party that had to hear of it could not be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the commit could not be announced: {0}")]
pub struct CommitRefused(pub String);

/// What a watch does when the work it watches reaches its commit point.
#[async_trait]
pub trait CommitHook: Send + Sync + 'static {
    /// Announces the commit and waits until it is acknowledged.
    ///
    /// # Errors
    /// [`CommitRefused`] when it could not be: the commit must not happen.
    async fn committing(&self) -> Result<(), CommitRefused>;
}

/// A watch on one piece of work (cheap to clone).
#[derive(Clone)]
pub struct CommitWatch(Arc<dyn CommitHook>);

impl std::fmt::Debug for CommitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitWatch").finish_non_exhaustive()
    }
}

impl CommitWatch {
    /// A watch calling `hook`.
    pub fn new(hook: Arc<dyn CommitHook>) -> Self {
        Self(hook)
    }

    /// Announces the commit to this watch and waits for its acknowledgement (for work that
    /// holds the watch outside the task it was set around, such as a browser's network
    /// gate).
    ///
    /// # Errors
    /// [`CoreError::Provider`] (retryable, nothing committed) when the watch refused.
    pub async fn announce(&self) -> Result<(), CoreError> {
        self.0.committing().await.map_err(|refused| {
            CoreError::Provider(ProviderError::new(
                ProviderErrorKind::Unavailable,
                refused.to_string(),
            ))
        })
    }
}

tokio::task_local! {
    static WATCH: CommitWatch;
}

/// Runs `work` with `watch` set.
pub async fn scope<F: Future>(watch: CommitWatch, work: F) -> F::Output {
    WATCH.scope(watch, work).await
}

/// Runs `work` with `watch` set when there is one (for a job spawned into its own task:
/// `carry(current(), job)`).
pub(crate) async fn carry<F: Future>(watch: Option<CommitWatch>, work: F) -> F::Output {
    match watch {
        Some(watch) => WATCH.scope(watch, work).await,
        None => work.await,
    }
}

/// The watch set around the current task, if any.
pub(crate) fn current() -> Option<CommitWatch> {
    WATCH.try_with(Clone::clone).ok()
}

/// Call right before the action that may publish: announces it to the watch set around
/// this task, if any, and waits for its acknowledgement.
///
/// # Errors
/// A retryable [`CoreError::Provider`] (`Unavailable`) when the watch refused: do not
/// commit, nothing was done.
pub(crate) async fn committing() -> Result<(), CoreError> {
    match current() {
        Some(watch) => watch.announce().await,
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, bool);

    #[async_trait]
    impl CommitHook for Counting {
        async fn committing(&self) -> Result<(), CommitRefused> {
            self.0.fetch_add(1, Ordering::SeqCst);
            if self.1 {
                Ok(())
            } else {
                Err(CommitRefused("gone".into()))
            }
        }
    }

    #[tokio::test]
    async fn without_a_watch_a_commit_passes() {
        assert!(current().is_none());
        committing().await.unwrap();
    }

    #[tokio::test]
    async fn a_watch_hears_of_the_commit_also_in_a_spawned_job() {
        let hook = Arc::new(Counting(AtomicUsize::new(0), true));
        let watch = CommitWatch::new(hook.clone());
        scope(watch, async {
            committing().await.unwrap();
            let carried = current();
            tokio::spawn(carry(carried, async { committing().await }))
                .await
                .unwrap()
                .unwrap();
        })
        .await;
        assert_eq!(hook.0.load(Ordering::SeqCst), 2);
        // Outside the scope: no watch.
        committing().await.unwrap();
        assert_eq!(hook.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_refused_announcement_refuses_the_commit_as_retryable() {
        let hook = Arc::new(Counting(AtomicUsize::new(0), false));
        let e = scope(CommitWatch::new(hook), committing())
            .await
            .unwrap_err();
        assert!(e.is_retryable(), "{e}");
    }
}
