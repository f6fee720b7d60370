//! Driving one flow run: `flowsOrder`'s flows first, one after the other (after a failure
//! with `continueOnFailure: false` the rest of them are `skipped`, as Maestro aborts the
//! sequence), then the other flows over `shards` workers. Each worker takes the next flow
//! from a shared queue and runs it as a task, on its phone when the run named
//! `devices`, else on whichever free phone the scheduler leases; a failed flow is
//! submitted again up to `retries` times. Every change is saved to the store and the
//! run's stream gets `flow_run.started`, one `flow_run.flow_finished` per flow and
//! `flow_run.finished`.
//!
//! A cancel (the run's token) cancels the tasks in flight and leaves the flows not
//! started `cancelled`; the core shutting down leaves the run `interrupted`.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::Plan;
use crate::core::Core;
use crate::domain::{
    FlowAttempt, FlowFailure, FlowResult, FlowRun, FlowRunId, FlowRunStatus, FlowStatus, Task,
    TaskEvent, TaskId, TaskStatus, WorkspaceRef, WorkspaceSource,
};
use crate::run::events::{FeedItem, Filter};

struct Suite {
    core: Arc<Core>,
    run: Mutex<FlowRun>,
    plan: Plan,
    cancel: CancellationToken,
    started: Instant,
}

/// Runs `run` to its end.
pub(super) async fn drive(core: Arc<Core>, run: FlowRun, plan: Plan, cancel: CancellationToken) {
    let id = run.id;
    let shards = run.shards;
    let devices = run.devices.clone();
    let continue_on_failure = run.continue_on_failure;
    let started = TaskEvent::FlowRunStarted {
        run_id: id,
        flows: run.flows.len() as u32,
        shards,
    };
    let s = Arc::new(Suite {
        core,
        run: Mutex::new(run),
        plan,
        cancel,
        started: Instant::now(),
    });
    s.publish(started).await;
    let first = devices.first().cloned();
    let mut abort = false;
    for i in 0..s.plan.ordered {
        if abort {
            s.skip(i).await;
        } else if !s.run_flow(i, first.clone()).await && !continue_on_failure {
            abort = true;
        }
    }
    let queue =
        std::sync::Mutex::new((s.plan.ordered..s.plan.specs.len()).collect::<VecDeque<_>>());
    let workers = (0..shards as usize).map(|w| {
        let (s, queue, device) = (s.clone(), &queue, devices.get(w).cloned());
        async move {
            loop {
                let next = queue.lock().expect("queue lock").pop_front();
                let Some(i) = next else { break };
                s.run_flow(i, device.clone()).await;
            }
        }
    });
    futures::future::join_all(workers).await;
    s.finish().await;
}

impl Suite {
    fn stopping(&self) -> bool {
        self.cancel.is_cancelled() || self.core.cancel_token().is_cancelled()
    }

    async fn publish(&self, ev: TaskEvent) {
        let stream = self.run.lock().await.id.to_string();
        if let Err(e) = self.core.bus.publish(&stream, ev).await {
            tracing::warn!(error = %e, "could not record a flow run event");
        }
    }

    /// Changes flow `i` and saves the run.
    async fn update(&self, i: usize, change: impl FnOnce(&mut FlowResult)) -> FlowResult {
        let mut run = self.run.lock().await;
        change(&mut run.flows[i]);
        if let Err(e) = self.core.store.save_flow_run(&run).await {
            tracing::warn!(error = %e, run = %run.id, "could not save a flow run");
        }
        run.flows[i].clone()
    }

    async fn flow_done(&self, i: usize, change: impl FnOnce(&mut FlowResult)) {
        let flow = self.update(i, change).await;
        let run_id = self.run.lock().await.id;
        self.publish(TaskEvent::FlowFinished { run_id, flow }).await;
    }

    async fn skip(&self, i: usize) {
        self.flow_done(i, |f| {
            f.status = FlowStatus::Skipped;
            f.failure = Some(note(
                "not run: an earlier flow of flowsOrder failed and continueOnFailure is false",
            ));
        })
        .await;
    }

