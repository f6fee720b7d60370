//! The widget tree of one screen: the single source of truth for what the virtual phone
//! shows. Every frame is built from `PhoneState` into a `Screen` (a stack of windows of
//! widgets); the uiautomator XML, the rendered pixels and touch hit-testing are all
//! derived from that same tree, so "the screenshot shows what the hierarchy describes"
//! holds by construction rather than by keeping two code paths in sync.

use droidpilot_core::domain::{Bounds, PixelPoint};

use super::state::Cmd;

bitflags::bitflags! {
    /// uiautomator's boolean attributes, as bits.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Flags: u16 {
        const CHECKABLE = 1;
        const CHECKED = 1 << 1;
        const CLICKABLE = 1 << 2;
        const DISABLED = 1 << 3;
        const FOCUSABLE = 1 << 4;
        const FOCUSED = 1 << 5;
        const SCROLLABLE = 1 << 6;
        const LONG_CLICKABLE = 1 << 7;
        const PASSWORD = 1 << 8;
        const SELECTED = 1 << 9;
    }
}

/// How a widget is painted. The renderer only knows these looks; classes and ids are
/// for the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Look {
    /// Nothing but its background (if any) and children.
    #[default]
    Plain,
    /// Text, left-aligned and vertically centred.
    Text,
    /// Text centred, on a filled button (a pill unless `radius` says otherwise).
    Button,
    /// An icon-only button: its `icon` on its background (round), if any.
    Icon,
    /// A status bar icon: its `icon`, with its text (not its hint) before it.
    StatusIcon,
    /// A launcher icon: a round coloured tile with the app's `icon`, the label below.
    AppIcon,
    /// A switch track and thumb, on or off by the CHECKED flag.
    Switch,
    /// A text field: underline, text or hint.
    Edit,
    /// A seek bar; value 0–255 in `Widget::value`.
    Seek,
    /// A floating action button: a filled rounded square with its `icon` or label.
    Fab,
    /// A keyboard key: its `icon`, or its label when that is one character.
    Key,
    /// An indeterminate progress bar.
    Progress,
}

/// Text sizes: Material's 14, 16 and 22 sp (the painter owns the pixel sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextSize {
    Small,
    #[default]
    Normal,
    Title,
}

/// What an icon shows. The painter draws each from the Material Icons font; the
/// hierarchy carries the widget's content-desc, as on a real phone. The list
/// (`VARIANTS`) is derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::VariantArray)]
pub enum Symbol {
    Back,
    Send,
    Delete,
    Edit,
    Cart,
    Apps,
    Add,
    Search,
    Battery,
    Wifi,
    Airplane,
    Bluetooth,
    Backspace,
    Enter,
    Check,
    Chat,
    Person,
    Web,
    Alarm,
    Settings,
    Note,
    Shop,
    Close,
    MoreVert,
}

/// A corner radius that rounds a shape fully: a pill, or a circle when square.
pub const PILL: i32 = i32::MAX;

/// What a scrollable container scrolls: the state key of its offset and the maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrollInfo {
    pub key: String,
    pub max: i32,
    /// The offset shown now (a list may default to its end, like a conversation).
    pub cur: i32,
}

