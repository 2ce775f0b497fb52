//! Where this replica's browser-bound things are, in a fleet: a browse session, a capture, a
//! relay runner's socket live in one replica's memory, so that replica writes them down under
//! its boot in the shared database ([`Places`]), and another replica that gets a call for one
//! forwards it there (`forward`), or answers that it is lost once its owner is gone.
//! Without a fleet there is nothing to write: everything is here.

use std::sync::Arc;

use abr_store::{PgStore, Placed, PlacementKind};

/// The key a capture is placed under: the digest of its id (the id is the capture's
/// management credential, never written to the database).
pub(crate) fn capture_key(capture_id: &str) -> String {
    abr_core::digest::token_digest(capture_id)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// This replica's placements in the fleet's database.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    store: Arc<PgStore>,
    node_id: String,
    /// Calls forwarded to other replicas (no proxy, no redirect followed).
    client: reqwest::Client,
}

impl Places {
    /// The placements of node `node_id` (this process's boot) in `store`.
    ///
    /// # Errors
    /// The HTTP client for forwarded calls cannot be built.
    pub(crate) fn new(store: Arc<PgStore>, node_id: String) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            store,
            node_id,
            client,
        })
    }

    /// The client calls to other replicas go through.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Writes down that `key` of `kind`, `tenant`'s, is here. A failure is logged: the thing still works
    /// on this replica, only calls through another one cannot find it.
    pub(crate) async fn place(&self, kind: PlacementKind, key: &str, tenant: Option<&str>) {
        if let Err(e) = self.store.place(kind, key, tenant, &self.node_id).await {
            tracing::warn!(error = %e, ?kind, "a placement was not written: other replicas cannot forward to it");
        }
    }

    /// Forgets that `key` of `kind` is here (it was closed or ended).
    pub(crate) async fn unplace(&self, kind: PlacementKind, key: &str) {
        if let Err(e) = self.store.unplace(kind, key).await {
            tracing::warn!(error = %e, ?kind, "a placement was not removed");
        }
    }

    /// Who holds `key` of `kind`.
    pub(crate) async fn placed(
        &self,
        kind: PlacementKind,
        key: &str,
    ) -> Result<Option<Placed>, abr_store::StoreError> {
        self.store.placed(kind, key).await
    }

    /// Who runs the unfinished task `id`.
    pub(crate) async fn running(&self, id: &str) -> Result<Option<Placed>, abr_store::StoreError> {
        self.store.running(id).await
    }

    /// The fleet's database.
    pub(crate) fn store(&self) -> Arc<PgStore> {
        Arc::clone(&self.store)
    }

    /// This node's id.
    pub(crate) fn node_id(&self) -> &str {
        &self.node_id
    }
}
