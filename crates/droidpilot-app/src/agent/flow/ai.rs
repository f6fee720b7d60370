//! Maestro's AI commands through the task's model: `assertWithAI` (does the assertion
//! hold on this screen?), `assertNoDefectsWithAI` (any defect a user would notice?) and
//! `extractTextWithAI` (the answer to a query, stored in `outputVariable`, `aiOutput`
//! unless named). One chat request per command, with the screen as text and, for a
//! model that reads images, the screenshot; the answer is one JSON object (read from
//! prose and code fences). A failed check, or an answer that is not the object asked
//! for, fails the command, a warning when it is `optional` (Maestro's default for
//! these commands). The model is the one the task names, else the server's navigator
//! model; a task whose model cannot be called is refused at submission naming the line.

use std::sync::Arc;

use droidpilot_maestro::ast::{Command, CommandKind};
use serde_json::Value;

use super::FlowAgent;
use crate::agent::{AgentContext, AgentError, Meter};
use crate::llm::{ChatModel, ChatRequest, Message, Part};

const SCREEN: &str = "You check a screen of an Android app for an automated UI test. You get \
the screen as text (one element per line: [n] Kind \"label\" flags) and, when available, a \
screenshot. ";

const ASSERT: &str = "Decide whether the assertion holds on this screen. Answer with ONE JSON \
object and nothing else: {\"passed\": true | false, \"reason\": \"why, in one sentence\"}";

const DEFECTS: &str = "Look for defects a user would notice: text cut off or overlapping, a \
broken layout, placeholder or untranslated text, an error shown by mistake. Answer with ONE \
JSON object and nothing else: {\"defects\": [{\"category\": \"…\", \"reasoning\": \"…\"}]}, \
an empty list when there are none.";

const EXTRACT: &str = "Answer the query with what this screen shows. Answer with ONE JSON \
object and nothing else: {\"text\": \"the answer\"}";

/// The model the AI commands ask, and whether it reads images.
#[derive(Clone)]
pub struct AiModel {
    pub model: Arc<dyn ChatModel>,
    pub vision: bool,
}

/// An AI command waiting for its model call (`FlowAgent::next` makes it).
#[derive(Debug, Clone)]
pub(super) struct AiAsk {
    pub file: String,
    pub cmd: Command,
}

/// Whether a command is one of the AI commands.
pub fn is_ai(cmd: &Command) -> bool {
    matches!(
        cmd.kind,
        CommandKind::AssertWithAi(_)
            | CommandKind::AssertNoDefectsWithAi
            | CommandKind::ExtractTextWithAi { .. }
    )
}

/// Runs one AI command: the model call, then the command done or failed.
pub(super) async fn run(
    a: &mut FlowAgent,
    meter: &mut Meter<'_>,
    ctx: &AgentContext,
    ask: AiAsk,
) -> Result<(), AgentError> {
    let at = format!(
        "{} line {} ({})",
        ask.file,
        ask.cmd.line,
        super::step::describe(&ask.cmd)
    );
    let Some(ai) = a.ai.clone() else {
        a.command_failed(
            &ask.cmd,
            at,
            "no model is configured for the AI commands".into(),
        );
        return Ok(());
    };
    let (system, question) = match &ask.cmd.kind {
        CommandKind::AssertWithAi(t) => match a.scope.interpolate(t) {
            Ok(t) => (ASSERT, format!("Assertion: {t}")),
            Err(e) => {
                a.command_failed(&ask.cmd, at, e.to_string());
                return Ok(());
            }
        },
        CommandKind::AssertNoDefectsWithAi => (DEFECTS, String::new()),
        CommandKind::ExtractTextWithAi { query, .. } => match a.scope.interpolate(query) {
            Ok(q) => (EXTRACT, format!("Query: {q}")),
            Err(e) => {
                a.command_failed(&ask.cmd, at, e.to_string());
                return Ok(());
            }
        },
        _ => return Ok(()),
    };
    let mut parts = vec![Part::Text(format!(
        "{question}\n\nThe screen:\n{}",
        ctx.observation.screen.elements
    ))];
    if ai.vision
        && let Some(img) = &ctx.observation.screenshot
    {
        parts.push(Part::Image(img.clone()));
    }
    let req = ChatRequest::new(
        Some(format!("{SCREEN}{system}")),
        vec![Message::user(parts)],
    );
    let reply = meter.call(ai.model.as_ref(), &req).await?;
    match judge(&ask.cmd, &reply.text) {
        Ok((note, output)) => {
            if let (
                Some(value),
                CommandKind::ExtractTextWithAi {
                    output_variable, ..
                },
            ) = (output, &ask.cmd.kind)
            {
                a.scope.put(output_variable, Some(&value));
            }
            a.notes.push(format!("{at}: {note}"));
            a.commands_done += 1;
            a.advance();
        }
        Err(e) => a.command_failed(&ask.cmd, at, e),
    }
    Ok(())
}

