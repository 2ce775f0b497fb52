//! The attack pages and the harmless corpus on real Chromium **without any ABR guard**:
//! plain Playwright through the local provider (its egress proxy allows exactly the site's
//! `host:port`). Every attack page's committing action, and every background write, must
//! reach the write ledger here: that is what makes "the ledger stays empty under read-only"
//! in the guard's own tests mean something. Every harmless control must be reached (its
//! `GET` recorded) while the ledger stays empty.
//!
//! Service workers: ABR's local provider blocks them in every context (Playwright's
//! `serviceWorkers: 'block'`, under which `register()` answers nothing). The test asserts
//! that the page sees the block, and then proves the worker's writes in a second, plain
//! context of the same browser (no ABR settings, no proxy), which it closes.
//!
//! Shared workers: where the browser has `SharedWorker`, the shared worker's write must reach
//! the ledger, in the lease's context and in the plain one. A local provider that launches
//! its browsers without it (their requests are the one kind Playwright cannot route) leaves
//! nothing to prove: the test then checks that nothing else was written and says so.
//!
//! One browser and one site for the whole file; the scenarios run one after another.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::time::{Duration, Instant};

use abr_core::{AcquireMode, AcquireRequest, EgressPolicy, SessionProvider};
use abr_demo::DemoSite;
use abr_demo::site::{
    ATTACK_BUTTONS, HARMLESS_CORPUS, HarmlessAction, HarmlessControl, LedgerEntry,
};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};
use playwright_rs::protocol::Page;

/// How long a write may take to reach the ledger.
const WRITE_WAIT: Duration = Duration::from_secs(15);
/// How long a test watches for a write that must not happen.
const QUIET_WAIT: Duration = Duration::from_millis(500);

type Outcome = Result<(), String>;

/// Polls `done` every 20 ms until it holds or `timeout` passed.
async fn wait(mut done: impl FnMut() -> bool, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn post(path: &str) -> LedgerEntry {
    LedgerEntry::new("POST", path)
}

fn submitted(form: &str) -> LedgerEntry {
    post("/attack/submit").with_detail(form)
}

/// One page of the browser, on the site.
struct Tab<'a> {
    site: &'a DemoSite,
    page: &'a Page,
}

