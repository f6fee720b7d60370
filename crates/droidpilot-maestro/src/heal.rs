//! Writing a healed selector back into a flow file, as Maestro YAML Maestro accepts.
//!
//! Maestro has no list of fallback selectors, but its `text` and `id` are regular
//! expressions matched against the whole value, so an alternation is a fallback Maestro
//! itself runs: `text: 'Save|Submit'` finds the element under its new label and still
//! under the old one (a phone with the old app). So when the new selector uses the same
//! field as the old one, the value becomes `new|old`, the new one a literal pattern, the
//! old one as written. When the fields differ (the old `text` is gone and only an `id`
//! names the element), the field is replaced, since Maestro ANDs a selector's fields. In
//! both cases a comment line above the command says what was healed and what the old
//! selector was, and everything else in the file (its comments, quoting, layout) is left
//! as written: the edit is textual, on the command's own lines, and the result is
//! parsed again to check that the command now holds the new selector.

use crate::ast::{Command, Selector};
use crate::parse_flow;

/// One command to heal: the line it starts on, its selector as written and the new one
/// (a single `text` or `id`).
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    pub line: usize,
    pub old: Selector,
    pub new: Selector,
    /// Why, for the comment (one line).
    pub note: String,
}

/// The file with every patch applied, or the lines of the commands that could not be
/// rewritten (their selector is not written as a `text` / `id` scalar this can find).
pub fn rewrite(text: &str, patches: &[Patch]) -> Result<String, Vec<usize>> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut failed = Vec::new();
    let mut sorted: Vec<&Patch> = patches.iter().collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.line));
    for p in sorted {
        if !patch(&mut lines, p) {
            failed.push(p.line);
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    if !failed.is_empty() {
        failed.sort_unstable();
        return Err(failed);
    }
    Ok(out)
}

/// The field a one-field selector uses, and its value.
fn field(s: &Selector) -> Option<(&'static str, &str)> {
    match (&s.text, &s.id) {
        (Some(t), _) => Some(("text", t)),
        (None, Some(i)) => Some(("id", i)),
        _ => None,
    }
}

/// Applies one patch to the lines; false when its selector was not found.
fn patch(lines: &mut Vec<String>, p: &Patch) -> bool {
    let Some(first) = lines.get(p.line.saturating_sub(1)).cloned() else {
        return false;
    };
    let indent = first.len() - first.trim_start().len();
    let end = (p.line..lines.len())
        .find(|&i| {
            let l = &lines[i];
            !l.trim().is_empty() && l.len() - l.trim_start().len() <= indent
        })
        .unwrap_or(lines.len());
    let (Some((old_key, old_value)), Some((new_key, new_value))) = (field(&p.old), field(&p.new))
    else {
        return false;
    };
    let before = lines.join("\n");
    for i in p.line - 1..end {
        // The short form (`- tapOn: Submit`) names the value after the command's key.
        let keys: &[&str] = if i == p.line - 1 {
            &[old_key, "*"]
        } else {
            &[old_key]
        };
        let Some((start, stop, short)) = find_value(&lines[i], keys, old_value) else {
            continue;
        };
        let replaced = if new_key == old_key {
            format!(
                "{}: {}",
                key_at(&lines[i], start, short, old_key),
                quote(&format!("{new_value}|{old_value}"))
            )
        } else if short {
            format!(
                "{}: {{{new_key}: {}}}",
                key_at(&lines[i], start, short, old_key),
                quote(new_value)
            )
        } else {
            format!("{new_key}: {}", quote(new_value))
        };
        let line = lines[i].clone();
        let key_start = key_start(&line, start);
        lines[i] = format!("{}{replaced}{}", &line[..key_start], &line[stop..]);
        let comment = format!(
            "{}# healed by droidpilot: {}; the old selector was {old_key}: {}",
            &first[..indent],
            p.note.replace('\n', " "),
            quote(old_value)
        );
        lines.insert(p.line - 1, comment);
        if check(
            lines,
            p,
            &new_key_value(new_key, old_key, new_value, old_value),
        ) {
            return true;
        }
        *lines = before.lines().map(str::to_string).collect();
        return false;
    }
    false
}

/// The key written before the value: the command's own for the short form.
fn key_at(line: &str, value_start: usize, short: bool, field: &str) -> String {
    if !short {
        return field.to_string();
    }
    let head = &line[..value_start];
    let head = head.trim_end().trim_end_matches(':');
    let from = head
        .rfind(|c: char| c.is_whitespace() || c == '-' || c == '{' || c == ',')
        .map_or(0, |i| i + 1);
    head[from..].to_string()
}

/// Where the key of the value at `value_start` begins.
fn key_start(line: &str, value_start: usize) -> usize {
    let head = line[..value_start].trim_end().trim_end_matches(':');
    head.rfind(|c: char| c.is_whitespace() || c == '-' || c == '{' || c == ',')
        .map_or(0, |i| i + 1)
}

/// The selector the healed command must hold.
fn new_key_value(new_key: &str, old_key: &str, new: &str, old: &str) -> Selector {
    let value = if new_key == old_key {
        format!("{new}|{old}")
    } else {
        new.to_string()
    };
    let mut s = Selector::default();
    match new_key {
        "text" => s.text = Some(value),
        _ => s.id = Some(value),
    }
    s
}

/// Whether the rewritten file parses and its command (one line lower, under the
/// comment) holds `want`'s field.
fn check(lines: &[String], p: &Patch, want: &Selector) -> bool {
    let Ok(flow) = parse_flow(&lines.join("\n")) else {
        return false;
    };
    let mut all = Vec::new();
    fn walk<'a>(l: &'a [Command], out: &mut Vec<&'a Command>) {
        for c in l {
            out.push(c);
            for ch in c.children() {
                walk(ch, out);
            }
        }
    }
    walk(&flow.header.on_flow_start, &mut all);
    walk(&flow.commands, &mut all);
    walk(&flow.header.on_flow_complete, &mut all);
    let Some(cmd) = all.iter().find(|c| c.line == p.line + 1) else {
        return false;
    };
    let has = |s: &Selector| {
        (want.text.is_none() || s.text == want.text) && (want.id.is_none() || s.id == want.id)
    };
    selectors(cmd).into_iter().any(has)
}

