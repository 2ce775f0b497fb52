//! Filters a Playwright storageState through a platform's session scope, as ABR does before
//! a browser sees a session and before a session leaves the runtime.
//!
//! Run: `cargo run -p abr-core --example scope_filter`

use abr_core::SessionScope;
use abr_protocol::{AgentSessionState, SessionScopeSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scope = SessionScope::new(&SessionScopeSpec {
        cookie_domains: vec!["example.com".into()],
        origins: vec!["https://app.example.com".into()],
    })?;

    // As written by Playwright's `context.storageState()`.
    let state: AgentSessionState = serde_json::from_str(
        r#"{
          "cookies": [
            {"name": "sid", "value": "v1", "domain": ".example.com", "path": "/",
             "expires": -1, "httpOnly": true, "secure": true, "sameSite": "Lax"},
            {"name": "pref", "value": "v2", "domain": "app.example.com", "path": "/",
             "expires": -1, "httpOnly": false, "secure": true, "sameSite": "Lax"},
            {"name": "ad", "value": "v3", "domain": ".tracker.test", "path": "/",
             "expires": -1, "httpOnly": false, "secure": true, "sameSite": "None"},
            {"name": "wide", "value": "v4", "domain": ".com", "path": "/",
             "expires": -1, "httpOnly": false, "secure": true, "sameSite": "None"}
          ],
          "origins": [
            {"origin": "https://app.example.com", "localStorage": [{"name": "k", "value": "v"}]},
            {"origin": "https://example.com", "localStorage": [{"name": "k", "value": "v"}]}
          ]
        }"#,
    )?;

    let (kept, report) = scope.filter(&state);
    for cookie in &kept.cookies {
        println!("kept cookie {} on {}", cookie.name, cookie.domain);
    }
    for origin in &kept.origins {
        println!("kept localStorage of {}", origin.origin);
    }
    println!("report: {}", serde_json::to_string(&report)?);
    Ok(())
}