    /// Runs flow `i` (with its retries) on `device` (any free phone when None); whether
    /// it passed.
    async fn run_flow(&self, i: usize, device: Option<String>) -> bool {
        let began = Instant::now();
        let retries = self.run.lock().await.retries;
        let mut last: Option<Task> = None;
        for _ in 0..=retries {
            if self.stopping() {
                break;
            }
            let mut spec = self.plan.specs[i].clone();
            spec.device_id = device.clone();
            let task = match self.core.queue.submit(spec).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(error = %e, "could not queue a flow's task");
                    break;
                }
            };
            self.update(i, |f| {
                f.status = FlowStatus::Running;
                f.attempts.push(attempt(&task));
            })
            .await;
            let ended = self.wait(task.id).await;
            let Some(ended) = ended else { break };
            let passed = ended.status == TaskStatus::Succeeded;
            self.update(i, |f| {
                f.device = ended.assigned_device.clone().or(f.device.take());
                if let Some(a) = f.attempts.last_mut() {
                    *a = attempt(&ended);
                }
            })
            .await;
            last = Some(ended);
            if passed {
                break;
            }
        }
        self.conclude(i, last, began).await
    }

    /// Flow `i`'s result from its last attempt's task.
    async fn conclude(&self, i: usize, last: Option<Task>, began: Instant) -> bool {
        let elapsed = began.elapsed().as_millis() as u64;
        let (status, failure) = match &last {
            Some(t) if t.status == TaskStatus::Succeeded => (FlowStatus::Passed, None),
            Some(t)
                if t.status == TaskStatus::Cancelled
                    || (self.stopping() && !t.status.is_terminal()) =>
            {
                (FlowStatus::Cancelled, Some(note("the run was cancelled")))
            }
            Some(t) => (FlowStatus::Failed, Some(self.failure(t).await)),
            None if self.stopping() => (FlowStatus::Cancelled, Some(note("the run was cancelled"))),
            None => (
                FlowStatus::Failed,
                Some(note("its task could not be queued")),
            ),
        };
        let passed = status == FlowStatus::Passed;
        self.flow_done(i, |f| {
            f.status = status;
            f.failure = failure;
            f.duration_ms = Some(elapsed);
        })
        .await;
        passed
    }

    /// The failing step of a failed task: its reason, its last step and that step's
    /// screenshot.
    async fn failure(&self, t: &Task) -> FlowFailure {
        let message = t
            .reason
            .clone()
            .unwrap_or_else(|| format!("the flow's task ended {}", t.status));
        let steps = self.core.store.steps(t.id).await.unwrap_or_default();
        let last = steps.last();
        FlowFailure {
            message,
            step: last.map(|s| s.n),
            screenshot: last
                .filter(|s| s.screenshot.is_some())
                .map(|s| format!("/v1/tasks/{}/steps/{}/screenshot", t.id, s.n)),
        }
    }

    /// Waits for task `id` to end; None when the core shuts down first. A cancel of the
    /// run cancels the task and waits for its end.
    async fn wait(&self, id: TaskId) -> Option<Task> {
        let stream = id.to_string();
        let mut feed = self
            .core
            .bus
            .feed(Filter::Streams(HashSet::from([stream.clone()])));
        if let Err(e) = feed.resume(&stream, 0).await {
            tracing::warn!(error = %e, "could not follow a flow's task");
        }
        let shutdown = self.core.cancel_token();
        let (mut asked, mut check) = (false, true);
        loop {
            if check
                && let Ok(t) = self.core.store.get_task(id).await
                && t.status.is_terminal()
            {
                return Some(t);
            }
            tokio::select! {
                item = feed.next() => match item {
                    Ok(Some(FeedItem::Event(ev))) => check = ev.event.is_finished(),
                    Ok(Some(FeedItem::Lagged { .. })) => check = true,
                    Ok(None) | Err(_) => {
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        check = true;
                    }
                },
                () = self.cancel.cancelled(), if !asked => {
                    asked = true;
                    check = true;
                    if let Err(e) = self.core.queue.cancel(id).await {
                        tracing::debug!(error = %e, "cancelling a flow's task");
                    }
                }
                () = shutdown.cancelled() => return None,
            }
        }
    }

    /// Flows never started become `cancelled`; the run's status, stored and published.
    async fn finish(&self) {
        let cancelled = self.cancel.is_cancelled();
        let interrupted = !cancelled && self.core.cancel_token().is_cancelled();
        let pending: Vec<usize> = {
            let run = self.run.lock().await;
            (0..run.flows.len())
                .filter(|i| !run.flows[*i].status.is_done())
                .collect()
        };
        for i in pending {
            self.flow_done(i, |f| {
                f.status = FlowStatus::Cancelled;
                f.failure = Some(note(if interrupted {
                    "the server stopped before it ran"
                } else {
                    "the run was cancelled before it ran"
                }));
            })
            .await;
        }
        let healed = self.store_healed().await;
        let mut run = self.run.lock().await;
        run.status = if interrupted {
            FlowRunStatus::Interrupted
        } else if cancelled {
            FlowRunStatus::Cancelled
        } else if run.flows.iter().all(|f| f.status == FlowStatus::Passed) {
            FlowRunStatus::Passed
        } else {
            FlowRunStatus::Failed
        };
        run.reason = Some(summary(&run) + &healed);
        run.finished_at = Some(chrono::Utc::now());
        run.duration_ms = Some(self.started.elapsed().as_millis() as u64);
        if let Err(e) = self.core.store.save_flow_run(&run).await {
            tracing::warn!(error = %e, run = %run.id, "could not save a flow run");
        }
        let ev = TaskEvent::FlowRunFinished {
            run_id: run.id,
            status: run.status,
            passed: run.count(FlowStatus::Passed) as u32,
            failed: run.count(FlowStatus::Failed) as u32,
            skipped: (run.count(FlowStatus::Skipped) + run.count(FlowStatus::Cancelled)) as u32,
            duration_ms: run.duration_ms.unwrap_or(0),
        };
        let stream = run.id.to_string();
        drop(run);
        if let Err(e) = self.core.bus.publish(&stream, ev).await {
            tracing::warn!(error = %e, "could not record a flow run event");
        }
    }
}

