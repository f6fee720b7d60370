//! Trajectories: a task's whole history (summary, then every step's screen, thinking,
//! action, outcome and timings) as one JSON document, its export to files, and loading
//! a saved one back to resume a task from where it stopped.
//!
//! On disk an export is
//!
//! ```text
//! trajectory.json
//! screenshots/0001.png      (NNNN = step number, zero-padded to 4)
//! screenshots/0002.png
//! ```
//!
//! [`export_dir`] writes exactly that into a directory; [`export_archive`] produces the
//! same files as a `.tar.gz` under a top-level `{task_id}/` folder, so unpacking it never
//! spills files into the current directory. tar.gz rather than zip: `flate2` is already
//! compiled for the image stack and `tar` is small and pure Rust, while `zip` (only a
//! build dependency of the Swagger UI here) would be compiled again with its codecs; the
//! PNGs are already compressed, so zip's per-entry random access buys nothing for a
//! download that is unpacked whole. The gzip level is "fast" for the same reason.
//!
//! A step's `screenshot` names its file relative to `trajectory.json`; it is `null` when
//! the step had none or its artifact is gone, so the JSON never points at a missing file.
//!
//! Resume: [`load`] / [`load_bundle`] read a directory, a `trajectory.json`, or an
//! archive. [`TrajectoryBundle::seed_task`] commits the saved steps (and screenshots) to a
//! new task; the runner rebuilds its agent's history from committed steps when it starts,
//! so that task continues at the next step number. [`Trajectory::steps_as_history`] gives
//! the same history directly for callers that drive an agent themselves.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::artifacts::{ArtifactError, ArtifactStore};
use super::result::CoordinatorResult;
use crate::agent::context::{History, Note, StepRecord};
use crate::domain::{
    Action, Step, StepOutcome, StepScreen, StepStatus, StepTimings, Task, TaskId, TaskStatus,
};
use crate::store::{Store, StoreError};

/// `format` of every trajectory document.
pub const FORMAT: &str = "droidpilot.trajectory";
/// The newest `version` this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
pub const TRAJECTORY_FILE: &str = "trajectory.json";
/// Largest `trajectory.json` accepted by [`load`]; far above any real one (1000 steps).
const MAX_JSON_BYTES: u64 = 256 * 1024 * 1024;

/// The file name of step `n`'s screenshot, relative to `trajectory.json`.
pub fn screenshot_name(n: u32) -> String {
    format!("screenshots/{n:04}.png")
}

/// A task and every recorded step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Trajectory {
    /// Always `droidpilot.trajectory`.
    pub format: String,
    pub version: u32,
    pub task: Task,
    /// The coordinator's view of the outcome, once the task has ended.
    pub result: Option<CoordinatorResult>,
    /// Model calls summed per role (actor, planner, progress, verifier…), from the steps.
    #[serde(default)]
    pub roles: Vec<RoleUsage>,
    /// Where the time went, per phase (sum, mean, max over the steps). Absent in
    /// trajectories written before it was kept.
    #[serde(default)]
    pub phases: crate::run::metrics::PhaseSummary,
    pub steps: Vec<TrajectoryStep>,
    /// What people did (questions answered, manual actions during a take-over) and screen
    /// changes nobody in droidpilot caused, in order. Absent in trajectories written
    /// before they were kept.
    #[serde(default)]
    pub interventions: Vec<crate::domain::Intervention>,
}

/// What one role's model calls cost over a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoleUsage {
    pub role: crate::domain::ModelRole,
    pub calls: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, served from the providers' prompt caches.
    #[serde(default)]
    pub tokens_cached: u64,
    pub cost_usd: f64,
    /// Summed over the calls.
    pub latency_ms: u64,
    /// Calls that failed.
    pub errors: u32,
}

impl RoleUsage {
    /// Per role, in the order roles first appear.
    pub fn of(steps: &[Step]) -> Vec<RoleUsage> {
        let mut out: Vec<RoleUsage> = Vec::new();
        for c in steps.iter().flat_map(|s| &s.calls) {
            let i = match out.iter().position(|u| u.role == c.role) {
                Some(i) => i,
                None => {
                    out.push(RoleUsage {
                        role: c.role,
                        calls: 0,
                        tokens_in: 0,
                        tokens_out: 0,
                        tokens_cached: 0,
                        cost_usd: 0.0,
                        latency_ms: 0,
                        errors: 0,
                    });
                    out.len() - 1
                }
            };
            let u = &mut out[i];
            u.calls += 1;
            u.tokens_in += c.tokens_in;
            u.tokens_out += c.tokens_out;
            u.tokens_cached += c.tokens_cached;
            u.cost_usd += c.cost_usd.unwrap_or(0.0);
            u.latency_ms += c.latency_ms;
            u.errors += u32::from(c.error.is_some());
        }
        out
    }
}

