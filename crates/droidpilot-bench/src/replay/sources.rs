//! Where `droidpilot bench replay`'s flows come from: the suites' sim tasks (recorded on a
//! clean phone), and scripts from outside the suite (`--scripts DIR`, `--flows-from DIR`).
//!
//! A script from outside names the sim task whose checker judges it by its file name:
//! the longest run of the name's dot-separated parts that is a sim task id
//! (`clock.delete_0600.json`, `clock.delete_0600.by_hand.json` and
//! `clock.delete_0600.v2.yaml` are all checked by `clock.delete_0600`), so a script
//! document stays a plain script document and a Maestro flow a plain flow. Every input
//! needs a default: nobody types one in at the bench.

use std::path::Path;

use super::options::Suite;
use super::{FLOWS, ReplayBenchError};
use crate::device::sim::{task, tasks};
use crate::script::Script;

/// One flow to replay.
#[derive(Debug, Clone)]
pub enum FlowSource {
    /// A sim task: its reference solution is recorded on a clean phone as the script.
    Task(String),
    /// A script from outside the suite, judged by `task`'s checker.
    File {
        /// The file's name (`clock.delete_0600.by_hand.json`).
        name: String,
        task: String,
        script: Box<Script>,
    },
}

impl FlowSource {
    /// The flow's name in the report: the task id, or the file's name.
    pub fn name(&self) -> &str {
        match self {
            FlowSource::Task(id) => id,
            FlowSource::File { name, .. } => name,
        }
    }

    /// The sim task that judges it.
    pub fn task_id(&self) -> &str {
        match self {
            FlowSource::Task(id) => id,
            FlowSource::File { task, .. } => task,
        }
    }
}

/// A suite's flows, by task id.
pub fn suite_flows(suite: Suite) -> Vec<String> {
    match suite {
        Suite::Drift | Suite::Realistic => FLOWS.iter().map(|f| f.to_string()).collect(),
        Suite::Holdout => holdout().0,
    }
}

/// The hold-out suite: every sim task outside `FLOWS` with a reference solution, in the
/// sim's order; and those left out, with why (a task whose reference asks a person a
/// question cannot be recorded with nobody to answer).
pub fn holdout() -> (Vec<String>, Vec<(String, String)>) {
    let (mut run, mut left) = (Vec::new(), Vec::new());
    for t in tasks() {
        if FLOWS.contains(&t.id) {
            continue;
        }
        if t.reference().is_empty() {
            left.push((t.id.to_string(), "no reference solution".to_string()));
        } else if t.needs_user() {
            left.push((
                t.id.to_string(),
                "its reference asks a person (ask_user); nobody answers at the bench".into(),
            ));
        } else {
            run.push(t.id.to_string());
        }
    }
    (run, left)
}

/// What a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Script documents, `*.json`.
    Script,
    /// Maestro flows, `*.yaml` / `*.yml`.
    Maestro,
}

impl Kind {
    fn takes(self, ext: &str) -> bool {
        match self {
            Kind::Script => ext == "json",
            Kind::Maestro => ext == "yaml" || ext == "yml",
        }
    }
    fn what(self) -> &'static str {
        match self {
            Kind::Script => "script documents (*.json)",
            Kind::Maestro => "Maestro flows (*.yaml, *.yml)",
        }
    }
}

fn source_error(message: String, hint: &str) -> ReplayBenchError {
    ReplayBenchError::Source {
        message,
        hint: hint.into(),
    }
}

/// The scripts in a folder, in file-name order; the first file that cannot be used is
/// refused, naming it.
pub fn scripts_in(dir: &Path, kind: Kind) -> Result<Vec<FlowSource>, ReplayBenchError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        source_error(
            format!("cannot read the folder {}: {e}", dir.display()),
            "give a folder of script files",
        )
    })?;
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| kind.takes(&e.to_ascii_lowercase()))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(source_error(
            format!("{} holds no {}", dir.display(), kind.what()),
            "name each file after the sim task that checks it, e.g. clock.delete_0600.json",
        ));
    }
    paths.iter().map(|p| load(p, kind)).collect()
}

fn load(path: &Path, kind: Kind) -> Result<FlowSource, ReplayBenchError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |m: String, hint: &str| source_error(format!("{}: {m}", path.display()), hint);
    let task = task_named(&name).ok_or_else(|| {
        fail(
            "the file name names no sim task".into(),
            "name the file after the sim task whose checker judges it (`clock.delete_0600.json`, `clock.delete_0600.by_hand.json`); `droidpilot sim --list-tasks` lists them",
        )
    })?;
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string(), "a readable file"))?;
    let script = match kind {
        Kind::Script => {
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| fail(format!("not JSON: {e}"), "a script document is JSON"))?;
            Script::from_json(&v).map_err(|e| fail(e.to_string(), &e.hint))?
        }
        Kind::Maestro => {
            crate::script::maestro::import(&text).map_err(|e| fail(e.to_string(), &e.hint))?
        }
    };
    if let Some((input, _)) = script.inputs.iter().find(|(_, i)| i.default.is_none()) {
        return Err(fail(
            format!("input `{input}` has no default"),
            "give every input a default: nobody types one in at the bench",
        ));
    }
    Ok(FlowSource::File {
        name,
        task,
        script: Box::new(script),
    })
}

/// The sim task a file's name names: the longest run of its dot-separated parts that is
/// a task id (`clock.delete_0600.by_hand.json` → `clock.delete_0600`).
pub fn task_named(file: &str) -> Option<String> {
    let parts: Vec<&str> = file.split('.').collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("."))
        .find(|id| task(id).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_names_its_task_by_the_longest_task_id_it_starts_with() {
        assert_eq!(
            task_named("clock.delete_0600.json").as_deref(),
            Some("clock.delete_0600")
        );
        assert_eq!(
            task_named("clock.delete_0600.by_hand.v2.yaml").as_deref(),
            Some("clock.delete_0600")
        );
        assert_eq!(task_named("clock.json"), None);
        assert_eq!(task_named("delete_0600.json"), None);
    }

    #[test]
    fn a_script_file_is_refused_naming_the_file_and_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nonsense.json");
        std::fs::write(&p, "{}").unwrap();
        let e = scripts_in(dir.path(), Kind::Script).unwrap_err();
        assert!(e.to_string().contains("nonsense.json"), "{e}");
        assert!(e.hint().contains("sim task"), "{}", e.hint());
        std::fs::remove_file(&p).unwrap();
        let p = dir.path().join("clock.delete_0600.json");
        std::fs::write(
            &p,
            r#"{"name": "x", "goal": "x", "inputs": {"who": null},
                "steps": [{"action": "type", "parameters": {"text": "${who}"}}]}"#,
        )
        .unwrap();
        let e = scripts_in(dir.path(), Kind::Script).unwrap_err();
        assert!(e.to_string().contains("`who` has no default"), "{e}");
        let e = scripts_in(dir.path(), Kind::Maestro).unwrap_err();
        assert!(e.to_string().contains("no Maestro flows"), "{e}");
    }

    #[test]
    fn the_holdout_suite_is_every_other_task_with_a_reference() {
        let (run, left) = holdout();
        assert!(run.len() >= 30, "{}", run.len());
        for id in &run {
            assert!(!FLOWS.contains(&id.as_str()));
            assert!(!task(id).unwrap().reference().is_empty());
        }
        assert_eq!(run.len() + left.len() + FLOWS.len(), tasks().len());
    }
}
