//! Builds the `Screen` (windows of widgets) from `PhoneState`: the system chrome shared
//! by every app (status bar, toolbar, keyboard, dialogs, toasts), the launcher and
//! recents, and the scrolling-list helper. App screens live in `apps/`.
//!
//! Layout is written in "design pixels" for a 1080-wide phone and scaled by the screen's
//! shorter side / 1080 (a dp is the same size in portrait and landscape), so any
//! configured size works: a taller screen shows more rows, a wider one (a tablet, a phone
//! in landscape) stretches rows, bars and dialogs to its width, and the keyboard takes at
//! most half the height.

use droidpilot_core::domain::Bounds;

use super::apps;
use super::state::{AppId, Dialog, Fg, IME_PACKAGE, LAUNCHER_PACKAGE, PhoneState, SYSTEMUI};
use super::state::{Cmd, HOUR_MS};
use super::widget::{
    ACCENT, Flags, Look, PILL, SUBTLE, SURFACE, Screen, Symbol, TEXT, TextSize, WHITE, Widget,
    Window,
};

/// Rendering-relevant knobs derived from the device config and its faults.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub w: i32,
    pub h: i32,
    /// Scale from design pixels (1080 wide) to device pixels.
    pub s: f32,
    /// Seed for the "reordered list items" fault; None keeps lists in order.
    pub reorder: Option<u64>,
    /// Extra loading delay from the "delayed elements" fault, in virtual ms.
    pub extra_delay_ms: u64,
    /// Seed of the "moved elements" drift; None keeps the layout (see `drift`).
    pub moved: Option<u64>,
    /// Seed of the "changed labels" drift; None keeps the labels (see `drift`).
    pub relabel: Option<u64>,
    /// Device pixels the "moved elements" banner pushes the current app's content down
    /// by: a scrolling list's viewport is that much shorter, as a real layout gives the
    /// banner its room, so the list's last rows still scroll into view (see `drift`).
    pub list_inset: i32,
    /// Ids and strings renamed by an app update (`renames`); empty for none.
    pub renames: std::sync::Arc<super::renames::RenameMap>,
    /// The phone's UI language (`locale`).
    pub locale: super::locale::Locale,
    /// Android's font size: text and list rows grow by it.
    pub font_scale: f32,
    /// Seed of the `icon_buttons` drift; None keeps text buttons (see `redesign`).
    pub icon_buttons: Option<u64>,
    /// Seed of the `list_to_grid` drift: item lists as grids.
    pub grid: Option<u64>,
    /// Seed of the `overflow_menu` drift: actions in a "More options" menu.
    pub overflow: Option<u64>,
    /// Seed of the `confirm_destructive` drift: destructive actions ask first.
    pub confirm: Option<u64>,
    /// Seed of the `release_layout` drift: the layout changes a release makes around its
    /// renames, per app (see `drift::release_layout`).
    pub release: Option<u64>,
    /// Device pixels a list row grows by (a release's larger paddings); 0 for none.
    pub row_pad: i32,
    /// Where a release adds a line to every list row (`drift::Place::Row*`); None for
    /// none.
    pub row_line: Option<super::drift::Place>,
    /// Where the keyboard's top lies in this layout's coordinates, when it is not the
    /// screen's (a split-screen window: `split`); `i32::MAX` for a window it never covers.
    pub ime_top: Option<i32>,
}

pub const STATUS_BAR: i32 = 84;
pub const TOOLBAR: i32 = 168;
pub const ROW: i32 = 168;
pub const KEYBOARD: i32 = 880;
/// The density the design pixels are drawn at: 1080 of them are 411 dp.
pub const DESIGN_DPI: f32 = 420.0;
/// Below this height in design pixels (a phone shorter than 16:9 in dp) an app's page
/// scrolls, as on a landscape phone.
const SHORT: i32 = 1900;

impl Ctx {
    pub fn new(w: u32, h: u32) -> Self {
        Ctx {
            w: w as i32,
            h: h as i32,
            s: w.min(h) as f32 / 1080.0,
            reorder: None,
            extra_delay_ms: 0,
            moved: None,
            relabel: None,
            list_inset: 0,
            renames: Default::default(),
            locale: Default::default(),
            font_scale: 1.0,
            icon_buttons: None,
            grid: None,
            overflow: None,
            confirm: None,
            release: None,
            row_pad: 0,
            row_line: None,
            ime_top: None,
        }
    }
    /// What the phone shows for an app's string `s`: renamed by the rename map, then
    /// translated into the phone's language (layout measures text with it).
    pub fn shown(&self, s: &str) -> String {
        let s = self.renames.strings.get(s).map_or(s, String::as_str);
        super::locale::localize(s, self.locale).unwrap_or_else(|| s.to_string())
    }
    /// Design pixels → device pixels.
    pub fn d(&self, v: i32) -> i32 {
        (v as f32 * self.s).round() as i32
    }
    /// A rectangle in design pixels.
    pub fn r(&self, l: i32, t: i32, r: i32, b: i32) -> Bounds {
        Bounds::new(self.d(l), self.d(t), self.d(r).min(self.w), self.d(b))
    }
    pub fn full(&self) -> Bounds {
        Bounds::new(0, 0, self.w, self.h)
    }
    /// Top of the content below status bar and toolbar.
    pub fn content_top(&self) -> i32 {
        self.d(STATUS_BAR + TOOLBAR)
    }
    pub fn keyboard_top(&self) -> i32 {
        self.ime_top.unwrap_or(self.h - self.keyboard_height())
    }
    /// The keyboard's height: its design height, at most half the screen (landscape).
    pub fn keyboard_height(&self) -> i32 {
        self.d(KEYBOARD).min(self.h / 2)
    }
    /// The bottom of the area an app lays out its bottom bar in: above the keyboard when
    /// it is shown (adjustResize), the screen bottom otherwise.
    pub fn bottom(&self, st: &PhoneState) -> i32 {
        if st.keyboard {
            self.keyboard_top().min(self.h)
        } else {
            self.h
        }
    }
    /// Whether content that loads `base_ms` after its page opened is there yet.
    pub fn loaded(&self, st: &PhoneState, base_ms: u64) -> bool {
        st.clock_ms >= st.page_at_ms + base_ms + self.extra_delay_ms
    }
    /// Whether a list is still syncing: under the "delayed elements" drift, each page's
    /// lists load their fresh content `extra_delay_ms` after the page opened, and until
    /// then show a sync row on top that pushes the rows they already have down (as a
    /// real app does while its content provider or server catches up).
    pub fn syncing(&self, st: &PhoneState) -> bool {
        self.extra_delay_ms > 0 && !self.loaded(st, 0)
    }
    /// The order list `key` shows its `n` items in: identity, or a seeded permutation
    /// under the "reordered list items" fault (stable for a given seed and list).
    pub fn order(&self, key: &str, n: usize) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..n).collect();
        if let Some(seed) = self.reorder {
            use rand::SeedableRng;
            use rand::seq::SliceRandom;
            let mut h: u64 = seed ^ 0x9e37_79b9_7f4a_7c15;
            for b in key.bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(h);
            idx.shuffle(&mut rng);
        }
        idx
    }
}

