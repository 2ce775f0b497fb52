//! The `demo` strategy: posts to the [demo site](crate::site) through a real browser and
//! proves the outcome (toast, else read-back from `/feed`); re-checks an uncertain post by
//! reading `/feed` only.

use std::time::Duration;

use abr_core::{
    PlatformPacing, PolicyError, PostProgress, ReceiptNote, RecheckOutcome, StrategyError,
    StrategyPolicy, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};
use abr_protocol::{
    FailureStage, MediaAttachment, PlatformPolicy, PostContent, SessionScopeSpec, Verification,
    VerificationEvidence, VerificationMethod,
};
use abr_providers::BrowserSession;
use async_trait::async_trait;
use base64::Engine as _;
use playwright_rs::Error as PwError;
use playwright_rs::protocol::{
    ClickOptions, FilePayload, GotoOptions, Page, WaitForFunctionOptions, WaitForOptions,
    WaitForState,
};
use serde::Deserialize;
use url::Url;

/// Platform id of the strategy.
pub const PLATFORM: &str = "demo";

/// Error code of a step that ended because the page (or its context or browser) was
/// closed, whatever the step was waiting for.
pub const PAGE_CLOSED: &str = "page_closed";

const TEXT: &str = "#post-text";
const MEDIA: &str = "#media";
const MEDIA_SETTLED: &str = "#media-status.media-ok, #media-status.media-error";
const MEDIA_ERROR: &str = "#media-status.media-error";
const SUBMIT: &str = "#submit";
const TOAST_LINK: &str = ".toast-success a";
const ERROR_BANNER: &str = ".error-banner";

/// Marks the composer document before the click; a new document has no mark.
const MARK_SUBMIT: &str = "() => { window.__abrSubmitted = true; }";
const LANDED: &str = "() => window.__abrSubmitted !== true && document.readyState === 'complete'";

/// Reads the posts of a feed document: `[{id, text, link}]` (`link`: the item's permalink
/// `href` as written, `''` without one).
const READ_FEED: &str = "() => [...document.querySelectorAll('li.post')].map(li => ({ \
    id: li.dataset.id || '', text: (li.querySelector('.post-text') || {}).textContent || '', \
    link: li.querySelector('a.permalink')?.getAttribute('href') || '' }))";

/// Fetches `/feed` without navigating and reads its posts; `null` when signed out.
const FETCH_FEED: &str = "async () => { \
    const r = await fetch('/feed', { credentials: 'same-origin', redirect: 'manual' }); \
    if (r.type === 'opaqueredirect' || r.status === 401 || r.status === 403) return null; \
    if (!r.ok) throw new Error('feed answered HTTP ' + r.status); \
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html'); \
    return [...doc.querySelectorAll('li.post')].map(li => ({ \
      id: li.dataset.id || '', text: (li.querySelector('.post-text') || {}).textContent || '' })); }";

/// Deadlines of the strategy's browser steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoTimeouts {
    /// A page load (`goto`, the page after submit).
    pub navigation: Duration,
    /// Finding and acting on an element (composer, submit button).
    pub action: Duration,
    /// The media upload settling (`#media-status` ok or error).
    pub media: Duration,
    /// Waiting in `verify` for a toast that was not there at submit time.
    pub toast: Duration,
}

impl Default for DemoTimeouts {
    fn default() -> Self {
        Self {
            navigation: Duration::from_secs(15),
            action: Duration::from_secs(10),
            media: Duration::from_secs(20),
            toast: Duration::from_secs(8),
        }
    }
}

/// A base URL the strategy cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum DemoStrategyError {
    /// Not an absolute http(s) URL with a host.
    #[error("the demo site URL must be an absolute http(s) URL with a host: {0}")]
    InvalidBaseUrl(String),
    /// The derived policy (its session scope) was rejected.
    #[error("the demo site's policy is invalid: {0}")]
    Policy(#[from] PolicyError),
}

