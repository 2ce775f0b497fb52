//! Sensitive text a page shows is unreadable in a kept frame, read back by OCR (Debian's
//! `tesseract`): canaries of every built-in kind as page text, in the document, a
//! same-origin frame and an open shadow root, and a platform's own pattern and selector.
//! The same page without the masks is read by the same OCR: the comparison can fail.

use std::io::Write as _;
use std::process::{Command, Stdio};

use abr_core::guard::{FrameError, MAX_FRAME_BYTES, PageProbe, PageRedaction};
use abr_protocol::RedactionSpec;
use abr_providers::BrowserSession;
use playwright_rs::protocol::{ScreenshotOptions, ScreenshotType};

use crate::probe::{STEP, Site, close, eval, go, open};

/// Canaries of every built-in kind, in the document, a same-origin frame and an open
/// shadow root; a platform's account number and balance; two lines that must stay readable.
pub(crate) const SENSITIVE_PAGE: &str = r#"<!doctype html><html><head><style>
body { font: 26px/1.4 sans-serif; margin: 16px; color: #000; background: #fff; }
h1 { font-size: 34px; margin: 0 0 8px; }
p { margin: 0; }
.glow { text-shadow: 2px 2px 0 #c00; }
iframe { border: 0; width: 1200px; height: 112px; display: block; }
</style></head><body>
<h1>Quarterly Report Summary</h1>
<p>Order 42 shipped 2026-12-07 by truck</p>
<p>Contact ada.lovelace@example.com today</p>
<p>Phone +44 20 7946 0958 after noon</p>
<p>Card 4111 1111 1111 1111 on file</p>
<p>Account DE89 3704 0044 0532 0130 00 held</p>
<p>Server 10.20.30.40 and <span class="glow">vault.corp.internal</span> up</p>
<p>Key ghp9aZ3kQ7mX2vB8nL4pR6tY1wE5uI0oS3dF7gH set</p>
<p>Ref ACCT-553311 open <span class="balance">Balance EUR 86.75 due</span></p>
<iframe srcdoc="<style>body{font:26px/1.4 sans-serif;margin:0}p{margin:0}</style><p>Frame grace.hopper@navy.example here</p><p>Frame 192.168.44.77 route</p><p>Frame +1 415 555 0132 line</p>"></iframe>
<div id="host"></div>
<script>
const sr = document.getElementById('host').attachShadow({ mode: 'open' });
sr.innerHTML = '<style>p{margin:0}</style><p>Shadow 5500 0000 0000 0004 card</p>' +
  '<p>Shadow GB82 WEST 1234 5698 7654 32 bank</p><p>Shadow build7.lan box</p>';
</script>
</body></html>"#;

/// What OCR reads of each canary in the clear, as [`normalized`] text.
const CANARIES: &[&str] = &[
    "lovelace@example",
    "79460958",
    "4111111111111111",
    "de89370400440532013000",
    "10.20.30.40",
    "vault.corp.internal",
    "ghp9az3kq7mx2vb8nl4pr6ty",
    "grace.hopper@navy",
    "192.168.44.77",
    "4155550132",
    "5500000000000004",
    "gb82west12345698765432",
    "build7.lan",
];

/// The platform's: its pattern's match and its selector's element.
const ACCOUNT: &str = "acct553311";
const BALANCE: &str = "eur86.75";

/// Lines that are not sensitive: readable in every frame.
const HARMLESS: &[&str] = &["quarterlyreportsummary", "order42shipped"];

/// Lowercase letters, digits, `@` and `.`: what OCR reads, without spaces or dashes.
fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '@' || *c == '.')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// What Debian's `tesseract` reads in `image` (PNG or JPEG), normalized.
fn ocr(image: &[u8]) -> String {
    let mut child = Command::new("tesseract")
        .args(["stdin", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("tesseract is missing ({e}): driver/setup installs tesseract-ocr from Debian")
        });
    child.stdin.take().unwrap().write_all(image).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "tesseract failed");
    normalized(&String::from_utf8_lossy(&out.stdout))
}

/// The viewport as the page paints it, without any redaction.
async fn plain(session: &BrowserSession) -> Vec<u8> {
    let options = ScreenshotOptions::builder()
        .screenshot_type(ScreenshotType::Png)
        .build();
    session.page().screenshot(options).await.unwrap()
}