/// The app frame: root FrameLayout, a content LinearLayout, a toolbar with an optional
/// up button, a title and action buttons, then the page's content.
pub fn app_frame(
    cx: &Ctx,
    title: &str,
    up: bool,
    actions: Vec<Widget>,
    content: Vec<Widget>,
) -> Widget {
    let tb = Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.content_top());
    let mut toolbar = Widget::view_group(tb).id("toolbar").bg(SURFACE);
    let mut x = cx.d(48);
    if up {
        toolbar = toolbar.child(
            Widget::image_button(
                cx.r(24, STATUS_BAR + 24, 144, STATUS_BAR + 144),
                "Navigate up",
                Symbol::Back,
                Cmd::Back,
            )
            .id("android:id/home"),
        );
        x = cx.d(180);
    }
    let n = actions.len() as i32;
    let title_right = cx.w - cx.d(24 + 144 * n);
    toolbar = toolbar.child(
        Widget::text_view(Bounds::new(x, tb.top, title_right, tb.bottom), title)
            .size(TextSize::Title)
            .bold(),
    );
    toolbar = toolbar.kids(actions);
    Widget::frame_layout(cx.full()).child(
        Widget::linear(Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.h))
            .id("android:id/content")
            .bg(WHITE)
            .child(toolbar)
            .kids(content),
    )
}

/// The i-th toolbar action slot from the right.
pub fn action_slot(cx: &Ctx, i: i32) -> Bounds {
    let right = cx.w - cx.d(24 + 144 * i);
    Bounds::new(
        right - cx.d(144),
        cx.d(STATUS_BAR + 12),
        right,
        cx.d(STATUS_BAR + 156),
    )
}

/// The row a list shows on top while it syncs under the "delayed elements" drift: a
/// progress bar and "Syncing…", one row tall, over the rows it already has.
fn sync_row(cx: &Ctx, area: Bounds) -> Widget {
    let b = Bounds::new(0, area.top, cx.w, area.top + cx.d(ROW));
    let bar = Widget::new(
        "android.widget.ProgressBar",
        Bounds::new(cx.d(48), b.top + cx.d(44), cx.d(128), b.top + cx.d(124)),
    )
    .id(SYNC_ID)
    .look(Look::Progress)
    .bg(ACCENT);
    let label = Widget::text_view(
        Bounds::new(cx.d(168), b.top, cx.w - cx.d(48), b.bottom),
        "Syncing…",
    )
    .fg(SUBTLE);
    Widget::linear(b).bg(SURFACE).child(bar).child(label)
}

/// The resource-id of the progress bar a syncing list shows (see `Ctx::syncing`).
pub const SYNC_ID: &str = "sync_progress";

/// A vertical list that scrolls by `st.scroll[key]`. Rows are laid out with `top == 0`
/// and stacked in order; rows outside `area` are dropped and partly visible rows are
/// clipped, like a RecyclerView.
pub fn scroll_list(
    st: &PhoneState,
    cx: &Ctx,
    key: &str,
    area: Bounds,
    rows: Vec<Widget>,
) -> Widget {
    // Under the "moved elements" drift the banner takes the top of the app's area and the
    // list is pushed down by as much: its viewport ends where it ended before.
    let area = Bounds {
        bottom: (area.bottom - cx.list_inset).max(area.top + 1),
        ..area
    };
    let order = cx.order(key, rows.len());
    let slots: Vec<Option<Widget>> = rows.into_iter().map(Some).collect();
    let mut laid = Vec::with_capacity(slots.len() + 1);
    let mut y = 0;
    if cx.syncing(st) {
        let sync = sync_row(cx, area);
        y += sync.frame.height();
        laid.push(sync);
    }
    y = lay_rows(cx, key, area.top, y, rows_in_order(slots, order), &mut laid);
    let max = (y - area.height()).max(0);
    let off = st.scroll.get(key).copied().unwrap_or(0).clamp(0, max);
    let mut list =
        Widget::new("androidx.recyclerview.widget.RecyclerView", area).id("recycler_view");
    if max > 0 {
        list.flags |= Flags::SCROLLABLE | Flags::FOCUSABLE;
        list.scroll = Some(super::widget::ScrollInfo {
            key: key.to_string(),
            max,
            cur: off,
        });
    }
    for mut r in laid {
        r.shift(-off);
        list.children.push(r);
    }
    list.clip(&area);
    list
}

