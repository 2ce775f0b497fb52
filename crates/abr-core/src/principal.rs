//! Principals: who calls (a key's holder, the bootstrap operator token, an embedder), the
//! [`Role`] that says what it may do, and the tenants it may act for.
//!
//! An [`Actor`] is a principal acting for one tenant. It is built only by
//! [`Principal::act_for`], which refuses a tenant the principal is not bound to, and
//! [`Actor::require`] is the one check of a [`Right`]: the engine asks it at every entry
//! point, whoever called (HTTP, MCP, the relay, an embedder).

use std::sync::Arc;

use abr_protocol::{PrincipalRef, Role};
use time::OffsetDateTime;

use crate::error::CoreError;

/// The tenant when a request names none.
pub const DEFAULT_TENANT: &str = "default";

/// The key id of the bootstrap operator credential (`ABR_API_TOKEN`).
pub const BOOTSTRAP_KEY_ID: &str = "bootstrap";

/// Whether `id` is a valid runner id (at a hub): 1 to 64 of `A-Z a-z 0-9 . _ -`, not
/// starting with a dot.
pub fn valid_runner_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What an actor may be asked to be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Right {
    /// Read its tenant's records: tasks, posts, screenshots, frames, stored sessions' ids.
    Read,
    /// Propose a task (create it).
    Propose,
    /// Post, or retry a post or a task (acts on a site).
    Post,
    /// Open and drive a browse session (read-only for a read-only key).
    Browse,
    /// Store, capture or delete sessions.
    Sessions,
    /// Read the cookies of a stored session bound to a platform that is read-only or
    /// forbids unattended runs out of the runner: they would run without the platform's
    /// policy anywhere else (operators only).
    ExportBoundSession,
    /// Re-check an uncertain outcome (a look that changes nothing on the site).
    Recheck,
    /// Approve or reject tasks and committing actions.
    Approve,
    /// Take over, resume or end a run paused for a person.
    ResolvePause,
    /// Assert that an uncertain action did not happen (it allows one new attempt).
    Assert,
    /// Change the tenant's settings: decide sites (allow or deny), switch screenshots.
    TenantSettings,
    /// Keys, the hub, settings, every tenant.
    Operate,
    /// Mint relay tokens for its own runner id (a runner's credential at its hub).
    Relay,
    /// Enroll a runner for the tenant (an enrollment code for one runner id).
    EnrollRunner,
}

impl Right {
    /// Whether using it commits (or proposes to commit) something on a site: refused to
    /// read-only keys.
    pub fn commits(self) -> bool {
        matches!(self, Self::Propose | Self::Post)
    }

    /// What it allows, in words ("post or retry").
    pub fn describe(self) -> &'static str {
        match self {
            Self::Read => "read records",
            Self::Propose => "propose tasks",
            Self::Post => "post or retry",
            Self::Browse => "browse",
            Self::Sessions => "store or capture sessions",
            Self::ExportBoundSession => {
                "read out a session bound to a read-only or attended-only platform"
            }
            Self::Recheck => "re-check outcomes",
            Self::Approve => "approve or reject",
            Self::ResolvePause => "resolve a person's pause",
            Self::Assert => "assert that an action did not happen",
            Self::TenantSettings => "change the tenant's settings (sites, screenshots)",
            Self::Operate => "operate the runner",
            Self::Relay => "connect as a runner",
            Self::EnrollRunner => "enroll a runner",
        }
    }
}

/// Whether `role` has `right` (read-only aside: see [`Right::commits`]).
pub fn role_allows(role: Role, right: Right) -> bool {
    match role {
        Role::Operator => true,
        Role::Agent => matches!(
            right,
            Right::Read
                | Right::Propose
                | Right::Post
                | Right::Browse
                | Right::Sessions
                | Right::Recheck
        ),
        Role::Approver => matches!(
            right,
            Right::Read
                | Right::Recheck
                | Right::Approve
                | Right::ResolvePause
                | Right::Assert
                | Right::TenantSettings
                | Right::EnrollRunner
        ),
        Role::Runner => matches!(right, Right::Relay),
        Role::Enrollment => false,
    }
}

