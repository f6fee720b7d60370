//! The crate map is the layer map: each workspace crate may depend only on the crates
//! ARCHITECTURE.md puts below it. The compiler enforces what a crate can import once the
//! dependency is absent; this test keeps the dependency absent, so a `droidpilot-mcp =`
//! line slipped into the HTTP crate's manifest (or the core reaching up) fails here with
//! the edge named.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Who may depend on whom: the rows of ARCHITECTURE.md "Crates".
const ALLOWED: &[(&str, &[&str])] = &[
    ("droidpilot-core", &[]),
    ("droidpilot-sim", &["droidpilot-core"]),
    ("droidpilot-store", &["droidpilot-core"]),
    ("droidpilot-maestro", &["droidpilot-core"]),
    (
        "droidpilot-app",
        &[
            "droidpilot-core",
            "droidpilot-sim",
            "droidpilot-store",
            "droidpilot-maestro",
        ],
    ),
    ("droidpilot-http", &["droidpilot-app"]),
    ("droidpilot-mcp", &["droidpilot-app"]),
    ("droidpilot-bench", &["droidpilot-app", "droidpilot-http"]),
    (
        "droidpilot",
        &[
            "droidpilot-app",
            "droidpilot-http",
            "droidpilot-mcp",
            "droidpilot-bench",
            "droidpilot-maestro",
        ],
    ),
];

/// Each workspace package and the workspace packages it depends on (any kind).
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"].as_array().unwrap();
            let inner = deps
                .iter()
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|n| names.contains(n))
                .collect();
            (p["name"].as_str().unwrap().to_string(), inner)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let edges = workspace_edges();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let listed: BTreeSet<&str> = allowed.keys().copied().collect();
    let present: BTreeSet<&str> = edges.keys().map(String::as_str).collect();
    assert_eq!(
        present, listed,
        "a crate was added or removed: give it a row here and in ARCHITECTURE.md \"Crates\""
    );
    let mut wrong = Vec::new();
    for (krate, deps) in &edges {
        for dep in deps {
            if !allowed[krate.as_str()].contains(&dep.as_str()) {
                wrong.push(format!("{krate} → {dep}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies across the layer map: {wrong:?}"
    );
}

#[test]
fn the_bench_is_not_published() {
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/droidpilot-bench/Cargo.toml"
    ))
    .unwrap();
    assert!(
        manifest.lines().any(|l| l.trim() == "publish = false"),
        "droidpilot-bench must stay unpublished"
    );
}
