//! Selectors: how scripts and models name an element in a way that survives app updates.
//!
//! Syntax (whitespace around the whole selector is ignored):
//!
//! | form | matches |
//! | --- | --- |
//! | `#btn_send`, `#com.app:id/btn_send` | resource-id, short or package-qualified |
//! | `:text("Send")` | exact text |
//! | `:desc("Back")` | exact content-desc |
//! | `Button:text("Send")`, `ImageButton:desc("Back")` | class (short or full) and text/desc |
//! | `Button` | every node of that class (only useful as a fallback) |
//! | `:package("com.app")` | every node of that app's windows (waits: "the app is up") |
//! | `:ocr("Sign in")` | a node whose text OCR read is this, case and spacing aside, else that contains it (only on a screen read with OCR, `screen::ocr`) |
//! | `[0.1.2]` | index path |
//! | `:text("6:00 AM") >> #delete` | the `#delete` nearest to the anchor: inside it, else inside its nearest ancestor that holds one (the same list row) |
//!
//! Strings use double quotes; `\"` and `\\` escape. Parse errors carry the 1-based column.
//! A hand-written parser because the grammar is six productions and errors must point
//! at a column, which a regex or a parser-combinator crate would not make simpler.
//!
//! `A >> B` names an element that is not unique by itself (every alarm row has a
//! `#delete`) by a unique neighbour (the row's time). It survives a reordered list or a
//! moved layout, where an index path names another row.

use std::collections::HashMap;
use std::fmt;

use super::tree::{UiNode, UiTree, short_class, short_id};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selector {
    Id(String),
    Text {
        class: Option<String>,
        text: String,
    },
    Desc {
        class: Option<String>,
        desc: String,
    },
    Class(String),
    /// Every node of an app's windows: what a wait for an app to come up waits for.
    Package(String),
    /// A node whose OCR text contains this (`screen::ocr::ocr_matches`).
    Ocr(String),
    Path(Vec<u32>),
    /// `anchor >> target`: the target nodes nearest to an anchor node (see the module doc).
    Near {
        anchor: Box<Selector>,
        target: Box<Selector>,
    },
}

/// A selector that does not parse, with the column (1-based, in chars) of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid selector `{input}` at column {column}: {message}")]
pub struct SelectorError {
    pub input: String,
    pub column: usize,
    pub message: String,
}

impl SelectorError {
    pub fn code(&self) -> &'static str {
        "invalid_selector"
    }
    /// The selector on one line and a caret under the offending character on the next
    /// (columns count characters), then the valid forms.
    pub fn hint(&self) -> String {
        let line: String = self
            .input
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        format!(
            "{line}\n{}^ {}\nValid forms: #resource_id, :text(\"…\"), :desc(\"…\"), Button:text(\"…\"), [0.1.2], :text(\"…\") >> #resource_id, :package(\"com.app\"), :ocr(\"…\").",
            " ".repeat(self.column.saturating_sub(1)),
            self.message
        )
    }
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

struct Cursor<'a> {
    input: &'a str,
    chars: Vec<char>,
    pos: usize,
}

impl Cursor<'_> {
    fn err(&self, at: usize, message: impl Into<String>) -> SelectorError {
        SelectorError {
            input: self.input.to_string(),
            column: at + 1,
            message: message.into(),
        }
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn eat(&mut self, lit: &str) -> bool {
        let n = lit.chars().count();
        let ok = self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(lit.chars());
        if ok {
            self.pos += n;
        }
        ok
    }
    fn expect(&mut self, lit: &str, what: &str) -> Result<(), SelectorError> {
        if self.eat(lit) {
            Ok(())
        } else {
            Err(self.err(self.pos, format!("expected {what}")))
        }
    }
    fn string(&mut self) -> Result<String, SelectorError> {
        let open = self.pos;
        self.expect("\"", "a double-quoted string")?;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return Err(self.err(open, "unterminated string (missing closing `\"`)")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(s);
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c @ ('"' | '\\')) => {
                            s.push(c);
                            self.pos += 1;
                        }
                        _ => return Err(self.err(self.pos, "only \\\" and \\\\ can be escaped")),
                    }
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }
}

