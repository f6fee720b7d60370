//! The fast path of `parse::parse_clean`: a scanner for the XML that uiautomator writes.
//!
//! A dump is a narrow dialect: an optional `<?xml …?>` declaration, one `<hierarchy …>`
//! (or a bare `<node>`), nested `<node attr="…" …>` elements, whitespace between tags,
//! attribute values that use the five predefined entities and numeric character
//! references (`&#10;`). Building roxmltree's DOM for that and then copying it into a
//! `UiTree` cost two thirds of parse + compact; this reads the nodes straight out of the
//! text into the tree in one pass, borrowing every attribute value that needs no decoding.
//!
//! The contract: `scan` returns either exactly the tree `parse_clean_roxmltree` builds,
//! or `None` ("not recognised"), and then the caller asks roxmltree. So it never reports
//! an error itself: anything it is not sure about (comments, CDATA, processing
//! instructions, DOCTYPE, namespaces, other elements, non-whitespace text, unknown
//! entities, an unusual declaration, nesting at the depth limit, a truncated document)
//! is declined, and roxmltree explains it in the same words as before. Attribute
//! interpretation is shared with the roxmltree path (`parse::set_attribute`), so only
//! tokenizing and value decoding are implemented twice; the value rules follow the
//! XML spec as roxmltree 0.21 applies them: literal tab / newline / carriage return
//! become spaces (a CR LF pair one space), character references are kept as written.
//! `tests/screen_corpus.rs` checks tree equality on every fixture and on mangled dumps.

use std::borrow::Cow;

use super::parse::{
    MAX_DEPTH, NODE_ATTRIBUTES, attribute_slot, finish_node, new_node, parse_rotation, set_slot,
};
use super::tree::{UiNode, UiTree};

const SLOTS: usize = NODE_ATTRIBUTES.len();
const _: () = assert!(SLOTS < 32, "slots must fit the duplicate bitmask");
/// `Cursor::next` index for "just after the element name".
const START: usize = SLOTS;
/// `Cursor::next` value for "no guess".
const NO_GUESS: u8 = u8::MAX;

/// A clean dump → its `UiTree`, or `None` when the document is not plain uiautomator
/// output (the caller then parses it with roxmltree).
pub fn scan(xml: &str) -> Option<UiTree> {
    let mut c = Cursor {
        b: xml.as_bytes(),
        i: 0,
        next: initial_guesses(),
    };
    if c.b.starts_with(b"<?xml ") {
        c.declaration()?;
    }
    c.skip_ws();
    c.eat(b'<')?;
    let mut tree = UiTree {
        rotation: None,
        nodes: Vec::with_capacity(xml.len() / 350),
        roots: Vec::new(),
    };
    // Open `<node>` elements: (arena index, children seen so far).
    let mut open: Vec<(usize, usize)> = Vec::with_capacity(64);
    let mut path = PathBuf::default();
    match c.name(xml)? {
        "hierarchy" => {
            let (rotation, closed) = c.hierarchy_attributes(xml)?;
            tree.rotation = rotation;
            if !closed {
                c.content(xml, &mut tree, &mut open, &mut path, true)?;
            }
        }
        "node" => {
            // A bare `<node>` document (some tools save one window) is one window.
            let closed = c.node(xml, &mut tree, None, 0, &mut path, 0)?;
            if !closed {
                open.push((0, 0));
                c.content(xml, &mut tree, &mut open, &mut path, false)?;
            }
        }
        _ => return None,
    }
    c.skip_ws();
    (c.i == c.b.len()).then_some(tree)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
    /// For each attribute slot (and `START`), the slot that followed it last time. One
    /// dump writes every node's attributes in the same order, so after the first node
    /// the scanner checks ` name="` with one comparison instead of reading the name.
    next: [u8; SLOTS + 1],
}

fn initial_guesses() -> [u8; SLOTS + 1] {
    let mut next = [NO_GUESS; SLOTS + 1];
    next[START] = 0;
    for (slot, n) in next.iter_mut().enumerate().take(SLOTS - 1) {
        *n = slot as u8 + 1;
    }
    next
}

