//! Web pages whose text is only pixels, for OCR (`droidpilot_core::screen::ocr`): what a
//! person reads there, the UI dump does not hold. Each is a Browser URL:
//!
//! - `arcade.example`: an HTML canvas game. The page's one node is the `<canvas>` (a
//!   `View` with no text); its title, score, level and buttons are drawn on it. PLAY
//!   opens `arcade.example/play`, where "Try again" comes back.
//! - `promo.example`: an article with text nodes and an image banner (an `Image` with no
//!   alt text) whose sale is drawn in the picture; tapping it opens `promo.example/sale`.
//!   A "Subscribe" image button with no label has its word drawn on it, filling it.
//! - `legacy.example`: a page that exposes no nodes at all (a WebView with no children,
//!   as pages with broken accessibility give): a bank's sign-in page; "Sign in" opens
//!   `legacy.example/account`.
//!
//! Drawn text is `Widget::drawn_only`: painted and touchable like any widget (a canvas
//! app hit-tests its own drawing), never written to the dump.

use droidpilot_core::domain::Bounds;

use super::super::state::Cmd;
use super::super::ui::Ctx;
use super::super::widget::{ACCENT, Look, TextSize, WHITE, Widget};

pub const ARCADE: &str = "https://arcade.example/";
pub const PROMO: &str = "https://promo.example/";
pub const LEGACY: &str = "https://legacy.example/";

/// The page for `url` when it is one of these, filling `area`.
pub fn page(cx: &Ctx, url: &str, area: Bounds) -> Option<Widget> {
    let u = url.trim_end_matches('/');
    let page = match u {
        "https://arcade.example" => arcade(cx, area),
        "https://arcade.example/play" => game_over(cx, area),
        "https://promo.example" => promo(cx, area),
        "https://legacy.example" => legacy(cx, area),
        _ => return None,
    };
    let mut web = Widget::new("android.webkit.WebView", area).bg(WHITE);
    web.text = u.trim_start_matches("https://").to_string();
    Some(web.child(page))
}

/// Text drawn at `b` (design offsets from the top of `area`), never in the dump.
fn drawn(cx: &Ctx, area: Bounds, (l, t, r, b): (i32, i32, i32, i32), text: &str) -> Widget {
    let mut w = Widget::text_view(
        Bounds::new(cx.d(l), area.top + cx.d(t), cx.d(r), area.top + cx.d(b)),
        text,
    );
    w.drawn_only = true;
    w
}

/// A button drawn on the page (a Material tonal pill: dark label on a light fill),
/// never in the dump.
fn drawn_button(cx: &Ctx, area: Bounds, at: (i32, i32, i32, i32), text: &str, cmd: Cmd) -> Widget {
    filled(cx, area, at, text, cmd)
        .bg([211, 227, 253])
        .fg([4, 30, 73])
}

/// A filled button (white on the accent colour), never in the dump. Tesseract does not
/// find light text on a saturated fill: the measurement counts this one as a miss.
fn filled(cx: &Ctx, area: Bounds, at: (i32, i32, i32, i32), text: &str, cmd: Cmd) -> Widget {
    let (l, t, r, b) = at;
    let mut w = Widget::button(
        Bounds::new(cx.d(l), area.top + cx.d(t), cx.d(r), area.top + cx.d(b)),
        text,
        cmd,
    );
    w.drawn_only = true;
    w
}

fn open(url: &str) -> Cmd {
    Cmd::BrowserOpen { url: url.into() }
}

fn arcade(cx: &Ctx, area: Bounds) -> Widget {
    let canvas = Widget::new("android.view.View", area).bg([255, 243, 205]);
    canvas.kids([
        drawn(cx, area, (80, 120, 1000, 240), "SPACE ROCKS")
            .size(TextSize::Title)
            .bold(),
        drawn(cx, area, (80, 300, 480, 380), "Score 1200"),
        drawn(cx, area, (700, 300, 1000, 380), "Level 3"),
        drawn_button(
            cx,
            area,
            (290, 700, 790, 860),
            "PLAY",
            open("https://arcade.example/play"),
        ),
        filled(cx, area, (290, 940, 790, 1100), "High scores", Cmd::Nop),
        drawn(cx, area, (80, 1300, 1000, 1380), "Tap PLAY to start"),
    ])
}

fn game_over(cx: &Ctx, area: Bounds) -> Widget {
    let canvas = Widget::new("android.view.View", area).bg([255, 243, 205]);
    canvas.kids([
        drawn(cx, area, (80, 120, 1000, 240), "GAME OVER")
            .size(TextSize::Title)
            .bold(),
        drawn(cx, area, (80, 300, 480, 380), "Score 0"),
        drawn_button(cx, area, (290, 700, 790, 860), "Try again", open(ARCADE)),
    ])
}

