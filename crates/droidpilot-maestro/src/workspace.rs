//! A workspace as `maestro test DIR` takes it, over an in-memory map of its files
//! (path relative to the workspace root → text), so it stays pure: the caller reads
//! the folder or the uploaded `.zip`.
//!
//! What Maestro does (its `WorkspaceExecutionPlanner`), and so what this does:
//! - Flow files are the `*.yaml` / `*.yml` files other than `config.yaml` / `config.yml`.
//! - `config.yaml` (or `config.yml`) at the root: `flows` globs (default `*`: the top
//!   folder only; `**` crosses folders), `includeTags` / `excludeTags` (added to the
//!   command line's), `executionOrder` (`flowsOrder`: flows by name, run one after the
//!   other first; `continueOnFailure`, default true). Other keys are Maestro cloud's and
//!   are kept by name only.
//! - A flow runs when it has one of the include tags (if any are given) and none of the
//!   exclude tags.
//! - Every selected flow is parsed, and every file it names (`runFlow`, `retry` with
//!   `file`, `runScript`, `addMedia`) is resolved relative to the naming flow and
//!   loaded, recursively, so a missing file or a bad sub-flow is refused before anything
//!   runs. A flow that reaches itself again through `runFlow` is refused (Maestro would
//!   recurse until it runs out of stack).
//! - `-e KEY=VALUE` values are defined before each flow's own `env` (see `expr`).

use std::collections::BTreeMap;

use globset::{GlobBuilder, GlobSetBuilder};

use crate::ast::{Command, CommandKind, Flow, FlowSource};
use crate::error::ParseError;
use crate::parse::{did_you_mean, parse_flow};
use crate::yaml::{self, Node};

/// The workspace's files: path (with `/`, relative to the root) → text.
pub type Files = BTreeMap<String, String>;

/// `config.yaml`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkspaceConfig {
    /// `flows` globs; `*` when absent.
    pub flows: Vec<String>,
    pub include_tags: Vec<String>,
    pub exclude_tags: Vec<String>,
    pub flows_order: Vec<String>,
    pub continue_on_failure: bool,
    /// Keys Maestro's cloud reads (`appId`, `platform`, …), by name.
    pub other: Vec<String>,
}

/// What `maestro test` is told on its command line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Options {
    pub include_tags: Vec<String>,
    pub exclude_tags: Vec<String>,
    /// `-e KEY=VALUE`, in order.
    pub env: Vec<(String, String)>,
}

/// A loaded workspace: what to run and every file it needs, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub config: WorkspaceConfig,
    /// Flows to run in any order (sharded), by path, sorted.
    pub flows: Vec<String>,
    /// Flows to run first, one after the other (`flowsOrder`).
    pub sequence: Vec<String>,
    /// Every flow file reached (selected flows and the files they run), parsed.
    pub parsed: BTreeMap<String, Flow>,
    /// `runScript` files reached, by path.
    pub scripts: BTreeMap<String, String>,
    pub env: Vec<(String, String)>,
}

/// Reads `-e KEY=VALUE`.
pub fn parse_env_arg(arg: &str) -> Result<(String, String), ParseError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(ParseError::new(
            0,
            "invalid_workspace",
            format!("`-e {arg}` is not KEY=VALUE"),
            "Write `-e USER=alice`.",
        )),
    }
}

fn is_flow_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    matches!(ext, "yaml" | "yml") && stem != "config"
}