/// The tenants a principal acts for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tenants {
    /// Exactly one.
    One(String),
    /// Every tenant (operators): the request names which.
    All,
}

/// Who calls: a key's id, its holder's name, its role, its tenants, whether it is
/// read-only. Checked when built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    key_id: String,
    name: String,
    role: Role,
    tenants: Tenants,
    read_only: bool,
}

impl Principal {
    /// A principal. `agent` and `approver` principals are bound to one tenant.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] for an empty or over-long name or tenant, or an agent or
    /// approver for every tenant.
    pub fn new(
        key_id: impl Into<String>,
        name: &str,
        role: Role,
        tenants: Tenants,
        read_only: bool,
    ) -> Result<Self, CoreError> {
        let name = crate::tenant::person("name", name)?;
        match &tenants {
            Tenants::One(t) => crate::tenant::check("tenantId", Some(t))?,
            Tenants::All if role != Role::Operator => {
                return Err(CoreError::InvalidInput(format!(
                    "an {role} key is bound to one tenant: give tenantId"
                )));
            }
            Tenants::All => {}
        }
        Ok(Self {
            key_id: key_id.into(),
            name,
            role,
            tenants,
            read_only,
        })
    }

    /// The runner id a runner's credential (or an enrollment code) is for: its name.
    pub fn runner_id(&self) -> Option<&str> {
        matches!(self.role, Role::Runner | Role::Enrollment).then_some(self.name.as_str())
    }

    /// The one tenant it is bound to (`None`: every tenant).
    pub fn tenant(&self) -> Option<&str> {
        match &self.tenants {
            Tenants::One(t) => Some(t),
            Tenants::All => None,
        }
    }

    /// An operator for every tenant (the bootstrap token, an embedder's own calls).
    pub fn operator(key_id: &str, name: &str) -> Self {
        Self {
            key_id: key_id.to_owned(),
            name: name.to_owned(),
            role: Role::Operator,
            tenants: Tenants::All,
            read_only: false,
        }
    }

    /// The key's id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The holder's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The tenants.
    pub fn tenants(&self) -> &Tenants {
        &self.tenants
    }

    /// Whether it never commits.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Refuses `right` unless the role has it, and a committing right to a read-only key.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] naming the right.
    pub fn require(&self, right: Right) -> Result<(), CoreError> {
        if !role_allows(self.role, right) {
            return Err(CoreError::Forbidden(format!(
                "an {} key may not {}",
                self.role,
                right.describe()
            )));
        }
        if self.read_only && right.commits() {
            return Err(CoreError::Forbidden(format!(
                "a read-only key may not {}",
                right.describe()
            )));
        }
        Ok(())
    }

    /// How records and audit name it.
    pub fn reference(&self) -> PrincipalRef {
        PrincipalRef {
            key_id: self.key_id.clone(),
            name: self.name.clone(),
            role: self.role,
        }
    }

    /// This principal acting for `requested` (a request's `x-tenant-id` or body tenant):
    /// a principal bound to one tenant acts for it and refuses another; one for every
    /// tenant acts for the one named, else [`DEFAULT_TENANT`].
    ///
    /// # Errors
    /// [`CoreError::TenantForbidden`] for a tenant this principal is not bound to; a bad
    /// tenant id.
    pub fn act_for(self: &Arc<Self>, requested: Option<&str>) -> Result<Actor, CoreError> {
        crate::tenant::check("tenantId", requested)?;
        let tenant = match (&self.tenants, requested) {
            (Tenants::One(own), Some(asked)) if own != asked => {
                return Err(CoreError::TenantForbidden);
            }
            (Tenants::One(own), _) => own.clone(),
            (Tenants::All, Some(asked)) => asked.to_owned(),
            (Tenants::All, None) => DEFAULT_TENANT.to_owned(),
        };
        Ok(Actor {
            principal: Arc::clone(self),
            tenant,
        })
    }
}

