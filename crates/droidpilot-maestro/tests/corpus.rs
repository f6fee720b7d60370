//! Every flow file in the corpora parses, or is refused naming a line and a reason:
//! `tests/fixtures/maestro/` (a dozen real flows from public repositories, sources in
//! its `INDEX.tsv`, plus hand-written ones) and, when present,
//! `tests/fixtures/maestro-real/` (the larger corpus of real flows). Prints the counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use droidpilot_maestro::parse_flow;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every `*.yaml` / `*.yml` under `dir` but workspace configs, relative to `dir`.
fn flow_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if (name.ends_with(".yaml") || name.ends_with(".yml"))
                && !name.starts_with("config.")
            {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Parses every flow under `dir`; returns (parsed, refusals by code, refusal lines).
fn run(dir: &Path) -> (usize, BTreeMap<&'static str, usize>, Vec<String>) {
    let (mut ok, mut refused, mut lines) = (0, BTreeMap::new(), Vec::new());
    for rel in flow_files(dir) {
        let text = std::fs::read_to_string(dir.join(&rel)).unwrap();
        match parse_flow(&text) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(
                    e.line >= 1,
                    "{}: a refusal names a line: {e:?}",
                    rel.display()
                );
                assert!(
                    !e.message.is_empty() && !e.hint.is_empty(),
                    "{}: {e:?}",
                    rel.display()
                );
                *refused.entry(e.code).or_insert(0) += 1;
                lines.push(format!("{}: {} [{}] {}", rel.display(), e, e.code, e.hint));
            }
        }
    }
    (ok, refused, lines)
}

#[test]
fn the_real_flows_here_all_parse_and_index_names_their_sources() {
    let dir = fixtures().join("maestro");
    let (ok, refused, lines) = run(&dir);
    println!("tests/fixtures/maestro: {ok} parsed, refused {refused:?}");
    assert!(
        refused.is_empty(),
        "every flow here is valid Maestro: {lines:#?}"
    );
    assert!(ok >= 12, "{ok}");
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).unwrap();
    let mut listed: Vec<&str> = index
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    listed.sort();
    let files: Vec<String> = flow_files(&dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(listed, files, "INDEX.tsv and the files disagree");
    for row in index.lines().skip(1).filter(|l| l.starts_with("real/")) {
        let cols: Vec<&str> = row.split('\t').collect();
        assert!(
            cols.len() >= 4 && cols[1].contains('/') && cols[3].len() == 40,
            "{row}"
        );
    }
}

#[test]
fn the_larger_corpus_parses_or_is_refused_with_a_line_and_a_reason() {
    let dir = fixtures().join("maestro-real");
    if !dir.is_dir() {
        println!("tests/fixtures/maestro-real: absent");
        return;
    }
    let (ok, refused, lines) = run(&dir);
    let total = ok + refused.values().sum::<usize>();
    println!("tests/fixtures/maestro-real: {total} flows, {ok} parsed, refused {refused:?}");
    for l in &lines {
        println!("  {l}");
    }
    assert!(total > 0);
}
