//! Shared pieces of the vision formats: finding tagged sections in free text, scaling
//! integer model coordinates into `NormPoint`s with range checks, and a small reader
//! for the Python-call syntax that UI-TARS (`click(point='…')`) and AutoGLM
//! (`do(action="Tap", element=[x,y])`) emit. No crate parses that dialect, and the
//! reader must report offsets, so it is written here (about a hundred lines).

use serde_json::{Map, Value, json};

use crate::agent::parse_error::ParseError;

/// A tagged section: its text, the byte offset where that text starts, and whether the
/// closing tag was found (a reply cut by max_tokens has none).
pub struct Section<'a> {
    pub text: &'a str,
    pub offset: usize,
    pub closed: bool,
}

/// The last `<open>…</close>` section (models sometimes restate the format first).
pub fn section<'a>(s: &'a str, open: &str, close: &str) -> Option<Section<'a>> {
    let start = s.rfind(open)? + open.len();
    Some(match s[start..].find(close) {
        Some(end) => Section {
            text: &s[start..start + end],
            offset: start,
            closed: true,
        },
        None => Section {
            text: &s[start..],
            offset: start,
            closed: false,
        },
    })
}

/// Thinking inside `<open>…</close>`, trimmed; empty when absent.
pub fn thinking(s: &str, open: &str, close: &str) -> String {
    let Some(start) = s.find(open).map(|i| i + open.len()) else {
        return String::new();
    };
    let end = s[start..].find(close).map_or(s.len(), |e| start + e);
    s[start..end].trim().to_string()
}

/// Parses JSON inside a section, tolerating a ```json fence and reporting errors at
/// their offset in the whole reply.
pub fn json_in(sec: &Section<'_>) -> Result<Value, ParseError> {
    let raw = sec.text;
    let lead = raw.len() - raw.trim_start().len();
    let mut body = raw.trim();
    let mut base = sec.offset + lead;
    if let Some(rest) = body
        .strip_prefix("```json")
        .or_else(|| body.strip_prefix("```"))
    {
        base += body.len() - rest.len();
        body = rest.trim_end().trim_end_matches("```");
    }
    serde_json::from_str(body).map_err(|e| ParseError::json(&e, body, base))
}

/// An integer coordinate space `0..=max` (e.g. 0–999) divided by `divisor`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub max_x: f64,
    pub max_y: f64,
    pub divisor_x: f64,
    pub divisor_y: f64,
    pub range: &'static str,
}

impl Scale {
    pub const fn thousand(divisor: f64, range: &'static str) -> Self {
        Self {
            max_x: 999.0,
            max_y: 999.0,
            divisor_x: divisor,
            divisor_y: divisor,
            range,
        }
    }

    /// Reads `[x, y]`, or a box `[x1, y1, x2, y2]` (its centre), into normalized `[x, y]`.
    pub fn point(&self, action: &str, nums: &[f64]) -> Result<Value, ParseError> {
        let (x, y) = match nums {
            [x, y] => (*x, *y),
            [x1, y1, x2, y2] => ((x1 + x2) / 2.0, (y1 + y2) / 2.0),
            _ => {
                return Err(ParseError::InvalidField {
                    action: action.into(),
                    field: "coordinate".into(),
                    reason: format!(
                        "expected two numbers [x, y] in {}, got {} numbers",
                        self.range,
                        nums.len()
                    ),
                });
            }
        };
        if !(x.is_finite() && y.is_finite())
            || x < 0.0
            || y < 0.0
            || x > self.max_x
            || y > self.max_y
        {
            return Err(ParseError::OutOfRange {
                action: action.into(),
                given: format!("[{x}, {y}]"),
                range: self.range,
            });
        }
        Ok(json!([
            (x / self.divisor_x).min(1.0),
            (y / self.divisor_y).min(1.0)
        ]))
    }

    pub fn point_value(&self, action: &str, field: &str, v: &Value) -> Result<Value, ParseError> {
        let nums: Option<Vec<f64>> = match v {
            Value::Array(a) => a.iter().map(Value::as_f64).collect(),
            Value::String(s) => Some(numbers_in(s)),
            _ => None,
        };
        match nums {
            Some(n) => self.point(action, &n),
            None => Err(ParseError::InvalidField {
                action: action.into(),
                field: field.into(),
                reason: format!("expected [x, y] in {}, got {v}", self.range),
            }),
        }
    }
}

/// Every number in a string: `<point>120 45</point>` → [120, 45], `(1,2)` → [1, 2].
pub fn numbers_in(s: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() || c == '.' || (c == '-' && cur.is_empty()) {
            cur.push(c);
        } else if !cur.is_empty() {
            if let Ok(n) = cur.parse() {
                out.push(n);
            }
            cur.clear();
        }
    }
    out
}

/// One `name(key=value, …)` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Map<String, Value>,
    /// Offset of the call's name in the reply.
    pub offset: usize,
}

