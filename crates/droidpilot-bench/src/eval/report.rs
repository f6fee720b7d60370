//! The eval's summary: success per tier, means per run, false successes, verifier
//! catches and loops, model calls and tokens by role; as the `--json` object (also `eval.json`), a terminal table,
//! Markdown (`eval.md`), and two saved summaries side by side with deltas (`--compare`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{EvalReport, RoleUse, RunRecord};
use crate::device::sim::Difficulty;

const TIERS: [(Difficulty, &str); 3] = [
    (Difficulty::Easy, "easy"),
    (Difficulty::Medium, "medium"),
    (Difficulty::Hard, "hard"),
];

fn rate(k: usize, n: usize) -> Value {
    if n == 0 {
        Value::Null
    } else {
        json!(k as f64 / n as f64)
    }
}

fn distinct(runs: &[&RunRecord]) -> usize {
    let mut ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    ids.len()
}

fn tally(runs: &[&RunRecord]) -> Value {
    let ok = runs.iter().filter(|r| r.checker).count();
    json!({"tasks": distinct(runs), "runs": runs.len(), "succeeded": ok,
           "success_rate": rate(ok, runs.len())})
}

fn mean(runs: &[RunRecord], f: impl Fn(&RunRecord) -> f64) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.iter().map(f).sum::<f64>() / runs.len() as f64
}

/// The `--json` object: `tasks` (distinct), `runs` (tasks × repeat), `succeeded` and
/// `success_rate` (over runs, by the checker), `tiers`, `false_success` (runs),
/// `verifier_catches` (rejected finishes), `loops` (runs where the stuck detector fired),
/// means per run (`mean_steps`, `model_calls`, `tokens`, `cost_usd`, `wall_s`), `roles`
/// (calls and tokens by role, summed over all runs), `total`, and `per_task`.
pub fn summary_json(r: &EvalReport) -> Value {
    let all: Vec<&RunRecord> = r.runs.iter().collect();
    let mut tiers = serde_json::Map::new();
    for (d, name) in TIERS {
        let runs: Vec<&RunRecord> = r.runs.iter().filter(|x| x.tier == d).collect();
        tiers.insert(name.into(), tally(&runs));
    }
    let sum = |f: fn(&RunRecord) -> f64| r.runs.iter().map(f).sum::<f64>();
    let mut out = tally(&all);
    let extra = json!({
        "agent": r.agent, "repeat": r.repeat, "parallel": r.parallel, "tiers": tiers,
        "false_success": r.runs.iter().filter(|x| x.false_success).count(),
        "verifier_catches": r.runs.iter().map(|x| x.verifier_catches as u64).sum::<u64>(),
        "loops": r.runs.iter().filter(|x| x.loops > 0).count(),
        "asked": r.runs.iter().map(|x| x.asked as u64).sum::<u64>(),
        "mean_steps": mean(&r.runs, |x| x.steps as f64),
        "model_calls": mean(&r.runs, |x| x.model_calls as f64),
        "roles": roles(&r.runs),
        "tokens": {"in": mean(&r.runs, |x| x.tokens.input as f64),
                   "out": mean(&r.runs, |x| x.tokens.output as f64)},
        "cost_usd": mean(&r.runs, |x| x.cost_usd),
        "wall_s": mean(&r.runs, |x| x.wall_s),
        "total": {"tokens": {"in": sum(|x| x.tokens.input as f64),
                             "out": sum(|x| x.tokens.output as f64)},
                  "cost_usd": sum(|x| x.cost_usd), "wall_s": r.wall_s},
        "per_task": r.runs,
    });
    if let (Value::Object(o), Value::Object(e)) = (&mut out, extra) {
        o.extend(e);
    }
    out
}

/// Calls and tokens by role over all runs.
fn roles(runs: &[RunRecord]) -> BTreeMap<String, RoleUse> {
    let mut m: BTreeMap<String, RoleUse> = BTreeMap::new();
    for (role, u) in runs.iter().flat_map(|r| &r.roles) {
        let e = m.entry(role.clone()).or_default();
        e.calls += u.calls;
        e.tokens.input += u.tokens.input;
        e.tokens.output += u.tokens.output;
    }
    m
}

