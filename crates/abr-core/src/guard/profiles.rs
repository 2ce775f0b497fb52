//! Named browser profiles: the name a run asks for, the folder it lives in, the owner's
//! consent, and the sign-in check before a committing press.
//!
//! A profile belongs to one tenant: its folder is under the tenant's own (the tenant's id
//! hex-encoded), so two tenants naming the same profile never share a browser's state. What
//! is recorded of a sign-in is each session cookie's name, domain and expiry, never a value.

use abr_protocol::{CookieFact, ProfileEntry, ProfileSignIn, SiteDecision};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreError;

/// The longest profile name.
pub const MAX_PROFILE_NAME: usize = 64;

/// A profile name: 1 to 64 of lower-case letters, digits, `-` and `_`, starting with a
/// letter or digit (it is a folder's name on the runner's disk).
///
/// # Errors
/// [`CoreError::InvalidInput`] naming the rule (never echoing the value).
pub fn profile_name(raw: &str) -> Result<&str, CoreError> {
    let ok = !raw.is_empty()
        && raw.len() <= MAX_PROFILE_NAME
        && raw.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && raw
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(raw)
    } else {
        Err(CoreError::InvalidInput(format!(
            "profile: 1 to {MAX_PROFILE_NAME} lower-case letters, digits, `-` or `_`, starting \
             with a letter or a digit"
        )))
    }
}

/// The folder of `tenant`'s profile `name`, relative to the runner's profile folder:
/// `t<hex of the tenant id>/<name>`. Injective: another tenant, or another name, is another
/// folder; nothing in it can climb out (`name` is checked by [`profile_name`]).
///
/// # Errors
/// [`CoreError::InvalidInput`] for a name [`profile_name`] refuses.
pub fn profile_folder(tenant: &str, name: &str) -> Result<String, CoreError> {
    let name = profile_name(name)?;
    let hex: String = tenant.bytes().map(|b| format!("{b:02x}")).collect();
    Ok(format!("t{hex}/{name}"))
}

/// The site a sign-in is recorded for: the registrable domain of `host` (or the host when
/// it has none: an IP address, `localhost`).
pub fn sign_in_site(host: &str) -> String {
    super::network::site_of(host)
}

/// Why a committing press must wait for a person to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedOut {
    /// No sign-in to the site was ever recorded on the profile.
    Never,
    /// The recorded session cookie `name` expired.
    Expired(String),
    /// The recorded session cookie `name` is no longer in the profile (the site or the
    /// browser removed it).
    Gone(String),
}

impl std::fmt::Display for SignedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Never => f.write_str("the profile was never signed in to this site"),
            Self::Expired(name) => write!(f, "the profile's session cookie `{name}` expired"),
            Self::Gone(name) => write!(f, "the profile's session cookie `{name}` is gone"),
        }
    }
}

