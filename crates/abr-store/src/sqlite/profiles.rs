//! [`ProfileStore`] on SQLite: one row per tenant's profile, its consent and recorded
//! sign-ins as a JSON document (cookie names and expiry only: nothing in it is a secret).
//! Each change reads and writes the row in one transaction on the store's one connection,
//! synced to disk before it returns: a decline stands across a power loss.

use abr_core::CoreError;
use abr_core::guard::{ProfileDecision, ProfileStore, put_sign_in};
use abr_protocol::{ProfileEntry, ProfileSignIn};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};
use time::OffsetDateTime;

use crate::{SqliteStore, StoreError};

fn decode(json: &str) -> Result<ProfileEntry, StoreError> {
    serde_json::from_str(json).map_err(|_| StoreError::Record("a profile".into()))
}

fn read(conn: &Connection, tenant: &str, name: &str) -> Result<Option<ProfileEntry>, StoreError> {
    let json: Option<String> = conn
        .query_row(
            "SELECT entry FROM profiles WHERE tenant_id = ?1 AND name = ?2",
            (tenant, name),
            |r| r.get(0),
        )
        .optional()?;
    json.as_deref().map(decode).transpose()
}

/// Reads `name`'s row (or a new entry), lets `change` edit it, and writes it back when
/// `change` says so, all in one synced transaction. Answers what `change` answered.
async fn update<T: Send + 'static>(
    store: &SqliteStore,
    tenant: &str,
    name: &str,
    change: impl FnOnce(&mut ProfileEntry) -> (bool, T) + Send + 'static,
) -> Result<T, StoreError> {
    let (t, n) = (tenant.to_owned(), name.to_owned());
    store
        .with(move |conn| {
            SqliteStore::synced(conn, |conn| {
                let tx = conn.transaction()?;
                let mut entry = read(&tx, &t, &n)?.unwrap_or_else(|| ProfileEntry::new(&n));
                let (write, answer) = change(&mut entry);
                if write {
                    let json = serde_json::to_string(&entry)
                        .map_err(|_| StoreError::Record("a profile".into()))?;
                    tx.execute(
                        "INSERT INTO profiles (tenant_id, name, entry) VALUES (?1, ?2, ?3)
                         ON CONFLICT (tenant_id, name) DO UPDATE SET entry = ?3",
                        (&t, &n, &json),
                    )?;
                }
                tx.commit()?;
                Ok(answer)
            })
        })
        .await
}

#[async_trait]
impl ProfileStore for SqliteStore {
    async fn profiles(&self, tenant: &str) -> Result<Vec<ProfileEntry>, CoreError> {
        let t = tenant.to_owned();
        let rows = self
            .with(move |conn| {
                let mut statement =
                    conn.prepare("SELECT entry FROM profiles WHERE tenant_id = ?1 ORDER BY name")?;
                let rows = statement
                    .query_map([&t], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        Ok(rows
            .iter()
            .map(|json| decode(json))
            .collect::<Result<_, _>>()?)
    }

    async fn profile(&self, tenant: &str, name: &str) -> Result<Option<ProfileEntry>, CoreError> {
        let (t, n) = (tenant.to_owned(), name.to_owned());
        Ok(self.with(move |conn| read(conn, &t, &n)).await?)
    }

    async fn ask(&self, tenant: &str, name: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        Ok(update(self, tenant, name, move |entry| {
            let first = entry.asked_at.is_none() && entry.decision.is_none();
            if first {
                entry.asked_at = Some(at);
            }
            (first, first)
        })
        .await?)
    }

    async fn decide(
        &self,
        tenant: &str,
        name: &str,
        decision: ProfileDecision,
    ) -> Result<(), CoreError> {
        Ok(update(self, tenant, name, move |entry| {
            decision.apply(entry);
            (true, ())
        })
        .await?)
    }

    async fn record_sign_in(
        &self,
        tenant: &str,
        name: &str,
        sign_in: ProfileSignIn,
    ) -> Result<(), CoreError> {
        Ok(update(self, tenant, name, move |entry| {
            put_sign_in(entry, sign_in);
            (true, ())
        })
        .await?)
    }
}
