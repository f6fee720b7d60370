//! Notes (shaped like Google Keep): a list of notes, and an editor with a title and a
//! body. Like Keep there is no Save button: leaving the editor saves, and an empty new
//! note is dropped. A long press on a note offers Delete.

use droidpilot_core::domain::Bounds;

use super::super::state::{Cmd, Dialog, Note, Page, PhoneState, field};
use super::super::ui::{Ctx, app_frame, fab, scroll_list};
use super::super::widget::{SUBTLE, TextSize, Widget};

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::NoteNew => {
            st.set_field(field::NOTE_TITLE, "");
            st.set_field(field::NOTE_BODY, "");
            st.push(Page::NoteEdit { id: None });
            st.focus(field::NOTE_BODY);
        }
        Cmd::NoteOpen { id } => {
            if let Some(n) = st.notes.iter().find(|n| n.id == id).cloned() {
                st.set_field(field::NOTE_TITLE, n.title);
                st.set_field(field::NOTE_BODY, n.body);
                st.push(Page::NoteEdit { id: Some(id) });
            }
        }
        Cmd::NoteDelete { id } => {
            st.notes.retain(|n| n.id != id);
            st.toast("Note deleted");
        }
        Cmd::NoteMenu { id } => {
            st.dialog = Some(Dialog::menu(
                "com.google.android.keep",
                "note_menu",
                vec![
                    ("Delete", Cmd::NoteDelete { id }),
                    ("Cancel", Cmd::CloseDialog),
                ],
            ));
        }
        _ => {}
    }
}

/// Called when the editor is left: creates or updates the note.
pub fn save(st: &mut PhoneState, id: Option<u64>) {
    let title = st.field(field::NOTE_TITLE).to_string();
    let body = st.field(field::NOTE_BODY).to_string();
    match id {
        Some(id) => {
            if let Some(n) = st.notes.iter_mut().find(|n| n.id == id) {
                n.title = title;
                n.body = body;
            }
        }
        None if title.trim().is_empty() && body.trim().is_empty() => {}
        None => {
            let id = st.id();
            st.notes.insert(0, Note { id, title, body });
        }
    }
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    let top = cx.content_top();
    match page {
        Some(Page::NoteEdit { .. }) => {
            let f = |k: &str| st.focus.as_deref() == Some(k);
            let kids = vec![
                Widget::edit_text(
                    Bounds::new(cx.d(40), top + cx.d(20), cx.w - cx.d(40), top + cx.d(170)),
                    field::NOTE_TITLE,
                    st.field(field::NOTE_TITLE),
                    "Title",
                    f(field::NOTE_TITLE),
                )
                .id("editable_title")
                .size(TextSize::Title),
                Widget::edit_text(
                    Bounds::new(cx.d(40), top + cx.d(190), cx.w - cx.d(40), cx.h - cx.d(100)),
                    field::NOTE_BODY,
                    st.field(field::NOTE_BODY),
                    "Note",
                    f(field::NOTE_BODY),
                )
                .id("edit_note_text"),
            ];
            app_frame(cx, "", true, vec![], kids)
        }
        _ => {
            let rows: Vec<Widget> = st
                .notes
                .iter()
                .map(|n| {
                    let h = cx.d(240);
                    Widget::frame_layout(Bounds::new(0, 0, cx.w, h)).child(
                        Widget::linear(Bounds::new(
                            cx.d(40),
                            cx.d(20),
                            cx.w - cx.d(40),
                            h - cx.d(20),
                        ))
                        .id("browse_note_interior_content")
                        .bg([255, 248, 225])
                        .rounded(36)
                        .tap(Cmd::NoteOpen { id: n.id })
                        .long(Cmd::NoteMenu { id: n.id })
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(80), cx.d(30), cx.w - cx.d(80), cx.d(120)),
                                &n.title,
                            )
                            .id("index_note_title")
                            .bold(),
                        )
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(80), cx.d(120), cx.w - cx.d(80), h - cx.d(40)),
                                n.body.lines().next().unwrap_or(""),
                            )
                            .id("index_note_text")
                            .fg(SUBTLE)
                            .size(TextSize::Small),
                        ),
                    )
                })
                .collect();
            let mut kids = vec![];
            if rows.is_empty() {
                kids.push(
                    Widget::text_view(
                        Bounds::new(0, top + cx.d(300), cx.w, top + cx.d(420)),
                        "Notes you add appear here",
                    )
                    .id("empty_view"),
                );
            }
            kids.push(scroll_list(
                st,
                cx,
                "notes.list",
                Bounds::new(0, top, cx.w, cx.h),
                rows,
            ));
            kids.push(fab(
                cx,
                st,
                "+",
                "New text note",
                "new_note_button",
                Cmd::NoteNew,
            ));
            app_frame(cx, "Keep Notes", false, vec![], kids)
        }
    }
}
