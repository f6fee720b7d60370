//! NUL on PostgreSQL. Its `text` cannot hold the character U+0000 and its `jsonb` refuses
//! the escape `\u0000`, while any valid JSON string (a model's reply, an instruction, a
//! metadata value) may contain it, and SQLite stores it as it is. The PostgreSQL store
//! writes every free-text column and every JSON string (values and keys) through `enc`,
//! and reads them back through `dec`, so both backends give back exactly what was
//! written.
//!
//! The encoding: U+FFFF (a Unicode noncharacter, never sent in interchange) is the escape.
//! NUL is written `U+FFFF '0'`, U+FFFF itself `U+FFFF U+FFFF`; nothing else changes, so
//! a string with neither character (nearly all of them) is stored byte for byte and
//! compares, sorts and indexes as before. Hand-written: no crate does this, and it is a
//! dozen lines.

use std::borrow::Cow;

use serde_json::Value;

/// The escape character.
const ESC: char = '\u{FFFF}';

/// `s` as PostgreSQL can store it.
pub fn enc(s: &str) -> Cow<'_, str> {
    if !s.contains(['\0', ESC]) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\0' => {
                out.push(ESC);
                out.push('0');
            }
            ESC => {
                out.push(ESC);
                out.push(ESC);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// What `enc` stored, as it was written.
pub fn dec(s: String) -> String {
    if !s.contains(ESC) {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (c, c == ESC) {
            (_, true) => match chars.next() {
                Some('0') => out.push('\0'),
                Some(next) => out.push(next),
                None => out.push(ESC),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

pub fn enc_opt(s: Option<&str>) -> Option<Cow<'_, str>> {
    s.map(enc)
}

/// JSON text with every string (and key) encoded, for a `jsonb` column.
pub fn enc_json(json: String) -> String {
    // serde_json writes NUL as `\u0000`; a false alarm (an escaped backslash before
    // `u0000`) only costs the slow path.
    if !json.contains("\\u0000") && !json.contains(ESC) {
        return json;
    }
    map_json(&json, |s| enc(s).into_owned()).unwrap_or(json)
}

/// JSON text read back from a `jsonb` column, every string decoded.
pub fn dec_json(json: String) -> String {
    if !json.contains(ESC) {
        return json;
    }
    map_json(&json, |s| dec(s.to_string())).unwrap_or(json)
}

pub fn enc_json_opt(json: Option<String>) -> Option<String> {
    json.map(enc_json)
}

/// `json` with `f` applied to every string and key; None when it is not JSON (then the
/// database's own error says so).
fn map_json(json: &str, f: impl Fn(&str) -> String + Copy) -> Option<String> {
    let mut v: Value = serde_json::from_str(json).ok()?;
    walk(&mut v, f);
    Some(v.to_string())
}

fn walk(v: &mut Value, f: impl Fn(&str) -> String + Copy) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(a) => a.iter_mut().for_each(|v| walk(v, f)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut v) in old {
                walk(&mut v, f);
                m.insert(f(&k), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_plain_text_is_untouched() {
        for s in [
            "",
            "plain",
            "a\0b",
            "\0",
            "\u{FFFF}",
            "\u{FFFF}0",
            "x\u{FFFF}\0\u{FFFF}\u{FFFF}0\0",
        ] {
            let e = enc(s);
            assert!(!e.contains('\0'), "{s:?} → {e:?}");
            assert_eq!(dec(e.into_owned()), s);
        }
        assert!(matches!(enc("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_strings_and_keys_round_trip() {
        let v = serde_json::json!({"k\u{0}": ["a\u{0}b", {"\u{FFFF}": "\\u0000"}], "n": 1.5});
        let e = enc_json(v.to_string());
        let stored: Value = serde_json::from_str(&e).unwrap();
        assert!(!format!("{stored:?}").contains("\\0"), "no NUL left: {e}");
        let back: Value = serde_json::from_str(&dec_json(e)).unwrap();
        assert_eq!(back, v);
    }
}
