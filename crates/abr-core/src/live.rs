//! The [`LiveSurface`] contract: what a person's live view needs from a browser context.
//!
//! A live view shows the page (frames out) and takes a person's input (pointer, keyboard,
//! text, navigation in). The provider implements it once on top of its browser protocol;
//! the runner only moves these values between a socket and the surface, and the core
//! (`abr-engine`'s `LiveAttachment`) decides which inputs may reach it.

use async_trait::async_trait;

use crate::error::ProviderError;

/// One picture of the page.
#[derive(Clone, PartialEq, Eq)]
pub struct LiveFrame {
    /// The picture, JPEG-encoded.
    pub jpeg: Vec<u8>,
    /// Width of the page area it shows, in CSS pixels (pointer coordinates use these).
    pub width: u32,
    /// Height of the page area it shows, in CSS pixels.
    pub height: u32,
}

impl std::fmt::Debug for LiveFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The picture may show anything the user typed: never print it.
        f.debug_struct("LiveFrame")
            .field("bytes", &self.jpeg.len())
            .field("width", &self.width)
            .field("height", &self.height)
            .finish()
    }
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PointerButton {
    /// No button (a move).
    None,
    /// The primary button.
    #[default]
    Left,
    /// The middle button.
    Middle,
    /// The secondary button.
    Right,
}

/// What a pointer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PointerAction {
    /// Moved.
    Move,
    /// A button went down.
    Down,
    /// A button went up.
    Up,
}

/// Modifier keys held during an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Modifiers {
    /// Alt (Option).
    pub alt: bool,
    /// Control.
    pub ctrl: bool,
    /// Meta (Command, Windows).
    pub meta: bool,
    /// Shift.
    pub shift: bool,
}

impl Modifiers {
    /// No modifier held.
    pub const NONE: Self = Self {
        alt: false,
        ctrl: false,
        meta: false,
        shift: false,
    };

    /// Whether any modifier that turns a character into a shortcut (not Shift) is held.
    pub fn any_command(self) -> bool {
        self.alt || self.ctrl || self.meta
    }
}

/// A key that is not text: editing and navigation keys, and characters pressed as shortcuts.
/// Printable text goes through [`LiveInput::Text`], so any language and any input method
/// works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "the key names are their documentation")]
pub enum LiveKey {
    Enter,
    Tab,
    Backspace,
    Delete,
    Escape,
    ArrowLeft,
    ArrowRight,
    ArrowUp,
    ArrowDown,
    Home,
    End,
    PageUp,
    PageDown,
    Insert,
    /// A character pressed with a command modifier (Ctrl+A, Cmd+V, ...): an ASCII letter or
    /// digit only.
    Shortcut(char),
}

impl LiveKey {
    /// Parses a DOM `KeyboardEvent.key` name (`Enter`, `ArrowLeft`, ...) or a single ASCII
    /// letter or digit (a shortcut). Anything else is `None`.
    pub fn from_dom(key: &str) -> Option<Self> {
        Some(match key {
            "Enter" => Self::Enter,
            "Tab" => Self::Tab,
            "Backspace" => Self::Backspace,
            "Delete" => Self::Delete,
            "Escape" => Self::Escape,
            "ArrowLeft" => Self::ArrowLeft,
            "ArrowRight" => Self::ArrowRight,
            "ArrowUp" => Self::ArrowUp,
            "ArrowDown" => Self::ArrowDown,
            "Home" => Self::Home,
            "End" => Self::End,
            "PageUp" => Self::PageUp,
            "PageDown" => Self::PageDown,
            "Insert" => Self::Insert,
            other => {
                let mut chars = other.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if c.is_ascii_alphanumeric() => {
                        Self::Shortcut(c.to_ascii_lowercase())
                    }
                    _ => return None,
                }
            }
        })
    }

    /// The DOM `KeyboardEvent.key` name (a shortcut's lowercase character).
    pub fn dom_name(self) -> String {
        match self {
            Self::Shortcut(c) => c.to_string(),
            named => format!("{named:?}"),
        }
    }
}

/// Longest text one [`LiveInput::Text`] may insert, in bytes.
pub const MAX_LIVE_TEXT: usize = 4096;

/// One input from a person's view.
#[derive(Clone, PartialEq)]
pub enum LiveInput {
    /// A pointer moved or a button changed, at page coordinates (CSS pixels).
    Pointer {
        /// What happened.
        action: PointerAction,
        /// Horizontal position.
        x: f64,
        /// Vertical position.
        y: f64,
        /// The button.
        button: PointerButton,
        /// 1 for a click, 2 for a double click.
        click_count: u8,
        /// Keys held.
        modifiers: Modifiers,
    },
    /// The wheel turned (scrolling) at page coordinates.
    Wheel {
        /// Horizontal position.
        x: f64,
        /// Vertical position.
        y: f64,
        /// Horizontal scroll in CSS pixels.
        delta_x: f64,
        /// Vertical scroll in CSS pixels.
        delta_y: f64,
    },
    /// A key pressed (down and up).
    Key {
        /// The key.
        key: LiveKey,
        /// Keys held.
        modifiers: Modifiers,
    },
    /// Text typed, inserted as one composition: any script, emoji, input-method results.
    Text {
        /// At most [`MAX_LIVE_TEXT`] bytes.
        text: String,
    },
    /// Open a URL (already checked by the core: http(s), within the capture's sites).
    Navigate {
        /// Where to go.
        url: url::Url,
    },
    /// History back.
    Back,
    /// History forward.
    Forward,
    /// Reload the page.
    Reload,
}

