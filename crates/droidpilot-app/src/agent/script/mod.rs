//! The `script` agent: replays a script with no model, and recovers a broken step with
//! one (AI in the middle) when the task names a recovery model.
//!
//! Each call to `next` returns one action for one script step, so every replay step is
//! an ordinary task step (stored, streamed, timed) and carries a `ReplayInfo` (which
//! script step, which selector, which fallback, and for a matcher find the score and the
//! attributes that agreed). Per step:
//!
//! 1. wait for the `wait_condition` (a `wait_for`: change detection with a timeout);
//! 2. find the target: the primary selector, the alternatives, then (unless the script
//!    says `"fuzzy": false`) the element matcher (`find.rs`, `score.rs`); a shared
//!    locator needs its witness; while the target is missing, dismiss a known
//!    interruption by rule (`interrupt.rs`: by Android's structure, and an app's own
//!    dialog only when the flow did not bring it up), or wait for it once (`wait_for`),
//!    then look in the toolbar's overflow menu (`overflow.rs`; closed again with Back
//!    when the target is not there), then scroll;
//! 3. while a progress indicator shows, wait (once) for it to go, so the tap is not
//!    aimed at a layout still moving; act; then check `expect`, waiting for it once
//!    (an expected app by a `wait_for` of its windows, `:package("…")`); a dialog that
//!    comes up after the step's own action is the flow's (never dismissed by rule; a
//!    confirmation naming the step's own action is confirmed when the `expect` can
//!    then verify it, `confirm.rs`); an `expect` that held before the action verifies
//!    it only through an element that is new after it; an action that changed nothing
//!    in the app (a pop-up that says nothing of it came up and took it, or it was lost
//!    under such an `expect`) runs once more after the pop-up is closed, then the step
//!    fails (`unreached`);
//! 4. on a failure: AI in the middle (`recover.rs`) when configured, up to
//!    `max_recovery_attempts`, then the user; without a model the task fails, naming
//!    the step. A retry never runs an action that already took effect: once the step's
//!    action ran, only its `expect` is checked again, and a step whose `expect` already
//!    holds is done. An unusable or low-confidence answer is a failed attempt that acts
//!    on nothing.
//!
//! A run that reaches the end says how many steps were unverified (no `expect` checked
//! their effect, or skipped) in its finish message.
//!
//! The logic lives in the agent rather than in `RunHooks` because each decision needs the
//! script's state (which step, which fallback was tried); hooks see one action at a time.
//! A `modify_selector` that worked heals the script: the runner stores it as a new
//! version (`take_script`), with the old selector kept as the first alternative.

pub mod confirm;
pub mod find;
pub mod interrupt;
pub mod overflow;
pub mod recover;
pub mod score;
pub mod similar;

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::appstrings::{AppStringsSource, Loaded, names_label};
use super::{Agent, AgentContext, AgentError, Decision, Meter, ProducedScript};
use crate::domain::{Action, ActionParser, Fallback, MatchInfo, ReplayInfo, ReplayRole};
use crate::llm::PriceTable;
use crate::screen::Screen;
use crate::script::model::StepAction;
use crate::script::{RecoveryHint, Script, ScriptId, ScriptStep, Vars};
use find::{Found, Recorded};
use interrupt::Interruption;
use recover::{Aitm, Confidence, RecoveryType, StepError};

/// The automatic waits (for a step's target, for its `expect`) end early once the screen
/// has held still this long with no progress indicator: nothing is coming, so recovery
/// starts now rather than at the timeout. A loading screen is waited for up to the
/// timeout, and a `wait_condition` or a `wait_for` step always waits its whole timeout.
const AUTO_WAIT_IDLE_MS: u64 = 1_000;

/// Interruptions dismissed per step before the step counts as failed.
const MAX_DISMISSALS: u32 = 3;
/// Scrolls one step may make to bring its target on screen (`search`).
const SEARCH_SCROLLS: u32 = 5;

/// Per script step: what has been tried.
#[derive(Debug, Default)]
struct Tries {
    waited_condition: bool,
    /// Waited for a progress indicator to go before acting (`wait_for_loading`).
    waited_loading: bool,
    waited_target: bool,
    waited_expect: bool,
    dismissals: u32,
    scrolls: u32,
    /// Scrolls made to find a missing target (`search`), and the screen before the last.
    searched: u32,
    search_layout: Option<u64>,
    recoveries: u32,
    asked: bool,
    /// A selector AI in the middle proposed (tried first).
    healed: Option<(String, String)>,
    /// The step's own action ran and took effect: a retry never runs it again, it only
    /// checks the step's `expect`.
    acted: bool,
    /// A target-less action (a key, a swipe) ran while a known interruption was on top:
    /// its signature. When the interruption is gone and the step's effect is not there,
    /// the pop-up took the action, which is then run once more (`absorbed`).
    absorbable: Option<(String, String)>,
    /// The step's action was run once more because the first never reached the app
    /// (`absorbed_by_pop_up`, `unreached`): never a third time.
    absorbed: bool,
    /// The dialog on screen right after the step's action (before anything dismissed
    /// it): whether the action closed the one it ran on.
    dialog_after: Option<String>,
    /// The step's `expect` already held on the screen its action ran on: it cannot
    /// witness this step's effect (every alarm row has `#onoff`, before a delete as
    /// after), so the step is unverified and a dialog after the action is never taken
    /// for one on top of the step's effect.
    expect_before: bool,
    /// Whether the step's `expect` already held on the first screen the step saw, before
    /// anything was tried for it: then it holding on a retry says nothing of the step.
    held_at_start: Option<bool>,
    /// The dialog Back was pressed on (its `signature`): if it is still there, Back did
    /// not close it.
    backed: Option<String>,
    /// The dialog on screen when the step's action ran, and the words naming the element
    /// it acted on (`confirm.rs`).
    dialog_before: Option<String>,
    acted_words: Vec<String>,
    /// A confirmation the step's action asked for was confirmed by rule (once).
    confirmed: bool,
    /// The screen the step's action ran on.
    before: Option<Screen>,
    /// Whether the overflow menu was opened to look for the step's target.
    overflow: Overflow,
    /// Whether it was opened to look for what the step's `expect` names.
    expect_overflow: bool,
    /// AI in the middle acted for this step (an action, or the element the step's action
    /// ran on): only an `expect` that did not hold before can then say the step worked.
    model_acted: bool,
    /// The dialog on the first screen the step saw (`None` inside: no dialog).
    dialog_at_start: Option<Option<String>>,
    /// The step's `expect` held with a new pop-up on top of its effect, and the pop-up
    /// says nothing of the step's action (`pop_up_on_effect`): not the flow's.
    pop_up_on_effect: bool,
}

/// The overflow menu, for a step whose target is not on screen (`overflow.rs`).
#[derive(Debug, Default, Clone, PartialEq)]
enum Overflow {
    #[default]
    Untried,
    /// Opened: how many windows the screen had before, to tell that it opened (a menu
    /// is a window of its own).
    Opened(usize),
    /// Closed again, or used: not opened twice for one step.
    Done,
}

/// What the last action was for, to read its outcome.
#[derive(Debug, Clone, PartialEq)]
enum Pending {
    Fresh,
    Waited,
    Acted {
        store: Option<String>,
    },
    Expecting,
    /// An interruption was dismissed after the step's action: `expect` is checked next.
    Dismissed,
    /// A confirmation the step's action asked for was confirmed: `expect` is checked next.
    Confirmed,
    /// The overflow menu was opened to look for what the step's `expect` names (how many
    /// windows there were before it).
    ExpectInMenu(usize),
    /// That menu was closed again; whether the `expect` held in it.
    ExpectMenuClosed(bool),
    Recovered,
    /// A recovery action ran for a step whose own action already ran (its `expect`
    /// failed): `expect` is checked again, the step is not redone.
    RecoveredAfterAction,
    Asked,
}

pub struct ScriptAgent {
    script: Script,
    origin: Option<(ScriptId, u32)>,
    vars: Vars,
    at: usize,
    pending: Pending,
    tries: Tries,
    dismissed: u32,
    aitm: Option<Aitm>,
    prices: PriceTable,
    /// Steps whose selector AI in the middle healed: index → (new selector, reason).
    healed: BTreeMap<usize, (String, String)>,
    /// Steps whose `expect` AI in the middle healed: index → (old selector, new one).
    healed_expects: BTreeMap<usize, (String, String)>,
    /// Steps that ended without their effect checked (no `expect`, or skipped).
    unverified: Vec<usize>,
    /// Dialogs the flow's own actions brought up (`interrupt::signature`): never
    /// dismissed by rule.
    caused: Vec<String>,
    /// The dialog on the screen being read, if any.
    dialog_now: Option<String>,
    /// Whether an app's own pop-up may be dismissed by rule at this step: the previous
    /// step was verified, or could not have brought a dialog up.
    app_dialogs: bool,
    /// Where the task reads an app's string resources, and the foreground app's once a
    /// label was missing (`agent::appstrings`).
    strings: Option<AppStringsSource>,
    loaded: Option<Loaded>,
}