fn promo(cx: &Ctx, area: Bounds) -> Widget {
    let text = |t: i32, b: i32, s: &str, size: TextSize| {
        let mut w = Widget::new(
            "android.view.View",
            Bounds::new(
                cx.d(40),
                area.top + cx.d(t),
                cx.w - cx.d(40),
                area.top + cx.d(b),
            ),
        );
        w.text = s.to_string();
        w.look = Look::Text;
        w.size = size;
        w
    };
    let banner_b = Bounds::new(
        cx.d(40),
        area.top + cx.d(300),
        cx.w - cx.d(40),
        area.top + cx.d(700),
    );
    let banner = Widget::new("android.widget.Image", banner_b)
        .bg([255, 224, 178])
        .rounded(36)
        .tap(open("https://promo.example/sale"))
        .kids([
            drawn(cx, area, (100, 360, 980, 480), "SUMMER SALE")
                .size(TextSize::Title)
                .bold(),
            drawn(cx, area, (100, 520, 980, 620), "50% off everything"),
        ]);
    // An image button with no label whose word fills it: OCR's box is the button.
    let sub_b = Bounds::new(
        cx.d(56),
        area.top + cx.d(1006),
        cx.d(256),
        area.top + cx.d(1050),
    );
    let mut word = Widget::text_view(sub_b, "Subscribe").bold();
    word.drawn_only = true;
    let subscribe = Widget::new("android.widget.Image", sub_b)
        .tap(Cmd::Nop)
        .child(word);
    Widget::new("android.view.View", area).kids([
        text(20, 160, "Weekly deals", TextSize::Title),
        text(180, 280, "Fresh offers every Monday.", TextSize::Small),
        banner,
        text(760, 860, "Prices include tax.", TextSize::Small),
        subscribe,
    ])
}

fn legacy(cx: &Ctx, area: Bounds) -> Widget {
    // No page node at all: everything is drawn straight on the WebView.
    let mut page = Widget::new("android.view.View", area);
    page.drawn_only = true;
    page.kids([
        drawn(cx, area, (80, 120, 1000, 240), "Legacy Bank")
            .size(TextSize::Title)
            .bold(),
        drawn(cx, area, (80, 300, 1000, 380), "Account balance"),
        drawn(cx, area, (80, 400, 1000, 500), "$1,234.56").size(TextSize::Title),
        drawn_button(
            cx,
            area,
            (290, 700, 790, 860),
            "Sign in",
            open("https://legacy.example/account"),
        ),
        drawn(cx, area, (80, 1000, 1000, 1080), "Forgot password?").fg(ACCENT),
    ])
}

/// The texts a person reads on `screen`: every painted label (text views, buttons,
/// field text or hint, status bar values), drawn-only or not. What OCR is measured
/// against (`droidpilot bench ocr`).
pub fn painted_text(screen: &super::super::widget::Screen) -> Vec<String> {
    screen
        .all()
        .into_iter()
        .filter(|w| !w.bounds.is_empty())
        .filter_map(|w| match w.look {
            Look::Text | Look::Button | Look::Fab | Look::StatusIcon => Some(w.text.clone()),
            Look::Edit if w.text.is_empty() => Some(w.hint.clone()),
            Look::Edit => Some(w.text.clone()),
            _ => None,
        })
        .filter(|t| !t.trim().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::AppId;
    use crate::{SimConfig, SimDevice};

    fn open(url: &str) -> SimDevice {
        let sim = SimDevice::new(SimConfig::default()).unwrap();
        sim.apply(Cmd::Launch {
            app: AppId::Browser,
        });
        sim.apply(Cmd::BrowserOpen { url: url.into() });
        sim.advance_clock(5_000);
        sim
    }

    #[test]
    fn the_pages_text_is_painted_but_not_in_the_dump() {
        for (url, drawn, dumped) in [
            (ARCADE, ["SPACE ROCKS", "PLAY", "Score 1200"], None),
            (
                PROMO,
                ["SUMMER SALE", "Subscribe", "50% off everything"],
                Some("Weekly deals"),
            ),
            (LEGACY, ["Legacy Bank", "Sign in", "$1,234.56"], None),
        ] {
            let sim = open(url);
            let xml = sim.hierarchy_now();
            let painted = painted_text(&sim.screen());
            for t in drawn {
                assert!(
                    painted.iter().any(|p| p == t),
                    "{url}: {t} not painted: {painted:?}"
                );
                assert!(!xml.contains(t), "{url}: {t} is in the dump");
            }
            if let Some(t) = dumped {
                assert!(xml.contains(t), "{url}: {t} missing from the dump");
            }
        }
        // The page without nodes: the WebView has no children at all.
        let xml = open(LEGACY).hierarchy_now();
        assert!(xml.contains("class=\"android.webkit.WebView\""));
        let web = xml.split("android.webkit.WebView").nth(1).unwrap();
        let tag = &web[..web.find('>').unwrap()];
        assert!(tag.ends_with(" /"), "the WebView has children: {web}");
    }

    #[test]
    fn drawn_buttons_take_taps_like_a_canvas_app_hit_tests_its_drawing() {
        let sim = open(ARCADE);
        let screen = sim.screen();
        let play = screen.all().into_iter().find(|w| w.text == "PLAY").unwrap();
        assert!(play.drawn_only);
        assert_eq!(
            play.on_tap,
            Some(Cmd::BrowserOpen {
                url: "https://arcade.example/play".into()
            })
        );
    }
}
