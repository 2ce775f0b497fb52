//! The mechanics tasks and posts share: a table of records, one row per tenant and id,
//! each with a version for compare-and-swap, its record (JSON), its request (JSON, sealed
//! with the [`SealingKey`](crate::SealingKey) and bound to its row), a mark saved before
//! something committing starts, and the id of its retry; beside it, a table of idempotency
//! keys. Only the names differ between tasks and posts (the schema is in `db.rs`). The
//! sealing and opening of a payload bound to its row is shared with stored sessions.

use abr_core::CoreError;
use abr_core::store::{
    IdempotencyKey, Inserted, LedgerHeader, ListQuery, Listed, bad_cursor, parse_cursor,
};
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use crate::{SqliteStore, StoreError};

/// The associated data binding a sealed value to its row: `tag`, then each part
/// length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
pub(crate) fn row_aad(tag: &[u8], parts: &[&str]) -> Vec<u8> {
    let mut out = tag.to_vec();
    for part in parts {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// The name a value (a state) serializes to, as stored in a `state` column.
pub(crate) fn name_of(value: &impl Serialize, what: &str) -> Result<String, StoreError> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Record(what.to_owned())),
    }
}

/// The value stored under `name` (from [`name_of`]).
pub(crate) fn from_name<T: DeserializeOwned>(name: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| StoreError::Record(what.to_owned()))
}

/// An instant as stored in a `TEXT` column: RFC 3339 in UTC, to the nanosecond.
pub(crate) fn timestamp(at: OffsetDateTime, what: &str) -> Result<String, StoreError> {
    at.to_offset(UtcOffset::UTC)
        .format(&Rfc3339)
        .map_err(|_| StoreError::Record(what.to_owned()))
}

/// An instant stored by [`timestamp`].
pub(crate) fn parse_timestamp(text: &str, what: &str) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::parse(text, &Rfc3339).map_err(|_| StoreError::Record(what.to_owned()))
}

impl SqliteStore {
    /// `json` sealed with the key, bound to `aad`: `(encrypted, bytes)`. Without a key it is
    /// kept in plaintext only where plaintext is allowed (`--insecure-dev`, in memory), or
    /// when it holds no secrets.
    pub(crate) fn seal_payload(
        &self,
        json: Vec<u8>,
        aad: &[u8],
        holds_secrets: bool,
    ) -> Result<(bool, Vec<u8>), StoreError> {
        match &self.key {
            Some(key) => Ok((true, key.seal(&json, aad)?)),
            None if !holds_secrets || self.plaintext_allowed => Ok((false, json)),
            None => Err(StoreError::NoKey),
        }
    }

    /// The JSON in `payload`, opened with the key when it was sealed; a plaintext payload
    /// is read only where plaintext is allowed, unless `trusts_plaintext`.
    pub(crate) fn open_payload(
        &self,
        encrypted: bool,
        payload: Vec<u8>,
        aad: &[u8],
        trusts_plaintext: bool,
    ) -> Result<Vec<u8>, StoreError> {
        if encrypted {
            let key = self.key.as_ref().ok_or(StoreError::NoKey)?;
            key.open(&payload, aad)
        } else if trusts_plaintext || self.plaintext_allowed {
            Ok(payload)
        } else {
            Err(StoreError::NoKey)
        }
    }
}

/// A table of records and its idempotency keys, by name.
pub(crate) struct Table {
    /// The records' table (`tasks`).
    pub table: &'static str,
    /// Its id column (`task_id`), also the id column of the idempotency table.
    pub id_column: &'static str,
    /// The mark saved before something committing starts (`committing_started`).
    pub mark_column: &'static str,
    /// The idempotency keys' table (`idempotency`).
    pub idempotency_table: &'static str,
    /// What the associated data of a sealed request starts with (`b"task"`).
    pub aad_tag: &'static [u8],
    /// Whether a request kept in plaintext is read even where plaintext is not allowed (a
    /// task's request without secrets is kept in plaintext without a key).
    pub trusts_plaintext: bool,
}

/// A record's fields, as written: its ledger header (tenant, version, mark, retry), and the
/// record and the request already in JSON.
pub(crate) struct Fields {
    pub ledger: LedgerHeader,
    pub id: String,
    pub state: String,
    pub record: String,
    /// The request, to be sealed (`None`: dropped).
    pub request: Option<Vec<u8>>,
    /// Whether the request holds secrets (without them it may be kept in plaintext).
    pub holds_secrets: bool,
    /// Whether this write ends the record (synced to disk).
    pub ends: bool,
}

