//! What a touch hit, independent of drift: for the bench to tell a replay's right element
//! from a wrong one, and its collateral damage, without asking the screen a device client
//! reads.
//!
//! Every interactive widget has a key, stamped when its tree is built before any drift,
//! rename or translation touches it (when one that changes ids or commands is on): the widget's id as the app's layout names it,
//! then what it does (`delete#{"cmd":"alarm_delete","id":2}`: the command carries the row's
//! own item, so a reordered, regridded or relabelled row keeps its key). A widget a drift
//! adds has its own key (the overflow button, a new dialog's buttons); an action a drift
//! moves (into an overflow menu, behind a confirmation) keeps the key of the widget it
//! came from. `SimDevice::touched` lists the touches that hit a widget; nothing of this
//! is in the dump or the screenshot.
//!
//! `app_data` is the apps' data as task checkers read it (settings, contacts, alarms,
//! threads, notes, browser history, shop), without navigation, clock or drafts, and
//! `changed_paths` lists where two of them differ, so a bench can diff a replay's final
//! data against the clean recording's (a second alarm deleted, a wrong product ordered).

use serde::Serialize;
use serde_json::Value;

use super::state::PhoneState;
use super::widget::Widget;

/// What kind of touch hit a widget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TouchKind {
    Tap,
    LongPress,
    /// A tap or drag that set a slider's value.
    Slide,
}

/// One touch that hit a widget: its drift-independent key and the window's package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Touched {
    pub kind: TouchKind,
    pub key: String,
    pub package: String,
}

/// The key of a widget as built, before drift (see the module doc): its id, then its
/// command (and long-press command), field, slider or what it scrolls; empty for a
/// widget that does nothing.
pub fn key_of(w: &Widget) -> String {
    let json = |c| serde_json::to_string(c).unwrap_or_default();
    let what = if let Some(cmd) = &w.on_tap {
        match &w.on_long {
            // A row that only opens a menu on long press is told apart by that.
            Some(long) => format!("{}+long:{}", json(cmd), json(long)),
            None => json(cmd),
        }
    } else if let Some(cmd) = &w.on_long {
        format!("long:{}", json(cmd))
    } else if let Some(f) = &w.field {
        format!("field={f}")
    } else if w.slider.is_some() {
        "slider".to_string()
    } else if let Some(s) = &w.scroll {
        format!("scroll={}", s.key)
    } else {
        return String::new();
    };
    format!("{}#{what}", w.id)
}

/// A widget's key: the one stamped on it, else `key_of` it as it is (a tree no drift
/// changed needs no stamping).
pub fn key(w: &Widget) -> std::borrow::Cow<'_, str> {
    if w.key.is_empty() {
        key_of(w).into()
    } else {
        w.key.as_str().into()
    }
}

/// Stamps every interactive widget of a tree with its key (see `key_of`); a widget
/// that already has one keeps it. Only needed when a drift changes a widget's id or
/// command (renames, the overflow menu, confirmations); otherwise `key` computes it
/// when a touch hits, and building a screen costs nothing more.
pub fn stamp(w: &mut Widget) {
    if w.key.is_empty() {
        w.key = key_of(w);
    }
    for c in &mut w.children {
        stamp(c);
    }
}

/// The apps' data as checkers read it (see the module doc).
pub fn app_data(st: &PhoneState) -> Value {
    serde_json::json!({
        "settings": st.settings,
        "contacts": st.contacts,
        "alarms": st.alarms,
        "threads": st.threads,
        "notes": st.notes,
        "browser": st.browser,
        "shop": {"cart": st.shop.cart, "orders": st.shop.orders},
    })
}

/// The JSON paths (`alarms[1]`, `settings.wifi`) where `a` and `b` differ; arrays are
/// compared element by element, a length change names the array's extra elements.
pub fn changed_paths(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff(a, b, String::new(), &mut out);
    out
}

fn diff(a: &Value, b: &Value, path: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                diff(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    p,
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                diff(
                    x.get(i).unwrap_or(&Value::Null),
                    y.get(i).unwrap_or(&Value::Null),
                    format!("{path}[{i}]"),
                    out,
                );
            }
        }
        _ if a != b => out.push(path),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{AppId, Cmd};
    use crate::{SimConfig, SimDevice, SimFaults};
    use droidpilot_core::device::Device;
    use droidpilot_core::domain::PixelPoint;

    /// The centre of the first node whose content-desc is `desc` in the dump.
    fn centre(xml: &str, desc: &str) -> PixelPoint {
        let doc = roxmltree::Document::parse(xml).unwrap();
        let n = doc
            .descendants()
            .find(|n| n.attribute("content-desc") == Some(desc))
            .unwrap_or_else(|| panic!("no `{desc}` in {xml}"));
        let b = n.attribute("bounds").unwrap();
        let v: Vec<i32> = b
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        PixelPoint {
            x: (v[0] + v[2]) / 2,
            y: (v[1] + v[3]) / 2,
        }
    }

    /// A tap on the second alarm's delete button is logged with the same key on a clean
    /// phone and on one whose lists are reordered, ids renamed and labels reworded: the
    /// key names the alarm, not the row's place or its id on screen.
    #[tokio::test]
    async fn a_tap_is_logged_by_what_it_hit_before_drift() {
        let mut keys = Vec::new();
        for faults in [
            SimFaults::default(),
            SimFaults {
                reorder_lists: true,
                renamed_ids: true,
                changed_labels: true,
                moved_elements: true,
                ..SimFaults::default()
            },
        ] {
            let p = SimDevice::new(SimConfig {
                seed: 3,
                faults,
                ..SimConfig::default()
            })
            .unwrap();
            p.apply(Cmd::Launch { app: AppId::Clock });
            let xml = p.hierarchy_now();
            // The switch of the 8:15 alarm carries its time as content-desc.
            p.tap(centre(&xml, "8:15 AM")).await.unwrap();
            let log = p.touched();
            assert_eq!(log.len(), 1, "{log:?}");
            assert_eq!(log[0].kind, TouchKind::Tap);
            assert_eq!(log[0].package, AppId::Clock.package());
            keys.push(log[0].key.clone());
            assert!(!xml.contains(&log[0].key), "the key is not in the dump");
        }
        assert_eq!(keys[0], keys[1]);
        assert_eq!(keys[0], r#"onoff#{"cmd":"alarm_toggle","id":2}"#);
    }

    #[test]
    fn app_data_diffs_name_what_changed() {
        let p = SimDevice::new(SimConfig::default()).unwrap();
        let before = p.app_data();
        p.apply(Cmd::Launch { app: AppId::Clock });
        assert!(
            changed_paths(&before, &p.app_data()).is_empty(),
            "navigation only"
        );
        p.apply(Cmd::AlarmDelete { id: 1 });
        p.apply(Cmd::AlarmToggle { id: 2 });
        let changed = changed_paths(&before, &p.app_data());
        assert!(
            changed.iter().any(|c| c.starts_with("alarms[1]")),
            "{changed:?}"
        );
        assert!(changed.contains(&"alarms[0].id".to_string()), "{changed:?}");
    }
}
