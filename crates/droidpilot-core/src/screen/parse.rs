//! uiautomator output (bytes or text) → `UiTree`, junk included.
//!
//! What real phones and scripts hand us is often not clean XML: a UTF-8 BOM, a UTF-16
//! file whose declaration says UTF-8 (PowerShell redirects), `UI hierchary dumped to: …`
//! printed before or after the document, uiautomator's `ERROR: …` lines instead of a
//! dump, or nothing at all. `decode` and `clean` strip exactly that junk and classify the
//! rest; roxmltree does the XML itself (it never expands DTD entities here: DTDs are
//! refused, and it parses nesting iteratively). The depth walk below uses an explicit
//! stack, so a hostile 100 000-deep dump is a `too_deep` error, never a stack overflow.

use std::borrow::Cow;

use crate::domain::Bounds;

use super::tree::{UiNode, UiTree};

/// Dumps larger than this are refused before parsing (real ones are under 200 KB).
pub const MAX_DUMP_BYTES: usize = 10 * 1024 * 1024;
/// Nesting deeper than this is refused (real apps stay under 60).
pub const MAX_DEPTH: usize = 500;

/// Why a dump could not become a `UiTree`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the UI dump is empty")]
    Empty,
    /// uiautomator printed an error instead of a dump.
    #[error("UI hierarchy unavailable: {0}")]
    HierarchyUnavailable(String),
    #[error("the UI dump is {bytes} bytes, over the {limit}-byte limit")]
    TooLarge { bytes: usize, limit: usize },
    #[error("the UI dump nests deeper than {limit} levels")]
    TooDeep { limit: usize },
    #[error("the UI dump is not valid text: {0}")]
    Encoding(String),
    /// `line` and `column` are positions in the file as given, junk lines included.
    #[error("the UI dump is not well-formed XML: {message} (line {line}, column {column})")]
    Xml {
        message: String,
        line: u32,
        column: u32,
        damage: XmlDamage,
    },
    #[error("the XML is not a uiautomator hierarchy: root element is <{root}>")]
    NotAHierarchy { root: String },
    /// A `<hierarchy>` with elements, none of them a view: neither uiautomator's
    /// `<node>` nor an Appium class-named element (`class` / `bounds` attributes).
    #[error("the hierarchy has {elements} elements but none is a view (first: <{first}>)")]
    NoViews { elements: usize, first: String },
    /// A well-formed dump with no view at all (`require_views`).
    #[error("the UI dump holds no views: its <hierarchy> has no windows")]
    NoWindows,
}

/// What kind of damage made a dump unreadable as XML; each has its own remedy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmlDamage {
    /// The document stops before its end: an interrupted dump or copy.
    Truncated,
    /// Characters XML forbids (control characters, NULs, replacement characters): a text
    /// conversion damaged the file.
    Encoding,
    /// Anything else: the markup itself is wrong (an edited file, not a dump).
    Markup,
}