/// `actor 24 calls (52.1k tokens in, 1.2k out) · planner 3 calls (…)`, or "none".
fn role_line(s: &Value) -> String {
    let k = |x: f64| {
        if x >= 1000.0 {
            format!("{:.1}k", x / 1000.0)
        } else {
            format!("{x:.0}")
        }
    };
    let parts: Vec<String> = s["roles"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(role, u)| {
            format!(
                "{role} {} calls ({} tokens in, {} out)",
                u["calls"],
                k(num(u, "/tokens/in")),
                k(num(u, "/tokens/out"))
            )
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(" · ")
    }
}

fn pct(v: &Value) -> String {
    v.as_f64()
        .map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0))
}

fn num(v: &Value, path: &str) -> f64 {
    v.pointer(path).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Tier rows `(name, succeeded/runs, rate)`, then `all`.
fn tier_rows(s: &Value) -> Vec<[String; 3]> {
    let row = |name: &str, t: &Value| {
        [
            name.to_string(),
            format!("{}/{}", t["succeeded"], t["runs"]),
            pct(&t["success_rate"]),
        ]
    };
    let mut rows: Vec<[String; 3]> = TIERS.iter().map(|(_, n)| row(n, &s["tiers"][*n])).collect();
    rows.push(row("all", s));
    rows
}

fn headline(s: &Value) -> String {
    format!(
        "{} tasks × {} run(s), agent {}, {} phone(s), {:.1} s",
        s["tasks"],
        s["repeat"],
        s["agent"],
        s["parallel"],
        num(s, "/total/wall_s")
    )
}

fn counters(s: &Value) -> String {
    format!(
        "false success {} · verifier catches {} · loops {} · questions answered {}\nmean per run: {:.1} steps, {:.1} model calls, {:.0} tokens in, {:.0} out, ${:.4}, {:.2} s\nmodel calls by role (all runs): {}",
        s["false_success"],
        s["verifier_catches"],
        s["loops"],
        s["asked"],
        num(s, "/mean_steps"),
        num(s, "/model_calls"),
        num(s, "/tokens/in"),
        num(s, "/tokens/out"),
        num(s, "/cost_usd"),
        num(s, "/wall_s"),
        role_line(s),
    )
}

/// Runs the checker failed, one line each.
fn misses(s: &Value) -> Vec<String> {
    let runs = s["per_task"].as_array().cloned().unwrap_or_default();
    runs.iter()
        .filter(|r| r["checker"] != json!(true))
        .map(|r| {
            format!(
                "{} (run {}): {}{}, {}",
                r["id"].as_str().unwrap_or("?"),
                r["run"],
                r["status"].as_str().unwrap_or("?"),
                if r["false_success"] == json!(true) {
                    " (false success)"
                } else {
                    ""
                },
                r["reason"].as_str().unwrap_or("no reason given")
            )
        })
        .collect()
}

/// The terminal table.
pub fn format_table(s: &Value) -> String {
    let mut out = format!("droidpilot eval: {}\n\n", headline(s));
    out += &format!("{:<8} {:>10} {:>8}\n", "tier", "succeeded", "rate");
    for [a, b, c] in tier_rows(s) {
        out += &format!("{a:<8} {b:>10} {c:>8}\n");
    }
    out += &format!("\n{}\n", counters(s));
    let missed = misses(s);
    if !missed.is_empty() {
        out += "\nnot done:\n";
        for m in missed {
            out += &format!("  {m}\n");
        }
    }
    out
}

/// The same as Markdown (`eval.md`).
pub fn format_markdown(s: &Value) -> String {
    let mut out = format!("# droidpilot eval\n\n{}\n\n", headline(s));
    out += "| tier | succeeded | rate |\n| --- | ---: | ---: |\n";
    for [a, b, c] in tier_rows(s) {
        out += &format!("| {a} | {b} | {c} |\n");
    }
    out += &format!("\n{}\n", counters(s).replace('\n', "  \n"));
    let missed = misses(s);
    if !missed.is_empty() {
        out += "\nNot done:\n\n";
        for m in missed {
            out += &format!("- {m}\n");
        }
    }
    out
}

/// The metrics compared: label, JSON pointer, shown as a percentage.
const METRICS: [(&str, &str, bool); 13] = [
    ("success rate", "/success_rate", true),
    ("easy", "/tiers/easy/success_rate", true),
    ("medium", "/tiers/medium/success_rate", true),
    ("hard", "/tiers/hard/success_rate", true),
    ("false success", "/false_success", false),
    ("verifier catches", "/verifier_catches", false),
    ("loops", "/loops", false),
    ("mean steps", "/mean_steps", false),
    ("model calls / run", "/model_calls", false),
    ("tokens in / run", "/tokens/in", false),
    ("tokens out / run", "/tokens/out", false),
    ("cost USD / run", "/cost_usd", false),
    ("wall s / run", "/wall_s", false),
];

/// Whether `v` reads as an eval summary (what `--compare` accepts).
pub fn is_summary(v: &Value) -> bool {
    v.get("success_rate").is_some() && v.get("tiers").is_some() && v["per_task"].is_array()
}

/// Per task, the share of its runs the checker passed.
fn task_rates(s: &Value) -> BTreeMap<String, f64> {
    let mut m: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for r in s["per_task"].as_array().into_iter().flatten() {
        let e = m.entry(r["id"].as_str().unwrap_or("?").into()).or_default();
        e.0 += u32::from(r["checker"] == json!(true));
        e.1 += 1;
    }
    m.into_iter()
        .map(|(k, (ok, n))| (k, ok as f64 / n.max(1) as f64))
        .collect()
}

/// Two summaries side by side: `{"a", "b", "delta"}` by metric (b − a; null where either
/// is missing), and `tasks_changed`: the tasks both ran whose success rate differs.
pub fn compare_json(a: &Value, b: &Value) -> Value {
    let (mut va, mut vb, mut vd) = (
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    );
    for (label, path, _) in METRICS {
        let (x, y) = (a.pointer(path).cloned(), b.pointer(path).cloned());
        let d = match (
            x.as_ref().and_then(Value::as_f64),
            y.as_ref().and_then(Value::as_f64),
        ) {
            (Some(x), Some(y)) => json!(y - x),
            _ => Value::Null,
        };
        va.insert(label.into(), x.unwrap_or(Value::Null));
        vb.insert(label.into(), y.unwrap_or(Value::Null));
        vd.insert(label.into(), d);
    }
    let (ra, rb) = (task_rates(a), task_rates(b));
    let changed: Vec<Value> = ra
        .iter()
        .filter_map(|(id, x)| {
            let y = rb.get(id)?;
            (x != y).then(|| json!({"id": id, "a": x, "b": y}))
        })
        .collect();
    json!({"a": va, "b": vb, "delta": vd, "tasks_changed": changed,
           "agents": {"a": a["agent"], "b": b["agent"]}})
}

fn cell(v: &Value, percent: bool) -> String {
    match v.as_f64() {
        None => "n/a".into(),
        Some(x) if percent => format!("{:.1}%", x * 100.0),
        Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn delta_cell(v: &Value, percent: bool) -> String {
    match v.as_f64() {
        None => "n/a".into(),
        Some(x) if percent => format!("{:+.1} pt", x * 100.0),
        Some(x) if x.fract() == 0.0 => format!("{x:+.0}"),
        Some(x) => format!("{x:+.3}"),
    }
}

/// The side-by-side table.
pub fn format_compare(c: &Value, a_name: &str, b_name: &str) -> String {
    let mut out = format!(
        "a: {a_name} (agent {})\nb: {b_name} (agent {})\n\n",
        c["agents"]["a"], c["agents"]["b"]
    );
    out += &format!("{:<18} {:>10} {:>10} {:>10}\n", "metric", "a", "b", "b − a");
    for (label, _, percent) in METRICS {
        out += &format!(
            "{:<18} {:>10} {:>10} {:>10}\n",
            label,
            cell(&c["a"][label], percent),
            cell(&c["b"][label], percent),
            delta_cell(&c["delta"][label], percent)
        );
    }
    let changed = c["tasks_changed"].as_array().cloned().unwrap_or_default();
    if !changed.is_empty() {
        out += "\ntasks that changed (success rate a → b):\n";
        for t in changed {
            out += &format!(
                "  {:<42} {} → {}\n",
                t["id"].as_str().unwrap_or("?"),
                pct(&t["a"]),
                pct(&t["b"])
            );
        }
    }
    out
}