/// One pass of the state machine: an action to return, or go round again.
enum Pass {
    Emit(Action, ReplayRole, Option<Found>),
    Again,
    Finish(bool, String, Option<String>),
}

impl ScriptAgent {
    /// `origin`: the stored script and version, so a healed script becomes its next
    /// version. `vars`: the bound inputs.
    pub fn new(script: Script, origin: Option<(ScriptId, u32)>, vars: Vars) -> Self {
        Self {
            script,
            origin,
            vars,
            at: 0,
            pending: Pending::Fresh,
            tries: Tries::default(),
            dismissed: 0,
            aitm: None,
            prices: PriceTable::default(),
            healed: BTreeMap::new(),
            healed_expects: BTreeMap::new(),
            unverified: Vec::new(),
            caused: Vec::new(),
            dialog_now: None,
            app_dialogs: true,
            strings: None,
            loaded: None,
        }
    }

    pub fn with_recovery(mut self, aitm: Aitm, prices: PriceTable) -> Self {
        self.aitm = Some(aitm);
        self.prices = prices;
        self
    }

    /// Whether the current step's action can bring up a dialog that is the flow's
    /// business (a confirmation it asked for): an action on an element, a key press, a
    /// swipe or a custom action (whose primitives tap and type). Starting an app or
    /// waiting cannot; what an app shows as it starts (a "what's new", an onboarding
    /// card) is the app's, not the flow's.
    fn can_open_dialog(&self) -> bool {
        let step = &self.script.steps[self.at];
        step.action.acts_on_selector()
            || matches!(
                step.action,
                StepAction::Key | StepAction::Swipe | StepAction::Custom
            )
    }

    /// Whether an app's own pop-up may be dismissed by rule now: the previous step was
    /// verified or could not have brought one up (`app_dialogs`), or this step has since
    /// scrolled the app and the pop-up was not on its first screen (what the previous
    /// step brought up was there before this step's gestures reached the app; a promo
    /// that comes up during a scroll is not the previous step's effect).
    fn app_dialogs_now(&self) -> bool {
        self.app_dialogs
            || (self.tries.scrolls + self.tries.searched > 0
                && self
                    .tries
                    .dialog_at_start
                    .as_ref()
                    .is_some_and(|d| *d != self.dialog_now))
    }

    /// The step is done: `verified` when its `expect` was checked and held.
    fn done(&mut self, verified: bool) {
        let can_open_dialog = self.can_open_dialog();
        let step = &self.script.steps[self.at];
        let checks_itself = matches!(
            step.action,
            StepAction::Wait | StepAction::WaitFor | StepAction::WaitForGone
        );
        if !verified && !checks_itself {
            self.unverified.push(self.at);
        }
        if self.tries.acted
            && can_open_dialog
            && !self.tries.pop_up_on_effect
            && let Some(d) = self.dialog_now.clone()
            && !self.caused.contains(&d)
        {
            self.caused.push(d);
        }
        self.app_dialogs = verified || !can_open_dialog;
        self.advance();
    }

    fn advance(&mut self) {
        self.at += 1;
        self.pending = Pending::Fresh;
        self.tries = Tries::default();
    }

    fn sub(&self, s: &str) -> String {
        self.vars.substitute(s).unwrap_or_else(|_| s.to_string())
    }

    /// The selectors to try for the current step, best first. An index-path primary
    /// goes after the alternatives: in a reordered list it matches the wrong row
    /// uniquely, while the row's text still finds the right one.
    /// The ids the script's other steps name as their targets and this step (`written`)
    /// does not: elements the script tells apart from this step's (`Recorded::elsewhere`).
    fn named_elsewhere(&self, written: &[String]) -> Vec<String> {
        let own = find::named_ids(written);
        let others: Vec<String> = (self.script.steps.iter().enumerate())
            .filter(|(i, _)| *i != self.at)
            .flat_map(|(_, s)| s.selector.iter().chain(&s.alternative_selectors))
            .map(|s| self.sub(s))
            .collect();
        let mut ids = find::named_ids(&others);
        ids.retain(|id| !own.contains(id));
        ids
    }

    fn selectors(&self) -> Vec<String> {
        let step = &self.script.steps[self.at];
        let healed = self.tries.healed.iter().map(|(s, _)| s.clone());
        let primary = step.selector.iter().map(|s| self.sub(s));
        let alternatives = step.alternative_selectors.iter().map(|s| self.sub(s));
        let index_based = step
            .selector
            .as_ref()
            .and_then(|s| crate::screen::Selector::parse(&self.sub(s)).ok())
            .is_some_and(|s| s.is_index_based());
        if index_based {
            healed.chain(alternatives).chain(primary).collect()
        } else {
            healed.chain(primary).chain(alternatives).collect()
        }
    }

    /// Reads what the previous action did; Some(pass) when that decides this pass.
    fn after(&mut self, ctx: &AgentContext, screen: &Screen) -> Option<Result<Pass, StepError>> {
        let failed = ctx
            .history
            .steps()
            .last()
            .map(|r| r.outcome.starts_with("failed"));
        let last = ctx
            .history
            .steps()
            .last()
            .map(|r| r.outcome.clone())
            .unwrap_or_default();
        match std::mem::replace(&mut self.pending, Pending::Fresh) {
            Pending::Acted { store } => {
                if failed == Some(true) {
                    return Some(Err(err("action_failed", last, None)));
                }
                if let (Some(name), Some(v)) =
                    (&self.script.steps[self.at].parameters.store_as, store)
                {
                    self.vars.set(name, v);
                }
                // A scroll `until` its target shows goes on acting; any other action
                // has taken effect and is never run again for this step.
                if self.scrolling_on(screen) {
                    return Some(Ok(Pass::Again));
                }
                self.tries.acted = true;
                self.tries.dialog_after = self.dialog_now.clone();
                Some(self.check_expect(screen))
            }
            Pending::Expecting => Some(if self.expect_holds(screen) {
                self.expect_met(screen)
            } else if let Some(pass) = self.confirm(screen) {
                Ok(pass)
            } else if let Some(r) = self.pop_up_took_it(screen) {
                r
            } else if let Some(pass) = self.expect_in_overflow(screen) {
                Ok(pass)
            } else if self.absorbed_by_pop_up(screen) {
                Ok(Pass::Again)
            } else if let Some(pass) = self.dismiss(screen, false, Pending::Expecting) {
                Ok(pass)
            } else {
                Err(self.expect_error())
            }),
            // A pop-up came up after the action: it is gone now, check `expect` again.
            Pending::Dismissed | Pending::Confirmed => Some(self.check_expect(screen)),
            Pending::ExpectInMenu(before) => Some(Ok(self.leave_menu(screen, before))),
            Pending::ExpectMenuClosed(true) => Some(self.finish_step(self.verifiable())),
            Pending::ExpectMenuClosed(false) => Some(Err(self.expect_error())),
            Pending::Recovered if failed == Some(true) => Some(Err(err(
                "action_failed",
                format!("the recovery action failed: {last}"),
                None,
            ))),
            Pending::Recovered if self.expect_holds(screen) && self.verifiable() => {
                self.done(true);
                Some(Ok(Pass::Again))
            }
            Pending::RecoveredAfterAction if failed == Some(true) => Some(Err(err(
                "action_failed",
                format!("the recovery action failed: {last}"),
                None,
            ))),
            Pending::RecoveredAfterAction => Some(self.check_expect(screen)),
            Pending::Asked => Some(self.answered(ctx)),
            Pending::Fresh | Pending::Waited | Pending::Recovered => None,
        }
    }

    /// Whether the action went to a pop-up instead of the app, checked once the wait for
    /// the step's `expect` is over: a known interruption was on top when it ran (a key
    /// press, a swipe: nothing aimed it), that pop-up is gone, nothing is loading, the app
    /// beneath shows what it showed before, and the effect is not there. The action
    /// never reached the app, so it is run once more (once per step).
    fn absorbed_by_pop_up(&mut self, screen: &Screen) -> bool {
        let Some((sig, app)) = self.tries.absorbable.take() else {
            return false;
        };
        if self.tries.absorbed
            || screen.tree.shows_progress()
            || self.dialog_now.as_ref() == Some(&sig)
            || interrupt::beneath(screen) != app
            || !self.has_expect()
            || self.expect_holds(screen)
        {
            return false;
        }
        self.tries.absorbed = true;
        self.tries.acted = false;
        self.tries.waited_expect = false;
        true
    }

    /// Whether the step's expected effect is there behind a dialog on top (the dialog
    /// came on top of a step that worked, rather than instead of its effect, as a
    /// confirmation does).
    fn effect_behind_dialog(&self, screen: &Screen) -> bool {
        let Some(e) = &self.script.steps[self.at].expect else {
            return false;
        };
        !e.is_empty()
            && e.app
                .as_ref()
                .is_none_or(|a| screen.tree.nodes.iter().any(|n| &n.package == a))
            && e.visible
                .iter()
                .all(|s| find::present(screen, &self.sub(s)))
            && e.gone.iter().all(|s| !self.lingers(screen, &self.sub(s)))
    }

