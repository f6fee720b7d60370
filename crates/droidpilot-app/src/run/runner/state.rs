//! What one task's loop carries from step to step, and how it is rebuilt from the
//! committed steps when a task resumes.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::budget::Spent;
use super::observe::Observed;
use super::{Fatal, Runner, RunnerConfig};
use crate::agent::context::{DeviceContext, History, Note, StepRecord};
use crate::device::Device;
use crate::domain::{Action, ActionableElement, ScreenSize, Step, StepStatus, Task, TaskEvent};
use crate::run::stop::Stop;
use crate::run::stop::StopSignal;
use crate::run::stuck::{Stuck, StuckDetector};

/// The step number, derived from what happened: steps recorded (this run and before a
/// resume), the agent's and a person's. The model's self-corrections count toward the
/// budget but are not steps: the number the store, the events and the agent's history
/// give a step is one and the same.
#[derive(Debug, Clone, Copy, Default)]
struct StepCounter {
    recorded: u32,
    /// Extra model answers the agent asked for after an unusable one (budget only).
    corrections: u32,
    /// Steps a person took during a take-over: numbered like the others, but not part
    /// of the agent's budget.
    manual: u32,
}

impl StepCounter {
    /// The number of the step in progress (1-based).
    fn current(&self) -> u32 {
        self.recorded + self.manual + 1
    }

    /// Steps of `max_steps` used so far (a person's are not the agent's).
    fn budget_used(&self) -> u32 {
        self.recorded + self.corrections
    }

    /// The number of the step committed last.
    fn last(&self) -> u32 {
        self.current() - 1
    }
}

/// What one task's loop carries from step to step. Its fields are private: the phases
/// read it through accessors and change it only through the transitions below, each
/// named for what happened (`step_published`, `answer_rejected`, `took_over`…), so a
/// reader sees who changes what.
pub(super) struct RunState<'t> {
    task: &'t Task,
    stream: String,
    started: Instant,
    size: ScreenSize,
    history: History,
    counter: StepCounter,
    /// An observation the next decision reuses (the retries of a failed action
    /// re-observed; a rejected answer leaves the screen as it was; settle read it).
    cached: Option<Observed>,
    stuck: StuckDetector,
    rejected_in_a_row: u32,
    /// The agent is a script: its first failed action ends the task (unless a hook recovers).
    ends_on_failed_action: bool,
    /// The stop signal and the deadline (moved on by time held paused).
    stop: Stop,
    /// What agents see of the phone beside the screen (installed apps cached).
    device_ctx: DeviceContext,
    /// When `device_ctx.installed_apps` was read.
    apps_read: Option<Instant>,
    /// The previous decision's screen elements, for the diff the agent sees.
    previous: Option<Vec<ActionableElement>>,
    /// The stuck detector escalated and the agent was asked to re-plan (once; the next
    /// escalation asks a person).
    replanned_when_stuck: bool,
    /// Text the last step typed, to check against the field on the next screen.
    typed: Option<(u32, String)>,
    /// The agent's steps' durations so far (ms), for the time-left estimate.
    durations: Vec<u64>,
    /// When the store's cancel flag was read last (`cancel_poll_due`).
    cancel_polled: Instant,
    /// The layout hash the last step's action settled at, to notice a change nobody in
    /// droidpilot made before the next observation (`external_change`).
    settled: Option<u64>,
    /// Tokens and USD the task's model calls used (`budget`).
    spent: Spent,
}

