//! Scored tasks for the virtual phone: an instruction, a difficulty, an initial state, a
//! success checker over `PhoneState`, and a reference solution.
//!
//! Reference solutions are plain `Action`s with normalized coordinates (for the default
//! 1080×2400 screen) or element-free actions (keys, typing, launch, wait), executed by
//! `run_reference` through the `Device` trait and `LinearTransform` only, so they mean
//! the same on any backend that shows the same screens.

use serde::Serialize;

use droidpilot_core::device::{Device, DeviceError};
use droidpilot_core::domain::action::{SwipePath, TargetField};
use droidpilot_core::domain::{
    Action, AppRef, CoordinateTransform, Direction, Key, LinearTransform, NormPoint, PixelPoint,
    ScreenSize, Target,
};

use super::SimDevice;

mod more;
#[cfg(test)]
pub(crate) mod solvable;
pub mod split;
use super::state::{AppId, PhoneState};

/// How many steps a person needs: 1–3, 4–10, more than 10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    Easy,
    Medium,
    Hard,
}

impl Difficulty {
    pub fn of_steps(n: usize) -> Difficulty {
        match n {
            0..=3 => Difficulty::Easy,
            4..=10 => Difficulty::Medium,
            _ => Difficulty::Hard,
        }
    }
}

/// One task. Functions rather than data so that checkers can say anything about state.
#[derive(Clone, Copy)]
pub struct SimTask {
    pub id: &'static str,
    pub app: AppId,
    pub instruction: &'static str,
    pub difficulty: Difficulty,
    setup: fn(&mut PhoneState),
    check: fn(&PhoneState) -> bool,
    solution: fn() -> Vec<Action>,
    /// What the user answers when the agent asks (`ask_user`): facts the instruction
    /// leaves out. Empty for tasks that need no one.
    pub facts: &'static [Fact],
    /// Other apps the task needs besides `app` (read in one, act in the other).
    pub also: &'static [AppId],
}

/// A fact only the user knows: an `ask_user` question that mentions one of `topic`'s
/// words (any case) gets `answer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fact {
    pub topic: &'static [&'static str],
    pub answer: &'static str,
}

/// The fields most tasks leave at their defaults (`..PLAIN`).
const PLAIN: SimTask = SimTask {
    id: "",
    app: AppId::Settings,
    instruction: "",
    difficulty: Difficulty::Easy,
    setup: nothing,
    check: never,
    solution: Vec::new,
    facts: &[],
    also: &[],
};

fn never(_: &PhoneState) -> bool {
    false
}

impl std::fmt::Debug for SimTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTask")
            .field("id", &self.id)
            .field("instruction", &self.instruction)
            .finish()
    }
}

