//! [`TaskQueue`] on PostgreSQL: a queued task given to the fleet has no owner; a claim takes
//! the oldest one with `FOR UPDATE SKIP LOCKED` (racing replicas take different rows) and
//! writes its boot as the owner, in one statement.

use abr_core::CoreError;
use abr_core::store::TaskQueue;
use async_trait::async_trait;

use crate::{PgStore, StoreError};

#[async_trait]
impl TaskQueue for PgStore {
    async fn release(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE tasks SET owner = NULL
                 WHERE tenant_id = $1 AND task_id = $2 AND state = 'queued' AND owner = $3",
                &[&tenant, &id, &&*self.boot],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(changed == 1)
    }

    async fn claim(&self) -> Result<Option<(String, String)>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "UPDATE tasks t SET owner = $1
                 FROM (SELECT tenant_id, task_id FROM tasks
                       WHERE owner IS NULL AND state = 'queued'
                       ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) c
                 WHERE t.tenant_id = c.tenant_id AND t.task_id = c.task_id
                 RETURNING t.tenant_id, t.task_id",
                &[&&*self.boot],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(row
            .map(|r| Ok::<_, StoreError>((r.try_get(0)?, r.try_get(1)?)))
            .transpose()?)
    }
}
