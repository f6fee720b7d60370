//! The keyboard and the visible windows of a phone over ADB: `dumpsys input_method`'s
//! `mInputShown` and `dumpsys window windows`, filtered on the phone by `grep` to the
//! lines read here (a real dump is tens of kilobytes), parsed into a `WindowState`.

use crate::device::{ActiveWindow, WindowState};

/// The one shell command `AdbDevice::window_state` runs.
pub const COMMAND: &str = "dumpsys input_method | grep -E 'mInputShown='; dumpsys window windows | grep -E 'Window #|package=|mAttrs=|mFrame=|isOnScreen=|isVisible=|mCurrentFocus='";

/// Reads the output of `COMMAND`: each `Window #n Window{hash u0 TITLE}:` entry with its
/// owner's `package=`, `ty=`, `mFrame`, kept when it is on screen and visible; the one
/// `mCurrentFocus` names is focused. Top first, as the window manager lists them.
pub fn parse(out: &str) -> WindowState {
    let mut windows: Vec<(ActiveWindow, bool)> = Vec::new();
    let mut state = WindowState::default();
    let mut focus = None;
    for line in out.lines().map(str::trim) {
        if let Some(v) = value_of(line, "mInputShown=") {
            state.keyboard_shown = Some(v == "true");
        } else if let Some(rest) = line.strip_prefix("mCurrentFocus=") {
            focus = window_title(rest);
        } else if line.starts_with("Window #") {
            let title = window_title(line).unwrap_or_default();
            windows.push((
                ActiveWindow {
                    package: String::new(),
                    title,
                    kind: String::new(),
                    bounds: None,
                    focused: false,
                },
                true,
            ));
        } else if let Some((w, shown)) = windows.last_mut() {
            entry_line(line, w, shown);
        }
    }
    state.windows = windows
        .into_iter()
        .filter(|(_, shown)| *shown)
        .map(|(mut w, _)| {
            w.focused = focus.as_deref() == Some(w.title.as_str());
            w
        })
        .collect();
    state
}

/// One line inside a window's entry.
fn entry_line(line: &str, w: &mut ActiveWindow, shown: &mut bool) {
    if let Some(p) = value_of(line, "package=").filter(|_| w.package.is_empty()) {
        w.package = p.to_string();
    }
    if let Some(t) = value_of(line, "ty=").filter(|_| line.starts_with("mAttrs=")) {
        w.kind = t.trim_end_matches('}').to_string();
    }
    if let Some(f) = line.strip_prefix("mFrame=") {
        w.bounds = frame(f);
    }
    if value_of(line, "isOnScreen=") == Some("false")
        || value_of(line, "isVisible=") == Some("false")
    {
        *shown = false;
    }
}

/// The value of ` key` (or `key` at the line's start) up to the next space.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = if line.starts_with(key) {
        0
    } else {
        line.find(&format!(" {key}"))? + 1
    };
    line[at + key.len()..].split_whitespace().next()
}

/// `TITLE` of `Window{5e1c2a0 u0 TITLE}`.
fn window_title(s: &str) -> Option<String> {
    let inner = &s[s.find("Window{")? + "Window{".len()..];
    let inner = &inner[..inner.rfind('}')?];
    let mut parts = inner.splitn(3, ' ');
    let (_hash, _user, title) = (parts.next()?, parts.next()?, parts.next()?);
    Some(title.to_string())
}

/// `[l,t][r,b]` at the start of `s`.
fn frame(s: &str) -> Option<[i32; 4]> {
    let s = s.split_whitespace().next()?;
    let nums: Vec<i32> = s
        .split(['[', ']', ','])
        .filter(|t| !t.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    <[i32; 4]>::try_from(nums).ok()
}

#[cfg(test)]
mod tests {
    /// A trimmed Android 11 dump (the lines `COMMAND` keeps): a hidden overlay is left
    /// out, the navigation bar and the app are kept, the app has the focus.
    #[test]
    fn visible_windows_top_first_with_the_focus_and_the_keyboard() {
        let out = "  mShowRequested=true mShowExplicitlyRequested=false mShowForced=false mInputShown=true\n\
  Window #0 Window{d1b7133 u0 pip-dismiss-overlay}:\n\
    mOwnerUid=10144 showForAllUsers=true package=com.android.systemui appop=NONE\n\
    mAttrs={(0,1264)(fillx656) sim={adjust=pan} ty=NAVIGATION_BAR_PANEL fmt=TRANSLUCENT\n\
    mFrame=[0,1264][1080,1920] last=[0,0][0,0]\n\
    isOnScreen=false\n\
    isVisible=false\n\
  Window #1 Window{e56b35e u0 NavigationBar0}:\n\
    mOwnerUid=10144 showForAllUsers=true package=com.android.systemui appop=NONE\n\
    mAttrs={(0,0)(fillxfill) sim={adjust=pan} ty=NAVIGATION_BAR fmt=TRANSLUCENT\n\
    mFrame=[0,1794][1080,1920] last=[0,1794][1080,1920]\n\
    isOnScreen=true\n\
    isVisible=true\n\
  Window #2 Window{9a0e2f1 u0 com.android.chrome/com.google.android.apps.chrome.Main}:\n\
    mOwnerUid=10123 showForAllUsers=false package=com.android.chrome appop=NONE\n\
    mAttrs={(0,0)(fillxfill) sim={adjust=resize} ty=BASE_APPLICATION wanim=0x1030466\n\
    mFrame=[0,0][1080,1920] last=[0,0][1080,1920]\n\
    isOnScreen=true\n\
    isVisible=true\n\
  mCurrentFocus=Window{9a0e2f1 u0 com.android.chrome/com.google.android.apps.chrome.Main}\n";
        let s = super::parse(out);
        assert_eq!(s.keyboard_shown, Some(true));
        let got: Vec<(&str, &str, bool)> = s
            .windows
            .iter()
            .map(|w| (w.package.as_str(), w.kind.as_str(), w.focused))
            .collect();
        assert_eq!(
            got,
            [
                ("com.android.systemui", "NAVIGATION_BAR", false),
                ("com.android.chrome", "BASE_APPLICATION", true)
            ]
        );
        assert_eq!(s.windows[1].bounds, Some([0, 0, 1080, 1920]));
        assert_eq!(
            s.windows[1].title,
            "com.android.chrome/com.google.android.apps.chrome.Main"
        );
        assert_eq!(super::parse("").keyboard_shown, None);
    }
}
