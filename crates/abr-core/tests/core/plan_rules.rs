//! Plan validation as issue 16's attacks, at the core (every entry point goes through it):
//! a placeholder may not choose a URL's scheme, host, port or user (it would also count as
//! a site the approved plan names, skipping the consent pause); over-long URLs and texts
//! are refused before anything is stored; `committing_or_risky` asks the commit rule about
//! the steps and ignores a lower self-declared risk.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;

use abr_core::approval::ApprovalRule;
use abr_core::error::{PlanLocation, PlanProblem, UrlProblem};
use abr_core::plan::{PlanLimits, validate};
use abr_core::step_runner::BrowserAction;
use abr_protocol::{Risk, SecretValue, StepPlan};
use serde_json::{Value, json};

fn plan(steps: Value) -> StepPlan {
    serde_json::from_value(json!({
        "targetUrl": "https://tool.example/start",
        "steps": steps,
        "verification": {"method": "dom_check", "text": "Done"},
        "risk": "low"
    }))
    .unwrap()
}

fn navigate(url: &str) -> StepPlan {
    plan(json!([{"type": "navigate", "url": url, "description": "Open"}]))
}

fn inputs() -> BTreeMap<String, SecretValue> {
    ["h", "u", "x", "id", "q", "p"]
        .into_iter()
        .map(|k| {
            let v = match k {
                "h" => "evil.example",
                "u" => "https://evil.example",
                "p" => "8080",
                _ => "42",
            };
            (k.to_owned(), SecretValue::new(v))
        })
        .collect()
}

#[test]
fn a_placeholder_in_the_scheme_host_port_or_user_is_refused_naming_the_step() {
    for url in [
        "http://{{h}}/x",
        "{{u}}/path",
        "{{u}}",
        " {{u}}",
        "\t{{u}}/x",
        "https://a{{x}}.example.com/",
        "https://tool.example{{x}}/",
        "https://{{x}}.tool.example/",
        "//{{h}}/x",
        "\\\\{{h}}/x",
        "https://{{x}}@tool.example/",
        "https://me:{{x}}@tool.example/",
        "https://tool.example:{{p}}/",
        "http://[::{{x}}]/",
        "ht{{x}}tp://tool.example/",
        "{{x}}:tool.example/",
        "https:{{h}}/x",
        "https:/{{h}}/x",
    ] {
        let e = validate(&navigate(url), &inputs(), &PlanLimits::default())
            .err()
            .unwrap_or_else(|| panic!("{url:?} was accepted"));
        assert_eq!(e.location, PlanLocation::Step(0), "{url:?}");
        assert_eq!(
            e.problem,
            PlanProblem::NavigateUrl(UrlProblem::PlaceholderInOrigin),
            "{url:?}"
        );
        let text = e.to_string();
        assert!(text.starts_with("steps[0]: "), "{text}");
        assert!(!text.contains("evil"), "{text}");
    }
}

