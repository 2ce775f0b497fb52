//! The demo site's HTTP contract, over real HTTP (no browser).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_demo::{DemoSite, FaultMode};
use cookie::{Cookie, SameSite};
use reqwest::header::{CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Client, Response, StatusCode};
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

    async fn login_response(&self, user: &str, password: &str) -> Response {
        self.http
            .post(self.url("/login"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(format!("username={user}&password={password}"))
            .send()
            .await
            .unwrap()
    }

    /// Signs in and returns the session token.
    async fn login(&self, user: &str) -> String {
        let r = self.login_response(user, "demo-password").await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let cookie = Cookie::parse(r.headers()[SET_COOKIE].to_str().unwrap()).unwrap();
        assert_eq!(cookie.name(), "demo_session");
        cookie.value().to_owned()
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Response {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = token {
            request = request.header(COOKIE, format!("demo_session={token}"));
        }
        request.send().await.unwrap()
    }

    async fn compose(&self, token: &str, body: &str) -> Response {
        self.http
            .post(self.url("/compose"))
            .header(COOKIE, format!("demo_session={token}"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
    }

    async fn upload(&self, token: &str, files: &[(&str, &[u8])]) -> Response {
        let boundary = "----abrdemoboundary";
        let mut body = Vec::new();
        for (name, bytes) in files {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: image/png\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        self.http
            .post(self.url("/api/upload"))
            .header(COOKIE, format!("demo_session={token}"))
            .header(
                CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await
            .unwrap()
    }

    async fn set_fault(&self, mode: &str) -> Response {
        self.http
            .post(self.url("/__faults"))
            .json(&json!({ "mode": mode }))
            .send()
            .await
            .unwrap()
    }

    async fn fault(&self) -> String {
        let v: Value = self.get("/__faults", None).await.json().await.unwrap();
        v["mode"].as_str().unwrap().to_owned()
    }
}

fn form(text: &str) -> String {
    let mut encoded = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("text={encoded}")
}

#[tokio::test]
async fn the_right_password_sets_a_host_only_http_only_session_cookie() {
    let s = Site::start().await;
    let r = s.login_response("alice", "demo-password").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/compose");
    let cookies: Vec<_> = r.headers().get_all(SET_COOKIE).iter().collect();
    assert_eq!(cookies.len(), 1);
    let cookie = Cookie::parse(cookies[0].to_str().unwrap()).unwrap();
    assert_eq!(cookie.name(), "demo_session", "{cookie}");
    let token = cookie.value();
    assert_eq!(token.len(), 64, "256-bit token, hex: {cookie}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(cookie.http_only(), Some(true), "{cookie}");
    assert_eq!(cookie.same_site(), Some(SameSite::Lax), "{cookie}");
    assert_eq!(cookie.path(), Some("/"), "{cookie}");
    assert_eq!(cookie.domain(), None, "host-only: {cookie}");
    assert_eq!(cookie.secure(), None, "plain http: {cookie}");
    assert_eq!(cookie.max_age(), None, "a session cookie: {cookie}");
    assert_eq!(cookie.expires(), None, "a session cookie: {cookie}");

    let other = s.login("alice").await;
    assert_ne!(other, token, "every sign-in gets its own token");

    let compose = s.get("/compose", Some(token)).await;
    assert_eq!(compose.status(), StatusCode::OK);
    let page = compose.text().await.unwrap();
    for needle in [
        "id=\"post-text\"",
        "id=\"media\"",
        "multiple",
        "id=\"submit\"",
        "id=\"media-status\"",
        "/api/upload",
        "demo_prefs",
        "alice",
    ] {
        assert!(page.contains(needle), "composer lacks {needle}");
    }
}

#[tokio::test]
async fn a_wrong_password_shows_the_form_again_with_an_error_and_no_cookie() {
    let s = Site::start().await;
    let r = s.login_response("alice", "nope").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    let page = r.text().await.unwrap();
    assert!(page.contains("class=\"error\""));
    assert!(page.contains("id=\"username\"") && page.contains("id=\"password\""));
    // An empty username does not sign in either.
    let r = s.login_response("", "demo-password").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());

    let login = s.get("/login", None).await;
    assert_eq!(login.status(), StatusCode::OK);
    let page = login.text().await.unwrap();
    assert!(page.contains("method=\"post\"") && page.contains("action=\"/login\""));
    assert!(page.contains("type=\"submit\""));
}

#[tokio::test]
async fn signed_out_pages_redirect_to_login_and_logout_ends_the_session() {
    let s = Site::start().await;
    for (path, token) in [
        ("/compose", None),
        ("/compose", Some("forged")),
        ("/feed", None),
    ] {
        let r = s.get(path, token).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(r.headers()[LOCATION], "/login", "{path}");
    }
    let r = s.compose("forged", &form("hi")).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(s.site.posts().is_empty());

    let token = s.login("bob").await;
    assert_eq!(
        s.get("/compose", Some(&token)).await.status(),
        StatusCode::OK
    );
    let out = s.get("/logout", Some(&token)).await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let removal = Cookie::parse(out.headers()[SET_COOKIE].to_str().unwrap()).unwrap();
    assert_eq!(removal.name(), "demo_session", "{removal}");
    assert_eq!(removal.value(), "", "{removal}");
    assert_eq!(
        removal.max_age(),
        Some(cookie::time::Duration::ZERO),
        "{removal}"
    );
    assert_eq!(removal.path(), Some("/"), "{removal}");
    let after = s.get("/compose", Some(&token)).await;
    assert_eq!(after.status(), StatusCode::SEE_OTHER, "the token is dead");
}

#[tokio::test]
async fn a_post_is_stored_escaped_and_listed_in_the_feed_and_the_api() {
    let s = Site::start().await;
    let token = s.login("carol").await;
    let text = "<script>alert(1)</script> & line\r\ntwo";
    let r = s.compose(&token, &form(text)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    let posts = s.site.posts();
    assert_eq!(posts.len(), 1);
    let post = &posts[0];
    assert_eq!(post.text, "<script>alert(1)</script> & line\ntwo");
    assert_eq!(post.author, "carol");
    assert!(page.contains("class=\"toast-success\""));
    assert!(page.contains(&format!("<a href=\"/p/{}\">", post.id)));

    let permalink = s.get(&format!("/p/{}", post.id), None).await;
    assert_eq!(permalink.status(), StatusCode::OK);
    let html = permalink.text().await.unwrap();
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; line\ntwo"));
    assert!(!html.contains("<script>alert"));
    assert!(html.contains("carol") && html.contains("0 media"));
    assert_eq!(
        s.get("/p/ffffffffffffffff", None).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        s.get("/p/not-hex", None).await.status(),
        StatusCode::NOT_FOUND
    );

    let feed = s.get("/feed", Some(&token)).await.text().await.unwrap();
    assert!(feed.contains(&format!("<li class=\"post\" data-id=\"{}\">", post.id)));
    // Another user's feed does not list it.
    let dave = s.login("dave").await;
    let theirs = s.get("/feed", Some(&dave)).await.text().await.unwrap();
    assert!(!theirs.contains(&post.id));

    let api: Value = s.get("/api/posts", None).await.json().await.unwrap();
    let items = api.as_array().unwrap();
    assert_eq!(items.len(), 1);
    let item = items[0].as_object().unwrap();
    let mut keys: Vec<&str> = item.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["author", "createdAt", "id", "mediaCount", "text"]);
    assert_eq!(item["id"], post.id.as_str());
    assert_eq!(item["text"], post.text.as_str());
    assert_eq!(item["mediaCount"], 0);
    let created = item["createdAt"].as_str().unwrap();
    time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("createdAt {created} is not RFC 3339: {e}"));

    // Nothing to post is refused, and nothing is stored.
    let empty = s.compose(&token, &form("   ")).await;
    assert_eq!(empty.status(), StatusCode::BAD_REQUEST);
    assert!(empty.text().await.unwrap().contains("error-banner"));
    let long = s.compose(&token, &form(&"x".repeat(5001))).await;
    assert_eq!(long.status(), StatusCode::BAD_REQUEST);
    assert_eq!(s.site.posts().len(), 1);
}

#[tokio::test]
async fn faults_are_one_shot_and_unknown_modes_are_refused() {
    let s = Site::start().await;
    assert_eq!(s.fault().await, "none");
    let r = s.set_fault("no_toast").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(s.fault().await, "no_toast");
    assert_eq!(s.site.fault(), FaultMode::NoToast);

    let token = s.login("erin").await;
    let page = s
        .compose(&token, &form("first"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !page.contains("class=\"toast-success\""),
        "no_toast shows no toast"
    );
    assert_eq!(s.fault().await, "none", "consumed by one attempt");
    let page = s
        .compose(&token, &form("second"))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("class=\"toast-success\""), "back to normal");
    assert_eq!(s.site.posts().len(), 2);

    for bad in [json!({"mode": "explode"}), json!({"mode": 3}), json!({})] {
        let r = s
            .http
            .post(s.url("/__faults"))
            .json(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert!(body["error"].is_string(), "{body}");
    }
    let r = s
        .http
        .post(s.url("/__faults"))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(s.fault().await, "none", "refused requests change nothing");
}

#[tokio::test]
async fn each_fault_mode_does_what_it_says_over_http() {
    let s = Site::start().await;
    let token = s.login("frank").await;
    let count = |s: &Site| s.site.posts().len();

    s.set_fault("fail_before_save").await;
    let r = s.compose(&token, &form("a")).await;
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let page = r.text().await.unwrap();
    assert!(page.contains("class=\"error-banner\"") && !page.contains("class=\"toast-success\""));
    assert_eq!(count(&s), 0);

    s.set_fault("fail_after_save").await;
    let page = s.compose(&token, &form("b")).await.text().await.unwrap();
    assert!(page.contains("class=\"error-banner\"") && !page.contains("class=\"toast-success\""));
    assert_eq!(count(&s), 1);

    s.set_fault("slow_toast").await;
    let page = s.compose(&token, &form("c")).await.text().await.unwrap();
    assert!(
        !page.contains("class=\"toast-success\""),
        "the toast comes later"
    );
    assert!(page.contains("setTimeout") && page.contains("3000"));
    assert!(page.contains(&format!("/p/{}", s.site.posts()[1].id)));
    assert_eq!(count(&s), 2);

    s.set_fault("media_reject").await;
    let r = s.upload(&token, &[("a.png", b"\x89PNG")]).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = r.json().await.unwrap();
    assert!(body["error"].is_string());
    assert_eq!(s.fault().await, "none", "the upload consumed it");
    assert_eq!(count(&s), 2);

    s.set_fault("expire_session").await;
    let r = s.compose(&token, &form("d")).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/login");
    assert_eq!(count(&s), 2, "nothing saved");
    assert_eq!(
        s.get("/compose", Some(&token)).await.status(),
        StatusCode::SEE_OTHER,
        "the session was invalidated"
    );
}

#[tokio::test]
async fn media_uploads_are_owned_counted_and_bounded() {
    let s = Site::start().await;
    let token = s.login("gina").await;

    let signed_out = s
        .http
        .post(s.url("/api/upload"))
        .header(CONTENT_TYPE, "multipart/form-data; boundary=x")
        .body("--x--\r\n")
        .send()
        .await
        .unwrap();
    assert_eq!(signed_out.status(), StatusCode::UNAUTHORIZED);

    let r = s
        .upload(&token, &[("a.png", b"\x89PNG1"), ("b.png", b"\x89PNG2")])
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let ids: Vec<String> = body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);

    // Another user cannot attach them.
    let other = s.login("hank").await;
    let r = s
        .compose(&other, &format!("text=x&media_ids={}", ids.join("%2C")))
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(s.site.posts().is_empty());

    let r = s
        .compose(&token, &format!("text=pics&media_ids={}", ids.join("%2C")))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(s.site.posts()[0].media_count, 2);
    // An upload attaches once.
    let again = s
        .compose(&token, &format!("text=again&media_ids={}", ids[0]))
        .await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert_eq!(s.site.posts().len(), 1);

    // Empty files, no files and garbage are 4xx, not crashes.
    let empty = s.upload(&token, &[("e.png", b"")]).await;
    assert_eq!(empty.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let none = s.upload(&token, &[]).await;
    assert_eq!(none.status(), StatusCode::BAD_REQUEST);
    let garbage = s
        .http
        .post(s.url("/api/upload"))
        .header(COOKIE, format!("demo_session={token}"))
        .header(CONTENT_TYPE, "multipart/form-data; boundary=x")
        .body("this is not multipart")
        .send()
        .await
        .unwrap();
    assert!(garbage.status().is_client_error(), "{}", garbage.status());

    // Bodies over 10 MiB are refused.
    let huge = vec![b'x'; 10 * 1024 * 1024 + 1];
    let r = s.upload(&token, &[("big.png", &huge)]).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // The site is still up.
    assert_eq!(s.get("/login", None).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_multipart_compose_is_accepted_too() {
    let s = Site::start().await;
    let token = s.login("ivy").await;
    let boundary = "b0undary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nmulti\r\npart\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"media_ids\"\r\n\r\n\r\n--{boundary}--\r\n"
    );
    let r = s
        .http
        .post(s.url("/compose"))
        .header(COOKIE, format!("demo_session={token}"))
        .header(
            CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(s.site.posts()[0].text, "multi\npart");
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let s = Site::start().await;
    let url = s.url("/login");
    assert_eq!(s.get("/login", None).await.status(), StatusCode::OK);
    s.site.shutdown().await;
    let after = Client::new().get(url).send().await;
    assert!(after.is_err(), "still serving after shutdown");
}