    /// A `scroll` with `until` keeps scrolling while its target is not visible.
    fn scrolling_on(&mut self, screen: &Screen) -> bool {
        let p = &self.script.steps[self.at].parameters;
        let Some(until) = p.until.as_ref().map(|u| self.sub(u)) else {
            return false;
        };
        let max = p.max_scrolls.unwrap_or(10);
        if self.shows(screen, &until) || self.tries.scrolls >= max {
            return false;
        }
        true
    }

    fn has_expect(&self) -> bool {
        self.script.steps[self.at]
            .expect
            .as_ref()
            .is_some_and(|e| !e.is_empty())
    }

    fn expect_holds(&self, screen: &Screen) -> bool {
        let Some(e) = &self.script.steps[self.at].expect else {
            return true;
        };
        let app_ok = e
            .app
            .as_ref()
            .is_none_or(|a| screen.tree.nodes.iter().any(|n| &n.package == a));
        let next = self.script.steps.get(self.at + 1);
        app_ok
            && (e
                .visible
                .iter()
                .all(|s| self.expected(screen, &self.sub(s)))
                // The screen the recording saw after this step, in other words.
                || (self.script.fuzzy
                    && find::shows_layout_after(
                        screen,
                        self.script.steps[self.at].layout.as_deref(),
                        next.and_then(|n| n.layout.as_deref()),
                    )))
            && e.gone.iter().all(|s| !self.lingers(screen, &self.sub(s)))
    }

    /// Whether what a `gone` expect names is still there, behind a dialog or not:
    /// exactly, or (fuzzy on) as the element matcher's clear winner (`find::lingers`).
    /// The matcher counts only when the selector as written named nothing on the screen
    /// the step's action ran on (on the current one before it): an exact `gone` that held
    /// there already says nothing, while one that named an element then is trusted (a
    /// note's text that grew by a typed word has gone as written).
    fn lingers(&self, screen: &Screen, sel: &str) -> bool {
        if find::present(screen, sel) {
            return true;
        }
        let reference = self.tries.before.as_ref().unwrap_or(screen);
        self.script.fuzzy && !find::present(reference, sel) && find::lingers(screen, sel)
    }

    /// An `expect` selector on screen: as written (or through the matcher), or with its
    /// labels as the phone's language shows them.
    fn expected(&self, screen: &Screen, sel: &str) -> bool {
        find::expected(screen, sel, self.script.fuzzy)
            || self
                .translate(sel)
                .is_some_and(|(t, _)| find::visible(screen, &t.to_string()))
    }

    /// Whether what a step waits for (its `wait_condition`, a scroll's `until`) is on
    /// screen, found as a step's target is: exactly, in the phone's language, or (fuzzy
    /// on) one clear winner of the element matcher, never a mere look-alike (the next
    /// step acts on what `until` found: scrolling stops at "USB-c cable 0.5m" for
    /// "USB-C Cable 0.5m", not at "USB-C Cable 1m").
    fn shows(&self, screen: &Screen, sel: &str) -> bool {
        if find::visible(screen, sel)
            || self
                .translate(sel)
                .is_some_and(|(t, _)| find::visible(screen, &t.to_string()))
        {
            return true;
        }
        let written = [sel.to_string()];
        let recorded = Recorded {
            selectors: &written,
            ..Recorded::default()
        };
        self.script.fuzzy
            && !find::covered(screen, &written)
            && find::fuzzy(screen, &written, &recorded).is_some()
    }

    /// `sel` with its labels in the phone's language, from the app's string resources.
    fn translate(
        &self,
        sel: &str,
    ) -> Option<(crate::screen::Selector, Vec<crate::domain::Translated>)> {
        let loaded = self.loaded.as_ref()?;
        loaded.selector(&crate::screen::Selector::parse(sel).ok()?)
    }

    /// The target by a selector whose labels are written in another language than the
    /// phone's: the same string resource's value in the phone's locale, found exactly.
    fn by_translation(
        &self,
        screen: &Screen,
        selectors: &[String],
        recorded: &Recorded<'_>,
    ) -> Option<Found> {
        selectors.iter().find_map(|s| {
            let (sel, translated) = self.translate(s)?;
            let mut f = find::by_selectors(screen, &[sel.to_string()], recorded)?;
            f.fallback = Fallback::Translated;
            f.matched = Some(MatchInfo {
                score: 1.0,
                margin: 1.0,
                agreed: vec!["string".into()],
                translated,
            });
            Some(f)
        })
    }

    /// Reads the foreground app's string resources when the current step names a label
    /// that is not on screen (once per app and task; nothing when the device cannot say).
    async fn load_strings(&mut self, ctx: &AgentContext) {
        let (Some(source), Some(screen), Some(app)) = (
            self.strings.clone(),
            ctx.observation.tree.as_deref(),
            ctx.device.app.clone(),
        ) else {
            return;
        };
        if self.at >= self.script.steps.len()
            || self
                .loaded
                .as_ref()
                .is_some_and(|l| l.strings.package == app)
        {
            return;
        }
        let step = &self.script.steps[self.at];
        let expects = step
            .expect
            .iter()
            .flat_map(|e| e.visible.iter().map(|s| self.sub(s)));
        let waits = step
            .wait_condition
            .iter()
            .map(|w| self.sub(&w.selector))
            .chain(step.parameters.until.iter().map(|u| self.sub(u)));
        let missing = self
            .selectors()
            .into_iter()
            .chain(expects)
            .chain(waits)
            .any(|s| {
                crate::screen::Selector::parse(&s).is_ok_and(|p| names_label(&p))
                    && !find::visible(screen, &s)
            });
        if missing {
            self.loaded = source.load(&app).await;
        }
    }

    fn expect_error(&self) -> StepError {
        let e = self.script.steps[self.at]
            .expect
            .clone()
            .unwrap_or_default();
        let sel = e.visible.first().or(e.gone.first()).map(|s| self.sub(s));
        err(
            "expect_failed",
            format!(
                "after the step, expected {}",
                serde_json::to_string(&e).unwrap_or_default()
            ),
            sel,
        )
    }

    /// Whether the step's `expect` can verify its effect: there is one, and it did not
    /// already hold on the screen the step's action ran on.
    fn verifiable(&self) -> bool {
        self.has_expect() && !self.tries.expect_before
    }

    /// The step's `expect` holds: done, `verified` or not. A step AI in the middle acted
    /// for must be verified: an `expect` that held before its action cannot tell whether
    /// the model's action did what the step asked (cancelling a new confirmation leaves
    /// such an `expect` holding), so the step fails instead.
    fn finish_step(&mut self, verified: bool) -> Result<Pass, StepError> {
        if self.tries.model_acted && !verified {
            return Err(err(
                "expect_failed",
                "AI in the middle acted for this step, and no expect that was missing before the step can verify its effect",
                self.expect_error().selector,
            ));
        }
        self.done(verified);
        Ok(Pass::Again)
    }

    /// The step's `expect` holds after its action. One that already held before the
    /// action proves nothing by itself: it verifies the step only when an element it
    /// names is new (the sent message, where before only the compose box held its text).
    /// When nothing is new and the app shows what it showed before, the action never
    /// reached the app (`unreached`).
    fn expect_met(&mut self, screen: &Screen) -> Result<Pass, StepError> {
        self.tries.pop_up_on_effect = self.pop_up_on_effect(screen);
        if self.sets_state() {
            return self.finish_step(true);
        }
        if self.tries.expect_before && self.tries.acted {
            if self.renewed(screen) {
                return self.finish_step(true);
            }
            if let Some(r) = self.unreached(screen, false) {
                return r;
            }
        }
        self.finish_step(self.verifiable())
    }

    /// Whether a pop-up that came up after the step's action sits on top of the effect
    /// the step's `expect` verified (a `gone` that held, what it expects visible behind
    /// the pop-up, none of it inside), and says nothing of the action (a promo over the
    /// page after "Add to cart"; "Delete note?" names the delete and stays the flow's; an
    /// action on an element with no words to compare stays the flow's too).
    /// Such a pop-up came up by itself: the next step may close it by rule.
    fn pop_up_on_effect(&self, screen: &Screen) -> bool {
        let Some(e) = &self.script.steps[self.at].expect else {
            return false;
        };
        self.dialog_now.is_some()
            && self.dialog_now != self.tries.dialog_before
            && !self.tries.expect_before
            && self.effect_behind_dialog(screen)
            && e.visible
                .iter()
                .all(|s| find::covered(screen, &[self.sub(s)]))
            // What the step acted on must be known to say the pop-up is not about it.
            && !self.tries.acted_words.is_empty()
            && !confirm::names_action(screen, &self.tries.acted_words)
    }

    /// The step's action brings about a state rather than a change: launching the app
    /// already in front, or opening the page already open, leaves what its `expect`
    /// names, and that is the step done, whether or not it held before.
    fn sets_state(&self) -> bool {
        matches!(
            self.script.steps[self.at].action,
            StepAction::LaunchApp | StepAction::OpenUrl
        )
    }

