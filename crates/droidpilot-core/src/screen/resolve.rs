//! `Target` → `Bounds`: what the action executor calls to know where to tap.
//!
//! An element id is looked up in the element map. A selector is matched against the whole
//! tree and then narrowed to nodes that are on screen: one left → its bounds (clipped to
//! the screen); none → `not found` (with the closest labels, or "only off-screen" when
//! scrolling would help); several → `ambiguous` with the candidates listed so a model or
//! a person can pick a sharper selector.

use crate::domain::{Bounds, Target};

use super::elements::{ElementMap, clip, one_line};
use super::selector::{Selector, SelectorError};
use super::tree::UiTree;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("no element {id} on this screen (it has {count} elements, numbered 0–{})", count.saturating_sub(1))]
    NoSuchElement { id: u32, count: usize },
    #[error("no element on screen matches `{selector}`{}", if *off_screen > 0 { format!(" ({off_screen} match off-screen or hidden)") } else { String::new() })]
    NotFound {
        selector: String,
        off_screen: usize,
        /// Selectors of similar elements, best first.
        closest: Vec<String>,
    },
    #[error("`{selector}` matches {} elements on screen: {}", candidates.len(), candidates.join("; "))]
    Ambiguous {
        selector: String,
        candidates: Vec<String>,
    },
    #[error(transparent)]
    InvalidSelector(#[from] SelectorError),
    #[error(
        "a coordinate target needs no element lookup; convert it with the screen's CoordinateTransform"
    )]
    NotAnElementTarget,
}

impl ResolveError {
    pub fn code(&self) -> &'static str {
        match self {
            ResolveError::NoSuchElement { .. } | ResolveError::NotFound { .. } => {
                "element_not_found"
            }
            ResolveError::Ambiguous { .. } => "element_ambiguous",
            ResolveError::InvalidSelector(e) => e.code(),
            ResolveError::NotAnElementTarget => "invalid_target",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            ResolveError::NoSuchElement { .. } => {
                "Element ids change with every screen; use an id from the latest observation."
                    .into()
            }
            ResolveError::NotFound {
                off_screen,
                closest,
                ..
            } => {
                let mut h = String::new();
                if *off_screen > 0 {
                    h.push_str("Scroll to bring it on screen, or wait for it to appear. ");
                }
                if !closest.is_empty() {
                    h.push_str(&format!("Did you mean {}?", closest.join(" or ")));
                } else {
                    h.push_str("Check the selector against the current screen (`droidpilot screen dump.xml`).");
                }
                h
            }
            ResolveError::Ambiguous { .. } => {
                "Use a sharper selector (an id, Class:text(\"…\")) or the element number.".into()
            }
            ResolveError::InvalidSelector(e) => e.hint(),
            ResolveError::NotAnElementTarget => "Pass an element id or a selector.".into(),
        }
    }
}

/// Where to act for `target` on this screen.
pub fn resolve_target(
    tree: &UiTree,
    map: &ElementMap,
    target: &Target,
) -> Result<Bounds, ResolveError> {
    match target {
        Target::Coordinate(_) | Target::Pixel(_) => Err(ResolveError::NotAnElementTarget),
        Target::Element(id) => map
            .get(*id)
            .map(|e| e.bounds)
            .ok_or(ResolveError::NoSuchElement {
                id: *id,
                count: map.elements.len(),
            }),
        Target::Selector(s) => {
            let sel = Selector::parse(s)?;
            resolve_selector(tree, map, &sel)
        }
    }
}

/// Where to act for a parsed selector on this screen.
pub fn resolve_selector(
    tree: &UiTree,
    map: &ElementMap,
    sel: &Selector,
) -> Result<Bounds, ResolveError> {
    let matches = sel.find(tree);
    let on: Vec<usize> = matches
        .nodes
        .iter()
        .copied()
        .filter(|&n| visible_chain(tree, n, &map.screen))
        .collect();
    match on.as_slice() {
        [one] => Ok(tree.nodes[*one].bounds.intersect(&map.screen)),
        [] => Err(ResolveError::NotFound {
            selector: sel.to_string(),
            off_screen: matches.nodes.len(),
            closest: closest(tree, map, sel),
        }),
        many => Err(ResolveError::Ambiguous {
            selector: sel.to_string(),
            candidates: many
                .iter()
                .take(8)
                .map(|&n| describe(tree, map, n))
                .collect(),
        }),
    }
}

/// Whether a node and every ancestor are visible and on `screen`: what a person could see.
pub fn visible_chain(tree: &UiTree, node: usize, screen: &Bounds) -> bool {
    tree.is_on_screen(node, screen) && tree.ancestors(node).all(|a| tree.nodes[a].visible)
}

fn describe(tree: &UiTree, map: &ElementMap, node: usize) -> String {
    let n = &tree.nodes[node];
    let label = if !n.text.is_empty() {
        &n.text
    } else {
        &n.content_desc
    };
    let mut s = match map.for_node(node) {
        Some(e) => format!("element {} ", e.id),
        None => String::new(),
    };
    s.push_str(&format!("[{}] {}", n.path, n.short_class()));
    if !label.is_empty() {
        s.push_str(&format!(" \"{}\"", clip(&one_line(label), 30)));
    }
    let c = n.bounds.center();
    s.push_str(&format!(" at ({}, {})", c.x, c.y));
    s
}

/// Up to three on-screen text/desc/id selectors most similar to what was asked for.
fn closest(tree: &UiTree, map: &ElementMap, sel: &Selector) -> Vec<String> {
    let (want, kind) = match sel {
        Selector::Id(s) => (s.as_str(), 0),
        Selector::Text { text, .. } => (text.as_str(), 1),
        Selector::Desc { desc, .. } => (desc.as_str(), 2),
        _ => return Vec::new(),
    };
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (i, n) in tree.nodes.iter().enumerate() {
        if !tree.is_on_screen(i, &map.screen) {
            continue;
        }
        let have = match kind {
            0 => n.short_id(),
            1 => n.text.as_str(),
            _ => n.content_desc.as_str(),
        };
        if have.is_empty() {
            continue;
        }
        let score = strsim::normalized_levenshtein(&want.to_lowercase(), &have.to_lowercase());
        if score >= 0.5 {
            let s = match kind {
                0 => Selector::Id(have.to_string()),
                1 => Selector::Text {
                    class: None,
                    text: have.to_string(),
                },
                _ => Selector::Desc {
                    class: None,
                    desc: have.to_string(),
                },
            };
            scored.push((score, s.to_string()));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, s)| s).collect()
}