fn rows_in_order(mut slots: Vec<Option<Widget>>, order: Vec<usize>) -> Vec<Widget> {
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Stacks a list's rows from `y` (relative to the list's `top`) into `laid`, and returns
/// where they end: taller under a larger font, a release's paddings and a label that
/// wraps (`reflow`), and under the "list to grid" drift as cells, two or three a line
/// (seeded), in the same order.
fn lay_rows(
    cx: &Ctx,
    key: &str,
    top: i32,
    mut y: i32,
    rows: Vec<Widget>,
    laid: &mut Vec<Widget>,
) -> i32 {
    let cols = match cx.grid {
        Some(seed) if super::redesign::grid_list(key) => super::redesign::columns(seed, key),
        _ => 1,
    };
    let (mut col, mut line) = (0, 0);
    for mut r in rows {
        // Rows are laid out at y = 0: a larger font, a release's larger paddings and a
        // label that wraps make them taller.
        r.shift(-r.frame.top);
        if cx.font_scale != 1.0 {
            r.scale_y(cx.font_scale);
        }
        let h = r.frame.height();
        if cx.row_pad > 0 && h > 0 {
            r.scale_y((h + cx.row_pad) as f32 / h as f32);
        }
        super::reflow::grow_row(&mut r, cx);
        if let Some(place) = cx.row_line {
            super::drift::release_line(&mut r, cx, place);
        }
        if cols > 1 {
            r.scale_x(1.0 / cols as f32, col * cx.w / cols);
        }
        line = line.max(r.frame.height());
        r.shift(top + y - r.frame.top);
        col += 1;
        if col == cols {
            y += line;
            (col, line) = (0, 0);
        }
        laid.push(r);
    }
    y + line
}

/// A settings-style row: title, optional summary, optional trailing widget.
pub fn row(cx: &Ctx, height: i32, title: &str, summary: &str, tap: Option<Cmd>) -> Widget {
    let b = Bounds::new(0, 0, cx.w, cx.d(height));
    let mut r = Widget::linear(b);
    if let Some(c) = tap {
        r = r.tap(c);
    }
    let text_right = cx.w - cx.d(220);
    if summary.is_empty() {
        r.child(
            Widget::text_view(Bounds::new(cx.d(48), 0, text_right, b.bottom), title)
                .id("android:id/title"),
        )
    } else {
        let mid = b.bottom / 2 + cx.d(8);
        r.child(
            Widget::text_view(Bounds::new(cx.d(48), cx.d(16), text_right, mid), title)
                .id("android:id/title"),
        )
        .child(
            Widget::text_view(
                Bounds::new(cx.d(48), mid, text_right, b.bottom - cx.d(16)),
                summary,
            )
            .id("android:id/summary")
            .fg(SUBTLE)
            .size(TextSize::Small),
        )
    }
}

/// A floating action button at the bottom right.
pub fn fab(cx: &Ctx, st: &PhoneState, text: &str, desc: &str, id: &str, cmd: Cmd) -> Widget {
    let bottom = cx.bottom(st) - cx.d(60);
    let mut w = Widget::new(
        "android.widget.ImageButton",
        Bounds::new(
            cx.w - cx.d(228),
            bottom - cx.d(168),
            cx.w - cx.d(60),
            bottom,
        ),
    )
    .id(id)
    .desc(desc)
    .look(Look::Fab)
    .bg(ACCENT)
    .fg(WHITE)
    .rounded(42)
    .tap(cmd);
    w.text = String::new();
    w.hint = text.to_string();
    if text == "+" {
        w.icon = Some(Symbol::Add);
    }
    w
}

pub fn clock_text(ms: u64) -> String {
    let m = (ms / 60_000) % (24 * 60);
    format!("{}:{:02}", m / 60, m % 60)
}

fn status_bar(st: &PhoneState, cx: &Ctx) -> Window {
    let b = Bounds::new(0, 0, cx.w, cx.d(STATUS_BAR));
    // Transparent over what is below; light icons over the dark lock screen and recents.
    let fg = if st.locked || st.fg == Fg::Recents {
        WHITE
    } else {
        TEXT
    };
    let mut icons = Vec::new();
    let mut x = cx.w - cx.d(48);
    // A status icon's hint or text is what the dump reads; only text is painted.
    let mut icon = |desc: &str, sym: Symbol, hint: &str, text: &str| {
        let r = Bounds::new(x - cx.d(120), 0, x, b.bottom);
        x -= cx.d(130);
        let mut w = Widget::new("android.widget.ImageView", r)
            .desc(desc)
            .look(Look::StatusIcon)
            .icon(sym)
            .fg(fg)
            .size(TextSize::Small);
        w.hint = hint.into();
        w.text = text.into();
        icons.push(w);
    };
    icon("Battery 85 percent.", Symbol::Battery, "", "85%");
    if st.settings.airplane {
        icon("Airplane mode.", Symbol::Airplane, "AIR", "");
    }
    if st.settings.wifi {
        icon("Wifi signal full.", Symbol::Wifi, "WiFi", "");
    }
    if st.settings.bluetooth {
        icon("Bluetooth on.", Symbol::Bluetooth, "BT", "");
    }
    let root = Widget::frame_layout(b)
        .id("com.android.systemui:id/status_bar_container")
        .child(
            Widget::text_view(cx.r(48, 0, 300, STATUS_BAR), clock_text(st.clock_ms))
                .id("com.android.systemui:id/clock")
                .size(TextSize::Small)
                .fg(fg)
                .bold(),
        )
        .kids(icons);
    Window::new(SYSTEMUI, root)
}

