//! Fuzz targets (bolero) over the core's rules that see hostile input. Under `cargo test`
//! each replays its committed corpus (`__fuzz__/<target>/corpus`) and then generates inputs
//! for `BOLERO_RANDOM_TEST_TIME_MS` (default 1 s) or `BOLERO_RANDOM_ITERATIONS`; the same
//! targets run under cargo-bolero's engines. Each asserts a property, not only "no panic":
//!
//! - `scope_filter`, `storage_state_json`: nothing outside the scope comes out, however the
//!   domain or origin is spelt; filtering twice is filtering once.
//! - `commit_rule`: total over any element; a control whose name holds a committing verb is
//!   never harmless, in any run.
//! - `graphql_reads`: a batch is a read only when every operation in it is a query,
//!   however the keywords are spaced, commented or JSON-escaped.
//! - `egress_hosts`: no address of a refused range passes, however it is spelt (decimal,
//!   octal, hex, IPv4-mapped IPv6, trailing dots, full-width digits).
//! - `list_cursors`: any cursor is read back as given or refused, never a panic.
//! - `plan_fill`: no placeholder value ever changes a URL's scheme, host or port; an
//!   accepted plan validates again after a round trip through JSON.

use std::collections::BTreeMap;

use abr_core::egress::EgressPolicy;
use abr_core::guard::{
    CommitRules, ElementFacts, committing_verb, graphql_queries_only, is_committing,
};
use abr_core::plan::{PlanLimits, validate};
use abr_core::scope::SessionScope;
use abr_core::step_runner::BrowserAction;
use abr_protocol::{
    AgentSessionState, Cookie, OriginState, SecretValue, Selector, SessionScopeSpec, StepPlan,
};
use bolero::check;

/// How often a target reached its property (not only ran): each target checks at the end
/// that it did, so that a target whose inputs never get that far fails instead of passing
/// vacuously.
struct Reached(std::sync::atomic::AtomicUsize);

impl Reached {
    const fn new() -> Self {
        Self(std::sync::atomic::AtomicUsize::new(0))
    }

    fn hit(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn assert_reached(&self, what: &str) {
        let n = self.0.load(std::sync::atomic::Ordering::Relaxed);
        println!("{what}: the property was checked on {n} inputs");
        assert!(n > 0, "{what}: no input reached the property");
    }
}

/// Pieces hostile spellings are made of: each generated string is some of these joined
/// with the generator's own text.
const DOMAIN_PARTS: &[&str] = &[
    "example.com",
    ".example.com",
    "EXAMPLE.COM.",
    "sub.example.com",
    "example.com.evil.com",
    "evilexample.com",
    "evil.com",
    "xn--exmple-cua.com",
    "exаmple.com",
    "com",
    "co.uk",
    "localhost",
    "[::1]",
    "127.0.0.1",
    "",
    ".",
    "..",
    "%2e",
    " ",
];

const ORIGIN_PARTS: &[&str] = &[
    "https://example.com",
    "https://EXAMPLE.com:443",
    "https://example.com/",
    "http://example.com",
    "https://example.com:8443",
    "https://example.com.",
    "https://sub.example.com",
    "https://user@example.com",
    "https://example.com@evil.com",
    "https://evil.com#https://example.com",
    "HTTPS://example.com",
    "https://exаmple.com",
    "",
];

fn pick<'a>(parts: &[&'a str], index: u8) -> &'a str {
    parts[usize::from(index) % parts.len()]
}

fn spelt(parts: &[&str], (a, middle, b): &(u8, String, u8)) -> String {
    // Mostly the parts alone, sometimes with the generator's text between them.
    let middle = if middle.len() % 3 == 0 {
        middle.as_str()
    } else {
        ""
    };
    format!("{}{middle}{}", pick(parts, *a), pick(parts, *b))
}

fn scope() -> SessionScope {
    SessionScope::new(&SessionScopeSpec {
        cookie_domains: vec!["example.com".into()],
        origins: vec!["https://example.com".into()],
    })
    .unwrap()
}

/// Whether a kept cookie's domain is example.com or under it, by a rule of the test's own.
fn in_cookie_scope(domain: &str) -> bool {
    let d = domain
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    d == "example.com" || d.ends_with(".example.com")
}

