//! Task use cases: submit (validated, refused when it could never run, its secrets held
//! in memory, queued), cancel, and answer the question a task waits on.

use serde_json::Value;

use super::error::AppError;
use crate::agent::spec::{AgentSpec, check_record};
use crate::core::Core;
use crate::domain::{Intervention, NewTask, Task, TaskId, TaskSpec};
use crate::store::CancelOutcome;

/// Validates a task request, refuses what could never run, and queues it. Used by
/// `POST /v1/tasks` and the MCP tool `run_task`.
pub async fn submit(core: &Core, req: NewTask) -> Result<Task, AppError> {
    let spec = prepare(core, req).await?;
    Ok(core.queue.submit(spec).await?)
}

/// A request made into a task spec that can run: parsed, checked (`check_runnable`), its
/// secrets held. `submit` queues it; `droidpilot run` runs it itself.
pub async fn prepare(core: &Core, req: NewTask) -> Result<TaskSpec, AppError> {
    ready(core, TaskSpec::parse(req)?).await
}

/// A parsed task made ready to queue. Its `agent` object is read once, here, into an
/// `AgentSpec` and checked; what is stored is that typed spec's JSON (its secrets held in
/// memory), which the agent factory reads back with serde when the task starts.
pub(super) async fn ready(core: &Core, mut spec: TaskSpec) -> Result<TaskSpec, AppError> {
    let agent = agent_spec(core, &spec)?;
    check_runnable(core, &spec, &agent).await?;
    if spec.agent.is_some() {
        spec.agent = Some(hold_secrets(core, &agent)?);
    }
    Ok(spec)
}

/// Cancels a task: at once when it is queued or waiting for an answer
/// (`CancelOutcome::Cancelled`), at its runner's next step when it runs (`Requested`).
pub async fn cancel(core: &Core, id: TaskId) -> Result<(Task, CancelOutcome), AppError> {
    Ok(core.queue.cancel(id).await?)
}

/// Answers the question task `id` waits on (the open one when `prompt_id` is None),
/// recorded as answered `by`.
pub async fn answer(
    core: &Core,
    id: TaskId,
    prompt_id: Option<&str>,
    answer: &str,
    by: &str,
) -> Result<Intervention, AppError> {
    Ok(core
        .prompts
        .answer(&core.bus, id, prompt_id, answer, by)
        .await?)
}

/// The stored `agent` object: the typed spec's JSON with its secrets (a replay's
/// `"secret": true` texts, a script's secret inputs) moved into the core's memory; the
/// stored object keeps a reference (`agent::secrets`).
fn hold_secrets(core: &Core, agent: &AgentSpec) -> Result<Value, AppError> {
    let mut stored = agent.to_json();
    core.secrets
        .hold(&mut stored)
        .map_err(|e| AppError::invalid("invalid_agent", e.to_string(), e.hint()))?;
    Ok(stored)
}

/// The task's agent, read and checked (the server's default agent when it names none).
fn agent_spec(s: &Core, spec: &TaskSpec) -> Result<AgentSpec, AppError> {
    let read = match &spec.agent {
        Some(v) => AgentSpec::from_json(v),
        None => Ok(AgentSpec::default()),
    };
    // The custom actions in force: a replay list or a script may name them.
    let mut defaults = s.config.agent.clone();
    defaults.custom_actions = s.actions.current().custom.clone();
    read.and_then(|a| {
        a.validate(&defaults)?;
        if spec.record {
            check_record(&a, &defaults)?;
        }
        Ok(a)
    })
    .map_err(|e| AppError::invalid("invalid_agent", e.to_string(), e.hint()))
}

/// Refuses, at submission, what could never run: a model whose provider key the server
/// lacks, a webhook URL on an internal host the operator did not allow, or a device id
/// the pool does not know (a typo would otherwise wait out the queue timeout).
async fn check_runnable(s: &Core, spec: &TaskSpec, agent: &AgentSpec) -> Result<(), AppError> {
    if let Some(e) = s.config.agent.missing_key(agent, |v| std::env::var(v).ok()) {
        let (var, openai) = match &e {
            crate::llm::LlmError::MissingKey { env_var, provider } => {
                (*env_var, *provider == crate::llm::ProviderKind::Openai)
            }
            _ => ("the provider's key variable", false),
        };
        let local = if openai {
            ", pick a model server that needs no key (agent.server, or an agent.base_url the operator lists in [agent] allowed_base_urls),"
        } else {
            ""
        };
        return Err(AppError::invalid(
            "missing_model_key",
            match agent.model_needed_by() {
                Some(why) => format!("the task's agent cannot call its model ({why}): {e}"),
                None => format!("the task's agent cannot call its model: {e}"),
            },
            format!(
                "Set {var} in the server's environment (keys belong to the server, never to a task) and restart it{local} or use agent.kind replay."
            ),
        ));
    }
    if let Some(u) = &spec.webhook_url {
        s.config
            .webhooks
            .check_url(u, "webhook_url")
            .await
            .map_err(|message| {
                AppError::invalid(
                    "webhook_host_refused",
                    message,
                    "Webhooks go to public hosts. To deliver to an internal one (loopback, a private or link-local range, localhost), the operator adds its name, address or range to [webhooks] allowed_hosts.",
                )
            })?;
    }
    // In a cluster, a phone of any instance: the instance that owns it will run the task.
    if let Some(d) = &spec.device_id
        && s.pool.summary(d).is_none()
        && let known = super::devices::farm_devices(s).await
        && known.iter().all(|k| &k.id != d)
    {
        let mut known: Vec<String> = known.into_iter().map(|d| d.id).collect();
        known.dedup();
        return Err(AppError::invalid(
            "unknown_device",
            format!("no device `{d}` in the pool"),
            format!(
                "Known devices: {}. Add one with POST /v1/devices, or omit device_id to run on any free device.",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    Ok(())
}
