//! The virtual phone's whole state, and the reducer that turns commands into new state.
//!
//! Everything a task checker, a snapshot or a reset needs lives in `PhoneState`, which is
//! plain serde data: the apps' data (settings, contacts, alarms, threads, notes, browser
//! history, shop cart and orders), navigation (foreground, per-app back stacks, recents),
//! the dialog, focus, keyboard, field drafts, scroll offsets and the virtual clock. The UI
//! is a pure function of this state (`ui::build`), so equal states look identical.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strum::VariantArray as _;

use super::apps::shop::PRODUCTS;

/// The installed apps (the launcher is not one: it is `Fg::Home`), in the order of their
/// names: the list (`VARIANTS`) is derived and the phone lists its apps in that order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
pub enum AppId {
    Browser,
    Clock,
    Contacts,
    Messages,
    Notes,
    Settings,
    Shop,
}

pub const LAUNCHER_PACKAGE: &str = "com.google.android.apps.nexuslauncher";
pub const SYSTEMUI: &str = "com.android.systemui";
pub const IME_PACKAGE: &str = "com.google.android.inputmethod.latin";
pub const PERMISSION_PACKAGE: &str = "com.android.permissioncontroller";

impl AppId {
    pub fn package(self) -> &'static str {
        match self {
            AppId::Settings => "com.android.settings",
            AppId::Contacts => "com.android.contacts",
            AppId::Clock => "com.google.android.deskclock",
            AppId::Messages => "com.google.android.apps.messaging",
            AppId::Notes => "com.google.android.keep",
            AppId::Browser => "com.android.chrome",
            AppId::Shop => "com.droidpilot.shop",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            AppId::Settings => "Settings",
            AppId::Contacts => "Contacts",
            AppId::Clock => "Clock",
            AppId::Messages => "Messages",
            AppId::Notes => "Notes",
            AppId::Browser => "Chrome",
            AppId::Shop => "Shop",
        }
    }
    pub fn activity(self) -> &'static str {
        match self {
            AppId::Settings => "com.android.settings.Settings",
            AppId::Contacts => "com.android.contacts.activities.PeopleActivity",
            AppId::Clock => "com.android.deskclock.DeskClock",
            AppId::Messages => "com.google.android.apps.messaging.ui.ConversationListActivity",
            AppId::Notes => "com.google.android.keep.activities.BrowseActivity",
            AppId::Browser => "com.google.android.apps.chrome.Main",
            AppId::Shop => "com.droidpilot.shop.MainActivity",
        }
    }
    /// Finds an app by package or by label (any case; "Browser" also finds Chrome).
    pub fn find(s: &str) -> Option<AppId> {
        let t = s.trim();
        AppId::VARIANTS.iter().copied().find(|a| {
            a.package() == t
                || a.label().eq_ignore_ascii_case(t)
                || (matches!(a, AppId::Browser) && t.eq_ignore_ascii_case("browser"))
                || (matches!(a, AppId::Notes) && t.eq_ignore_ascii_case("keep"))
        })
    }
    fn root(self) -> Page {
        match self {
            AppId::Settings => Page::SettingsMain,
            AppId::Contacts => Page::ContactsList,
            AppId::Clock => Page::Alarms,
            AppId::Messages => Page::Threads,
            AppId::Notes => Page::NotesList,
            AppId::Browser => Page::Web {
                url: NEW_TAB.into(),
            },
            AppId::Shop => Page::Catalogue,
        }
    }
}

pub const NEW_TAB: &str = "chrome://newtab";

/// What is in the foreground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "app")]
pub enum Fg {
    Home,
    Drawer,
    Recents,
    App(AppId),
}