#[derive(Debug, Clone)]
pub struct Widget {
    pub class: &'static str,
    /// A short id (`switch_widget`, qualified with the window's package when written) or
    /// an already qualified one (`android:id/title`). Empty for none.
    pub id: String,
    pub text: String,
    /// Shown instead of `text` when `text` is empty (EditText hints). Real dumps report
    /// the hint as the text of an empty field, so the XML does too.
    pub hint: String,
    pub desc: String,
    /// Where the widget is laid out (may extend beyond a scroll viewport).
    pub frame: Bounds,
    /// What is visible: `frame` clipped by scrolling ancestors. This is what the
    /// hierarchy reports and what touches hit.
    pub bounds: Bounds,
    pub flags: Flags,
    pub look: Look,
    pub size: TextSize,
    pub bold: bool,
    pub bg: Option<[u8; 3]>,
    pub fg: [u8; 3],
    /// Corner radius of the background in design pixels (1080 wide), or `PILL`.
    pub radius: i32,
    /// The symbol an icon, key, FAB or launcher tile shows (painting only).
    pub icon: Option<Symbol>,
    pub value: u8,
    pub on_tap: Option<Cmd>,
    pub on_long: Option<Cmd>,
    /// An EditText's state key: a tap focuses it.
    pub field: Option<String>,
    /// A seek bar's command builder: a tap sets the value from the x position.
    pub slider: Option<fn(u8) -> Cmd>,
    pub scroll: Option<ScrollInfo>,
    pub children: Vec<Widget>,
    /// What the widget is before any drift (`identity`): never in the dump or the
    /// screenshot; read by `SimDevice::touched`.
    pub key: String,
    /// Painted by the app itself (a canvas game, an image of text, a web page that
    /// exposes no nodes): in the screenshot and touchable, never in the dump, with its
    /// subtree (`apps::pixels`).
    pub drawn_only: bool,
}

pub const TEXT: [u8; 3] = [32, 33, 36];
pub const SUBTLE: [u8; 3] = [95, 99, 104];
pub const ACCENT: [u8; 3] = [26, 115, 232];
pub const WHITE: [u8; 3] = [255, 255, 255];
pub const SURFACE: [u8; 3] = [248, 249, 250];

impl Widget {
    pub fn new(class: &'static str, b: Bounds) -> Self {
        Widget {
            class,
            id: String::new(),
            text: String::new(),
            hint: String::new(),
            desc: String::new(),
            frame: b,
            bounds: b,
            flags: Flags::empty(),
            look: Look::Plain,
            size: TextSize::Normal,
            bold: false,
            bg: None,
            fg: TEXT,
            radius: 0,
            icon: None,
            value: 0,
            on_tap: None,
            on_long: None,
            field: None,
            slider: None,
            scroll: None,
            children: Vec::new(),
            key: String::new(),
            drawn_only: false,
        }
    }
    pub fn frame_layout(b: Bounds) -> Self {
        Self::new("android.widget.FrameLayout", b)
    }
    pub fn linear(b: Bounds) -> Self {
        Self::new("android.widget.LinearLayout", b)
    }
    pub fn view_group(b: Bounds) -> Self {
        Self::new("android.view.ViewGroup", b)
    }
    pub fn text_view(b: Bounds, text: impl Into<String>) -> Self {
        let mut w = Self::new("android.widget.TextView", b);
        w.text = text.into();
        w.look = Look::Text;
        w
    }
    pub fn button(b: Bounds, text: impl Into<String>, cmd: Cmd) -> Self {
        let mut w = Self::new("android.widget.Button", b);
        w.text = text.into();
        w.look = Look::Button;
        w.bg = Some(ACCENT);
        w.fg = WHITE;
        w.radius = PILL;
        w.tap(cmd)
    }
    /// An icon-only button: no text, a content-desc, as real apps do; `icon` is what
    /// the picture shows. No background unless one is set (then round).
    pub fn image_button(b: Bounds, desc: impl Into<String>, icon: Symbol, cmd: Cmd) -> Self {
        let mut w = Self::new("android.widget.ImageButton", b);
        w.desc = desc.into();
        w.look = Look::Icon;
        w.icon = Some(icon);
        w.radius = PILL;
        w.tap(cmd)
    }
    pub fn edit_text(b: Bounds, field: &str, text: &str, hint: &str, focused: bool) -> Self {
        let mut w = Self::new("android.widget.EditText", b);
        w.text = text.to_string();
        w.hint = hint.to_string();
        w.look = Look::Edit;
        w.field = Some(field.to_string());
        w.flags |= Flags::CLICKABLE | Flags::FOCUSABLE | Flags::LONG_CLICKABLE;
        if focused {
            w.flags |= Flags::FOCUSED;
        }
        w
    }
    pub fn switch(b: Bounds, on: bool, cmd: Cmd) -> Self {
        let mut w = Self::new("android.widget.Switch", b);
        w.look = Look::Switch;
        w.text = if on { "ON" } else { "OFF" }.into();
        w.flags |= Flags::CHECKABLE | Flags::FOCUSABLE;
        if on {
            w.flags |= Flags::CHECKED;
        }
        w.tap(cmd)
    }
    pub fn id(mut self, id: &str) -> Self {
        self.id = id.to_string();
        self
    }
    pub fn desc(mut self, d: impl Into<String>) -> Self {
        self.desc = d.into();
        self
    }
    pub fn tap(mut self, cmd: Cmd) -> Self {
        self.on_tap = Some(cmd);
        self.flags |= Flags::CLICKABLE | Flags::FOCUSABLE;
        self
    }
    pub fn long(mut self, cmd: Cmd) -> Self {
        self.on_long = Some(cmd);
        self.flags |= Flags::LONG_CLICKABLE;
        self
    }
    pub fn flags(mut self, f: Flags) -> Self {
        self.flags |= f;
        self
    }
    pub fn bg(mut self, c: [u8; 3]) -> Self {
        self.bg = Some(c);
        self
    }
    pub fn fg(mut self, c: [u8; 3]) -> Self {
        self.fg = c;
        self
    }
    pub fn size(mut self, s: TextSize) -> Self {
        self.size = s;
        self
    }
    pub fn bold(mut self) -> Self {
        self.bold = true;
        self
    }
    pub fn look(mut self, l: Look) -> Self {
        self.look = l;
        self
    }
    pub fn icon(mut self, s: Symbol) -> Self {
        self.icon = Some(s);
        self
    }
    /// Rounds the background's corners (design pixels, or `PILL`).
    pub fn rounded(mut self, r: i32) -> Self {
        self.radius = r;
        self
    }
    pub fn child(mut self, c: Widget) -> Self {
        self.children.push(c);
        self
    }
    pub fn kids(mut self, cs: impl IntoIterator<Item = Widget>) -> Self {
        self.children.extend(cs);
        self
    }
    pub fn checked(&self) -> bool {
        self.flags.contains(Flags::CHECKED)
    }