/// The selectors a command holds directly.
fn selectors(cmd: &Command) -> Vec<&Selector> {
    use crate::ast::{CommandKind as K, SwipeMotion, Target};
    match &cmd.kind {
        K::Tap(t) => match &t.target {
            Target::Element(s) => vec![s],
            Target::Point(_) => vec![],
        },
        K::Swipe(s) => match &s.motion {
            SwipeMotion::Element { from, .. } => vec![from],
            _ => vec![],
        },
        K::CopyTextFrom(s) | K::AssertVisible(s) | K::AssertNotVisible(s) => vec![s],
        K::ScrollUntilVisible(s) => vec![&s.element],
        _ => vec![],
    }
}

/// A YAML scalar for `v`: single-quoted (regex backslashes stay as they are), or
/// double-quoted when it holds a line break.
fn quote(v: &str) -> String {
    if v.contains('\n') {
        return serde_json::to_string(v).unwrap_or_default();
    }
    format!("'{}'", v.replace('\'', "''"))
}

/// The span of the scalar after one of `keys` (`*`: any key, the short form) on `line`
/// whose value is `want`, and whether it was the short form.
fn find_value(line: &str, keys: &[&str], want: &str) -> Option<(usize, usize, bool)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find(':') {
        let colon = i + off;
        i = colon + 1;
        let key = key_before(line, colon);
        let short = !keys.contains(&key.as_str());
        if short && !keys.contains(&"*") {
            continue;
        }
        let mut s = colon + 1;
        while s < bytes.len() && bytes[s] == b' ' {
            s += 1;
        }
        if s >= bytes.len() {
            continue;
        }
        if let Some((value, stop)) = scalar(line, s)
            && value == want
        {
            return Some((s, stop, short));
        }
    }
    None
}

/// The key ending at `colon`.
fn key_before(line: &str, colon: usize) -> String {
    let head = &line[..colon];
    let from = head
        .rfind(|c: char| c.is_whitespace() || c == '-' || c == '{' || c == ',')
        .map_or(0, |i| i + 1);
    head[from..].trim_matches(['"', '\'']).to_string()
}

/// The scalar starting at `s` and where it ends: quoted, or plain up to a comment,
/// a `,` or `}` of a flow mapping, or the line's end.
fn scalar(line: &str, s: usize) -> Option<(String, usize)> {
    let rest = &line[s..];
    if let Some(body) = rest.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = body.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '\'' {
                if chars.peek().map(|p| p.1) == Some('\'') {
                    out.push('\'');
                    chars.next();
                    continue;
                }
                return Some((out, s + 1 + i + 1));
            }
            out.push(c);
        }
        return None;
    }
    if rest.starts_with('"') {
        let mut escaped = false;
        for (i, c) in rest.char_indices().skip(1) {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                let v: String = serde_json::from_str(&rest[..=i]).ok()?;
                return Some((v, s + i + 1));
            }
        }
        return None;
    }
    if rest.starts_with(['{', '[', '|', '>']) {
        return None;
    }
    let stop = rest
        .find(" #")
        .into_iter()
        .chain(rest.find(','))
        .chain(rest.find('}'))
        .min()
        .unwrap_or(rest.len());
    Some((
        rest[..stop].trim_end().to_string(),
        s + rest[..stop].trim_end().len(),
    ))
}

#[cfg(test)]
#[path = "heal_tests.rs"]
mod tests;
