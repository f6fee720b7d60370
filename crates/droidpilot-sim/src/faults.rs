//! Fault injection for the virtual phone: the ways real phones misbehave, seeded so that
//! a run can be replayed exactly. All faults are off by default.
//!
//! Random faults draw from the device's ChaCha8 stream only when their rate is above
//! zero, in command order, so the same seed and the same commands give the same faults.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Per-device fault configuration (`[devices.sim.faults]` in the config file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SimFaults {
    /// Probability that a dump fails with `ERROR: could not get idle state.`.
    pub hierarchy_error_rate: f64,
    /// Probability that a dump fails with a null root node.
    pub null_root_rate: f64,
    /// Probability that a dump is slow, and by how much (real ms).
    pub slow_dump_rate: f64,
    pub slow_dump_ms: u64,
    /// Probability that a screenshot is slow, and by how much (real ms).
    pub slow_screenshot_rate: f64,
    pub slow_screenshot_ms: u64,
    /// Probability that a tap (or long press, or swipe) is lost.
    pub dropped_tap_rate: f64,
    /// Probability, after each input command in an app, that a pop-up interrupts.
    pub popup_rate: f64,
    /// Resource-ids renamed as by an app update (`switch_widget` → `switchWidget`).
    pub renamed_ids: bool,
    /// List items shown in a seeded shuffled order.
    pub reorder_lists: bool,
    /// Extra virtual ms before loading content appears (browser pages, shop catalogue);
    /// meanwhile every list shows a "Syncing…" row with a progress bar on top, which
    /// pushes its rows down by one row until it goes.
    pub delayed_elements_ms: u64,
    /// A seeded layout shift, as by an app update: a banner row under each app's toolbar
    /// pushes its content down one to two rows; the launcher's icon grid moves up.
    pub moved_elements: bool,
    /// Button labels reworded, as by an app update (`Send` → `Send message`), seeded per
    /// app.
    pub changed_labels: bool,
    /// Text buttons become icon-only buttons whose label is their content-desc, as a
    /// redesign makes them (`Save` → a check mark described "Save").
    pub icon_buttons: bool,
    /// Lists become grids of two columns (rows become cells, in the same order).
    pub list_to_grid: bool,
    /// An app's toolbar and floating actions move into an overflow menu: a "More
    /// options" ⋮ button, then the action by its label.
    pub overflow_menu: bool,
    /// A "What's new" dialog on each app's first open, before its first screen can be
    /// used ("Got it" closes it).
    pub whats_new_dialog: bool,
    /// Destructive actions (delete an alarm, a contact, a note; remove from the cart)
    /// ask first ("Delete alarm?" Cancel / Delete); Cancel keeps the item.
    pub confirm_destructive: bool,
    /// The layout changes a release makes around the ids and strings it renames, per app
    /// (seeded) at the frequencies mined from real releases: a new row under the
    /// toolbar (30% of apps), list rows with larger paddings (14%), or none.
    pub release_layout: bool,
    /// The connection drops after this many commands; `reconnect()` restores it.
    pub disconnect_after: Option<u64>,
    /// Screenshots of secure screens (FLAG_SECURE, e.g. the shop's checkout) come out
    /// black, as `screencap` does on a real phone.
    pub secure_black: bool,
}

impl SimFaults {
    /// What one realistic redesigning update brings at once: icon-only buttons, lists
    /// as grids, actions in an overflow menu, a "what's new" dialog and confirmations
    /// of destructive actions (with `SimConfig::renames` and `font_scale`, the realistic
    /// drift).
    pub fn redesign() -> SimFaults {
        SimFaults {
            icon_buttons: true,
            list_to_grid: true,
            overflow_menu: true,
            whats_new_dialog: true,
            confirm_destructive: true,
            ..SimFaults::default()
        }
    }

    /// Checks the rates, so a typo in the config is refused up front.
    pub fn validate(&self) -> Result<(), String> {
        for (name, r) in [
            ("hierarchy_error_rate", self.hierarchy_error_rate),
            ("null_root_rate", self.null_root_rate),
            ("slow_dump_rate", self.slow_dump_rate),
            ("slow_screenshot_rate", self.slow_screenshot_rate),
            ("dropped_tap_rate", self.dropped_tap_rate),
            ("popup_rate", self.popup_rate),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(format!(
                    "faults.{name} = {r} is not a probability; use a value between 0 and 1"
                ));
            }
        }
        Ok(())
    }
}

/// The message uiautomator prints when the UI never settles.
pub const IDLE_STATE_ERROR: &str = "ERROR: could not get idle state.";
/// The message uiautomator prints when the accessibility tree has no root.
pub const NULL_ROOT_ERROR: &str = "ERROR: null root node returned by UiTestAutomationBridge.";
