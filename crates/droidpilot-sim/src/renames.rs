//! A rename map: the resource-ids and UI strings an app update renamed, applied to every
//! app and the launcher of the virtual phone (`SimConfig::renames`). Read from
//! `{"ids": {old: new}, "strings": {old: new}}`; an unknown field is refused by name.
//!
//! Ids are matched by their short name (`delete`, as the app's layout names it) or fully
//! qualified (`com.google.android.deskclock:id/delete`); strings match a widget's whole
//! text, content-desc or hint, exactly. The map is applied to the widget tree after it is
//! built, so the dump, the screenshot and touch all show the renamed phone.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::widget::Widget;

/// Old → new resource-ids and UI strings (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RenameMap {
    /// Resource-id renames, by short name or qualified (`pkg:id/name`).
    pub ids: BTreeMap<String, String>,
    /// Whole-string renames of texts, content-descs and hints.
    pub strings: BTreeMap<String, String>,
}

impl RenameMap {
    /// Parses a map file's JSON; the error names what is wrong (an unknown field, a
    /// value that is not a string).
    pub fn from_json(json: &str) -> Result<RenameMap, String> {
        serde_json::from_str(json).map_err(|e| {
            format!(
                "not a rename map ({e}); write {{\"ids\": {{\"old_id\": \"new_id\"}}, \"strings\": {{\"Old\": \"New\"}}}}"
            )
        })
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.strings.is_empty()
    }

    /// Refuses a rename to an empty id or string: it would make an element vanish from
    /// the dump rather than change.
    pub fn validate(&self) -> Result<(), String> {
        for (kind, map) in [("ids", &self.ids), ("strings", &self.strings)] {
            if let Some((old, _)) = map.iter().find(|(_, new)| new.trim().is_empty()) {
                return Err(format!(
                    "renames.{kind}[\"{old}\"] is empty; give the new name, or leave `{old}` out"
                ));
            }
        }
        Ok(())
    }

    /// The new id for a widget's id in `package` (short or qualified), if renamed.
    fn id_for(&self, package: &str, id: &str) -> Option<&String> {
        if id.contains(':') {
            return self.ids.get(id);
        }
        self.ids
            .get(id)
            .or_else(|| self.ids.get(&format!("{package}:id/{id}")))
    }

    /// Applies the map to a window's tree: every id, text, content-desc and hint.
    pub fn apply(&self, w: &mut Widget, package: &str) {
        if self.is_empty() {
            return;
        }
        if let Some(new) = self.id_for(package, &w.id) {
            w.id = new.clone();
        }
        for s in [&mut w.text, &mut w.desc, &mut w.hint] {
            if let Some(new) = self.strings.get(s.as_str()) {
                *s = new.clone();
            }
        }
        for c in &mut w.children {
            self.apply(c, package);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_is_read_from_ids_and_strings_and_refuses_unknown_fields() {
        let m =
            RenameMap::from_json(r#"{"ids": {"fab": "add_button"}, "strings": {"Save": "Done"}}"#)
                .unwrap();
        assert_eq!(m.ids["fab"], "add_button");
        assert_eq!(m.strings["Save"], "Done");
        assert!(RenameMap::from_json(r#"{"ids": {}}"#).unwrap().is_empty());
        let e = RenameMap::from_json(r#"{"id": {"a": "b"}}"#).unwrap_err();
        assert!(e.contains("unknown field `id`"), "{e}");
        let m = RenameMap::from_json(r#"{"strings": {"Save": " "}}"#).unwrap();
        assert!(
            m.validate()
                .unwrap_err()
                .contains("renames.strings[\"Save\"]")
        );
    }

    fn renamed_phone() -> crate::SimDevice {
        let renames = RenameMap::from_json(
            r#"{"ids": {"fab": "add_alarm_button", "com.google.android.deskclock:id/onoff": "alarm_switch",
                         "icon": "launcher_tile"},
               "strings": {"Clock": "Alarms & Clock", "Add alarm": "New alarm", "Alarm": "My alarms"}}"#,
        )
        .unwrap();
        crate::SimDevice::new(crate::SimConfig {
            renames,
            ..crate::SimConfig::default()
        })
        .unwrap()
    }

    /// Ids and strings of an app and of the launcher are renamed in the dump; a tap at a
    /// renamed element still runs what it did.
    #[tokio::test]
    async fn a_rename_map_renames_ids_and_strings_everywhere() {
        use droidpilot_core::device::Device;
        let p = renamed_phone();
        let home = p.hierarchy_now();
        assert!(home.contains("text=\"Alarms &amp; Clock\""), "{home}");
        assert!(home.contains(":id/launcher_tile\"") && !home.contains(":id/icon\""));
        p.launch_app(&droidpilot_core::domain::AppRef::Label("Clock".into()))
            .await
            .unwrap();
        let xml = p.hierarchy_now();
        assert!(xml.contains("deskclock:id/add_alarm_button\""), "{xml}");
        assert!(xml.contains("content-desc=\"New alarm\""), "{xml}");
        assert!(xml.contains("deskclock:id/alarm_switch\"") && !xml.contains("id/onoff\""));
        assert!(xml.contains("text=\"My alarms\""), "the toolbar title");
        assert!(!xml.contains("\"Add alarm\""));
        let screen = p.screen();
        let add = crate::widget::find(&screen, "add_alarm_button").expect("the fab");
        p.tap(add.bounds.center()).await.unwrap();
        assert_eq!(p.state().page(), Some(&crate::Page::AlarmEdit));
        let log = p.touched();
        assert!(
            log[0].key.starts_with("fab#"),
            "the key names the id before renames: {log:?}"
        );
    }

    /// Renames change no layout: every task's reference solution still completes.
    #[tokio::test]
    async fn every_task_stays_solvable_under_a_rename_map() {
        for t in crate::tasks() {
            let p = renamed_phone();
            p.reset_to(&t);
            crate::run_reference(&p, &t).await.unwrap();
            assert!(t.check(&p.state()), "{}", t.id);
        }
    }

    /// A phone's config takes the three keys (`[[devices.sim]]`); a typo inside the map
    /// and a font scale out of range are refused, naming them.
    #[test]
    fn a_sim_config_takes_locale_font_scale_and_renames() {
        let cfg: crate::SimConfig = serde_json::from_value(serde_json::json!({
            "locale": "de",
            "font_scale": 1.3,
            "renames": {"ids": {"fab": "add"}, "strings": {"Save": "Done"}}
        }))
        .unwrap();
        assert_eq!(cfg.locale, crate::Locale::De);
        assert_eq!(cfg.renames.ids["fab"], "add");
        assert!(cfg.validate().is_ok());
        let e = serde_json::from_value::<crate::SimConfig>(serde_json::json!({
            "renames": {"idz": {}}
        }))
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `idz`"), "{e}");
        let big = crate::SimConfig {
            font_scale: 4.0,
            ..crate::SimConfig::default()
        };
        let e = big.validate().unwrap_err().to_string();
        assert!(e.contains("font_scale 4 is out of range"), "{e}");
    }
}
