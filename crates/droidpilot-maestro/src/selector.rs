//! Which element a Maestro selector picks on one screen, as Maestro picks it (its
//! `Orchestra.buildFilter` and `Filters`), over the core's `UiTree`.
//!
//! What Maestro does, and so what this does:
//! - The screen: every node in document order, less those under 10 % on screen with no
//!   child kept (a Toast always kept).
//! - `text`: a regular expression matched against the *whole* text, hint and content
//!   description, case-insensitively (Unicode), `.` matching newlines; a value also
//!   matches when it equals the pattern literally, and each is tried again with its
//!   newlines as spaces. Matches by text come first, then by hint, then by description.
//!   A pattern that does not compile is matched as literal text.
//! - `id`: a regular expression over the whole resource-id, or the part after its last
//!   `/` (so `submit` and `com.app:id/submit` both work), same flags.
//! - For `text` and `id`, a matching node whose child also matches gives way to the
//!   deepest such child (the last one, when several).
//! - `width` / `height` ± `tolerance`; `enabled` / `checked` / `focused` / `selected`;
//!   `traits` (`text`: every Android node has a text attribute, so every node; `square`;
//!   `long-text`: over 200 characters).
//! - `below` / `above` / `leftOf` / `rightOf`: compares top edges (below, above) or
//!   left edges (leftOf, rightOf) with *every* element the inner selector matches, nearest
//!   (centre to centre) first. `containsChild`: a direct child is the inner selector's
//!   element. `containsDescendants`: each inner selector matches some descendant.
//!   `childOf`: the search runs inside the inner selector's element (itself included).
//! - All given parts must hold; the order is the first part's (text, id, size, below,
//!   above, leftOf, rightOf, containsChild, containsDescendants, traits, the flags).
//!   Then `index: N` takes the N-th in top-to-bottom, then left-to-right order of the
//!   top-left corners; without `index`, clickable elements go first. The first wins.
//!
//! Java's regex dialect is read by `fancy-regex` (look-around and back-references, as
//! Java has); `regex` alone lacks them.

use std::collections::HashSet;

use droidpilot_core::domain::Bounds;
use droidpilot_core::screen::UiTree;
use fancy_regex::Regex;

use crate::ast::{Amount, Selector, Trait};

/// A selector that cannot be matched as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// `index: ${…}` must be evaluated (`expr`) before matching.
    #[error("the selector's `index` is still the expression `{0}`; evaluate it first")]
    UnevaluatedIndex(String),
}

/// The element Maestro would act on, if any.
pub fn find(tree: &UiTree, sel: &Selector) -> Result<Option<usize>, MatchError> {
    Ok(find_all(tree, sel)?.into_iter().next())
}

/// Every element the selector matches, in Maestro's order (the first is the one used).
pub fn find_all(tree: &UiTree, sel: &Selector) -> Result<Vec<usize>, MatchError> {
    let m = Matcher::new(tree);
    let scope = m.scope_of(sel)?;
    match scope {
        Some(nodes) => m.apply(sel, &nodes),
        None => Ok(Vec::new()),
    }
}

/// Whether an element is on the wanted side of another (`below`, …).
type Side = fn(&Bounds, &Bounds) -> bool;
/// One of a node's state flags.
type Flag = fn(&droidpilot_core::screen::UiNode) -> bool;

struct Matcher<'a> {
    tree: &'a UiTree,
    /// Nodes Maestro's out-of-bounds filter keeps.
    kept: Vec<bool>,
}

/// Ordered, de-duplicated (Kotlin's `toSet()` keeps the first occurrence).
fn dedup(v: Vec<usize>) -> Vec<usize> {
    let mut seen = HashSet::new();
    v.into_iter().filter(|n| seen.insert(*n)).collect()
}

fn visible_fraction(b: &Bounds, w: i32, h: i32) -> f64 {
    let (bw, bh) = (b.right - b.left, b.bottom - b.top);
    if bw == 0 && bh == 0 {
        return 0.0;
    }
    if b.left <= 0 && b.top <= 0 && b.right >= w && b.bottom >= h {
        return 1.0;
    }
    let vx = (b.right.min(w) - b.left.max(0)).max(0) as f64;
    let vy = (b.bottom.min(h) - b.top.max(0)).max(0) as f64;
    (vx * vy) / (bw as f64 * bh as f64)
}