impl std::fmt::Debug for LiveInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Text and URLs may be credentials the person is typing: print their size only.
        match self {
            Self::Pointer { action, button, .. } => f
                .debug_struct("Pointer")
                .field("action", action)
                .field("button", button)
                .finish_non_exhaustive(),
            Self::Wheel { .. } => f.write_str("Wheel"),
            Self::Key { key, modifiers } => match key {
                LiveKey::Shortcut(_) => f
                    .debug_struct("Key")
                    .field("shortcut", &true)
                    .field("modifiers", modifiers)
                    .finish(),
                named => f
                    .debug_struct("Key")
                    .field("key", named)
                    .field("modifiers", modifiers)
                    .finish(),
            },
            Self::Text { text } => f.debug_struct("Text").field("bytes", &text.len()).finish(),
            Self::Navigate { .. } => f.write_str("Navigate"),
            Self::Back => f.write_str("Back"),
            Self::Forward => f.write_str("Forward"),
            Self::Reload => f.write_str("Reload"),
        }
    }
}

/// Where the page is.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PageLocation {
    /// The page's URL.
    pub url: String,
    /// The page's title.
    pub title: String,
}

impl std::fmt::Debug for PageLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // URLs may carry tokens (sign-in callbacks): never print them.
        f.debug_struct("PageLocation").finish_non_exhaustive()
    }
}

/// A stream of frames for one viewer, from [`LiveSurface::watch`].
///
/// # Contract
/// - `next_frame` waits for the next picture; frames the viewer did not ask for yet are
///   dropped or not produced (the viewer's pace paces the browser). It is cancel-safe: a
///   cancelled call loses no pacing state.
/// - It returns `None` once the page is gone (closed, crashed, the browser disconnected).
/// - `close` stops the stream and frees what it holds in the browser; dropping the feed
///   without `close` must free it too (in the background).
#[async_trait]
pub trait LiveFeed: Send + 'static {
    /// The next frame, or `None` when the page is gone.
    async fn next_frame(&mut self) -> Option<LiveFrame>;

    /// Stops the feed.
    async fn close(self: Box<Self>);
}

/// What a live view needs from a browser context: frames out, input in, where the page is.
///
/// # Contract
/// - Any number of feeds may be open at once; each gets every frame it asks for.
/// - `input` performs exactly the input given on the page the feeds show, in order for one
///   caller. It does not check whether the input is allowed: the core does that before
///   (`abr-engine`'s `LiveAttachment`).
/// - Failures are typed [`ProviderError`]s; a page that is gone is
///   [`Crashed`](crate::error::ProviderErrorKind::Crashed), never a panic or a hang.
#[async_trait]
pub trait LiveSurface: Send + Sync + 'static {
    /// Starts a frame feed for one viewer.
    async fn watch(&self) -> Result<Box<dyn LiveFeed>, ProviderError>;

    /// Performs one input.
    async fn input(&self, input: LiveInput) -> Result<(), ProviderError>;

    /// The page's current URL and title.
    async fn location(&self) -> Result<PageLocation, ProviderError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dom_key_names_parse_and_round_trip() {
        for name in [
            "Enter",
            "Tab",
            "Backspace",
            "ArrowLeft",
            "PageDown",
            "Insert",
        ] {
            let key = LiveKey::from_dom(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(key.dom_name(), name);
        }
        assert_eq!(LiveKey::from_dom("A"), Some(LiveKey::Shortcut('a')));
        assert_eq!(LiveKey::from_dom("7"), Some(LiveKey::Shortcut('7')));
        for refused in ["", "é", "ab", "F12", "Meta", "<script>", " "] {
            assert_eq!(LiveKey::from_dom(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn debug_never_prints_typed_text_urls_or_pictures() {
        let secret = "hunter2-secret";
        let inputs = [
            LiveInput::Text {
                text: secret.to_owned(),
            },
            LiveInput::Navigate {
                url: url::Url::parse(&format!("https://x.example/cb?code={secret}"))
                    .unwrap_or_else(|e| panic!("{e}")),
            },
        ];
        for input in inputs {
            assert!(!format!("{input:?}").contains(secret));
        }
        let frame = LiveFrame {
            jpeg: secret.as_bytes().to_vec(),
            width: 1,
            height: 1,
        };
        assert!(!format!("{frame:?}").contains("104"), "{frame:?}");
        let location = PageLocation {
            url: format!("https://x.example/?t={secret}"),
            title: secret.to_owned(),
        };
        assert!(!format!("{location:?}").contains(secret));
    }
}
