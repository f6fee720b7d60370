//! Stuck detection: the same layout N observations in a row, the same element tapped N
//! times in a row on a screen that did not change (tapping "Build number" seven times
//! while toasts count down is progress, not a loop), or a short cycle: the same two to
//! four screens, each met with the same action, going round twice (A→B→A→B, where no
//! screen repeats back to back). It escalates in stages: first a diagnostic in the next
//! prompt, then (still stuck after N more, or two more rounds of the cycle) escalation (a
//! re-plan when a planner exists; the runner asks the user), and if that changes nothing,
//! abort. Each time it fires the runner publishes `step.stuck` with what it did (reports
//! such as `droidpilot eval` count those).

use std::collections::VecDeque;

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

/// The longest cycle looked for, in steps.
const MAX_PERIOD: usize = 4;
/// Steps remembered for cycles: enough for a cycle of the longest period to go round
/// the three times that end in an abort.
const RECENT: usize = MAX_PERIOD * 6;

/// One step as the cycle search sees it: the screen the agent saw and what it did there.
type Visit = (u64, String);

#[derive(Debug, Clone)]
pub struct StuckDetector {
    threshold: u32,
    last_layout: Option<u64>,
    same_layout: u32,
    last_tap: Option<String>,
    same_tap: u32,
    level: u32,
    /// The latest steps, oldest first; None where the screen could not be read.
    recent: VecDeque<Option<Visit>>,
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
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    /// Records one step: the layout the agent saw (if known) and the action it took there.
    pub fn observe(&mut self, layout: Option<u64>, action: &Action) -> Stuck {
        let tap = tap_target(action);
        self.remember(layout, action);
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
        let cycle = self.cycle();
        let why = if run > 0 && run.is_multiple_of(self.threshold) {
            if self.same_tap >= self.same_layout {
                format!(
                    "the same element was tapped {} times in a row",
                    self.same_tap
                )
            } else {
                format!("the screen has not changed for {} steps", self.same_layout)
            }
        } else if let Some((period, len)) = cycle.filter(|(p, len)| len.is_multiple_of(2 * p)) {
            format!(
                "the same {period} screens, each with the same action, went round {} times",
                len / period
            )
        } else {
            // Progress resets the escalation once the streak and the cycle are broken.
            if run == 1 && cycle.is_none() {
                self.level = 0;
            }
            return Stuck::No;
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
        self.recent.clear();
    }

    fn remember(&mut self, layout: Option<u64>, action: &Action) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        let what = serde_json::to_string(action).unwrap_or_else(|_| action.name().into());
        self.recent.push_back(layout.map(|l| (l, what)));
    }

    /// The shortest cycle the latest steps go round at least twice: its period and how
    /// many of the latest steps follow it. A cycle must change screens (a screen that
    /// stays is the streak's business); an unreadable screen breaks it.
    fn cycle(&self) -> Option<(usize, usize)> {
        let r = &self.recent;
        (2..=MAX_PERIOD).find_map(|p| {
            if r.len() < 2 * p {
                return None;
            }
            let last = &r.range(r.len() - p..).collect::<Vec<_>>();
            let screens: Vec<u64> = last
                .iter()
                .map(|v| v.as_ref().map(|v| v.0))
                .collect::<Option<_>>()?;
            if screens.iter().all(|s| *s == screens[0]) {
                return None;
            }
            let follows = (p..r.len())
                .rev()
                .take_while(|&i| r[i].is_some() && r[i] == r[i - p])
                .count();
            let len = follows + p;
            (len >= 2 * p).then_some((p, len))
        })
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
    use crate::domain::{Key, Target};

    fn wait() -> Action {
        Action::Wait { ms: 500 }
    }

    fn tap(element: u32) -> Action {
        Action::Tap {
            target: TargetField(Target::Element(element)),
        }
    }

    fn back() -> Action {
        Action::Key { key: Key::Back }
    }

    /// A→B→A→B: open the same item, go back, again: no screen repeats back to back, but
    /// the pair goes round, and the detector escalates as for a streak.
    #[test]
    fn a_loop_between_two_screens_is_stuck() {
        let mut d = StuckDetector::new(3);
        let seen: Vec<Stuck> = (0..12)
            .map(|i| match i % 2 {
                0 => d.observe(Some(1), &tap(3)),
                _ => d.observe(Some(2), &back()),
            })
            .collect();
        assert!(seen[..3].iter().all(|s| *s == Stuck::No), "{seen:?}");
        assert!(matches!(seen[3], Stuck::Diagnose(ref w) if w.contains("same 2 screens")));
        assert!(matches!(seen[7], Stuck::Escalate(_)), "{seen:?}");
        assert!(matches!(seen[11], Stuck::Abort(_)), "{seen:?}");
    }

    #[test]
    fn a_three_screen_cycle_is_stuck() {
        let mut d = StuckDetector::new(3);
        let seen: Vec<Stuck> = (0..6)
            .map(|i| d.observe(Some(i % 3), &tap(i as u32 % 3)))
            .collect();
        assert!(matches!(seen[5], Stuck::Diagnose(ref w) if w.contains("same 3 screens")));
    }

    /// Going back to a screen and doing something else there is progress.
    #[test]
    fn returning_to_a_screen_with_a_new_action_is_not_a_cycle() {
        let mut d = StuckDetector::new(3);
        for i in 0..12u32 {
            let s = match i % 2 {
                0 => d.observe(Some(1), &tap(i)),
                _ => d.observe(Some(2), &back()),
            };
            assert_eq!(s, Stuck::No, "step {i}");
        }
    }

    #[test]
    fn escalates_diagnose_escalate_abort() {
        let mut d = StuckDetector::new(3);
        let seen: Vec<Stuck> = (0..9).map(|_| d.observe(Some(7), &wait())).collect();
        assert!(matches!(seen[2], Stuck::Diagnose(ref w) if w.contains("not changed for 3")));
        assert!(matches!(seen[5], Stuck::Escalate(_)));
        assert!(matches!(seen[8], Stuck::Abort(_)));
        assert_eq!(seen.iter().filter(|s| **s != Stuck::No).count(), 3);
    }

    #[test]
    fn progress_resets() {
        let mut d = StuckDetector::new(3);
        for h in [1, 1, 2, 2, 3, 3, 4] {
            assert_eq!(d.observe(Some(h), &wait()), Stuck::No);
        }
    }

    #[test]
    fn repeated_taps_that_change_the_screen_are_progress() {
        let mut d = StuckDetector::new(3);
        for i in 0..7 {
            assert_eq!(d.observe(Some(i), &tap(4)), Stuck::No);
        }
    }

    #[test]
    fn repeated_taps_on_an_unchanged_screen_are_stuck() {
        let mut d = StuckDetector::new(3);
        let r: Vec<Stuck> = (0..3).map(|_| d.observe(Some(9), &tap(4))).collect();
        assert!(matches!(r[2], Stuck::Diagnose(_)), "{r:?}");
    }
}
