//! Wrong-element actions: which widget each touch of a run hit, by the sim's
//! drift-independent key (`SimDevice::touched`, stamped before any drift, rename or
//! translation), attributed to the script step the touch served, and compared with what
//! the clean run touched for the same step.
//!
//! `Attributing` wraps the replaying agent: before each decision, the touches logged
//! since the last one belong to the last decision's step (a script agent's
//! `ReplayInfo::index`; a blind replay's action number). A touch made for the step's
//! own action (not a wait, a dismissal or a search scroll) is wrong when the clean run's
//! same step touched widgets and this one is none of them. Touches that only open or
//! close a menu or dialog (the "More options" button a redesign adds, a dialog's
//! close) are not counted: they reach the element, they do not replace it; nor is a
//! confirmation's button that carries out the command the clean run's widget did.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::agent::{Agent, AgentContext, AgentError, Decision, ProducedScript};
use crate::device::sim::SimDevice;
use crate::domain::{ReplayRole, Step};

/// Per script step (or blind action), the keys its own action touched.
pub type Touches = BTreeMap<u32, BTreeSet<String>>;

#[derive(Default)]
struct Log {
    seen: usize,
    /// The last decision's step, and whether it was the step's own action.
    last: Option<(u32, bool)>,
    decisions: u32,
    touches: Touches,
}

impl Log {
    fn flush(&mut self, phone: &SimDevice) {
        let all = phone.touched();
        if let Some((step, true)) = self.last {
            for t in &all[self.seen.min(all.len())..] {
                self.touches.entry(step).or_default().insert(t.key.clone());
            }
        }
        self.seen = all.len();
    }
}

/// The agent a run replays with, with the touches it makes attributed to its steps.
pub struct Attributing {
    inner: Box<dyn Agent>,
    phone: Arc<SimDevice>,
    log: Arc<Mutex<Log>>,
}

/// Reads the touches of an `Attributing` agent once the run has ended.
pub struct TouchReader {
    phone: Arc<SimDevice>,
    log: Arc<Mutex<Log>>,
}

impl TouchReader {
    /// The touches of the run, per step, the last decision's included.
    pub fn touches(&self) -> Touches {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.flush(&self.phone);
        log.touches.clone()
    }
}

impl Attributing {
    pub fn wrap(inner: Box<dyn Agent>, phone: Arc<SimDevice>) -> (Box<dyn Agent>, TouchReader) {
        let log = Arc::new(Mutex::new(Log::default()));
        let reader = TouchReader {
            phone: phone.clone(),
            log: log.clone(),
        };
        (Box::new(Attributing { inner, phone, log }), reader)
    }
}

/// Whether a decision is its step's own action: the step's action, or one AI in the
/// middle chose for it; a blind replay's every action.
fn own(d: &Decision) -> bool {
    d.replay
        .as_ref()
        .is_none_or(|r| matches!(r.role, ReplayRole::Action | ReplayRole::Recovery))
}

#[async_trait]
impl Agent for Attributing {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .flush(&self.phone);
        let d = self.inner.next(ctx).await?;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let step = d.replay.as_ref().map_or(log.decisions, |r| r.index);
        log.last = Some((step, own(&d)));
        log.decisions += 1;
        Ok(d)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn fails_on_failed_action(&self) -> bool {
        self.inner.fails_on_failed_action()
    }
    fn resume(&mut self, committed: &[Step]) {
        self.inner.resume(committed)
    }
    fn take_script(&mut self, finished_ok: bool, reason: Option<&str>) -> Option<ProducedScript> {
        self.inner.take_script(finished_ok, reason)
    }
    fn required_app(&self) -> Option<&str> {
        self.inner.required_app()
    }
    fn give_app_strings(&mut self, source: crate::agent::appstrings::AppStringsSource) {
        self.inner.give_app_strings(source)
    }
    fn wants_device_context(&self) -> bool {
        self.inner.wants_device_context()
    }
    fn plays_fixed_actions(&self) -> bool {
        self.inner.plays_fixed_actions()
    }
    fn fixed_action_index(&self) -> Option<usize> {
        self.inner.fixed_action_index()
    }
    fn secrets(&self) -> Vec<String> {
        self.inner.secrets()
    }
    fn replan_when_stuck(&mut self, why: &str) -> bool {
        self.inner.replan_when_stuck(why)
    }
}

/// A key that only opens or closes a menu or dialog (see the module doc).
fn neutral(key: &str) -> bool {
    key.is_empty()
        || key.starts_with("overflow_menu#")
        || key.ends_with(r#"#{"cmd":"close_dialog"}"#)
}

/// A key's command (after the widget's id): a confirmation's button that carries out the
/// command the clean run's widget did (`alarm_delete` of the same alarm) did that step's
/// work, through the dialog a redesign put before it.
fn command(key: &str) -> &str {
    key.split_once('#').map_or(key, |(_, cmd)| cmd)
}

/// The touches of `run` that hit another widget than the clean run's same step did.
pub fn wrong(run: &Touches, clean: &Touches) -> u32 {
    let mut n = 0;
    for (step, keys) in run {
        let Some(want) = clean.get(step).filter(|w| !w.is_empty()) else {
            continue;
        };
        let same_command = |k: &str| want.iter().any(|w| command(w) == command(k));
        n += keys
            .iter()
            .filter(|k| !neutral(k) && !want.contains(*k) && !same_command(k))
            .count() as u32;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touches(rows: &[(u32, &[&str])]) -> Touches {
        rows.iter()
            .map(|(s, keys)| (*s, keys.iter().map(|k| k.to_string()).collect()))
            .collect()
    }

    #[test]
    fn another_rows_delete_is_wrong_and_a_menu_on_the_way_is_not() {
        let clean = touches(&[
            (0, &["fab#{\"cmd\":\"new\"}"]),
            (1, &["delete#{\"cmd\":\"alarm_delete\",\"id\":2}"]),
        ]);
        let same = touches(&[(
            1,
            &[
                "delete#{\"cmd\":\"alarm_delete\",\"id\":2}",
                "overflow_menu#{\"cmd\":\"menu\"}",
            ],
        )]);
        assert_eq!(wrong(&same, &clean), 0);
        let other = touches(&[(1, &["delete#{\"cmd\":\"alarm_delete\",\"id\":3}"])]);
        assert_eq!(wrong(&other, &clean), 1);
        // The confirmation a redesign put before the delete, carrying out the same
        // command, is that step's work; one deleting another alarm is not.
        let confirmed = touches(&[(
            1,
            &[
                "delete#{\"cmd\":\"alarm_delete\",\"id\":2}",
                "android:id/button1#{\"cmd\":\"alarm_delete\",\"id\":2}",
            ],
        )]);
        assert_eq!(wrong(&confirmed, &clean), 0);
        let other_confirmed = touches(&[(
            1,
            &["android:id/button1#{\"cmd\":\"alarm_delete\",\"id\":3}"],
        )]);
        assert_eq!(wrong(&other_confirmed, &clean), 1);
        // A step the clean run touched nothing for (a key press) has nothing to compare.
        let extra = touches(&[(5, &["delete#{\"cmd\":\"alarm_delete\",\"id\":3}"])]);
        assert_eq!(wrong(&extra, &clean), 0);
    }
}