impl Tab<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.site.base_url())
    }

    async fn open(&self, path: &str) -> Outcome {
        let mut interrupted = 0;
        loop {
            match self.page.goto(&self.url(path), None).await {
                Ok(_) => return Ok(()),
                // A navigation the last check's page started (a form it submitted, late
                // under load) can land now and interrupt this one, and under load the
                // interrupted attempt's own navigation can land on the next one (CI saw
                // "to js-post interrupted by another to js-post"): those are the last
                // page's, not this check's subject. Let the page settle, go again (3 times).
                Err(e) if interrupted < 3 && e.to_string().contains("interrupted by another") => {
                    interrupted += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(format!("open {path}: {e}")),
            }
        }
    }

    /// A fresh ledger and `path` loaded.
    async fn fresh(&self, path: &str) -> Outcome {
        self.open(path).await?;
        self.site.reset_ledger();
        Ok(())
    }

    async fn click(&self, selector: &str) -> Outcome {
        self.page
            .locator(selector)
            .click(None)
            .await
            .map_err(|e| format!("click {selector}: {e}"))
    }

    async fn text(&self, selector: &str) -> String {
        self.page
            .locator(selector)
            .text_content()
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Waits until the ledger holds `want`.
    async fn written(&self, want: &LedgerEntry) -> Outcome {
        if wait(|| self.site.ledger().contains(want), WRITE_WAIT).await {
            return Ok(());
        }
        Err(format!(
            "{want:?} never reached the ledger; it holds {:?}",
            self.site.ledger()
        ))
    }

    /// Waits for `want`, then checks it is the only write.
    async fn written_alone(&self, want: &LedgerEntry) -> Outcome {
        self.written(want).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let ledger = self.site.ledger();
        if ledger != [want.clone()] {
            return Err(format!(
                "expected only {want:?}, the ledger holds {ledger:?}"
            ));
        }
        Ok(())
    }

    /// Checks that nothing reaches the ledger for a while.
    async fn quiet(&self) -> Outcome {
        tokio::time::sleep(QUIET_WAIT).await;
        let ledger = self.site.ledger();
        if ledger.is_empty() {
            Ok(())
        } else {
            Err(format!("expected no write, the ledger holds {ledger:?}"))
        }
    }

    async fn focused_id(&self) -> String {
        self.page
            .evaluate_value("document.activeElement ? document.activeElement.id : ''")
            .await
            .unwrap_or_default()
    }
}

/// Where a chord is pressed on `/attack/chord`.
#[derive(Debug, Clone, Copy)]
enum ChordAt {
    Pay,
    Field,
    /// On the page (the keyboard), with the focus where `autofocus` put it: on `#pay`.
    Page,
}

async fn chord(tab: &Tab<'_>, at: ChordAt, key: &str, commits: bool) -> Outcome {
    tab.fresh("/attack/chord").await?;
    let pressed = match at {
        ChordAt::Pay => tab.page.locator("#pay").press(key, None).await,
        ChordAt::Field => tab.page.locator("#field").press(key, None).await,
        ChordAt::Page => {
            // `autofocus` is applied after the page loaded: wait for it (a loaded machine
            // may take a moment), then require it.
            let mut focused = tab.focused_id().await;
            for _ in 0..100 {
                if focused == "pay" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                focused = tab.focused_id().await;
            }
            if focused != "pay" {
                return Err(format!("autofocus put the focus on {focused:?}, not #pay"));
            }
            tab.page.keyboard().press(key, None).await
        }
    };
    pressed.map_err(|e| format!("press {key}: {e}"))?;
    if commits {
        tab.written_alone(&submitted("chord")).await
    } else {
        tab.quiet().await
    }
}

async fn implicit(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/implicit").await?;
    let q = tab.page.locator("#q");
    q.fill("milk", None).await.map_err(|e| e.to_string())?;
    q.press("Enter", None).await.map_err(|e| e.to_string())?;
    tab.written_alone(&submitted("implicit")).await
}

async fn chat(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/chat").await?;
    let chat = tab.page.locator("#chat");
    chat.click(None).await.map_err(|e| e.to_string())?;
    chat.press_sequentially("Hello", None)
        .await
        .map_err(|e| e.to_string())?;
    tab.quiet()
        .await
        .map_err(|e| format!("typing alone: {e}"))?;
    chat.press("Enter", None).await.map_err(|e| e.to_string())?;
    tab.written_alone(&post("/attack/api/message").with_detail("chat"))
        .await
}

async fn select_submit(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/select-submit").await?;
    tab.page
        .locator("#plan")
        .select_option("pro", None)
        .await
        .map_err(|e| e.to_string())?;
    tab.written_alone(&submitted("select-submit")).await
}

async fn switch(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/switch").await?;
    tab.click("#notify").await?;
    tab.written_alone(&post("/attack/api/settings").with_detail("notify"))
        .await
}

async fn checkbox(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/checkbox").await?;
    tab.click("#auto").await?;
    tab.written_alone(&submitted("checkbox")).await
}

async fn buttons(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/buttons").await?;
    let mut missing = Vec::new();
    for id in ATTACK_BUTTONS {
        tab.click(&format!("#{id}")).await?;
        let want = post("/attack/api/action").with_detail(id);
        if tab.written(&want).await.is_err() {
            missing.push(*id);
        }
    }
    if !missing.is_empty() {
        return Err(format!("buttons that wrote nothing: {missing:?}"));
    }
    let expected: Vec<LedgerEntry> = ATTACK_BUTTONS
        .iter()
        .map(|id| post("/attack/api/action").with_detail(id))
        .collect();
    let ledger = tab.site.ledger();
    if ledger != expected {
        return Err(format!(
            "one write per button, in order; the ledger holds {ledger:?}"
        ));
    }
    Ok(())
}

async fn click_submits(tab: &Tab<'_>, page: &str, selector: &str, want: LedgerEntry) -> Outcome {
    tab.fresh(&format!("/attack/{page}")).await?;
    tab.click(selector).await?;
    tab.written_alone(&want).await
}

async fn typing_submit(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/typing-submit").await?;
    tab.page
        .locator("#code")
        .press_sequentially("S", None)
        .await
        .map_err(|e| e.to_string())?;
    tab.written_alone(&submitted("typing-submit")).await
}

async fn js_post(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/js-post").await?;
    tab.click("#more").await?;
    tab.written_alone(&post("/attack/api/track")).await?;
    let shown = wait_visible(tab, "#extra").await;
    if !shown {
        return Err("#extra was not shown".into());
    }
    Ok(())
}

async fn wait_visible(tab: &Tab<'_>, selector: &str) -> bool {
    let deadline = Instant::now() + WRITE_WAIT;
    while Instant::now() < deadline {
        if tab
            .page
            .locator(selector)
            .is_visible()
            .await
            .unwrap_or(false)
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn graphql(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/graphql").await?;
    for (button, detail) in [
        ("#query", "query"),
        ("#mutation", "mutation"),
        ("#batch", "batch"),
    ] {
        tab.click(button).await?;
        tab.written(&post("/attack/graphql").with_detail(detail))
            .await?;
    }
    let ledger = tab.site.ledger();
    if ledger.len() != 3 {
        return Err(format!(
            "three operations, three writes; the ledger holds {ledger:?}"
        ));
    }
    Ok(())
}

async fn link_get(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/link-get").await?;
    tab.click("#unsubscribe").await?;
    tab.written_alone(&LedgerEntry::new("GET!", "/attack/api/unsubscribe"))
        .await
}

async fn timer(tab: &Tab<'_>) -> Outcome {
    tab.site.reset_ledger();
    let loaded = Instant::now();
    tab.open("/attack/timer").await?;
    tab.written(&post("/attack/api/timer").with_detail("load"))
        .await?;
    let after = loaded.elapsed();
    if after > Duration::from_secs(2) {
        return Err(format!(
            "the load write came {after:?} after the load began"
        ));
    }
    tab.click("#go").await?;
    tab.written(&post("/attack/api/timer").with_detail("click"))
        .await
}

async fn beacon(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/beacon").await?;
    tab.click("#go").await?;
    tab.written_alone(&post("/attack/api/beacon").with_detail("click"))
        .await?;
    tab.open("/attack/landing").await?;
    tab.written(&post("/attack/api/beacon").with_detail("pagehide"))
        .await
}

async fn ping(tab: &Tab<'_>) -> Outcome {
    let pinged = post("/attack/api/ping");
    for trigger in ["#pinged", "#go"] {
        tab.fresh("/attack/ping").await?;
        tab.click(trigger).await?;
        tab.written(&pinged)
            .await
            .map_err(|e| format!("{trigger}: {e}"))?;
        let landed = wait(|| tab.page.url().ends_with("/attack/landing"), WRITE_WAIT).await;
        if !landed {
            return Err(format!("{trigger} did not lead to /attack/landing"));
        }
    }
    Ok(())
}

async fn keepalive(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/keepalive").await?;
    tab.click("#go").await?;
    tab.written_alone(&post("/attack/api/keepalive").with_detail("click"))
        .await
}

/// Whether the page's browser offers `SharedWorker`: the local provider may launch its
/// browsers without it (their requests are the one kind Playwright cannot route).
async fn has_shared_worker(tab: &Tab<'_>) -> bool {
    tab.page
        .evaluate_value("typeof SharedWorker")
        .await
        .is_ok_and(|t| t == "function")
}

/// The dedicated worker writes when messaged; so does the shared worker where the browser
/// has `SharedWorker` (answered: whether it has), and where it has not, nothing else writes.
async fn workers(tab: &Tab<'_>) -> Result<bool, String> {
    tab.fresh("/attack/worker").await?;
    let shared = has_shared_worker(tab).await;
    tab.quiet()
        .await
        .map_err(|e| format!("before the click: {e}"))?;
    tab.click("#go").await?;
    let mut expected = vec![post("/attack/api/worker").with_detail("message")];
    if shared {
        expected.push(post("/attack/api/shared-worker").with_detail("message"));
    }
    for want in &expected {
        if let Err(e) = tab.written(want).await {
            return Err(format!(
                "{e}; the page says {:?}",
                tab.text("#status").await
            ));
        }
    }
    let answered = wait_text(tab, "#status", "worker: sent 200").await
        && (!shared || wait_text(tab, "#status", "shared: sent 200").await);
    if !answered {
        return Err(format!(
            "the workers did not report their writes: {:?}",
            tab.text("#status").await
        ));
    }
    // The two workers write in either order; nothing else writes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ledger = tab.site.ledger();
    if ledger.len() != expected.len() || !expected.iter().all(|e| ledger.contains(e)) {
        return Err(format!(
            "expected {expected:?} (in any order), the ledger holds {ledger:?}"
        ));
    }
    Ok(shared)
}

/// Waits until the text of `selector` contains `part`.
async fn wait_text(tab: &Tab<'_>, selector: &str, part: &str) -> bool {
    let deadline = Instant::now() + WRITE_WAIT;
    while Instant::now() < deadline {
        if tab.text(selector).await.contains(part) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Under ABR's local provider the registration is blocked: the page says so, and nothing
/// the worker would send reaches the ledger.
async fn service_worker_blocked(tab: &Tab<'_>) -> Outcome {
    // Emptied before the load, so a write during it is seen, not erased (as `fresh` would).
    tab.site.reset_ledger();
    tab.open("/attack/sw").await?;
    let settled = wait_text(tab, "#sw-status", "blocked").await;
    if !settled {
        return Err(format!(
            "expected the registration to be blocked, #sw-status says {:?}",
            tab.text("#sw-status").await
        ));
    }
    tab.click("#go").await?;
    tab.quiet().await
}

/// In a plain context of the same browser (service workers allowed, no proxy), the worker
/// writes on install, on activate and when messaged.
async fn service_worker_unblocked(tab: &Tab<'_>) -> Outcome {
    // The ledger is emptied before the page loads: the worker registers while it loads
    // and may write `install` before `goto` returns, which `fresh` would then erase.
    tab.site.reset_ledger();
    tab.open("/attack/sw").await?;
    let settled = wait_text(tab, "#sw-status", "active").await;
    if !settled {
        return Err(format!(
            "expected the worker to become active, #sw-status says {:?}",
            tab.text("#sw-status").await
        ));
    }
    tab.written(&post("/attack/api/sw").with_detail("install"))
        .await?;
    tab.written(&post("/attack/api/sw").with_detail("activate"))
        .await?;
    tab.click("#go").await?;
    tab.written(&post("/attack/api/sw").with_detail("message"))
        .await
}

async fn websocket(tab: &Tab<'_>) -> Outcome {
    tab.site.reset_ledger();
    tab.open("/attack/ws").await?;
    tab.written(&LedgerEntry::new("WS-OPEN", "/attack/ws"))
        .await?;
    tab.written(&LedgerEntry::new("WS", "/attack/ws").with_detail("open"))
        .await?;
    tab.click("#go").await?;
    tab.written(&LedgerEntry::new("WS", "/attack/ws").with_detail("click"))
        .await?;
    if !wait_text(tab, "#ws-status", "server: received").await {
        return Err(format!(
            "#ws-status says {:?}",
            tab.text("#ws-status").await
        ));
    }
    Ok(())
}

async fn iframe(tab: &Tab<'_>) -> Outcome {
    tab.fresh("/attack/iframe").await?;
    tab.page
        .frame_locator("#frame")
        .locator("#frame-more")
        .focus()
        .await
        .map_err(|e| e.to_string())?;
    tab.page
        .keyboard()
        .press("Enter", None)
        .await
        .map_err(|e| e.to_string())?;
    tab.written_alone(&submitted("iframe")).await?;

    // The other frame's "Show more" only reads.
    tab.fresh("/attack/iframe").await?;
    tab.site.reset_harmless();
    tab.page
        .frame_locator("#frame-harmless")
        .locator("#frame-show")
        .focus()
        .await
        .map_err(|e| e.to_string())?;
    tab.page
        .keyboard()
        .press("Enter", None)
        .await
        .map_err(|e| e.to_string())?;
    let seen = wait(
        || {
            tab.site
                .harmless_seen()
                .iter()
                .any(|id| id == "attack-frame-show")
        },
        WRITE_WAIT,
    )
    .await;
    if !seen {
        return Err("the harmless frame's Show more was not reached".into());
    }
    tab.quiet().await
}

fn path_of(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.path().to_owned())
        .unwrap_or_default()
}

/// Exercises one harmless control as its action says, on `/harmless`.
async fn exercise(tab: &Tab<'_>, control: &HarmlessControl) -> Outcome {
    let selector = format!("#{}", control.id);
    let locator = match control.frame {
        Some(frame) => tab
            .page
            .frame_locator(format!("#{frame}").as_str())
            .locator(&selector),
        None => tab.page.locator(&selector),
    };
    let done = match control.action {
        HarmlessAction::Click => locator.click(None).await,
        HarmlessAction::Enter => match locator.fill("oak", None).await {
            Ok(()) => locator.press("Enter", None).await,
            Err(e) => Err(e),
        },
        HarmlessAction::PressPage => match locator.focus().await {
            Ok(()) => tab.page.keyboard().press("Enter", None).await,
            Err(e) => Err(e),
        },
        HarmlessAction::Select(option) => locator.select_option(option, None).await.map(|_| ()),
    };
    done.map_err(|e| format!("{} {selector}: {e}", control.action.as_str()))
}

async fn harmless(tab: &Tab<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    tab.site.reset_ledger();
    tab.site.reset_harmless();
    for control in HARMLESS_CORPUS {
        let id = control.id;
        if path_of(&tab.page.url()) != "/harmless"
            && let Err(e) = tab.open("/harmless").await
        {
            problems.push(e);
            continue;
        }
        if let Err(e) = exercise(tab, control).await {
            problems.push(format!("harmless {id}: {e}"));
            continue;
        }
        let reached = wait(
            || tab.site.harmless_seen().iter().any(|s| s == id),
            WRITE_WAIT,
        )
        .await;
        if !reached {
            problems.push(format!("harmless {id}: never recorded ({})", control.what));
        }
        if control.navigates {
            let left = wait(
                || path_of(&tab.page.url()) == "/harmless/results",
                WRITE_WAIT,
            )
            .await;
            if !left {
                problems.push(format!(
                    "harmless {id}: expected to land on /harmless/results"
                ));
            }
        } else if path_of(&tab.page.url()) != "/harmless" {
            problems.push(format!("harmless {id}: left the page ({})", tab.page.url()));
        }
        let ledger = tab.site.ledger();
        if !ledger.is_empty() {
            problems.push(format!("harmless {id}: wrote {ledger:?}"));
            tab.site.reset_ledger();
        }
    }
    // A last look for a late write.
    tokio::time::sleep(QUIET_WAIT).await;
    let ledger = tab.site.ledger();
    if !ledger.is_empty() {
        problems.push(format!("the harmless corpus wrote {ledger:?}"));
    }
    let mut seen = tab.site.harmless_seen();
    seen.sort_unstable();
    seen.dedup();
    let mut all: Vec<String> = HARMLESS_CORPUS.iter().map(|c| c.id.to_owned()).collect();
    all.sort_unstable();
    if seen != all {
        problems.push(format!(
            "harmless controls reached: {seen:?}, expected {all:?}"
        ));
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_pages_write_and_harmless_controls_only_read_in_a_plain_browser() {
    let site = DemoSite::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        // The browser may reach exactly the demo site on loopback.
        egress: Some(EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    });
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "demo".into(),
            state: None,
            start_url: None,
        })
        .await
        .expect("a browser");
    let page = lease.context().page().clone();
    page.set_default_timeout(5000.0).await;
    let tab = Tab {
        site: &site,
        page: &page,
    };
    let started = Instant::now();
    let mut problems: Vec<String> = Vec::new();
    let mut check = |label: &str, outcome: Outcome| {
        if let Err(e) = outcome {
            problems.push(format!("{label}: {e}"));
        }
    };

    for (at, key, commits) in [
        (ChordAt::Pay, "Enter+Shift", true),
        (ChordAt::Pay, "Shift+Enter", true),
        (ChordAt::Pay, "Space+Shift", true),
        (ChordAt::Field, "Enter+Shift", true),
        (ChordAt::Field, "Shift+Enter", true),
        // A space in a text field is only a space.
        (ChordAt::Field, "Space+Shift", false),
        (ChordAt::Page, "Enter+Shift", true),
        (ChordAt::Page, "Shift+Enter", true),
        (ChordAt::Page, "Space+Shift", true),
    ] {
        check(
            &format!("chord {key} on {at:?}"),
            chord(&tab, at, key, commits).await,
        );
    }
    check("implicit", implicit(&tab).await);
    check("chat", chat(&tab).await);
    check("select-submit", select_submit(&tab).await);
    check("switch", switch(&tab).await);
    check("checkbox", checkbox(&tab).await);
    check("buttons", buttons(&tab).await);
    check(
        "shadow",
        click_submits(&tab, "shadow", "#continue", submitted("shadow")).await,
    );
    check(
        "label-submit",
        click_submits(&tab, "label-submit", "#go", submitted("label-submit")).await,
    );
    check(
        "div-button",
        click_submits(
            &tab,
            "div-button",
            "#save",
            post("/attack/api/save").with_detail("save"),
        )
        .await,
    );
    check("typing-submit", typing_submit(&tab).await);
    check("js-post", js_post(&tab).await);
    check("graphql", graphql(&tab).await);
    check("link-get", link_get(&tab).await);
    check("timer", timer(&tab).await);
    check("beacon", beacon(&tab).await);
    check("ping", ping(&tab).await);
    check("keepalive", keepalive(&tab).await);
    let shared_worker = workers(&tab).await;
    check("worker", shared_worker.clone().map(|_| ()));
    check(
        "service worker under ABR",
        service_worker_blocked(&tab).await,
    );
    check("websocket", websocket(&tab).await);
    check("iframe", iframe(&tab).await);
    problems.extend(harmless(&tab).await);

    // The service worker (and the workers again) in a plain context of the same browser.
    match lease.context().context().browser() {
        Some(browser) => match browser.new_context().await {
            Ok(context) => {
                match context.new_page().await {
                    Ok(plain) => {
                        let plain_tab = Tab {
                            site: &site,
                            page: &plain,
                        };
                        plain.set_default_timeout(5000.0).await;
                        if let Err(e) = service_worker_unblocked(&plain_tab).await {
                            problems.push(format!("service worker in a plain context: {e}"));
                        }
                        match workers(&plain_tab).await {
                            Ok(true) => {}
                            Ok(false) if shared_worker == Ok(false) => eprintln!(
                                "note: this browser has no SharedWorker (the local provider \
                                 launched it without): the shared worker could not write"
                            ),
                            Ok(false) => problems.push(
                                "the plain context has no SharedWorker, the lease's has".into(),
                            ),
                            Err(e) => problems.push(format!("workers in a plain context: {e}")),
                        }
                    }
                    Err(e) => problems.push(format!("a plain page: {e}")),
                }
                if let Err(e) = context.close().await {
                    problems.push(format!("closing the plain context: {e}"));
                }
            }
            Err(e) => problems.push(format!("a plain context: {e}")),
        },
        None => problems.push("the lease's context has no browser".into()),
    }

    eprintln!("attack and harmless pages: {:?}", started.elapsed());
    lease.release().await.unwrap();
    provider.shutdown().await;
    site.shutdown().await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
