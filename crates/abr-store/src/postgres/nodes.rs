//! The runners of a fleet on PostgreSQL: each replica's heartbeat (on the database's clock,
//! so replicas' clocks need not agree), and what "live" means for the records and sessions
//! a runner holds: the boot a node last registered, whose heartbeat is younger than the
//! lease. A node that restarts registers a new boot: the old boot is no longer live at
//! once, so its unfinished records are ended by the restarted node as a restart ends them,
//! and are never resumed by anybody.

use time::OffsetDateTime;

use crate::{PgStore, StoreError};

/// SQL true when the boot named by the expression `owner` is live (`$lease` is the lease
/// in seconds, a parameter).
pub(crate) fn live(owner: &str, lease: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM nodes n WHERE n.boot_id = {owner}
            AND n.heartbeat_at > now() - make_interval(secs => {lease}::double precision))"
    )
}

/// A runner of the fleet, as its last heartbeat said.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NodeState {
    /// Its node id (stable across restarts).
    pub node_id: String,
    /// Its current boot.
    pub boot_id: String,
    /// Where the other replicas reach it, if it said.
    pub address: Option<String>,
    /// Its version.
    pub version: String,
    /// When this boot registered.
    pub started_at: OffsetDateTime,
    /// Its last heartbeat.
    pub heartbeat_at: OffsetDateTime,
    /// Whether it is draining (takes no new work).
    pub draining: bool,
    /// Whether its heartbeat is younger than the lease.
    pub live: bool,
}

impl PgStore {
    /// Registers this process as node `node_id` (a new boot: a previous boot of the same
    /// node is no longer live) or renews its heartbeat, on the database's clock.
    ///
    /// # Errors
    /// A database failure.
    pub async fn heartbeat(
        &self,
        node_id: &str,
        address: Option<&str>,
        version: &str,
        draining: bool,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO nodes (node_id, boot_id, address, version, started_at, heartbeat_at,
                    draining)
                 VALUES ($1, $2, $3, $4, now(), now(), $5)
                 ON CONFLICT (node_id) DO UPDATE SET
                    started_at = CASE WHEN nodes.boot_id = $2 THEN nodes.started_at
                        ELSE now() END,
                    boot_id = $2, address = $3, version = $4, heartbeat_at = now(),
                    draining = $5",
            )
            .await?;
        client
            .execute(
                &statement,
                &[&node_id, &&*self.boot, &address, &version, &draining],
            )
            .await?;
        Ok(())
    }

    /// Takes or renews the fleet-wide lease `name` for `ttl` (on the database's clock):
    /// whether this boot holds it now. Free, expired or already this boot's: taken; another
    /// live holder's: not. A sweep that must run once per fleet runs while it holds it.
    ///
    /// # Errors
    /// A database failure.
    pub async fn hold_lease(
        &self,
        name: &str,
        ttl: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO fleet_leases (name, holder, expires_at)
                 VALUES ($1, $2, now() + make_interval(secs => $3::double precision))
                 ON CONFLICT (name) DO UPDATE SET holder = $2,
                    expires_at = now() + make_interval(secs => $3::double precision)
                 WHERE fleet_leases.holder = $2 OR fleet_leases.expires_at < now()
                 RETURNING holder",
            )
            .await?;
        let row = client
            .query_opt(&statement, &[&name, &&*self.boot, &ttl.as_secs_f64()])
            .await?;
        Ok(row.is_some())
    }

    /// Every runner that ever registered, live or not, by node id.
    ///
    /// # Errors
    /// A database failure.
    pub async fn nodes(&self) -> Result<Vec<NodeState>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT node_id, boot_id, address, version, started_at, heartbeat_at, draining,
                    heartbeat_at > now() - make_interval(secs => $1::double precision)
                 FROM nodes ORDER BY node_id",
                &[&self.lease_secs()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let started: std::time::SystemTime = row.try_get(4)?;
                let beat: std::time::SystemTime = row.try_get(5)?;
                Ok(NodeState {
                    node_id: row.try_get(0)?,
                    boot_id: row.try_get(1)?,
                    address: row.try_get(2)?,
                    version: row.try_get(3)?,
                    started_at: OffsetDateTime::from(started),
                    heartbeat_at: OffsetDateTime::from(beat),
                    draining: row.try_get(6)?,
                    live: row.try_get(7)?,
                })
            })
            .collect()
    }
}
