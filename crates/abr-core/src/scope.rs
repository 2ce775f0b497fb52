//! Session scope: which cookies and which localStorage origins may enter or leave ABR.
//!
//! A platform declares a [`SessionScopeSpec`] (cookie domains and exact origins).
//! [`SessionScope::new`] validates and normalises it once; [`SessionScope::filter`] then
//! reduces an [`AgentSessionState`] to what lies inside the scope and reports, by count only,
//! what it dropped and why.
//!
//! The rules:
//!
//! - A cookie is kept when its domain, with Playwright's leading dot stripped and lowercased,
//!   equals an allowed domain or ends with `"." + allowed domain`. Allowed `localhost` and IP
//!   literals match exactly only. A cookie whose own domain is a public suffix (`com`, `co.uk`,
//!   `github.io`; ICANN or private section of the Public Suffix List) is always dropped.
//! - A localStorage origin is kept when it equals an allowed origin after normalisation
//!   (lowercase scheme and host, default port elided, no trailing slash).
//! - Top-level unknown fields of the state (`credentials`, ...) cannot be attributed to a
//!   domain and are dropped; `metadata` is kept.
//! - Nothing kept is ever rewritten: kept cookies and origins are exact clones of the input,
//!   so scope can never widen a cookie (a host-only cookie stays host-only).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use abr_protocol::{
    AgentSessionState, Cookie, DropReason, OriginState, ScopeReport, SessionScopeSpec,
};
use url::{Host, Url};

/// A validated session scope.
///
/// Holds the normalised allowed cookie domains (lowercase, ASCII/punycode, no leading dot,
/// IPv6 in brackets) and the normalised allowed origins (`scheme://host[:port]`), each sorted
/// and without duplicates, so two scopes allowing the same things compare equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionScope {
    cookie_domains: Vec<String>,
    origins: Vec<String>,
}

