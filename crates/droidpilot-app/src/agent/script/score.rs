//! The element matcher: when none of a step's selectors names one element as written, every
//! element a person could touch is scored on all that the step recorded about its
//! target at once, and only a clear winner is taken.
//!
//! The model is Similo (Nass, Alégroth, Feldt, "Similarity-based web element
//! localization", 2021) and VON Similo (2023): a locator is a bag of attributes, each
//! compared with its own similarity and weight, and the candidate with the highest
//! weighted sum wins. Similo's weights give the identifying attributes (id, name, visible
//! text, neighbour texts) 1.5 and the supporting ones (class, path, location) 0.5; these
//! are the Android counterparts:
//!
//! | attribute | recorded from | compared by | weight |
//! |---|---|---|---|
//! | `id` | `#id` | id words (`similar::ids`) | 1.5 |
//! | `label` | `:text`, `:desc` | label words against the node's text, description or hint (an icon-only button keeps its old text as description); in the other attribute than the selector names, 0.8 of that | 1.5 |
//! | `row` | the anchor of `a >> b`, the step's `witness`, a row's several labels | share of them found among the texts of the node's row | 1.5 |
//! | `row` | an id anchor, `#hour >> #input` | id words (`similar::ids`) against the ids of the node's ancestors and siblings | 1.5 |
//! | `class` | a selector's class | same class 1, same family (`…Button`) 0.5 | 0.5 |
//! | `path` | an index path | equal 1, a sibling 0.5 | 0.5 |
//! | `place` | the recorded tap point | distance to the node's centre | 0.5 |
//!
//! The score is the weighted sum over the attributes the step recorded, divided by their
//! total, so 1 is a perfect match. A winner needs `ACCEPT`, a `MARGIN` over the
//! runner-up, and one identifying attribute (`id`, `label` or `row`) that agrees (more
//! than half alike; an id also keeps more than half of what the recorded one says,
//! `similar::id_kept`): a class and a place alone never identify an element. A step
//! recorded with a `witness` (its locator is shared by several rows) also needs one of
//! the witness texts in the winner's row.
//!
//! Hand-written rather than a crate: Similo's published code is for web DOMs (Java,
//! Selenium); no maintained Rust crate scores Android view attributes.

use super::similar;
use crate::screen::{Selector, UiTree};

/// The lowest score a winner may have.
pub const ACCEPT: f32 = 0.5;
/// How far a winner must be ahead of the runner-up.
pub const MARGIN: f32 = 0.15;
/// A label found in the other attribute than the one its selector names (`Profile::factor`).
const OTHER_ATTRIBUTE: f32 = 0.8;

const W_ID: f32 = 1.5;
const W_LABEL: f32 = 1.5;
const W_ROW: f32 = 1.5;
const W_CLASS: f32 = 0.5;
const W_PATH: f32 = 0.5;
const W_PLACE: f32 = 0.5;

/// What a step recorded about its target.
#[derive(Debug, Default, Clone)]
pub struct Profile {
    ids: Vec<String>,
    labels: Vec<String>,
    /// Which attribute the labels were written for: `:text` (the text, or a field's
    /// hint), `:desc` (the content description), or both.
    named_text: bool,
    named_desc: bool,
    /// The labels by the attribute their selector names (`:text`, `:desc`).
    text_labels: Vec<String>,
    desc_labels: Vec<String>,
    row: Vec<String>,
    /// The ids of `#anchor >> target` anchors: the group the element sits in.
    anchor_ids: Vec<String>,
    witness: Vec<String>,
    classes: Vec<String>,
    path: Option<Vec<u32>>,
    place: Option<[f64; 2]>,
}

/// The winner and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub node: usize,
    pub score: f32,
    pub margin: f32,
    pub agreed: Vec<String>,
}

