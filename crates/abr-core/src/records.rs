//! The record mechanics the in-memory task and post stores share: records keyed by tenant
//! and id, an idempotency key per tenant naming one record, and compare-and-swap updates
//! on a record's version.

use std::collections::HashMap;

use crate::task::{IdempotencyKey, Inserted};

/// A stored record: found by its tenant and id, replaced by version.
pub(crate) trait Record: Clone {
    /// Its tenant.
    fn tenant(&self) -> &str;
    /// Its id.
    fn id(&self) -> &str;
    /// Its version, for the compare-and-swap.
    fn version(&self) -> u64;
    /// Its version, to store the next one.
    fn version_mut(&mut self) -> &mut u64;
}

/// A record's (or an idempotency key's) tenant and id.
pub(crate) type TenantKey = (String, String);

/// The key of `id` of `tenant`.
pub(crate) fn tenant_key(tenant: &str, id: &str) -> TenantKey {
    (tenant.to_owned(), id.to_owned())
}

/// Records by tenant and id, and their idempotency keys (a namespace of their own).
#[derive(Debug)]
pub(crate) struct InMemoryRecords<T> {
    records: HashMap<TenantKey, T>,
    /// (tenant, key) → (record id, body hash).
    idempotency: HashMap<TenantKey, (String, String)>,
}

impl<T> Default for InMemoryRecords<T> {
    fn default() -> Self {
        Self {
            records: HashMap::new(),
            idempotency: HashMap::new(),
        }
    }
}

impl<T: Record> InMemoryRecords<T> {
    /// Stores `record`, claiming `idempotency` for its tenant when given; when the key is
    /// taken, nothing is stored and the existing record is named.
    pub(crate) fn insert(&mut self, record: &T, idempotency: Option<&IdempotencyKey>) -> Inserted {
        if let Some(idem) = idempotency {
            let k = tenant_key(record.tenant(), &idem.key);
            if let Some((task_id, body_hash)) = self.idempotency.get(&k) {
                return Inserted::Existing {
                    task_id: task_id.clone(),
                    body_hash: body_hash.clone(),
                };
            }
            self.idempotency
                .insert(k, (record.id().to_owned(), idem.body_hash.clone()));
        }
        self.records
            .insert(tenant_key(record.tenant(), record.id()), record.clone());
        Inserted::New
    }

    /// The record an idempotency key of `tenant` names, and the hash of its first body.
    pub(crate) fn find_idempotency(
        &self,
        tenant: &str,
        idempotency_key: &str,
    ) -> Option<(String, String)> {
        self.idempotency
            .get(&tenant_key(tenant, idempotency_key))
            .cloned()
    }

    /// The record `id` of `tenant`, if any.
    pub(crate) fn get(&self, tenant: &str, id: &str) -> Option<T> {
        self.records.get(&tenant_key(tenant, id)).cloned()
    }

    /// Replaces the record if the stored version is `record`'s, storing `version + 1`;
    /// whether it did.
    pub(crate) fn update(&mut self, record: &T) -> bool {
        match self
            .records
            .get_mut(&tenant_key(record.tenant(), record.id()))
        {
            Some(stored) if stored.version() == record.version() => {
                *stored = record.clone();
                *stored.version_mut() += 1;
                true
            }
            _ => false,
        }
    }

    /// Changes the record `id` of `tenant` in place, keeping its version (nothing when there
    /// is none).
    pub(crate) fn modify(&mut self, tenant: &str, id: &str, change: impl FnOnce(&mut T)) {
        if let Some(stored) = self.records.get_mut(&tenant_key(tenant, id)) {
            change(stored);
        }
    }

    /// Every record, of any tenant, that `unfinished` keeps.
    pub(crate) fn unfinished(&self, unfinished: impl Fn(&T) -> bool) -> Vec<T> {
        self.records
            .values()
            .filter(|r| unfinished(r))
            .cloned()
            .collect()
    }

    /// Every record of every tenant.
    pub(crate) fn all(&self) -> Vec<T> {
        self.records.values().cloned().collect()
    }
}
