//! The per-tenant counters ([`CounterStore`]) on PostgreSQL: an increment below its bound
//! is one upsert whose update only happens below the bound, so two replicas racing for the
//! last unit cannot both get it (the second waits on the first's row lock, then finds the
//! bound reached).
//!
//! A tenant's sessions are one count for the fleet, and each boot's share of it is kept
//! beside it (`session_holds`, in the same transaction): giving back "the sessions nobody
//! holds" after a restart gives back only those of boots that are no longer live, never a
//! live replica's.

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
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(StoreError::from)?;
        let statement = tx
            .prepare_cached(
                "INSERT INTO counters (tenant_id, counter, value) VALUES ($1, $2, 1)
                 ON CONFLICT (tenant_id, counter) DO UPDATE SET value = counters.value + 1
                    WHERE counters.value < $3
                 RETURNING value",
            )
            .await
            .map_err(StoreError::from)?;
        let granted = tx
            .query_opt(&statement, &[&tenant, &name, &i64::from(max)])
            .await
            .map_err(StoreError::from)?
            .is_some();
        if granted && *counter == Counter::Sessions {
            tx.execute(
                "INSERT INTO session_holds (tenant_id, owner, held) VALUES ($1, $2, 1)
                 ON CONFLICT (tenant_id, owner) DO UPDATE SET held = session_holds.held + 1",
                &[&tenant, &&*self.boot],
            )
            .await
            .map_err(StoreError::from)?;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok(granted)
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        let name = counter_name(counter);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(StoreError::from)?;
        let statement = tx
            .prepare_cached(
                "UPDATE counters SET value = GREATEST(value - 1, 0)
                 WHERE tenant_id = $1 AND counter = $2",
            )
            .await
            .map_err(StoreError::from)?;
        tx.execute(&statement, &[&tenant, &name])
            .await
            .map_err(StoreError::from)?;
        if *counter == Counter::Sessions {
            tx.execute(
                "UPDATE session_holds SET held = GREATEST(held - 1, 0)
                 WHERE tenant_id = $1 AND owner = $2",
                &[&tenant, &&*self.boot],
            )
            .await
            .map_err(StoreError::from)?;
        }
        tx.commit().await.map_err(StoreError::from)?;
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

    /// Gives back the sessions of every boot that is no longer live (this one's earlier
    /// boots after a restart, a replica whose heartbeat lapsed); a live replica's stay.
    async fn clear_sessions(&self) -> Result<(), CoreError> {
        let name = counter_name(&Counter::Sessions);
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "WITH gone AS (
                        DELETE FROM session_holds h WHERE NOT {live} RETURNING tenant_id, held
                     ), given AS (
                        SELECT tenant_id, sum(held) AS held FROM gone GROUP BY tenant_id
                     )
                     UPDATE counters c SET value = GREATEST(c.value - given.held, 0)
                     FROM given WHERE c.tenant_id = given.tenant_id AND c.counter = $1",
                    live = super::nodes::live("h.owner", "$2")
                ),
                &[&name, &self.lease_secs()],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }
}
