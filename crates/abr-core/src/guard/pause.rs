//! [`detect_pause`]: which handoff a page calls for, decided by the runner from the page.

use abr_protocol::PauseReason;

use crate::guard::probe::PageSignals;
use crate::guard::verbs::committing_verb;

/// What the run is allowed to do, for the detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PauseRules {
    /// The run may sign in (no session was given and it is not read-only): a password field
    /// is then part of the plan, not a reason to stop.
    pub may_sign_in: bool,
    /// The run is read-only: a form that submits, pays or uploads is a reason to stop.
    pub read_only: bool,
}

const ACCESS_BLOCKED: &[&str] = &[
    "unusual traffic",
    "access denied",
    "you have been blocked",
    "you've been blocked",
    "request blocked",
    "403 forbidden",
    "automated queries",
    "don't have permission to access",
];

const CHALLENGE: &[&str] = &[
    "verify you are human",
    "verify you're human",
    "verify that you are human",
    "are you a robot",
    "not a robot",
    "security check",
    "captcha",
    "two-factor",
    "2-step verification",
    "two-step verification",
    "verification code",
    "authentication code",
    "confirm it's you",
];

const PAYWALL: &[&str] = &[
    "subscribe to continue",
    "subscribe to read",
    "subscribers only",
    "for subscribers",
    "free article limit",
    "free articles this month",
    "reached your limit of free",
    "to continue reading",
    "become a member to read",
];

/// Verbs whose forms are write affordances in a read-only run: signing up, applying,
/// paying, uploading.
const WRITE_FORM_VERBS: &[&str] = &[
    "signup",
    "sign up",
    "register",
    "create account",
    "apply",
    "pay",
    "purchase",
    "checkout",
    "check out",
    "order",
    "place order",
    "buy",
    "upload",
    "subscribe",
];

fn mentions(text: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| text.contains(p))
}

/// The handoff `signals` call for under `rules`, most specific first: `access_blocked`,
/// `challenge`, `paywall`, `login_required`, `write_affordance`. `None`: carry on.
///
/// `consent_required` (a site not allowed), `stuck` (repeated failure on one control) and
/// `needs_input` (a required field the plan leaves empty) are decided by the run itself, not
/// from the page's look.
pub fn detect_pause(signals: &PageSignals, rules: PauseRules) -> Option<PauseReason> {
    let text = signals.text.as_str();
    if signals.status == Some(403) || signals.status == Some(429) || mentions(text, ACCESS_BLOCKED)
    {
        return Some(PauseReason::AccessBlocked);
    }
    if signals.captcha || signals.one_time_code || mentions(text, CHALLENGE) {
        return Some(PauseReason::Challenge);
    }
    if mentions(text, PAYWALL) {
        return Some(PauseReason::Paywall);
    }
    if signals.password_fields > 0 && !rules.may_sign_in {
        return Some(PauseReason::LoginRequired);
    }
    if rules.read_only && write_affordance(signals) {
        return Some(PauseReason::WriteAffordance);
    }
    None
}

fn write_affordance(signals: &PageSignals) -> bool {
    signals.file_inputs > 0
        || signals.card_fields > 0
        || signals.forms.iter().any(|form| {
            form.submit_names.iter().any(|name| {
                committing_verb(name).is_some_and(|verb| WRITE_FORM_VERBS.contains(&verb))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::probe::FormFacts;

    fn page(text: &str) -> PageSignals {
        PageSignals {
            url: "https://example.com/".into(),
            status: Some(200),
            text: text.to_lowercase(),
            ..PageSignals::default()
        }
    }

    const RULES: PauseRules = PauseRules {
        may_sign_in: false,
        read_only: false,
    };

    #[test]
    fn each_reason_is_detected_from_its_page() {
        let mut forbidden = page("Nothing here");
        forbidden.status = Some(403);
        assert_eq!(
            detect_pause(&forbidden, RULES),
            Some(PauseReason::AccessBlocked)
        );
        let traffic = page("Our systems have detected unusual traffic from your network");
        assert_eq!(
            detect_pause(&traffic, RULES),
            Some(PauseReason::AccessBlocked)
        );
        let mut captcha = page("Welcome");
        captcha.captcha = true;
        assert_eq!(detect_pause(&captcha, RULES), Some(PauseReason::Challenge));
        let mut otp = page("Enter it below");
        otp.one_time_code = true;
        assert_eq!(detect_pause(&otp, RULES), Some(PauseReason::Challenge));
        let paywall = page("Subscribe to continue reading this article");
        assert_eq!(detect_pause(&paywall, RULES), Some(PauseReason::Paywall));
        let mut login = page("Sign in");
        login.password_fields = 1;
        assert_eq!(
            detect_pause(&login, RULES),
            Some(PauseReason::LoginRequired)
        );
        let mut upload = page("Apply for this job");
        upload.file_inputs = 1;
        let read_only = PauseRules {
            read_only: true,
            ..RULES
        };
        assert_eq!(
            detect_pause(&upload, read_only),
            Some(PauseReason::WriteAffordance)
        );
        assert_eq!(
            detect_pause(&upload, RULES),
            None,
            "only read-only runs stop at forms"
        );
    }

    #[test]
    fn ordinary_pages_and_allowed_sign_ins_do_not_pause() {
        assert_eq!(detect_pause(&page("Latest posts and news"), RULES), None);
        let mut login = page("Sign in");
        login.password_fields = 1;
        let may = PauseRules {
            may_sign_in: true,
            read_only: false,
        };
        assert_eq!(detect_pause(&login, may), None);
        let mut search = page("Results");
        search.forms = vec![FormFacts {
            has_password: false,
            submit_names: vec!["Search".into()],
            fields: 1,
        }];
        let read_only = PauseRules {
            read_only: true,
            ..RULES
        };
        assert_eq!(
            detect_pause(&search, read_only),
            None,
            "a search form is not a write"
        );
        let mut card = page("Checkout");
        card.card_fields = 1;
        assert_eq!(
            detect_pause(&card, read_only),
            Some(PauseReason::WriteAffordance)
        );
    }
}