/// One step as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TrajectoryStep {
    /// 1-based.
    pub n: u32,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub thinking: Option<String>,
    /// The action as it ran (custom actions of the recording run read as custom).
    #[serde(
        default,
        deserialize_with = "crate::domain::action::deserialize_recorded"
    )]
    pub action: Option<Action>,
    /// The model's reply as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A rejected answer: the action the model sent, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub rejected: Option<Value>,
    pub outcome: StepOutcome,
    /// The screen the step acted on (summary, app, activity, elements…).
    pub screen: Option<StepScreen>,
    pub timings: StepTimings,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, served from the providers' prompt caches.
    #[serde(default)]
    pub tokens_cached: u64,
    pub cost_usd: f64,
    /// sha256 of the screenshot (the artifact id in the store).
    pub screenshot_sha256: Option<String>,
    /// `screenshots/NNNN.png`, relative to `trajectory.json`.
    pub screenshot: Option<String>,
    /// Every model call of the step, by role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<crate::domain::ModelCall>,
    /// Plans, progress checks, verdicts and other notes of the roles around the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<crate::domain::Annotation>,
    /// The person who took this step during a take-over; absent for the agent's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a droidpilot trajectory: {reason}. Give the directory written by `droidpilot export`, its trajectory.json, or the .tar.gz from GET /v1/tasks/{{id}}/export"
    )]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot build the archive: {0}")]
    Archive(String),
    #[error("cannot seed task {task}: {reason}")]
    Seed { task: TaskId, reason: String },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> TrajectoryError {
    let path = path.to_path_buf();
    move |source| TrajectoryError::Io {
        action,
        path,
        source,
    }
}

impl TrajectoryStep {
    fn from_step(s: Step) -> Self {
        Self {
            n: s.n,
            started_at: s.started_at,
            thinking: s.thinking,
            action: s.action,
            raw: s.raw,
            rejected: s.rejected,
            outcome: s.outcome,
            screen: s.screen,
            timings: s.timings,
            tokens_in: s.tokens_in,
            tokens_out: s.tokens_out,
            tokens_cached: s.tokens_cached,
            cost_usd: s.cost_usd,
            screenshot: s.screenshot.as_ref().map(|_| screenshot_name(s.n)),
            screenshot_sha256: s.screenshot,
            calls: s.calls,
            annotations: s.annotations,
            by: s.by,
        }
    }

    /// The recorded step for `task`, with `screenshot` as the artifact hash to store.
    fn to_step(&self, task: TaskId, screenshot: Option<String>) -> Step {
        Step {
            task_id: task,
            n: self.n,
            started_at: self.started_at,
            thinking: self.thinking.clone(),
            action: self.action.clone(),
            raw: self.raw.clone(),
            rejected: self.rejected.clone(),
            outcome: self.outcome.clone(),
            screen: self.screen.clone(),
            screenshot,
            timings: self.timings.clone(),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            tokens_cached: self.tokens_cached,
            cost_usd: self.cost_usd,
            model_calls: self.calls.len() as u32,
            replay: None,
            calls: self.calls.clone(),
            annotations: self.annotations.clone(),
            by: self.by.clone(),
        }
    }

    /// The action, when it is a built-in one (a custom action needs its handler).
    pub fn parsed_action(&self) -> Option<Action> {
        self.action
            .clone()
            .filter(|a| !matches!(a, Action::Custom(_)))
    }
}

impl Trajectory {
    /// The task's trajectory from the store (for `GET /v1/tasks/{id}/trajectory`).
    /// Screenshot names are given for every step that recorded one.
    pub async fn build(store: &dyn Store, id: TaskId) -> Result<Self, TrajectoryError> {
        let task = store.get_task(id).await?;
        let steps = store.steps(id).await?;
        let result = CoordinatorResult::new(&task, &steps).ok();
        Ok(Self {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            task,
            result,
            roles: RoleUsage::of(&steps),
            phases: crate::run::metrics::PhaseSummary::of(&steps),
            steps: steps.into_iter().map(TrajectoryStep::from_step).collect(),
            interventions: store.interventions(id).await?,
        })
    }

