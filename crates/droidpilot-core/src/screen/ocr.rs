//! OCR merged into the element map: text that is only pixels (a canvas game, an image of
//! text, a web page that exposes no nodes) becomes elements a model, a selector and a
//! script can name and tap. The engine lives in the app layer (`droidpilot_app::ocr`);
//! this module is pure: it reads the engine's words, groups them, and merges them into a
//! `UiTree` so every later layer (element map, compact text, selectors, resolution) sees
//! them like any node.
//!
//! - **Words** (`parse_tsv`): Tesseract's TSV (level 5 rows), words below
//!   `MIN_CONFIDENCE` or without a letter or digit dropped (icons read as `§`, `oY`).
//! - **Boxes** (`group`): words of one Tesseract line, split where the gap between two
//!   words is wider than `GAP_FACTOR` times the line's height (a score at the left and a
//!   level at the right of one row are two things to tap).
//! - **Merge** (`merge`), for each box:
//!   1. the visible node with the highest IoU (intersection over union of the two
//!      rectangles), if it is at least `MERGE_IOU` (0.5: the box and the node are the
//!      same thing drawn) → that node is enriched: `source = merged`, `ocr_text` set
//!      (an unlabelled node, an image button with text on it, gets it as its label);
//!   2. else the smallest visible node holding most of the box (`CONTAINED`, 80% of the
//!      box's area) whose own text or content-desc already says every word of the box
//!      → merged too: the tree had the text (a row's `TextView` is wider
//!      than its words, so the IoU is small);
//!   3. else a node of its own (`source = ocr`, class `OCR_CLASS`, `text` and `ocr_text`
//!      the words, clickable), the last child of the deepest visible node under the box's
//!      centre (a canvas, a WebView), so it nests, and taps, where it is drawn.
//!
//! Layout and content hashes are taken before the merge (by the caller), so OCR's own
//! variance never reads as a screen change.

use std::collections::HashMap;

use crate::domain::Bounds;

use super::tree::{UiNode, UiTree};
use crate::domain::ElementSource;

/// IoU at or above which an OCR box and a node are the same thing.
pub const MERGE_IOU: f32 = 0.5;
/// The share of a box's area inside a node for the node to hold it.
pub const CONTAINED: f32 = 0.8;
/// Words Tesseract is less sure of than this (0–100) are dropped.
pub const MIN_CONFIDENCE: f32 = 60.0;
/// A gap between two words of a line wider than this many line heights splits the line.
pub const GAP_FACTOR: f32 = 1.5;
/// The class of a node OCR added.
pub const OCR_CLASS: &str = "droidpilot.ocr.Text";

/// One word the engine read, in screenshot pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrWord {
    pub text: String,
    pub bounds: Bounds,
    pub confidence: f32,
    /// Tesseract's (block, paragraph, line) numbers: words sharing them are one line.
    pub line: (u32, u32, u32),
}

/// A run of words read as one thing (a button's label, a heading, a score).
#[derive(Debug, Clone, PartialEq)]
pub struct OcrBox {
    pub text: String,
    pub bounds: Bounds,
}

/// What a merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub boxes: usize,
    /// Boxes that enriched (or confirmed) a node of the tree.
    pub merged: usize,
    /// Boxes that became nodes of their own.
    pub added: usize,
}

/// Tesseract's TSV output (`tesseract IMAGE stdout tsv`) → its words, weak ones dropped.
/// Rows that do not parse are skipped: the header, page/block/line rows, empty words.
pub fn parse_tsv(tsv: &str, min_confidence: f32) -> Vec<OcrWord> {
    tsv.lines()
        .filter_map(|l| word_row(l, min_confidence))
        .collect()
}

