//! The approvals of one browse session under the approval rule ([`ActionApprovals`]): the
//! committing action waiting for an approver, and the one an approver approved and the brain
//! has not sent again yet.
//!
//! An approval covers one action, named by a digest of what it does ([`Fingerprint`]: its
//! kind, element, the element's role and name, the page, and the value it types or chooses):
//! an approval of "click Post on /compose" never lets "click Delete" or another text through.
//! A new committing action replaces the pending one (its approval id changes, so an approver
//! who read the old one is told `action_not_pending`, never approves what they did not read).

use abr_core::clock::new_token;
use abr_core::digest::token_digest;
use abr_core::error::CoreError;
use abr_protocol::{ActionApproval, ActionApprovalState, ApprovalPreview, PrincipalRef};
use time::OffsetDateTime;

use crate::error::EngineError;

/// What an approval covers: a digest of one action (kind, element, role and name, page,
/// value). Kept in memory only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint([u8; 32]);

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fingerprint(..)")
    }
}

impl Fingerprint {
    /// The digest of `parts`, each kept apart from the next.
    pub(crate) fn of(parts: &[&str]) -> Self {
        let mut joined = String::new();
        for part in parts {
            joined.push_str(&part.len().to_string());
            joined.push(':');
            joined.push_str(part);
        }
        Self(token_digest(&joined))
    }
}

/// The action an approver is asked about, before it has an id.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub(crate) browse_id: String,
    pub(crate) action: String,
    pub(crate) role: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) page: String,
    pub(crate) at: OffsetDateTime,
}

#[derive(Debug)]
struct Asked {
    fingerprint: Fingerprint,
    approval: ActionApproval,
    /// The preview's JPEG, while the approval waits.
    image: Option<Vec<u8>>,
}

/// What an approver is shown besides the words: a preview, or why there is none.
#[derive(Debug)]
pub(crate) enum Shown {
    /// A redacted frame (its JPEG) and where the element is in it.
    Preview(Vec<u8>, ApprovalPreview),
    /// Why none was taken.
    Note(String),
}

/// The session's pending and approved action (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ActionApprovals {
    pending: Option<Asked>,
    granted: Option<Asked>,
}

impl ActionApprovals {
    /// The approval of the action `fingerprint` names, if an approver approved exactly that
    /// one: used up by this call.
    pub(crate) fn take_grant(&mut self, fingerprint: &Fingerprint) -> Option<ActionApproval> {
        if self
            .granted
            .as_ref()
            .is_some_and(|g| &g.fingerprint == fingerprint)
        {
            return self.granted.take().map(|g| g.approval);
        }
        None
    }

    /// Asks for an approval of the action `fingerprint` names: the pending one again when it
    /// is the same action, else a new one in its place.
    ///
    /// # Errors
    /// [`CoreError::Internal`] when the OS random source fails.
    pub(crate) fn ask(
        &mut self,
        fingerprint: Fingerprint,
        ask: Ask,
    ) -> Result<ActionApproval, EngineError> {
        if let Some(pending) = &self.pending
            && pending.fingerprint == fingerprint
        {
            return Ok(pending.approval.clone());
        }
        let token = new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?;
        let id: String = token
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(16)
            .collect();
        let approval = ActionApproval {
            approval_id: format!("appr_{id}"),
            message: format!(
                "Waiting for a person: this action commits, and the session's approval rule \
                 wants an approver to approve it first. Nothing of it was sent. An approver \
                 approves it with POST /v1/browse/{browse}/approve {{\"approvalId\": ...}} (or \
                 mints a one-time link for a person: POST /v1/browse/{browse}/approval-link); \
                 then send the same action again. A rejection closes the session.",
                browse = ask.browse_id
            ),
            browse_id: ask.browse_id,
            action: ask.action,
            role: ask.role,
            name: ask.name,
            page: ask.page,
            state: ActionApprovalState::Pending,
            requested_at: ask.at,
            decided_by: None,
            preview: None,
            preview_note: None,
        };
        self.pending = Some(Asked {
            fingerprint,
            approval: approval.clone(),
            image: None,
        });
        Ok(approval)
    }

    /// Shows the pending approval `approval_id` with `shown`; answers it.
    pub(crate) fn show(&mut self, approval_id: &str, shown: Shown) -> Option<ActionApproval> {
        let pending = self
            .pending
            .as_mut()
            .filter(|p| p.approval.approval_id == approval_id)?;
        match shown {
            Shown::Preview(jpeg, preview) => {
                pending.image = Some(jpeg);
                pending.approval.preview = Some(preview);
            }
            Shown::Note(note) => pending.approval.preview_note = Some(note),
        }
        Some(pending.approval.clone())
    }