impl SimTask {
    /// The phone's state when the task starts.
    pub fn initial_state(&self) -> PhoneState {
        let mut st = PhoneState::default();
        (self.setup)(&mut st);
        st
    }
    /// Whether the task is done in this state.
    pub fn check(&self, st: &PhoneState) -> bool {
        (self.check)(st)
    }
    /// A known-good action sequence.
    pub fn reference(&self) -> Vec<Action> {
        (self.solution)()
    }
    /// Whether the task needs a fact from the user (an `ask_user` question).
    pub fn needs_user(&self) -> bool {
        !self.facts.is_empty()
    }
    /// The user's answer to an `ask_user` question: the facts whose topic the question
    /// mentions (just the answer when one matches, `topic: answer` pairs when several
    /// do), every fact when none matches (a person would tell what they know), and a
    /// plain "nothing to add" for a task that needs no one.
    pub fn reply(&self, question: &str) -> String {
        let q = question.to_lowercase();
        let hit: Vec<&Fact> = self
            .facts
            .iter()
            .filter(|f| f.topic.iter().any(|w| q.contains(&w.to_lowercase())))
            .collect();
        let facts: Vec<&Fact> = match hit.len() {
            0 => self.facts.iter().collect(),
            _ => hit,
        };
        match facts.as_slice() {
            [] => "I have nothing to add; go on with what you know.".into(),
            [one] => one.answer.into(),
            many => many
                .iter()
                .map(|f| format!("{}: {}", f.topic[0], f.answer))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

const SIZE: ScreenSize = ScreenSize {
    width: 1080,
    height: 2400,
};

/// A tap at a pixel of the default screen, as a normalized action.
fn tap(x: i32, y: i32) -> Action {
    Action::Tap {
        target: TargetField(Target::Coordinate(norm(x, y))),
    }
}
fn long(x: i32, y: i32) -> Action {
    Action::LongPress {
        target: TargetField(Target::Coordinate(norm(x, y))),
        duration_ms: Some(800),
    }
}
fn swipe(x0: i32, y0: i32, x1: i32, y1: i32) -> Action {
    Action::Swipe {
        path: SwipePath::Points {
            start: norm(x0, y0),
            end: norm(x1, y1),
        },
        duration_ms: Some(400),
    }
}
fn norm(x: i32, y: i32) -> NormPoint {
    LinearTransform.to_normalized(PixelPoint { x, y }, SIZE)
}
fn typ(t: &str) -> Action {
    Action::Type {
        text: t.into(),
        target: None,
        clear_first: false,
    }
}
fn key(k: Key) -> Action {
    Action::Key { key: k }
}
fn launch(a: AppId) -> Action {
    Action::LaunchApp {
        app: AppRef::Package(a.package().into()),
    }
}
fn wait(ms: u64) -> Action {
    Action::Wait { ms }
}

fn nothing(_: &mut PhoneState) {}

// Where things are on the default 1080×2400 screen (see ui.rs and apps/ for the layout).
const BACK_ARROW: (i32, i32) = (84, 168);
const FAB: (i32, i32) = (936, 2256);
const TOOLBAR_ACTION: (i32, i32) = (984, 168);
/// Settings rows.
const WIFI: i32 = 352;
const BLUETOOTH: i32 = 552;
const AIRPLANE: i32 = 752;
const BRIGHTNESS: i32 = 1002;
const ABOUT: i32 = 1827;
const BUILD_NUMBER: i32 = 1152;
/// Settings > Accounts (the row below About phone) and its sign-in form.
const ACCOUNTS: i32 = 1997;
const ACCOUNT_EMAIL_FIELD: i32 = 527;
const ACCOUNT_PASSWORD_FIELD: i32 = 787;
const SIGN_IN: i32 = 1007;
/// Clock.
fn alarm_row(i: i32) -> i32 {
    252 + 208 * i + 104
}
const ALARM_SWITCH_X: i32 = 925;
const ALARM_DELETE_X: i32 = 700;
const HOUR_X: i32 = 310;
const MINUTE_X: i32 = 770;
const PICKER_INPUT_Y: i32 = 707;
const PICKER_NEXT_Y: i32 = 877;
const PICKER_PREV_Y: i32 = 537;
const ALARM_OK: (i32, i32) = (770, 1122);
/// Contacts.
fn contact_row(i: i32) -> i32 {
    422 + 168 * i + 84
}
const CONTACT_SEARCH: (i32, i32) = (540, 337);
const NAME_FIELD: (i32, i32) = (540, 427);
const PHONE_FIELD: (i32, i32) = (540, 687);
const SAVE: (i32, i32) = (912, 168);
/// Menus from a long press: two items, centred.
const MENU_FIRST: (i32, i32) = (540, 1125);
const MENU_SECOND: (i32, i32) = (540, 1275);
/// Messages.
fn thread_row(i: i32) -> i32 {
    252 + 198 * i + 99
}
const COMPOSE: (i32, i32) = (460, 2310);
/// The send button once the keyboard has pushed the compose bar up.
const SEND_ABOVE_KEYBOARD: (i32, i32) = (970, 1430);
const PICKER_FIRST: (i32, i32) = (540, 516);
/// Notes.
fn note_row(i: i32) -> i32 {
    252 + 240 * i + 120
}
const NOTE_TITLE: (i32, i32) = (540, 347);
const NOTE_BODY: (i32, i32) = (540, 700);
/// Browser.
const URL_BAR: (i32, i32) = (540, 168);
fn result_link(i: i32) -> i32 {
    392 + 260 * i + 130
}
/// Shop.
fn product_row(i: i32, scrolled: i32) -> i32 {
    252 + 220 * i + 110 - scrolled
}
const ADD_TO_CART: (i32, i32) = (540, 1427);
const CHECKOUT: (i32, i32) = (540, 2265);
const PLACE_ORDER: (i32, i32) = (540, 1087);
const ALLOW: (i32, i32) = (755, 1260);
const PAY_NOW: (i32, i32) = (755, 1315);
/// Launcher.
const ALL_APPS: (i32, i32) = (540, 2230);
const DRAWER_NOTES: (i32, i32) = (135, 764);
const DRAWER_SHOP: (i32, i32) = (675, 764);
const HOME_CLOCK: (i32, i32) = (945, 1550);

fn t(p: (i32, i32)) -> Action {
    tap(p.0, p.1)
}
fn typ_clear(s: &str) -> Action {
    Action::Type {
        text: s.into(),
        target: None,
        clear_first: true,
    }
}
/// Opens the shop past its first-run interruptions: deny notifications, let the promo
/// appear, dismiss it.
fn shop_open() -> Vec<Action> {
    vec![
        launch(AppId::Shop),
        key(Key::Back),
        wait(2_500),
        key(Key::Back),
    ]
}

fn has_alarm(s: &PhoneState, h: u8, m: u8) -> bool {
    s.alarms
        .iter()
        .any(|a| a.hour == h && a.minute == m && a.enabled)
}
fn contact<'a>(s: &'a PhoneState, name: &str) -> Option<&'a super::state::Contact> {
    s.contacts.iter().find(|c| c.name == name)
}
fn digits(p: &str) -> String {
    p.chars().filter(|c| c.is_ascii_digit()).collect()
}
fn sent(s: &PhoneState, to: &str, text: &str) -> bool {
    s.threads.iter().any(|t| {
        t.contact == to
            && t.messages
                .iter()
                .any(|m| m.outgoing && m.text.trim() == text)
    })
}
fn only_sent(s: &PhoneState, to: &str, text: &str) -> bool {
    sent(s, to, text)
        && s.threads.iter().filter(|t| t.contact != to).all(|t| {
            !t.messages
                .iter()
                .any(|m| m.outgoing && m.text.trim() == text)
        })
}
fn ordered(s: &PhoneState, items: &[u32]) -> bool {
    s.shop.orders.iter().any(|o| {
        let mut got: Vec<u32> = o.items.iter().map(|(p, _)| *p).collect();
        got.sort();
        let mut want = items.to_vec();
        want.sort();
        got == want && o.items.iter().all(|(_, q)| *q == 1)
    })
}
fn visited(s: &PhoneState, f: impl Fn(&str) -> bool) -> bool {
    s.browser.history.iter().any(|u| f(u))
}

pub fn tasks() -> Vec<SimTask> {
    use Difficulty::*;
    let mut all = vec![
        // --- Settings ---
        SimTask {
            id: "settings.bluetooth_on",
            app: AppId::Settings,
            instruction: "Turn on Bluetooth",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.settings.bluetooth,
            solution: || vec![launch(AppId::Settings), tap(540, BLUETOOTH)],
            ..PLAIN
        },
        SimTask {
            id: "settings.wifi_off",
            app: AppId::Settings,
            instruction: "Turn off Wi-Fi",
            difficulty: Easy,
            setup: nothing,
            check: |s| !s.settings.wifi && !s.settings.airplane,
            solution: || vec![launch(AppId::Settings), tap(ALARM_SWITCH_X, WIFI)],
            ..PLAIN
        },
        SimTask {
            id: "settings.airplane_keep_bluetooth",
            app: AppId::Settings,
            instruction: "Turn on airplane mode, but keep Bluetooth on",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.settings.airplane && s.settings.bluetooth,
            solution: || {
                vec![
                    launch(AppId::Settings),
                    tap(540, AIRPLANE),
                    tap(540, BLUETOOTH),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "settings.airplane_off",
            app: AppId::Settings,
            instruction: "Turn off airplane mode and turn Wi-Fi back on",
            difficulty: Easy,
            setup: |s| {
                s.settings.airplane = true;
                s.settings.wifi = false;
            },
            check: |s| !s.settings.airplane && s.settings.wifi,
            solution: || vec![launch(AppId::Settings), tap(540, AIRPLANE), tap(540, WIFI)],
            ..PLAIN
        },
        SimTask {
            id: "settings.brightness_max",
            app: AppId::Settings,
            instruction: "Set the screen brightness to maximum",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.settings.brightness >= 250,
            solution: || {
                vec![
                    launch(AppId::Settings),
                    swipe(540, BRIGHTNESS, 1075, BRIGHTNESS),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "settings.brightness_low",
            app: AppId::Settings,
            instruction: "Lower the screen brightness to about a quarter",
            difficulty: Easy,
            setup: nothing,
            check: |s| (48..=80).contains(&s.settings.brightness),
            solution: || vec![launch(AppId::Settings), tap(48 + 984 / 4, BRIGHTNESS)],
            ..PLAIN
        },
        SimTask {
            id: "settings.sign_in",
            app: AppId::Settings,
            instruction: "In Settings > Accounts, sign in as alex@example.com with the password correct-horse-42",
            difficulty: Medium,
            setup: nothing,
            check: |s| s.settings.account.as_deref() == Some(super::apps::settings::ACCOUNT_EMAIL),
            solution: || {
                vec![
                    launch(AppId::Settings),
                    tap(540, ACCOUNTS),
                    tap(540, ACCOUNT_EMAIL_FIELD),
                    typ("alex@example.com"),
                    tap(540, ACCOUNT_PASSWORD_FIELD),
                    typ(super::apps::settings::ACCOUNT_PASSWORD),
                    tap(540, SIGN_IN),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "settings.developer_then_wifi_off",
            app: AppId::Settings,
            instruction: "Enable developer options (tap the build number), then turn off Wi-Fi",
            difficulty: Hard,
            setup: nothing,
            check: |s| s.settings.developer_options && !s.settings.wifi,
            solution: || {
                let mut v = vec![launch(AppId::Settings), tap(540, ABOUT)];
                v.extend(std::iter::repeat_n(tap(540, BUILD_NUMBER), 7));
                v.extend([t(BACK_ARROW), tap(540, WIFI)]);
                v
            },
            ..PLAIN
        },
        // --- Clock ---
        SimTask {
            id: "clock.alarm_0730",
            app: AppId::Clock,
            instruction: "Set an alarm for 7:30 AM",
            difficulty: Medium,
            setup: nothing,
            check: |s| has_alarm(s, 7, 30),
            solution: || {
                vec![
                    launch(AppId::Clock),
                    t(FAB),
                    tap(HOUR_X, PICKER_INPUT_Y),
                    typ_clear("07"),
                    tap(MINUTE_X, PICKER_INPUT_Y),
                    typ_clear("30"),
                    t(ALARM_OK),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "clock.alarm_0900_picker",
            app: AppId::Clock,
            instruction: "Add an alarm at 9:00 AM",
            difficulty: Medium,
            setup: nothing,
            check: |s| has_alarm(s, 9, 0),
            solution: || {
                vec![
                    launch(AppId::Clock),
                    t(FAB),
                    tap(HOUR_X, PICKER_NEXT_Y),
                    t(ALARM_OK),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "clock.alarm_0745_swipe",
            app: AppId::Clock,
            instruction: "Add an alarm at 7:45 AM",
            difficulty: Medium,
            setup: nothing,
            check: |s| has_alarm(s, 7, 45),
            solution: || {
                vec![
                    launch(AppId::Clock),
                    t(FAB),
                    tap(HOUR_X, PICKER_PREV_Y),
                    // The minute wheel moves one value per 170 px dragged; dragging down
                    // shows earlier values, so three 5-row drags take 00 back to 45.
                    swipe(
                        MINUTE_X,
                        PICKER_INPUT_Y - 200,
                        MINUTE_X,
                        PICKER_INPUT_Y - 200 + 15 * 170 / 3,
                    ),
                    swipe(
                        MINUTE_X,
                        PICKER_INPUT_Y - 200,
                        MINUTE_X,
                        PICKER_INPUT_Y - 200 + 15 * 170 / 3,
                    ),
                    swipe(
                        MINUTE_X,
                        PICKER_INPUT_Y - 200,
                        MINUTE_X,
                        PICKER_INPUT_Y - 200 + 15 * 170 / 3,
                    ),
                    t(ALARM_OK),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "clock.disable_0815",
            app: AppId::Clock,
            instruction: "Turn off the 8:15 AM alarm",
            difficulty: Easy,
            setup: nothing,
            check: |s| {
                s.alarms
                    .iter()
                    .any(|a| a.hour == 8 && a.minute == 15 && !a.enabled)
                    && s.alarms.len() == 2
            },
            solution: || vec![launch(AppId::Clock), tap(ALARM_SWITCH_X, alarm_row(1))],
            ..PLAIN
        },
        SimTask {
            id: "clock.delete_0600",
            app: AppId::Clock,
            instruction: "Delete the 6:00 AM alarm",
            difficulty: Easy,
            setup: nothing,
            check: |s| {
                !s.alarms.iter().any(|a| a.hour == 6 && a.minute == 0)
                    && s.alarms.iter().any(|a| a.hour == 8 && a.minute == 15)
            },
            solution: || vec![launch(AppId::Clock), tap(ALARM_DELETE_X, alarm_row(0))],
            ..PLAIN
        },
        SimTask {
            id: "clock.delete_via_menu",
            app: AppId::Clock,
            instruction: "Delete the 8:15 AM alarm using its long-press menu",
            difficulty: Easy,
            setup: nothing,
            check: |s| {
                !s.alarms.iter().any(|a| a.hour == 8 && a.minute == 15) && s.alarms.len() == 1
            },
            solution: || vec![launch(AppId::Clock), long(300, alarm_row(1)), t(MENU_FIRST)],
            ..PLAIN
        },
        SimTask {
            id: "clock.two_alarms",
            app: AppId::Clock,
            instruction: "Set alarms for 6:30 AM and 10:05 PM, and turn off the 8:15 AM alarm",
            difficulty: Hard,
            setup: nothing,
            check: |s| {
                has_alarm(s, 6, 30)
                    && has_alarm(s, 22, 5)
                    && s.alarms
                        .iter()
                        .any(|a| a.hour == 8 && a.minute == 15 && !a.enabled)
            },
            solution: || {
                vec![
                    launch(AppId::Clock),
                    tap(ALARM_SWITCH_X, alarm_row(1)),
                    t(FAB),
                    tap(HOUR_X, PICKER_INPUT_Y),
                    typ_clear("6"),
                    tap(MINUTE_X, PICKER_INPUT_Y),
                    typ_clear("30"),
                    t(ALARM_OK),
                    t(FAB),
                    tap(HOUR_X, PICKER_INPUT_Y),
                    typ_clear("22"),
                    tap(MINUTE_X, PICKER_INPUT_Y),
                    typ_clear("05"),
                    t(ALARM_OK),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "clock.open_from_home",
            app: AppId::Clock,
            instruction: "Open the Clock app",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.fg == super::state::Fg::App(AppId::Clock),
            solution: || vec![t(HOME_CLOCK)],
            ..PLAIN
        },
        // --- Contacts ---
        SimTask {
            id: "contacts.add_ada",
            app: AppId::Contacts,
            instruction: "Add contact Ada Lovelace, +44 20 7946 0018",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                contact(s, "Ada Lovelace").is_some_and(|c| digits(&c.phone) == "442079460018")
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Ada Lovelace"),
                    t(PHONE_FIELD),
                    typ("+44 20 7946 0018"),
                    t(SAVE),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "contacts.add_cjk",
            app: AppId::Contacts,
            instruction: "Add contact 李小龙 with phone +86 10 1234 5678",
            difficulty: Medium,
            setup: nothing,
            check: |s| contact(s, "李小龙").is_some_and(|c| digits(&c.phone) == "861012345678"),
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("李小龙"),
                    t(PHONE_FIELD),
                    typ("+86 10 1234 5678"),
                    t(SAVE),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "contacts.edit_bob",
            app: AppId::Contacts,
            instruction: "Change Bob Smith's phone number to +1 555 0199",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                contact(s, "Bob Smith").is_some_and(|c| digits(&c.phone) == "15550199")
                    && s.contacts.len() == 16
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    tap(540, contact_row(2)),
                    t(TOOLBAR_ACTION),
                    t(PHONE_FIELD),
                    typ_clear("+1 555 0199"),
                    t(SAVE),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "contacts.delete_mallory",
            app: AppId::Contacts,
            instruction: "Delete the contact Mallory Knox",
            difficulty: Medium,
            setup: nothing,
            check: |s| contact(s, "Mallory Knox").is_none() && s.contacts.len() == 15,
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(CONTACT_SEARCH),
                    typ("mallory"),
                    key(Key::Back),
                    long(540, contact_row(0)),
                    t(MENU_SECOND),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "contacts.rename_judy",
            app: AppId::Contacts,
            instruction: "Rename the contact Judy Garland to Judy Hopps",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                contact(s, "Judy Hopps").is_some_and(|c| c.phone == "+1 555 0110")
                    && contact(s, "Judy Garland").is_none()
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(CONTACT_SEARCH),
                    typ("judy"),
                    key(Key::Back),
                    tap(540, contact_row(0)),
                    t(TOOLBAR_ACTION),
                    t(NAME_FIELD),
                    typ_clear("Judy Hopps"),
                    t(SAVE),
                ]
            },
            ..PLAIN
        },
        // --- Messages ---
        SimTask {
            id: "messages.running_late_bob",
            app: AppId::Messages,
            instruction: "Send 'running late' to Bob",
            difficulty: Medium,
            setup: nothing,
            check: |s| only_sent(s, "Bob Smith", "running late"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    tap(540, thread_row(1)),
                    t(COMPOSE),
                    typ("running late"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "messages.reply_alice_emoji",
            app: AppId::Messages,
            instruction: "Reply 'See you there 👍' to Alice",
            difficulty: Medium,
            setup: nothing,
            check: |s| only_sent(s, "Alice Martin", "See you there 👍"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    tap(540, thread_row(0)),
                    t(COMPOSE),
                    typ("See you there 👍"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "messages.new_chat_carol",
            app: AppId::Messages,
            instruction: "Start a new conversation with Carol White and send 'Happy birthday!'",
            difficulty: Medium,
            setup: nothing,
            check: |s| only_sent(s, "Carol White", "Happy birthday!"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    t(FAB),
                    typ("Carol"),
                    t(PICKER_FIRST),
                    t(COMPOSE),
                    typ("Happy birthday!"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "messages.to_number",
            app: AppId::Messages,
            instruction: "Text 'Is this the plumber?' to +1 555 0142",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                s.threads.iter().any(|t| {
                    digits(&t.contact) == "15550142"
                        && t.messages
                            .iter()
                            .any(|m| m.outgoing && m.text == "Is this the plumber?")
                })
            },
            solution: || {
                vec![
                    launch(AppId::Messages),
                    t(FAB),
                    typ("+1 555 0142"),
                    t(PICKER_FIRST),
                    t(COMPOSE),
                    typ("Is this the plumber?"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "messages.arabic_eve",
            app: AppId::Messages,
            instruction: "Send 'مرحبا يا صديقي' to Eve Davis",
            difficulty: Medium,
            setup: nothing,
            check: |s| only_sent(s, "Eve Davis", "مرحبا يا صديقي"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    t(FAB),
                    typ("Eve"),
                    t(PICKER_FIRST),
                    t(COMPOSE),
                    typ("مرحبا يا صديقي"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            ..PLAIN
        },
        // --- Notes ---
        SimTask {
            id: "notes.create_buy_milk",
            app: AppId::Notes,
            instruction: "Create a note that says 'Buy oat milk'",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                s.notes.len() == 3
                    && s.notes.iter().any(|n| {
                        n.body.trim() == "Buy oat milk" || n.title.trim() == "Buy oat milk"
                    })
            },
            solution: || {
                vec![
                    launch(AppId::Notes),
                    t(FAB),
                    typ("Buy oat milk"),
                    key(Key::Back),
                    key(Key::Back),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "notes.create_titled",
            app: AppId::Notes,
            instruction: "Create a note titled 'Trip' with the text 'Pack passport'",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                s.notes
                    .iter()
                    .any(|n| n.title.trim() == "Trip" && n.body.trim() == "Pack passport")
            },
            solution: || {
                vec![
                    launch(AppId::Notes),
                    t(FAB),
                    typ("Pack passport"),
                    t(NOTE_TITLE),
                    typ("Trip"),
                    key(Key::Back),
                    t(BACK_ARROW),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "notes.edit_groceries",
            app: AppId::Notes,
            instruction: "Add butter to the Groceries note",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                s.notes.iter().any(|n| {
                    n.title == "Groceries"
                        && n.body.contains("Milk, eggs, bread")
                        && n.body.to_lowercase().contains("butter")
                })
            },
            solution: || {
                vec![
                    launch(AppId::Notes),
                    tap(540, note_row(0)),
                    t(NOTE_BODY),
                    typ(", butter"),
                    key(Key::Back),
                    key(Key::Back),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "notes.delete_ideas",
            app: AppId::Notes,
            instruction: "Delete the note called Ideas",
            difficulty: Easy,
            setup: nothing,
            check: |s| {
                !s.notes.iter().any(|n| n.title == "Ideas")
                    && s.notes.iter().any(|n| n.title == "Groceries")
            },
            solution: || vec![launch(AppId::Notes), long(540, note_row(1)), t(MENU_FIRST)],
            ..PLAIN
        },
        SimTask {
            id: "notes.from_drawer",
            app: AppId::Notes,
            instruction: "Open Keep Notes from the app drawer",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.fg == super::state::Fg::App(AppId::Notes),
            solution: || vec![t(ALL_APPS), t(DRAWER_NOTES)],
            ..PLAIN
        },
        // --- Browser ---
        SimTask {
            id: "browser.rust_wikipedia",
            app: AppId::Browser,
            instruction: "Search the web for Rust and open the Wikipedia result",
            difficulty: Medium,
            setup: nothing,
            check: |s| visited(s, |u| u.starts_with("https://en.wikipedia.org/wiki/Rust")),
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("rust"),
                    key(Key::Enter),
                    wait(1_500),
                    tap(540, result_link(2)),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "browser.rust_official",
            app: AppId::Browser,
            instruction: "Search for Rust and open the official Rust website",
            difficulty: Medium,
            setup: nothing,
            check: |s| visited(s, |u| u.starts_with("https://www.rust-lang.org")),
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("rust"),
                    key(Key::Enter),
                    wait(1_500),
                    tap(540, result_link(0)),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "browser.search_weather",
            app: AppId::Browser,
            instruction: "Search the web for 'weather in Paris'",
            difficulty: Medium,
            setup: nothing,
            check: |s| {
                visited(s, |u| {
                    u.to_lowercase() == "https://www.google.com/search?q=weather+in+paris"
                })
            },
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("weather in Paris"),
                    key(Key::Enter),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "browser.open_site",
            app: AppId::Browser,
            instruction: "Go to example.org in the browser",
            difficulty: Medium,
            setup: nothing,
            check: |s| visited(s, |u| u.trim_end_matches('/') == "https://example.org"),
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("example.org"),
                    key(Key::Enter),
                ]
            },
            ..PLAIN
        },
        // --- Shop ---
        SimTask {
            id: "shop.allow_notifications",
            app: AppId::Shop,
            instruction: "Open Shop and allow it to send notifications",
            difficulty: Easy,
            setup: nothing,
            check: |s| s.shop.notifications_allowed == Some(true),
            solution: || vec![t(ALL_APPS), t(DRAWER_SHOP), t(ALLOW)],
            ..PLAIN
        },
        SimTask {
            id: "shop.cart_earbuds",
            app: AppId::Shop,
            instruction: "Add the wireless earbuds to the cart",
            difficulty: Medium,
            setup: nothing,
            check: |s| s.shop.cart.contains(&(1, 1)) && s.shop.cart.len() == 1,
            solution: || {
                let mut v = shop_open();
                v.extend([tap(540, product_row(0, 0)), t(ADD_TO_CART)]);
                v
            },
            ..PLAIN
        },
        SimTask {
            id: "shop.cheapest_usb_c",
            app: AppId::Shop,
            instruction: "Buy the cheapest USB-C cable",
            difficulty: Medium,
            setup: nothing,
            check: |s| ordered(s, &[12]),
            solution: || {
                let mut v = shop_open();
                v.extend([
                    swipe(540, 2000, 540, 1000),
                    tap(540, product_row(11, 1000)),
                    t(ADD_TO_CART),
                    t(TOOLBAR_ACTION),
                    t(CHECKOUT),
                    t(PLACE_ORDER),
                    t(PAY_NOW),
                ]);
                v
            },
            ..PLAIN
        },
        SimTask {
            id: "shop.case_and_protector",
            app: AppId::Shop,
            instruction: "Buy a phone case and a screen protector in one order",
            difficulty: Hard,
            setup: nothing,
            check: |s| ordered(s, &[3, 4]),
            solution: || {
                let mut v = shop_open();
                v.extend([
                    tap(540, product_row(2, 0)),
                    t(ADD_TO_CART),
                    t(BACK_ARROW),
                    tap(540, product_row(3, 0)),
                    t(ADD_TO_CART),
                    t(TOOLBAR_ACTION),
                    t(CHECKOUT),
                    t(PLACE_ORDER),
                    t(PAY_NOW),
                ]);
                v
            },
            ..PLAIN
        },
        SimTask {
            id: "shop.checkout_existing_cart",
            app: AppId::Shop,
            instruction: "Check out the items already in the cart",
            difficulty: Medium,
            setup: |s| {
                s.shop.notifications_allowed = Some(false);
                s.shop.promo_shown = true;
                s.shop.cart = vec![(6, 1)];
            },
            check: |s| ordered(s, &[6]) && s.shop.cart.is_empty(),
            solution: || {
                vec![
                    launch(AppId::Shop),
                    t(TOOLBAR_ACTION),
                    t(CHECKOUT),
                    t(PLACE_ORDER),
                    t(PAY_NOW),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "shop.empty_cart",
            app: AppId::Shop,
            instruction: "Remove everything from the shopping cart without buying",
            difficulty: Medium,
            setup: |s| {
                s.shop.notifications_allowed = Some(true);
                s.shop.promo_shown = true;
                s.shop.cart = vec![(1, 1), (9, 1)];
            },
            check: |s| s.shop.cart.is_empty() && s.shop.orders.is_empty(),
            solution: || {
                vec![
                    launch(AppId::Shop),
                    t(TOOLBAR_ACTION),
                    tap(900, 352),
                    tap(900, 352),
                ]
            },
            ..PLAIN
        },
    ];
    all.extend(more::tasks());
    all
}

/// Finds a task by id.
pub fn task(id: &str) -> Option<SimTask> {
    tasks().into_iter().find(|t| t.id == id)
}

fn pixel(dev: &SimDevice, p: &NormPoint) -> PixelPoint {
    let c = dev.config();
    LinearTransform.to_pixel(
        *p,
        ScreenSize {
            width: c.width,
            height: c.height,
        },
    )
}

fn target_point(dev: &SimDevice, t: &TargetField) -> Result<PixelPoint, DeviceError> {
    match &t.0 {
        Target::Coordinate(p) => Ok(pixel(dev, p)),
        other => Err(DeviceError::InvalidInput(format!(
            "reference solutions use coordinates only, got {other:?}; element and selector targets need the screen parser"
        ))),
    }
}

/// Runs a sequence of actions that need no screen parser (coordinate taps and swipes,
/// typing, keys, launch, open_url, wait; `ask_user` is a no-op here) against the device, through the `Device` trait.
/// `wait` advances the virtual clock instead of sleeping.
pub async fn run_actions(dev: &SimDevice, actions: &[Action]) -> Result<(), DeviceError> {
    let size = ScreenSize {
        width: dev.config().width,
        height: dev.config().height,
    };
    for a in actions {
        match a {
            Action::Tap { target } => dev.tap(target_point(dev, target)?).await?,
            Action::DoubleTap { target } => dev.double_tap(target_point(dev, target)?).await?,
            Action::LongPress {
                target,
                duration_ms,
            } => {
                dev.long_press(target_point(dev, target)?, duration_ms.unwrap_or(800))
                    .await?
            }
            Action::Swipe { path, duration_ms } => {
                let (from, to) = match path {
                    SwipePath::Points { start, end } => (pixel(dev, start), pixel(dev, end)),
                    SwipePath::Direction { direction, .. } => direction_path(*direction, size),
                };
                dev.swipe(from, to, duration_ms.unwrap_or(400)).await?
            }
            Action::Scroll { direction, .. } => {
                // Scrolling content down moves the finger up.
                let flip = match direction {
                    Direction::Down => Direction::Up,
                    Direction::Up => Direction::Down,
                    Direction::Left => Direction::Right,
                    Direction::Right => Direction::Left,
                };
                let (from, to) = direction_path(flip, size);
                dev.swipe(from, to, 400).await?
            }
            Action::Type {
                text,
                target,
                clear_first,
            } => {
                if let Some(t) = target {
                    dev.tap(target_point(dev, t)?).await?;
                }
                if *clear_first {
                    dev.clear_text().await?;
                }
                dev.type_text(text).await?
            }
            Action::Clear { target } => {
                if let Some(t) = target {
                    dev.tap(target_point(dev, t)?).await?;
                }
                dev.clear_text().await?
            }
            Action::Key { key } => dev.key(*key).await?,
            Action::LaunchApp { app } => dev.launch_app(app).await?,
            Action::OpenUrl { url } => dev.open_url(url).await?,
            Action::Wait { ms } => dev.advance_clock(*ms),
            // The question goes to a person, not the phone; the actions after it carry
            // the answer (the task's `facts`).
            Action::AskUser { .. } => {}
            Action::Finish { .. } => break,
            other => {
                return Err(DeviceError::InvalidInput(format!(
                    "`{}` cannot run without a screen parser",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.get("action").and_then(|a| a.as_str()).map(String::from))
                        .unwrap_or_default()
                )));
            }
        }
    }
    Ok(())
}

/// A swipe of 40% of the screen in a direction, through the middle.
fn direction_path(d: Direction, s: ScreenSize) -> (PixelPoint, PixelPoint) {
    let (w, h) = (s.width as i32, s.height as i32);
    let (cx, cy) = (w / 2, h / 2);
    let (dx, dy) = (w * 2 / 10, h * 2 / 10);
    match d {
        Direction::Up => (
            PixelPoint { x: cx, y: cy + dy },
            PixelPoint { x: cx, y: cy - dy },
        ),
        Direction::Down => (
            PixelPoint { x: cx, y: cy - dy },
            PixelPoint { x: cx, y: cy + dy },
        ),
        Direction::Left => (
            PixelPoint { x: cx + dx, y: cy },
            PixelPoint { x: cx - dx, y: cy },
        ),
        Direction::Right => (
            PixelPoint { x: cx - dx, y: cy },
            PixelPoint { x: cx + dx, y: cy },
        ),
    }
}

/// Runs a task's reference solution on the device.
pub async fn run_reference(dev: &SimDevice, task: &SimTask) -> Result<(), DeviceError> {
    run_actions(dev, &task.reference()).await
}
