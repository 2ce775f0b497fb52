//! [`is_committing`]: the one function that decides which browser actions may commit.

use super::BrowserAction;

/// Whether `action` may change something on the site (submit a form, send, pay, delete).
///
/// Conservative, and decided here only, from the action itself: never from what the plan
/// says about its own risk. Every click may commit; a `type` that presses Enter may submit
/// its form; a `select` may submit through its `onchange`; setting a file input may upload
/// through its `onchange`. Navigating, waiting, reading, screenshots and DOM checks do not.
///
/// Outcomes depend on it: a step that fails before any committing step started is `failed`
/// (safe to retry); from the first committing step on, anything unproven is `uncertain`.
pub fn is_committing(action: &BrowserAction) -> bool {
    match action {
        BrowserAction::Click { .. }
        | BrowserAction::Select { .. }
        | BrowserAction::Upload { .. } => true,
        BrowserAction::Type { submit, .. } => *submit,
        BrowserAction::Navigate { .. }
        | BrowserAction::Wait { .. }
        | BrowserAction::Extract { .. }
        | BrowserAction::Screenshot
        | BrowserAction::Assert { .. } => false,
    }
}
