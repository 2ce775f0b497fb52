//! The live view's socket protocol ([`abr_protocol::LiveViewInput`] in,
//! [`abr_protocol::LiveViewEvent`] out) and how an input becomes a core [`LiveInput`].
//! Parsing only: whether an input is allowed is decided by the core's
//! [`LiveAttachment`](abr_engine::LiveAttachment).

use abr_core::{LiveInput, LiveKey, MAX_LIVE_TEXT, Modifiers, PointerAction, PointerButton};
use abr_protocol::{LiveModifiers, LivePointerAction, LivePointerButton, LiveViewInput};

/// Longest message the viewer may send (bytes); longer ones close the socket.
pub(crate) const MAX_MESSAGE: usize = 64 * 1024;

/// Why a message was not turned into an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// Not a message of the protocol.
    Malformed,
    /// A key the live view does not forward (function keys, bare letters: those are text).
    UnknownKey,
    /// Not a URL.
    InvalidUrl,
    /// Longer than [`MAX_LIVE_TEXT`].
    TextTooLong,
}

impl WireError {
    /// Stable reason sent back to the viewer.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::UnknownKey => "unknown_key",
            Self::InvalidUrl => "invalid_url",
            Self::TextTooLong => "text_too_long",
        }
    }
}

fn modifiers(m: LiveModifiers) -> Modifiers {
    Modifiers {
        alt: m.alt,
        ctrl: m.ctrl,
        meta: m.meta,
        shift: m.shift,
    }
}

/// Parses one text message from the viewer.
pub(crate) fn parse(text: &str) -> Result<LiveInput, WireError> {
    let message: LiveViewInput = serde_json::from_str(text).map_err(|_| WireError::Malformed)?;
    Ok(match message {
        LiveViewInput::Pointer {
            action,
            x,
            y,
            button,
            click_count,
            modifiers: held,
        } => {
            let action = match action {
                LivePointerAction::Move => PointerAction::Move,
                LivePointerAction::Down => PointerAction::Down,
                LivePointerAction::Up => PointerAction::Up,
            };
            let button = match (action, button) {
                (PointerAction::Move, _) | (_, Some(LivePointerButton::None)) => {
                    PointerButton::None
                }
                (_, None | Some(LivePointerButton::Left)) => PointerButton::Left,
                (_, Some(LivePointerButton::Middle)) => PointerButton::Middle,
                (_, Some(LivePointerButton::Right)) => PointerButton::Right,
            };
            LiveInput::Pointer {
                action,
                x,
                y,
                button,
                click_count: click_count.unwrap_or(1).clamp(1, 3),
                modifiers: modifiers(held),
            }
        }
        LiveViewInput::Wheel {
            x,
            y,
            delta_x,
            delta_y,
        } => LiveInput::Wheel {
            x,
            y,
            delta_x,
            delta_y,
        },
        LiveViewInput::Key {
            key,
            modifiers: held,
        } => {
            let held = modifiers(held);
            match LiveKey::from_dom(&key) {
                Some(LiveKey::Shortcut(_)) if !held.any_command() => {
                    return Err(WireError::UnknownKey);
                }
                Some(key) => LiveInput::Key {
                    key,
                    modifiers: held,
                },
                None => return Err(WireError::UnknownKey),
            }
        }
        LiveViewInput::Text { text } if text.len() > MAX_LIVE_TEXT => {
            return Err(WireError::TextTooLong);
        }
        LiveViewInput::Text { text } => LiveInput::Text { text },
        LiveViewInput::Navigate { url } => LiveInput::Navigate {
            url: url::Url::parse(url.trim()).map_err(|_| WireError::InvalidUrl)?,
        },
        LiveViewInput::Back => LiveInput::Back,
        LiveViewInput::Forward => LiveInput::Forward,
        LiveViewInput::Reload => LiveInput::Reload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_messages_become_inputs() {
        let press = parse(
            r#"{"type":"pointer","action":"down","x":10.5,"y":20,"button":"left","clickCount":2,"modifiers":{"shift":true}}"#,
        );
        assert_eq!(
            press,
            Ok(LiveInput::Pointer {
                action: PointerAction::Down,
                x: 10.5,
                y: 20.0,
                button: PointerButton::Left,
                click_count: 2,
                modifiers: Modifiers {
                    shift: true,
                    ..Modifiers::NONE
                },
            })
        );
        assert_eq!(
            parse(r#"{"type":"key","key":"a","modifiers":{"ctrl":true}}"#),
            Ok(LiveInput::Key {
                key: LiveKey::Shortcut('a'),
                modifiers: Modifiers {
                    ctrl: true,
                    ..Modifiers::NONE
                },
            })
        );
        assert_eq!(
            parse(r#"{"type":"text","text":"日本語 ✓"}"#),
            Ok(LiveInput::Text {
                text: "日本語 ✓".into()
            })
        );
        assert_eq!(parse(r#"{"type":"back"}"#), Ok(LiveInput::Back));
        assert!(matches!(
            parse(r#"{"type":"navigate","url":"https://example.com/x"}"#),
            Ok(LiveInput::Navigate { .. })
        ));
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        for (text, why) in [
            ("not json", WireError::Malformed),
            (r#"{"type":"eval","code":"1"}"#, WireError::Malformed),
            (
                r#"{"type":"pointer","action":"explode","x":1,"y":1}"#,
                WireError::Malformed,
            ),
            (r#"{"type":"key","key":"F12"}"#, WireError::UnknownKey),
            (r#"{"type":"key","key":"a"}"#, WireError::UnknownKey),
            (
                r#"{"type":"navigate","url":"not a url"}"#,
                WireError::InvalidUrl,
            ),
        ] {
            assert_eq!(parse(text), Err(why), "{text}");
        }
        let long = format!(
            r#"{{"type":"text","text":"{}"}}"#,
            "x".repeat(MAX_LIVE_TEXT + 1)
        );
        assert_eq!(parse(&long), Err(WireError::TextTooLong));
    }

    /// Fuzz target (bolero; `cargo test fuzz_`): any text a viewer sends is an input or a
    /// typed refusal, never a panic; what is accepted stays in bounds (a click count of 1 to
    /// 3, text within the limit, an absolute URL to navigate to).
    #[test]
    fn fuzz_live_view_messages() {
        let check = |text: &str| match parse(text) {
            Ok(LiveInput::Pointer { click_count, .. }) => assert!((1..=3).contains(&click_count)),
            Ok(LiveInput::Text { text }) => assert!(text.len() <= MAX_LIVE_TEXT),
            Ok(_) | Err(_) => {}
        };
        bolero::check!().for_each(|bytes: &[u8]| {
            if let Ok(text) = std::str::from_utf8(bytes) {
                check(text);
            }
        });
        // Well-formed messages with any values.
        bolero::check!()
            .with_type::<(u8, String, i64, i64, u8)>()
            .for_each(|(kind, value, x, y, count)| {
                let value = serde_json::to_string(value).unwrap();
                let text = match kind % 5 {
                    0 => format!(r#"{{"type":"key","key":{value}}}"#),
                    1 => format!(r#"{{"type":"text","text":{value}}}"#),
                    2 => format!(r#"{{"type":"navigate","url":{value}}}"#),
                    3 => format!(
                        r#"{{"type":"pointer","action":"down","x":{x},"y":{y},"clickCount":{count}}}"#
                    ),
                    _ => format!(r#"{{"type":"wheel","x":{x},"y":{y},"deltaX":{x},"deltaY":{y}}}"#),
                };
                check(&text);
            });
    }
}
