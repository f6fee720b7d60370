//! Test-only: whether a task stays solvable on a drifted phone. The reference solution
//! runs on a clean phone, which logs what each touch hit (`identity`); then the same
//! touches are made on the drifted phone by what they hit, not where: the element with the
//! same key is found (scrolling its list, opening the overflow menu, dismissing a "what's
//! new" dialog as a user would) and touched at its centre, and a new confirmation is
//! confirmed. Actions that touch nothing (typing, keys, launches) run as they are.

use droidpilot_core::device::Device;
use droidpilot_core::domain::{Action, PixelPoint};

use crate::identity::{TouchKind, Touched, key};
use crate::redesign::{CONFIRM_KIND, OVERFLOW_ID, WHATS_NEW_KIND};
use crate::widget::{Hit, Widget};
use crate::{SimConfig, SimDevice, SimTask, tasks};

/// One step of a reference solution, as it ran on the clean phone.
enum Step {
    Touch(Touched),
    /// A touch that set a slider: its key, and where along the slider it ended (0–1).
    Slide(String, f32),
    /// A swipe on a number picker: its key and the finger's movement.
    Drag(String, i32, i32),
    Plain(Action),
}

/// The number picker a swipe starts on, and the swipe's movement.
fn picker_drag(p: &SimDevice, a: &Action) -> Option<(String, i32, i32)> {
    use droidpilot_core::domain::action::SwipePath;
    use droidpilot_core::domain::{CoordinateTransform, LinearTransform, ScreenSize};
    let Action::Swipe {
        path: SwipePath::Points { start, end },
        ..
    } = a
    else {
        return None;
    };
    let c = p.config();
    let size = ScreenSize {
        width: c.width,
        height: c.height,
    };
    let (from, to) = (
        LinearTransform.to_pixel(*start, size),
        LinearTransform.to_pixel(*end, size),
    );
    let screen = p.screen();
    match screen.hit_window(from, &|w: &Widget| w.scroll.is_some()).1 {
        Hit::Widget(w) if key(w).contains("scroll=picker:") => {
            Some((key(w).into_owned(), to.x - from.x, to.y - from.y))
        }
        _ => None,
    }
}

/// The slider a tap or swipe starts on, and where along it the touch ends (0–1).
fn slider_at(p: &SimDevice, a: &Action) -> Option<(String, f32)> {
    use droidpilot_core::domain::action::SwipePath;
    use droidpilot_core::domain::{CoordinateTransform, LinearTransform, ScreenSize, Target};
    let c = p.config();
    let size = ScreenSize {
        width: c.width,
        height: c.height,
    };
    let (from, to) = match a {
        Action::Tap { target } => match &target.0 {
            Target::Coordinate(n) => (*n, *n),
            _ => return None,
        },
        Action::Swipe {
            path: SwipePath::Points { start, end },
            ..
        } => (*start, *end),
        _ => return None,
    };
    let (from, to) = (
        LinearTransform.to_pixel(from, size),
        LinearTransform.to_pixel(to, size),
    );
    let screen = p.screen();
    match screen.hit_window(from, &|w: &Widget| w.slider.is_some()).1 {
        Hit::Widget(w) => Some((
            key(w).into_owned(),
            ((to.x - w.frame.left) as f32 / w.frame.width().max(1) as f32).clamp(0.0, 1.0),
        )),
        Hit::Blocked => None,
    }
}

/// The reference solution as touches by key (see the module doc).
async fn steps(t: &SimTask, clean: SimConfig) -> Vec<Step> {
    let p = SimDevice::new(clean).unwrap();
    p.reset_to(t);
    let mut out = Vec::new();
    for a in t.reference() {
        let before = p.touched().len();
        let slider = slider_at(&p, &a);
        if let Some((key, dx, dy)) = picker_drag(&p, &a) {
            tasks::run_actions(&p, std::slice::from_ref(&a))
                .await
                .unwrap();
            out.push(Step::Drag(key, dx, dy));
            continue;
        }
        tasks::run_actions(&p, std::slice::from_ref(&a))
            .await
            .unwrap();
        let log = p.touched();
        match (&a, &log[before..]) {
            (_, [one]) if one.kind == TouchKind::Slide && slider.is_some() => {
                let (key, frac) = slider.clone().unwrap();
                out.push(Step::Slide(key, frac))
            }
            (Action::Tap { .. } | Action::LongPress { .. }, [one]) => {
                out.push(Step::Touch(one.clone()))
            }
            (
                Action::Type {
                    text,
                    target: Some(_),
                    clear_first,
                },
                [one],
            ) => {
                out.push(Step::Touch(one.clone()));
                out.push(Step::Plain(Action::Type {
                    text: text.clone(),
                    target: None,
                    clear_first: *clear_first,
                }));
            }
            _ => out.push(Step::Plain(a)),
        }
    }
    out
}

