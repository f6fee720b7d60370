//! `ParseError`: why a model's text could not become an `Action`. Its `Display` is the
//! text the model is shown for its one self-correction attempt, so every variant says
//! where (offset), what was expected, and which actions exist (with the closest one).

use crate::domain::{ActionError, action::closest};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("the reply was empty; answer in the required format: {expected}")]
    Empty { expected: &'static str },
    #[error("no {tag} found in the reply; answer in the required format: {expected}")]
    MissingTag {
        tag: &'static str,
        expected: &'static str,
    },
    #[error("invalid JSON at offset {offset} (line {line}, column {column}): {message}")]
    Json {
        /// Byte offset in the whole reply.
        offset: usize,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read the action at offset {offset}: {message}")]
    Syntax { offset: usize, message: String },
    #[error("unknown action `{given}`{}; allowed actions: {}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), allowed.join(", "))]
    UnknownAction {
        given: String,
        suggestion: Option<String>,
        allowed: Vec<String>,
    },
    #[error("`{action}` needs `{field}`{}", example.map(|e| format!(", e.g. {e}")).unwrap_or_default())]
    MissingField {
        action: String,
        field: &'static str,
        example: Option<&'static str>,
    },
    #[error("`{action}` field `{field}` is invalid: {reason}")]
    InvalidField {
        action: String,
        field: String,
        reason: String,
    },
    #[error("`{action}` coordinate {given} is out of range: x and y must be in {range}")]
    OutOfRange {
        action: String,
        given: String,
        range: &'static str,
    },
    #[error("{0}")]
    Action(#[from] ActionError),
}

impl ParseError {
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Empty { .. } => "empty_reply",
            ParseError::MissingTag { .. } => "missing_tag",
            ParseError::Json { .. } | ParseError::Syntax { .. } => "malformed_action",
            ParseError::UnknownAction { .. } => "unknown_action",
            ParseError::OutOfRange { .. } => "invalid_coordinate",
            ParseError::MissingField { .. } | ParseError::InvalidField { .. } => "invalid_action",
            ParseError::Action(e) => e.code(),
        }
    }

    pub fn hint(&self) -> String {
        match self {
            ParseError::Action(e) => e.hint(),
            _ => "The model's output did not follow its format; check that `format` matches the model (mai-ui, ui-tars, autoglm, generic).".into(),
        }
    }

    pub fn unknown(given: &str, allowed: &[&str]) -> Self {
        // `closest` compares lower-case snake names; AutoGLM's are `Long Press`, `Tap`.
        let norm: Vec<String> = allowed
            .iter()
            .map(|a| a.to_ascii_lowercase().replace([' ', '-'], "_"))
            .collect();
        let suggestion = closest(given, norm.iter().map(String::as_str)).and_then(|c| {
            norm.iter()
                .position(|n| *n == c)
                .map(|i| allowed[i].to_string())
        });
        ParseError::UnknownAction {
            given: given.into(),
            suggestion,
            allowed: allowed.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A serde_json error inside a fragment that starts at byte `base` of the reply.
    pub fn json(e: &serde_json::Error, fragment: &str, base: usize) -> Self {
        ParseError::Json {
            offset: base + line_col_to_offset(fragment, e.line(), e.column()),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        }
    }
}

/// serde_json reports 1-based line and column (column counts bytes; 0 at EOF of a line).
fn line_col_to_offset(s: &str, line: usize, column: usize) -> usize {
    let mut off = 0;
    for (i, l) in s.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (off + column.saturating_sub(1)).min(s.len());
        }
        off += l.len();
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_offsets_point_into_the_whole_reply() {
        let frag = "{\"a\": 1,\n \"b\": }";
        let e = serde_json::from_str::<serde_json::Value>(frag).unwrap_err();
        let pe = ParseError::json(&e, frag, 100);
        let ParseError::Json { offset, line, .. } = pe else {
            panic!()
        };
        assert_eq!(line, 2);
        assert_eq!(&frag[offset - 100..offset - 99], "}");
    }

    #[test]
    fn unknown_actions_name_the_closest() {
        let e = ParseError::unknown("clik", &["click", "type", "swipe"]);
        assert_eq!(
            e.to_string(),
            "unknown action `clik` (did you mean `click`?); allowed actions: click, type, swipe"
        );
    }
}
