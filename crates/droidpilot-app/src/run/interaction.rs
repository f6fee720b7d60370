//! Questions to people (`ask_user`): the runner asks and waits; an answer arrives over
//! REST or WebSocket from whoever is watching. Each question is an intervention row
//! first. A question nobody will read an answer to any more is closed in its row
//! (`answered_by` = `timeout`, `cancelled`, `shutdown`, or `restart` for one a dead
//! process left open), so a late answer is refused rather than lost silently.
//!
//! Across instances (a shared PostgreSQL store) the row is the truth: an answer that
//! arrives where no runner waits is stored there (first answer wins, as on one host) and
//! relayed (`Control::Answer`); the instance whose runner waits reads the stored answer
//! (`deliver_stored`). A waiting runner also re-reads its row every
//! `ANSWER_RECHECK`, so an answer whose notification was lost still arrives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::events::EventBus;
use super::stop::StopSignal;
use crate::domain::{Intervention, InterventionKind, TaskEvent, TaskId, TaskStatus};
use crate::store::notify::Control;
use crate::store::{Store, StoreError};

/// How often a waiting runner re-reads its question's row: the backstop for an answer
/// stored by another instance whose notification did not arrive.
const ANSWER_RECHECK: Duration = Duration::from_secs(3);

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskOutcome {
    Answered {
        answer: String,
        by: String,
    },
    TimedOut,
    /// The task was cancelled or the server is stopping; the question is closed.
    Stopped,
}

/// Who closes a question nobody answered (stored as `answered_by`): `deadline` is the
/// task's own `timeout_seconds` running out while it waited; `instance_dead` is a cluster
/// reaper's.
const CLOSERS: [&str; 6] = [
    "timeout",
    "cancelled",
    "shutdown",
    "restart",
    "deadline",
    "instance_dead",
];

/// Whether `answered_by` names who closed a question unanswered (not a person's answer).
pub(crate) fn is_closer(answered_by: &str) -> bool {
    CLOSERS.contains(&answered_by)
}

/// Resolves when a stop arrives, with who closes the question; never when the sender is gone.
async fn stopped(stop: &mut watch::Receiver<StopSignal>) -> &'static str {
    let signal = stop.wait_for(|s| *s != StopSignal::None).await.map(|s| *s);
    match signal {
        Ok(StopSignal::Cancel) => "cancelled",
        Ok(_) => "shutdown",
        Err(_) => std::future::pending().await,
    }
}