    /// The agent's history as the runner would have built it after these steps: one
    /// record per step whose action parses, plus the user's answers and tool results.
    pub fn steps_as_history(&self, window: usize) -> History {
        let mut h = History::new(window);
        for s in &self.steps {
            let Some(action) = s.parsed_action() else {
                continue;
            };
            let detail = s.outcome.detail.as_ref();
            match &action {
                Action::AskUser { question, .. } => {
                    if let Some(answer) =
                        detail.and_then(|d| d.get("answer")).and_then(Value::as_str)
                    {
                        h.push_note(Note::UserAnswer {
                            step: s.n,
                            question: question.clone(),
                            answer: answer.into(),
                        });
                    }
                }
                Action::McpCall { tool, .. } => {
                    if let Some(d) = detail {
                        // The runner records `{"tool": …, "result": <string or JSON>}`.
                        let text = match d.get("result") {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => d.to_string(),
                        };
                        h.push_note(Note::McpResult {
                            step: s.n,
                            tool: tool.clone(),
                            result: text.chars().take(2000).collect(),
                            is_error: s.outcome.status != StepStatus::Ok,
                        });
                    }
                }
                _ => {}
            }
            let mut outcome = s.outcome.status.to_string();
            if let Some(e) = &s.outcome.error {
                outcome = format!("{outcome}: {e}");
            } else if let Some(changed) = s.outcome.screen_changed {
                outcome = if changed {
                    "screen changed".into()
                } else {
                    "no visible change".into()
                };
            }
            h.push_step(StepRecord {
                step: s.n,
                thinking: s.thinking.clone().unwrap_or_default(),
                action,
                outcome,
                failed: s.outcome.status != crate::domain::StepStatus::Ok,
            });
        }
        h
    }

    fn check(&self, path: &Path) -> Result<(), TrajectoryError> {
        let invalid = |reason: String| TrajectoryError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        if self.format != FORMAT {
            return Err(invalid(format!(
                "`format` is `{}`, expected `{FORMAT}`",
                self.format
            )));
        }
        if self.version > FORMAT_VERSION {
            return Err(invalid(format!(
                "it is version {}, this droidpilot reads up to {FORMAT_VERSION}; upgrade droidpilot",
                self.version
            )));
        }
        for (i, s) in self.steps.iter().enumerate() {
            if s.n != i as u32 + 1 {
                return Err(invalid(format!(
                    "steps must be numbered 1, 2, 3…; entry {} has n = {}",
                    i + 1,
                    s.n
                )));
            }
        }
        Ok(())
    }
}

/// A loaded trajectory with the screenshots that came with it, by step number.
#[derive(Debug, Clone)]
pub struct TrajectoryBundle {
    pub trajectory: Trajectory,
    pub screenshots: BTreeMap<u32, Vec<u8>>,
}

impl TrajectoryBundle {
    /// Commits the saved steps to `task` (a new, queued task with no steps) so its runner
    /// resumes after them. Screenshots that came with the bundle are stored as artifacts
    /// again; steps without one keep no screenshot. The steps' tokens and cost count
    /// toward the new task's totals, and the steps toward its `max_steps`.
    ///
    /// Call it before the scheduler can start the task (right after creating it): the
    /// runner reads the committed steps once, when it starts.
    pub async fn seed_task(
        &self,
        store: &dyn Store,
        artifacts: &ArtifactStore,
        task: TaskId,
    ) -> Result<u32, TrajectoryError> {
        let t = store.get_task(task).await?;
        if t.status != TaskStatus::Queued {
            return Err(TrajectoryError::Seed {
                task,
                reason: format!(
                    "it is {}; only a queued task can take a saved history",
                    t.status
                ),
            });
        }
        if !store.steps(task).await?.is_empty() {
            return Err(TrajectoryError::Seed {
                task,
                reason: "it already has steps".into(),
            });
        }
        if self.trajectory.steps.len() as u32 >= t.spec.max_steps {
            return Err(TrajectoryError::Seed {
                task,
                reason: format!(
                    "the trajectory has {} steps and the task's max_steps is {}; raise max_steps so the agent can continue",
                    self.trajectory.steps.len(),
                    t.spec.max_steps
                ),
            });
        }
        for s in &self.trajectory.steps {
            let sha = match self.screenshots.get(&s.n) {
                Some(png) => Some(
                    artifacts
                        .put("screenshot", "image/png", "png", png.clone().into())
                        .await?,
                ),
                None => None,
            };
            store.append_step(&s.to_step(task, sha)).await?;
        }
        Ok(self.trajectory.steps.len() as u32)
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    pub steps: u32,
    pub screenshots: u32,
    /// Steps that recorded a screenshot whose artifact is no longer on disk.
    pub missing_screenshots: u32,
}

/// The trajectory with screenshot names only for files that exist, and the files.
async fn collect(
    store: &dyn Store,
    artifacts: &ArtifactStore,
    id: TaskId,
) -> Result<(Trajectory, Vec<(String, Vec<u8>)>, ExportSummary), TrajectoryError> {
    let mut t = Trajectory::build(store, id).await?;
    let mut files = Vec::new();
    let mut missing = 0;
    for s in &mut t.steps {
        let Some(sha) = &s.screenshot_sha256 else {
            continue;
        };
        match artifacts.get(sha).await? {
            Some((a, bytes)) => {
                let png = if a.media_type == "image/png" {
                    bytes
                } else {
                    to_png(&bytes)?
                };
                files.push((screenshot_name(s.n), png));
            }
            None => {
                s.screenshot = None;
                missing += 1;
            }
        }
    }
    let summary = ExportSummary {
        steps: t.steps.len() as u32,
        screenshots: files.len() as u32,
        missing_screenshots: missing,
    };
    Ok((t, files, summary))
}

/// Screenshots are stored as PNG today; anything else is converted so the export's
/// `.png` names never lie.
fn to_png(bytes: &[u8]) -> Result<Vec<u8>, TrajectoryError> {
    let img = image::load_from_memory(bytes)
        .map_err(|e| TrajectoryError::Archive(format!("a screenshot cannot be decoded: {e}")))?;
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| {
            TrajectoryError::Archive(format!("a screenshot cannot be encoded as PNG: {e}"))
        })?;
    Ok(out.into_inner())
}