/// The gesture navigation handle: a pill over the bottom inset, drawn over everything
/// and never touched. It is in the dump only where nothing clickable lies under it.
fn gesture_handle(st: &PhoneState, cx: &Ctx, below: &[Window]) -> Window {
    let b = Bounds::new(
        cx.w / 2 - cx.d(140),
        cx.h - cx.d(30),
        cx.w / 2 + cx.d(140),
        cx.h - cx.d(19),
    );
    let dark_below = st.locked || st.fg == Fg::Recents;
    let root = Widget::new("android.view.View", b)
        .id("com.android.systemui:id/home_handle")
        .bg(if dark_below {
            [232, 234, 237]
        } else {
            [32, 33, 36]
        })
        .rounded(PILL);
    let mut w = Window::new(SYSTEMUI, root);
    w.touchable = false;
    w.dumped = !below.iter().filter(|w| w.touchable).any(|w| {
        let mut all = Vec::new();
        w.root.walk(&mut all);
        all.iter().any(|n| {
            n.flags.intersects(Flags::CLICKABLE | Flags::LONG_CLICKABLE)
                && !n.bounds.intersect(&b).is_empty()
        })
    });
    w
}

const KEY_ROWS: [&str; 3] = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];
/// A German keyboard: QWERTZ.
const KEY_ROWS_DE: [&str; 3] = ["qwertzuiop", "asdfghjkl", "yxcvbnm"];

fn keyboard(cx: &Ctx) -> Window {
    let rows = match cx.locale {
        super::locale::Locale::De => KEY_ROWS_DE,
        super::locale::Locale::En => KEY_ROWS,
    };
    let top = cx.keyboard_top();
    let b = Bounds::new(0, top, cx.w, cx.h);
    let key_h = (cx.keyboard_height() - cx.d(80)) / 4;
    let key_w = cx.w / 10;
    let mut kids = Vec::new();
    let key = |r: Bounds, label: &str, desc: &str, cmd: Cmd| {
        let mut k = Widget::new("android.widget.FrameLayout", r)
            .desc(desc)
            .look(Look::Key)
            .bg(WHITE)
            .rounded(16)
            .tap(cmd);
        k.hint = label.to_string();
        k
    };
    for (ri, keys) in rows.iter().enumerate() {
        let n = keys.chars().count() as i32;
        let x0 = (cx.w - n * key_w) / 2 - if ri == 2 { key_w / 2 } else { 0 };
        let y = top + cx.d(40) + ri as i32 * key_h;
        for (i, c) in keys.chars().enumerate() {
            let r = Bounds::new(
                x0 + i as i32 * key_w + 4,
                y + 6,
                x0 + (i as i32 + 1) * key_w - 4,
                y + key_h - 6,
            );
            kids.push(key(r, &c.to_string(), &c.to_string(), Cmd::KeyChar { c }));
        }
        if ri == 2 {
            let r = Bounds::new(x0 + n * key_w + 4, y + 6, cx.w - 8, y + key_h - 6);
            kids.push(key(r, "DEL", "Delete", Cmd::KeyDelete).icon(Symbol::Backspace));
        }
    }
    let y = top + cx.d(40) + 3 * key_h;
    kids.push(key(
        Bounds::new(key_w + 4, y + 6, 2 * key_w - 4, y + key_h - 6),
        ",",
        ",",
        Cmd::KeyChar { c: ',' },
    ));
    kids.push(key(
        Bounds::new(2 * key_w + 4, y + 6, 7 * key_w - 4, y + key_h - 6),
        "space",
        "Space",
        Cmd::KeyChar { c: ' ' },
    ));
    kids.push(key(
        Bounds::new(7 * key_w + 4, y + 6, 8 * key_w - 4, y + key_h - 6),
        ".",
        ".",
        Cmd::KeyChar { c: '.' },
    ));
    kids.push(
        key(
            Bounds::new(8 * key_w + 4, y + 6, cx.w - 8, y + key_h - 6),
            "ENTER",
            "Enter",
            Cmd::KeyEnter,
        )
        .icon(Symbol::Enter)
        .bg(ACCENT)
        .fg(WHITE),
    );
    let root = Widget::frame_layout(b).bg([232, 234, 237]).child(
        Widget::frame_layout(b)
            .id("com.google.android.inputmethod.latin:id/keyboard_holder")
            .kids(kids),
    );
    Window::new(IME_PACKAGE, root)
}

fn dialog_window(d: &Dialog, cx: &Ctx) -> Window {
    let mut panel_kids = Vec::new();
    let left = cx.d(90);
    let right = cx.w - cx.d(90);
    let mut y = 0;
    if d.menu {
        for b in &d.buttons {
            let mut item = Widget::linear(Bounds::new(left, y, right, y + cx.d(150)));
            item.key = b.key.clone();
            panel_kids.push(
                item.tap(b.cmd.clone()).child(
                    Widget::text_view(
                        Bounds::new(left + cx.d(48), y, right, y + cx.d(150)),
                        &b.text,
                    )
                    .id(&b.id),
                ),
            );
            y += cx.d(150);
        }
    } else {
        y += cx.d(40);
        if !d.title.is_empty() {
            panel_kids.push(
                Widget::text_view(
                    Bounds::new(left + cx.d(60), y, right - cx.d(60), y + cx.d(110)),
                    &d.title,
                )
                .id("android:id/alertTitle")
                .size(TextSize::Title)
                .bold(),
            );
            y += cx.d(120);
        }
        if !d.message.is_empty() {
            let shown = cx.shown(&d.message);
            let lines = super::render::wrap_count(&shown, (right - left - cx.d(120)) as usize);
            let h = cx.d(60) * lines.max(1) as i32 + cx.d(30);
            panel_kids.push(
                Widget::text_view(
                    Bounds::new(left + cx.d(60), y, right - cx.d(60), y + h),
                    &d.message,
                )
                .id("android:id/message")
                .fg(SUBTLE),
            );
            y += h + cx.d(20);
        }
        let n = d.buttons.len().max(1) as i32;
        let bw = (right - left - cx.d(60)) / n;
        for (i, b) in d.buttons.iter().enumerate() {
            let x = left + cx.d(30) + i as i32 * bw;
            // Material 3 dialogs end with text buttons.
            let mut button = Widget::button(
                Bounds::new(x + cx.d(10), y, x + bw - cx.d(10), y + cx.d(130)),
                &b.text,
                b.cmd.clone(),
            )
            .id(&b.id)
            .fg(ACCENT);
            button.bg = None;
            button.key = b.key.clone();
            panel_kids.push(button);
        }
        y += cx.d(170);
    }
    let top = (cx.h - y) / 2;
    for k in &mut panel_kids {
        k.shift(top);
    }
    let panel = Widget::linear(Bounds::new(left, top, right, top + y))
        .id(if d.menu {
            "android:id/select_dialog_listview"
        } else {
            "android:id/parentPanel"
        })
        .bg(WHITE)
        .rounded(72)
        .kids(panel_kids);
    let mut w = Window::new(&d.package, Widget::frame_layout(cx.full()).child(panel));
    w.modal = true;
    w.dim = true;
    w
}

