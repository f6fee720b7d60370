//! `ScreenRepresentation`: the JSON view of one screen that agents, REST clients and
//! scripts consume.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::domain::element::{ActionableElement, ElementAction};

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
