//! `${…}`, `env`, `output`, `maestro`, `evalScript`, `runScript` and `assertTrue`
//! as Maestro evaluates them (its `Env.evaluateScripts` and `GraalJsEngine`).
//!
//! The engine is QuickJS through `rquickjs`: its C source ships in the crate and builds
//! offline with the system C compiler, it is small and kept up to date, and it runs
//! ES2023 as GraalJS does for Maestro. (`boa_engine` is pure Rust but far larger to
//! build, and slower.)
//!
//! What Maestro does, and so what this does:
//! - Each `${…}` in a text is one JavaScript evaluation whose result replaces it; `\${…}`
//!   stays as written, less its backslash; an empty `${}` is removed.
//! - Every evaluation starts from a fresh global scope (a variable a script declares is
//!   gone after it), in strict mode. What persists is the `env` variables (globals, all
//!   text), `output` (an object scripts fill in) and `maestro` (`platform` = "android",
//!   `copiedText` after `copyTextFrom`). A name never defined reads as `undefined`, so
//!   `${USER || 'guest'}` works; `json(text)` and `relativePoint(x, y)` are there too.
//! - `runScript`'s `env` joins the variables for good (as GraalJS's does).
//! - A condition (`assertTrue`, `when: {true: …}`) is false when its text is blank,
//!   `false` (any case), `undefined`, `null` or a number equal to 0; else true.
//!
//! Where this is stricter than Maestro, on purpose: a `${…}` in a text to type or select
//! by that evaluates to `undefined` or `null` is an error naming the expression
//! (Maestro types the word "undefined"), and an `env` value that evaluates to
//! `undefined` leaves the variable unset instead of holding that word. `output` is
//! kept between evaluations as JSON, so functions stored in it are not; an object
//! result reads as its JSON (GraalJS prints its own notation). `http` (HTTP requests
//! from scripts) is left out: a flow run here makes no outbound calls; a script that
//! uses it fails with `http is not defined`. A script gets at most `OP_BUDGET` engine
//! checkpoints (so `while (true) {}` ends in an error) and 32 MiB.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rquickjs::{Context, Ctx, Runtime, Value};

use crate::ast::{Amount, EnvVar, Selector};

/// Interrupt checks QuickJS may make in one evaluation before it is stopped (it checks
/// about every 10 000 instructions, so this is some 10⁸ instructions).
pub const OP_BUDGET: u64 = 10_000;

/// A script or expression that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// The JavaScript threw (a syntax error, a reference error, `throw`).
    #[error("`{source_text}` failed: {message}")]
    Script {
        source_text: String,
        message: String,
    },
    /// The expression gave `undefined` or `null` where a text is needed.
    #[error("`${{{expr}}}` is {what}")]
    Undefined { expr: String, what: &'static str },
    /// A number was needed (`times`, `index`, `timeout`, …).
    #[error("`{text}` gave `{value}`, which is not a number")]
    NotANumber { text: String, value: String },
    #[error("the JavaScript engine could not start: {0}")]
    Engine(String),
}

impl ExprError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            ExprError::Undefined { expr, .. } => format!(
                "Give it a value: `-e {expr}=…`, the flow's `env`, or a default: `${{{expr} || 'value'}}`."
            ),
            ExprError::Script { .. } => {
                "Check the script; `env` variables, `output`, `maestro`, `json()` and `relativePoint()` are defined, `http` is not.".into()
            }
            ExprError::NotANumber { .. } => "Make the expression give a number, e.g. `${Number(COUNT)}`.".into(),
            ExprError::Engine(_) => "Retry; this is not the flow's fault.".into(),
        }
    }
}

/// A JavaScript result.
#[derive(Debug, Clone, PartialEq)]
pub enum JsValue {
    Undefined,
    Null,
    /// Any other value, as JavaScript's `String(v)` (objects as JSON).
    Text(String),
}

impl JsValue {
    /// The text Maestro would put in place of the `${…}`.
    pub fn maestro_text(&self) -> String {
        match self {
            JsValue::Undefined => "undefined".into(),
            JsValue::Null => "null".into(),
            JsValue::Text(s) => s.clone(),
        }
    }
}

/// The JavaScript state of one flow run.
pub struct Scope {
    rt: Runtime,
    ops: Arc<AtomicU64>,
    env: BTreeMap<String, String>,
    output_json: String,
    copied_text: Option<String>,
}