impl ParseError {
    /// The stable error code of the JSON error shape.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Empty | ParseError::NoWindows => "hierarchy_empty",
            ParseError::HierarchyUnavailable(_) => "hierarchy_unavailable",
            ParseError::TooLarge { .. } => "hierarchy_too_large",
            ParseError::TooDeep { .. } => "hierarchy_too_deep",
            ParseError::Encoding(_)
            | ParseError::Xml { .. }
            | ParseError::NotAHierarchy { .. }
            | ParseError::NoViews { .. } => "hierarchy_invalid",
        }
    }

    /// What a person can do about it.
    pub fn hint(&self) -> String {
        match self {
            ParseError::Empty => "uiautomator wrote nothing. Run `adb shell uiautomator dump /sdcard/d.xml` and check the file is not empty; retry after the screen settles.".into(),
            ParseError::HierarchyUnavailable(_) => "uiautomator could not read the screen (an animation, a video or a secure window). Wait a moment and retry; the screenshot still works.".into(),
            ParseError::TooLarge { .. } => "This is not a normal screen dump. Check that the right file was passed, or dump a simpler screen.".into(),
            ParseError::TooDeep { .. } => "The view hierarchy is pathologically deep; this is likely a broken or hostile dump, not a real screen.".into(),
            ParseError::Encoding(_) => "Save the dump as UTF-8 (or UTF-16 with a BOM); avoid console code-page conversions such as PowerShell `>` redirects.".into(),
            ParseError::Xml { damage: XmlDamage::Truncated, .. } => "The file ends before the document does: uiautomator was interrupted or the copy stopped early. Dump the screen again and copy the whole file with `adb pull`.".into(),
            ParseError::Xml { damage: XmlDamage::Encoding, line, .. } => format!("Line {line} holds characters XML forbids: a text conversion damaged the file (a console code page, a PowerShell `>` redirect, an editor saving in another encoding). Copy the dump byte for byte and keep it UTF-8 (or UTF-16 with a BOM)."),
            ParseError::Xml { damage: XmlDamage::Markup, .. } => "The markup is not what uiautomator writes (an edited or hand-made file). Dump the screen again with `adb shell uiautomator dump` and copy the file with `adb pull` rather than from the console.".into(),
            ParseError::NotAHierarchy { .. } => "Pass the output of `uiautomator dump` (a <hierarchy> document) or an Appium UiAutomator2 page source.".into(),
            ParseError::NoWindows => "uiautomator saw no window (the screen was off or locked, or a secure window was on top), or the file was cut down to its root. Wake the phone, dump again and check that the file holds <node> elements.".into(),
            ParseError::NoViews { .. } => "droidpilot reads Android UI dumps: uiautomator's <node> elements, or Appium UiAutomator2 page sources whose elements are named by class and carry `class` and `bounds`. iOS (XCUIElementType…) sources and HTML are not Android view hierarchies.".into(),
        }
    }
}

