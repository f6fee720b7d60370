//! The command blocks a reader copies from the README and the guides in `docs/`, run.
//!
//! Every fenced shell block (```sh, ```bash, ```shell) is taken from the Markdown. A block
//! whose info string names what it needs (```sh needs=key,server) is checked for syntax
//! only (`bash -n`); every other block runs for real, the blocks of one file in order in
//! one bash, against a fresh `droidpilot serve` on a free port. The convention and the
//! list of needs are in docs/README.md ("The command blocks are tested").

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::serve::{free_port, start};

/// The needs a block may declare; docs/README.md says what each means.
const NEEDS: &[&str] = &[
    "phone", "adb", "key", "server", "running", "postgres", "docker", "client", "long",
];

/// How long the runnable blocks of one file may take together.
const FILE_TIMEOUT: Duration = Duration::from_secs(300);

/// One fenced shell block: where it starts (the fence's line, 1-based), what it needs
/// (empty: it runs) and its text.
#[derive(Debug)]
struct Block {
    line: usize,
    needs: Vec<String>,
    code: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every guide under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// The shell blocks of a Markdown text. Fences may be indented (inside a list item); the
/// indentation is taken off the block's lines.
fn shell_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let needs: Vec<String> = words
            .filter_map(|w| w.strip_prefix("needs="))
            .flat_map(|n| n.split(','))
            .map(str::to_string)
            .collect();
        let mut code = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            code.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            code.push('\n');
        }
        if ["sh", "bash", "shell"].contains(&lang) {
            blocks.push(Block {
                line: i + 1,
                needs,
                code,
            });
        }
    }
    blocks
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
}

/// `bash -n` on one block: the syntax a reader's shell will parse.
fn syntax_error(code: &str) -> Option<String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The runnable blocks of one file as one bash script: `droidpilot` is the binary under
/// test, `curl` fails on an HTTP error, `localhost:8080` is the test's server, and each
/// block first records its line in `.doc_block` so a failure names it.
fn script(blocks: &[&Block], port: u16) -> String {
    let mut s = format!(
        "set -e -o pipefail\n\
         droidpilot() {{ \"{bin}\" \"$@\"; }}\n\
         curl() {{ command curl --fail-with-body --max-time 60 \"$@\"; }}\n",
        bin = env!("CARGO_BIN_EXE_droidpilot")
    );
    for b in blocks {
        let code = b
            .code
            .replace("localhost:8080", &format!("127.0.0.1:{port}"))
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
        s.push_str(&format!("echo {} > .doc_block\n{code}\n", b.line));
    }
    s
}

/// A server of its own for one file: the shipped defaults (the virtual phone `sim-1`, no
/// token), with the test's port and no adb, so no phone on the test machine is used.
async fn server(dir: &Path) -> (common::serve::Proc, u16) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port = free_port();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!("[server]\nbind = \"127.0.0.1:{port}\"\n[devices.adb]\nenabled = false\n"),
    )
    .unwrap();
    (start(dir, port).await, port)
}

/// Runs one file's runnable blocks; the error names the block that failed and shows what
/// the shell printed.
async fn run_file(doc: &Path, blocks: &[&Block]) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = server(dir.path()).await;
    let run = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(script(blocks, port))
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(FILE_TIMEOUT, run).await;
    let line = std::fs::read_to_string(dir.path().join(".doc_block")).unwrap_or_default();
    let at = format!("{}:{}", rel(doc), line.trim());
    match out {
        Err(_) => Err(format!("{at}: still running after {FILE_TIMEOUT:?}")),
        Ok(out) => {
            let out = out.expect("bash runs");
            if out.status.success() {
                return Ok(());
            }
            let tail = |b: &[u8]| {
                let s = String::from_utf8_lossy(b);
                let lines: Vec<&str> = s.lines().collect();
                lines[lines.len().saturating_sub(30)..].join("\n")
            };
            Err(format!(
                "{at}: the block failed ({})\n--- stdout\n{}\n--- stderr\n{}",
                out.status,
                tail(&out.stdout),
                tail(&out.stderr)
            ))
        }
    }
}

/// Whether the tools the examples use are installed. Without them the runnable blocks are
/// skipped with a notice; `DROIDPILOT_REQUIRE_DOC_TOOLS=1` (set by `.ci/run`) makes a
/// missing tool a failure instead.
fn doc_tools_present() -> bool {
    let missing: Vec<&str> = ["bash", "curl", "jq", "tar"]
        .into_iter()
        .filter(|tool| {
            !std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let required = std::env::var_os("DROIDPILOT_REQUIRE_DOC_TOOLS").is_some_and(|v| v == "1");
    assert!(
        !required,
        "the documentation's examples use {missing:?}; install them (.ci/run does)"
    );
    eprintln!(
        "## SKIPPED tests/doc_commands.rs: the examples use {missing:?}, not installed \
         (apt-get install curl jq). ##"
    );
    false
}

/// Every shell block parses, and every `needs=` names a need docs/README.md explains.
#[test]
fn every_command_block_parses_and_declares_known_needs() {
    let mut problems = Vec::new();
    let mut count = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for b in shell_blocks(&text) {
            count += 1;
            let at = format!("{}:{}", rel(&doc), b.line);
            for n in &b.needs {
                if !NEEDS.contains(&n.as_str()) {
                    problems.push(format!("{at}: unknown need `{n}` (known: {NEEDS:?})"));
                }
            }
            if let Some(e) = syntax_error(&b.code) {
                problems.push(format!("{at}: {e}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(count >= 20, "only {count} shell blocks found");
}

/// Every block that needs nothing runs, file by file, against a fresh server.
#[tokio::test(flavor = "multi_thread")]
async fn every_runnable_command_block_runs() {
    if !doc_tools_present() {
        return;
    }
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let blocks = shell_blocks(&text);
        let runnable: Vec<&Block> = blocks.iter().filter(|b| b.needs.is_empty()).collect();
        if runnable.is_empty() {
            continue;
        }
        ran += runnable.len();
        if let Err(e) = run_file(&doc, &runnable).await {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 8, "only {ran} runnable blocks");
}

/// The harness itself: a runnable block that fails is reported, naming its line.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_block_fails_and_names_its_line() {
    if !doc_tools_present() {
        return;
    }
    let md = "# t\n\n```sh\ncurl -s localhost:8080/healthz\n```\n\n```sh\ncurl -s localhost:8080/v1/tasks/nope\n```\n";
    let blocks = shell_blocks(md);
    let refs: Vec<&Block> = blocks.iter().collect();
    let err = run_file(&root().join("README.md"), &refs)
        .await
        .expect_err("a 404 fails the block");
    assert!(err.starts_with("README.md:7:"), "{err}");
    let parsed = shell_blocks("```sh needs=key,long\n  echo hi\n```\n");
    assert_eq!(parsed[0].needs, ["key", "long"]);
}