const PRELUDE: &str = r#"
Object.setPrototypeOf(globalThis, new Proxy(Object.prototype, { has(target, key) { return true; } }));
globalThis.json = function (text) { return JSON.parse(text); };
globalThis.relativePoint = function (x, y) { return Math.ceil(x * 100) + '%,' + Math.ceil(y * 100) + '%'; };
"#;

impl Scope {
    pub fn new() -> Result<Self, ExprError> {
        let rt = Runtime::new().map_err(|e| ExprError::Engine(e.to_string()))?;
        rt.set_memory_limit(32 << 20);
        rt.set_max_stack_size(1 << 20);
        let ops = Arc::new(AtomicU64::new(0));
        let counter = ops.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            counter.fetch_add(1, Ordering::Relaxed) > OP_BUDGET
        })));
        Ok(Self {
            rt,
            ops,
            env: BTreeMap::new(),
            output_json: "{}".into(),
            copied_text: None,
        })
    }

    /// Sets (or, with `None`, unsets) one variable as given, without evaluating it.
    pub fn put(&mut self, name: &str, value: Option<&str>) {
        match value {
            Some(v) => self.env.insert(name.to_string(), v.to_string()),
            None => self.env.remove(name),
        };
    }

    /// The variable's value, if set.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// `env:` entries in order, each value's `${…}` evaluated first (so a later entry
    /// sees an earlier one, and `${USER || 'guest'}` sees a `-e USER`). A null entry
    /// (an input with no default) and one that evaluates to `undefined` or `null` are
    /// left as they were: set by `-e` or outside, else unset.
    pub fn define(&mut self, vars: &[EnvVar]) -> Result<(), ExprError> {
        for v in vars {
            let Some(text) = &v.value else { continue };
            match self.interpolate(text) {
                Ok(value) => self.put(&v.name, Some(&value)),
                Err(ExprError::Undefined { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn set_copied_text(&mut self, text: Option<&str>) {
        self.copied_text = text.map(str::to_string);
    }

    /// `output` as JSON.
    pub fn output(&self) -> serde_json::Value {
        serde_json::from_str(&self.output_json).unwrap_or_default()
    }

    /// Evaluates one script in a fresh global scope holding the variables.
    pub fn eval(&mut self, source: &str) -> Result<JsValue, ExprError> {
        self.ops.store(0, Ordering::Relaxed);
        let ctx = Context::full(&self.rt).map_err(|e| ExprError::Engine(e.to_string()))?;
        let (env, output, copied) = (&self.env, &self.output_json, &self.copied_text);
        let (result, saved) = ctx.with(|ctx| -> Result<_, ExprError> {
            setup(&ctx, env, output, copied.as_deref())
                .map_err(|e| script_error(&ctx, "(setup)", e))?;
            let value: Value = ctx
                .eval(format!("\"use strict\";\n{source}"))
                .map_err(|e| script_error(&ctx, source, e))?;
            let result = to_js_value(&ctx, value).map_err(|e| script_error(&ctx, source, e))?;
            let saved: Option<String> = ctx
                .eval::<Option<String>, _>("JSON.stringify(globalThis.output)")
                .ok()
                .flatten();
            Ok((result, saved))
        })?;
        if let Some(s) = saved {
            self.output_json = s;
        }
        Ok(result)
    }

    /// A text with each `${…}` replaced by its value; `undefined` / `null` results are
    /// an error (see the module doc).
    pub fn interpolate(&mut self, text: &str) -> Result<String, ExprError> {
        self.replace(text, true)
    }

    /// A text as Maestro leaves it: `undefined` / `null` results become those words.
    pub fn interpolate_as_maestro(&mut self, text: &str) -> Result<String, ExprError> {
        self.replace(text, false)
    }

    fn replace(&mut self, text: &str, strict: bool) -> Result<String, ExprError> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let escaped = start > 0 && rest.as_bytes()[start - 1] == b'\\';
            let body = &rest[start + 2..];
            // Maestro's `\$\{([^$]*)}`: up to the last `}` before the next `$`.
            let limit = body.find('$').unwrap_or(body.len());
            let Some(end) = body[..limit].rfind('}') else {
                out.push_str(&rest[..start + 2]);
                rest = body;
                continue;
            };
            let script = &body[..end];
            if escaped {
                out.push_str(&rest[..start - 1]);
                out.push_str(&rest[start..start + 2 + end + 1]);
            } else {
                out.push_str(&rest[..start]);
                if !script.trim().is_empty() {
                    let v = self.eval(script)?;
                    match (&v, strict) {
                        (JsValue::Undefined, true) => {
                            return Err(ExprError::Undefined {
                                expr: script.trim().into(),
                                what: "undefined",
                            });
                        }
                        (JsValue::Null, true) => {
                            return Err(ExprError::Undefined {
                                expr: script.trim().into(),
                                what: "null",
                            });
                        }
                        _ => out.push_str(&v.maestro_text()),
                    }
                }
            }
            rest = &body[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `assertTrue` / `when: {true: …}`: the text evaluated as Maestro does, then false
    /// when blank, `false`, `undefined`, `null` or 0.
    pub fn condition(&mut self, text: &str) -> Result<bool, ExprError> {
        let v = self.interpolate_as_maestro(text)?;
        let falsy = v.trim().is_empty()
            || v.eq_ignore_ascii_case("false")
            || v == "undefined"
            || v == "null"
            || v.trim().parse::<f64>() == Ok(0.0);
        Ok(!falsy)
    }

    /// `evalScript`: its text's `${…}` run for their effect.
    pub fn eval_script(&mut self, text: &str) -> Result<(), ExprError> {
        self.interpolate_as_maestro(text).map(|_| ())
    }

    /// An `Amount`'s number, its expression evaluated.
    pub fn amount(&mut self, a: &Amount) -> Result<f64, ExprError> {
        match a {
            Amount::Fixed(n) => Ok(*n),
            Amount::Expr(text) => {
                let value = self.interpolate(text)?;
                value.trim().parse().map_err(|_| ExprError::NotANumber {
                    text: text.clone(),
                    value,
                })
            }
        }
    }

    /// The selector with every `${…}` evaluated (`text`, `id`, `index`, and the
    /// nested selectors'), ready for `selector::find`.
    pub fn selector(&mut self, sel: &Selector) -> Result<Selector, ExprError> {
        let mut s = sel.clone();
        s.text = s.text.map(|t| self.interpolate(&t)).transpose()?;
        s.id = s.id.map(|t| self.interpolate(&t)).transpose()?;
        if let Some(i) = &s.index {
            s.index = Some(Amount::Fixed(self.amount(i)?));
        }
        for b in [
            &mut s.below,
            &mut s.above,
            &mut s.left_of,
            &mut s.right_of,
            &mut s.child_of,
            &mut s.contains_child,
        ]
        .into_iter()
        .flatten()
        {
            **b = self.selector(b)?;
        }
        for d in &mut s.contains_descendants {
            *d = self.selector(d)?;
        }
        Ok(s)
    }

    /// `runScript`: the file's text run once, its `env` added to the variables first.
    pub fn run_script(&mut self, source: &str, env: &[(String, String)]) -> Result<(), ExprError> {
        for (k, v) in env {
            self.put(k, Some(v));
        }
        self.eval(source).map(|_| ())
    }
}

fn setup(
    ctx: &Ctx<'_>,
    env: &BTreeMap<String, String>,
    output: &str,
    copied: Option<&str>,
) -> rquickjs::Result<()> {
    ctx.eval::<(), _>(PRELUDE)?;
    let g = ctx.globals();
    for (k, v) in env {
        g.set(k.as_str(), v.as_str())?;
    }
    g.set("output", ctx.json_parse(output)?)?;
    let maestro = rquickjs::Object::new(ctx.clone())?;
    maestro.set("platform", "android")?;
    match copied {
        Some(t) => maestro.set("copiedText", t)?,
        None => maestro.set("copiedText", rquickjs::Null)?,
    }
    g.set("maestro", maestro)?;
    Ok(())
}

fn to_js_value<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<JsValue> {
    if v.is_undefined() {
        return Ok(JsValue::Undefined);
    }
    if v.is_null() {
        return Ok(JsValue::Null);
    }
    let text: rquickjs::Function = ctx.eval(
        "(function (v) { return (typeof v === 'object') ? JSON.stringify(v) : String(v); })",
    )?;
    Ok(JsValue::Text(text.call((v,))?))
}

fn script_error(ctx: &Ctx<'_>, source: &str, e: rquickjs::Error) -> ExprError {
    let message = if e.is_exception() {
        let ex = ctx.catch();
        ex.as_exception()
            .and_then(|x| x.message())
            .or_else(|| ex.as_string().and_then(|s| s.to_string().ok()))
            .unwrap_or_else(|| "an exception".into())
    } else {
        e.to_string()
    };
    let message = if message.contains("interrupted") {
        "the script ran too long (stopped)".into()
    } else {
        message
    };
    ExprError::Script {
        source_text: source.trim().chars().take(80).collect(),
        message,
    }
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;