/// Turns raw bytes into text: strips a UTF-8 BOM, decodes UTF-16 (with a BOM, or
/// detected from `<\0`/`\0<`) whatever the declaration claims, and refuses oversized input.
pub fn decode(bytes: &[u8]) -> Result<Cow<'_, str>, ParseError> {
    if bytes.len() > MAX_DUMP_BYTES {
        return Err(ParseError::TooLarge {
            bytes: bytes.len(),
            limit: MAX_DUMP_BYTES,
        });
    }
    let utf16 = |data: &[u8], le: bool| -> Result<Cow<'_, str>, ParseError> {
        let units = data.chunks_exact(2).map(|c| {
            if le {
                u16::from_le_bytes([c[0], c[1]])
            } else {
                u16::from_be_bytes([c[0], c[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map(Cow::Owned)
            .map_err(|e| ParseError::Encoding(format!("invalid UTF-16: {e}")))
    };
    let text = match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, true),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, false),
        _ => match utf16_without_bom(bytes) {
            Some(le) => utf16(bytes, le),
            None => {
                let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
                std::str::from_utf8(b).map(Cow::Borrowed).map_err(|e| {
                    ParseError::Encoding(format!(
                        "not UTF-8 (first bad byte at offset {})",
                        e.valid_up_to()
                    ))
                })
            }
        },
    }?;
    if let Some(at) = text.find('\0') {
        return Err(ParseError::Encoding(format!(
            "a NUL character at offset {at} (half a UTF-16 file, or binary data)"
        )));
    }
    Ok(text)
}

/// UTF-16 without a byte order mark, told by its zero bytes: ASCII text (the markup, and
/// a `UI hierchary dumped to` line before it) has one in every other byte. `Some(true)`
/// for little-endian. Real UTF-8 dumps hold no zero byte at all.
fn utf16_without_bom(bytes: &[u8]) -> Option<bool> {
    let head = &bytes[..bytes.len().min(256) & !1];
    let zeros = |parity: usize| {
        head.iter()
            .skip(parity)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count()
    };
    let (even, odd) = (zeros(0), zeros(1));
    let pairs = head.len() / 2;
    if pairs < 2 {
        return None;
    }
    if odd * 4 >= pairs * 3 && even == 0 {
        Some(true)
    } else if even * 4 >= pairs * 3 && odd == 0 {
        Some(false)
    } else {
        None
    }
}

/// Cuts the XML document out of uiautomator's console output and classifies what is not
/// a document (empty output, `ERROR:` lines).
pub fn clean(text: &str) -> Result<&str, ParseError> {
    let text = text.trim_start_matches('\u{feff}');
    if text.len() > MAX_DUMP_BYTES {
        return Err(ParseError::TooLarge {
            bytes: text.len(),
            limit: MAX_DUMP_BYTES,
        });
    }
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let start = text.find("<?xml").or_else(|| text.find("<hierarchy"));
    let Some(start) = start else {
        // No document at all: uiautomator's own error lines are the common case.
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        if let Some(line) = text.lines().map(str::trim).find(|l| l.starts_with("ERROR")) {
            return Err(ParseError::HierarchyUnavailable(line.to_string()));
        }
        if first.starts_with('<') {
            // Some other XML; let roxmltree and the root check explain.
            return Ok(text.trim());
        }
        return Err(ParseError::HierarchyUnavailable(truncate(first, 120)));
    };
    let rest = &text[start..];
    let end = if let Some(i) = rest.rfind("</hierarchy>") {
        i + "</hierarchy>".len()
    } else {
        // `<hierarchy rotation="0"/>` (no windows) or a truncated dump: keep everything up
        // to the last `>` and let the XML parser report truncation precisely.
        rest.rfind('>').map_or(rest.len(), |i| i + 1)
    };
    Ok(&rest[..end])
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Bytes → `UiTree`: `decode`, `clean`, then `parse_clean`.
pub fn parse_bytes(bytes: &[u8]) -> Result<UiTree, ParseError> {
    let text = decode(bytes)?;
    parse(&text)
}

/// `tree`, unless it holds no view at all. A phone with the screen off can dump an
/// empty `<hierarchy/>`, which the runner reads as "nothing to see"; a person reading a
/// file they pass by name expects a screen, so `droidpilot screen` refuses one.
pub fn require_views(tree: UiTree) -> Result<UiTree, ParseError> {
    if tree.nodes.is_empty() {
        Err(ParseError::NoWindows)
    } else {
        Ok(tree)
    }
}

/// Text → `UiTree`, cleaning console junk first. An XML error's position is in `text`,
/// the junk that was cut before the document counted.
pub fn parse(text: &str) -> Result<UiTree, ParseError> {
    let xml = clean(text)?;
    parse_clean(xml).map_err(|e| e.moved_by(&text[..offset_in(text, xml)]))
}

/// Where `part`, a slice of `whole`, starts in it.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize)
        .checked_sub(whole.as_ptr() as usize)
        .filter(|&o| o <= whole.len())
        .unwrap_or(0)
}

impl ParseError {
    /// The same error with its position counted from before `prefix`, the text that was
    /// cut off the front of the document.
    fn moved_by(self, prefix: &str) -> ParseError {
        match self {
            ParseError::Xml {
                message,
                line,
                column,
                damage,
            } => {
                let (lines, last) = line_and_column_at_end(prefix);
                ParseError::Xml {
                    message,
                    line: line + lines - 1,
                    column: if line == 1 { column + last - 1 } else { column },
                    damage,
                }
            }
            e => e,
        }
    }
}

/// The 1-based line and column just after the end of `text`.
fn line_and_column_at_end(text: &str) -> (u32, u32) {
    let lines = text.matches('\n').count() + 1;
    let tail = text.rfind('\n').map_or(text, |i| &text[i + 1..]);
    let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (to_u32(lines), to_u32(tail.chars().count() + 1))
}

/// roxmltree's error → `ParseError::Xml`, with the kind of damage. An early end has no
/// position of its own (roxmltree says 1:1): the end of the document is where it is.
fn xml_error(e: &roxmltree::Error, xml: &str) -> ParseError {
    use roxmltree::Error as E;
    let damage = match e {
        E::UnexpectedEndOfStream | E::UnclosedRootNode => XmlDamage::Truncated,
        E::NonXmlChar(..) => XmlDamage::Encoding,
        _ if xml.contains('\u{FFFD}') => XmlDamage::Encoding,
        _ => XmlDamage::Markup,
    };
    let (line, column) = match damage {
        XmlDamage::Truncated => line_and_column_at_end(xml),
        _ => (e.pos().row, e.pos().col),
    };
    ParseError::Xml {
        message: e.to_string(),
        line,
        column,
        damage,
    }
}

/// A clean XML document → `UiTree`: the uiautomator scanner (`scan.rs`) when it
/// recognises the document, roxmltree otherwise. Both give the same tree; the scanner
/// only declines, so every error comes from roxmltree and reads the same either way.
pub fn parse_clean(xml: &str) -> Result<UiTree, ParseError> {
    if xml.len() > MAX_DUMP_BYTES {
        return Err(ParseError::TooLarge {
            bytes: xml.len(),
            limit: MAX_DUMP_BYTES,
        });
    }
    if let Some(tree) = super::scan::scan(xml) {
        return Ok(tree);
    }
    parse_clean_roxmltree(xml)
}

/// A clean XML document → `UiTree` through roxmltree only: the reference the scanner is
/// tested against, and the path for anything the scanner declines.
pub fn parse_clean_roxmltree(xml: &str) -> Result<UiTree, ParseError> {
    if xml.len() > MAX_DUMP_BYTES {
        return Err(ParseError::TooLarge {
            bytes: xml.len(),
            limit: MAX_DUMP_BYTES,
        });
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, opts).map_err(|e| xml_error(&e, xml))?;
    let root = doc.root_element();
    let mut tree = UiTree {
        rotation: None,
        nodes: Vec::with_capacity(xml.len() / 350),
        roots: Vec::new(),
    };
    match root.tag_name().name() {
        "hierarchy" => {
            tree.rotation = root.attribute("rotation").and_then(parse_rotation);
            build(&mut tree, root.children())?;
            // Elements that are not views would otherwise read as an empty screen.
            if tree.nodes.is_empty()
                && let Some(first) = root.children().find(roxmltree::Node::is_element)
            {
                return Err(ParseError::NoViews {
                    elements: root.descendants().filter(|n| n.is_element()).count() - 1,
                    first: truncate(first.tag_name().name(), 40),
                });
            }
        }
        // A bare `<node>` (or Appium element) document, as some tools save one window.
        _ if is_node(&root) => build(&mut tree, std::iter::once(root))?,
        other => {
            return Err(ParseError::NotAHierarchy {
                root: truncate(other, 40),
            });
        }
    }
    Ok(tree)
}

/// Appends `<node>` elements in pre-order with an explicit stack (no recursion).
fn build<'a, 'i: 'a>(
    tree: &mut UiTree,
    top: impl Iterator<Item = roxmltree::Node<'a, 'i>>,
) -> Result<(), ParseError> {
    // Stack of (xml node, parent arena index, position among siblings, depth); pushed in
    // reverse so that pops come out in document order.
    let mut stack: Vec<(roxmltree::Node<'a, 'i>, Option<usize>, usize, usize)> = Vec::new();
    let tops: Vec<_> = top.filter(is_node).collect();
    for (i, n) in tops.into_iter().enumerate().rev() {
        stack.push((n, None, i, 0));
    }
    let mut kids = Vec::new();
    while let Some((xn, parent, pos, depth)) = stack.pop() {
        if depth >= MAX_DEPTH {
            return Err(ParseError::TooDeep { limit: MAX_DEPTH });
        }
        let id = tree.nodes.len();
        let path = match parent {
            None => pos.to_string(),
            Some(p) => {
                let pp = &tree.nodes[p].path;
                let mut s = String::with_capacity(pp.len() + 3);
                s.push_str(pp);
                s.push('.');
                s.push_str(&pos.to_string());
                s
            }
        };
        let mut node = node_from_xml(&xn);
        node.path = path;
        node.depth = depth as u16;
        node.parent = parent;
        match parent {
            None => tree.roots.push(id),
            Some(p) => tree.nodes[p].children.push(id),
        }
        tree.nodes.push(node);
        kids.clear();
        kids.extend(xn.children().filter(is_node));
        for (i, k) in kids.iter().enumerate().rev() {
            stack.push((*k, Some(id), i, depth + 1));
        }
    }
    Ok(())
}

