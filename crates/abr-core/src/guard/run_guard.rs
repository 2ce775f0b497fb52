//! [`RunGuard`]: read-only and dry runs, through the one commit rule.

use abr_protocol::{BlockedAction, BlockedBy, CommitClass};

use crate::guard::commit::{CommitRules, Committing, commit_class, types_into_write_form};
use crate::guard::element::ElementFacts;
use crate::step_runner::BrowserAction;

/// Where a run's read-only property came from. Only definitions can set it: never a
/// request, a trigger or a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadOnlySource {
    /// The platform's definition (`readOnly = true` in its file or strategy policy).
    Platform,
    /// The approved plan (`readOnly: true`, covered by the plan hash the approver saw).
    Plan,
}

/// What a run may commit: nothing when read-only or dry, everything otherwise; and the
/// rules it judges by (strict when it may commit nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunGuard {
    read_only: Option<ReadOnlySource>,
    dry_run: bool,
    rules: CommitRules,
}

impl RunGuard {
    /// A guard that allows everything.
    pub const OPEN: Self = Self {
        read_only: None,
        dry_run: false,
        rules: CommitRules::LENIENT,
    };

    /// A guard for a run with these properties.
    pub fn new(read_only: Option<ReadOnlySource>, dry_run: bool) -> Self {
        let rules = if read_only.is_some() || dry_run {
            CommitRules::STRICT
        } else {
            CommitRules::LENIENT
        };
        Self {
            read_only,
            dry_run,
            rules,
        }
    }

    /// The guard with the platform's additions to the commit rule.
    #[must_use]
    pub fn with_platform(mut self, spec: Option<&abr_protocol::GuardPolicySpec>) -> Self {
        self.rules = self.rules.with_platform(spec);
        self
    }

    /// What refuses this run's commits, if anything (read-only wins over dry run).
    pub fn refuses(&self) -> Option<BlockedBy> {
        if self.read_only.is_some() {
            Some(BlockedBy::ReadOnly)
        } else if self.dry_run {
            Some(BlockedBy::DryRun)
        } else {
            None
        }
    }

    /// The rules it judges by.
    pub fn rules(&self) -> &CommitRules {
        &self.rules
    }

    /// Checks `action` before it reaches the page. `Ok(Some(_))` is an allowed committing
    /// action, `Ok(None)` a non-committing one; `Err` is the refusal (read-only wins over dry
    /// run).
    ///
    /// # Errors
    /// The [`BlockedAction`] when the action commits and the run may not.
    pub fn check(
        &self,
        action: &BrowserAction,
        facts: Option<&ElementFacts>,
    ) -> Result<Option<Committing>, BlockedAction> {
        let committing = match commit_class(action, facts, &self.rules) {
            Some(committing) => committing,
            None if self.read_only.is_some() && types_into_write_form(action, facts) => {
                Committing::of(CommitClass::WriteFormField)
            }
            None => return Ok(None),
        };
        let Some(blocked_by) = self.refuses() else {
            return Ok(Some(committing));
        };
        Err(BlockedAction {
            step: None,
            blocked_by,
            class: committing.class,
            verb: committing.verb.map(str::to_owned),
            method: None,
            host: None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;
    use abr_protocol::{SecretValue, Selector};

    fn typing() -> BrowserAction {
        BrowserAction::Type {
            selector: Selector::Css("#f".into()),
            value: SecretValue::new("draft"),
            submit: false,
        }
    }

    fn field(method: Option<&str>, in_form: bool, search: bool, editable: bool) -> ElementFacts {
        ElementFacts {
            tag: if editable { "div" } else { "input" }.into(),
            input_type: (!editable).then(|| "text".into()),
            in_form,
            form_has_submit: in_form,
            form_method: method.map(str::to_owned),
            search,
            editable,
            ..ElementFacts::default()
        }
    }

    #[test]
    fn read_only_refuses_typing_into_a_form_that_posts_or_an_editor_and_nothing_else() {
        let read_only = RunGuard::new(Some(ReadOnlySource::Platform), false);
        for (what, facts) in [
            ("a form that posts", field(Some("post"), true, false, false)),
            (
                "a form whose method is unknown",
                field(None, true, false, false),
            ),
            ("an editable region", field(None, false, false, true)),
        ] {
            let refused = read_only.check(&typing(), Some(&facts)).unwrap_err();
            assert_eq!(
                (refused.blocked_by, refused.class),
                (BlockedBy::ReadOnly, CommitClass::WriteFormField),
                "{what}"
            );
        }
        for (what, facts) in [
            ("a GET form", field(Some("get"), true, false, false)),
            (
                "a search field in a form that posts",
                field(Some("post"), true, true, false),
            ),
            ("a field outside any form", field(None, false, false, false)),
        ] {
            assert_eq!(
                read_only.check(&typing(), Some(&facts)).unwrap(),
                None,
                "{what}"
            );
        }
        // A dry run rehearses the typing; a read-write run types.
        let post_form = field(Some("post"), true, false, false);
        for guard in [RunGuard::new(None, true), RunGuard::new(None, false)] {
            assert_eq!(guard.check(&typing(), Some(&post_form)).unwrap(), None);
        }
    }
}
