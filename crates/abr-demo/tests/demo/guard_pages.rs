//! The guard corpus and the pause pages, over real HTTP (no browser): the ledgers, the
//! clear endpoints, the resets, and what ABR's pause detector makes of each page's markup.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_core::guard::{PageSignals, PauseRules, detect_pause};
use abr_demo::DemoSite;
use abr_demo::site::{GUARD_CORPUS, PauseState};
use abr_protocol::PauseReason;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const ANYONE: PauseRules = PauseRules {
    may_sign_in: false,
    read_only: false,
};
const READ_ONLY: PauseRules = PauseRules {
    may_sign_in: false,
    read_only: true,
};

struct Site {
    site: DemoSite,
    http: Client,
}

/// A page as fetched: status and markup.
struct Page {
    status: StatusCode,
    html: String,
}

impl Page {
    /// A rough reading of what the browser probe reports: the text without markup,
    /// scripts or styles (lower-case), and the kinds of fields and widgets in the markup.
    fn signals(&self) -> PageSignals {
        let count = |needle: &str| u32::try_from(self.html.matches(needle).count()).unwrap();
        PageSignals {
            url: "http://127.0.0.1/".into(),
            status: Some(self.status.as_u16()),
            text: visible_text(&self.html).to_lowercase(),
            password_fields: count("type=\"password\""),
            captcha: self.html.contains("class=\"g-recaptcha"),
            one_time_code: self.html.contains("one-time-code"),
            file_inputs: count("type=\"file\""),
            card_fields: count("autocomplete=\"cc-"),
            ..PageSignals::default()
        }
    }

    fn pause(&self, rules: PauseRules) -> Option<PauseReason> {
        detect_pause(&self.signals(), rules)
    }

    fn cleared(&self) -> bool {
        self.html.contains("<div id=\"content\">Cleared</div>")
    }
}

/// `html` without tags, and without the contents of `<script>` and `<style>`.
fn visible_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        out.push(' ');
        rest = &rest[open..];
        let skip_to = ["<script", "<style"]
            .iter()
            .find(|t| rest.starts_with(**t))
            .map(|t| format!("</{}>", &t[1..]));
        let end = match skip_to {
            Some(close) => rest.find(&close).map(|i| i + close.len()),
            None => rest.find('>').map(|i| i + 1),
        };
        rest = &rest[end.unwrap_or(rest.len())..];
    }
    out.push_str(rest);
    out
}

