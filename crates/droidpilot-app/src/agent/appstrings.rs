//! Labels across phone languages: the one hook replay uses when a step's label selector
//! (`:text`, `:desc`, or a flow's `tapOn: "text"`) finds nothing on screen. The label is
//! looked up in the foreground app's string resources (`Device::app_strings`, what the
//! app's APK ships, the same for a real phone and the virtual one); when it is exactly the
//! value of resource keys whose value in the phone's locale is one other string, that
//! string is looked for instead (`AppStrings::translate`: exact values only, ambiguous
//! keys never). The script agent (`script/`) and the flow agent (`flow/`) both call
//! `Loaded::selector` / `Loaded::text`; the runner hands each task one
//! `AppStringsSource` (`Agent::give_app_strings`), which reads an app's strings once per
//! task, only when a label is missing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::device::{AppStrings, Device};
use crate::domain::Translated;
use crate::screen::Selector;

/// Reads an app's string resources and the phone's locale from the task's device, once
/// per package for the task.
#[derive(Clone)]
pub struct AppStringsSource {
    device: Arc<dyn Device>,
    cache: Arc<Mutex<HashMap<String, Option<Loaded>>>>,
}

impl std::fmt::Debug for AppStringsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppStringsSource")
            .field("device", &self.device.serial())
            .finish()
    }
}

impl AppStringsSource {
    pub fn new(device: Arc<dyn Device>) -> Self {
        AppStringsSource {
            device,
            cache: Arc::default(),
        }
    }

    /// The strings of `package` with the phone's locale, or None when the device cannot
    /// say (unsupported, too large, no locale): replay then goes on without them.
    pub async fn load(&self, package: &str) -> Option<Loaded> {
        if let Some(known) = self.cache.lock().ok()?.get(package) {
            return known.clone();
        }
        let loaded = self.read(package).await;
        if let Ok(mut c) = self.cache.lock() {
            c.insert(package.to_string(), loaded.clone());
        }
        loaded
    }

    async fn read(&self, package: &str) -> Option<Loaded> {
        let locale = self.device.locale().await.ok()?.locale?;
        match self.device.app_strings(package).await {
            Ok(strings) => Some(Loaded {
                strings: Arc::new(strings),
                locale,
            }),
            Err(e) => {
                tracing::debug!(package, error = %e, "no string resources for replay");
                None
            }
        }
    }
}

/// One app's strings and the phone's locale.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub strings: Arc<AppStrings>,
    pub locale: String,
}

impl Loaded {
    /// `text` as the phone shows it, when it is a resource's value in another locale.
    pub fn text(&self, text: &str, ignore_case: bool) -> Option<Translated> {
        let t = self.strings.translate(text, &self.locale, ignore_case)?;
        Some(Translated {
            from: text.to_string(),
            to: t.value,
            keys: t.keys,
            locale: self.locale.clone(),
        })
    }

    /// `sel` with every label in it (`:text`, `:desc`, both sides of `a >> b`) the phone
    /// shows otherwise replaced by what it shows; None when no label translates.
    pub fn selector(&self, sel: &Selector) -> Option<(Selector, Vec<Translated>)> {
        let mut done = Vec::new();
        let out = self.rewrite(sel, &mut done);
        (!done.is_empty()).then_some((out, done))
    }

    fn rewrite(&self, sel: &Selector, done: &mut Vec<Translated>) -> Selector {
        let mut swap = |s: &String| match self.text(s, false) {
            Some(t) => {
                let to = t.to.clone();
                done.push(t);
                to
            }
            None => s.clone(),
        };
        match sel {
            Selector::Text { class, text } => Selector::Text {
                class: class.clone(),
                text: swap(text),
            },
            Selector::Desc { class, desc } => Selector::Desc {
                class: class.clone(),
                desc: swap(desc),
            },
            Selector::Near { anchor, target } => Selector::Near {
                anchor: Box::new(self.rewrite(anchor, done)),
                target: Box::new(self.rewrite(target, done)),
            },
            other => other.clone(),
        }
    }
}

/// Whether a selector names a label (what the string resources can translate).
pub fn names_label(sel: &Selector) -> bool {
    match sel {
        Selector::Text { .. } | Selector::Desc { .. } => true,
        Selector::Near { anchor, target } => names_label(anchor) || names_label(target),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded() -> Loaded {
        let mut s = AppStrings::default();
        for (loc, k, v) in [
            ("", "add_to_cart", "Add to cart"),
            ("de", "add_to_cart", "In den Warenkorb"),
            ("", "delete", "Delete"),
            ("de", "delete", "Löschen"),
        ] {
            s.locales
                .entry(loc.into())
                .or_default()
                .insert(k.into(), v.into());
        }
        Loaded {
            strings: Arc::new(s),
            locale: "de-DE".into(),
        }
    }

    #[test]
    fn a_selectors_labels_are_rewritten_and_each_is_recorded() {
        let l = loaded();
        let sel = Selector::parse(r#"#list >> :text("Delete")"#).unwrap();
        let (out, done) = l.selector(&sel).unwrap();
        assert_eq!(out.to_string(), r#"#list >> :text("Löschen")"#);
        assert_eq!(done[0].keys, ["delete"]);
        assert_eq!(done[0].locale, "de-DE");
        let desc = Selector::parse(r#"Button:desc("Add to cart")"#).unwrap();
        assert_eq!(
            l.selector(&desc).unwrap().0.to_string(),
            r#"Button:desc("In den Warenkorb")"#
        );
        // A label no resource has, an id: nothing to rewrite.
        assert_eq!(
            l.selector(&Selector::parse(r#":text("Bob")"#).unwrap()),
            None
        );
        assert_eq!(l.selector(&Selector::parse("#delete").unwrap()), None);
    }
}
