//! The database: opening, migrations, and running blocking SQLite calls off the runtime.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use crate::codec::Sealer;
use crate::{SealingKey, StoreError};

/// The schema, one migration per entry; `PRAGMA user_version` records how many ran.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, encrypted (or plaintext in --insecure-dev, marked).
    "CREATE TABLE sessions (
        workspace_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        platform TEXT NOT NULL,
        encrypted INTEGER NOT NULL,
        payload BLOB NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace_id, account_id, platform)
    ) STRICT;",
    // 2: tasks (the request, which holds inputs and a session, encrypted like sessions),
    // idempotency keys, per-tenant counters, screenshots.
    "CREATE TABLE tasks (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        record TEXT NOT NULL,
        request_encrypted INTEGER NOT NULL,
        request BLOB NOT NULL,
        committing_started INTEGER NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, task_id)
    ) STRICT;
    CREATE INDEX tasks_by_state ON tasks (state);
    CREATE TABLE idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    ) STRICT;
    CREATE TABLE counters (
        tenant_id TEXT NOT NULL,
        counter TEXT NOT NULL,
        value INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, counter)
    ) STRICT;
    CREATE TABLE screenshots (
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        name TEXT NOT NULL,
        png BLOB NOT NULL,
        PRIMARY KEY (tenant_id, task_id, name)
    ) STRICT;",
    // 3: journaled posts (the request, which holds the content and a session or a session
    // id, encrypted like sessions while it is kept), and their idempotency keys (a
    // namespace apart from tasks').
    "CREATE TABLE posts (
        tenant_id TEXT NOT NULL,
        post_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        record TEXT NOT NULL,
        request_encrypted INTEGER NOT NULL,
        request BLOB,
        submit_started INTEGER NOT NULL,
        retried_by TEXT,
        PRIMARY KEY (tenant_id, post_id)
    ) STRICT;
    CREATE INDEX posts_by_state ON posts (state);
    CREATE TABLE post_idempotency (
        tenant_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        post_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key)
    ) STRICT;",
    // 4: guard rails. Replay frames: the screenshots setting each run recorded as it
    // started (the first value kept), and its frames (metadata in the clear, never page
    // text; the JPEG sealed like sessions, bound to its tenant, run and sequence number).
    // The tenants' screenshots switch, and their site decisions.
    "CREATE TABLE frame_runs (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        screenshots TEXT NOT NULL,
        reason TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, run_id)
    ) STRICT;
    CREATE TABLE frames (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        point TEXT NOT NULL,
        url TEXT NOT NULL,
        domain TEXT NOT NULL,
        action TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        taken_at TEXT NOT NULL,
        encrypted INTEGER NOT NULL,
        jpeg BLOB NOT NULL,
        PRIMARY KEY (tenant_id, run_id, seq),
        FOREIGN KEY (tenant_id, run_id) REFERENCES frame_runs (tenant_id, run_id)
    ) STRICT;
    CREATE TABLE tenant_settings (
        tenant_id TEXT NOT NULL PRIMARY KEY,
        screenshots_enabled INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE sites (
        tenant_id TEXT NOT NULL,
        domain TEXT NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        decided_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, domain)
    ) STRICT;",
    // 5: a task's screenshots show a page: sealed like frames (rows written before this
    // are plaintext PNGs, marked 0).
    "ALTER TABLE screenshots ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0;",
    // 6: API keys (the SHA-256 digest of the token, never the token). An agent's or an
    // approver's key is bound to one tenant; only an operator's may be for every tenant.
    "CREATE TABLE api_keys (
        key_id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('agent', 'approver', 'operator')),
        tenant_id TEXT CHECK (tenant_id IS NOT NULL OR role = 'operator'),
        read_only INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        digest BLOB NOT NULL CHECK (length(digest) = 32)
    ) STRICT;",
    // 7: runners' credentials and enrollment codes are keys too (bound to one tenant, their
    // name the runner id), and a runner id has one live credential at a time. SQLite cannot
    // change a CHECK: the table is rebuilt.
    "CREATE TABLE api_keys_7 (
        key_id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        role TEXT NOT NULL
            CHECK (role IN ('agent', 'approver', 'operator', 'runner', 'enrollment')),
        tenant_id TEXT CHECK (tenant_id IS NOT NULL OR role = 'operator'),
        read_only INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        digest BLOB NOT NULL CHECK (length(digest) = 32)
    ) STRICT;
    INSERT INTO api_keys_7 SELECT key_id, name, role, tenant_id, read_only, created_at,
        expires_at, revoked_at, digest FROM api_keys;
    DROP TABLE api_keys;
    ALTER TABLE api_keys_7 RENAME TO api_keys;
    CREATE UNIQUE INDEX api_keys_one_live_runner ON api_keys (name)
        WHERE role = 'runner' AND revoked_at IS NULL;",
    // 8: a frame may be the image of an earlier frame of its run, kept again because the
    // page had not changed since (`same_as`, its sequence number).
    "ALTER TABLE frames ADD COLUMN same_as INTEGER
        CHECK (same_as IS NULL OR (same_as >= 1 AND same_as < seq));",
    // 9: a presented token is looked up by its digest (a known id with a wrong secret and
    // an unknown id are the same miss).
    "CREATE INDEX api_keys_by_digest ON api_keys (digest);",
    // 10: the credential (not the runner id's own: an operator's key) that last connected a
    // runner id, so its id stays theirs while it is away.
    "CREATE TABLE runner_links (
        runner_id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        linked_at TEXT NOT NULL
    ) STRICT;",
    // 11: one-time approval links, by the digest of their token (never the token), so that
    // a link outlives a restart.
    "CREATE TABLE approval_links (
        digest BLOB PRIMARY KEY CHECK (length(digest) = 32),
        tenant_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        action TEXT,
        key_id TEXT NOT NULL,
        name TEXT NOT NULL,
        role TEXT NOT NULL,
        key_tenant TEXT,
        read_only INTEGER NOT NULL,
        expires_ns INTEGER NOT NULL
    ) STRICT;",
    // 12: run events, numbered per tenant (the head row holds the last number), and the
    // webhook's pending deliveries (due when `due_ns` passed: a retry's time, or the end of
    // a claim's lease; `attempt` fences the claim).
    "CREATE TABLE event_heads (
        tenant_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE events (
        tenant_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at_ns INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (tenant_id, seq)
    ) STRICT;
    CREATE INDEX events_by_at ON events (at_ns);
    CREATE TABLE event_deliveries (
        tenant_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        due_ns INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, seq)
    ) STRICT;
    CREATE INDEX event_deliveries_by_due ON event_deliveries (due_ns);",
    // 13: the files a tenant keeps for its runs (artifacts): the description as JSON, the
    // bytes sealed, bound to the tenant and the id.
    "CREATE TABLE artifacts (
        tenant_id TEXT NOT NULL,
        artifact_id TEXT NOT NULL,
        info TEXT NOT NULL,
        size INTEGER NOT NULL CHECK (size >= 0),
        created_ns INTEGER NOT NULL,
        body BLOB NOT NULL,
        encrypted INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, artifact_id)
    ) STRICT;
    CREATE INDEX artifacts_by_created ON artifacts (created_ns);",
    // 14: a tenant's named browser profiles: the owner's consent and the recorded sign-ins
    // (cookie names and expiry, never values), as one JSON document per profile.
    "CREATE TABLE profiles (
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (tenant_id, name)
    ) STRICT;",
];

