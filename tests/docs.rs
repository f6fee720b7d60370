//! The documentation a user reads against what the code and configuration say: every
//! route of the committed OpenAPI document has a row in the API guide's table, every guide
//! section the configuration, the code's hints and CI's scripts point at exists, every
//! link between the README and the guides lands on a file and heading, the README stays
//! short, and the user docs name things rather than issue or seed numbers. The guides'
//! command blocks are run by `tests/doc_commands.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn file(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The README and every guide, as paths relative to the repository.
fn user_docs() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| format!("docs/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    docs.sort();
    docs.insert(0, "README.md".into());
    docs
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a Markdown text (outside fenced blocks), as written.
fn headings(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(line.trim_start_matches('#').trim().to_string());
        }
    }
    out
}

#[test]
fn every_route_has_a_row_in_the_api_guide_table() {
    let guide = file("docs/api.md");
    let rows: BTreeSet<(String, String)> = guide
        .lines()
        .filter_map(|l| {
            let mut cells = l.split('|').map(str::trim).skip(1);
            let method = cells.next()?;
            let path = cells.next()?.strip_prefix('`')?;
            let path = path.split(['`', '?']).next()?;
            ["GET", "POST", "PUT", "DELETE", "PATCH"]
                .contains(&method)
                .then(|| (method.to_string(), path.to_string()))
        })
        .collect();
    let spec: serde_json::Value = serde_json::from_str(&file("openapi/openapi.json")).unwrap();
    let mut missing = Vec::new();
    for (path, ops) in spec["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            let m = method.to_uppercase();
            if ["GET", "POST", "PUT", "DELETE", "PATCH"].contains(&m.as_str())
                && !rows.contains(&(m.clone(), path.clone()))
            {
                missing.push(format!("{m} {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/api.md \"Endpoints\": {missing:?}"
    );
}

/// Files a user or a caller reads pointers in: the configuration, the code (hints,
/// OpenAPI descriptions), CI's scripts, the compose file, the fuzz manifest, the dashboard.
fn pointer_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut out: Vec<PathBuf> = [
        "config/default.toml",
        "ARCHITECTURE.md",
        "docker-compose.yml",
        "fuzz/Cargo.toml",
        "crates/droidpilot-http/dashboard/tasks.js",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    walk(&root().join("src"), &mut out);
    if root().join("crates").is_dir() {
        walk(&root().join("crates"), &mut out);
    }
    for e in std::fs::read_dir(root().join(".ci")).unwrap() {
        out.push(e.unwrap().path());
    }
    out
}

/// `docs/NAME.md "Section"` (quotes escaped or not) anywhere in the configuration, the
/// code or CI names a guide that exists and a heading it has; and nothing points at a
/// README section any more (the README keeps only the quick start).
#[test]
fn pointers_to_guide_sections_exist() {
    let mut pointed = 0;
    let mut problems = Vec::new();
    for path in pointer_sources() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let at = path.strip_prefix(root()).unwrap().display().to_string();
        for (i, line) in text.lines().enumerate() {
            let plain = line.replace("\\\"", "\"");
            if plain.contains("README \"") || plain.contains("README's action") {
                problems.push(format!("{at}:{}: points at a README section", i + 1));
            }
            for part in plain.split("docs/").skip(1) {
                let Some((name, rest)) = part.split_once(".md") else {
                    continue;
                };
                let Ok(guide) = std::fs::read_to_string(root().join(format!("docs/{name}.md")))
                else {
                    problems.push(format!("{at}:{}: no guide docs/{name}.md", i + 1));
                    continue;
                };
                let Some(section) = rest
                    .trim_start_matches([' ', '(', ','])
                    .strip_prefix('"')
                    .and_then(|s| s.split('"').next())
                else {
                    continue;
                };
                pointed += 1;
                if !headings(&guide).contains(section) {
                    problems.push(format!(
                        "{at}:{}: docs/{name}.md has no section \"{section}\"",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(pointed >= 10, "only {pointed} pointers to guide sections");
}

/// Every relative link in the README and the guides lands on a file, and on a heading of
/// it when the link has an anchor.
#[test]
fn links_between_the_docs_resolve() {
    let mut problems = Vec::new();
    let mut links = 0;
    for doc in user_docs() {
        let text = file(&doc);
        let dir = Path::new(&doc).parent().unwrap().to_path_buf();
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap();
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            links += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let rel = if path.is_empty() {
                PathBuf::from(&doc)
            } else {
                dir.join(path)
            };
            let Ok(body) = std::fs::read_to_string(root().join(&rel)) else {
                if !root().join(&rel).is_dir() {
                    problems.push(format!("{doc}: link to a missing file: {target}"));
                }
                continue;
            };
            if !anchor.is_empty() && !headings(&body).iter().any(|h| slug(h) == anchor) {
                problems.push(format!("{doc}: no heading for #{anchor} in {target}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(links >= 30, "only {links} links");
}

/// The README is the front door: what droidpilot is, the two commands, one task, where
/// to go next. The manual is in docs/.
#[test]
fn the_readme_stays_short_and_links_every_guide() {
    let readme = file("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail into docs/"
    );
    assert!(
        readme.contains("cargo test --locked"),
        ".ci/run runs the README's test command"
    );
    for guide in user_docs().iter().filter(|d| d.starts_with("docs/")) {
        assert!(
            readme.contains(&format!("({guide})")),
            "README does not link {guide}"
        );
    }
}

/// User docs say what a thing is, not which issue or seed it came from.
#[test]
fn user_docs_name_no_issue_or_seed_numbers() {
    let mut problems = Vec::new();
    for doc in user_docs() {
        for (i, line) in file(&doc).lines().enumerate() {
            let lower = line.to_lowercase();
            for word in ["issue ", "issues ", "seed "] {
                for (pos, _) in lower.match_indices(word) {
                    let after = &lower[pos + word.len()..];
                    if after.starts_with(|c: char| c.is_ascii_digit()) {
                        problems.push(format!("{doc}:{}: {}", i + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
