//! `droidpilot run "instruction"`: one task in the terminal, without the server. The same
//! runner, store and devices as `serve`; progress is printed from the task's event feed, an
//! `ask_user` question is answered on stdin, and Ctrl+C cancels at the next step boundary,
//! keeps every committed step and writes the trajectory before exiting.

use std::io::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::watch;

use crate::config::{Config, Overrides};
use crate::core::Core;
use crate::device::pool::{DeviceState, DeviceSummary};
use crate::domain::{NewTask, StepStatus, TaskEvent, TaskStatus};
use crate::run::events::{FeedItem, Filter};
use crate::run::finish::Ending;
use crate::run::stop::StopSignal;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// What to do, in plain language (taken from the trajectory with --resume).
    #[arg(required_unless_present = "resume")]
    pub instruction: Option<String>,
    /// Resume a saved trajectory (a directory from `droidpilot export`, its
    /// trajectory.json, or the .tar.gz from the API): its steps are replayed into the
    /// history and the agent carries on from the next step.
    #[arg(long, value_name = "PATH")]
    pub resume: Option<PathBuf>,
    /// The device to run on (default: an available virtual phone; a real phone only when
    /// named here, see `droidpilot devices`).
    #[arg(long)]
    pub device: Option<String>,
    /// navigator, vision or replay (default: [agent] kind).
    #[arg(long)]
    pub agent: Option<String>,
    /// openai, anthropic or gemini.
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    /// For self-hosted models: http://127.0.0.1:8000/v1 (vLLM, Ollama, llama.cpp…).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Vision output format: mai-ui, ui-tars, autoglm or generic.
    #[arg(long)]
    pub format: Option<String>,
    /// Replay agent only: the actions, as a JSON list.
    #[arg(long)]
    pub actions: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub max_steps: u32,
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
    /// Where to write the trajectory (default DATA_DIR/runs/TASK_ID).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The whole agent spec, for callers that build it (`droidpilot script run`); beats
    /// the agent flags.
    #[arg(skip)]
    pub agent_value: Option<Value>,
}

impl RunArgs {
    /// The flags' defaults, for callers that build the arguments in code.
    pub fn defaults() -> Self {
        Self {
            instruction: None,
            resume: None,
            device: None,
            agent: None,
            provider: None,
            model: None,
            base_url: None,
            format: None,
            actions: None,
            max_steps: 50,
            timeout_seconds: 600,
            out: None,
            config: None,
            data_dir: None,
            agent_value: None,
        }
    }
}

fn agent_json(a: &RunArgs) -> anyhow::Result<Option<Value>> {
    let mut m = serde_json::Map::new();
    for (k, v) in [
        ("kind", &a.agent),
        ("provider", &a.provider),
        ("model", &a.model),
        ("base_url", &a.base_url),
        ("format", &a.format),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), Value::String(v.clone()));
        }
    }
    if let Some(actions) = &a.actions {
        let v: Value = serde_json::from_str(actions)
            .map_err(|e| anyhow::anyhow!("--actions is not a JSON list of actions: {e}"))?;
        m.insert("actions".into(), v);
    }
    Ok((!m.is_empty()).then_some(Value::Object(m)))
}

/// The device `run` takes when none is named: an available virtual phone. A real phone is
/// never picked unasked (an agent operating someone's personal phone is the worse
/// surprise); when only real phones are available the error names them.
pub fn default_device(rows: &[DeviceSummary]) -> anyhow::Result<String> {
    let available = || rows.iter().filter(|d| d.state == DeviceState::Available);
    if let Some(sim) = available().find(|d| d.backend == "sim") {
        return Ok(sim.id.clone());
    }
    let real: Vec<&str> = available().map(|d| d.id.as_str()).collect();
    match real.first() {
        Some(first) => anyhow::bail!(
            "no virtual phone is available, and a real phone is used only when named. Available: {}. Try: droidpilot run --device {first} \"…\"",
            real.join(", ")
        ),
        None => anyhow::bail!(
            "no available device. Try: 1) `droidpilot devices` 2) plug in a phone and pass --device ID 3) keep [[devices.sim]] in the configuration"
        ),
    }
}