/// One screen of an app. Each app keeps a back stack of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "page")]
pub enum Page {
    SettingsMain,
    SettingsAbout,
    /// Accounts: an e-mail + password sign-in form (the password is a real
    /// `password="true"` field).
    SettingsAccount,
    ContactsList,
    ContactDetail {
        id: u64,
    },
    ContactEdit {
        id: Option<u64>,
    },
    Alarms,
    AlarmEdit,
    Threads,
    Thread {
        contact: String,
    },
    NewChat,
    NotesList,
    NoteEdit {
        id: Option<u64>,
    },
    Web {
        url: String,
    },
    Catalogue,
    Product {
        id: u32,
    },
    Cart,
    /// The payment screen: flagged secure, like real payment screens.
    Checkout,
    OrderDone {
        id: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    Wifi,
    Bluetooth,
    Airplane,
}

/// Everything a tap, a key or a dialog button can do. Serializable because dialogs (part
/// of the state) hold the commands of their buttons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "cmd")]
pub enum Cmd {
    Nop,
    Launch {
        app: AppId,
    },
    OpenDrawer,
    Home,
    Back,
    Push {
        page: Page,
    },
    Focus {
        field: String,
    },
    Toggle {
        setting: Setting,
    },
    Brightness {
        value: u8,
    },
    BuildNumber,
    SignIn,
    ContactNew,
    ContactEdit {
        id: u64,
    },
    ContactSave,
    ContactDelete {
        id: u64,
    },
    ContactMenu {
        id: u64,
    },
    DiscardEdit,
    AlarmNew,
    AlarmSave,
    AlarmToggle {
        id: u64,
    },
    AlarmDelete {
        id: u64,
    },
    AlarmMenu {
        id: u64,
    },
    /// Step a number picker field by `delta`, wrapping at `modulo`.
    Pick {
        field: String,
        delta: i32,
        modulo: u32,
    },
    OpenThread {
        contact: String,
    },
    NewChat,
    SendMessage,
    NoteNew,
    NoteOpen {
        id: u64,
    },
    NoteDelete {
        id: u64,
    },
    NoteMenu {
        id: u64,
    },
    BrowserSubmit,
    BrowserOpen {
        url: String,
    },
    ShopAdd {
        id: u32,
    },
    ShopRemove {
        id: u32,
    },
    ShopPlaceOrder,
    ShopConfirm,
    ShopPermission {
        allow: bool,
    },
    Recent {
        app: AppId,
    },
    RecentsClear,
    KeyChar {
        c: char,
    },
    KeyDelete,
    KeyEnter,
    /// Close the dialog and do nothing else.
    CloseDialog,
    /// Open a dialog (an overflow menu, a confirmation an app update added).
    ShowDialog {
        dialog: Box<Dialog>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialogButton {
    /// Short or qualified resource-id.
    pub id: String,
    pub text: String,
    pub cmd: Cmd,
    /// The touch-log key of the widget this item was moved from (`identity`), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// A dialog or a long-press menu. It sits above the app, dims it and blocks its taps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dialog {
    pub kind: String,
    pub package: String,
    pub title: String,
    pub message: String,
    pub buttons: Vec<DialogButton>,
    /// A long-press menu: a plain list of items, no title or message.
    pub menu: bool,
    /// What back does (permission dialogs deny; most just close).
    pub on_back: Cmd,
}

impl Dialog {
    pub fn menu(package: &str, kind: &str, items: Vec<(&str, Cmd)>) -> Self {
        Dialog {
            kind: kind.into(),
            package: package.into(),
            title: String::new(),
            message: String::new(),
            buttons: items
                .into_iter()
                .map(|(t, c)| DialogButton {
                    id: "android:id/title".into(),
                    text: t.into(),
                    cmd: c,
                    key: String::new(),
                })
                .collect(),
            menu: true,
            on_back: Cmd::CloseDialog,
        }
    }
    pub fn alert(package: &str, kind: &str, title: &str, message: &str) -> Self {
        Dialog {
            kind: kind.into(),
            package: package.into(),
            title: title.into(),
            message: message.into(),
            buttons: Vec::new(),
            menu: false,
            on_back: Cmd::CloseDialog,
        }
    }
    pub fn button(mut self, id: &str, text: &str, cmd: Cmd) -> Self {
        self.buttons.push(DialogButton {
            id: id.into(),
            text: text.into(),
            cmd,
            key: String::new(),
        });
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toast {
    pub text: String,
    pub until_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub wifi: bool,
    pub bluetooth: bool,
    pub airplane: bool,
    /// 0–255 like `settings get system screen_brightness`.
    pub brightness: u8,
    pub build_taps: u32,
    pub developer_options: bool,
    pub device_name: String,
    /// The e-mail signed in on the Accounts page, if any.
    #[serde(default)]
    pub account: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contact {
    pub id: u64,
    pub name: String,
    pub phone: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alarm {
    pub id: u64,
    pub hour: u8,
    pub minute: u8,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub outgoing: bool,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// A contact name, or a number for unknown senders.
    pub contact: String,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub id: u64,
    pub title: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Browser {
    /// Every page loaded, oldest first (what a checker looks at).
    pub history: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    pub id: u64,
    /// (product id, quantity)
    pub items: Vec<(u32, u32)>,
    pub total_cents: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Shop {
    /// (product id, quantity), in the order added.
    pub cart: Vec<(u32, u32)>,
    pub orders: Vec<Order>,
    /// None until the first-open permission dialog is answered.
    pub notifications_allowed: Option<bool>,
    /// When the promo pop-up interrupts (virtual ms), once per install.
    pub promo_due_ms: Option<u64>,
    pub promo_shown: bool,
    /// When the catalogue started loading (virtual ms); it loads once per app start.
    pub catalogue_at_ms: u64,
}

impl Shop {
    pub fn cart_total_cents(&self) -> u64 {
        self.cart
            .iter()
            .filter_map(|(id, q)| {
                PRODUCTS
                    .iter()
                    .find(|p| p.id == *id)
                    .map(|p| p.price_cents * *q as u64)
            })
            .sum()
    }
}

/// The phone. Plain data: clone it to snapshot, serialize it to save, compare it to test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhoneState {
    /// The virtual clock, in ms since midnight of the sim's day 0. Only commands move it,
    /// so the status bar and every delay are deterministic.
    pub clock_ms: u64,
    pub awake: bool,
    pub locked: bool,
    pub fg: Fg,
    /// Most recent first.
    pub recents: Vec<AppId>,
    pub stacks: BTreeMap<AppId, Vec<Page>>,
    /// When the current page was opened (drives loading delays).
    pub page_at_ms: u64,
    pub dialog: Option<Dialog>,
    pub focus: Option<String>,
    pub keyboard: bool,
    /// Text field contents by field key (`contact.name`, `browser.url`, …).
    pub fields: BTreeMap<String, String>,
    /// Scroll offsets in pixels by list key.
    pub scroll: BTreeMap<String, i32>,
    pub toast: Option<Toast>,
    pub next_id: u64,
    pub settings: Settings,
    pub contacts: Vec<Contact>,
    pub alarms: Vec<Alarm>,
    pub threads: Vec<Thread>,
    pub notes: Vec<Note>,
    pub browser: Browser,
    pub shop: Shop,
    /// The apps that showed their "what's new" dialog (the `whats_new_dialog` drift).
    #[serde(default)]
    pub introduced: std::collections::BTreeSet<AppId>,
    /// Two apps side by side (`split`); the focused one is `fg`. None: one app (or the
    /// launcher) fills the screen.
    #[serde(default)]
    pub split: Option<super::split::Split>,
}

pub const HOUR_MS: u64 = 3_600_000;

impl Default for PhoneState {
    fn default() -> Self {
        let contacts = [
            ("Ada Byron", "+1 555 0100"),
            ("Alice Martin", "+1 555 0101"),
            ("Bob Smith", "+1 555 0102"),
            ("Carol White", "+1 555 0103"),
            ("Dave Brown", "+1 555 0104"),
            ("Eve Davis", "+1 555 0105"),
            ("Frank Miller", "+1 555 0106"),
            ("Grace Hopper", "+1 555 0107"),
            ("Heidi Klum", "+1 555 0108"),
            ("Ivan Petrov", "+1 555 0109"),
            ("Judy Garland", "+1 555 0110"),
            ("Mallory Knox", "+1 555 0111"),
            ("Oscar Wilde", "+1 555 0112"),
            ("Peggy Olson", "+1 555 0113"),
            ("Trent Reznor", "+1 555 0114"),
            ("Walter White", "+1 555 0115"),
        ];
        let contacts: Vec<Contact> = contacts
            .iter()
            .enumerate()
            .map(|(i, (n, p))| Contact {
                id: i as u64 + 1,
                name: (*n).into(),
                phone: (*p).into(),
            })
            .collect();
        let msg = |o: bool, t: &str| Message {
            outgoing: o,
            text: t.into(),
        };
        PhoneState {
            clock_ms: 9 * HOUR_MS + 41 * 60_000,
            awake: true,
            locked: false,
            fg: Fg::Home,
            recents: Vec::new(),
            stacks: BTreeMap::new(),
            page_at_ms: 0,
            dialog: None,
            focus: None,
            keyboard: false,
            fields: BTreeMap::new(),
            scroll: BTreeMap::new(),
            toast: None,
            next_id: 1000,
            settings: Settings {
                wifi: true,
                bluetooth: false,
                airplane: false,
                brightness: 128,
                build_taps: 0,
                developer_options: false,
                device_name: "Pixel 8".into(),
                account: None,
            },
            contacts,
            alarms: vec![
                Alarm {
                    id: 1,
                    hour: 6,
                    minute: 0,
                    enabled: false,
                },
                Alarm {
                    id: 2,
                    hour: 8,
                    minute: 15,
                    enabled: true,
                },
            ],
            threads: vec![
                Thread {
                    contact: "Alice Martin".into(),
                    messages: vec![
                        msg(false, "Are we still on for lunch?"),
                        msg(true, "Yes, 12:30 at the usual place"),
                    ],
                },
                Thread {
                    contact: "Bob Smith".into(),
                    messages: vec![msg(false, "Where are you?")],
                },
                Thread {
                    contact: "+1 555 0199".into(),
                    messages: vec![msg(false, "Your code is 482913")],
                },
            ],
            notes: vec![
                Note {
                    id: 1,
                    title: "Groceries".into(),
                    body: "Milk, eggs, bread".into(),
                },
                Note {
                    id: 2,
                    title: "Ideas".into(),
                    body: "A phone that runs in a test".into(),
                },
            ],
            browser: Browser::default(),
            shop: Shop::default(),
            introduced: Default::default(),
            split: None,
        }
    }
}

/// Which field keys hold what. Apps and tasks share these names.
pub mod field {
    pub const CONTACT_NAME: &str = "contact.name";
    pub const CONTACT_PHONE: &str = "contact.phone";
    pub const CONTACT_SEARCH: &str = "contact.search";
    pub const ALARM_HOUR: &str = "alarm.hour";
    pub const ALARM_MINUTE: &str = "alarm.minute";
    pub const MSG_TO: &str = "msg.to";
    pub const MSG_COMPOSE: &str = "msg.compose";
    pub const NOTE_TITLE: &str = "note.title";
    pub const NOTE_BODY: &str = "note.body";
    pub const URL: &str = "browser.url";
    pub const ACCOUNT_EMAIL: &str = "account.email";
    pub const ACCOUNT_PASSWORD: &str = "account.password";
}

impl PhoneState {
    pub fn field(&self, k: &str) -> &str {
        self.fields.get(k).map(String::as_str).unwrap_or("")
    }
    pub fn set_field(&mut self, k: &str, v: impl Into<String>) {
        self.fields.insert(k.to_string(), v.into());
    }
    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
    pub fn toast(&mut self, text: impl Into<String>) {
        self.toast = Some(Toast {
            text: text.into(),
            until_ms: self.clock_ms + 2_500,
        });
    }
    /// The page on top of the foreground app's stack.
    pub fn page(&self) -> Option<&Page> {
        match self.fg {
            Fg::App(a) => self.stacks.get(&a).and_then(|s| s.last()),
            _ => None,
        }
    }
    pub fn app(&self) -> Option<AppId> {
        match self.fg {
            Fg::App(a) => Some(a),
            _ => None,
        }
    }
    pub fn package(&self) -> &'static str {
        match self.fg {
            Fg::App(a) => a.package(),
            _ => LAUNCHER_PACKAGE,
        }
    }
    fn leave_field(&mut self) {
        self.focus = None;
        self.keyboard = false;
    }
    fn opened(&mut self) {
        self.leave_field();
        self.page_at_ms = self.clock_ms;
    }
    pub fn push(&mut self, page: Page) {
        if let Some(a) = self.app() {
            self.stacks.entry(a).or_default().push(page);
        }
        self.opened();
    }
    pub fn launch(&mut self, app: AppId) {
        // Another app than the two of a split opens full screen, ending split-screen.
        if self.split.is_some_and(|s| s.half_of(app).is_none()) {
            self.split = None;
        }
        self.dialog = None;
        let fresh = !self.stacks.contains_key(&app);
        if fresh {
            self.stacks.insert(app, vec![app.root()]);
        }
        self.fg = Fg::App(app);
        self.recents.retain(|a| *a != app);
        self.recents.insert(0, app);
        self.opened();
        if app == AppId::Shop {
            super::apps::shop::on_open(self, fresh);
        }
    }

    /// Force-stops `app`: its pages are gone, so its next launch starts afresh.
    pub fn stop(&mut self, app: AppId) {
        if let Some(other) = self.split_partner(app) {
            self.end_split(other);
        }
        self.stacks.remove(&app);
        self.recents.retain(|a| *a != app);
        if self.fg == Fg::App(app) {
            self.focus = None;
            self.keyboard = false;
            self.home();
        }
    }

    /// Clears `app`'s data: stopped, and its data, fields and scroll positions as on a
    /// new phone (its first-run dialogs come again).
    pub fn clear_data(&mut self, app: AppId) {
        self.stop(app);
        let fresh = PhoneState::default();
        let prefix = match app {
            AppId::Settings => {
                self.settings.account = fresh.settings.account.clone();
                "account."
            }
            AppId::Contacts => {
                self.contacts = fresh.contacts.clone();
                "contact"
            }
            AppId::Clock => {
                self.alarms = fresh.alarms.clone();
                "alarm."
            }
            AppId::Messages => {
                self.threads = fresh.threads.clone();
                "msg."
            }
            AppId::Notes => {
                self.notes = fresh.notes.clone();
                "note."
            }
            AppId::Browser => {
                self.browser = fresh.browser.clone();
                "browser."
            }
            AppId::Shop => {
                self.shop = fresh.shop.clone();
                "shop."
            }
        };
        self.fields.retain(|k, _| !k.starts_with(prefix));
        let scroll = app.label().to_lowercase();
        self.scroll.retain(|k, _| !k.starts_with(&scroll));
        self.introduced.remove(&app);
    }

    pub fn home(&mut self) {
        self.dialog = None;
        self.split = None;
        self.fg = Fg::Home;
        self.opened();
    }

    /// Back: the keyboard first, then a dialog, then the screen.
    pub fn back(&mut self) {
        if self.keyboard {
            self.keyboard = false;
            return;
        }
        if let Some(d) = self.dialog.take() {
            self.apply(d.on_back);
            return;
        }
        match self.fg {
            Fg::Home => {}
            Fg::Drawer => self.home(),
            Fg::Recents => match self.recents.first() {
                Some(a) => self.launch(*a),
                None => self.home(),
            },
            Fg::App(app) => {
                let Some(top) = self.page().cloned() else {
                    return self.home();
                };
                if !self.before_leave(&top) {
                    return;
                }
                let stack = self.stacks.entry(app).or_default();
                if stack.len() > 1 {
                    stack.pop();
                    self.opened();
                } else if let Some(other) = self.split_partner(app) {
                    // In split-screen the window goes to the background and the other
                    // app fills the screen.
                    self.end_split(other);
                } else {
                    // Since Android 12 back on a root activity moves the task to the
                    // background instead of finishing it: the app keeps its state.
                    self.home();
                }
            }
        }
    }

    /// Side effects of leaving a page by back. False cancels the back (a discard dialog).
    fn before_leave(&mut self, page: &Page) -> bool {
        match page {
            Page::NoteEdit { id } => {
                super::apps::notes::save(self, *id);
                true
            }
            Page::ContactEdit { id } => super::apps::contacts::confirm_discard(self, *id),
            _ => true,
        }
    }

    pub fn focus(&mut self, f: &str) {
        if f == field::URL {
            // Chrome selects the whole URL on focus, so typing replaces it.
            self.set_field(field::URL, "");
        }
        self.focus = Some(f.to_string());
        self.keyboard = true;
    }

    pub fn type_text(&mut self, text: &str) {
        if let Some(f) = self.focus.clone() {
            self.fields.entry(f).or_default().push_str(text);
        }
    }

    pub fn clear_text(&mut self) {
        if let Some(f) = self.focus.clone() {
            self.fields.insert(f, String::new());
        }
    }

    pub fn enter(&mut self) {
        match self.focus.as_deref() {
            Some(field::URL) => self.apply(Cmd::BrowserSubmit),
            Some(field::MSG_COMPOSE) => self.type_text("\n"),
            Some(field::NOTE_BODY) => self.type_text("\n"),
            Some(_) => self.keyboard = false,
            None => {}
        }
    }

    /// Runs one command. Every input ends up here.
    pub fn apply(&mut self, cmd: Cmd) {
        use super::apps::{browser, clock, contacts, messages, notes, settings, shop};
        match cmd {
            Cmd::Nop => {}
            Cmd::Launch { app } => self.launch(app),
            Cmd::OpenDrawer => {
                self.fg = Fg::Drawer;
                self.opened();
            }
            Cmd::Home => self.home(),
            Cmd::Back => self.back(),
            Cmd::Push { page } => self.push(page),
            Cmd::Focus { field } => self.focus(&field),
            Cmd::CloseDialog => self.dialog = None,
            Cmd::ShowDialog { dialog } => self.dialog = Some(*dialog),
            Cmd::KeyChar { c } => {
                let mut b = [0u8; 4];
                self.type_text(c.encode_utf8(&mut b));
            }
            Cmd::KeyDelete => {
                if let Some(f) = self.focus.clone() {
                    self.fields.entry(f).or_default().pop();
                }
            }
            Cmd::KeyEnter => self.enter(),
            Cmd::Recent { app } => self.launch(app),
            Cmd::RecentsClear => {
                // Clearing recents kills the apps: their back stacks (not their data) go.
                self.recents.clear();
                self.stacks.clear();
                self.home();
            }
            Cmd::Toggle { .. } | Cmd::Brightness { .. } | Cmd::BuildNumber | Cmd::SignIn => {
                settings::apply(self, cmd)
            }
            Cmd::ContactNew
            | Cmd::ContactEdit { .. }
            | Cmd::ContactSave
            | Cmd::ContactDelete { .. }
            | Cmd::ContactMenu { .. }
            | Cmd::DiscardEdit => contacts::apply(self, cmd),
            Cmd::AlarmNew
            | Cmd::AlarmSave
            | Cmd::AlarmToggle { .. }
            | Cmd::AlarmDelete { .. }
            | Cmd::AlarmMenu { .. }
            | Cmd::Pick { .. } => clock::apply(self, cmd),
            Cmd::OpenThread { .. } | Cmd::NewChat | Cmd::SendMessage => messages::apply(self, cmd),
            Cmd::NoteNew | Cmd::NoteOpen { .. } | Cmd::NoteDelete { .. } | Cmd::NoteMenu { .. } => {
                notes::apply(self, cmd)
            }
            Cmd::BrowserSubmit | Cmd::BrowserOpen { .. } => browser::apply(self, cmd),
            Cmd::ShopAdd { .. }
            | Cmd::ShopRemove { .. }
            | Cmd::ShopPlaceOrder
            | Cmd::ShopConfirm
            | Cmd::ShopPermission { .. } => shop::apply(self, cmd),
        }
    }

    /// Time passes: toasts expire, timed pop-ups appear.
    pub fn advance(&mut self, ms: u64) {
        self.clock_ms += ms;
        if self
            .toast
            .as_ref()
            .is_some_and(|t| t.until_ms <= self.clock_ms)
        {
            self.toast = None;
        }
        super::apps::shop::tick(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn airplane_mode_turns_radios_off_and_back_keeps_app_state() {
        let mut st = PhoneState::default();
        st.launch(AppId::Settings);
        st.apply(Cmd::Toggle {
            setting: Setting::Bluetooth,
        });
        st.apply(Cmd::Toggle {
            setting: Setting::Airplane,
        });
        assert!(st.settings.airplane && !st.settings.wifi && !st.settings.bluetooth);
        st.apply(Cmd::Push {
            page: Page::SettingsAbout,
        });
        st.home();
        st.launch(AppId::Settings);
        assert_eq!(
            st.page(),
            Some(&Page::SettingsAbout),
            "the app resumes where it was"
        );
        st.back();
        st.back();
        assert_eq!(st.fg, Fg::Home);
        assert!(
            st.stacks.contains_key(&AppId::Settings),
            "back at the root keeps the task"
        );
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut st = PhoneState::default();
        st.launch(AppId::Shop);
        let json = serde_json::to_string(&st).unwrap();
        assert_eq!(serde_json::from_str::<PhoneState>(&json).unwrap(), st);
    }

    #[test]
    fn app_lookup_by_package_or_label() {
        assert_eq!(AppId::find("com.android.settings"), Some(AppId::Settings));
        assert_eq!(AppId::find("browser"), Some(AppId::Browser));
        assert_eq!(AppId::find("CHROME"), Some(AppId::Browser));
        assert_eq!(AppId::find("Calculator"), None);
    }
}