/// The sign-in check before a committing press on a profile: `record` is what was recorded
/// of the profile's sign-in to the site, `jar` the profile's cookies for the site now (names
/// and expiry, as [`CookieFact`]s), `now` Unix seconds. Signed in only when a sign-in was
/// recorded and every recorded cookie is still in the jar and unexpired, by both its
/// recorded expiry and the jar's.
///
/// # Errors
/// [`SignedOut`] naming why.
pub fn check_sign_in(
    record: Option<&ProfileSignIn>,
    jar: &[CookieFact],
    now: f64,
) -> Result<(), SignedOut> {
    let Some(record) = record.filter(|r| !r.cookies.is_empty()) else {
        return Err(SignedOut::Never);
    };
    for recorded in &record.cookies {
        if recorded.expires.is_some_and(|e| e <= now) {
            return Err(SignedOut::Expired(recorded.name.clone()));
        }
        let live = jar.iter().find(|c| {
            c.name == recorded.name
                && c.domain.trim_start_matches('.') == recorded.domain.trim_start_matches('.')
        });
        match live {
            None => return Err(SignedOut::Gone(recorded.name.clone())),
            Some(c) if c.expires.is_some_and(|e| e <= now) => {
                return Err(SignedOut::Expired(recorded.name.clone()));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// What a person's sign-in set: the unexpired cookies of `after` that were not in `before`
/// by name and domain, or whose expiry or value fingerprint changed (`fingerprint` is
/// compared in memory only, never kept). When nothing changed (the profile was signed in
/// before anything was recorded, and the person vouched for it by resuming), every
/// unexpired cookie of `after` that outlives the browser (it has an expiry).
pub fn signed_in_cookies(
    before: &[(CookieFact, u64)],
    after: &[(CookieFact, u64)],
    now: f64,
) -> Vec<CookieFact> {
    let live = |c: &CookieFact| !c.expires.is_some_and(|e| e <= now);
    let changed: Vec<CookieFact> = after
        .iter()
        .filter(|(c, _)| live(c))
        .filter(|(c, print)| {
            !before.iter().any(|(b, before_print)| {
                b.name == c.name && b.domain == c.domain && before_print == print
            })
        })
        .map(|(c, _)| c.clone())
        .collect();
    if !changed.is_empty() {
        return changed;
    }
    after
        .iter()
        .filter(|(c, _)| live(c) && c.expires.is_some())
        .map(|(c, _)| c.clone())
        .collect()
}

/// The recorded sign-in with each cookie's expiry refreshed from `jar` (a site extends a
/// session as it is used). `None` when nothing changed.
pub fn refreshed_sign_in(
    record: &ProfileSignIn,
    jar: &[CookieFact],
    at: OffsetDateTime,
) -> Option<ProfileSignIn> {
    let mut changed = false;
    let cookies = record
        .cookies
        .iter()
        .map(|recorded| {
            let now = jar
                .iter()
                .find(|c| c.name == recorded.name && c.domain == recorded.domain);
            match now {
                Some(c) if c.expires != recorded.expires => {
                    changed = true;
                    CookieFact {
                        expires: c.expires,
                        expired: false,
                        ..recorded.clone()
                    }
                }
                _ => recorded.clone(),
            }
        })
        .collect();
    changed.then(|| ProfileSignIn {
        site: record.site.clone(),
        cookies,
        recorded_at: at,
    })
}

/// A tenant's named profiles: the owner's consent to each, and what is recorded of its
/// sign-ins.
///
/// # Contract
/// - Per tenant: another tenant's profiles are never read or changed.
/// - `ask` records the first request to use a profile once: it answers `true` only for the
///   call that recorded it, `false` when it was asked or decided before.
/// - `decide` sets the decision (replacing an earlier one), keeping the sign-ins.
/// - `record_sign_in` replaces the sign-in of the same site, keeping the others and the
///   consent; it never creates a decision.
/// - What is written survives a restart (for the SQLite store, a kill -9).
#[async_trait]
pub trait ProfileStore: Send + Sync + 'static {
    /// The tenant's profiles, sorted by name.
    async fn profiles(&self, tenant: &str) -> Result<Vec<ProfileEntry>, CoreError>;
    /// One profile of the tenant, if it was ever asked for or decided on.
    async fn profile(&self, tenant: &str, name: &str) -> Result<Option<ProfileEntry>, CoreError>;
    /// Records that a run asked to use `name`, at `at`, unless it was asked or decided
    /// before. `true`: this call recorded it.
    async fn ask(&self, tenant: &str, name: &str, at: OffsetDateTime) -> Result<bool, CoreError>;
    /// Stores the owner's decision.
    async fn decide(
        &self,
        tenant: &str,
        name: &str,
        decision: ProfileDecision,
    ) -> Result<(), CoreError>;
    /// Stores what was recorded of a sign-in (replacing the site's earlier one).
    async fn record_sign_in(
        &self,
        tenant: &str,
        name: &str,
        sign_in: ProfileSignIn,
    ) -> Result<(), CoreError>;
}

/// The owner's decision about a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileDecision {
    /// Allow or decline.
    pub decision: SiteDecision,
    /// Who decided, by their own name.
    pub decided_by: String,
    /// The key that decided (its id).
    pub decided_by_key: Option<String>,
    /// When.
    pub decided_at: OffsetDateTime,
}

impl ProfileDecision {
    /// Applies the decision to `entry`.
    pub fn apply(self, entry: &mut ProfileEntry) {
        entry.decision = Some(self.decision);
        entry.decided_by = Some(self.decided_by);
        entry.decided_by_key = self.decided_by_key;
        entry.decided_at = Some(self.decided_at);
    }
}

/// Replaces `entry`'s sign-in of `sign_in.site`, keeping the others sorted by site.
pub fn put_sign_in(entry: &mut ProfileEntry, sign_in: ProfileSignIn) {
    entry.sign_ins.retain(|s| s.site != sign_in.site);
    entry.sign_ins.push(sign_in);
    entry.sign_ins.sort_by(|a, b| a.site.cmp(&b.site));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(name: &str, expires: Option<f64>) -> CookieFact {
        CookieFact {
            name: name.into(),
            domain: "example.com".into(),
            expires,
            expired: false,
        }
    }

    fn record(cookies: Vec<CookieFact>) -> ProfileSignIn {
        ProfileSignIn {
            site: "example.com".into(),
            cookies,
            recorded_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn names_are_folder_safe_and_folders_never_shared_between_tenants() {
        for good in ["jobs", "a", "work-2", "x_y", "0"] {
            assert!(profile_name(good).is_ok(), "{good}");
        }
        let long = "a".repeat(MAX_PROFILE_NAME + 1);
        for bad in [
            "", "..", "../x", "a/b", "Jobs", "-a", "_a", "a b", "a.b", "é", &long,
        ] {
            assert!(profile_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(profile_folder("t1", "jobs").unwrap(), "t7431/jobs");
        // A tenant id holding a slash or dots stays one folder level, hex-encoded.
        assert_eq!(profile_folder("../a", "jobs").unwrap(), "t2e2e2f61/jobs");
        assert_ne!(
            profile_folder("ab", "c").unwrap(),
            profile_folder("a", "bc").unwrap()
        );
        assert!(profile_folder("t1", "../etc").is_err());
    }

    #[test]
    fn a_press_waits_unless_every_recorded_cookie_is_live() {
        let now = 1_000.0;
        let jar = [fact("sid", Some(2_000.0)), fact("pref", None)];
        assert_eq!(check_sign_in(None, &jar, now), Err(SignedOut::Never));
        assert_eq!(
            check_sign_in(Some(&record(vec![])), &jar, now),
            Err(SignedOut::Never)
        );
        let sid = record(vec![fact("sid", Some(2_000.0))]);
        assert_eq!(check_sign_in(Some(&sid), &jar, now), Ok(()));
        // The recorded expiry passed, even when the jar still holds it.
        assert_eq!(
            check_sign_in(Some(&sid), &jar, 2_000.0),
            Err(SignedOut::Expired("sid".into()))
        );
        // The jar lost it.
        assert_eq!(
            check_sign_in(Some(&sid), &[fact("pref", None)], now),
            Err(SignedOut::Gone("sid".into()))
        );
        // The jar's own expiry passed (the recorded one was later).
        let later = record(vec![fact("sid", Some(9_000.0))]);
        assert_eq!(
            check_sign_in(Some(&later), &[fact("sid", Some(500.0))], now),
            Err(SignedOut::Expired("sid".into()))
        );
        // A session cookie recorded stays live while the jar holds it.
        let session = record(vec![fact("sid", None)]);
        assert_eq!(
            check_sign_in(Some(&session), &[fact("sid", None)], now),
            Ok(())
        );
    }

    #[test]
    fn a_sign_in_records_what_it_set_or_else_what_outlives_the_browser() {
        let now = 1_000.0;
        let before = vec![(fact("pref", None), 1), (fact("sid", Some(1_500.0)), 2)];
        // A new cookie and a changed one are the sign-in's; an unchanged one is not.
        let after = vec![
            (fact("pref", None), 1),
            (fact("sid", Some(5_000.0)), 3),
            (fact("csrf", Some(900.0)), 4),
            (fact("auth", Some(6_000.0)), 5),
        ];
        let names: Vec<_> = signed_in_cookies(&before, &after, now)
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["sid", "auth"]);
        // Nothing changed: the unexpired cookies with an expiry.
        let names: Vec<_> = signed_in_cookies(&before, &before, now)
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["sid"]);
        assert!(signed_in_cookies(&[], &[], now).is_empty());
    }

    #[test]
    fn a_refresh_moves_the_recorded_expiry_and_nothing_else() {
        let at = OffsetDateTime::UNIX_EPOCH + time::Duration::hours(1);
        let sid = record(vec![fact("sid", Some(2_000.0))]);
        assert_eq!(
            refreshed_sign_in(&sid, &[fact("sid", Some(2_000.0))], at),
            None
        );
        assert_eq!(refreshed_sign_in(&sid, &[], at), None);
        let moved = refreshed_sign_in(&sid, &[fact("sid", Some(9_000.0))], at).unwrap();
        assert_eq!(moved.cookies, [fact("sid", Some(9_000.0))]);
        assert_eq!(moved.recorded_at, at);
    }
}
