//! Replays, under plain `cargo test`, every input the fuzzers were seeded with
//! (`fuzz/seeds/<target>/`) and every crash they ever found (`fuzz/regressions/<target>/`)
//! through the same body the cargo-fuzz binary runs (`droidpilot::fuzzing`). A crash
//! found by `.ci/fuzz` is fixed, then its reproducer is copied into `fuzz/regressions/`,
//! so it stays fixed. Also keeps the fuzz package and the library's target table in step.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use droidpilot::fuzzing::{TARGETS, target};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `dir/<target>/` for each target directory under `dir`.
fn inputs(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(targets) = std::fs::read_dir(dir) else {
        return out;
    };
    for t in targets.map(Result::unwrap) {
        let name = t.file_name().to_string_lossy().into_owned();
        assert!(
            t.path().is_dir() && target(&name).is_some(),
            "{} is not a fuzz target's folder (known: {:?})",
            t.path().display(),
            TARGETS.iter().map(|t| t.name).collect::<Vec<_>>()
        );
        for f in std::fs::read_dir(t.path()).unwrap().map(Result::unwrap) {
            out.push((name.clone(), f.path()));
        }
    }
    out.sort();
    out
}

/// Runs every input; returns the ones that panicked, named.
fn replay(inputs: &[(String, PathBuf)]) -> Vec<String> {
    let mut failed = Vec::new();
    for (name, path) in inputs {
        let data = std::fs::read(path).unwrap();
        let run = target(name).unwrap().run;
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            failed.push(format!("{name}: {}", path.display()));
        }
    }
    failed
}

#[test]
fn every_saved_crash_is_fixed() {
    let found = inputs(&fuzz_dir().join("regressions"));
    let failed = replay(&found);
    assert!(
        failed.is_empty(),
        "fuzz reproducers that still panic:\n{}",
        failed.join("\n")
    );
    eprintln!("{} fuzz reproducers replayed, none panics", found.len());
}

#[test]
fn every_seed_runs_and_every_target_has_seeds() {
    let found = inputs(&fuzz_dir().join("seeds"));
    let failed = replay(&found);
    assert!(
        failed.is_empty(),
        "seeds that panic:\n{}",
        failed.join("\n")
    );
    let seeded: BTreeSet<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    for t in TARGETS {
        assert!(seeded.contains(t.name), "fuzz/seeds/{}/ is empty", t.name);
    }
}

#[test]
fn the_fuzz_package_builds_exactly_the_library_targets() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let bins: BTreeSet<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|n| *n != "droidpilot-fuzz")
        .collect();
    let table: BTreeSet<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        bins, table,
        "fuzz/Cargo.toml [[bin]]s vs droidpilot::fuzzing::TARGETS"
    );
    for t in TARGETS {
        let src = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{}.rs", t.name)))
            .unwrap_or_else(|e| panic!("fuzz_targets/{}.rs: {e}", t.name));
        assert!(
            src.contains(&format!("droidpilot::fuzzing::{}(data)", t.name)),
            "fuzz_targets/{}.rs must call droidpilot::fuzzing::{}",
            t.name,
            t.name
        );
    }
}
