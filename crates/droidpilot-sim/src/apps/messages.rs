//! Messages: the conversation list, a conversation with its compose bar (which rides
//! above the keyboard, as Messages uses adjustResize), and "Start chat" with a
//! recipient field that suggests contacts or accepts a number.

use droidpilot_core::domain::Bounds;

use super::super::state::{Cmd, Message, Page, PhoneState, Thread, field};
use super::super::ui::{Ctx, ROW, app_frame, fab, scroll_list};
use super::super::widget::{ACCENT, PILL, SUBTLE, Symbol, TextSize, WHITE, Widget};

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::OpenThread { contact } => {
            st.set_field(field::MSG_COMPOSE, "");
            if let Some(s) = st.app().and_then(|a| st.stacks.get_mut(&a))
                && matches!(s.last(), Some(Page::NewChat))
            {
                s.pop();
            }
            st.push(Page::Thread { contact });
        }
        Cmd::NewChat => {
            st.set_field(field::MSG_TO, "");
            st.push(Page::NewChat);
            st.focus(field::MSG_TO);
        }
        Cmd::SendMessage => {
            let Some(Page::Thread { contact }) = st.page().cloned() else {
                return;
            };
            let text = st.field(field::MSG_COMPOSE).to_string();
            if text.trim().is_empty() {
                return;
            }
            let msg = Message {
                outgoing: true,
                text,
            };
            match st.threads.iter().position(|t| t.contact == contact) {
                Some(i) => {
                    let mut t = st.threads.remove(i);
                    t.messages.push(msg);
                    st.threads.insert(0, t);
                }
                None => st.threads.insert(
                    0,
                    Thread {
                        contact,
                        messages: vec![msg],
                    },
                ),
            }
            st.set_field(field::MSG_COMPOSE, "");
        }
        _ => {}
    }
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    let top = cx.content_top();
    match page {
        Some(Page::Thread { contact }) => {
            let bottom = cx.bottom(st);
            let bar_top = bottom - cx.d(180);
            let msgs = st
                .threads
                .iter()
                .find(|t| &t.contact == contact)
                .map(|t| t.messages.as_slice())
                .unwrap_or(&[]);
            let mut rows = Vec::new();
            for m in msgs {
                let lines =
                    super::super::render::wrap_count(&m.text, cx.d(640) as usize).max(1) as i32;
                let h = cx.d(70) * lines + cx.d(70);
                let (l, r, bg, fg) = if m.outgoing {
                    (cx.d(340), cx.w - cx.d(40), ACCENT, WHITE)
                } else {
                    (
                        cx.d(40),
                        cx.d(740),
                        [241, 243, 244],
                        super::super::widget::TEXT,
                    )
                };
                rows.push(
                    Widget::frame_layout(Bounds::new(0, 0, cx.w, h + cx.d(20)))
                        .id("message_content")
                        .child(
                            Widget::text_view(Bounds::new(l, cx.d(10), r, h + cx.d(10)), &m.text)
                                .id("message_text")
                                .bg(bg)
                                .fg(fg)
                                .rounded(48)
                                .flags(super::super::widget::Flags::LONG_CLICKABLE),
                        ),
                );
            }
            // Conversations start at the bottom: scroll to the end by default.
            let area = Bounds::new(0, top, cx.w, bar_top);
            let key = format!("messages.thread.{contact}");
            let content: i32 = rows.iter().map(|r| r.frame.height()).sum();
            let mut st2;
            let st_ref = if st.scroll.contains_key(&key) {
                st
            } else {
                st2 = st.clone();
                st2.scroll
                    .insert(key.clone(), (content - area.height()).max(0));
                &st2
            };
            let list = scroll_list(st_ref, cx, &key, area, rows);
            let compose = Widget::edit_text(
                Bounds::new(
                    cx.d(40),
                    bar_top + cx.d(20),
                    cx.w - cx.d(200),
                    bottom - cx.d(20),
                ),
                field::MSG_COMPOSE,
                st.field(field::MSG_COMPOSE),
                "Text message",
                st.focus.as_deref() == Some(field::MSG_COMPOSE),
            )
            .id("compose_message_text")
            .bg([241, 243, 244])
            .rounded(PILL);
            let send = Widget::image_button(
                Bounds::new(
                    cx.w - cx.d(180),
                    bar_top + cx.d(20),
                    cx.w - cx.d(40),
                    bottom - cx.d(20),
                ),
                "Send SMS",
                Symbol::Send,
                Cmd::SendMessage,
            )
            .id("send_message_button_icon")
            .bg(ACCENT)
            .fg(WHITE);
            let bar = Widget::linear(Bounds::new(0, bar_top, cx.w, bottom))
                .id("compose_bar")
                .bg(WHITE)
                .child(compose)
                .child(send);
            app_frame(cx, contact, true, vec![], vec![list, bar])
        }
        Some(Page::NewChat) => {
            let to = st.field(field::MSG_TO).trim().to_string();
            let q = to.to_lowercase();
            let input = Widget::edit_text(
                Bounds::new(cx.d(40), top + cx.d(20), cx.w - cx.d(40), top + cx.d(160)),
                field::MSG_TO,
                st.field(field::MSG_TO),
                "Type a name, phone number or email",
                st.focus.as_deref() == Some(field::MSG_TO),
            )
            .id("recipient_text_view");
            let mut rows: Vec<Widget> = st
                .contacts
                .iter()
                .filter(|c| q.is_empty() || c.name.to_lowercase().contains(&q))
                .map(|c| {
                    Widget::view_group(Bounds::new(0, 0, cx.w, cx.d(ROW)))
                        .id("contact_picker_item")
                        .tap(Cmd::OpenThread {
                            contact: c.name.clone(),
                        })
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), 0, cx.w, cx.d(ROW) * 6 / 10),
                                &c.name,
                            )
                            .id("contact_name"),
                        )
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), cx.d(ROW) * 6 / 10, cx.w, cx.d(ROW)),
                                &c.phone,
                            )
                            .id("contact_details")
                            .fg(SUBTLE)
                            .size(TextSize::Small),
                        )
                })
                .collect();
            if !to.is_empty()
                && to
                    .chars()
                    .all(|c| c.is_ascii_digit() || " +-()".contains(c))
            {
                rows.insert(
                    0,
                    Widget::view_group(Bounds::new(0, 0, cx.w, cx.d(ROW)))
                        .id("contact_picker_item")
                        .tap(Cmd::OpenThread {
                            contact: to.clone(),
                        })
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), 0, cx.w, cx.d(ROW)),
                                format!("Send to {to}"),
                            )
                            .id("contact_name"),
                        ),
                );
            }
            let list = scroll_list(
                st,
                cx,
                "messages.picker",
                Bounds::new(0, top + cx.d(180), cx.w, cx.h),
                rows,
            );
            app_frame(cx, "New conversation", true, vec![], vec![input, list])
        }
        _ => {
            let rows: Vec<Widget> = st
                .threads
                .iter()
                .map(|t| {
                    let h = cx.d(ROW + 30);
                    let snippet = t
                        .messages
                        .last()
                        .map(|m| {
                            if m.outgoing {
                                format!("You: {}", m.text)
                            } else {
                                m.text.clone()
                            }
                        })
                        .unwrap_or_default();
                    Widget::view_group(Bounds::new(0, 0, cx.w, h))
                        .id("swipeableContainer")
                        .tap(Cmd::OpenThread {
                            contact: t.contact.clone(),
                        })
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), cx.d(20), cx.w - cx.d(60), h / 2 + cx.d(10)),
                                &t.contact,
                            )
                            .id("conversation_name")
                            .bold(),
                        )
                        .child(
                            Widget::text_view(
                                Bounds::new(
                                    cx.d(60),
                                    h / 2 + cx.d(10),
                                    cx.w - cx.d(60),
                                    h - cx.d(20),
                                ),
                                snippet,
                            )
                            .id("conversation_snippet")
                            .fg(SUBTLE)
                            .size(TextSize::Small),
                        )
                })
                .collect();
            let list = scroll_list(
                st,
                cx,
                "messages.threads",
                Bounds::new(0, top, cx.w, cx.h),
                rows,
            );
            let start = fab(
                cx,
                st,
                "Start chat",
                "Start chat",
                "start_chat_fab",
                Cmd::NewChat,
            );
            app_frame(cx, "Messages", false, vec![], vec![list, start])
        }
    }
}
