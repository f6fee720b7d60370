//! The elements of a screen an agent can act on, as the screen representation lists them
//! and as a recorded step keeps them (`StepScreen::elements`). Here, below `screen`, so
//! that a `Step` can embed them; `screen::representation` re-exports them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Bounds;

/// An element the agent can act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActionableElement {
    /// The id the model refers to (`"element": 3`), stable for this screen.
    pub element_id: u32,
    /// The recommended selector.
    pub selector: String,
    /// Other selectors that match the same element (always present when `selector` is index-based).
    pub alternative_selectors: Vec<String>,
    /// The short class name (`Button`, `EditText`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The label a person sees (text, merged child text, content-desc or hint).
    pub text: String,
    pub actions: Vec<ElementAction>,
    pub bounds: Bounds,
    /// `tree` (the UI dump), `ocr` (read off the screenshot only; asked with `ocr`) or
    /// `merged` (a tree node OCR read text on).
    #[serde(default)]
    pub source: ElementSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElementAction {
    Click,
    LongClick,
    SetText,
    Scroll,
}

/// Where an element came from: the UI tree, OCR of the screenshot alone, or a tree node
/// OCR read text on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElementSource {
    #[default]
    Tree,
    Ocr,
    Merged,
}