/// Whether a kept origin is https://example.com, by the URL standard's own serialization.
fn in_origin_scope(origin: &str) -> bool {
    url::Url::parse(origin).is_ok_and(|u| u.origin().ascii_serialization() == "https://example.com")
}

static KEPT: Reached = Reached::new();

fn check_filtered(state: &AgentSessionState) {
    let scope = scope();
    let (kept, _) = scope.filter(state);
    if !kept.cookies.is_empty() || !kept.origins.is_empty() {
        KEPT.hit();
    }
    for cookie in &kept.cookies {
        assert!(in_cookie_scope(&cookie.domain), "kept {:?}", cookie.domain);
    }
    for origin in &kept.origins {
        assert!(in_origin_scope(&origin.origin), "kept {:?}", origin.origin);
    }
    assert!(kept.extra.is_empty());
    let (again, report) = scope.filter(&kept);
    assert_eq!(again, kept, "filtering twice is filtering once");
    assert!(report.dropped.is_empty(), "{report:?}");
}

#[test]
fn fuzz_scope_filter() {
    check!()
        .with_type::<(Vec<(u8, String, u8)>, Vec<(u8, String, u8)>)>()
        .for_each(|(domains, origins)| {
            let state = AgentSessionState {
                cookies: domains
                    .iter()
                    .map(|d| Cookie::new("c", "v", spelt(DOMAIN_PARTS, d)))
                    .collect(),
                origins: origins
                    .iter()
                    .map(|o| OriginState::new(spelt(ORIGIN_PARTS, o), Vec::new()))
                    .collect(),
                ..AgentSessionState::default()
            };
            check_filtered(&state);
        });
    KEPT.assert_reached("scope_filter (something kept)");
}

#[test]
fn fuzz_storage_state_json() {
    check!().for_each(|bytes: &[u8]| {
        if let Ok(state) = serde_json::from_slice::<AgentSessionState>(bytes) {
            check_filtered(&state);
        }
    });
}

const TAGS: &[&str] = &[
    "button", "a", "input", "div", "span", "select", "textarea", "form", "",
];
const TYPES: &[&str] = &[
    "submit", "button", "text", "checkbox", "file", "search", "image", "",
];
const ROLES: &[&str] = &["button", "link", "menuitem", "switch", "tab", "option", ""];
const NAMES: &[&str] = &[
    "Post",
    "Send",
    "Pay now",
    "Delete",
    "Sign up",
    "Absenden",
    "Envoyer",
    "Enviar",
    "Next page",
    "Cancel",
    "Search",
    "Close",
    "",
];

#[test]
fn fuzz_commit_rule() {
    static VERBS: Reached = Reached::new();
    check!()
        .with_type::<((u8, u8, u8, u8), String, (bool, bool, bool, bool), bool)>()
        .for_each(
            |((tag, kind, role, name), text, (in_form, has_submit, editable, search), strict)| {
                let name = format!(
                    "{}{}",
                    pick(NAMES, *name),
                    if text.len() % 2 == 0 {
                        text.as_str()
                    } else {
                        ""
                    }
                );
                let facts = ElementFacts {
                    tag: pick(TAGS, *tag).into(),
                    input_type: Some(pick(TYPES, *kind).to_owned()).filter(|t| !t.is_empty()),
                    role: Some(pick(ROLES, *role).to_owned()).filter(|r| !r.is_empty()),
                    name: name.clone(),
                    in_form: *in_form,
                    form_has_submit: *has_submit,
                    editable: *editable,
                    search: *search,
                    ..ElementFacts::default()
                };
                let rules = CommitRules {
                    strict: *strict,
                    ..CommitRules::default()
                };
                let click = BrowserAction::Click {
                    selector: Selector::Css("#x".into()),
                };
                // Total: any element, either run.
                let committing = is_committing(&click, Some(&facts), &rules);
                let clickable =
                    matches!(facts.tag.as_str(), "button" | "a" | "input") || facts.role.is_some();
                if clickable && committing_verb(&name).is_some() {
                    VERBS.hit();
                    assert!(committing, "a click on {facts:?} is harmless");
                }
            },
        );
    VERBS.assert_reached("commit_rule");
}

