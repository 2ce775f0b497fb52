//! Between ABR's [`AgentSessionState`] and Playwright's storage state, and the init script
//! that seeds localStorage.
//!
//! localStorage is seeded with an init script rather than `storageState.origins`: Playwright
//! implements origins by navigating a hidden page to every origin (about 115–310 ms per
//! context); an init script costs one round trip and still writes the items before any page
//! script runs. The script runs on every new document, so it marks an origin as seeded in
//! `sessionStorage` (key [`SEED_MARKER`]: per tab and origin, copied into popups, never part
//! of localStorage or an exported state) and so never overwrites what the page changed after
//! the first load. A page opened later with `context.new_page()` seeds again.

use abr_protocol::{AgentSessionState, Cookie, LocalStorageItem, OriginState, SameSite};
use playwright_rs::protocol::{Cookie as PwCookie, StorageState};
use serde_json::Map;

/// `sessionStorage` key the seed script sets once it seeded an origin in a tab.
pub const SEED_MARKER: &str = "__abr_seeded";

/// The cookies of `state` in Playwright's form. Partitioned (CHIPS) cookies are left out:
/// Playwright 1.64's cookie API cannot carry a partition key, and injecting them unpartitioned
/// would widen them to every top-level site. Returns the cookies and how many were skipped.
pub fn to_playwright_cookies(state: &AgentSessionState) -> (Vec<PwCookie>, usize) {
    let mut skipped = 0;
    let cookies = state
        .cookies
        .iter()
        .filter(|c| {
            let partitioned = c.partition_key.is_some();
            skipped += usize::from(partitioned);
            !partitioned
        })
        .map(|c| {
            PwCookie::new(c.name.clone(), c.value.expose().to_owned())
                .domain(c.domain.clone())
                .path(c.path.clone())
                .expires(c.expires)
                .http_only(c.http_only)
                .secure(c.secure)
                .same_site(match c.same_site {
                    SameSite::Strict => "Strict",
                    SameSite::Lax => "Lax",
                    SameSite::None => "None",
                })
        })
        .collect();
    (cookies, skipped)
}

/// A Playwright storage state as ABR's, without the seed marker.
pub fn from_playwright(state: StorageState) -> AgentSessionState {
    let cookies = cookies_from_playwright(state.cookies);
    let origins = state
        .origins
        .into_iter()
        .filter_map(|o| {
            let items: Vec<_> = o
                .local_storage
                .into_iter()
                .map(|i| LocalStorageItem::new(i.name, i.value))
                .collect();
            (!items.is_empty()).then(|| OriginState::new(o.origin, items))
        })
        .collect();
    AgentSessionState {
        cookies,
        origins,
        metadata: None,
        extra: Map::new(),
    }
}

/// Playwright's cookies as ABR's.
pub(crate) fn cookies_from_playwright(cookies: Vec<PwCookie>) -> Vec<Cookie> {
    cookies
        .into_iter()
        .map(|c| {
            let mut cookie = Cookie::new(c.name, c.value, c.domain);
            cookie.path = if c.path.is_empty() {
                "/".to_owned()
            } else {
                c.path
            };
            cookie.expires = c.expires;
            cookie.http_only = c.http_only;
            cookie.secure = c.secure;
            cookie.same_site = match c.same_site.as_deref() {
                Some("Strict") => SameSite::Strict,
                Some("None") => SameSite::None,
                _ => SameSite::Lax,
            };
            cookie
        })
        .collect()
}

/// The init script that writes `state`'s localStorage into matching origins before page
/// scripts run, or `None` when there is nothing to seed.
pub fn seed_script(state: &AgentSessionState) -> Option<String> {
    let mut seeds = Map::new();
    for origin in &state.origins {
        if origin.local_storage.is_empty() {
            continue;
        }
        let Ok(parsed) = url::Url::parse(&origin.origin) else {
            continue;
        };
        let key = parsed.origin().ascii_serialization();
        let pairs: Vec<serde_json::Value> = origin
            .local_storage
            .iter()
            .map(|i| serde_json::json!([i.name, i.value.expose()]))
            .collect();
        seeds.insert(key, serde_json::Value::Array(pairs));
    }
    if seeds.is_empty() {
        return None;
    }
    // JSON is valid JavaScript (ES2019), so the data needs no further escaping.
    let data = serde_json::Value::Object(seeds).to_string();
    Some(format!(
        "(() => {{ try {{ const seeds = {data}; const items = seeds[location.origin]; \
         if (!items) return; const ss = window.sessionStorage; \
         if (ss.getItem({marker:?}) !== null) return; const ls = window.localStorage; \
         for (const [k, v] of items) ls.setItem(k, v); ss.setItem({marker:?}, '1'); \
         }} catch (e) {{}} }})();",
        marker = SEED_MARKER
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use playwright_rs::protocol::{LocalStorageItem as PwItem, Origin as PwOrigin};

    fn state() -> AgentSessionState {
        let mut partitioned = Cookie::new("p", "v", "example.com");
        partitioned.partition_key = Some("https://example.com".into());
        AgentSessionState {
            cookies: vec![Cookie::new("sid", "s", ".example.com"), partitioned],
            origins: vec![
                OriginState::new(
                    "https://APP.example.com:443",
                    vec![LocalStorageItem::new("k", "v\"</script>\u{2028}")],
                ),
                OriginState::new("https://empty.example.com", vec![]),
            ],
            ..AgentSessionState::default()
        }
    }

    #[test]
    fn partitioned_cookies_are_not_injected_unpartitioned() {
        let (cookies, skipped) = to_playwright_cookies(&state());
        assert_eq!(skipped, 1);
        assert_eq!(cookies.len(), 1);
        assert_eq!(cookies[0].domain, ".example.com");
        assert_eq!(cookies[0].same_site.as_deref(), Some("Lax"));
    }

    #[test]
    fn seed_script_keys_by_normalized_origin_and_embeds_values_as_json() {
        let script = seed_script(&state()).unwrap();
        assert!(
            script.contains(r#""https://app.example.com":[["k","v\"</script>"#),
            "{script}"
        );
        assert!(!script.contains("empty.example.com"));
        assert!(script.contains(SEED_MARKER));
        assert!(seed_script(&AgentSessionState::default()).is_none());
    }

    #[test]
    fn exported_state_keeps_only_origins_with_items() {
        let pw = StorageState::default().origins(vec![
            PwOrigin::new("https://a.example", vec![PwItem::new("k", "v")]),
            PwOrigin::new("https://b.example", vec![]),
        ]);
        let state = from_playwright(pw);
        assert_eq!(state.origins.len(), 1);
        assert_eq!(state.origins[0].local_storage[0].value.expose(), "v");
    }
}