    /// Whether an element the step's `expect` names is on screen now that was not on
    /// the screen its action ran on (more elements alike than before count).
    fn renewed(&self, screen: &Screen) -> bool {
        let (Some(before), Some(e)) = (&self.tries.before, &self.script.steps[self.at].expect)
        else {
            return false;
        };
        e.visible.iter().any(|sel| {
            let sel = self.sub(sel);
            let (was, now) = (find::named(before, &sel), find::named(screen, &sel));
            now.iter().any(|k| {
                now.iter().filter(|x| *x == k).count() > was.iter().filter(|x| *x == k).count()
            })
        })
    }

    /// The step's action changed nothing in the app (what it shows beneath any dialog is
    /// what it showed before, nothing is loading, and the action closed no dialog), and
    /// its `expect` held before: its effect cannot be verified. Either a pop-up that came
    /// up took the tap (a new dialog that says nothing of the step's action: a dialog
    /// naming it is the step's own, a confirmation, and stays the flow's business), or
    /// the input was lost. The pop-up is dismissed by rule and the action run once more;
    /// a second time, the step fails: a failure beats a success nobody verified.
    /// `pop_up_only`: for a step whose `expect` is still missing, only a pop-up that came
    /// up counts (an effect that is merely slow is waited for, never acted twice for).
    fn unreached(&mut self, screen: &Screen, pop_up_only: bool) -> Option<Result<Pass, StepError>> {
        let before = self.tries.before.as_ref()?;
        let closed_one = self.tries.dialog_before.is_some()
            && self.tries.dialog_after != self.tries.dialog_before;
        if closed_one
            || screen.tree.shows_progress()
            || interrupt::beneath(screen) != interrupt::beneath(before)
        {
            return None;
        }
        let new_dialog = self.dialog_now.is_some() && self.dialog_now != self.tries.dialog_before;
        if (pop_up_only && !new_dialog)
            || (new_dialog && confirm::names_action(screen, &self.tries.acted_words))
        {
            return None;
        }
        if self.tries.absorbed {
            let why = if pop_up_only {
                "a pop-up came up instead of its effect, twice, and its expect is missing"
            } else {
                "its expect already held before it, so nothing verifies its effect"
            };
            return Some(Err(err(
                "expect_failed",
                format!(
                    "the step's action changed nothing in the app, twice (a pop-up took it, or it was lost); {why}"
                ),
                self.expect_error().selector,
            )));
        }
        self.tries.absorbed = true;
        self.tries.acted = false;
        self.tries.waited_expect = false;
        self.tries.confirmed = false;
        if !new_dialog {
            return Some(Ok(Pass::Again));
        }
        let back_tried = self.tries.backed.is_some() && self.tries.backed == self.dialog_now;
        let action = match interrupt::interruption_after(screen, true, &self.caused, back_tried) {
            Some(Interruption::Tap { selector, .. }) => Action::Tap {
                target: crate::domain::action::TargetField(crate::domain::Target::Selector(
                    selector,
                )),
            },
            Some(Interruption::Back { .. }) => {
                self.tries.backed = self.dialog_now.clone();
                Action::Key {
                    key: crate::domain::Key::Back,
                }
            }
            // A form, or a dialog that cannot be closed by rule: the retry finds it.
            _ => return Some(Ok(Pass::Again)),
        };
        Some(Ok(self.dismissing(action, Pending::Fresh)))
    }

    /// The step's `expect` is missing after its action, the app shows what it showed
    /// before, and a pop-up that says nothing of the action came up (a promo over "Add to
    /// cart"): it took the tap (`unreached`). Only for an action on an element that an
    /// `expect` can verify.
    fn pop_up_took_it(&mut self, screen: &Screen) -> Option<Result<Pass, StepError>> {
        let aimed = self.script.steps[self.at].action.acts_on_selector();
        if !(aimed && self.tries.acted && self.verifiable()) {
            return None;
        }
        self.unreached(screen, true)
    }

    /// A confirmation the step's own action asked for (`confirm.rs`): confirmed by rule,
    /// once, when it names what the step acted on and the step's `expect` (missing before
    /// the action and still missing) can then verify the effect.
    fn confirm(&mut self, screen: &Screen) -> Option<Pass> {
        let step = &self.script.steps[self.at];
        if self.tries.confirmed
            || !self.tries.acted
            || !step.action.acts_on_selector()
            || !self.verifiable()
            || self.expect_holds(screen)
        {
            return None;
        }
        let (selector, _) = confirm::confirming_button(
            screen,
            &self.tries.acted_words,
            self.tries.dialog_before.as_deref(),
        )?;
        self.tries.confirmed = true;
        self.pending = Pending::Confirmed;
        let tap = Action::Tap {
            target: crate::domain::action::TargetField(crate::domain::Target::Selector(
                selector.clone(),
            )),
        };
        let found = Found {
            selector,
            node: 0,
            fallback: Fallback::None,
            matched: None,
        };
        Some(Pass::Emit(tap, ReplayRole::Action, Some(found)))
    }

    /// After the action: `expect` holds (next step), or wait for it once, or fail.
    fn check_expect(&mut self, screen: &Screen) -> Result<Pass, StepError> {
        let until = self.script.steps[self.at].parameters.until.clone();
        if let Some(u) = until.filter(|u| !self.shows(screen, &self.sub(u))) {
            return Err(err(
                "element_not_found",
                format!("scrolled {} times without finding it", self.tries.scrolls),
                Some(self.sub(&u)),
            ));
        }
        if self.expect_holds(screen) {
            return self.expect_met(screen);
        }
        if let Some(pass) = self.confirm(screen) {
            return Ok(pass);
        }
        if let Some(r) = self.pop_up_took_it(screen) {
            return r;
        }
        if let Some(pass) = self.dismiss(screen, false, Pending::Dismissed) {
            return Ok(pass);
        }
        if self.tries.waited_expect {
            return Err(self.expect_error());
        }
        self.tries.waited_expect = true;
        let e = self.script.steps[self.at]
            .expect
            .clone()
            .unwrap_or_default();
        let timeout_ms = e
            .timeout_ms
            .unwrap_or(crate::script::model::DEFAULT_TIMEOUT_MS);
        self.pending = Pending::Expecting;
        let action = match (e.visible.first(), e.gone.first()) {
            (Some(s), _) => Action::WaitFor {
                selector: self.sub(s),
                timeout_ms,
                idle_ms: Some(AUTO_WAIT_IDLE_MS),
            },
            (None, Some(s)) => Action::WaitForGone {
                selector: self.sub(s),
                timeout_ms,
                idle_ms: Some(AUTO_WAIT_IDLE_MS),
            },
            // Only the app was expected: wait for one of its windows (change detection,
            // like every other wait; an `expect` is never empty here).
            (None, None) => Action::WaitFor {
                selector: crate::screen::Selector::Package(e.app.clone().unwrap_or_default())
                    .to_string(),
                timeout_ms,
                idle_ms: Some(AUTO_WAIT_IDLE_MS),
            },
        };
        Ok(Pass::Emit(action, ReplayRole::Expect, None))
    }

    /// A retry of a step (after a recovery attempt, or the user's "retry"): when the
    /// step's own action already ran, or its expected effect is already there, the step
    /// is checked, never run again (a second tap on "Delete" deletes a second alarm).
    fn retry_check(&mut self, screen: &Screen) -> Option<Result<Pass, StepError>> {
        let retrying = self.tries.recoveries > 0 || self.tries.asked;
        if self.tries.acted {
            return Some(if self.expect_holds(screen) {
                self.finish_step(self.verifiable())
            } else {
                Err(self.expect_error())
            });
        }
        let fresh = self.tries.held_at_start == Some(false);
        if retrying && fresh && self.verifiable() && self.expect_holds(screen) {
            self.done(true);
            return Some(Ok(Pass::Again));
        }
        None
    }

