//! The task tools: submit a task or a script run to the queue (as `POST /v1/tasks` and
//! `POST /v1/scripts/{id}/run` do, through the same use cases, `service::tasks` and
//! `service::scripts`), optionally wait for its
//! end while forwarding its events as MCP progress notifications, read it, answer its
//! question, cancel it.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::McpServer;
use super::reply::{ToolError, ToolResult, json_result, parse};
use super::tools::{AnswerArgs, TaskIdArgs};
use crate::domain::{NewTask, Task, TaskEvent, TaskId};
use crate::run::events::{FeedItem, Filter};
use crate::service;

/// How to wait, taken out of `run_task` / `run_script` arguments.
struct Wait {
    wait: bool,
    timeout: Option<Duration>,
}

fn take_wait(tool: &str, args: &mut Map<String, Value>) -> Result<Wait, ToolError> {
    let wait = match args.remove("wait") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(v) => {
            return Err(ToolError::arguments(
                tool,
                format!("field `wait` must be true or false, got {v}"),
            ));
        }
    };
    let timeout = match args.remove("wait_timeout_secs") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(s) if (1..=86_400).contains(&s) => Some(Duration::from_secs(s)),
            _ => {
                return Err(ToolError::arguments(
                    tool,
                    format!("field `wait_timeout_secs` must be 1..=86400 seconds, got {v}"),
                ));
            }
        },
    };
    Ok(Wait { wait, timeout })
}

fn task_id(tool: &str, s: &str) -> Result<TaskId, ToolError> {
    s.trim().parse().map_err(|_| {
        ToolError::arguments(
            tool,
            format!("field `task_id`: `{s}` is not a task id (a UUID from run_task)"),
        )
    })
}

impl McpServer {
    pub(super) async fn run_task(
        &self,
        mut args: Map<String, Value>,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        let wait = take_wait("run_task", &mut args)?;
        let req: NewTask = parse("run_task", args)?;
        self.refuse_own_device(req.device_id.as_deref())?;
        let task = service::tasks::submit(&self.core, req).await?;
        self.after_submit(task, wait, ctx).await
    }

    pub(super) async fn run_script(
        &self,
        mut args: Map<String, Value>,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        let wait = take_wait("run_script", &mut args)?;
        let id = match args.remove("script_id") {
            Some(Value::String(s)) => s.trim().parse().map_err(|_| {
                ToolError::arguments(
                    "run_script",
                    format!("field `script_id`: `{s}` is not a script id (a UUID)"),
                )
            })?,
            _ => {
                return Err(ToolError::arguments(
                    "run_script",
                    "missing field `script_id` (a UUID; GET /v1/scripts lists them)",
                ));
            }
        };
        let req: service::scripts::RunScript = parse("run_script", args)?;
        self.refuse_own_device(req.device_id.as_deref())?;
        let task = service::scripts::run_script(&self.core, id, req).await?;
        self.after_submit(task, wait, ctx).await
    }

    /// A task on a device this session holds would wait for the session: say so instead.
    fn refuse_own_device(&self, device_id: Option<&str>) -> Result<(), ToolError> {
        match device_id {
            Some(d) if self.session.holds(d) => Err(ToolError::new(
                "device_held_by_you",
                format!(
                    "this session holds {d}, so a task for it would wait in the queue until you let go"
                ),
                format!(
                    "Call release_device with device_id \"{d}\" first, or omit device_id to run on any free phone."
                ),
            )),
            _ => Ok(()),
        }
    }

    async fn after_submit(
        &self,
        task: Task,
        wait: Wait,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        if !wait.wait {
            return json_result(
                &json!({"task": task, "hint": "Poll get_task, or call run_task with wait=true."}),
            );
        }
        let timeout = wait
            .timeout
            .unwrap_or(Duration::from_secs(task.spec.timeout_seconds + 60));
        self.wait_for_task(task.id, timeout, ctx).await
    }

