//! Contacts: a searchable list, a contact's details, and the add/edit form (name and
//! phone EditTexts, Save). Leaving a changed form by back asks "Discard changes?" as the
//! real app does; a long press on a contact offers Delete.

use droidpilot_core::domain::Bounds;

use super::super::state::{Cmd, Contact, Dialog, Page, PhoneState, field};
use super::super::ui::{Ctx, ROW, STATUS_BAR, action_slot, app_frame, fab, scroll_list};
use super::super::widget::{ACCENT, PILL, SUBTLE, Symbol, TextSize, Widget};

const PKG: &str = "com.android.contacts";

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::ContactNew => {
            st.set_field(field::CONTACT_NAME, "");
            st.set_field(field::CONTACT_PHONE, "");
            st.push(Page::ContactEdit { id: None });
        }
        Cmd::ContactEdit { id } => {
            if let Some(c) = st.contacts.iter().find(|c| c.id == id).cloned() {
                st.set_field(field::CONTACT_NAME, c.name);
                st.set_field(field::CONTACT_PHONE, c.phone);
                st.push(Page::ContactEdit { id: Some(id) });
            }
        }
        Cmd::ContactSave => {
            let Some(Page::ContactEdit { id }) = st.page().cloned() else {
                return;
            };
            let name = st.field(field::CONTACT_NAME).trim().to_string();
            let phone = st.field(field::CONTACT_PHONE).trim().to_string();
            if name.is_empty() {
                st.toast("Name is required");
                return;
            }
            let id = match id {
                Some(id) => {
                    if let Some(c) = st.contacts.iter_mut().find(|c| c.id == id) {
                        c.name = name;
                        c.phone = phone;
                    }
                    id
                }
                None => {
                    let id = st.id();
                    st.contacts.push(Contact { id, name, phone });
                    id
                }
            };
            st.contacts.sort_by_key(|c| c.name.to_lowercase());
            st.toast("Contact saved");
            if let Some(s) = st.app().and_then(|a| st.stacks.get_mut(&a)) {
                s.pop();
                if !matches!(s.last(), Some(Page::ContactDetail { .. })) {
                    s.push(Page::ContactDetail { id });
                }
            }
            st.keyboard = false;
            st.focus = None;
        }
        Cmd::ContactDelete { id } => {
            st.contacts.retain(|c| c.id != id);
            if let Some(s) = st.app().and_then(|a| st.stacks.get_mut(&a)) {
                s.retain(|p| {
                    *p != Page::ContactDetail { id } && *p != Page::ContactEdit { id: Some(id) }
                });
                if s.is_empty() {
                    s.push(Page::ContactsList);
                }
            }
            st.toast("Contact deleted");
        }
        Cmd::ContactMenu { id } => {
            st.dialog = Some(Dialog::menu(
                PKG,
                "contact_menu",
                vec![
                    ("Edit", Cmd::ContactEdit { id }),
                    ("Delete", Cmd::ContactDelete { id }),
                ],
            ));
        }
        Cmd::DiscardEdit => {
            if let Some(s) = st.app().and_then(|a| st.stacks.get_mut(&a)) {
                s.pop();
            }
            st.page_at_ms = st.clock_ms;
        }
        _ => {}
    }
}

