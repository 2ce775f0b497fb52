//! The lists, in process on the core's fakes: a tenant pages through its own tasks, posts,
//! pending approvals and stored sessions, newest first, and never sees another tenant's;
//! bad queries are `invalid_request` (422) with the envelope.

use axum::http::Method;
use serde_json::{Value, json};

use crate::common;
use common::fake::*;

fn plan() -> Value {
    json!({"plan": {
        "targetUrl": "https://fake.example/form",
        "steps": [{"type": "click", "selector": "role=button[name=Submit]", "description": "Submit"}],
        "verification": {"method": "dom_check", "selector": "h1"}
    }})
}

async fn get(app: &axum::Router, token: &str, path: &str) -> Reply {
    request_as(app, token, Method::GET, path, &[], None).await
}

/// Every id of a list, page by page (`limit` each), and the number of pages.
async fn all_pages(
    app: &axum::Router,
    token: &str,
    path: &str,
    field: &str,
) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit=2&cursor={c}"),
            None => format!("{path}{sep}limit=2"),
        };
        let reply = get(app, token, &url).await;
        assert_eq!(reply.status, 200, "{url}: {}", reply.body);
        let page = reply.json();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2, "a page beyond its limit: {page}");
        ids.extend(items.iter().map(|i| i[field].as_str().unwrap().to_owned()));
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (ids, pages),
        }
        assert!(pages < 20, "the list never ends");
    }
}