    /// Follows the task's events until it finishes, asks a question, or `timeout`
    /// passes; each step is a progress notification when the client sent a token.
    async fn wait_for_task(
        &self,
        id: TaskId,
        timeout: Duration,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        let stream = id.to_string();
        let mut feed = (self.core.bus).feed(Filter::Streams(HashSet::from([stream.clone()])));
        feed.resume(&stream, 0).await?;
        let token = ctx.meta.get_progress_token();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut progress = 0.0;
        loop {
            let item = tokio::select! {
                () = ctx.ct.cancelled() => break,
                () = tokio::time::sleep_until(deadline) => break,
                item = feed.next() => item?,
            };
            let Some(FeedItem::Event(ev)) = item else {
                if item.is_none() {
                    break;
                }
                continue;
            };
            if let (Some(token), Some(message)) = (&token, progress_message(&ev.event)) {
                progress += 1.0;
                let p =
                    ProgressNotificationParam::new(token.clone(), progress).with_message(message);
                let _ = ctx.peer.notify_progress(p).await;
            }
            match ev.event {
                TaskEvent::Finished(_) => break,
                // The feed replays from the start: only a question still open stops the wait.
                TaskEvent::AskUser { .. } if self.waits_for_user(id).await? => break,
                _ => {}
            }
        }
        self.task_report(id).await
    }

    async fn waits_for_user(&self, id: TaskId) -> Result<bool, ToolError> {
        let task = self.core.store.get_task(id).await?;
        Ok(task.status == crate::domain::TaskStatus::WaitingForUser)
    }

    /// The task, its open question if any, and its result once finished.
    async fn task_report(&self, id: TaskId) -> ToolResult {
        let store = &self.core.store;
        let task = store.get_task(id).await?;
        let question = store.interventions(id).await?.into_iter().find(|i| {
            i.answered_at.is_none() && i.kind == crate::domain::InterventionKind::AskUser
        });
        let result = if task.status.is_terminal() {
            let steps = store.steps(id).await?;
            crate::run::result::CoordinatorResult::new(&task, &steps).ok()
        } else {
            None
        };
        let hint = match (&question, task.status.is_terminal()) {
            (Some(_), _) => "The task waits for an answer: call answer_task.",
            (None, true) => "The task has ended.",
            (None, false) => "Still going: call get_task again later, or cancel_task.",
        };
        json_result(&json!({"task": task, "question": question, "result": result, "hint": hint}))
    }

    pub(super) async fn get_task(&self, args: Map<String, Value>) -> ToolResult {
        let a: TaskIdArgs = parse("get_task", args)?;
        self.task_report(task_id("get_task", &a.task_id)?).await
    }

    pub(super) async fn answer_task(&self, args: Map<String, Value>) -> ToolResult {
        let a: AnswerArgs = parse("answer_task", args)?;
        let id = task_id("answer_task", &a.task_id)?;
        let by = format!("mcp:{}", self.session.id);
        let prompt = a.prompt_id.as_deref();
        let iv = service::tasks::answer(&self.core, id, prompt, &a.answer, &by).await?;
        json_result(&iv)
    }

    pub(super) async fn cancel_task(&self, args: Map<String, Value>) -> ToolResult {
        let a: TaskIdArgs = parse("cancel_task", args)?;
        let id = task_id("cancel_task", &a.task_id)?;
        let (task, outcome) = service::tasks::cancel(&self.core, id).await?;
        let outcome = match outcome {
            crate::store::CancelOutcome::Cancelled => "cancelled",
            crate::store::CancelOutcome::Requested => "requested: the task stops at its next step",
        };
        json_result(&json!({"outcome": outcome, "task": task}))
    }
}

/// The progress line for an event worth telling a waiting client about.
fn progress_message(ev: &TaskEvent) -> Option<String> {
    match ev {
        TaskEvent::Started { device, .. } => Some(format!(
            "started on {}",
            device.as_deref().unwrap_or("a phone")
        )),
        TaskEvent::StepExecuted {
            step,
            action,
            outcome,
            ..
        } => {
            let name = action
                .as_ref()
                .and_then(|a| a.get("action"))
                .and_then(Value::as_str)
                .unwrap_or("step");
            Some(format!("step {step}: {name} {}", outcome.status))
        }
        TaskEvent::AskUser { question, .. } => Some(format!("asks: {question}")),
        TaskEvent::Finished(f) => Some(format!("finished: {}", f.status)),
        _ => None,
    }
}