/// What the phases read.
impl<'t> RunState<'t> {
    pub fn task(&self) -> &'t Task {
        self.task
    }

    /// The task's event stream.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    pub fn size(&self) -> ScreenSize {
        self.size
    }

    /// The screen's size after the phone turned (a `rotate` step).
    pub(super) fn set_size(&mut self, size: ScreenSize) {
        self.size = size;
    }

    /// Time since this run of the task started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The number of the step in progress (1-based).
    pub fn step(&self) -> u32 {
        self.counter.current()
    }

    /// Steps of `max_steps` used so far (a person's are not the agent's).
    pub fn budget_used(&self) -> u32 {
        self.counter.budget_used()
    }

    /// The reason the task ends, when its model calls used up a token or cost budget.
    pub fn budget_exceeded(&self, cfg: &RunnerConfig) -> Option<String> {
        self.spent.exceeded(self.task, cfg)
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn ends_on_failed_action(&self) -> bool {
        self.ends_on_failed_action
    }

    pub fn device_ctx(&self) -> &DeviceContext {
        &self.device_ctx
    }

    /// The elements of the screen the previous decision saw.
    pub fn previous(&self) -> Option<&[ActionableElement]> {
        self.previous.as_deref()
    }

    /// The stop signal and the deadline, for a wait a stop cuts short.
    pub fn stop(&mut self) -> &mut Stop {
        &mut self.stop
    }

    /// `stop`, with the task's event stream beside it for what the wait publishes.
    pub fn stream_and_stop(&mut self) -> (&str, &mut Stop) {
        (&self.stream, &mut self.stop)
    }

    /// Whether the stuck detector may still ask the agent to re-plan (once per task).
    pub fn may_replan(&self) -> bool {
        !self.replanned_when_stuck
    }
}

/// The transitions: each is what one phase makes happen.
impl RunState<'_> {
    /// Observe: the screen the last step left cached for this one, and the layout it
    /// settled at; both are this step's to use, once.
    pub fn begin_step(&mut self) -> (Option<Observed>, Option<u64>) {
        (self.cached.take(), self.settled.take())
    }

    /// The next decision reuses `obs` (a failed action's retries re-observed it; a
    /// rejected answer leaves the screen as it was).
    pub fn reuse_screen(&mut self, obs: Observed) {
        self.cached = Some(obs);
    }

    /// Settle: the layout the step's action left the screen in (None: not known) and
    /// the idle screen the next step starts from (None: it observes afresh).
    pub fn settled(&mut self, idle: Option<u64>, next: Option<Observed>) {
        self.settled = idle;
        self.cached = next;
    }

    /// Decide: the agent saw these elements (the next decision's diff is against them).
    pub fn saw(&mut self, elements: Vec<ActionableElement>) {
        self.previous = Some(elements);
    }

    /// Decide: the model's answer could not be used; `extra` more answers were asked
    /// for (they count toward `max_steps`). Returns how many in a row were unusable.
    pub fn answer_rejected(&mut self, extra: u32) -> u32 {
        self.rejected_in_a_row += 1;
        self.counter.corrections += extra;
        self.rejected_in_a_row
    }

    /// Decide: a usable answer after `retries` self-corrections (counted toward
    /// `max_steps`, at most what is left of it).
    pub fn answer_used(&mut self, retries: u32) {
        self.rejected_in_a_row = 0;
        let left = self
            .task
            .spec
            .max_steps
            .saturating_sub(self.counter.current());
        self.counter.corrections += retries.min(left);
    }

    /// Whether the installed apps are due to be read again (then marked read now).
    pub fn apps_due(&mut self, ttl: Duration) -> bool {
        if self.apps_read.is_some_and(|t| t.elapsed() < ttl) {
            return false;
        }
        self.apps_read = Some(Instant::now());
        true
    }

    /// The device's installed apps, as the agent reads them.
    pub fn learn_apps(&mut self, apps: Vec<String>) {
        self.device_ctx.installed_apps = std::sync::Arc::new(apps);
    }

    /// The device's locale, timezone and country.
    pub fn learn_locale(&mut self, l: crate::device::DeviceLocale) {
        self.device_ctx.locale = l.locale;
        self.device_ctx.timezone = l.timezone;
        self.device_ctx.country = l.country;
    }

    /// The time the task has left once `step` is recorded (`domain::eta`): the agent's
    /// steps' median duration, `step` counted, times the steps still expected.
    pub fn estimate_with(&self, step: &Step) -> Option<crate::domain::Estimate> {
        let mut d = self.durations.clone();
        if step.by.is_none() {
            d.push(crate::domain::eta::step_ms(&step.timings));
        }
        let spec = &self.task.spec;
        let planned = crate::domain::eta::planned_steps(spec.agent.as_ref());
        crate::domain::eta::estimate(&d, planned, spec.max_steps)
    }

    /// Verify: the stuck detector's word on this step's screen and action.
    pub fn check_stuck(&mut self, content: Option<u64>, action: &Action) -> Stuck {
        self.stuck.observe(content, action)
    }

    /// Verify: the agent re-plans (once per task); the detector starts over.
    pub fn replanning(&mut self) {
        self.replanned_when_stuck = true;
        self.stuck.reset();
    }

    /// Verify: step `n` typed `text`; the next screen's focused field should show it.
    pub fn typed(&mut self, n: u32, text: String) {
        self.typed = Some((n, text));
    }

    /// The text the previous step typed, to check once.
    pub fn take_typed(&mut self) -> Option<(u32, String)> {
        self.typed.take()
    }

    /// A note for the agent's next prompt (an external change, a typed-text mismatch).
    pub fn note(&mut self, note: Note) {
        self.history.push_note(note);
    }

    /// A person answered the stuck question: the agent reads the answer, and the
    /// detector starts over.
    pub fn stuck_answered(&mut self, question: String, answer: String) {
        let step = self.counter.last();
        self.history.push_note(Note::UserAnswer {
            step,
            question,
            answer,
        });
        self.stuck.reset();
    }

    /// Publish: the step is committed. It is counted, its model calls' spending added,
    /// and the agent's history keeps `memory` (marked failed unless the step was ok)
    /// and `notes`.
    pub fn step_published(&mut self, step: &Step, memory: Option<StepRecord>, notes: Vec<Note>) {
        self.counter.recorded += 1;
        if step.by.is_none() {
            self.durations
                .push(crate::domain::eta::step_ms(&step.timings));
        }
        self.spent.add(step);
        if let Some(mut m) = memory {
            m.failed = step.outcome.status != StepStatus::Ok;
            self.history.push_step(m);
        }
        for note in notes {
            self.history.push_note(note);
        }
    }

    /// Boundary: a person held the loop for `held` and took `steps` steps (numbered,
    /// already recorded, not the agent's budget); `acted` is what they did, for the
    /// agent. The held time does not count toward the timeout, and the next step
    /// observes afresh: the screen is the person's now.
    pub fn took_over(&mut self, held: Duration, steps: u32, acted: Option<Note>) {
        self.stop.extend(held);
        self.settled = None;
        self.counter.manual += steps;
        self.cached = None;
        if let Some(note) = acted {
            self.history.push_note(note);
        }
    }
}

