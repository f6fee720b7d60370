//! What a `flow` task runs: the entry flow and every file it reaches, parsed once, and the
//! submission check that refuses a command this server cannot do, naming its file and
//! line (never skipped at run time).
//!
//! A task carries its flow inline (`flow`: one file's YAML text, which cannot name other
//! files) or as a workspace (`files`: path → text, and `entry`). The files are resolved
//! as Maestro resolves them (relative to the flow that names them, `workspace::resolve`);
//! this walks only what the entry reaches, so a workspace's other flows and its
//! `config.yaml` play no part in one task (a flow run of a whole workspace is a task per
//! flow).

use std::collections::BTreeMap;

use droidpilot_maestro::ast::{Command, CommandKind, Flow, FlowSource, KeyName, Target};
use droidpilot_maestro::workspace::resolve;
use droidpilot_maestro::{ParseError, parse_flow};

use crate::agent::spec::SpecError;

/// The file name an inline flow is reported under.
pub const INLINE: &str = "flow.yaml";

/// A flow and what it reaches, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The path of the flow the task runs.
    pub entry: String,
    /// Every flow file reached, by path.
    pub flows: BTreeMap<String, Flow>,
    /// `runScript` files, by path.
    pub scripts: BTreeMap<String, String>,
    /// Every flow file's text as given, by path (AI in the middle shows the failed
    /// command as written; healing rewrites it).
    pub sources: BTreeMap<String, String>,
    /// `-e KEY=VALUE` values, set before the flow's own `env`.
    pub env: Vec<(String, String)>,
}

impl Program {
    /// The first AI command (`assertWithAI` & co), as `flow.yaml line 7
    /// (assertWithAI)`: the flow needs a model.
    pub fn ai_command(&self) -> Option<String> {
        self.flows.iter().find_map(|(path, flow)| {
            let c = all_commands(flow)
                .into_iter()
                .find(|c| super::ai::is_ai(c))?;
            let name = match c.kind {
                CommandKind::AssertWithAi(_) => "assertWithAI",
                CommandKind::AssertNoDefectsWithAi => "assertNoDefectsWithAI",
                _ => "extractTextWithAI",
            };
            Some(format!("{path} line {} ({name})", c.line))
        })
    }
}

/// Reads a task's flow: `text` alone, or `files` with `entry`.
pub fn load(
    text: Option<&str>,
    files: Option<&BTreeMap<String, String>>,
    entry: Option<&str>,
    env: &BTreeMap<String, String>,
) -> Result<Program, SpecError> {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let (files, entry) = match (text, files, entry) {
        (Some(t), None, None) => {
            let mut one = BTreeMap::new();
            one.insert(INLINE.to_string(), t.to_string());
            (one, INLINE.to_string())
        }
        (None, Some(f), Some(e)) => (f.clone(), e.trim_start_matches("./").to_string()),
        (Some(_), Some(_), _) => {
            return Err(SpecError::new("files", "give `flow` or `files`, not both"));
        }
        (Some(_), None, Some(_)) => {
            return Err(SpecError::new(
                "entry",
                "is for `files`; an inline `flow` is the entry itself",
            ));
        }
        (None, Some(_), None) => {
            return Err(SpecError::new(
                "entry",
                "`files` needs `entry`: the path of the flow to run",
            ));
        }
        (None, None, _) => {
            return Err(SpecError::new(
                "flow",
                "flow agents need the flow: `flow` (its YAML text) or `files` and `entry`",
            ));
        }
    };
    if !files.contains_key(&entry) {
        let near =
            droidpilot_maestro::parse::did_you_mean(&entry, files.keys().map(String::as_str));
        return Err(SpecError::new(
            "entry",
            match near {
                Some(n) => format!("`{entry}` is not one of `files` (did you mean `{n}`?)"),
                None => format!("`{entry}` is not one of `files`"),
            },
        ));
    }
    let mut p = Program {
        entry: entry.clone(),
        flows: BTreeMap::new(),
        scripts: BTreeMap::new(),
        sources: BTreeMap::new(),
        env,
    };
    visit(&files, &mut p, &entry, &mut Vec::new()).map_err(|e| spec_error(&e))?;
    for (path, flow) in &p.flows {
        for c in all_commands(flow) {
            refuse_unsupported(c).map_err(|e| spec_error(&e.in_file(path)))?;
        }
    }
    Ok(p)
}

