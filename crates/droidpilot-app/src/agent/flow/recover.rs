//! AI in the middle for flows: a command whose element is still missing after Maestro's
//! own wait goes to the recovery model, with the same question scripts ask
//! (`agent::script::recover`: the recovery context, one `RecoveryAction` back, an
//! unusable or low-confidence answer is a failed attempt that acts on nothing).
//!
//! What differs is what an answer becomes. `modify_selector` names an element in
//! droidpilot's selector syntax (the `elements` the model is shown); the flow needs a
//! Maestro selector, so it is rewritten from that element (`id` when the flow's selector
//! used `id`, else its text or description, as a literal pattern) and kept only when
//! Maestro's own matching picks that same element. The command then runs with it, and so
//! does every later run of that command in the task (a `repeat`). `execute_action` runs
//! one action and the command is tried again; `skip_step` moves on (listed in the
//! finish reason); `abort` and `ask_user` fail the command (a flow runs unattended, so
//! nobody is asked), as does a command whose attempts are used up (3). `optional`
//! commands are never sent: a missing element is their normal case.

use std::collections::BTreeMap;

use droidpilot_maestro::ast::{Command, CommandKind, Selector, SwipeMotion, Target};
use droidpilot_maestro::heal::Patch;
use serde_json::json;

use super::FlowAgent;
use crate::agent::script::find;
use crate::agent::script::recover::{Confidence, FailedStep, RecoveryType, StepError};
use crate::agent::{AgentContext, AgentError, Meter};
use crate::domain::{Action, ActionParser, Fallback, ReplayInfo, ReplayRole};

/// Recovery questions per command before it fails.
pub const MAX_ATTEMPTS: u32 = 3;

/// A command whose element is missing, waiting for AI in the middle.
#[derive(Debug, Clone)]
pub(super) struct Stuck {
    pub file: String,
    pub cmd: Command,
    /// The selector as it ran (`${…}` evaluated).
    pub selector: Selector,
    pub message: String,
}

/// A command AI in the middle gave a new selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Healed {
    /// The selector as the flow wrote it.
    pub old: Selector,
    pub new: Selector,
    pub reason: String,
}

/// The selector a command acts on, as written.
pub fn selector_of(cmd: &Command) -> Option<&Selector> {
    match &cmd.kind {
        CommandKind::Tap(t) => match &t.target {
            Target::Element(s) => Some(s),
            Target::Point(_) => None,
        },
        CommandKind::Swipe(s) => match &s.motion {
            SwipeMotion::Element { from, .. } => Some(from),
            _ => None,
        },
        CommandKind::CopyTextFrom(s) | CommandKind::AssertVisible(s) => Some(s),
        _ => None,
    }
}

/// Where the command is, for messages: `flow.yaml line 4 (tapOn text "Submit")`.
fn at(s: &Stuck) -> String {
    format!(
        "{} line {} ({})",
        s.file,
        s.cmd.line,
        super::step::describe(&s.cmd)
    )
}

/// The failed command as the recovery context shows it.
fn failed_step(a: &FlowAgent, s: &Stuck, ctx: &AgentContext) -> FailedStep {
    let source = a
        .program
        .sources
        .get(&s.file)
        .map(|t| command_text(t, s.cmd.line));
    FailedStep {
        step: json!({"flow": s.file, "line": s.cmd.line,
                     "command": super::step::describe(&s.cmd), "yaml": source}),
        hints: s
            .cmd
            .label
            .iter()
            .map(|l| format!("the command's label: {l}"))
            .collect(),
        goal: ctx.instruction.clone(),
        progress: format!("command {} of the flow", a.commands_done + 1),
    }
}

/// The command's lines in its file: from its line to the next line indented as little.
fn command_text(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = lines.get(line.saturating_sub(1)) else {
        return String::new();
    };
    let indent = first.len() - first.trim_start().len();
    let mut out = vec![*first];
    for l in lines.iter().skip(line) {
        let i = l.len() - l.trim_start().len();
        if !l.trim().is_empty() && i <= indent {
            break;
        }
        out.push(l);
    }
    out.join("\n")
}

/// The Maestro selector for the element the model named, when Maestro's matching picks
/// that element with it.
fn maestro_selector(ctx: &AgentContext, answer: &str, old: &Selector) -> Option<Selector> {
    let screen = ctx.observation.tree.as_ref()?;
    let n = find::unique(screen, answer)?;
    let node = &screen.tree.nodes[n];
    let id = node
        .resource_id
        .rsplit_once(":id/")
        .map_or(node.resource_id.as_str(), |(_, id)| id);
    let label = [&node.text, &node.content_desc]
        .into_iter()
        .find(|t| !t.trim().is_empty());
    let lit = droidpilot_maestro::selector::literal;
    let by_id = (!id.is_empty()).then(|| Selector {
        id: Some(lit(id)),
        ..Selector::default()
    });
    let by_text = label.map(|t| Selector {
        text: Some(lit(t)),
        ..Selector::default()
    });
    let order = if old.id.is_some() && old.text.is_none() {
        [by_id, by_text]
    } else {
        [by_text, by_id]
    };
    order.into_iter().flatten().find(|s| {
        droidpilot_maestro::selector::find(&screen.tree, s)
            .ok()
            .flatten()
            == Some(n)
    })
}

