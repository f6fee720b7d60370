//! Settings: Wi-Fi, Bluetooth and airplane-mode switches, a brightness slider, About
//! phone (tapping the build number seven times enables developer options, as on a
//! real phone), and Accounts: a sign-in form with a real password field.

use droidpilot_core::domain::Bounds;

use super::super::state::{Cmd, Page, PhoneState, Setting, field};
use super::super::ui::{Ctx, app_frame, row, scroll_list};
use super::super::widget::{Flags, Look, SUBTLE, TextSize, Widget};

/// The one account the Accounts page accepts.
pub const ACCOUNT_EMAIL: &str = "alex@example.com";
pub const ACCOUNT_PASSWORD: &str = "correct-horse-42";

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    let s = &mut st.settings;
    match cmd {
        Cmd::Toggle { setting } => match setting {
            Setting::Wifi => s.wifi = !s.wifi,
            Setting::Bluetooth => s.bluetooth = !s.bluetooth,
            Setting::Airplane => {
                s.airplane = !s.airplane;
                // Airplane mode turns the radios off, as Android does by default.
                if s.airplane {
                    s.wifi = false;
                    s.bluetooth = false;
                }
            }
        },
        Cmd::Brightness { value } => s.brightness = value,
        Cmd::SignIn => sign_in(st),
        Cmd::BuildNumber => {
            if s.developer_options {
                st.toast("No need, you are already a developer.");
                return;
            }
            s.build_taps += 1;
            let left = 7u32.saturating_sub(s.build_taps);
            if left == 0 {
                s.developer_options = true;
                st.toast("You are now a developer!");
            } else if left <= 4 {
                st.toast(format!(
                    "You are now {left} step{} away from being a developer.",
                    if left == 1 { "" } else { "s" }
                ));
            }
        }
        _ => {}
    }
}

/// Checks the form; either way the password field is emptied, as sign-in forms do.
fn sign_in(st: &mut PhoneState) {
    let email = st.field(field::ACCOUNT_EMAIL).trim().to_string();
    let ok = email.eq_ignore_ascii_case(ACCOUNT_EMAIL)
        && st.field(field::ACCOUNT_PASSWORD) == ACCOUNT_PASSWORD;
    st.set_field(field::ACCOUNT_PASSWORD, "");
    if ok {
        st.settings.account = Some(ACCOUNT_EMAIL.to_string());
        st.focus = None;
        st.keyboard = false;
        st.toast(format!("Signed in as {ACCOUNT_EMAIL}"));
    } else {
        st.toast("Wrong e-mail or password");
    }
}

/// The Accounts page: the sign-in form, or who is signed in.
fn account_page(st: &PhoneState, cx: &Ctx) -> Widget {
    let top = cx.content_top();
    let b = |t: i32, bottom: i32| {
        Bounds::new(cx.d(60), top + cx.d(t), cx.w - cx.d(60), top + cx.d(bottom))
    };
    let label = |t: i32, text: &str| {
        Widget::text_view(b(t, t + 70), text)
            .fg(SUBTLE)
            .size(TextSize::Small)
    };
    let kids = match &st.settings.account {
        Some(email) => {
            vec![Widget::text_view(b(30, 130), format!("Signed in as {email}")).id("account_name")]
        }
        None => {
            let focused = |k: &str| st.focus.as_deref() == Some(k);
            let mut password = Widget::edit_text(
                b(460, 610),
                field::ACCOUNT_PASSWORD,
                st.field(field::ACCOUNT_PASSWORD),
                "Password",
                focused(field::ACCOUNT_PASSWORD),
            )
            .id("password");
            password.flags |= Flags::PASSWORD;
            vec![
                Widget::text_view(b(30, 100), "Sign in to sync your settings"),
                label(130, "Email"),
                Widget::edit_text(
                    b(200, 350),
                    field::ACCOUNT_EMAIL,
                    st.field(field::ACCOUNT_EMAIL),
                    "Email",
                    focused(field::ACCOUNT_EMAIL),
                )
                .id("email"),
                label(390, "Password"),
                password,
                Widget::button(b(680, 830), "Sign in", Cmd::SignIn).id("sign_in"),
            ]
        }
    };
    app_frame(cx, "Accounts", true, vec![], kids)
}

