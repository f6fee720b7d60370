//! Clock: the alarm list (toggle, delete, long-press menu) and the add-alarm screen with
//! hour and minute NumberPickers. A picker steps with its +/− buttons, scrolls by the
//! swiped distance, or takes a typed number in its input field, like Android's.

use droidpilot_core::domain::Bounds;

use super::super::state::{Alarm, Cmd, Dialog, Page, PhoneState, field};
use super::super::ui::{Ctx, ROW, app_frame, fab, scroll_list};
use super::super::widget::{Flags, SUBTLE, Symbol, TextSize, Widget};

pub fn time_label(h: u8, m: u8) -> String {
    let (h12, ampm) = match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    };
    format!("{h12}:{m:02} {ampm}")
}

fn parse(st: &PhoneState, k: &str, max: u32) -> Option<u32> {
    st.field(k).trim().parse::<u32>().ok().filter(|v| *v < max)
}

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::AlarmNew => {
            st.set_field(field::ALARM_HOUR, "08");
            st.set_field(field::ALARM_MINUTE, "00");
            st.push(Page::AlarmEdit);
        }
        Cmd::Pick {
            field: f,
            delta,
            modulo,
        } => {
            let cur = parse(st, &f, modulo).unwrap_or(0) as i64;
            let m = modulo.max(1) as i64;
            let v = (cur + delta as i64).rem_euclid(m);
            st.set_field(&f, format!("{v:02}"));
        }
        Cmd::AlarmSave => {
            let (Some(h), Some(m)) = (
                parse(st, field::ALARM_HOUR, 24),
                parse(st, field::ALARM_MINUTE, 60),
            ) else {
                st.toast("Enter a valid time");
                return;
            };
            let id = st.id();
            st.alarms.push(Alarm {
                id,
                hour: h as u8,
                minute: m as u8,
                enabled: true,
            });
            st.alarms.sort_by_key(|a| (a.hour, a.minute, a.id));
            st.back();
            let now = (st.clock_ms / 60_000) % (24 * 60);
            let at = (h * 60 + m) as u64;
            let mins = (at + 24 * 60 - now) % (24 * 60);
            st.toast(format!(
                "Alarm set for {} hours and {} minutes from now",
                mins / 60,
                mins % 60
            ));
        }
        Cmd::AlarmToggle { id } => {
            if let Some(a) = st.alarms.iter_mut().find(|a| a.id == id) {
                a.enabled = !a.enabled;
            }
        }
        Cmd::AlarmDelete { id } => {
            st.alarms.retain(|a| a.id != id);
            st.toast("Alarm deleted");
        }
        Cmd::AlarmMenu { id } => {
            st.dialog = Some(Dialog::menu(
                "com.google.android.deskclock",
                "alarm_menu",
                vec![
                    ("Delete", Cmd::AlarmDelete { id }),
                    ("Cancel", Cmd::CloseDialog),
                ],
            ));
        }
        _ => {}
    }
}