/// Writes `trajectory.json` and `screenshots/NNNN.png` into `out` (created if needed;
/// existing files of the same names are replaced). For `droidpilot export ID --out DIR`.
pub async fn export_dir(
    store: &dyn Store,
    artifacts: &ArtifactStore,
    id: TaskId,
    out: &Path,
) -> Result<ExportSummary, TrajectoryError> {
    let (t, files, summary) = collect(store, artifacts, id).await?;
    let shots = out.join("screenshots");
    tokio::fs::create_dir_all(&shots)
        .await
        .map_err(io("create", &shots))?;
    for (name, bytes) in files {
        let p = out.join(name);
        tokio::fs::write(&p, bytes).await.map_err(io("write", &p))?;
    }
    // Written last, so a directory with a trajectory.json has all its screenshots.
    let json =
        serde_json::to_vec_pretty(&t).map_err(|e| TrajectoryError::Archive(e.to_string()))?;
    let p = out.join(TRAJECTORY_FILE);
    tokio::fs::write(&p, json).await.map_err(io("write", &p))?;
    Ok(summary)
}

/// The export as a `.tar.gz` (`application/gzip`), entries under `{id}/`. For
/// `GET /v1/tasks/{id}/export`; suggest `{id}.tar.gz` as the download name.
pub async fn export_archive(
    store: &dyn Store,
    artifacts: &ArtifactStore,
    id: TaskId,
) -> Result<Vec<u8>, TrajectoryError> {
    let (t, files, _) = collect(store, artifacts, id).await?;
    let json =
        serde_json::to_vec_pretty(&t).map_err(|e| TrajectoryError::Archive(e.to_string()))?;
    let prefix = id.to_string();
    let mtime = t
        .task
        .finished_at
        .unwrap_or(t.task.created_at)
        .timestamp()
        .max(0) as u64;
    // Compressing is CPU work; keep it off the async workers.
    tokio::task::spawn_blocking(move || {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        let mut add = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(mtime);
            h.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut h, format!("{prefix}/{name}"), bytes)
        };
        add(TRAJECTORY_FILE, &json)?;
        for (name, bytes) in &files {
            add(name, bytes)?;
        }
        tar.into_inner()?.finish()
    })
    .await
    .map_err(|e| TrajectoryError::Archive(e.to_string()))?
    .map_err(|e| TrajectoryError::Archive(e.to_string()))
}

/// Reads a saved trajectory (a directory, its `trajectory.json`, or an export archive).
pub fn load(path: &Path) -> Result<Trajectory, TrajectoryError> {
    Ok(read(path, false)?.trajectory)
}

/// [`load`], with the screenshots (for [`TrajectoryBundle::seed_task`]).
pub fn load_bundle(path: &Path) -> Result<TrajectoryBundle, TrajectoryError> {
    read(path, true)
}

