//! `${var}` substitution in script steps. Values come from a run's inputs (or the
//! script's defaults) and from earlier steps' `store_as`. A name that is neither is an
//! error when the script is saved, not when its step runs. `$${` writes a literal `${`.

use std::collections::BTreeMap;

use super::model::ScriptError;

pub const NAME_HINT: &str = "Variable names are letters, digits and `_` (not starting with a digit); declare inputs in the script's `inputs`, or set a variable with an earlier step's `parameters.store_as`.";

/// The variables of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars {
    values: BTreeMap<String, String>,
    /// Validation mode: every name resolves to a placeholder.
    probe: bool,
}

impl Vars {
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Self {
            values,
            probe: false,
        }
    }

    /// Resolves any name (to `x`), to build a step's action while validating.
    pub fn placeholders() -> Self {
        Self {
            values: BTreeMap::new(),
            probe: true,
        }
    }

    pub fn set(&mut self, name: &str, value: String) {
        self.values.insert(name.to_string(), value);
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// `s` with every `${name}` replaced; an unset name is an error naming it.
    pub fn substitute(&self, s: &str) -> Result<String, String> {
        let mut out = String::with_capacity(s.len());
        for piece in pieces(s) {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Var(name) if self.probe => {
                    let _ = name;
                    out.push('x');
                }
                Piece::Var(name) => match self.values.get(name) {
                    Some(v) => out.push_str(v),
                    None => return Err(format!("variable `${{{name}}}` has no value")),
                },
                Piece::Unclosed => return Err("`${` without a closing `}`".into()),
            }
        }
        Ok(out)
    }
}

enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
    Unclosed,
}

/// Splits `s` into literal text and `${name}` references (`$${` is a literal `${`).
fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            out.push(Piece::Text(&rest[..i - 1]));
            out.push(Piece::Text("${"));
            rest = &rest[i + 2..];
            continue;
        }
        out.push(Piece::Text(&rest[..i]));
        match rest[i + 2..].find('}') {
            Some(j) => {
                out.push(Piece::Var(&rest[i + 2..i + 2 + j]));
                rest = &rest[i + 3 + j..];
            }
            None => {
                out.push(Piece::Unclosed);
                return out;
            }
        }
    }
    out.push(Piece::Text(rest));
    out
}

/// The names `s` refers to.
pub fn references(s: &str) -> Vec<&str> {
    pieces(s)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// `s` with every reference replaced by `x`, to check the shape of a selector.
pub fn placeholder(s: &str) -> String {
    Vars::placeholders()
        .substitute(s)
        .unwrap_or_else(|_| s.to_string())
}

pub fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!("`{name}` is not a valid variable name"))
    }
}

/// Every reference in `s` is one of `known`; `path` names the field.
pub fn check_known(path: &str, s: &str, known: &[String]) -> Result<(), ScriptError> {
    if pieces(s).iter().any(|p| matches!(p, Piece::Unclosed)) {
        return Err(ScriptError::invalid(
            path,
            format!("`{s}` has `${{` without a closing `}}`"),
            NAME_HINT,
        ));
    }
    match references(s)
        .into_iter()
        .find(|n| !known.iter().any(|k| k == n))
    {
        Some(name) => Err(unknown(path, name, known)),
        None => Ok(()),
    }
}

/// The error for a reference to a variable nobody sets.
pub fn unknown(path: &str, name: &str, known: &[String]) -> ScriptError {
    let listed = if known.is_empty() {
        "none are defined".to_string()
    } else {
        format!("defined here: {}", known.join(", "))
    };
    ScriptError {
        path: path.to_string(),
        code: "unknown_variable",
        message: format!("unknown variable `{name}` ({listed})"),
        hint: NAME_HINT.into(),
    }
}

/// The run's variables: the script's defaults overlaid with the caller's inputs. An
/// input the script does not declare, or a declared one without a value, is refused.
pub fn bind_inputs(
    declared: &BTreeMap<String, super::model::Input>,
    given: &BTreeMap<String, String>,
) -> Result<Vars, ScriptError> {
    let names: Vec<String> = declared.keys().cloned().collect();
    if let Some(extra) = given.keys().find(|k| !declared.contains_key(*k)) {
        return Err(unknown(&format!("inputs.{extra}"), extra, &names));
    }
    let mut values = BTreeMap::new();
    for (name, default) in declared {
        match given.get(name).or(default.default.as_ref()) {
            Some(v) => {
                values.insert(name.clone(), v.clone());
            }
            None => {
                return Err(ScriptError {
                    path: format!("inputs.{name}"),
                    code: "missing_input",
                    message: format!("input `{name}` has no value and no default"),
                    hint: format!("Run with {{\"inputs\": {{\"{name}\": \"…\"}}}}."),
                });
            }
        }
    }
    Ok(Vars::new(values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_and_escapes() {
        let mut v = Vars::default();
        v.set("who", "Ana".into());
        assert_eq!(v.substitute("hi ${who}!").unwrap(), "hi Ana!");
        assert_eq!(v.substitute("cost $${who}").unwrap(), "cost ${who}");
        assert!(v.substitute("${nobody}").unwrap_err().contains("nobody"));
        assert!(v.substitute("${open").is_err());
    }

    #[test]
    fn unknown_references_name_the_field_and_the_known_names() {
        let e = check_known("steps[1].parameters.text", "to ${usr}", &["user".into()]).unwrap_err();
        assert_eq!(e.code, "unknown_variable");
        assert_eq!(e.path, "steps[1].parameters.text");
        assert!(
            e.message.contains("`usr`") && e.message.contains("user"),
            "{}",
            e.message
        );
    }

    #[test]
    fn inputs_bind_with_defaults_and_refuse_strangers() {
        let declared = BTreeMap::from([
            ("a".to_string(), Some("1".to_string()).into()),
            ("b".to_string(), None.into()),
        ]);
        let given = BTreeMap::from([("b".to_string(), "2".to_string())]);
        let v = bind_inputs(&declared, &given).unwrap();
        assert_eq!((v.get("a"), v.get("b")), (Some("1"), Some("2")));
        assert_eq!(
            bind_inputs(&declared, &BTreeMap::new()).unwrap_err().code,
            "missing_input"
        );
        let stranger = BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())]);
        assert_eq!(
            bind_inputs(&declared, &stranger).unwrap_err().path,
            "inputs.c"
        );
    }
}