impl Profile {
    /// From the step's selectors, its `witness` and its recorded tap point.
    pub fn new(selectors: &[Selector], witness: &[String], place: Option<[f64; 2]>) -> Self {
        let mut p = Profile {
            witness: witness.to_vec(),
            row: witness.to_vec(),
            place,
            ..Default::default()
        };
        for s in selectors {
            p.add(s);
        }
        // Several texts (or several descriptions) cannot all be the element's own: they
        // are a row's title and summary, so they describe its row. One text and one
        // description can be (a switch's "ON" and its "8:15 AM" description).
        let (texts, descs) = selectors.iter().fold((0, 0), |(t, d), s| match s {
            Selector::Text { .. } => (t + 1, d),
            Selector::Desc { .. } => (t, d + 1),
            _ => (t, d),
        });
        let mut distinct = p.labels.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() > 1 && (texts > 1 || descs > 1) {
            p.row.append(&mut p.labels);
            p.text_labels.clear();
            p.desc_labels.clear();
        }
        for v in [&mut p.ids, &mut p.labels, &mut p.row, &mut p.classes] {
            v.sort();
            v.dedup();
        }
        p
    }

    fn add(&mut self, s: &Selector) {
        match s {
            Selector::Id(id) => self.ids.push(id.clone()),
            Selector::Text { class, text } => {
                self.named_text = true;
                self.text_labels.push(text.clone());
                self.labels.push(text.clone());
                self.classes.extend(class.clone());
            }
            Selector::Desc { class, desc } => {
                self.named_desc = true;
                self.desc_labels.push(desc.clone());
                self.labels.push(desc.clone());
                self.classes.extend(class.clone());
            }
            Selector::Class(c) => self.classes.push(c.clone()),
            Selector::Path(p) => self.path = Some(p.clone()),
            Selector::Package(_) => {}
            // Words read off the screenshot name the element like its label does.
            Selector::Ocr(t) => {
                (self.named_text, self.named_desc) = (true, true);
                self.labels.push(t.clone());
            }
            Selector::Near { anchor, target } => {
                match anchor.as_ref() {
                    Selector::Text { text, .. } => self.row.push(text.clone()),
                    Selector::Desc { desc, .. } => self.row.push(desc.clone()),
                    Selector::Id(id) => self.anchor_ids.push(id.clone()),
                    _ => {}
                }
                self.add(target);
            }
        }
    }

    /// How much a label agreeing with a node's text (`text`) or its description counts:
    /// fully in the attribute the selector named, `OTHER_ATTRIBUTE` in the other (a
    /// `:text("8:15 AM")` is the time's text view before the switch described "8:15 AM";
    /// an icon-only button that kept its old text as its description still matches).
    fn factor(&self, text: bool) -> f32 {
        let named = if text {
            self.named_text
        } else {
            self.named_desc
        };
        let only_other = if text {
            self.named_desc
        } else {
            self.named_text
        };
        if named || !only_other {
            1.0
        } else {
            OTHER_ATTRIBUTE
        }
    }

    /// A node's label attributes (text, description, hint) with what a label agreeing
    /// with each counts (`factor`).
    fn label_attributes<'n>(&self, node: &'n crate::screen::UiNode) -> [(&'n String, f32); 3] {
        [
            (&node.text, self.factor(true)),
            (&node.content_desc, self.factor(false)),
            (&node.hint, self.factor(true)),
        ]
    }

    /// The identifying attributes this profile records (`id`, `label`, `row`).
    pub fn identifying(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.ids.is_empty() {
            out.push("id");
        }
        if !self.labels.is_empty() {
            out.push("label");
        }
        if !(self.row.is_empty() && self.anchor_ids.is_empty()) {
            out.push("row");
        }
        out
    }

    /// Whether there is anything that could identify an element.
    pub fn identifies(&self) -> bool {
        !(self.ids.is_empty()
            && self.labels.is_empty()
            && self.row.is_empty()
            && self.anchor_ids.is_empty())
    }
}

