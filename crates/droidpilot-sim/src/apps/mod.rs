//! The apps of the virtual phone. Each app file owns its screens (state → widgets) and
//! the commands that change its data; `build` dispatches on the foreground app.

pub mod browser;
pub mod clock;
pub mod contacts;
pub mod messages;
pub mod notes;
pub mod pixels;
pub mod settings;
pub mod shop;

use super::state::{AppId, PhoneState};
use super::ui::Ctx;
use super::widget::Widget;

/// The app window's root for the page on top of `app`'s stack, and whether the screen
/// is secure (FLAG_SECURE).
pub fn build(app: AppId, st: &PhoneState, cx: &Ctx) -> (Widget, bool) {
    let page = st.stacks.get(&app).and_then(|s| s.last());
    match app {
        AppId::Settings => (settings::build(st, cx, page), false),
        AppId::Contacts => (contacts::build(st, cx, page), false),
        AppId::Clock => (clock::build(st, cx, page), false),
        AppId::Messages => (messages::build(st, cx, page), false),
        AppId::Notes => (notes::build(st, cx, page), false),
        AppId::Browser => (browser::build(st, cx, page), false),
        AppId::Shop => shop::build(st, cx, page),
    }
}