fn wants(long: bool) -> impl Fn(&Widget) -> bool {
    move |w: &Widget| {
        (long && w.on_long.is_some())
            || w.on_tap.is_some()
            || w.field.is_some()
            || w.slider.is_some()
    }
}

/// Where to touch the widget with `key` so that the touch lands on it, if it is on screen.
fn spot(p: &SimDevice, key: &str, long: bool) -> Option<PixelPoint> {
    let screen = p.screen();
    let want = wants(long);
    screen.all().into_iter().find_map(|w| {
        if crate::identity::key(w) != key || w.bounds.is_empty() {
            return None;
        }
        // The centre, or a point nearer an edge when a child target covers the centre.
        let (b, y) = (w.bounds, w.bounds.center().y);
        [
            b.center().x,
            b.left + b.width() / 8,
            b.right - b.width() / 8,
        ]
        .into_iter()
        .map(|x| PixelPoint { x, y })
        .find(|c| matches!(screen.hit_window(*c, &want).1, Hit::Widget(h) if crate::identity::key(h) == key))
    })
}

/// If the open dialog is of `kind`, taps its button with resource-id `id` (its only
/// button when `id` is None) and says so.
async fn answer(p: &SimDevice, kind: &str, id: Option<&str>) -> bool {
    let Some(d) = p.state().dialog.filter(|d| d.kind == kind) else {
        return false;
    };
    let id = id.map_or_else(|| d.buttons[0].id.clone(), String::from);
    let screen = p.screen();
    let win = screen.windows.iter().rev().find(|w| w.modal).unwrap();
    let mut all = Vec::new();
    win.root.walk(&mut all);
    let b = all.iter().find(|w| w.id == id && w.on_tap.is_some());
    let b = b.unwrap_or_else(|| panic!("no `{id}` in the {} dialog {d:?}", d.kind));
    p.tap(b.bounds.center()).await.unwrap();
    true
}

/// A swipe that scrolls the first scrolling list by half its height, down or up.
async fn scroll(p: &SimDevice, down: bool) -> bool {
    let screen = p.screen();
    let Some(list) = screen.all().into_iter().find(|w| {
        w.scroll
            .as_ref()
            .is_some_and(|s| !s.key.starts_with("picker:"))
    }) else {
        return false;
    };
    let info = list.scroll.clone().unwrap();
    if (down && info.cur >= info.max) || (!down && info.cur == 0) {
        return false;
    }
    let b = list.bounds;
    // Near an edge, clear of number pickers, which a swipe would turn (on a narrow phone
    // the right edge may be a picker's).
    let pickers: Vec<_> = screen
        .all()
        .into_iter()
        .filter(|w| {
            w.scroll
                .as_ref()
                .is_some_and(|s| s.key.starts_with("picker:"))
        })
        .map(|w| w.bounds)
        .collect();
    let clear = |x: i32| !pickers.iter().any(|p| (p.left..=p.right).contains(&x));
    let edges = [b.right - b.width() / 20, b.left + b.width() / 20];
    let x = edges.into_iter().find(|&x| clear(x)).unwrap_or(edges[0]);
    let q = b.height() / 4;
    let (from, to) = if down {
        (b.bottom - q, b.top + q)
    } else {
        (b.top + q, b.bottom - q)
    };
    p.swipe(PixelPoint { x, y: from }, PixelPoint { x, y: to }, 400)
        .await
        .unwrap();
    true
}