    /// Moves the widget and its subtree down by `dy` pixels (scrolling).
    pub fn shift(&mut self, dy: i32) {
        for b in [&mut self.frame, &mut self.bounds] {
            b.top += dy;
            b.bottom += dy;
        }
        for c in &mut self.children {
            c.shift(dy);
        }
    }

    /// Opens a gap of `dy` pixels at `y`, as a layout does when something in it grows
    /// there: what starts at or below `y` moves down, what spans it grows.
    pub fn open_gap(&mut self, y: i32, dy: i32) {
        if self.frame.top >= y {
            self.shift(dy);
            return;
        }
        if self.frame.bottom >= y {
            self.frame.bottom += dy;
            self.bounds.bottom += dy;
        }
        for c in &mut self.children {
            c.open_gap(y, dy);
        }
    }

    /// Stretches the widget and its subtree vertically by `f` around y = 0 (a row laid
    /// out at the top, grown with the font size).
    pub fn scale_y(&mut self, f: f32) {
        let at = |v: i32| (v as f32 * f).round() as i32;
        for b in [&mut self.frame, &mut self.bounds] {
            b.top = at(b.top);
            b.bottom = at(b.bottom);
        }
        for c in &mut self.children {
            c.scale_y(f);
        }
    }

    /// Squeezes the widget and its subtree horizontally by `f` around x = 0, then moves
    /// it right by `dx` (a full-width row made a grid cell).
    pub fn scale_x(&mut self, f: f32, dx: i32) {
        let at = |v: i32| (v as f32 * f).round() as i32 + dx;
        for b in [&mut self.frame, &mut self.bounds] {
            b.left = at(b.left);
            b.right = at(b.right);
        }
        for c in &mut self.children {
            c.scale_x(f, 0);
            c.shift_x(dx);
        }
    }

