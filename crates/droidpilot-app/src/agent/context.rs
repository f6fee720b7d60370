//! `AgentContext`: what an agent sees at one step. The instruction is always present
//! (pinned); the history is a sliding window of the last N steps plus the answers the
//! user gave (`ask_user`) and the results of MCP calls, which are kept longer because
//! the agent cannot observe them again on screen.

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::Duration;

use crate::domain::Action;
use crate::llm::ImageData;
use crate::screen::ScreenRepresentation;

/// Answers and tool results kept, newest last; older ones are dropped first.
pub const MAX_NOTES: usize = 16;

#[derive(Debug, Clone)]
pub struct AgentContext {
    pub instruction: String,
    pub observation: Observation,
    pub history: History,
    /// Guidance from a planner, shown right after the task in every prompt (pinned: it
    /// survives the history window).
    pub guidance: Option<String>,
    /// Facts about the phone beside the screen: app, keyboard, locale, installed apps.
    pub device: DeviceContext,
    /// What changed on screen since the previous step.
    pub diff: Option<ScreenDiff>,
    /// Show "Step n of max (t elapsed)" in the prompt (seeds 000 and 003).
    pub step_info: bool,
    /// Safety directives this screen calls for (`agent::safety`), said after the diff.
    pub safety: Vec<String>,
}

/// Facts about the phone the agent cannot read off the element map, gathered by the
/// runner (installed apps cached with a time-to-live).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceContext {
    pub app: Option<String>,
    pub activity: Option<String>,
    pub keyboard_visible: bool,
    /// BCP 47 (`en-US`), when the device reports it.
    pub locale: Option<String>,
    /// IANA (`Europe/Berlin`), when the device reports it.
    pub timezone: Option<String>,
    /// ISO 3166 (`de`), when the device reports it.
    pub country: Option<String>,
    /// `label (package)` for each launchable app; empty when unknown.
    pub installed_apps: std::sync::Arc<Vec<String>>,
    /// The packages of the screen's windows, top first (this step's, like the keyboard).
    pub windows: Vec<String>,
}

impl DeviceContext {
    /// The facts that last a whole task (locale, time zone, country, installed apps):
    /// they belong to a prompt's stable prefix. Empty when none is known.
    pub fn render_lasting(&self) -> String {
        paragraph(self.lasting_facts().collect())
    }

    /// The facts of this moment (foreground app, keyboard), the app left out when the
    /// prompt names it elsewhere (`app_named`). Empty when none is known.
    pub fn render_current(&self, app_named: bool) -> String {
        let facts: Vec<String> = self.current_facts(app_named).collect();
        if facts.is_empty() {
            return String::new();
        }
        format!("Now: {}.", facts.join("; "))
    }

    fn current_facts(&self, app_named: bool) -> impl Iterator<Item = String> + '_ {
        let app = match (app_named, &self.app, &self.activity) {
            (false, Some(a), act) => Some(match act {
                Some(act) => format!("foreground app: {a} / {act}"),
                None => format!("foreground app: {a}"),
            }),
            (true, app, Some(act)) => Some(format!("activity: {}", relative(app, act))),
            _ => None,
        };
        let keyboard = self
            .keyboard_visible
            .then(|| "the soft keyboard is open".to_string());
        let windows = (self.windows.len() > 1)
            .then(|| format!("windows (top first): {}", self.windows.join(", ")));
        app.into_iter().chain(keyboard).chain(windows)
    }

    fn lasting_facts(&self) -> impl Iterator<Item = String> + '_ {
        let place = [
            ("locale", &self.locale),
            ("time zone", &self.timezone),
            ("country", &self.country),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}")));
        let apps = (!self.installed_apps.is_empty())
            .then(|| format!("installed apps: {}", self.installed_apps.join(", ")));
        place.chain(apps)
    }
}

/// An activity as `dumpsys` writes it after its package: `.BrowseActivity` for
/// `com.example.BrowseActivity` in `com.example`.
fn relative<'a>(app: &Option<String>, activity: &'a str) -> &'a str {
    match app {
        Some(p) => match activity.strip_prefix(p.as_str()) {
            Some(rest) if rest.starts_with('.') => rest,
            _ => activity,
        },
        None => activity,
    }
}

fn paragraph(facts: Vec<String>) -> String {
    if facts.is_empty() {
        return String::new();
    }
    format!("Device: {}.", facts.join("; "))
}

/// Elements that appeared on and disappeared from the screen since the previous step,
/// by their labels (a person's words for them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScreenDiff {
    pub appeared: Vec<String>,
    pub gone: Vec<String>,
}

