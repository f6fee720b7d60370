//! The two text representations of a screen.
//!
//! - `tree_text`: the seed format, every node with its index path, for people debugging a
//!   dump and for prompts that want the full structure.
//! - `compact_text`: what models read on every step. Shaped by counting o200k tokens over
//!   the fixture corpus (`examples/screen_tokens.rs`; figures in ARCHITECTURE-screen.md):
//!   one line per actionable element (`[id] Role "label"` plus only the state and actions
//!   the role does not imply), loose visible text as quoted lines, wrappers collapsed,
//!   nesting shown with one space per enclosing element, position as the centre in
//!   percent of the screen (`@50,93`), which costs 3–4 tokens and lets a model reason
//!   about "the button under the field".

use std::fmt::Write;

use super::elements::{ElementMap, LabelSource, clip_parts, one_line_cow};
use super::representation::ElementAction;
use super::tree::UiTree;

/// The seed tree format, exactly as specified in issue 3:
///
/// ```text
/// [Screen: com.example.app / MainActivity]
///   [0] FrameLayout
///     [0.0] LinearLayout
///       [0.0.1] Button "Continue" @btn_continue {clickable}
/// ```
pub fn tree_text(tree: &UiTree, activity: Option<&str>) -> String {
    let mut out = String::with_capacity(tree.nodes.len() * 48);
    let pkg = tree.app_package().unwrap_or("unknown");
    match activity {
        Some(a) => {
            let _ = writeln!(out, "[Screen: {pkg} / {a}]");
        }
        None => {
            let _ = writeln!(out, "[Screen: {pkg}]");
        }
    }
    for n in &tree.nodes {
        for _ in 0..=n.depth {
            out.push_str("  ");
        }
        let _ = write!(out, "[{}] {}", n.path, n.short_class());
        if !n.text.is_empty() || n.is_editable() {
            let _ = write!(out, " \"{}\"", quote(&n.text));
        }
        if !n.resource_id.is_empty() {
            let _ = write!(out, " @{}", n.short_id());
        }
        let flags: Vec<&str> = [
            (n.clickable, "clickable"),
            (n.long_clickable, "long-clickable"),
            (n.is_editable(), "editable"),
            (n.scrollable, "scrollable"),
            (n.checkable, "checkable"),
            (n.checked, "checked"),
            (n.selected, "selected"),
            (n.focused, "focused"),
            (!n.enabled, "disabled"),
            (n.password, "password"),
            (!n.visible, "invisible"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if !flags.is_empty() {
            let _ = write!(out, " {{{}}}", flags.join(", "));
        }
        if !n.content_desc.is_empty() {
            let _ = write!(out, " desc=\"{}\"", quote(&n.content_desc));
        }
        if !n.hint.is_empty() {
            let _ = write!(out, " hint=\"{}\"", quote(&n.hint));
        }
        out.push('\n');
    }
    out
}

/// Knobs of the compact format; the defaults are the measured best trade-off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactOptions {
    /// Append `@x,y`, the element centre in percent of the screen.
    pub positions: bool,
    /// Indent elements and texts by how many elements enclose them.
    pub nesting: bool,
    /// Include visible text that belongs to no element.
    pub loose_text: bool,
    /// Longest loose text line, in chars.
    pub max_text_chars: usize,
    /// Longest element label, in chars.
    pub max_label_chars: usize,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            positions: true,
            nesting: true,
            loose_text: true,
            max_text_chars: 60,
            max_label_chars: 50,
        }
    }
}

/// A role: a short word for the class, and the actions it implies (not printed).
fn role(class: &str, editable: bool, checkable: bool) -> (&'static str, &'static [ElementAction]) {
    use ElementAction::*;
    if editable {
        return ("Edit", &[Click, SetText]);
    }
    let c = class;
    if c.contains("Switch") || c.contains("Toggle") {
        ("Switch", &[Click])
    } else if c.contains("CheckBox") || (checkable && c.contains("Checked")) {
        ("Check", &[Click])
    } else if c.contains("Radio") {
        ("Radio", &[Click])
    } else if c.contains("Button") || c.contains("Chip") {
        ("Button", &[Click])
    } else if c.contains("Image") {
        ("Image", &[])
    } else if c.contains("TextView") {
        ("Text", &[])
    } else if c.contains("Tab") {
        ("Tab", &[Click])
    } else if c.contains("WebView") {
        ("Web", &[])
    } else if c.contains("RecyclerView")
        || c.contains("ListView")
        || c.contains("ScrollView")
        || c.contains("GridView")
        || c.contains("ViewPager")
    {
        ("List", &[Scroll])
    } else {
        ("View", &[])
    }
}

fn action_word(a: ElementAction) -> &'static str {
    match a {
        ElementAction::Click => "click",
        ElementAction::LongClick => "long",
        ElementAction::SetText => "type",
        ElementAction::Scroll => "scroll",
    }
}

