//! Where something that lives in one replica's memory is: a browse session's browser, a
//! capture, a relay runner's socket (a row per thing, naming the boot that holds it), and a
//! task's run (its record's owner). Another replica forwards a call for it to the owner's
//! address while the owner's boot is live, and answers that it is lost once it is not: a
//! node that comes back under the same id is a new boot, so what its previous boot held is
//! never resurrected.

use crate::{PgStore, StoreError};

/// What is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// A browse session (by its id).
    Browse,
    /// A capture (by its id).
    Capture,
    /// A relay runner's socket (by its runner id).
    Runner,
}

impl PlacementKind {
    fn name(self) -> &'static str {
        match self {
            Self::Browse => "browse",
            Self::Capture => "capture",
            Self::Runner => "runner",
        }
    }
}

/// Who holds something, as the database says now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placed {
    /// Whose it is (`None`: a relay runner any operator reaches).
    pub tenant: Option<String>,
    /// The node that holds it (`None` for a task whose boot no node names any more).
    pub node_id: Option<String>,
    /// Where the other replicas reach that node (its `ABR_PUBLIC_URL`).
    pub address: Option<String>,
    /// The holding boot is this process.
    pub here: bool,
    /// The holding boot is its node's current boot and its heartbeat is within the lease.
    pub live: bool,
}

/// A row of (node, address, here, live, tenant) as a [`Placed`].
fn placed_of(row: &tokio_postgres::Row) -> Result<Placed, StoreError> {
    Ok(Placed {
        node_id: row.try_get(0)?,
        address: row.try_get(1)?,
        here: row.try_get(2)?,
        live: row.try_get(3)?,
        tenant: row.try_get(4)?,
    })
}

impl PgStore {
    /// Records that this boot, of node `node_id`, holds `key` of `kind`, `tenant`'s
    /// (replacing whoever held it before).
    ///
    /// # Errors
    /// A database failure.
    pub async fn place(
        &self,
        kind: PlacementKind,
        key: &str,
        tenant: Option<&str>,
        node_id: &str,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO placements (kind, key, tenant_id, node_id, boot_id)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (kind, key) DO UPDATE SET tenant_id = $3, node_id = $4,
                    boot_id = $5, placed_at = now()",
                &[&kind.name(), &key, &tenant, &node_id, &&*self.boot],
            )
            .await?;
        Ok(())
    }

    /// Forgets that this boot holds `key` of `kind` (another boot's placement is kept).
    ///
    /// # Errors
    /// A database failure.
    pub async fn unplace(&self, kind: PlacementKind, key: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM placements WHERE kind = $1 AND key = $2 AND boot_id = $3",
                &[&kind.name(), &key, &&*self.boot],
            )
            .await?;
        Ok(())
    }

    /// Who holds `key` of `kind`, if anybody placed it.
    ///
    /// # Errors
    /// A database failure.
    pub async fn placed(
        &self,
        kind: PlacementKind,
        key: &str,
    ) -> Result<Option<Placed>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT p.node_id, n.address, p.boot_id = $3, {}, p.tenant_id
                 FROM placements p LEFT JOIN nodes n ON n.boot_id = p.boot_id
                 WHERE p.kind = $1 AND p.key = $2",
                super::nodes::live("p.boot_id", "$4")
            ))
            .await?;
        let row = client
            .query_opt(
                &statement,
                &[&kind.name(), &key, &&*self.boot, &self.lease_secs()],
            )
            .await?;
        row.as_ref().map(placed_of).transpose()
    }

    /// Who runs the unfinished task `task_id` (of any tenant), if it is unfinished and
    /// held by a boot.
    ///
    /// # Errors
    /// A database failure.
    pub async fn running(&self, task_id: &str) -> Result<Option<Placed>, StoreError> {
        let states = crate::codec::unfinished_task_states()?;
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT n.node_id, n.address, t.owner = $2, {}, t.tenant_id
                 FROM tasks t LEFT JOIN nodes n ON n.boot_id = t.owner
                 WHERE t.task_id = $1 AND t.owner IS NOT NULL AND t.state = ANY($3)",
                super::nodes::live("t.owner", "$4")
            ))
            .await?;
        let row = client
            .query_opt(
                &statement,
                &[&task_id, &&*self.boot, &states, &self.lease_secs()],
            )
            .await?;
        row.as_ref().map(placed_of).transpose()
    }
}

/// What a relay token opens, as kept: the runner's tenant (`None`: operators only) and the
/// credential that minted it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelayGrant {
    /// The tenant the runner serves.
    pub tenant: Option<String>,
    /// The key id that minted it.
    pub owner: String,
}

impl RelayGrant {
    /// A grant of `tenant` minted by `owner`.
    pub fn new(tenant: Option<String>, owner: String) -> Self {
        Self { tenant, owner }
    }
}

impl PgStore {
    /// Keeps a relay token (its SHA-256 `digest`) for `runner_id` until `ttl` from now, on
    /// the database's clock, unless `max` unexpired ones are kept (then `false`, nothing
    /// kept); expired ones are forgotten first.
    ///
    /// # Errors
    /// A database failure.
    pub async fn put_relay_token(
        &self,
        digest: &[u8; 32],
        runner_id: &str,
        grant: &RelayGrant,
        ttl: std::time::Duration,
        max: usize,
    ) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("DELETE FROM relay_tokens WHERE expires_at <= now()", &[])
            .await?;
        let kept: i64 = tx
            .query_one("SELECT COUNT(*) FROM relay_tokens", &[])
            .await?
            .try_get(0)?;
        if kept >= i64::try_from(max).unwrap_or(i64::MAX) {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO relay_tokens (digest, runner_id, tenant_id, owner, expires_at)
             VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision))",
            &[
                &digest.as_slice(),
                &runner_id,
                &grant.tenant,
                &grant.owner,
                &ttl.as_secs_f64(),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Spends the relay token whose digest is `digest`: its grant when it is unexpired and
    /// minted for `runner_id`. Spent whatever it was presented for (one attempt per token);
    /// of racing spends, one gets it.
    ///
    /// # Errors
    /// A database failure.
    pub async fn take_relay_token(
        &self,
        digest: &[u8; 32],
        runner_id: &str,
    ) -> Result<Option<RelayGrant>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "DELETE FROM relay_tokens WHERE digest = $1
                 RETURNING runner_id, tenant_id, owner, expires_at > now()",
                &[&digest.as_slice()],
            )
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let minted_for: String = row.try_get(0)?;
        let tenant: Option<String> = row.try_get(1)?;
        let owner: String = row.try_get(2)?;
        let open: bool = row.try_get(3)?;
        Ok((open && minted_for == runner_id).then_some(RelayGrant { tenant, owner }))
    }
}
