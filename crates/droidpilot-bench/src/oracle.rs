//! The oracle model server of `droidpilot eval --model-server oracle`: a rule-driven
//! model in OpenAI Chat Completions shape on a loopback port, so a planned (or generic
//! vision) agent runs its real HTTP client, wire format and metering with no key. Like
//! `rule_model.rs` (the replay bench's recovery model) it stands in for a model so the
//! figures measure the agent machinery, not a model's mood.
//!
//! Each eval phone has its own base URL, `http://127.0.0.1:PORT/phones/SERIAL/v1`, and a
//! request is answered by its system prompt:
//! - **acting** (the generic vision format, `prompts/generic.v1.md`): the sim task is found
//!   by the prompt's `Task: <instruction>` line; the answer is its reference action at the
//!   index the prompt's history gives (the agent's committed steps in "Previous steps",
//!   plus the omitted ones, less rejected finishes and failed steps), then `finish`.
//! - **planner** ("You are the planning agent"): one approach whose steps are the
//!   reference solution's action names.
//! - **progress** ("meaningful progress"): always progressing.
//! - **verifier** ("You verify an agent"): the task's own checker on the phone of the URL,
//!   a perfect verifier.
//!
//! `OracleMode::Flawed` plays a flawed acting model: on hard tasks it claims `finish` one
//! reference action early, once, so a verifier has something to catch (and without one
//! the run is a false success). Tokens are estimated (4 characters a token, 765 an
//! image: OpenAI's figure for a 1024² high-detail image); the models have no price.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio_util::task::AbortOnDropHandle;

use crate::device::sim::{Difficulty, SimDevice, SimTask, tasks};
use crate::domain::Action;

/// How the oracle's acting model plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OracleMode {
    /// Each task's reference solution, then `finish`.
    #[value(name = "oracle")]
    Faithful,
    /// As `oracle`, but on hard tasks it claims `finish` one action early (once).
    #[value(name = "flawed-oracle")]
    Flawed,
}

/// The model names the oracle's roles are given (they show in each call's `model`).
pub const ACTOR_MODEL: &str = "oracle-actor";
pub const PLANNER_MODEL: &str = "oracle-planner";
pub const VERIFIER_MODEL: &str = "oracle-verifier";

struct Shared {
    mode: OracleMode,
    tasks: Vec<SimTask>,
    phones: RwLock<HashMap<String, Arc<SimDevice>>>,
}

/// The running server; dropping it stops it.
pub struct OracleServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _serve: AbortOnDropHandle<()>,
}

impl OracleServer {
    /// Binds a loopback port and serves until dropped.
    pub async fn start(mode: OracleMode) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            mode,
            tasks: tasks(),
            phones: RwLock::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/phones/{serial}/v1/chat/completions", post(complete))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let serve = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "the oracle model server stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            _serve: AbortOnDropHandle::new(serve),
        })
    }

    /// The phones whose state the verifier reads, by serial.
    pub fn add_phones(&self, phones: &[Arc<SimDevice>]) {
        let mut map = self.shared.phones.write().expect("phones");
        for p in phones {
            map.insert(p.config().serial.clone(), p.clone());
        }
    }

    /// `http://ADDR`: every phone's base URL is under it (the eval allows it, keyless).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI base URL for one phone.
    pub fn base_url(&self, serial: &str) -> String {
        format!("http://{}/phones/{serial}/v1", self.addr)
    }

    /// `agent` with every model pointed at this server for `serial`: a planned agent
    /// (its `fast` a generic vision agent, its planner and verifier the oracle) or a
    /// generic vision agent. Other kinds cannot talk to it.
    pub fn point(&self, agent: &Value, serial: &str) -> Result<Value, String> {
        point(agent, &self.base_url(serial))
    }
}

fn model(name: &str, base: &str) -> Value {
    json!({"provider": "openai", "model": name, "base_url": base})
}