/// A view: uiautomator's `<node>`, or an Appium UiAutomator2 element, which is named by
/// its class (`<android.widget.Button class="android.widget.Button" bounds="…">`).
fn is_node(n: &roxmltree::Node) -> bool {
    n.is_element()
        && (n.tag_name().name() == "node" || n.has_attribute("class") || n.has_attribute("bounds"))
}

fn node_from_xml(xn: &roxmltree::Node) -> UiNode {
    let mut n = new_node();
    let appium = xn.tag_name().name() != "node";
    for a in xn.attributes() {
        if set_attribute(&mut n, a.name(), a.value()).is_none() && appium && a.name() == "displayed"
        {
            // Appium's name for `visible-to-user`.
            n.visible = a.value() == "true";
        }
    }
    if appium && n.class.is_empty() {
        n.class = xn.tag_name().name().to_string();
    }
    finish_node(&mut n);
    n
}

/// A node before its attributes are read: the defaults of a dump that omits them.
pub(crate) fn new_node() -> UiNode {
    UiNode {
        enabled: true,
        visible: true,
        ..Default::default()
    }
}

/// The `<node>` attributes we read, by slot, in the order recent uiautomator versions
/// write them (the scanner predicts the next attribute from this order).
pub(crate) const NODE_ATTRIBUTES: [&str; 22] = [
    "index",
    "text",
    "resource-id",
    "class",
    "package",
    "content-desc",
    "checkable",
    "checked",
    "clickable",
    "enabled",
    "focusable",
    "focused",
    "scrollable",
    "long-clickable",
    "password",
    "selected",
    "visible-to-user",
    "bounds",
    "drawing-order",
    "hint",
    "display-id",
    "NAF",
];