#[test]
fn placeholders_in_the_path_query_and_fragment_stay_allowed_and_stay_there() {
    for (url, want) in [
        (
            "https://tool.example/users/{{id}}?q={{q}}#{{x}}",
            "https://tool.example/users/42?q=42#42",
        ),
        ("/users/{{id}}", "https://tool.example/users/42"),
        ("users?page={{id}}", "https://tool.example/users?page=42"),
        (
            "?q={{u}}",
            "https://tool.example/start?q=https%3A%2F%2Fevil.example",
        ),
        (
            "/go/{{u}}",
            "https://tool.example/go/https%3A%2F%2Fevil.example",
        ),
    ] {
        let valid = validate(&navigate(url), &inputs(), &PlanLimits::default())
            .unwrap_or_else(|e| panic!("{url:?}: {e}"));
        let steps = valid.fill(&inputs()).unwrap();
        match &steps[0].action {
            BrowserAction::Navigate { url: got } => assert_eq!(got.as_str(), want, "{url:?}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_target_and_callback_urls_are_not_templated() {
    let mut p = navigate("/x");
    p.target_url = "http://{{h}}/x".into();
    let e = validate(&p, &inputs(), &PlanLimits::default()).unwrap_err();
    assert_eq!(
        (e.location, e.problem),
        (
            PlanLocation::Plan,
            PlanProblem::TargetUrl(UrlProblem::Templated)
        )
    );
    let mut p = navigate("/x");
    p.verification =
        serde_json::from_value(json!({"method": "api_callback", "url": "https://{{h}}/hook"}))
            .unwrap();
    let e = validate(&p, &inputs(), &PlanLimits::default()).unwrap_err();
    assert_eq!(
        (e.location, e.problem),
        (
            PlanLocation::Verification,
            PlanProblem::CallbackUrl(UrlProblem::Templated)
        )
    );
}

#[test]
fn over_long_urls_and_texts_are_refused_with_their_bound() {
    let long = |n: usize| "a".repeat(n);
    let url = format!("https://tool.example/{}", long(10 * 1024 * 1024));
    let mut target = navigate("/x");
    target.target_url = url.clone();
    let mut reasoning = navigate("/x");
    reasoning.reasoning = Some(long(16 * 1024 + 1));
    let mut callback = navigate("/x");
    callback.verification =
        serde_json::from_value(json!({"method": "api_callback", "url": url})).unwrap();
    let mut shown = navigate("/x");
    shown.verification =
        serde_json::from_value(json!({"method": "screenshot", "text": long(4097)})).unwrap();
    let cases: Vec<(StepPlan, PlanLocation, PlanProblem)> = vec![
        (
            target,
            PlanLocation::Plan,
            PlanProblem::TargetUrl(UrlProblem::TooLong),
        ),
        (
            reasoning,
            PlanLocation::Plan,
            PlanProblem::TooLong {
                what: "the reasoning",
                max: 16 * 1024,
            },
        ),
        (
            navigate(&format!("/{}", long(4096))),
            PlanLocation::Step(0),
            PlanProblem::NavigateUrl(UrlProblem::TooLong),
        ),
        (
            plan(json!([{"type": "click", "selector": "#a", "description": long(2049)}])),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the description",
                max: 2048,
            },
        ),
        (
            plan(json!([{"type": "click", "selector": long(4097), "description": "d"}])),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the selector",
                max: 4096,
            },
        ),
        (
            plan(
                json!([{"type": "click", "selector": {"role": "button", "name": long(4097)}, "description": "d"}]),
            ),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the selector",
                max: 4096,
            },
        ),
        (
            plan(
                json!([{"type": "type", "selector": "#a", "value": long(64 * 1024 + 1), "description": "d"}]),
            ),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the value",
                max: 64 * 1024,
            },
        ),
        (
            plan(json!([{"type": "wait", "text": long(4097), "description": "d"}])),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the wait's text",
                max: 4096,
            },
        ),
        (
            plan(
                json!([{"type": "extract", "name": long(129), "kind": "text", "selector": "#a", "description": "d"}]),
            ),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the extract name",
                max: 128,
            },
        ),
        (
            plan(json!([{"type": "assert", "text": long(4097), "description": "d"}])),
            PlanLocation::Step(0),
            PlanProblem::TooLong {
                what: "the check's text",
                max: 4096,
            },
        ),
        (
            callback,
            PlanLocation::Verification,
            PlanProblem::CallbackUrl(UrlProblem::TooLong),
        ),
        (
            shown,
            PlanLocation::Verification,
            PlanProblem::TooLong {
                what: "the text to show",
                max: 4096,
            },
        ),
    ];
    for (p, location, problem) in cases {
        let e = validate(&p, &BTreeMap::new(), &PlanLimits::default()).unwrap_err();
        assert_eq!((e.location, &e.problem), (location, &problem));
        assert!(e.to_string().len() < 400, "the error repeats no input");
    }
    // Inputs: their values, their number, their names.
    let p = navigate("/x");
    let big = BTreeMap::from([("q".to_owned(), SecretValue::new(long(64 * 1024 + 1)))]);
    let many: BTreeMap<_, _> = (0..65)
        .map(|i| (format!("i{i}"), SecretValue::new("v")))
        .collect();
    let odd = BTreeMap::from([("not a name".to_owned(), SecretValue::new("v"))]);
    for (inputs, problem) in [
        (
            big,
            PlanProblem::TooLong {
                what: "an input's value",
                max: 64 * 1024,
            },
        ),
        (
            many,
            PlanProblem::TooMany {
                what: "the inputs",
                max: 64,
            },
        ),
        (odd, PlanProblem::InputName),
    ] {
        let e = validate(&p, &inputs, &PlanLimits::default()).unwrap_err();
        assert_eq!((e.location, e.problem), (PlanLocation::Inputs, problem));
    }
    // A value that grows past the bound once filled.
    let p = plan(
        json!([{"type": "type", "selector": "#a", "value": "{{q}}{{q}}", "description": "d"}]),
    );
    let half = BTreeMap::from([("q".to_owned(), SecretValue::new(long(40 * 1024)))]);
    let e = validate(&p, &half, &PlanLimits::default()).unwrap_err();
    assert_eq!(
        e.problem,
        PlanProblem::TooLong {
            what: "the value once filled",
            max: 64 * 1024
        }
    );
    // At the bounds, accepted.
    let p = plan(json!([
        {"type": "navigate", "url": format!("/{}", long(4000)), "description": long(2048)},
        {"type": "type", "selector": long(4096), "value": long(64 * 1024), "description": "d"}
    ]));
    validate(&p, &BTreeMap::new(), &PlanLimits::default()).unwrap();
}