/// A principal acting for one tenant (built by [`Principal::act_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    principal: Arc<Principal>,
    tenant: String,
}

impl Actor {
    /// An operator acting for `tenant` (an embedder's own calls, tests).
    ///
    /// # Errors
    /// A bad tenant id.
    pub fn operator(tenant: &str) -> Result<Self, CoreError> {
        Arc::new(Principal::operator("embedder", "embedder")).act_for(Some(tenant))
    }

    /// The tenant it acts for.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Who acts.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Refuses `right` unless the role has it, and a committing right to a read-only key
    /// ([`Principal::require`]).
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] naming the right.
    pub fn require(&self, right: Right) -> Result<(), CoreError> {
        self.principal.require(right)
    }
}

/// Whether a key that expires at `expires_at` is still accepted at `now`.
pub fn unexpired(expires_at: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    expires_at.is_none_or(|at| now < at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(role: Role, tenants: Tenants, read_only: bool) -> Arc<Principal> {
        Arc::new(Principal::new("key_1", "someone", role, tenants, read_only).unwrap())
    }

    #[test]
    fn a_key_bound_to_a_tenant_acts_for_it_only() {
        let agent = key(Role::Agent, Tenants::One("a".into()), false);
        assert_eq!(agent.act_for(None).unwrap().tenant(), "a");
        assert_eq!(agent.act_for(Some("a")).unwrap().tenant(), "a");
        assert!(matches!(
            agent.act_for(Some("b")),
            Err(CoreError::TenantForbidden)
        ));
        let operator = key(Role::Operator, Tenants::All, false);
        assert_eq!(operator.act_for(Some("b")).unwrap().tenant(), "b");
        assert_eq!(operator.act_for(None).unwrap().tenant(), DEFAULT_TENANT);
        assert!(operator.act_for(Some("")).is_err());
    }

    #[test]
    fn agents_and_approvers_are_bound_to_one_tenant() {
        for role in [Role::Agent, Role::Approver] {
            assert!(Principal::new("k", "n", role, Tenants::All, false).is_err());
        }
        assert!(Principal::new("k", " ", Role::Operator, Tenants::All, false).is_err());
    }

    #[test]
    fn roles_have_their_rights_and_read_only_keys_never_commit() {
        let agent = key(Role::Agent, Tenants::One("a".into()), false)
            .act_for(None)
            .unwrap();
        let approver = key(Role::Approver, Tenants::One("a".into()), false)
            .act_for(None)
            .unwrap();
        let reader = key(Role::Agent, Tenants::One("a".into()), true)
            .act_for(None)
            .unwrap();
        for right in [Right::Propose, Right::Post, Right::Browse, Right::Read] {
            assert!(agent.require(right).is_ok(), "{right:?}");
        }
        for right in [
            Right::Approve,
            Right::ResolvePause,
            Right::Assert,
            Right::Operate,
        ] {
            let e = agent.require(right).unwrap_err();
            assert_eq!(e.code(), "forbidden", "{right:?}");
        }
        for right in [Right::Approve, Right::ResolvePause, Right::Read] {
            assert!(approver.require(right).is_ok(), "{right:?}");
        }
        for right in [Right::Propose, Right::Post, Right::Browse, Right::Operate] {
            assert!(approver.require(right).is_err(), "{right:?}");
        }
        assert!(reader.require(Right::Post).is_err());
        assert!(reader.require(Right::Propose).is_err());
        assert!(reader.require(Right::Browse).is_ok());
        assert!(reader.require(Right::Read).is_ok());
    }

    #[test]
    fn expiry_is_exclusive() {
        let now = OffsetDateTime::now_utc();
        assert!(unexpired(None, now));
        assert!(unexpired(Some(now + time::Duration::seconds(1)), now));
        assert!(!unexpired(Some(now), now));
    }
}
