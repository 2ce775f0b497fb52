//! The live-view surface of [`BrowserSession`] on real Chromium: frames out (screencast),
//! a person's input in (pointer, keys, text, navigation), and where the page is.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::net::SocketAddr;
use std::time::Duration;

use abr_core::{
    AcquireMode, AcquireRequest, EgressPolicy, Lease, LiveFeed, LiveFrame, LiveInput, LiveKey,
    LiveSurface, Modifiers, PointerAction, PointerButton, ProviderErrorKind, SessionProvider,
};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use axum::Router;
use axum::response::Html;
use axum::routing::get;
use serde::Deserialize;

/// Every wait in these tests is bounded by this.
const WAIT: Duration = Duration::from_secs(10);

const FORM: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>Form</title></head>
<body style="margin:0">
<form id="f" action="/done" method="get">
  <input id="a" name="a" autocomplete="off" style="position:absolute;left:20px;top:20px;width:300px;height:30px">
  <input id="b" name="b" autocomplete="off" style="position:absolute;left:20px;top:80px;width:300px;height:30px">
  <button type="submit" style="position:absolute;left:20px;top:140px">Send</button>
</form>
<button id="btn" style="position:absolute;left:400px;top:20px;width:120px;height:40px"
  onclick="window.__clicks = (window.__clicks || 0) + 1">Click</button>
</body></html>"#;

const DONE: &str =
    r#"<!doctype html><html><head><title>Done</title></head><body>sent</body></html>"#;

const TALL: &str = r#"<!doctype html><html><head><title>Tall</title></head>
<body style="margin:0"><div style="height:5000px;background:linear-gradient(#fff,#000)">tall</div></body></html>"#;

const ONE: &str = r#"<!doctype html><html><head><title>One</title></head><body>one</body></html>"#;
const TWO: &str = r#"<!doctype html><html><head><title>Two</title></head><body>two</body></html>"#;

/// Changes every animation frame, so the screencast keeps producing frames.
const ANIMATED: &str = r#"<!doctype html><html><head><title>Animated</title></head>
<body style="margin:0"><div id="n" style="font:64px monospace">0</div>
<script>let n = 0; const tick = () => { document.getElementById('n').textContent = ++n; requestAnimationFrame(tick); }; tick();</script>
</body></html>"#;

