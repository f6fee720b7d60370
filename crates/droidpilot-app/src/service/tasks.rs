//! Task use cases: submit (validated, refused when it could never run, its secrets held
//! in memory, queued), cancel, and answer the question a task waits on.

use super::error::AppError;
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
    let mut spec = TaskSpec::parse(req)?;
    check_runnable(core, &spec).await?;
    hold_secrets(core, &mut spec)?;
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

/// Moves the agent's secrets (a replay's `"secret": true` texts, a script's secret
/// inputs) into the core's memory before the task is stored; the stored agent keeps a
/// reference (`agent::secrets`). Call after `check_runnable`, which reads them.
pub(super) fn hold_secrets(core: &Core, spec: &mut TaskSpec) -> Result<(), AppError> {
    let Some(agent) = spec.agent.as_mut() else {
        return Ok(());
    };
    core.secrets
        .hold(agent)
        .map(drop)
        .map_err(|e| AppError::invalid("invalid_agent", e.to_string(), e.hint()))
}

/// Refuses, at submission, what could never run: an agent spec with a bad field, a model
/// whose provider key the server lacks, a webhook URL on an internal host the operator
/// did not allow, or a device id the pool does not know (a typo would otherwise wait out
/// the queue timeout).
pub(super) async fn check_runnable(s: &Core, spec: &TaskSpec) -> Result<(), AppError> {
    let agent = match &spec.agent {
        Some(a) => crate::agent::spec::AgentSpec::from_json(a)
            .and_then(|a| {
                a.validate(&s.config.agent)?;
                if spec.record {
                    crate::agent::spec::check_record(&a, &s.config.agent)?;
                }
                Ok(a)
            })
            .map_err(|e| AppError::invalid("invalid_agent", e.to_string(), e.hint()))?,
        None => {
            let a = crate::agent::spec::AgentSpec::default();
            if spec.record {
                crate::agent::spec::check_record(&a, &s.config.agent)
                    .map_err(|e| AppError::invalid("invalid_agent", e.to_string(), e.hint()))?;
            }
            a
        }
    };
    if let Some(e) = s
        .config
        .agent
        .missing_key(&agent, |v| std::env::var(v).ok())
    {
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
            format!("the task's agent cannot call its model: {e}"),
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
