//! The ledger's records on PostgreSQL, for tasks and posts alike (the names in `codec`'s
//! [`Table`]): the idempotency key claimed in the transaction that stores the record, a
//! compare-and-swap as one conditional `UPDATE`, the mark set alone, and pages in the order
//! records were stored (their `seq`), below the record a cursor names.

use abr_core::CoreError;
use abr_core::store::{IdempotencyKey, Inserted, ListQuery, Listed, bad_cursor, parse_cursor};
use tokio_postgres::Row as PgRow;

use crate::codec::{Columns, Fields, Read, Row, Table};
use crate::{PgStore, StoreError};

fn select(tbl: &Table) -> String {
    format!(
        "SELECT tenant_id, version, record::text, request_encrypted, request, {mark},
            retried_by, {id} FROM {table}",
        mark = tbl.mark_column,
        id = tbl.id_column,
        table = tbl.table,
    )
}

/// A row's columns as parameters, in the order of `insert` and `update`, then its owner
/// (`$10`: the boot that writes it, the runner holding it while it is unfinished).
fn params<'a>(
    c: &'a Columns,
    owner: &'a &'a str,
) -> [&'a (dyn tokio_postgres::types::ToSql + Sync); 10] {
    [
        &c.tenant,
        &c.id,
        &c.version,
        &c.state,
        &c.record,
        &c.encrypted,
        &c.request,
        &c.mark,
        &c.retried_by,
        owner,
    ]
}

fn read_row(row: &PgRow) -> Result<Row, StoreError> {
    Ok(Row {
        tenant: row.try_get(0)?,
        version: row.try_get(1)?,
        record: row.try_get(2)?,
        encrypted: row.try_get(3)?,
        request: row.try_get(4)?,
        mark: row.try_get(5)?,
        retried_by: row.try_get(6)?,
        id: row.try_get(7)?,
    })
}