/// A small site on 127.0.0.1:0.
struct Site {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Site {
    async fn start() -> Self {
        let app = Router::new()
            .route("/form", get(|| async { Html(FORM) }))
            .route("/done", get(|| async { Html(DONE) }))
            .route("/tall", get(|| async { Html(TALL) }))
            .route("/one", get(|| async { Html(ONE) }))
            .route("/two", get(|| async { Html(TWO) }))
            .route("/animated", get(|| async { Html(ANIMATED) }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn provider(site: &Site) -> LocalBrowserSessionProvider {
    LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(EgressPolicy::new().allow_addr(site.addr)),
        ..LocalProviderConfig::default()
    })
}

/// A capture-like lease (interactive browser) on `url`.
async fn open(provider: &LocalBrowserSessionProvider, url: String) -> Lease<BrowserSession> {
    let request = AcquireRequest {
        profile: None,
        mode: AcquireMode::Interactive,
        platform: "live-test".into(),
        state: None,
        start_url: Some(url),
    };
    tokio::time::timeout(Duration::from_secs(60), provider.acquire(request))
        .await
        .expect("acquire timed out")
        .expect("acquire failed")
}

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {WAIT:?}"))
}

async fn next(feed: &mut Box<dyn LiveFeed>) -> LiveFrame {
    bounded("a frame", feed.next_frame())
        .await
        .expect("the feed ended")
}

/// Evaluates `expression` on the session's page.
async fn eval<T: serde::de::DeserializeOwned>(session: &BrowserSession, expression: &str) -> T {
    bounded(
        expression,
        session.page().evaluate::<(), T>(expression, None),
    )
    .await
    .unwrap_or_else(|e| panic!("{expression}: {e}"))
}

/// Waits until `expression` is true on the page (navigations in between are tolerated).
async fn until(session: &BrowserSession, expression: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = tokio::time::timeout(
            Duration::from_secs(2),
            session.page().evaluate::<(), bool>(expression, None),
        )
        .await;
        if matches!(seen, Ok(Ok(true))) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{expression} never became true (last: {seen:?})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the surface reports the page titled `title`; returns its URL.
async fn until_title(session: &BrowserSession, title: &str) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Ok(location) = session.location().await
            && location.title == title
        {
            return location.url;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the page never got the title {title}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn input(session: &BrowserSession, input: LiveInput) {
    bounded("an input", session.input(input))
        .await
        .expect("the input failed");
}

async fn key(session: &BrowserSession, key: LiveKey, modifiers: Modifiers) {
    input(session, LiveInput::Key { key, modifiers }).await;
}

async fn text(session: &BrowserSession, text: &str) {
    input(
        session,
        LiveInput::Text {
            text: text.to_owned(),
        },
    )
    .await;
}

/// A left click (press and release) at page coordinates.
async fn click(session: &BrowserSession, (x, y): (f64, f64)) {
    for action in [PointerAction::Move, PointerAction::Down, PointerAction::Up] {
        let button = if action == PointerAction::Move {
            PointerButton::None
        } else {
            PointerButton::Left
        };
        input(
            session,
            LiveInput::Pointer {
                action,
                x,
                y,
                button,
                click_count: 1,
                modifiers: Modifiers::NONE,
            },
        )
        .await;
    }
}

#[derive(Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

/// The centre of the element `id`, in page coordinates.
async fn centre(session: &BrowserSession, id: &str) -> (f64, f64) {
    let p: Point = eval(
        session,
        &format!(
            "(() => {{ const r = document.getElementById('{id}').getBoundingClientRect(); \
             return {{ x: r.left + r.width / 2, y: r.top + r.height / 2 }}; }})()"
        ),
    )
    .await;
    (p.x, p.y)
}

async fn value_of(session: &BrowserSession, id: &str) -> String {
    eval(session, &format!("document.getElementById('{id}').value")).await
}

const CTRL: Modifiers = Modifiers {
    alt: false,
    ctrl: true,
    meta: false,
    shift: false,
};

const META: Modifiers = Modifiers {
    alt: false,
    ctrl: false,
    meta: true,
    shift: false,
};

/// Tasks alive on this runtime, once they settled at or below `at_most` (or after `WAIT`).
async fn tasks_settle(at_most: usize) -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let alive = metrics.num_alive_tasks();
        if alive <= at_most || tokio::time::Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_flow_at_the_viewers_pace_and_feeds_stop() {
    let site = Site::start().await;
    let provider = provider(&site);
    let lease = open(&provider, site.url("/animated")).await;
    let session = lease.context();
    // Let the page's own start-up tasks settle before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = tasks_settle(0).await;

    let mut feed = bounded("watch", session.watch()).await.unwrap();
    let frame = next(&mut feed).await;
    assert_eq!(&frame.jpeg[..2], &[0xFF, 0xD8], "a JPEG");
    assert_eq!((frame.width, frame.height), (1280, 800));

    // Frames keep coming only if every one taken is acknowledged, also when the consumer
    // gives up waiting (as inside `tokio::select!`) many times in between.
    for _ in 0..10 {
        for _ in 0..20 {
            let _ = tokio::time::timeout(Duration::from_millis(1), feed.next_frame()).await;
        }
        let frame = next(&mut feed).await;
        assert_eq!(&frame.jpeg[..2], &[0xFF, 0xD8]);
    }

    // A slow viewer: what it gets after a pause is a whole picture.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let frame = next(&mut feed).await;
    assert_eq!(&frame.jpeg[..2], &[0xFF, 0xD8]);
    assert_eq!(
        &frame.jpeg[frame.jpeg.len() - 2..],
        &[0xFF, 0xD9],
        "a whole JPEG"
    );

    // Two viewers at once: both get frames.
    let mut second = bounded("watch", session.watch()).await.unwrap();
    for _ in 0..5 {
        next(&mut feed).await;
        next(&mut second).await;
    }

    // Closed and dropped feeds leave nothing running.
    bounded("close", second.close()).await;
    drop(feed);
    let alive = tasks_settle(baseline).await;
    assert!(
        alive <= baseline,
        "feeds left tasks running: {alive} alive, {baseline} before"
    );

    // The page closes: a feed ends within 2 s, and the surface says the page is gone.
    let mut feed = bounded("watch", session.watch()).await.unwrap();
    next(&mut feed).await;
    bounded("closing the page", session.page().close())
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        while feed.next_frame().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the feed did not end within 2 s of the page closing"
    );
    assert!(
        feed.next_frame().await.is_none(),
        "an ended feed stays ended"
    );
    bounded("close", feed.close()).await;
    let gone = session.input(LiveInput::Reload).await.unwrap_err();
    assert_eq!(gone.kind(), ProviderErrorKind::Crashed, "{gone}");
    let gone = session.location().await.unwrap_err();
    assert_eq!(gone.kind(), ProviderErrorKind::Crashed, "{gone}");
    let gone = session.watch().await.err().expect("watch on a closed page");
    assert_eq!(gone.kind(), ProviderErrorKind::Crashed, "{gone}");

    let _ = bounded("release", lease.release()).await;
    bounded("shutdown", provider.shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_input_reaches_the_page() {
    let site = Site::start().await;
    let provider = provider(&site);
    let lease = open(&provider, site.url("/form")).await;
    let session = lease.context();

    // A press and release on the button runs its click handler, once.
    let button = centre(session, "btn").await;
    click(session, button).await;
    until(session, "window.__clicks === 1").await;

    // A click focuses the field; text in any script goes in exactly.
    let field = centre(session, "a").await;
    click(session, field).await;
    until(session, "document.activeElement.id === 'a'").await;
    let typed = "日本語 ✓ émoji 🙂";
    text(session, typed).await;
    assert_eq!(value_of(session, "a").await, typed);

    // Backspace removes one character (the emoji, whole).
    key(session, LiveKey::Backspace, Modifiers::NONE).await;
    assert_eq!(
        value_of(session, "a").await,
        typed.strip_suffix('🙂').unwrap()
    );

    // Ctrl+A selects everything: Backspace then empties the field.
    key(session, LiveKey::Shortcut('a'), CTRL).await;
    key(session, LiveKey::Backspace, Modifiers::NONE).await;
    assert_eq!(value_of(session, "a").await, "");

    // Ctrl+Z brings it back; Home and Delete edit at the start.
    key(session, LiveKey::Shortcut('z'), CTRL).await;
    assert_eq!(
        value_of(session, "a").await,
        typed.strip_suffix('🙂').unwrap()
    );
    key(session, LiveKey::Shortcut('a'), CTRL).await;
    key(session, LiveKey::Delete, Modifiers::NONE).await;
    assert_eq!(value_of(session, "a").await, "");

    // Cmd+A (a person on macOS) selects everything too; copy and paste go through the
    // browser's clipboard.
    text(session, "copy").await;
    key(session, LiveKey::Shortcut('a'), META).await;
    key(session, LiveKey::Shortcut('c'), CTRL).await;
    key(session, LiveKey::End, Modifiers::NONE).await;
    key(session, LiveKey::Shortcut('v'), META).await;
    assert_eq!(value_of(session, "a").await, "copycopy");
    key(session, LiveKey::Shortcut('a'), META).await;
    key(session, LiveKey::Backspace, Modifiers::NONE).await;
    assert_eq!(value_of(session, "a").await, "");

    text(session, "alice").await;
    key(session, LiveKey::Home, Modifiers::NONE).await;
    key(session, LiveKey::Delete, Modifiers::NONE).await;
    key(session, LiveKey::End, Modifiers::NONE).await;
    key(session, LiveKey::ArrowLeft, Modifiers::NONE).await;
    text(session, "-").await;
    assert_eq!(value_of(session, "a").await, "lic-e");

    // Tab moves focus to the next field.
    key(session, LiveKey::Tab, Modifiers::NONE).await;
    until(session, "document.activeElement.id === 'b'").await;
    text(session, "x y").await;

    // Enter submits the form.
    key(session, LiveKey::Enter, Modifiers::NONE).await;
    let url = until_title(session, "Done").await;
    assert!(url.ends_with("/done?a=lic-e&b=x+y"), "submitted to {url}");

    // The wheel scrolls.
    bounded("goto", session.page().goto(&site.url("/tall"), None))
        .await
        .unwrap();
    input(
        session,
        LiveInput::Wheel {
            x: 640.0,
            y: 400.0,
            delta_x: 0.0,
            delta_y: 600.0,
        },
    )
    .await;
    until(session, "window.scrollY > 0").await;

    // Not-finite coordinates are refused, not sent.
    let refused = session
        .input(LiveInput::Wheel {
            x: f64::NAN,
            y: 0.0,
            delta_x: 0.0,
            delta_y: 1.0,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ProviderErrorKind::Rejected);

    let _ = bounded("release", lease.release()).await;
    bounded("shutdown", provider.shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_moves_through_history_and_location_follows() {
    let site = Site::start().await;
    let provider = provider(&site);
    let lease = open(&provider, site.url("/one")).await;
    let session = lease.context();

    let here = bounded("location", session.location()).await.unwrap();
    assert_eq!(here.title, "One");
    assert_eq!(here.url, site.url("/one"));

    let two = url::Url::parse(&site.url("/two?tab=1")).unwrap();
    input(session, LiveInput::Navigate { url: two }).await;
    assert_eq!(until_title(session, "Two").await, site.url("/two?tab=1"));

    input(session, LiveInput::Back).await;
    assert_eq!(until_title(session, "One").await, site.url("/one"));
    input(session, LiveInput::Forward).await;
    assert_eq!(until_title(session, "Two").await, site.url("/two?tab=1"));

    // Forward at the end of the history does nothing.
    input(session, LiveInput::Forward).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(until_title(session, "Two").await, site.url("/two?tab=1"));

    // Reload loads the page again: what the page held is gone.
    eval::<bool>(session, "(window.__marker = true)").await;
    input(session, LiveInput::Reload).await;
    until(session, "window.__marker === undefined").await;
    assert_eq!(until_title(session, "Two").await, site.url("/two?tab=1"));

    // Back at the start of the history does nothing (and does not fail).
    for _ in 0..4 {
        input(session, LiveInput::Back).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let start = bounded("location", session.location()).await.unwrap();
    assert_ne!(start.title, "Two", "Back went back");

    // The page crashes: feeds end within 2 s, and the surface says the page is gone.
    let mut feed = bounded("watch", session.watch()).await.unwrap();
    next(&mut feed).await;
    let crasher = bounded(
        "a CDP session",
        session.context().new_cdp_session(session.page()),
    )
    .await
    .unwrap();
    // A crashed renderer never answers `Page.crash`: do not wait for it.
    let crash = tokio::spawn(async move {
        let _ = tokio::time::timeout(WAIT, crasher.send("Page.crash", None)).await;
    });
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        while feed.next_frame().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the feed did not end within 2 s of the crash"
    );
    crash.abort();
    bounded("close", feed.close()).await;
    let gone = bounded("an input", session.input(LiveInput::Reload))
        .await
        .unwrap_err();
    assert_eq!(gone.kind(), ProviderErrorKind::Crashed, "{gone}");
    let gone = bounded("location", session.location()).await.unwrap_err();
    assert_eq!(gone.kind(), ProviderErrorKind::Crashed, "{gone}");

    let _ = bounded("release", lease.release()).await;
    bounded("shutdown", provider.shutdown()).await;
}