/// A vision agent object with the generic format and the oracle's acting model.
fn acting(obj: &serde_json::Map<String, Value>, base: &str, at: &str) -> Result<Value, String> {
    let mut o = obj.clone();
    match o.get("kind").and_then(Value::as_str) {
        None | Some("vision") => {}
        Some(k) => {
            return Err(format!(
                "{at}kind `{k}`: the oracle answers the generic vision format; use \"vision\" (or leave it out)"
            ));
        }
    }
    match o.get("format").and_then(Value::as_str) {
        None | Some("generic") => {}
        Some(f) => {
            return Err(format!(
                "{at}format `{f}`: the oracle answers the generic format; use \"generic\" (or leave it out)"
            ));
        }
    }
    o.insert("kind".into(), json!("vision"));
    o.insert("format".into(), json!("generic"));
    if let Value::Object(m) = model(ACTOR_MODEL, base) {
        o.extend(m);
    }
    Ok(Value::Object(o))
}

fn point(agent: &Value, base: &str) -> Result<Value, String> {
    let Some(obj) = agent.as_object() else {
        return Err("the agent must be a JSON object".into());
    };
    match obj.get("kind").and_then(Value::as_str) {
        Some("planned") => {
            let mut o = obj.clone();
            let fast = match obj.get("fast") {
                None | Some(Value::Null) => serde_json::Map::new(),
                Some(Value::Object(f)) => f.clone(),
                Some(_) => return Err("`fast` must be an agent object".into()),
            };
            o.insert("fast".into(), acting(&fast, base, "fast.")?);
            o.insert("planner".into(), model(PLANNER_MODEL, base));
            o.insert("verifier".into(), model(VERIFIER_MODEL, base));
            Ok(Value::Object(o))
        }
        Some("vision") => acting(obj, base, ""),
        other => Err(format!(
            "kind `{}`: the oracle model server plays a planned agent or a generic vision agent; use {{\"kind\": \"planned\"}} or {{\"kind\": \"vision\"}}",
            other.unwrap_or("(default)")
        )),
    }
}

/// An OpenAI-shaped error reply.
fn error(status: StatusCode, message: String) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
    (status, axum::Json(body)).into_response()
}

/// The request's system prompt, its other text, and how many images it carries.
fn read_request(body: &Value) -> (String, String, usize) {
    let (mut system, mut text, mut images) = (String::new(), String::new(), 0);
    for m in body["messages"].as_array().into_iter().flatten() {
        let into = if m["role"] == "system" {
            &mut system
        } else {
            &mut text
        };
        match &m["content"] {
            Value::String(s) => into.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    match p["type"].as_str() {
                        Some("text") => into.push_str(p["text"].as_str().unwrap_or_default()),
                        Some("image_url") => images += 1,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    (system, text, images)
}

async fn complete(
    State(shared): State<Arc<Shared>>,
    Path(serial): Path<String>,
    body: Option<axum::Json<Value>>,
) -> Response {
    let Some(axum::Json(body)) = body else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body must be a Chat Completions request (JSON)".into(),
        );
    };
    let phone = shared.phones.read().expect("phones").get(&serial).cloned();
    let Some(phone) = phone else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no eval phone `{serial}` on this oracle"),
        );
    };
    let (system, text, images) = read_request(&body);
    let reply = answer(&shared, &phone, &system, &text);
    let prompt_chars = system.chars().count() + text.chars().count();
    let usage = json!({
        "prompt_tokens": prompt_chars.div_ceil(4) + 765 * images,
        "completion_tokens": reply.chars().count().div_ceil(4).max(1),
    });
    axum::Json(json!({
        "id": format!("chatcmpl-oracle-{}", uuid::Uuid::now_v7().simple()),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                     "finish_reason": "stop"}],
        "usage": usage,
    }))
    .into_response()
}

