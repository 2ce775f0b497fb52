//! The PostgreSQL schema, one versioned migration per entry, applied at start by whichever
//! replica starts first (the others wait on the same transaction-scoped lock, which holds
//! behind a connection pooler, unlike a session lock), and a database that a newer binary
//! migrated is refused rather than written with an older idea of its tables.
//!
//! The tables are SQLite's (`sqlite/db.rs`), with what a shared database needs: records are
//! ordered by a sequence (SQLite's rowid), a record is JSONB (retention edits it in place),
//! instants are RFC 3339 text as SQLite keeps them (to the nanosecond; cast where compared).

use deadpool_postgres::Object;

use crate::StoreError;

/// Serializes migrations across replicas (`pg_advisory_xact_lock`): any fixed number.
const MIGRATION_LOCK: i64 = 0x0041_4252_5f4d_4947; // "ABR_MIG"

/// The schema, one migration per entry; `abr_schema` records which ran.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: everything SQLite's ten migrations built, in one step.
    "CREATE TABLE sessions (
        workspace_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        platform TEXT NOT NULL,
        encrypted BOOLEAN NOT NULL,
        payload BYTEA NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace_id, account_id, platform)
    );
    CREATE TABLE tasks (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        version BIGINT NOT NULL,
        state TEXT NOT NULL,
        record JSONB NOT NULL,
        request_encrypted BOOLEAN NOT NULL,
        request BYTEA NOT NULL,
        committing_started BOOLEAN NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, task_id)
    );
    CREATE INDEX tasks_by_state ON tasks (state);
    CREATE INDEX tasks_by_tenant_seq ON tasks (tenant_id, seq DESC);
    CREATE TABLE idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    );
    CREATE TABLE counters (
        tenant_id TEXT NOT NULL,
        counter TEXT NOT NULL,
        value BIGINT NOT NULL CHECK (value >= 0),
        PRIMARY KEY (tenant_id, counter)
    );
    CREATE TABLE screenshots (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        name TEXT NOT NULL,
        png BYTEA NOT NULL,
        encrypted BOOLEAN NOT NULL,
        PRIMARY KEY (tenant_id, task_id, name)
    );
    CREATE TABLE posts (
        tenant_id TEXT NOT NULL,
        post_id TEXT NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        version BIGINT NOT NULL,
        state TEXT NOT NULL,
        record JSONB NOT NULL,
        request_encrypted BOOLEAN NOT NULL,
        request BYTEA,
        submit_started BOOLEAN NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, post_id)
    );
    CREATE INDEX posts_by_state ON posts (state);
    CREATE INDEX posts_by_tenant_seq ON posts (tenant_id, seq DESC);
    CREATE TABLE post_idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        post_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    );
    CREATE TABLE frame_runs (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        screenshots TEXT NOT NULL,
        reason TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, run_id)
    );
    CREATE TABLE frames (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        point TEXT NOT NULL,
        url TEXT NOT NULL,
        domain TEXT NOT NULL,
        action TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        taken_at TEXT NOT NULL,
        encrypted BOOLEAN NOT NULL,
        jpeg BYTEA NOT NULL,
        same_as INTEGER CHECK (same_as IS NULL OR (same_as >= 1 AND same_as < seq)),
        PRIMARY KEY (tenant_id, run_id, seq),
        FOREIGN KEY (tenant_id, run_id) REFERENCES frame_runs (tenant_id, run_id)
    );
    CREATE TABLE tenant_settings (
        tenant_id TEXT NOT NULL PRIMARY KEY,
        screenshots_enabled BOOLEAN NOT NULL
    );
    CREATE TABLE sites (
        tenant_id TEXT NOT NULL,
        domain TEXT NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        decided_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, domain)
    );
    CREATE TABLE api_keys (
        key_id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        role TEXT NOT NULL
            CHECK (role IN ('agent', 'approver', 'operator', 'runner', 'enrollment')),
        tenant_id TEXT CHECK (tenant_id IS NOT NULL OR role = 'operator'),
        read_only BOOLEAN NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        digest BYTEA NOT NULL CHECK (length(digest) = 32)
    );
    CREATE UNIQUE INDEX api_keys_one_live_runner ON api_keys (name)
        WHERE role = 'runner' AND revoked_at IS NULL;
    CREATE INDEX api_keys_by_digest ON api_keys (digest);
    CREATE TABLE runner_links (
        runner_id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        linked_at TEXT NOT NULL
    );",
    // 2: a fleet. The runners (`nodes`: one row per node id, its current boot and its last
    // heartbeat, on the database's clock), the boot that last wrote an unfinished record
    // (`owner`: the runner holding it; a record whose owner is not a live boot is a stopped
    // runner's), and the sessions each boot holds per tenant, so that a runner's restart
    // gives back its own and no other's.
    "CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        boot_id TEXT NOT NULL UNIQUE,
        address TEXT,
        version TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        heartbeat_at TIMESTAMPTZ NOT NULL,
        draining BOOLEAN NOT NULL DEFAULT FALSE
    );
    ALTER TABLE tasks ADD COLUMN owner TEXT;
    ALTER TABLE posts ADD COLUMN owner TEXT;
    CREATE INDEX tasks_by_owner ON tasks (owner) WHERE owner IS NOT NULL;
    CREATE INDEX posts_by_owner ON posts (owner) WHERE owner IS NOT NULL;
    CREATE TABLE session_holds (
        tenant_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        held BIGINT NOT NULL CHECK (held >= 0),
        PRIMARY KEY (tenant_id, owner)
    );",
    // 3: one-time approval links, by the digest of their token (never the token): a
    // person's link works whichever replica the balancer picks.
    "CREATE TABLE approval_links (
        digest BYTEA PRIMARY KEY CHECK (length(digest) = 32),
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        action TEXT,
        key_id TEXT NOT NULL,
        name TEXT NOT NULL,
        role TEXT NOT NULL,
        key_tenant TEXT,
        read_only BOOLEAN NOT NULL,
        expires_ns BIGINT NOT NULL
    );",
    // 4: the fleet's sweeps run on one replica at a time: whoever holds the sweep's lease
    // row (a row, not a session advisory lock: those break behind a connection pooler).
    "CREATE TABLE fleet_leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    );",
    // 5: run events, numbered per tenant by the head row (its row lock orders the writers:
    // a number is visible only after every smaller one is), and the webhook's pending
    // deliveries (due when `due_ns` passed: a retry's time, or the end of a claim's lease;
    // `attempt` fences the claim).
    "CREATE TABLE event_heads (
        tenant_id TEXT PRIMARY KEY,
        seq BIGINT NOT NULL
    );
    CREATE TABLE events (
        tenant_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        at_ns BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (tenant_id, seq)
    );
    CREATE INDEX events_by_at ON events (at_ns);
    CREATE TABLE event_deliveries (
        tenant_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        attempt BIGINT NOT NULL,
        due_ns BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, seq)
    );
    CREATE INDEX event_deliveries_by_due ON event_deliveries (due_ns);",
    // 6: what lives in one replica's memory (a browse session's browser, a capture, a relay
    // runner's socket) and which boot holds it, so that another replica forwards a call
    // for it to its owner, or says it is lost when the owner is gone. A task's owner is
    // its record's; it is found by id alone (ids are random: a tenant's check is the
    // owner's, on the forwarded call). Queued tasks given to the fleet (no owner) wait in
    // order for a replica with a free slot. Relay tokens (by digest): minted on one replica,
    // a runner's socket may reach another.
    "CREATE TABLE placements (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        tenant_id TEXT,
        node_id TEXT NOT NULL,
        boot_id TEXT NOT NULL,
        placed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (kind, key)
    );
    CREATE INDEX placements_by_boot ON placements (boot_id);
    CREATE INDEX tasks_by_id ON tasks (task_id);
    CREATE INDEX tasks_waiting ON tasks (seq) WHERE owner IS NULL AND state = 'queued';
    CREATE TABLE relay_tokens (
        digest BYTEA PRIMARY KEY CHECK (length(digest) = 32),
        runner_id TEXT NOT NULL,
        tenant_id TEXT,
        owner TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    );",
    // 7: the files a tenant keeps for its runs (artifacts): the description as JSON, the
    // bytes sealed, bound to the tenant and the id.
    "CREATE TABLE artifacts (
        tenant_id TEXT NOT NULL,
        artifact_id TEXT NOT NULL,
        info TEXT NOT NULL,
        size BIGINT NOT NULL CHECK (size >= 0),
        created_ns BIGINT NOT NULL,
        body BYTEA NOT NULL,
        encrypted BOOLEAN NOT NULL,
        PRIMARY KEY (tenant_id, artifact_id)
    );
    CREATE INDEX artifacts_by_created ON artifacts (created_ns);",
];

