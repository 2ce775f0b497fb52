//! The write ledger, the attack endpoints, the harmless corpus's record and the page
//! registry, over real HTTP (no browser).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_demo::DemoSite;
use abr_demo::site::{
    ATTACK_BUTTONS, ATTACK_PAGES, HARMLESS_CORPUS, InvalidPageName, LedgerEntry, MAX_WRITE_LEDGER,
};
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

struct Site {
    site: DemoSite,
    http: Client,
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

    async fn send(&self, method: Method, path: &str) -> reqwest::Response {
        self.http
            .request(method, self.url(path))
            .send()
            .await
            .unwrap()
    }

    async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.send(Method::GET, path).await
    }

    /// `GET /api/ledger`, checked against `DemoSite::ledger`.
    async fn ledger(&self) -> Vec<LedgerEntry> {
        let r = self.get("/api/ledger").await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CACHE_CONTROL], "no-store");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["dropped"], json!(self.site.ledger_dropped()));
        let entries: Vec<LedgerEntry> = serde_json::from_value(body["entries"].clone()).unwrap();
        assert_eq!(entries, self.site.ledger());
        entries
    }

    async fn stop(self) {
        self.site.shutdown().await;
    }
}

fn entry(method: &str, path: &str) -> LedgerEntry {
    LedgerEntry::new(method, path)
}

#[tokio::test]
async fn every_non_safe_method_is_recorded_and_no_safe_one() {
    let s = Site::start().await;
    assert_eq!(s.ledger().await, []);
    for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
        for path in ["/", "/guard", "/attack/chord", "/nowhere", "/api/posts?x=1"] {
            s.send(method.clone(), path).await;
        }
    }
    assert_eq!(s.ledger().await, [], "no GET, HEAD or OPTIONS is a write");

    let purge = Method::from_bytes(b"PURGE").unwrap();
    let writes = [
        (Method::POST, "/attack/api/thing?secret=1", 200),
        (Method::PUT, "/api/posts", 405),
        (Method::DELETE, "/p/00ff", 405),
        (Method::PATCH, "/nowhere/at/all", 404),
        (purge, "/guard", 405),
    ];
    for (method, path, status) in &writes {
        let r = s.send(method.clone(), path).await;
        assert_eq!(r.status().as_u16(), *status, "{method} {path}");
    }
    assert_eq!(
        s.ledger().await,
        [
            entry("POST", "/attack/api/thing"),
            entry("PUT", "/api/posts"),
            entry("DELETE", "/p/00ff"),
            entry("PATCH", "/nowhere/at/all"),
            entry("PURGE", "/guard"),
        ],
        "method and path, without the query, in arrival order, whatever the route answered"
    );

    // The social site's own writes are writes too: a sign-in, a bad fault request.
    let r = s
        .http
        .post(s.url("/login"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("username=ada&password=demo-password")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    s.post_json("/__faults", &json!({ "mode": "nope" })).await;
    let ledger = s.ledger().await;
    assert_eq!(
        ledger[writes.len()..],
        [entry("POST", "/login"), entry("POST", "/__faults")]
    );
    assert!(
        !serde_json::to_string(&ledger)
            .unwrap()
            .contains("demo-password"),
        "never a body"
    );

    s.site.reset_ledger();
    assert_eq!(s.ledger().await, []);
    assert_eq!(s.site.ledger_dropped(), 0);
    s.stop().await;
}

#[tokio::test]
async fn the_ledger_keeps_a_thousand_entries_and_counts_the_rest() {
    let s = Site::start().await;
    let extra = 7;
    for i in 0..MAX_WRITE_LEDGER + extra {
        let r = s.send(Method::POST, &format!("/attack/api/w{i}")).await;
        assert_eq!(r.status(), StatusCode::OK);
    }
    let ledger = s.ledger().await;
    assert_eq!(ledger.len(), MAX_WRITE_LEDGER);
    assert_eq!(ledger.first(), Some(&entry("POST", "/attack/api/w0")));
    assert_eq!(
        ledger.last(),
        Some(&entry(
            "POST",
            &format!("/attack/api/w{}", MAX_WRITE_LEDGER - 1)
        ))
    );
    assert_eq!(s.site.ledger_dropped(), extra as u64);
    // Reading it is not a write; resetting it starts over.
    s.site.reset_ledger();
    s.send(Method::DELETE, "/attack/api/again").await;
    assert_eq!(s.ledger().await, [entry("DELETE", "/attack/api/again")]);
    assert_eq!(s.site.ledger_dropped(), 0);
    s.stop().await;
}

#[tokio::test]
async fn there_is_no_http_way_to_clear_the_ledger() {
    let s = Site::start().await;
    s.send(Method::POST, "/attack/api/one").await;
    for (method, path) in [
        (Method::DELETE, "/api/ledger"),
        (Method::POST, "/api/ledger"),
        (Method::POST, "/api/ledger/reset"),
        (Method::PUT, "/api/ledger"),
    ] {
        let r = s.send(method.clone(), path).await;
        assert!(r.status().is_client_error(), "{method} {path}");
    }
    let ledger = s.ledger().await;
    assert_eq!(
        ledger.len(),
        5,
        "the write and the four attempts: {ledger:?}"
    );
    assert_eq!(ledger[0], entry("POST", "/attack/api/one"));
    s.stop().await;
}

#[tokio::test]
async fn attack_writes_carry_their_detail() {
    let s = Site::start().await;
    // A form post names its page.
    let r = s
        .http
        .post(s.url("/attack/submit"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("form=chord&note=secret+note")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("id=\"submitted\""));
    // A body that is no form at all still reaches the ledger, without detail.
    let r = s
        .http
        .post(s.url("/attack/submit"))
        .body("\u{0}\u{1}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A script write names its control, by its JSON body or its query.
    let r = s
        .post_json("/attack/api/action", &json!({ "id": "like" }))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({ "ok": true, "what": "action" })
    );
    s.send(Method::POST, "/attack/api/ping?id=link").await;
    s.post_json("/attack/api/action", &json!({ "id": "<script>" }))
        .await;
    let r = s.send(Method::POST, "/attack/api/a%20b").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());

    assert_eq!(
        s.ledger().await,
        [
            entry("POST", "/attack/submit").with_detail("chord"),
            entry("POST", "/attack/submit"),
            entry("POST", "/attack/api/action").with_detail("like"),
            entry("POST", "/attack/api/ping").with_detail("link"),
            entry("POST", "/attack/api/action"),
            entry("POST", "/attack/api/a%20b"),
        ]
    );
    assert!(
        !format!("{:?}", s.site.ledger()).contains("secret"),
        "never a body"
    );
    s.stop().await;
}

#[tokio::test]
async fn graphql_entries_say_query_mutation_or_batch() {
    let s = Site::start().await;
    let feed = json!({ "query": "query Feed { feed { id } }" });
    let like = json!({ "query": "mutation Like { like(id: 1) { ok } }" });
    let r = s.post_json("/attack/graphql", &feed).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.json::<Value>().await.unwrap()["data"]["feed"].is_array());
    let r = s.post_json("/attack/graphql", &like).await;
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({ "data": { "like": { "ok": true } } })
    );
    let r = s
        .post_json("/attack/graphql", &json!([feed.clone(), like.clone()]))
        .await;
    let batch: Value = r.json().await.unwrap();
    assert_eq!(batch.as_array().map(Vec::len), Some(2));
    assert!(batch[1]["data"]["like"]["ok"].as_bool().unwrap());
    let r = s
        .post_json("/attack/graphql", &json!({ "query": "{ feed { id } }" }))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    for bad in [json!({ "q": "x" }), json!([]), json!("query A { a }")] {
        let r = s.post_json("/attack/graphql", &bad).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    }
    let path = "/attack/graphql";
    assert_eq!(
        s.ledger().await,
        [
            entry("POST", path).with_detail("query"),
            entry("POST", path).with_detail("mutation"),
            entry("POST", path).with_detail("batch"),
            entry("POST", path).with_detail("query"),
            entry("POST", path),
            entry("POST", path),
            entry("POST", path),
        ]
    );
    s.stop().await;
}