/// Reads `name(k='v', k2=[1,2], k3="x")` starting at byte `at` of `s`. Values: quoted
/// strings (with `\'`, `\"`, `\n` escapes), numbers, `[…]` lists of numbers, True/False/None.
pub fn call_at(s: &str, at: usize) -> Result<Call, ParseError> {
    let mut r = Reader { s, i: at };
    r.ws();
    let name_at = r.i;
    let name = r.ident();
    if name.is_empty() {
        return Err(r.err("expected an action name such as click(…)"));
    }
    r.ws();
    if !r.eat('(') {
        return Err(r.err(&format!("expected `(` after `{name}`")));
    }
    let mut args = Map::new();
    loop {
        r.ws();
        if r.eat(')') {
            break;
        }
        let key = r.ident();
        if key.is_empty() {
            return Err(r.err("expected an argument name or `)`"));
        }
        r.ws();
        if !r.eat('=') {
            return Err(r.err(&format!("expected `=` after argument `{key}`")));
        }
        r.ws();
        let v = r.value()?;
        args.insert(key, v);
        r.ws();
        if r.eat(',') {
            continue;
        }
        if r.eat(')') {
            break;
        }
        return Err(r.err("expected `,` or `)` (is a quote or bracket missing?)"));
    }
    Ok(Call {
        name,
        args,
        offset: name_at,
    })
}

struct Reader<'a> {
    s: &'a str,
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        Some(c)
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += c.len_utf8();
            true
        } else {
            false
        }
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }
    fn ident(&mut self) -> String {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.bump();
        }
        self.s[start..self.i].to_string()
    }
    fn err(&self, m: &str) -> ParseError {
        let near: String = self.s[self.i..].chars().take(20).collect();
        ParseError::Syntax {
            offset: self.i,
            message: if near.is_empty() {
                format!("{m}; the reply ends here (truncated?)")
            } else {
                format!("{m}, found {near:?}")
            },
        }
    }
    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(q @ ('\'' | '"')) => {
                self.bump();
                let mut out = String::new();
                loop {
                    match self.bump() {
                        None => return Err(self.err(&format!("unterminated string (missing {q})"))),
                        Some('\\') => match self.bump() {
                            Some('n') => out.push('\n'),
                            Some('t') => out.push('\t'),
                            Some(c) => out.push(c),
                            None => return Err(self.err("unterminated escape")),
                        },
                        Some(c) if c == q => break,
                        Some(c) => out.push(c),
                    }
                }
                Ok(Value::String(out))
            }
            Some('[' | '(') => {
                let close = if self.bump() == Some('[') { ']' } else { ')' };
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.eat(close) {
                        break;
                    }
                    items.push(self.value()?);
                    self.ws();
                    if self.eat(',') {
                        continue;
                    }
                    if self.eat(close) {
                        break;
                    }
                    return Err(self.err(&format!("expected `,` or `{close}` in a list")));
                }
                Ok(Value::Array(items))
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '.' => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '.' | 'e' | 'E' | '+'))
                {
                    self.bump();
                }
                let t = &self.s[start..self.i];
                t.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| ParseError::Syntax {
                        offset: start,
                        message: format!("`{t}` is not a number"),
                    })
            }
            _ => {
                let start = self.i;
                match self.ident().as_str() {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    _ => {
                        self.i = start;
                        Err(self.err("expected a quoted string, a number or [x, y]"))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_python_calls_with_offsets() {
        let c = call_at(
            "x click(point='<point>1 2</point>', n=[3, 4.5], ok=True)",
            2,
        )
        .unwrap();
        assert_eq!(c.name, "click");
        assert_eq!(c.args["point"], "<point>1 2</point>");
        assert_eq!(c.args["n"], json!([3.0, 4.5]));
        assert_eq!(c.args["ok"], true);
        let e = call_at("type(content='abc", 0).unwrap_err();
        assert!(e.to_string().contains("unterminated string"), "{e}");
        let e = call_at("do(action=\"Tap\" element=[1,2])", 0).unwrap_err();
        let ParseError::Syntax { offset, .. } = e else {
            panic!()
        };
        assert_eq!(offset, 16);
    }

    #[test]
    fn numbers_and_scales() {
        assert_eq!(numbers_in("<point>120 45</point>"), vec![120.0, 45.0]);
        assert_eq!(
            numbers_in("<|box_start|>(10,20)<|box_end|>"),
            vec![10.0, 20.0]
        );
        let s = Scale::thousand(999.0, "0–999");
        assert_eq!(s.point("click", &[999.0, 0.0]).unwrap(), json!([1.0, 0.0]));
        assert!(matches!(
            s.point("click", &[1000.0, 5.0]),
            Err(ParseError::OutOfRange { .. })
        ));
        assert_eq!(
            s.point("click", &[0.0, 0.0, 100.0, 200.0]).unwrap()[1],
            json!(100.0 / 999.0)
        );
    }
}
