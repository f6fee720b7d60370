//! `scroll_to_find`: scroll until a selector matches something on screen, or the list
//! stops moving, or the scroll budget runs out. One loop for its two callers: the runner
//! (the navigator's `scroll_to_find` tool, a custom action done within one step, see
//! `run::scroll_find`) and the MCP server's tool (which records every scroll as a step of
//! its session task). Each caller brings its own way to read the screen and to scroll.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::domain::action::SwipePath;
use crate::domain::{Action, Bounds, Direction, NormPoint, Target};
use crate::screen::resolve::visible_chain;
use crate::screen::{Screen, Selector, content_hash};

/// Scrolls when a caller gives no `max_swipes`.
pub const DEFAULT_SWIPES: u32 = 10;
/// The most scrolls one search may take, whatever the caller asks.
pub const MAX_SWIPES: u32 = 50;

/// One search: what to bring on screen, which way to scroll, and for how long.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrollToFind {
    /// A selector (`#id`, `:text("…")`, …), checked when parsed.
    pub selector: String,
    #[serde(default = "down")]
    pub direction: Direction,
    /// Capped at `MAX_SWIPES`; `DEFAULT_SWIPES` when absent.
    #[serde(default)]
    pub max_swipes: Option<u32>,
    /// The region searched, `[left, top, right, bottom]` in pixels: the scrolls are
    /// swipes inside it and only a match whose centre lies in it counts (a split-screen
    /// window's search never scrolls or finds in the other window).
    #[serde(default)]
    pub within: Option<[i32; 4]>,
}

fn down() -> Direction {
    Direction::Down
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// On screen after `swipes` scrolls, at `bounds`.
    At { swipes: u32, bounds: Bounds },
    /// The list did not move after a scroll: its end was reached.
    ListEnd { swipes: u32 },
    /// Not on screen after the whole budget.
    GaveUp { swipes: u32 },
}

impl Found {
    /// Why the target was not found, for an error message; None when it was.
    pub fn why_not(&self, selector: &str) -> Option<String> {
        match self {
            Found::At { .. } => None,
            Found::ListEnd { swipes } => Some(format!(
                "`{selector}` is not on screen: the list stopped moving after {swipes} scroll(s), its end is reached"
            )),
            Found::GaveUp { swipes } => Some(format!(
                "`{selector}` is not on screen after {swipes} scroll(s)"
            )),
        }
    }
}

/// What to tell a caller whose target was not found.
pub const NOT_FOUND_HINT: &str =
    "Scroll the other way, check the selector against the screen's elements, or raise max_swipes.";

impl ScrollToFind {
    /// From an action's arguments (`selector`, optional `direction` and `max_swipes`);
    /// unknown fields and a malformed selector are refused, naming them.
    pub fn parse(args: &Map<String, Value>) -> Result<Self, String> {
        let s: ScrollToFind = serde_json::from_value(Value::Object(args.clone()))
            .map_err(|e| format!("scroll_to_find: {e}"))?;
        s.checked()
    }

    /// The selector checked (its error names the position).
    pub fn checked(self) -> Result<Self, String> {
        Selector::parse(&self.selector)
            .map_err(|e| format!("scroll_to_find: selector `{}`: {e}", self.selector))?;
        Ok(self)
    }

    pub fn budget(&self) -> u32 {
        self.max_swipes.unwrap_or(DEFAULT_SWIPES).min(MAX_SWIPES)
    }

    /// The scroll each round does on a screen of `size` pixels: a swipe inside the
    /// region when there is one.
    pub fn scroll(&self, size: (i32, i32)) -> Action {
        match self.region() {
            Some(b) => swipe_within(b, self.direction, true, size),
            None => Action::Scroll {
                direction: self.direction,
                container: None,
            },
        }
    }

    fn region(&self) -> Option<Bounds> {
        self.within.map(|[l, t, r, b]| Bounds::new(l, t, r, b))
    }

    /// Where the target is on `screen`: one match (in the region, when there is one).
    fn found(&self, screen: &Screen, target: &Target) -> Option<Bounds> {
        let Some(region) = self.region() else {
            return screen.resolve(target).ok();
        };
        let sel = Selector::parse(&self.selector).ok()?;
        let tree = &screen.tree;
        let visible = region.intersect(&screen.elements.screen);
        let hits: Vec<Bounds> = (screen.find(&sel).nodes.iter())
            .filter(|&&n| visible_chain(tree, n, &visible))
            .map(|&n| tree.nodes[n].bounds.intersect(&visible))
            .filter(|b| region.contains(b.center()))
            .collect();
        match hits.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }

    /// A search from its first screen on.
    pub fn start(&self) -> Search<'_> {
        Search {
            request: self,
            target: Target::Selector(self.selector.clone()),
            last_layout: None,
            swipes: 0,
        }
    }
}

/// A search under way, without I/O: the caller reads a screen, asks `next`, and scrolls
/// or stops as told. (Sans-I/O, so the runner and the MCP server each read and scroll in
/// their own way, one recording every scroll, with the same rules.)
pub struct Search<'r> {
    request: &'r ScrollToFind,
    target: Target,
    last_layout: Option<u64>,
    swipes: u32,
}

/// What to do after reading a screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Do this scroll, then read the screen again.
    Scroll(Action),
    Done(Found),
}

impl Search<'_> {
    pub fn next(&mut self, screen: &Screen) -> Next {
        let swipes = self.swipes;
        if let Some(bounds) = self.request.found(screen, &self.target) {
            return Next::Done(Found::At { swipes, bounds });
        }
        // Digits count: a list of times or numbered rows moves when only they change.
        let layout = content_hash(&screen.tree).0;
        if self.last_layout == Some(layout) {
            return Next::Done(Found::ListEnd { swipes });
        }
        if swipes == self.request.budget() {
            return Next::Done(Found::GaveUp { swipes });
        }
        self.last_layout = Some(layout);
        self.swipes += 1;
        let b = screen.elements.screen;
        Next::Scroll(self.request.scroll((b.right.max(1), b.bottom.max(1))))
    }
}