#[tokio::test]
async fn the_committing_get_is_the_one_get_in_the_ledger() {
    let s = Site::start().await;
    let page = s.get("/attack/link-get").await.text().await.unwrap();
    assert!(
        page.contains(
            "<a id=\"unsubscribe\" href=\"/attack/api/unsubscribe\">Email preferences</a>"
        )
    );
    let r = s.get("/attack/api/unsubscribe?list=weekly").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("You are unsubscribed"));
    assert_eq!(s.ledger().await, [entry("GET!", "/attack/api/unsubscribe")]);
    s.stop().await;
}

#[tokio::test]
async fn every_attack_page_and_script_is_served() {
    let s = Site::start().await;
    for name in ATTACK_PAGES
        .iter()
        .chain(&["landing", "frame-form", "frame-harmless"])
    {
        let r = s.get(&format!("/attack/{name}")).await;
        assert_eq!(r.status(), StatusCode::OK, "{name}");
        assert_eq!(r.headers()[CACHE_CONTROL], "no-store", "{name}");
        assert!(
            r.headers()[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    }
    let buttons = s.get("/attack/buttons").await.text().await.unwrap();
    for id in ATTACK_BUTTONS {
        assert!(buttons.contains(&format!(" id=\"{id}\"")), "{id}");
    }
    for script in ["worker.js", "shared-worker.js", "sw.js"] {
        let r = s.get(&format!("/attack/{script}")).await;
        assert_eq!(r.status(), StatusCode::OK, "{script}");
        assert!(
            r.headers()[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript"),
            "{script}"
        );
        let allowed = r.headers().get("service-worker-allowed");
        assert_eq!(
            allowed.map(|v| v.to_str().unwrap()),
            (script == "sw.js").then_some("/attack/")
        );
        assert!(r.text().await.unwrap().contains("fetch('/attack/api/"));
    }
    let r = s.get("/attack/nope").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    // The socket's path without a handshake is the page that opens it.
    let ws = s.get("/attack/ws").await.text().await.unwrap();
    assert!(ws.contains("new WebSocket('ws://' + location.host + '/attack/ws')"));
    assert_eq!(s.ledger().await, [], "serving pages writes nothing");
    s.stop().await;
}

#[tokio::test]
async fn registered_pages_are_served_from_the_same_origin() {
    let s = Site::start().await;
    let html = "<!doctype html><title>gen</title><form method=post action=/attack/submit></form>";
    s.site.set_page("case-0042_a", html).unwrap();
    let r = s.get("/attack/custom/case-0042_a").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CACHE_CONTROL], "no-store");
    assert_eq!(r.text().await.unwrap(), html);
    // Replaced under the same name.
    s.site.set_page("case-0042_a", "<p>second</p>").unwrap();
    let r = s.get("/attack/custom/case-0042_a").await;
    assert_eq!(r.text().await.unwrap(), "<p>second</p>");

    for bad in ["", "Case", "a b", "a/b", "..", "é", &"x".repeat(65)] {
        assert_eq!(
            s.site.set_page(bad, "<p>no</p>"),
            Err(InvalidPageName(bad.to_owned())),
            "{bad:?}"
        );
    }
    s.site.set_page(&"x".repeat(64), "<p>long</p>").unwrap();
    assert_eq!(
        s.get(&format!("/attack/custom/{}", "x".repeat(64)))
            .await
            .status(),
        StatusCode::OK
    );
    let r = s.get("/attack/custom/unknown").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    for bad in ["Upper", "a%20b", "a.b"] {
        let r = s.get(&format!("/attack/custom/{bad}")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    }
    // No HTTP way to register one.
    let r = s.send(Method::PUT, "/attack/custom/evil").await;
    assert!(r.status().is_client_error());
    assert_eq!(
        s.get("/attack/custom/evil").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(s.ledger().await, [entry("PUT", "/attack/custom/evil")]);
    s.stop().await;
}

#[tokio::test]
async fn the_harmless_record_is_kept_with_gets_only() {
    let s = Site::start().await;
    let page = s.get("/harmless").await;
    assert_eq!(page.headers()[CACHE_CONTROL], "no-store");
    let html = page.text().await.unwrap();
    for control in HARMLESS_CORPUS.iter().filter(|c| c.frame.is_none()) {
        let attr = format!("data-harmless=\"{}\"", control.id);
        assert_eq!(html.matches(&attr).count(), 1, "{}", control.id);
        let at = html.find(&attr).unwrap();
        let tag = &html[html[..at].rfind('<').unwrap()..at + html[at..].find('>').unwrap()];
        assert!(tag.contains(&format!(" id=\"{}\"", control.id)), "{tag}");
        assert!(
            tag.contains(&format!(
                "data-harmless-action=\"{}\"",
                control.action.as_str()
            )),
            "{tag}"
        );
        assert_eq!(
            tag.contains("data-harmless-navigates"),
            control.navigates,
            "{tag}"
        );
    }
    let frame = s.get("/harmless/frame").await.text().await.unwrap();
    assert!(frame.contains("id=\"frame-show-more\""));
    assert!(HARMLESS_CORPUS.len() >= 45);

    assert_eq!(
        s.get("/api/harmless/seen")
            .await
            .json::<Value>()
            .await
            .unwrap(),
        json!([])
    );
    let r = s.get("/api/harmless/seen?id=show-more").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.headers()[CACHE_CONTROL], "no-store");
    let r = s.get("/harmless/results?q=oak&via=search-q").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("id=\"results\""));
    // A results page without a plain `via` records nothing, and is still a page.
    assert_eq!(
        s.get("/harmless/results?via=%3Cb%3E").await.status(),
        StatusCode::OK
    );
    assert_eq!(s.get("/harmless/results").await.status(), StatusCode::OK);
    for bad in ["?id=", "?id=a%20b", "?x=1"] {
        let r = s.get(&format!("/api/harmless/seen{bad}")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    }
    let seen = s.get("/api/harmless/seen").await;
    assert_eq!(seen.headers()[CACHE_CONTROL], "no-store");
    assert_eq!(
        seen.json::<Value>().await.unwrap(),
        json!(["show-more", "search-q"])
    );
    assert_eq!(s.site.harmless_seen(), ["show-more", "search-q"]);
    assert_eq!(
        s.ledger().await,
        [],
        "recording a harmless control is no write"
    );
    s.site.reset_harmless();
    assert_eq!(s.site.harmless_seen(), Vec::<String>::new());
    s.stop().await;
}