/// A flow's error as the `agent` object's: the field, the file and line, the hint.
fn spec_error(e: &ParseError) -> SpecError {
    let field = match e.file.as_deref() {
        Some(INLINE) | None => "flow".to_string(),
        Some(f) => format!("files.{f}"),
    };
    SpecError {
        specific_hint: Some(e.hint.clone()),
        ..SpecError::new(field, format!("{}: {}", e.location(), e.message))
    }
}

/// Parses `path` and everything it names; `stack` is the `runFlow` chain that led here.
fn visit(
    files: &BTreeMap<String, String>,
    p: &mut Program,
    path: &str,
    stack: &mut Vec<String>,
) -> Result<(), ParseError> {
    if stack.iter().any(|s| s == path) {
        let chain = stack.join(" → ");
        return Err(ParseError::new(
            0,
            "invalid_workspace",
            format!("a flow runs itself again: {chain} → {path}"),
            "A flow cannot reach itself through `runFlow`; move the shared steps to a third file.",
        ));
    }
    if !p.flows.contains_key(path) {
        let flow = parse_flow(&files[path]).map_err(|e| e.in_file(path))?;
        p.flows.insert(path.to_string(), flow);
        p.sources.insert(path.to_string(), files[path].clone());
    }
    let flow = p.flows[path].clone();
    stack.push(path.to_string());
    for c in all_commands(&flow) {
        let named = match &c.kind {
            CommandKind::RunFlow(r) => file_of(&r.source).map(|f| (f, "runFlow")),
            CommandKind::Retry(r) => file_of(&r.source).map(|f| (f, "retry")),
            CommandKind::RunScript(r) => Some((r.file.as_str(), "runScript")),
            _ => None,
        };
        let Some((file, cmd)) = named else { continue };
        let target = resolve(path, file);
        if !files.contains_key(&target) {
            let hint = if path == INLINE {
                "An inline `flow` cannot name other files: send them as `files` (path → text) with `entry`.".to_string()
            } else {
                "Paths are relative to the flow that names them; send the file in `files`."
                    .to_string()
            };
            let e = ParseError::new(
                c.line,
                "invalid_workspace",
                format!("`{cmd}` names `{file}` ({target}), which is not in the task's files"),
                hint,
            );
            return Err(e.in_file(path));
        }
        if cmd == "runScript" {
            p.scripts.insert(target.clone(), files[&target].clone());
        } else {
            visit(files, p, &target, stack)?;
        }
    }
    stack.pop();
    Ok(())
}

fn file_of(s: &FlowSource) -> Option<&str> {
    match s {
        FlowSource::File { path } => Some(path),
        FlowSource::Inline(_) => None,
    }
}

