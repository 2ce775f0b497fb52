//! What an approver is shown of the page besides the words: a redacted frame and where
//! the element to be acted on is in it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An approver's preview: a redacted frame of the page (every field blurred, sensitive text
/// masked, as every kept image) and where the element to be acted on is in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalPreview {
    /// Where the JPEG is served (to the approvers of the tenant; on the approval page of a
    /// one-time link, inline).
    pub image: String,
    /// The image's width in pixels (one per CSS pixel of the viewport).
    pub width: u32,
    /// The image's height in pixels.
    pub height: u32,
    /// The element in the image, when the browser could tell where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outline: Option<PreviewBox>,
}

/// A box in a preview's image, in its pixels (an edge may lie outside the image: the
/// element is partly scrolled out of view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewBox {
    /// From the left edge.
    pub x: i32,
    /// From the top edge.
    pub y: i32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}