impl Site {
    async fn start() -> Self {
        let site = DemoSite::start("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let http = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self { site, http }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.site.base_url())
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Page {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = token {
            request = request.header(COOKIE, format!("demo_session={token}"));
        }
        let r = request.send().await.unwrap();
        if r.status().is_success() || r.status().is_client_error() {
            assert_eq!(r.headers()[CACHE_CONTROL], "no-store", "{path}");
        }
        let status = r.status();
        Page {
            status,
            html: r.text().await.unwrap(),
        }
    }

    async fn json(&self, path: &str) -> Value {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn post_json(&self, path: &str, body: Value) -> StatusCode {
        self.http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap()
            .status()
    }

    async fn post_form(&self, path: &str, body: &str) -> (StatusCode, Option<String>, String) {
        let r = self
            .http
            .post(self.url(path))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        let location = r
            .headers()
            .get(LOCATION)
            .map(|l| l.to_str().unwrap().to_owned());
        (r.status(), location, r.text().await.unwrap())
    }

    async fn post(&self, path: &str) -> reqwest::Response {
        self.http.post(self.url(path)).send().await.unwrap()
    }

    async fn state(&self) -> PauseState {
        let state: PauseState =
            serde_json::from_value(self.json("/api/pause/state").await).unwrap();
        assert_eq!(state, self.site.pause_state());
        state
    }

    async fn login(&self) -> String {
        let r = self
            .http
            .post(self.url("/login"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body("username=alice&password=demo-password")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let cookie = r.headers()[SET_COOKIE].to_str().unwrap();
        let pair = cookie.split(';').next().unwrap();
        pair.trim_start_matches("demo_session=").to_owned()
    }
}

#[tokio::test]
async fn the_corpus_marks_every_control_with_its_verdict() {
    let s = Site::start().await;
    let page = s.get("/guard", None).await;
    assert_eq!(page.status, StatusCode::OK);
    for control in GUARD_CORPUS {
        let attr = format!("data-guard=\"{}\"", control.id);
        assert_eq!(page.html.matches(&attr).count(), 1, "{}", control.id);
        let at = page.html.find(&attr).unwrap();
        let start = page.html[..at].rfind('<').unwrap();
        let end = at + page.html[at..].find('>').unwrap();
        let tag = &page.html[start..end];
        assert!(tag.contains(&format!(" id=\"{}\"", control.id)), "{tag}");
        assert!(
            tag.contains(&format!("data-commits=\"{}\"", control.commits)),
            "{tag}"
        );
    }
    for (id, enter) in [("search-in-form", "false"), ("search-js", "false")] {
        assert!(
            page.html.contains(&format!(
                "data-guard=\"{id}\" data-commits=\"false\" data-enter-commits=\"{enter}\""
            )),
            "{id}"
        );
    }
    assert!(GUARD_CORPUS.len() >= 30);
    assert!(GUARD_CORPUS.iter().filter(|c| !c.commits).count() >= 10);
    assert_eq!(page.pause(ANYONE), None, "the corpus is an ordinary page");
    assert_eq!(
        page.pause(READ_ONLY),
        Some(PauseReason::WriteAffordance),
        "its file input and card fields are write affordances for a read-only run"
    );
}

#[tokio::test]
async fn the_guard_ledgers_keep_ids_in_order_until_reset() {
    let s = Site::start().await;
    assert_eq!(s.json("/api/guard/writes").await, json!([]));
    assert_eq!(s.json("/api/guard/seen").await, json!([]));
    for id in ["pay", "card-number", "pay"] {
        assert_eq!(
            s.post_json("/api/guard/writes", json!({ "id": id })).await,
            StatusCode::NO_CONTENT
        );
    }
    // A harmless click is recorded with a GET: it never writes.
    let r = s
        .http
        .get(s.url("/api/guard/seen?id=next-page"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.headers()[CACHE_CONTROL], "no-store");
    assert_eq!(
        s.json("/api/guard/writes").await,
        json!(["pay", "card-number", "pay"])
    );
    assert_eq!(s.json("/api/guard/seen").await, json!(["next-page"]));
    assert_eq!(s.site.guard_writes(), ["pay", "card-number", "pay"]);
    assert_eq!(s.site.guard_seen(), ["next-page"]);

    for bad in [
        json!({}),
        json!({ "id": "" }),
        json!({ "id": "<b>" }),
        json!("pay"),
    ] {
        assert_eq!(
            s.post_json("/api/guard/writes", bad.clone()).await,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    assert_eq!(
        s.site.guard_writes().len(),
        3,
        "nothing recorded from a bad body"
    );
    for bad in ["?id=", "?id=%3Cb%3E", "?other=1"] {
        let r = s
            .http
            .get(s.url(&format!("/api/guard/seen{bad}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    assert_eq!(s.site.guard_seen(), ["next-page"]);
    // Only the committing controls' records are writes.
    let writes: Vec<String> = s.site.ledger().into_iter().map(|e| e.path).collect();
    assert!(
        writes.iter().all(|p| p == "/api/guard/writes"),
        "{writes:?}"
    );
    assert_eq!(writes.len(), 7, "three good records and four bad ones");

    assert_eq!(
        s.post("/api/guard/reset").await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(s.json("/api/guard/writes").await, json!([]));
    assert_eq!(s.json("/api/guard/seen").await, json!([]));
}

#[tokio::test]
async fn the_challenge_clears_with_human_and_leaves_no_markers() {
    let s = Site::start().await;
    let page = s.get("/pause/challenge", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("class=\"g-recaptcha"));
    assert!(page.html.contains("id=\"human\""));
    assert!(page.html.contains("Verify you are human"));
    assert!(!page.html.contains("id=\"content\""));
    assert_eq!(page.pause(ANYONE), Some(PauseReason::Challenge));

    let r = s.post("/api/pause/clear/challenge").await;
    assert_eq!(r.status(), StatusCode::OK);
    let state: PauseState = r.json().await.unwrap();
    assert!(state.challenge);
    let page = s.get("/pause/challenge", None).await;
    assert!(page.cleared(), "{}", page.html);
    assert!(!page.html.contains("recaptcha"));
    assert!(!page.html.to_lowercase().contains("verify you are human"));
    assert_eq!(page.pause(ANYONE), None);
}

#[tokio::test]
async fn the_login_page_signs_in_with_any_non_empty_password() {
    let s = Site::start().await;
    let page = s.get("/pause/login", None).await;
    assert!(
        page.html
            .contains("id=\"password\" name=\"password\" type=\"password\"")
    );
    assert!(page.html.contains("id=\"signin\""));
    assert_eq!(page.pause(ANYONE), Some(PauseReason::LoginRequired));

    let (status, _, html) = s.post_form("/pause/login", "password=").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(html.contains("class=\"error\""));
    assert!(!s.state().await.login);

    let (status, location, _) = s.post_form("/pause/login", "password=hunter2").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/pause/login"));
    assert!(s.state().await.login);
    let page = s.get("/pause/login", None).await;
    assert!(page.cleared());
    assert!(!page.html.contains("type=\"password\""));
    assert_eq!(page.pause(ANYONE), None);
}

#[tokio::test]
async fn the_paywall_clears_with_subscribed() {
    let s = Site::start().await;
    let page = s.get("/pause/paywall", None).await;
    assert!(page.html.contains("Subscribe to continue reading"));
    assert!(page.html.contains("id=\"subscribed\""));
    assert!(!page.cleared());
    assert_eq!(page.pause(ANYONE), Some(PauseReason::Paywall));

    assert_eq!(
        s.post("/api/pause/clear/paywall").await.status(),
        StatusCode::OK
    );
    let page = s.get("/pause/paywall", None).await;
    assert!(page.cleared());
    assert!(!page.html.to_lowercase().contains("continue reading"));
    assert_eq!(page.pause(ANYONE), None);
}

#[tokio::test]
async fn the_blocked_page_is_a_403_until_unblocked() {
    let s = Site::start().await;
    let page = s.get("/pause/blocked", None).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(page.html.contains("Access Denied"));
    assert!(page.html.contains("id=\"unblock\""));
    assert_eq!(page.pause(ANYONE), Some(PauseReason::AccessBlocked));

    assert_eq!(
        s.post("/api/pause/clear/blocked").await.status(),
        StatusCode::OK
    );
    let page = s.get("/pause/blocked", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.cleared());
    assert!(!page.html.to_lowercase().contains("access denied"));
    assert_eq!(page.pause(ANYONE), None);
}

#[tokio::test]
async fn the_job_form_is_a_write_affordance_only_for_read_only_runs() {
    let s = Site::start().await;
    let page = s.get("/pause/write", None).await;
    assert!(
        page.html
            .contains("<div id=\"content\"><h1>Job details</h1>")
    );
    assert!(page.html.contains("type=\"file\""));
    assert!(page.html.contains("id=\"apply\" type=\"submit\">Apply<"));
    assert_eq!(page.pause(ANYONE), None);
    assert_eq!(page.pause(READ_ONLY), Some(PauseReason::WriteAffordance));

    let (status, _, _) = s.post_form("/pause/write", "name=A").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(s.state().await.applications, 1);
}

#[tokio::test]
async fn the_overlay_stays_gone_once_dismissed_and_go_is_counted() {
    let s = Site::start().await;
    let page = s.get("/pause/stuck", None).await;
    for id in ["go", "overlay", "dismiss"] {
        assert!(page.html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(!page.cleared());
    assert_eq!(page.pause(ANYONE), None, "stuck is the run's to decide");

    assert_eq!(
        s.post("/api/pause/clear/stuck").await.status(),
        StatusCode::OK
    );
    let page = s.get("/pause/stuck", None).await;
    assert!(!page.html.contains("id=\"overlay\""));
    assert!(!page.html.contains("id=\"dismiss\""));
    assert!(!page.cleared(), "not before #go");

    let go: Value = s.post("/api/pause/go").await.json().await.unwrap();
    assert_eq!(go, json!({ "goClicks": 1 }));
    assert!(s.get("/pause/stuck", None).await.cleared());
    assert_eq!(s.state().await.go_clicks, 1);
}

#[tokio::test]
async fn the_needs_input_form_records_the_code_length_only() {
    let s = Site::start().await;
    let page = s.get("/pause/needs-input", None).await;
    assert!(page.html.contains("id=\"code\" name=\"code\" required"));
    assert!(page.html.contains("id=\"send\" type=\"submit\">Continue<"));
    assert_eq!(
        page.pause(ANYONE),
        None,
        "needs_input is the run's to decide"
    );

    let (status, _, _) = s.post_form("/pause/needs-input", "code=+").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        s.json("/api/pause/submissions").await,
        json!({ "count": 0 })
    );

    let (status, _, html) = s.post_form("/pause/needs-input", "code=AB-12").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<div id=\"content\">Cleared</div>"));
    assert!(!html.contains("AB-12"));
    assert_eq!(
        s.json("/api/pause/submissions").await,
        json!({ "count": 1 })
    );
    let state = s.state().await;
    assert_eq!(state.submissions, [5]);
    assert!(state.needs_input);
    assert!(s.get("/pause/needs-input", None).await.cleared());
}

#[tokio::test]
async fn elsewhere_links_to_the_same_port_on_localhost() {
    let s = Site::start().await;
    let port = s.site.local_addr().port();
    let page = s.get("/pause/elsewhere", None).await;
    assert!(
        page.html.contains(&format!(
            "<a id=\"away\" href=\"http://localhost:{port}/pause/landing\">Next page</a>"
        )),
        "{}",
        page.html
    );
    let landing = s.get("/pause/landing", None).await;
    assert!(landing.html.contains("<div id=\"content\">Landing</div>"));
}

#[tokio::test]
async fn clear_knows_its_reasons_and_reset_undoes_everything() {
    let s = Site::start().await;
    assert_eq!(s.state().await, PauseState::default());
    let r = s.post("/api/pause/clear/consent").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    for reason in [
        "challenge",
        "login",
        "paywall",
        "blocked",
        "stuck",
        "needs-input",
    ] {
        assert_eq!(
            s.post(&format!("/api/pause/clear/{reason}")).await.status(),
            StatusCode::OK,
            "{reason}"
        );
    }
    s.post("/api/pause/go").await;
    s.post_form("/pause/needs-input", "code=1").await;
    s.post_form("/pause/write", "").await;
    let state = s.state().await;
    assert!(
        state.challenge
            && state.login
            && state.paywall
            && state.blocked
            && state.stuck
            && state.needs_input
    );
    assert_eq!((state.go_clicks, state.applications), (1, 1));

    assert_eq!(
        s.post("/api/pause/reset").await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(s.state().await, PauseState::default());
    assert_eq!(
        s.get("/pause/blocked", None).await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn the_social_site_pages_do_not_look_like_pauses() {
    let s = Site::start().await;
    let token = s.login().await;
    for path in [
        "/",
        "/feed",
        "/admin/users",
        "/nowhere",
        "/pause/landing",
        "/pause/elsewhere",
    ] {
        let page = s.get(path, Some(&token)).await;
        assert_eq!(page.pause(READ_ONLY), None, "{path}");
    }
    let login = s.get("/login", None).await;
    assert_eq!(login.pause(ANYONE), Some(PauseReason::LoginRequired));
    let may_sign_in = PauseRules {
        may_sign_in: true,
        read_only: false,
    };
    assert_eq!(login.pause(may_sign_in), None);
    let compose = s.get("/compose", Some(&token)).await;
    assert_eq!(compose.pause(ANYONE), None);
    assert_eq!(
        compose.pause(READ_ONLY),
        Some(PauseReason::WriteAffordance),
        "the composer's media input"
    );
}