    fn shift_x(&mut self, dx: i32) {
        for b in [&mut self.frame, &mut self.bounds] {
            b.left += dx;
            b.right += dx;
        }
        for c in &mut self.children {
            c.shift_x(dx);
        }
    }

    /// Clips visible bounds to `clip`, dropping descendants that end up invisible, the
    /// way a RecyclerView detaches off-screen rows.
    pub fn clip(&mut self, clip: &Bounds) {
        self.bounds = self.bounds.intersect(clip);
        let inner = self.bounds;
        self.children.retain_mut(|c| {
            c.clip(&inner);
            !c.bounds.is_empty()
        });
    }

    /// The deepest widget under `p` accepted by `want`, topmost (last drawn) first.
    pub fn hit<'a>(&'a self, p: PixelPoint, want: &dyn Fn(&Widget) -> bool) -> Option<&'a Widget> {
        if !self.bounds.contains(p) {
            return None;
        }
        for c in self.children.iter().rev() {
            if let Some(w) = c.hit(p, want) {
                return Some(w);
            }
        }
        want(self).then_some(self)
    }

    /// Depth-first visit, for tests and search.
    pub fn walk<'a>(&'a self, out: &mut Vec<&'a Widget>) {
        out.push(self);
        for c in &self.children {
            c.walk(out);
        }
    }
}

/// One window: an app, a dialog, the keyboard, the status bar, a toast.
#[derive(Debug, Clone)]
pub struct Window {
    pub package: String,
    pub root: Widget,
    /// A dialog: touches outside its widgets are swallowed, not passed below.
    pub modal: bool,
    /// Darken everything below before drawing this window.
    pub dim: bool,
    /// FLAG_SECURE: screenshots of a screen with such a window may come out black.
    pub secure: bool,
    /// Toasts and the gesture handle do not take touches.
    pub touchable: bool,
    /// Written to the uiautomator dump (the gesture handle is left out where it lies
    /// over something clickable, so a tap there names the app's element).
    pub dumped: bool,
}

impl Window {
    pub fn new(package: &str, root: Widget) -> Self {
        Window {
            package: package.to_string(),
            root,
            modal: false,
            dim: false,
            secure: false,
            touchable: true,
            dumped: true,
        }
    }
}

/// Everything on screen, windows bottom to top.
#[derive(Debug, Clone)]
pub struct Screen {
    pub windows: Vec<Window>,
    /// Android's font size: the painter draws text this much larger.
    pub font_scale: f32,
    /// Design pixels → device pixels, as the layout used (`ui::Ctx::s`); 0 means the
    /// screen's width / 1080.
    pub scale: f32,
}

impl Default for Screen {
    fn default() -> Self {
        Screen {
            windows: Vec::new(),
            font_scale: 1.0,
            scale: 0.0,
        }
    }
}

/// What a touch lands on.
pub enum Hit<'a> {
    Widget(&'a Widget),
    /// Swallowed by a window with nothing interactive there (a dialog's scrim, a blank
    /// area of the app).
    Blocked,
}

impl Screen {
    /// Z-order hit-testing: the topmost touchable window containing the point decides.
    pub fn hit(&self, p: PixelPoint, want: &dyn Fn(&Widget) -> bool) -> Hit<'_> {
        for w in self.windows.iter().rev() {
            if !w.touchable || !w.root.bounds.contains(p) {
                continue;
            }
            return match w.root.hit(p, want) {
                Some(x) => Hit::Widget(x),
                None => Hit::Blocked,
            };
        }
        Hit::Blocked
    }
    pub fn secure(&self) -> bool {
        self.windows.iter().any(|w| w.secure)
    }
    pub fn all(&self) -> Vec<&Widget> {
        let mut v = Vec::new();
        for w in &self.windows {
            w.root.walk(&mut v);
        }
        v
    }
}