    /// The step's own turn: wait condition, target, interruptions, act.
    fn attempt(&mut self, screen: &Screen) -> Result<Pass, StepError> {
        if self.tries.held_at_start.is_none() {
            self.tries.held_at_start = Some(self.has_expect() && self.effect_behind_dialog(screen));
        }
        if self.tries.dialog_at_start.is_none() {
            self.tries.dialog_at_start = Some(self.dialog_now.clone());
        }
        if let Some(r) = self.retry_check(screen) {
            return r;
        }
        let step = self.script.steps[self.at].clone();
        if let Some(wc) = &step.wait_condition {
            let sel = self.sub(&wc.selector);
            if !self.shows(screen, &sel) {
                if self.tries.waited_condition {
                    return Err(err(
                        "element_not_found",
                        format!("wait_condition `{sel}` never appeared"),
                        Some(sel),
                    ));
                }
                self.tries.waited_condition = true;
                self.pending = Pending::Waited;
                return Ok(Pass::Emit(
                    // The author asked for this wait: the whole timeout, still screen or not.
                    Action::WaitFor {
                        selector: sel,
                        timeout_ms: wc.timeout_ms,
                        idle_ms: None,
                    },
                    ReplayRole::Wait,
                    None,
                ));
            }
        }
        if step
            .parameters
            .until
            .as_ref()
            .is_some_and(|u| self.shows(screen, &self.sub(u)))
        {
            self.advance();
            return Ok(Pass::Again);
        }
        let selectors = self.selectors();
        // A scroll moves what is behind a pop-up only once the pop-up is gone.
        let scrolls = step.action == StepAction::Scroll;
        if let Some(pass) = self.notice_in_the_way(screen, &selectors, scrolls) {
            return Ok(pass);
        }
        if scrolls
            && self.interrupted(screen)
            && let Some(pass) = self.dismiss(screen, true, Pending::Fresh)
        {
            return Ok(pass);
        }
        let targeted = step.action.acts_on_selector()
            || matches!(step.action, StepAction::WaitFor | StepAction::WaitForGone)
            || step.is_element_drag();
        if targeted && let Some(pass) = self.wait_for_loading(screen, &step) {
            return Ok(pass);
        }
        if !targeted || selectors.is_empty() {
            if step.action == StepAction::Scroll {
                self.tries.scrolls += 1;
            }
            // A step recorded with no selector (nothing there to name) taps its point.
            let point = (targeted && step.parameters.coordinate.is_some()).then(|| Found {
                selector: String::new(),
                node: 0,
                fallback: Fallback::Coordinate,
                matched: None,
            });
            return self.act(point, screen);
        }
        let primary = step.selector.as_ref().map(|s| self.sub(s));
        let written: Vec<String> = primary
            .iter()
            .cloned()
            .chain(step.alternative_selectors.iter().map(|s| self.sub(s)))
            .collect();
        // A pop-up the flow did not bring up covers the target, and the selector names an
        // element in the pop-up too (a dialog's `#button1`): close it before choosing.
        if self.interrupted(screen) && find::covered(screen, &selectors) {
            return self.missing(screen, &selectors);
        }
        let elsewhere = self.named_elsewhere(&written);
        let recorded = Recorded {
            selectors: &written,
            witness: &step.witness,
            place: step.parameters.coordinate,
            layout: step.layout.as_deref(),
            elsewhere: &elsewhere,
        };
        let found = find::by_selectors(screen, &selectors, &recorded)
            .map(|mut f| {
                f.fallback = if Some(&f.selector) == primary.as_ref() {
                    Fallback::None
                } else {
                    Fallback::Alternative
                };
                f
            })
            .or_else(|| self.by_translation(screen, &selectors, &recorded))
            .or_else(|| {
                // The target is there, behind a dialog: that dialog is the obstacle, not
                // a renamed target (the matcher would pick a look-alike inside it).
                let covered = find::covered(screen, &selectors) || self.interrupted(screen);
                (self.script.fuzzy && !covered)
                    .then(|| find::fuzzy(screen, &selectors, &recorded))
                    .flatten()
            })
            .or_else(|| match self.tries.overflow {
                // The overflow menu this step opened: a toolbar action named by its id.
                Overflow::Opened(before) if self.script.fuzzy => {
                    find::menu_item(screen, &recorded, before)
                }
                _ => None,
            });
        match (found, step.action) {
            (Some(f), StepAction::WaitForGone)
                if f.fallback == Fallback::None && self.tries.waited_target =>
            {
                Err(err(
                    "element_not_found",
                    format!("`{}` never went away", f.selector),
                    Some(f.selector),
                ))
            }
            (Some(f), StepAction::WaitForGone) => {
                self.tries.waited_target = true;
                self.pending = Pending::Waited;
                Ok(Pass::Emit(
                    self.build(&f.selector)?,
                    ReplayRole::Wait,
                    Some(f),
                ))
            }
            (None, StepAction::WaitForGone) => {
                self.pending = Pending::Acted { store: None };
                Ok(Pass::Emit(Action::Wait { ms: 0 }, ReplayRole::Action, None))
            }
            (Some(f), _) => self.act(Some(f), screen),
            (None, _) => self.missing(screen, &selectors),
        }
    }

    /// Whether a dialog the flow did not bring up, one replay may dismiss by rule, is on
    /// top: the step's target is not in it (the step was recorded or written without
    /// it), so the matcher never looks there; the dialog is dismissed first.
    fn interrupted(&self, screen: &Screen) -> bool {
        matches!(
            interrupt::interruption(screen, self.app_dialogs_now(), &self.caused),
            Some(Interruption::Tap { .. } | Interruption::Back { .. })
        )
    }

    /// While the screen shows a progress indicator, its layout may still move (a list
    /// that syncs pushes its rows, a page that loads reflows), so a tap aimed now could
    /// land on what moves under it: wait, once per step, for the indicator to go (up to
    /// the step's timeout; a spinner that stays only costs that wait).
    fn wait_for_loading(&mut self, screen: &Screen, step: &ScriptStep) -> Option<Pass> {
        if self.tries.waited_loading || !screen.tree.shows_progress() {
            return None;
        }
        self.tries.waited_loading = true;
        let tree = &screen.tree;
        let bounds = tree.screen_bounds();
        let class = (0..tree.nodes.len())
            .filter(|&i| tree.is_on_screen(i, &bounds))
            .map(|i| tree.nodes[i].short_class())
            .find(|c| c.ends_with("ProgressBar") || c.ends_with("ProgressIndicator"))?
            .to_string();
        self.pending = Pending::Waited;
        let wait = Action::WaitForGone {
            selector: class,
            timeout_ms: step.timeout_ms(),
            idle_ms: None,
        };
        Some(Pass::Emit(wait, ReplayRole::Wait, None))
    }

    /// The target is not on screen: an interruption, a wait, a skip or a failure.
    fn missing(&mut self, screen: &Screen, selectors: &[String]) -> Result<Pass, StepError> {
        if let Some(pass) = self.close_overflow(screen) {
            return Ok(pass);
        }
        if let Some(pass) = self.dismiss(screen, true, Pending::Fresh) {
            return Ok(pass);
        }
        let step = &self.script.steps[self.at];
        // An optional step (a pop-up that comes only sometimes) is not waited for.
        if !self.tries.waited_target && !step.optional {
            self.tries.waited_target = true;
            self.pending = Pending::Waited;
            let wait = Action::WaitFor {
                selector: selectors[0].clone(),
                timeout_ms: step.timeout_ms(),
                idle_ms: Some(AUTO_WAIT_IDLE_MS),
            };
            return Ok(Pass::Emit(wait, ReplayRole::Wait, None));
        }
        if step.optional {
            self.advance();
            return Ok(Pass::Again);
        }
        if let Some(pass) = self.notice_in_the_way(screen, selectors, true) {
            return Ok(pass);
        }
        if let Some(pass) = self.open_overflow(screen) {
            return Ok(pass);
        }
        if let Some(pass) = self.search(screen) {
            return Ok(pass);
        }
        Err(err(
            "element_not_found",
            format!("no element matches {}", selectors.join(" or ")),
            Some(selectors[0].clone()),
        ))
    }

    /// A notice (one labelled button, nothing to decide: a "what's new", a tip) that is
    /// not to be dismissed by rule (the flow's own action may have brought it up) stands
    /// between the step and its target: the target is behind it, or (`waited`, the
    /// target waited for) nothing in it is the target. The flow goes on beneath it, so it
    /// is closed with Back, which agrees to nothing, once per notice. A choice (a
    /// confirmation) the flow brought up is never closed by rule.
    fn notice_in_the_way(
        &mut self,
        screen: &Screen,
        selectors: &[String],
        waited: bool,
    ) -> Option<Pass> {
        let d = interrupt::dialog(screen)?;
        let back_tried = self.tries.backed.is_some() && self.tries.backed == self.dialog_now;
        // Something the step names is in the notice (a long notice's own scroll view).
        let in_it = selectors.iter().any(|s| find::visible(screen, s));
        if d.kind != interrupt::Kind::Notice
            || in_it
            || back_tried
            || self.tries.dismissals >= MAX_DISMISSALS
            || !(waited || find::covered(screen, selectors))
        {
            return None;
        }
        self.tries.backed = self.dialog_now.clone();
        let back = Action::Key {
            key: crate::domain::Key::Back,
        };
        Some(self.dismissing(back, Pending::Fresh))
    }

    /// The target may have moved into the toolbar's overflow menu: open it (once per
    /// step) and look for the target among its items with the same finders, a clear
    /// winner only. Only a tap, long press or double tap looks there.
    fn open_overflow(&mut self, screen: &Screen) -> Option<Pass> {
        let taps = matches!(
            self.script.steps[self.at].action,
            StepAction::Tap | StepAction::LongPress | StepAction::DoubleTap
        );
        if !taps || self.tries.overflow != Overflow::Untried {
            return None;
        }
        let n = overflow::button(screen)?;
        let (sel, _) = crate::screen::SelectorIndex::new(&screen.tree).recommend(n);
        let selector = sel.to_string();
        self.tries.overflow = Overflow::Opened(screen.tree.app_windows().count());
        self.pending = Pending::Fresh;
        let tap = Action::Tap {
            target: crate::domain::action::TargetField(crate::domain::Target::Selector(
                selector.clone(),
            )),
        };
        let found = Found {
            selector,
            node: n,
            fallback: Fallback::None,
            matched: None,
        };
        Some(Pass::Emit(tap, ReplayRole::Search, Some(found)))
    }

