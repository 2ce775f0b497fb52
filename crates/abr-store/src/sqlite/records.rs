//! The ledger's records on SQLite, for tasks and posts alike: a table of records, one row
//! per tenant and id, each with a version for compare-and-swap, its record (JSON), its
//! request (JSON, sealed and bound to its row, `codec`), a mark saved before something
//! committing starts, and the id of its retry; beside it, a table of idempotency keys. Only
//! the names differ between tasks and posts (the schema is in `db.rs`).

use abr_core::CoreError;
use abr_core::store::{IdempotencyKey, Inserted, ListQuery, Listed, bad_cursor, parse_cursor};
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use crate::codec::{Columns, Fields, Read, Row, Table};
use crate::{SqliteStore, StoreError};

/// A row's columns as SQLite parameters, in the order of `insert` and `update`.
fn params(c: &Columns) -> impl rusqlite::Params + '_ {
    (
        &c.tenant,
        &c.id,
        c.version,
        &c.state,
        &c.record,
        c.encrypted,
        &c.request,
        c.mark,
        &c.retried_by,
    )
}

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        tenant: row.get(0)?,
        version: row.get(1)?,
        record: row.get(2)?,
        encrypted: row.get(3)?,
        request: row.get(4)?,
        mark: row.get(5)?,
        retried_by: row.get(6)?,
        id: row.get(7)?,
    })
}

fn select(t: &Table) -> String {
    format!(
        "SELECT tenant_id, version, record, request_encrypted, request, {mark}, retried_by,
            {id} FROM {table}",
        mark = t.mark_column,
        id = t.id_column,
        table = t.table,
    )
}

fn find_key(
    t: &Table,
    conn: &Connection,
    tenant: &str,
    key: &str,
) -> Result<Option<(String, String)>, StoreError> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {id}, body_hash FROM {table} WHERE tenant_id = ?1 AND key = ?2",
                id = t.id_column,
                table = t.idempotency_table,
            ),
            (tenant, key),
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