/// The compact model format. Every element of `map` appears as one `[id]` line.
pub fn compact_text(
    tree: &UiTree,
    map: &ElementMap,
    has_modal: bool,
    opts: &CompactOptions,
) -> String {
    let mut out = String::with_capacity(64 + map.elements.len() * 40 + map.texts.len() * 30);
    let pkg = tree.app_package().unwrap_or("unknown");
    let _ = write!(out, "{pkg}");
    if has_modal {
        out.push_str(" (dialog on top)");
    }
    out.push('\n');
    let sw = map.screen.width().max(1) as i64;
    let sh = map.screen.height().max(1) as i64;
    let depth_of = |mut p: Option<u32>| {
        let mut d = 0usize;
        while let Some(e) = p {
            d += 1;
            p = map.elements.get(e as usize).and_then(|e| e.display_parent);
            if d > 64 {
                break;
            }
        }
        d
    };
    let mut ei = map.elements.iter().peekable();
    let mut ti = map.texts.iter().peekable();
    loop {
        let take_elem = match (ei.peek(), ti.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(e), Some(t)) => e.node < t.node,
        };
        if take_elem {
            let Some(e) = ei.next() else { break };
            let n = &tree.nodes[e.node];
            if opts.nesting {
                indent(&mut out, depth_of(e.display_parent));
            }
            let (word, implied) = role(&n.class, n.is_editable(), n.checkable);
            let _ = write!(out, "[{}] {word}", e.id);
            match e.label_source {
                LabelSource::None => {}
                LabelSource::ResourceId => {
                    out.push_str(" #");
                    push_clipped(&mut out, &e.label, opts.max_label_chars, false);
                }
                LabelSource::Hint => {
                    out.push_str(" hint \"");
                    push_clipped(&mut out, &e.label, opts.max_label_chars, true);
                    out.push('"');
                }
                _ => {
                    out.push_str(" \"");
                    push_clipped(&mut out, &e.label, opts.max_label_chars, true);
                    out.push('"');
                }
            }
            if n.source == crate::domain::ElementSource::Ocr || e.label_source == LabelSource::Ocr {
                // Read off the screenshot: the words may be misread.
                out.push_str(" ocr");
            }
            if n.is_editable() && e.label_source != LabelSource::Text {
                // An empty field: say so, or a model takes a merged label for its value.
                out.push_str(" empty");
            }
            for a in &e.actions {
                if !implied.contains(a) {
                    out.push(' ');
                    out.push_str(action_word(*a));
                }
            }
            if n.checkable {
                out.push_str(if n.checked { " on" } else { " off" });
            }
            if n.selected {
                out.push_str(" selected");
            }
            if n.focused && n.is_editable() {
                out.push_str(" focused");
            }
            if !n.enabled {
                out.push_str(" disabled");
            }
            if opts.positions {
                let c = e.bounds.center();
                let x = ((c.x - map.screen.left) as i64 * 100 / sw).clamp(0, 99);
                let y = ((c.y - map.screen.top) as i64 * 100 / sh).clamp(0, 99);
                let _ = write!(out, " @{x},{y}");
            }
            out.push('\n');
        } else {
            let Some(t) = ti.next() else { break };
            if !opts.loose_text {
                continue;
            }
            if opts.nesting {
                indent(&mut out, depth_of(t.display_parent));
            }
            out.push('"');
            push_clipped(&mut out, &t.text, opts.max_text_chars, true);
            out.push_str("\"\n");
        }
    }
    out
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth.min(8) {
        out.push(' ');
    }
}

/// One line, with double quotes escaped so that a label cannot break the format.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_quoted(&mut out, s);
    out
}

/// `quote(s)` appended to `out`.
fn push_quoted(out: &mut String, s: &str) {
    let s = if s.contains(['\n', '\r', '\t']) {
        one_line_cow(s)
    } else {
        s.into()
    };
    if !s.contains(['"', '\\']) {
        out.push_str(&s);
        return;
    }
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `quote(&clip(s, max))` appended to `out`, without the two intermediate strings.
/// (Clipping first and then joining lines is the same as joining the clipped part and
/// adding the ellipsis: the clipped part ends in a non-space.)
fn push_clipped(out: &mut String, s: &str, max: usize, quoted: bool) {
    let (body, cut) = clip_parts(s, max);
    if quoted {
        push_quoted(out, body);
    } else {
        out.push_str(body);
    }
    if cut {
        out.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The allocating versions these helpers replaced.
    fn reference_one_line(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }
    fn reference_quote_clip(s: &str, max: usize) -> String {
        let clipped = match s.char_indices().nth(max) {
            Some((i, _)) => format!("{}…", s[..i].trim_end()),
            None => s.to_string(),
        };
        let one = if clipped.contains(['\n', '\r', '\t']) {
            reference_one_line(&clipped)
        } else {
            clipped
        };
        one.replace('\\', "\\\\").replace('"', "\\\"")
    }

    proptest! {
        #[test]
        fn borrowing_helpers_match_the_allocating_ones(
            s in "[ a\"\\\\\t\r\n\u{a0}\u{2003}é…]{0,24}",
            max in 0usize..12,
        ) {
            prop_assert_eq!(one_line_cow(&s).into_owned(), reference_one_line(&s));
            let mut out = String::new();
            push_clipped(&mut out, &s, max, true);
            prop_assert_eq!(out, reference_quote_clip(&s, max));
        }
    }
}