impl<'a> Matcher<'a> {
    fn new(tree: &'a UiTree) -> Self {
        let screen = tree.screen_bounds();
        let (w, h) = (screen.right, screen.bottom);
        let mut kept = vec![false; tree.nodes.len()];
        // Children come after their parent in the arena: decide them first.
        for i in (0..tree.nodes.len()).rev() {
            let n = &tree.nodes[i];
            let toast = n.class == "android.widget.Toast";
            let child_kept = n.children.iter().any(|&c| kept[c]);
            // `visible < 0.1` is false for NaN (a zero-area line), as in Kotlin.
            let frac = visible_fraction(&n.bounds, w, h);
            let small = frac < 0.1;
            kept[i] = toast || child_kept || !small;
        }
        // A Toast keeps its whole subtree.
        for i in 0..tree.nodes.len() {
            if tree.nodes[i].class == "android.widget.Toast" {
                let mut stack = vec![i];
                while let Some(n) = stack.pop() {
                    kept[n] = true;
                    stack.extend(&tree.nodes[n].children);
                }
            }
        }
        Self { tree, kept }
    }

    fn children(&self, n: usize) -> Vec<usize> {
        self.tree.nodes[n]
            .children
            .iter()
            .copied()
            .filter(|&c| self.kept[c])
            .collect()
    }

    /// `n` and every kept node under it, in document order.
    fn subtree(&self, n: usize) -> Vec<usize> {
        let mut out = vec![n];
        for c in self.children(n) {
            out.extend(self.subtree(c));
        }
        out
    }

    fn all(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for &r in &self.tree.roots {
            if self.kept[r] {
                out.extend(self.subtree(r));
            }
        }
        out
    }

    /// The nodes a selector searches: the whole screen, or inside its `childOf`
    /// element (recursively); `None` when that element is not there.
    fn scope_of(&self, sel: &Selector) -> Result<Option<Vec<usize>>, MatchError> {
        let Some(parent) = &sel.child_of else {
            return Ok(Some(self.all()));
        };
        let Some(outer) = self.scope_of(parent)? else {
            return Ok(None);
        };
        Ok(self
            .apply(parent, &outer)?
            .first()
            .map(|&p| self.subtree(p)))
    }

    /// The first match of `sel` on the whole screen (for `containsChild`, which Maestro
    /// looks up on its own).
    fn first(&self, sel: &Selector) -> Result<Option<usize>, MatchError> {
        match self.scope_of(sel)? {
            Some(nodes) => Ok(self.apply(sel, &nodes)?.first().copied()),
            None => Ok(None),
        }
    }

    /// The selector's filter over `nodes` (its parts intersected, then index or
    /// clickable-first).
    fn apply(&self, sel: &Selector, nodes: &[usize]) -> Result<Vec<usize>, MatchError> {
        let mut parts = self.content_parts(sel, nodes);
        parts.extend(self.layout_parts(sel, nodes)?);
        parts.extend(self.state_parts(sel, nodes));
        let out = intersect(parts, nodes);
        self.order(sel, out)
    }

    /// `text`, `id` and size, in Maestro's order.
    fn content_parts(&self, sel: &Selector, nodes: &[usize]) -> Vec<Vec<usize>> {
        let mut parts = Vec::new();
        if let Some(t) = &sel.text {
            let re = regex(t);
            parts.push(self.deepest(nodes, &|ns: &[usize]| self.text_matches(ns, t, &re)));
        }
        if let Some(id) = &sel.id {
            let re = regex(id);
            parts.push(self.deepest(nodes, &|ns: &[usize]| self.id_matches(ns, &re)));
        }
        if let Some(size) = &sel.size {
            let tol = size.tolerance.unwrap_or(0);
            let ok = |n: &usize| {
                let b = &self.tree.nodes[*n].bounds;
                let (w, h) = (b.right - b.left, b.bottom - b.top);
                size.width.is_none_or(|sw| (w - sw).abs() <= tol)
                    && size.height.is_none_or(|sh| (h - sh).abs() <= tol)
            };
            parts.push(nodes.iter().copied().filter(ok).collect());
        }
        parts
    }

