//! Site policy: a tenant's allow and deny lists, and the consent a run asks for when it
//! reaches a site nobody decided on.

use std::collections::BTreeMap;

use abr_protocol::{SiteDecision, SiteEntry};
use async_trait::async_trait;

use crate::error::CoreError;

/// What the policy says about a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SiteVerdict {
    /// Allowed (listed, or named by the run's approved plan or platform).
    Allowed,
    /// Denied: never opened.
    Denied,
    /// Nobody decided: the run pauses with `consent_required` (or stops, without pauses).
    Unknown,
}

/// A normalized site name: lower-case, no trailing dot, at most 253 bytes, letters, digits,
/// `-`, `.`, or an IP address. An entry covers its subdomains.
///
/// # Errors
/// [`CoreError::InvalidInput`] naming the problem (never echoing more than the field).
pub fn site_name(raw: &str) -> Result<String, CoreError> {
    let name = raw.trim().trim_end_matches('.').to_ascii_lowercase();
    let ok = !name.is_empty()
        && name.len() <= 253
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if ok {
        Ok(name)
    } else {
        Err(CoreError::InvalidInput(
            "domain: a site is a host name or an IPv4 address (letters, digits, `-` and `.`, \
             no scheme, port or path)"
                .into(),
        ))
    }
}

fn covers(entry: &str, host: &str) -> bool {
    host == entry
        || host
            .strip_suffix(entry)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// A tenant's lists plus the sites a run brings with it (its approved plan's hosts, its
/// platform's), decided in that order: a deny entry wins over everything; then any allow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SitePolicy {
    entries: BTreeMap<String, SiteDecision>,
    run_sites: Vec<String>,
    /// No site policy at all (an embedding without a site store): everything is allowed.
    open: bool,
}

impl SitePolicy {
    /// The policy of these tenant entries.
    pub fn new(entries: impl IntoIterator<Item = (String, SiteDecision)>) -> Self {
        Self {
            entries: entries.into_iter().collect(),
            run_sites: Vec::new(),
            open: false,
        }
    }

    /// No policy: every site is allowed.
    pub fn open() -> Self {
        Self {
            open: true,
            ..Self::default()
        }
    }

    /// Replaces the tenant entries (read again after a decision), keeping the run's sites.
    pub fn set_entries(&mut self, entries: impl IntoIterator<Item = (String, SiteDecision)>) {
        self.entries = entries.into_iter().collect();
    }

    /// Adds a site the run is allowed by its own definition (the approved plan's hosts).
    #[must_use]
    pub fn with_run_site(mut self, host: &str) -> Self {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if !self.run_sites.contains(&host) {
            self.run_sites.push(host);
        }
        self
    }

    /// Whether the tenant decided on any site.
    pub fn has_entries(&self) -> bool {
        !self.entries.is_empty()
    }

    /// Whether the tenant has an allow list (then nothing else is ever asked about).
    pub fn has_allow_list(&self) -> bool {
        self.entries.values().any(|d| *d == SiteDecision::Allow)
    }

    /// What the policy says about `host`.
    pub fn verdict(&self, host: &str) -> SiteVerdict {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let listed = |decision| {
            self.entries
                .iter()
                .any(|(entry, d)| *d == decision && covers(entry, &host))
        };
        if self.open {
            SiteVerdict::Allowed
        } else if listed(SiteDecision::Deny) {
            SiteVerdict::Denied
        } else if listed(SiteDecision::Allow) || self.run_sites.iter().any(|s| covers(s, &host)) {
            SiteVerdict::Allowed
        } else if self.has_allow_list() {
            SiteVerdict::Denied
        } else {
            SiteVerdict::Unknown
        }
    }
}

/// A tenant's durable site decisions.
///
/// # Contract
/// - Decisions are per tenant: another tenant's entries are never read or changed.
/// - `decide` replaces the entry for the same domain; `remove` answers whether one existed.
/// - A decision written survives a restart (and, for the SQLite store, a kill -9).
#[async_trait]
pub trait SiteStore: Send + Sync + 'static {
    /// The tenant's entries, sorted by domain.
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError>;
    /// Stores a decision.
    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError>;
    /// Deletes the entry for `domain`.
    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_cover_their_subdomains_and_nothing_that_merely_ends_alike() {
        let policy = SitePolicy::new([
            ("example.com".to_owned(), SiteDecision::Deny),
            ("news.org".to_owned(), SiteDecision::Allow),
        ]);
        assert_eq!(policy.verdict("example.com"), SiteVerdict::Denied);
        assert_eq!(policy.verdict("a.b.example.com"), SiteVerdict::Denied);
        assert_eq!(policy.verdict("www.news.org"), SiteVerdict::Allowed);
        assert_eq!(
            policy.verdict("notnews.org"),
            SiteVerdict::Denied,
            "allow list present"
        );
        let open = SitePolicy::new([("example.com".to_owned(), SiteDecision::Deny)]);
        assert_eq!(open.verdict("badexample.com"), SiteVerdict::Unknown);
        assert_eq!(open.verdict("other.net"), SiteVerdict::Unknown);
        let run = open.with_run_site("app.other.net");
        assert_eq!(run.verdict("app.other.net"), SiteVerdict::Allowed);
        assert_eq!(run.verdict("other.net"), SiteVerdict::Unknown);
    }

    #[test]
    fn deny_wins_over_the_runs_own_sites() {
        let policy = SitePolicy::new([("evil.com".to_owned(), SiteDecision::Deny)])
            .with_run_site("www.evil.com");
        assert_eq!(policy.verdict("www.evil.com"), SiteVerdict::Denied);
    }

    #[test]
    fn site_names_are_validated() {
        assert_eq!(
            site_name(" Example.COM. ").ok().as_deref(),
            Some("example.com")
        );
        for bad in [
            "",
            "https://x.com",
            "x.com/path",
            "x.com:443",
            "a..b",
            ".x.com",
            "*.x.com",
        ] {
            assert!(site_name(bad).is_err(), "{bad}");
        }
    }
}
