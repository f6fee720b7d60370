//! Browser (shaped like Chrome): a URL bar that takes a URL or a search, a results page
//! and article pages. Page content is a WebView whose nodes are `android.view.View`s
//! without resource-ids, as real web content appears in uiautomator dumps, and it
//! appears only after a loading delay (a progress bar shows meanwhile).

use droidpilot_core::domain::Bounds;

use super::super::state::{Cmd, NEW_TAB, Page, PhoneState, field};
use super::super::ui::{Ctx, STATUS_BAR, scroll_list};
use super::super::widget::{ACCENT, Look, PILL, SUBTLE, SURFACE, TextSize, WHITE, Widget};

pub const SEARCH_PREFIX: &str = "https://www.google.com/search?q=";
/// Virtual ms a page takes to load.
pub const LOAD_MS: u64 = 1_200;

fn encode(q: &str) -> String {
    let mut out = String::new();
    for b in q.trim().bytes() {
        match b {
            b' ' => out.push('+'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn decode(q: &str) -> String {
    let b = q.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => match q
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    out.push(v);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the URL bar turns typed text into: a URL, or a search.
pub fn resolve(input: &str) -> String {
    let t = input.trim();
    if t.starts_with("http://") || t.starts_with("https://") || t.starts_with("chrome://") {
        t.to_string()
    } else if !t.contains(' ') && t.contains('.') {
        format!("https://{t}")
    } else {
        format!("{SEARCH_PREFIX}{}", encode(t))
    }
}

/// Opens a URL in the browser (also the `open_url` entry point).
pub fn open(st: &mut PhoneState, url: &str) {
    st.browser.history.push(url.to_string());
    st.push(Page::Web {
        url: url.to_string(),
    });
}

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::BrowserSubmit => {
            let input = st.field(field::URL).to_string();
            if input.trim().is_empty() {
                return;
            }
            let url = resolve(&input);
            open(st, &url);
        }
        Cmd::BrowserOpen { url } => open(st, &url),
        _ => {}
    }
}

/// A search result: title, URL, snippet.
pub struct Result3 {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

pub fn results(query: &str) -> Vec<Result3> {
    let q = query.trim();
    let r = |t: &str, u: &str, s: &str| Result3 {
        title: t.into(),
        url: u.into(),
        snippet: s.into(),
    };
    if q.eq_ignore_ascii_case("rust") {
        return vec![
            r(
                "Rust Programming Language",
                "https://www.rust-lang.org/",
                "A language empowering everyone to build reliable and efficient software.",
            ),
            r(
                "The Rust Programming Language - The Book",
                "https://doc.rust-lang.org/book/",
                "by S Klabnik and C Nichols.",
            ),
            r(
                "Rust (programming language) - Wikipedia",
                "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                "Rust is a general-purpose programming language.",
            ),
            r(
                "Rust - Steam",
                "https://store.steampowered.com/app/252490/Rust/",
                "The only aim in Rust is to survive.",
            ),
        ];
    }
    let title_case: String = q
        .split_whitespace()
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let slug = title_case.replace(' ', "_");
    vec![
        r(
            &format!("{title_case} - Official site"),
            &format!(
                "https://www.{}.com/",
                encode(&q.to_lowercase()).replace('+', "")
            ),
            &format!("Everything about {q}."),
        ),
        r(
            &format!("{title_case} - Wikipedia"),
            &format!("https://en.wikipedia.org/wiki/{}", encode(&slug)),
            &format!("{title_case} is the subject of this article."),
        ),
        r(
            &format!("Latest news about {q}"),
            &format!("https://news.example.com/{}", encode(q)),
            "Top stories, updated hourly.",
        ),
    ]
}

fn page_title(url: &str) -> String {
    if let Some(q) = url.strip_prefix(SEARCH_PREFIX) {
        return format!("{} - Google Search", decode(q));
    }
    if let Some(slug) = url.strip_prefix("https://en.wikipedia.org/wiki/") {
        return format!("{} - Wikipedia", decode(slug).replace('_', " "));
    }
    url.trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string()
}

fn web_text(cx: &Ctx, h: i32, text: &str, size: TextSize) -> Widget {
    let mut w = Widget::new(
        "android.view.View",
        Bounds::new(cx.d(40), 0, cx.w - cx.d(40), h),
    );
    w.text = text.to_string();
    w.look = Look::Text;
    w.size = size;
    w
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> Widget {
    let url = match page {
        Some(Page::Web { url }) => url.as_str(),
        _ => NEW_TAB,
    };
    let bar_b = Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.content_top());
    let focused = st.focus.as_deref() == Some(field::URL);
    let shown = if focused {
        st.field(field::URL).to_string()
    } else if url == NEW_TAB {
        String::new()
    } else {
        url.trim_start_matches("https://").to_string()
    };
    let bar = Widget::frame_layout(bar_b).id("toolbar").bg(SURFACE).child(
        Widget::edit_text(
            Bounds::new(
                cx.d(40),
                bar_b.top + cx.d(24),
                cx.w - cx.d(40),
                bar_b.bottom - cx.d(24),
            ),
            field::URL,
            &shown,
            "Search or type web address",
            focused,
        )
        .id("url_bar")
        .bg([232, 234, 237])
        .rounded(PILL),
    );
    let area = Bounds::new(0, cx.content_top(), cx.w, cx.h);
    let mut content: Vec<Widget> = Vec::new();
    if url == NEW_TAB {
        content.push(
            Widget::text_view(
                Bounds::new(0, area.top + cx.d(300), cx.w, area.top + cx.d(450)),
                "Google",
            )
            .id("search_provider_logo")
            .size(TextSize::Title)
            .bold(),
        );
    } else if !cx.loaded(st, LOAD_MS) {
        content.push(
            Widget::new(
                "android.widget.ProgressBar",
                Bounds::new(0, area.top, cx.w, area.top + cx.d(12)),
            )
            .id("progress")
            .look(Look::Progress)
            .bg(ACCENT),
        );
    } else if let Some(page) = super::pixels::page(cx, url, area) {
        content.push(page);
    } else {
        let mut nodes = vec![web_text(cx, cx.d(140), &page_title(url), TextSize::Title)];
        if let Some(q) = url.strip_prefix(SEARCH_PREFIX) {
            for r in results(&decode(q)) {
                let h = cx.d(260);
                let mut link = Widget::new(
                    "android.view.View",
                    Bounds::new(cx.d(40), 0, cx.w - cx.d(40), h),
                )
                .tap(Cmd::BrowserOpen { url: r.url.clone() });
                link.children = vec![
                    {
                        let mut t = web_text(cx, cx.d(100), &r.title, TextSize::Normal).fg(ACCENT);
                        t.frame.top = cx.d(20);
                        t.frame.bottom = cx.d(110);
                        t.bounds = t.frame;
                        t
                    },
                    {
                        let mut t =
                            web_text(cx, cx.d(60), &r.url, TextSize::Small).fg([24, 128, 56]);
                        t.frame.top = cx.d(110);
                        t.frame.bottom = cx.d(170);
                        t.bounds = t.frame;
                        t
                    },
                    {
                        let mut t = web_text(cx, cx.d(60), &r.snippet, TextSize::Small).fg(SUBTLE);
                        t.frame.top = cx.d(170);
                        t.frame.bottom = cx.d(240);
                        t.bounds = t.frame;
                        t
                    },
                ];
                link.desc = String::new();
                nodes.push(link);
            }
        } else {
            for p in [
                "This is a page on the open web, rendered by the virtual phone.",
                "From Wikipedia, the free encyclopedia.",
                "Contents: History, Design, Usage, See also, References.",
            ] {
                nodes.push(web_text(cx, cx.d(120), p, TextSize::Small));
            }
        }
        let list = scroll_list(st, cx, &format!("browser.{url}"), area, nodes);
        let mut web = Widget::new("android.webkit.WebView", area)
            .flags(super::super::widget::Flags::FOCUSABLE)
            .bg(WHITE);
        web.text = page_title(url);
        web.look = Look::Plain;
        // The page itself is the WebView's child; real WebView content has no ids.
        let mut inner = list;
        inner.class = "android.view.View";
        inner.id = String::new();
        content.push(web.child(inner));
    }
    Widget::frame_layout(cx.full()).child(
        Widget::linear(Bounds::new(0, cx.d(STATUS_BAR), cx.w, cx.h))
            .id("android:id/content")
            .bg(WHITE)
            .child(bar)
            .kids(content),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_bar_resolves_urls_and_searches() {
        assert_eq!(resolve("example.com"), "https://example.com");
        assert_eq!(
            resolve("rust lang"),
            "https://www.google.com/search?q=rust+lang"
        );
        assert_eq!(decode("caf%C3%A9+au+lait"), "café au lait");
        assert_eq!(decode(&encode("日本 語")), "日本 語");
        assert_eq!(decode("100%"), "100%");
    }
}