#[tokio::test]
async fn a_tenant_pages_through_its_own_items_and_never_sees_another_tenants() {
    let s = fake_stack();
    let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    let a_approver = new_key(&s.app, "a's approver", "approver", Some("tenant-a")).await;
    let b = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let mut mine = Vec::new();
    for _ in 0..5 {
        let reply = request_as(&s.app, &a, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        mine.push(reply.json()["taskId"].as_str().unwrap().to_owned());
    }
    let reply = request_as(&s.app, &b, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
    let theirs = reply.json()["taskId"].as_str().unwrap().to_owned();
    // One of A's is rejected: no longer pending.
    let reply = request_as(
        &s.app,
        &a_approver,
        Method::POST,
        &format!("/v1/tasks/{}/reject", mine[0]),
        &[],
        Some(&json!({"reason": "no"})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);

    let (ids, pages) = all_pages(&s.app, &a, "/v1/tasks", "taskId").await;
    let newest_first: Vec<_> = mine.iter().rev().cloned().collect();
    assert_eq!(ids, newest_first, "A's tasks, newest first, each once");
    assert_eq!(pages, 3);
    assert!(!ids.contains(&theirs), "another tenant's task is listed");
    let (pending, _) = all_pages(&s.app, &a, "/v1/tasks?state=pending_approval", "taskId").await;
    assert_eq!(pending, newest_first[..4].to_vec());
    let (rejected, _) = all_pages(&s.app, &a, "/v1/tasks?state=rejected", "taskId").await;
    assert_eq!(rejected, [mine[0].clone()]);
    // What waits for A's approver: A's four pending tasks, nothing of B's.
    let approvals = get(&s.app, &a_approver, "/v1/approvals").await;
    assert_eq!(approvals.status, 200, "{}", approvals.body);
    let waiting: Vec<_> = approvals.json()["tasks"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(waiting, newest_first[..4].to_vec());
    assert_eq!(approvals.json()["actions"], json!([]));
    let b_view = get(&s.app, &b, "/v1/approvals").await.json();
    assert_eq!(b_view["tasks"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(b_view["tasks"]["items"][0]["taskId"], theirs.as_str());
    // A cursor is no key to another tenant's items.
    let b_first = get(&s.app, &b, "/v1/tasks?limit=1").await.json();
    assert!(b_first.get("nextCursor").is_none(), "{b_first}");
    let a_page = get(&s.app, &a, "/v1/tasks?limit=2").await.json();
    let cursor = a_page["nextCursor"].as_str().unwrap();
    let b_with_a_cursor = get(&s.app, &b, &format!("/v1/tasks?cursor={cursor}")).await;
    // Refused like a made-up one: nothing of A's, nothing at all.
    assert_eq!(
        b_with_a_cursor.error(),
        (422, "invalid_request".into(), false),
        "{}",
        b_with_a_cursor.body
    );
    assert!(!b_with_a_cursor.body.contains("taskId"));
    // Takeovers: none is open.
    assert_eq!(get(&s.app, &a, "/v1/takeovers").await.json(), json!([]));
}

/// The attack on cursors that are positions shared by every tenant: A knows how many tasks
/// it has, pages through them one at a time, and reads in its cursors how many tasks other
/// tenants created meanwhile. What A reads must be the same whether B created none or seven.
#[tokio::test]
async fn a_tenant_counts_nothing_of_another_tenants_tasks_in_its_cursors() {
    let mut counted = Vec::new();
    for others in [0, 7] {
        let s = fake_stack();
        let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
        let b = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
        let create = |token: String| {
            let app = s.app.clone();
            async move {
                let reply =
                    request_as(&app, &token, Method::POST, "/v1/tasks", &[], Some(&plan())).await;
                assert_eq!(reply.status, 201, "{}", reply.body);
            }
        };
        create(a.clone()).await;
        for _ in 0..others {
            create(b.clone()).await;
        }
        create(a.clone()).await;
        create(a.clone()).await;
        let mut cursors = Vec::new();
        let mut path = "/v1/tasks?limit=1".to_owned();
        loop {
            let page = get(&s.app, &a, &path).await;
            assert_eq!(page.status, 200, "{}", page.body);
            let Some(next) = page.json()["nextCursor"].as_str().map(str::to_owned) else {
                break;
            };
            path = format!("/v1/tasks?limit=1&cursor={next}");
            cursors.push(next);
        }
        assert_eq!(cursors.len(), 2, "A's three tasks, one a page");
        // The attacker's count: its largest cursor read as a number, less its own 3 tasks.
        let count = cursors
            .iter()
            .filter_map(|c| c.parse::<i64>().ok())
            .max()
            .map_or(0, |n| n - 3);
        counted.push((count, cursors));
    }
    assert_eq!(
        counted[0].0, counted[1].0,
        "A's cursors counted another tenant's tasks: {counted:?}"
    );
}

#[tokio::test]
async fn posts_and_stored_sessions_are_listed_per_tenant_without_values() {
    let s = fake_stack();
    let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    let b = new_key(&s.app, "b's agent", "agent", Some("tenant-b")).await;
    let post = |text: &str| {
        json!({
            "platform": FAKE_PLATFORM,
            "session": {"cookies": [], "origins": []},
            "content": {"text": text}
        })
    };
    let mut posts = Vec::new();
    for text in ["one", "two", "three"] {
        let reply = request_as(&s.app, &a, Method::POST, "/v1/post", &[], Some(&post(text))).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        posts.push(reply.json()["postId"].as_str().unwrap().to_owned());
    }
    let reply = request_as(&s.app, &b, Method::POST, "/v1/post", &[], Some(&post("b"))).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (ids, pages) = all_pages(&s.app, &a, "/v1/posts", "postId").await;
    assert_eq!(ids, posts.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(pages, 2);
    let (ok, _) = all_pages(&s.app, &a, "/v1/posts?state=succeeded", "postId").await;
    assert_eq!(ok.len(), 3);

    let secret = "canary-list-cookie-value-77a1";
    let session = json!({
        "session": {"cookies": [{"name": "sid", "value": secret, "domain": ".fake.example", "path": "/"}], "origins": []},
        "platform": FAKE_PLATFORM
    });
    for id in ["s-c", "s-a", "s-b"] {
        let reply = request_as(
            &s.app,
            &a,
            Method::PUT,
            &format!("/v1/sessions/{id}"),
            &[],
            Some(&session),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let reply = request_as(
        &s.app,
        &b,
        Method::PUT,
        "/v1/sessions/s-0",
        &[],
        Some(&session),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (ids, pages) = all_pages(&s.app, &a, "/v1/sessions", "sessionId").await;
    assert_eq!(ids, ["s-a", "s-b", "s-c"]);
    assert_eq!(pages, 2);
    let listed = get(&s.app, &a, "/v1/sessions").await;
    assert!(!listed.body.contains(secret), "a cookie value is listed");
    assert_eq!(listed.json()["items"][0]["cookieCount"], 1);
}

#[tokio::test]
async fn a_bad_list_query_is_invalid_request_with_the_envelope() {
    let s = fake_stack();
    let a = new_key(&s.app, "a's agent", "agent", Some("tenant-a")).await;
    for path in [
        "/v1/tasks?state=done",
        "/v1/tasks?limit=0",
        "/v1/tasks?limit=101",
        "/v1/tasks?limit=ten",
        "/v1/tasks?cursor=abc",
        "/v1/tasks?color=red",
        "/v1/posts?state=pending_approval",
        "/v1/approvals?state=queued",
        "/v1/sessions?state=x",
    ] {
        let reply = get(&s.app, &a, path).await;
        assert_eq!(
            reply.error(),
            (422, "invalid_request".into(), false),
            "{path}: {}",
            reply.body
        );
    }
}
