//! [`JobSlots`]: how many jobs run at once on this machine, with a bounded queue and a
//! bounded wait in it; beyond them callers are refused ([`EngineError::Overloaded`],
//! [`EngineError::QueueTimeout`]: nothing ran, retrying is safe) instead of piling up in memory
//! or spending their request deadline waiting.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tracing::Instrument as _;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::commit_watch;
use crate::error::EngineError;

/// A slot held by one running job; given back when dropped.
pub(crate) type JobSlot = OwnedSemaphorePermit;

/// Bounded job concurrency with a bounded queue and a bounded wait in it.
#[derive(Debug)]
pub(crate) struct JobSlots {
    permits: Arc<Semaphore>,
    capacity: usize,
    queued: AtomicUsize,
    max_queued: usize,
    max_wait: Duration,
}

struct QueuePlace<'a>(&'a AtomicUsize);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl JobSlots {
    /// `max_concurrent` jobs at once, `max_queued` more waiting, each at most `max_wait`.
    pub(crate) fn new(max_concurrent: usize, max_queued: usize, max_wait: Duration) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max_concurrent)),
            capacity: max_concurrent,
            queued: AtomicUsize::new(0),
            max_queued,
            max_wait,
        }
    }

    /// A slot to run one job, waiting in the queue if needed.
    ///
    /// # Errors
    /// [`EngineError::Overloaded`] when all slots are busy and the queue is full (or the slots
    /// are closed), [`EngineError::QueueTimeout`] when no slot came free within the queue
    /// deadline.
    pub(crate) async fn enter(&self) -> Result<JobSlot, EngineError> {
        if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
            return Ok(permit);
        }
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(EngineError::Overloaded {
                retry_after: Duration::from_secs(2),
            });
        }
        // Leaves the queue also when the waiting request is cancelled.
        let _place = QueuePlace(&self.queued);
        let wait = Arc::clone(&self.permits).acquire_owned();
        match tokio::time::timeout(self.max_wait, wait).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(EngineError::Overloaded {
                retry_after: Duration::from_secs(5),
            }),
            Err(_) => Err(EngineError::QueueTimeout {
                retry_after: Duration::from_secs(5),
            }),
        }
    }

    /// A free slot now, if there is one (no queue).
    pub(crate) fn try_now(&self) -> Option<JobSlot> {
        Arc::clone(&self.permits).try_acquire_owned().ok()
    }

    /// A slot for a job that must run eventually (an approved task): waits as long as it
    /// takes, outside the bounded queue (the tenants' limits bound how many wait).
    ///
    /// # Errors
    /// [`EngineError::Overloaded`] once the slots are closed (shutdown).
    pub(crate) async fn wait(&self) -> Result<JobSlot, EngineError> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_closed| EngineError::Overloaded {
                retry_after: Duration::from_secs(5),
            })
    }

    /// Runs `job` in a slot, in a task of its own: a panic stays there (the call fails with
    /// [`EngineError::JobPanicked`] carrying `on_panic`, a lease is released by its drop), and
    /// a caller that goes away does not cut the job in half. A relayed request's commit
    /// watch goes with the job ([`commit_watch`]).
    ///
    /// # Errors
    /// Not admitted ([`Self::enter`]), the job's own error, or the panic.
    pub(crate) async fn run<T, Fut>(
        &self,
        on_panic: &'static str,
        job: Fut,
    ) -> Result<T, EngineError>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T, EngineError>> + Send + 'static,
    {
        let slot = self.enter().await?;
        let watch = commit_watch::current();
        // The job stays in the caller's span (a request's: its trace goes on in the job).
        let handle = tokio::spawn(
            commit_watch::carry(watch, async move {
                let _slot = slot;
                job.await
            })
            .in_current_span(),
        );
        match handle.await {
            Ok(result) => result,
            Err(_) => Err(EngineError::JobPanicked(on_panic)),
        }
    }

    /// Waits until no job runs: takes every slot (the semaphore is fair, so the jobs already
    /// waiting get theirs first) and answers them; dropping them lets jobs run again, unless
    /// the slots were [closed](Self::close) meanwhile.
    pub(crate) async fn drain(&self) -> Vec<JobSlot> {
        let mut held = Vec::with_capacity(self.capacity);
        for _ in 0..self.capacity {
            match self.wait().await {
                Ok(slot) => held.push(slot),
                Err(_closed) => break,
            }
        }
        held
    }

    /// Jobs holding a slot now.
    pub(crate) fn running(&self) -> usize {
        self.capacity
            .saturating_sub(self.permits.available_permits())
    }

    /// How many jobs may run at once.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Jobs waiting now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Stops admitting jobs (graceful shutdown): waiting and new callers are refused.
    pub(crate) fn close(&self) {
        self.permits.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_slots_queue_up_to_their_bound_then_refuse() {
        let slots = Arc::new(JobSlots::new(1, 1, Duration::from_secs(60)));
        let running = slots.enter().await.unwrap();
        let waiting = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.enter().await.map(|_| ()) })
        };
        for _ in 0..100 {
            if slots.queued() == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.queued(), 1);
        let refused = slots.enter().await.unwrap_err();
        assert!(
            matches!(refused, EngineError::Overloaded { retry_after } if retry_after > Duration::ZERO)
        );
        drop(running);
        waiting.await.unwrap().unwrap();
        assert_eq!(slots.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_is_refused_once_its_queue_deadline_passed() {
        let slots = Arc::new(JobSlots::new(1, 4, Duration::from_secs(3)));
        let _running = slots.enter().await.unwrap();
        let started = tokio::time::Instant::now();
        let refused = slots.enter().await.unwrap_err();
        assert!(
            matches!(refused, EngineError::QueueTimeout { .. }),
            "{refused:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(slots.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let slots = Arc::new(JobSlots::new(1, 1, Duration::from_secs(60)));
        let _running = slots.enter().await.unwrap();
        let waiting = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.enter().await.map(|_| ()) })
        };
        for _ in 0..100 {
            if slots.queued() == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        waiting.abort();
        let _ = waiting.await;
        assert_eq!(
            slots.queued(),
            0,
            "a cancelled request still holds a queue slot"
        );
    }

    #[tokio::test]
    async fn a_job_that_panics_fails_alone_and_gives_its_slot_back() {
        let slots = JobSlots::new(1, 0, Duration::from_secs(1));
        let panicked = slots
            .run::<(), _>("the job failed", async { panic!("boom") })
            .await
            .unwrap_err();
        assert!(matches!(
            panicked,
            EngineError::JobPanicked("the job failed")
        ));
        assert_eq!(slots.run("-", async { Ok(7) }).await.unwrap(), 7);
    }
}
