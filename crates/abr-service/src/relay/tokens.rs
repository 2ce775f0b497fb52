//! Relay tokens: random, single use, short-lived, scoped to one runner id (and the tenant
//! its credential serves), naming the credential that minted them (the connection's
//! owner), kept only as SHA-256 digests and compared in constant time. A fleet replica
//! keeps them in the shared database instead ([`RelayTokens::share`]): a runner mints one
//! through the balancer and its socket may reach another replica.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::time::Instant;

struct Entry {
    digest: [u8; 32],
    runner_id: String,
    grant: Grant,
    expires: Instant,
}

/// What a relay token opens: a connection of its runner id serving `tenant` (`None`: only
/// operators reach it), owned by the credential `owner` (a key id) that minted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) tenant: Option<String>,
    pub(crate) owner: String,
}

/// Why no token was minted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MintRefused {
    /// Too many unused tokens.
    Full,
    /// No randomness.
    NoRandomness,
    /// The fleet's database failed.
    Store,
}

/// The unused relay tokens of a hub.
pub(crate) struct RelayTokens {
    entries: Mutex<Vec<Entry>>,
    ttl: Duration,
    max: usize,
    /// The fleet's database, when the tokens are kept there.
    shared: OnceLock<Arc<abr_store::PgStore>>,
}

impl std::fmt::Debug for RelayTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayTokens")
            .field("ttl", &self.ttl)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl RelayTokens {
    pub(crate) fn new(ttl: Duration, max: usize) -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
            ttl,
            max,
            shared: OnceLock::new(),
        }
    }

    /// Keeps the tokens in the fleet's database from now on (set once, before serving).
    pub(crate) fn share(&self, store: Arc<abr_store::PgStore>) {
        let _ = self.shared.set(store);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new token for `runner_id` opening what `grant` says, and how long it opens a
    /// connection.
    pub(crate) async fn mint(
        &self,
        runner_id: &str,
        grant: Grant,
    ) -> Result<(String, Duration), MintRefused> {
        let token = abr_core::new_token().map_err(|_| MintRefused::NoRandomness)?;
        if let Some(store) = self.shared.get() {
            let kept = abr_store::RelayGrant::new(grant.tenant, grant.owner);
            return match store
                .put_relay_token(&digest(&token), runner_id, &kept, self.ttl, self.max)
                .await
            {
                Ok(true) => Ok((token, self.ttl)),
                Ok(false) => Err(MintRefused::Full),
                Err(e) => {
                    tracing::warn!(target: "abr::relay", error = %e, "a relay token could not be kept");
                    Err(MintRefused::Store)
                }
            };
        }
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|e| e.expires > now);
        if entries.len() >= self.max {
            return Err(MintRefused::Full);
        }
        entries.push(Entry {
            digest: digest(&token),
            runner_id: runner_id.to_owned(),
            grant,
            expires: now + self.ttl,
        });
        Ok((token, self.ttl))
    }

    /// Spends `presented`: its grant when it is an unexpired token minted for `runner_id`. A
    /// token presented for another runner id is spent too (a token is good for one
    /// attempt).
    pub(crate) async fn redeem(&self, presented: &str, runner_id: &str) -> Option<Grant> {
        let presented = digest(presented);
        if let Some(store) = self.shared.get() {
            // The database looks the digest up (an index, not a comparison of secrets).
            return match store.take_relay_token(&presented, runner_id).await {
                Ok(grant) => grant.map(|g| Grant {
                    tenant: g.tenant,
                    owner: g.owner,
                }),
                Err(e) => {
                    tracing::warn!(target: "abr::relay", error = %e, "a relay token could not be checked: refused");
                    None
                }
            };
        }
        let now = Instant::now();
        let mut entries = self.lock();
        // Every entry is compared (no early exit): the time does not depend on which matched.
        let mut found = None;
        for (i, entry) in entries.iter().enumerate() {
            if bool::from(entry.digest.ct_eq(&presented)) {
                found = Some(i);
            }
        }
        let entry = entries.swap_remove(found?);
        (entry.runner_id == runner_id && entry.expires > now).then_some(entry.grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(tenant: Option<&str>) -> Grant {
        Grant {
            tenant: tenant.map(str::to_owned),
            owner: "key_1".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_opens_one_connection_for_its_runner_before_it_expires() {
        let tokens = RelayTokens::new(Duration::from_secs(120), 8);
        let (a, ttl) = tokens.mint("runner-a", grant(Some("acme"))).await.unwrap();
        assert_eq!(ttl, Duration::from_secs(120));
        assert!(tokens.redeem("not-a-token", "runner-a").await.is_none());
        assert_eq!(
            tokens.redeem(&a, "runner-a").await,
            Some(grant(Some("acme")))
        );
        assert!(
            tokens.redeem(&a, "runner-a").await.is_none(),
            "a token is single use"
        );

        let (b, _) = tokens.mint("runner-a", grant(None)).await.unwrap();
        assert!(
            tokens.redeem(&b, "runner-b").await.is_none(),
            "scoped to its runner id"
        );
        assert!(
            tokens.redeem(&b, "runner-a").await.is_none(),
            "spent by the wrong attempt"
        );

        let (c, _) = tokens.mint("runner-a", grant(None)).await.unwrap();
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(tokens.redeem(&c, "runner-a").await.is_none(), "expired");
    }

    #[tokio::test(start_paused = true)]
    async fn unused_tokens_are_bounded_and_expired_ones_make_room() {
        let tokens = RelayTokens::new(Duration::from_secs(10), 2);
        tokens.mint("a", grant(None)).await.unwrap();
        tokens.mint("a", grant(None)).await.unwrap();
        assert_eq!(
            tokens.mint("a", grant(None)).await.unwrap_err(),
            MintRefused::Full
        );
        tokio::time::advance(Duration::from_secs(11)).await;
        tokens.mint("a", grant(None)).await.unwrap();
    }
}