    /// The relative parts, then `containsChild` and `containsDescendants`.
    fn layout_parts(&self, sel: &Selector, nodes: &[usize]) -> Result<Vec<Vec<usize>>, MatchError> {
        let mut parts = Vec::new();
        let rel: [(&Option<Box<Selector>>, Side); 4] = [
            (&sel.below, |it, o| it.top > o.top),
            (&sel.above, |it, o| it.top < o.top),
            (&sel.left_of, |it, o| it.left < o.left),
            (&sel.right_of, |it, o| it.left > o.left),
        ];
        for (inner, side) in rel {
            if let Some(inner) = inner {
                parts.push(self.relative(inner, nodes, side)?);
            }
        }
        if let Some(child) = &sel.contains_child {
            let target = self.first(child)?;
            let has = |n: &usize| target.is_some_and(|t| self.children(*n).contains(&t));
            parts.push(nodes.iter().copied().filter(has).collect());
        }
        if !sel.contains_descendants.is_empty() {
            let mut keep = Vec::new();
            for &n in nodes {
                if self.contains_all(n, &sel.contains_descendants)? {
                    keep.push(n);
                }
            }
            parts.push(keep);
        }
        Ok(parts)
    }

    fn contains_all(&self, n: usize, inner: &[Selector]) -> Result<bool, MatchError> {
        for d in inner {
            if !self.any_descendant_matches(n, d)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `traits`, then `enabled`, `selected`, `checked`, `focused`.
    fn state_parts(&self, sel: &Selector, nodes: &[usize]) -> Vec<Vec<usize>> {
        let mut parts = Vec::new();
        for t in &sel.traits {
            parts.push(
                nodes
                    .iter()
                    .copied()
                    .filter(|&n| self.has_trait(n, *t))
                    .collect(),
            );
        }
        let flags: [(Option<bool>, Flag); 4] = [
            (sel.enabled, |n| n.enabled),
            (sel.selected, |n| n.selected),
            (sel.checked, |n| n.checked),
            (sel.focused, |n| n.focused),
        ];
        for (want, get) in flags {
            if let Some(want) = want {
                let ok = |n: &usize| get(&self.tree.nodes[*n]) == want;
                parts.push(nodes.iter().copied().filter(ok).collect());
            }
        }
        parts
    }

    /// `index: N` (by top, then left) or clickable-first.
    fn order(&self, sel: &Selector, mut out: Vec<usize>) -> Result<Vec<usize>, MatchError> {
        match &sel.index {
            Some(Amount::Expr(e)) => Err(MatchError::UnevaluatedIndex(e.clone())),
            Some(Amount::Fixed(i)) => {
                out.sort_by_key(|n| {
                    let b = &self.tree.nodes[*n].bounds;
                    (b.top, b.left)
                });
                let i = i.trunc();
                Ok(if i >= 0.0 {
                    out.get(i as usize).copied().into_iter().collect()
                } else {
                    Vec::new()
                })
            }
            None => {
                out.sort_by_key(|&n| !self.tree.nodes[n].clickable);
                Ok(out)
            }
        }
    }

    /// Maestro's `deepestMatchingElement`: each match, replaced by the last of its
    /// children's deepest matches when a child matches too.
    fn deepest(&self, nodes: &[usize], filter: &dyn Fn(&[usize]) -> Vec<usize>) -> Vec<usize> {
        filter(nodes)
            .into_iter()
            .map(|n| {
                let kids = self.children(n);
                self.deepest(&kids, filter).last().copied().unwrap_or(n)
            })
            .collect()
    }

    fn text_matches(&self, nodes: &[usize], pattern: &str, re: &Option<Regex>) -> Vec<usize> {
        let by = |get: fn(&droidpilot_core::screen::UiNode) -> Option<&str>| -> Vec<usize> {
            nodes
                .iter()
                .copied()
                .filter(|&n| {
                    get(&self.tree.nodes[n]).is_some_and(|v| value_matches(v, pattern, re))
                })
                .collect()
        };
        let mut all = by(|n| Some(n.text.as_str()));
        // A dump without a hint attribute has no hint to match.
        all.extend(by(|n| (!n.hint.is_empty()).then_some(n.hint.as_str())));
        all.extend(by(|n| Some(n.content_desc.as_str())));
        dedup(all)
    }

    fn id_matches(&self, nodes: &[usize], re: &Option<Regex>) -> Vec<usize> {
        let full = |s: &str| re.as_ref().is_some_and(|r| r.is_match(s).unwrap_or(false));
        let ids = |n: usize| self.tree.nodes[n].resource_id.as_str();
        let mut all: Vec<usize> = nodes.iter().copied().filter(|&n| full(ids(n))).collect();
        all.extend(
            nodes
                .iter()
                .copied()
                .filter(|&n| full(ids(n).rsplit('/').next().unwrap_or(""))),
        );
        dedup(all)
    }

    fn relative(
        &self,
        inner: &Selector,
        nodes: &[usize],
        pred: Side,
    ) -> Result<Vec<usize>, MatchError> {
        let others = self.apply(inner, nodes)?;
        let mut pairs: Vec<(usize, f64)> = Vec::new();
        for &n in nodes {
            let b = &self.tree.nodes[n].bounds;
            for &o in &others {
                let ob = &self.tree.nodes[o].bounds;
                if pred(b, ob) {
                    let (c, oc) = (b.center(), ob.center());
                    let d = (((c.x - oc.x) as f64).powi(2) + ((c.y - oc.y) as f64).powi(2)).sqrt();
                    pairs.push((n, d));
                }
            }
        }
        pairs.sort_by(|a, b| a.1.total_cmp(&b.1));
        Ok(pairs.into_iter().map(|(n, _)| n).collect())
    }

    /// Whether some descendant of `n` matches `sel` on its own (Maestro applies the
    /// inner filter to each node alone).
    fn any_descendant_matches(&self, n: usize, sel: &Selector) -> Result<bool, MatchError> {
        for c in self.children(n) {
            if !self.apply(sel, &[c])?.is_empty() || self.any_descendant_matches(c, sel)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn has_trait(&self, n: usize, t: Trait) -> bool {
        let node = &self.tree.nodes[n];
        match t {
            Trait::Text => true,
            Trait::Square => {
                let (w, h) = (
                    node.bounds.right - node.bounds.left,
                    node.bounds.bottom - node.bounds.top,
                );
                h != 0 && (1.0 - w as f32 / h as f32).abs() < 0.03
            }
            Trait::LongText => node.text.encode_utf16().count() > 200,
        }
    }
}

/// Kotlin's `reduce { a, b -> a.intersect(b) }` over the parts' sets; no parts → all.
fn intersect(parts: Vec<Vec<usize>>, nodes: &[usize]) -> Vec<usize> {
    let mut it = parts.into_iter();
    let Some(first) = it.next() else {
        return nodes.to_vec();
    };
    let mut acc = dedup(first);
    for p in it {
        let set: HashSet<usize> = p.into_iter().collect();
        acc.retain(|n| set.contains(n));
    }
    acc
}

/// `text` as a pattern that matches exactly it (a label holding `(`, `.` or `?`), for a
/// selector written from what is on the screen.
pub fn literal(text: &str) -> String {
    fancy_regex::escape(text).into_owned()
}

/// The pattern as Maestro compiles it: case-insensitive, dot-all, multi-line, matched
/// against the whole value; `None` when it does not compile (then only literal
/// equality matches, as Maestro falls back to the escaped text).
fn regex(pattern: &str) -> Option<Regex> {
    Regex::new(&format!("(?ism)\\A(?:{pattern})\\z"))
        .ok()
        .or_else(|| Regex::new(&format!("(?ism)\\A{}\\z", fancy_regex::escape(pattern))).ok())
}

fn value_matches(value: &str, pattern: &str, re: &Option<Regex>) -> bool {
    let m = |v: &str| v == pattern || re.as_ref().is_some_and(|r| r.is_match(v).unwrap_or(false));
    m(value) || (value.contains('\n') && m(&value.replace('\n', " ")))
}

#[cfg(test)]
#[path = "selector_tests.rs"]
mod tests;