fn word_row(line: &str, min_confidence: f32) -> Option<OcrWord> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() < 12 || f[0] != "5" {
        return None;
    }
    let num = |i: usize| f[i].trim().parse::<i32>().ok();
    let text = f[11].trim();
    let confidence: f32 = f[10].trim().parse().ok()?;
    if confidence < min_confidence || !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    let (l, t, w, h) = (num(6)?, num(7)?, num(8)?, num(9)?);
    let n = |i: usize| f[i].trim().parse::<u32>().ok();
    Some(OcrWord {
        text: text.to_string(),
        bounds: Bounds::new(l, t, l + w, t + h),
        confidence,
        line: (n(2)?, n(3)?, n(4)?),
    })
}

/// Words → boxes: one per line, split at wide gaps (see the module doc).
pub fn group(words: &[OcrWord]) -> Vec<OcrBox> {
    let mut out: Vec<OcrBox> = Vec::new();
    let mut prev: Option<&OcrWord> = None;
    for w in words {
        let joins = prev.is_some_and(|p| {
            let height = p.bounds.height().max(w.bounds.height()) as f32;
            p.line == w.line && ((w.bounds.left - p.bounds.right) as f32) <= GAP_FACTOR * height
        });
        match out.last_mut() {
            Some(b) if joins => {
                b.text.push(' ');
                b.text.push_str(&w.text);
                b.bounds = union(&b.bounds, &w.bounds);
            }
            _ => out.push(OcrBox {
                text: w.text.clone(),
                bounds: w.bounds,
            }),
        }
        prev = Some(w);
    }
    out
}

fn union(a: &Bounds, b: &Bounds) -> Bounds {
    Bounds::new(
        a.left.min(b.left),
        a.top.min(b.top),
        a.right.max(b.right),
        a.bottom.max(b.bottom),
    )
}

fn area(b: &Bounds) -> f32 {
    (b.width().max(0) as f32) * (b.height().max(0) as f32)
}

/// Intersection over union of two rectangles (0 when either is empty).
pub fn iou(a: &Bounds, b: &Bounds) -> f32 {
    let inter = area(&a.intersect(b));
    let uni = area(a) + area(b) - inter;
    if uni <= 0.0 { 0.0 } else { inter / uni }
}

/// Lower-case words of letters and digits: what two texts are compared by.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `said` (a node's text) already says every word of `read`. A box that says
/// more (a page's heading over a WebView named after the site) is kept as its own
/// element, so no word OCR read is lost to a node that holds only some of them.
fn says(said: &str, read: &str) -> bool {
    let have = words(said);
    let want = words(read);
    !want.is_empty() && want.iter().all(|w| have.contains(w))
}

/// Whether OCR's text `read` contains `wanted`, case and spacing aside: what
/// `:ocr("…")` matches.
pub fn ocr_matches(read: &str, wanted: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (r, w) = (norm(read), norm(wanted));
    !w.is_empty() && r.contains(&w)
}

/// What `:ocr("…")` finds: the nodes whose OCR text is `wanted` (case and spacing
/// aside), or when none is, those whose OCR text contains it: `:ocr("PLAY")` is the
/// PLAY button, not also the "Tap PLAY to start" under it.
pub fn find(tree: &UiTree, wanted: &str) -> Vec<usize> {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let all: Vec<usize> = (0..tree.nodes.len())
        .filter(|&i| ocr_matches(&tree.nodes[i].ocr_text, wanted))
        .collect();
    let w = norm(wanted);
    let exact: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| norm(&tree.nodes[i].ocr_text) == w)
        .collect();
    if exact.is_empty() { all } else { exact }
}

/// Merges `boxes` into `tree` (see the module doc). `screen` is what visible means.
pub fn merge(tree: &mut UiTree, screen: &Bounds, boxes: &[OcrBox]) -> MergeStats {
    let visible: Vec<usize> = (0..tree.nodes.len())
        .filter(|&i| tree.is_on_screen(i, screen) && tree.nodes[i].source != ElementSource::Ocr)
        .collect();
    let mut stats = MergeStats {
        boxes: boxes.len(),
        ..Default::default()
    };
    let mut adds: Vec<(usize, UiNode)> = Vec::new();
    for b in boxes {
        if let Some(i) = same_thing(tree, &visible, b) {
            let n = &mut tree.nodes[i];
            n.source = ElementSource::Merged;
            if !n.ocr_text.is_empty() {
                n.ocr_text.push(' ');
            }
            n.ocr_text.push_str(&b.text);
            stats.merged += 1;
        } else if let Some(parent) = host(tree, &visible, &b.bounds) {
            adds.push((parent, ocr_node(&tree.nodes[parent], b)));
            stats.added += 1;
        }
    }
    if !adds.is_empty() {
        *tree = with_children(tree, adds);
    }
    stats
}

