//! Text that needs more lines than it had: a translation (German runs about a third
//! longer than English) or a longer label an update brings wraps onto another line, and
//! its list row grows by that line's height, as a `wrap_content` row does on Android;
//! what is below it in the row and the rows after it move down.
//!
//! The apps' rows are laid out for their own (English) strings. A text is measured as the
//! app wrote it and as the phone shows it (`Ctx::shown`: renamed, then translated), with
//! the font the painter draws it in at the phone's font size (`render::lines`); the row
//! grows by a line's height for each line the shown text needs beyond the app's own, so
//! the English phone's layout is the one the apps were written with and the picture
//! shows the lines the layout made room for.

use super::render;
use super::ui::Ctx;
use super::widget::{Look, Widget};

/// Grows a list row (laid out from its own top) for every text in it that wraps.
pub fn grow_row(row: &mut Widget, cx: &Ctx) {
    let mut paths = Vec::new();
    texts(row, &mut Vec::new(), &mut paths);
    for path in paths {
        let w = at(row, &path);
        let extra = extra_height(w, cx);
        if extra > 0 {
            let y = w.frame.bottom;
            row.open_gap(y, extra);
        }
    }
}

/// The height a text needs beyond its box: one line's height for each line the shown
/// text takes beyond the app's own.
pub fn extra_height(w: &Widget, cx: &Ctx) -> i32 {
    if w.text.is_empty() || w.frame.width() <= 0 {
        return 0;
    }
    let shown = cx.shown(&w.text);
    if shown == w.text {
        return 0;
    }
    let px = render::line_height(w.size, cx.font_scale, cx.s);
    let lines = |s: &str| render::lines(s, w.frame.width(), w.bold, px) as i32;
    (lines(&shown) - lines(&w.text)).max(0) * px
}

/// The paths (child indices) of a tree's text views.
fn texts(w: &Widget, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if w.look == Look::Text && !w.drawn_only {
        out.push(path.clone());
    }
    for (i, c) in w.children.iter().enumerate() {
        path.push(i);
        texts(c, path, out);
        path.pop();
    }
}

fn at<'a>(w: &'a Widget, path: &[usize]) -> &'a Widget {
    path.iter().fold(w, |w, &i| &w.children[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locale::Locale;
    use droidpilot_core::domain::Bounds;

    fn row(cx: &Ctx, title: &str) -> Widget {
        crate::ui::row(cx, 168, title, "", None)
    }

    /// A label that fits stays one line; the same label in a language that needs two
    /// lines grows its row by a line's height, and only then.
    #[test]
    fn a_label_that_wraps_grows_its_row_by_a_line() {
        let en = Ctx::new(1080, 2400);
        let de = Ctx {
            locale: Locale::De,
            ..en.clone()
        };
        // "Battery" fits either way; "Volume, haptics, Do Not Disturb" in German
        // ("Lautstärke, haptisches Feedback, Bitte nicht stören") no longer fits a line.
        let mut short = row(&de, "Battery");
        grow_row(&mut short, &de);
        assert_eq!(short.frame.height(), 168);
        let long = "Volume, haptics, Do Not Disturb";
        let mut a = row(&en, long);
        grow_row(&mut a, &en);
        assert_eq!(a.frame.height(), 168, "one line in English");
        let mut b = row(&de, long);
        grow_row(&mut b, &de);
        let line = render::line_height(crate::widget::TextSize::Normal, 1.0, 1.0);
        assert_eq!(b.frame.height(), 168 + line, "two lines in German");
        assert_eq!(b.children[0].frame.height(), 168 + line, "the label grew");
    }

    #[test]
    fn a_gap_moves_what_is_below_and_grows_what_spans_it() {
        let mut w = Widget::linear(Bounds::new(0, 0, 100, 100))
            .child(Widget::text_view(Bounds::new(0, 0, 100, 40), "a"))
            .child(Widget::text_view(Bounds::new(0, 40, 100, 80), "b"));
        w.open_gap(40, 30);
        assert_eq!(w.frame.bottom, 130);
        assert_eq!(w.children[0].frame, Bounds::new(0, 0, 100, 70));
        assert_eq!(w.children[1].frame, Bounds::new(0, 70, 100, 110));
    }
}
