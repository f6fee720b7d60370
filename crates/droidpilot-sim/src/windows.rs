//! The virtual phone's windows as Android's window manager lists them
//! (`dumpsys window windows`): each window of the built screen with its owner package,
//! its title (`package/activity` for an activity, `InputMethod`, `StatusBar`…), its type
//! (`ty=`), its frame and whether it has the focus, top first. `Device::window_state`
//! answers with them, and the simulated adbd writes them in the real dump's format.

use droidpilot_core::device::{ActiveWindow, CurrentApp, WindowState};

use crate::split::DIVIDER_BACKGROUND_ID;
use crate::state::{IME_PACKAGE, SYSTEMUI};
use crate::widget::{Screen, Window};

/// The screen's windows, top first, and whether the soft keyboard is shown. `app` is
/// the focused activity (its title names the app's window).
pub fn state(screen: &Screen, app: &CurrentApp) -> WindowState {
    let mut windows: Vec<ActiveWindow> = screen
        .windows
        .iter()
        .rev()
        .map(|w| window(w, app))
        .collect();
    // The focus: the top-most dialog, else the focused app's activity (in split-screen
    // the other half is an activity too), never a bar, toast or keyboard.
    let activity = |w: &ActiveWindow| w.kind == "BASE_APPLICATION";
    let focus = windows
        .iter()
        .position(|w| w.kind == "APPLICATION")
        .or_else(|| {
            windows
                .iter()
                .position(|w| activity(w) && w.package == app.package)
        })
        .or_else(|| windows.iter().position(activity));
    if let Some(i) = focus {
        windows[i].focused = true;
    }
    WindowState {
        keyboard_shown: Some(screen.windows.iter().any(|w| w.package == IME_PACKAGE)),
        windows,
    }
}

fn window(w: &Window, app: &CurrentApp) -> ActiveWindow {
    let (title, kind) = title_and_type(w, app);
    let b = w.root.bounds;
    ActiveWindow {
        package: w.package.clone(),
        title,
        kind: kind.into(),
        bounds: Some([b.left, b.top, b.right, b.bottom]),
        focused: false,
    }
}

fn title_and_type(w: &Window, app: &CurrentApp) -> (String, &'static str) {
    let root_id = w.root.id.as_str();
    if w.package == IME_PACKAGE {
        return ("InputMethod".into(), "INPUT_METHOD");
    }
    if w.package == SYSTEMUI {
        let first_child = w.root.children.first().map(|c| c.id.as_str());
        if first_child == Some(DIVIDER_BACKGROUND_ID) {
            return ("DockedStackDivider".into(), "DOCK_DIVIDER");
        }
        return match root_id {
            "com.android.systemui:id/status_bar_container" => ("StatusBar".into(), "STATUS_BAR"),
            "com.android.systemui:id/home_handle" => ("NavigationBar0".into(), "NAVIGATION_BAR"),
            _ => ("NotificationShade".into(), "NOTIFICATION_SHADE"),
        };
    }
    if w.modal {
        return (w.package.clone(), "APPLICATION");
    }
    if !w.touchable {
        return ("Toast".into(), "TOAST");
    }
    let title = match &app.activity {
        Some(a) if app.package == w.package => format!("{}/{a}", w.package),
        _ => w.package.clone(),
    };
    (title, "BASE_APPLICATION")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SimConfig, SimDevice};
    use droidpilot_core::device::Device;
    use droidpilot_core::domain::AppRef;

    /// Settings with its search field focused: the keyboard's window on top, then the
    /// status bar, then the activity, which has the focus.
    #[tokio::test]
    async fn a_focused_field_shows_the_keyboard_window_above_the_app() {
        let sim = SimDevice::new(SimConfig::default()).unwrap();
        sim.launch_app(&AppRef::Package("com.android.chrome".into()))
            .await
            .unwrap();
        let before = sim.window_state().await.unwrap();
        assert_eq!(before.keyboard_shown, Some(false), "{before:?}");
        let screen = sim.screen();
        let mut all = Vec::new();
        for w in screen
            .windows
            .iter()
            .filter(|w| w.package == "com.android.chrome")
        {
            w.root.walk(&mut all);
        }
        let url = all
            .iter()
            .find(|n| n.class == "android.widget.EditText")
            .expect("the URL bar");
        sim.tap(url.bounds.center()).await.unwrap();
        let s = sim.window_state().await.unwrap();
        assert_eq!(s.keyboard_shown, Some(true), "{s:?}");
        let kinds: Vec<&str> = s.windows.iter().map(|w| w.kind.as_str()).collect();
        let ime = kinds.iter().position(|k| *k == "INPUT_METHOD").unwrap();
        let app = kinds.iter().position(|k| *k == "BASE_APPLICATION").unwrap();
        assert!(ime < app, "top first: {kinds:?}");
        let focused: Vec<&ActiveWindow> = s.windows.iter().filter(|w| w.focused).collect();
        assert_eq!(focused.len(), 1, "{s:?}");
        assert!(
            focused[0].title.starts_with("com.android.chrome/"),
            "{focused:?}"
        );
    }

    /// Split-screen: both apps' activities listed with their halves' frames, the focused
    /// app's one holding the focus (not simply the top-most), and the divider as the
    /// window manager names it; `Device::windows` reads the two halves from that.
    #[tokio::test]
    async fn split_screen_lists_both_activities_and_the_divider() {
        let sim = SimDevice::new(SimConfig::default()).unwrap();
        let pkg = |p: &str| AppRef::Package(p.into());
        sim.split_screen(
            &pkg("com.google.android.apps.messaging"),
            &pkg("com.google.android.keep"),
        )
        .await
        .unwrap();
        let s = sim.window_state().await.unwrap();
        let activities: Vec<&ActiveWindow> = (s.windows.iter())
            .filter(|w| w.kind == "BASE_APPLICATION")
            .collect();
        assert_eq!(activities.len(), 2, "{s:?}");
        assert!(s.windows.iter().any(|w| w.kind == "DOCK_DIVIDER"), "{s:?}");
        let focused: Vec<&ActiveWindow> = s.windows.iter().filter(|w| w.focused).collect();
        assert_eq!(focused.len(), 1, "{s:?}");
        assert_eq!(focused[0].package, "com.google.android.apps.messaging");

        let got: Vec<_> = (sim.windows().await.unwrap().into_iter())
            .map(|w| (w.package, w.bounds, w.focused))
            .collect();
        let want: Vec<_> = (sim.app_windows().into_iter())
            .map(|w| (w.app.package().to_string(), w.bounds, w.focused))
            .collect();
        assert_eq!(got, want);
    }
}