/// The one clear winner among `candidates`, or None.
pub fn best(tree: &UiTree, candidates: &[usize], p: &Profile) -> Option<Scored> {
    if !p.identifies() {
        return None;
    }
    // Only row texts recorded (a row's title and summary): the element is the row
    // itself, not one of the labels or widgets inside it.
    let row_only = p.ids.is_empty() && p.labels.is_empty() && p.anchor_ids.is_empty();
    let mut all: Vec<(usize, f32, Vec<String>, bool)> = candidates
        .iter()
        .filter(|&&n| !row_only || (tree.nodes[n].is_actionable() && row_of(tree, n) == n))
        .map(|&n| {
            let (score, agreed, identity) = score(tree, n, p);
            (n, score, agreed, identity)
        })
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (node, score, agreed, identity) = all.first()?.clone();
    let runner_up = all.get(1);
    let margin = score - runner_up.map_or(0.0, |r| r.1);
    let witnessed = p.witness.is_empty() || witnessed(tree, node, &p.witness);
    // The label itself, word for word (up to case), against a runner-up that only shares
    // words with it ("Rust programming language" for a recased "Rust Programming
    // Language", before "Rust (programming language) - Wikipedia"): ahead is enough.
    let decisive = same_label(tree, node, p) && runner_up.is_none_or(|r| !same_label(tree, r.0, p));
    let clear = margin >= MARGIN || (decisive && margin > 0.0);
    (identity && witnessed && score >= ACCEPT && clear).then_some(Scored {
        node,
        score,
        margin,
        agreed,
    })
}

/// Whether some candidate matches well enough (`ACCEPT` and an identifying attribute),
/// look-alikes allowed: for an `expect`, which checks and never acts.
pub fn present(tree: &UiTree, candidates: &[usize], p: &Profile) -> bool {
    p.identifies()
        && candidates.iter().any(|&n| {
            let (s, _, identity) = score(tree, n, p);
            identity && s >= ACCEPT
        })
}

/// Whether the node shows one of the profile's labels word for word (case and punctuation
/// aside) in the attribute its selector names.
fn same_label(tree: &UiTree, n: usize, p: &Profile) -> bool {
    let own = p.label_attributes(&tree.nodes[n]);
    p.labels.iter().any(|l| {
        own.iter()
            .any(|(o, f)| *f == 1.0 && similar::labels(l, o) == 1.0)
    })
}

/// Whether some candidate is what the profile names, not a look-alike: `ACCEPT`, every
/// identifying attribute the profile records agrees (a row's button id alone is not the
/// button of the row the profile names), and a label it names is shown word for word
/// (case and punctuation aside: "6:00 am" is "6:00 AM"; "Milk, eggs, bread, butter" is
/// not "Milk, eggs, bread", which a typed word made go). Several may (a label and a
/// switch described by it): presence, not a target to act on.
pub fn lingers(tree: &UiTree, candidates: &[usize], p: &Profile) -> bool {
    let kinds = p.identifying();
    !kinds.is_empty()
        && candidates.iter().any(|&n| {
            let (s, agreed, _) = score(tree, n, p);
            s >= ACCEPT
                && kinds.iter().all(|k| agreed.iter().any(|a| a == k))
                && (p.labels.is_empty() || same_label(tree, n, p))
        })
}

