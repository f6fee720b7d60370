//! What a redesigning app update does to an app's structure, as seeded drifts of the
//! widget tree after it is built (`SimFaults::icon_buttons`, `list_to_grid`,
//! `overflow_menu`, `whats_new_dialog`, `confirm_destructive`).

/// The resource-id of the "More options" button `overflow_menu` adds to a toolbar.
pub const OVERFLOW_ID: &str = "overflow_menu";
/// The dialog kind of the overflow menu.
pub const OVERFLOW_KIND: &str = "overflow";
/// The dialog kind of the "what's new" dialog, and its button's resource-id.
pub const WHATS_NEW_KIND: &str = "whats_new";
pub const WHATS_NEW_OK: &str = "whats_new_dismiss";
/// The dialog kind of a confirmation `confirm_destructive` asks.
pub const CONFIRM_KIND: &str = "confirm";