impl Selector {
    /// Parses a selector; errors name the column of the problem.
    pub fn parse(input: &str) -> Result<Selector, SelectorError> {
        let lead = input.chars().take_while(|c| c.is_whitespace()).count();
        let chars: Vec<char> = input.trim_end().chars().collect();
        let mut c = Cursor {
            input,
            chars,
            pos: lead,
        };
        let mut sel = Self::parse_one(&mut c)?;
        loop {
            while c.peek().is_some_and(char::is_whitespace) {
                c.pos += 1;
            }
            if c.pos == c.chars.len() {
                return Ok(sel);
            }
            if !c.eat(">>") {
                // Point at the stray text itself, not at the space before it.
                return Err(c.err(c.pos, "unexpected text after the selector"));
            }
            while c.peek().is_some_and(char::is_whitespace) {
                c.pos += 1;
            }
            let at = c.pos;
            let target = Self::parse_one(&mut c)?;
            if target.is_index_based() {
                return Err(c.err(at, "an index path cannot follow `>>`"));
            }
            sel = Selector::Near {
                anchor: Box::new(sel),
                target: Box::new(target),
            };
        }
    }

    /// One selector without `>>`, from the cursor; stops at whitespace or the end.
    fn parse_one(c: &mut Cursor<'_>) -> Result<Selector, SelectorError> {
        let lead = c.pos;
        let sel = match c.peek() {
            None => return Err(c.err(lead, "empty selector")),
            Some('#') => {
                c.pos += 1;
                let start = c.pos;
                while c.peek().is_some_and(|ch| !ch.is_whitespace()) {
                    c.pos += 1;
                }
                if c.pos == start {
                    return Err(c.err(start, "expected a resource-id after `#`"));
                }
                Selector::Id(c.chars[start..c.pos].iter().collect())
            }
            Some('[') => {
                c.pos += 1;
                let mut parts = Vec::new();
                loop {
                    let start = c.pos;
                    while c.peek().is_some_and(|ch| ch.is_ascii_digit()) {
                        c.pos += 1;
                    }
                    if c.pos == start {
                        return Err(c.err(start, "expected a number in the index path"));
                    }
                    let num: String = c.chars[start..c.pos].iter().collect();
                    let v = num
                        .parse::<u32>()
                        .map_err(|_| c.err(start, "index too large"))?;
                    parts.push(v);
                    if c.eat(".") {
                        continue;
                    }
                    c.expect("]", "`.` or `]` in the index path")?;
                    break;
                }
                Selector::Path(parts)
            }
            Some(ch) if ch == ':' || ch.is_alphabetic() || ch == '_' => {
                let start = c.pos;
                while c
                    .peek()
                    .is_some_and(|ch| ch.is_alphanumeric() || matches!(ch, '_' | '.' | '$'))
                {
                    c.pos += 1;
                }
                let class: Option<String> =
                    (c.pos > start).then(|| c.chars[start..c.pos].iter().collect());
                if c.peek().is_none_or(char::is_whitespace) {
                    match class {
                        Some(cl) => Selector::Class(cl),
                        None => return Err(c.err(start, "expected text( or desc( after `:`")),
                    }
                } else {
                    let colon = c.pos;
                    c.expect(":", "`:text(\"…\")` or `:desc(\"…\")` after the class name")?;
                    if class.is_none() && c.eat("package(") {
                        let s = c.string()?;
                        c.expect(")", "`)` after the string")?;
                        return Ok(Selector::Package(s));
                    }
                    if class.is_none() && c.eat("ocr(") {
                        let s = c.string()?;
                        c.expect(")", "`)` after the string")?;
                        return Ok(Selector::Ocr(s));
                    }
                    let is_text = if c.eat("text(") {
                        true
                    } else if c.eat("desc(") {
                        false
                    } else {
                        let what = if class.is_none() {
                            "expected `text(`, `desc(`, `package(` or `ocr(` after `:`"
                        } else {
                            "expected `text(` or `desc(` after `:`"
                        };
                        return Err(c.err(colon + 1, what));
                    };
                    let s = c.string()?;
                    c.expect(")", "`)` after the string")?;
                    if is_text {
                        Selector::Text { class, text: s }
                    } else {
                        Selector::Desc { class, desc: s }
                    }
                }
            }
            Some(ch) => {
                return Err(c.err(
                    c.pos,
                    format!("unexpected `{ch}`; a selector starts with #, :, [ or a class name"),
                ));
            }
        };
        Ok(sel)
    }