fn platform(patterns: &[&str], selectors: &[&str]) -> PageRedaction {
    PageRedaction::from_spec(&RedactionSpec {
        patterns: patterns.iter().map(|s| (*s).to_owned()).collect(),
        selectors: selectors.iter().map(|s| (*s).to_owned()).collect(),
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_text_is_unreadable_in_a_frame_while_a_heading_stays_readable() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/sensitive").as_str()).await;

    let clear = ocr(&plain(s).await);
    for text in CANARIES.iter().chain(HARMLESS).chain(&[ACCOUNT, BALANCE]) {
        assert!(
            clear.contains(text),
            "the comparison can fail: OCR reads {text:?} without the masks in {clear:?}"
        );
    }

    let redaction = platform(&[r"ACCT-\d{6}"], &[".balance"]);
    let frame = s
        .redacted_frame(MAX_FRAME_BYTES, &redaction, STEP)
        .await
        .unwrap_or_else(|e| panic!("a redacted frame: {e}"));
    let read = ocr(&frame.jpeg);
    eprintln!("masked {} runs; OCR of the frame: {read:?}", frame.masked);
    for text in CANARIES.iter().chain(&[ACCOUNT, BALANCE]) {
        assert!(
            !read.contains(text),
            "{text:?} is readable in the frame: {read:?}"
        );
        // Not even its last five characters.
        let tail = &text[text.len() - 5..];
        assert!(
            !read.contains(tail),
            "{tail:?} of {text:?} is readable: {read:?}"
        );
    }
    for text in HARMLESS {
        assert!(read.contains(text), "{text:?} is masked too: {read:?}");
    }
    // The document's 8 (the platform's pattern one of them), the frame's 3 and the shadow
    // root's 3.
    assert_eq!(frame.masked, 14);
    assert_eq!(
        frame.blurred, 1,
        "the platform's selector: its element blurred whole"
    );
    assert_eq!(
        eval(s, "() => CSS.highlights.size").await,
        0,
        "the masks are off after the frame"
    );

    // Without the platform's additions its account number shows: the pattern is what hid
    // it; every built-in kind is still masked.
    let builtin = s
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_or_else(|e| panic!("a frame with the built-in rule: {e}"));
    let read = ocr(&builtin.jpeg);
    assert!(read.contains(ACCOUNT) && read.contains(BALANCE), "{read:?}");
    for text in CANARIES {
        assert!(!read.contains(text), "{text:?} is readable: {read:?}");
    }

    // What a brain reads of the page is the page: the snapshot is never masked.
    let text = eval(s, "() => document.body.innerText").await;
    assert!(text.as_str().unwrap().contains("ada.lovelace@example.com"));
    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_that_cannot_be_masked_keeps_no_frame() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/sensitive").as_str()).await;

    // A platform pattern the page cannot compile: no frame, and the reason names it.
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &platform(&["(unclosed"], &[]), STEP)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FrameError::MaskUnconfirmed(why) if why.contains("pattern 1")),
        "{error}"
    );
    // An invalid selector likewise.
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &platform(&[], &["p[[["]), STEP)
        .await
        .unwrap_err();
    assert!(matches!(error, FrameError::MaskUnconfirmed(_)), "{error}");

    // A selection over sensitive text paints it in the selection's colours above any
    // highlight: the mask cannot be confirmed, so no frame is kept.
    eval(
        s,
        "() => { const p = [...document.querySelectorAll('p')][2]; \
         getSelection().selectAllChildren(p); }",
    )
    .await;
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FrameError::MaskUnconfirmed(why) if why.contains("sensitive text")),
        "{error}"
    );
    assert_eq!(eval(s, "() => CSS.highlights.size").await, 0, "masks off");

    // A page that takes the masks' highlight away while the frame is taken is refused too:
    // the check after the capture finds it gone.
    eval(s, "() => getSelection().removeAllRanges()").await;
    eval(
        s,
        "() => { const orig = CSS.highlights.set.bind(CSS.highlights); \
         CSS.highlights.set = (name, h) => { const r = orig(name, h); \
         queueMicrotask(() => CSS.highlights.delete(name)); return r; }; }",
    )
    .await;
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_err();
    assert!(matches!(error, FrameError::MaskUnconfirmed(_)), "{error}");
    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elements_box_is_where_a_frame_shows_it() {
    use abr_core::guard::Reach;
    use abr_protocol::Selector;
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/sensitive").as_str()).await;
    let heading = Selector::Css("h1".into());
    let at = s
        .element_box(&heading, Reach::FirstVisible, STEP)
        .await
        .expect("the heading's box");
    // The body's margin is 16 CSS pixels.
    assert_eq!((at.x.round(), at.y.round()), (16.0, 16.0), "{at:?}");
    assert!(at.width > 100.0 && at.height > 20.0, "{at:?}");
    // Scrolled, it moves up in the viewport a frame shows.
    eval(
        s,
        "() => { document.body.style.height = '5000px'; scrollTo(0, 50); }",
    )
    .await;
    let scrolled = s
        .element_box(&heading, Reach::FirstVisible, STEP)
        .await
        .unwrap();
    assert_eq!(scrolled.y.round(), -34.0, "{scrolled:?}");
    assert!(
        s.element_box(&Selector::Css("#nothing".into()), Reach::First, STEP)
            .await
            .is_none()
    );
    close(provider, lease).await;
}