    /// What the step's `expect` names may be an action an update moved into the
    /// toolbar's overflow menu (the page the step opened is there, its "Edit" is behind
    /// ⋮): open the menu once, check the `expect` there, and close it again.
    fn expect_in_overflow(&mut self, screen: &Screen) -> Option<Pass> {
        let names_elements = self.script.steps[self.at]
            .expect
            .as_ref()
            .is_some_and(|e| !e.visible.is_empty());
        if self.tries.expect_overflow || !names_elements {
            return None;
        }
        let n = overflow::button(screen)?;
        self.tries.expect_overflow = true;
        let (sel, _) = crate::screen::SelectorIndex::new(&screen.tree).recommend(n);
        self.pending = Pending::ExpectInMenu(screen.tree.app_windows().count());
        let tap = Action::Tap {
            target: crate::domain::action::TargetField(crate::domain::Target::Selector(
                sel.to_string(),
            )),
        };
        Some(Pass::Emit(tap, ReplayRole::Expect, None))
    }

    /// The overflow menu opened for the step's `expect`: note whether it holds there, and
    /// close the menu with Back (only a menu that did open).
    fn leave_menu(&mut self, screen: &Screen, before: usize) -> Pass {
        let held = self.expect_holds(screen);
        if screen.tree.app_windows().count() <= before {
            self.pending = Pending::ExpectMenuClosed(false);
            return Pass::Again;
        }
        self.pending = Pending::ExpectMenuClosed(held);
        let back = Action::Key {
            key: crate::domain::Key::Back,
        };
        Pass::Emit(back, ReplayRole::Expect, None)
    }

    /// The overflow menu opened and the target is not in it: close it with Back, so the
    /// phone is as it was. Only a menu that did open (a new window) is closed: Back on
    /// the app itself would leave the page.
    fn close_overflow(&mut self, screen: &Screen) -> Option<Pass> {
        let Overflow::Opened(before) = self.tries.overflow else {
            return None;
        };
        let opened = screen.tree.app_windows().count() > before;
        self.tries.overflow = Overflow::Done;
        if !opened {
            return None;
        }
        self.pending = Pending::Fresh;
        let back = Action::Key {
            key: crate::domain::Key::Back,
        };
        Some(Pass::Emit(back, ReplayRole::Search, None))
    }

    /// The target may be below the fold (the script was recorded on a taller phone, or
    /// the list grew): scroll down, at most `SEARCH_SCROLLS` times, while a list is on
    /// screen and still moves. The step is then tried afresh on each new screen.
    fn search(&mut self, screen: &Screen) -> Option<Pass> {
        if self.tries.searched >= SEARCH_SCROLLS {
            return None;
        }
        let tree = &screen.tree;
        let bounds = tree.screen_bounds();
        let list = (0..tree.nodes.len())
            .any(|i| tree.nodes[i].scrollable && tree.is_on_screen(i, &bounds));
        // Digits count: a list of times moves when only they change.
        let layout = crate::screen::content_hash(tree).0;
        if !list || self.tries.search_layout == Some(layout) {
            return None;
        }
        self.tries.search_layout = Some(layout);
        self.tries.searched += 1;
        self.pending = Pending::Fresh;
        let scroll = Action::Scroll {
            direction: crate::domain::Direction::Down,
            container: None,
        };
        Some(Pass::Emit(scroll, ReplayRole::Search, None))
    }

    /// Dismisses a known interruption by rule (`interrupt.rs`), at most `MAX_DISMISSALS`
    /// per step, then goes on with `then`. `before_action`: the step's own action has not
    /// run yet. After it, an app's own dialog is the flow's business (a confirmation the
    /// action asked for): it is remembered as caused by the flow and never dismissed by
    /// rule, and the keyboard does not count (an `expect` may wait for it).
    fn dismiss(&mut self, screen: &Screen, before_action: bool, then: Pending) -> Option<Pass> {
        // After the action, a dialog on top of the step's effect (the effect is there
        // behind it) came after a step that worked; one instead of it is the flow's.
        let on_top_of_effect =
            !before_action && !self.tries.expect_before && self.effect_behind_dialog(screen);
        // A dialog after an action that cannot ask for one is not the flow's.
        let not_asked = before_action || !self.can_open_dialog();
        if !not_asked
            && !on_top_of_effect
            && let Some(d) = self.dialog_now.clone()
            && !self.caused.contains(&d)
        {
            self.caused.push(d);
        }
        if self.tries.dismissals >= MAX_DISMISSALS {
            return None;
        }
        let app_dialogs = (not_asked && self.app_dialogs_now()) || on_top_of_effect;
        let back_tried = self.tries.backed.is_some() && self.tries.backed == self.dialog_now;
        let found = interrupt::interruption_after(screen, app_dialogs, &self.caused, back_tried)?;
        let action = match found {
            Interruption::Tap { selector, .. } => Action::Tap {
                target: crate::domain::action::TargetField(crate::domain::Target::Selector(
                    selector,
                )),
            },
            Interruption::Back { .. } => {
                self.tries.backed = self.dialog_now.clone();
                Action::Key {
                    key: crate::domain::Key::Back,
                }
            }
            Interruption::Keyboard if before_action => Action::Key {
                key: crate::domain::Key::Back,
            },
            Interruption::Keyboard => return None,
        };
        Some(self.dismissing(action, then))
    }

    /// Emits `action` as a dismissal, counted for the step and the run, then goes on with
    /// `then`.
    fn dismissing(&mut self, action: Action, then: Pending) -> Pass {
        self.tries.dismissals += 1;
        self.dismissed += 1;
        self.pending = then;
        Pass::Emit(action, ReplayRole::Dismiss, None)
    }

    /// Runs the step's action on `found` (None: an action without a target).
    fn act(&mut self, found: Option<Found>, screen: &Screen) -> Result<Pass, StepError> {
        self.tries.expect_before = self.has_expect() && self.effect_behind_dialog(screen);
        self.tries.dialog_before = self.dialog_now.clone();
        self.tries.before = Some(screen.clone());
        self.tries.overflow = Overflow::Done;
        self.tries.acted_words = found
            .as_ref()
            .filter(|f| f.fallback != Fallback::Coordinate)
            .map(|f| confirm::target_words(screen, f.node))
            .unwrap_or_default();
        let selector = found
            .as_ref()
            .filter(|f| f.fallback != Fallback::Coordinate)
            .map(|f| f.selector.clone());
        let drag = found
            .as_ref()
            .filter(|_| self.script.steps[self.at].is_element_drag())
            .and_then(|f| self.drag_on(screen, f.node));
        let action = match (&selector, drag) {
            (Some(_), Some(drag)) => drag,
            (Some(s), None) => self.touch_at(self.build(s)?, screen, found.as_ref()),
            (None, _) => self.script.steps[self.at]
                .to_action(None, &self.vars)
                .map_err(|e| err("action_failed", e.to_string(), None))?,
        };
        let store = found
            .as_ref()
            .filter(|f| f.fallback != Fallback::Coordinate)
            .map(|f| find::text_of(screen, f.node));
        if let Some((sel, _)) = &self.tries.healed
            && selector.as_deref() == Some(sel.as_str())
        {
            self.healed
                .insert(self.at, self.tries.healed.clone().unwrap_or_default());
            self.tries.model_acted = true;
        }
        let aimed = selector.is_some();
        self.tries.absorbable = (!aimed
            && matches!(
                interrupt::interruption(screen, self.app_dialogs_now(), &self.caused),
                Some(Interruption::Tap { .. } | Interruption::Back { .. })
            ))
        .then(|| self.dialog_now.clone())
        .flatten()
        .map(|sig| (sig, interrupt::beneath(screen)));
        self.pending = Pending::Acted { store };
        Ok(Pass::Emit(action, ReplayRole::Action, found))
    }

    /// A touch with `parameters.at` lands at that point of the element found (a slider's
    /// level), as a point of the screen; any other action is left as built.
    fn touch_at(&self, action: Action, screen: &Screen, found: Option<&Found>) -> Action {
        use crate::domain::action::TargetField;
        let (Some(at), Some(f)) = (self.script.steps[self.at].parameters.at, found) else {
            return action;
        };
        let b = screen.tree.nodes[f.node].bounds;
        let size = screen.tree.screen_bounds();
        let (w, h) = (size.width().max(1) as f64, size.height().max(1) as f64);
        let x = (b.left as f64 + at[0] * b.width() as f64) / w;
        let y = (b.top as f64 + at[1] * b.height() as f64) / h;
        let Ok(p) = crate::domain::NormPoint::new(x.clamp(0.0, 1.0), y.clamp(0.0, 1.0)) else {
            return action;
        };
        let point = TargetField(crate::domain::Target::Coordinate(p));
        match action {
            Action::Tap { .. } => Action::Tap { target: point },
            Action::LongPress { duration_ms, .. } => Action::LongPress {
                target: point,
                duration_ms,
            },
            Action::DoubleTap { .. } => Action::DoubleTap { target: point },
            other => other,
        }
    }

