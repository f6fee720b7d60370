//! The observe phase: screenshot, UI tree and current app, captured concurrently and
//! turned into what the agent sees (`Observed`), with graceful degradation when one
//! capture fails and a wait for the device when it dropped.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::state::RunState;
use super::{Fatal, Runner};
use crate::device::thumb::Thumb;
use crate::device::{Device, DeviceError};
use crate::domain::ScreenSize;
use crate::domain::TaskEvent;
use crate::run::artifacts::Staged;
use crate::run::stop::unless_cancelled;
use crate::screen::{ReprOptions, Screen, ScreenRepresentation, content_hash, layout_hash};

/// One observation: what the agent sees, plus what the runner keeps for acting on it.
#[derive(Clone)]
pub(crate) struct Observed {
    pub repr: ScreenRepresentation,
    pub screen: Option<Arc<Screen>>,
    pub png: Option<bytes::Bytes>,
    pub screenshot_sha: Option<String>,
    /// The screenshot's coarse fingerprint, decoded at most once: settle compares the
    /// picture it read with the step's, and that picture is the next step's to compare
    /// with (a clone keeps what was decoded).
    pub thumb: OnceLock<Option<Thumb>>,
    /// The screenshot, hashed but neither written nor recorded: `observe_with` leaves
    /// it here, and the loop writes the file and commits its row with `step.observed`
    /// while the step goes on.
    pub unrecorded: Option<Staged>,
    /// A black screenshot: a secure window (password, payment). The tree is all we have.
    pub sensitive: bool,
    pub layout: Option<u64>,
    /// The layout hash with digits counted (`screen::content_hash`), for the stuck
    /// detector and settle: a counter that moves is progress, and a change.
    pub content: Option<u64>,
    pub screenshot_ms: u64,
    pub hierarchy_ms: u64,
    /// Debug mode (`debug_artifacts`): the sha256 of the hierarchy XML's artifact.
    pub hierarchy_sha: Option<String>,
    /// When the captures were done: the stale-screen check (`stale.rs`) measures the
    /// decision's age from here.
    pub taken: Instant,
}

/// How an observation's two captures are timed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capture {
    /// Screenshot and hierarchy at once (on ADB, two streams over one transport).
    Together,
    /// The hierarchy first, then the screenshot: after an action the dump is what waits
    /// for the UI to go idle, so the picture must be taken once it returns to show the
    /// screen the tree describes.
    TreeFirst,
}

impl Runner {
    /// The screen the step decides on: the cached one, or a fresh capture, published as
    /// `step.observed`. None: nothing to record (a cancel, or the device dropped and came
    /// back), so the step starts over.
    pub(super) async fn observe_phase(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
    ) -> Result<Option<Observed>, Fatal> {
        let (cached, settled) = st.begin_step();
        let size = st.size();
        let mut obs = match cached {
            Some(o) => o,
            None => match unless_cancelled(
                st.stop(),
                self.observe_with(device, size, Capture::Together),
            )
            .await
            {
                None => return Ok(None),
                Some(Ok(o)) => o,
                Some(Err(e)) if e.is_disconnect() => {
                    self.reconnect(st, device, &e).await?;
                    return Ok(None);
                }
                Some(Err(e)) => {
                    return Err(Fatal::Device(format!(
                        "cannot observe the screen: {e}. {}",
                        e.hint()
                    )));
                }
            },
        };
        if let (Some(before), Some(after)) = (settled, obs.layout)
            && before != after
            && self.cfg.detect_external_changes
        {
            self.external_change(st, before, &obs).await?;
        }
        let r = &obs.repr;
        let observed = TaskEvent::StepObserved {
            task_id: st.task().id,
            step: st.step(),
            summary: r.summary.clone(),
            app: r.app_package.clone(),
            has_modal: r.has_modal,
            sensitive: obs.sensitive,
            screenshot: obs.screenshot_sha.clone(),
            elements: r.actionable_elements.len(),
        };
        // The screenshot's row and the event that names it: one transaction, so a
        // subscriber never sees a hash it cannot fetch; written while the step goes on
        // (the step's own commit waits for it).
        let staged = obs.unrecorded.take();
        let rows = async move {
            match staged {
                Some(s) => s.write().await.map(|a| vec![a]).map_err(|e| e.into_store()),
                None => Ok(Vec::new()),
            }
        };
        self.bus.commit_soon(st.stream(), rows, vec![observed]);
        Ok(Some(obs))
    }

