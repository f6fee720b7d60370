//! The element map: which nodes of a `UiTree` a model can act on, their ids and labels.
//!
//! - Ids are assigned in document order over visible actionable nodes, so one dump
//!   always yields the same ids (the numbers a model answers with).
//! - Actionable = clickable, long-clickable, editable, scrollable or checkable. Nothing
//!   actionable and visible is dropped: the compact text keeps every element.
//! - A person reads a list row as one thing, so a clickable node takes the text of the
//!   plain nodes inside it as its label (scroll containers and screen-sized clickables do
//!   not, or a list would be labelled with its whole content).
//! - Invisible (`visible-to-user="false"`), zero-size and off-screen nodes are dropped;
//!   layouts that carry no text and no action disappear, and what remains is nested only
//!   under the elements that contain it (`display_parent`).
//! - A hidden native view hides its subtree (Android clips children to their parent).
//!   Inside a WebView it does not: a page's containers are laid out by the browser, and
//!   Chrome reports zero-size bounds for some that hold the whole page. There only
//!   `visible-to-user="false"` hides the children.

use std::borrow::Cow;

use serde::Serialize;

use crate::domain::{Bounds, ElementSource};

use super::representation::ElementAction;
use super::tree::UiTree;

/// What the text of a password field becomes.
pub const REDACTED: &str = "••••";

/// Longest label kept for an element (merged child text can be a whole paragraph).
pub const MAX_LABEL_CHARS: usize = 100;

/// One actionable element.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Element {
    /// The number a model refers to.
    pub id: u32,
    /// Arena index in the `UiTree`.
    pub node: usize,
    /// Short class name.
    pub kind: String,
    /// What a person sees: own text, content-desc, merged child text, or hint.
    pub label: String,
    /// Where the label came from.
    pub label_source: LabelSource,
    pub actions: Vec<ElementAction>,
    /// Bounds clipped to the screen.
    pub bounds: Bounds,
    /// The nearest enclosing element (for nesting in the compact format).
    pub display_parent: Option<u32>,
    /// The tree, OCR, or a tree node OCR read text on (`screen::ocr`).
    pub source: ElementSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    Text,
    Desc,
    /// What OCR read on a node that has no text or content-desc.
    Ocr,
    Children,
    Hint,
    ResourceId,
    None,
}

/// Visible text that belongs to no element (headings, messages, values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextItem {
    pub node: usize,
    pub text: String,
    pub bounds: Bounds,
    /// The element it is nested in, if any (text inside a scroll container).
    pub display_parent: Option<u32>,
}

/// All elements and loose texts of one screen, in document order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElementMap {
    pub screen: Bounds,
    pub elements: Vec<Element>,
    pub texts: Vec<TextItem>,
    /// Arena index → element index, for nodes that are elements.
    #[serde(skip)]
    pub by_node: Vec<Option<u32>>,
}

impl ElementMap {
    /// The element the model called `id`.
    pub fn get(&self, id: u32) -> Option<&Element> {
        self.elements.get(id as usize)
    }
    /// The element backed by a tree node.
    pub fn for_node(&self, node: usize) -> Option<&Element> {
        self.by_node
            .get(node)
            .copied()
            .flatten()
            .and_then(|i| self.get(i))
    }
}

/// The actions a node supports, in a fixed order.
pub fn actions_of(n: &super::tree::UiNode) -> Vec<ElementAction> {
    let mut a = Vec::with_capacity(2);
    if n.clickable || n.checkable {
        a.push(ElementAction::Click);
    }
    if n.long_clickable {
        a.push(ElementAction::LongClick);
    }
    if n.is_editable() {
        a.push(ElementAction::SetText);
    }
    if n.scrollable {
        a.push(ElementAction::Scroll);
    }
    a
}

/// Collapses whitespace runs (newlines from `&#10;` included) into single spaces.
pub fn one_line(s: &str) -> String {
    one_line_cow(s).into_owned()
}

/// `one_line` that borrows when `s` already is one line (most labels): no leading or
/// trailing whitespace, and no whitespace but single spaces.
pub fn one_line_cow(s: &str) -> Cow<'_, str> {
    let mut prev_space = true; // so that a leading space counts as a run
    let mut already = true;
    for c in s.chars() {
        if c == ' ' {
            if prev_space {
                already = false;
                break;
            }
            prev_space = true;
        } else if c.is_whitespace() {
            already = false;
            break;
        } else {
            prev_space = false;
        }
    }
    // A trailing space ends the text in a run too.
    if already && (s.is_empty() || !prev_space) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    Cow::Owned(out)
}

/// Cuts to `max` chars with an ellipsis.
pub fn clip(s: &str, max: usize) -> String {
    let (body, cut) = clip_parts(s, max);
    if cut {
        format!("{body}…")
    } else {
        body.to_string()
    }
}

/// `clip` without allocating: the kept text, and whether an ellipsis follows it.
pub fn clip_parts(s: &str, max: usize) -> (&str, bool) {
    // A char is at most 4 bytes: short strings need no counting.
    if s.len() <= max {
        return (s, false);
    }
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].trim_end(), true),
        None => (s, false),
    }
}

