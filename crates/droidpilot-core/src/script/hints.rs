//! Recovery-hint triggers (seed 001, "Recovery hint matching"): a hint is given to AI in
//! the middle when its trigger matches the failure, exactly
//! (`element_not_found:#btn_submit`), by pattern (`element_not_found:*`, `*` matching any
//! run of characters), or by condition (`modal_detected` when a dialog is on top).

use super::model::RecoveryHint;

/// A parsed trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// `ERROR[:PATTERN]`: a failure of this type, on a selector matching the pattern
    /// (any selector when the pattern is absent).
    Error {
        kind: String,
        pattern: Option<String>,
    },
    /// A dialog, permission prompt or overlay is on top.
    ModalDetected,
    /// The soft keyboard is shown.
    KeyboardShown,
}

/// Error types replay reports (the `error_type` of the recovery context).
pub const ERROR_TYPES: &[&str] = &[
    "element_not_found",
    "ambiguous_selector",
    "expect_failed",
    "action_failed",
    "wrong_app",
    "device_error",
];

/// What went wrong, as triggers see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failure {
    pub error_type: String,
    pub selector: Option<String>,
    pub has_modal: bool,
    pub keyboard_shown: bool,
}

impl Trigger {
    pub fn parse(s: &str) -> Result<Trigger, String> {
        let s = s.trim();
        match s {
            "modal_detected" => return Ok(Trigger::ModalDetected),
            "keyboard_shown" => return Ok(Trigger::KeyboardShown),
            _ => {}
        }
        let (kind, pattern) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p.to_string())),
            None => (s, None),
        };
        if !ERROR_TYPES.contains(&kind) {
            return Err(format!(
                "unknown trigger `{s}`; triggers are modal_detected, keyboard_shown, or one of {} optionally followed by `:SELECTOR` or `:*`",
                ERROR_TYPES.join(", ")
            ));
        }
        Ok(Trigger::Error {
            kind: kind.to_string(),
            pattern,
        })
    }

    pub fn matches(&self, f: &Failure) -> bool {
        match self {
            Trigger::ModalDetected => f.has_modal,
            Trigger::KeyboardShown => f.keyboard_shown,
            Trigger::Error { kind, pattern } => {
                kind == &f.error_type
                    && match (pattern, &f.selector) {
                        (None, _) => true,
                        (Some(p), Some(sel)) => glob(p, sel),
                        (Some(p), None) => p == "*",
                    }
            }
        }
    }
}

/// The hints whose trigger matches `f`, in script order (unparseable triggers never
/// match; scripts are validated when saved).
pub fn matching<'a>(hints: &'a [RecoveryHint], f: &Failure) -> Vec<&'a RecoveryHint> {
    hints
        .iter()
        .filter(|h| Trigger::parse(&h.trigger).is_ok_and(|t| t.matches(f)))
        .collect()
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || !s[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(kind: &str, sel: Option<&str>, modal: bool) -> Failure {
        Failure {
            error_type: kind.into(),
            selector: sel.map(Into::into),
            has_modal: modal,
            keyboard_shown: false,
        }
    }

    fn hint(t: &str) -> RecoveryHint {
        RecoveryHint {
            trigger: t.into(),
            hint: format!("hint for {t}"),
        }
    }

    #[test]
    fn exact_pattern_and_condition_triggers_match_as_seed_001_says() {
        let hints = [
            hint("element_not_found:#btn_submit"),
            hint("element_not_found:*"),
            hint("element_not_found:#btn_*"),
            hint("modal_detected"),
            hint("expect_failed"),
        ];
        let f = fail("element_not_found", Some("#btn_submit"), false);
        let got: Vec<_> = matching(&hints, &f)
            .iter()
            .map(|h| h.trigger.as_str())
            .collect();
        assert_eq!(
            got,
            [
                "element_not_found:#btn_submit",
                "element_not_found:*",
                "element_not_found:#btn_*"
            ]
        );
        let f = fail("element_not_found", Some("#other"), true);
        let got: Vec<_> = matching(&hints, &f)
            .iter()
            .map(|h| h.trigger.as_str())
            .collect();
        assert_eq!(got, ["element_not_found:*", "modal_detected"]);
        assert_eq!(
            matching(&hints, &fail("expect_failed", None, false)).len(),
            1
        );
    }

    #[test]
    fn unknown_triggers_are_refused_with_the_list() {
        let e = Trigger::parse("element_missing:#x").unwrap_err();
        assert!(e.contains("element_not_found"), "{e}");
    }
}