fn toast_window(text: &str, st: &PhoneState, cx: &Ctx) -> Window {
    let bottom = cx.bottom(st) - cx.d(200);
    let b = Bounds::new(cx.d(120), bottom - cx.d(120), cx.w - cx.d(120), bottom);
    let root = Widget::frame_layout(b)
        .bg([60, 64, 67])
        .rounded(PILL)
        .child(
            Widget::text_view(
                Bounds::new(b.left + cx.d(40), b.top, b.right - cx.d(20), b.bottom),
                text,
            )
            .id("android:id/message")
            .fg(WHITE)
            .size(TextSize::Small),
        );
    let mut w = Window::new(st.package(), root);
    w.touchable = false;
    w
}

fn app_icon(cx: &Ctx, b: Bounds, app: AppId) -> Widget {
    let sym = match app {
        AppId::Settings => Symbol::Settings,
        AppId::Contacts => Symbol::Person,
        AppId::Clock => Symbol::Alarm,
        AppId::Messages => Symbol::Chat,
        AppId::Notes => Symbol::Note,
        AppId::Browser => Symbol::Web,
        AppId::Shop => Symbol::Shop,
    };
    let mut w = Widget::text_view(b, app.label())
        .id("icon")
        .desc(app.label())
        .look(Look::AppIcon)
        .icon(sym)
        .tap(Cmd::Launch { app })
        .flags(Flags::LONG_CLICKABLE);
    w.size = TextSize::Small;
    let _ = cx;
    w
}

const HOME_APPS: [AppId; 5] = [
    AppId::Messages,
    AppId::Contacts,
    AppId::Browser,
    AppId::Clock,
    AppId::Settings,
];

fn grid(cx: &Ctx, top: i32, apps: &[AppId]) -> Vec<Widget> {
    apps.iter()
        .enumerate()
        .map(|(i, a)| {
            // Four columns across the screen's width, rows of the design's height.
            let (c, r) = (i as i32 % 4, i as i32 / 4);
            let (t, col) = (top + r * 330, cx.w / 4);
            app_icon(
                cx,
                Bounds::new(c * col, cx.d(t), (c + 1) * col, cx.d(t + 300)),
                *a,
            )
        })
        .collect()
}

fn launcher(st: &PhoneState, cx: &Ctx, drawer: bool) -> Window {
    let mut root = Widget::frame_layout(cx.full()).bg([210, 227, 252]);
    if drawer {
        let mut apps = <AppId as strum::VariantArray>::VARIANTS.to_vec();
        apps.sort_by_key(|a| a.label());
        let panel = Widget::frame_layout(Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.h))
            .id("apps_view")
            .bg(WHITE)
            .child(
                Widget::text_view(
                    cx.r(48, STATUS_BAR + 20, 1032, STATUS_BAR + 160),
                    "All apps",
                )
                .size(TextSize::Title)
                .bold(),
            )
            .child(
                Widget::new(
                    "androidx.recyclerview.widget.RecyclerView",
                    Bounds::new(0, cx.d(STATUS_BAR + 180), cx.w, cx.h),
                )
                .id("apps_list_view")
                .kids(grid(cx, STATUS_BAR + 200, &apps)),
            );
        root = root.child(panel);
    } else {
        let day = st.clock_ms / (24 * HOUR_MS);
        const DAYS: [&str; 7] = [
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
            "Monday",
        ];
        let date = format!("{}, Jan {}", DAYS[(day % 7) as usize], 2 + day);
        root = root
            .child(
                Widget::text_view(cx.r(60, 200, 1020, 320), date)
                    .id("date")
                    .size(TextSize::Title),
            )
            .child({
                // Above the All apps button, and below the date on a short (landscape) screen.
                let ws_top = (cx.h - cx.d(1000)).max(cx.d(340));
                Widget::view_group(Bounds::new(0, ws_top, cx.w, cx.h - cx.d(300)))
                    .id("workspace")
                    .kids(grid(cx, 0, &HOME_APPS).into_iter().map(|mut w| {
                        w.shift(ws_top);
                        w
                    }))
            })
            .child(
                Widget::image_button(
                    Bounds::new(
                        cx.w / 2 - cx.d(90),
                        cx.h - cx.d(260),
                        cx.w / 2 + cx.d(90),
                        cx.h - cx.d(80),
                    ),
                    "All apps",
                    Symbol::Apps,
                    Cmd::OpenDrawer,
                )
                .bg([232, 234, 237])
                .id("all_apps_button"),
            );
    }
    Window::new(LAUNCHER_PACKAGE, root)
}