/// Every command of a flow, nested ones included, in the order written.
pub fn all_commands(flow: &Flow) -> Vec<&Command> {
    fn walk<'a>(list: &'a [Command], out: &mut Vec<&'a Command>) {
        for c in list {
            out.push(c);
            for child in c.children() {
                walk(child, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&flow.header.on_flow_start, &mut out);
    walk(&flow.commands, &mut out);
    walk(&flow.header.on_flow_complete, &mut out);
    out
}

/// A command this server cannot do on a phone, refused before the task starts.
fn refuse_unsupported(c: &Command) -> Result<(), ParseError> {
    let no = |what: &str, why: &str| {
        Err(ParseError::new(
            c.line,
            "not_supported",
            format!("`{what}` cannot run here: {why}"),
            "Remove the command (or run this flow with Maestro); nothing is skipped silently.",
        ))
    };
    match &c.kind {
        CommandKind::SetLocation { .. } | CommandKind::Travel { .. } => no(
            "setLocation / travel",
            "droidpilot's devices (the virtual phone, ADB) have no mock-location control",
        ),
        CommandKind::SetAirplaneMode(_) | CommandKind::ToggleAirplaneMode => {
            no("setAirplaneMode", "devices here have no radio control")
        }
        CommandKind::StartRecording(_) | CommandKind::StopRecording => no(
            "startRecording / stopRecording",
            "screen recording is not available; every step's screenshot is kept instead",
        ),
        CommandKind::AddMedia(_) => no(
            "addMedia",
            "files cannot be pushed to the gallery from a flow",
        ),
        CommandKind::SetPermissions { .. } => no(
            "setPermissions",
            "permissions cannot be granted from a flow yet",
        ),
        CommandKind::LaunchApp(l) if !l.permissions.is_empty() || !l.arguments.is_empty() => no(
            "launchApp permissions / arguments",
            "launch arguments and permission grants cannot be passed to an app here",
        ),
        CommandKind::PressKey(k) if key(*k).is_none() => no(
            &format!("pressKey {k:?}"),
            "the devices here press only Enter, Back, Home and Power",
        ),
        CommandKind::Tap(t)
            if matches!(
                &t.target,
                Target::Point(droidpilot_maestro::ast::Point::Expr(_))
            ) =>
        {
            no(
                "tapOn point: ${…}",
                "a point given by an expression is not supported yet",
            )
        }
        _ => Ok(()),
    }
}

/// The device key for a Maestro key name, where the devices have one.
pub fn key(k: KeyName) -> Option<crate::domain::Key> {
    use crate::domain::Key;
    Some(match k {
        KeyName::Enter => Key::Enter,
        KeyName::Back => Key::Back,
        KeyName::Home => Key::Home,
        KeyName::Power => Key::Power,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Files are resolved relative to the flow that names them, only what the entry
    /// reaches is read, and a flow that reaches itself is refused with the chain.
    #[test]
    fn a_workspace_loads_what_the_entry_reaches() {
        let ws = files(&[
            (
                "flows/main.yaml",
                "appId: a\n---\n- runFlow: ../common/login.yaml\n- runScript: ../js/x.js\n",
            ),
            ("common/login.yaml", "appId: a\n---\n- tapOn: Log in\n"),
            ("js/x.js", "output.x = 1"),
            ("other.yaml", "not: [a flow"),
        ]);
        let p = load(None, Some(&ws), Some("flows/main.yaml"), &BTreeMap::new()).unwrap();
        assert_eq!(
            p.flows.keys().collect::<Vec<_>>(),
            ["common/login.yaml", "flows/main.yaml"]
        );
        assert!(p.scripts.contains_key("js/x.js"));
        let looped = files(&[
            ("a.yaml", "appId: a\n---\n- runFlow: b.yaml\n"),
            ("b.yaml", "appId: a\n---\n- runFlow: a.yaml\n"),
        ]);
        let e = load(None, Some(&looped), Some("a.yaml"), &BTreeMap::new()).unwrap_err();
        assert!(e.message.contains("a.yaml → b.yaml → a.yaml"), "{e}");
        let e = load(None, Some(&looped), Some("c.yaml"), &BTreeMap::new()).unwrap_err();
        assert_eq!(e.field, "entry");
    }

    /// A command no device here can do is refused naming its file and line, also inside
    /// a sub-flow and a nested `repeat`.
    #[test]
    fn an_unsupported_command_is_named_by_file_and_line() {
        let ws = files(&[
            ("main.yaml", "appId: a\n---\n- runFlow: sub.yaml\n"),
            (
                "sub.yaml",
                "appId: a\n---\n- repeat:\n    times: 2\n    commands:\n      - setAirplaneMode: enabled\n",
            ),
        ]);
        let e = load(None, Some(&ws), Some("main.yaml"), &BTreeMap::new()).unwrap_err();
        assert_eq!(e.field, "files.sub.yaml");
        assert!(
            e.message
                .starts_with("sub.yaml line 6: `setAirplaneMode` cannot run here"),
            "{e}"
        );
    }
}