/// The pieces of a GraphQL operation: a keyword, how it is spaced and whether the JSON
/// string escapes it.
const OPERATIONS: &[&str] = &["query", "mutation", "subscription", ""];
const GAPS: &[&str] = &[" ", "\n", "\t", ",", "#c\n", " # x\n ", "\u{feff}", ""];

fn operation((kind, gap, name, escape): &(u8, u8, bool, bool)) -> (String, bool) {
    let keyword = pick(OPERATIONS, *kind);
    let gap = pick(GAPS, *gap);
    let named = if *name { "Op" } else { "" };
    let text = if keyword.is_empty() {
        format!("{gap}{{ a }}")
    } else {
        format!("{gap}{keyword} {named}{gap}{{ a }}")
    };
    let json = if *escape {
        // Every letter as a JSON \u escape: the same string once decoded.
        text.chars()
            .map(|c| format!("\\u{:04x}", u32::from(c)))
            .collect()
    } else {
        serde_json::to_string(&text)
            .unwrap()
            .trim_matches('"')
            .to_owned()
    };
    (json, keyword == "query" || keyword.is_empty())
}

#[test]
fn fuzz_graphql_reads() {
    static READ: Reached = Reached::new();
    check!()
        .with_type::<(Vec<(u8, u8, bool, bool)>, bool)>()
        .for_each(|(operations, batched)| {
            let Some(first) = operations.first() else {
                return;
            };
            let ops: Vec<(String, bool)> = if *batched {
                operations.iter().map(operation).collect()
            } else {
                vec![operation(first)]
            };
            let reads = ops.iter().all(|(_, read)| *read);
            let bodies: Vec<String> = ops
                .iter()
                .map(|(query, _)| format!("{{\"query\":\"{query}\"}}"))
                .collect();
            let body = if *batched {
                format!("[{}]", bodies.join(","))
            } else {
                bodies.concat()
            };
            if graphql_queries_only(body.as_bytes(), Some("application/json")) {
                READ.hit();
                assert!(reads, "a write passed as a read: {body}");
            }
        });
    READ.assert_reached("graphql_reads (passed as reads)");
    // Any bytes: total.
    check!().for_each(|bytes: &[u8]| {
        let _ = graphql_queries_only(bytes, Some("application/json"));
        let _ = graphql_queries_only(bytes, Some("application/graphql"));
    });
}

/// Spellings of refused addresses (loopback, private, link-local, metadata).
const HOSTS: &[&str] = &[
    "127.0.0.1",
    "2130706433",
    "0177.0.0.1",
    "0x7f.1",
    "0x7f000001",
    "127.1",
    "127.0.0.1.",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:a00:1]",
    "[::7f00:1]",
    "[::127.0.0.1]",
    "[::ffff:169.254.169.254]",
    "10.0.0.1",
    "012.0.0.1",
    "169.254.169.254",
    "0xa9.0xfe.0xa9.0xfe",
    "192.168.1.1",
    "3232235777",
    "[fe80::1]",
    "[fc00::1]",
    "0.0.0.0",
    "0",
    "１２７．０．０．１",
    "localhost",
    "LOCALHOST.",
    "a.localhost",
    "example.com",
    "93.184.216.34",
];

/// The ranges no page may reach, by the standard library's own tests (an oracle apart from
/// the policy's `classify`): loopback, private, link-local, unspecified, shared address
/// space, unique-local and link-local IPv6, and IPv6 carrying an IPv4 address.
fn refused(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        std::net::IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| refused(v4.into()))
                || v6.to_ipv4().is_some_and(|v4| refused(v4.into()))
        }
    }
}

