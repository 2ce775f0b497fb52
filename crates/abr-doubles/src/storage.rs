//! Cookie and web-storage injection/export through CDP, shared by both doubles.

use serde_json::{Map, Value, json};

use crate::cdp::{CdpClient, CdpError};

/// Fields of CDP `Network.CookieParam` that `Storage.setCookies` accepts.
const COOKIE_PARAM_FIELDS: &[&str] = &[
    "name",
    "value",
    "url",
    "domain",
    "path",
    "secure",
    "httpOnly",
    "sameSite",
    "expires",
    "priority",
    "sameParty",
    "sourceScheme",
    "sourcePort",
    "partitionKey",
];

/// Keeps only `CookieParam` fields; drops non-positive `expires` (session cookies are
/// exported with `expires: -1`).
fn sanitize_cookie(c: &Value) -> Option<Value> {
    let obj = c.as_object()?;
    let mut out = Map::new();
    for (k, v) in obj {
        if !COOKIE_PARAM_FIELDS.contains(&k.as_str()) {
            continue;
        }
        if k == "expires" && !v.as_f64().is_some_and(|e| e > 0.0) {
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    Some(Value::Object(out))
}

/// Applies CDP-style cookies to the default browser context (`Storage.setCookies`).
pub(crate) async fn set_cookies(cdp: &CdpClient, cookies: &[Value]) -> Result<(), CdpError> {
    if cookies.is_empty() {
        return Ok(());
    }
    let cookies: Vec<Value> = cookies.iter().filter_map(sanitize_cookie).collect();
    cdp.call("Storage.setCookies", json!({ "cookies": cookies }))
        .await
        .map(|_| ())
}

/// All cookies of the default browser context (`Storage.getCookies`).
pub(crate) async fn get_cookies(cdp: &CdpClient) -> Result<Vec<Value>, CdpError> {
    let res = cdp.call("Storage.getCookies", json!({})).await?;
    Ok(res
        .get("cookies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The init script that writes `{origin: {k: v}}` items into local/session storage whenever a
/// document of a matching `location.origin` starts.
pub(crate) fn storage_script(local: &Map<String, Value>, session: &Map<String, Value>) -> String {
    let local = Value::Object(local.clone());
    let session = Value::Object(session.clone());
    format!(
        r#"(() => {{
  const local = {local};
  const session = {session};
  let origin;
  try {{ origin = location.origin; }} catch (e) {{ return; }}
  const apply = (name, items) => {{
    if (!items || typeof items !== "object") return;
    try {{
      const store = globalThis[name];
      for (const [k, v] of Object.entries(items)) {{
        store.setItem(k, typeof v === "string" ? v : JSON.stringify(v));
      }}
    }} catch (e) {{}}
  }};
  apply("localStorage", local[origin]);
  apply("sessionStorage", session[origin]);
}})();"#
    )
}

/// Registers [`storage_script`] on the first page target ([`add_first_page_script`]).
/// Returns `None` when there is nothing to install or no page exists.
pub(crate) async fn install_storage_script(
    cdp: &CdpClient,
    local: &Map<String, Value>,
    session: &Map<String, Value>,
) -> Result<Option<String>, CdpError> {
    if local.is_empty() && session.is_empty() {
        return Ok(None);
    }
    add_first_page_script(cdp, &storage_script(local, session)).await
}

/// Registers `source` on the first page target via `Page.addScriptToEvaluateOnNewDocument`
/// (a double's session opens its pages from it, or is it). The returned CDP session stays
/// attached (the script lives as long as that session), so `cdp` must be kept open for the
/// session's lifetime. Returns `None` when no page exists.
pub(crate) async fn add_first_page_script(
    cdp: &CdpClient,
    source: &str,
) -> Result<Option<String>, CdpError> {
    let Some((target, _)) = cdp.page_targets().await?.into_iter().next() else {
        return Ok(None);
    };
    let sid = cdp.attach(&target).await?;
    // Chromium only runs registered scripts for sessions with the Page domain enabled.
    cdp.call_in(Some(&sid), "Page.enable", json!({})).await?;
    cdp.call_in(
        Some(&sid),
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": source }),
    )
    .await?;
    Ok(Some(sid))
}

const READ_LOCAL_STORAGE: &str = r#"(() => {
  const items = {};
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    items[k] = localStorage.getItem(k);
  }
  return { origin: location.origin, items };
})()"#;

/// localStorage of every open http(s) page, keyed by origin (`Runtime.evaluate` per page).
pub(crate) async fn read_local_storage(cdp: &CdpClient) -> Result<Map<String, Value>, CdpError> {
    let mut out = Map::new();
    for (target, url) in cdp.page_targets().await? {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            continue;
        }
        let Ok(sid) = cdp.attach(&target).await else {
            continue;
        };
        let value = cdp.evaluate(&sid, READ_LOCAL_STORAGE).await;
        cdp.detach(&sid).await;
        let Ok(value) = value else { continue };
        let (Some(origin), Some(items)) = (
            value.get("origin").and_then(Value::as_str),
            value.get("items").and_then(Value::as_object),
        ) else {
            continue;
        };
        let entry = out
            .entry(origin.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(existing) = entry {
            existing.extend(items.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_exported_cookies() {
        let c = json!({"name":"a","value":"b","domain":"x","path":"/","size":2,"session":true,
                       "expires":-1,"sameSite":"Lax"});
        let s = sanitize_cookie(&c).unwrap_or_default();
        assert_eq!(
            s,
            json!({"name":"a","value":"b","domain":"x","path":"/","sameSite":"Lax"})
        );
        let c = json!({"name":"a","value":"b","url":"http://x/","expires":1.9e9});
        assert_eq!(sanitize_cookie(&c), Some(c.clone()));
    }

    #[test]
    fn script_embeds_json() {
        let mut local = Map::new();
        local.insert("http://127.0.0.1:1".to_owned(), json!({"k":"v"}));
        let s = storage_script(&local, &Map::new());
        assert!(s.contains(r#"{"http://127.0.0.1:1":{"k":"v"}}"#));
        assert!(s.contains("location.origin"));
    }
}