fn switch_row(cx: &Ctx, title: &str, summary: &str, on: bool, setting: Setting) -> Widget {
    let r = row(cx, 200, title, summary, Some(Cmd::Toggle { setting }));
    let b = r.frame;
    r.child(
        Widget::switch(
            Bounds::new(
                cx.w - cx.d(200),
                b.top + cx.d(50),
                cx.w - cx.d(48),
                b.bottom - cx.d(50),
            ),
            on,
            Cmd::Toggle { setting },
        )
        .id("switch_widget"),
    )
}

fn brightness_value(v: u8) -> Cmd {
    Cmd::Brightness { value: v }
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    let area = Bounds::new(0, cx.content_top(), cx.w, cx.h);
    let s = &st.settings;
    match page {
        Some(Page::SettingsAccount) => account_page(st, cx),
        Some(Page::SettingsAbout) => {
            let rows = vec![
                row(cx, 200, "Device name", &s.device_name, None),
                row(cx, 200, "Model", "Pixel 8", None),
                row(cx, 200, "Android version", "14", None),
                row(
                    cx,
                    200,
                    "IP address",
                    if s.wifi {
                        "192.168.1.23"
                    } else {
                        "Unavailable"
                    },
                    None,
                ),
                row(
                    cx,
                    200,
                    "Build number",
                    "UQ1A.240205.004",
                    Some(Cmd::BuildNumber),
                ),
            ];
            app_frame(
                cx,
                "About phone",
                true,
                vec![],
                vec![scroll_list(st, cx, "settings.about", area, rows)],
            )
        }
        _ => {
            let mut slider = Widget::new(
                "android.widget.SeekBar",
                Bounds::new(cx.d(48), cx.d(110), cx.w - cx.d(48), cx.d(190)),
            )
            .id("seekbar")
            .desc("Brightness level")
            .look(Look::Seek)
            .flags(Flags::FOCUSABLE | Flags::CLICKABLE);
            slider.value = s.brightness;
            slider.text = format!("{:.0}", s.brightness as f32 * 100.0 / 255.0);
            slider.slider = Some(brightness_value);
            let brightness = row(cx, 210, "Brightness level", "", None).child(slider);
            let mut bright = brightness;
            // The title sits above the slider in this row.
            if let Some(t) = bright.children.first_mut() {
                t.frame = Bounds::new(cx.d(48), 0, cx.w - cx.d(48), cx.d(100));
                t.bounds = t.frame;
            }
            let dev = if s.developer_options {
                vec![row(cx, 170, "Developer options", "", None)]
            } else {
                vec![]
            };
            let mut rows = vec![
                switch_row(
                    cx,
                    "Wi-Fi",
                    if s.wifi { "HomeNet" } else { "Off" },
                    s.wifi,
                    Setting::Wifi,
                ),
                switch_row(
                    cx,
                    "Bluetooth",
                    if s.bluetooth { "On" } else { "Off" },
                    s.bluetooth,
                    Setting::Bluetooth,
                ),
                switch_row(cx, "Airplane mode", "", s.airplane, Setting::Airplane),
                bright,
                row(cx, 170, "Battery", "85%", None),
                row(cx, 170, "Storage", "34% used - 84 GB free", None),
                row(
                    cx,
                    170,
                    "Sound & vibration",
                    "Volume, haptics, Do Not Disturb",
                    None,
                ),
                row(
                    cx,
                    170,
                    "Notifications",
                    "Notification history, conversations",
                    None,
                ),
            ];
            rows.extend(dev);
            rows.push(row(
                cx,
                170,
                "About phone",
                &s.device_name,
                Some(Cmd::Push {
                    page: Page::SettingsAbout,
                }),
            ));
            rows.push(row(
                cx,
                170,
                "Accounts",
                st.settings.account.as_deref().unwrap_or("Not signed in"),
                Some(Cmd::Push {
                    page: Page::SettingsAccount,
                }),
            ));
            app_frame(
                cx,
                "Settings",
                false,
                vec![],
                vec![scroll_list(st, cx, "settings.main", area, rows)],
            )
        }
    }
}
