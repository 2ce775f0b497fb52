//! What a live token may do: [`LiveAttachment`], one viewer's hold on a capture's browser.
//!
//! A live token resolves only its capture's browser, only while the capture is open, for at
//! most a few sockets at once. Through an attachment a viewer gets frames and may send input;
//! navigation is checked here, before it reaches the browser: web URLs only, and only to the
//! sites the platform declared ([`LiveSites`]).

use std::sync::Arc;
use std::time::Duration;

use abr_core::clock::Clock;
use abr_core::error::ProviderError;
use abr_core::live::{LiveFeed, LiveInput, LiveSurface, MAX_LIVE_TEXT, PageLocation};
use abr_core::provider::ProviderViewer;
use abr_core::scope::SessionScope;
use time::OffsetDateTime;
use tokio::sync::{OwnedSemaphorePermit, watch};

/// The sites a capture's viewer may open from its address bar: the platform's start page's
/// host and port, and the domains of its session scope (and their subdomains).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveSites {
    /// `host:port` of the start page, exact.
    start: Option<(String, u16)>,
    /// Registrable domains from the scope (not IP addresses: those match only as `start`).
    domains: Vec<String>,
}

impl LiveSites {
    /// The sites of a platform with `start_url` and `scope`.
    pub(crate) fn new(start_url: &str, scope: Option<&SessionScope>) -> Self {
        let start = url::Url::parse(start_url).ok().and_then(|u| {
            let host = u.host_str()?.to_ascii_lowercase();
            Some((host, u.port_or_known_default()?))
        });
        let domains = scope
            .map(|s| {
                s.cookie_domains()
                    .iter()
                    .map(|d| d.trim_start_matches('.').to_ascii_lowercase())
                    .filter(|d| d.parse::<std::net::IpAddr>().is_err() && !d.starts_with('['))
                    .collect()
            })
            .unwrap_or_default();
        Self { start, domains }
    }

    /// Whether the viewer may open `url`.
    ///
    /// # Errors
    /// Why not.
    pub(crate) fn check(&self, url: &url::Url) -> Result<(), LiveRefusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LiveRefusal::Scheme);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(LiveRefusal::OutsideSites);
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(LiveRefusal::OutsideSites);
        };
        let host = host.to_ascii_lowercase();
        if self
            .start
            .as_ref()
            .is_some_and(|(h, p)| *h == host && *p == port)
        {
            return Ok(());
        }
        let is_name = matches!(url.host(), Some(url::Host::Domain(_)));
        let default_port = url.port().is_none();
        let in_domains = self
            .domains
            .iter()
            .any(|d| host == *d || host.ends_with(&format!(".{d}")));
        if is_name && default_port && in_domains {
            Ok(())
        } else {
            Err(LiveRefusal::OutsideSites)
        }
    }
}

/// Why an input from a viewer was refused before it reached the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LiveRefusal {
    /// Only http(s) pages can be opened from the viewer.
    #[error("only http(s) pages can be opened from the live view")]
    Scheme,
    /// The address is outside the sites of the platform being signed in to.
    #[error("the live view only opens the sites of the platform being signed in to")]
    OutsideSites,
    /// Too much text in one input.
    #[error("too much text in one input")]
    TextTooLong,
    /// Coordinates or scroll amounts that are not finite numbers.
    #[error("pointer coordinates must be finite numbers")]
    BadCoordinates,
}

impl LiveRefusal {
    /// Stable machine-readable reason.
    pub fn code(self) -> &'static str {
        match self {
            Self::Scheme => "scheme",
            Self::OutsideSites => "outside_sites",
            Self::TextTooLong => "text_too_long",
            Self::BadCoordinates => "bad_coordinates",
        }
    }
}

/// Why an input did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveInputError {
    /// Refused by the rules above; nothing reached the browser.
    #[error(transparent)]
    Refused(#[from] LiveRefusal),
    /// The browser failed to perform it.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// What a paused run hears of its person's input in the live view: called before each
/// click, key or text reaches the page.
pub(crate) type PersonInput = Arc<dyn Fn() + Send + Sync>;

/// One viewer's hold on a capture's browser (or a paused task's, during its takeover), from
/// [`Engine::attach_live`](crate::Engine::attach_live).
///
/// It counts against the live token's socket limit until dropped, and
/// [`LiveAttachment::ended`] resolves as soon as the capture finishes, is cancelled or
/// expires: a socket that selects on it is closed with its capture.
pub struct LiveAttachment<C> {
    pub(crate) platform: String,
    /// Told of every click, key and text the viewer sends (a takeover's run opens its
    /// network gate to the person for a moment after each), before it reaches the page.
    pub(crate) on_input: Option<PersonInput>,
    pub(crate) surface: Arc<C>,
    pub(crate) viewer: Option<ProviderViewer>,
    pub(crate) sites: LiveSites,
    pub(crate) expires_at: OffsetDateTime,
    pub(crate) ended: watch::Receiver<bool>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) _slot: OwnedSemaphorePermit,
}

impl<C> std::fmt::Debug for LiveAttachment<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveAttachment")
            .field("platform", &self.platform)
            .field("provider_viewer", &self.viewer.is_some())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl<C> LiveAttachment<C> {
    /// The platform being captured.
    pub fn platform(&self) -> &str {
        &self.platform
    }

    /// The provider's own viewer, if the capture's browser has one.
    pub fn provider_viewer(&self) -> Option<&ProviderViewer> {
        self.viewer.as_ref()
    }

    /// When the capture expires.
    pub fn expires_at(&self) -> OffsetDateTime {
        self.expires_at
    }

    /// Whether the capture is still open.
    pub fn is_open(&self) -> bool {
        !*self.ended.borrow() && self.clock.now() < self.expires_at
    }

    /// Resolves when the capture finished, was cancelled or expired (at once if it already
    /// did). Cancel-safe.
    pub async fn ended(&self) {
        let mut ended = self.ended.clone();
        let left = self.expires_at - self.clock.now();
        let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
        tokio::select! {
            // An error means the capture is gone (its sender dropped): ended too.
            _ = ended.wait_for(|done| *done) => {}
            () = tokio::time::sleep(left) => {}
        }
    }
}