/// The reply text for one request, by role.
fn answer(shared: &Shared, phone: &SimDevice, system: &str, text: &str) -> String {
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let by_instruction =
        |i: &str| -> Option<&SimTask> { shared.tasks.iter().find(|t| t.instruction == i.trim()) };
    if system.contains("You are the planning agent") {
        return match by_instruction(doc["task"].as_str().unwrap_or_default()) {
            Some(t) => plan(t),
            None => "I know no sim task with this instruction; no plan.".into(),
        };
    }
    if system.contains("meaningful progress") {
        return json!({"progressing": true, "reason": "the oracle follows the reference solution"})
            .to_string();
    }
    if system.contains("You verify an agent") {
        let verdict = match by_instruction(doc["task"].as_str().unwrap_or_default()) {
            Some(t) if t.check(&phone.state()) => {
                json!({"done": true, "reason": "the task's checker passes on the phone"})
            }
            Some(_) => {
                json!({"done": false, "reason": "the task's checker does not pass on the phone yet"})
            }
            None => json!({"done": false, "reason": "no sim task has this instruction"}),
        };
        return verdict.to_string();
    }
    let instruction = text
        .lines()
        .find_map(|l| l.strip_prefix("Task: "))
        .unwrap_or_default();
    let (thinking, action) = match by_instruction(instruction) {
        Some(t) => act(t, text, shared.mode),
        None => (
            "No sim task has this instruction.".to_string(),
            json!({"action": "finish", "success": false, "reason": "the oracle knows no sim task with this instruction"}),
        ),
    };
    format!("<thinking>{thinking}</thinking><tool_call>{action}</tool_call>")
}

/// The planner's answer: one approach, the reference solution's action names.
fn plan(t: &SimTask) -> String {
    let reference = t.reference();
    let steps: Vec<&str> = reference.iter().map(Action::name).collect();
    json!({"approaches": [{"name": "reference solution",
        "description": format!("the known-good {} actions of `{}`", steps.len(), t.id),
        "steps_summary": steps, "confidence": 1.0}], "recommended": 0})
    .to_string()
}

/// What the prompt's history says was done: steps that count toward the reference
/// solution, and whether a finish was already refused.
#[derive(Debug, PartialEq)]
struct Done {
    actions: usize,
    finish_rejected: bool,
}

/// Reads "Previous steps (last n; m earlier omitted):" and its `k. name key=value…`
/// lines (` → outcome` after them when the screen did not simply change). A finish in the history was refused (the task went on); a failed step did
/// nothing. Omitted steps are counted as done.
fn done_so_far(text: &str) -> Done {
    let mut done = Done {
        actions: 0,
        finish_rejected: false,
    };
    let Some(start) = text.rfind("Previous steps") else {
        return done;
    };
    let section = &text[start..];
    let head = section.lines().next().unwrap_or_default();
    if let Some(m) = head.split("; ").nth(1) {
        done.actions += m
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
    }
    for line in section.lines().skip(1) {
        let Some((n, rest)) = line.split_once(". ") else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        // `name key=value…`, then ` → outcome` unless the screen simply changed.
        let (action, outcome) = rest.split_once(" → ").unwrap_or((rest, ""));
        let name = action.split_whitespace().next().unwrap_or_default();
        if name == "finish" {
            done.finish_rejected = true;
        } else if !outcome.starts_with("failed") {
            done.actions += 1;
        }
    }
    done
}

