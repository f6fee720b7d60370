//! What one task's loop carries from step to step, and how it is rebuilt from the
//! committed steps when a task resumes.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::budget::Spent;
use super::observe::Observed;
use super::{Fatal, Runner};
use crate::agent::context::{DeviceContext, History};
use crate::device::Device;
use crate::domain::TaskEvent;
use crate::domain::{ScreenSize, Task};
use crate::run::stop::Stop;
use crate::run::stop::StopSignal;
use crate::run::stuck::StuckDetector;

/// The step number, derived from what happened: steps recorded (this run and before a
/// resume), the agent's and a person's. The model's self-corrections count toward the
/// budget but are not steps: the number the store, the events and the agent's history
/// give a step is one and the same.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StepCounter {
    pub recorded: u32,
    /// Extra model answers the agent asked for after an unusable one (budget only).
    pub corrections: u32,
    /// Steps a person took during a take-over: numbered like the others, but not part
    /// of the agent's budget.
    pub manual: u32,
}

impl StepCounter {
    /// The number of the step in progress (1-based).
    pub fn current(&self) -> u32 {
        self.recorded + self.manual + 1
    }

    /// Steps of `max_steps` used so far (a person's are not the agent's).
    pub fn budget_used(&self) -> u32 {
        self.recorded + self.corrections
    }

    /// The number of the step committed last.
    pub fn last(&self) -> u32 {
        self.current() - 1
    }
}

pub(super) struct RunState<'t> {
    pub task: &'t Task,
    pub stream: String,
    pub started: Instant,
    pub size: ScreenSize,
    pub history: History,
    pub counter: StepCounter,
    /// An observation the next decision reuses (the retries of a failed action
    /// re-observed; a rejected answer leaves the screen as it was).
    pub cached: Option<Observed>,
    pub stuck: StuckDetector,
    pub rejected_in_a_row: u32,
    /// The agent is a script: its first failed action ends the task (unless a hook recovers).
    pub ends_on_failed_action: bool,
    /// The stop signal and the deadline (moved on by time held paused).
    pub stop: Stop,
    /// What agents see of the phone beside the screen (installed apps cached).
    pub device_ctx: DeviceContext,
    /// When `device_ctx.installed_apps` was read.
    pub apps_read: Option<Instant>,
    /// The previous decision's screen elements, for the diff the agent sees.
    pub previous: Option<Vec<crate::domain::ActionableElement>>,
    /// The stuck detector escalated and the agent was asked to re-plan (once; the next
    /// escalation asks a person).
    pub replanned_when_stuck: bool,
    /// Text the last step typed, to check against the field on the next screen.
    pub typed: Option<(u32, String)>,
    /// When the store's cancel flag was read last (`cancel_poll_due`).
    pub cancel_polled: Instant,
    /// The layout hash the last step's action settled at, to notice a change nobody in
    /// droidpilot made before the next observation (`external_change`).
    pub settled: Option<u64>,
    /// Tokens and USD the task's model calls used (`budget`).
    pub spent: Spent,
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
            cancel_polled: started,
            settled: None,
            spent: Spent::of(task),
        })
    }
}