fn parse(path: &Path, json: &[u8]) -> Result<Trajectory, TrajectoryError> {
    let t: Trajectory = serde_json::from_slice(json).map_err(|e| TrajectoryError::Invalid {
        path: path.to_path_buf(),
        reason: format!("{TRAJECTORY_FILE} does not parse: {e}"),
    })?;
    t.check(path)?;
    Ok(t)
}

/// Step number of `screenshots/NNNN.png` (with any leading folders).
fn step_of(name: &str) -> Option<u32> {
    let rest = name.rsplit_once("screenshots/")?.1;
    rest.strip_suffix(".png")?.parse().ok()
}

fn read(path: &Path, with_screenshots: bool) -> Result<TrajectoryBundle, TrajectoryError> {
    let meta = std::fs::metadata(path).map_err(io("read", path))?;
    if meta.is_dir() {
        return read_dir(path, &path.join(TRAJECTORY_FILE), with_screenshots);
    }
    let mut head = [0u8; 2];
    let mut f = std::fs::File::open(path).map_err(io("open", path))?;
    let got = f.read(&mut head).map_err(io("read", path))?;
    if got == 2 && head == [0x1f, 0x8b] {
        return read_archive(path, with_screenshots);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    read_dir(dir, path, with_screenshots)
}

fn read_dir(
    dir: &Path,
    json_path: &Path,
    with_screenshots: bool,
) -> Result<TrajectoryBundle, TrajectoryError> {
    let len = std::fs::metadata(json_path)
        .map_err(io("read", json_path))?
        .len();
    if len > MAX_JSON_BYTES {
        return Err(TrajectoryError::Invalid {
            path: json_path.into(),
            reason: format!("it is {len} bytes, over the {MAX_JSON_BYTES} limit"),
        });
    }
    let json = std::fs::read(json_path).map_err(io("read", json_path))?;
    let trajectory = parse(json_path, &json)?;
    let mut screenshots = BTreeMap::new();
    if with_screenshots {
        for s in &trajectory.steps {
            let Some(name) = &s.screenshot else { continue };
            if step_of(name) != Some(s.n) {
                continue; // only our own names: never read outside the export
            }
            let p = dir.join(name);
            match std::fs::read(&p) {
                Ok(b) => {
                    screenshots.insert(s.n, b);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("read", &p)(e)),
            }
        }
    }
    Ok(TrajectoryBundle {
        trajectory,
        screenshots,
    })
}

fn read_archive(path: &Path, with_screenshots: bool) -> Result<TrajectoryBundle, TrajectoryError> {
    let f = std::fs::File::open(path).map_err(io("open", path))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut json = None;
    let mut screenshots = BTreeMap::new();
    let bad = |e: std::io::Error| TrajectoryError::Invalid {
        path: path.to_path_buf(),
        reason: format!("the archive is damaged: {e}"),
    };
    for entry in ar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = entry.path().map_err(bad)?.to_string_lossy().into_owned();
        let is_json = name == TRAJECTORY_FILE || name.ends_with(&format!("/{TRAJECTORY_FILE}"));
        let shot = step_of(&name).filter(|_| with_screenshots);
        if !is_json && shot.is_none() {
            continue;
        }
        if entry.size() > MAX_JSON_BYTES {
            return Err(TrajectoryError::Invalid {
                path: path.into(),
                reason: format!("entry {name} is too large"),
            });
        }
        let mut buf = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut buf).map_err(bad)?;
        if is_json {
            json = Some(buf);
        } else if let Some(n) = shot {
            screenshots.insert(n, buf);
        }
    }
    let json = json.ok_or_else(|| TrajectoryError::Invalid {
        path: path.into(),
        reason: format!("the archive holds no {TRAJECTORY_FILE}"),
    })?;
    let trajectory = parse(path, &json)?;
    Ok(TrajectoryBundle {
        trajectory,
        screenshots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshot_names_are_zero_padded() {
        assert_eq!(screenshot_name(1), "screenshots/0001.png");
        assert_eq!(screenshot_name(1000), "screenshots/1000.png");
        assert_eq!(step_of("abc/screenshots/0042.png"), Some(42));
        assert_eq!(step_of("screenshots/../x.png"), None);
    }

    #[test]
    fn unreadable_inputs_get_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(TRAJECTORY_FILE);
        std::fs::write(&p, b"{\"format\": \"other\"}").unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("not a droidpilot trajectory") && e.contains("droidpilot export"),
            "{e}"
        );
        let e = load(&dir.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("cannot read"), "{e}");
    }
}