fn recents(st: &PhoneState, cx: &Ctx) -> Window {
    let mut kids = Vec::new();
    if st.recents.is_empty() {
        kids.push(
            Widget::text_view(
                Bounds::new(0, cx.h / 2 - cx.d(200), cx.w, cx.h / 2 - cx.d(50)),
                "No recent items",
            )
            .id("empty_message"),
        );
    }
    for (i, a) in st.recents.iter().enumerate() {
        let top = STATUS_BAR + 60 + i as i32 * 380;
        kids.push(
            Widget::frame_layout(cx.r(120, top, 960, top + 340))
                .id("snapshot")
                .desc(a.label())
                .bg(WHITE)
                .rounded(40)
                .tap(Cmd::Recent { app: *a })
                .child(
                    Widget::text_view(cx.r(160, top, 920, top + 120), a.label())
                        .id("title")
                        .bold(),
                )
                .child(
                    Widget::text_view(cx.r(160, top + 120, 920, top + 240), "Tap to open")
                        .fg(SUBTLE)
                        .size(TextSize::Small),
                ),
        );
    }
    let list = Widget::frame_layout(Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.h - cx.d(240)))
        .id("overview_panel")
        .kids(kids);
    let mut list = list;
    list.clip(&Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.h - cx.d(240)));
    let root = Widget::frame_layout(cx.full())
        .bg([95, 99, 104])
        .child(list)
        .child(
            Widget::button(
                Bounds::new(
                    cx.w / 2 - cx.d(200),
                    cx.h - cx.d(200),
                    cx.w / 2 + cx.d(200),
                    cx.h - cx.d(80),
                ),
                "Clear all",
                Cmd::RecentsClear,
            )
            .id("clear_all"),
        );
    Window::new(LAUNCHER_PACKAGE, root)
}

fn lock_screen(st: &PhoneState, cx: &Ctx) -> Window {
    let root = Widget::frame_layout(cx.full())
        .id("com.android.systemui:id/keyguard_root_view")
        .bg([32, 33, 36])
        .child(
            Widget::text_view(cx.r(0, 500, 1080, 700), clock_text(st.clock_ms))
                .id("com.android.systemui:id/keyguard_clock")
                .size(TextSize::Title)
                .fg(WHITE),
        )
        .child(
            Widget::text_view(
                Bounds::new(0, cx.h - cx.d(400), cx.w, cx.h - cx.d(300)),
                "Swipe up to unlock",
            )
            .id("com.android.systemui:id/keyguard_indication_text")
            .fg(WHITE),
        );
    Window::new(SYSTEMUI, root)
}

/// The height of a field's caret line with its padding, in design pixels: the part of a
/// focused field a page scrolls into view (a one-line field is about this tall).
const CARET_LINE: i32 = 150;

/// In landscape, on tablets (a shorter side over 1080 px) and in a split-screen window, a page taller than the app's area (a form, the alarm editor, a product
/// page) scrolls as one, as a ScrollView does, and a focused field is scrolled above the
/// keyboard (adjustResize) until the user scrolls it. Pages with a list already scroll; bars anchored to the
/// bottom stay. The offset is `st.scroll["page:…"]`.
fn scroll_page(root: &mut Widget, cx: &Ctx, st: &PhoneState, app: AppId) {
    let bottom = cx.bottom(st);
    let top = cx.content_top();
    let Some(content) = root.find_mut("android:id/content") else {
        return;
    };
    let mut all = Vec::new();
    content.walk(&mut all);
    if all.iter().any(|w| w.class.ends_with("RecyclerView")) {
        return;
    }
    let anchored = |b: &Bounds| (bottom - cx.d(60) - 1..=bottom).contains(&b.bottom);
    let end = all
        .iter()
        .filter(|w| !anchored(&w.frame))
        .map(|w| w.frame.bottom)
        .max()
        .unwrap_or(0);
    let max = end + cx.d(40) - bottom;
    if max <= 0 {
        return;
    }
    let key = format!(
        "page:{}:{}",
        app.package(),
        st.stacks.get(&app).map_or(0, Vec::len)
    );
    // Until the user scrolls the page, the focused field's caret is brought into view, as
    // ScrollView does with a TextView's focused rect (the caret's line, not the whole
    // field): a one-line field whole, a tall multi-line field its first line, so a note's
    // title above a focused body stays on screen when the line fits.
    let focused = all
        .iter()
        .find(|w| w.flags.contains(Flags::FOCUSED))
        .map_or(0, |w| {
            let caret = w.frame.bottom.min(w.frame.top + cx.d(CARET_LINE));
            (caret + cx.d(40) - bottom).min(w.frame.top - top)
        });
    let off = st
        .scroll
        .get(&key)
        .copied()
        .unwrap_or(focused)
        .clamp(0, max);
    let area = Bounds::new(0, top, cx.w, bottom);
    let mut page =
        Widget::new("android.widget.ScrollView", area).flags(Flags::SCROLLABLE | Flags::FOCUSABLE);
    page.scroll = Some(super::widget::ScrollInfo { key, max, cur: off });
    let mut i = 1;
    while i < content.children.len() {
        if anchored(&content.children[i].frame) {
            i += 1;
        } else {
            let mut c = content.children.remove(i);
            c.shift(-off);
            page.children.push(c);
        }
    }
    page.clip(&area);
    content.children.insert(1, page);
}

