//! [`commit_class`]: the one function that decides whether a browser action commits.

use abr_protocol::{CommitClass, GuardPolicySpec};

use crate::guard::element::ElementFacts;
use crate::guard::verbs::{committing_verb, harmless_name};
use crate::step_runner::BrowserAction;

/// Why an action commits: its class, and the verb when a label matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Committing {
    /// The rule that matched.
    pub class: CommitClass,
    /// The committing verb, for [`CommitClass::CommittingLabel`].
    pub verb: Option<&'static str>,
}

impl Committing {
    pub(crate) fn of(class: CommitClass) -> Self {
        Self { class, verb: None }
    }
}

/// How [`commit_class`] judges: strictly for a run that must not commit, and with what the
/// platform adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitRules {
    /// A read-only or dry run: an action whose effect cannot be told (a choice, a button
    /// with no recognised harmless meaning, Enter in an editor) counts as committing, so
    /// that it is refused. A read-write run counts only what commits by its form (its
    /// outcome also counts what the network saw, see [`network`](crate::guard::network::classify)).
    pub strict: bool,
    /// Lower-case words or phrases that make a control harmless on the platform.
    pub harmless: Vec<String>,
    /// Choices never save or submit on the platform.
    pub harmless_choices: bool,
}

impl CommitRules {
    /// The rules of a read-write run with no platform additions.
    pub const LENIENT: Self = Self {
        strict: false,
        harmless: Vec::new(),
        harmless_choices: false,
    };

    /// The rules of a read-only or dry run with no platform additions.
    pub const STRICT: Self = Self {
        strict: true,
        harmless: Vec::new(),
        harmless_choices: false,
    };

    /// The rules with a platform's additions.
    #[must_use]
    pub fn with_platform(mut self, spec: Option<&GuardPolicySpec>) -> Self {
        if let Some(spec) = spec {
            self.harmless = spec
                .harmless
                .iter()
                .map(|h| h.trim().to_lowercase())
                .filter(|h| !h.is_empty())
                .collect();
            self.harmless_choices = spec.harmless_choices;
        }
        self
    }
}

/// Whether `action` on the element described by `facts` may commit (submit, pay, send,
/// delete, upload, save, sign up), and why. The only place this is decided: the read-only
/// and dry-run guard refuses what it returns, and a run's outcome counts from the first
/// action it returns (`failed` before, `uncertain` after) and from the first write the
/// network saw (see [`network`](crate::guard::network::classify)), whichever comes first.
///
/// # Rules, in every run
/// - Navigating, going back, scrolling, waiting, reading, screenshots and DOM checks never
///   commit.
/// - Setting files on an input commits ([`CommitClass::Upload`]).
/// - A click commits on a file input, a card field, an element whose accessible name or
///   value has a committing verb ([`committing_verb`]), a submit control (unless it submits
///   its form with GET: that is a navigation), or another button inside a form that posts.
/// - Typing commits only into a card field or a file input, or with Enter where Enter
///   submits: a form with a submit control or with a single text field (HTML's implicit
///   submission), unless the form submits with GET.
/// - Choosing an option commits only in a card field (an expiry month).
/// - Pressing keys: every key of a chord counts (`Shift+Enter` is an Enter). Enter or Space
///   on an element that activates (a button, a link, a choice, a tab) is a click on it;
///   Enter in a field is Enter as typing would press it; any key on a card field or a file
///   input commits; other keys do not. Without facts (the focused element is not known)
///   Enter and Space commit ([`CommitClass::Unknown`]).
/// - Without facts (the element could not be inspected) every click, Enter, select and
///   upload commits ([`CommitClass::Unknown`]).
///
/// # Rules added in a strict run (read-only, dry run)
/// - A click on a button with no recognised harmless meaning commits
///   ([`CommitClass::UnrecognisedButton`]): harmless are buttons whose name has a harmless
///   word ([`harmless_name`]: search, next, show more, filter, sort, open, close, cancel,
///   back, in several languages, plus the platform's), disclosures and menu openers
///   (`aria-expanded`, `aria-haspopup`, `<summary>`), tabs, and submit controls of GET
///   forms. Links navigate: they commit only by a verb.
/// - A choice (a select, checkbox, radio button, switch) commits when it is outside a form
///   or in one that posts ([`CommitClass::ChoiceMaySubmit`]), unless the platform marks
///   choices harmless.
/// - Enter in an editable region, or in a text field outside any form that is not a search
///   field, commits ([`CommitClass::EnterInEditor`]): chat boxes send on Enter.
pub fn commit_class(
    action: &BrowserAction,
    facts: Option<&ElementFacts>,
    rules: &CommitRules,
) -> Option<Committing> {
    match action {
        BrowserAction::Navigate { .. }
        | BrowserAction::Wait { .. }
        | BrowserAction::Extract { .. }
        | BrowserAction::Screenshot
        | BrowserAction::Assert { .. }
        | BrowserAction::Scroll { .. }
        | BrowserAction::Back => None,
        BrowserAction::Press { key, .. } => press(key, facts, rules),
        BrowserAction::Upload { .. } => Some(Committing::of(CommitClass::Upload)),
        BrowserAction::Click { .. } => match facts {
            None => Some(Committing::of(CommitClass::Unknown)),
            Some(facts) => click(facts, rules),
        },
        BrowserAction::Type { submit, .. } => match facts {
            None if *submit => Some(Committing::of(CommitClass::Unknown)),
            None => None,
            Some(facts) => field(facts).or_else(|| {
                if *submit {
                    enter_in(facts, rules)
                } else {
                    None
                }
            }),
        },
        BrowserAction::Select { .. } => match facts {
            None => Some(Committing::of(CommitClass::Unknown)),
            Some(facts) => field(facts).or_else(|| choice(facts, rules)),
        },
    }
}

