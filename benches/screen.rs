//! Parse + compact representation per corpus file (issue 3's speed target: ≤ 0.1 ms
//! median per file on one core).
//!
//! Criterion measures every real fixture on its own (`parse_compact/NNN`) and the whole
//! corpus in one go; at the end a summary prints the median over files of the per-file
//! criterion-style means, so the one figure the issue asks for is on one line.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use droidpilot::screen::{CompactOptions, ReprOptions, Screen, parse::decode};

fn corpus() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uiautomator/real");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fixture corpus missing at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy()[..3].to_string();
            let bytes = std::fs::read(&f).unwrap();
            (name, decode(&bytes).unwrap().into_owned())
        })
        .collect()
}

fn parse_compact(xml: &str, opts: &ReprOptions, c: &CompactOptions) -> String {
    let screen = Screen::from_xml(xml, opts).expect("corpus dump parses");
    screen.compact(c)
}

fn bench(cr: &mut Criterion) {
    let files = corpus();
    let opts = ReprOptions::default();
    let c = CompactOptions::default();
    let mut g = cr.benchmark_group("parse_compact");
    g.warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(700))
        .sample_size(20);
    for (name, xml) in &files {
        g.bench_function(name, |b| {
            b.iter(|| parse_compact(black_box(xml), &opts, &c))
        });
    }
    g.finish();
    let mut g = cr.benchmark_group("corpus");
    g.sample_size(20);
    g.bench_function("parse_compact_all_58", |b| {
        b.iter(|| {
            for (_, xml) in &files {
                black_box(parse_compact(black_box(xml), &opts, &c));
            }
        })
    });
    // Where the time goes: roxmltree alone, the tree (scanner, then the roxmltree path it
    // falls back to), and the element map + compact text from an already-parsed tree.
    g.bench_function("roxmltree_only_all_58", |b| {
        b.iter(|| {
            for (_, xml) in &files {
                let clean = droidpilot::screen::parse::clean(xml).unwrap();
                black_box(
                    roxmltree::Document::parse(black_box(clean))
                        .unwrap()
                        .root()
                        .children()
                        .count(),
                );
            }
        })
    });
    g.bench_function("parse_to_tree_all_58", |b| {
        b.iter(|| {
            for (_, xml) in &files {
                black_box(droidpilot::screen::parse(black_box(xml)).unwrap());
            }
        })
    });
    // The same, forcing the roxmltree path the scanner falls back to.
    g.bench_function("parse_to_tree_roxmltree_all_58", |b| {
        b.iter(|| {
            for (_, xml) in &files {
                let clean = droidpilot::screen::parse::clean(xml).unwrap();
                black_box(
                    droidpilot::screen::parse::parse_clean_roxmltree(black_box(clean)).unwrap(),
                );
            }
        })
    });
    let trees: Vec<_> = files
        .iter()
        .map(|(_, x)| droidpilot::screen::parse(x).unwrap())
        .collect();
    g.bench_function("elements_compact_from_tree_all_58", |b| {
        b.iter(|| {
            for t in &trees {
                let s = Screen::new(black_box(t.clone()), &opts);
                black_box(s.compact(&c));
            }
        })
    });
    g.bench_function("clone_tree_all_58", |b| {
        b.iter(|| {
            for t in &trees {
                black_box(t.clone());
            }
        })
    });
    g.bench_function("full_representation_all_58", |b| {
        b.iter(|| {
            for (_, xml) in &files {
                let s = Screen::from_xml(black_box(xml), &opts).unwrap();
                black_box(s.representation(&opts));
            }
        })
    });
    g.finish();
}

/// The median over files of each file's mean time, measured the same way criterion does
/// (batches of iterations, best of several batches to drop scheduler noise).
fn summary() {
    let files = corpus();
    let opts = ReprOptions::default();
    let c = CompactOptions::default();
    let mut per_file: Vec<f64> = files
        .iter()
        .map(|(_, xml)| {
            let iters = 200;
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        black_box(parse_compact(black_box(xml), &opts, &c));
                    }
                    t.elapsed().as_secs_f64() / iters as f64
                })
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    per_file.sort_by(f64::total_cmp);
    let med = per_file[per_file.len() / 2];
    let p90 = per_file[per_file.len() * 9 / 10];
    println!(
        "SUMMARY parse+compact over {} files: median {:.1} µs/file, p90 {:.1} µs, max {:.1} µs",
        per_file.len(),
        med * 1e6,
        p90 * 1e6,
        per_file[per_file.len() - 1] * 1e6
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
