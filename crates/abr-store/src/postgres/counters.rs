//! The per-tenant counters ([`CounterStore`]) on PostgreSQL: an increment below its bound
//! is one upsert whose update only happens below the bound, so two replicas racing for the
//! last unit cannot both get it (the second waits on the first's row lock, then finds the
//! bound reached).

use abr_core::CoreError;
use abr_core::store::{Counter, CounterStore};
use async_trait::async_trait;

use crate::codec::counter_name;
use crate::{PgStore, StoreError};

#[async_trait]
impl CounterStore for PgStore {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        if max == 0 {
            return Ok(false);
        }
        let name = counter_name(counter);
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO counters (tenant_id, counter, value) VALUES ($1, $2, 1)
                 ON CONFLICT (tenant_id, counter) DO UPDATE SET value = counters.value + 1
                    WHERE counters.value < $3
                 RETURNING value",
            )
            .await
            .map_err(StoreError::from)?;
        let row = client
            .query_opt(&statement, &[&tenant, &name, &i64::from(max)])
            .await
            .map_err(StoreError::from)?;
        Ok(row.is_some())
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        let name = counter_name(counter);
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE counters SET value = GREATEST(value - 1, 0)
                 WHERE tenant_id = $1 AND counter = $2",
            )
            .await
            .map_err(StoreError::from)?;
        client
            .execute(&statement, &[&tenant, &name])
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        let name = counter_name(counter);
        let client = self.client().await?;
        let statement = client
            .prepare_cached("SELECT value FROM counters WHERE tenant_id = $1 AND counter = $2")
            .await
            .map_err(StoreError::from)?;
        let value: i64 = match client
            .query_opt(&statement, &[&tenant, &name])
            .await
            .map_err(StoreError::from)?
        {
            Some(row) => row.try_get(0).map_err(StoreError::from)?,
            None => 0,
        };
        Ok(u32::try_from(value).unwrap_or(u32::MAX))
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        let name = counter_name(&Counter::Sessions);
        let client = self.client().await?;
        client
            .execute("UPDATE counters SET value = 0 WHERE counter = $1", &[&name])
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }
}