/// A record's fields, as read: its ledger header, and the request opened, still in JSON.
pub(crate) struct Read {
    pub ledger: LedgerHeader,
    pub record: String,
    pub request: Option<Vec<u8>>,
}

/// A row's columns, ready to write (the request sealed).
struct Columns {
    tenant: String,
    id: String,
    version: i64,
    state: String,
    record: String,
    encrypted: bool,
    request: Option<Vec<u8>>,
    mark: bool,
    retried_by: Option<String>,
}

impl Columns {
    fn params(&self) -> impl rusqlite::Params + '_ {
        (
            &self.tenant,
            &self.id,
            self.version,
            &self.state,
            &self.record,
            self.encrypted,
            &self.request,
            self.mark,
            &self.retried_by,
        )
    }
}

/// A row, read (the request still sealed).
struct Row {
    id: String,
    tenant: String,
    version: i64,
    record: String,
    encrypted: bool,
    request: Option<Vec<u8>>,
    mark: bool,
    retried_by: Option<String>,
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

impl Table {
    fn aad(&self, tenant: &str, id: &str) -> Vec<u8> {
        row_aad(self.aad_tag, &[tenant, id])
    }

    fn select(&self) -> String {
        format!(
            "SELECT tenant_id, version, record, request_encrypted, request, {mark}, retried_by,
                {id} FROM {table}",
            mark = self.mark_column,
            id = self.id_column,
            table = self.table,
        )
    }

