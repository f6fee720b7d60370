//! The token table of issue 3: for each format over the real fixture corpus, o200k
//! tokens per screen (median, p90) and actionable/clickable elements kept out of those
//! present. Two baselines are computed on the same corpus for comparison: "pretty JSON of
//! every node" and "only nodes with text or content-desc" (the two camps of common
//! Python/TypeScript agents).
//!
//! Run: `cargo run --release --example screen_tokens [FIXTURES_DIR]`

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use droidpilot::screen::{CompactOptions, ReprOptions, Screen, UiTree, count_o200k};
use serde_json::{Value, json};

/// Visible, non-empty, on-screen actionable nodes, computed independently of the element
/// map (only the node's own flags and `visible-to-user` of its ancestors).
fn present(tree: &UiTree, clickable_only: bool) -> HashSet<usize> {
    let screen = tree.screen_bounds();
    (0..tree.nodes.len())
        .filter(|&i| {
            let n = &tree.nodes[i];
            (if clickable_only {
                n.clickable
            } else {
                n.is_actionable()
            }) && tree.is_on_screen(i, &screen)
                && tree.ancestors(i).all(|a| tree.nodes[a].visible)
        })
        .collect()
}

fn node_json(tree: &UiTree, i: usize) -> Value {
    let n = &tree.nodes[i];
    let b = n.bounds;
    json!({
        "index": n.index, "text": n.text, "resource-id": n.resource_id, "class": n.class,
        "package": n.package, "content-desc": n.content_desc, "checkable": n.checkable,
        "checked": n.checked, "clickable": n.clickable, "enabled": n.enabled,
        "focusable": n.focusable, "focused": n.focused, "scrollable": n.scrollable,
        "long-clickable": n.long_clickable, "password": n.password, "selected": n.selected,
        "bounds": format!("[{},{}][{},{}]", b.left, b.top, b.right, b.bottom),
    })
}

struct Row {
    name: &'static str,
    tokens: Vec<usize>,
    act_kept: usize,
    act_present: usize,
    clk_kept: usize,
    clk_present: usize,
}

fn pct(v: &mut [usize], p: f64) -> usize {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uiautomator/real")
        });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| anyhow::anyhow!("fixtures not found at {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let names = [
        "tree (seed format)",
        "compact (model format)",
        "ScreenRepresentation JSON",
        "baseline: pretty JSON of every node",
        "baseline: text/desc nodes only",
    ];
    let mut rows: Vec<Row> = names
        .iter()
        .map(|&name| Row {
            name,
            tokens: vec![],
            act_kept: 0,
            act_present: 0,
            clk_kept: 0,
            clk_present: 0,
        })
        .collect();
    let opts = ReprOptions::default();
    let d = CompactOptions::default();
    let variants: Vec<(&str, CompactOptions)> = vec![
        ("compact, default", d.clone()),
        (
            "compact, no positions",
            CompactOptions {
                positions: false,
                ..d.clone()
            },
        ),
        (
            "compact, no nesting",
            CompactOptions {
                nesting: false,
                ..d.clone()
            },
        ),
        (
            "compact, no loose text",
            CompactOptions {
                loose_text: false,
                ..d.clone()
            },
        ),
        (
            "compact, labels/texts up to 200 chars",
            CompactOptions {
                max_label_chars: 200,
                max_text_chars: 200,
                ..d.clone()
            },
        ),
    ];
    let mut variant_tokens: Vec<Vec<usize>> = vec![Vec::new(); variants.len()];
    for f in &files {
        let bytes = std::fs::read(f)?;
        let text = droidpilot::screen::parse::decode(&bytes)?;
        let screen = Screen::from_xml(&text, &opts)?;
        let tree = &screen.tree;
        for (v, (_, o)) in variant_tokens.iter_mut().zip(&variants) {
            v.push(count_o200k(&screen.compact(o)));
        }
        let act = present(tree, false);
        let clk = present(tree, true);
        let all: HashSet<usize> = (0..tree.nodes.len()).collect();
        // Which element ids the compact text really contains, parsed back from the text.
        let compact = screen.compact(&opts.compact);
        let in_compact: HashSet<usize> = compact
            .lines()
            .filter_map(|l| {
                l.trim_start()
                    .strip_prefix('[')?
                    .split(']')
                    .next()?
                    .parse::<u32>()
                    .ok()
            })
            .filter_map(|id| screen.elements.get(id).map(|e| e.node))
            .collect();
        let repr = screen.representation(&opts);
        let in_json: HashSet<usize> = repr
            .actionable_elements
            .iter()
            .filter_map(|a| screen.elements.get(a.element_id).map(|e| e.node))
            .collect();
        let pretty_all = serde_json::to_string_pretty(&Value::Array(
            (0..tree.nodes.len()).map(|i| node_json(tree, i)).collect(),
        ))?;
        let texty: Vec<usize> = (0..tree.nodes.len())
            .filter(|&i| {
                !tree.nodes[i].text.trim().is_empty()
                    || !tree.nodes[i].content_desc.trim().is_empty()
            })
            .collect();
        let filtered = serde_json::to_string(&Value::Array(
            texty
                .iter()
                .map(|&i| {
                    let n = &tree.nodes[i];
                    let c = n.bounds.center();
                    json!({"text": if n.text.is_empty() { &n.content_desc } else { &n.text }, "class": n.short_class(), "clickable": n.clickable, "center": [c.x, c.y]})
                })
                .collect(),
        ))?;
        let texty: HashSet<usize> = texty.into_iter().collect();
        let outputs: [(String, &HashSet<usize>); 5] = [
            (screen.tree_text(None), &all),
            (compact, &in_compact),
            (serde_json::to_string(&repr)?, &in_json),
            (pretty_all, &all),
            (filtered, &texty),
        ];
        for (row, (text, kept)) in rows.iter_mut().zip(outputs.iter()) {
            row.tokens.push(count_o200k(text));
            row.act_present += act.len();
            row.act_kept += act.intersection(kept).count();
            row.clk_present += clk.len();
            row.clk_kept += clk.intersection(kept).count();
        }
    }
    println!("{} real dumps from {}\n", files.len(), dir.display());
    println!(
        "| format | median tokens | p90 tokens | actionable kept/present | clickable kept/present |"
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    for r in &mut rows {
        let med = pct(&mut r.tokens, 0.5);
        let p90 = pct(&mut r.tokens, 0.9);
        println!(
            "| {} | {} | {} | {}/{} ({:.1}%) | {}/{} ({:.1}%) |",
            r.name,
            med,
            p90,
            r.act_kept,
            r.act_present,
            100.0 * r.act_kept as f64 / r.act_present.max(1) as f64,
            r.clk_kept,
            r.clk_present,
            100.0 * r.clk_kept as f64 / r.clk_present.max(1) as f64
        );
    }
    println!("\nCompact format variants (tuning):\n");
    println!("| variant | median tokens | p90 tokens |");
    println!("| --- | ---: | ---: |");
    for ((name, _), v) in variants.iter().zip(variant_tokens.iter_mut()) {
        println!("| {name} | {} | {} |", pct(v, 0.5), pct(v, 0.9));
    }
    Ok(())
}