impl<C: LiveSurface> LiveAttachment<C> {
    /// Starts a frame feed.
    ///
    /// # Errors
    /// The provider's.
    pub async fn watch(&self) -> Result<Box<dyn LiveFeed>, ProviderError> {
        self.surface.watch().await
    }

    /// Where the page is.
    ///
    /// # Errors
    /// The provider's.
    pub async fn location(&self) -> Result<PageLocation, ProviderError> {
        self.surface.location().await
    }

    /// Checks `input` and performs it.
    ///
    /// # Errors
    /// [`LiveInputError::Refused`] before anything reached the browser, or the provider's.
    pub async fn input(&self, input: LiveInput) -> Result<(), LiveInputError> {
        check_input(&self.sites, &input)?;
        if let Some(on_input) = &self.on_input
            && is_a_persons_act(&input)
        {
            on_input();
        }
        Ok(self.surface.input(input).await?)
    }
}

/// Whether `input` is something a person does to the page (a click, a key, text, a
/// navigation), rather than looking at it (moving the pointer, scrolling).
fn is_a_persons_act(input: &LiveInput) -> bool {
    match input {
        LiveInput::Pointer { action, .. } => *action != abr_core::live::PointerAction::Move,
        LiveInput::Wheel { .. } => false,
        LiveInput::Key { .. }
        | LiveInput::Text { .. }
        | LiveInput::Navigate { .. }
        | LiveInput::Back
        | LiveInput::Forward
        | LiveInput::Reload => true,
    }
}

/// The rules every viewer input passes before it reaches a browser.
fn check_input(sites: &LiveSites, input: &LiveInput) -> Result<(), LiveRefusal> {
    match input {
        LiveInput::Navigate { url } => sites.check(url),
        LiveInput::Text { text } if text.len() > MAX_LIVE_TEXT => Err(LiveRefusal::TextTooLong),
        LiveInput::Pointer { x, y, .. } if !(x.is_finite() && y.is_finite()) => {
            Err(LiveRefusal::BadCoordinates)
        }
        LiveInput::Wheel {
            x,
            y,
            delta_x,
            delta_y,
        } if ![x, y, delta_x, delta_y].iter().all(|v| v.is_finite()) => {
            Err(LiveRefusal::BadCoordinates)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abr_protocol::SessionScopeSpec;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn sites() -> LiveSites {
        let scope = SessionScope::new(&SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec!["https://app.example.com".into()],
        })
        .unwrap_or_else(|e| panic!("{e}"));
        LiveSites::new("https://login.example.com/signin", Some(&scope))
    }

    #[test]
    fn the_viewer_opens_only_the_platforms_sites() {
        let sites = sites();
        for ok in [
            "https://login.example.com/other",
            "https://example.com/",
            "https://a.b.example.com/x?y=1",
            "http://example.com/",
        ] {
            assert_eq!(sites.check(&url(ok)), Ok(()), "{ok}");
        }
        for (refused, why) in [
            ("https://evil.com/", LiveRefusal::OutsideSites),
            ("https://example.com.evil.com/", LiveRefusal::OutsideSites),
            ("https://notexample.com/", LiveRefusal::OutsideSites),
            ("http://127.0.0.1:8787/v1/health", LiveRefusal::OutsideSites),
            ("http://169.254.169.254/", LiveRefusal::OutsideSites),
            ("https://example.com:8443/", LiveRefusal::OutsideSites),
            ("https://u:p@example.com/", LiveRefusal::OutsideSites),
            ("file:///etc/hostname", LiveRefusal::Scheme),
            ("javascript:alert(1)", LiveRefusal::Scheme),
            ("chrome://settings", LiveRefusal::Scheme),
        ] {
            assert_eq!(sites.check(&url(refused)), Err(why), "{refused}");
        }
    }

    #[test]
    fn a_start_page_on_an_ip_address_allows_only_its_own_port() {
        let scope = SessionScope::new(&SessionScopeSpec {
            cookie_domains: vec!["127.0.0.1".into()],
            origins: vec![],
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let sites = LiveSites::new("http://127.0.0.1:8788/login", Some(&scope));
        assert_eq!(sites.check(&url("http://127.0.0.1:8788/feed")), Ok(()));
        assert_eq!(
            sites.check(&url("http://127.0.0.1:8787/v1/capture/x")),
            Err(LiveRefusal::OutsideSites),
            "the runner's own API on another port"
        );
        assert_eq!(
            sites.check(&url("http://localhost:8788/")),
            Err(LiveRefusal::OutsideSites)
        );
    }

    #[test]
    fn inputs_with_bad_numbers_or_too_much_text_are_refused() {
        let sites = sites();
        let nan = LiveInput::Wheel {
            x: 1.0,
            y: f64::NAN,
            delta_x: 0.0,
            delta_y: 1.0,
        };
        assert_eq!(check_input(&sites, &nan), Err(LiveRefusal::BadCoordinates));
        let long = LiveInput::Text {
            text: "é".repeat(MAX_LIVE_TEXT),
        };
        assert_eq!(check_input(&sites, &long), Err(LiveRefusal::TextTooLong));
        let ok = LiveInput::Text {
            text: "日本語 ✓".into(),
        };
        assert_eq!(check_input(&sites, &ok), Ok(()));
    }
}