/// The command's outcome from the model's answer: a note and, for an extraction, the
/// text; or the failure.
fn judge(cmd: &Command, reply: &str) -> Result<(String, Option<String>), String> {
    let v = object(reply)
        .ok_or_else(|| format!("the model's answer is not a JSON object: {}", clip(reply)))?;
    match &cmd.kind {
        CommandKind::AssertWithAi(_) => {
            let reason = v["reason"].as_str().unwrap_or("").to_string();
            match v["passed"].as_bool() {
                Some(true) => Ok((format!("the model says it holds: {reason}"), None)),
                Some(false) => Err(format!("the model says it does not hold: {reason}")),
                None => Err(format!(
                    "the model's answer has no `passed`: {}",
                    clip(reply)
                )),
            }
        }
        CommandKind::AssertNoDefectsWithAi => {
            let Some(list) = v["defects"].as_array() else {
                return Err(format!(
                    "the model's answer has no `defects`: {}",
                    clip(reply)
                ));
            };
            if list.is_empty() {
                return Ok(("the model found no defects".into(), None));
            }
            let found: Vec<String> = list
                .iter()
                .map(|d| {
                    format!(
                        "{}: {}",
                        d["category"].as_str().unwrap_or("defect"),
                        d["reasoning"].as_str().unwrap_or("")
                    )
                })
                .collect();
            Err(format!("the model found defects: {}", found.join("; ")))
        }
        CommandKind::ExtractTextWithAi {
            output_variable, ..
        } => match v["text"].as_str() {
            Some(t) => Ok((format!("{output_variable} = {t:?}"), Some(t.to_string()))),
            None => Err(format!("the model's answer has no `text`: {}", clip(reply))),
        },
        _ => Err("not an AI command".into()),
    }
}

/// The first JSON object in the reply (models wrap it in prose or code fences).
fn object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start)
        .then(|| serde_json::from_str::<Value>(&text[start..=end]).ok())
        .flatten()
        .filter(Value::is_object)
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(kind: CommandKind) -> Command {
        Command {
            line: 4,
            label: None,
            optional: true,
            kind,
        }
    }

    /// Each command reads its own JSON object, from prose and fences too; anything else
    /// fails the command naming what was missing.
    #[test]
    fn answers_are_judged_per_command() {
        let assert = cmd(CommandKind::AssertWithAi("a login form".into()));
        assert!(
            judge(
                &assert,
                "```json\n{\"passed\": true, \"reason\": \"yes\"}\n```"
            )
            .is_ok()
        );
        let no = judge(&assert, "{\"passed\": false, \"reason\": \"a map\"}").unwrap_err();
        assert!(no.contains("does not hold: a map"), "{no}");
        assert!(
            judge(&assert, "yes")
                .unwrap_err()
                .contains("not a JSON object")
        );
        let defects = cmd(CommandKind::AssertNoDefectsWithAi);
        assert!(judge(&defects, "{\"defects\": []}").is_ok());
        let e = judge(
            &defects,
            "{\"defects\": [{\"category\": \"layout\", \"reasoning\": \"cut off\"}]}",
        )
        .unwrap_err();
        assert!(e.contains("layout: cut off"), "{e}");
        let extract = cmd(CommandKind::ExtractTextWithAi {
            query: "the total".into(),
            output_variable: "total".into(),
        });
        let (_, out) = judge(&extract, "{\"text\": \"12.50\"}").unwrap();
        assert_eq!(out.as_deref(), Some("12.50"));
    }
}