/// ABR's records in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) conn: Arc<Mutex<Connection>>,
    pub(crate) sealer: Sealer,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("encrypts_sessions", &self.sealer.seals())
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, and brings its schema up to date.
    /// Sessions are encrypted with `key`; without one they are refused, unless
    /// `plaintext_allowed` (`--insecure-dev`).
    ///
    /// # Errors
    /// [`StoreError::Database`] when the file cannot be opened or migrated.
    pub fn open(
        path: &Path,
        key: Option<SealingKey>,
        plaintext_allowed: bool,
    ) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
            && !dir.exists()
        {
            // A directory it makes is its owner's alone (0700), like the database file.
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|e| StoreError::Database(e.to_string()))?;
        }
        // A killed runner leaves its `-wal` and `-shm` behind with whatever mode they had:
        // taken back before SQLite reads them, and again once the log is open.
        owner_only(path)?;
        let conn = Connection::open(path)?;
        owner_only(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        owner_only(path)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            sealer: Sealer::new(key, plaintext_allowed),
            path: path.to_owned(),
        })
    }

    /// A database in memory only (nothing at rest, so sessions may be kept without a key):
    /// for embedders and tests that need no durability.
    ///
    /// # Errors
    /// [`StoreError::Database`] when SQLite cannot set it up.
    pub fn in_memory(key: Option<SealingKey>) -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            sealer: Sealer::new(key, true),
            path: PathBuf::from(":memory:"),
        })
    }

    /// Runs `f` with every write of it, and every write before it, on disk when it returns
    /// (`synchronous=FULL` for its transaction): for the writes that must survive a power
    /// loss, not only a killed process (a committing step about to start, an ending).
    pub(crate) fn synced<T>(
        conn: &mut Connection,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        conn.pragma_update(None, "synchronous", "FULL")?;
        let result = f(conn);
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        result
    }

    /// Runs `f` on the connection without holding up the runtime: in place on a
    /// multi-threaded runtime (its other tasks move to another worker meanwhile, and the
    /// caller waits on no thread hand-off: on a busy machine a wake-up is most of a small
    /// write's wait), else on tokio's blocking pool.
    pub(crate) async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let run = move || {
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn)
        };
        let multi_threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_threaded {
            return tokio::task::block_in_place(run);
        }
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| StoreError::Database(format!("the store's worker failed: {e}")))?
    }
}

/// The database file and its write-ahead log (`-wal`, `-shm`) readable and writable by
/// their owner only (0600): they hold task records, sealed sessions and key digests. SQLite
/// gives a log it creates the database file's mode, but keeps the mode of one it finds (a
/// killed runner's), so each file that exists is checked; one that does not is skipped.
fn owner_only(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mut files = vec![path.to_owned()];
        for suffix in ["-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            files.push(PathBuf::from(name));
        }
        for file in files {
            let mode = match std::fs::metadata(&file) {
                Ok(meta) => meta.permissions().mode(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::Database(e.to_string())),
            };
            if mode & 0o077 != 0 {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| StoreError::Database(e.to_string()))?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let done: usize = conn
        .pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))
        .map(|v| usize::try_from(v).unwrap_or(0))?;
    if done > MIGRATIONS.len() {
        // A newer binary migrated it: its tables are not what this one would write.
        return Err(StoreError::NewerSchema {
            found: u32::try_from(done).unwrap_or(u32::MAX),
            known: u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done) {
        conn.execute_batch(&format!(
            "BEGIN; {sql} PRAGMA user_version = {}; COMMIT;",
            i + 1
        ))?;
    }
    Ok(())
}
