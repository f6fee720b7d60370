//! What changed between two screens, short enough to put in a prompt.
//!
//! Compares what the model sees (elements and loose text of the element maps), not raw
//! nodes, so wrapper churn is invisible. Items are paired in three passes: identical
//! (same class, id, label and state) → unchanged; same class, id and label → a state
//! change (`off → on`); same class, id and index path → a label change (a field's value,
//! a title). Whatever is left is added or removed.

use std::collections::HashMap;

use serde::Serialize;

use super::elements::{ElementMap, clip};
use super::tree::UiTree;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeDiff {
    /// `[id] Button "OK"` lines for new elements (ids of the new screen) and new texts.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// `Switch "Wi-Fi": off → on`, `Edit: "" → "hello"`.
    pub changed: Vec<String>,
}

struct Item {
    class: String,
    id: String,
    label: String,
    state: String,
    path: String,
    element: Option<u32>,
}

impl Item {
    fn show(&self) -> String {
        let mut s = self.show_base();
        if !self.state.is_empty() {
            s.push(' ');
            s.push_str(&self.state);
        }
        s
    }
}

fn items(tree: &UiTree, map: &ElementMap) -> Vec<Item> {
    let mut v = Vec::with_capacity(map.elements.len() + map.texts.len());
    for e in &map.elements {
        let n = &tree.nodes[e.node];
        let mut state = Vec::new();
        if n.checkable {
            state.push(if n.checked { "on" } else { "off" });
        }
        if n.selected {
            state.push("selected");
        }
        if !n.enabled {
            state.push("disabled");
        }
        v.push(Item {
            class: e.kind.clone(),
            id: n.short_id().to_string(),
            label: e.label.clone(),
            state: state.join(" "),
            path: n.path.clone(),
            element: Some(e.id),
        });
    }
    for t in &map.texts {
        let n = &tree.nodes[t.node];
        v.push(Item {
            class: "Text".into(),
            id: n.short_id().to_string(),
            label: t.text.clone(),
            state: String::new(),
            path: n.path.clone(),
            element: None,
        });
    }
    v
}

/// The difference from `before` to `after`.
pub fn diff(before: (&UiTree, &ElementMap), after: (&UiTree, &ElementMap)) -> TreeDiff {
    let a = items(before.0, before.1);
    let b = items(after.0, after.1);
    let mut used_a = vec![false; a.len()];
    let mut used_b = vec![false; b.len()];
    let mut changed = Vec::new();
    type Key<'a> = (&'a str, &'a str, &'a str, &'a str);
    let passes: [fn(&Item) -> Key<'_>; 3] = [
        |i| (&i.class, &i.id, &i.label, &i.state),
        |i| (&i.class, &i.id, &i.label, ""),
        |i| (&i.class, &i.id, &i.path, ""),
    ];
    for (pass, key) in passes.iter().enumerate() {
        let mut pool: HashMap<Key<'_>, Vec<usize>> = HashMap::new();
        for (i, it) in a.iter().enumerate().rev() {
            if !used_a[i] {
                pool.entry(key(it)).or_default().push(i);
            }
        }
        for (j, it) in b.iter().enumerate() {
            if used_b[j] {
                continue;
            }
            if let Some(i) = pool.get_mut(&key(it)).and_then(Vec::pop) {
                used_a[i] = true;
                used_b[j] = true;
                let (x, y) = (&a[i], it);
                match pass {
                    0 => {}
                    1 => changed.push(format!(
                        "{}: {} → {}",
                        y.show_base(),
                        or_none(&x.state),
                        or_none(&y.state)
                    )),
                    _ => changed.push(format!(
                        "{}{}: \"{}\" → \"{}\"",
                        y.element.map(|e| format!("[{e}] ")).unwrap_or_default(),
                        y.class,
                        clip(&x.label, 40),
                        clip(&y.label, 40)
                    )),
                }
            }
        }
    }
    TreeDiff {
        added: b
            .iter()
            .zip(&used_b)
            .filter(|(_, u)| !**u)
            .map(|(i, _)| i.show())
            .collect(),
        removed: a
            .iter()
            .zip(&used_a)
            .filter(|(_, u)| !**u)
            .map(|(i, _)| i.show())
            .collect(),
        changed,
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "normal" } else { s }
}

impl Item {
    fn show_base(&self) -> String {
        let mut s = String::new();
        if let Some(e) = self.element {
            s.push_str(&format!("[{e}] "));
        }
        s.push_str(&self.class);
        if !self.label.is_empty() {
            s.push_str(&format!(" \"{}\"", clip(&self.label, 40)));
        }
        s
    }
}

impl TreeDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// At most `max_lines` lines (`+ added`, `- removed`, `~ changed`, changes first),
    /// then `… N more`. Empty diff → `no visible change`.
    pub fn to_prompt(&self, max_lines: usize) -> String {
        if self.is_empty() {
            return "no visible change".into();
        }
        let all: Vec<String> = self
            .changed
            .iter()
            .map(|l| format!("~ {l}"))
            .chain(self.added.iter().map(|l| format!("+ {l}")))
            .chain(self.removed.iter().map(|l| format!("- {l}")))
            .collect();
        let shown = all.len().min(max_lines.max(1));
        let mut out = all[..shown].join("\n");
        if all.len() > shown {
            out.push_str(&format!("\n… {} more", all.len() - shown));
        }
        out
    }
}
