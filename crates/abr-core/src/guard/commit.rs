//! [`commit_class`]: the one function that decides whether a browser action commits.

use abr_protocol::CommitClass;

use super::{ElementFacts, committing_verb};
use crate::task::BrowserAction;

/// Why an action commits: its class, and the verb when a label matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Committing {
    /// The rule that matched.
    pub class: CommitClass,
    /// The committing verb, for [`CommitClass::CommittingLabel`].
    pub verb: Option<&'static str>,
}

impl Committing {
    fn of(class: CommitClass) -> Self {
        Self { class, verb: None }
    }
}

/// Whether `action` on the element described by `facts` may commit (submit, pay, send,
/// delete, upload or sign up), and why. The only place this is decided: the read-only and
/// dry-run guard refuses what it returns, and a run's outcome counts from the first action
/// it returns (`failed` before, `uncertain` after).
///
/// # Rules
/// - Navigating, waiting, reading, screenshots and DOM checks never commit.
/// - Setting files on an input commits ([`CommitClass::Upload`]).
/// - A click commits on a file input, a card field, a submit control, any other button
///   inside a form, or an element whose accessible name or value has a committing verb
///   ([`committing_verb`]).
/// - Typing commits only into a card field or a file input, or when it presses Enter in a
///   form that has a submit control. Typing into a search box does not.
/// - Choosing an option commits only in a card field (an expiry month).
/// - Without facts (the element could not be inspected) every click, Enter, select and
///   upload commits ([`CommitClass::Unknown`]).
pub fn commit_class(action: &BrowserAction, facts: Option<&ElementFacts>) -> Option<Committing> {
    match action {
        BrowserAction::Navigate { .. }
        | BrowserAction::Wait { .. }
        | BrowserAction::Extract { .. }
        | BrowserAction::Screenshot
        | BrowserAction::Assert { .. } => None,
        BrowserAction::Upload { .. } => Some(Committing::of(CommitClass::Upload)),
        BrowserAction::Click { .. } => {
            let Some(facts) = facts else {
                return Some(Committing::of(CommitClass::Unknown));
            };
            click(facts)
        }
        BrowserAction::Type { submit, .. } => match facts {
            None if *submit => Some(Committing::of(CommitClass::Unknown)),
            None => None,
            Some(facts) => field(facts).or_else(|| {
                (*submit && facts.in_form && facts.form_has_submit)
                    .then(|| Committing::of(CommitClass::EnterSubmitsForm))
            }),
        },
        BrowserAction::Select { .. } => match facts {
            None => Some(Committing::of(CommitClass::Unknown)),
            Some(facts) => field(facts),
        },
    }
}

/// Whether the action commits, without its reason.
pub fn is_committing(action: &BrowserAction, facts: Option<&ElementFacts>) -> bool {
    commit_class(action, facts).is_some()
}

fn field(facts: &ElementFacts) -> Option<Committing> {
    if facts.is_file_input() {
        Some(Committing::of(CommitClass::FileInput))
    } else if facts.is_card_field() {
        Some(Committing::of(CommitClass::CardField))
    } else {
        None
    }
}

fn click(facts: &ElementFacts) -> Option<Committing> {
    if let Some(c) = field(facts) {
        return Some(c);
    }
    if facts.is_submit_control() {
        return Some(Committing::of(CommitClass::SubmitControl));
    }
    if let Some(verb) = committing_verb(&facts.name) {
        return Some(Committing {
            class: CommitClass::CommittingLabel,
            verb: Some(verb),
        });
    }
    if facts.in_form && facts.is_button() {
        return Some(Committing::of(CommitClass::ButtonInForm));
    }
    None
}