/// A swipe inside `b` on a screen of `size` pixels, across 60% of it through its
/// centre: the finger moves `dir`, or the other way for a scroll (`down` shows what is
/// below).
pub fn swipe_within(b: Bounds, dir: Direction, scroll: bool, size: (i32, i32)) -> Action {
    use Direction::*;
    let finger = match (dir, scroll) {
        (d, false) => d,
        (Down, true) => Up,
        (Up, true) => Down,
        (Left, true) => Right,
        (Right, true) => Left,
    };
    let (cx, cy) = ((b.left + b.right) / 2, (b.top + b.bottom) / 2);
    let (dx, dy) = (b.width() * 3 / 10, b.height() * 3 / 10);
    let (from, to) = match finger {
        Up => ((cx, cy + dy), (cx, cy - dy)),
        Down => ((cx, cy - dy), (cx, cy + dy)),
        Left => ((cx + dx, cy), (cx - dx, cy)),
        Right => ((cx - dx, cy), (cx + dx, cy)),
    };
    let n =
        |(x, y): (i32, i32)| NormPoint::clamped(x as f64 / size.0 as f64, y as f64 / size.1 as f64);
    Action::Swipe {
        path: SwipePath::Points {
            start: n(from),
            end: n(to),
        },
        duration_ms: Some(400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    fn screen(rows: &[&str]) -> Screen {
        let nodes: String = (rows.iter().enumerate())
            .map(|(i, r)| {
                let (top, bottom) = (i * 100, i * 100 + 90);
                format!(r#"<node class="android.widget.TextView" text="{r}" clickable="true" bounds="[0,{top}][1080,{bottom}]"/>"#)
            })
            .collect();
        let xml = format!(
            r#"<hierarchy><node class="android.widget.ScrollView" package="com.app" scrollable="true" bounds="[0,0][1080,2400]">{nodes}</node></hierarchy>"#
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    fn request(args: serde_json::Value) -> ScrollToFind {
        ScrollToFind::parse(args.as_object().unwrap()).unwrap()
    }

    /// With a region, a match outside it does not count, and the scroll is a swipe
    /// inside it (the finger moving up for `down`).
    #[test]
    fn a_region_keeps_the_search_and_its_scrolls_inside() {
        let r = request(
            serde_json::json!({"selector": ":text(\"Row 1\")", "within": [0, 1200, 1080, 2400]}),
        );
        let mut s = r.start();
        let Next::Scroll(Action::Swipe {
            path: SwipePath::Points { start, end },
            ..
        }) = s.next(&screen(&["Row 1", "Row 2"]))
        else {
            panic!("Row 1 lies above the region: not found, and a swipe follows");
        };
        assert!(start.y() > end.y() && end.y() >= 0.5, "{start:?} → {end:?}");
        let rows: Vec<String> = (0..20).map(|i| format!("Row {i}")).collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let r = request(
            serde_json::json!({"selector": ":text(\"Row 15\")", "within": [0, 1200, 1080, 2400]}),
        );
        assert!(matches!(
            r.start().next(&screen(&rows)),
            Next::Done(Found::At { swipes: 0, .. })
        ));
    }

    #[test]
    fn scrolls_until_the_row_shows_and_reports_the_scrolls() {
        let r = request(serde_json::json!({"selector": ":text(\"Row 9\")"}));
        let mut s = r.start();
        assert!(matches!(
            s.next(&screen(&["Row 1", "Row 2"])),
            Next::Scroll(Action::Scroll {
                direction: Direction::Down,
                ..
            })
        ));
        assert!(matches!(
            s.next(&screen(&["Row 5", "Row 6"])),
            Next::Scroll(_)
        ));
        assert!(matches!(
            s.next(&screen(&["Row 8", "Row 9"])),
            Next::Done(Found::At { swipes: 2, .. })
        ));
    }

    #[test]
    fn stops_at_the_end_of_the_list_or_the_budget() {
        let r = request(serde_json::json!({"selector": ":text(\"Nowhere\")", "direction": "up"}));
        let mut s = r.start();
        let last = screen(&["Row 8", "Row 9"]);
        assert!(matches!(
            s.next(&last),
            Next::Scroll(Action::Scroll {
                direction: Direction::Up,
                ..
            })
        ));
        let end = s.next(&last);
        assert_eq!(end, Next::Done(Found::ListEnd { swipes: 1 }));
        let Next::Done(found) = end else {
            unreachable!()
        };
        assert!(found.why_not("x").unwrap().contains("its end is reached"));

        let r = request(serde_json::json!({"selector": "#nowhere", "max_swipes": 1}));
        let mut s = r.start();
        assert!(matches!(s.next(&screen(&["A"])), Next::Scroll(_)));
        assert_eq!(
            s.next(&screen(&["B"])),
            Next::Done(Found::GaveUp { swipes: 1 })
        );
        assert_eq!(
            request(serde_json::json!({"selector": "#x", "max_swipes": 999})).budget(),
            MAX_SWIPES
        );
    }

    #[test]
    fn bad_arguments_are_refused_by_name() {
        let parse = |v: serde_json::Value| ScrollToFind::parse(v.as_object().unwrap()).unwrap_err();
        assert!(
            parse(serde_json::json!({"selector": "#a", "dirction": "up"})).contains("dirction")
        );
        assert!(parse(serde_json::json!({"selector": ":text(\"a"})).contains("selector"));
        assert!(parse(serde_json::json!({"direction": "up"})).contains("selector"));
    }
}