/// The node a box is (rule 1, by IoU) or that already says it (rule 2).
fn same_thing(tree: &UiTree, visible: &[usize], b: &OcrBox) -> Option<usize> {
    let best = visible
        .iter()
        .map(|&i| (i, iou(&tree.nodes[i].bounds, &b.bounds)))
        .max_by(|x, y| x.1.total_cmp(&y.1));
    if let Some((i, v)) = best
        && v >= MERGE_IOU
    {
        return Some(i);
    }
    let box_area = area(&b.bounds).max(1.0);
    visible
        .iter()
        .copied()
        .filter(|&i| {
            let n = &tree.nodes[i];
            area(&n.bounds.intersect(&b.bounds)) / box_area >= CONTAINED
                && (says(&n.text, &b.text) || says(&n.content_desc, &b.text))
        })
        .min_by(|&x, &y| area(&tree.nodes[x].bounds).total_cmp(&area(&tree.nodes[y].bounds)))
}

/// The deepest visible node under the box's centre (the later one on a tie: drawn on top).
fn host(tree: &UiTree, visible: &[usize], b: &Bounds) -> Option<usize> {
    let c = b.center();
    visible
        .iter()
        .copied()
        .filter(|&i| tree.nodes[i].bounds.contains(c))
        .max_by_key(|&i| (tree.nodes[i].depth, i))
}

fn ocr_node(parent: &UiNode, b: &OcrBox) -> UiNode {
    UiNode {
        text: b.text.clone(),
        ocr_text: b.text.clone(),
        class: OCR_CLASS.into(),
        package: parent.package.clone(),
        bounds: b.bounds,
        clickable: true,
        enabled: true,
        visible: true,
        source: ElementSource::Ocr,
        ..Default::default()
    }
}

/// A copy of `tree` with `adds` appended as the last children of their parents, the
/// arena kept in pre-order (subtrees contiguous, as `UiTree::subtree` relies on).
fn with_children(tree: &UiTree, adds: Vec<(usize, UiNode)>) -> UiTree {
    let mut extra: HashMap<usize, Vec<UiNode>> = HashMap::new();
    for (p, n) in adds {
        extra.entry(p).or_default().push(n);
    }
    let mut nodes = Vec::with_capacity(tree.nodes.len() + extra.len());
    let roots = tree
        .roots
        .iter()
        .map(|&r| copy_into(tree, r, None, &mut extra, &mut nodes))
        .collect();
    UiTree {
        rotation: tree.rotation,
        nodes,
        roots,
    }
}

fn copy_into(
    tree: &UiTree,
    old: usize,
    parent: Option<usize>,
    extra: &mut HashMap<usize, Vec<UiNode>>,
    nodes: &mut Vec<UiNode>,
) -> usize {
    let mut n = tree.nodes[old].clone();
    n.parent = parent;
    n.children.clear();
    let me = nodes.len();
    nodes.push(n);
    for &c in &tree.nodes[old].children {
        let ci = copy_into(tree, c, Some(me), extra, nodes);
        nodes[me].children.push(ci);
    }
    for mut a in extra.remove(&old).unwrap_or_default() {
        let k = nodes[me].children.len();
        a.parent = Some(me);
        a.depth = nodes[me].depth + 1;
        a.path = format!("{}.{k}", nodes[me].path);
        a.index = Some(k as u32);
        let ai = nodes.len();
        nodes.push(a);
        nodes[me].children.push(ai);
    }
    me
}

#[cfg(test)]
mod tests;
