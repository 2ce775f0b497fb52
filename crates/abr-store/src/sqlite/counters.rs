//! The per-tenant counters ([`CounterStore`]) on SQLite: an increment below its bound is
//! one immediate transaction, so two runners racing for the last unit cannot both get it.

use abr_core::CoreError;
use abr_core::store::{Counter, CounterStore};
use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior};

use crate::SqliteStore;
use crate::codec::counter_name;

#[async_trait]
impl CounterStore for SqliteStore {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        Ok(self
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value: u32 = tx
                    .query_row(
                        "SELECT value FROM counters WHERE tenant_id = ?1 AND counter = ?2",
                        (&tenant, &name),
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or(0);
                if value >= max {
                    return Ok(false);
                }
                tx.execute(
                    "INSERT INTO counters (tenant_id, counter, value) VALUES (?1, ?2, 1)
                     ON CONFLICT (tenant_id, counter) DO UPDATE SET value = value + 1",
                    (&tenant, &name),
                )?;
                tx.commit()?;
                Ok(true)
            })
            .await?)
    }

    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        self.with(move |conn| {
            conn.execute(
                "UPDATE counters SET value = MAX(value - 1, 0) WHERE tenant_id = ?1 AND counter = ?2",
                (&tenant, &name),
            )?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        let (tenant, name) = (tenant.to_owned(), counter_name(counter));
        Ok(self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT value FROM counters WHERE tenant_id = ?1 AND counter = ?2",
                        (&tenant, &name),
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or(0))
            })
            .await?)
    }

    async fn clear_sessions(&self) -> Result<(), CoreError> {
        let name = counter_name(&Counter::Sessions);
        self.with(move |conn| {
            conn.execute("UPDATE counters SET value = 0 WHERE counter = ?1", [&name])?;
            Ok(())
        })
        .await?;
        Ok(())
    }
}
