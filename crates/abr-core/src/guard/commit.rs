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
/// - Navigating, going back, scrolling, waiting, reading, screenshots and DOM checks never
///   commit.
/// - Setting files on an input commits ([`CommitClass::Upload`]).
/// - A click commits on a file input, a card field, a submit control, any other button
///   inside a form, or an element whose accessible name or value has a committing verb
///   ([`committing_verb`]).
/// - Typing commits only into a card field or a file input, or when it presses Enter in a
///   form that has a submit control. Typing into a search box does not.
/// - Choosing an option commits only in a card field (an expiry month).
/// - Pressing a key: Enter or Space on a button or link commits as a click on it would;
///   Enter in a field commits as typing with Enter would; any key on a card field or a file
///   input commits; other keys do not. Without facts (a key pressed on the page, whose
///   focused element is not known) Enter and Space commit ([`CommitClass::Unknown`]).
/// - Without facts (the element could not be inspected) every click, Enter, select and
///   upload commits ([`CommitClass::Unknown`]).
pub fn commit_class(action: &BrowserAction, facts: Option<&ElementFacts>) -> Option<Committing> {
    match action {
        BrowserAction::Navigate { .. }
        | BrowserAction::Wait { .. }
        | BrowserAction::Extract { .. }
        | BrowserAction::Screenshot
        | BrowserAction::Assert { .. }
        | BrowserAction::Scroll { .. }
        | BrowserAction::Back => None,
        BrowserAction::Press { key, .. } => press(key, facts),
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

fn is_enter(key: &str) -> bool {
    let key = key.trim();
    key.eq_ignore_ascii_case("enter")
        || key.eq_ignore_ascii_case("numpadenter")
        || key.eq_ignore_ascii_case("return")
        || key == "\n"
        || key == "\r"
}

fn press(key: &str, facts: Option<&ElementFacts>) -> Option<Committing> {
    // Modifier combinations (`Control+Enter` submits many forms) count by their last key.
    let last = key.rsplit('+').next().unwrap_or(key);
    let enter = is_enter(last);
    let space = last == " " || last.trim().eq_ignore_ascii_case("space");
    let Some(facts) = facts else {
        return (enter || space).then(|| Committing::of(CommitClass::Unknown));
    };
    if let Some(c) = field(facts) {
        return Some(c);
    }
    let activates = facts.is_button()
        || facts.is_submit_control()
        || facts.tag.eq_ignore_ascii_case("a")
        || facts.role.as_deref() == Some("link");
    if activates && (enter || space) {
        // Enter or Space on a control is a click on it.
        click(facts)
    } else if enter {
        (facts.in_form && facts.form_has_submit)
            .then(|| Committing::of(CommitClass::EnterSubmitsForm))
    } else {
        None
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn press_on(key: &str, facts: Option<&ElementFacts>) -> Option<CommitClass> {
        let action = BrowserAction::Press {
            selector: None,
            key: key.into(),
        };
        commit_class(&action, facts).map(|c| c.class)
    }

    fn search_in_form(has_submit: bool) -> ElementFacts {
        ElementFacts {
            tag: "input".into(),
            input_type: Some("text".into()),
            name: "Comment".into(),
            in_form: true,
            form_has_submit: has_submit,
            ..ElementFacts::default()
        }
    }

    #[test]
    fn a_key_press_commits_as_the_click_or_enter_it_amounts_to() {
        let pay = ElementFacts {
            tag: "button".into(),
            input_type: Some("button".into()),
            name: "Pay now".into(),
            ..ElementFacts::default()
        };
        let field = search_in_form(true);
        // Enter (any spelling, with modifiers) or Space on a committing button is its click.
        for key in [
            "Enter",
            "enter",
            "NumpadEnter",
            "Control+Enter",
            " ",
            "Space",
        ] {
            assert_eq!(
                press_on(key, Some(&pay)),
                Some(CommitClass::CommittingLabel),
                "{key:?}"
            );
        }
        // Enter in a field of a form that submits is the submit; Space there is a space.
        assert_eq!(
            press_on("Enter", Some(&field)),
            Some(CommitClass::EnterSubmitsForm)
        );
        assert_eq!(
            press_on("Meta+Enter", Some(&field)),
            Some(CommitClass::EnterSubmitsForm)
        );
        assert_eq!(press_on("Space", Some(&field)), None);
        assert_eq!(press_on("Enter", Some(&search_in_form(false))), None);
        // Other keys are not committing, except on a card field.
        assert_eq!(press_on("Tab", Some(&pay)), None);
        assert_eq!(press_on("ArrowDown", Some(&field)), None);
        let card = ElementFacts {
            tag: "input".into(),
            autocomplete: Some("cc-number".into()),
            ..ElementFacts::default()
        };
        assert_eq!(press_on("4", Some(&card)), Some(CommitClass::CardField));
        // On the page (no element known): Enter and Space may submit whatever has focus.
        assert_eq!(press_on("Enter", None), Some(CommitClass::Unknown));
        assert_eq!(press_on(" ", None), Some(CommitClass::Unknown));
        assert_eq!(press_on("PageDown", None), None);
        // Scrolling and going back never commit.
        assert!(!is_committing(&BrowserAction::Scroll { down: true }, None));
        assert!(!is_committing(&BrowserAction::Back, None));
    }
}