/// The path a flow at `from` means by `file` (`../common/login.yaml` from
/// `flows/a.yaml` is `common/login.yaml`).
pub fn resolve(from: &str, file: &str) -> String {
    let mut parts: Vec<&str> = if file.starts_with('/') {
        Vec::new()
    } else {
        from.rsplit_once('/')
            .map_or(Vec::new(), |(dir, _)| dir.split('/').collect())
    };
    for p in file.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn workspace_error(message: impl Into<String>, hint: impl Into<String>) -> ParseError {
    ParseError::new(0, "invalid_workspace", message, hint)
}

/// `config.yaml`'s fields.
pub fn parse_config(text: &str) -> Result<WorkspaceConfig, ParseError> {
    let mut c = WorkspaceConfig {
        continue_on_failure: true,
        ..WorkspaceConfig::default()
    };
    let docs = yaml::load(text)?;
    let Some(root) = docs.into_iter().find(|d| !d.is_null()) else {
        return Ok(c);
    };
    let kv = root.map().ok_or_else(|| {
        ParseError::new(
            root.line,
            "invalid_workspace",
            "config.yaml is not a mapping",
            "Write `flows:`, `includeTags:` … at the top level.",
        )
    })?;
    for (key, line, v) in kv {
        match key.as_str() {
            "flows" => c.flows = crate::parse::string_list(key, v)?,
            "includeTags" => c.include_tags = crate::parse::string_list(key, v)?,
            "excludeTags" => c.exclude_tags = crate::parse::string_list(key, v)?,
            "executionOrder" => execution_order(&mut c, v)?,
            other => {
                const KNOWN: &[&str] = &["flows", "includeTags", "excludeTags", "executionOrder"];
                if let Some(k) = did_you_mean(other, KNOWN.iter().copied()) {
                    return Err(ParseError::new(
                        *line,
                        "invalid_workspace",
                        format!("config.yaml has no field `{other}`"),
                        format!("Did you mean `{k}`?"),
                    ));
                }
                c.other.push(other.to_string());
            }
        }
    }
    Ok(c)
}

fn execution_order(c: &mut WorkspaceConfig, v: &Node) -> Result<(), ParseError> {
    let f = crate::parse::Fields::new("executionOrder", v, &["continueOnFailure", "flowsOrder"])?;
    c.continue_on_failure = f.bool("continueOnFailure")?.unwrap_or(true);
    if let Some(order) = f.get("flowsOrder") {
        c.flows_order = crate::parse::string_list("flowsOrder", order)?;
    }
    Ok(())
}

/// Loads the workspace in `files` as `maestro test` with `opts` would.
pub fn load(files: &Files, opts: &Options) -> Result<Workspace, ParseError> {
    let config = match files.get("config.yaml").or_else(|| files.get("config.yml")) {
        Some(text) => parse_config(text).map_err(|e| e.in_file("config.yaml"))?,
        None => WorkspaceConfig {
            continue_on_failure: true,
            ..WorkspaceConfig::default()
        },
    };
    let candidates = select_by_glob(files, &config)?;
    let mut parsed = BTreeMap::new();
    for path in &candidates {
        let flow = parse_flow(&files[path]).map_err(|e| e.in_file(path))?;
        parsed.insert(path.clone(), flow);
    }
    let include: Vec<&String> = opts
        .include_tags
        .iter()
        .chain(&config.include_tags)
        .collect();
    let exclude: Vec<&String> = opts
        .exclude_tags
        .iter()
        .chain(&config.exclude_tags)
        .collect();
    let selected: Vec<String> = candidates
        .into_iter()
        .filter(|p| {
            let tags = &parsed[p].header.tags;
            (include.is_empty() || tags.iter().any(|t| include.contains(&t)))
                && !tags.iter().any(|t| exclude.contains(&t))
        })
        .collect();
    if selected.is_empty() {
        return Err(workspace_error(
            format!(
                "no flow has the include tags {include:?} without the exclude tags {exclude:?}"
            ),
            "Check `--include-tags`, `--exclude-tags` and config.yaml's `includeTags` / `excludeTags` against the flows' `tags`.",
        ));
    }
    let mut ws = Workspace {
        sequence: sequence(&config, &selected, &parsed)?,
        flows: Vec::new(),
        config,
        parsed: BTreeMap::new(),
        scripts: BTreeMap::new(),
        env: opts.env.clone(),
    };
    ws.flows = selected
        .iter()
        .filter(|p| !ws.sequence.contains(p))
        .cloned()
        .collect();
    let mut loader = Loader {
        files,
        parsed,
        scripts: BTreeMap::new(),
    };
    for p in &selected {
        loader.visit(p, &mut Vec::new())?;
    }
    ws.parsed = loader.parsed;
    ws.scripts = loader.scripts;
    Ok(ws)
}

fn select_by_glob(files: &Files, config: &WorkspaceConfig) -> Result<Vec<String>, ParseError> {
    let flow_files: Vec<&String> = files.keys().filter(|p| is_flow_file(p)).collect();
    if flow_files.is_empty() {
        return Err(workspace_error(
            "the workspace holds no flow files (`*.yaml` other than config.yaml)",
            "Add the flows, or upload the folder that holds them.",
        ));
    }
    let globs = if config.flows.is_empty() {
        vec!["*".to_string()]
    } else {
        config.flows.clone()
    };
    let mut set = GlobSetBuilder::new();
    for g in &globs {
        let glob = GlobBuilder::new(g.trim_start_matches("./"))
            .literal_separator(true)
            .build()
            .map_err(|e| {
                workspace_error(
                    format!("config.yaml `flows` glob `{g}` is not valid: {e}"),
                    "Write globs like `*`, `login/*` or `**/smoke_*.yaml`.",
                )
                .in_file("config.yaml")
            })?;
        set.add(glob);
    }
    let set = set
        .build()
        .map_err(|e| workspace_error(e.to_string(), "Check config.yaml's `flows`."))?;
    let chosen: Vec<String> = flow_files
        .into_iter()
        .filter(|p| set.is_match(p.as_str()))
        .cloned()
        .collect();
    if chosen.is_empty() {
        let hint = if globs == ["*"] {
            "Only the top folder's flows run by default; list sub-folders in config.yaml's `flows` (e.g. `- \"**\"`)."
        } else {
            "Check config.yaml's `flows` globs against the files' paths."
        };
        return Err(workspace_error(
            format!("the flow globs {globs:?} match no flow file"),
            hint,
        ));
    }
    Ok(chosen)
}

/// `flowsOrder` names (a flow's `name`, else its file name without extension) → paths.
fn sequence(
    config: &WorkspaceConfig,
    selected: &[String],
    parsed: &BTreeMap<String, Flow>,
) -> Result<Vec<String>, ParseError> {
    let name_of = |p: &String| {
        parsed[p].header.name.clone().unwrap_or_else(|| {
            let file = p.rsplit('/').next().unwrap_or(p);
            file.rsplit_once('.').map_or(file, |(s, _)| s).to_string()
        })
    };
    config
        .flows_order
        .iter()
        .map(|want| {
            selected
                .iter()
                .find(|p| name_of(p) == *want)
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<String> = selected.iter().map(name_of).collect();
                    workspace_error(
                        format!("`flowsOrder` names `{want}`, which is no selected flow"),
                        format!("Flows: {}.", names.join(", ")),
                    )
                    .in_file("config.yaml")
                })
        })
        .collect()
}

