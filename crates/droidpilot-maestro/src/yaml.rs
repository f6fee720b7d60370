//! YAML text → a small node tree where every node keeps the line it starts on.
//!
//! `yaml-rust2`'s event parser is used because each event carries a `Marker` with its
//! line, which errors must name; the serde YAML crates do not expose a line per node.
//! Plain `null`, `~` and empty values are told apart from the quoted string `"null"`
//! (an `env` input with no default must stay unset, never become the text "null").
//! Anchors and aliases are resolved here, as Maestro's YAML reader (SnakeYAML) does.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::ParseError;

/// One YAML value and the line (1-based) it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A plain `null`, `~` or nothing.
    Null,
    /// Any other scalar, as written (numbers and booleans are text until a field says
    /// what it takes, as Jackson coerces them).
    Str(String),
    Seq(Vec<Node>),
    /// Keys in the order written, each with its line.
    Map(Vec<(String, usize, Node)>),
}

impl Node {
    pub fn str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        self.value == Value::Null
    }
    pub fn map(&self) -> Option<&[(String, usize, Node)]> {
        match &self.value {
            Value::Map(kv) => Some(kv),
            _ => None,
        }
    }
    pub fn seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }
    /// What the node is, for messages: "a list", "a mapping", "text", "nothing".
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "nothing",
            Value::Str(_) => "text",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

struct Frame {
    node: Node,
    anchor: usize,
    pending_key: Option<(String, usize)>,
}

#[derive(Default)]
struct Builder {
    docs: Vec<Node>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    error: Option<ParseError>,
}

impl Builder {
    fn fail(&mut self, line: usize, message: &str, hint: &str) {
        self.error
            .get_or_insert_with(|| ParseError::new(line, "invalid_yaml", message, hint));
    }

    fn push(&mut self, node: Node) {
        let Some(top) = self.stack.last_mut() else {
            self.docs.push(node);
            return;
        };
        match &mut top.node.value {
            Value::Seq(items) => items.push(node),
            Value::Map(kv) => match top.pending_key.take() {
                Some((k, l)) => kv.push((k, l, node)),
                None => match node.value {
                    Value::Str(k) => top.pending_key = Some((k, node.line)),
                    _ => {
                        let line = node.line;
                        self.fail(
                            line,
                            "a mapping key must be plain text",
                            "Write `key: value`.",
                        );
                    }
                },
            },
            _ => {}
        }
    }

    fn open(&mut self, value: Value, anchor: usize, line: usize) {
        self.stack.push(Frame {
            node: Node { line, value },
            anchor,
            pending_key: None,
        });
    }

    fn close(&mut self) {
        if let Some(frame) = self.stack.pop() {
            if frame.anchor > 0 {
                self.anchors.insert(frame.anchor, frame.node.clone());
            }
            self.push(frame.node);
        }
    }
}

fn scalar(s: String, style: TScalarStyle) -> Value {
    let plain = style == TScalarStyle::Plain;
    if plain && matches!(s.as_str(), "" | "~" | "null" | "Null" | "NULL") {
        Value::Null
    } else {
        Value::Str(s)
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line().max(1);
        match ev {
            Event::Scalar(s, style, anchor, _) => {
                let node = Node {
                    line,
                    value: scalar(s, style),
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                self.push(node);
            }
            Event::SequenceStart(anchor, _) => self.open(Value::Seq(Vec::new()), anchor, line),
            Event::MappingStart(anchor, _) => self.open(Value::Map(Vec::new()), anchor, line),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(mut node) => {
                    node.line = line;
                    self.push(node);
                }
                None => self.fail(
                    line,
                    "this alias names no anchor defined before it",
                    "Define `&name` before using `*name`.",
                ),
            },
            _ => {}
        }
    }
}

/// Every document of `text`, in order (a flow is a header document, `---`, then the
/// command list).
pub fn load(text: &str) -> Result<Vec<Node>, ParseError> {
    let mut b = Builder::default();
    Parser::new_from_str(text).load(&mut b, true).map_err(|e| {
        ParseError::new(
            e.marker().line().max(1),
            "invalid_yaml",
            e.to_string(),
            "Check the YAML syntax (indentation, quotes, a `:` after each key).",
        )
    })?;
    match b.error {
        Some(e) => Err(e),
        None => Ok(b.docs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_nulls_and_quoted_null_are_kept_apart() {
        let docs = load("appId: a.b\nenv:\n  A: null\n  B: \"null\"\n  C:\n---\n- back\n").unwrap();
        assert_eq!(docs.len(), 2);
        let env = &docs[0].map().unwrap()[1].2;
        let kv = env.map().unwrap();
        assert!(kv[0].2.is_null());
        assert_eq!(kv[1].2.str(), Some("null"));
        assert!(kv[2].2.is_null());
        assert_eq!((kv[0].1, kv[1].1), (3, 4));
        assert_eq!(docs[1].seq().unwrap()[0].line, 7);
    }

    #[test]
    fn a_quoted_string_continued_on_the_next_line_is_one_value() {
        let docs = load("- tapOn: \"Create\n    contact\"\n- back\n").unwrap();
        let first = &docs[0].seq().unwrap()[0];
        assert_eq!(first.map().unwrap()[0].2.str(), Some("Create contact"));
        assert_eq!(docs[0].seq().unwrap()[1].line, 3);
    }

    #[test]
    fn aliases_resolve_to_their_anchor() {
        let docs = load("- tapOn: &b {id: ok}\n- assertVisible: *b\n").unwrap();
        let items = docs[0].seq().unwrap();
        assert_eq!(items[0].map().unwrap()[0].2, {
            let mut n = items[1].map().unwrap()[0].2.clone();
            n.line = 1;
            n
        });
    }
}
