//! What the SQLite and the PostgreSQL stores write the same way: the associated data that
//! binds a sealed value to its row, the names and instants kept in text columns, the
//! [`Sealer`] (sealing with the [`SealingKey`], or refusing without one), and how a task's or
//! a post's record becomes a row's fields and back. Only the SQL differs between the two.

use std::sync::Arc;

use abr_core::store::{Counter, StoredKey};
use abr_core::store::{LedgerHeader, StoredPost, StoredTask};
use abr_protocol::{
    FrameInfo, FramePoint, PostRecord, PostRequest, PostState, Role, ScreenshotsMode, SiteDecision,
    SiteEntry, TaskRecord, TaskRequest, TaskState,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use crate::{SealingKey, StoreError};

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

/// Seals what holds secrets or shows a page with the key, or keeps it in plaintext where
/// plaintext is allowed (`--insecure-dev`, a store in memory), or refuses it.
#[derive(Clone)]
pub(crate) struct Sealer {
    key: Option<Arc<SealingKey>>,
    plaintext_allowed: bool,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("seals", &self.key.is_some())
            .field("plaintext_allowed", &self.plaintext_allowed)
            .finish()
    }
}

impl Sealer {
    pub(crate) fn new(key: Option<SealingKey>, plaintext_allowed: bool) -> Self {
        Self {
            key: key.map(Arc::new),
            plaintext_allowed,
        }
    }

    /// Whether it seals (it has a key).
    pub(crate) fn seals(&self) -> bool {
        self.key.is_some()
    }

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
pub(crate) struct Columns {
    pub tenant: String,
    pub id: String,
    pub version: i64,
    pub state: String,
    pub record: String,
    pub encrypted: bool,
    pub request: Option<Vec<u8>>,
    pub mark: bool,
    pub retried_by: Option<String>,
}

/// A row, read (the request still sealed).
pub(crate) struct Row {
    pub id: String,
    pub tenant: String,
    pub version: i64,
    pub record: String,
    pub encrypted: bool,
    pub request: Option<Vec<u8>>,
    pub mark: bool,
    pub retried_by: Option<String>,
}

impl Table {
    fn aad(&self, tenant: &str, id: &str) -> Vec<u8> {
        row_aad(self.aad_tag, &[tenant, id])
    }