impl Widget {
    /// The first widget of this tree (itself included, depth first) with this id.
    pub fn find_mut(&mut self, id: &str) -> Option<&mut Widget> {
        if self.id == id {
            return Some(self);
        }
        self.children.iter_mut().find_map(|c| c.find_mut(id))
    }
}

/// The first widget of a screen with this id (short, as on screen after renames).
pub fn find<'a>(screen: &'a Screen, id: &str) -> Option<&'a Widget> {
    screen.all().into_iter().find(|w| w.id == id)
}

/// How resource-ids are written: normally as is; with the "app update" fault, renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdStyle {
    AsIs,
    Renamed,
}

/// `switch_widget` → `switchWidget`, `title` → `title_v2`: what an app update that
/// refactors its layouts does to ids. Framework ids (`android:id/…`) never change.
pub fn rename_id(name: &str) -> String {
    if name.contains('_') {
        let mut out = String::with_capacity(name.len());
        let mut up = false;
        for c in name.chars() {
            if c == '_' {
                up = true;
            } else if up {
                out.extend(c.to_uppercase());
                up = false;
            } else {
                out.push(c);
            }
        }
        out
    } else {
        format!("{name}_v2")
    }
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            // XML 1.0 cannot carry other control characters at all; uiautomator drops them.
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
}

fn write_node(out: &mut String, w: &Widget, index: usize, pkg: &str, ids: IdStyle) {
    use std::fmt::Write as _;
    let b = |f: Flags| if w.flags.contains(f) { "true" } else { "false" };
    out.push_str("<node index=\"");
    let _ = write!(out, "{index}");
    out.push_str("\" text=\"");
    if w.flags.contains(Flags::PASSWORD) {
        // Android reports password text as bullets; the secret never leaves the phone.
        out.push_str(&"•".repeat(w.text.chars().count()));
    } else if w.text.is_empty() {
        escape_into(out, &w.hint);
    } else {
        escape_into(out, &w.text);
    }
    out.push_str("\" resource-id=\"");
    if !w.id.is_empty() {
        if w.id.contains(':') {
            escape_into(out, &w.id);
        } else {
            out.push_str(pkg);
            out.push_str(":id/");
            match ids {
                IdStyle::AsIs => out.push_str(&w.id),
                IdStyle::Renamed => out.push_str(&rename_id(&w.id)),
            }
        }
    }
    let _ = write!(
        out,
        "\" class=\"{}\" package=\"{}\" content-desc=\"",
        w.class, pkg
    );
    escape_into(out, &w.desc);
    let enabled = if w.flags.contains(Flags::DISABLED) {
        "false"
    } else {
        "true"
    };
    let _ = write!(
        out,
        "\" checkable=\"{}\" checked=\"{}\" clickable=\"{}\" enabled=\"{}\" focusable=\"{}\" focused=\"{}\" scrollable=\"{}\" long-clickable=\"{}\" password=\"{}\" selected=\"{}\" bounds=\"{}\"",
        b(Flags::CHECKABLE),
        b(Flags::CHECKED),
        b(Flags::CLICKABLE),
        enabled,
        b(Flags::FOCUSABLE),
        b(Flags::FOCUSED),
        b(Flags::SCROLLABLE),
        b(Flags::LONG_CLICKABLE),
        b(Flags::PASSWORD),
        b(Flags::SELECTED),
        w.bounds
    );
    let mut dumped = w.children.iter().filter(|c| !c.drawn_only).peekable();
    if dumped.peek().is_none() {
        out.push_str(" />");
    } else {
        out.push('>');
        for (i, c) in dumped.enumerate() {
            write_node(out, c, i, pkg, ids);
        }
        out.push_str("</node>");
    }
}

