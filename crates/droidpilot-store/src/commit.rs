//! What one step writes, as one unit (`Store::commit_step`): the step row, the rows of
//! the artifacts it refers to, and its events, committed in one transaction. Without a
//! step it is a batch of events (and artifact rows) on one stream: how the event bus
//! writes what `EventBus::commit_soon` started (`step.observed` with its screenshot's row).

use chrono::{DateTime, Utc};

use super::{Artifact, StoredEvent};
use droidpilot_core::domain::{Step, TaskEvent};

/// One transaction's worth of writes for one stream.
#[derive(Debug, Clone, Copy)]
pub struct StepCommit<'a> {
    /// The stream the events go to (the task's id).
    pub stream: &'a str,
    /// The step to record, or None for events (and artifact rows) alone.
    pub step: Option<&'a Step>,
    /// Rows of content-addressed files already written (`ArtifactStore::write`); a hash
    /// already recorded is left as it is.
    pub artifacts: &'a [Artifact],
    /// In order; they get consecutive `seq`s.
    pub events: &'a [TaskEvent],
}

/// The `seq`s a commit gave its events: `first`, `first + 1`, … (one per event, in
/// order), all created at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSeqs {
    pub first: i64,
    pub at: DateTime<Utc>,
}

impl EventSeqs {
    /// The stored form of the committed events.
    pub fn stored(self, stream: &str, events: Vec<TaskEvent>) -> Vec<StoredEvent> {
        events
            .into_iter()
            .zip(self.first..)
            .map(|(event, seq)| StoredEvent {
                stream: stream.to_string(),
                seq,
                event,
                created_at: self.at,
            })
            .collect()
    }
}
