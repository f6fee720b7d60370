//! Element selectors: `"Text"` (a text regex), or a mapping of Maestro's selector
//! fields, relative selectors nested to any depth.

use super::fields::Fields;
use crate::ast::{Selector, Size, Trait};
use crate::error::ParseError;
use crate::yaml::{Node, Value};

/// The fields of a selector proper (what `below:` and friends take).
pub const SELECTOR_KEYS: &[&str] = &[
    "text",
    "id",
    "index",
    "enabled",
    "checked",
    "focused",
    "selected",
    "below",
    "above",
    "leftOf",
    "rightOf",
    "childOf",
    "containsChild",
    "containsDescendants",
    "width",
    "height",
    "tolerance",
    "traits",
    "css",
];

/// Keys Maestro's selector class accepts anywhere and, inside `element:`, `below:` and
/// the other nested places, ignores, as it does.
const IGNORED_INSIDE: &[&str] = &["optional", "label"];

/// A selector from `node`, whose mapping may also hold `extra` keys (the command's own,
/// read by the caller).
pub fn selector(node: &Node, cmd: &str, extra: &[&str]) -> Result<Selector, ParseError> {
    match &node.value {
        Value::Str(s) => Ok(Selector {
            line: node.line,
            text: Some(s.clone()),
            ..Selector::default()
        }),
        Value::Map(_) => {
            let mut allowed: Vec<&str> = SELECTOR_KEYS.iter().chain(extra).copied().collect();
            allowed.extend(IGNORED_INSIDE.iter().filter(|k| !extra.contains(k)));
            let f = Fields::new(cmd, node, &allowed)?;
            from_fields(&f, node.line)
        }
        _ => Err(ParseError::new(
            node.line,
            "invalid_command",
            format!("`{cmd}` needs an element, not {}", node.kind()),
            format!("Write `- {cmd}: \"Text\"` or `- {cmd}: {{id: \"button_id\"}}`."),
        )),
    }
}

/// Whether the selector names anything to match.
pub fn is_empty(s: &Selector) -> bool {
    *s == Selector {
        line: s.line,
        ..Selector::default()
    }
}

fn nested(f: &Fields, key: &str) -> Result<Option<Box<Selector>>, ParseError> {
    f.get(key)
        .map(|n| selector(n, key, &[]).map(Box::new))
        .transpose()
}

fn from_fields(f: &Fields, line: usize) -> Result<Selector, ParseError> {
    if f.has("css") {
        return Err(ParseError::new(
            f.line_of("css"),
            "not_on_android",
            "`css` selects elements of a web page in Maestro's browser driver; an Android screen has no CSS",
            "Select the element by `text` or `id`.",
        ));
    }
    let mut s = Selector {
        line,
        text: f.text("text")?,
        id: f.text("id")?,
        index: f.amount("index")?,
        enabled: f.bool("enabled")?,
        checked: f.bool("checked")?,
        focused: f.bool("focused")?,
        selected: f.bool("selected")?,
        below: nested(f, "below")?,
        above: nested(f, "above")?,
        left_of: nested(f, "leftOf")?,
        right_of: nested(f, "rightOf")?,
        child_of: nested(f, "childOf")?,
        contains_child: nested(f, "containsChild")?,
        ..Selector::default()
    };
    if let Some(d) = f.get("containsDescendants") {
        let items = d.seq().ok_or_else(|| {
            ParseError::new(
                d.line,
                "invalid_command",
                "`containsDescendants` takes a list of selectors",
                "Write `containsDescendants:` then `- text: …` lines.",
            )
        })?;
        s.contains_descendants = items
            .iter()
            .map(|n| selector(n, "containsDescendants", &[]))
            .collect::<Result<_, _>>()?;
    }
    let size = Size {
        width: int32(f, "width")?,
        height: int32(f, "height")?,
        tolerance: int32(f, "tolerance")?,
    };
    if size.width.is_some() || size.height.is_some() {
        s.size = Some(size);
    }
    if let Some(t) = f.text("traits")? {
        s.traits = t
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(|w| trait_of(w, f.line_of("traits")))
            .collect::<Result<_, _>>()?;
    }
    if let Some(crate::ast::Amount::Fixed(i)) = &s.index
        && *i < 0.0
    {
        return Err(ParseError::new(
            f.line_of("index"),
            "invalid_command",
            format!("`index` counts from 0, not {i}"),
            "Write `index: 0` for the first match.",
        ));
    }
    Ok(s)
}

fn int32(f: &Fields, key: &str) -> Result<Option<i32>, ParseError> {
    Ok(f.int(key)?
        .map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
}

fn trait_of(word: &str, line: usize) -> Result<Trait, ParseError> {
    match word.replace('-', "_").to_ascii_uppercase().as_str() {
        "TEXT" => Ok(Trait::Text),
        "SQUARE" => Ok(Trait::Square),
        "LONG_TEXT" => Ok(Trait::LongText),
        _ => Err(ParseError::new(
            line,
            "invalid_command",
            format!("`traits` has no trait `{word}`"),
            "Traits: text, square, long-text (space-separated).",
        )),
    }
}

/// A point `"x, y"` in pixels or `"x%, y%"`; `${…}` is kept for later.
pub fn point(s: &str, line: usize, key: &str) -> Result<crate::ast::Point, ParseError> {
    use crate::ast::Point;
    if s.contains("${") {
        return Ok(Point::Expr(s.to_string()));
    }
    let bad = || {
        ParseError::new(
            line,
            "invalid_command",
            format!("`{key}` is `x, y` in pixels or `x%, y%`, not `{s}`"),
            format!("Write e.g. `{key}: \"50%, 90%\"` or `{key}: \"100, 200\"`."),
        )
    };
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [x, y] = parts.as_slice() else {
        return Err(bad());
    };
    match (x.strip_suffix('%'), y.strip_suffix('%')) {
        (Some(px), Some(py)) => {
            let (px, py): (u32, u32) = (
                px.trim().parse().map_err(|_| bad())?,
                py.trim().parse().map_err(|_| bad())?,
            );
            if px > 100 || py > 100 {
                return Err(ParseError::new(
                    line,
                    "invalid_command",
                    format!("`{key}` percentages are 0 to 100, not `{s}`"),
                    "Write e.g. `50%, 90%`.",
                ));
            }
            Ok(Point::Percent(px, py))
        }
        (None, None) => Ok(Point::Pixels(
            x.parse().map_err(|_| bad())?,
            y.parse().map_err(|_| bad())?,
        )),
        _ => Err(bad()),
    }
}