    /// Whether `node` (at arena index `i` of `tree`) matches. Paths are resolved by the
    /// caller (`find`), so they never match here.
    pub fn matches_node(&self, n: &UiNode) -> bool {
        let class_ok = |c: &Option<String>| {
            c.as_deref()
                .is_none_or(|c| c == n.class || c == n.short_class())
        };
        match self {
            Selector::Id(id) => {
                !n.resource_id.is_empty() && (n.resource_id == *id || n.short_id() == id)
            }
            Selector::Text { class, text } => n.text == *text && class_ok(class),
            Selector::Desc { class, desc } => n.content_desc == *desc && class_ok(class),
            Selector::Class(c) => n.class == *c || n.short_class() == c,
            Selector::Package(p) => n.package == *p,
            Selector::Ocr(t) => super::ocr::ocr_matches(&n.ocr_text, t),
            Selector::Path(_) => false,
            // Alone, a node can only be checked against the target; `find` adds the anchor.
            Selector::Near { target, .. } => target.matches_node(n),
        }
    }

    /// Every node that matches, in document order.
    pub fn find(&self, tree: &UiTree) -> Matches {
        let nodes = match self {
            Selector::Path(p) => {
                let s: Vec<String> = p.iter().map(u32::to_string).collect();
                tree.node_by_path(&s.join(".")).into_iter().collect()
            }
            Selector::Near { anchor, target } => near(tree, anchor, target),
            Selector::Ocr(t) => super::ocr::find(tree, t),
            _ => (0..tree.nodes.len())
                .filter(|&i| self.matches_node(&tree.nodes[i]))
                .collect(),
        };
        Matches { nodes }
    }

    /// Index selectors break when a list is reordered; everything else is stable.
    pub fn is_index_based(&self) -> bool {
        match self {
            Selector::Path(_) => true,
            Selector::Near { anchor, .. } => anchor.is_index_based(),
            _ => false,
        }
    }
}

/// For each anchor node, the targets inside it or else inside its nearest ancestor that
/// holds any; the union, in document order.
fn near(tree: &UiTree, anchor: &Selector, target: &Selector) -> Vec<usize> {
    let mut out = Vec::new();
    for a in anchor.find(tree).nodes {
        let hits = std::iter::once(a)
            .chain(tree.ancestors(a))
            .map(|c| {
                tree.subtree(c)
                    .filter(|&i| target.matches_node(&tree.nodes[i]))
                    .collect::<Vec<_>>()
            })
            .find(|h| !h.is_empty())
            .unwrap_or_default();
        out.extend(hits);
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Id(id) => write!(f, "#{id}"),
            Selector::Text { class, text } => {
                write!(
                    f,
                    "{}:text({})",
                    class.as_deref().unwrap_or(""),
                    quoted(text)
                )
            }
            Selector::Desc { class, desc } => {
                write!(
                    f,
                    "{}:desc({})",
                    class.as_deref().unwrap_or(""),
                    quoted(desc)
                )
            }
            Selector::Class(c) => write!(f, "{c}"),
            Selector::Package(p) => write!(f, ":package({})", quoted(p)),
            Selector::Ocr(t) => write!(f, ":ocr({})", quoted(t)),
            Selector::Path(p) => {
                let s: Vec<String> = p.iter().map(u32::to_string).collect();
                write!(f, "[{}]", s.join("."))
            }
            Selector::Near { anchor, target } => write!(f, "{anchor} >> {target}"),
        }
    }
}

/// The result of matching: every matching node, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matches {
    pub nodes: Vec<usize>,
}

impl Matches {
    pub fn is_unique(&self) -> bool {
        self.nodes.len() == 1
    }
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Counts of ids, texts and descs over a tree, so that recommending selectors for every
/// element costs one pass instead of one pass per element.
pub struct SelectorIndex<'t> {
    tree: &'t UiTree,
    ids: HashMap<&'t str, u32>,
    texts: HashMap<&'t str, u32>,
    descs: HashMap<&'t str, u32>,
    class_texts: HashMap<(&'t str, &'t str), u32>,
    class_descs: HashMap<(&'t str, &'t str), u32>,
}

