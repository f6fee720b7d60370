//! Secrets redaction: text that must never reach a model, a log or the store.
//!
//! Password fields are redacted at parse time (see `parse.rs`); this module adds
//! deployment-specific patterns (card numbers, a test account's password, phone numbers).
//! Patterns are a tiny shape language rather than regular expressions so that no new
//! dependency is needed and a pattern cannot backtrack catastrophically:
//!
//! - `9` any decimal digit, `A` any letter (any script), `*` one or more non-space
//!   characters (at most 3 per pattern);
//! - `\x` the character `x` literally; every other character matches itself.
//!
//! `9999 9999 9999 9999` hides card numbers, `*@*.*` e-mail addresses. A known secret is
//! added with `RedactionPattern::literal`, which escapes everything.

use serde::{Deserialize, Serialize};

pub use super::elements::REDACTED;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Digit,
    Letter,
    Run,
    Lit(char),
}

/// One compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RedactionPattern {
    source: String,
    #[serde(skip)]
    toks: Vec<Tok>,
}

/// A pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid redaction pattern `{pattern}`: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: &'static str,
}

impl RedactionPattern {
    /// Compiles a shape pattern (see the module docs).
    pub fn shape(pattern: &str) -> Result<Self, PatternError> {
        let err = |reason| PatternError {
            pattern: pattern.to_string(),
            reason,
        };
        let mut toks = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            let t = match c {
                '9' => Tok::Digit,
                'A' => Tok::Letter,
                '*' if toks.last() == Some(&Tok::Run) => continue,
                '*' => Tok::Run,
                '\\' => Tok::Lit(chars.next().ok_or_else(|| err("ends with a lone `\\`"))?),
                c => Tok::Lit(c),
            };
            toks.push(t);
        }
        if toks.is_empty() {
            return Err(err("it is empty"));
        }
        if toks.iter().filter(|t| **t == Tok::Run).count() > 3 {
            return Err(err(
                "more than 3 `*` make matching slow; split it into several patterns",
            ));
        }
        if toks.iter().all(|t| *t == Tok::Run) {
            return Err(err("`*` alone would redact every word"));
        }
        Ok(Self {
            source: pattern.to_string(),
            toks,
        })
    }

    /// A pattern matching exactly `secret`.
    pub fn literal(secret: &str) -> Result<Self, PatternError> {
        let mut s = String::with_capacity(secret.len() * 2);
        for c in secret.chars() {
            if matches!(c, '9' | 'A' | '*' | '\\') {
                s.push('\\');
            }
            s.push(c);
        }
        Self::shape(&s)
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The end (char index) of a match starting at `start`, longest first.
    fn match_at(&self, chars: &[char], start: usize) -> Option<usize> {
        fn go(toks: &[Tok], chars: &[char], i: usize) -> Option<usize> {
            let Some((t, rest)) = toks.split_first() else {
                return Some(i);
            };
            match t {
                Tok::Run => {
                    let mut end = i;
                    while end < chars.len() && !chars[end].is_whitespace() {
                        end += 1;
                    }
                    (i + 1..=end).rev().find_map(|j| go(rest, chars, j))
                }
                _ => {
                    let c = *chars.get(i)?;
                    let ok = match t {
                        Tok::Digit => c.is_ascii_digit(),
                        Tok::Letter => c.is_alphabetic(),
                        Tok::Lit(l) => c == *l,
                        Tok::Run => false,
                    };
                    if ok { go(rest, chars, i + 1) } else { None }
                }
            }
        }
        go(&self.toks, chars, start)
    }
}

impl TryFrom<String> for RedactionPattern {
    type Error = PatternError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::shape(&s)
    }
}

impl From<RedactionPattern> for String {
    fn from(p: RedactionPattern) -> Self {
        p.source
    }
}