/// Posts to the demo site at a base URL.
///
/// - `is_authenticated`: loads `/compose`; signed in when the composer is there (not
///   redirected to `/login`).
/// - `post`: compose (`#post-text`: the text, plus the link on a new line), media
///   (`#media`, waits for `#media-status`; a refusal is `media_rejected`, nothing posted),
///   then submit (`#submit`) and wait for the next page. Landing on `/login` is
///   `needs_reauth`. The receipt holds a toast seen at once, whether `.error-banner` was
///   shown, and the feed posts with the same text that existed before (so read-back never
///   mistakes an older post for this one).
/// - `verify`: a toast (`.toast-success a`, waited for up to [`DemoTimeouts::toast`] unless
///   an error banner was shown) → confirmed by toast; else the post read back from `/feed`
///   → confirmed by read-back; else not posted if an error banner was shown, unconfirmed
///   otherwise.
/// - `recheck` (an uncertain post, later, in a fresh signed-in browser): only loads
///   `/feed`, as `verify`'s read-back does, and looks for the text as `post` composes it:
///   exactly one such post → confirmed (method `recheck`, the item's permalink); none → not
///   found; several → ambiguous; signed out (sent to `/login`) or an unreadable feed →
///   unavailable. It never composes, clicks or submits.
#[derive(Debug, Clone)]
pub struct DemoStrategy {
    base: Url,
    start_url: String,
    policy: StrategyPolicy,
    timeouts: DemoTimeouts,
}

/// What `post` hands `verify` in [`SubmitReceipt::note`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Note {
    /// The text as submitted (line breaks `\n`), for read-back.
    text: String,
    /// Ids of feed posts with the same text from before the submit.
    before: Vec<String>,
    /// Whether the page after submit showed `.error-banner`.
    banner: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct FeedPost {
    id: String,
    text: String,
    /// The item's permalink `href` as written (`""` without one; [`FETCH_FEED`] does not
    /// read it).
    #[serde(default)]
    link: String,
}