    pub(super) async fn screen_size(&self, device: &dyn Device) -> Result<ScreenSize, Fatal> {
        device.info().await.map(|i| i.screen).map_err(|e| {
            Fatal::Device(format!(
                "cannot read the device's screen size: {e}. {}",
                e.hint()
            ))
        })
    }

    /// Screenshot, hierarchy and foreground activity, concurrently. Either capture may
    /// fail alone: a failed tree degrades to screenshot only, a black or failed screenshot
    /// to tree only (flagged sensitive). Only when both fail is it an error. The
    /// screenshot's artifact row is recorded at once (the caller hands its hash out).
    pub(super) async fn observe(
        &self,
        device: &dyn Device,
        size: ScreenSize,
    ) -> Result<Observed, DeviceError> {
        let mut obs = self.observe_with(device, size, Capture::Together).await?;
        if let Some(staged) = obs.unrecorded.take() {
            self.artifacts
                .record(staged)
                .await
                .map_err(|e| DeviceError::Protocol(e.to_string()))?;
        }
        Ok(obs)
    }

    /// `observe`, with the captures timed as `capture` says, and the screenshot only
    /// hashed: its file and row are left in `unrecorded` for the loop's `step.observed`.
    pub(crate) async fn observe_with(
        &self,
        device: &dyn Device,
        size: ScreenSize,
        capture: Capture,
    ) -> Result<Observed, DeviceError> {
        let (shot, xml, current) = match capture {
            Capture::Together => tokio::join!(
                timed(device.screenshot()),
                timed(device.hierarchy()),
                device.current_app()
            ),
            Capture::TreeFirst => {
                let (xml, current) = tokio::join!(timed(device.hierarchy()), device.current_app());
                (timed(device.screenshot()).await, xml, current)
            }
        };
        let ((shot, screenshot_ms), (xml, hierarchy_ms)) = (shot, xml);

        let (png, sensitive, shot_err) = match shot {
            Ok(s) if s.is_black() => (None, true, None),
            Ok(s) => match s.png() {
                Ok(p) => (Some(p), false, None),
                Err(e) => (None, false, Some(e)),
            },
            Err(e) => (None, false, Some(e)),
        };
        let mut opts = self.repr.clone();
        opts.screen = Some(size);
        opts.activity = current.ok().and_then(|c| c.activity);
        let hierarchy_sha = match (&xml, self.cfg.debug_artifacts) {
            (Ok(x), true) => self.keep_hierarchy(x).await,
            _ => None,
        };
        let (repr, screen, tree_err) = match xml.map(|x| Screen::from_xml(&x, &opts)) {
            Ok(Ok(screen)) => (screen.representation(&opts), Some(Arc::new(screen)), None),
            Ok(Err(parse)) => (
                degraded(&format!("{parse}"), &opts),
                None,
                Some(DeviceError::HierarchyUnavailable(parse.to_string())),
            ),
            Err(e) => (degraded(&e.to_string(), &opts), None, Some(e)),
        };
        if png.is_none() && screen.is_none() {
            // Nothing to act on. A disconnect anywhere wins, so the caller waits for it.
            let err = [tree_err, shot_err]
                .into_iter()
                .flatten()
                .find(|e| e.is_disconnect());
            return Err(err.unwrap_or_else(|| {
                DeviceError::HierarchyUnavailable(
                    "neither a screenshot nor a UI tree could be captured".into(),
                )
            }));
        }
        let unrecorded = png.as_ref().map(|p| {
            self.artifacts
                .stage("screenshot", "image/png", "png", p.clone())
        });
        // Hashed before OCR's nodes join the tree: OCR's variance is never a change.
        let layout = screen.as_ref().map(|s| layout_hash(&s.tree).0);
        let content = screen.as_ref().map(|s| content_hash(&s.tree).0);
        let sha = unrecorded.as_ref().map(|a| a.row.sha256.as_str());
        let (repr, screen) = match (screen, png.as_deref(), sha) {
            (Some(s), Some(p), Some(sha)) if self.ocr.wanted(device.serial()) => {
                self.with_ocr(s, p, sha, &opts).await
            }
            (screen, ..) => (repr, screen),
        };
        Ok(Observed {
            repr,
            screen,
            png,
            screenshot_sha: unrecorded.as_ref().map(|a| a.row.sha256.clone()),
            thumb: OnceLock::new(),
            unrecorded,
            sensitive,
            layout,
            content,
            screenshot_ms,
            hierarchy_ms,
            hierarchy_sha,
            taken: Instant::now(),
        })
    }

