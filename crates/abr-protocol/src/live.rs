//! The live view's socket protocol (`/live/{liveToken}/ws`): JSON text messages both ways,
//! and each frame's picture as a binary message (JPEG) right after its
//! [`LiveViewEvent::Frame`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Keys held during an input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LiveModifiers {
    /// Alt (Option).
    pub alt: bool,
    /// Control.
    pub ctrl: bool,
    /// Meta (Command, Windows).
    pub meta: bool,
    /// Shift.
    pub shift: bool,
}

/// What a pointer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LivePointerAction {
    /// Moved.
    Move,
    /// A button went down.
    Down,
    /// A button went up.
    Up,
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LivePointerButton {
    /// No button.
    None,
    /// The primary button.
    Left,
    /// The middle button.
    Middle,
    /// The secondary button.
    Right,
}

/// A message from a viewer to the runner (unknown fields are refused, like every request's).
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum LiveViewInput {
    /// A pointer moved or a button changed, at page coordinates (CSS pixels of the frame).
    Pointer {
        /// What happened.
        action: LivePointerAction,
        /// Horizontal position.
        x: f64,
        /// Vertical position.
        y: f64,
        /// The button (default: left; ignored for moves).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        button: Option<LivePointerButton>,
        /// 1 for a click, 2 for a double click.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        click_count: Option<u8>,
        /// Keys held.
        #[serde(default)]
        modifiers: LiveModifiers,
    },
    /// The wheel turned, in CSS pixels.
    Wheel {
        /// Horizontal position.
        x: f64,
        /// Vertical position.
        y: f64,
        /// Horizontal scroll.
        #[serde(default)]
        delta_x: f64,
        /// Vertical scroll.
        #[serde(default)]
        delta_y: f64,
    },
    /// An editing or navigation key (`Enter`, `Tab`, `Backspace`, `ArrowLeft`, ...), or a
    /// letter or digit with Ctrl, Alt or Meta (a shortcut). Text is sent as
    /// [`LiveViewInput::Text`].
    Key {
        /// The DOM `KeyboardEvent.key`.
        key: String,
        /// Keys held.
        #[serde(default)]
        modifiers: LiveModifiers,
    },
    /// Text typed (any script, input-method results, pasted text): at most 4096 bytes.
    Text {
        /// The text.
        text: String,
    },
    /// Open a URL (only web pages of the platform being signed in to).
    Navigate {
        /// The URL.
        url: String,
    },
    /// History back.
    Back,
    /// History forward.
    Forward,
    /// Reload.
    Reload,
}

impl std::fmt::Debug for LiveViewInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Typed text and URLs may be credentials: never print them.
        let kind = match self {
            Self::Pointer { .. } => "Pointer",
            Self::Wheel { .. } => "Wheel",
            Self::Key { .. } => "Key",
            Self::Text { .. } => "Text",
            Self::Navigate { .. } => "Navigate",
            Self::Back => "Back",
            Self::Forward => "Forward",
            Self::Reload => "Reload",
        };
        f.debug_struct("LiveViewInput")
            .field("type", &kind)
            .finish_non_exhaustive()
    }
}

/// A message from the runner to a viewer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum LiveViewEvent {
    /// A frame: its picture (JPEG) is the next binary message.
    Frame {
        /// Width of the page area shown, in CSS pixels (pointer coordinates use these).
        width: u32,
        /// Height, in CSS pixels.
        height: u32,
    },
    /// Where the page is now (sent when it changed).
    Location {
        /// The page's URL.
        url: String,
        /// The page's title.
        title: String,
    },
    /// An input was refused before it reached the browser.
    Refused {
        /// Why: `outside_sites`, `scheme`, `invalid_url`, `unknown_key`, `text_too_long`,
        /// `bad_coordinates`, `malformed`.
        reason: String,
    },
    /// The view ended; the socket closes next.
    Closed {
        /// Why: `capture_ended` or `page_closed`.
        reason: String,
    },
}

impl std::fmt::Debug for LiveViewEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Frame { width, height } => f
                .debug_struct("Frame")
                .field("width", width)
                .field("height", height)
                .finish(),
            Self::Location { .. } => f.debug_struct("Location").finish_non_exhaustive(),
            Self::Refused { reason } => f.debug_struct("Refused").field("reason", reason).finish(),
            Self::Closed { reason } => f.debug_struct("Closed").field("reason", reason).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_and_events_have_their_documented_shape() {
        let press: LiveViewInput = serde_json::from_str(
            r#"{"type":"pointer","action":"down","x":1,"y":2,"clickCount":2,"modifiers":{"ctrl":true}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            press,
            LiveViewInput::Pointer {
                action: LivePointerAction::Down,
                click_count: Some(2),
                modifiers: LiveModifiers { ctrl: true, .. },
                ..
            }
        ));
        let key = serde_json::to_value(LiveViewInput::Key {
            key: "Enter".into(),
            modifiers: LiveModifiers::default(),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key["type"], "key");
        let event = serde_json::to_string(&LiveViewEvent::Frame {
            width: 1280,
            height: 800,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(event, r#"{"type":"frame","width":1280,"height":800}"#);
        assert!(serde_json::from_str::<LiveViewInput>(r#"{"type":"eval"}"#).is_err());
        let secret = LiveViewInput::Text {
            text: "hunter2".into(),
        };
        assert!(!format!("{secret:?}").contains("hunter2"));
    }
}
