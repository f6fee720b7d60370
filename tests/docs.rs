//! The documentation a user reads against what the code and configuration say: every
//! route of the committed OpenAPI document has a row in the README's API table, and every
//! README section `config/default.toml` points at exists.

use std::collections::BTreeSet;

fn file(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_route_has_a_row_in_the_readme_api_table() {
    let readme = file("README.md");
    let rows: BTreeSet<(String, String)> = readme
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
    assert!(missing.is_empty(), "not in README \"The API\": {missing:?}");
}

#[test]
fn the_configuration_points_at_readme_sections_that_exist() {
    let readme = file("README.md");
    let headings: BTreeSet<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    let config = file("config/default.toml");
    let mut pointed = 0;
    for (i, line) in config.lines().enumerate() {
        for part in line.split("README \"").skip(1) {
            let name = part.split('"').next().unwrap();
            assert!(
                headings.contains(name),
                "config/default.toml line {}: README has no section \"{name}\"",
                i + 1
            );
            pointed += 1;
        }
    }
    assert!(pointed >= 3, "the configuration points at README sections");
}
