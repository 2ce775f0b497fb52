//! [`ScreenshotStore`]: the named screenshots a task keeps as evidence (redacted frames,
//! JPEG); [`InMemoryScreenshots`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::error::CoreError;

/// Where a task's screenshots live.
///
/// # Contract
/// - A screenshot is found only with its tenant and task: another tenant's is `None`.
/// - A name is kept once per task; putting it again replaces it.
/// - A durable store encrypts them at rest (they show pages).
#[async_trait]
pub trait ScreenshotStore: Send + Sync + 'static {
    /// Keeps a screenshot of a task under `name`.
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        image: Vec<u8>,
    ) -> Result<(), CoreError>;

    /// A screenshot of a task, if any.
    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError>;
}

/// Process-local screenshots (tests, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemoryScreenshots {
    images: Mutex<HashMap<(String, String, String), Vec<u8>>>,
}

impl InMemoryScreenshots {
    /// None kept yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String, String), Vec<u8>>> {
        self.images.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets every screenshot of the task `task_id` of `tenant`.
    pub(crate) fn forget_task(&self, tenant: &str, task_id: &str) {
        self.lock()
            .retain(|(t, id, _), _| !(t == tenant && id == task_id));
    }
}

#[async_trait]
impl ScreenshotStore for InMemoryScreenshots {
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        image: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.lock().insert(
            (tenant.to_owned(), task_id.to_owned(), name.to_owned()),
            image,
        );
        Ok(())
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        Ok(self
            .lock()
            .get(&(tenant.to_owned(), task_id.to_owned(), name.to_owned()))
            .cloned())
    }
}