/// Labels listed in a diff, at most (the rest is counted).
const DIFF_LIMIT: usize = 12;

impl ScreenDiff {
    /// The diff between two screens' actionable elements (by type and label); None when
    /// nothing changed. What is gone is listed only when something stayed (a dialog
    /// closed, a row deleted), not when a new screen replaced the old one.
    pub fn between(
        before: &[crate::domain::ActionableElement],
        after: &[crate::domain::ActionableElement],
    ) -> Option<Self> {
        let key = |e: &crate::domain::ActionableElement| {
            if e.text.is_empty() {
                format!("{} {}", e.kind, e.selector)
            } else {
                format!("{} \"{}\"", e.kind, e.text)
            }
        };
        let a: Vec<String> = before.iter().map(key).collect();
        let b: Vec<String> = after.iter().map(key).collect();
        let appeared: Vec<String> = b.iter().filter(|k| !a.contains(k)).cloned().collect();
        let mut gone: Vec<String> = a.iter().filter(|k| !b.contains(k)).cloned().collect();
        if gone.len() == a.len() {
            // A new screen: listing all the old one's elements as gone says nothing.
            gone.clear();
        }
        (!appeared.is_empty() || !gone.is_empty()).then_some(Self { appeared, gone })
    }

    pub fn render(&self) -> String {
        let list = |v: &[String]| {
            let mut s = v
                .iter()
                .take(DIFF_LIMIT)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if v.len() > DIFF_LIMIT {
                let _ = write!(s, " and {} more", v.len() - DIFF_LIMIT);
            }
            s
        };
        let mut parts = Vec::new();
        if !self.appeared.is_empty() {
            parts.push(format!("appeared: {}", list(&self.appeared)));
        }
        if !self.gone.is_empty() {
            parts.push(format!("gone: {}", list(&self.gone)));
        }
        format!("Since the previous step: {}.", parts.join("; "))
    }
}

#[derive(Debug, Clone)]
pub struct Observation {
    pub screen: ScreenRepresentation,
    /// The parsed hierarchy the representation came from, for agents that resolve
    /// selectors themselves (the script agent); None when the dump failed.
    pub tree: Option<std::sync::Arc<crate::screen::Screen>>,
    /// PNG or JPEG; vision agents need it, the navigator adds it for vision models.
    pub screenshot: Option<ImageData>,
    /// Steps already taken (0 at the first decision).
    pub step_count: u32,
    pub max_steps: u32,
    pub elapsed: Duration,
}

/// One executed step as the agent will be reminded of it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    pub step: u32,
    pub thinking: String,
    pub action: Action,
    /// What happened: "screen changed", "no visible change", an error message…
    pub outcome: String,
    /// The step failed (its action failed after the runner's retries, or a finish was
    /// rejected).
    pub failed: bool,
}

impl StepRecord {
    /// The step as one short line, `3. key key="back"`: how every prompt lists the
    /// steps so far. The outcome follows an arrow when it is not the ordinary one (the
    /// screen changed): `4. tap element=2 → no visible change`.
    pub fn line(&self) -> String {
        let action = compact_action(&self.action);
        match self.outcome.as_str() {
            ORDINARY_OUTCOME => format!("{}. {action}", self.step),
            o => format!("{}. {action} → {o}", self.step),
        }
    }
}

/// The outcome of most steps, left out of their history line.
pub const ORDINARY_OUTCOME: &str = "screen changed";

#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// The runner's stuck detector: a diagnostic, or an escalation the planner is asked
    /// about before a person is (`escalated`).
    Stuck {
        step: u32,
        why: String,
        escalated: bool,
    },
    UserAnswer {
        step: u32,
        question: String,
        answer: String,
    },
    McpResult {
        step: u32,
        tool: String,
        result: String,
        is_error: bool,
    },
    /// The screen changed before `step` with no action of the agent's to explain it.
    ExternalChange { step: u32 },
    /// The phone dropped while step `step` was doing `action`; it came back, but the
    /// action may not have run (a scripted replay does it again).
    DeviceDropped { step: u32, action: Action },
    /// A person paused the task before `step`, did `actions` on the phone, and resumed.
    PersonActed {
        step: u32,
        by: String,
        actions: Vec<String>,
    },
}

#[derive(Debug, Clone)]
pub struct History {
    window: usize,
    steps: VecDeque<StepRecord>,
    notes: VecDeque<Note>,
    total_steps: u32,
}