/// An app's window: its page built, then the drifts an app update brings, in order
/// (touch keys stamped first, when `stamp`).
fn app_window(app: AppId, st: &PhoneState, cx: &Ctx, stamp: bool) -> Window {
    use super::drift::{Place, Release, release_layout};
    let release = cx
        .release
        .map_or(Release::Same, |s| release_layout(s, app.package()));
    let app_cx = Ctx {
        list_inset: cx
            .moved
            .map_or(0, |seed| cx.d(super::drift::shift_for(seed, app.package())))
            + super::drift::list_room(release, cx),
        row_pad: if release == Release::Spacing {
            cx.d(super::drift::SPACING)
        } else {
            0
        },
        row_line: match release {
            Release::NewView(p @ (Place::RowFirst | Place::RowMiddle | Place::RowLast)) => Some(p),
            _ => None,
        },
        ..cx.clone()
    };
    let (mut root, sec) = apps::build(app, st, &app_cx);
    if stamp {
        super::identity::stamp(&mut root);
    }
    // A split-screen window (its own keyboard line) is as short as a landscape phone.
    let short = (cx.h as f32 / cx.s) < SHORT as f32;
    if cx.w > cx.h || cx.w.min(cx.h) > 1080 || short || cx.ime_top.is_some() {
        scroll_page(&mut root, cx, st, app);
    }
    if let Some(seed) = cx.moved {
        let bottom = cx.bottom(st);
        super::drift::move_app_content(&mut root, cx, bottom, seed, app.package());
    }
    if let Release::NewView(place) = release {
        let bottom = cx.bottom(st);
        super::drift::release_row(&mut root, cx, bottom, place);
    }
    if let Some(seed) = cx.overflow {
        super::redesign::overflow(&mut root, cx, seed, app.package());
    }
    if let Some(seed) = cx.icon_buttons {
        super::redesign::iconify(&mut root, cx, seed, app.package());
    }
    if let Some(seed) = cx.relabel {
        super::drift::relabel(&mut root, seed, app.package());
    }
    let mut w = Window::new(app.package(), root);
    w.secure = sec;
    w
}

/// What applies to every window: confirmations before destructive actions, the rename
/// map, the language (touch keys stamped first, when `stamp`).
fn every_window(windows: &mut [Window], st: &PhoneState, cx: &Ctx, stamp: bool) {
    let confirming = st
        .dialog
        .as_ref()
        .is_some_and(|d| d.kind == super::redesign::CONFIRM_KIND);
    for w in windows {
        if stamp {
            super::identity::stamp(&mut w.root);
        }
        // A confirmation's own button does what it confirms.
        if let Some(seed) = cx.confirm
            && !(confirming && w.modal)
        {
            super::redesign::confirm(&mut w.root, seed, &w.package);
        }
        cx.renames.apply(&mut w.root, &w.package);
        super::locale::translate(&mut w.root, cx.locale);
    }
}

/// The whole screen for a state.
pub fn build(st: &PhoneState, cx: &Ctx) -> Screen {
    // Keys are stamped only when a drift would change what they are made of.
    let stamp = cx.confirm.is_some() || cx.overflow.is_some() || !cx.renames.is_empty();
    let mut windows = Vec::with_capacity(5);
    match st.fg {
        _ if st.locked => windows.push(lock_screen(st, cx)),
        Fg::Home => {
            let mut w = launcher(st, cx, false);
            if let Some(seed) = cx.moved {
                super::drift::move_launcher(&mut w.root, cx, seed, LAUNCHER_PACKAGE);
            }
            windows.push(w);
        }
        Fg::Drawer => windows.push(launcher(st, cx, true)),
        Fg::Recents => windows.push(recents(st, cx)),
        Fg::App(_) if st.split.is_some() => {
            let s = st.split.expect("checked");
            windows.extend(super::split::windows(&s, st, cx, &|app, c| {
                app_window(app, st, c, stamp)
            }));
        }
        Fg::App(app) => windows.push(app_window(app, st, cx, stamp)),
    }
    windows.push(status_bar(st, cx));
    if st.keyboard && st.focus.is_some() {
        windows.push(keyboard(cx));
    }
    // A dialog is drawn over the keyboard, as on a phone: a system alert's window layer is
    // above the input method's, and an app's dialog takes the focus from the field.
    if let Some(d) = &st.dialog {
        windows.push(dialog_window(d, cx));
    }
    if let Some(t) = &st.toast {
        windows.push(toast_window(&t.text, st, cx));
    }
    windows.push(gesture_handle(st, cx, &windows));
    every_window(&mut windows, st, cx, stamp);
    Screen {
        windows,
        font_scale: cx.font_scale,
        scale: cx.s,
    }
}

#[cfg(test)]
mod tests {
    use crate::widget::Flags;
    use crate::{AppId, Cmd, SimConfig, SimDevice};

    #[test]
    fn the_gesture_handle_is_dumped_only_clear_of_clickable_content() {
        let d = SimDevice::new(SimConfig::default()).unwrap();
        let handle = "com.android.systemui:id/home_handle";
        assert!(
            d.hierarchy_now().contains(handle),
            "nothing under it at home"
        );
        d.apply(Cmd::Launch {
            app: AppId::Contacts,
        });
        assert!(
            !d.hierarchy_now().contains(handle),
            "contact rows run under it: a tap there names the row"
        );
        let screen = d.screen();
        let bar = screen.windows.last().unwrap();
        assert_eq!(bar.root.id, handle);
        assert!(!bar.touchable, "touches pass through to the app");
    }