/// A candidate's score, the attributes that agreed, and whether one of them identifies.
fn score(tree: &UiTree, n: usize, p: &Profile) -> (f32, Vec<String>, bool) {
    let node = &tree.nodes[n];
    // (attribute, weight, similarity, agreement): an attribute agrees when its agreement
    // is over one half; only an id's differs from its similarity (see `similar::id_kept`).
    let mut parts: Vec<(&str, f32, f32, f32)> = Vec::new();
    if !p.ids.is_empty() && !node.resource_id.is_empty() {
        let have = &node.resource_id;
        let best =
            |f: fn(&str, &str) -> f32| p.ids.iter().map(|id| f(id, have)).fold(0.0, f32::max);
        let s = best(similar::ids);
        parts.push(("id", W_ID, s, s.min(best(similar::id_kept))));
    } else if !p.ids.is_empty() {
        parts.push(("id", W_ID, 0.0, 0.0));
    }
    if !p.labels.is_empty() {
        let best = |labels: &[String], own: &[(&String, f32)]| {
            labels
                .iter()
                .flat_map(|l| own.iter().map(move |(o, f)| f * similar::labels(l, o)))
                .fold(0.0, f32::max)
        };
        let (text, desc, hint) = (&node.text, &node.content_desc, &node.hint);
        let s = if p.text_labels.is_empty() || p.desc_labels.is_empty() {
            let own = p.label_attributes(node);
            best(&p.labels, &own)
        } else {
            // The element's own text and its own description were both recorded (a
            // switch's "ON" and its "8:15 AM"): an element showing each in its attribute
            // agrees fully; one showing only one of them (the time's text view beside
            // the switch, a menu row that kept the description as its title) less.
            let in_text = best(&p.text_labels, &[(text, 1.0), (hint, 1.0)]);
            let in_desc = best(&p.desc_labels, &[(desc, 1.0)]);
            if in_text > 0.5 && in_desc > 0.5 {
                (in_text + in_desc) / 2.0
            } else {
                OTHER_ATTRIBUTE * best(&p.labels, &[(text, 1.0), (desc, 1.0), (hint, 1.0)])
            }
        };
        {
            let v = s;
            parts.push(("label", W_LABEL, v, v));
        }
    }
    if !p.row.is_empty() {
        let texts = row_texts(tree, n);
        let found = p.row.iter().filter(|r| has(&texts, r)).count();
        {
            let v = found as f32 / p.row.len() as f32;
            parts.push(("row", W_ROW, v, v));
        }
    }
    if !p.anchor_ids.is_empty() {
        let group = group_ids(tree, n);
        let s = p
            .anchor_ids
            .iter()
            .flat_map(|a| group.iter().map(move |g| similar::ids(a, g)))
            .fold(0.0, f32::max);
        {
            let v = s;
            parts.push(("row", W_ROW, v, v));
        }
    }
    if !p.classes.is_empty() {
        let c = node.short_class();
        let s = p.classes.iter().map(|k| class(k, c)).fold(0.0, f32::max);
        {
            let v = s;
            parts.push(("class", W_CLASS, v, v));
        }
    }
    if let Some(path) = &p.path {
        {
            let v = path_sim(path, &node.path);
            parts.push(("path", W_PATH, v, v));
        }
    }
    if let Some(place) = p.place {
        {
            let v = place_sim(tree, n, place);
            parts.push(("place", W_PLACE, v, v));
        }
    }
    let total: f32 = parts.iter().map(|(_, w, _, _)| w).sum();
    let got: f32 = parts.iter().map(|(_, w, s, _)| w * s).sum();
    let agreed: Vec<String> = parts
        .iter()
        .filter(|(_, _, _, a)| *a > 0.5)
        .map(|(a, _, _, _)| a.to_string())
        .collect();
    let identity = agreed
        .iter()
        .any(|a| matches!(a.as_str(), "id" | "label" | "row"));
    (got / total.max(f32::EPSILON), agreed, identity)
}

/// Whether a recorded row text is among `texts`, all its words in order: a row's
/// texts tell rows apart, so nothing looser counts.
fn has(texts: &[String], want: &str) -> bool {
    texts.iter().any(|t| similar::contains(t, want))
}

fn class(want: &str, have: &str) -> f32 {
    let want = crate::screen::tree::short_class(want);
    if want == have {
        1.0
    } else if ["Button", "Text", "Image", "Layout", "View"]
        .iter()
        .any(|f| want.ends_with(f) && have.ends_with(f))
    {
        0.5
    } else {
        0.0
    }
}

fn path_sim(want: &[u32], have: &str) -> f32 {
    let have: Vec<u32> = have.split('.').filter_map(|p| p.parse().ok()).collect();
    if have == want {
        1.0
    } else if have.len() == want.len() && have[..have.len() - 1] == want[..want.len() - 1] {
        0.5
    } else {
        0.0
    }
}