#[test]
fn committing_or_risky_asks_the_commit_rule_and_a_low_risk_does_not_lower_it() {
    let rule = ApprovalRule::CommittingOrRisky;
    for step in [
        json!({"type": "click", "selector": "#pay", "description": "Pay"}),
        json!({"type": "click", "selector": {"text": "Show more"}, "description": "More"}),
        json!({"type": "type", "selector": "#q", "value": "x", "submit": true, "description": "Search"}),
        json!({"type": "select", "selector": "#role", "value": "admin", "description": "Role"}),
    ] {
        for risk in [Risk::Low, Risk::Medium, Risk::High] {
            let mut p = plan(json!([step]));
            p.risk = risk;
            let valid = validate(&p, &BTreeMap::new(), &PlanLimits::default()).unwrap();
            assert!(valid.has_committing_step(), "{step}");
            assert!(rule.requires_approval(&valid), "{step} at {risk:?}");
        }
    }
    // Steps the rule never counts as committing run at once at low risk, and wait when the
    // plan declares itself riskier.
    let reads = plan(json!([
        {"type": "navigate", "url": "/users", "description": "Open"},
        {"type": "type", "selector": "#q", "value": "ada", "description": "Type a query"},
        {"type": "wait", "text": "Users", "description": "Wait"},
        {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read"},
        {"type": "assert", "text": "Users", "description": "Check"},
        {"type": "screenshot", "description": "Keep"}
    ]));
    let valid = validate(&reads, &BTreeMap::new(), &PlanLimits::default()).unwrap();
    assert!(!valid.has_committing_step());
    assert!(!rule.requires_approval(&valid));
    let mut risky = reads;
    risky.risk = Risk::Medium;
    let valid = validate(&risky, &BTreeMap::new(), &PlanLimits::default()).unwrap();
    assert!(rule.requires_approval(&valid));
    assert!(ApprovalRule::All.requires_approval(&valid));
    assert!(!ApprovalRule::Off.requires_approval(&valid));
}

/// What the approver sees of each input: a value named like a credential is masked even when
/// the planner forgot `secretInputs` (the attack: a password shown on the approval page);
/// a value the planner names a secret is masked too; every other value is shown; a
/// `secretInputs` name that is no input is refused, naming it.
#[test]
fn inputs_are_shown_to_the_approver_and_secrets_as_their_length_only() {
    use abr_core::plan::{is_secret_name, shown_inputs};
    for secret in [
        "password",
        "newPassword",
        "db_passwd",
        "api_key",
        "apiKey",
        "otp-code",
        "pin",
        "accessToken",
        "client.secret",
        "auth",
        "2fa",
    ] {
        assert!(is_secret_name(secret), "{secret} is shown");
    }
    for plain in [
        "email",
        "user",
        "role",
        "shipping",
        "keyword",
        "monkey",
        "spinner",
        "author",
        "passenger",
        "zip_code",
        "q",
    ] {
        assert!(!is_secret_name(plain), "{plain} is masked");
    }
    let inputs = BTreeMap::from([
        ("email".to_owned(), SecretValue::new("ada@example.com")),
        ("note".to_owned(), SecretValue::new("héllo")),
        ("password".to_owned(), SecretValue::new("hunter2")),
    ]);
    let shown = shown_inputs(&inputs, &["note".to_owned()]).unwrap();
    let json = serde_json::to_value(&shown).unwrap();
    assert_eq!(
        json,
        json!([
            {"name": "email", "value": "ada@example.com", "length": 15},
            {"name": "note", "secret": true, "length": 5},
            {"name": "password", "secret": true, "length": 7}
        ])
    );
    let e = shown_inputs(&inputs, &["nope".to_owned()]).unwrap_err();
    assert_eq!(e.location, PlanLocation::Inputs);
    assert_eq!(e.problem, PlanProblem::UnknownSecretInput("nope".into()));
}

/// A stage reaches events and webhooks: it is a short name, never a value (a URL, a typed
/// text); a step without one is in the stage a step before it started.
#[test]
fn stages_are_names_and_a_step_without_one_is_in_the_last_started() {
    let staged = |stage: &str| {
        plan(json!([{"type": "click", "selector": "#a", "description": "Go", "stage": stage}]))
    };
    for bad in [
        "",
        "Filling",
        "https://evil.example/?token=1",
        "a b",
        &"s".repeat(41),
    ] {
        let e = validate(&staged(bad), &inputs(), &PlanLimits::default()).unwrap_err();
        assert_eq!(
            (e.location, e.problem.clone(), e.problem.field()),
            (PlanLocation::Step(0), PlanProblem::StageName, Some("stage")),
            "{bad:?}"
        );
    }
    validate(&staged(&"s".repeat(40)), &inputs(), &PlanLimits::default()).unwrap();

    let p = plan(json!([
        {"type": "click", "selector": "#a", "description": "Look"},
        {"type": "click", "selector": "#b", "description": "Fill", "stage": "filling_form"},
        {"type": "click", "selector": "#c", "description": "More"},
        {"type": "click", "selector": "#d", "description": "Send", "stage": "submitting"}
    ]));
    validate(&p, &inputs(), &PlanLimits::default()).unwrap();
    let at = |i| abr_core::plan::stage_at(&p.steps, i);
    assert_eq!(
        [at(0), at(1), at(2), at(3), at(9)],
        [
            None,
            Some("filling_form"),
            Some("filling_form"),
            Some("submitting"),
            Some("submitting")
        ]
    );
}