    /// The action waiting for an approver, if any.
    pub(crate) fn pending(&self) -> Option<&ActionApproval> {
        self.pending.as_ref().map(|p| &p.approval)
    }

    /// The preview's JPEG of the action waiting for an approver, if one was kept.
    pub(crate) fn pending_image(&self) -> Option<&[u8]> {
        self.pending.as_ref().and_then(|p| p.image.as_deref())
    }

    /// Decides the pending approval `approval_id` as `by`: approved, it waits for the brain
    /// to send the action again; rejected, it is gone.
    ///
    /// # Errors
    /// [`EngineError::ActionNotPending`] unless `approval_id` is the pending one.
    pub(crate) fn decide(
        &mut self,
        approval_id: &str,
        approve: bool,
        by: PrincipalRef,
    ) -> Result<ActionApproval, EngineError> {
        let Some(mut asked) = self
            .pending
            .take_if(|p| p.approval.approval_id == approval_id)
        else {
            return Err(EngineError::ActionNotPending);
        };
        asked.approval.decided_by = Some(by);
        // The image was for deciding: decided, it goes.
        asked.image = None;
        if approve {
            asked.approval.state = ActionApprovalState::Approved;
            asked.approval.message =
                "Approved: send the same action again and it runs (once).".to_owned();
            let approval = asked.approval.clone();
            self.granted = Some(asked);
            Ok(approval)
        } else {
            asked.approval.state = ActionApprovalState::Rejected;
            asked.approval.message =
                "Rejected: the session closed with nothing of this action committed.".to_owned();
            Ok(asked.approval)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use abr_protocol::Role;

    fn ask() -> Ask {
        Ask {
            browse_id: "browse_1".into(),
            action: "click e2 (button \"Post\")".into(),
            role: Some("button".into()),
            name: Some("Post".into()),
            page: "https://x.example/compose".into(),
            at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn approver() -> PrincipalRef {
        PrincipalRef {
            key_id: "k2".into(),
            name: "Ana".into(),
            role: Role::Approver,
        }
    }

    #[test]
    fn an_approval_covers_the_action_it_names_once() {
        let post = Fingerprint::of(&["click", "e2", "button", "Post", "/compose", ""]);
        let delete = Fingerprint::of(&["click", "e3", "button", "Delete", "/compose", ""]);
        let mut approvals = ActionApprovals::default();
        let asked = approvals.ask(post.clone(), ask()).unwrap();
        assert_eq!(asked.state, ActionApprovalState::Pending);
        // Asked again for the same action: the same approval.
        let again = approvals.ask(post.clone(), ask()).unwrap();
        assert_eq!(again.approval_id, asked.approval_id);
        assert!(
            approvals.take_grant(&post).is_none(),
            "nothing approved yet"
        );

        let wrong = approvals
            .decide("appr_other", true, approver())
            .unwrap_err();
        assert!(matches!(wrong, EngineError::ActionNotPending));
        let approved = approvals
            .decide(&asked.approval_id, true, approver())
            .unwrap();
        assert_eq!(approved.state, ActionApprovalState::Approved);
        assert!(approvals.pending().is_none());
        assert!(approvals.take_grant(&delete).is_none(), "another action");
        assert!(approvals.take_grant(&post).is_some());
        assert!(approvals.take_grant(&post).is_none(), "used up");
        // Decided is decided.
        let twice = approvals
            .decide(&asked.approval_id, true, approver())
            .unwrap_err();
        assert!(matches!(twice, EngineError::ActionNotPending));
    }

    #[test]
    fn a_new_action_replaces_the_pending_one_and_fields_never_run_together() {
        let mut approvals = ActionApprovals::default();
        let first = approvals
            .ask(Fingerprint::of(&["type", "e1", "hello"]), ask())
            .unwrap();
        let second = approvals
            .ask(Fingerprint::of(&["type", "e1", "goodbye"]), ask())
            .unwrap();
        assert_ne!(first.approval_id, second.approval_id);
        let stale = approvals
            .decide(&first.approval_id, true, approver())
            .unwrap_err();
        assert!(matches!(stale, EngineError::ActionNotPending));
        assert_ne!(Fingerprint::of(&["ab", "c"]), Fingerprint::of(&["a", "bc"]));
        let rejected = approvals
            .decide(&second.approval_id, false, approver())
            .unwrap();
        assert_eq!(rejected.state, ActionApprovalState::Rejected);
        assert_eq!(rejected.decided_by.unwrap().name, "Ana");
    }
}