impl DemoStrategy {
    /// A strategy for the demo site at `base_url` (e.g. `http://127.0.0.1:8788`). Its
    /// policy allows capture and unattended runs, scoped to the site's host (cookies) and
    /// origin (localStorage).
    ///
    /// # Errors
    /// When `base_url` is not an absolute http(s) URL with a host, or its host cannot be a
    /// session scope (e.g. a public suffix).
    pub fn new(base_url: &str) -> Result<Self, DemoStrategyError> {
        let invalid = || DemoStrategyError::InvalidBaseUrl(base_url.to_owned());
        let mut base = Url::parse(base_url).map_err(|_| invalid())?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(invalid());
        }
        let host = base.host_str().ok_or_else(invalid)?.to_owned();
        base.set_path("/");
        base.set_query(None);
        base.set_fragment(None);
        let origin = base.origin().ascii_serialization();
        let policy = StrategyPolicy::from_spec(&PlatformPolicy {
            allow_interactive_capture: Some(true),
            allow_unattended: Some(true),
            session: Some(SessionScopeSpec {
                cookie_domains: vec![host],
                origins: vec![origin],
            }),
            ..PlatformPolicy::default()
        })?;
        let start_url = base.join("login").map_err(|_| invalid())?.to_string();
        Ok(Self {
            base,
            start_url,
            policy,
            timeouts: DemoTimeouts::default(),
        })
    }

    /// Uses `timeouts` for the browser steps.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: DemoTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The site's base URL, with a trailing slash.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        self.base
            .join(path)
            .map_or_else(|_| format!("{}{path}", self.base), |u| u.to_string())
    }

    async fn goto(&self, page: &Page, path: &str) -> Result<(), StrategyError> {
        page.goto(
            &self.url(path),
            GotoOptions::new().timeout(self.timeouts.navigation),
        )
        .await
        .map(|_| ())
        .map_err(|e| {
            step_error(page, &e, &format!("loading /{path}"), |why| {
                StrategyError::failed("navigation_failed", format!("loading /{path}: {why}"))
            })
        })
    }

    /// Whether the page is the site's sign-in page.
    fn on_login(&self, page: &Page) -> bool {
        Url::parse(&page.url()).is_ok_and(|u| {
            u.origin() == self.base.origin() && u.path().trim_end_matches('/') == "/login"
        })
    }

    /// The toast's permalink, if a toast with a link is on the page now.
    async fn toast_now(&self, page: &Page) -> Option<Verification> {
        let link = page.locator(TOAST_LINK).first();
        if link.count().await.ok()? == 0 {
            return None;
        }
        let href = link.get_attribute("href").await.ok()??;
        Some(self.toast_verification(&href))
    }

    fn toast_verification(&self, href: &str) -> Verification {
        let permalink = self.base.join(href).ok();
        Verification {
            method: VerificationMethod::Toast,
            evidence: VerificationEvidence {
                post_id: permalink.as_ref().and_then(post_id_of),
                permalink: permalink.map(|u| u.to_string()),
                detail: Some("toast .toast-success".into()),
            },
        }
    }

    fn readback_verification(&self, id: &str) -> Verification {
        Verification {
            method: VerificationMethod::Readback,
            evidence: VerificationEvidence {
                permalink: Some(self.url(&format!("p/{id}"))),
                post_id: Some(id.to_owned()),
                detail: Some("found in /feed".into()),
            },
        }
    }

    /// The evidence of a re-check that found `post` in `/feed`: its permalink when the
    /// item links one, and its id.
    fn recheck_verification(&self, post: &FeedPost) -> Verification {
        let permalink = Some(post.link.trim())
            .filter(|l| !l.is_empty())
            .and_then(|l| self.base.join(l).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let post_id = Some(post.id.clone())
            .filter(|id| !id.is_empty())
            .or_else(|| permalink.as_ref().and_then(post_id_of));
        Verification {
            method: VerificationMethod::Recheck,
            evidence: VerificationEvidence {
                permalink: permalink.map(|u| u.to_string()),
                post_id,
                detail: Some("re-check: found once in /feed".into()),
            },
        }
    }

    async fn upload_media(
        &self,
        page: &Page,
        media: &[MediaAttachment],
    ) -> Result<(), StrategyError> {
        let payloads = decode_media(media)?;
        page.locator(MEDIA)
            .set_input_files_payload_multiple(&payloads, None)
            .await
            .map_err(|e| {
                step_error(page, &e, "choosing the media files", |why| {
                    StrategyError::failed(
                        "media_input_failed",
                        format!("choosing the media files: {why}"),
                    )
                })
            })?;
        page.locator(MEDIA_SETTLED)
            .wait_for(wait_attached(self.timeouts.media))
            .await
            .map_err(|e| {
                step_error(page, &e, "waiting for the media upload", |why| match why {
                    PageFailure::TimedOut => StrategyError::failed(
                        "media_upload_timeout",
                        format!(
                            "the media upload did not finish within {} s",
                            self.timeouts.media.as_secs()
                        ),
                    ),
                    other => StrategyError::failed(
                        "media_status_unreadable",
                        format!("waiting for the media upload: {other}"),
                    ),
                })
            })?;
        let rejected = page.locator(MEDIA_ERROR).count().await.map_err(|e| {
            step_error(page, &e, "reading the media status", |why| {
                StrategyError::failed("media_status_unreadable", why.to_string())
            })
        })?;
        if rejected > 0 {
            return Err(StrategyError::not_posted(
                "media_rejected",
                "the site refused the media upload",
            ));
        }
        Ok(())
    }

    /// Loads `/feed` and reads its posts; `Err` says why it could not.
    async fn read_back(&self, page: &Page) -> Result<Vec<FeedPost>, String> {
        page.goto(
            &self.url("feed"),
            GotoOptions::new().timeout(self.timeouts.navigation),
        )
        .await
        .map_err(|e| format!("could not load /feed: {}", PageFailure::of(page, &e)))?;
        if self.on_login(page) {
            return Err("could not read back /feed: the session is signed out".into());
        }
        page.evaluate::<(), Vec<FeedPost>>(READ_FEED, None)
            .await
            .map_err(|e| format!("could not read /feed: {}", PageFailure::of(page, &e)))
    }
}

fn wait_attached(timeout: Duration) -> WaitForOptions {
    WaitForOptions::builder()
        .state(WaitForState::Attached)
        .timeout(timeout.as_secs_f64() * 1000.0)
        .build()
}

/// How a step on the page ended without what it waited for. The strategy's errors keep the
/// real cause: a page that was closed after 2 s is reported as closed, not as a step that
/// ran out of its 15 s.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PageFailure {
    /// The page, its context or its browser was closed.
    Closed,
    /// The step's deadline passed.
    TimedOut,
    /// Anything else: the first line of the browser library's error (the driver appends a
    /// JavaScript stack).
    Other(String),
}

impl PageFailure {
    /// Classifies `error`, returned by a step on `page`.
    fn of(page: &Page, error: &PwError) -> Self {
        if page.is_closed() {
            return Self::Closed;
        }
        Self::classify(error)
    }