    /// Debug mode: stores the hierarchy XML as an artifact (a failure is logged, never
    /// the step's).
    async fn keep_hierarchy(&self, xml: &str) -> Option<String> {
        let bytes = bytes::Bytes::copy_from_slice(xml.as_bytes());
        let staged = (self.artifacts).stage("hierarchy", "application/xml", "xml", bytes);
        match self.artifacts.record(staged).await {
            Ok(a) => Some(a.sha256),
            Err(e) => {
                tracing::warn!(error = %e, "the hierarchy artifact could not be kept");
                None
            }
        }
    }
}

impl Runner {
    /// The screen with OCR's words merged in (`screen::ocr`), and its representation
    /// again. OCR that fails leaves the screen as the tree has it (logged): the task
    /// goes on with what the tree says.
    async fn with_ocr(
        &self,
        screen: Arc<Screen>,
        png: &[u8],
        sha: &str,
        opts: &ReprOptions,
    ) -> (ScreenRepresentation, Option<Arc<Screen>>) {
        match self.ocr.read(png, sha).await {
            Ok(read) => {
                let (merged, stats) = Screen::clone(&screen).with_ocr(&read.boxes);
                tracing::debug!(
                    boxes = stats.boxes,
                    merged = stats.merged,
                    added = stats.added,
                    ms = read.ms,
                    cached = read.cached,
                    "ocr"
                );
                (merged.representation(opts), Some(Arc::new(merged)))
            }
            Err(e) => {
                tracing::warn!(error = %e, hint = e.hint(), "OCR failed; the screen is used without it");
                (screen.representation(opts), Some(screen))
            }
        }
    }
}

/// A capture and how long it took, in ms.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, u64) {
    let t = Instant::now();
    let out = f.await;
    (out, t.elapsed().as_millis() as u64)
}

/// The representation when no tree could be read: the agent acts from the screenshot.
fn degraded(why: &str, opts: &ReprOptions) -> ScreenRepresentation {
    ScreenRepresentation {
        app_package: None,
        activity: opts.activity.clone(),
        has_modal: false,
        elements: format!("(UI tree unavailable: {why}; act by coordinates on the screenshot)"),
        summary: "UI tree unavailable; screenshot only".into(),
        actionable_elements: Vec::new(),
    }
}

impl Runner {
    /// The screen changed between the last step's settled layout and this observation
    /// with no agent action to explain it (someone touched the phone): an
    /// `external_change` intervention, and a note for the agent.
    async fn external_change(
        &self,
        st: &mut RunState<'_>,
        before: u64,
        obs: &Observed,
    ) -> Result<(), Fatal> {
        let step = st.step();
        let r = &obs.repr;
        let iv = crate::domain::Intervention {
            step: Some(step),
            detail: Some(serde_json::json!({
                "before": format!("{before:016x}"),
                "after": obs.layout.map(|h| format!("{h:016x}")),
                "app": r.app_package,
                "summary": r.summary,
            })),
            ..crate::domain::Intervention::new(
                st.task().id,
                crate::domain::InterventionKind::ExternalChange,
            )
        };
        crate::run::takeover::publish_intervention(&self.bus, &iv).await?;
        st.note(crate::agent::context::Note::ExternalChange { step });
        Ok(())
    }
}