impl Suite {
    /// With `heal`, on a run of a stored workspace: the files the flows' tasks healed
    /// (`{"healed": {path: YAML}}` in a task's answer) over the version that ran, stored
    /// as the workspace's next version. What happened, for the run's reason.
    async fn store_healed(&self) -> String {
        let (ws, run_id, tasks) = {
            let run = self.run.lock().await;
            let tasks: Vec<TaskId> = (run.flows.iter())
                .filter_map(|f| f.attempts.last().map(|a| a.task_id))
                .collect();
            (run.workspace, run.id, tasks)
        };
        let Some(ws) = ws.filter(|_| self.plan.heal) else {
            return String::new();
        };
        let mut healed = std::collections::BTreeMap::new();
        for id in tasks {
            let Ok(task) = self.core.store.get_task(id).await else {
                continue;
            };
            let answer = (task.answer.as_deref()).and_then(|a| serde_json::from_str(a).ok());
            let answer: serde_json::Value = answer.unwrap_or_default();
            for (path, text) in answer["healed"].as_object().into_iter().flatten() {
                if let Some(text) = text.as_str() {
                    healed.insert(path.clone(), text.to_string());
                }
            }
        }
        if healed.is_empty() {
            return String::new();
        }
        match self.new_version(&ws, run_id, healed).await {
            Ok(v) => format!("; the healed flows are version {v} of the workspace"),
            Err(e) => {
                tracing::warn!(error = %e, run = %run_id, "could not store the healed workspace");
                format!("; the healed flows could not be stored: {e}")
            }
        }
    }

    async fn new_version(
        &self,
        ws: &WorkspaceRef,
        run: FlowRunId,
        healed: std::collections::BTreeMap<String, String>,
    ) -> Result<u32, crate::service::AppError> {
        let mut files = self
            .core
            .store
            .workspace(ws.id, Some(ws.version))
            .await?
            .files;
        for (path, text) in healed {
            if let Some(f) = files.get_mut(&path) {
                *f = text;
            }
        }
        let source = WorkspaceSource::Healed { flow_run: run };
        let v = super::super::workspaces::add_version(&self.core, ws.id, None, files, source);
        Ok(v.await?.version)
    }
}

fn note(message: &str) -> FlowFailure {
    FlowFailure {
        message: message.to_string(),
        step: None,
        screenshot: None,
    }
}

fn attempt(t: &Task) -> FlowAttempt {
    let duration_ms = match (t.started_at, t.finished_at) {
        (Some(a), Some(b)) => (b - a).num_milliseconds().max(0) as u64,
        _ => 0,
    };
    FlowAttempt {
        task_id: t.id,
        device: t.assigned_device.clone(),
        status: t.status,
        reason: t.reason.clone(),
        duration_ms,
    }
}

/// "3 passed, 1 failed (login.yaml), 0 skipped of 4 flows".
fn summary(run: &FlowRun) -> String {
    let failed: Vec<&str> = run
        .flows
        .iter()
        .filter(|f| f.status == FlowStatus::Failed)
        .map(|f| f.path.as_str())
        .collect();
    let named = if failed.is_empty() {
        String::new()
    } else {
        format!(" ({})", failed.join(", "))
    };
    format!(
        "{} passed, {} failed{named}, {} skipped or cancelled of {} flows",
        run.count(FlowStatus::Passed),
        failed.len(),
        run.count(FlowStatus::Skipped) + run.count(FlowStatus::Cancelled),
        run.flows.len()
    )
}

/// Ends a run no process drives (a cancel after a restart, start-up recovery): flows
/// not done are `cancelled`.
pub(super) fn end_orphan(run: &mut FlowRun, status: FlowRunStatus, why: &str) {
    for f in run.flows.iter_mut().filter(|f| !f.status.is_done()) {
        f.status = FlowStatus::Cancelled;
        f.failure = Some(note(why));
    }
    run.status = status;
    run.reason = Some(format!("{why}; {}", summary(run)));
    run.finished_at = Some(chrono::Utc::now());
}