/// The screen as `uiautomator dump` writes it: one top-level node per window.
pub fn to_xml(screen: &Screen, ids: IdStyle) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">",
    );
    for w in screen.windows.iter().filter(|w| w.dumped) {
        write_node(&mut out, &w.root, 0, &w.package, ids);
    }
    out.push_str("</hierarchy>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_and_qualifies_ids() {
        let b = Bounds::new(0, 0, 100, 50);
        let root = Widget::frame_layout(b)
            .child(Widget::text_view(b, "Tom & \"Jerry\" <3 'x'").id("title"))
            .child(Widget::text_view(b, "t").id("android:id/summary"));
        let screen = Screen {
            windows: vec![Window::new("com.example", root)],
            ..Screen::default()
        };
        let xml = to_xml(&screen, IdStyle::AsIs);
        assert!(xml.contains("text=\"Tom &amp; &quot;Jerry&quot; &lt;3 &apos;x&apos;\""));
        assert!(xml.contains("resource-id=\"com.example:id/title\""));
        assert!(xml.contains("resource-id=\"android:id/summary\""));
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let texts: Vec<_> = doc
            .descendants()
            .filter_map(|n| n.attribute("text"))
            .collect();
        assert_eq!(texts[1], "Tom & \"Jerry\" <3 'x'");
        let renamed = to_xml(&screen, IdStyle::Renamed);
        assert!(renamed.contains("com.example:id/title_v2"));
        assert!(renamed.contains("android:id/summary"));
    }

    /// Each flag is its own uiautomator attribute (`DISABLED` the negation of `enabled`),
    /// and a password field's text leaves the phone as bullets.
    #[test]
    fn flags_are_the_hierarchy_booleans() {
        let b = Bounds::new(0, 0, 100, 50);
        let attrs = |w: Widget| {
            let screen = Screen {
                windows: vec![Window::new("com.example", w)],
                ..Screen::default()
            };
            let xml = to_xml(&screen, IdStyle::AsIs);
            let doc = roxmltree::Document::parse(&xml).unwrap();
            let node = doc.descendants().find(|n| n.has_tag_name("node")).unwrap();
            let names = [
                "checkable",
                "checked",
                "clickable",
                "enabled",
                "focusable",
                "focused",
                "scrollable",
                "long-clickable",
                "password",
                "selected",
            ];
            let on: Vec<&str> = names
                .into_iter()
                .filter(|a| node.attribute(*a) == Some("true"))
                .collect();
            (on.join(" "), node.attribute("text").unwrap().to_string())
        };
        assert_eq!(attrs(Widget::text_view(b, "t")).0, "enabled");
        let mut pw = Widget::edit_text(b, "pw", "hunter2", "Password", true);
        pw.flags |= Flags::PASSWORD;
        assert_eq!(
            attrs(pw),
            (
                "clickable enabled focusable focused long-clickable password".into(),
                "•••••••".into()
            )
        );
        let on = Widget::switch(b, true, Cmd::Home);
        assert!(on.checked());
        assert_eq!(attrs(on).0, "checkable checked clickable enabled focusable");
        let rest =
            Widget::text_view(b, "t").flags(Flags::DISABLED | Flags::SCROLLABLE | Flags::SELECTED);
        assert_eq!(attrs(rest).0, "scrollable selected");
    }

    #[test]
    fn rename_makes_camel_case() {
        assert_eq!(rename_id("switch_widget"), "switchWidget");
        assert_eq!(rename_id("fab"), "fab_v2");
    }

    #[test]
    fn clip_drops_invisible_children() {
        let mut list = Widget::frame_layout(Bounds::new(0, 100, 100, 200))
            .child(Widget::text_view(Bounds::new(0, 50, 100, 150), "half"))
            .child(Widget::text_view(Bounds::new(0, 250, 100, 300), "gone"));
        let clip = list.bounds;
        list.clip(&clip);
        assert_eq!(list.children.len(), 1);
        assert_eq!(list.children[0].bounds, Bounds::new(0, 100, 100, 150));
        assert_eq!(list.children[0].frame, Bounds::new(0, 50, 100, 150));
    }
}
