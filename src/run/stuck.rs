//! Stuck detection: the same layout N observations in a row, or the same element tapped
//! N times in a row on a screen that did not change (tapping "Build number" seven times
//! while toasts count down is progress, not a loop). It escalates in stages: first a diagnostic in the next prompt, then
//! (still stuck after N more) escalation (a re-plan when a planner exists; the runner asks
//! the user), and if that changes nothing, abort. Each time it fires the runner
//! publishes `step.stuck` with what it did (reports such as `droidpilot eval` count those).

use crate::domain::Action;
use crate::domain::action::TargetField;

/// What the runner should do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stuck {
    No,
    /// Tell the agent it is stuck, in the next prompt.
    Diagnose(String),
    /// The diagnostic did not help: re-plan or ask a person.
    Escalate(String),
    /// Nothing helped: end the task.
    Abort(String),
}

#[derive(Debug, Clone)]
pub struct StuckDetector {
    threshold: u32,
    last_layout: Option<u64>,
    same_layout: u32,
    last_tap: Option<String>,
    same_tap: u32,
    level: u32,
}

impl StuckDetector {
    /// `threshold` repeats count as stuck (at least 2).
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold: threshold.max(2),
            last_layout: None,
            same_layout: 0,
            last_tap: None,
            same_tap: 0,
            level: 0,
        }
    }

    /// Records one step: the layout the agent saw (if known) and the tap target (if any).
    pub fn observe(&mut self, layout: Option<u64>, tap: Option<String>) -> Stuck {
        let same_screen = layout.is_some() && layout == self.last_layout;
        match layout {
            Some(h) if self.last_layout == Some(h) => self.same_layout += 1,
            Some(h) => {
                self.last_layout = Some(h);
                self.same_layout = 1;
            }
            None => self.same_layout = 0,
        }
        match tap {
            Some(t) if same_screen && self.last_tap.as_ref() == Some(&t) => self.same_tap += 1,
            Some(t) => {
                self.last_tap = Some(t);
                self.same_tap = 1;
            }
            None => {
                self.last_tap = None;
                self.same_tap = 0;
            }
        }
        let run = self.same_layout.max(self.same_tap);
        if run == 0 || !run.is_multiple_of(self.threshold) {
            // Progress resets the escalation once the streak is broken.
            if run == 1 {
                self.level = 0;
            }
            return Stuck::No;
        }
        let why = if self.same_tap >= self.same_layout {
            format!(
                "the same element was tapped {} times in a row",
                self.same_tap
            )
        } else {
            format!("the screen has not changed for {} steps", self.same_layout)
        };
        self.level += 1;
        match self.level {
            1 => Stuck::Diagnose(why),
            2 => Stuck::Escalate(why),
            _ => Stuck::Abort(why),
        }
    }

    /// After a person helped: start counting afresh, but remember that help was needed.
    pub fn reset(&mut self) {
        self.same_layout = 0;
        self.same_tap = 0;
        self.last_layout = None;
        self.last_tap = None;
    }
}

/// The element a tap-like action aimed at, for "the same element tapped N times".
pub fn tap_target(action: &Action) -> Option<String> {
    match action {
        Action::Tap {
            target: TargetField(t),
        }
        | Action::LongPress {
            target: TargetField(t),
            ..
        }
        | Action::DoubleTap {
            target: TargetField(t),
        } => Some(serde_json::to_string(t).unwrap_or_default()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escalates_diagnose_escalate_abort() {
        let mut d = StuckDetector::new(3);
        let seen: Vec<Stuck> = (0..9).map(|_| d.observe(Some(7), None)).collect();
        assert!(matches!(seen[2], Stuck::Diagnose(ref w) if w.contains("not changed for 3")));
        assert!(matches!(seen[5], Stuck::Escalate(_)));
        assert!(matches!(seen[8], Stuck::Abort(_)));
        assert_eq!(seen.iter().filter(|s| **s != Stuck::No).count(), 3);
    }

    #[test]
    fn progress_resets() {
        let mut d = StuckDetector::new(3);
        for h in [1, 1, 2, 2, 3, 3, 4] {
            assert_eq!(d.observe(Some(h), None), Stuck::No);
        }
    }

    #[test]
    fn repeated_taps_that_change_the_screen_are_progress() {
        let mut d = StuckDetector::new(3);
        for i in 0..7 {
            assert_eq!(d.observe(Some(i), Some("element 4".into())), Stuck::No);
        }
    }

    #[test]
    fn repeated_taps_on_an_unchanged_screen_are_stuck() {
        let mut d = StuckDetector::new(3);
        let r: Vec<Stuck> = (0..3)
            .map(|_| d.observe(Some(9), Some("element 4".into())))
            .collect();
        assert!(matches!(r[2], Stuck::Diagnose(_)), "{r:?}");
    }
}