impl<'t> SelectorIndex<'t> {
    pub fn new(tree: &'t UiTree) -> Self {
        let mut ix = SelectorIndex {
            tree,
            ids: HashMap::new(),
            texts: HashMap::new(),
            descs: HashMap::new(),
            class_texts: HashMap::new(),
            class_descs: HashMap::new(),
        };
        for n in &tree.nodes {
            if !n.resource_id.is_empty() {
                *ix.ids.entry(n.resource_id.as_str()).or_default() += 1;
                let s = short_id(&n.resource_id);
                if s.len() != n.resource_id.len() {
                    *ix.ids.entry(s).or_default() += 1;
                }
            }
            let sc = short_class(&n.class);
            if !n.text.is_empty() {
                *ix.texts.entry(n.text.as_str()).or_default() += 1;
                *ix.class_texts.entry((sc, n.text.as_str())).or_default() += 1;
            }
            if !n.content_desc.is_empty() {
                *ix.descs.entry(n.content_desc.as_str()).or_default() += 1;
                *ix.class_descs
                    .entry((sc, n.content_desc.as_str()))
                    .or_default() += 1;
            }
        }
        ix
    }

    /// The recommended selector for `node` and alternatives, best first. Order of
    /// preference: id, unique text, desc, type+text, index path. When the primary is the
    /// index path the alternatives are never empty (they fall back to non-unique or
    /// descendant-label selectors, which a replay can disambiguate by position).
    pub fn recommend(&self, node: usize) -> (Selector, Vec<Selector>) {
        let n = &self.tree.nodes[node];
        let one = |m: &HashMap<&str, u32>, k: &str| m.get(k).copied() == Some(1);
        let mut unique: Vec<Selector> = Vec::new();
        let mut weak: Vec<Selector> = Vec::new();
        let secret = n.password || n.text == super::elements::REDACTED;
        if !n.resource_id.is_empty() {
            let s = n.short_id();
            // The short form matches both short and qualified ids, so it needs both counts.
            if one(&self.ids, s)
                && (s.len() == n.resource_id.len() || one(&self.ids, &n.resource_id))
            {
                unique.push(Selector::Id(s.to_string()));
            } else if s.len() != n.resource_id.len() && one(&self.ids, &n.resource_id) {
                unique.push(Selector::Id(n.resource_id.clone()));
            } else {
                weak.push(Selector::Id(s.to_string()));
            }
        }
        let sc = n.short_class();
        let text_sel = Selector::Text {
            class: None,
            text: n.text.clone(),
        };
        let desc_sel = Selector::Desc {
            class: None,
            desc: n.content_desc.clone(),
        };
        if !n.text.is_empty() && !secret {
            if one(&self.texts, &n.text) {
                unique.push(text_sel);
            } else {
                weak.push(text_sel);
            }
        }
        if !n.content_desc.is_empty() {
            if one(&self.descs, &n.content_desc) {
                unique.push(desc_sel);
            } else {
                weak.push(desc_sel);
            }
        }
        if !n.text.is_empty()
            && !secret
            && !one(&self.texts, &n.text)
            && self.class_texts.get(&(sc, n.text.as_str())).copied() == Some(1)
        {
            unique.push(Selector::Text {
                class: Some(sc.to_string()),
                text: n.text.clone(),
            });
        }
        if !n.content_desc.is_empty()
            && !one(&self.descs, &n.content_desc)
            && self
                .class_descs
                .get(&(sc, n.content_desc.as_str()))
                .copied()
                == Some(1)
        {
            unique.push(Selector::Desc {
                class: Some(sc.to_string()),
                desc: n.content_desc.clone(),
            });
        }
        let path = Selector::Path(n.path.split('.').filter_map(|p| p.parse().ok()).collect());
        if unique.is_empty() {
            let mut targets = weak.clone();
            if !sc.is_empty() {
                targets.push(Selector::Class(sc.to_string()));
            }
            let mut alts = self.anchored(node, &targets);
            alts.truncate(2);
            alts.extend(self.descendant_labels(node));
            alts.extend(weak);
            if alts.is_empty() && !sc.is_empty() {
                alts.push(Selector::Class(sc.to_string()));
            }
            return (path, alts);
        }
        let primary = unique.remove(0);
        unique.push(path);
        (primary, unique)
    }