/// The acting model's decision: the next reference action, then `finish`.
fn act(t: &SimTask, text: &str, mode: OracleMode) -> (String, Value) {
    let reference = t.reference();
    let done = done_so_far(text);
    let early = mode == OracleMode::Flawed
        && t.difficulty == Difficulty::Hard
        && !done.finish_rejected
        && done.actions + 1 == reference.len();
    if early {
        return (
            "(flawed) This looks done already.".into(),
            json!({"action": "finish", "success": true, "reason": "the task looks done"}),
        );
    }
    match reference.get(done.actions) {
        Some(a) => (
            format!(
                "Reference action {} of {} for `{}`.",
                done.actions + 1,
                reference.len(),
                t.id
            ),
            json!(a),
        ),
        None => (
            format!("All {} reference actions are done.", reference.len()),
            json!({"action": "finish", "success": true, "reason": format!("`{}` is done", t.id)}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> SimTask {
        tasks().into_iter().find(|t| t.id == id).unwrap()
    }

    #[test]
    fn the_history_counts_committed_actions_not_refused_finishes_or_failures() {
        let text = "Task: x\nStep 6 of 20 (1s elapsed).\nPrevious steps (last 3; 2 earlier omitted):\n\
            3. tap coordinate=[0.5,0.5]\n\
            4. finish success=true → NOT done: the checker does not pass\n\
            5. key key=\"back\" → failed: device gone\n";
        assert_eq!(
            done_so_far(text),
            Done {
                actions: 3,
                finish_rejected: true
            }
        );
        let none = done_so_far("Task: x\nStep 1 of 20 (0s elapsed).");
        assert_eq!(none.actions, 0);
        assert!(!none.finish_rejected);
    }

    #[test]
    fn acting_follows_the_reference_then_finishes_and_the_flawed_one_finishes_early_once() {
        let hard = tasks()
            .into_iter()
            .find(|t| t.difficulty == Difficulty::Hard)
            .unwrap();
        let r = hard.reference();
        // The history as the agents' prompts write it.
        let line = |step: usize, action: &Action, outcome: &str| {
            let r = crate::agent::StepRecord {
                step: step as u32,
                thinking: String::new(),
                action: action.clone(),
                outcome: outcome.into(),
                failed: false,
            };
            format!("{}\n", r.line())
        };
        let history = |n: usize, refused: bool| {
            let mut s = String::from("Task: t\nPrevious steps:\n");
            for (i, a) in r.iter().take(n).enumerate() {
                s += &line(i + 1, a, "screen changed");
            }
            if refused {
                let finish = Action::Finish {
                    success: true,
                    reason: None,
                    answer: None,
                };
                s += &line(n + 1, &finish, "NOT done: no");
            }
            s
        };
        let n = r.len();
        assert_eq!(
            act(&hard, &history(0, false), OracleMode::Faithful).1,
            json!(r[0])
        );
        let last = act(&hard, &history(n - 1, false), OracleMode::Faithful).1;
        assert_eq!(last, json!(r[n - 1]));
        assert_eq!(
            act(&hard, &history(n, false), OracleMode::Faithful).1["action"],
            "finish"
        );
        let early = act(&hard, &history(n - 1, false), OracleMode::Flawed).1;
        assert_eq!(early["action"], "finish");
        let after = act(&hard, &history(n - 1, true), OracleMode::Flawed).1;
        assert_eq!(after, json!(r[n - 1]));
        // Not on easy tasks.
        let easy = task("clock.open_from_home");
        let k = easy.reference().len();
        let text = format!(
            "Task: t\nPrevious steps:\n{}",
            (1..k)
                .map(|i| line(i, &Action::Wait { ms: 1 }, "ok"))
                .collect::<String>()
        );
        assert_ne!(act(&easy, &text, OracleMode::Flawed).1["action"], "finish");
    }

    #[test]
    fn agents_are_pointed_at_the_oracle_or_refused_by_name() {
        let base = "http://127.0.0.1:1/phones/eval-1/v1";
        let p = point(
            &json!({"kind": "planned", "planning": {"progress_every": 2}}),
            base,
        )
        .unwrap();
        assert_eq!(p["fast"]["kind"], "vision");
        assert_eq!(p["fast"]["format"], "generic");
        assert_eq!(p["fast"]["base_url"], base);
        assert_eq!(p["planner"]["model"], PLANNER_MODEL);
        assert_eq!(p["verifier"]["base_url"], base);
        assert_eq!(p["planning"]["progress_every"], 2);
        let v = point(&json!({"kind": "vision"}), base).unwrap();
        assert_eq!(v["model"], ACTOR_MODEL);
        let e = point(
            &json!({"kind": "planned", "fast": {"kind": "navigator"}}),
            base,
        )
        .unwrap_err();
        assert!(e.contains("fast.kind `navigator`"), "{e}");
        let e = point(&json!({"kind": "vision", "format": "mai-ui"}), base).unwrap_err();
        assert!(e.contains("format `mai-ui`"), "{e}");
        let e = point(&json!({"kind": "replay"}), base).unwrap_err();
        assert!(e.contains("kind `replay`"), "{e}");
    }

    #[test]
    fn every_sim_instruction_names_one_task() {
        let all = tasks();
        for t in &all {
            let same = all
                .iter()
                .filter(|u| u.instruction == t.instruction)
                .count();
            assert_eq!(same, 1, "{} shares its instruction", t.id);
            assert!(!t.instruction.contains('\n'), "{}", t.id);
        }
    }
}
