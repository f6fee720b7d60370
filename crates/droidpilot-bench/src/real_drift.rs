//! Drift from the real world: how open-source Android apps actually renamed resource ids
//! and reworded UI strings between releases, mined from their git histories into
//! `tests/fixtures/drift-real/pairs.tsv` (one row per change, with its repository,
//! commit and file; the README there says how it was mined), and a rename-map generator
//! that applies those patterns, at their observed frequencies, to another app's ids and
//! labels (`rename_map`).
//!
//! `classify` names each change's pattern (casing, abbreviation, prefix_suffix, synonym,
//! rewording, punctuation, other); the fixture's `pattern` column is its output, and a
//! test keeps the two in step (`DRIFT_REAL_BLESS=1` rewrites the column after a
//! classifier change). `stats` counts the rows per app, kind and pattern.
//!
//! This table and this code are the generator's alone: the product's matcher must never
//! read them, or it would be tuned to the drift it is measured on.

mod classify;
mod generate;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

pub use classify::{Pattern, classify};
pub use generate::{Rename, rename_map, rename_map_json, renames};

/// The fixture, compiled in so a fresh clone needs nothing else.
const PAIRS_TSV: &str = include_str!("../../../tests/fixtures/drift-real/pairs.tsv");

const HEADER: &str = "app\trepo\tcommit\tpath\tkind\told\tnew\tpattern";

/// What changed: a resource id or a UI string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Id,
    String,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Id => "id",
            Kind::String => "string",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Id, Kind::String]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// One real change: `old` became `new` in `path` of `repo` at `commit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub app: String,
    pub repo: String,
    pub commit: String,
    pub path: String,
    pub kind: Kind,
    pub old: String,
    pub new: String,
    pub pattern: Pattern,
}

/// Every row of the fixture.
pub fn pairs() -> &'static [Pair] {
    static PAIRS: OnceLock<Vec<Pair>> = OnceLock::new();
    PAIRS.get_or_init(|| parse(PAIRS_TSV).unwrap_or_else(|e| panic!("pairs.tsv: {e}")))
}

/// Parses the fixture: the header, then eight tab-separated columns a row.
fn parse(tsv: &str) -> Result<Vec<Pair>, String> {
    let mut lines = tsv.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!("the first line must be the header `{HEADER}`"));
    }
    lines
        .enumerate()
        .map(|(i, line)| row(i + 2, line))
        .collect()
}

fn row(n: usize, line: &str) -> Result<Pair, String> {
    let c: Vec<&str> = line.split('\t').collect();
    let [app, repo, commit, path, kind, old, new, pattern] = c[..] else {
        return Err(format!("line {n}: {} columns, not 8", c.len()));
    };
    Ok(Pair {
        app: app.into(),
        repo: repo.into(),
        commit: commit.into(),
        path: path.into(),
        kind: Kind::parse(kind).ok_or_else(|| format!("line {n}: kind `{kind}`"))?,
        old: old.into(),
        new: new.into(),
        pattern: Pattern::parse(pattern).ok_or_else(|| format!("line {n}: pattern `{pattern}`"))?,
    })
}

/// The fixture's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub apps: BTreeMap<String, AppStats>,
    pub patterns: BTreeMap<(Kind, Pattern), usize>,
    pub total: usize,
}

/// One app's rows: its repository, how many of each kind and of each pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppStats {
    pub repo: String,
    pub ids: usize,
    pub strings: usize,
    pub patterns: BTreeMap<Pattern, usize>,
}

/// Counts per app, kind and pattern.
pub fn stats() -> Stats {
    let mut s = Stats::default();
    for p in pairs() {
        let app = s.apps.entry(p.app.clone()).or_default();
        app.repo.clone_from(&p.repo);
        match p.kind {
            Kind::Id => app.ids += 1,
            Kind::String => app.strings += 1,
        }
        *app.patterns.entry(p.pattern).or_default() += 1;
        *s.patterns.entry((p.kind, p.pattern)).or_default() += 1;
        s.total += 1;
    }
    s
}

impl Stats {
    /// The counts as the fixture's README shows them: two Markdown tables.
    pub fn markdown(&self) -> String {
        let ids: usize = self.apps.values().map(|a| a.ids).sum();
        let strings: usize = self.apps.values().map(|a| a.strings).sum();
        let mut out = format!(
            "{} pairs from {} apps: {ids} id renames, {strings} string changes.\n\n",
            self.total,
            self.apps.len()
        );
        let names: Vec<&str> = Pattern::ALL.iter().map(|p| p.as_str()).collect();
        let _ = writeln!(
            out,
            "| app | repository | ids | strings | {} |",
            names.join(" | ")
        );
        let _ = writeln!(out, "| --- | --- |{}", " ---: |".repeat(2 + names.len()));
        for (app, a) in &self.apps {
            let per: Vec<String> = Pattern::ALL
                .iter()
                .map(|p| a.patterns.get(p).copied().unwrap_or(0).to_string())
                .collect();
            let (repo, i, s) = (&a.repo, a.ids, a.strings);
            let _ = writeln!(out, "| {app} | {repo} | {i} | {s} | {} |", per.join(" | "));
        }
        out.push_str("\n| pattern | ids | strings |\n| --- | ---: | ---: |\n");
        for p in Pattern::ALL {
            let n = |k| self.patterns.get(&(k, p)).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                p.as_str(),
                n(Kind::Id),
                n(Kind::String)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests;