    /// `anchor >> weak` for each of the node's weak (non-unique) selectors that names it
    /// alone, the anchor being the unique text or desc of a plain (not actionable) node in
    /// the smallest group around it: the row's label names the row's `#delete`. Empty
    /// when no group up to four levels up has such a label.
    fn anchored(&self, node: usize, weak: &[Selector]) -> Vec<Selector> {
        let tree = self.tree;
        let mut inner = tree.subtree(node);
        for group in tree.ancestors(node).take(4) {
            let own = inner.clone();
            inner = tree.subtree(group);
            let anchor = inner
                .clone()
                .filter(|i| !own.contains(i))
                .find_map(|i| self.label_of(i));
            let Some(anchor) = anchor else { continue };
            let out: Vec<Selector> = weak
                .iter()
                .map(|w| Selector::Near {
                    anchor: Box::new(anchor.clone()),
                    target: Box::new(w.clone()),
                })
                .filter(|s| s.find(tree).nodes == [node])
                .collect();
            if !out.is_empty() {
                return out;
            }
        }
        Vec::new()
    }

    /// The unique text (else desc) selector of a plain node, if it has one.
    fn label_of(&self, i: usize) -> Option<Selector> {
        let n = &self.tree.nodes[i];
        if n.is_actionable() || n.password || n.text == super::elements::REDACTED {
            return None;
        }
        if !n.text.is_empty() && self.texts.get(n.text.as_str()).copied() == Some(1) {
            return Some(Selector::Text {
                class: None,
                text: n.text.clone(),
            });
        }
        (!n.content_desc.is_empty() && self.descs.get(n.content_desc.as_str()).copied() == Some(1))
            .then(|| Selector::Desc {
                class: None,
                desc: n.content_desc.clone(),
            })
    }

    /// Unique text/desc selectors of plain descendants: tapping them hits the element.
    fn descendant_labels(&self, node: usize) -> Vec<Selector> {
        let mut out = Vec::new();
        for d in self.tree.subtree(node).skip(1) {
            let n = &self.tree.nodes[d];
            if n.is_actionable() || n.password {
                continue;
            }
            if !n.text.is_empty() && self.texts.get(n.text.as_str()).copied() == Some(1) {
                out.push(Selector::Text {
                    class: None,
                    text: n.text.clone(),
                });
            } else if !n.content_desc.is_empty()
                && self.descs.get(n.content_desc.as_str()).copied() == Some(1)
            {
                out.push(Selector::Desc {
                    class: None,
                    desc: n.content_desc.clone(),
                });
            }
            if out.len() >= 2 {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(s: &str) -> usize {
        Selector::parse(s).unwrap_err().column
    }

    #[test]
    fn parses_every_form() {
        let cases: &[(&str, Selector)] = &[
            ("#btn_send", Selector::Id("btn_send".into())),
            ("  #com.a:id/x ", Selector::Id("com.a:id/x".into())),
            (
                ":text(\"Send \\\"now\\\"\")",
                Selector::Text {
                    class: None,
                    text: "Send \"now\"".into(),
                },
            ),
            (
                ":desc(\"Back\")",
                Selector::Desc {
                    class: None,
                    desc: "Back".into(),
                },
            ),
            (
                "Button:text(\"OK\")",
                Selector::Text {
                    class: Some("Button".into()),
                    text: "OK".into(),
                },
            ),
            (
                "android.widget.ImageButton:desc(\"搜索\")",
                Selector::Desc {
                    class: Some("android.widget.ImageButton".into()),
                    desc: "搜索".into(),
                },
            ),
            ("[0.1.2]", Selector::Path(vec![0, 1, 2])),
            ("EditText", Selector::Class("EditText".into())),
            (":package(\"com.app\")", Selector::Package("com.app".into())),
        ];
        for (s, want) in cases {
            let got = Selector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(&got, want, "{s}");
            // Display is canonical and re-parses to the same selector.
            assert_eq!(Selector::parse(&got.to_string()).unwrap(), got);
        }
    }

    #[test]
    fn an_anchored_selector_parses_and_prints_canonically() {
        let s = Selector::parse("  :text(\"6:00 AM\")  >>   #delete ").unwrap();
        assert_eq!(s.to_string(), ":text(\"6:00 AM\") >> #delete");
        assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
        assert!(!s.is_index_based());
        assert!(
            Selector::parse("[0.1] >> #delete")
                .unwrap()
                .is_index_based()
        );
        assert_eq!(
            col(":text(\"a\") >> [0.1]"),
            15,
            "a path cannot be the target"
        );
        assert_eq!(col(":text(\"a\") >>"), 14, "a target is needed");
        assert_eq!(col(":text(\"a\") > #x"), 12);
    }

    /// Two alarm rows, each a label and a `#delete` button; `order` lists the times top down.
    fn alarms(order: &[&str]) -> UiTree {
        let rows: String = order
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let top = 300 + i * 200;
                format!(
                    r#"<node index="{i}" text="" resource-id="app:id/row" class="android.widget.LinearLayout" package="app" content-desc="" clickable="false" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{t}" resource-id="app:id/time" class="android.widget.TextView" package="app" content-desc="" clickable="false" enabled="true" bounds="[0,{top}][800,{b}]"/><node index="1" text="" resource-id="app:id/delete" class="android.widget.ImageButton" package="app" content-desc="Delete alarm" clickable="true" enabled="true" bounds="[800,{top}][1080,{b}]"/></node>"#,
                    b = top + 200
                )
            })
            .collect();
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{rows}</node></hierarchy>"#
        );
        crate::screen::parse(&xml).unwrap()
    }