/// The slot of an attribute name in `NODE_ATTRIBUTES`, `None` for names we ignore.
pub(crate) fn attribute_slot(name: &str) -> Option<u8> {
    Some(match name {
        "index" => 0,
        "text" => 1,
        "resource-id" => 2,
        "class" => 3,
        "package" => 4,
        "content-desc" => 5,
        "checkable" => 6,
        "checked" => 7,
        "clickable" => 8,
        "enabled" => 9,
        "focusable" => 10,
        "focused" => 11,
        "scrollable" => 12,
        "long-clickable" => 13,
        "password" => 14,
        "selected" => 15,
        "visible-to-user" => 16,
        "bounds" => 17,
        "drawing-order" => 18,
        "hint" => 19,
        "display-id" => 20,
        "NAF" => 21,
        _ => return None,
    })
}

/// Reads one attribute into `n`. Shared by roxmltree and the scanner so that both read a
/// value identically. Returns the attribute's slot, `None` for names we ignore.
pub(crate) fn set_attribute(n: &mut UiNode, name: &str, v: &str) -> Option<u8> {
    let slot = attribute_slot(name)?;
    set_slot(n, slot, v);
    Some(slot)
}

/// Reads the value of the attribute in `slot` into `n`.
pub(crate) fn set_slot(n: &mut UiNode, slot: u8, v: &str) {
    let flag = v == "true";
    match slot {
        0 => n.index = v.trim().parse().ok(),
        1 => n.text = v.to_string(),
        2 => n.resource_id = v.to_string(),
        3 => n.class = v.to_string(),
        4 => n.package = v.to_string(),
        5 => n.content_desc = v.to_string(),
        6 => n.checkable = flag,
        7 => n.checked = flag,
        8 => n.clickable = flag,
        9 => n.enabled = flag,
        10 => n.focusable = flag,
        11 => n.focused = flag,
        12 => n.scrollable = flag,
        13 => n.long_clickable = flag,
        14 => n.password = flag,
        15 => n.selected = flag,
        16 => n.visible = flag,
        17 => n.bounds = parse_bounds(v).unwrap_or_default(),
        18 => n.drawing_order = v.trim().parse().ok(),
        19 => n.hint = v.to_string(),
        20 => n.display_id = v.trim().parse().ok(),
        21 => n.naf = flag,
        _ => {}
    }
}

