//! Split-screen tasks: two apps side by side, a goal for each window, one checker for
//! the phone. The agent of each window is told its app and goal (`WindowTask`); each
//! window's reference solution is written with selectors, so it acts on its own window
//! wherever the split puts it, and ends with a `finish` whose answer is what the window
//! found. Kept apart from `tasks()` (the scoreboard's single-window tasks).

use droidpilot_core::domain::action::TargetField;
use droidpilot_core::domain::{Action, Direction, Key, Target};

use crate::state::{AppId, Message, Note, PhoneState};

/// One window of a split-screen task.
#[derive(Clone, Copy)]
pub struct WindowTask {
    pub app: AppId,
    pub goal: &'static str,
    solution: fn() -> Vec<Action>,
}

impl WindowTask {
    /// The window's known-good actions, ending with its `finish`.
    pub fn reference(&self) -> Vec<Action> {
        (self.solution)()
    }
}

/// A task done in two windows at once.
#[derive(Clone, Copy)]
pub struct SplitTask {
    pub id: &'static str,
    pub instruction: &'static str,
    pub top: WindowTask,
    pub bottom: WindowTask,
    setup: fn(&mut PhoneState),
    check: fn(&PhoneState) -> bool,
}

impl SplitTask {
    pub fn initial_state(&self) -> PhoneState {
        let mut st = PhoneState::default();
        (self.setup)(&mut st);
        st
    }
    pub fn check(&self, st: &PhoneState) -> bool {
        (self.check)(st)
    }
}

impl std::fmt::Debug for SplitTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitTask").field("id", &self.id).finish()
    }
}

pub const ADDRESS: &str = "42 Harbour Street, Springfield";

fn tap(selector: &str) -> Action {
    Action::Tap {
        target: TargetField(Target::Selector(selector.into())),
    }
}
fn typ(text: &str) -> Action {
    Action::Type {
        text: text.into(),
        target: None,
        clear_first: false,
    }
}
fn finish(answer: &str) -> Action {
    Action::Finish {
        success: true,
        reason: None,
        answer: Some(answer.into()),
    }
}
fn wait_for(selector: &str) -> Action {
    Action::WaitFor {
        selector: selector.into(),
        timeout_ms: 10_000,
        idle_ms: None,
    }
}

/// The split-screen tasks.
pub fn split_tasks() -> Vec<SplitTask> {
    vec![
        SplitTask {
            id: "split.copy_address",
            instruction: "Copy the address from Messages into Notes",
            top: WindowTask {
                app: AppId::Messages,
                goal: "Open the conversation with Alice Martin and read the new address she sent; finish with the address as your answer",
                solution: || vec![tap(":text(\"Alice Martin\")"), finish(ADDRESS)],
            },
            bottom: WindowTask {
                app: AppId::Notes,
                goal: "Create a note titled 'Address' whose text is the address the Messages window reads, and save it",
                solution: || {
                    vec![
                        tap(":desc(\"New text note\")"),
                        tap("#editable_title"),
                        typ("Address"),
                        tap("#edit_note_text"),
                        typ(ADDRESS),
                        Action::Key { key: Key::Back },
                        Action::Key { key: Key::Back },
                        finish("saved the note 'Address'"),
                    ]
                },
            },
            setup: |st| {
                let alice = st.threads.iter_mut().find(|t| t.contact == "Alice Martin");
                if let Some(t) = alice {
                    t.messages.push(Message {
                        outgoing: false,
                        text: format!("My new address is {ADDRESS}"),
                    });
                }
            },
            check: |st| {
                st.notes
                    .iter()
                    .any(|n| n.title == "Address" && n.body.contains(ADDRESS))
            },
        },
        SplitTask {
            id: "split.compare_price",
            instruction: "Compare the price in Shop with the note: if the Wireless Earbuds cost no more than the budget in my Earbuds note, add them to the cart",
            top: WindowTask {
                app: AppId::Shop,
                goal: "Open the Wireless Earbuds and read their price; add them to the cart if it is within the budget the Notes window reads",
                solution: || {
                    vec![
                        wait_for(":text(\"Wireless Earbuds\")"),
                        tap(":text(\"Wireless Earbuds\")"),
                        // The product page scrolls in the short window.
                        Action::Scroll {
                            direction: Direction::Down,
                            container: None,
                        },
                        tap(":text(\"Add to cart\")"),
                        finish("$49.99, within the $55.00 budget: added to the cart"),
                    ]
                },
            },
            bottom: WindowTask {
                app: AppId::Notes,
                goal: "Open the note titled 'Earbuds' and read the budget in it; finish with the budget as your answer",
                solution: || vec![tap(":text(\"Earbuds\")"), finish("$55.00")],
            },
            setup: |st| {
                st.notes.insert(
                    0,
                    Note {
                        id: 3,
                        title: "Earbuds".into(),
                        body: "Budget: $55.00 at most".into(),
                    },
                );
                // The Shop's first-run questions are answered already.
                st.shop.notifications_allowed = Some(false);
                st.shop.promo_shown = true;
            },
            check: |st| st.shop.cart.iter().any(|(id, q)| *id == 1 && *q >= 1),
        },
    ]
}

/// A split-screen task by id.
pub fn split_task(id: &str) -> Option<SplitTask> {
    split_tasks().into_iter().find(|t| t.id == id)
}
