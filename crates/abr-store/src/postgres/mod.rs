//! [`PgStore`]: every store contract on a PostgreSQL database that a fleet of runners
//! shares (`ABR_DATABASE_URL=postgres://…`).
//!
//! The database decides every race: an idempotency key is claimed by a unique key in the
//! transaction that stores its record, a compare-and-swap is one `UPDATE … WHERE version =`,
//! a counter's increment below its bound is one upsert, a run's frames are numbered under
//! its run's row lock. Every write that returned is committed (durable with PostgreSQL's
//! `synchronous_commit`, its default). What holds credentials or shows a page is sealed
//! before it leaves the process, as on SQLite (`codec`): the database never sees a cookie,
//! an input, a post's content or a frame's pixels.
//!
//! Connections come from a pool (deadpool); TLS through rustls with the webpki roots when
//! the URL asks for it (`sslmode=require`; `prefer`, the default, falls back to plaintext
//! on a server without TLS). A lost connection is a [`StoreError::Unreachable`]: retryable.

mod artifacts;
mod counters;
mod events;
mod frames;
mod keys;
mod links;
mod nodes;
mod placements;
mod queue;
mod records;
mod retention;
mod schema;
mod screenshots;
mod sessions;
mod sites;

use std::str::FromStr as _;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;

use crate::codec::Sealer;
use crate::{SealingKey, StoreError};

pub use nodes::NodeState;
pub use placements::{Placed, PlacementKind, RelayGrant};

crate::ledger::ledger_record_stores!(PgStore);

/// How many connections a [`PgStore`] keeps at most, by default.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long a runner's heartbeat holds by default: past it, the runner's unfinished
/// records and sessions are another runner's to end and give back.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(15);

/// ABR's records in a shared PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    pub(crate) sealer: Sealer,
    /// Where it is, without credentials: `host:port/database`.
    target: Arc<str>,
    /// This process's boot: the owner it writes on the unfinished records it holds, and
    /// the one its heartbeats keep alive. Random per connect, never reused.
    pub(crate) boot: Arc<str>,
    /// How long a heartbeat holds.
    pub(crate) lease: std::time::Duration,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.target)
            .field("encrypts_sessions", &self.sealer.seals())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`,
    /// with libpq's `sslmode` among its parameters), with at most `pool_size` connections,
    /// and brings its schema up to date. Sessions are sealed with `key`; without one they
    /// are refused, unless `plaintext_allowed` (`--insecure-dev`).
    ///
    /// # Errors
    /// [`StoreError::Database`] for a URL that is not a PostgreSQL URL (its text is never
    /// repeated: it may hold a password); [`StoreError::Unreachable`] when the database
    /// cannot be reached; [`StoreError::NewerSchema`] for a database a newer binary
    /// migrated.
    pub async fn connect(
        url: &str,
        key: Option<SealingKey>,
        plaintext_allowed: bool,
        pool_size: usize,
    ) -> Result<Self, StoreError> {
        let config = tokio_postgres::Config::from_str(url).map_err(|_| {
            StoreError::Database(
                "the database URL is not a PostgreSQL URL (postgres://user@host:port/database)"
                    .into(),
            )
        })?;
        let target = describe(&config);
        let manager = Manager::from_config(
            config,
            tls()?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .build()
            .map_err(|e| StoreError::Database(format!("the connection pool: {e}")))?;
        let boot = abr_core::clock::new_token()
            .map_err(|_| StoreError::Database("the OS random source failed".into()))?;
        let store = Self {
            pool,
            sealer: Sealer::new(key, plaintext_allowed),
            target: target.into(),
            boot: format!("boot_{boot}").into(),
            lease: DEFAULT_LEASE,
        };
        let mut client = store.client().await?;
        schema::migrate(&mut client).await?;
        Ok(store)
    }

    /// With heartbeats that hold for `lease` (default [`DEFAULT_LEASE`]). Every replica of
    /// a fleet must use the same.
    #[must_use]
    pub fn with_lease(mut self, lease: std::time::Duration) -> Self {
        self.lease = lease;
        self
    }

    /// This process's boot id (the owner of the records it holds).
    pub fn boot(&self) -> &str {
        &self.boot
    }

    /// The lease in seconds, as SQL's `make_interval` takes it.
    pub(crate) fn lease_secs(&self) -> f64 {
        self.lease.as_secs_f64()
    }

    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => StoreError::from(e),
            other => StoreError::Unreachable(format!("{} (pool: {other})", self.target)),
        })
    }

    /// The number of migrations this binary knows (the schema version it writes).
    pub fn schema_version() -> u32 {
        u32::try_from(schema::MIGRATIONS.len()).unwrap_or(u32::MAX)
    }

    /// Closes the pool: connections in use end when they are given back.
    pub fn close(&self) {
        self.pool.close();
    }
}

/// `host:port/database` of a config, never its user's password.
fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or_default();
    format!("{host}:{port}/{db}")
}

/// rustls with the webpki roots, ring as its provider (as the rest of the workspace).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| StoreError::Database(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl From<tokio_postgres::Error> for StoreError {
    /// Typed by SQLSTATE. The message is the server's message and code only, never its
    /// `DETAIL`, which repeats the values of a row (a key's digest, an idempotency key).
    fn from(e: tokio_postgres::Error) -> Self {
        let Some(db) = e.as_db_error() else {
            // No server answer: the connection is gone or could not be made.
            return Self::Unreachable(e.to_string());
        };
        let message = format!("{} ({})", db.message(), db.code().code());
        let code = db.code();
        if *code == SqlState::UNIQUE_VIOLATION
            || *code == SqlState::CHECK_VIOLATION
            || *code == SqlState::FOREIGN_KEY_VIOLATION
            || *code == SqlState::NOT_NULL_VIOLATION
            || *code == SqlState::EXCLUSION_VIOLATION
        {
            Self::Constraint(message)
        } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::LOCK_NOT_AVAILABLE
            || *code == SqlState::QUERY_CANCELED
        {
            Self::Busy(message)
        } else if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED {
            Self::Damaged(message)
        } else if code.code().starts_with("08")
            || code.code().starts_with("57P")
            || *code == SqlState::TOO_MANY_CONNECTIONS
        {
            // Connection exceptions, an administrator's or a crash's shutdown, a server
            // starting up or full: another attempt may reach it.
            Self::Unreachable(message)
        } else {
            Self::Database(message)
        }
    }
}