/// Finds and touches the widget with `key` (see the module doc); false if it is nowhere.
async fn touch(p: &SimDevice, t: &Touched) -> bool {
    if !reach(p, t).await {
        return false;
    }
    let long = t.kind == TouchKind::LongPress;
    let c = spot(p, &t.key, long).unwrap();
    if long {
        p.long_press(c, 800).await.unwrap();
    } else {
        p.tap(c).await.unwrap();
    }
    answer(p, CONFIRM_KIND, Some("android:id/button1")).await;
    true
}

/// Brings the widget with `key` on screen; false if it is nowhere.
async fn reach(p: &SimDevice, t: &Touched) -> bool {
    let long = t.kind == TouchKind::LongPress;
    let mut down = true;
    for _ in 0..40 {
        if answer(p, WHATS_NEW_KIND, None).await {
            continue;
        }
        if spot(p, &t.key, long).is_some() {
            return true;
        }
        let menu_open = p
            .state()
            .dialog
            .is_some_and(|d| d.kind == crate::redesign::OVERFLOW_KIND);
        if menu_open {
            p.key(droidpilot_core::domain::Key::Back).await.unwrap();
        } else if let Some(c) = spot_by_id(p, OVERFLOW_ID) {
            p.tap(c).await.unwrap();
            if spot(p, &t.key, long).is_some() {
                continue;
            }
            p.key(droidpilot_core::domain::Key::Back).await.unwrap();
        }
        if !scroll(p, down).await {
            if !down {
                return false;
            }
            down = false;
        }
    }
    false
}

fn spot_by_id(p: &SimDevice, id: &str) -> Option<PixelPoint> {
    crate::widget::find(&p.screen(), id).map(|w| w.bounds.center())
}

/// Whether the task is solved on a phone configured as `drifted` by its reference
/// solution's touches, made by key (see the module doc); the reason if not.
pub async fn solvable(t: &SimTask, drifted: SimConfig) -> Result<(), String> {
    // Recorded on the default phone the reference was written for.
    let clean = SimConfig {
        seed: drifted.seed,
        ..SimConfig::default()
    };
    let plan = steps(t, clean).await;
    let p = SimDevice::new(drifted).unwrap();
    p.reset_to(t);
    for s in plan {
        match s {
            Step::Touch(hit) => {
                if !touch(&p, &hit).await {
                    return Err(format!(
                        "{}: `{}` not found; screen:\n{}",
                        t.id,
                        hit.key,
                        p.hierarchy_now()
                    ));
                }
            }
            Step::Slide(key, frac) => {
                let hit = Touched {
                    kind: TouchKind::Tap,
                    key: key.clone(),
                    package: String::new(),
                };
                if !reach(&p, &hit).await {
                    return Err(format!("{}: slider `{key}` not found", t.id));
                }
                let screen = p.screen();
                let w = screen
                    .all()
                    .into_iter()
                    .find(|w| crate::identity::key(w) == key)
                    .unwrap();
                let x = (w.frame.left + (frac * w.frame.width() as f32).round() as i32)
                    .clamp(w.bounds.left, w.bounds.right - 1);
                let y = w.bounds.center().y;
                p.tap(PixelPoint { x, y }).await.unwrap();
            }
            Step::Drag(key, dx, dy) => {
                let screen = p.screen();
                let Some(w) = screen
                    .all()
                    .into_iter()
                    .find(|w| crate::identity::key(w) == key)
                else {
                    return Err(format!("{}: picker `{key}` not found", t.id));
                };
                // Recorded on the 1080-wide phone: the same distance in design pixels.
                let k = p.config().design_scale();
                let from = w.bounds.center();
                let to = PixelPoint {
                    x: from.x + (dx as f32 * k) as i32,
                    y: from.y + (dy as f32 * k) as i32,
                };
                p.swipe(from, to, 400).await.unwrap();
            }
            Step::Plain(a) => {
                answer(&p, WHATS_NEW_KIND, None).await;
                tasks::run_actions(&p, &[a]).await.unwrap();
            }
        }
    }
    match t.check(&p.state()) {
        true => Ok(()),
        false => Err(format!(
            "{}: not done; screen:\n{}",
            t.id,
            p.hierarchy_now()
        )),
    }
}