    fn find_key(
        &self,
        conn: &Connection,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(conn
            .query_row(
                &format!(
                    "SELECT {id}, body_hash FROM {table} WHERE tenant_id = ?1 AND key = ?2",
                    id = self.id_column,
                    table = self.idempotency_table,
                ),
                (tenant, key),
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    fn columns(&self, store: &SqliteStore, fields: Fields) -> Result<Columns, StoreError> {
        let (encrypted, request) = match fields.request {
            None => (false, None),
            Some(json) => {
                let aad = self.aad(&fields.ledger.tenant_id, &fields.id);
                let (encrypted, sealed) = store.seal_payload(json, &aad, fields.holds_secrets)?;
                (encrypted, Some(sealed))
            }
        };
        let ledger = fields.ledger;
        Ok(Columns {
            tenant: ledger.tenant_id,
            id: fields.id,
            version: i64::try_from(ledger.version).unwrap_or(i64::MAX),
            state: fields.state,
            record: fields.record,
            encrypted,
            request,
            mark: ledger.marked,
            retried_by: ledger.retried_by,
        })
    }

    fn open(&self, store: &SqliteStore, row: Row) -> Result<Read, StoreError> {
        let request = match row.request {
            None => None,
            Some(sealed) => Some(store.open_payload(
                row.encrypted,
                sealed,
                &self.aad(&row.tenant, &row.id),
                self.trusts_plaintext,
            )?),
        };
        Ok(Read {
            ledger: LedgerHeader {
                tenant_id: row.tenant,
                version: u64::try_from(row.version).unwrap_or(0),
                marked: row.mark,
                retried_by: row.retried_by,
            },
            record: row.record,
            request,
        })
    }

    /// Inserts a record, and claims its idempotency key in the same transaction (a key
    /// already claimed names the record it belongs to, and nothing is written).
    pub(crate) async fn insert(
        &'static self,
        store: &SqliteStore,
        fields: Fields,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, StoreError> {
        let c = self.columns(store, fields)?;
        let idempotency = idempotency.cloned();
        store
            .with(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if let Some(idem) = &idempotency {
                    if let Some((id, body_hash)) = self.find_key(&tx, &c.tenant, &idem.key)? {
                        return Ok(Inserted::Existing { id, body_hash });
                    }
                    tx.execute(
                        &format!(
                            "INSERT INTO {table} (tenant_id, key, body_hash, {id})
                             VALUES (?1, ?2, ?3, ?4)",
                            table = self.idempotency_table,
                            id = self.id_column,
                        ),
                        (&c.tenant, &idem.key, &idem.body_hash, &c.id),
                    )?;
                }
                tx.execute(
                    &format!(
                        "INSERT INTO {table} (tenant_id, {id}, version, state, record,
                            request_encrypted, request, {mark}, retried_by)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        table = self.table,
                        id = self.id_column,
                        mark = self.mark_column,
                    ),
                    c.params(),
                )?;
                tx.commit()?;
                Ok(Inserted::New)
            })
            .await
    }

    /// The record an idempotency key names, and the hash of the body it was claimed with.
    pub(crate) async fn find_idempotency(
        &'static self,
        store: &SqliteStore,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        store
            .with(move |conn| self.find_key(conn, &tenant, &key))
            .await
    }

    /// A tenant's record.
    pub(crate) async fn get(
        &'static self,
        store: &SqliteStore,
        tenant: &str,
        id: &str,
    ) -> Result<Option<Read>, StoreError> {
        let (t, id) = (tenant.to_owned(), id.to_owned());
        let row = store
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        &format!(
                            "{} WHERE tenant_id = ?1 AND {} = ?2",
                            self.select(),
                            self.id_column
                        ),
                        (&t, &id),
                        read_row,
                    )
                    .optional()?)
            })
            .await?;
        row.map(|row| self.open(store, row)).transpose()
    }

    /// Writes a record over the version it was read at (compare-and-swap): `false` when
    /// that version is no longer the stored one. The mark before something committing
    /// starts, and an ending, are synced to disk; the progress between them survives a
    /// killed process (WAL), not a power loss.
    pub(crate) async fn update(
        &'static self,
        store: &SqliteStore,
        fields: Fields,
    ) -> Result<bool, StoreError> {
        let ends = fields.ends;
        let c = self.columns(store, fields)?;
        let changed = store
            .with(move |conn| {
                let marks: bool = conn
                    .query_row(
                        &format!(
                            "SELECT {mark} FROM {table} WHERE tenant_id = ?1 AND {id} = ?2",
                            mark = self.mark_column,
                            table = self.table,
                            id = self.id_column,
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
                            table = self.table,
                            mark = self.mark_column,
                            id = self.id_column,
                        ),
                        c.params(),
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
    pub(crate) async fn mark(
        &'static self,
        store: &SqliteStore,
        tenant: &str,
        id: &str,
    ) -> Result<(), StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        store
            .with(move |conn| {
                SqliteStore::synced(conn, |conn: &mut Connection| {
                    Ok(conn.execute(
                        &format!(
                            "UPDATE {table} SET {mark} = 1 WHERE tenant_id = ?1 AND {id_column} = ?2",
                            table = self.table,
                            mark = self.mark_column,
                            id_column = self.id_column,
                        ),
                        (&tenant, &id),
                    )?)
                })
            })
            .await?;
        Ok(())
    }

    /// One page of `tenant`'s records, newest first (by rowid: the order they were
    /// inserted), in `state` when given, below the record the cursor names (the tenant's
    /// own: the last of the page before); decoded with `decode`. The next page's cursor is
    /// the id of the last one given, never a rowid (shared by every tenant, a rowid's step
    /// counts the others' records).
    pub(crate) async fn list<T>(
        &'static self,
        store: &SqliteStore,
        tenant: &str,
        query: &ListQuery,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<Listed<T>, CoreError> {
        let after = parse_cursor(query.cursor.as_deref())?.map(str::to_owned);
        let (t, state) = (tenant.to_owned(), query.state.clone());
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = store
            .with(move |conn| {
                let before = match &after {
                    None => None,
                    Some(id) => {
                        let rowid = conn
                            .query_row(
                                &format!(
                                    "SELECT rowid FROM {} WHERE tenant_id = ?1 AND {} = ?2",
                                    self.table, self.id_column
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
                    self.select()
                ))?;
                let rows = statement
                    .query_map((&t, &state, before, limit + 1), read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Some(rows))
            })
            .await?
            .ok_or_else(bad_cursor)?;
        let more = rows.len() > query.limit;
        let mut items = Vec::with_capacity(query.limit);
        let mut last = None;
        for row in rows.into_iter().take(query.limit) {
            last = Some(row.id.clone());
            items.push(decode(self.open(store, row)?)?);
        }
        Ok(Listed {
            items,
            next: last.filter(|_| more),
        })
    }

    /// The records in any of `states` (by their stored names), decoded one by one with
    /// `decode`.
    pub(crate) async fn in_states<T>(
        &'static self,
        store: &SqliteStore,
        states: Vec<String>,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let rows = store
            .with(move |conn| {
                let placeholders = vec!["?"; states.len()].join(", ");
                let mut statement = conn.prepare(&format!(
                    "{} WHERE state IN ({placeholders})",
                    self.select()
                ))?;
                let rows = statement
                    .query_map(rusqlite::params_from_iter(&states), read_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await?;
        rows.into_iter()
            .map(|row| decode(self.open(store, row)?))
            .collect()
    }
}
