//! A Maestro flow as typed data: the header and the commands, each with its line.
//!
//! Text fields are kept as written (`Text`): Maestro evaluates `${…}` in them when the
//! command runs, not when the flow is read, so `expr` interpolates them at that time.
//! Fields Maestro types as numbers but reads as text (`times`, `timeout`, `index`,
//! `maxRetries`) are an `Amount`: a number, or an expression to evaluate then.
//!
//! `CommandKind` splits into leaf commands (one thing done to the phone or the
//! JavaScript scope) and control flow (`RunFlow`, `Repeat`, `Retry`), which hold commands
//! of their own; `Command::children` gives an executor the nested lists to walk.

use std::collections::BTreeMap;

/// Text as written in the flow; may hold `${…}` expressions.
pub type Text = String;

/// A parsed flow file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Flow {
    pub header: Header,
    pub commands: Vec<Command>,
}

/// The document before `---`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Header {
    /// `appId` (`url` is its old alias). Maestro requires it; a flow without a header
    /// is read with none, and a command needing it says so.
    pub app_id: Option<Text>,
    pub name: Option<String>,
    pub tags: Vec<String>,
    /// `env`, in the order written.
    pub env: Vec<EnvVar>,
    pub on_flow_start: Vec<Command>,
    pub on_flow_complete: Vec<Command>,
    /// `jsEngine: graaljs | rhino` as written (both are served by the one engine here).
    pub js_engine: Option<String>,
    /// Any other header key Maestro keeps for its plugins (`properties`, `ext`, …), with
    /// its line; nothing here acts on them.
    pub other: Vec<(String, usize)>,
}

/// One `env` entry. `value: None` is a YAML null: an input with no default, which
/// stays unset (undefined in JavaScript), never the text "null".
#[derive(Debug, Clone, PartialEq)]
pub struct EnvVar {
    pub name: String,
    pub value: Option<Text>,
    pub line: usize,
}

/// A number, or an expression that gives one when the command runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Amount {
    Fixed(f64),
    Expr(Text),
}

/// One command with its line and the arguments every command takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub line: usize,
    pub label: Option<String>,
    /// Failure is a warning and the flow goes on. Maestro's default is `false` except
    /// for the AI commands, whose default is `true`.
    pub optional: bool,
    pub kind: CommandKind,
}

impl Command {
    /// The command lists nested in this one, in the order an executor meets them.
    pub fn children(&self) -> Vec<&[Command]> {
        match &self.kind {
            CommandKind::RunFlow(r) => match &r.source {
                FlowSource::Inline(c) => vec![c.as_slice()],
                FlowSource::File { .. } => vec![],
            },
            CommandKind::Repeat(r) => vec![r.commands.as_slice()],
            CommandKind::Retry(r) => match &r.source {
                FlowSource::Inline(c) => vec![c.as_slice()],
                FlowSource::File { .. } => vec![],
            },
            _ => vec![],
        }
    }