    /// The columns of `fields`, the request sealed and bound to its row.
    pub(crate) fn columns(&self, sealer: &Sealer, fields: Fields) -> Result<Columns, StoreError> {
        let (encrypted, request) = match fields.request {
            None => (false, None),
            Some(json) => {
                let aad = self.aad(&fields.ledger.tenant_id, &fields.id);
                let (encrypted, sealed) = sealer.seal_payload(json, &aad, fields.holds_secrets)?;
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

    /// The fields of a row as read, its request opened.
    pub(crate) fn open(&self, sealer: &Sealer, row: Row) -> Result<Read, StoreError> {
        let request = match row.request {
            None => None,
            Some(sealed) => Some(sealer.open_payload(
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
}

impl Table {
    /// A page of `limit` records from `rows`, the rows of a query for `limit + 1`: the
    /// next page's cursor is the id of the last one given, when one more was there.
    pub(crate) fn page<T>(
        &self,
        sealer: &Sealer,
        rows: Vec<Row>,
        limit: usize,
        decode: impl Fn(Read) -> Result<T, StoreError>,
    ) -> Result<abr_core::store::Listed<T>, StoreError> {
        let more = rows.len() > limit;
        let mut items = Vec::with_capacity(limit);
        let mut last = None;
        for row in rows.into_iter().take(limit) {
            last = Some(row.id.clone());
            items.push(decode(self.open(sealer, row)?)?);
        }
        Ok(abr_core::store::Listed {
            items,
            next: last.filter(|_| more),
        })
    }
}

/// A key's columns as written: its role's name and its instants as text.
pub(crate) struct KeyColumns {
    pub role: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// The columns of `key` that are not stored as they are.
pub(crate) fn key_columns(key: &StoredKey) -> Result<KeyColumns, StoreError> {
    Ok(KeyColumns {
        role: name_of(&key.role, "a key's role")?,
        created_at: timestamp(key.created_at, "a key's creation")?,
        expires_at: key
            .expires_at
            .map(|at| timestamp(at, "a key's expiry"))
            .transpose()?,
        revoked_at: key
            .revoked_at
            .map(|at| timestamp(at, "a key's revocation"))
            .transpose()?,
    })
}

/// Tasks and their idempotency keys. A task's request without secrets is kept in
/// plaintext without a key, so a plaintext request is read as it is.
pub(crate) static TASKS: Table = Table {
    table: "tasks",
    id_column: "task_id",
    mark_column: "committing_started",
    idempotency_table: "idempotency",
    aad_tag: b"task",
    trusts_plaintext: true,
};

/// Posts and their idempotency keys (a namespace apart from tasks'). A post's request
/// always holds a session (or names one), so it is kept in plaintext only where plaintext
/// is allowed.
pub(crate) static POSTS: Table = Table {
    table: "posts",
    id_column: "post_id",
    mark_column: "submit_started",
    idempotency_table: "post_idempotency",
    aad_tag: b"post",
    trusts_plaintext: false,
};

/// A task state's stored name.
pub(crate) fn task_state(state: TaskState) -> Result<String, StoreError> {
    name_of(&state, "a task state")
}

/// The stored names of the states of unfinished tasks.
pub(crate) fn unfinished_task_states() -> Result<Vec<String>, StoreError> {
    [TaskState::Queued, TaskState::Running, TaskState::Paused]
        .into_iter()
        .map(task_state)
        .collect()
}

/// A task's fields: its request holds inputs and a session (credentials), sealed.
pub(crate) fn task_fields(task: &StoredTask) -> Result<Fields, StoreError> {
    let request = serde_json::to_vec(&task.request)
        .map_err(|_| StoreError::Record("a task request".into()))?;
    Ok(Fields {
        ledger: task.ledger.clone(),
        id: task.id().to_owned(),
        state: task_state(task.record.state)?,
        record: serde_json::to_string(&task.record)
            .map_err(|_| StoreError::Record("a task record".into()))?,
        request: Some(request),
        holds_secrets: !task.request.inputs.is_empty() || task.request.session.is_some(),
        ends: task.record.state.is_final(),
    })
}

/// A task read back.
pub(crate) fn decode_task(read: Read) -> Result<StoredTask, StoreError> {
    let request: TaskRequest = read
        .request
        .as_deref()
        .and_then(|json| serde_json::from_slice(json).ok())
        .ok_or_else(|| StoreError::Record("a task request".into()))?;
    let record: TaskRecord = serde_json::from_str(&read.record)
        .map_err(|_| StoreError::Record("a task record".into()))?;
    Ok(StoredTask {
        ledger: read.ledger,
        request,
        record,
    })
}

/// A post state's stored name.
pub(crate) fn post_state(state: PostState) -> Result<String, StoreError> {
    name_of(&state, "a post state")
}

/// A post's fields: its request holds its content and a session (or names one), sealed,
/// and is dropped once the post can no longer be re-checked.
pub(crate) fn post_fields(post: &StoredPost) -> Result<Fields, StoreError> {
    let request = post
        .request
        .as_ref()
        .map(|request| {
            serde_json::to_vec(request).map_err(|_| StoreError::Record("a post request".into()))
        })
        .transpose()?;
    Ok(Fields {
        ledger: post.ledger.clone(),
        id: post.id().to_owned(),
        state: post_state(post.record.state)?,
        record: serde_json::to_string(&post.record)
            .map_err(|_| StoreError::Record("a post record".into()))?,
        request,
        holds_secrets: true,
        ends: post.record.state.is_final(),
    })
}

/// A post read back.
pub(crate) fn decode_post(read: Read) -> Result<StoredPost, StoreError> {
    let request = read
        .request
        .map(|json| {
            serde_json::from_slice::<PostRequest>(&json)
                .map_err(|_| StoreError::Record("a post request".into()))
        })
        .transpose()?;
    let record: PostRecord = serde_json::from_str(&read.record)
        .map_err(|_| StoreError::Record("a post record".into()))?;
    Ok(StoredPost {
        ledger: read.ledger,
        record,
        request,
    })
}

// ---- the other tables' rows -------------------------------------------------------

/// A counter's stored name.
pub(crate) fn counter_name(counter: &Counter) -> String {
    match counter {
        Counter::Executions { day } => format!("executions:{day}"),
        Counter::Sessions => "sessions".to_owned(),
        Counter::Retries { task_id } => format!("retries:{task_id}"),
    }
}

/// A key's columns as read.
pub(crate) struct RawKey {
    pub id: String,
    pub name: String,
    pub role: String,
    pub tenant: Option<String>,
    pub read_only: bool,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub digest: Vec<u8>,
}

/// An optional instant stored by [`timestamp`].
pub(crate) fn optional_instant(
    text: Option<&str>,
    what: &str,
) -> Result<Option<OffsetDateTime>, StoreError> {
    text.map(|t| parse_timestamp(t, what)).transpose()
}

/// A key read back.
pub(crate) fn decode_key(raw: RawKey) -> Result<StoredKey, StoreError> {
    Ok(StoredKey {
        role: from_name::<Role>(&raw.role, "a key's role")?,
        created_at: parse_timestamp(&raw.created_at, "a key's creation")?,
        expires_at: optional_instant(raw.expires_at.as_deref(), "a key's expiry")?,
        revoked_at: optional_instant(raw.revoked_at.as_deref(), "a key's revocation")?,
        digest: raw
            .digest
            .try_into()
            .map_err(|_| StoreError::Record("a key's digest".into()))?,
        id: raw.id,
        name: raw.name,
        tenant: raw.tenant,
        read_only: raw.read_only,
    })
}

/// The associated data binding a sealed frame to its row.
pub(crate) fn frame_aad(tenant: &str, run_id: &str, seq: u32) -> Vec<u8> {
    row_aad(b"frame", &[tenant, run_id, &seq.to_string()])
}

/// A run's screenshots setting read back.
pub(crate) fn mode_of(name: &str) -> Result<ScreenshotsMode, StoreError> {
    from_name(name, "a run's screenshots setting")
}

/// The columns of a frame's metadata, in the order [`read_info`] reads them.
/// A frame's metadata columns as read.
pub(crate) type RawInfo = (
    u32,
    String,
    String,
    String,
    String,
    i64,
    String,
    Option<u32>,
);

/// A frame's metadata read back.
pub(crate) fn decode_info(raw: RawInfo) -> Result<FrameInfo, StoreError> {
    let (seq, point, url, domain, action, bytes, taken_at, same_as) = raw;
    Ok(FrameInfo {
        seq,
        point: from_name::<FramePoint>(&point, "a frame's point")?,
        url,
        domain,
        action,
        bytes: usize::try_from(bytes).map_err(|_| StoreError::Record("a frame's size".into()))?,
        taken_at: parse_timestamp(&taken_at, "a frame's time")?,
        same_as,
    })
}

/// The setting `run_id` recorded, if any.
/// A site decision's columns as read.
pub(crate) type RawEntry = (String, String, String, String);

/// A site decision read back.
pub(crate) fn decode_site(raw: RawEntry) -> Result<SiteEntry, StoreError> {
    let (domain, decision, decided_by, decided_at) = raw;
    Ok(SiteEntry {
        domain,
        decision: from_name::<SiteDecision>(&decision, "a site decision")?,
        decided_by,
        decided_at: parse_timestamp(&decided_at, "a site decision's time")?,
    })
}

/// The associated data binding a sealed screenshot to its row.
pub(crate) fn screenshot_aad(tenant: &str, task_id: &str, name: &str) -> Vec<u8> {
    row_aad(b"screenshot", &[tenant, task_id, name])
}

/// The associated data binding an artifact's sealed bytes to its tenant and id.
pub(crate) fn artifact_aad(tenant: &str, id: &str) -> Vec<u8> {
    row_aad(b"artifact", &[tenant, id])
}

/// An artifact's description as kept next to its bytes (no bytes in it).
pub(crate) fn artifact_info_json(info: &abr_protocol::ArtifactInfo) -> Result<String, StoreError> {
    serde_json::to_string(info).map_err(|e| StoreError::Damaged(e.to_string()))
}

/// An artifact's description as kept.
pub(crate) fn artifact_info_of(json: &str) -> Result<abr_protocol::ArtifactInfo, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Damaged(format!("an artifact: {e}")))
}

/// The associated data binding a sealed session to its row.
pub(crate) fn session_aad(key: &abr_core::SessionKey) -> Vec<u8> {
    row_aad(b"", &[&key.workspace_id, &key.account_id, &key.platform])
}

/// An approval link's columns (the approver as the fields of its principal; the expiry in
/// nanoseconds since the Unix epoch, exact and comparable in SQL).
pub(crate) struct LinkRow {
    pub digest: Vec<u8>,
    pub tenant: String,
    pub task_id: String,
    pub action: Option<String>,
    pub key_id: String,
    pub name: String,
    pub role: String,
    pub key_tenant: Option<String>,
    pub read_only: bool,
    pub expires_ns: i64,
}

/// An instant as nanoseconds since the Unix epoch.
pub(crate) fn unix_ns(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos()).unwrap_or(i64::MAX)
}

/// `link` as its columns.
pub(crate) fn link_row(link: &abr_core::store::StoredLink) -> Result<LinkRow, StoreError> {
    let p = &link.minted_by;
    Ok(LinkRow {
        digest: link.digest.to_vec(),
        tenant: link.tenant.clone(),
        task_id: link.task_id.clone(),
        action: link.action.clone(),
        key_id: p.key_id().to_owned(),
        name: p.name().to_owned(),
        role: name_of(&p.role(), "a link's approver role")?,
        key_tenant: match p.tenants() {
            abr_core::principal::Tenants::One(t) => Some(t.clone()),
            abr_core::principal::Tenants::All => None,
        },
        read_only: p.read_only(),
        expires_ns: unix_ns(link.expires_at),
    })
}

/// A link read back.
pub(crate) fn decode_link(row: LinkRow) -> Result<abr_core::store::StoredLink, StoreError> {
    let bad = || StoreError::Record("an approval link".into());
    let tenants = match row.key_tenant {
        Some(t) => abr_core::principal::Tenants::One(t),
        None => abr_core::principal::Tenants::All,
    };
    let minted_by = abr_core::principal::Principal::new(
        row.key_id,
        &row.name,
        from_name::<Role>(&row.role, "a link's approver role")?,
        tenants,
        row.read_only,
    )
    .map_err(|_| bad())?;
    Ok(abr_core::store::StoredLink {
        digest: row.digest.try_into().map_err(|_| bad())?,
        tenant: row.tenant,
        task_id: row.task_id,
        action: row.action,
        minted_by,
        expires_at: OffsetDateTime::from_unix_timestamp_nanos(i128::from(row.expires_ns))
            .map_err(|_| bad())?,
    })
}

/// A run event as its row keeps it: JSON (ids, names and states only: nothing to seal).
pub(crate) fn event_body(event: &abr_protocol::RunEvent) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|_| StoreError::Record("event".into()))
}

/// The run event a row keeps.
pub(crate) fn decode_event(body: &str) -> Result<abr_protocol::RunEvent, StoreError> {
    serde_json::from_str(body).map_err(|_| StoreError::Record("event".into()))
}

/// A sequence or an attempt as a column keeps it (a signed 64-bit integer).
pub(crate) fn column_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A column's sequence or attempt, never negative.
pub(crate) fn int_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// `now + lease` in Unix nanoseconds, saturating.
pub(crate) fn lease_end_ns(now: OffsetDateTime, lease: std::time::Duration) -> i64 {
    let lease = i64::try_from(lease.as_nanos()).unwrap_or(i64::MAX);
    unix_ns(now).saturating_add(lease)
}