struct Loader<'a> {
    files: &'a Files,
    parsed: BTreeMap<String, Flow>,
    scripts: BTreeMap<String, String>,
}

impl Loader<'_> {
    /// Loads `path` and everything it names; `stack` is the runFlow chain that led here.
    fn visit(&mut self, path: &str, stack: &mut Vec<String>) -> Result<(), ParseError> {
        if !self.parsed.contains_key(path) {
            let flow = parse_flow(&self.files[path]).map_err(|e| e.in_file(path))?;
            self.parsed.insert(path.to_string(), flow);
        }
        stack.push(path.to_string());
        let flow = self.parsed[path].clone();
        let lists = [
            &flow.header.on_flow_start,
            &flow.commands,
            &flow.header.on_flow_complete,
        ];
        for list in lists {
            self.commands(path, list, stack)?;
        }
        stack.pop();
        Ok(())
    }

    fn commands(
        &mut self,
        path: &str,
        cmds: &[Command],
        stack: &mut Vec<String>,
    ) -> Result<(), ParseError> {
        for c in cmds {
            let file = match &c.kind {
                CommandKind::RunFlow(r) => match &r.source {
                    FlowSource::File { path } => Some(path),
                    FlowSource::Inline(_) => None,
                },
                CommandKind::Retry(r) => match &r.source {
                    FlowSource::File { path } => Some(path),
                    FlowSource::Inline(_) => None,
                },
                CommandKind::RunScript(r) => {
                    let target = self.existing(path, &r.file, c.line, "runScript")?;
                    self.scripts
                        .insert(target.clone(), self.files[&target].clone());
                    None
                }
                CommandKind::AddMedia(files) => {
                    for f in files {
                        self.existing(path, f, c.line, "addMedia")?;
                    }
                    None
                }
                _ => None,
            };
            if let Some(file) = file {
                let target = self.existing(path, file, c.line, "runFlow")?;
                if let Some(at) = stack.iter().position(|p| *p == target) {
                    let chain = stack[at..].join(" → ");
                    return Err(ParseError::new(
                        c.line,
                        "invalid_workspace",
                        format!("`{file}` runs itself again: {chain} → {target}"),
                        "A flow cannot reach itself through `runFlow`; move the shared steps to a third file.",
                    )
                    .in_file(path));
                }
                self.visit(&target, stack)?;
            }
            for child in c.children() {
                self.commands(path, child, stack)?;
            }
        }
        Ok(())
    }

    fn existing(
        &self,
        from: &str,
        file: &str,
        line: usize,
        cmd: &str,
    ) -> Result<String, ParseError> {
        let target = resolve(from, file);
        if self.files.contains_key(&target) {
            return Ok(target);
        }
        let near = did_you_mean(&target, self.files.keys().map(String::as_str));
        Err(ParseError::new(
            line,
            "invalid_workspace",
            format!("`{cmd}` names `{file}` ({target} in the workspace), which is not there"),
            match near {
                Some(n) => format!("Did you mean `{n}`? Paths are relative to the flow that names them."),
                None => "Paths are relative to the flow that names them; upload the file with the workspace.".into(),
            },
        )
        .in_file(from))
    }
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