/// What happens once all attributes are read.
pub(crate) fn finish_node(n: &mut UiNode) {
    // The secret never enters the tree, so no later layer can leak it. Apps (and
    // accessibility services) sometimes mirror a field's text into its content-desc, so
    // that is masked too; the hint is the developer's placeholder ("Password") and stays,
    // since it is what names the field.
    if n.password {
        for s in [&mut n.text, &mut n.content_desc] {
            if !s.is_empty() {
                *s = super::elements::REDACTED.to_string();
            }
        }
    }
}

/// `rotation="1"` of `<hierarchy>`.
pub(crate) fn parse_rotation(v: &str) -> Option<u8> {
    v.trim().parse().ok()
}

/// `[l,t][r,b]` → `Bounds`. `None` for anything else (the node then counts as zero-size).
pub fn parse_bounds(s: &str) -> Option<Bounds> {
    plain_bounds(s.as_bytes()).or_else(|| general_bounds(s))
}

fn general_bounds(s: &str) -> Option<Bounds> {
    let s = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (a, b) = s.split_once("][")?;
    let pair = |p: &str| -> Option<(i32, i32)> {
        let (x, y) = p.split_once(',')?;
        Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
    };
    let (l, t) = pair(a)?;
    let (r, bo) = pair(b)?;
    Some(Bounds::new(l, t, r, bo))
}

