//! `ScreenRepresentation`: the JSON view of one screen that agents, REST clients and
//! scripts consume.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::Bounds;

/// One screen as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScreenRepresentation {
    /// The foreground app's package, when the dump names one.
    pub app_package: Option<String>,
    /// The foreground activity, when known (dumps do not carry it; devices may).
    pub activity: Option<String>,
    /// A dialog, permission prompt or full-screen overlay is on top.
    pub has_modal: bool,
    /// The compact text representation sent to models.
    pub elements: String,
    /// One line for people and logs: app, element counts, modal.
    pub summary: String,
    pub actionable_elements: Vec<ActionableElement>,
}

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElementAction {
    Click,
    LongClick,
    SetText,
    Scroll,
}
