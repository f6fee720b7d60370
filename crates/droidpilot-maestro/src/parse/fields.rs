//! Reading one mapping's fields the way Maestro's Jackson classes do: unknown keys are
//! refused by name (with "did you mean"), scalars coerce to the type the field takes,
//! and every error names the key's line.

use crate::ast::Amount;
use crate::error::ParseError;
use crate::yaml::{Node, Value};

/// The fields of one mapping, checked against what `cmd` takes.
pub struct Fields<'a> {
    pub cmd: &'a str,
    pub line: usize,
    kv: &'a [(String, usize, Node)],
}

/// The closest of `known` to `name`, when close enough to be a typo.
pub fn did_you_mean<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    known
        .into_iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&name.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

impl<'a> Fields<'a> {
    /// `node` must be a mapping whose keys are all in `allowed`.
    pub fn new(cmd: &'a str, node: &'a Node, allowed: &[&str]) -> Result<Self, ParseError> {
        let kv = node.map().ok_or_else(|| {
            ParseError::new(
                node.line,
                "invalid_command",
                format!("`{cmd}` takes a mapping here, not {}", node.kind()),
                format!("Write `{cmd}:` then its fields indented below it."),
            )
        })?;
        if let Some((key, line, _)) = kv.iter().find(|(k, _, _)| !allowed.contains(&k.as_str())) {
            let hint = match did_you_mean(key, allowed.iter().copied()) {
                Some(k) => format!("Did you mean `{k}`? `{cmd}` takes: {}.", allowed.join(", ")),
                None => format!("`{cmd}` takes: {}.", allowed.join(", ")),
            };
            return Err(ParseError::new(
                *line,
                "unknown_field",
                format!("`{cmd}` has no field `{key}`"),
                hint,
            ));
        }
        Ok(Self {
            cmd,
            line: node.line,
            kv,
        })
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The value of `key`, unless absent or null.
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.kv
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, v)| v)
            .filter(|v| !v.is_null())
    }

    /// The line of `key`, or the mapping's.
    pub fn line_of(&self, key: &str) -> usize {
        self.kv
            .iter()
            .find(|(k, _, _)| k == key)
            .map_or(self.line, |(_, l, _)| *l)
    }

    fn wrong(&self, key: &str, takes: &str, got: &Node) -> ParseError {
        ParseError::new(
            self.line_of(key),
            "invalid_command",
            format!(
                "`{}` field `{key}` takes {takes}, not {}",
                self.cmd,
                got.kind()
            ),
            format!("Write `{key}: …` with {takes}."),
        )
    }

    pub fn text(&self, key: &str) -> Result<Option<String>, ParseError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => n
                .str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| self.wrong(key, "text", n)),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, ParseError> {
        let Some(n) = self.get(key) else {
            return Ok(None);
        };
        match n.str().map(str::to_ascii_lowercase).as_deref() {
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            _ => Err(self.wrong(key, "true or false", n)),
        }
    }

    /// A whole number (Maestro's `Int`/`Long` fields take no expressions).
    pub fn int(&self, key: &str) -> Result<Option<i64>, ParseError> {
        let Some(n) = self.get(key) else {
            return Ok(None);
        };
        let s = n
            .str()
            .ok_or_else(|| self.wrong(key, "a whole number", n))?;
        s.trim().parse().map(Some).map_err(|_| {
            ParseError::new(
                self.line_of(key),
                "invalid_command",
                format!("`{}` field `{key}` takes a whole number, not `{s}`", self.cmd),
                format!(
                    "Write a number, e.g. `{key}: 3`; Maestro reads this field before any `${{…}}` runs."
                ),
            )
        })
    }

    pub fn uint(&self, key: &str) -> Result<Option<u64>, ParseError> {
        Ok(self.int(key)?.map(|v| v.max(0) as u64))
    }

    /// A number or a `${…}` expression (Maestro's text-typed numeric fields).
    pub fn amount(&self, key: &str) -> Result<Option<Amount>, ParseError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => {
                let s = n.str().ok_or_else(|| self.wrong(key, "a number", n))?;
                amount(s, self.line_of(key), self.cmd, key).map(Some)
            }
        }
    }

    /// `label` and `optional` (default `optional_default`).
    pub fn common(&self, optional_default: bool) -> Result<(Option<String>, bool), ParseError> {
        Ok((
            self.text("label")?,
            self.bool("optional")?.unwrap_or(optional_default),
        ))
    }

    /// A mapping of text to text (`permissions`, `arguments`, `env`'s values must be text).
    pub fn text_map(
        &self,
        key: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, ParseError> {
        let mut out = std::collections::BTreeMap::new();
        let Some(n) = self.get(key) else {
            return Ok(out);
        };
        let kv = n.map().ok_or_else(|| self.wrong(key, "a mapping", n))?;
        for (k, line, v) in kv {
            let s = match &v.value {
                Value::Str(s) => s.clone(),
                Value::Null => String::new(),
                _ => {
                    return Err(ParseError::new(
                        *line,
                        "invalid_command",
                        format!("`{key}.{k}` takes text, not {}", v.kind()),
                        format!("Write `{k}: value`."),
                    ));
                }
            };
            out.insert(k.clone(), s);
        }
        Ok(out)
    }
}

/// `s` as an `Amount`: a `${…}` expression is kept for later, anything else must be a
/// number now.
pub fn amount(s: &str, line: usize, cmd: &str, key: &str) -> Result<Amount, ParseError> {
    if s.contains("${") {
        return Ok(Amount::Expr(s.to_string()));
    }
    s.trim().parse::<f64>().map(Amount::Fixed).map_err(|_| {
        ParseError::new(
            line,
            "invalid_command",
            format!("`{cmd}` field `{key}` takes a number or `${{…}}`, not `{s}`"),
            format!("Write e.g. `{key}: 3` or `{key}: ${{COUNT}}`."),
        )
    })
}