/// Brings the schema up to date in one transaction per migration, under the migration lock.
///
/// # Errors
/// [`StoreError::NewerSchema`] when the database was migrated by a newer binary; a database
/// failure otherwise.
pub(crate) async fn migrate(client: &mut Object) -> Result<(), StoreError> {
    // The ledger of migrations, made under the lock too: two replicas creating it at once
    // would race on the catalog.
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS abr_schema (
            version INTEGER PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )
    .await?;
    tx.commit().await?;
    let known = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let version = i32::try_from(i + 1).unwrap_or(i32::MAX);
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let done: Option<i32> = tx
            .query_one("SELECT max(version) FROM abr_schema", &[])
            .await?
            .get(0);
        let done = done.unwrap_or(0);
        if done > known {
            return Err(StoreError::NewerSchema {
                found: u32::try_from(done).unwrap_or(0),
                known: u32::try_from(known).unwrap_or(0),
            });
        }
        if done >= version {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute("INSERT INTO abr_schema (version) VALUES ($1)", &[&version])
            .await?;
        tx.commit().await?;
    }
    // Nothing left to run: still refuse a newer schema.
    let done: Option<i32> = client
        .query_one("SELECT max(version) FROM abr_schema", &[])
        .await?
        .get(0);
    match done {
        Some(done) if done > known => Err(StoreError::NewerSchema {
            found: u32::try_from(done).unwrap_or(0),
            known: u32::try_from(known).unwrap_or(0),
        }),
        _ => Ok(()),
    }
}