    /// A new note on a short phone (720×1280 at 320 dpi, 640 dp tall): the body has the
    /// focus and the keyboard is up. As ScrollView does with a TextView's focused rect
    /// (its caret line), the page scrolls only as far as the body's first line needs,
    /// so the title above it stays on screen; scrolling the whole tall body into view
    /// would push the title off the top.
    #[test]
    fn a_focused_tall_field_keeps_the_field_above_it_on_a_short_phone() {
        let p = SimDevice::new(SimConfig {
            width: 720,
            height: 1280,
            density: 320,
            density_layout: true,
            ..SimConfig::default()
        })
        .unwrap();
        p.apply(Cmd::Launch { app: AppId::Notes });
        p.apply(Cmd::NoteNew);
        let screen = p.screen();
        let all = screen.all();
        let body = all
            .iter()
            .find(|w| w.id.ends_with("edit_note_text"))
            .unwrap();
        assert!(
            body.flags.contains(Flags::FOCUSED),
            "the body has the focus"
        );
        assert!(
            all.iter().any(|w| w.id.ends_with("editable_title")),
            "the title is on screen"
        );
        assert!(
            p.hierarchy_now().contains("editable_title"),
            "and in the dump"
        );
    }

    fn rows(p: &SimDevice) -> Vec<(String, i32)> {
        let screen = p.screen();
        let list = crate::widget::find(&screen, "recycler_view").expect("a list");
        list.children
            .iter()
            .map(|r| {
                let mut all = Vec::new();
                r.walk(&mut all);
                let name = all
                    .iter()
                    .find(|w| !w.text.is_empty())
                    .unwrap()
                    .text
                    .clone();
                (name, r.frame.height())
            })
            .collect()
    }

    /// A larger font makes list rows taller by as much, so fewer fit and the last ones
    /// go below the fold; the text is painted larger; a tap on a row still opens it.
    #[tokio::test]
    async fn a_larger_font_grows_rows_and_pushes_them_below_the_fold() {
        use droidpilot_core::device::Device;
        let phone = |font_scale| {
            let p = SimDevice::new(SimConfig {
                font_scale,
                ..SimConfig::default()
            })
            .unwrap();
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
            p
        };
        let (clean, big) = (phone(1.0), phone(1.5));
        let (a, b) = (rows(&clean), rows(&big));
        assert_eq!(b[0].1, a[0].1 * 3 / 2, "rows 1.5 times as tall");
        assert!(
            b.len() < a.len(),
            "fewer rows fit: {} < {}",
            b.len(),
            a.len()
        );
        let last = &a.last().unwrap().0;
        assert!(!big.hierarchy_now().contains(&format!("text=\"{last}\"")));
        assert_ne!(clean.render_now(), big.render_now());
        let screen = big.screen();
        let row = screen
            .all()
            .into_iter()
            .find(|w| w.text == "Bob Smith")
            .unwrap()
            .bounds;
        big.tap(row.center()).await.unwrap();
        let id = big
            .state()
            .contacts
            .iter()
            .find(|c| c.name == "Bob Smith")
            .unwrap()
            .id;
        assert_eq!(big.state().page(), Some(&crate::Page::ContactDetail { id }));
    }

    /// Text is painted larger: a title line takes more rows of pixels at 1.5.
    #[test]
    fn a_larger_font_paints_larger_text() {
        let ink = |font_scale| {
            let p = SimDevice::new(SimConfig {
                font_scale,
                ..SimConfig::default()
            })
            .unwrap();
            p.apply(Cmd::Launch { app: AppId::Clock });
            let px = p.render_now();
            // Dark pixels in the first alarm row's band (the "6:00 AM" title).
            let (w, top, bottom) = (1080usize, 420usize, 560usize);
            (top..bottom)
                .flat_map(|y| (0..w / 2).map(move |x| (y * w + x) * 4))
                .filter(|&i| px[i] < 140)
                .count()
        };
        assert!(ink(1.5) > ink(1.0) * 5 / 4, "{} vs {}", ink(1.5), ink(1.0));
    }

    /// A phone in landscape and a tablet: the layout scales by the shorter side, so bars
    /// and rows keep their size; the keyboard takes at most half the height; toolbar
    /// actions and the home screen's icons spread to the width; nothing interactive lies
    /// off screen.
    #[test]
    fn landscape_and_tablets_are_laid_out_to_their_width() {
        for (width, height) in [(2400, 1080), (2560, 1600), (1600, 2560)] {
            let p = SimDevice::new(SimConfig {
                width,
                height,
                ..SimConfig::default()
            })
            .unwrap();
            let (w, h) = (width as i32, height as i32);
            let within = |p: &SimDevice| {
                let screen = p.screen();
                for n in screen.all() {
                    if n.on_tap.is_some() && !n.bounds.is_empty() {
                        let b = n.bounds;
                        assert!(b.left >= 0 && b.right <= w && b.top >= 0 && b.bottom <= h);
                    }
                }
            };
            within(&p);
            let screen = p.screen();
            let icons: Vec<_> = screen
                .all()
                .into_iter()
                .filter(|n| n.id == "icon")
                .collect();
            assert!(
                icons.iter().any(|i| i.bounds.right == w),
                "{width}x{height}"
            );
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
            p.apply(Cmd::ContactNew);
            p.apply(Cmd::Focus {
                field: crate::state::field::CONTACT_PHONE.into(),
            });
            within(&p);
            let screen = p.screen();
            let kb = screen
                .windows
                .iter()
                .find(|x| x.package == crate::state::IME_PACKAGE)
                .unwrap();
            assert!(kb.root.bounds.height() <= h / 2, "{width}x{height}");
            let save = crate::widget::find(&screen, "editor_menu_save_button").unwrap();
            assert!(
                save.bounds.right > w - w / 8,
                "at the right end: {:?}",
                save.bounds
            );
            let phone = crate::widget::find(&screen, "phone_edit").unwrap();
            assert!(
                phone.bounds.bottom <= kb.root.bounds.top,
                "the focused field shows"
            );
            assert_eq!(p.render_now().len(), (w * h * 4) as usize);
        }
    }
}
