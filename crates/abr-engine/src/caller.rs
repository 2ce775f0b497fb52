//! [`Caller`]: who acts, once the door checked their right. The engine's parts take a
//! `Caller`, never an [`Actor`]: they cannot check a right (a `Caller` has no `require`),
//! so every right is checked where the actor enters, by [`Caller::checked`], and only
//! there.

use abr_core::error::CoreError;
use abr_core::principal::{Actor, Right};
use abr_protocol::PrincipalRef;

/// A caller the door let through for one right: its tenant and who it is (for records,
/// audit, and the one rule that compares keys: nobody approves what their key proposed).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    tenant: String,
    who: PrincipalRef,
    read_only: bool,
}

impl Caller {
    /// `actor`, for `right`: the door's check, the one way to make a caller.
    ///
    /// # Errors
    /// [`CoreError::Forbidden`] when the actor's role (or a read-only key) does not allow
    /// `right`.
    pub(crate) fn checked(actor: &Actor, right: Right) -> Result<Self, CoreError> {
        actor.require(right)?;
        Ok(Self {
            tenant: actor.tenant().to_owned(),
            who: actor.principal().reference(),
            read_only: actor.principal().read_only(),
        })
    }

    /// The tenant it acts for.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Its key, name and role, as records name them.
    pub(crate) fn who(&self) -> &PrincipalRef {
        &self.who
    }

    /// Whether its key is read-only (a browse session it opens is).
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }
}
