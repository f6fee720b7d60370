//! The second set of scored tasks: tasks that need a fact only the user knows (the
//! instruction leaves it out; the reference solution asks with `ask_user` and types the
//! answer from the task's `facts`), tasks that span two apps (read in one, act in the
//! other; `also` names the app read from), and longer flows that fill the hard tier.

use super::*;

/// Facts for `ask_user` tasks: which words in a question ask for which answer.
const SISTER: &[Fact] = &[Fact {
    topic: &["sister", "who", "name", "contact"],
    answer: "Carol White",
}];
const WAKE_TIME: &[Fact] = &[Fact {
    topic: &["time", "when", "wake", "alarm"],
    answer: "6:45 AM",
}];
const PASSWORD: &[Fact] = &[Fact {
    topic: &["password", "passphrase"],
    answer: super::super::apps::settings::ACCOUNT_PASSWORD,
}];
const PLUMBER: &[Fact] = &[Fact {
    topic: &["number", "phone", "plumber"],
    answer: "+1 555 0142",
}];
const NEIGHBOUR: &[Fact] = &[
    Fact {
        topic: &["name", "who", "called"],
        answer: "Nora Field",
    },
    Fact {
        topic: &["number", "phone"],
        answer: "+1 555 0177",
    },
];
const GIFT: &[Fact] = &[Fact {
    topic: &["gift", "what", "which", "product", "brother"],
    answer: "the 10000mAh power bank",
}];

fn ask(q: &str) -> Action {
    Action::AskUser {
        question: q.into(),
        options: None,
    }
}

/// Opens a conversation by typing part of a contact's name in "Start chat".
fn start_chat(name: &str) -> Vec<Action> {
    vec![t(FAB), typ(name), t(PICKER_FIRST), t(COMPOSE)]
}

fn note(s: &PhoneState, title: &str, body: impl Fn(&str) -> bool) -> bool {
    s.notes
        .iter()
        .any(|n| n.title.trim() == title && body(&n.body))
}

fn flight_note(s: &mut PhoneState) {
    s.notes.insert(
        0,
        super::super::state::Note {
            id: 3,
            title: "Flight".into(),
            body: "Flight leaves at 7:40, be up at 5:15".into(),
        },
    );
}

fn shopping_note(s: &mut PhoneState) {
    s.notes.insert(
        0,
        super::super::state::Note {
            id: 3,
            title: "Shopping".into(),
            body: "Phone case, USB-C cable 1m".into(),
        },
    );
}