/// Whether `action` types into a write form: a field of a form that does not submit with
/// GET, or an editable region; never a search field. Refused in read-only runs (a site may
/// save a draft as it is typed), allowed elsewhere (a dry run rehearses the typing).
pub fn types_into_write_form(action: &BrowserAction, facts: Option<&ElementFacts>) -> bool {
    let (BrowserAction::Type { .. }, Some(facts)) = (action, facts) else {
        return false;
    };
    !facts.search && (facts.editable || (facts.in_form && !facts.submits_with_get()))
}

/// Whether the action commits, without its reason.
pub fn is_committing(
    action: &BrowserAction,
    facts: Option<&ElementFacts>,
    rules: &CommitRules,
) -> bool {
    commit_class(action, facts, rules).is_some()
}

/// The keys of a chord in Playwright's syntax (`Shift+Enter`, `Control++`): each part
/// between `+` signs, a `+` after a `+` (or alone) being the plus key itself.
fn chord(key: &str) -> Vec<&str> {
    let mut keys = Vec::new();
    let mut rest = key;
    while !rest.is_empty() {
        match rest.find('+') {
            // A `+` first is the plus key itself.
            Some(0) => {
                keys.push("+");
                rest = rest.get(1..).unwrap_or("");
                rest = rest.strip_prefix('+').unwrap_or(rest);
            }
            Some(i) => {
                keys.push(rest.get(..i).unwrap_or(""));
                rest = rest.get(i + 1..).unwrap_or("");
            }
            None => {
                keys.push(rest);
                rest = "";
            }
        }
    }
    keys
}

fn is_enter(key: &str) -> bool {
    let key = key.trim_matches(|c: char| c == ' ' || c == '\t');
    key.eq_ignore_ascii_case("enter")
        || key.eq_ignore_ascii_case("numpadenter")
        || key.eq_ignore_ascii_case("return")
        || key == "\n"
        || key == "\r"
}

fn is_space(key: &str) -> bool {
    key == " " || key.trim().eq_ignore_ascii_case("space") || key == "\u{a0}"
}

/// Whether pressing `key` (a chord: any of its keys) is an Enter or a Space: something may
/// be activated, the page may move on.
pub fn activation_key(key: &str) -> bool {
    chord(key).iter().any(|k| is_enter(k) || is_space(k))
}

fn press(key: &str, facts: Option<&ElementFacts>, rules: &CommitRules) -> Option<Committing> {
    let keys = chord(key);
    let enter = keys.iter().any(|k| is_enter(k));
    let space = keys.iter().any(|k| is_space(k));
    let Some(facts) = facts else {
        return (enter || space).then(|| Committing::of(CommitClass::Unknown));
    };
    if let Some(c) = field(facts) {
        return Some(c);
    }
    if facts.activates() && !facts.is_text_entry() && (enter || space) {
        // Enter or Space on a control is a click on it (Enter on a checkbox or radio input
        // also submits its form implicitly).
        let implicit = enter && facts.tag == "input" && facts.is_choice() && enter_submits(facts);
        return if implicit {
            Some(Committing::of(CommitClass::EnterSubmitsForm))
        } else {
            click(facts, rules)
        };
    }
    if enter { enter_in(facts, rules) } else { None }
}