    /// Classifies `error` by what it says.
    fn classify(error: &PwError) -> Self {
        match error {
            PwError::TargetClosed { .. } | PwError::ChannelClosed | PwError::ObjectNotFound(_) => {
                Self::Closed
            }
            PwError::ProtocolError(m) | PwError::ServerError(m) if reports_closed(m) => {
                Self::Closed
            }
            PwError::Timeout(_) | PwError::NavigationTimeout { .. } => Self::TimedOut,
            PwError::Context(_, inner) => Self::classify(inner),
            other => Self::Other(
                other
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            ),
        }
    }
}

impl std::fmt::Display for PageFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("the page was closed"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Other(message) => f.write_str(message),
        }
    }
}

/// The driver's words for a page, context or browser that is gone (Playwright's
/// `TargetClosedError`, which playwright-rs passes on as a protocol error).
fn reports_closed(message: &str) -> bool {
    message.contains("TargetClosedError")
        || message.contains("has been closed")
        || message.contains("Browser closed")
        || message.contains("browser has disconnected")
}

/// The error of a step (`doing`, e.g. `waiting for the page after clicking #submit`) that
/// failed with `error`: [`PAGE_CLOSED`] when the page is gone, whatever the step was;
/// otherwise what `otherwise` makes of the failure.
fn step_error(
    page: &Page,
    error: &PwError,
    doing: &str,
    otherwise: impl FnOnce(PageFailure) -> StrategyError,
) -> StrategyError {
    match PageFailure::of(page, error) {
        PageFailure::Closed => page_closed(doing),
        other => otherwise(other),
    }
}

/// [`PAGE_CLOSED`], while `doing`.
fn page_closed(doing: &str) -> StrategyError {
    StrategyError::failed(PAGE_CLOSED, format!("the page was closed while {doing}"))
}

/// The id in a `/p/{id}` permalink.
fn post_id_of(url: &Url) -> Option<String> {
    let mut segments = url.path_segments()?;
    match (segments.next(), segments.next(), segments.next()) {
        (Some("p"), Some(id), None) if !id.is_empty() => Some(id.to_owned()),
        _ => None,
    }
}

/// The attachments as in-memory file payloads; invalid base64 is refused before anything
/// is chosen.
fn decode_media(media: &[MediaAttachment]) -> Result<Vec<FilePayload>, StrategyError> {
    media
        .iter()
        .enumerate()
        .map(|(i, m)| {
            base64::engine::general_purpose::STANDARD
                .decode(m.data_base64.trim())
                .map(|bytes| FilePayload::new(m.file_name.clone(), m.mime_type.clone(), bytes))
                .map_err(|_| {
                    StrategyError::not_posted(
                        "invalid_media",
                        format!("media attachment {} is not valid base64", i + 1),
                    )
                })
        })
        .collect()
}

/// What the composer receives: the text, plus the link on its own line.
fn compose_text(content: &PostContent) -> String {
    match content.link.as_deref().map(str::trim) {
        Some(link) if !link.is_empty() => format!("{}\n{link}", content.text),
        _ => content.text.clone(),
    }
}

