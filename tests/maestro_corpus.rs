//! The Maestro importer against real flows (`tests/fixtures/maestro-real`, each file's
//! source repository, path and commit in its `INDEX.tsv`): every flow either imports into
//! a valid script or is refused with its location, a reason and a hint, and nothing panics.
//! It prints the import rate and the commonest refusals (`--nocapture` shows them), so a
//! change to the importer shows what it does to flows people really write.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use droidpilot::script::maestro::{MaestroError, import};

fn corpus() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/maestro-real");
    assert!(
        dir.join("INDEX.tsv").is_file(),
        "Maestro corpus missing at {}: it is part of the repository",
        dir.display()
    );
    dir
}

/// One flow file of the corpus: its repository and where it lies under the corpus.
struct Flow {
    repo: String,
    file: PathBuf,
}

/// The YAML flows (`flow` and `subflow` rows) listed in INDEX.tsv, each checked to exist.
fn flows() -> Vec<Flow> {
    let dir = corpus();
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).expect("read INDEX.tsv");
    let mut lines = index.lines();
    assert_eq!(
        lines.next(),
        Some("repo\tpath\tcommit\tlicense\tkind"),
        "INDEX.tsv header"
    );
    let mut out = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let c: Vec<&str> = line.split('\t').collect();
        assert_eq!(c.len(), 5, "INDEX.tsv row {line:?}");
        assert!(
            c[2].len() == 40 && c[2].bytes().all(|b| b.is_ascii_hexdigit()),
            "commit of {line:?}"
        );
        let file = dir.join(c[0].replacen('/', "__", 1)).join(c[1]);
        assert!(
            file.is_file(),
            "INDEX.tsv lists a missing file: {}",
            file.display()
        );
        if matches!(c[4], "flow" | "subflow") {
            out.push(Flow {
                repo: c[0].to_string(),
                file,
            });
        }
    }
    out
}

/// A refusal's kind without the parts that differ per flow: the code and the message with
/// backquoted names kept (they are commands and keys) and quoted values dropped.
fn reason(e: &MaestroError) -> String {
    let msg: String = e
        .message
        .split('"')
        .step_by(2)
        .collect::<Vec<_>>()
        .join("\"…\"");
    format!("{}: {}", e.code, msg)
}

/// A refusal must say where (a line of the file, or the step of the script it became),
/// what and how to fix it.
fn check_refusal(flow: &Flow, text: &str, e: &MaestroError) {
    let name = flow.file.display();
    assert!(
        !e.message.trim().is_empty(),
        "{name}: refusal without a reason"
    );
    assert!(
        !e.hint.trim().is_empty(),
        "{name}: refusal without a hint: {e}"
    );
    if let Some(n) = e.location.strip_prefix("line ") {
        let n: usize = n.parse().unwrap_or_else(|_| panic!("{name}: location {e}"));
        let lines = text.lines().count().max(1);
        assert!(
            (1..=lines).contains(&n),
            "{name}: refused at line {n} of a {lines}-line file: {e}"
        );
    } else {
        assert!(
            e.location.starts_with("steps[") || e.location.starts_with("inputs"),
            "{name}: a refusal names neither a line nor a step: {e}"
        );
    }
}

#[test]
fn every_real_flow_imports_or_is_refused_with_its_place_and_reason() {
    let flows = flows();
    let repos: BTreeSet<&str> = flows.iter().map(|f| f.repo.as_str()).collect();
    assert!(
        flows.len() >= 150 && repos.len() >= 40,
        "the corpus is {} flows from {} repositories",
        flows.len(),
        repos.len()
    );
    let (mut imported, mut by_line, mut by_step) = (0, 0, 0);
    let mut reasons: BTreeMap<String, (usize, BTreeSet<&str>)> = BTreeMap::new();
    let mut imported_repos = BTreeSet::new();
    for flow in &flows {
        let text = std::fs::read_to_string(&flow.file).expect("read flow");
        let result = catch_unwind(AssertUnwindSafe(|| import(&text)));
        let result =
            result.unwrap_or_else(|_| panic!("import panicked on {}", flow.file.display()));
        match result {
            Ok(script) => {
                script
                    .validate()
                    .unwrap_or_else(|e| panic!("{}: invalid import: {e:?}", flow.file.display()));
                imported += 1;
                imported_repos.insert(flow.repo.as_str());
            }
            Err(e) => {
                check_refusal(flow, &text, &e);
                if e.location.starts_with("line ") {
                    by_line += 1;
                } else {
                    by_step += 1;
                }
                let entry = reasons.entry(reason(&e)).or_default();
                entry.0 += 1;
                entry.1.insert(flow.repo.as_str());
            }
        }
    }
    report(
        flows.len(),
        repos.len(),
        imported,
        imported_repos.len(),
        by_line,
        by_step,
        &reasons,
    );
    assert_eq!(imported + by_line + by_step, flows.len());
}

fn report(
    total: usize,
    repos: usize,
    imported: usize,
    imported_repos: usize,
    by_line: usize,
    by_step: usize,
    reasons: &BTreeMap<String, (usize, BTreeSet<&str>)>,
) {
    println!(
        "maestro corpus: {total} flows from {repos} repositories; imported {imported} \
         ({:.1}%, from {imported_repos} repositories); refused {} ({by_line} at a line, \
         {by_step} at a step)",
        100.0 * imported as f64 / total as f64,
        by_line + by_step
    );
    let mut top: Vec<_> = reasons.iter().collect();
    top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    println!("top refusal reasons (flows, repositories):");
    for (why, (n, r)) in top.iter().take(20) {
        println!("  {n:4} {:3}  {why}", r.len());
    }
}