/// Why a scope was rejected by [`SessionScope::new`].
///
/// Messages name the offending entry (scope entries are configuration, not secrets) and say
/// what is allowed instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// `cookieDomains` is empty.
    #[error(
        "session scope has no cookie domains: list at least one domain such as \"example.com\", \
         \"localhost\" or an ip address"
    )]
    EmptyCookieDomains,
    /// A cookie domain or origin is empty, whitespace only, or only dots.
    #[error(
        "session scope has an empty entry: every cookie domain must be a domain such as \
         \"example.com\" and every origin an origin such as \"https://example.com\""
    )]
    EmptyEntry,
    /// A cookie domain has a URL scheme (`https://example.com`, `x:`).
    #[error(
        "cookie domain {entry:?} has a scheme: give a bare domain such as \"example.com\" \
         (schemes belong in origins)"
    )]
    HasScheme {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain has a path (`example.com/`).
    #[error("cookie domain {entry:?} has a path: give a bare domain such as \"example.com\"")]
    HasPath {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain has a port (`example.com:443`).
    #[error(
        "cookie domain {entry:?} has a port: cookies are not port-specific, give the bare host \
         such as \"example.com\""
    )]
    HasPort {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain has a wildcard (`*`, `*.example.com`).
    #[error(
        "cookie domain {entry:?} has a wildcard: give the domain itself, such as \
         \"example.com\", which already covers its subdomains"
    )]
    Wildcard {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain is a public suffix (`com`, `co.uk`, `github.io`).
    #[error(
        "cookie domain {entry:?} is a public suffix: give a registrable domain below it, such \
         as \"example.com\" or \"user.github.io\""
    )]
    PublicSuffix {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain is a single label other than `localhost` (`internal`, `zz`).
    #[error(
        "cookie domain {entry:?} is a bare top-level or single-label name: give a domain with \
         at least two labels such as \"example.com\", or \"localhost\" or an ip address"
    )]
    BareTld {
        /// The entry as given.
        entry: String,
    },
    /// A cookie domain is not a valid domain, `localhost` or IP literal.
    #[error(
        "cookie domain {entry:?} is invalid ({reason}): give a domain such as \"example.com\", \
         \"localhost\" or an ip address such as \"127.0.0.1\" or \"[::1]\""
    )]
    InvalidDomain {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An origin is not a bare http(s) origin.
    #[error(
        "origin {entry:?} is invalid ({reason}): give an http or https origin such as \
         \"https://app.example.com\" or \"http://localhost:3000\", without path, query, \
         fragment or userinfo"
    )]
    InvalidOrigin {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl SessionScope {
    /// Validates and normalises `spec`.
    ///
    /// Cookie domains: lowercased, one leading dot stripped, IDN converted to punycode, IPv6
    /// written as `[::1]`. Rejected: an empty list, empty entries, schemes, paths, ports,
    /// wildcards, public suffixes, single-label names other than `localhost`, trailing dots
    /// and anything `url::Host::parse` rejects. Origins: http(s) only, normalised to
    /// `scheme://host[:port]`; the list may be empty (all localStorage is then dropped).
    /// Duplicates are removed.
    pub fn new(spec: &SessionScopeSpec) -> Result<Self, ScopeError> {
        if spec.cookie_domains.is_empty() {
            return Err(ScopeError::EmptyCookieDomains);
        }
        let mut cookie_domains = spec
            .cookie_domains
            .iter()
            .map(|entry| normalize_domain_entry(entry))
            .collect::<Result<Vec<_>, _>>()?;
        cookie_domains.sort();
        cookie_domains.dedup();

        let mut origins = spec
            .origins
            .iter()
            .map(|entry| {
                if entry.trim().is_empty() {
                    return Err(ScopeError::EmptyEntry);
                }
                normalize_origin(entry).map_err(|reason| ScopeError::InvalidOrigin {
                    entry: entry.clone(),
                    reason: reason.to_owned(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        origins.sort();
        origins.dedup();

        Ok(Self {
            cookie_domains,
            origins,
        })
    }

    /// Filters a state. Never mutates or rewrites a kept item: kept cookies/origins are exact
    /// clones of input items, in input order.
    ///
    /// Top-level unknown fields (`state.extra`, e.g. `credentials`) are dropped, one
    /// [`DropReason::UnscopedField`] per key; `metadata` is kept as is. The report holds counts
    /// only, and only nonzero ones.
    pub fn filter(&self, state: &AgentSessionState) -> (AgentSessionState, ScopeReport) {
        let mut dropped: BTreeMap<DropReason, u32> = BTreeMap::new();
        let mut count_drop = |reason: DropReason| {
            let n = dropped.entry(reason).or_insert(0);
            *n = n.saturating_add(1);
        };

        let mut cookies: Vec<Cookie> = Vec::new();
        for cookie in &state.cookies {
            match self.cookie_verdict(cookie) {
                Ok(()) => cookies.push(cookie.clone()),
                Err(reason) => count_drop(reason),
            }
        }

        let mut origins: Vec<OriginState> = Vec::new();
        for origin in &state.origins {
            match self.origin_verdict(&origin.origin) {
                Ok(()) => origins.push(origin.clone()),
                Err(reason) => count_drop(reason),
            }
        }

        for _key in state.extra.keys() {
            count_drop(DropReason::UnscopedField);
        }

        let report = ScopeReport {
            kept_cookies: saturating_u32(cookies.len()),
            kept_origins: saturating_u32(origins.len()),
            dropped,
        };
        let filtered = AgentSessionState {
            cookies,
            origins,
            metadata: state.metadata.clone(),
            extra: serde_json::Map::new(),
        };
        (filtered, report)
    }

    /// Whether `cookie` may be kept, and if not, why.
    ///
    /// In order: a malformed domain gives [`DropReason::CookieInvalidDomain`], a public suffix
    /// [`DropReason::CookiePublicSuffix`] (even when it would otherwise match), a domain outside
    /// every allowed domain [`DropReason::CookieOutOfScope`].
    pub fn cookie_verdict(&self, cookie: &Cookie) -> Result<(), DropReason> {
        let domain = cookie_domain_key(&cookie.domain).ok_or(DropReason::CookieInvalidDomain)?;
        if !domain.starts_with('[') && is_public_suffix(&domain) {
            return Err(DropReason::CookiePublicSuffix);
        }
        if self
            .cookie_domains
            .iter()
            .any(|allowed| domain_matches(&domain, allowed))
        {
            Ok(())
        } else {
            Err(DropReason::CookieOutOfScope)
        }
    }

    /// Whether the localStorage of `origin` may be kept, and if not, why.
    ///
    /// Not a bare http(s) origin: [`DropReason::OriginInvalid`]; valid but not exactly one of
    /// the allowed origins after normalisation: [`DropReason::OriginOutOfScope`].
    pub fn origin_verdict(&self, origin: &str) -> Result<(), DropReason> {
        let normalized = normalize_origin(origin).map_err(|_| DropReason::OriginInvalid)?;
        if self.origins.binary_search(&normalized).is_ok() {
            Ok(())
        } else {
            Err(DropReason::OriginOutOfScope)
        }
    }

    /// The normalised allowed cookie domains, sorted and deduplicated.
    pub fn cookie_domains(&self) -> &[String] {
        &self.cookie_domains
    }

    /// The normalised allowed origins, sorted and deduplicated.
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    /// The normalised scope as a spec; `SessionScope::new(&scope.to_spec())` gives back an
    /// equal scope.
    pub fn to_spec(&self) -> SessionScopeSpec {
        SessionScopeSpec {
            cookie_domains: self.cookie_domains.clone(),
            origins: self.origins.clone(),
        }
    }
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether an allowed entry matches its exact host only (no subdomains): `localhost` and IP
/// literals.
fn is_exact_only(allowed: &str) -> bool {
    allowed == "localhost" || allowed.starts_with('[') || allowed.parse::<Ipv4Addr>().is_ok()
}

/// Whether a normalised cookie domain lies inside a normalised allowed domain.
fn domain_matches(domain: &str, allowed: &str) -> bool {
    domain == allowed
        || (!is_exact_only(allowed)
            && domain
                .strip_suffix(allowed)
                .is_some_and(|head| head.ends_with('.')))
}

/// Whether `domain` (lowercase ASCII) is itself a known public suffix, ICANN or private.
/// Suffixes only implied by the list's implicit `*` rule (unknown TLDs) are not.
fn is_public_suffix(domain: &str) -> bool {
    psl::suffix(domain.as_bytes())
        .is_some_and(|suffix| suffix.is_known() && suffix.as_bytes() == domain.as_bytes())
}

/// IPv6 as `url` serialises hosts: `[::1]`, never dotted IPv4-mapped notation.
fn ipv6_key(addr: Ipv6Addr) -> String {
    Host::<String>::Ipv6(addr).to_string()
}

/// The comparison key of a cookie's domain: one leading dot stripped, ASCII-lowercased,
/// IPv6 in brackets. `None` when the domain is empty or malformed: anything but dot-separated
/// non-empty labels of `a-z 0-9 - _`, or an IPv6 literal. Non-ASCII domains are malformed
/// (browsers store punycode).
fn cookie_domain_key(domain: &str) -> Option<String> {
    let host = domain.strip_prefix('.').unwrap_or(domain);
    if host.is_empty() {
        return None;
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?;
        return inner.parse::<Ipv6Addr>().ok().map(ipv6_key);
    }
    if host.contains(':') {
        return host.parse::<Ipv6Addr>().ok().map(ipv6_key);
    }
    let host = host.to_ascii_lowercase();
    let well_formed = host.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    });
    well_formed.then_some(host)
}

/// Validates one `cookieDomains` entry and returns its normalised form.
fn normalize_domain_entry(entry: &str) -> Result<String, ScopeError> {
    let invalid = |reason: &str| ScopeError::InvalidDomain {
        entry: entry.to_owned(),
        reason: reason.to_owned(),
    };
    if entry.chars().all(|c| c.is_whitespace() || c == '.') {
        return Err(ScopeError::EmptyEntry);
    }
    if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("contains whitespace or control characters"));
    }
    if entry.contains("://") {
        return Err(ScopeError::HasScheme {
            entry: entry.to_owned(),
        });
    }
    if entry.contains('/') || entry.contains('\\') {
        return Err(ScopeError::HasPath {
            entry: entry.to_owned(),
        });
    }
    if entry.contains('*') {
        return Err(ScopeError::Wildcard {
            entry: entry.to_owned(),
        });
    }
    if entry.contains('@') {
        return Err(invalid("contains userinfo '@'"));
    }
    if entry.contains('?') || entry.contains('#') {
        return Err(invalid("contains a query or fragment"));
    }
    if entry.contains('%') {
        return Err(invalid("contains percent-encoding"));
    }

    let host = entry.strip_prefix('.').unwrap_or(entry);
    if host.starts_with('.') {
        return Err(invalid("more than one leading dot"));
    }

    // IP literals: `[::1]`, `[::1]:443`, bare `::1`.
    if let Some(inner) = host.strip_prefix('[') {
        let Some((addr, rest)) = inner.split_once(']') else {
            return Err(invalid("unclosed '[' in ipv6 address"));
        };
        if rest.starts_with(':') {
            return Err(ScopeError::HasPort {
                entry: entry.to_owned(),
            });
        }
        if !rest.is_empty() {
            return Err(invalid("text after ipv6 address"));
        }
        return addr
            .parse::<Ipv6Addr>()
            .map(ipv6_key)
            .map_err(|_| invalid("not a valid ipv6 address"));
    }
    if host.contains(':') {
        if let Ok(addr) = host.parse::<Ipv6Addr>() {
            return Ok(ipv6_key(addr));
        }
        return match host.split_once(':') {
            Some((_, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
                Err(ScopeError::HasPort {
                    entry: entry.to_owned(),
                })
            }
            Some((_, rest)) if !rest.contains(':') => Err(ScopeError::HasScheme {
                entry: entry.to_owned(),
            }),
            _ => Err(invalid("not a valid ipv6 address")),
        };
    }

    if host.ends_with('.') {
        return Err(invalid("trailing dot"));
    }
    let parsed = Host::parse(host).map_err(|e| invalid(&e.to_string()))?;
    let domain = match parsed {
        Host::Ipv4(addr) => return Ok(addr.to_string()),
        Host::Ipv6(addr) => return Ok(ipv6_key(addr)),
        Host::Domain(domain) => domain,
    };
    // IDNA mapping can produce dots ("。") and drop ignored code points: check the result.
    if domain.is_empty() {
        return Err(ScopeError::EmptyEntry);
    }
    if domain.ends_with('.') {
        return Err(invalid("trailing dot"));
    }
    if domain.split('.').any(str::is_empty) {
        return Err(invalid("empty label"));
    }
    if is_public_suffix(&domain) {
        return Err(ScopeError::PublicSuffix {
            entry: entry.to_owned(),
        });
    }
    if !domain.contains('.') && domain != "localhost" {
        return Err(ScopeError::BareTld {
            entry: entry.to_owned(),
        });
    }
    Ok(domain)
}

/// Normalises a bare http(s) origin to `scheme://host[:port]` (lowercase, punycode, default
/// port elided), or says why it is not one.
fn normalize_origin(origin: &str) -> Result<String, &'static str> {
    if origin.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or control characters");
    }
    // `Url::parse` forgives a lot (`https:a.com`, `https:\\a.com`, `https://a.com/.`);
    // require the literal shape `scheme://authority[/]` first.
    let Some((_, after_scheme)) = origin.split_once("://") else {
        return Err("not of the form scheme://host");
    };
    let authority_end = after_scheme
        .find(['/', '?', '#', '\\'])
        .unwrap_or(after_scheme.len());
    let (_, tail) = after_scheme.split_at(authority_end);
    if tail.contains('?') {
        return Err("has a query");
    }
    if tail.contains('#') {
        return Err("has a fragment");
    }
    if !(tail.is_empty() || tail == "/") {
        return Err("has a path");
    }
    let url = Url::parse(origin).map_err(|_| "not a valid url")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("scheme is not http or https");
    }
    if url.host().is_none() {
        return Err("has no host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("has userinfo");
    }
    if url.path() != "/" {
        return Err("has a path");
    }
    if url.query().is_some() {
        return Err("has a query");
    }
    if url.fragment().is_some() {
        return Err("has a fragment");
    }
    Ok(url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use abr_protocol::{LocalStorageItem, SessionMetadata};
    use serde_json::{Map, Value, json};

    use super::*;

    fn spec(domains: &[&str], origins: &[&str]) -> SessionScopeSpec {
        SessionScopeSpec {
            cookie_domains: domains.iter().map(|s| (*s).to_owned()).collect(),
            origins: origins.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn scope(domains: &[&str], origins: &[&str]) -> SessionScope {
        SessionScope::new(&spec(domains, origins)).unwrap()
    }

    fn domain_error(entry: &str) -> ScopeError {
        SessionScope::new(&spec(&[entry], &[])).unwrap_err()
    }

    fn origin_error(entry: &str) -> ScopeError {
        SessionScope::new(&spec(&["example.com"], &[entry])).unwrap_err()
    }

    fn kind(e: &ScopeError) -> &'static str {
        match e {
            ScopeError::EmptyCookieDomains => "EmptyCookieDomains",
            ScopeError::EmptyEntry => "EmptyEntry",
            ScopeError::HasScheme { .. } => "HasScheme",
            ScopeError::HasPath { .. } => "HasPath",
            ScopeError::HasPort { .. } => "HasPort",
            ScopeError::Wildcard { .. } => "Wildcard",
            ScopeError::PublicSuffix { .. } => "PublicSuffix",
            ScopeError::BareTld { .. } => "BareTld",
            ScopeError::InvalidDomain { .. } => "InvalidDomain",
            ScopeError::InvalidOrigin { .. } => "InvalidOrigin",
        }
    }

    #[test]
    fn accepted_cookie_domains_are_normalized() {
        let cases = [
            ("example.com", "example.com"),
            (".example.com", "example.com"),
            ("EXAMPLE.com", "example.com"),
            ("Sub.Example.COM", "sub.example.com"),
            ("user.github.io", "user.github.io"),
            ("example.co.uk", "example.co.uk"),
            ("app.localhost", "app.localhost"),
            ("localhost", "localhost"),
            ("LOCALHOST", "localhost"),
            (".localhost", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("::1", "[::1]"),
            ("[::1]", "[::1]"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[::FFFF:1.2.3.4]", "[::ffff:102:304]"),
            ("::ffff:1.2.3.4", "[::ffff:102:304]"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("BÜCHER.example", "xn--bcher-kva.example"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            // Unknown TLD: only the implicit `*` rule applies, not a known public suffix.
            ("example.zz", "example.zz"),
        ];
        for (entry, normalized) in cases {
            let s = SessionScope::new(&spec(&[entry], &[]))
                .unwrap_or_else(|e| panic!("{entry:?} rejected: {e}"));
            assert_eq!(
                s.cookie_domains(),
                [normalized.to_owned()],
                "entry {entry:?}"
            );
        }
    }

    #[test]
    fn rejected_cookie_domains_name_the_rule() {
        let cases = [
            ("", "EmptyEntry"),
            ("   ", "EmptyEntry"),
            (".", "EmptyEntry"),
            ("..", "EmptyEntry"),
            ("com", "PublicSuffix"),
            (".com", "PublicSuffix"),
            ("COM", "PublicSuffix"),
            ("co.uk", "PublicSuffix"),
            ("github.io", "PublicSuffix"),
            ("s3.amazonaws.com", "PublicSuffix"),
            ("foo.ck", "PublicSuffix"),
            ("internal", "BareTld"),
            ("example", "BareTld"),
            ("zz", "BareTld"),
            (".internal", "BareTld"),
            ("example.com.", "InvalidDomain"),
            ("localhost.", "InvalidDomain"),
            ("example.com\u{3002}", "InvalidDomain"),
            ("..example.com", "InvalidDomain"),
            ("a..example.com", "InvalidDomain"),
            (" example.com", "InvalidDomain"),
            ("exa mple.com", "InvalidDomain"),
            ("example.com\t", "InvalidDomain"),
            ("user@example.com", "InvalidDomain"),
            ("example.com?x", "InvalidDomain"),
            ("ex%61mple.com", "InvalidDomain"),
            ("ex<ample.com", "InvalidDomain"),
            ("1.127.0.0.1", "InvalidDomain"),
            ("xn--zz.com", "InvalidDomain"),
            ("[::1", "InvalidDomain"),
            ("[::1]x", "InvalidDomain"),
            ("[example.com]", "InvalidDomain"),
            ("1:2:3", "InvalidDomain"),
            ("*", "Wildcard"),
            ("*.example.com", "Wildcard"),
            (".*.example.com", "Wildcard"),
            ("example.com:443", "HasPort"),
            ("localhost:3000", "HasPort"),
            ("127.0.0.1:8080", "HasPort"),
            ("[::1]:8080", "HasPort"),
            ("https://example.com", "HasScheme"),
            ("http://localhost", "HasScheme"),
            ("x:", "HasScheme"),
            ("https:example.com", "HasScheme"),
            ("example.com/", "HasPath"),
            ("example.com/path", "HasPath"),
            ("/", "HasPath"),
            ("example.com\\", "HasPath"),
        ];
        for (entry, expected) in cases {
            let err = domain_error(entry);
            assert_eq!(kind(&err), expected, "entry {entry:?}: {err}");
        }
    }

    #[test]
    fn one_bad_entry_rejects_the_whole_scope() {
        let err = SessionScope::new(&spec(&["example.com", "com"], &[])).unwrap_err();
        assert_eq!(
            err,
            ScopeError::PublicSuffix {
                entry: "com".to_owned()
            }
        );
        let err = SessionScope::new(&spec(&["example.com"], &["https://a.com", "ftp://a.com"]))
            .unwrap_err();
        assert_eq!(kind(&err), "InvalidOrigin");
    }

    #[test]
    fn empty_cookie_domain_list_is_rejected_but_empty_origins_are_fine() {
        assert_eq!(
            SessionScope::new(&spec(&[], &["https://a.com"])).unwrap_err(),
            ScopeError::EmptyCookieDomains
        );
        assert!(scope(&["example.com"], &[]).origins().is_empty());
    }

    #[test]
    fn error_messages_are_lowercase_and_name_the_entry() {
        let entries = [
            "com",
            "internal",
            "example.com.",
            "*",
            "example.com:443",
            "https://x",
            "x/",
        ];
        for entry in entries {
            let msg = domain_error(entry).to_string();
            assert!(msg.starts_with(|c: char| c.is_ascii_lowercase()), "{msg}");
            assert!(msg.contains(&format!("{entry:?}")), "{msg}");
            assert!(
                msg.contains("example.com"),
                "message says what is allowed: {msg}"
            );
        }
        let msg = origin_error("chrome-extension://abc").to_string();
        assert!(
            msg.starts_with("origin \"chrome-extension://abc\""),
            "{msg}"
        );
        assert!(msg.contains("http or https"), "{msg}");
        for err in [ScopeError::EmptyCookieDomains, ScopeError::EmptyEntry] {
            let msg = err.to_string();
            assert!(msg.starts_with(|c: char| c.is_ascii_lowercase()), "{msg}");
            assert!(msg.contains("example.com"), "{msg}");
        }
    }

    #[test]
    fn origins_are_validated_and_normalized() {
        let cases = [
            ("https://a.com", "https://a.com"),
            ("https://a.com/", "https://a.com"),
            ("HTTPS://A.COM", "https://a.com"),
            ("https://a.com:443", "https://a.com"),
            ("http://a.com:80/", "http://a.com"),
            ("https://a.com:80", "https://a.com:80"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("http://[::1]:3000/", "http://[::1]:3000"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("https://bücher.example", "https://xn--bcher-kva.example"),
        ];
        for (entry, normalized) in cases {
            let s = SessionScope::new(&spec(&["example.com"], &[entry]))
                .unwrap_or_else(|e| panic!("{entry:?} rejected: {e}"));
            assert_eq!(s.origins(), [normalized.to_owned()], "entry {entry:?}");
        }
        let rejected = [
            "chrome-extension://abcdef",
            "ftp://a.com",
            "file:///etc/passwd",
            "a.com",
            "https:a.com",
            "https:\\\\a.com",
            "null",
            "https://",
            "https://a.com/path",
            "https://a.com/.",
            "https://a.com//",
            "https://a.com?q=1",
            "https://a.com/?",
            "https://a.com#frag",
            "https://user@a.com",
            "https://user:pw@a.com",
            " https://a.com",
            "https://a.com:99999",
        ];
        for entry in rejected {
            assert_eq!(
                kind(&origin_error(entry)),
                "InvalidOrigin",
                "entry {entry:?}"
            );
        }
        assert_eq!(origin_error(""), ScopeError::EmptyEntry);
        assert_eq!(origin_error("  "), ScopeError::EmptyEntry);
    }

    #[test]
    fn duplicates_are_removed_and_to_spec_round_trips() {
        let s = scope(
            &[
                "EXAMPLE.com",
                ".example.com",
                "example.com",
                "::1",
                "[::1]",
                "b.example",
            ],
            &["https://a.com", "https://A.com:443/", "http://a.com"],
        );
        assert_eq!(s.cookie_domains(), ["[::1]", "b.example", "example.com"]);
        assert_eq!(s.origins(), ["http://a.com", "https://a.com"]);
        let spec = s.to_spec();
        assert_eq!(spec.cookie_domains, s.cookie_domains());
        assert_eq!(spec.origins, s.origins());
        assert_eq!(SessionScope::new(&spec).unwrap(), s);
        // Order and duplicates do not matter for equality.
        assert_eq!(
            scope(
                &["b.example", "example.com", "[::1]"],
                &["http://a.com", "https://a.com"]
            ),
            s
        );
    }

    fn cookie(domain: &str) -> Cookie {
        Cookie::new("n", "v", domain)
    }

    #[test]
    fn cookie_verdicts() {
        let s = scope(
            &[
                "example.com",
                "localhost",
                "127.0.0.1",
                "::1",
                "user.github.io",
                "bücher.example",
                "example.co.uk",
                "amazonaws.com",
                "example.zz",
            ],
            &[],
        );
        use DropReason::CookiePublicSuffix as Suffix;
        use DropReason::{CookieInvalidDomain as Invalid, CookieOutOfScope as Out};
        let cases: &[(&str, Result<(), DropReason>)] = &[
            ("example.com", Ok(())),
            (".example.com", Ok(())),
            ("sub.example.com", Ok(())),
            (".sub.example.com", Ok(())),
            ("a.b.sub.example.com", Ok(())),
            ("EXAMPLE.com", Ok(())),
            (".Sub.EXAMPLE.COM", Ok(())),
            ("notexample.com", Err(Out)),
            (".notexample.com", Err(Out)),
            ("example.com.evil.com", Err(Out)),
            ("example.comm", Err(Out)),
            ("xample.com", Err(Out)),
            ("evil.com", Err(Out)),
            ("com", Err(Suffix)),
            (".com", Err(Suffix)),
            ("COM", Err(Suffix)),
            ("co.uk", Err(Suffix)),
            (".co.uk", Err(Suffix)),
            ("example.co.uk", Ok(())),
            ("www.example.co.uk", Ok(())),
            ("other.co.uk", Err(Out)),
            ("github.io", Err(Suffix)),
            (".github.io", Err(Suffix)),
            ("user.github.io", Ok(())),
            (".user.github.io", Ok(())),
            ("other.github.io", Err(Out)),
            // In scope by suffix match, but a public suffix itself: still dropped.
            ("s3.amazonaws.com", Err(Suffix)),
            (".s3.amazonaws.com", Err(Suffix)),
            ("bucket.s3.amazonaws.com", Ok(())),
            // Unknown TLD: not a known public suffix, so out of scope rather than suffix.
            ("zz", Err(Out)),
            ("example.zz", Ok(())),
            ("localhost", Ok(())),
            (".localhost", Ok(())),
            ("LOCALHOST", Ok(())),
            ("app.localhost", Err(Out)),
            (".app.localhost", Err(Out)),
            ("127.0.0.1", Ok(())),
            ("1.127.0.0.1", Err(Out)),
            ("127.0.0.2", Err(Out)),
            ("127.1", Err(Out)),
            ("[::1]", Ok(())),
            ("::1", Ok(())),
            ("[0::1]", Ok(())),
            ("[::2]", Err(Out)),
            ("xn--bcher-kva.example", Ok(())),
            (".www.xn--bcher-kva.example", Ok(())),
            ("XN--BCHER-KVA.example", Ok(())),
            ("bücher.example", Err(Invalid)),
            ("", Err(Invalid)),
            (".", Err(Invalid)),
            ("..", Err(Invalid)),
            ("..example.com", Err(Invalid)),
            ("a..example.com", Err(Invalid)),
            ("example.com.", Err(Invalid)),
            (" example.com", Err(Invalid)),
            ("exa mple.com", Err(Invalid)),
            ("example.com/", Err(Invalid)),
            ("https://example.com", Err(Invalid)),
            ("example.com:443", Err(Invalid)),
            ("*.example.com", Err(Invalid)),
            ("[::1", Err(Invalid)),
            ("[example.com]", Err(Invalid)),
        ];
        for (domain, expected) in cases {
            assert_eq!(
                s.cookie_verdict(&cookie(domain)),
                *expected,
                "cookie domain {domain:?}"
            );
        }
    }

    #[test]
    fn subdomain_entry_does_not_reach_its_parent() {
        let s = scope(&["app.example.com"], &[]);
        assert_eq!(s.cookie_verdict(&cookie("app.example.com")), Ok(()));
        assert_eq!(s.cookie_verdict(&cookie(".x.app.example.com")), Ok(()));
        assert_eq!(
            s.cookie_verdict(&cookie("example.com")),
            Err(DropReason::CookieOutOfScope)
        );
        assert_eq!(
            s.cookie_verdict(&cookie(".example.com")),
            Err(DropReason::CookieOutOfScope)
        );
        assert_eq!(
            s.cookie_verdict(&cookie("other.example.com")),
            Err(DropReason::CookieOutOfScope)
        );
    }

    #[test]
    fn origin_verdicts() {
        let s = scope(
            &["example.com"],
            &[
                "https://a.com",
                "http://b.com",
                "https://c.com:8443",
                "HTTPS://D.COM/",
                "http://[::1]:3000",
            ],
        );
        use DropReason::{OriginInvalid as Invalid, OriginOutOfScope as Out};
        let cases: &[(&str, Result<(), DropReason>)] = &[
            ("https://a.com", Ok(())),
            ("https://a.com/", Ok(())),
            ("HTTPS://A.COM", Ok(())),
            ("https://a.com:443", Ok(())),
            ("http://a.com", Err(Out)),
            ("https://sub.a.com", Err(Out)),
            ("https://a.com:444", Err(Out)),
            ("https://a.com:80", Err(Out)),
            ("http://b.com", Ok(())),
            ("http://b.com:80", Ok(())),
            ("https://b.com", Err(Out)),
            ("https://c.com:8443", Ok(())),
            ("https://c.com", Err(Out)),
            ("https://d.com", Ok(())),
            ("http://[::1]:3000", Ok(())),
            ("http://[0:0::1]:3000/", Ok(())),
            ("http://[::1]", Err(Out)),
            ("http://localhost:3000", Err(Out)),
            ("chrome-extension://abcdef", Err(Invalid)),
            ("ftp://a.com", Err(Invalid)),
            ("file:///", Err(Invalid)),
            ("null", Err(Invalid)),
            ("", Err(Invalid)),
            ("a.com", Err(Invalid)),
            ("https:a.com", Err(Invalid)),
            ("https://a.com/path", Err(Invalid)),
            ("https://a.com?q", Err(Invalid)),
            ("https://a.com#f", Err(Invalid)),
            ("https://u:p@a.com", Err(Invalid)),
            ("https://a.com ", Err(Invalid)),
        ];
        for (origin, expected) in cases {
            assert_eq!(s.origin_verdict(origin), *expected, "origin {origin:?}");
        }
    }

    fn state() -> AgentSessionState {
        let mut sid = Cookie::new("sid", "secret-sid", ".example.com");
        sid.extra
            .insert("_crHasCrossSiteAncestor".to_owned(), Value::Bool(false));
        sid.partition_key = Some("https://example.com".to_owned());
        let mut indexed = Map::new();
        indexed.insert(
            "indexedDB".to_owned(),
            json!([{"name": "db", "version": 1}]),
        );
        let mut extra = Map::new();
        extra.insert(
            "credentials".to_owned(),
            json!([{"privateKey": "passkey-secret"}]),
        );
        extra.insert("somethingNew".to_owned(), json!(1));
        AgentSessionState {
            cookies: vec![
                sid,
                Cookie::new("host", "v1", "app.EXAMPLE.com"),
                Cookie::new("tracker", "v2", ".evil.com"),
                Cookie::new("super", "v3", ".com"),
                Cookie::new("bad", "v4", ""),
                Cookie::new("bare", "v5", "example.com"),
                Cookie::new("evil2", "v6", "example.com.evil.com"),
            ],
            origins: vec![
                OriginState {
                    origin: "HTTPS://App.Example.com:443/".to_owned(),
                    local_storage: vec![LocalStorageItem::new("token", "ls-secret")],
                    extra: indexed,
                },
                OriginState::new("https://evil.com", vec![LocalStorageItem::new("k", "v")]),
                OriginState::new("chrome-extension://abc", vec![]),
            ],
            metadata: Some(SessionMetadata::new(
                "demo",
                time::OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
            )),
            extra,
        }
    }

    #[test]
    fn filter_keeps_exact_clones_and_reports_counts() {
        let s = scope(&["example.com"], &["https://app.example.com"]);
        let input = state();
        let (out, report) = s.filter(&input);

        assert_eq!(
            out.cookies,
            vec![
                input.cookies[0].clone(),
                input.cookies[1].clone(),
                input.cookies[5].clone()
            ]
        );
        // Leading dot never added or removed, case never changed.
        let domains: Vec<&str> = out.cookies.iter().map(|c| c.domain.as_str()).collect();
        assert_eq!(domains, [".example.com", "app.EXAMPLE.com", "example.com"]);
        assert!(!out.cookies[1].is_domain_cookie());
        assert!(!out.cookies[2].is_domain_cookie());
        assert_eq!(
            out.cookies[0].extra.get("_crHasCrossSiteAncestor"),
            Some(&Value::Bool(false))
        );

        assert_eq!(out.origins, vec![input.origins[0].clone()]);
        assert_eq!(
            out.origins[0].origin, "HTTPS://App.Example.com:443/",
            "origin not rewritten"
        );
        assert!(out.origins[0].extra.contains_key("indexedDB"));

        assert!(
            out.extra.is_empty(),
            "unscoped top-level fields are dropped"
        );
        assert_eq!(out.metadata, input.metadata);

        assert_eq!(report.kept_cookies, 3);
        assert_eq!(report.kept_origins, 1);
        let expected: BTreeMap<DropReason, u32> = [
            (DropReason::CookieOutOfScope, 2),
            (DropReason::CookiePublicSuffix, 1),
            (DropReason::CookieInvalidDomain, 1),
            (DropReason::OriginOutOfScope, 1),
            (DropReason::OriginInvalid, 1),
            (DropReason::UnscopedField, 2),
        ]
        .into_iter()
        .collect();
        assert_eq!(report.dropped, expected);
        assert_eq!(report.dropped_total(), 8);
    }

    #[test]
    fn report_has_only_nonzero_counts_and_no_names_or_values() {
        let s = scope(&["example.com"], &[]);
        let mut input = state();
        input.extra.clear();
        input.origins.clear();
        let (_, report) = s.filter(&input);
        assert!(report.dropped.values().all(|&n| n > 0));
        assert!(!report.dropped.contains_key(&DropReason::UnscopedField));
        assert!(!report.dropped.contains_key(&DropReason::OriginInvalid));
        let json = serde_json::to_string(&report).unwrap();
        for needle in [
            "sid",
            "secret",
            "tracker",
            "evil",
            "example",
            "token",
            "credentials",
        ] {
            assert!(!json.contains(needle), "{needle} leaked into {json}");
        }

        let (_, clean) = s.filter(&AgentSessionState::default());
        assert!(clean.dropped.is_empty());
        assert_eq!((clean.kept_cookies, clean.kept_origins), (0, 0));
    }

    #[test]
    fn empty_origin_list_drops_all_local_storage() {
        let s = scope(&["example.com"], &[]);
        let (out, report) = s.filter(&state());
        assert!(out.origins.is_empty());
        assert_eq!(report.kept_origins, 0);
        assert_eq!(report.dropped_for(DropReason::OriginOutOfScope), 2);
        assert_eq!(report.dropped_for(DropReason::OriginInvalid), 1);
    }

    #[test]
    fn filter_is_idempotent_on_the_fixture() {
        let s = scope(&["example.com"], &["https://app.example.com"]);
        let (once, _) = s.filter(&state());
        let (twice, report) = s.filter(&once);
        assert_eq!(twice, once);
        assert_eq!(report.dropped_total(), 0);
        assert_eq!(report.kept_cookies, 3);
    }

    #[test]
    fn ip_and_localhost_scopes_filter_exactly() {
        let s = scope(
            &["localhost", "127.0.0.1", "[::1]"],
            &["http://localhost:3000"],
        );
        let input = AgentSessionState {
            cookies: [
                "localhost",
                "app.localhost",
                "127.0.0.1",
                "1.127.0.0.1",
                "[::1]",
                "::1",
            ]
            .into_iter()
            .map(cookie)
            .collect(),
            origins: vec![
                OriginState::new("http://localhost:3000", vec![]),
                OriginState::new("http://app.localhost:3000", vec![]),
            ],
            ..AgentSessionState::default()
        };
        let (out, report) = s.filter(&input);
        let kept: Vec<&str> = out.cookies.iter().map(|c| c.domain.as_str()).collect();
        assert_eq!(kept, ["localhost", "127.0.0.1", "[::1]", "::1"]);
        assert_eq!(out.origins.len(), 1);
        assert_eq!(report.dropped_for(DropReason::CookieOutOfScope), 2);
        assert_eq!(report.dropped_for(DropReason::OriginOutOfScope), 1);
    }
}

#[cfg(test)]
mod props {
    use abr_protocol::LocalStorageItem;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    use super::*;

    const LABELS: &[&str] = &[
        "example",
        "com",
        "co",
        "uk",
        "github",
        "io",
        "app",
        "evil",
        "localhost",
        "127.0.0.1",
    ];

    fn random_case(s: String, flips: Vec<bool>) -> String {
        s.chars()
            .zip(flips.into_iter().chain(std::iter::repeat(false)))
            .map(|(c, up)| if up { c.to_ascii_uppercase() } else { c })
            .collect()
    }

    /// A domain of 1 to 4 labels, optional leading dot, random case; sometimes junk.
    fn cookie_domain() -> impl Strategy<Value = String> {
        let clean = (
            prop::collection::vec(prop::sample::select(LABELS), 1..=4),
            any::<bool>(),
            prop::collection::vec(any::<bool>(), 0..40),
        )
            .prop_map(|(labels, dot, flips)| {
                let d = labels.join(".");
                let d = if dot { format!(".{d}") } else { d };
                random_case(d, flips)
            });
        let junk = prop::sample::select(vec![
            "",
            ".",
            "..",
            "a..com",
            "example.com.",
            "exa mple.com",
            "example.com:443",
            "https://example.com",
            "example.com/",
            "*.example.com",
            "[::1]",
            "::1",
            "bücher.io",
        ])
        .prop_map(str::to_owned);
        prop_oneof![8 => clean, 1 => junk]
    }

    fn origin() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec!["http", "https", "HTTPS", "chrome-extension", "ftp"]),
            prop::collection::vec(prop::sample::select(LABELS), 1..=3),
            prop::sample::select(vec!["", ":80", ":443", ":8080"]),
            prop::sample::select(vec!["", "", "/", "/path", "?q", "#f"]),
            prop::collection::vec(any::<bool>(), 0..30),
        )
            .prop_map(|(scheme, labels, port, tail, flips)| {
                let host = random_case(labels.join("."), flips);
                format!("{scheme}://{host}{port}{tail}")
            })
    }

    fn extra() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::btree_map(
            prop::sample::select(vec![
                "credentials",
                "somethingNew",
                "_crHasCrossSiteAncestor",
            ]),
            any::<i64>(),
            0..3,
        )
        .prop_map(|m| {
            m.into_iter()
                .map(|(k, v)| (k.to_owned(), Value::from(v)))
                .collect()
        })
    }

    fn state() -> impl Strategy<Value = AgentSessionState> {
        (
            prop::collection::vec((cookie_domain(), extra()), 0..12),
            prop::collection::vec((origin(), extra()), 0..6),
            extra(),
        )
            .prop_map(|(cookies, origins, extra)| AgentSessionState {
                cookies: cookies
                    .into_iter()
                    .enumerate()
                    .map(|(i, (domain, extra))| {
                        let mut c = Cookie::new(format!("c{i}"), format!("v{i}"), domain);
                        c.extra = extra;
                        c
                    })
                    .collect(),
                origins: origins
                    .into_iter()
                    .map(|(origin, extra)| OriginState {
                        origin,
                        local_storage: vec![LocalStorageItem::new("k", "v")],
                        extra,
                    })
                    .collect(),
                metadata: None,
                extra,
            })
    }

    /// A valid scope built from random candidates; invalid candidates are skipped.
    fn session_scope() -> impl Strategy<Value = SessionScope> {
        (
            prop::collection::vec(cookie_domain(), 1..5),
            prop::collection::vec(origin(), 0..4),
        )
            .prop_map(|(domains, origins)| {
                let domains: Vec<String> = domains
                    .into_iter()
                    .filter(|d| {
                        SessionScope::new(&SessionScopeSpec {
                            cookie_domains: vec![d.clone()],
                            origins: vec![],
                        })
                        .is_ok()
                    })
                    .collect();
                let domains = if domains.is_empty() {
                    vec!["example.com".to_owned()]
                } else {
                    domains
                };
                let origins: Vec<String> = origins
                    .into_iter()
                    .filter(|o| {
                        SessionScope::new(&SessionScopeSpec {
                            cookie_domains: vec!["example.com".to_owned()],
                            origins: vec![o.clone()],
                        })
                        .is_ok()
                    })
                    .collect();
                SessionScope::new(&SessionScopeSpec {
                    cookie_domains: domains,
                    origins,
                })
                .unwrap()
            })
    }

    /// The cookie rule, computed independently of the module's helpers.
    fn rule_allows(allowed: &[String], domain: &str) -> bool {
        let mut d = domain
            .strip_prefix('.')
            .unwrap_or(domain)
            .to_ascii_lowercase();
        // IPv6 compares in url's bracketed form, whether the cookie has brackets or not.
        if d.contains(':') {
            let bracketed = if d.starts_with('[') {
                d.clone()
            } else {
                format!("[{d}]")
            };
            match Host::parse(&bracketed) {
                Ok(host @ Host::Ipv6(_)) => d = host.to_string(),
                _ => return false,
            }
        }
        let suffix = psl::suffix(d.as_bytes());
        if suffix.is_some_and(|s| s.is_known() && s.as_bytes() == d.as_bytes()) {
            return false;
        }
        allowed.iter().any(|a| {
            let exact_only = a == "localhost"
                || a.starts_with('[')
                || a.split('.').all(|l| l.parse::<u8>().is_ok());
            d == *a || (!exact_only && d.ends_with(&format!(".{a}")))
        })
    }

    fn plain_domain(domain: &str) -> bool {
        let d = domain.strip_prefix('.').unwrap_or(domain);
        d.split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn filter_properties(s in session_scope(), input in state()) {
            let (out, report) = s.filter(&input);

            // Kept cookies are a subsequence of the input, item for item identical.
            let mut rest = input.cookies.iter();
            for kept in &out.cookies {
                let same = rest.by_ref().find(|c| *c == kept);
                prop_assert!(same.is_some(), "kept cookie {kept:?} not in input order");
                if let Some(orig) = same {
                    prop_assert_eq!(orig.domain.as_bytes(), kept.domain.as_bytes());
                    prop_assert_eq!(&orig.extra, &kept.extra);
                }
                prop_assert!(rule_allows(s.cookie_domains(), &kept.domain), "{kept:?}");
            }
            // Completeness: a well-formed cookie the rule allows is kept.
            for c in &input.cookies {
                if plain_domain(&c.domain) && rule_allows(s.cookie_domains(), &c.domain) {
                    prop_assert!(out.cookies.contains(c), "{c:?} wrongly dropped");
                }
            }

            // Kept origins: a subsequence of the input, each allowed after normalisation.
            let mut rest = input.origins.iter();
            for kept in &out.origins {
                prop_assert!(rest.by_ref().any(|o| o == kept));
                let url = Url::parse(&kept.origin).unwrap();
                prop_assert!(s.origins().contains(&url.origin().ascii_serialization()));
            }

            // Counts add up.
            let dropped_cookies = report.dropped_for(DropReason::CookieOutOfScope)
                + report.dropped_for(DropReason::CookiePublicSuffix)
                + report.dropped_for(DropReason::CookieInvalidDomain);
            prop_assert_eq!(report.kept_cookies as usize, out.cookies.len());
            prop_assert_eq!(report.kept_cookies + dropped_cookies, input.cookies.len() as u32);
            let dropped_origins = report.dropped_for(DropReason::OriginOutOfScope)
                + report.dropped_for(DropReason::OriginInvalid);
            prop_assert_eq!(report.kept_origins + dropped_origins, input.origins.len() as u32);
            prop_assert_eq!(report.dropped_for(DropReason::UnscopedField), input.extra.len() as u32);
            prop_assert!(report.dropped.values().all(|&n| n > 0));
            prop_assert!(out.extra.is_empty());

            // Idempotent.
            let (again, report2) = s.filter(&out);
            prop_assert_eq!(&again, &out);
            prop_assert_eq!(report2.dropped_total(), 0);
            prop_assert_eq!(report2.kept_cookies, report.kept_cookies);
        }

        #[test]
        fn scope_round_trips_through_spec(s in session_scope()) {
            prop_assert_eq!(SessionScope::new(&s.to_spec()).unwrap(), s);
        }

        #[test]
        fn scope_validation_never_panics(entry in "\\PC{0,20}", origin in "\\PC{0,30}") {
            let spec = SessionScopeSpec { cookie_domains: vec![entry], origins: vec![origin] };
            if let Ok(s) = SessionScope::new(&spec) {
                prop_assert_eq!(SessionScope::new(&s.to_spec()).unwrap(), s);
            }
        }
    }
}