/// How often the loop reads the store's cancel flag.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_secs(1);

impl<'t> RunState<'t> {
    /// Whether to read the store's cancel flag at this boundary: at most once per
    /// `CANCEL_POLL`, the first a poll interval after the start (the task the runner was
    /// given was read after its claim, flag included, and its stop signal was registered
    /// before the claim). A cancel made through this process, or relayed from another
    /// instance, arrives at once as a stop signal; the flag catches one whose relay was
    /// lost. Reading it every step cost a store round trip per step.
    pub fn cancel_poll_due(&mut self) -> bool {
        let due = self.cancel_polled.elapsed() >= CANCEL_POLL;
        if due {
            self.cancel_polled = Instant::now();
        }
        due
    }

    /// Rebuilds the agent's history from the committed steps and the task's
    /// interventions (`remember`; publishing `task.resumed` when there are any) and reads
    /// the screen size.
    pub async fn resume(
        runner: &Runner,
        task: &'t Task,
        device: &dyn Device,
        ends_on_failed_action: bool,
        stop: watch::Receiver<StopSignal>,
    ) -> Result<Self, Fatal> {
        let stream = task.id.to_string();
        let started = Instant::now();
        let mut history = History::new(runner.cfg.history_steps);
        // The task was read after its claim: a new one (no steps) needs no read.
        let committed = if task.steps > 0 {
            runner.bus.store().steps(task.id).await?
        } else {
            Vec::new()
        };
        if !committed.is_empty() {
            // Answers, tool results and a person's actions, not only the steps.
            let ivs = runner.bus.store().interventions(task.id).await?;
            super::remember::rebuild(&mut history, &committed, &ivs);
        }
        let manual = committed.iter().filter(|s| s.by.is_some()).count() as u32;
        let counter = StepCounter {
            recorded: committed.len() as u32 - manual,
            corrections: 0,
            manual,
        };
        if counter.recorded + counter.manual > 0 {
            runner
                .bus
                .publish(
                    &stream,
                    TaskEvent::Resumed {
                        task_id: task.id,
                        from_step: counter.current(),
                        cause: crate::domain::ResumeCause::Restart,
                        by: None,
                        manual_actions: None,
                    },
                )
                .await?;
        }
        Ok(Self {
            task,
            stream,
            started,
            size: runner.screen_size(device).await?,
            history,
            counter,
            cached: None,
            stuck: StuckDetector::new(runner.cfg.stuck_threshold),
            rejected_in_a_row: 0,
            ends_on_failed_action,
            stop: Stop::new(stop, Duration::from_secs(task.spec.timeout_seconds)),
            device_ctx: DeviceContext::default(),
            apps_read: None,
            previous: None,
            replanned_when_stuck: false,
            typed: None,
            durations: Vec::new(),
            cancel_polled: started,
            settled: None,
            spent: Spent::of(task),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewTask, TaskId, TaskSpec, TaskStatus};

    fn task(max_steps: u32) -> Task {
        let spec = TaskSpec::parse(NewTask {
            instruction: Some("count".into()),
            max_steps: Some(max_steps),
            ..Default::default()
        })
        .unwrap();
        Task {
            id: TaskId::new(),
            status: TaskStatus::Running,
            spec,
            assigned_device: None,
            created_at: chrono::Utc::now(),
            started_at: None,
            finished_at: None,
            reason: None,
            answer: None,
            steps: 0,
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            recording: Vec::new(),
            cost_usd: 0.0,
            cancel_requested: false,
            model_calls: 0,
        }
    }

    fn state(task: &Task) -> RunState<'_> {
        let (tx, rx) = watch::channel(StopSignal::None);
        std::mem::forget(tx);
        let started = Instant::now();
        RunState {
            task,
            stream: task.id.to_string(),
            started,
            size: ScreenSize {
                width: 540,
                height: 1200,
            },
            history: History::new(8),
            counter: StepCounter::default(),
            cached: None,
            stuck: StuckDetector::new(3),
            rejected_in_a_row: 0,
            ends_on_failed_action: false,
            stop: Stop::new(rx, Duration::from_secs(60)),
            device_ctx: DeviceContext::default(),
            apps_read: None,
            previous: None,
            replanned_when_stuck: false,
            typed: None,
            durations: Vec::new(),
            cancel_polled: started,
            settled: Some(7),
            spent: Spent::default(),
        }
    }

    /// What the transitions promise the loop: a person's steps are numbered but stay out
    /// of the agent's budget, their held time moves the deadline and the next step
    /// observes afresh; self-corrections count toward the budget (up to what is left) but
    /// never number a step; unusable answers are counted in a row until a usable one.
    #[test]
    fn transitions_number_steps_and_spend_the_budget_as_the_loop_relies_on() {
        let t = task(5);
        let mut st = state(&t);
        assert_eq!((st.step(), st.budget_used()), (1, 0));
        st.answer_used(2);
        assert_eq!((st.step(), st.budget_used()), (1, 2));

        let deadline = st.stop().deadline();
        let note = Note::PersonActed {
            step: 1,
            by: "alice".into(),
            actions: vec!["back".into()],
        };
        st.took_over(Duration::from_secs(30), 2, Some(note));
        assert_eq!((st.step(), st.budget_used()), (3, 2));
        assert_eq!(st.stop().deadline(), deadline + Duration::from_secs(30));
        let (cached, settled) = st.begin_step();
        assert!(
            cached.is_none() && settled.is_none(),
            "the person's screen is observed afresh"
        );
        assert_eq!(st.history().notes().count(), 1);

        // 5 steps, 3 numbered: 2 left for corrections, whatever the model asked.
        st.answer_used(9);
        assert_eq!(st.budget_used(), 4);

        assert_eq!(st.answer_rejected(1), 1);
        assert_eq!(st.answer_rejected(0), 2);
        st.answer_used(0);
        assert_eq!(st.answer_rejected(0), 1);
        assert_eq!(st.budget_used(), 5);
    }
}