/// Back from the edit form: straight out when nothing changed, else ask.
pub fn confirm_discard(st: &mut PhoneState, id: Option<u64>) -> bool {
    let (name, phone) = match id.and_then(|id| st.contacts.iter().find(|c| c.id == id)) {
        Some(c) => (c.name.as_str(), c.phone.as_str()),
        None => ("", ""),
    };
    if st.field(field::CONTACT_NAME) == name && st.field(field::CONTACT_PHONE) == phone {
        return true;
    }
    st.dialog = Some(
        Dialog::alert(PKG, "discard", "Discard changes?", "")
            .button("android:id/button2", "Cancel", Cmd::CloseDialog)
            .button("android:id/button1", "Discard", Cmd::DiscardEdit),
    );
    false
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    let top = cx.content_top();
    match page {
        Some(Page::ContactEdit { id }) => {
            let f = |k: &str| st.focus.as_deref() == Some(k);
            let kids = vec![
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(30), cx.w, top + cx.d(100)),
                    "Name",
                )
                .fg(SUBTLE)
                .size(TextSize::Small),
                Widget::edit_text(
                    Bounds::new(cx.d(60), top + cx.d(100), cx.w - cx.d(60), top + cx.d(250)),
                    field::CONTACT_NAME,
                    st.field(field::CONTACT_NAME),
                    "Name",
                    f(field::CONTACT_NAME),
                )
                .id("name_edit"),
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(290), cx.w, top + cx.d(360)),
                    "Phone",
                )
                .fg(SUBTLE)
                .size(TextSize::Small),
                Widget::edit_text(
                    Bounds::new(cx.d(60), top + cx.d(360), cx.w - cx.d(60), top + cx.d(510)),
                    field::CONTACT_PHONE,
                    st.field(field::CONTACT_PHONE),
                    "Phone",
                    f(field::CONTACT_PHONE),
                )
                .id("phone_edit"),
            ];
            let save = Widget::button(
                action_slot(cx, 1).union_with(&action_slot(cx, 0)),
                "Save",
                Cmd::ContactSave,
            )
            .id("editor_menu_save_button");
            app_frame(
                cx,
                if id.is_some() {
                    "Edit contact"
                } else {
                    "Create contact"
                },
                true,
                vec![save],
                kids,
            )
        }
        Some(Page::ContactDetail { id }) => {
            let Some(c) = st.contacts.iter().find(|c| c.id == *id) else {
                return app_frame(cx, "Contact", true, vec![], vec![]);
            };
            let kids = vec![
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(60), cx.w - cx.d(60), top + cx.d(200)),
                    &c.name,
                )
                .id("large_title")
                .size(TextSize::Title)
                .bold(),
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(240), cx.w - cx.d(60), top + cx.d(360)),
                    &c.phone,
                )
                .id("header")
                .fg(ACCENT),
                Widget::text_view(
                    Bounds::new(cx.d(60), top + cx.d(360), cx.w - cx.d(60), top + cx.d(430)),
                    "Mobile",
                )
                .fg(SUBTLE)
                .size(TextSize::Small),
            ];
            let edit = Widget::image_button(
                action_slot(cx, 0),
                "Edit contact",
                Symbol::Edit,
                Cmd::ContactEdit { id: *id },
            )
            .id("menu_edit");
            app_frame(cx, "", true, vec![edit], kids)
        }
        _ => {
            let q = st.field(field::CONTACT_SEARCH).to_lowercase();
            let search = Widget::edit_text(
                Bounds::new(cx.d(40), top + cx.d(20), cx.w - cx.d(40), top + cx.d(150)),
                field::CONTACT_SEARCH,
                st.field(field::CONTACT_SEARCH),
                "Search contacts",
                st.focus.as_deref() == Some(field::CONTACT_SEARCH),
            )
            .id("search_view")
            .bg([241, 243, 244])
            .rounded(PILL)
            .icon(Symbol::Search);
            let area = Bounds::new(0, top + cx.d(170), cx.w, cx.h);
            let rows: Vec<Widget> = st
                .contacts
                .iter()
                .filter(|c| {
                    q.is_empty()
                        || c.name.to_lowercase().contains(&q)
                        || c.phone.replace(' ', "").contains(&q.replace(' ', ""))
                })
                .map(|c| {
                    let h = cx.d(ROW);
                    Widget::view_group(Bounds::new(0, 0, cx.w, h))
                        .id("contact_row")
                        .tap(Cmd::Push {
                            page: Page::ContactDetail { id: c.id },
                        })
                        .long(Cmd::ContactMenu { id: c.id })
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), 0, cx.w - cx.d(60), h),
                                &c.name,
                            )
                            .id("cliv_name_textview"),
                        )
                })
                .collect();
            let mut kids = vec![search];
            if rows.is_empty() {
                kids.push(
                    Widget::text_view(
                        Bounds::new(cx.d(60), area.top + cx.d(100), cx.w, area.top + cx.d(220)),
                        "No contacts found",
                    )
                    .id("empty_text"),
                );
            }
            kids.push(scroll_list(st, cx, "contacts.list", area, rows));
            kids.push(fab(
                cx,
                st,
                "+",
                "Create contact",
                "floating_action_button",
                Cmd::ContactNew,
            ));
            let _ = STATUS_BAR;
            app_frame(cx, "Contacts", false, vec![], kids)
        }
    }
}

trait Union {
    fn union_with(&self, o: &Bounds) -> Bounds;
}
impl Union for Bounds {
    fn union_with(&self, o: &Bounds) -> Bounds {
        Bounds::new(
            self.left.min(o.left),
            self.top.min(o.top),
            self.right.max(o.right),
            self.bottom.max(o.bottom),
        )
    }
}
