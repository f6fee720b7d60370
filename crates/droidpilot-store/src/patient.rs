//! `PatientStore`: a `Store` that waits out a database that went away. Every call that is
//! safe to repeat is retried on a transient error (connection lost or refused, pool
//! timed out, server shutting down) with the shared `RetryPolicy` backoff; other errors,
//! and calls that would create a second row when repeated (a new task or script), pass
//! through at once, as does `start_task` (a claim must not be guessed at).
//!
//! The runner writes through one (`Core::build`), so a task whose step commit meets a
//! restarting PostgreSQL pauses there and goes on when it is back: `append_step` is
//! idempotent (a commit whose reply was lost is not recorded twice). The HTTP API uses
//! the plain store, so `/readyz` and requests fail fast (503) during the outage.
//! An event whose commit succeeded but whose reply was lost would be appended again
//! with the next seq: the feed stays gapless, the event may show twice.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Artifact, CancelOutcome, EventSeqs, StepCommit, Store, StoreError, StoredEvent, TaskFilter,
    TaskPage,
};
use droidpilot_core::domain::{
    FlowRun, FlowRunId, FlowRunPage, Intervention, RetryPolicy, Step, Task, TaskEvent, TaskId,
    TaskSpec, TaskStatus,
};
use droidpilot_core::script::{Script, ScriptId, ScriptPage, ScriptRecord, ScriptSource};

pub struct PatientStore {
    inner: Arc<dyn Store>,
    policy: RetryPolicy,
}