#[test]
fn fuzz_egress_hosts() {
    static PASSED: Reached = Reached::new();
    static REFUSED: Reached = Reached::new();
    let policy = EgressPolicy::new();
    check!()
        .with_type::<(u8, String, u8, u16)>()
        .for_each(|(a, middle, b, port)| {
            let host = spelt(HOSTS, &(*a, middle.clone(), *b));
            let Ok(url) = url::Url::parse(&format!("http://{host}:{}/", port.max(&1))) else {
                return;
            };
            if policy.check_url(&url).is_err() {
                REFUSED.hit();
                return;
            }
            PASSED.hit();
            // Let through: as the browser reads the URL (WHATWG, as Chromium), its host is
            // public or a name that is not a loopback one.
            match url.host() {
                Some(url::Host::Ipv4(ip)) => assert!(!refused(ip.into()), "{url}"),
                Some(url::Host::Ipv6(ip)) => assert!(!refused(ip.into()), "{url}"),
                Some(url::Host::Domain(name)) => {
                    let name = name.trim_end_matches('.').to_ascii_lowercase();
                    assert!(
                        name != "localhost" && !name.ends_with(".localhost"),
                        "{url}"
                    );
                }
                None => panic!("no host passed: {url}"),
            }
        });
    PASSED.assert_reached("egress_hosts (let through)");
    REFUSED.assert_reached("egress_hosts (refused)");
}

/// Step URLs with a placeholder in every part (a target URL is never templated).
const STEP_URLS: &[&str] = &[
    "/a/{{p}}",
    "{{p}}",
    "/{{p}}",
    "?q={{p}}",
    "https://shop.example/{{p}}",
    "https://shop.example/a?q={{p}}",
    "https://shop.example/a#{{p}}",
    "https://{{p}}.shop.example/",
    "https://{{p}}/",
    "{{p}}",
    "https://shop.example{{p}}",
    "https://shop.example:{{p}}/",
    "{{p}}://shop.example/",
    "https://shop.example/{{p}}/{{p}}",
];

const VALUES: &[&str] = &[
    "evil.com",
    "@evil.com",
    "//evil.com",
    "\\\\evil.com",
    "/../..//evil.com",
    "%2F%2Fevil.com",
    ":8080",
    "javascript:alert(1)",
    "#x",
    "?x=1",
    "a b",
    "ｅｖｉｌ.com",
    "",
];

#[test]
fn fuzz_plan_fill() {
    static FILLED: Reached = Reached::new();
    let limits = PlanLimits::default();
    check!()
        .with_type::<(u8, u8, String)>()
        .for_each(|(step, value, text)| {
            let target = "https://shop.example/start";
            let step_url = pick(STEP_URLS, *step);
            let plan: StepPlan = match serde_json::from_value(serde_json::json!({
                "targetUrl": target,
                "steps": [{"type": "navigate", "url": step_url, "description": "Go", "timeoutMs": 100}],
                "verification": {"method": "dom_check", "selector": "h1"}
            })) {
                Ok(plan) => plan,
                Err(_) => return,
            };
            let value = format!("{}{}", pick(VALUES, *value), if text.len() % 2 == 0 { text.as_str() } else { "" });
            let inputs = BTreeMap::from([("p".to_owned(), SecretValue::new(value))]);
            let Ok(valid) = validate(&plan, &inputs, &limits) else {
                return;
            };
            // An accepted plan validates again after a round trip.
            let json = serde_json::to_value(valid.plan()).unwrap();
            let again: StepPlan = serde_json::from_value(json).unwrap();
            assert!(validate(&again, &inputs, &limits).is_ok());
            let Ok(steps) = valid.fill(&inputs) else { return };
            let origin = |u: &url::Url| (u.scheme().to_owned(), u.host_str().map(str::to_owned), u.port_or_known_default());
            // Where the step goes with an empty value: the value may change only the path,
            // the query or the fragment.
            let base = url::Url::parse(target).unwrap();
            let expected = base.join(&step_url.replace("{{p}}", "")).ok().map(|u| origin(&u));
            FILLED.hit();
            for filled in &steps {
                if let BrowserAction::Navigate { url } = &filled.action {
                    assert_eq!(
                        Some(origin(url)),
                        expected.clone(),
                        "a value moved the page: {target} → {url}"
                    );
                }
            }
            assert_eq!(origin(valid.target_url()), origin(&base));
        });
    FILLED.assert_reached("plan_fill");
}

#[test]
fn fuzz_list_cursors() {
    check!().for_each(|bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        // A cursor is read back as given, or refused as one no list gave.
        if let Ok(Some(cursor)) = abr_core::store::parse_cursor(Some(text)) {
            assert_eq!(cursor, text);
        }
    });
}