    /// Whether this command holds other commands.
    pub fn is_control_flow(&self) -> bool {
        matches!(
            self.kind,
            CommandKind::RunFlow(_) | CommandKind::Repeat(_) | CommandKind::Retry(_)
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum CommandKind {
    // --- touching elements
    /// `tapOn`, `doubleTapOn`, `longPressOn`.
    Tap(Tap),
    /// `swipe` in any of its forms.
    Swipe(Swipe),
    /// `scroll`: one swipe up the screen's middle (the content moves down).
    Scroll,
    ScrollUntilVisible(ScrollUntilVisible),
    // --- text
    InputText(Text),
    InputRandom {
        kind: RandomKind,
        /// Characters (`TEXT`, default 8) or digits (`NUMBER`, default 8).
        length: Option<u32>,
    },
    /// Characters to erase; Maestro erases 50 when not told.
    EraseText(Option<u32>),
    CopyTextFrom(Selector),
    PasteText,
    SetClipboard(Text),
    HideKeyboard,
    // --- assertions and waits
    AssertVisible(Selector),
    AssertNotVisible(Selector),
    /// A JavaScript condition (`${…}` as written).
    AssertTrue(Text),
    /// `extendedWaitUntil`: a condition with its own timeout (ms; Maestro's default
    /// is 17 s when absent).
    ExtendedWaitUntil {
        visible: Option<Selector>,
        not_visible: Option<Selector>,
        timeout: Option<Amount>,
    },
    /// Until the screen stops changing, at most `timeout` ms (Maestro: 15 s).
    WaitForAnimationToEnd(Option<u64>),
    AssertWithAi(Text),
    AssertNoDefectsWithAi,
    ExtractTextWithAi {
        query: Text,
        output_variable: String,
    },
    // --- keys
    Back,
    PressKey(KeyName),
    // --- apps and the device
    LaunchApp(LaunchApp),
    StopApp(Option<Text>),
    KillApp(Option<Text>),
    ClearState(Option<Text>),
    /// iOS's keychain; Maestro does nothing on Android, and neither does this.
    ClearKeychain,
    SetPermissions {
        app_id: Option<Text>,
        permissions: BTreeMap<String, Text>,
    },
    OpenLink {
        link: Text,
        browser: bool,
        auto_verify: bool,
    },
    SetLocation {
        latitude: Text,
        longitude: Text,
    },
    Travel {
        /// `"lat,lon"` points as written.
        points: Vec<Text>,
        /// Metres per second (Maestro: 4.0).
        speed: Option<f64>,
    },
    SetOrientation(Text),
    SetAirplaneMode(bool),
    ToggleAirplaneMode,
    TakeScreenshot(Text),
    StartRecording(Text),
    StopRecording,
    AddMedia(Vec<Text>),
    // --- JavaScript
    EvalScript(Text),
    RunScript(RunScript),
    // --- control flow
    RunFlow(RunFlow),
    Repeat(Repeat),
    Retry(Retry),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapKind {
    Tap,
    Double,
    Long,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Element(Selector),
    Point(Point),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tap {
    pub kind: TapKind,
    pub target: Target,
    /// Tap again when the screen did not change (Maestro's default: true).
    pub retry_if_no_change: bool,
    pub wait_until_visible: bool,
    /// `repeat` taps, `delay` ms apart (Maestro: 100 ms); a double tap is 2.
    pub repeat: Option<(u32, u64)>,
    /// How long to wait for the screen to settle after the tap (Maestro caps it at 30 s).
    pub wait_to_settle_ms: Option<u64>,
}

/// A point on the screen: pixels, or percentages of its width and height.
#[derive(Debug, Clone, PartialEq)]
pub enum Point {
    Pixels(i32, i32),
    Percent(u32, u32),
    /// `${…}` to evaluate when the command runs (then read as one of the above).
    Expr(Text),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Swipe {
    pub motion: SwipeMotion,
    /// Milliseconds (Maestro: 400).
    pub duration_ms: u64,
    pub wait_to_settle_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SwipeMotion {
    /// Across the screen.
    Direction(Direction),
    /// From one point to another (both pixels or both percentages).
    Points { start: Point, end: Point },
    /// On an element, in a direction.
    Element {
        from: Selector,
        direction: Direction,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScrollUntilVisible {
    pub element: Selector,
    pub direction: Direction,
    /// Milliseconds (Maestro: 20 000).
    pub timeout: Amount,
    /// 0–100 (Maestro: 40).
    pub speed: Amount,
    /// Percent of the element that must show (0–100, Maestro: 100).
    pub visibility_percentage: u32,
    pub center_element: bool,
    pub wait_to_settle_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomKind {
    Text,
    Number,
    Email,
    PersonName,
    CityName,
    CountryName,
    ColorName,
}

/// A key Maestro's `pressKey` names (matched case-insensitively on these spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyName {
    Enter,
    Backspace,
    Back,
    Home,
    Lock,
    VolumeUp,
    VolumeDown,
    Escape,
    Power,
    Tab,
    /// The TV remote's and media keys, by Maestro's name (`Remote Dpad Up`, …).
    Remote(&'static str),
}

#[derive(Debug, Clone, PartialEq)]
pub struct LaunchApp {
    pub app_id: Option<Text>,
    pub clear_state: bool,
    /// iOS only; no effect on Android, as in Maestro.
    pub clear_keychain: bool,
    /// Stop the app first (Maestro's default: true).
    pub stop_app: bool,
    /// Permission name (`all`, `camera`, an Android permission id) → `allow` / `deny` /
    /// `unset`. Maestro grants all when absent.
    pub permissions: BTreeMap<String, Text>,
    /// Launch arguments, as text (`"true"`, `"3"`, `"x"`).
    pub arguments: BTreeMap<String, Text>,
}

/// A `when` / `while` condition: every part given must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Condition {
    pub platform: Option<Platform>,
    pub visible: Option<Selector>,
    pub not_visible: Option<Selector>,
    /// `true:` — a JavaScript condition.
    pub script: Option<Text>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Android,
    Ios,
    Web,
}

/// Where `runFlow` / `retry` take their commands from.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowSource {
    /// A file, relative to the flow that names it; loaded by `workspace`.
    File {
        path: String,
    },
    Inline(Vec<Command>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunFlow {
    pub source: FlowSource,
    pub when: Option<Condition>,
    pub env: Vec<EnvVar>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    /// With neither `times` nor `while`, Maestro repeats until a command fails.
    pub times: Option<Amount>,
    pub while_: Option<Condition>,
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// Extra attempts after the first (Maestro: 1, at most 3).
    pub max_retries: Amount,
    pub source: FlowSource,
    pub env: Vec<EnvVar>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunScript {
    /// The script's path, relative to the flow.
    pub file: String,
    pub env: Vec<EnvVar>,
    pub when: Option<Condition>,
}

/// `traits:` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Trait {
    /// Has a `text` attribute.
    Text,
    /// Width and height within 3 % of each other.
    Square,
    /// Text longer than 200 characters.
    LongText,
}

/// Maestro's element selector. Every field given must hold (see `selector`). Serde
/// carries it into a device-side wait (`droidpilot-app`'s flow agent).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Selector {
    pub line: usize,
    /// A regular expression over the whole text, hint or content description,
    /// case-insensitive.
    pub text: Option<Text>,
    /// A regular expression over the whole resource-id, with or without its
    /// `package:id/` prefix.
    pub id: Option<Text>,
    /// Which match, in top-to-bottom then left-to-right order.
    pub index: Option<Amount>,
    pub enabled: Option<bool>,
    pub checked: Option<bool>,
    pub focused: Option<bool>,
    pub selected: Option<bool>,
    pub below: Option<Box<Selector>>,
    pub above: Option<Box<Selector>>,
    pub left_of: Option<Box<Selector>>,
    pub right_of: Option<Box<Selector>>,
    pub child_of: Option<Box<Selector>>,
    pub contains_child: Option<Box<Selector>>,
    pub contains_descendants: Vec<Selector>,
    pub size: Option<Size>,
    pub traits: Vec<Trait>,
}

/// `width` / `height` in pixels, each within `tolerance` (default 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Size {
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub tolerance: Option<i32>,
}