impl History {
    /// Keeps the last `window` steps (at least 1).
    pub fn new(window: usize) -> Self {
        Self {
            window: window.max(1),
            steps: VecDeque::new(),
            notes: VecDeque::new(),
            total_steps: 0,
        }
    }

    pub fn push_step(&mut self, r: StepRecord) {
        self.total_steps += 1;
        self.steps.push_back(r);
        while self.steps.len() > self.window {
            self.steps.pop_front();
        }
    }

    pub fn push_note(&mut self, n: Note) {
        self.notes.push_back(n);
        while self.notes.len() > MAX_NOTES {
            self.notes.pop_front();
        }
    }

    pub fn steps(&self) -> impl Iterator<Item = &StepRecord> {
        self.steps.iter()
    }

    pub fn notes(&self) -> impl Iterator<Item = &Note> {
        self.notes.iter()
    }

    /// Steps that fell out of the window.
    pub fn dropped_steps(&self) -> u32 {
        self.total_steps - self.steps.len() as u32
    }

    /// The history as text for a prompt; empty when there is none.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if !self.notes.is_empty() {
            s.push_str("Answers and tool results:\n");
            for n in &self.notes {
                let _ = match n {
                    Note::Stuck {
                        step,
                        why,
                        escalated,
                    } => writeln!(
                        s,
                        "- step {step}: you seem stuck ({why}). {}",
                        if *escalated {
                            "A new plan was asked for; follow it, or try something different."
                        } else {
                            "Try something different: go back, scroll, or pick another element."
                        }
                    ),
                    Note::UserAnswer {
                        step,
                        question,
                        answer,
                    } => writeln!(
                        s,
                        "- step {step}: you asked \"{question}\"; the user answered \"{answer}\""
                    ),
                    Note::McpResult {
                        step,
                        tool,
                        result,
                        is_error,
                    } => writeln!(
                        s,
                        "- step {step}: {tool} {}: {result}",
                        if *is_error { "failed" } else { "returned" }
                    ),
                    Note::ExternalChange { step } => writeln!(
                        s,
                        "- before step {step}: the screen changed without an action of yours (someone may have touched the phone); read it again before you act."
                    ),
                    Note::DeviceDropped { step, action } => writeln!(
                        s,
                        "- step {step}: the phone disconnected during your {} and is back; it may not have run. Read the screen again and repeat it if needed.",
                        action.name()
                    ),
                    Note::PersonActed { step, by, actions } => writeln!(
                        s,
                        "- before step {step}: while you were paused, a person ({by}) did: {}. The screen may have changed; read it again before you act.",
                        actions.join("; ")
                    ),
                };
            }
        }
        if !self.steps.is_empty() {
            s.push_str("Previous steps");
            if self.dropped_steps() > 0 {
                let _ = write!(
                    s,
                    " (last {}; {} earlier omitted)",
                    self.steps.len(),
                    self.dropped_steps()
                );
            }
            s.push_str(":\n");
            for r in &self.steps {
                let _ = writeln!(s, "{}", r.line());
            }
        }
        s
    }
}

/// An action as one short line, its name then its fields as `key=value` (values as
/// JSON): `tap coordinate=[0.867,0.94]`, `launch_app package="com.android.settings"`.
/// Coordinates to three decimals (a thousandth of the screen is finer than a finger).
fn compact_action(action: &Action) -> String {
    fn round(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let r = (n.as_f64().unwrap_or_default() * 1000.0).round() / 1000.0;
                if let Some(x) = serde_json::Number::from_f64(r) {
                    *n = x;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(round),
            serde_json::Value::Object(m) => m.values_mut().for_each(round),
            _ => {}
        }
    }
    let Ok(serde_json::Value::Object(mut fields)) = serde_json::to_value(action) else {
        return action.name().into();
    };
    let name = match fields.remove("action") {
        Some(serde_json::Value::String(n)) => n,
        _ => action.name().into(),
    };
    let mut line = name;
    for (k, mut v) in fields {
        round(&mut v);
        let _ = write!(line, " {k}={v}");
    }
    line
}

impl Default for History {
    fn default() -> Self {
        Self::new(8)
    }
}

impl AgentContext {
    /// A context with nothing beside the instruction, observation and history.
    pub fn new(instruction: String, observation: Observation, history: History) -> Self {
        Self {
            instruction,
            observation,
            history,
            guidance: None,
            device: DeviceContext::default(),
            diff: None,
            step_info: true,
            safety: Vec::new(),
        }
    }