pub(super) fn tasks() -> Vec<SimTask> {
    use Difficulty::*;
    vec![
        // --- Needs the user: the instruction leaves a fact out ---
        SimTask {
            id: "messages.ask_text_sister",
            app: AppId::Messages,
            instruction: "Text my sister 'Dinner at 8?'",
            difficulty: Medium,
            check: |s| only_sent(s, "Carol White", "Dinner at 8?"),
            solution: || {
                let mut v = vec![ask("Who is your sister?"), launch(AppId::Messages)];
                v.extend(start_chat("Carol"));
                v.extend([typ("Dinner at 8?"), t(SEND_ABOVE_KEYBOARD)]);
                v
            },
            facts: SISTER,
            ..PLAIN
        },
        SimTask {
            id: "messages.ask_sister_the_code",
            app: AppId::Messages,
            instruction: "Text my sister the verification code I was sent",
            difficulty: Medium,
            check: |s| only_sent(s, "Carol White", "482913"),
            solution: || {
                let mut v = vec![
                    ask("Who is your sister?"),
                    launch(AppId::Messages),
                    tap(540, thread_row(2)),
                    t(BACK_ARROW),
                ];
                v.extend(start_chat("Carol"));
                v.extend([typ("482913"), t(SEND_ABOVE_KEYBOARD)]);
                v
            },
            facts: SISTER,
            ..PLAIN
        },
        SimTask {
            id: "clock.ask_wake_up_alarm",
            app: AppId::Clock,
            instruction: "Set an alarm for when I need to get up tomorrow",
            difficulty: Medium,
            check: |s| has_alarm(s, 6, 45),
            solution: || {
                vec![
                    ask("What time do you need to get up?"),
                    launch(AppId::Clock),
                    t(FAB),
                    tap(HOUR_X, PICKER_INPUT_Y),
                    typ_clear("06"),
                    tap(MINUTE_X, PICKER_INPUT_Y),
                    typ_clear("45"),
                    t(ALARM_OK),
                ]
            },
            facts: WAKE_TIME,
            ..PLAIN
        },
        SimTask {
            id: "settings.ask_password_sign_in",
            app: AppId::Settings,
            instruction: "Sign in to my account in Settings > Accounts; the e-mail is alex@example.com",
            difficulty: Medium,
            check: |s| {
                s.settings.account.as_deref() == Some(super::super::apps::settings::ACCOUNT_EMAIL)
            },
            solution: || {
                vec![
                    ask("What is the password for alex@example.com?"),
                    launch(AppId::Settings),
                    tap(540, ACCOUNTS),
                    tap(540, ACCOUNT_EMAIL_FIELD),
                    typ("alex@example.com"),
                    tap(540, ACCOUNT_PASSWORD_FIELD),
                    typ(super::super::apps::settings::ACCOUNT_PASSWORD),
                    tap(540, SIGN_IN),
                ]
            },
            facts: PASSWORD,
            ..PLAIN
        },
        SimTask {
            id: "contacts.ask_save_plumber",
            app: AppId::Contacts,
            instruction: "Save my plumber's number as a contact named Plumber",
            difficulty: Medium,
            check: |s| contact(s, "Plumber").is_some_and(|c| digits(&c.phone) == "15550142"),
            solution: || {
                vec![
                    ask("What is your plumber's phone number?"),
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Plumber"),
                    t(PHONE_FIELD),
                    typ("+1 555 0142"),
                    t(SAVE),
                ]
            },
            facts: PLUMBER,
            ..PLAIN
        },
        SimTask {
            id: "contacts.ask_add_and_greet_neighbour",
            app: AppId::Contacts,
            instruction: "Add my new neighbour to my contacts and text them 'Welcome to the street!'",
            difficulty: Hard,
            check: |s| {
                contact(s, "Nora Field").is_some_and(|c| digits(&c.phone) == "15550177")
                    && only_sent(s, "Nora Field", "Welcome to the street!")
            },
            solution: || {
                let mut v = vec![
                    ask("What is your new neighbour's name and phone number?"),
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Nora Field"),
                    t(PHONE_FIELD),
                    typ("+1 555 0177"),
                    t(SAVE),
                    launch(AppId::Messages),
                ];
                v.extend(start_chat("Nora"));
                v.extend([typ("Welcome to the street!"), t(SEND_ABOVE_KEYBOARD)]);
                v
            },
            facts: NEIGHBOUR,
            also: &[AppId::Messages],
            ..PLAIN
        },
        SimTask {
            id: "shop.ask_buy_gift",
            app: AppId::Shop,
            instruction: "Buy the gift my brother asked for in the Shop app",
            difficulty: Medium,
            check: |s| ordered(s, &[6]),
            solution: || {
                let mut v = vec![ask("Which gift did your brother ask for?")];
                v.extend(shop_open());
                v.extend([
                    tap(540, product_row(5, 0)),
                    t(ADD_TO_CART),
                    t(TOOLBAR_ACTION),
                    t(CHECKOUT),
                    t(PLACE_ORDER),
                    t(PAY_NOW),
                ]);
                v
            },
            facts: GIFT,
            ..PLAIN
        },
        // --- Two apps: read in one, act in the other ---
        SimTask {
            id: "messages.groceries_note_to_bob",
            app: AppId::Messages,
            instruction: "Text Bob the contents of my Groceries note",
            difficulty: Medium,
            check: |s| only_sent(s, "Bob Smith", "Milk, eggs, bread"),
            solution: || {
                vec![
                    launch(AppId::Notes),
                    launch(AppId::Messages),
                    tap(540, thread_row(1)),
                    t(COMPOSE),
                    typ("Milk, eggs, bread"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            also: &[AppId::Notes],
            ..PLAIN
        },
        SimTask {
            id: "notes.save_verification_code",
            app: AppId::Notes,
            instruction: "Save the verification code I was texted in a new note titled 'Code'",
            difficulty: Medium,
            check: |s| note(s, "Code", |b| b.trim() == "482913"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    launch(AppId::Notes),
                    t(FAB),
                    typ("482913"),
                    t(NOTE_TITLE),
                    typ("Code"),
                    key(Key::Back),
                    t(BACK_ARROW),
                ]
            },
            also: &[AppId::Messages],
            ..PLAIN
        },
        SimTask {
            id: "messages.grace_number_to_bob",
            app: AppId::Messages,
            instruction: "Send Bob Grace Hopper's phone number",
            difficulty: Medium,
            check: |s| {
                s.threads.iter().any(|t| {
                    t.contact == "Bob Smith"
                        && t.messages
                            .iter()
                            .any(|m| m.outgoing && digits(&m.text) == "15550107")
                })
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(CONTACT_SEARCH),
                    typ("grace"),
                    key(Key::Back),
                    tap(540, contact_row(0)),
                    launch(AppId::Messages),
                    tap(540, thread_row(1)),
                    t(COMPOSE),
                    typ("+1 555 0107"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            also: &[AppId::Contacts],
            ..PLAIN
        },
        SimTask {
            id: "contacts.save_code_sender",
            app: AppId::Contacts,
            instruction: "Save the number that texted me a verification code as a contact named Bank",
            difficulty: Medium,
            check: |s| contact(s, "Bank").is_some_and(|c| digits(&c.phone) == "15550199"),
            solution: || {
                vec![
                    launch(AppId::Messages),
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Bank"),
                    t(PHONE_FIELD),
                    typ("+1 555 0199"),
                    t(SAVE),
                ]
            },
            also: &[AppId::Messages],
            ..PLAIN
        },
        SimTask {
            id: "clock.alarm_from_flight_note",
            app: AppId::Clock,
            instruction: "Set an alarm for the time my Flight note says I must be up",
            difficulty: Medium,
            setup: flight_note,
            check: |s| has_alarm(s, 5, 15),
            solution: || {
                vec![
                    launch(AppId::Notes),
                    launch(AppId::Clock),
                    t(FAB),
                    tap(HOUR_X, PICKER_INPUT_Y),
                    typ_clear("05"),
                    tap(MINUTE_X, PICKER_INPUT_Y),
                    typ_clear("15"),
                    t(ALARM_OK),
                ]
            },
            also: &[AppId::Notes],
            ..PLAIN
        },
        SimTask {
            id: "shop.buy_shopping_note",
            app: AppId::Shop,
            instruction: "Buy everything on my Shopping note, in one order",
            difficulty: Hard,
            setup: shopping_note,
            check: |s| ordered(s, &[3, 5]),
            solution: || {
                let mut v = vec![launch(AppId::Notes)];
                v.extend(shop_open());
                v.extend([
                    tap(540, product_row(2, 0)),
                    t(ADD_TO_CART),
                    t(BACK_ARROW),
                    tap(540, product_row(4, 0)),
                    t(ADD_TO_CART),
                    t(TOOLBAR_ACTION),
                    t(CHECKOUT),
                    t(PLACE_ORDER),
                    t(PAY_NOW),
                ]);
                v
            },
            also: &[AppId::Notes],
            ..PLAIN
        },
        SimTask {
            id: "messages.wikipedia_link_to_alice",
            app: AppId::Messages,
            instruction: "Search the web for Ada Lovelace, open the Wikipedia article, and text its address to Alice",
            difficulty: Medium,
            check: |s| {
                visited(s, |u| u == "https://en.wikipedia.org/wiki/Ada_Lovelace")
                    && s.threads.iter().any(|t| {
                        t.contact == "Alice Martin"
                            && t.messages.iter().any(|m| {
                                m.outgoing && m.text.contains("en.wikipedia.org/wiki/Ada_Lovelace")
                            })
                    })
            },
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("Ada Lovelace"),
                    key(Key::Enter),
                    wait(1_500),
                    tap(540, result_link(1)),
                    launch(AppId::Messages),
                    tap(540, thread_row(0)),
                    t(COMPOSE),
                    typ("https://en.wikipedia.org/wiki/Ada_Lovelace"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            also: &[AppId::Browser],
            ..PLAIN
        },
        SimTask {
            id: "notes.rust_book_address",
            app: AppId::Notes,
            instruction: "Search the web for Rust, open the Rust book, and save its address in a note titled 'Rust book'",
            difficulty: Hard,
            check: |s| {
                visited(s, |u| u.starts_with("https://doc.rust-lang.org/book"))
                    && note(s, "Rust book", |b| b.contains("doc.rust-lang.org/book"))
            },
            solution: || {
                vec![
                    launch(AppId::Browser),
                    t(URL_BAR),
                    typ("rust"),
                    key(Key::Enter),
                    wait(1_500),
                    tap(540, result_link(1)),
                    launch(AppId::Notes),
                    t(FAB),
                    typ("https://doc.rust-lang.org/book/"),
                    t(NOTE_TITLE),
                    typ("Rust book"),
                    key(Key::Back),
                    t(BACK_ARROW),
                ]
            },
            also: &[AppId::Browser],
            ..PLAIN
        },
        SimTask {
            id: "contacts.new_number_and_tell_bob",
            app: AppId::Contacts,
            instruction: "Change Bob Smith's number to +1 555 0188, then text him 'Saved your new number'",
            difficulty: Hard,
            check: |s| {
                contact(s, "Bob Smith").is_some_and(|c| digits(&c.phone) == "15550188")
                    && only_sent(s, "Bob Smith", "Saved your new number")
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    tap(540, contact_row(2)),
                    t(TOOLBAR_ACTION),
                    t(PHONE_FIELD),
                    typ_clear("+1 555 0188"),
                    t(SAVE),
                    launch(AppId::Messages),
                    tap(540, thread_row(1)),
                    t(COMPOSE),
                    typ("Saved your new number"),
                    t(SEND_ABOVE_KEYBOARD),
                ]
            },
            also: &[AppId::Messages],
            ..PLAIN
        },
        // --- Longer flows in one app ---
        SimTask {
            id: "settings.bluetooth_brightness_developer",
            app: AppId::Settings,
            instruction: "Turn on Bluetooth, set the brightness to maximum, and enable developer options",
            difficulty: Hard,
            check: |s| {
                s.settings.bluetooth && s.settings.brightness >= 250 && s.settings.developer_options
            },
            solution: || {
                let mut v = vec![
                    launch(AppId::Settings),
                    tap(540, BLUETOOTH),
                    swipe(540, BRIGHTNESS, 1075, BRIGHTNESS),
                    tap(540, ABOUT),
                ];
                v.extend(std::iter::repeat_n(tap(540, BUILD_NUMBER), 7));
                v
            },
            ..PLAIN
        },
        SimTask {
            id: "contacts.add_two",
            app: AppId::Contacts,
            instruction: "Add two contacts: Ana Lima, +55 11 91234 5678, and Ben Ode, +234 803 555 0101",
            difficulty: Hard,
            check: |s| {
                contact(s, "Ana Lima").is_some_and(|c| digits(&c.phone) == "5511912345678")
                    && contact(s, "Ben Ode").is_some_and(|c| digits(&c.phone) == "2348035550101")
            },
            solution: || {
                vec![
                    launch(AppId::Contacts),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Ana Lima"),
                    t(PHONE_FIELD),
                    typ("+55 11 91234 5678"),
                    t(SAVE),
                    t(BACK_ARROW),
                    t(FAB),
                    t(NAME_FIELD),
                    typ("Ben Ode"),
                    t(PHONE_FIELD),
                    typ("+234 803 555 0101"),
                    t(SAVE),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "notes.two_titled",
            app: AppId::Notes,
            instruction: "Create a note titled 'Mon' that says 'Call mom', and one titled 'Tue' that says 'Pay rent'",
            difficulty: Hard,
            check: |s| {
                note(s, "Mon", |b| b.trim() == "Call mom")
                    && note(s, "Tue", |b| b.trim() == "Pay rent")
            },
            solution: || {
                vec![
                    launch(AppId::Notes),
                    t(FAB),
                    typ("Call mom"),
                    t(NOTE_TITLE),
                    typ("Mon"),
                    key(Key::Back),
                    t(BACK_ARROW),
                    t(FAB),
                    typ("Pay rent"),
                    t(NOTE_TITLE),
                    typ("Tue"),
                    key(Key::Back),
                    t(BACK_ARROW),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "notes.standup_lines",
            app: AppId::Notes,
            instruction: "Create a note titled 'Standup' with three lines: 'Ana: done', 'Ben: blocked', 'Cy: review'",
            difficulty: Hard,
            check: |s| {
                note(s, "Standup", |b| {
                    b.lines().map(str::trim).collect::<Vec<_>>()
                        == ["Ana: done", "Ben: blocked", "Cy: review"]
                })
            },
            solution: || {
                vec![
                    launch(AppId::Notes),
                    t(FAB),
                    typ("Ana: done"),
                    key(Key::Enter),
                    typ("Ben: blocked"),
                    key(Key::Enter),
                    typ("Cy: review"),
                    t(NOTE_TITLE),
                    typ("Standup"),
                    key(Key::Back),
                    t(BACK_ARROW),
                ]
            },
            ..PLAIN
        },
        SimTask {
            id: "messages.meeting_moved_three",
            app: AppId::Messages,
            instruction: "Tell Alice, Bob and Carol White 'Meeting moved to 3pm', one message each",
            difficulty: Hard,
            check: |s| {
                ["Alice Martin", "Bob Smith", "Carol White"]
                    .iter()
                    .all(|who| sent(s, who, "Meeting moved to 3pm"))
            },
            solution: || {
                let mut v = vec![launch(AppId::Messages)];
                // The list is most recent first: Alice stays on top, then Bob moves up.
                for row in [0, 1] {
                    v.extend([
                        tap(540, thread_row(row)),
                        t(COMPOSE),
                        typ("Meeting moved to 3pm"),
                        t(SEND_ABOVE_KEYBOARD),
                        key(Key::Back),
                        key(Key::Back),
                    ]);
                }
                v.extend(start_chat("Carol"));
                v.extend([typ("Meeting moved to 3pm"), t(SEND_ABOVE_KEYBOARD)]);
                v
            },
            ..PLAIN
        },
        // --- Short ones ---
        SimTask {
            id: "shop.deny_notifications",
            app: AppId::Shop,
            instruction: "Open Shop and don't let it send notifications",
            difficulty: Easy,
            check: |s| s.shop.notifications_allowed == Some(false),
            solution: || vec![launch(AppId::Shop), key(Key::Back)],
            ..PLAIN
        },
        SimTask {
            id: "contacts.show_grace",
            app: AppId::Contacts,
            instruction: "Show Grace Hopper's contact card",
            difficulty: Easy,
            check: |s| {
                s.fg == super::super::state::Fg::App(AppId::Contacts)
                    && s.page() == Some(&super::super::state::Page::ContactDetail { id: 8 })
            },
            solution: || vec![launch(AppId::Contacts), tap(540, contact_row(7))],
            ..PLAIN
        },
    ]
}