fn place_sim(tree: &UiTree, n: usize, place: [f64; 2]) -> f32 {
    let screen = tree.screen_bounds();
    let (w, h) = (screen.width().max(1) as f64, screen.height().max(1) as f64);
    let c = tree.nodes[n].bounds.center();
    let (x, y) = (c.x as f64 / w, c.y as f64 / h);
    let d: f64 = ((x - place[0]).powi(2) + (y - place[1]).powi(2)).sqrt();
    (1.0 - d / 0.3).max(0.0) as f32
}

/// The row a node belongs to: its largest ancestor, at most four levels up and never a
/// scrollable one or a window, that holds no other node like it (the same id; without
/// one, the same class and label). A row's own wrappers are climbed through; the list
/// holding the other rows is not.
pub fn row_of(tree: &UiTree, n: usize) -> usize {
    let node = &tree.nodes[n];
    let like = |i: usize| {
        let o = &tree.nodes[i];
        i != n
            && if node.resource_id.is_empty() {
                o.resource_id.is_empty()
                    && o.class == node.class
                    && o.text == node.text
                    && o.content_desc == node.content_desc
            } else {
                o.resource_id == node.resource_id
            }
    };
    let mut row = n;
    for p in tree.ancestors(n).take(4) {
        let parent = &tree.nodes[p];
        if parent.scrollable || parent.parent.is_none() || tree.subtree(p).any(like) {
            break;
        }
        row = p;
    }
    row
}

/// The ids of the groups a node sits in (its ancestors) and of its siblings: where an
/// anchor id of `#hour >> #input` is, around the element it anchors.
fn group_ids(tree: &UiTree, n: usize) -> Vec<&str> {
    let siblings = tree.nodes[n].parent.into_iter().flat_map(|p| {
        tree.subtree(p)
            .skip(1)
            .filter(move |&i| tree.nodes[i].parent == Some(p))
    });
    tree.ancestors(n)
        .chain(siblings)
        .filter(|&i| i != n)
        .map(|i| tree.nodes[i].resource_id.as_str())
        .filter(|id| !id.is_empty())
        .collect()
}

/// The texts and descriptions in a node's row.
pub fn row_texts(tree: &UiTree, n: usize) -> Vec<String> {
    tree.subtree(row_of(tree, n))
        .flat_map(|i| [&tree.nodes[i].text, &tree.nodes[i].content_desc])
        .filter(|t| !t.is_empty())
        .cloned()
        .collect()
}