    /// A drag step's points (fractions of its element's bounds) as a swipe between screen
    /// points where the element is now.
    fn drag_on(&self, screen: &Screen, node: usize) -> Option<Action> {
        let p = &self.script.steps[self.at].parameters;
        let (start, end) = (p.start?, p.end?);
        let b = screen.tree.nodes[node].bounds;
        let size = screen.tree.screen_bounds();
        let (w, h) = (size.width().max(1) as f64, size.height().max(1) as f64);
        let at = |q: [f64; 2]| {
            let x = b.left as f64 + q[0] * b.width() as f64;
            let y = b.top as f64 + q[1] * b.height() as f64;
            crate::domain::NormPoint::new((x / w).clamp(0.0, 1.0), (y / h).clamp(0.0, 1.0)).ok()
        };
        Some(Action::Swipe {
            path: crate::domain::action::SwipePath::Points {
                start: at(start)?,
                end: at(end)?,
            },
            duration_ms: p.duration_ms,
        })
    }

    /// The step's action aimed at `selector`, whose variables are already substituted
    /// (escaped here, so a value holding `${` is not read twice).
    fn build(&self, selector: &str) -> Result<Action, StepError> {
        let mut step = self.script.steps[self.at].clone();
        step.selector = Some(selector.replace("${", "$${"));
        step.to_action(step.selector.as_deref(), &self.vars)
            .map_err(|e| err("action_failed", e.to_string(), Some(selector.to_string())))
    }

    /// Reads the user's answer to a failed step: retry, skip, or (anything else) abort.
    fn answered(&mut self, ctx: &AgentContext) -> Result<Pass, StepError> {
        let answer = ctx.history.notes().last().and_then(|n| match n {
            crate::agent::context::Note::UserAnswer { answer, .. } => {
                Some(answer.trim().to_lowercase())
            }
            _ => None,
        });
        match answer.as_deref() {
            Some("retry") => {
                self.tries = Tries {
                    asked: true,
                    acted: self.tries.acted,
                    expect_before: self.tries.expect_before,
                    held_at_start: self.tries.held_at_start,
                    model_acted: self.tries.model_acted,
                    ..Tries::default()
                };
                Ok(Pass::Again)
            }
            Some("skip") => {
                self.done(false);
                Ok(Pass::Again)
            }
            _ => Ok(Pass::Finish(
                false,
                format!(
                    "script step {} abandoned: the user answered {:?}",
                    self.at + 1,
                    answer.unwrap_or_default()
                ),
                None,
            )),
        }
    }

    /// A step failed: AI in the middle, the user, or the end of the task.
    async fn failed(
        &mut self,
        meter: &mut Meter<'_>,
        ctx: &AgentContext,
        e: StepError,
    ) -> Result<Pass, AgentError> {
        let Some(aitm) = self.aitm.clone() else {
            return Ok(Pass::Finish(false, self.describe_failure(&e), None));
        };
        // An unusable answer (not a RecoveryAction, or low confidence) is a failed attempt
        // and changes nothing: the model is asked again, never the step retried as if it
        // had been rescued.
        let answer = loop {
            if self.tries.recoveries >= self.script.max_recovery_attempts {
                break None;
            }
            self.tries.recoveries += 1;
            match aitm.ask(meter, ctx, &self.script, self.at, &e).await {
                Ok(a) if a.confidence != Confidence::Low => break Some(a),
                Ok(_) | Err(AgentError::Recovery(_)) => continue,
                Err(other) => return Err(other),
            }
        };
        let Some(answer) = answer else {
            return Ok(self.exhausted(&e));
        };
        if e.error_type == "expect_failed" || self.tries.acted {
            return Ok(self.apply_after_action(answer, ctx, e.selector));
        }
        Ok(self.apply(answer, ctx))
    }

    /// Recovery attempts are used up: ask the user once, then end the task.
    fn exhausted(&mut self, e: &StepError) -> Pass {
        if self.tries.asked {
            return Pass::Finish(false, self.describe_failure(e), None);
        }
        self.tries.asked = true;
        self.pending = Pending::Asked;
        let question = format!(
            "{} Recovery did not work. Reply retry, skip or abort.",
            self.describe_failure(e)
        );
        Pass::Emit(
            Action::AskUser {
                question,
                options: Some(vec!["retry".into(), "skip".into(), "abort".into()]),
            },
            ReplayRole::Recovery,
            None,
        )
    }

    /// A recovery for a step whose action already ran and whose `expect` failed. The
    /// answer never runs the step's action again (a second tap on "Delete" deletes a
    /// second alarm): a `modify_selector` names what the expect meant and, when it is on
    /// screen, the step is done (and its expect healed); an `execute_action` runs and
    /// the expect is checked again; the rest as for any failure.
    fn apply_after_action(
        &mut self,
        a: recover::RecoveryAction,
        ctx: &AgentContext,
        old: Option<String>,
    ) -> Pass {
        match a.action_type {
            RecoveryType::ModifySelector => {
                let screen = ctx.observation.tree.as_ref();
                // What a `gone` expect names must be absent; what `visible` names, there.
                let gone = self.script.steps[self.at].expect.as_ref().is_some_and(|e| {
                    e.visible.is_empty() && e.gone.iter().any(|g| Some(self.sub(g)) == old)
                });
                // And it must not have held before the step's action: then it cannot
                // say the step worked.
                let before = self.tries.before.as_ref();
                let new_now = |s: &String| {
                    screen.is_some_and(|sc| find::visible(sc, s) != gone)
                        && before.is_some_and(|b| find::present(b, s) == gone)
                };
                let Some(sel) = a.new_selector.filter(new_now) else {
                    return Pass::Again;
                };
                if let Some(old) = old {
                    self.healed_expects.insert(self.at, (old, sel));
                }
                self.done(true);
                Pass::Again
            }
            RecoveryType::ExecuteAction => match self.apply(a, ctx) {
                Pass::Emit(action, role, found) => {
                    self.pending = Pending::RecoveredAfterAction;
                    Pass::Emit(action, role, found)
                }
                other => other,
            },
            _ => self.apply(a, ctx),
        }
    }

    fn apply(&mut self, a: recover::RecoveryAction, ctx: &AgentContext) -> Pass {
        let screen = ctx.observation.tree.clone();
        match a.action_type {
            RecoveryType::ModifySelector => {
                let Some(sel) = a.new_selector.filter(|s| {
                    screen
                        .as_ref()
                        .is_some_and(|sc| find::unique(sc, s).is_some())
                }) else {
                    return Pass::Again;
                };
                self.tries.healed = Some((sel, a.reason));
                self.pending = Pending::Fresh;
                Pass::Again
            }
            RecoveryType::ExecuteAction => {
                match a.action.as_ref().map(|v| ActionParser::new().parse(v)) {
                    Some(Ok(action)) if !action.is_terminal() => {
                        self.tries.model_acted = true;
                        if !self.tries.acted
                            && let Some(sc) = &screen
                        {
                            self.tries.expect_before =
                                self.has_expect() && self.effect_behind_dialog(sc);
                        }
                        self.pending = Pending::Recovered;
                        Pass::Emit(action, ReplayRole::Recovery, None)
                    }
                    _ => Pass::Again,
                }
            }
            RecoveryType::SkipStep => {
                self.done(false);
                Pass::Again
            }
            RecoveryType::Abort => Pass::Finish(
                false,
                format!(
                    "recovery gave up on script step {}: {}",
                    self.at + 1,
                    a.reason
                ),
                None,
            ),
            RecoveryType::AskUser => {
                self.pending = Pending::Asked;
                self.tries.asked = true;
                let q = a.question.unwrap_or(a.reason);
                Pass::Emit(
                    Action::AskUser {
                        question: format!("{q} (reply retry, skip or abort)"),
                        options: Some(vec!["retry".into(), "skip".into(), "abort".into()]),
                    },
                    ReplayRole::Recovery,
                    None,
                )
            }
        }
    }

    /// The finish message of a run that went through every step: how many steps ended
    /// without their effect checked, and which.
    /// Every step ran: complete, unless a dialog the flow's own actions brought up is
    /// still open (a new "Delete note?" after the last tap): then the flow's effect is
    /// pending, and saying "complete" would be a result nobody verified.
    fn finish(&self, ctx: &AgentContext) -> Pass {
        let open = ctx
            .observation
            .tree
            .as_ref()
            .and_then(|s| interrupt::signature(s));
        match open.filter(|d| self.caused.contains(d)) {
            Some(d) => Pass::Finish(
                false,
                format!(
                    "script steps all ran, but a dialog they brought up is still open ({}); the flow's effect is not confirmed: record the dialog's step, or answer it in the script",
                    d.replace('|', " · ")
                ),
                None,
            ),
            None => Pass::Finish(true, self.complete_message(), self.outputs()),
        }
    }