/// Runs one task; returns whether it succeeded.
pub async fn run(args: RunArgs) -> anyhow::Result<bool> {
    let config = Config::load(
        std::path::Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            data_dir: args.data_dir.clone(),
            ..Default::default()
        },
    )?;
    // The same core as the server: webhooks (if configured) and device events included;
    // no scheduler, this command runs its one task itself.
    let mut config = config;
    config.cluster = config.cluster.for_command("run");
    let agent_value = match &args.agent_value {
        Some(v) => Some(v.clone()),
        None => agent_json(&args)?,
    };
    // Whoever runs this command is the operator: a base URL given here is configuration
    // (before the core is built, so its agent factory has it too).
    if let Some(v) = &agent_value {
        let urls = crate::agent::servers::urls_in(v);
        config.agent.operator_urls.extend(urls);
    }
    let core = Core::build(&config).await?;
    let (store, pool) = (core.store.clone(), core.pool.clone());
    let device_id = match &args.device {
        Some(d) => d.clone(),
        None => {
            let id = default_device(&pool.list())?;
            println!(
                "device: {id} (a virtual phone, the default; to use another, pass --device ID from `droidpilot devices`)"
            );
            id
        }
    };
    let device = pool.get(&device_id).ok_or_else(|| {
        let known: Vec<String> = pool.list().into_iter().map(|d| d.id).collect();
        anyhow::anyhow!(
            "no device `{device_id}`; known: {}",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )
    })?;

    let bundle = match &args.resume {
        Some(p) => Some(crate::run::trajectory::load_bundle(p)?),
        None => None,
    };
    let instruction = match (&args.instruction, &bundle) {
        (Some(i), _) => i.clone(),
        (None, Some(b)) => b.trajectory.task.spec.instruction.clone(),
        (None, None) => anyhow::bail!("give an instruction, or --resume a saved trajectory"),
    };
    // The same path as a submitted task: parsed and checked by the service (the agent
    // spec, a model key, the device), its secrets held in this process.
    let spec = crate::service::tasks::prepare(
        &core,
        NewTask {
            instruction: Some(instruction),
            max_steps: Some(args.max_steps),
            timeout_seconds: Some(args.timeout_seconds),
            device_id: Some(device_id.clone()),
            agent: agent_value,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{}. {}", e.message, e.hint))?;

    let (bus, prompts, artifacts) = (
        core.bus.clone(),
        core.prompts.clone(),
        core.artifacts.clone(),
    );
    let task = store.create_task(spec).await?;
    if let Some(b) = &bundle {
        let n = b.seed_task(store.as_ref(), &artifacts, task.id).await?;
        println!("resuming after {n} saved steps");
    }
    core.start_here(task.id, &device_id).await?;
    let task = store.get_task(task.id).await?;
    let id = task.id;
    // Built by the factory the scheduler uses: the MCP servers' tools and the held
    // secrets, like a server's task. A resumed trajectory's actions are new ones, run
    // after the saved steps (not a requeued agent carrying on).
    let agent = match core.agent_for(&task) {
        Ok(a) => a,
        Err(msg) => {
            let reason = format!("cannot build the agent: {msg}");
            core.queue
                .end(id, Ending::now(TaskStatus::Failed, reason.clone()))
                .await?;
            anyhow::bail!(reason);
        }
    };
    println!("task {id} on {device_id} with {}", agent.describe());

    let mut feed = bus.feed(Filter::Streams([id.to_string()].into()));
    feed.resume(&id.to_string(), 0).await?;
    let (stop_tx, stop_rx) = watch::channel(StopSignal::None);
    let mut handle = core.spawn({
        let runner = core.runner.clone();
        async move { runner.run(task, device, agent, stop_rx).await }
    });
    let max = args.max_steps;
    // On a terminal the step line is rewritten in place; into a pipe or file, one line each.
    let live = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut interrupted = false;
    loop {
        tokio::select! {
            item = feed.next() => {
                let Ok(Some(FeedItem::Event(ev))) = item else { continue };
                match &ev.event {
                    TaskEvent::StepDecided { step, thinking, action, .. } => {
                        let action = action.as_ref().and_then(|a| a.get("action")).and_then(Value::as_str).unwrap_or("?");
                        let thinking: String = thinking.as_deref().unwrap_or("").chars().take(70).collect();
                        let line = format!("[step {step}/{max}] {action:<12} {}", thinking.replace('\n', " "));
                        if live {
                            print!("\r\x1b[2K{line}");
                        } else {
                            println!("{}", line.trim_end());
                        }
                        let _ = std::io::stdout().flush();
                    }
                    TaskEvent::ModelRetry { cause, attempt, delay_ms, .. } => {
                        println!("\n  model call failed ({cause}); retry {attempt} in {delay_ms} ms");
                    }
                    TaskEvent::StepExecuted { outcome, .. } if outcome.status != StepStatus::Ok => {
                        println!("\n  {}: {}", outcome.status, outcome.error.as_deref().unwrap_or(""));
                    }
                    TaskEvent::AskUser { question, options, .. } => {
                        println!("\n? {question}");
                        if let Some(opts) = options {
                            println!("  options: {}", opts.join(", "));
                        }
                        print!("> ");
                        let _ = std::io::stdout().flush();
                        let (bus, prompts) = (bus.clone(), prompts.clone());
                        // Untracked: a blocking stdin read cannot be cancelled, so a tracker could not wait
                        // for it; its answer is dropped (`prompts.answer` fails) once the task has ended.
                        tokio::spawn(async move {
                            let line = tokio::task::spawn_blocking(|| {
                                let mut s = String::new();
                                std::io::stdin().read_line(&mut s).map(|_| s)
                            })
                            .await;
                            if let Ok(Ok(answer)) = line {
                                let _ = prompts.answer(&bus, id, None, answer.trim(), "terminal").await;
                            }
                        });
                    }
                    TaskEvent::Finished(_) => break,
                    _ => {}
                }
            }
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                println!("\ncancelling the task (Ctrl+C again to quit now)…");
                let _ = stop_tx.send(StopSignal::Cancel);
            }
            _ = tokio::signal::ctrl_c(), if interrupted => {
                println!("\nquitting; committed steps are kept in {}", config.store_location()?);
                break;
            }
        }
    }
    let done = match tokio::time::timeout(std::time::Duration::from_secs(5), &mut handle).await {
        Ok(Ok(Ok(t))) => t,
        // Quitting: the runner is stopped here, so the core's shutdown does not wait on it.
        _ => {
            handle.abort();
            store.get_task(id).await?
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| config.storage.data_dir.join("runs").join(id.to_string()));
    let saved = crate::run::trajectory::export_dir(store.as_ref(), &artifacts, id, &out).await;
    println!(
        "\n{} after {} steps ({} tokens in, {} out, ${:.4}): {}",
        done.status,
        done.steps,
        done.tokens_in,
        done.tokens_out,
        done.cost_usd,
        done.reason.clone().unwrap_or_default()
    );
    if let Some(a) = &done.answer {
        println!("answer: {a}");
    }
    match saved {
        Ok(s) => println!(
            "trajectory: {}/trajectory.json ({} screenshots)",
            out.display(),
            s.screenshots
        ),
        Err(e) => eprintln!("could not write the trajectory: {e}"),
    }
    core.shutdown(std::time::Duration::from_secs(5)).await;
    pool.stop_started_adb_server().await;
    Ok(done.status == TaskStatus::Succeeded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, backend: &str, state: DeviceState) -> DeviceSummary {
        DeviceSummary {
            id: id.into(),
            backend: backend.into(),
            model: String::new(),
            state,
            screen: None,
            lease_owner: None,
            consecutive_failures: 0,
            last_error: None,
            instance: None,
            local: true,
        }
    }

    #[test]
    fn the_virtual_phone_is_preferred_and_a_real_one_is_only_used_when_named() {
        let rows = [
            row("0123ABCD", "adb", DeviceState::Available),
            row("sim-1", "sim", DeviceState::Available),
        ];
        assert_eq!(default_device(&rows).unwrap(), "sim-1");
        let busy_sim = [
            row("0123ABCD", "adb", DeviceState::Available),
            row("sim-1", "sim", DeviceState::Leased),
        ];
        let err = default_device(&busy_sim).unwrap_err().to_string();
        assert!(err.contains("--device 0123ABCD"), "{err}");
        let err = default_device(&[]).unwrap_err().to_string();
        assert!(err.contains("droidpilot devices"), "{err}");
    }
}