/// Replaces every match of any pattern with `••••`. Returns `None` when nothing matched,
/// so callers can skip an allocation on the common path.
pub fn redact(text: &str, patterns: &[RedactionPattern]) -> Option<String> {
    if patterns.is_empty() || text.is_empty() {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let end = patterns.iter().filter_map(|p| p.match_at(&chars, i)).max();
        match end {
            Some(e) if e > i => {
                out.push_str(REDACTED);
                changed = true;
                i = e;
            }
            _ => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

/// A raw dump with the text and content-desc of every `password="true"` node replaced by
/// `••••`, everything else byte for byte: for endpoints that hand the XML itself out.
/// A document without password nodes is borrowed. One with password nodes that cannot be
/// parsed is `None`: what cannot be located cannot be masked, so the caller refuses it.
pub fn mask_password_xml(xml: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    if !xml.contains("password=\"true\"") {
        return Some(Cow::Borrowed(xml));
    }
    let doc_text = super::parse::clean(xml).ok()?;
    let offset = doc_text.as_ptr() as usize - xml.as_ptr() as usize;
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(doc_text, opts).ok()?;
    let mut ranges: Vec<std::ops::Range<usize>> = doc
        .descendants()
        .filter(|n| n.attribute("password") == Some("true"))
        .flat_map(|n| n.attributes().collect::<Vec<_>>())
        .filter(|a| matches!(a.name(), "text" | "content-desc") && !a.value().is_empty())
        .map(|a| a.range_value())
        .collect();
    ranges.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(xml.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(&xml[at..offset + r.start]);
        out.push_str(REDACTED);
        at = offset + r.end;
    }
    out.push_str(&xml[at..]);
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_nodes_are_masked_in_the_raw_xml() {
        let xml = "UI hierchary dumped to: /dev/tty\n<hierarchy rotation=\"0\"><node text=\"alex\" content-desc=\"user\" password=\"false\"/><node text=\"hunter2\" content-desc=\"hunter2 &amp; more\" hint=\"Password\" password=\"true\"/></hierarchy>";
        let masked = mask_password_xml(xml).unwrap();
        assert!(!masked.contains("hunter2"), "{masked}");
        assert!(masked.contains("text=\"alex\" content-desc=\"user\""));
        assert!(masked.contains("text=\"••••\" content-desc=\"••••\" hint=\"Password\""));
        assert!(crate::screen::parse(&masked).is_ok());
        let plain = "<hierarchy><node text=\"a\"/></hierarchy>";
        assert!(matches!(
            mask_password_xml(plain),
            Some(std::borrow::Cow::Borrowed(_))
        ));
        assert!(mask_password_xml("<hierarchy><node password=\"true\" text=\"x\"").is_none());
    }

    fn p(s: &str) -> RedactionPattern {
        RedactionPattern::shape(s).unwrap()
    }

    #[test]
    fn shapes_hide_what_they_describe() {
        let card = [p("9999 9999 9999 9999")];
        assert_eq!(
            redact("Card 4111 1111 1111 1111 exp", &card).as_deref(),
            Some("Card •••• exp")
        );
        assert_eq!(redact("Card 4111 1111", &card), None);
        let mail = [p("*@*.*")];
        assert_eq!(
            redact("from bob@example.com today", &mail).as_deref(),
            Some("from •••• today")
        );
    }

    #[test]
    fn literals_escape_pattern_characters() {
        let lit = [RedactionPattern::literal("A9*x").unwrap()];
        assert_eq!(redact("pw A9*x!", &lit).as_deref(), Some("pw ••••!"));
        assert_eq!(redact("pw B1yx", &lit), None);
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        assert!(RedactionPattern::shape("").is_err());
        assert!(RedactionPattern::shape("*").is_err());
        assert!(RedactionPattern::shape("a*b*c*d*e").is_err());
        assert!(RedactionPattern::shape("ab\\").is_err());
    }

    #[test]
    fn patterns_round_trip_through_config_strings() {
        let v: Vec<RedactionPattern> = serde_json::from_str(r#"["9999", "*@*"]"#).unwrap();
        assert_eq!(redact("pin 1234", &v).as_deref(), Some("pin ••••"));
        assert!(serde_json::from_str::<Vec<RedactionPattern>>(r#"["*"]"#).is_err());
    }
}