/// Builds the element map of `tree` for the given screen rectangle.
pub fn element_map(tree: &UiTree, screen: Bounds) -> ElementMap {
    let n = tree.nodes.len();
    let mut by_node: Vec<Option<u32>> = vec![None; n];
    let mut elements: Vec<Element> = Vec::new();
    let mut texts: Vec<TextItem> = Vec::new();
    // For each node: the nearest ancestor element, and the nearest ancestor element that
    // absorbs child text.
    let mut shown_anc: Vec<Option<u32>> = vec![None; n];
    let mut absorber: Vec<Option<u32>> = vec![None; n];
    // Whether a node lets its children be seen: its own visibility, except inside a
    // WebView, where only the `visible-to-user` flag counts.
    let mut passes: Vec<bool> = vec![false; n];
    let mut in_web: Vec<bool> = vec![false; n];
    let screen_area = area(&screen).max(1);
    // Merged child text per element, filled as descendants are visited.
    let mut merged: Vec<String> = Vec::new();

    for i in 0..n {
        let node = &tree.nodes[i];
        let parent = node.parent;
        let parent_passes = parent.is_none_or(|p| passes[p]);
        // An invisible container hides its subtree even when children claim otherwise.
        let vis = parent_passes && tree.is_on_screen(i, &screen);
        in_web[i] = parent.is_some_and(|p| in_web[p] || tree.nodes[p].is_web_view());
        passes[i] = if in_web[i] {
            parent_passes && node.visible
        } else {
            vis
        };
        let inherited_shown = parent.and_then(|p| shown_anc[p]);
        let inherited_abs = parent.and_then(|p| absorber[p]);
        shown_anc[i] = inherited_shown;
        absorber[i] = inherited_abs;
        if !vis {
            continue;
        }
        if node.is_actionable() {
            let id = elements.len() as u32;
            by_node[i] = Some(id);
            let clipped = node.bounds.intersect(&screen);
            let absorbs = (node.clickable || node.long_clickable || node.checkable)
                && !node.is_editable()
                && area(&clipped) * 10 < screen_area * 6;
            let (label, src) = own_label(node);
            elements.push(Element {
                id,
                node: i,
                kind: node.short_class().to_string(),
                label,
                label_source: src,
                actions: actions_of(node),
                bounds: clipped,
                display_parent: inherited_shown,
                source: node.source,
            });
            merged.push(String::new());
            shown_anc[i] = Some(id);
            absorber[i] = if absorbs { Some(id) } else { None };
            continue;
        }
        let own = if !node.text.trim().is_empty() {
            node.text.as_str()
        } else if !node.content_desc.trim().is_empty() {
            node.content_desc.as_str()
        } else {
            node.ocr_text.as_str()
        };
        if own.trim().is_empty() {
            continue; // a wrapper: collapsed
        }
        let text = one_line(own);
        if let Some(e) = inherited_abs {
            let m = &mut merged[e as usize];
            if m.chars().count() < MAX_LABEL_CHARS && !m.contains(&text) {
                if !m.is_empty() {
                    m.push_str(" · ");
                }
                m.push_str(&text);
            }
        } else {
            texts.push(TextItem {
                node: i,
                text,
                bounds: node.bounds.intersect(&screen),
                display_parent: inherited_shown,
            });
        }
    }

    for (e, m) in elements.iter_mut().zip(merged) {
        let node = &tree.nodes[e.node];
        if e.label_source == LabelSource::None || e.label_source == LabelSource::Hint {
            if !m.is_empty() {
                e.label = clip(&m, MAX_LABEL_CHARS);
                e.label_source = LabelSource::Children;
            } else if e.label_source == LabelSource::None && !node.resource_id.is_empty() {
                e.label = node.short_id().to_string();
                e.label_source = LabelSource::ResourceId;
            }
        }
    }
    ElementMap {
        screen,
        elements,
        texts,
        by_node,
    }
}

fn area(b: &Bounds) -> i64 {
    b.width() as i64 * b.height() as i64
}

fn own_label(node: &super::tree::UiNode) -> (String, LabelSource) {
    if !node.text.trim().is_empty() {
        (
            clip(&one_line_cow(&node.text), MAX_LABEL_CHARS),
            LabelSource::Text,
        )
    } else if !node.content_desc.trim().is_empty() {
        (
            clip(&one_line_cow(&node.content_desc), MAX_LABEL_CHARS),
            LabelSource::Desc,
        )
    } else if !node.ocr_text.trim().is_empty() {
        (
            clip(&one_line_cow(&node.ocr_text), MAX_LABEL_CHARS),
            LabelSource::Ocr,
        )
    } else if !node.hint.trim().is_empty() {
        (
            clip(&one_line_cow(&node.hint), MAX_LABEL_CHARS),
            LabelSource::Hint,
        )
    } else {
        (String::new(), LabelSource::None)
    }
}