/// Whether Enter in `facts` submits its form with a method that may commit.
fn enter_submits(facts: &ElementFacts) -> bool {
    facts.enter_submits_form() && !facts.submits_with_get()
}

/// Enter in a field (typed, or pressed on it).
fn enter_in(facts: &ElementFacts, rules: &CommitRules) -> Option<Committing> {
    let native_field = facts.tag == "input";
    if native_field && enter_submits(facts) {
        return Some(Committing::of(CommitClass::EnterSubmitsForm));
    }
    if !rules.strict || facts.search {
        return None;
    }
    let editor = facts.editable || facts.tag == "textarea";
    let loose_field = facts.is_text_entry() && !facts.in_form;
    if (editor || loose_field) && !(native_field && facts.submits_with_get()) {
        Some(Committing::of(CommitClass::EnterInEditor))
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

/// A choice changed (chosen, checked, switched), in a strict run.
fn choice(facts: &ElementFacts, rules: &CommitRules) -> Option<Committing> {
    let harmless = !rules.strict || rules.harmless_choices || facts.submits_with_get();
    (!harmless).then(|| Committing::of(CommitClass::ChoiceMaySubmit))
}

/// Whether a strict run may click `facts` as harmless: its name says so, or what it is.
fn harmless_control(facts: &ElementFacts, rules: &CommitRules) -> bool {
    facts.disclosure
        || facts.tag == "summary"
        || facts.role.as_deref() == Some("tab")
        || harmless_name(&facts.name, &rules.harmless)
}

fn click(facts: &ElementFacts, rules: &CommitRules) -> Option<Committing> {
    if let Some(c) = field(facts) {
        return Some(c);
    }
    let submit = facts.is_submit_control();
    if submit && !facts.submits_with_get() {
        return Some(Committing::of(CommitClass::SubmitControl));
    }
    if let Some(verb) = committing_verb(&facts.name) {
        return Some(Committing {
            class: CommitClass::CommittingLabel,
            verb: Some(verb),
        });
    }
    if submit {
        // A GET form's submission is a navigation with its fields in the query.
        return None;
    }
    if facts.is_choice() {
        return choice(facts, rules);
    }
    let button = facts.is_button()
        || matches!(facts.role.as_deref(), Some("menuitem" | "treeitem"))
        || facts.tag == "summary";
    if !button || facts.is_link() || facts.is_text_entry() {
        // Links navigate; a click into a field focuses it; other elements have no
        // activation of their own (what their scripts send, the network sees).
        return None;
    }
    let posting_form = facts.in_form && !facts.submits_with_get();
    if !rules.strict {
        return (posting_form && facts.is_button())
            .then(|| Committing::of(CommitClass::ButtonInForm));
    }
    if harmless_control(facts, rules) {
        None
    } else if posting_form && facts.is_button() {
        Some(Committing::of(CommitClass::ButtonInForm))
    } else {
        Some(Committing::of(CommitClass::UnrecognisedButton))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press_on(
        key: &str,
        facts: Option<&ElementFacts>,
        rules: &CommitRules,
    ) -> Option<CommitClass> {
        let action = BrowserAction::Press {
            selector: None,
            key: key.into(),
        };
        commit_class(&action, facts, rules).map(|c| c.class)
    }

    fn text_in_form(has_submit: bool) -> ElementFacts {
        ElementFacts {
            tag: "input".into(),
            input_type: Some("text".into()),
            name: "Comment".into(),
            in_form: true,
            form_has_submit: has_submit,
            form_method: Some("post".into()),
            form_blocking_fields: 2,
            ..ElementFacts::default()
        }
    }

    fn button(name: &str) -> ElementFacts {
        ElementFacts {
            tag: "button".into(),
            input_type: Some("button".into()),
            name: name.into(),
            ..ElementFacts::default()
        }
    }

    fn click_on(facts: &ElementFacts, rules: &CommitRules) -> Option<CommitClass> {
        let action = BrowserAction::Click {
            selector: abr_protocol::Selector::Css("#x".into()),
        };
        commit_class(&action, Some(facts), rules).map(|c| c.class)
    }

    #[test]
    fn chords_are_split_into_their_keys() {
        assert_eq!(chord("Enter"), ["Enter"]);
        assert_eq!(chord("Shift+Enter"), ["Shift", "Enter"]);
        assert_eq!(chord("Enter+Shift"), ["Enter", "Shift"]);
        assert_eq!(chord("Control+Shift+Space"), ["Control", "Shift", "Space"]);
        assert_eq!(chord("Control++"), ["Control", "+"]);
        assert_eq!(chord("+"), ["+"]);
        assert_eq!(chord(" "), [" "]);
    }

    #[test]
    fn every_key_of_a_chord_is_judged() {
        let pay = ElementFacts {
            tag: "button".into(),
            name: "Pay".into(),
            in_form: true,
            form_has_submit: true,
            ..ElementFacts::default()
        };
        let field = text_in_form(true);
        for rules in [CommitRules::LENIENT, CommitRules::STRICT] {
            for key in [
                "Enter",
                "Enter+Shift",
                "Shift+Enter",
                "Space+Shift",
                "Shift+Space",
                " ",
                "Control+Enter",
            ] {
                assert!(press_on(key, Some(&pay), &rules).is_some(), "{key:?}");
            }
            for key in [
                "Enter+Shift",
                "Shift+Enter",
                "Alt+Return",
                "Meta+NumpadEnter",
            ] {
                assert_eq!(
                    press_on(key, Some(&field), &rules),
                    Some(CommitClass::EnterSubmitsForm),
                    "{key:?}"
                );
            }
            assert_eq!(press_on("Space", Some(&field), &rules), None);
            for key in ["Enter+Shift", "Shift+Space"] {
                assert_eq!(
                    press_on(key, None, &rules),
                    Some(CommitClass::Unknown),
                    "{key}"
                );
            }
            assert_eq!(press_on("Tab", Some(&pay), &rules), None);
            assert_eq!(press_on("Shift+Tab", None, &rules), None);
        }
    }

    #[test]
    fn implicit_submission_and_get_forms() {
        let rules = CommitRules::LENIENT;
        // One text field, no submit button: Enter submits (HTML implicit submission).
        let only = ElementFacts {
            form_has_submit: false,
            form_blocking_fields: 1,
            ..text_in_form(false)
        };
        assert_eq!(
            press_on("Enter", Some(&only), &rules),
            Some(CommitClass::EnterSubmitsForm)
        );
        // Two fields, no submit button: Enter does nothing native.
        assert_eq!(press_on("Enter", Some(&text_in_form(false)), &rules), None);
        // A GET form's submission is a navigation, by its button or by Enter.
        let search = ElementFacts {
            form_method: Some("get".into()),
            name: "Search".into(),
            ..text_in_form(true)
        };
        assert_eq!(press_on("Enter", Some(&search), &CommitRules::STRICT), None);
        let go = ElementFacts {
            tag: "button".into(),
            input_type: Some("submit".into()),
            name: "Go".into(),
            in_form: true,
            form_has_submit: true,
            form_method: Some("get".into()),
            ..ElementFacts::default()
        };
        assert_eq!(click_on(&go, &CommitRules::STRICT), None);
        // An unknown method is a post.
        let unknown = ElementFacts {
            form_method: None,
            ..go.clone()
        };
        assert_eq!(click_on(&unknown, &rules), Some(CommitClass::SubmitControl));
        // A committing verb wins even in a GET form.
        let subscribe = ElementFacts {
            name: "Subscribe".into(),
            ..go
        };
        assert_eq!(
            click_on(&subscribe, &rules),
            Some(CommitClass::CommittingLabel)
        );
    }

    #[test]
    fn strict_runs_refuse_what_they_cannot_tell_is_harmless() {
        let strict = CommitRules::STRICT;
        let lenient = CommitRules::LENIENT;
        for name in ["Like", "Follow", "Gefällt mir", "いいね", ""] {
            assert_eq!(
                click_on(&button(name), &strict),
                Some(CommitClass::UnrecognisedButton),
                "{name}"
            );
            assert_eq!(click_on(&button(name), &lenient), None, "{name}");
        }
        for name in [
            "Show more",
            "Next",
            "Cancel",
            "Close",
            "Filters",
            "Sort by date",
            "Weiter",
        ] {
            assert_eq!(click_on(&button(name), &strict), None, "{name}");
        }
        let tab = ElementFacts {
            role: Some("tab".into()),
            tag: "div".into(),
            name: "Reviews".into(),
            ..ElementFacts::default()
        };
        assert_eq!(click_on(&tab, &strict), None);
        let disclosure = ElementFacts {
            disclosure: true,
            ..button("Shipping")
        };
        assert_eq!(click_on(&disclosure, &strict), None);
        let link = ElementFacts {
            tag: "a".into(),
            name: "Profile".into(),
            ..ElementFacts::default()
        };
        assert_eq!(click_on(&link, &strict), None);
        let div = ElementFacts {
            tag: "div".into(),
            name: "Like".into(),
            ..ElementFacts::default()
        };
        assert_eq!(
            click_on(&div, &strict),
            None,
            "no activation of its own: the network sees it"
        );
        let role_button = ElementFacts {
            role: Some("button".into()),
            ..div
        };
        assert_eq!(
            click_on(&role_button, &strict),
            Some(CommitClass::UnrecognisedButton)
        );
        // The platform extends the harmless list.
        let translate = CommitRules::STRICT.with_platform(Some(&GuardPolicySpec {
            harmless: vec!["Translate".into()],
            harmless_choices: false,
        }));
        assert_eq!(click_on(&button("Translate"), &translate), None);
        assert_eq!(
            click_on(&button("Translate"), &strict),
            Some(CommitClass::UnrecognisedButton)
        );
    }

    #[test]
    fn choices_and_editors_in_strict_runs() {
        let strict = CommitRules::STRICT;
        let select = ElementFacts {
            tag: "select".into(),
            in_form: true,
            form_method: Some("post".into()),
            ..ElementFacts::default()
        };
        let choose = BrowserAction::Select {
            selector: abr_protocol::Selector::Css("#s".into()),
            value: abr_protocol::SecretValue::new("a".to_owned()),
        };
        assert_eq!(
            commit_class(&choose, Some(&select), &strict).map(|c| c.class),
            Some(CommitClass::ChoiceMaySubmit)
        );
        assert_eq!(
            commit_class(&choose, Some(&select), &CommitRules::LENIENT),
            None
        );
        let in_get = ElementFacts {
            form_method: Some("get".into()),
            ..select.clone()
        };
        assert_eq!(commit_class(&choose, Some(&in_get), &strict), None);
        let loose = ElementFacts {
            in_form: false,
            form_method: None,
            ..select
        };
        assert_eq!(
            commit_class(&choose, Some(&loose), &strict).map(|c| c.class),
            Some(CommitClass::ChoiceMaySubmit)
        );
        let harmless = CommitRules::STRICT.with_platform(Some(&GuardPolicySpec {
            harmless: vec![],
            harmless_choices: true,
        }));
        assert_eq!(commit_class(&choose, Some(&loose), &harmless), None);
        let switch = ElementFacts {
            tag: "div".into(),
            role: Some("switch".into()),
            name: "Notifications".into(),
            ..ElementFacts::default()
        };
        assert_eq!(
            click_on(&switch, &strict),
            Some(CommitClass::ChoiceMaySubmit)
        );
        assert_eq!(
            press_on(" ", Some(&switch), &strict),
            Some(CommitClass::ChoiceMaySubmit)
        );
        let checkbox = ElementFacts {
            tag: "input".into(),
            input_type: Some("checkbox".into()),
            in_form: true,
            form_method: Some("post".into()),
            form_has_submit: true,
            ..ElementFacts::default()
        };
        assert_eq!(
            click_on(&checkbox, &strict),
            Some(CommitClass::ChoiceMaySubmit)
        );
        assert_eq!(
            press_on("Enter", Some(&checkbox), &CommitRules::LENIENT),
            Some(CommitClass::EnterSubmitsForm)
        );
        // Enter in a chat box or a loose text field; not in a search box.
        let chat = ElementFacts {
            tag: "div".into(),
            editable: true,
            name: "Message".into(),
            ..ElementFacts::default()
        };
        assert_eq!(
            press_on("Enter", Some(&chat), &strict),
            Some(CommitClass::EnterInEditor)
        );
        assert_eq!(press_on("Enter", Some(&chat), &CommitRules::LENIENT), None);
        assert_eq!(
            press_on("Shift+Enter", Some(&chat), &strict),
            Some(CommitClass::EnterInEditor)
        );
        let loose_field = ElementFacts {
            tag: "input".into(),
            input_type: Some("text".into()),
            ..ElementFacts::default()
        };
        assert_eq!(
            press_on("Enter", Some(&loose_field), &strict),
            Some(CommitClass::EnterInEditor)
        );
        let search = ElementFacts {
            search: true,
            ..loose_field
        };
        assert_eq!(press_on("Enter", Some(&search), &strict), None);
        // Clicking into a field is focus.
        assert_eq!(click_on(&chat, &strict), None);
    }

    #[test]
    fn scrolling_and_going_back_never_commit() {
        for rules in [CommitRules::LENIENT, CommitRules::STRICT] {
            assert!(!is_committing(
                &BrowserAction::Scroll { down: true },
                None,
                &rules
            ));
            assert!(!is_committing(&BrowserAction::Back, None, &rules));
        }
    }
}