/// A flow step's record of AI in the middle.
fn info(line: usize, role: ReplayRole, selector: Option<String>, kind: RecoveryType) -> ReplayInfo {
    ReplayInfo {
        index: line as u32,
        role,
        selector,
        fallback: if kind == RecoveryType::ModifySelector {
            Fallback::Healed
        } else {
            Fallback::None
        },
        interruptions_dismissed: 0,
        recovery: Some(kind),
        matched: None,
    }
}

/// What a recovery gave: an action to run now (with its record), or nothing (the
/// command is tried again, skipped or failed; the interpreter goes on).
pub(super) type Recovered = Option<(Action, ReplayInfo)>;

/// Asks the recovery model about a stuck command, up to its attempts, and applies the
/// first usable answer.
pub(super) async fn recover(
    a: &mut FlowAgent,
    meter: &mut Meter<'_>,
    ctx: &AgentContext,
    s: Stuck,
) -> Result<Recovered, AgentError> {
    let Some(aitm) = a.aitm.clone() else {
        a.fail(format!("{}: {}", at(&s), s.message));
        return Ok(None);
    };
    let err = StepError {
        error_type: "element_not_found",
        message: s.message.clone(),
        selector: Some(super::step::describe_sel(&s.selector)),
    };
    let failed = failed_step(a, &s, ctx);
    while a.tries.recoveries < MAX_ATTEMPTS {
        a.tries.recoveries += 1;
        let answer = match aitm.ask_about(meter, ctx, &failed, &err).await {
            Ok(x) if x.confidence != Confidence::Low => x,
            Ok(_) | Err(AgentError::Recovery(_)) => continue,
            Err(e) => return Err(e),
        };
        let reason = answer.reason.clone();
        match answer.action_type {
            RecoveryType::ModifySelector => {
                let old = selector_of(&s.cmd).cloned().unwrap_or_default();
                let Some(new) = answer
                    .new_selector
                    .as_deref()
                    .and_then(|n| maestro_selector(ctx, n, &s.selector))
                else {
                    continue;
                };
                let said = super::step::describe_sel(&new);
                a.recovered
                    .push(format!("{}: healed to {said} ({reason})", at(&s)));
                a.notes
                    .push(format!("{}: AI recovery: {said} ({reason})", at(&s)));
                a.healed
                    .insert((s.file.clone(), s.cmd.line), Healed { old, new, reason });
                return Ok(None);
            }
            RecoveryType::ExecuteAction => {
                match answer.action.as_ref().map(|v| ActionParser::new().parse(v)) {
                    Some(Ok(action)) if !action.is_terminal() => {
                        a.notes
                            .push(format!("{}: AI recovery acts first ({reason})", at(&s)));
                        let i = info(
                            s.cmd.line,
                            ReplayRole::Recovery,
                            None,
                            RecoveryType::ExecuteAction,
                        );
                        return Ok(Some((action, i)));
                    }
                    _ => continue,
                }
            }
            RecoveryType::SkipStep => {
                a.recovered
                    .push(format!("{}: skipped by AI recovery ({reason})", at(&s)));
                a.commands_done += 1;
                a.advance();
                return Ok(None);
            }
            RecoveryType::Abort | RecoveryType::AskUser => {
                let why = answer.question.unwrap_or(reason);
                a.fail(format!(
                    "{}: {}; AI recovery gave up: {why}",
                    at(&s),
                    s.message
                ));
                return Ok(None);
            }
        }
    }
    a.fail(format!(
        "{}: {}; AI recovery had no usable answer in {MAX_ATTEMPTS} attempts",
        at(&s),
        s.message
    ));
    Ok(None)
}

/// The flow files with their healed commands written back (`heal`), path → YAML, and
/// the commands that could not be (`file line N`).
pub(super) fn healed_files(a: &FlowAgent) -> (BTreeMap<String, String>, Vec<String>) {
    let mut by_file: BTreeMap<&str, Vec<Patch>> = BTreeMap::new();
    for ((file, line), h) in &a.healed {
        by_file.entry(file).or_default().push(Patch {
            line: *line,
            old: h.old.clone(),
            new: h.new.clone(),
            note: h.reason.clone(),
        });
    }
    let mut files = BTreeMap::new();
    let mut missed = Vec::new();
    for (file, patches) in by_file {
        let Some(text) = a.program.sources.get(file) else {
            continue;
        };
        match droidpilot_maestro::heal::rewrite(text, &patches) {
            Ok(t) => {
                files.insert(file.to_string(), t);
            }
            Err(lines) => missed.extend(lines.iter().map(|l| format!("{file} line {l}"))),
        }
    }
    (files, missed)
}

/// The record of a step that acts on a healed selector.
pub(super) fn healed_info(line: usize, sel: &Selector) -> ReplayInfo {
    info(
        line,
        ReplayRole::Action,
        Some(super::step::describe_sel(sel)),
        RecoveryType::ModifySelector,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_text_ends_where_the_next_command_starts() {
        let text = "appId: a\n---\n- tapOn:\n    text: Save\n    index: 1\n- back\n";
        assert_eq!(
            command_text(text, 3),
            "- tapOn:\n    text: Save\n    index: 1"
        );
        assert_eq!(command_text(text, 6), "- back");
    }
}