    /// The prompt's text before the screen, in the order a provider's prompt cache
    /// needs (it serves the longest prefix it has seen): first what stays the same for
    /// the whole task (the instruction, the planner's guidance, the device's lasting
    /// facts), then the history (one line more each step), then what is new at this
    /// step (the step counter and time, the foreground app and keyboard, the screen
    /// diff). Nothing that changes at every step comes before the history.
    pub fn prompt_text(&self) -> String {
        self.text(false)
    }

    /// `prompt_text` for a prompt that lists the screen's elements after it: the
    /// foreground app (the list's first line) and the elements that appeared (they are
    /// in the list) are not said twice; the activity, the keyboard and what is gone are.
    pub fn prompt_text_before_elements(&self) -> String {
        self.text(true)
    }

    fn text(&self, elements_follow: bool) -> String {
        let mut s = format!("Task: {}", self.instruction);
        if let Some(g) = &self.guidance {
            let _ = write!(s, "\n\n{}", g.trim_end());
            s.push('\n');
        }
        let lasting = self.device.render_lasting();
        if !lasting.is_empty() {
            let _ = write!(s, "\n{lasting}");
        }
        let h = self.history.render();
        if !h.is_empty() {
            s.push('\n');
            s.push_str(h.trim_end());
        }
        let o = &self.observation;
        if self.step_info {
            let _ = write!(
                s,
                "\nStep {} of {} ({:.0}s elapsed).",
                o.step_count + 1,
                o.max_steps,
                o.elapsed.as_secs_f64()
            );
        }
        let current = self.device.render_current(elements_follow);
        if !current.is_empty() {
            let _ = write!(s, "\n{current}");
        }
        if let Some(d) = &self.diff {
            let d = match elements_follow {
                true => ScreenDiff {
                    appeared: Vec::new(),
                    gone: d.gone.clone(),
                },
                false => d.clone(),
            };
            if !d.appeared.is_empty() || !d.gone.is_empty() {
                let _ = write!(s, "\n{}", d.render());
            }
        }
        for say in &self.safety {
            let _ = write!(s, "\nCareful: {say}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Key;

    #[test]
    fn window_keeps_last_steps_and_all_recent_notes() {
        let mut h = History::new(2);
        for i in 1..=4 {
            h.push_step(StepRecord {
                step: i,
                thinking: String::new(),
                action: Action::Key { key: Key::Back },
                outcome: format!("outcome {i}"),
                failed: false,
            });
        }
        h.push_note(Note::UserAnswer {
            step: 1,
            question: "Which account?".into(),
            answer: "work".into(),
        });
        let r = h.render();
        assert!(!r.contains("outcome 2"), "{r}");
        assert!(r.contains("3. key key=\"back\" → outcome 3"), "{r}");
        assert!(r.contains("last 2; 2 earlier omitted"), "{r}");
        assert!(r.contains("the user answered \"work\""), "{r}");
        for i in 0..40 {
            h.push_note(Note::McpResult {
                step: 5,
                tool: format!("t{i}"),
                result: "ok".into(),
                is_error: false,
            });
        }
        assert_eq!(h.notes().count(), MAX_NOTES);
    }

    /// A provider's prompt cache serves the longest prefix it has seen: everything up to
    /// the end of the history of one step must open the next step's text unchanged.
    #[test]
    fn the_text_up_to_the_history_opens_the_next_steps_text_unchanged() {
        let screen = crate::screen::ScreenRepresentation {
            app_package: Some("com.android.settings".into()),
            activity: None,
            has_modal: false,
            elements: "[0] Button \"OK\"".into(),
            summary: String::new(),
            actionable_elements: Vec::new(),
        };
        let at = |step: u32, history: &History, keyboard: bool| {
            let mut ctx = AgentContext::new(
                "Turn on Wi-Fi".into(),
                Observation {
                    screen: screen.clone(),
                    tree: None,
                    screenshot: None,
                    step_count: step - 1,
                    max_steps: 20,
                    elapsed: Duration::from_secs(7 * u64::from(step)),
                },
                history.clone(),
            );
            ctx.device = DeviceContext {
                app: Some(format!("com.example.app{step}")),
                keyboard_visible: keyboard,
                locale: Some("en-US".into()),
                installed_apps: std::sync::Arc::new(vec!["Settings (com.android.settings)".into()]),
                ..DeviceContext::default()
            };
            ctx.diff = Some(ScreenDiff {
                appeared: vec![format!("Button \"Step {step}\"")],
                gone: Vec::new(),
            });
            ctx.prompt_text()
        };
        // The stable part of a step's text: up to the end of its history (of the device's
        // lasting facts before there is one).
        let stable = |text: &str, h: &History| {
            let last = h.render();
            let last = last
                .trim_end()
                .lines()
                .last()
                .unwrap_or("Settings (com.android.settings).");
            text.find(last).expect("the history in the text") + last.len()
        };
        let mut h = History::new(8);
        let mut previous = (at(1, &h, false), h.clone());
        for step in 2..=4 {
            h.push_step(StepRecord {
                step: step - 1,
                thinking: String::new(),
                action: Action::Key { key: Key::Back },
                outcome: "screen changed".into(),
                failed: false,
            });
            let text = at(step, &h, step % 2 == 0);
            let (before, before_h) = &previous;
            let end = stable(before, before_h);
            assert!(
                text.starts_with(&before[..end]),
                "step {step} does not open with step {}'s stable part:\n{before}\n---\n{text}",
                step - 1
            );
            previous = (text, h.clone());
        }
    }

    /// A prompt that lists the elements after the text does not say the foreground app
    /// or the appeared elements twice; one without the list (a vision agent's) says them.
    /// A step's action is one short line, its coordinates to three decimals.
    #[test]
    fn what_the_element_list_says_is_not_said_again_and_history_lines_are_short() {
        let mut h = History::new(8);
        h.push_step(StepRecord {
            step: 1,
            thinking: "long thoughts that stay out".into(),
            action: crate::domain::ActionParser::new()
                .parse(
                    &serde_json::json!({"action": "tap", "coordinate": [0.8666666666666667, 0.94]}),
                )
                .unwrap(),
            outcome: "screen changed".into(),
            failed: false,
        });
        let screen = crate::screen::ScreenRepresentation {
            app_package: Some("com.android.settings".into()),
            activity: None,
            has_modal: false,
            elements: "com.android.settings\n[0] Button \"OK\"".into(),
            summary: String::new(),
            actionable_elements: Vec::new(),
        };
        let obs = Observation {
            screen,
            tree: None,
            screenshot: None,
            step_count: 1,
            max_steps: 20,
            elapsed: Duration::from_secs(3),
        };
        let mut ctx = AgentContext::new("Open Wi-Fi".into(), obs, h);
        ctx.device.app = Some("com.android.settings".into());
        ctx.device.activity = Some(".Settings".into());
        ctx.diff = Some(ScreenDiff {
            appeared: vec!["Button \"OK\"".into()],
            gone: vec!["TextView \"Home\"".into()],
        });
        let nav = ctx.prompt_text_before_elements();
        assert!(!nav.contains("com.android.settings"), "{nav}");
        assert!(
            !nav.contains("appeared") && nav.contains("gone: TextView \"Home\""),
            "{nav}"
        );
        assert!(nav.contains("activity: .Settings"), "{nav}");
        assert!(nav.contains("1. tap coordinate=[0.867,0.94]\n"), "{nav}");
        assert!(!nav.contains("long thoughts"), "{nav}");
        let vision = ctx.prompt_text();
        assert!(
            vision.contains("foreground app: com.android.settings / .Settings"),
            "{vision}"
        );
        assert!(vision.contains("appeared: Button \"OK\""), "{vision}");
    }

    /// What is gone is said when part of the screen stayed (a dialog closed over a
    /// page), not when a new screen replaced the old one (every label of it gone says
    /// nothing the new screen does not); the activity is written after its package.
    #[test]
    fn gone_is_listed_only_when_part_of_the_screen_stayed() {
        let el = |kind: &str, text: &str| crate::domain::ActionableElement {
            element_id: 0,
            selector: String::new(),
            alternative_selectors: Vec::new(),
            kind: kind.into(),
            text: text.into(),
            actions: Vec::new(),
            bounds: crate::domain::Bounds::new(0, 0, 10, 10),
            source: Default::default(),
        };
        let page = vec![el("Button", "Save"), el("Text", "Title")];
        let with_dialog = [page.clone(), vec![el("Button", "OK")]].concat();
        let closed = ScreenDiff::between(&with_dialog, &page).unwrap();
        assert_eq!(closed.gone, vec!["Button \"OK\"".to_string()]);
        let other = vec![el("Button", "Send")];
        let replaced = ScreenDiff::between(&page, &other).unwrap();
        assert!(replaced.gone.is_empty(), "{replaced:?}");
        assert_eq!(replaced.appeared, vec!["Button \"Send\"".to_string()]);
        let device = DeviceContext {
            app: Some("com.google.android.keep".into()),
            activity: Some("com.google.android.keep.activities.BrowseActivity".into()),
            ..DeviceContext::default()
        };
        assert_eq!(
            device.render_current(true),
            "Now: activity: .activities.BrowseActivity."
        );
    }
}