/// Every task's failures under `drifted` (empty when all are solvable).
pub async fn unsolvable(drifted: SimConfig) -> Vec<String> {
    let mut out = Vec::new();
    for t in tasks::tasks() {
        if let Err(e) = solvable(&t, drifted.clone()).await {
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The solver itself: on a clean phone every task is solved by key.
    #[tokio::test]
    async fn every_task_is_solved_by_key_on_a_clean_phone() {
        let failed = unsolvable(SimConfig::default()).await;
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    }

    fn with(faults: crate::SimFaults) -> SimConfig {
        SimConfig {
            seed: 7,
            faults,
            ..SimConfig::default()
        }
    }

    #[tokio::test]
    async fn every_task_stays_solvable_with_icon_buttons() {
        let failed = unsolvable(with(crate::SimFaults {
            icon_buttons: true,
            ..Default::default()
        }))
        .await;
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    }

    /// The redesign's seeded choices (grid columns, menu order, dialog wording, button
    /// order) at several seeds.
    #[tokio::test]
    async fn every_task_stays_solvable_under_the_redesign_at_several_seeds() {
        for seed in [0, 1, 7, 42] {
            for faults in [
                crate::SimFaults {
                    list_to_grid: true,
                    ..Default::default()
                },
                crate::SimFaults {
                    overflow_menu: true,
                    ..Default::default()
                },
                crate::SimFaults {
                    whats_new_dialog: true,
                    confirm_destructive: true,
                    ..Default::default()
                },
                crate::SimFaults {
                    release_layout: true,
                    ..Default::default()
                },
            ] {
                let failed = unsolvable(SimConfig {
                    seed,
                    ..with(faults.clone())
                })
                .await;
                assert!(
                    failed.is_empty(),
                    "seed {seed} {faults:?}: {}",
                    failed.join("\n\n")
                );
            }
        }
    }

    /// The realistic drift: a redesign, renames, a larger font, on a German phone.
    #[tokio::test]
    async fn every_task_stays_solvable_under_the_realistic_drift() {
        let renames = crate::RenameMap::from_json(
            r#"{"ids": {"fab": "add_fab", "delete": "btn_delete", "onoff": "alarm_switch"},
                "strings": {"Save": "Done", "Add to cart": "Add to bag"}}"#,
        )
        .unwrap();
        let failed = unsolvable(SimConfig {
            locale: crate::Locale::De,
            font_scale: 1.3,
            renames,
            ..with(crate::SimFaults {
                changed_labels: true,
                renamed_ids: true,
                release_layout: true,
                ..crate::SimFaults::redesign()
            })
        })
        .await;
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    }

    /// Tablets and landscape phones: every task is solved there too.
    #[tokio::test]
    async fn every_task_stays_solvable_on_tablets_and_in_landscape() {
        for (width, height) in [(2400, 1080), (1600, 2560), (2560, 1600)] {
            let failed = unsolvable(SimConfig {
                width,
                height,
                ..SimConfig::default()
            })
            .await;
            assert!(
                failed.is_empty(),
                "{width}x{height}: {}",
                failed
                    .iter()
                    .map(|f| f.lines().next().unwrap())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }

    /// The device farm's phones laid out at their density (`density_layout`): the
    /// narrowest and shortest (320 dp, 16:9), a 360 dp phone at 16:9 and at 2:1, and a
    /// tablet (`tests/fixtures/device-farm/farm.tsv`). Every task is solved on each.
    #[tokio::test]
    async fn every_task_stays_solvable_on_the_farms_phones_at_their_density() {
        let mut all = Vec::new();
        for (width, height, density) in [
            (720, 1280, 320),
            (1080, 2160, 480),
            (1600, 2560, 360),
            (1080, 1920, 480),
        ] {
            let failed = unsolvable(SimConfig {
                width,
                height,
                density,
                density_layout: true,
                ..SimConfig::default()
            })
            .await;
            for f in failed {
                all.push(format!(
                    "{width}x{height}@{density}: {}",
                    f.lines().next().unwrap()
                ));
            }
        }
        assert!(all.is_empty(), "{}", all.join("\n"));
    }

    #[tokio::test]
    async fn every_task_stays_solvable_with_a_larger_font() {
        let failed = unsolvable(SimConfig {
            font_scale: 1.5,
            ..SimConfig::default()
        })
        .await;
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    }
}