impl SqliteStore {
    /// Inserts a record, and claims its idempotency key in the same transaction (a key
    /// already claimed names the record it belongs to, and nothing is written).
    pub(crate) async fn insert_record(
        &self,
        tbl: &'static Table,
        fields: Fields,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, StoreError> {
        let c = tbl.columns(&self.sealer, fields)?;
        let idempotency = idempotency.cloned();
        self.with(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(idem) = &idempotency {
                if let Some((id, body_hash)) = find_key(tbl, &tx, &c.tenant, &idem.key)? {
                    return Ok(Inserted::Existing { id, body_hash });
                }
                tx.execute(
                    &format!(
                        "INSERT INTO {table} (tenant_id, key, body_hash, {id})
                             VALUES (?1, ?2, ?3, ?4)",
                        table = tbl.idempotency_table,
                        id = tbl.id_column,
                    ),
                    (&c.tenant, &idem.key, &idem.body_hash, &c.id),
                )?;
            }
            tx.execute(
                &format!(
                    "INSERT INTO {table} (tenant_id, {id}, version, state, record,
                            request_encrypted, request, {mark}, retried_by)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    table = tbl.table,
                    id = tbl.id_column,
                    mark = tbl.mark_column,
                ),
                params(&c),
            )?;
            tx.commit()?;
            Ok(Inserted::New)
        })
        .await
    }

    /// The record an idempotency key names, and the hash of the body it was claimed with.
    pub(crate) async fn find_record_key(
        &self,
        tbl: &'static Table,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        self.with(move |conn| find_key(tbl, conn, &tenant, &key))
            .await
    }

    /// A tenant's record.
    pub(crate) async fn get_record(
        &self,
        tbl: &'static Table,
        tenant: &str,
        id: &str,
    ) -> Result<Option<Read>, StoreError> {
        let (t, id) = (tenant.to_owned(), id.to_owned());
        let row = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!(
                            "{} WHERE tenant_id = ?1 AND {} = ?2",
                            select(tbl),
                            tbl.id_column
                        ),
                        (&t, &id),
                        read_row,
                    )
                    .optional()?)
            })
            .await?;
        row.map(|row| tbl.open(&self.sealer, row)).transpose()
    }

    /// Writes a record over the version it was read at (compare-and-swap): `false` when
    /// that version is no longer the stored one. The mark before something committing
    /// starts, and an ending, are synced to disk; the progress between them survives a
    /// killed process (WAL), not a power loss.
    pub(crate) async fn update_record(
        &self,
        tbl: &'static Table,
        fields: Fields,
    ) -> Result<bool, StoreError> {
        let ends = fields.ends;
        let c = tbl.columns(&self.sealer, fields)?;
        let changed = self
            .with(move |conn| {
                let marks: bool = conn
                    .query_row(
                        &format!(
                            "SELECT {mark} FROM {table} WHERE tenant_id = ?1 AND {id} = ?2",
                            mark = tbl.mark_column,
                            table = tbl.table,
                            id = tbl.id_column,
                        ),
                        (&c.tenant, &c.id),
                        |r| r.get(0),
                    )
                    .optional()?
                    .is_some_and(|was: bool| c.mark && !was);
                let write = |conn: &mut Connection| {
                    Ok(conn.execute(
                        &format!(
                            "UPDATE {table} SET version = version + 1, state = ?4, record = ?5,
                                request_encrypted = ?6, request = ?7, {mark} = ({mark} OR ?8),
                                retried_by = ?9
                             WHERE tenant_id = ?1 AND {id} = ?2 AND version = ?3",
                            table = tbl.table,
                            mark = tbl.mark_column,
                            id = tbl.id_column,
                        ),
                        params(&c),
                    )?)
                };
                if marks || ends {
                    SqliteStore::synced(conn, write)
                } else {
                    write(conn)
                }
            })
            .await?;
        Ok(changed == 1)
    }

    /// Sets the mark of the record `id` of `tenant` alone (its version stays), synced to
    /// disk before it returns. Nothing when there is no such record.
    pub(crate) async fn mark_record(
        &self,
        tbl: &'static Table,
        tenant: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        let marked = self
            .with(move |conn| {
                SqliteStore::synced(conn, |conn: &mut Connection| {
                    Ok(conn.execute(
                    &format!(
                        "UPDATE {table} SET {mark} = 1 WHERE tenant_id = ?1 AND {id_column} = ?2",
                        table = tbl.table,
                        mark = tbl.mark_column,
                        id_column = tbl.id_column,
                    ),
                    (&tenant, &id),
                )?)
                })
            })
            .await?;
        Ok(marked == 1)
    }

    /// One page of `tenant`'s records, newest first (by rowid: the order they were
    /// inserted), in `state` when given, below the record the cursor names (the tenant's
    /// own: the last of the page before); decoded with `decode`. The next page's cursor is
    /// the id of the last one given, never a rowid (shared by every tenant, a rowid's step
    /// counts the others' records).
    pub(crate) async fn list_records<T>(
        &self,
        tbl: &'static Table,
        tenant: &str,
        query: &ListQuery,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<Listed<T>, CoreError> {
        let after = parse_cursor(query.cursor.as_deref())?.map(str::to_owned);
        let (t, state) = (tenant.to_owned(), query.state.clone());
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = self
            .with(move |conn| {
                let before = match &after {
                    None => None,
                    Some(id) => {
                        let rowid = conn
                            .query_row(
                                &format!(
                                    "SELECT rowid FROM {} WHERE tenant_id = ?1 AND {} = ?2",
                                    tbl.table, tbl.id_column
                                ),
                                (&t, id),
                                |r| r.get::<_, i64>(0),
                            )
                            .optional()?;
                        // A cursor that names no record of the tenant: none this list gave.
                        let Some(rowid) = rowid else {
                            return Ok(None);
                        };
                        Some(rowid)
                    }
                };
                let mut statement = conn.prepare(&format!(
                    "{} WHERE tenant_id = ?1 AND (?2 IS NULL OR state = ?2)
                        AND (?3 IS NULL OR rowid < ?3)
                     ORDER BY rowid DESC LIMIT ?4",
                    select(tbl)
                ))?;
                let rows = statement
                    .query_map((&t, &state, before, limit + 1), read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Some(rows))
            })
            .await?
            .ok_or_else(bad_cursor)?;
        Ok(tbl.page(&self.sealer, rows, query.limit, decode)?)
    }

    /// The records in any of `states` (by their stored names), decoded one by one with
    /// `decode`.
    /// How many records of every tenant are in `state`, and the oldest one's creation
    /// (its record's `createdAt`, compared as instants).
    pub(crate) async fn count_records_in_state(
        &self,
        tbl: &'static Table,
        state: &str,
    ) -> Result<abr_core::store::StateCount, StoreError> {
        let state = state.to_owned();
        let (count, oldest) = self
            .with(move |conn| {
                Ok(conn.query_row(
                    &format!(
                        "SELECT count(*), (SELECT record ->> '$.createdAt' FROM {t}
                            WHERE state = ?1
                            ORDER BY julianday(record ->> '$.createdAt') LIMIT 1)
                         FROM {t} WHERE state = ?1",
                        t = tbl.table
                    ),
                    [&state],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)),
                )?)
            })
            .await?;
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
        let rows = self
            .with(move |conn| {
                let placeholders = vec!["?"; states.len()].join(", ");
                let mut statement =
                    conn.prepare(&format!("{} WHERE state IN ({placeholders})", select(tbl)))?;
                let rows = statement
                    .query_map(rusqlite::params_from_iter(&states), read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        rows.into_iter()
            .map(|row| decode(tbl.open(&self.sealer, row)?))
            .collect()
    }
}