/// Whether one of the witness texts is in the node's row.
pub fn witnessed(tree: &UiTree, n: usize, witness: &[String]) -> bool {
    let texts = row_texts(tree, n);
    witness.iter().any(|w| has(&texts, w))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::screen::{ReprOptions, Screen};

    /// A real Settings screen (AOSP "Backup & reset" on an OPPO phone).
    fn settings() -> Screen {
        let path = format!(
            "{}/../../tests/fixtures/uiautomator/real/002__zytzjx__anthenacmc__dump1.xml",
            env!("CARGO_MANIFEST_DIR")
        );
        let xml = std::fs::read_to_string(path).unwrap();
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    fn best_for(s: &Screen, sels: &[&str], witness: &[&str]) -> Option<Scored> {
        let sels: Vec<Selector> = sels.iter().map(|x| Selector::parse(x).unwrap()).collect();
        let witness: Vec<String> = witness.iter().map(|w| w.to_string()).collect();
        let all: Vec<usize> = (0..s.tree.nodes.len()).collect();
        best(&s.tree, &all, &Profile::new(&sels, &witness, None))
    }

    /// A label whose case changed finds its element, and says which attributes agreed.
    #[test]
    fn a_clear_winner_is_taken_and_explained() {
        let s = settings();
        let won = best_for(&s, &[":text(\"Reset to factory settings\")"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].text, "Reset to Factory Settings");
        assert_eq!(won.agreed, ["label"]);
        assert!(won.margin >= MARGIN);
    }

    /// A step that names its button by id alone, on a screen whose only id sharing a
    /// word with it is another element's (the cart's icon, `actionCart`, sharing
    /// "cart" with `add_to_cart`): no winner, as the id lost what the old one said it
    /// does. The button under a renamed id that keeps its words wins.
    #[test]
    fn an_id_that_lost_its_words_is_another_element() {
        let node = |id: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="com.shop:id/{id}" class="android.widget.Button" package="com.shop" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"/>"#,
                b = top + 200
            )
        };
        let screen = |ids: &[&str]| {
            let nodes: String = (ids.iter().enumerate())
                .map(|(i, id)| node(id, 200 * i as u32))
                .collect();
            let xml = format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.shop" content-desc="" bounds="[0,0][1080,2400]">{nodes}</node></hierarchy>"#
            );
            Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
        };
        assert_eq!(
            best_for(&screen(&["actionCart", "home"]), &["#add_to_cart"], &[]),
            None
        );
        let s = screen(&["actionCart", "btnAddCart"]);
        let won = best_for(&s, &["#add_to_cart"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].resource_id, "com.shop:id/btnAddCart");
    }

    /// Two rows share `switch_widget` and nothing else was recorded: no guess. With the
    /// row's witness, the switch of that row.
    #[test]
    fn look_alikes_are_never_a_guess() {
        let s = settings();
        assert_eq!(best_for(&s, &["#switch_widget"], &[]), None);
        assert_eq!(best_for(&s, &["#summary"], &[]), None);
        let won = best_for(&s, &["#switch_widget"], &["Automatic Restore"]).unwrap();
        assert_eq!(s.tree.nodes[won.node].bounds.top, 792);
        assert!(won.agreed.contains(&"row".to_string()), "{:?}", won.agreed);
    }

    /// A switch recorded by its own text and its own description ("ON", "8:15 AM"),
    /// after an update recased its text: never the row around it (tapping the row
    /// opens the alarm instead of switching it), nor the time's text view beside it,
    /// which shows one of the two labels and not in the attribute recorded: the switch,
    /// agreeing on both, is the clear winner.
    #[test]
    fn an_elements_own_text_and_description_stay_its_own() {
        let row = |time: &str, on: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{time}" resource-id="" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{top}][600,{b}]"/><node index="1" text="{on}" resource-id="" class="android.widget.Switch" package="app" content-desc="{time}" clickable="true" enabled="true" bounds="[880,{top}][1040,{b}]"/></node>"#,
                b = top + 200
            )
        };
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}{}</node></hierarchy>"#,
            row("6:00 AM", "Off", 0),
            row("8:15 AM", "On", 200)
        );
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        let won = best_for(&s, &[":text(\"ON\")", ":desc(\"8:15 AM\")"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].short_class(), "Switch");
        assert_eq!(s.tree.nodes[won.node].content_desc, "8:15 AM");
        let recased = xml
            .replace("8:15 AM", "8:15 am")
            .replace("\"On\"", "\"on\"");
        let r = Screen::from_xml(&recased, &ReprOptions::default()).unwrap();
        let won = best_for(&r, &[":text(\"ON\")", ":desc(\"8:15 AM\")"], &[]).unwrap();
        assert_eq!(r.tree.nodes[won.node].content_desc, "8:15 am");
        // Its own text alone still finds it.
        let won = best_for(&s, &[":text(\"ON\")"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].text, "On");
    }

    /// Alarm rows as the Clock app writes them: the time as a text view's text, a delete
    /// button, and a switch described by the time.
    pub(in crate::agent::script) fn alarm_rows(times: &[&str]) -> Screen {
        let rows: String = times
            .iter()
            .enumerate()
            .map(|(i, time)| {
                let top = 300 + 200 * i;
                format!(
                    r#"<node index="{i}" text="" resource-id="clock:id/alarm_row" class="android.widget.LinearLayout" package="clock" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{time}" resource-id="clock:id/digital_clock" class="android.widget.TextView" package="clock" content-desc="" bounds="[40,{top}][600,{b}]"/><node index="1" text="" resource-id="clock:id/removeAlarm" class="android.widget.ImageButton" package="clock" content-desc="Delete alarm" clickable="true" enabled="true" bounds="[700,{top}][840,{b}]"/><node index="2" text="OFF" resource-id="clock:id/onoff" class="android.widget.Switch" package="clock" content-desc="{time}" clickable="true" enabled="true" bounds="[880,{top}][1040,{b}]"/></node>"#,
                    b = top + 200
                )
            })
            .collect();
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="clock" content-desc="" bounds="[0,0][1080,2400]">{rows}</node></hierarchy>"#
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    /// An update recased the times (or a German phone writes `08:15`): `:text("8:15 AM")`
    /// names what shows the time as its text, not the switch that carries it as its
    /// description; `:desc` the other way round. A label in the attribute the selector
    /// did not name still matches when nothing else does (an icon that kept its text as
    /// its description).
    #[test]
    fn a_label_counts_most_in_the_attribute_its_selector_names() {
        let s = alarm_rows(&["6:00 am", "08:15"]);
        let won = best_for(&s, &[":text(\"8:15 AM\")"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].short_class(), "TextView");
        let won = best_for(&s, &[":desc(\"6:00 AM\")"], &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].short_class(), "Switch");
        let icon = settings();
        let n = icon
            .tree
            .nodes
            .iter()
            .position(|n| !n.text.is_empty())
            .unwrap();
        let text = icon.tree.nodes[n].text.clone();
        let mut xml_icon = icon.clone();
        xml_icon.tree.nodes[n].content_desc = text.clone();
        xml_icon.tree.nodes[n].text.clear();
        let all: Vec<usize> = (0..xml_icon.tree.nodes.len()).collect();
        let sels = [Selector::parse(&format!(":text({text:?})")).unwrap()];
        let won = best(&xml_icon.tree, &all, &Profile::new(&sels, &[], None));
        assert_eq!(won.map(|w| w.node), Some(n), "found by its description");
    }

    /// A search results page whose titles an update recased: the title that is the
    /// recorded label word for word wins over one that only contains its words, though
    /// the two score within the margin; two titles that are both the label word for
    /// word stay a tie.
    #[test]
    fn the_label_word_for_word_beats_one_that_contains_its_words() {
        let page = |titles: &[&str]| {
            let nodes: String = (titles.iter().enumerate())
                .map(|(i, t)| {
                    let top = 200 * i;
                    format!(
                        r#"<node index="{i}" text="{t}" resource-id="" class="android.view.View" package="web" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"/>"#,
                        b = top + 200
                    )
                })
                .collect();
            let xml = format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="web" content-desc="" bounds="[0,0][1080,2400]">{nodes}</node></hierarchy>"#
            );
            Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
        };
        let sel = [":text(\"Rust Programming Language\")"];
        let s = page(&[
            "Rust programming language",
            "Rust (Programming Language) - Wikipedia",
        ]);
        let won = best_for(&s, &sel, &[]).unwrap();
        assert_eq!(s.tree.nodes[won.node].text, "Rust programming language");
        assert!(won.margin < MARGIN, "within the margin: {}", won.margin);
        let twice = page(&["Rust programming language", "Rust Programming language"]);
        assert_eq!(best_for(&twice, &sel, &[]), None);
    }

    /// A class and a place alone never identify an element.
    #[test]
    fn class_and_place_alone_identify_nothing() {
        let s = settings();
        let sels = [Selector::parse("Switch").unwrap()];
        let all: Vec<usize> = (0..s.tree.nodes.len()).collect();
        let p = Profile::new(&sels, &[], Some([0.87, 0.36]));
        assert_eq!(best(&s.tree, &all, &p), None);
    }
}