/// Resolves at `deadline`; never without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("task {0} has no open question")]
    NoOpenQuestion(TaskId),
    /// `prompt_id` does not name the open question (a typo, or an old question's id).
    #[error(
        "prompt `{given}` is not the open question of task {task}; the open one is `{current}`"
    )]
    WrongPrompt {
        task: TaskId,
        given: String,
        current: String,
        question: String,
    },
    #[error("the answer is empty")]
    EmptyAnswer { options: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The open question an answer is for: the one `prompt_id` names, which must be the
/// task's open question, or the open question when no id is given.
fn open_question(
    ivs: &[Intervention],
    task: TaskId,
    prompt_id: Option<&str>,
) -> Result<Intervention, AnswerError> {
    let open = ivs
        .iter()
        .rfind(|i| i.kind == InterventionKind::AskUser && i.answered_at.is_none());
    match (open, prompt_id) {
        (Some(o), Some(p)) if o.id != p => Err(AnswerError::WrongPrompt {
            task,
            given: p.to_string(),
            current: o.id.clone(),
            question: o.question.clone().unwrap_or_default(),
        }),
        (Some(o), _) => Ok(o.clone()),
        // Distinguish "already answered" from "never asked".
        (None, Some(p)) if ivs.iter().any(|i| i.id == p) => {
            Err(StoreError::AlreadyAnswered(p.to_string()).into())
        }
        (None, _) => Err(AnswerError::NoOpenQuestion(task)),
    }
}

/// The stored answer to `prompt_id`, if a person (not a closer) gave one.
fn stored_answer(ivs: Vec<Intervention>, prompt_id: &str) -> Option<(String, String)> {
    match ivs.into_iter().find(|i| i.id == prompt_id)? {
        Intervention {
            answer: Some(a),
            answered_by: Some(b),
            ..
        } if !CLOSERS.contains(&b.as_str()) => Some((a, b)),
        _ => None,
    }
}

/// Resolves with the answer once the row has one (re-read every `ANSWER_RECHECK`). A
/// store error only delays it to the next read.
async fn answer_in_row(store: &Arc<dyn Store>, task: TaskId, prompt_id: &str) -> (String, String) {
    loop {
        tokio::time::sleep(ANSWER_RECHECK).await;
        if let Ok(ivs) = store.interventions(task).await
            && let Some(found) = stored_answer(ivs, prompt_id)
        {
            return found;
        }
    }
}

/// A runner waiting on a question.
struct Waiter {
    task: TaskId,
    tx: oneshot::Sender<(String, String)>,
}

/// Live questions: prompt id → the runner waiting on it.
#[derive(Default)]
pub struct Prompts {
    waiting: Mutex<HashMap<String, Waiter>>,
}

impl Prompts {
    /// Asks, marks the task `waiting_for_user`, publishes `task.ask_user`, and waits up to
    /// `timeout` for an answer, or until `stop` says the task is cancelled or the server
    /// stops, or the task's `deadline` comes (both `Stopped`). The question is closed
    /// either way, so a late answer is refused rather than lost; the task goes back to
    /// `running` unless it was stopped.
    #[allow(clippy::too_many_arguments)]
    pub async fn ask(
        &self,
        bus: &EventBus,
        task: TaskId,
        question: &str,
        options: Option<Vec<String>>,
        timeout: Duration,
        stop: &mut watch::Receiver<StopSignal>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<(String, AskOutcome), StoreError> {
        let prompt_id = format!("p-{}", uuid::Uuid::now_v7().simple());
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .expect("prompt registry lock")
            .insert(prompt_id.clone(), Waiter { task, tx });
        let store = bus.store();
        let iv = Intervention {
            id: prompt_id.clone(),
            question: Some(question.to_string()),
            options: options.clone(),
            ..Intervention::new(task, InterventionKind::AskUser)
        };
        store.create_intervention(&iv).await?;
        store
            .set_task_status(task, TaskStatus::WaitingForUser, Some(question))
            .await?;
        let asked = TaskEvent::AskUser {
            task_id: task,
            prompt_id: prompt_id.clone(),
            question: question.to_string(),
            options: options.clone(),
            timeout_secs: timeout.as_secs(),
        };
        bus.publish(&task.to_string(), asked).await?;
        let answered = async {
            tokio::select! {
                r = rx => r.ok(),
                found = answer_in_row(store, task, &prompt_id) => Some(found),
            }
        };
        let outcome = tokio::select! {
            r = tokio::time::timeout(timeout, answered) => match r {
                Ok(Some((answer, by))) => {
                    self.forget(&prompt_id);
                    AskOutcome::Answered { answer, by }
                }
                _ => self.close(bus, task, &prompt_id, "timeout").await?,
            },
            s = stopped(stop) => self.close(bus, task, &prompt_id, s).await?,
            _ = until(deadline) => self.close(bus, task, &prompt_id, "deadline").await?,
        };
        if outcome != AskOutcome::Stopped {
            match store.set_task_status(task, TaskStatus::Running, None).await {
                // Cancelled while the answer arrived: the runner sees the cancel next.
                Ok(_) | Err(StoreError::WrongStatus { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((prompt_id, outcome))
    }

    /// Closes an unanswered question (`by` is `timeout`, `cancelled` or `shutdown`) and
    /// publishes why. An answer that won the race after all is honoured.
    async fn close(
        &self,
        bus: &EventBus,
        task: TaskId,
        prompt_id: &str,
        by: &str,
    ) -> Result<AskOutcome, StoreError> {
        self.forget(prompt_id);
        let store = bus.store();
        match store.answer_intervention(prompt_id, "", by).await {
            Ok(_) => {}
            Err(StoreError::AlreadyAnswered(_)) => {
                let ivs = store.interventions(task).await?;
                if let Some((answer, by)) = stored_answer(ivs, prompt_id) {
                    return Ok(AskOutcome::Answered { answer, by });
                }
            }
            Err(e) => return Err(e),
        }
        let (prompt_id, by) = (prompt_id.to_string(), by.to_string());
        let (event, outcome) = if by == "timeout" {
            let ev = TaskEvent::AnswerTimeout {
                task_id: task,
                prompt_id,
                by,
            };
            (ev, AskOutcome::TimedOut)
        } else {
            let ev = TaskEvent::QuestionClosed {
                task_id: task,
                prompt_id,
                by,
            };
            (ev, AskOutcome::Stopped)
        };
        bus.publish(&task.to_string(), event).await?;
        Ok(outcome)
    }

    fn forget(&self, prompt_id: &str) {
        self.waiting
            .lock()
            .expect("prompt registry lock")
            .remove(prompt_id);
    }

    /// Another instance stored an answer for `task`: wakes the runner here that waits on
    /// one of its questions with the stored answer. False when no runner here waits on
    /// `task` (the store is not read then).
    pub async fn deliver_stored(
        &self,
        store: &dyn Store,
        task: TaskId,
    ) -> Result<bool, StoreError> {
        let waiting: Vec<String> = {
            let w = self.waiting.lock().expect("prompt registry lock");
            w.iter()
                .filter(|(_, w)| w.task == task)
                .map(|(id, _)| id.clone())
                .collect()
        };
        if waiting.is_empty() {
            return Ok(false);
        }
        let ivs = store.interventions(task).await?;
        for id in waiting {
            if let Some(found) = stored_answer(ivs.clone(), &id)
                && let Some(w) = self
                    .waiting
                    .lock()
                    .expect("prompt registry lock")
                    .remove(&id)
            {
                let _ = w.tx.send(found);
            }
        }
        Ok(true)
    }

    /// Answers the task's open question (`prompt_id` picks one when given). Records the
    /// answer, wakes the waiting runner, publishes `task.answered`.
    pub async fn answer(
        &self,
        bus: &EventBus,
        task: TaskId,
        prompt_id: Option<&str>,
        answer: &str,
        by: &str,
    ) -> Result<Intervention, AnswerError> {
        let store = bus.store();
        store.get_task(task).await?;
        let open = open_question(&store.interventions(task).await?, task, prompt_id)?;
        if answer.trim().is_empty() {
            return Err(AnswerError::EmptyAnswer {
                options: open.options.unwrap_or_default(),
            });
        }
        let iv = store.answer_intervention(&open.id, answer, by).await?;
        let waiter = self
            .waiting
            .lock()
            .expect("prompt registry lock")
            .remove(&open.id);
        match (waiter, bus.peers()) {
            (Some(w), _) => {
                let _ = w.tx.send((answer.to_string(), by.to_string()));
            }
            // The runner is on another instance: the stored answer is relayed (and found
            // by its re-read should the notification be lost).
            (None, Some(peers)) => {
                if let Err(e) = peers.send(Control::Answer { task }).await {
                    tracing::warn!(task = %task, error = %e, "could not relay an answer; the runner finds it at its next re-read");
                }
            }
            (None, None) => {}
        }
        let answered = TaskEvent::Answered {
            task_id: task,
            prompt_id: open.id,
            answer: answer.to_string(),
            by: by.to_string(),
        };
        bus.publish(&task.to_string(), answered).await?;
        Ok(iv)
    }
}