    fn complete_message(&self) -> String {
        let n = self.script.steps.len();
        if self.unverified.is_empty() {
            return format!("script complete: {n} steps, all verified");
        }
        let which: Vec<String> = self
            .unverified
            .iter()
            .map(|i| (i + 1).to_string())
            .collect();
        format!(
            "script complete: {n} steps, {} unverified (steps {}: no expect checked their effect)",
            self.unverified.len(),
            which.join(", ")
        )
    }

    fn describe_failure(&self, e: &StepError) -> String {
        let step = &self.script.steps[self.at];
        let what = step.description.clone().unwrap_or_else(|| {
            let target = step
                .custom
                .as_ref()
                .map(|c| &c.name)
                .or(step.selector.as_ref());
            format!(
                "{}{}",
                step.action.name(),
                target.map(|s| format!(" {s}")).unwrap_or_default()
            )
        });
        format!(
            "script step {} ({what}) failed: {}: {}",
            self.at + 1,
            e.error_type,
            e.message
        )
    }

    /// The outputs as a JSON object, the finish answer.
    fn outputs(&self) -> Option<String> {
        if self.script.outputs.is_empty() {
            return None;
        }
        let m: serde_json::Map<String, Value> = self
            .script
            .outputs
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    self.vars.get(k).map_or(Value::Null, |v| json!(v)),
                )
            })
            .collect();
        Some(Value::Object(m).to_string())
    }

    fn info(
        &self,
        role: ReplayRole,
        found: Option<&Found>,
        recovery: Option<RecoveryType>,
    ) -> ReplayInfo {
        let healed = found.is_some_and(|f| {
            self.tries
                .healed
                .as_ref()
                .is_some_and(|(s, _)| *s == f.selector)
        });
        ReplayInfo {
            index: self.at.min(self.script.steps.len().saturating_sub(1)) as u32,
            role,
            selector: found.map(|f| f.selector.clone()).filter(|s| !s.is_empty()),
            fallback: if healed {
                Fallback::Healed
            } else {
                found.map_or(Fallback::None, |f| f.fallback)
            },
            interruptions_dismissed: self.dismissed,
            recovery,
            matched: found.and_then(|f| f.matched.clone()),
        }
    }
}

fn err(
    error_type: &'static str,
    message: impl Into<String>,
    selector: Option<String>,
) -> StepError {
    StepError {
        error_type,
        message: message.into(),
        selector,
    }
}

#[async_trait]
impl Agent for ScriptAgent {
    /// The values of the script's secret inputs.
    fn secrets(&self) -> Vec<String> {
        let secret = self.script.inputs.iter().filter(|(_, i)| i.secret);
        secret
            .filter_map(|(name, _)| self.vars.get(name))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    }

    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        let prices = self.prices.clone();
        // A script's only model calls are AI-in-the-middle recoveries.
        let mut meter = Meter::for_role(&prices, crate::domain::ModelRole::Recovery);
        self.load_strings(ctx).await;
        for _ in 0..64 {
            let pass = if self.at >= self.script.steps.len() {
                self.finish(ctx)
            } else if let Some(screen) = ctx.observation.tree.clone() {
                self.dialog_now = interrupt::signature(&screen);
                let r = match self.after(ctx, &screen) {
                    Some(r) => r,
                    None => self.attempt(&screen),
                };
                match r {
                    Ok(p) => p,
                    Err(e) => self.failed(&mut meter, ctx, e).await?,
                }
            } else {
                let e = err("device_error", "the screen could not be read", None);
                self.failed(&mut meter, ctx, e).await?
            };
            let recovery = matches!(
                self.pending,
                Pending::Recovered | Pending::RecoveredAfterAction
            )
            .then_some(RecoveryType::ExecuteAction);
            let (action, info) = match pass {
                Pass::Again => continue,
                Pass::Emit(a, role, found) => {
                    let info = self.info(role, found.as_ref(), recovery);
                    (a, Some(info))
                }
                Pass::Finish(success, reason, answer) => (
                    Action::Finish {
                        success,
                        reason: Some(reason),
                        answer,
                    },
                    None,
                ),
            };
            let thinking = info.as_ref().map_or_else(String::new, |i| {
                format!(
                    "script step {}/{}: {:?}{}",
                    i.index + 1,
                    self.script.steps.len(),
                    i.role,
                    i.selector
                        .as_ref()
                        .map(|s| format!(" {s}"))
                        .unwrap_or_default()
                ) + &i
                    .matched
                    .as_ref()
                    .map(|m| {
                        format!(
                            " (matched on {}: score {:.2}, margin {:.2})",
                            m.agreed.join(", "),
                            m.score,
                            m.margin
                        )
                    })
                    .unwrap_or_default()
            });
            let raw = serde_json::to_string(&action).unwrap_or_default();
            let mut d = meter.decision(thinking, action, raw, 0);
            d.replay = info;
            return Ok(d);
        }
        Ok(Decision::local(Action::Finish {
            success: false,
            reason: Some(format!("script step {} made no progress", self.at + 1)),
            answer: None,
        }))
    }

    fn describe(&self) -> String {
        let ai = if self.aitm.is_some() { " +AITM" } else { "" };
        format!(
            "script \"{}\" ({} steps){ai}",
            self.script.name,
            self.script.steps.len()
        )
    }

    /// A script that names its `app` needs it installed; a run on a phone without it
    /// fails before step 1 (`app_not_installed`) instead of failing on a missing target.
    fn give_app_strings(&mut self, source: AppStringsSource) {
        self.strings = Some(source);
    }

    fn required_app(&self) -> Option<&str> {
        self.script.app.as_deref()
    }

    fn take_script(&mut self, finished_ok: bool, _reason: Option<&str>) -> Option<ProducedScript> {
        if !finished_ok || (self.healed.is_empty() && self.healed_expects.is_empty()) {
            return None;
        }
        let origin = self.origin?;
        let mut script = self.script.clone();
        for (i, (old, new)) in std::mem::take(&mut self.healed_expects) {
            if let Some(e) = script.steps[i].expect.as_mut() {
                for s in e.visible.iter_mut().chain(e.gone.iter_mut()) {
                    if *s == old {
                        *s = new.clone();
                    }
                }
            }
        }
        for (i, (sel, reason)) in std::mem::take(&mut self.healed) {
            let step = &mut script.steps[i];
            if let Some(old) = step.selector.replace(sel.clone()) {
                step.recovery_hints.push(RecoveryHint {
                    trigger: format!("element_not_found:{old}"),
                    hint: format!("healed to {sel}: {reason}"),
                });
                step.alternative_selectors
                    .retain(|a| *a != sel && *a != old);
                step.alternative_selectors.insert(0, old);
            }
        }
        Some(ProducedScript {
            script,
            healed_from: Some(origin),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    /// The app's list, and on top a terms notice: a scroll view of text and one "Accept".
    fn terms_over_list() -> Screen {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/list" class="androidx.recyclerview.widget.RecyclerView" package="app" content-desc="" scrollable="true" bounds="[0,200][1080,2400]"><node index="0" text="Phone Case" resource-id="app:id/title" class="android.widget.TextView" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,200][1080,400]"/></node></node><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[100,500][980,1900]"><node index="0" text="Terms" resource-id="android:id/alertTitle" class="android.widget.TextView" package="app" content-desc="" bounds="[150,500][900,650]"/><node index="1" text="" resource-id="app:id/terms_scroll" class="android.widget.ScrollView" package="app" content-desc="" scrollable="true" bounds="[150,650][930,1650]"><node index="0" text="Long terms text" resource-id="" class="android.widget.TextView" package="app" content-desc="" bounds="[150,650][930,1650]"/></node><node index="2" text="Accept" resource-id="android:id/button1" class="android.widget.Button" package="app" content-desc="" clickable="true" enabled="true" bounds="[600,1700][900,1850]"/></node></hierarchy>"#;
        Screen::from_xml(xml, &ReprOptions::default()).unwrap()
    }

    fn agent() -> ScriptAgent {
        let script = Script::from_json(&json!({"name": "n", "goal": "g",
            "steps": [{"action": "scroll", "selector": "#list", "parameters": {"direction": "down"}}]}))
        .unwrap();
        ScriptAgent::new(script, None, Vars::default())
    }

    /// A notice stands between a scroll and the list behind it: closed with Back. A step
    /// that names something inside the notice (its own scroll view) is the notice's
    /// business: never closed for it.
    #[test]
    fn a_notice_is_closed_only_for_a_step_whose_target_is_not_in_it() {
        let screen = terms_over_list();
        assert!(screen.has_modal);
        let behind = ["#list".to_string()];
        assert!(matches!(
            agent().notice_in_the_way(&screen, &behind, true),
            Some(Pass::Emit(
                Action::Key {
                    key: crate::domain::Key::Back
                },
                ReplayRole::Dismiss,
                None
            ))
        ));
        let inside = ["#terms_scroll".to_string()];
        assert!(agent().notice_in_the_way(&screen, &inside, true).is_none());
    }
}