impl PgStore {
    /// Inserts a record, and claims its idempotency key in the same transaction: a key
    /// already claimed (committed by another connection, or by one that commits while this
    /// one waits on the key) names the record it belongs to, and nothing is written.
    pub(crate) async fn insert_record(
        &self,
        tbl: &'static Table,
        fields: Fields,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, StoreError> {
        let c = tbl.columns(&self.sealer, fields)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if let Some(idem) = idempotency {
            let claim = tx
                .prepare_cached(&format!(
                    "INSERT INTO {table} (tenant_id, key, body_hash, {id}) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant_id, key) DO NOTHING",
                    table = tbl.idempotency_table,
                    id = tbl.id_column,
                ))
                .await?;
            let claimed = tx
                .execute(&claim, &[&c.tenant, &idem.key, &idem.body_hash, &c.id])
                .await?;
            if claimed == 0 {
                // The key is another record's: a new statement sees it committed.
                let existing =
                    find_key(&tx, tbl, &c.tenant, &idem.key)
                        .await?
                        .ok_or_else(|| {
                            StoreError::Busy("an idempotency key was claimed and released".into())
                        })?;
                tx.rollback().await?;
                return Ok(Inserted::Existing {
                    id: existing.0,
                    body_hash: existing.1,
                });
            }
        }
        let insert = tx
            .prepare_cached(&format!(
                "INSERT INTO {table} (tenant_id, {id}, version, state, record, request_encrypted,
                    request, {mark}, retried_by, owner)
                 VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, $9, $10)",
                table = tbl.table,
                id = tbl.id_column,
                mark = tbl.mark_column,
            ))
            .await?;
        let owner: &str = &self.boot;
        tx.execute(&insert, &params(&c, &owner)).await?;
        tx.commit().await?;
        Ok(Inserted::New)
    }

    /// The record an idempotency key names, and the hash of the body it was claimed with.
    pub(crate) async fn find_record_key(
        &self,
        tbl: &'static Table,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let client = self.client().await?;
        find_key(&client, tbl, tenant, key).await
    }

    /// A tenant's record.
    pub(crate) async fn get_record(
        &self,
        tbl: &'static Table,
        tenant: &str,
        id: &str,
    ) -> Result<Option<Read>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "{} WHERE tenant_id = $1 AND {} = $2",
                select(tbl),
                tbl.id_column
            ))
            .await?;
        let row = client.query_opt(&statement, &[&tenant, &id]).await?;
        row.map(|row| tbl.open(&self.sealer, read_row(&row)?))
            .transpose()
    }

    /// Writes a record over the version it was read at (compare-and-swap): `false` when
    /// that version is no longer the stored one. Of two writers from one version, the
    /// second waits on the first's row lock and then finds the version moved.
    pub(crate) async fn update_record(
        &self,
        tbl: &'static Table,
        fields: Fields,
    ) -> Result<bool, StoreError> {
        let c = tbl.columns(&self.sealer, fields)?;
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "UPDATE {table} SET version = version + 1, state = $4, record = $5::text::jsonb,
                    request_encrypted = $6, request = $7, {mark} = ({mark} OR $8),
                    retried_by = $9, owner = $10
                 WHERE tenant_id = $1 AND {id} = $2 AND version = $3",
                table = tbl.table,
                mark = tbl.mark_column,
                id = tbl.id_column,
            ))
            .await?;
        let owner: &str = &self.boot;
        let changed = client.execute(&statement, &params(&c, &owner)).await?;
        Ok(changed == 1)
    }

    /// Sets the mark of the record `id` of `tenant` alone (its version stays), committed
    /// before it returns, if this boot wrote it last (the fencing token: a runner whose
    /// heartbeat lapsed, and whose record another runner ended, marks nothing and must not
    /// pass its commit point; nobody but its runner writes a running record). Answers
    /// whether it marked.
    pub(crate) async fn mark_record(
        &self,
        tbl: &'static Table,
        tenant: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "UPDATE {table} SET {mark} = TRUE WHERE tenant_id = $1 AND {id} = $2
                    AND owner = $3",
                table = tbl.table,
                mark = tbl.mark_column,
                id = tbl.id_column,
            ))
            .await?;
        let marked = client
            .execute(&statement, &[&tenant, &id, &&*self.boot])
            .await?;
        Ok(marked == 1)
    }

    /// One page of `tenant`'s records, newest first (by `seq`: the order they were
    /// stored), in `state` when given, below the record the cursor names (the tenant's own:
    /// the last of the page before); decoded with `decode`. The next page's cursor is the
    /// id of the last one given, never a `seq` (shared by every tenant, its step counts the
    /// others' records).
    pub(crate) async fn list_records<T>(
        &self,
        tbl: &'static Table,
        tenant: &str,
        query: &ListQuery,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<Listed<T>, CoreError> {
        let after = parse_cursor(query.cursor.as_deref())?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let client = self.client().await.map_err(CoreError::from)?;
        let before: Option<i64> = match after {
            None => None,
            Some(id) => {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT seq FROM {} WHERE tenant_id = $1 AND {} = $2",
                        tbl.table, tbl.id_column
                    ))
                    .await
                    .map_err(StoreError::from)?;
                // A cursor that names no record of the tenant: none this list gave.
                let row = client
                    .query_opt(&statement, &[&tenant, &id])
                    .await
                    .map_err(StoreError::from)?
                    .ok_or_else(bad_cursor)?;
                Some(row.try_get(0).map_err(StoreError::from)?)
            }
        };
        let statement = client
            .prepare_cached(&format!(
                "{} WHERE tenant_id = $1 AND ($2::text IS NULL OR state = $2)
                    AND ($3::bigint IS NULL OR seq < $3)
                 ORDER BY seq DESC LIMIT $4",
                select(tbl)
            ))
            .await
            .map_err(StoreError::from)?;
        let rows = client
            .query(&statement, &[&tenant, &query.state, &before, &(limit + 1)])
            .await
            .map_err(StoreError::from)?;
        let rows = rows.iter().map(read_row).collect::<Result<Vec<_>, _>>()?;
        Ok(tbl.page(&self.sealer, rows, query.limit, decode)?)
    }

    /// The records in any of `states` (by their stored names), of every tenant, that no
    /// live runner holds (their owner is no live boot: a runner that restarted or whose
    /// heartbeat lapsed), decoded one by one with `decode`. A record without an owner is a
    /// queued task given to the fleet: it waits to be claimed, it is nobody's to end.
    /// How many records of every tenant are in `state`, and the oldest one's creation
    /// (its record's `createdAt`, compared as instants).
    pub(crate) async fn count_records_in_state(
        &self,
        tbl: &'static Table,
        state: &str,
    ) -> Result<abr_core::store::StateCount, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT count(*), (SELECT record ->> 'createdAt' FROM {t}
                    WHERE state = $1
                    ORDER BY (record ->> 'createdAt')::timestamptz LIMIT 1)
                 FROM {t} WHERE state = $1",
                t = tbl.table
            ))
            .await?;
        let row = client.query_one(&statement, &[&state]).await?;
        let count: i64 = row.try_get(0)?;
        let oldest: Option<String> = row.try_get(1)?;
        Ok(abr_core::store::StateCount {
            count: u64::try_from(count).unwrap_or(0),
            oldest: oldest
                .map(|at| crate::codec::parse_timestamp(&at, "a record's createdAt"))
                .transpose()?,
        })
    }

    pub(crate) async fn records_in_states<T>(
        &self,
        tbl: &'static Table,
        states: Vec<String>,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "{} WHERE state = ANY($1) AND owner IS NOT NULL AND NOT {}",
                select(tbl),
                super::nodes::live("owner", "$2")
            ))
            .await?;
        let rows = client
            .query(&statement, &[&states, &self.lease_secs()])
            .await?;
        rows.iter()
            .map(|row| decode(tbl.open(&self.sealer, read_row(row)?)?))
            .collect()
    }
}

async fn find_key(
    client: &impl deadpool_postgres::GenericClient,
    tbl: &Table,
    tenant: &str,
    key: &str,
) -> Result<Option<(String, String)>, StoreError> {
    let statement = client
        .prepare_cached(&format!(
            "SELECT {id}, body_hash FROM {table} WHERE tenant_id = $1 AND key = $2",
            id = tbl.id_column,
            table = tbl.idempotency_table,
        ))
        .await?;
    let row = client.query_opt(&statement, &[&tenant, &key]).await?;
    row.map(|r| Ok::<_, StoreError>((r.try_get(0)?, r.try_get(1)?)))
        .transpose()
}