/// `[l,t][r,b]` exactly as uiautomator writes it (no spaces, no `+`, at most 9 digits, so
/// no overflow): the common case without the string searches. Anything else is `None`
/// and goes through the general reading, which gives the same answer on this form.
fn plain_bounds(s: &[u8]) -> Option<Bounds> {
    let mut v = [0i32; 4];
    let mut i = 0;
    for (k, close) in [b',', b']', b',', b']'].into_iter().enumerate() {
        if k % 2 == 0 {
            if *s.get(i)? != b'[' {
                return None;
            }
            i += 1;
        }
        let neg = s.get(i) == Some(&b'-');
        i += usize::from(neg);
        let digits = s
            .get(i..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 || digits > 9 || *s.get(i + digits)? != close {
            return None;
        }
        let n = s[i..i + digits]
            .iter()
            .fold(0i32, |n, &d| n * 10 + i32::from(d - b'0'));
        v[k] = if neg { -n } else { n };
        i += digits + 1;
    }
    (i == s.len()).then(|| Bounds::new(v[0], v[1], v[2], v[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="1"><node index="0" text="Hi&#10;there" resource-id="a:id/t" class="android.widget.TextView" package="a" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][100,50]" NAF="true" drawing-order="3" hint="h" visible-to-user="false" display-id="2"><node index="0" text="secret" class="android.widget.EditText" password="true" bounds="[1,2][3,4]"/></node></hierarchy>"#;

    #[test]
    fn every_attribute_generation_is_read() {
        let t = parse(ONE).unwrap();
        assert_eq!(t.rotation, Some(1));
        let n = &t.nodes[0];
        assert_eq!(n.text, "Hi\nthere");
        assert_eq!(n.short_id(), "t");
        assert!(n.clickable && n.naf && !n.visible && n.enabled);
        assert_eq!((n.drawing_order, n.display_id), (Some(3), Some(2)));
        assert_eq!(n.hint, "h");
        assert_eq!(n.bounds, Bounds::new(0, 0, 100, 50));
        assert_eq!(t.nodes[1].path, "0.0");
        assert_eq!(t.nodes[1].bounds, Bounds::new(1, 2, 3, 4));
    }

    #[test]
    fn password_text_never_enters_the_tree() {
        let t = parse(ONE).unwrap();
        assert_eq!(t.nodes[1].text, "••••");
        assert!(!format!("{t:?}").contains("secret"));
    }

    #[test]
    fn junk_around_the_document_is_cut() {
        let s = format!(
            "\u{feff}UI hierchary dumped to: /sdcard/x.xml\r\n{ONE}UI hierchary dumped to: /dev/tty\r\n"
        );
        assert_eq!(parse(&s).unwrap().nodes.len(), 2);
    }

    #[test]
    fn utf16_with_a_utf8_declaration_decodes() {
        let mut b = vec![0xFF, 0xFE];
        for u in ONE.replace("><", ">\r\n<").encode_utf16() {
            b.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(parse_bytes(&b).unwrap().nodes.len(), 2);
        // Without a BOM too.
        assert_eq!(parse_bytes(&b[2..]).unwrap().nodes.len(), 2);
    }

    #[test]
    fn uiautomator_errors_are_typed() {
        for s in [
            "ERROR: null root node returned by UiTestAutomationBridge.\n",
            "ERROR: could not get idle state.",
        ] {
            let e = parse(s).unwrap_err();
            assert_eq!(e.code(), "hierarchy_unavailable", "{s}");
            assert!(e.hint().contains("retry"));
        }
        assert_eq!(parse(" \n").unwrap_err(), ParseError::Empty);
        assert_eq!(parse_bytes(b"").unwrap_err(), ParseError::Empty);
    }

    #[test]
    fn limits_are_errors_not_crashes() {
        let deep = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(100_000),
            "</node>".repeat(100_000)
        );
        assert_eq!(
            parse(&deep).unwrap_err(),
            ParseError::TooDeep { limit: MAX_DEPTH }
        );
        let ok = format!(
            "<hierarchy>{}{}</hierarchy>",
            "<node>".repeat(499),
            "</node>".repeat(499)
        );
        assert_eq!(parse(&ok).unwrap().nodes.len(), 499);
        let big = vec![b' '; MAX_DUMP_BYTES + 1];
        assert_eq!(parse_bytes(&big).unwrap_err().code(), "hierarchy_too_large");
    }

    #[test]
    fn entities_are_not_expanded() {
        let bomb = r#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><hierarchy><node text="&b;"/></hierarchy>"#;
        assert_eq!(parse(bomb).unwrap_err().code(), "hierarchy_invalid");
    }

    #[test]
    fn truncated_xml_is_a_clear_error() {
        match parse("<hierarchy><node text=\"a\"><node").unwrap_err() {
            ParseError::Xml { line, message, .. } => {
                assert_eq!(line, 1);
                assert!(message.contains("never closed"), "{message}");
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(parse("<html/>").unwrap_err().code(), "hierarchy_invalid");
    }

    #[test]
    fn attribute_slots_match_their_names() {
        for (slot, name) in NODE_ATTRIBUTES.iter().enumerate() {
            assert_eq!(attribute_slot(name), Some(slot as u8), "{name}");
        }
        assert_eq!(attribute_slot("xpos"), None);
    }

    #[test]
    fn bounds_syntax() {
        assert_eq!(
            parse_bounds("[-5,0][1080,2400]"),
            Some(Bounds::new(-5, 0, 1080, 2400))
        );
        assert_eq!(parse_bounds("[0,0][1,"), None);
        assert_eq!(parse_bounds(""), None);
        assert_eq!(
            parse_bounds(" [1, 2][+3,4] "),
            Some(Bounds::new(1, 2, 3, 4))
        );
    }

    #[test]
    fn the_plain_bounds_reader_agrees_with_the_general_one() {
        for s in [
            "[0,0][1080,2400]",
            "[-5,-0][-1,999999999]",
            "[1,2][3,4]x",
            "[1,2][3,4",
            "[1,2]3,4]",
            "[1,2][3,]",
            "[,2][3,4]",
            "[-,2][3,4]",
            "[1,2][3,4][5,6]",
            "[1,2][3,4] ",
            "[1,2][3,4294967296]",
            "[1,2][3,2147483647]",
            "[1,2][3,2147483648]",
            "[+1,2][3,4]",
            "[1 ,2][3,4]",
        ] {
            if let Some(b) = plain_bounds(s.as_bytes()) {
                assert_eq!(Some(b), general_bounds(s), "{s}");
            }
            assert_eq!(parse_bounds(s), general_bounds(s), "{s}");
        }
        assert!(plain_bounds(b"[0,0][1080,2400]").is_some());
    }
}