impl PatientStore {
    /// Retries with `policy`; `default_policy` waits out an outage of about five minutes.
    pub fn new(inner: Arc<dyn Store>, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    /// 200 ms doubling to 5 s, with jitter (instances do not return all at once), 60
    /// retries: about five minutes of outage before the runner gives up on a task.
    pub fn default_policy() -> RetryPolicy {
        RetryPolicy::new(Duration::from_millis(200), Duration::from_secs(5), 60).with_jitter()
    }

    async fn retry<T, F, Fut>(&self, what: &'static str, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut delays = self.policy.delays();
        loop {
            match op().await {
                Err(e) if e.is_transient() => match delays.next() {
                    Some(d) => {
                        tracing::warn!(call = what, error = %e, retry_in_ms = d.as_millis() as u64,
                            "the database does not answer; waiting");
                        metrics::counter!("droidpilot_store_retries_total", "call" => what)
                            .increment(1);
                        tokio::time::sleep(d).await;
                    }
                    None => return Err(e),
                },
                r => return r,
            }
        }
    }
}

/// `self.retry("name", || self.inner.name(args…))`.
macro_rules! patient {
    ($self:ident . $name:ident ( $($arg:expr),* )) => {
        $self.retry(stringify!($name), || $self.inner.$name($($arg),*)).await
    };
}

#[async_trait]
impl Store for PatientStore {
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
    async fn create_task(&self, spec: TaskSpec) -> Result<Task, StoreError> {
        self.inner.create_task(spec).await
    }
    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        patient!(self.get_task(id))
    }
    async fn list_tasks(&self, filter: TaskFilter) -> Result<TaskPage, StoreError> {
        patient!(self.list_tasks(filter.clone()))
    }
    async fn cancel_task(&self, id: TaskId) -> Result<(Task, CancelOutcome), StoreError> {
        patient!(self.cancel_task(id))
    }
    async fn append_event(
        &self,
        stream: &str,
        event: TaskEvent,
    ) -> Result<StoredEvent, StoreError> {
        patient!(self.append_event(stream, event.clone()))
    }
    async fn events_since(
        &self,
        stream: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        patient!(self.events_since(stream, since, limit))
    }
    async fn queued_tasks(&self, limit: u32) -> Result<Vec<Task>, StoreError> {
        patient!(self.queued_tasks(limit))
    }
    // Not retried: after a claim whose reply was lost, a retry would answer "taken by
    // someone else" and leave the task running with no runner. The scheduler tries again
    // on its next round instead.
    async fn start_task(&self, id: TaskId, device: &str) -> Result<bool, StoreError> {
        self.inner.start_task(id, device).await
    }
    async fn set_task_agent(
        &self,
        id: TaskId,
        agent: &serde_json::Value,
    ) -> Result<(), StoreError> {
        patient!(self.set_task_agent(id, agent))
    }
    async fn set_task_recording(
        &self,
        id: TaskId,
        segments: &[droidpilot_core::domain::RecordingSegment],
    ) -> Result<(), StoreError> {
        patient!(self.set_task_recording(id, segments))
    }
    async fn set_task_status(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
    ) -> Result<Task, StoreError> {
        patient!(self.set_task_status(id, status, reason))
    }
    async fn finish_task(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
        answer: Option<&str>,
    ) -> Result<Task, StoreError> {
        patient!(self.finish_task(id, status, reason, answer))
    }
    async fn append_step(&self, step: &Step) -> Result<(), StoreError> {
        patient!(self.append_step(step))
    }
    async fn commit_step(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError> {
        patient!(self.commit_step(c))
    }
    async fn steps(&self, id: TaskId) -> Result<Vec<Step>, StoreError> {
        patient!(self.steps(id))
    }
    async fn step(&self, id: TaskId, n: u32) -> Result<Step, StoreError> {
        patient!(self.step(id, n))
    }
    async fn put_artifact(&self, a: &Artifact) -> Result<(), StoreError> {
        patient!(self.put_artifact(a))
    }
    async fn artifact(&self, sha256: &str) -> Result<Option<Artifact>, StoreError> {
        patient!(self.artifact(sha256))
    }
    async fn create_intervention(&self, iv: &Intervention) -> Result<(), StoreError> {
        self.inner.create_intervention(iv).await
    }
    async fn answer_intervention(
        &self,
        id: &str,
        answer: &str,
        by: &str,
    ) -> Result<Intervention, StoreError> {
        self.inner.answer_intervention(id, answer, by).await
    }
    async fn interventions(&self, task: TaskId) -> Result<Vec<Intervention>, StoreError> {
        patient!(self.interventions(task))
    }
    async fn recover_running(
        &self,
        requeue: bool,
        reason: &str,
    ) -> Result<Vec<TaskId>, StoreError> {
        self.inner.recover_running(requeue, reason).await
    }
    async fn create_script(
        &self,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError> {
        self.inner.create_script(script, source).await
    }
    async fn add_script_version(
        &self,
        id: ScriptId,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError> {
        self.inner.add_script_version(id, script, source).await
    }
    async fn script(&self, id: ScriptId, version: Option<u32>) -> Result<ScriptRecord, StoreError> {
        patient!(self.script(id, version))
    }
    async fn list_scripts(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<ScriptPage, StoreError> {
        patient!(self.list_scripts(cursor, limit))
    }
    async fn script_versions(&self, id: ScriptId) -> Result<Vec<ScriptRecord>, StoreError> {
        patient!(self.script_versions(id))
    }
    async fn delete_script(&self, id: ScriptId) -> Result<(), StoreError> {
        self.inner.delete_script(id).await
    }
    async fn app_description(
        &self,
        package: &str,
        version: &str,
    ) -> Result<Option<String>, StoreError> {
        patient!(self.app_description(package, version))
    }
    async fn put_app_description(
        &self,
        package: &str,
        version: &str,
        description: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        patient!(self.put_app_description(package, version, description, model))
    }
    async fn delete_task(&self, id: TaskId) -> Result<Vec<Artifact>, StoreError> {
        self.inner.delete_task(id).await
    }
    async fn ended_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError> {
        patient!(self.ended_before(before, limit))
    }
    async fn delete_artifacts_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<Vec<Artifact>, StoreError> {
        self.inner.delete_artifacts_before(before, limit).await
    }
    async fn save_flow_run(&self, run: &FlowRun) -> Result<(), StoreError> {
        patient!(self.save_flow_run(run))
    }
    async fn flow_run(&self, id: FlowRunId) -> Result<FlowRun, StoreError> {
        patient!(self.flow_run(id))
    }
    async fn list_flow_runs(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<FlowRunPage, StoreError> {
        self.inner.list_flow_runs(cursor, limit).await
    }
    async fn running_flow_runs(&self) -> Result<Vec<FlowRun>, StoreError> {
        patient!(self.running_flow_runs())
    }
    async fn create_workspace(
        &self,
        draft: droidpilot_core::domain::StoredWorkspace,
    ) -> Result<droidpilot_core::domain::WorkspaceVersion, StoreError> {
        self.inner.create_workspace(draft).await
    }
    async fn add_workspace_version(
        &self,
        id: droidpilot_core::domain::WorkspaceId,
        draft: droidpilot_core::domain::StoredWorkspace,
    ) -> Result<droidpilot_core::domain::WorkspaceVersion, StoreError> {
        self.inner.add_workspace_version(id, draft).await
    }
    async fn workspace(
        &self,
        id: droidpilot_core::domain::WorkspaceId,
        version: Option<u32>,
    ) -> Result<droidpilot_core::domain::StoredWorkspace, StoreError> {
        patient!(self.workspace(id, version))
    }
    async fn workspace_versions(
        &self,
        id: droidpilot_core::domain::WorkspaceId,
    ) -> Result<Vec<droidpilot_core::domain::WorkspaceVersion>, StoreError> {
        patient!(self.workspace_versions(id))
    }
    async fn list_workspaces(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<droidpilot_core::domain::WorkspacePage, StoreError> {
        patient!(self.list_workspaces(cursor, limit))
    }
    async fn delete_workspace(
        &self,
        id: droidpilot_core::domain::WorkspaceId,
    ) -> Result<(), StoreError> {
        self.inner.delete_workspace(id).await
    }
    async fn close(&self) {
        self.inner.close().await
    }
    fn cluster(&self) -> Option<&dyn crate::cluster::ClusterStore> {
        self.inner.cluster()
    }

    fn notifier(&self) -> Option<crate::notify::Notifier> {
        self.inner.notifier()
    }
}