/// Line breaks as a form submission leaves them once the site normalised them.
fn normalize(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The verdict of a read-back: `posts` is what `/feed` showed, or why it could not be read.
fn judge_readback(
    note: &Note,
    posts: Result<Vec<FeedPost>, String>,
    confirm: impl FnOnce(&str) -> Verification,
) -> VerifyOutcome {
    match posts {
        Ok(posts) => {
            let found = posts
                .iter()
                .find(|p| normalize(&p.text) == note.text && !note.before.contains(&p.id));
            match found {
                Some(post) => VerifyOutcome::Confirmed(confirm(&post.id)),
                None if note.banner => VerifyOutcome::NotPosted {
                    detail: "the site showed an error banner and the post is not in /feed".into(),
                },
                None => VerifyOutcome::Unconfirmed {
                    detail: "no confirmation was shown and the post is not in /feed".into(),
                },
            }
        }
        Err(why) => VerifyOutcome::Unconfirmed {
            detail: if note.banner {
                format!("the site showed an error banner, and {why}")
            } else {
                format!("no confirmation was shown, and {why}")
            },
        },
    }
}

/// The verdict of a re-check: `text` (as composed, normalized) looked for in what `/feed`
/// showed, or why it could not be read.
fn judge_recheck(
    text: &str,
    posts: Result<Vec<FeedPost>, String>,
    confirm: impl FnOnce(&FeedPost) -> Verification,
) -> RecheckOutcome {
    let posts = match posts {
        Ok(posts) => posts,
        Err(why) => return RecheckOutcome::Unavailable { detail: why },
    };
    let mut found = posts.iter().filter(|p| normalize(&p.text) == text);
    match (found.next(), found.count()) {
        (None, _) => RecheckOutcome::NotFound {
            detail: "no post with the text posted in /feed".into(),
        },
        (Some(post), 0) => RecheckOutcome::Confirmed(confirm(post)),
        (Some(_), more) => RecheckOutcome::Ambiguous {
            detail: format!("{} posts with the text posted in /feed", more + 1),
        },
    }
}

#[async_trait]
impl WebPostStrategy<BrowserSession> for DemoStrategy {
    fn platform(&self) -> &str {
        PLATFORM
    }

    fn policy(&self) -> &StrategyPolicy {
        &self.policy
    }

    fn start_url(&self) -> &str {
        &self.start_url
    }

    /// A local test site: no human-scale delay before acting.
    fn pacing(&self) -> PlatformPacing {
        PlatformPacing::Off
    }

    /// Asks the site with the context's cookies, through Playwright's request API (which
    /// shares the context's cookie jar), without touching any page: during a capture the
    /// page is the one the person is signing in on, and navigating it would break their
    /// sign-in.
    async fn is_authenticated(&self, context: &BrowserSession) -> Result<bool, StrategyError> {
        let api = context
            .context()
            .request()
            .await
            .map_err(|e| StrategyError::failed("request_api_unavailable", e.to_string()))?;
        let options = playwright_rs::FetchOptions::builder()
            .max_redirects(0)
            .timeout(self.timeouts.navigation.as_secs_f64() * 1000.0)
            .build();
        let response = api
            .get(&self.url("compose"), options)
            .await
            .map_err(|e| StrategyError::failed("session_check_failed", e.to_string()))?;
        match response.status() {
            200 => {
                let body = response
                    .text()
                    .await
                    .map_err(|e| StrategyError::failed("session_check_failed", e.to_string()))?;
                if body.contains("id=\"post-text\"") {
                    Ok(true)
                } else {
                    Err(StrategyError::failed(
                        "composer_not_found",
                        "/compose shows neither the composer nor the sign-in page",
                    ))
                }
            }
            301 | 302 | 303 | 307 | 401 | 403 => Ok(false),
            status => Err(StrategyError::failed(
                "session_check_failed",
                format!("/compose answered HTTP {status}"),
            )),
        }
    }

    async fn post(
        &self,
        context: &BrowserSession,
        content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError> {
        let page = context.page();
        let t = self.timeouts;

        progress.enter(FailureStage::Compose);
        self.goto(page, "compose").await?;
        if self.on_login(page) {
            return Err(StrategyError::needs_reauth(
                "the composer redirected to the sign-in page",
            ));
        }
        page.locator(TEXT)
            .wait_for(wait_attached(t.action))
            .await
            .map_err(|e| {
                step_error(page, &e, "waiting for the composer", |why| match why {
                    PageFailure::TimedOut => {
                        StrategyError::failed("composer_not_found", "no #post-text on /compose")
                    }
                    other => StrategyError::failed(
                        "composer_not_found",
                        format!("looking for #post-text on /compose: {other}"),
                    ),
                })
            })?;
        let text = normalize(&compose_text(content));
        let before: Vec<String> = match page
            .evaluate::<(), Option<Vec<FeedPost>>>(FETCH_FEED, None)
            .await
        {
            Ok(Some(posts)) => posts
                .into_iter()
                .filter(|p| normalize(&p.text) == text)
                .map(|p| p.id)
                .collect(),
            Ok(None) => {
                return Err(StrategyError::needs_reauth(
                    "the feed redirected to the sign-in page",
                ));
            }
            Err(e) => {
                return Err(step_error(
                    page,
                    &e,
                    "reading /feed before submitting",
                    |why| {
                        StrategyError::failed(
                            "feed_unreadable",
                            format!("could not read /feed before submitting: {why}"),
                        )
                    },
                ));
            }
        };
        // The error may echo the call, never its argument: keep it out anyway (only whether
        // the page was closed is taken from it).
        page.locator(TEXT).fill(&text, None).await.map_err(|e| {
            step_error(page, &e, "filling #post-text", |_| {
                StrategyError::failed("compose_failed", "could not fill #post-text")
            })
        })?;

        if !content.media.is_empty() {
            progress.enter(FailureStage::Media);
            self.upload_media(page, &content.media).await?;
        }

        // Marking the composer document is not a submit: a failure here is still safe.
        page.evaluate::<(), ()>(MARK_SUBMIT, None)
            .await
            .map_err(|e| {
                step_error(page, &e, "marking the composer", |why| {
                    StrategyError::failed(
                        "submit_prepare_failed",
                        format!("marking the composer: {why}"),
                    )
                })
            })?;
        progress.submit().await?;
        let click = ClickOptions::builder()
            .timeout(t.action.as_secs_f64() * 1000.0)
            .build();
        page.locator(SUBMIT).click(click).await.map_err(|e| {
            step_error(page, &e, "clicking #submit", |why| {
                StrategyError::failed("submit_failed", format!("clicking #submit: {why}"))
            })
        })?;
        let landed = WaitForFunctionOptions::default()
            .polling_interval(100.0)
            .timeout(t.navigation.as_secs_f64() * 1000.0);
        page.wait_for_function(LANDED, landed).await.map_err(|e| {
            step_error(
                page,
                &e,
                "waiting for the page after clicking #submit",
                |why| match why {
                    PageFailure::TimedOut => StrategyError::failed(
                        "submit_no_response",
                        format!(
                            "no page loaded within {} s of clicking #submit",
                            t.navigation.as_secs()
                        ),
                    ),
                    other => StrategyError::failed(
                        "submit_no_response",
                        format!("waiting for the page after clicking #submit: {other}"),
                    ),
                },
            )
        })?;
        if self.on_login(page) {
            return Err(StrategyError::needs_reauth(
                "the site signed the session out at submit",
            ));
        }
        let observed = self.toast_now(page).await;
        let banner = page.locator(ERROR_BANNER).count().await.unwrap_or(0) > 0;
        Ok(SubmitReceipt {
            observed,
            note: Some(ReceiptNote::new(Note {
                text,
                before,
                banner,
            })),
        })
    }

    async fn verify(
        &self,
        context: &BrowserSession,
        receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError> {
        if let Some(observed) = &receipt.observed {
            return Ok(VerifyOutcome::Confirmed(observed.clone()));
        }
        let Some(note) = receipt.note.as_ref().and_then(ReceiptNote::get::<Note>) else {
            return Ok(VerifyOutcome::Unconfirmed {
                detail: "the receipt carries nothing to verify".into(),
            });
        };
        let page = context.page();
        // An error page will not grow a toast; a plain page may (late confirmation).
        if !note.banner {
            let waited = page
                .locator(TOAST_LINK)
                .first()
                .wait_for(wait_attached(self.timeouts.toast))
                .await;
            if waited.is_ok()
                && let Some(v) = self.toast_now(page).await
            {
                return Ok(VerifyOutcome::Confirmed(v));
            }
        }
        let posts = self.read_back(page).await;
        Ok(judge_readback(note, posts, |id| {
            self.readback_verification(id)
        }))
    }

    /// Loads `/feed` only (the read-back `verify` uses) and looks for `content` as `post`
    /// composes it. Never composes, clicks or submits.
    async fn recheck(
        &self,
        context: &BrowserSession,
        content: &PostContent,
    ) -> Result<RecheckOutcome, StrategyError> {
        let text = normalize(&compose_text(content));
        let posts = self.read_back(context.page()).await;
        Ok(judge_recheck(&text, posts, |post| {
            self.recheck_verification(post)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::MediaAttachment;

    fn strategy() -> DemoStrategy {
        DemoStrategy::new("http://127.0.0.1:8788").unwrap()
    }

    fn note(banner: bool, before: &[&str]) -> Note {
        Note {
            text: "hello\nhttps://x.test".into(),
            before: before.iter().map(|s| (*s).to_owned()).collect(),
            banner,
        }
    }

    fn feed(posts: &[(&str, &str)]) -> Result<Vec<FeedPost>, String> {
        Ok(posts
            .iter()
            .map(|(id, text)| FeedPost {
                id: (*id).into(),
                text: (*text).into(),
                link: format!("/p/{id}"),
            })
            .collect())
    }

    #[test]
    fn policy_start_url_and_scope_follow_the_base_url() {
        let s = DemoStrategy::new("http://127.0.0.1:8788/some/path?q=1").unwrap();
        assert_eq!(s.start_url, "http://127.0.0.1:8788/login");
        assert_eq!(s.url("p/ab12"), "http://127.0.0.1:8788/p/ab12");
        let spec = s.policy.to_spec();
        assert_eq!(spec.allow_interactive_capture, Some(true));
        assert_eq!(spec.allow_unattended, Some(true));
        let scope = spec.session.unwrap();
        assert_eq!(scope.cookie_domains, vec!["127.0.0.1".to_owned()]);
        assert_eq!(scope.origins, vec!["http://127.0.0.1:8788".to_owned()]);
        assert_eq!(WebPostStrategy::<BrowserSession>::platform(&s), "demo");
    }

    #[test]
    fn unusable_base_urls_are_refused() {
        for bad in [
            "",
            "127.0.0.1:8788",
            "ftp://127.0.0.1/",
            "file:///tmp",
            "http://com/",
        ] {
            assert!(DemoStrategy::new(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn the_link_goes_on_its_own_line() {
        let mut content = PostContent::text("hello");
        assert_eq!(compose_text(&content), "hello");
        content.link = Some(" https://x.test ".into());
        assert_eq!(compose_text(&content), "hello\nhttps://x.test");
        content.link = Some(String::new());
        assert_eq!(compose_text(&content), "hello");
    }

    #[test]
    fn toast_evidence_is_absolute_and_carries_the_id() {
        let v = strategy().toast_verification("/p/00ff");
        assert_eq!(v.method, VerificationMethod::Toast);
        assert_eq!(
            v.evidence.permalink.as_deref(),
            Some("http://127.0.0.1:8788/p/00ff")
        );
        assert_eq!(v.evidence.post_id.as_deref(), Some("00ff"));
        let odd = strategy().toast_verification("/elsewhere");
        assert_eq!(odd.evidence.post_id, None);
    }

    #[test]
    fn readback_confirms_only_a_new_post_with_the_exact_text() {
        let s = strategy();
        let confirm = |id: &str| s.readback_verification(id);
        let found = judge_readback(
            &note(false, &["old"]),
            feed(&[
                ("old", "hello\nhttps://x.test"),
                ("new", "hello\r\nhttps://x.test"),
            ]),
            confirm,
        );
        match found {
            VerifyOutcome::Confirmed(v) => {
                assert_eq!(v.method, VerificationMethod::Readback);
                assert_eq!(v.evidence.post_id.as_deref(), Some("new"));
                assert_eq!(
                    v.evidence.permalink.as_deref(),
                    Some("http://127.0.0.1:8788/p/new")
                );
            }
            other => panic!("expected confirmed, got {other:?}"),
        }
        // Only an older duplicate: not this post.
        let dup = judge_readback(
            &note(true, &["old"]),
            feed(&[("old", "hello\nhttps://x.test")]),
            confirm,
        );
        assert!(matches!(dup, VerifyOutcome::NotPosted { .. }), "{dup:?}");
        // A prefix is not a match.
        let prefix = judge_readback(&note(false, &[]), feed(&[("a", "hello")]), confirm);
        assert!(
            matches!(prefix, VerifyOutcome::Unconfirmed { .. }),
            "{prefix:?}"
        );
    }

    #[test]
    fn recheck_confirms_exactly_one_post_with_the_exact_text() {
        let s = strategy();
        let text = "hello\nhttps://x.test";
        let judge = |posts| judge_recheck(text, posts, |p| s.recheck_verification(p));
        match judge(feed(&[
            ("a", "hello"),
            ("b", "hello\r\nhttps://x.test"),
            ("c", "hello\nhttps://x.test/more"),
        ])) {
            RecheckOutcome::Confirmed(v) => {
                assert_eq!(v.method, VerificationMethod::Recheck);
                assert_eq!(v.evidence.post_id.as_deref(), Some("b"));
                assert_eq!(
                    v.evidence.permalink.as_deref(),
                    Some("http://127.0.0.1:8788/p/b")
                );
            }
            other => panic!("expected confirmed, got {other:?}"),
        }
        assert!(matches!(
            judge(feed(&[("a", "hello")])),
            RecheckOutcome::NotFound { .. }
        ));
        assert!(matches!(judge(feed(&[])), RecheckOutcome::NotFound { .. }));
        assert!(matches!(
            judge(feed(&[("a", text), ("b", text)])),
            RecheckOutcome::Ambiguous { .. }
        ));
        assert!(matches!(
            judge(Err(
                "could not read back /feed: the session is signed out".into()
            )),
            RecheckOutcome::Unavailable { .. }
        ));
        // An item without a permalink: confirmed, with its id only.
        let unlinked = FeedPost {
            id: "d".into(),
            text: text.into(),
            link: String::new(),
        };
        let v = s.recheck_verification(&unlinked);
        assert_eq!(v.evidence.permalink, None);
        assert_eq!(v.evidence.post_id.as_deref(), Some("d"));
        // Never the text in an answer.
        for posts in [feed(&[]), feed(&[("a", text), ("b", text)])] {
            assert!(!format!("{:?}", judge(posts)).contains("hello"));
        }
    }

    #[test]
    fn not_posted_needs_both_an_error_and_an_absent_post() {
        let s = strategy();
        let confirm = |id: &str| s.readback_verification(id);
        assert!(matches!(
            judge_readback(&note(true, &[]), feed(&[]), confirm),
            VerifyOutcome::NotPosted { .. }
        ));
        assert!(matches!(
            judge_readback(&note(false, &[]), feed(&[]), confirm),
            VerifyOutcome::Unconfirmed { .. }
        ));
        // An error page but no read-back: no proof either way.
        assert!(matches!(
            judge_readback(&note(true, &[]), Err("signed out".into()), confirm),
            VerifyOutcome::Unconfirmed { .. }
        ));
    }

    #[test]
    fn verdicts_never_carry_the_text() {
        let s = strategy();
        let n = note(true, &[]);
        for posts in [
            feed(&[]),
            Err("x".into()),
            feed(&[("a", "hello\nhttps://x.test")]),
        ] {
            let text = format!(
                "{:?}",
                judge_readback(&n, posts, |id| s.readback_verification(id))
            );
            assert!(!text.contains("hello"), "{text}");
        }
    }

    #[test]
    fn a_closed_target_is_a_closed_page_and_a_timeout_is_a_timeout() {
        let closed = [
            PwError::TargetClosed {
                target_type: "Page".into(),
                context: String::new(),
            },
            PwError::ChannelClosed,
            PwError::ProtocolError(
                "Target page, context or browser has been closed\n    at x.js:1".into(),
            ),
            PwError::ProtocolError("TargetClosedError: the page is gone".into()),
            PwError::ProtocolError("x".into()).context("waiting"),
        ];
        for e in &closed[..4] {
            assert_eq!(PageFailure::classify(e), PageFailure::Closed, "{e}");
        }
        assert_eq!(
            PageFailure::classify(&PwError::ChannelClosed.context("waiting")),
            PageFailure::Closed
        );
        assert_eq!(
            PageFailure::classify(&PwError::Timeout("Timeout 15000ms exceeded.".into())),
            PageFailure::TimedOut
        );
        // Anything else keeps its first line, without the driver's stack.
        let other = PageFailure::classify(&PwError::ProtocolError(
            "Execution context was destroyed\n    at x.js:1".into(),
        ));
        assert_eq!(
            other.to_string(),
            "Protocol error: Execution context was destroyed"
        );
        assert!(matches!(
            PageFailure::classify(&closed[4]),
            PageFailure::Other(_)
        ));
        let e = page_closed("waiting for the page after clicking #submit");
        assert_eq!(e.code, PAGE_CLOSED);
        assert_eq!(e.kind, abr_core::StrategyErrorKind::Failed);
        assert_eq!(
            e.message,
            "the page was closed while waiting for the page after clicking #submit"
        );
    }

    #[test]
    fn media_decodes_to_payloads_and_bad_base64_is_not_posted() {
        let m = |data: &str| MediaAttachment {
            file_name: "a.png".into(),
            mime_type: "image/png".into(),
            data_base64: data.into(),
        };
        let payloads = decode_media(&[m("iVBORw0KGgo=")]).unwrap();
        assert_eq!(payloads[0].name, "a.png");
        assert_eq!(payloads[0].mime_type, "image/png");
        assert_eq!(&payloads[0].buffer[..4], b"\x89PNG");
        let e = decode_media(&[m("iVBORw0KGgo="), m("not base64!")]).unwrap_err();
        assert_eq!(e.code, "invalid_media");
        assert_eq!(e.kind, abr_core::StrategyErrorKind::NotPosted);
        assert!(e.message.contains('2'), "{}", e.message);
    }
}