/// Builds `0.1.2` index paths without re-formatting the parent's.
#[derive(Default)]
struct PathBuf {
    /// Length of the path prefix of each open level.
    ends: Vec<usize>,
    text: String,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Byte classes, looked up once per byte in the hot loops.
const NAME: u8 = 1;
/// Ends a plain attribute value: a quote, or something that needs decoding or declining.
const VALUE_STOP: u8 = 2;

static BYTE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.') {
            t[c] |= NAME;
        }
        if b < 0x20 || matches!(b, b'"' | b'\'' | b'&' | b'<' | 0xEF) {
            t[c] |= VALUE_STOP;
        }
        c += 1;
    }
    t
};

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    fn eat_str(&mut self, s: &[u8]) -> bool {
        let hit = self.b[self.i..].starts_with(s);
        if hit {
            self.i += s.len();
        }
        hit
    }

    /// Skips XML whitespace; whether there was any.
    fn skip_ws(&mut self) -> bool {
        let start = self.i;
        while self.i < self.b.len() && is_ws(self.b[self.i]) {
            self.i += 1;
        }
        self.i > start
    }

    /// An ASCII name without a namespace prefix. A colon or a non-ASCII byte declines
    /// (namespaces and Unicode names are roxmltree's business).
    fn name(&mut self, src: &'a str) -> Option<&'a str> {
        let start = self.i;
        if !self.peek()?.is_ascii_alphabetic() && self.b[start] != b'_' {
            return None;
        }
        let rest = &self.b[start..];
        let len = rest
            .iter()
            .position(|&c| BYTE[c as usize] & NAME == 0)
            .unwrap_or(rest.len());
        if rest.get(len).is_some_and(|&c| c == b':' || c >= 0x80) {
            return None;
        }
        self.i = start + len;
        src.get(start..self.i)
    }

    /// `<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>`, each part in the order
    /// the spec fixes, values restricted to what real declarations hold.
    fn declaration(&mut self) -> Option<()> {
        self.i += b"<?xml ".len();
        self.skip_ws();
        if !self.eat_str(b"version") {
            return None;
        }
        self.decl_value()?;
        let mut spaced = self.skip_ws();
        if spaced && self.eat_str(b"encoding") {
            self.decl_value()?;
            spaced = self.skip_ws();
        }
        if spaced && self.eat_str(b"standalone") {
            self.decl_value()?;
            self.skip_ws();
        }
        self.eat_str(b"?>").then_some(())
    }

    fn decl_value(&mut self) -> Option<()> {
        self.skip_ws();
        self.eat(b'=')?;
        self.skip_ws();
        let q = self.peek().filter(|q| matches!(q, b'"' | b'\''))?;
        self.i += 1;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        {
            self.i += 1;
        }
        self.eat(q)
    }

    /// One `name="value"` after the element name, or the end of the tag (`>` or `/>`).
    fn attribute(&mut self, src: &'a str) -> Option<Attr<'a>> {
        let spaced = self.skip_ws();
        match self.peek()? {
            b'/' => {
                self.i += 1;
                self.eat(b'>')?;
                Some(Attr::End { closed: true })
            }
            b'>' => {
                self.i += 1;
                Some(Attr::End { closed: false })
            }
            _ => {
                if !spaced {
                    return None;
                }
                let name = self.name(src)?;
                self.skip_ws();
                self.eat(b'=')?;
                self.skip_ws();
                let q = self.peek().filter(|q| matches!(q, b'"' | b'\''))?;
                self.i += 1;
                let value = self.value(src, q)?;
                Some(Attr::Pair(name, value))
            }
        }
    }

    /// Consumes ` name="` when the next attribute is the one in `slot`.
    fn guessed(&mut self, slot: u8) -> bool {
        let Some(name) = NODE_ATTRIBUTES.get(usize::from(slot)) else {
            return false;
        };
        let name = name.as_bytes();
        let hit = self
            .b
            .get(self.i..self.i + name.len() + 3)
            .is_some_and(|t| {
                t[0] == b' ' && &t[1..=name.len()] == name && t[name.len() + 1..] == *b"=\""
            });
        if hit {
            self.i += name.len() + 3;
        }
        hit
    }

    /// An attribute value after its opening quote `q`, through the closing quote.
    fn value(&mut self, src: &'a str, q: u8) -> Option<Cow<'a, str>> {
        let start = self.i;
        let rest = &self.b[start..];
        // Half of all values are flags.
        for flag in ["false", "true"] {
            if rest.len() > flag.len() && rest.starts_with(flag.as_bytes()) && rest[flag.len()] == q
            {
                self.i += flag.len() + 1;
                return Some(Cow::Borrowed(flag));
            }
        }
        // One pass to the closing quote, noting whether anything needs decoding.
        let mut len = 0;
        let mut plain = true;
        loop {
            let c = *rest.get(len)?;
            if BYTE[c as usize] & VALUE_STOP != 0 {
                if c == q {
                    break;
                }
                plain &= c == b'"' || c == b'\'';
            }
            len += 1;
        }
        self.i = start + len + 1;
        let raw = src.get(start..start + len)?;
        if plain {
            Some(Cow::Borrowed(raw))
        } else {
            decode_value(raw)
        }
    }

    /// The attributes of `<hierarchy>`: its rotation, and whether the tag was `/>`.
    fn hierarchy_attributes(&mut self, src: &'a str) -> Option<(Option<u8>, bool)> {
        let mut rotation = None;
        let mut names: Vec<&str> = Vec::new();
        loop {
            match self.attribute(src)? {
                Attr::End { closed } => return Some((rotation, closed)),
                Attr::Pair(name, value) => {
                    if names.contains(&name) || name.get(..3).is_some_and(is_xml_prefix) {
                        return None;
                    }
                    names.push(name);
                    if name == "rotation" {
                        rotation = parse_rotation(&value);
                    }
                }
            }
        }
    }

    /// Reads one `<node` start tag (name already consumed) into the arena. Returns
    /// whether the tag was self-closing.
    fn node(
        &mut self,
        src: &'a str,
        tree: &mut UiTree,
        parent: Option<usize>,
        pos: usize,
        path: &mut PathBuf,
        depth: usize,
    ) -> Option<bool> {
        let mut n: UiNode = new_node();
        let mut seen: u32 = 0;
        let mut others: Vec<&str> = Vec::new();
        let mut prev = START;
        let closed = loop {
            let guess = self.next[prev];
            let (slot, value) = if self.guessed(guess) {
                (guess, self.value(src, b'"')?)
            } else {
                match self.attribute(src)? {
                    Attr::End { closed } => break closed,
                    Attr::Pair(name, value) => match attribute_slot(name) {
                        Some(slot) => (slot, value),
                        None => {
                            // Ignored, but still subject to XML's rules: no duplicates,
                            // and `xmlns…` would make this a namespaced document.
                            if others.contains(&name) || name.get(..3).is_some_and(is_xml_prefix) {
                                return None;
                            }
                            others.push(name);
                            continue;
                        }
                    },
                }
            };
            let bit = 1u32 << slot;
            if seen & bit != 0 {
                return None; // duplicate attribute: roxmltree's error
            }
            seen |= bit;
            set_slot(&mut n, slot, &value);
            self.next[prev] = slot;
            prev = usize::from(slot);
        };
        finish_node(&mut n);
        let id = tree.nodes.len();
        path.truncate(depth);
        n.path = path.child(pos);
        n.depth = depth as u16;
        n.parent = parent;
        match parent {
            None => tree.roots.push(id),
            Some(p) => tree.nodes[p].children.push(id),
        }
        tree.nodes.push(n);
        Some(closed)
    }

    /// Everything inside the root element, through its end tag. `open` holds the open
    /// `<node>`s (one, the root, for a bare `<node>` document).
    fn content(
        &mut self,
        src: &'a str,
        tree: &mut UiTree,
        open: &mut Vec<(usize, usize)>,
        path: &mut PathBuf,
        in_hierarchy: bool,
    ) -> Option<()> {
        loop {
            self.skip_ws();
            self.eat(b'<')?;
            if self.peek()? == b'/' {
                self.i += 1;
                let name = self.name(src)?;
                self.skip_ws();
                self.eat(b'>')?;
                match open.pop() {
                    Some(_) if name == "node" => {
                        if open.is_empty() && !in_hierarchy {
                            return Some(());
                        }
                    }
                    None if in_hierarchy && name == "hierarchy" => return Some(()),
                    _ => return None,
                }
                continue;
            }
            if self.name(src)? != "node" {
                return None;
            }
            // The bare root `<node>` is in `open` too, at depth 0, so this holds for both.
            let depth = open.len();
            if depth >= MAX_DEPTH {
                return None; // roxmltree's path reports it (or an earlier XML error)
            }
            let (parent, pos) = match open.last_mut() {
                Some((p, kids)) => {
                    *kids += 1;
                    (Some(*p), *kids - 1)
                }
                None => (None, tree.roots.len()),
            };
            let closed = self.node(src, tree, parent, pos, path, depth)?;
            if !closed {
                open.push((tree.nodes.len() - 1, 0));
            }
        }
    }
}

enum Attr<'a> {
    Pair(&'a str, Cow<'a, str>),
    End { closed: bool },
}

fn is_xml_prefix(s: &str) -> bool {
    s.eq_ignore_ascii_case("xml")
}

impl PathBuf {
    /// Keeps the prefix for the first `depth` levels.
    fn truncate(&mut self, depth: usize) {
        self.ends.truncate(depth);
        self.text.truncate(self.ends.last().copied().unwrap_or(0));
    }

    /// The path of child `pos` at the current level; the level becomes its prefix.
    fn child(&mut self, pos: usize) -> String {
        if !self.ends.is_empty() {
            self.text.push('.');
        }
        push_decimal(&mut self.text, pos);
        self.ends.push(self.text.len());
        self.text.clone()
    }
}

fn push_decimal(s: &mut String, mut v: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &buf[i..] {
        s.push(d as char);
    }
}

/// An attribute value that holds a reference, a control character, `<` or a byte that
/// may start U+FFFE/U+FFFF, as roxmltree returns it. `None` for what XML forbids (`<`, a control character, U+FFFE/U+FFFF, an unknown or
/// malformed reference).
fn decode_value(raw: &str) -> Option<Cow<'_, str>> {
    let b = raw.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut j = 0;
    while j < b.len() {
        let c = b[j];
        match c {
            b'<' => return None,
            b'&' => {
                let (ch, used) = reference(&b[j + 1..])?;
                let mut tmp = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                j += 1 + used;
                continue;
            }
            // CR LF is one line end, and each line end or tab one space.
            b'\r' if b.get(j + 1) == Some(&b'\n') => {}
            b'\r' | b'\n' | b'\t' => out.push(b' '),
            0..0x20 => return None,
            0xEF if matches!(b.get(j + 1..j + 3), Some([0xBF, 0xBE | 0xBF])) => return None,
            _ => out.push(c),
        }
        j += 1;
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// A reference after its `&`: the character and the bytes consumed through `;`.
fn reference(b: &[u8]) -> Option<(char, usize)> {
    let semi = b.iter().take(12).position(|&c| c == b';')?;
    let body = &b[..semi];
    let ch = match body {
        b"quot" => '"',
        b"amp" => '&',
        b"apos" => '\'',
        b"lt" => '<',
        b"gt" => '>',
        [b'#', b'x', hex @ ..] if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) => {
            char_ref(hex, 16)?
        }
        [b'#', dec @ ..] if !dec.is_empty() && dec.iter().all(u8::is_ascii_digit) => {
            char_ref(dec, 10)?
        }
        _ => return None,
    };
    Some((ch, semi + 1))
}

/// A numeric reference the way roxmltree reads it: a surrogate becomes U+FFFD, and only
/// characters XML allows are accepted.
fn char_ref(digits: &[u8], radix: u32) -> Option<char> {
    let n = u32::from_str_radix(std::str::from_utf8(digits).ok()?, radix).ok()?;
    let c = char::from_u32(n).unwrap_or('\u{FFFD}');
    let ok = match c as u32 {
        0x9 | 0xA | 0xD => true,
        0..0x20 | 0xFFFE | 0xFFFF => false,
        _ => true,
    };
    ok.then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::parse::parse_clean_roxmltree;

    /// The scanner either agrees with roxmltree or declines; `expect_fast` says which.
    fn same(xml: &str, expect_fast: bool) {
        let fast = scan(xml);
        assert_eq!(fast.is_some(), expect_fast, "fast path taken? {xml:?}");
        if let Some(t) = fast {
            assert_eq!(Ok(t), parse_clean_roxmltree(xml), "{xml:?}");
        }
    }

    #[test]
    fn plain_dumps_take_the_fast_path() {
        same(
            r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="1"><node index="0" text="a" bounds="[0,0][10,10]"><node text='b' clickable="true"/><node/></node><node index="1"></node></hierarchy>"#,
            true,
        );
        same("<hierarchy rotation=\"0\"/>", true);
        same(
            "<?xml version=\"1.0\" ?>\r\n<hierarchy>\r\n  <node text=\"x\" />\r\n</hierarchy>",
            true,
        );
        same("<node text=\"alone\"><node/></node>", true);
        same(
            "<hierarchy><node xpos=\"[0,0][0,0]\" text=\"x\"/></hierarchy>",
            true,
        );
    }

    #[test]
    fn values_decode_like_roxmltree() {
        for v in [
            "a&#10;b",
            "a&#13;&#10;b",
            "&#x1F600;&#128512;",
            "&lt;&gt;&amp;&quot;&apos;",
            "tab\there",
            "crlf\r\nline",
            "lone\rcr\nlf",
            "end\r",
            "\r&#10;",
            "&#55357;",
            "ï¿½ fullwidth Ａ",
            "it's",
        ] {
            same(
                &format!("<hierarchy><node text=\"{v}\"/></hierarchy>"),
                true,
            );
        }
        same("<hierarchy><node text='say \"hi\"'/></hierarchy>", true);
    }

    #[test]
    fn unusual_markup_is_declined_not_misread() {
        for xml in [
            "<hierarchy><!-- c --><node/></hierarchy>",
            "<hierarchy><node><![CDATA[x]]></node></hierarchy>",
            "<hierarchy><?pi x?><node/></hierarchy>",
            "<?xml version=\"1.0\"?><!DOCTYPE h><hierarchy/>",
            "<hierarchy xmlns=\"urn:x\"><node/></hierarchy>",
            "<hierarchy><a:node xmlns:a=\"urn:a\"/></hierarchy>",
            "<hierarchy><node a:text=\"x\"/></hierarchy>",
            "<hierarchy><node text=\"&nbsp;\"/></hierarchy>",
            "<hierarchy><node text=\"&#0;\"/></hierarchy>",
            "<hierarchy><node text=\"&#X41;\"/></hierarchy>",
            "<hierarchy><node text=\"a&b\"/></hierarchy>",
            "<hierarchy><node text=\"a<b\"/></hierarchy>",
            "<hierarchy><node text=\"\u{1}\"/></hierarchy>",
            "<hierarchy><node text=\"\u{fffe}\"/></hierarchy>",
            "<hierarchy><node text=\"a\" text=\"b\"/></hierarchy>",
            "<hierarchy><node xpos=\"a\" xpos=\"b\"/></hierarchy>",
            "<hierarchy><node text=\"a\"class=\"b\"/></hierarchy>",
            "<hierarchy><node>text</node></hierarchy>",
            "<hierarchy><view/></hierarchy>",
            "<hierarchy><node></view></hierarchy>",
            "<hierarchy><node></hierarchy>",
            "<hierarchy><node/>",
            "<hierarchy><node/></hierarchy><hierarchy/>",
            "<hierarchy><hierarchy/></hierarchy>",
            "<html/>",
            "<?xml version=\"1.0\"encoding=\"x\"?><hierarchy/>",
            "<?xml\tversion=\"1.0\"?><hierarchy/>",
            "\u{feff}<hierarchy/>",
        ] {
            same(xml, false);
        }
    }

    #[test]
    fn the_depth_limit_is_left_to_the_reference_path() {
        let at = |d: usize| {
            format!(
                "<hierarchy>{}{}</hierarchy>",
                "<node>".repeat(d),
                "</node>".repeat(d)
            )
        };
        same(&at(MAX_DEPTH), true);
        same(&at(MAX_DEPTH + 1), false);
        let bare = format!(
            "{}{}",
            "<node>".repeat(MAX_DEPTH),
            "</node>".repeat(MAX_DEPTH)
        );
        same(&bare, true);
        let bare = format!(
            "{}{}",
            "<node>".repeat(MAX_DEPTH + 1),
            "</node>".repeat(MAX_DEPTH + 1)
        );
        same(&bare, false);
    }
}