    fn delete_of(tree: &UiTree, time: &str) -> usize {
        let label = Selector::parse(&format!(":text(\"{time}\")"))
            .unwrap()
            .find(tree)
            .nodes[0];
        tree.nodes[tree.nodes[label].parent.unwrap()].children[1]
    }

    #[test]
    fn a_shared_id_is_recorded_with_its_rows_label_and_finds_that_row_after_a_reorder() {
        let tree = alarms(&["6:00 AM", "7:30 AM"]);
        let target = delete_of(&tree, "7:30 AM");
        let (primary, alts) = SelectorIndex::new(&tree).recommend(target);
        assert!(primary.is_index_based(), "no unique selector of its own");
        let anchored = alts
            .iter()
            .find(|a| matches!(a, Selector::Near { .. }))
            .unwrap_or_else(|| panic!("an anchored alternative: {alts:?}"));
        assert_eq!(anchored.to_string(), ":text(\"7:30 AM\") >> #delete");
        assert_eq!(alts[0], *anchored, "tried before the weak ones");
        // The list is reordered: the path now names the 7:30 row's neighbour, the anchored
        // selector still names the 7:30 delete button, and only it.
        let moved = alarms(&["7:30 AM", "6:00 AM"]);
        assert_ne!(primary.find(&moved).nodes, [delete_of(&moved, "7:30 AM")]);
        assert_eq!(anchored.find(&moved).nodes, [delete_of(&moved, "7:30 AM")]);
    }

    #[test]
    fn errors_point_at_the_column() {
        assert_eq!(col(""), 1);
        assert_eq!(col("#"), 2);
        assert_eq!(col(":txt(\"a\")"), 2);
        assert_eq!(col(":text(\"abc"), 7);
        assert_eq!(col(":text(\"a\"x"), 10);
        assert_eq!(col("[0.a]"), 4);
        assert_eq!(col("[0.1"), 5);
        assert_eq!(col("  ?x"), 3);
        assert_eq!(col("Button:text(\"a\") extra"), 18);
        assert_eq!(col(":text(\"a\\n\")"), 10);
        let e = Selector::parse(":text(\"abc").unwrap_err();
        assert_eq!(e.code(), "invalid_selector");
        assert!(e.to_string().contains("column 7"));
    }

    /// The hint repeats the selector, and its caret stands under the character at fault.
    #[test]
    fn the_hint_caret_points_at_the_offending_character() {
        for (input, at) in [
            (":text(\"abc", '"'),
            (":txt(\"a\")", 't'),
            ("Button:text(\"a\")x", 'x'),
            ("#btn send", 's'),
            ("[0.a]", 'a'),
            ("  ?x", '?'),
            (":text(\"a\\n\")", 'n'),
        ] {
            let e = Selector::parse(input).unwrap_err();
            let hint = e.hint();
            let lines: Vec<&str> = hint.lines().collect();
            assert_eq!(lines[0], input, "{hint}");
            let caret = lines[1].find('^').expect("a caret line");
            assert_eq!(caret + 1, e.column, "{hint}");
            assert_eq!(input.chars().nth(caret), Some(at), "{input}: {hint}");
            assert!(lines[1].ends_with(&e.message), "{hint}");
        }
    }
}