fn picker(cx: &Ctx, st: &PhoneState, id: &str, f: &str, modulo: u32, x: i32) -> Widget {
    let cur = parse(st, f, modulo).unwrap_or(0) as i64;
    let m = modulo as i64;
    let fmt = |v: i64| format!("{:02}", v.rem_euclid(m));
    let top = cx.content_top() + cx.d(200);
    let (l, r) = (x, x + cx.d(300));
    let step = cx.d(170);
    let focused = st.focus.as_deref() == Some(f);
    let mut p = Widget::new(
        "android.widget.NumberPicker",
        Bounds::new(l, top, r, top + 3 * step),
    )
    .id(id)
    .flags(Flags::FOCUSABLE | Flags::SCROLLABLE | Flags::LONG_CLICKABLE);
    p.scroll = Some(super::super::widget::ScrollInfo {
        key: format!("picker:{f}:{modulo}"),
        max: 0,
        cur: 0,
    });
    p.children = vec![
        Widget::button(
            Bounds::new(l, top, r, top + step),
            fmt(cur - 1),
            Cmd::Pick {
                field: f.into(),
                delta: -1,
                modulo,
            },
        )
        .bg([241, 243, 244])
        .fg(SUBTLE),
        Widget::edit_text(
            Bounds::new(l, top + step, r, top + 2 * step),
            f,
            st.field(f),
            "",
            focused,
        )
        .id("android:id/numberpicker_input")
        .size(TextSize::Title),
        Widget::button(
            Bounds::new(l, top + 2 * step, r, top + 3 * step),
            fmt(cur + 1),
            Cmd::Pick {
                field: f.into(),
                delta: 1,
                modulo,
            },
        )
        .bg([241, 243, 244])
        .fg(SUBTLE),
    ];
    p
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    match page {
        Some(Page::AlarmEdit) => {
            let top = cx.content_top();
            // The pickers and buttons are drawn for 1080 design pixels; on a narrower phone
            // (fewer dp) they stay centred instead of running off the right edge.
            let dx = ((cx.w - cx.d(1080)) / 2).min(0);
            let x = |v: i32| cx.d(v) + dx;
            let kids = vec![
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(40), cx.w - cx.d(60), top + cx.d(160)),
                    "Set alarm time (24-hour)",
                )
                .fg(SUBTLE),
                picker(cx, st, "hour", field::ALARM_HOUR, 24, x(160)),
                Widget::text_view(
                    Bounds::new(x(470), top + cx.d(370), x(610), top + cx.d(540)),
                    ":",
                )
                .size(TextSize::Title),
                picker(cx, st, "minute", field::ALARM_MINUTE, 60, x(620)),
                Widget::button(
                    Bounds::new(x(120), top + cx.d(800), x(500), top + cx.d(940)),
                    "Cancel",
                    Cmd::Back,
                )
                .id("android:id/button2")
                .bg([241, 243, 244])
                .fg(super::super::widget::ACCENT),
                Widget::button(
                    Bounds::new(x(580), top + cx.d(800), x(960), top + cx.d(940)),
                    "OK",
                    Cmd::AlarmSave,
                )
                .id("android:id/button1"),
            ];
            app_frame(cx, "Add alarm", true, vec![], kids)
        }
        _ => {
            let area = Bounds::new(0, cx.content_top(), cx.w, cx.h);
            let rows: Vec<Widget> = st
                .alarms
                .iter()
                .map(|a| {
                    let h = cx.d(ROW + 40);
                    Widget::view_group(Bounds::new(0, 0, cx.w, h))
                        .id("alarm_item")
                        .long(Cmd::AlarmMenu { id: a.id })
                        .tap(Cmd::Nop)
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), 0, cx.d(600), h),
                                time_label(a.hour, a.minute),
                            )
                            .id("digital_clock")
                            .size(TextSize::Title)
                            .fg(if a.enabled {
                                super::super::widget::TEXT
                            } else {
                                SUBTLE
                            }),
                        )
                        .child(
                            Widget::image_button(
                                Bounds::new(cx.d(640), cx.d(44), cx.d(760), h - cx.d(44)),
                                "Delete alarm",
                                Symbol::Delete,
                                Cmd::AlarmDelete { id: a.id },
                            )
                            .id("delete"),
                        )
                        .child(
                            Widget::switch(
                                Bounds::new(cx.d(830), cx.d(54), cx.d(1020), h - cx.d(54)),
                                a.enabled,
                                Cmd::AlarmToggle { id: a.id },
                            )
                            .id("onoff")
                            .desc(time_label(a.hour, a.minute)),
                        )
                })
                .collect();
            let mut kids = vec![];
            if rows.is_empty() {
                kids.push(
                    Widget::text_view(
                        Bounds::new(0, area.top + cx.d(200), cx.w, area.top + cx.d(320)),
                        "No alarms",
                    )
                    .id("alarms_empty_view"),
                );
            }
            kids.push(scroll_list(st, cx, "clock.alarms", area, rows));
            kids.push(fab(cx, st, "+", "Add alarm", "fab", Cmd::AlarmNew));
            app_frame(cx, "Alarm", false, vec![], kids)
        }
    }
}
