//! Finding a script step's target on the current screen: the primary selector, then the
//! alternatives in order, then (unless the script says `"fuzzy": false`) the element
//! matcher (`score.rs`), which scores every element on what the step recorded and takes
//! only a clear winner, then the recorded structure (`by_structure`): on a screen with
//! the step's recorded `layout` whose words changed (another UI language), the element
//! at the recorded index path.
//!
//! Safety before reach:
//! - a locator many elements may share (an index path, a class, or any plain selector of
//!   a step recorded with a `witness`) is used only when its node has a witness (one of
//!   the recorded row texts in its row; for a hand-written step, another of its labels
//!   naming it): after a reorder, a path names another row and an id every row shares
//!   names whichever row is left;
//! - an `expect` is checked the same way (`expected`), so a step whose action worked is
//!   not failed because the element it expected was renamed; a `gone` expect counts a
//!   node behind a dialog as still there (`present`).
//!
//! While a dialog is on top (`has_modal`), only the dialog's window can be touched: an
//! element behind it counts as absent, so the dialog is dealt with first instead of a tap
//! that the dialog would swallow (`interrupt.rs` says which dialogs replay may dismiss).

use super::score::{self, Profile};
use crate::domain::{Fallback, MatchInfo};
use crate::screen::resolve::visible_chain;
use crate::screen::{Screen, Selector, SelectorIndex, UiTree};

/// A target found on the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub selector: String,
    pub node: usize,
    pub fallback: Fallback,
    /// Why the element matcher took it (a `Fallback::Fuzzy` find).
    pub matched: Option<MatchInfo>,
}

/// The root (window) a node belongs to.
fn root_of(tree: &UiTree, mut n: usize) -> usize {
    while let Some(p) = tree.nodes[n].parent {
        n = p;
    }
    n
}

/// The window of the dialog on top, when there is one and it can be told apart: the last
/// window holding the framework's dialog ids, or a permission controller's window; else
/// the last app window that floats (inset from the screen's top-left corner, as a
/// dialog's or a popup menu's window is; a Compose or custom dialog has no framework ids).
pub(super) fn modal_root(screen: &Screen) -> Option<usize> {
    if !screen.has_modal {
        return None;
    }
    let tree = &screen.tree;
    let framework = tree.roots.iter().rev().copied().find(|&r| {
        let pkg = &tree.nodes[r].package;
        if is_keyboard(pkg) {
            return false;
        }
        pkg.contains("permissioncontroller")
            || pkg.contains("packageinstaller")
            || (0..tree.nodes.len()).any(|n| {
                let node = &tree.nodes[n];
                ["alertTitle", "parentPanel", "buttonPanel"].contains(&node.short_id())
                    && root_of(tree, n) == r
            })
    });
    framework.or_else(|| {
        let windows: Vec<usize> = tree.app_windows().collect();
        windows.iter().rev().copied().find(|&r| {
            let b = tree.nodes[r].bounds;
            b.left > 0 && b.top > 0 && !is_keyboard(&tree.nodes[r].package)
        })
    })
}

/// Whether a person could touch node `n`: on screen, not behind a dialog, and not under
/// the soft keyboard (a tap there types a key; the keyboard is dismissed by rule first).
pub(super) fn reachable(screen: &Screen, modal: Option<usize>, n: usize) -> bool {
    visible_chain(&screen.tree, n, &screen.elements.screen)
        && modal.is_none_or(|r| root_of(&screen.tree, n) == r)
        && !under_keyboard(&screen.tree, n)
}

/// Whether the centre of node `n` lies inside a keyboard window drawn above its own
/// (windows come bottom to top; a system pop-up over the keyboard is not under it).
fn under_keyboard(tree: &UiTree, n: usize) -> bool {
    let c = tree.nodes[n].bounds.center();
    let own = root_of(tree, n);
    let mut above = tree.roots.iter().skip_while(|&&r| r != own).skip(1);
    above.any(|&r| is_keyboard(&tree.nodes[r].package) && tree.nodes[r].bounds.contains(c))
}

fn is_keyboard_node(tree: &UiTree, n: usize) -> bool {
    is_keyboard(&tree.nodes[root_of(tree, n)].package)
}

fn is_keyboard(package: &str) -> bool {
    package.contains("inputmethod") || package.contains("keyboard")
}

/// The unique visible node `sel` matches.
pub fn unique(screen: &Screen, sel: &str) -> Option<usize> {
    let parsed = Selector::parse(sel).ok()?;
    let modal = modal_root(screen);
    let on: Vec<usize> = parsed
        .find(&screen.tree)
        .nodes
        .into_iter()
        .filter(|&n| reachable(screen, modal, n))
        .collect();
    match on.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// Whether any visible node matches `sel` (for waits and `expect`).
pub fn visible(screen: &Screen, sel: &str) -> bool {
    let Ok(parsed) = Selector::parse(sel) else {
        return false;
    };
    let modal = modal_root(screen);
    parsed
        .find(&screen.tree)
        .nodes
        .into_iter()
        .any(|n| reachable(screen, modal, n))
}

/// What a step recorded about its target besides the selectors being tried.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recorded<'a> {
    /// The step's primary and alternatives as written (a selector AI in the middle
    /// proposed is not among them: it is its own evidence).
    pub selectors: &'a [String],
    /// Texts of the element's row that tell it apart (`ScriptStep::witness`).
    pub witness: &'a [String],
    /// The recorded tap point (`parameters.coordinate`).
    pub place: Option<[f64; 2]>,
    /// The structure of the screen the step acted on (`ScriptStep::layout`).
    pub layout: Option<&'a str>,
    /// Ids the script names for its other steps' targets and not for this one
    /// (`named_ids`): the script's author (or its recording) told those elements apart
    /// from this one, so a look-alike carrying one of them is another element.
    pub elsewhere: &'a [String],
}

/// Whether an element with id `have` is another step's target: its id is one the script
/// names for another step (`elsewhere`), as written or renamed (more alike to that id,
/// and more than half kept, than to any of this step's `own` ids: `addToCart` is the
/// `add_to_cart` another step taps, not a look-alike of this step's `action_cart`).
fn claimed_elsewhere(have: &str, own: &[String], elsewhere: &[String]) -> bool {
    if have.is_empty() || elsewhere.is_empty() {
        return false;
    }
    if elsewhere.iter().any(|e| e == have) {
        return true;
    }
    let best = |ids: &[String]| {
        ids.iter()
            .map(|id| super::similar::ids(id, have).min(super::similar::id_kept(id, have)))
            .fold(0.0, f32::max)
    };
    let theirs = best(elsewhere);
    theirs > 0.5 && theirs > best(own)
}

/// The ids (short form) the selectors name as their target: `#id`, and the target of
/// `anchor >> #id` (an anchor is a neighbour, not the element).
pub fn named_ids(selectors: &[String]) -> Vec<String> {
    fn target(s: &Selector) -> Option<String> {
        match s {
            Selector::Id(id) => Some(
                id.rsplit_once(":id/")
                    .map_or(id.as_str(), |(_, s)| s)
                    .to_string(),
            ),
            Selector::Near { target: t, .. } => target(t),
            _ => None,
        }
    }
    let mut ids: Vec<String> = selectors
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .filter_map(|s| target(&s))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Primary, then alternatives (each must match exactly one visible node). A locator
/// that many elements may share (an index path, a class, or any plain selector of a step
/// recorded with a `witness`) is used only when its node has a witness: one of the
/// recorded witness texts in its row, or, for a step written without them, one of the
/// step's label selectors (`:text`, `:desc`, `a >> b`) naming it. After a reorder an
/// index path names another row, and an id every row shares names whichever row is left;
/// a tap there would "work" on the wrong element.
pub fn by_selectors(
    screen: &Screen,
    selectors: &[String],
    recorded: &Recorded<'_>,
) -> Option<Found> {
    let labels: Vec<Selector> = recorded
        .selectors
        .iter()
        .filter_map(|a| Selector::parse(a).ok())
        .filter(|a| {
            matches!(
                a,
                Selector::Text { .. } | Selector::Desc { .. } | Selector::Near { .. }
            )
        })
        .collect();
    selectors.iter().enumerate().find_map(|(i, s)| {
        let node = unique(screen, s)?;
        let written = recorded.selectors.contains(s);
        if written && shared(s, recorded) && !witnessed(screen, node, s, &labels, recorded) {
            return None;
        }
        Some(Found {
            selector: s.clone(),
            node,
            fallback: if i == 0 {
                Fallback::None
            } else {
                Fallback::Alternative
            },
            matched: None,
        })
    })
}

/// Whether `sel` may name several elements: an index path or a class always; any plain
/// selector of a step whose recording found no locator of its own for the element.
fn shared(sel: &str, recorded: &Recorded<'_>) -> bool {
    match Selector::parse(sel) {
        Ok(Selector::Path(_) | Selector::Class(_)) => true,
        Ok(Selector::Near { .. }) => false,
        Ok(_) => !recorded.witness.is_empty(),
        Err(_) => true,
    }
}

/// Whether the node `sel` found is the recorded element: a witness text in its row, or
/// (a step written without witness texts) another of the step's labels naming it.
fn witnessed(
    screen: &Screen,
    node: usize,
    sel: &str,
    labels: &[Selector],
    recorded: &Recorded<'_>,
) -> bool {
    if !recorded.witness.is_empty() {
        return score::witnessed(&screen.tree, node, recorded.witness);
    }
    let own = Selector::parse(sel).ok();
    labels
        .iter()
        .filter(|l| Some(*l) != own.as_ref())
        .any(|l| fits(screen, node, l))
}

/// Whether `node`, or a node inside it (a row named by its label's text), is what the
/// label selector names.
fn fits(screen: &Screen, node: usize, label: &Selector) -> bool {
    let tree = &screen.tree;
    if let Selector::Near { .. } = label {
        return label.find(tree).nodes.contains(&node);
    }
    tree.subtree(node)
        .any(|n| label.matches_node(&tree.nodes[n]))
}

/// The element matcher (`score.rs`) over every element a person could touch, given what
/// the step recorded about its target; None unless one clear winner stands out.
pub fn fuzzy(screen: &Screen, selectors: &[String], recorded: &Recorded<'_>) -> Option<Found> {
    let found = matched(screen, selectors, recorded).or_else(|| by_structure(screen, recorded))?;
    (!under_keyboard(&screen.tree, found.node)).then_some(found)
}

/// A toolbar action an update moved into the overflow menu, named by its id alone, among
/// the items of the menu that opened (the app windows after the first `before`): a menu
/// row shows its item's title and carries no id of the item (Android's popup rows are
/// `title` text views), so each row's title is compared with the id's words. The title
/// must keep more than half of what the id says (`similar::id_kept`: `action_cart` and
/// "Cart, 1 items"), one clear winner (`score::MARGIN`), never an id the script names for
/// another step.
pub fn menu_item(screen: &Screen, recorded: &Recorded<'_>, before: usize) -> Option<Found> {
    let ids = named_ids(recorded.selectors);
    let tree = &screen.tree;
    let menus: Vec<usize> = tree.app_windows().skip(before).collect();
    if ids.is_empty() || menus.is_empty() {
        return None;
    }
    let mut all: Vec<(usize, f32)> = (0..tree.nodes.len())
        .filter(|&n| menus.contains(&root_of(tree, n)) && tree.nodes[n].is_actionable())
        .filter(|&n| visible_chain(tree, n, &screen.elements.screen))
        .filter(|&n| !claimed_elsewhere(tree.nodes[n].short_id(), &ids, recorded.elsewhere))
        .map(|n| {
            let title = title(tree, n);
            let kept = ids.iter().map(|id| super::similar::id_kept(id, &title));
            (n, kept.fold(0.0, f32::max))
        })
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (node, kept) = *all.first()?;
    let margin = kept - all.get(1).map_or(0.0, |r| r.1);
    if kept <= 0.5 || margin < score::MARGIN {
        return None;
    }
    let (primary, _) = SelectorIndex::new(tree).recommend(node);
    Some(Found {
        selector: primary.to_string(),
        node,
        fallback: Fallback::Fuzzy,
        matched: Some(MatchInfo {
            score: round(kept),
            margin: round(margin),
            agreed: vec!["id_as_title".to_string()],
            translated: Vec::new(),
        }),
    })
}

/// What a menu row says: its own text or description, else its texts inside.
fn title(tree: &UiTree, n: usize) -> String {
    let own = &tree.nodes[n];
    if !own.text.trim().is_empty() {
        return own.text.clone();
    }
    if !own.content_desc.trim().is_empty() {
        return own.content_desc.clone();
    }
    tree.subtree(n)
        .map(|c| tree.nodes[c].text.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The structure of the live screen, as `record::layout` computes it from a recording:
/// each actionable element's class at its index path.
pub fn layout(screen: &Screen) -> String {
    crate::script::record::layout(
        screen
            .elements
            .elements
            .iter()
            .map(|e| (e.kind.as_str(), screen.tree.nodes[e.node].path.as_str())),
    )
}

/// Whether the screen has the structure the recording saw right after a step (`after`,
/// the next step's `layout`), when that differs from the one the step acted on
/// (`acted_on`): the step's effect is there, in whatever words this phone uses (an
/// `expect` naming a label checks nothing on a phone in another language).
pub fn shows_layout_after(screen: &Screen, acted_on: Option<&str>, after: Option<&str>) -> bool {
    match (acted_on, after) {
        (Some(a), Some(b)) if a != b => layout(screen) == b,
        _ => false,
    }
}

/// The node's id agrees with the step's recorded ones: when the step recorded an id, the
/// node carries one of them (a row id every row shares included). A step that recorded
/// none says nothing by id (a launcher icon or a switch whose id many share is recorded
/// by its words and place).
fn same_id(recorded: &[Selector], own: &str) -> bool {
    let short = |id: &str| id.rsplit_once(":id/").map_or(id, |(_, s)| s).to_string();
    let ids: Vec<String> = recorded
        .iter()
        .filter_map(|s| match s {
            Selector::Id(id) => Some(short(id)),
            _ => None,
        })
        .collect();
    ids.is_empty() || ids.contains(&short(own))
}

/// The element at the recorded index path when the screen has the recorded structure
/// (`Recorded::layout`) and its words changed: the step's recorded texts (labels,
/// anchors, witness) are each either in that element's row or nowhere on the screen (a
/// UI language or wording the recording did not see). A recorded text found elsewhere
/// means the words still work here and the rows moved (a reorder): no match. A step that
/// recorded no text gives no sign of a changed wording and no structural match, and a step
/// recorded with a `witness` (one of several look-alike rows) needs a witness text in the
/// element's row: "nowhere on the screen" is also where a reordered row's texts are.
///
/// Ids outlive a translation, so they decide (`same_id`): an app update that swaps a
/// widget for another of the same class at the same place (an Edit icon for the
/// overflow button) keeps the structure but not the id.
fn by_structure(screen: &Screen, recorded: &Recorded<'_>) -> Option<Found> {
    let want = recorded.layout?;
    let parsed: Vec<Selector> = recorded
        .selectors
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .collect();
    let path = parsed.iter().find(|s| matches!(s, Selector::Path(_)))?;
    let texts = recorded_texts(&parsed, recorded.witness);
    if texts.is_empty() || layout(screen) != want {
        return None;
    }
    let node = unique(screen, &path.to_string())?;
    let tree = &screen.tree;
    if !same_id(&parsed, tree.nodes[node].short_id()) {
        return None;
    }
    // A step recorded with a witness acted on one of several look-alike rows: a path
    // names whichever row is there now (after a reorder, with the recorded row scrolled
    // off, none of its texts is anywhere), so one of the row's own texts must be there.
    if !recorded.witness.is_empty() && !score::witnessed(tree, node, recorded.witness) {
        return None;
    }
    let row = score::row_texts(tree, node);
    let elsewhere: Vec<&String> = (0..tree.nodes.len())
        .filter(|&n| !is_keyboard(&tree.nodes[root_of(tree, n)].package))
        .filter(|&n| visible_chain(tree, n, &screen.elements.screen))
        .flat_map(|n| [&tree.nodes[n].text, &tree.nodes[n].content_desc])
        .filter(|t| !t.is_empty())
        .collect();
    let mut agreed = vec!["layout".to_string(), "path".to_string()];
    for t in &texts {
        if row.iter().any(|r| super::similar::contains(r, t)) {
            agreed.push("row".into());
        } else if elsewhere.iter().any(|e| super::similar::contains(e, t)) {
            return None;
        }
    }
    agreed.dedup();
    Some(Found {
        selector: path.to_string(),
        node,
        fallback: Fallback::Fuzzy,
        matched: Some(MatchInfo {
            score: 1.0,
            margin: 1.0,
            agreed,
            translated: Vec::new(),
        }),
    })
}

/// The texts a step recorded about its target: its labels, its anchors, its witness.
fn recorded_texts(parsed: &[Selector], witness: &[String]) -> Vec<String> {
    fn label(s: &Selector, out: &mut Vec<String>) {
        match s {
            Selector::Text { text, .. } => out.push(text.clone()),
            Selector::Desc { desc, .. } => out.push(desc.clone()),
            Selector::Near { anchor, target } => {
                label(anchor, out);
                label(target, out);
            }
            _ => {}
        }
    }
    let mut out = witness.to_vec();
    for s in parsed {
        label(s, &mut out);
    }
    out.retain(|t| !t.trim().is_empty());
    out.sort();
    out.dedup();
    out
}

/// The matcher's winner, under the soft keyboard or not.
fn matched(screen: &Screen, selectors: &[String], recorded: &Recorded<'_>) -> Option<Found> {
    let parsed: Vec<Selector> = selectors
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .collect();
    let profile = Profile::new(&parsed, recorded.witness, recorded.place);
    let tree = &screen.tree;
    let modal = modal_root(screen);
    // Nodes under the keyboard take part: a winner there is the target, which the
    // keyboard hides (dismissed by rule, then found), not a reason to take a weaker
    // match elsewhere (a "Sign in to sync" label for a covered "Sign in" button).
    let on = |n: usize| {
        let node = &tree.nodes[n];
        visible_chain(tree, n, &screen.elements.screen)
            && modal.is_none_or(|r| root_of(tree, n) == r)
            && !is_keyboard(&tree.nodes[root_of(tree, n)].package)
            && (node.is_actionable()
                || !node.resource_id.is_empty()
                || !node.text.is_empty()
                || !node.content_desc.is_empty())
    };
    let own = named_ids(recorded.selectors);
    let another = |n: usize| claimed_elsewhere(tree.nodes[n].short_id(), &own, recorded.elsewhere);
    let all: Vec<usize> = (0..tree.nodes.len())
        .filter(|&n| on(n) && !another(n))
        .collect();
    let won = score::best(tree, &all, &profile)?;
    let (primary, _) = SelectorIndex::new(tree).recommend(won.node);
    Some(Found {
        selector: primary.to_string(),
        node: won.node,
        fallback: Fallback::Fuzzy,
        matched: Some(MatchInfo {
            score: round(won.score),
            margin: round(won.margin),
            agreed: won.agreed,
            translated: Vec::new(),
        }),
    })
}

fn round(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

/// Whether what `sel` names is on screen: exactly, or (when the script allows fuzzy
/// matching) through the element matcher. Under the soft keyboard counts (a field's
/// typed text is there even where the keyboard covers it); behind a dialog does not.
pub fn expected(screen: &Screen, sel: &str, fuzzy_ok: bool) -> bool {
    let modal = modal_root(screen);
    let shown = Selector::parse(sel).is_ok_and(|p| {
        p.find(&screen.tree).nodes.into_iter().any(|n| {
            visible_chain(&screen.tree, n, &screen.elements.screen)
                && modal.is_none_or(|r| root_of(&screen.tree, n) == r)
        })
    });
    shown || (fuzzy_ok && resembles(screen, sel))
}

/// Whether the element matcher finds what `sel` names, look-alikes allowed: an `expect`
/// asks whether such an element is there, not which one to touch (any product card
/// confirms the list has loaded). The soft keyboard's keys count too (an expect that the
/// keyboard came up, `:text("q")`, holds for a keyboard that writes its keys `Q`).
fn resembles(screen: &Screen, sel: &str) -> bool {
    let Ok(parsed) = Selector::parse(sel) else {
        return false;
    };
    let profile = Profile::new(&[parsed], &[], None);
    let tree = &screen.tree;
    let modal = modal_root(screen);
    let all: Vec<usize> = (0..tree.nodes.len())
        .filter(|&n| {
            visible_chain(tree, n, &screen.elements.screen)
                && modal.is_none_or(|r| root_of(tree, n) == r || is_keyboard_node(tree, n))
        })
        .collect();
    score::present(tree, &all, &profile)
}

/// Whether the element matcher still finds what `sel` names, behind a dialog or not: an
/// element on which every identifying attribute the selector names agrees
/// (`score::lingers`), never a mere look-alike. For a `gone` expect: an update that recased "6:00 AM"
/// to "6:00 am" has not removed the alarm, while after a row is deleted the rows left
/// only resemble it (the same button id in another alarm's row is not its button).
pub fn lingers(screen: &Screen, sel: &str) -> bool {
    let Ok(parsed) = Selector::parse(sel) else {
        return false;
    };
    let profile = Profile::new(&[parsed], &[], None);
    let tree = &screen.tree;
    let all: Vec<usize> = (0..tree.nodes.len())
        .filter(|&n| {
            let node = &tree.nodes[n];
            visible_chain(tree, n, &screen.elements.screen)
                && !is_keyboard(&tree.nodes[root_of(tree, n)].package)
                && (node.is_actionable()
                    || !node.resource_id.is_empty()
                    || !node.text.is_empty()
                    || !node.content_desc.is_empty())
        })
        .collect();
    score::lingers(tree, &all, &profile)
}

/// Whether a node `sel` names is still on screen, behind a dialog or not (for a `gone`
/// expect: a row a confirmation dialog covers has not gone).
pub fn present(screen: &Screen, sel: &str) -> bool {
    let Ok(parsed) = Selector::parse(sel) else {
        return false;
    };
    parsed
        .find(&screen.tree)
        .nodes
        .into_iter()
        .any(|n| visible_chain(&screen.tree, n, &screen.elements.screen))
}

/// Whether a dialog is on top and one of `selectors` names an element behind it.
pub fn covered(screen: &Screen, selectors: &[String]) -> bool {
    let Some(modal) = modal_root(screen) else {
        return false;
    };
    let tree = &screen.tree;
    selectors.iter().any(|sel| {
        Selector::parse(sel).is_ok_and(|p| {
            p.find(tree).nodes.into_iter().any(|n| {
                root_of(tree, n) != modal && visible_chain(tree, n, &screen.elements.screen)
            })
        })
    })
}

/// What tells apart the elements `sel` names on screen (behind a dialog or not): each
/// one's id, class, text and description. The same selector naming an element with
/// another identity after an action (the sent message, not the compose box that held
/// its text) shows the action's effect.
pub fn named(screen: &Screen, sel: &str) -> Vec<String> {
    let Ok(parsed) = Selector::parse(sel) else {
        return Vec::new();
    };
    let tree = &screen.tree;
    parsed
        .find(tree)
        .nodes
        .into_iter()
        .filter(|&n| visible_chain(tree, n, &screen.elements.screen))
        .map(|n| {
            let node = &tree.nodes[n];
            let class = node.short_class();
            format!(
                "{}|{class}|{}|{}",
                node.resource_id, node.text, node.content_desc
            )
        })
        .collect()
}

/// The text a `store_as` reads from a node: its text, else its description.
pub fn text_of(screen: &Screen, node: usize) -> String {
    let n = &screen.tree.nodes[node];
    if n.text.is_empty() {
        n.content_desc.clone()
    } else {
        n.text.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::interrupt::{Interruption, interruption};
    use super::*;
    use crate::screen::ReprOptions;

    fn screen(banner: bool) -> Screen {
        let node = |class: &str, id: &str, text: &str, top: u32| {
            format!(
                r#"<node index="0" text="{text}" resource-id="{id}" class="android.widget.{class}" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{}]"/>"#,
                top + 200
            )
        };
        let mut rows = Vec::new();
        if banner {
            rows.push(node("TextView", "", "Update available", 0));
        }
        let base = if banner { 200 } else { 0 };
        rows.push(node("Switch", "app:id/switch_widget", "", base));
        rows.push(node("Switch", "app:id/switch_widget", "", base + 200));
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}</node></hierarchy>"#,
            rows.join("")
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    /// A send button the keyboard covers cannot be tapped: it counts as missing (the
    /// keyboard is then dismissed by rule), and is found again once the keyboard is gone.
    #[test]
    fn an_element_under_the_keyboard_is_not_reachable() {
        let xml = |keyboard: bool| {
            let ime = if keyboard {
                r#"<node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1520][1080,2400]"><node index="0" text="q" resource-id="" class="android.widget.Button" package="com.google.android.inputmethod.latin" content-desc="" clickable="true" enabled="true" bounds="[0,1520][108,1700]"/></node>"#
            } else {
                ""
            };
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/send" class="android.widget.ImageButton" package="app" content-desc="Send" clickable="true" enabled="true" bounds="[900,1550][1080,1700]"/></node>{ime}</hierarchy>"#
            )
        };
        let covered = Screen::from_xml(&xml(true), &ReprOptions::default()).unwrap();
        assert_eq!(unique(&covered, "#send"), None);
        assert!(
            unique(&covered, ":text(\"q\")").is_some(),
            "the keyboard's own keys are"
        );
        assert_eq!(
            interruption(&covered, true, &[]),
            Some(Interruption::Keyboard)
        );
        let clear = Screen::from_xml(&xml(false), &ReprOptions::default()).unwrap();
        assert!(unique(&clear, "#send").is_some());
    }

    /// An `expect` that names an id every row has, renamed by an update: any of the
    /// look-alikes confirms it (an expect checks, it never acts); a target is never a
    /// guess between them.
    #[test]
    fn an_expect_accepts_look_alikes_a_target_does_not() {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="Earbuds" resource-id="app:id/productCard" class="android.widget.TextView" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,0][1080,200]"/><node index="1" text="Cable" resource-id="app:id/productCard" class="android.widget.TextView" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,200][1080,400]"/></node></hierarchy>"#;
        let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
        assert!(expected(&s, "#product_card", true));
        assert!(!expected(&s, "#product_card", false));
        assert_eq!(
            fuzzy(&s, &["#product_card".to_string()], &Recorded::default()),
            None
        );
    }

    /// "The keyboard came up" (`:text("q")`, recorded from a keyboard's key) holds for a
    /// keyboard that writes its keys in capitals: an expect checks, it never taps a key.
    #[test]
    fn an_expect_reads_the_keyboards_keys_in_other_case() {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/body" class="android.widget.EditText" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,100][1080,300]"/></node><node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1400][1080,2400]"><node index="0" text="Q" resource-id="" class="android.widget.Button" package="com.google.android.inputmethod.latin" content-desc="" clickable="true" enabled="true" bounds="[0,1500][108,1700]"/></node></hierarchy>"#;
        let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
        assert!(expected(&s, ":text(\"q\")", true));
        assert!(!expected(&s, ":text(\"q\")", false), "not as written");
    }

    /// Text typed into a field the keyboard covers is still what the step expected:
    /// an `expect` reads the screen, it does not tap it.
    #[test]
    fn an_expect_counts_what_the_keyboard_covers() {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="Buy oat milk" resource-id="app:id/body" class="android.widget.EditText" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,1500][1080,1700]"/></node><node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1400][1080,2400]"/></hierarchy>"#;
        let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
        assert_eq!(unique(&s, ":text(\"Buy oat milk\")"), None, "not tappable");
        assert!(expected(&s, ":text(\"Buy oat milk\")", false));
    }

    /// A renamed "Sign in" button the keyboard covers is the fuzzy match's one candidate
    /// for `#sign_in`: the step counts it as missing (so the keyboard is dismissed by
    /// rule), never taking the page's "Sign in to sync" label for it.
    #[test]
    fn a_fuzzy_target_under_the_keyboard_is_missing_not_replaced() {
        let xml = |keyboard: bool| {
            let ime = if keyboard {
                r#"<node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1400][1080,2400]"/>"#
            } else {
                ""
            };
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="Sign in to sync your settings" resource-id="app:id/intro" class="android.widget.TextView" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,300][1080,400]"/><node index="1" text="Log in" resource-id="app:id/signIn" class="android.widget.Button" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,1500][1080,1650]"/></node>{ime}</hierarchy>"#
            )
        };
        let step = ["#sign_in".to_string(), ":text(\"Sign in\")".to_string()];
        let covered = Screen::from_xml(&xml(true), &ReprOptions::default()).unwrap();
        let none = Recorded::default();
        assert_eq!(fuzzy(&covered, &step, &none), None);
        assert_eq!(
            interruption(&covered, true, &[]),
            Some(Interruption::Keyboard)
        );
        let clear = Screen::from_xml(&xml(false), &ReprOptions::default()).unwrap();
        let f = fuzzy(&clear, &step, &none).expect("found once the keyboard is gone");
        assert_eq!(clear.tree.nodes[f.node].text, "Log in");
    }

    /// A settings row recorded by its title and summary ("Bluetooth" / "Off"): when the
    /// title is not on screen (the row scrolled away), another row's switch "OFF" is not
    /// taken for it; with the title back, the summary alone still finds its row.
    #[test]
    fn a_fuzzy_label_match_needs_the_elements_other_labels() {
        let row = |title: &str, summary: &str, switch: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{title}" resource-id="android:id/title" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{top}][800,{m}]"/><node index="1" text="{summary}" resource-id="android:id/summary" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{m}][800,{b}]"/><node index="2" text="{switch}" resource-id="app:id/switchWidget" class="android.widget.Switch" package="app" content-desc="" clickable="true" enabled="true" bounds="[880,{top}][1040,{b}]"/></node>"#,
                m = top + 100,
                b = top + 200
            )
        };
        let xml = |rows: String| {
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{rows}</node></hierarchy>"#
            )
        };
        let step = [
            "[0.0.1.1]".to_string(),
            ":text(\"Bluetooth\")".to_string(),
            ":text(\"Off\")".to_string(),
        ];
        let without = xml(row("Airplane mode", "", "OFF", 0) + &row("Wi-Fi", "HomeNet", "ON", 200));
        let s = Screen::from_xml(&without, &ReprOptions::default()).unwrap();
        let none = Recorded::default();
        assert_eq!(
            fuzzy(&s, &step, &none),
            None,
            "the Bluetooth row is not on screen"
        );
        let with = xml(row("Airplane mode", "", "ON", 0) + &row("Bluetooth ›", "Off", "OFF", 200));
        let s = Screen::from_xml(&with, &ReprOptions::default()).unwrap();
        let f = fuzzy(&s, &step, &none).expect("the retitled Bluetooth row");
        assert_eq!(s.tree.nodes[f.node].bounds.top, 200);
    }

    /// An app update renamed the ids (`header` → `header_v2`, `menu_edit` → `menuEdit`)
    /// and reworded a description: an `expect` recorded before it still holds when the
    /// script allows fuzzy matching, and not when it says `"fuzzy": false`.
    #[test]
    fn an_expect_survives_renamed_ids_and_reworded_labels() {
        let node = |id: &str, desc: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="app:id/{id}" class="android.widget.ImageButton" package="app" content-desc="{desc}" clickable="true" enabled="true" bounds="[0,{top}][1080,{}]"/>"#,
                top + 200
            )
        };
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}{}{}{}</node></hierarchy>"#,
            node("header_v2", "", 0),
            node("menuEdit", "Edit now", 200),
            node("row_a", "Call", 400),
            node("row_b", "Call", 600),
        );
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        for sel in ["#header", "#menu_edit", ":desc(\"Edit\")"] {
            assert!(!visible(&s, sel), "{sel} is not there as recorded");
            assert!(expected(&s, sel, true), "{sel}");
            assert!(!expected(&s, sel, false), "{sel}: the script said no fuzzy");
        }
    }

    /// `:text("6:00 AM") >> #delete` after an update renamed every row's `#delete`: the
    /// anchor as recorded, the renamed target in that row, never another row's.
    #[test]
    fn a_pop_up_over_a_dialog_is_dismissed_by_its_own_button_not_the_dialogs_cancel() {
        // The clock's time picker (with "Cancel") and, on top, a system pop-up. A tap on
        // the picker's "Cancel" would be swallowed by the pop-up.
        let button = |id: &str, text: &str, pkg: &str, left: u32, top: u32| {
            format!(
                r#"<node index="0" text="{text}" resource-id="{id}" class="android.widget.Button" package="{pkg}" content-desc="" clickable="true" enabled="true" bounds="[{left},{top}][{},{}]"/>"#,
                left + 300,
                top + 150
            )
        };
        let window = |pkg: &str, title: &str, buttons: String, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="{pkg}" content-desc="" bounds="[100,{top}][980,{b}]"><node index="0" text="{title}" resource-id="android:id/alertTitle" class="android.widget.TextView" package="{pkg}" content-desc="" bounds="[150,{top}][900,{t2}]"/><node index="1" text="" resource-id="android:id/buttonPanel" class="android.widget.LinearLayout" package="{pkg}" content-desc="" bounds="[100,{t2}][980,{b}]">{buttons}</node></node>"#,
                b = top + 600,
                t2 = top + 200
            )
        };
        let picker = window(
            "com.google.android.deskclock",
            "Set alarm",
            button(
                "android:id/button2",
                "Cancel",
                "com.google.android.deskclock",
                150,
                900,
            ) + &button(
                "android:id/button1",
                "OK",
                "com.google.android.deskclock",
                600,
                900,
            ),
            700,
        );
        let popup = window(
            "com.android.systemui",
            "Battery low",
            button(
                "android:id/button2",
                "Not now",
                "com.android.systemui",
                150,
                1100,
            ) + &button(
                "android:id/button1",
                "Turn on",
                "com.android.systemui",
                600,
                1100,
            ),
            900,
        );
        let xml =
            format!(r#"<?xml version="1.0"?><hierarchy rotation="0">{picker}{popup}</hierarchy>"#);
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        assert!(s.has_modal);
        match interruption(&s, false, &[]) {
            Some(Interruption::Tap { label, .. }) => assert_eq!(label, "Not now"),
            other => panic!("expected a tap on the pop-up's button, got {other:?}"),
        }
    }

    #[test]
    fn an_anchored_selector_finds_its_rows_renamed_target() {
        let row = |time: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="app:id/row" class="android.widget.LinearLayout" package="app" content-desc="" bounds="[0,{top}][1080,{b}]"><node index="0" text="{time}" resource-id="app:id/time" class="android.widget.TextView" package="app" content-desc="" bounds="[0,{top}][500,{b}]"/><node index="1" text="" resource-id="app:id/delete_v2" class="android.widget.ImageButton" package="app" content-desc="Delete alarm now" clickable="true" enabled="true" bounds="[800,{top}][1000,{b}]"/></node>"#,
                b = top + 200
            )
        };
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}{}</node></hierarchy>"#,
            row("6:00 AM", 0),
            row("8:15 AM", 200),
        );
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        for sel in [
            ":text(\"8:15 AM\") >> #delete",
            ":text(\"8:15 AM\") >> :desc(\"Delete alarm\")",
        ] {
            assert_eq!(unique(&s, sel), None, "{sel} as recorded is gone");
            let f = fuzzy(&s, &[sel.to_string()], &Recorded::default()).expect(sel);
            assert_eq!(
                s.tree.nodes[f.node].bounds.top, 200,
                "{sel}: the 8:15 row's"
            );
        }
        assert_eq!(
            fuzzy(&s, &["#delete".to_string()], &Recorded::default()),
            None,
            "two rows: no guess"
        );
    }

    /// A hand-written step `[0.0]` with `#switch_widget` as its alternative: an id that
    /// every row shares tells no row apart, so the path is never used on its word; a
    /// label of the row does, and follows the row.
    #[test]
    fn a_shared_id_is_no_witness_for_an_index_path() {
        let sels = ["[0.0]".to_string(), "#switch_widget".to_string()];
        let recorded = Recorded {
            selectors: &sels,
            ..Default::default()
        };
        assert_eq!(by_selectors(&screen(false), &sels, &recorded), None);
        // A path AI in the middle proposed is its own evidence.
        assert!(by_selectors(&screen(true), &sels, &Recorded::default()).is_some());
    }

    /// A settings list of rows (a title, a summary, a switch with no id of its own), the
    /// way an app lays it out whatever the language it speaks.
    fn rows(rows: &[(&str, &str, &str)]) -> Screen {
        let row = |i: usize, (title, summary, switch): (&str, &str, &str)| {
            let top = 200 + 200 * i as u32;
            format!(
                r#"<node index="{i}" text="" resource-id="app:id/row" class="android.widget.LinearLayout" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{title}" resource-id="android:id/title" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{top}][800,{m}]"/><node index="1" text="{summary}" resource-id="android:id/summary" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{m}][800,{b}]"/><node index="2" text="{switch}" resource-id="" class="android.widget.Switch" package="app" content-desc="" clickable="true" enabled="true" bounds="[880,{top}][1040,{b}]"/></node>"#,
                m = top + 100,
                b = top + 200
            )
        };
        let body: String = rows.iter().enumerate().map(|(i, r)| row(i, *r)).collect();
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/list" class="android.widget.LinearLayout" package="app" content-desc="" bounds="[0,200][1080,2400]">{body}</node></node></hierarchy>"#
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    const ENGLISH: [(&str, &str, &str); 3] = [
        ("Wi-Fi", "HomeNet", "ON"),
        ("Bluetooth", "Off", "OFF"),
        ("Airplane mode", "", "OFF"),
    ];

    /// The Wi-Fi switch as a recording keeps it: `:text("ON")`, its index path, and the
    /// structure of the English screen it was recorded on.
    fn wifi_step(english: &Screen) -> (Vec<String>, String) {
        let sels = vec![":text(\"ON\")".to_string(), "[0.0.0.2]".to_string()];
        (sels, layout(english))
    }

    /// An update that puts another widget of the same class where the recorded one was
    /// (the overflow button where the Edit icon was) keeps the structure but not the id:
    /// never a structural match, whatever the words.
    #[test]
    fn a_widget_with_another_id_in_the_recorded_place_is_not_the_recorded_one() {
        let en = rows(&ENGLISH);
        let sels = vec![
            "#edit".to_string(),
            ":text(\"ON\")".to_string(),
            "[0.0.0.2]".to_string(),
        ];
        let de = rows(&[
            ("WLAN", "HomeNet", "EIN"),
            ("Bluetooth", "Aus", "AUS"),
            ("Flugmodus", "", "AUS"),
        ]);
        let recorded_layout = layout(&en);
        let recorded = Recorded {
            selectors: &sels,
            layout: Some(&recorded_layout),
            ..Default::default()
        };
        assert_eq!(
            by_structure(&de, &recorded),
            None,
            "the recorded id is not there"
        );
        assert!(same_id(&[], ""));
        assert!(same_id(&[Selector::Id("app:id/row".into())], "row"));
        assert!(
            same_id(&[], "app_icon"),
            "no id recorded: words and place decide"
        );
        assert!(!same_id(&[Selector::Id("menu_edit".into())], ""));
        assert!(!same_id(
            &[Selector::Id("menu_edit".into())],
            "overflow_menu"
        ));
    }

    /// The replay computes a screen's structure as the recorder does from the same
    /// screen's elements, and the words on it do not change it.
    #[test]
    fn the_replay_reads_a_screens_structure_as_the_recorder_wrote_it() {
        let en = rows(&ENGLISH);
        let repr = en.representation(&ReprOptions::default());
        assert_eq!(
            crate::script::record::layout_of(&repr.actionable_elements),
            Some(layout(&en))
        );
        let de = rows(&[
            ("WLAN", "HomeNet", "EIN"),
            ("Bluetooth", "Aus", "AUS"),
            ("Flugmodus", "", "AUS"),
        ]);
        assert_eq!(layout(&de), layout(&en));
        assert_ne!(layout(&rows(&ENGLISH[..2])), layout(&en), "a row less");
    }

    /// Recorded on an English phone, replayed on one whose UI speaks another language:
    /// no recorded word is on the screen, its structure is the recorded one, so the
    /// switch at the recorded index path is the recorded switch, and the match says so.
    #[test]
    fn a_translated_screen_is_matched_by_its_structure() {
        let (sels, recorded_layout) = wifi_step(&rows(&ENGLISH));
        let de = rows(&[
            ("WLAN", "HomeNet", "EIN"),
            ("Bluetooth", "Aus", "AUS"),
            ("Flugmodus", "", "AUS"),
        ]);
        let recorded = Recorded {
            selectors: &sels,
            layout: Some(&recorded_layout),
            ..Default::default()
        };
        assert_eq!(by_selectors(&de, &sels, &recorded), None);
        let f = fuzzy(&de, &sels, &recorded).expect("the switch at the recorded place");
        assert_eq!(de.tree.nodes[f.node].text, "EIN");
        assert_eq!(f.fallback, Fallback::Fuzzy);
        let agreed = f.matched.unwrap().agreed;
        assert!(agreed.contains(&"layout".to_string()), "{agreed:?}");
        // Without the recorded structure (a script written by hand), no guess.
        let bare = Recorded {
            selectors: &sels,
            ..Default::default()
        };
        assert_eq!(fuzzy(&de, &sels, &bare), None);
    }

    /// The structure alone never decides where the recorded words are still on the
    /// screen in another row (a reordered list), nor where the structure changed (a row
    /// removed, so another switch slid into the recorded place).
    #[test]
    fn structure_never_overrides_words_that_moved_or_a_changed_layout() {
        let en = rows(&ENGLISH);
        let sels = vec!["[0.0.0.2]".to_string()];
        let witness = ["Wi-Fi".to_string()];
        let recorded_layout = layout(&en);
        let recorded = Recorded {
            selectors: &sels,
            witness: &witness,
            layout: Some(&recorded_layout),
            ..Default::default()
        };
        let reordered = rows(&[ENGLISH[1], ENGLISH[0], ENGLISH[2]]);
        assert_eq!(layout(&reordered), recorded_layout);
        assert_eq!(
            by_structure(&reordered, &recorded),
            None,
            "Wi-Fi is in row 2"
        );
        let removed = rows(&[("Bluetooth", "Aus", "AUS"), ("Flugmodus", "", "AUS")]);
        assert_eq!(by_structure(&removed, &recorded), None, "a row less");
        // Reordered with the recorded row scrolled off: its texts are nowhere, as after a
        // translation, but the rows there are others in the same words.
        let scrolled = rows(&[ENGLISH[1], ENGLISH[2], ("Hotspot", "Off", "OFF")]);
        assert_eq!(layout(&scrolled), recorded_layout);
        assert_eq!(
            by_structure(&scrolled, &recorded),
            None,
            "Wi-Fi is not on screen"
        );
    }

    /// An `expect` naming a label checks nothing on a phone that words it otherwise; the
    /// structure the recording saw after the step does, when the step changed it.
    #[test]
    fn the_screen_after_a_step_is_known_by_its_structure() {
        let before = layout(&rows(&ENGLISH));
        let after = layout(&rows(&ENGLISH[..1]));
        let shown = rows(&[("WLAN", "HomeNet", "EIN")]);
        assert!(shows_layout_after(&shown, Some(&before), Some(&after)));
        assert!(
            !shows_layout_after(&shown, Some(&after), Some(&after)),
            "no change"
        );
        assert!(!shows_layout_after(
            &rows(&ENGLISH),
            Some(&before),
            Some(&after)
        ));
        assert!(!shows_layout_after(&shown, None, Some(&after)));
    }

    fn settings(edit: impl Fn(String) -> String) -> Screen {
        let xml = include_str!(
            "../../../../../tests/fixtures/uiautomator/real/002__zytzjx__anthenacmc__dump1.xml"
        );
        Screen::from_xml(&edit(xml.to_string()), &ReprOptions::default()).unwrap()
    }

    /// A real Settings list (AOSP "Backup & reset") where two rows' switches share
    /// `android:id/switch_widget`. The step was recorded on "Automatic Restore"'s switch
    /// by its index path, with the row's title as witness. After the rows swap places
    /// the path names the other row's switch: not used. With the row gone and one
    /// switch left, the shared id is unique: still not used. Where the row is, the
    /// element matcher finds it by its witness.
    #[test]
    fn a_shared_locator_needs_its_witness_in_the_row() {
        let ok = settings(|x| x);
        let path = {
            let sw = Selector::parse("#switch_widget")
                .unwrap()
                .find(&ok.tree)
                .nodes[1];
            format!("[{}]", ok.tree.nodes[sw].path)
        };
        let sels = [path, "#switch_widget".to_string()];
        let witness = ["Automatic Restore".to_string()];
        let recorded = Recorded {
            selectors: &sels,
            witness: &witness,
            place: None,
            layout: None,
            elsewhere: &[],
        };
        let f = by_selectors(&ok, &sels, &recorded).expect("the row as recorded");
        assert_eq!(f.selector, sels[0]);
        let swapped = settings(|x| {
            x.replace("Back Up My Data", "@@")
                .replace("Automatic Restore", "Back Up My Data")
                .replace("@@", "Automatic Restore")
        });
        assert_eq!(by_selectors(&swapped, &sels, &recorded), None);
        let moved = fuzzy(&swapped, &sels, &recorded).expect("the witnessed row");
        assert_eq!(
            swapped.tree.nodes[moved.node].bounds.top, 499,
            "the switch of the row now titled Automatic Restore"
        );
        let agreed = moved.matched.unwrap().agreed;
        assert!(agreed.contains(&"row".to_string()), "{agreed:?}");
        // The row became another one: a new title, its switch under a new id. The one
        // switch left with the shared id is "Back Up My Data"'s.
        let gone = settings(|x| {
            let x = x.replacen("Automatic Restore", "Smart Restore", 1);
            let second = x.rfind("android:id/switch_widget").unwrap();
            format!("{}android:id/checkbox{}", &x[..second], &x[second + 24..])
        });
        assert!(unique(&gone, "#switch_widget").is_some(), "one switch left");
        assert_eq!(by_selectors(&gone, &sels, &recorded), None);
        assert_eq!(fuzzy(&gone, &sels, &recorded), None);
    }

    /// A product page: the toolbar's cart moved into the overflow menu (only its
    /// "More options" button is left there) and the page's own "Add to cart" button.
    fn product_page() -> Screen {
        Screen::from_xml(product_page_xml(), &ReprOptions::default()).unwrap()
    }

    fn product_page_xml() -> &'static str {
        r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="shop" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="shop:id/overflow_menu" class="android.widget.ImageButton" package="shop" content-desc="More options" clickable="true" enabled="true" bounds="[960,60][1080,180]"/><node index="1" text="Add to cart" resource-id="shop:id/add_to_cart" class="android.widget.Button" package="shop" content-desc="" clickable="true" enabled="true" bounds="[60,2000][1020,2160]"/></node></hierarchy>"#
    }

    #[test]
    fn an_id_the_script_names_for_another_step_is_another_element() {
        let sels = ["#action_cart".to_string()];
        let alone = Recorded {
            selectors: &sels,
            ..Default::default()
        };
        // Nothing else to go on: `add_to_cart` keeps what `action_cart` says ("cart").
        assert!(fuzzy(&product_page(), &sels, &alone).is_some());
        // The script taps `#add_to_cart` at another step: its author told the two apart.
        let elsewhere = named_ids(&["#add_to_cart".to_string(), ":text(\"Pay\")".to_string()]);
        assert_eq!(elsewhere, ["add_to_cart"]);
        let told_apart = Recorded {
            selectors: &sels,
            elsewhere: &elsewhere,
            ..Default::default()
        };
        assert_eq!(fuzzy(&product_page(), &sels, &told_apart), None);
    }

    /// An update renamed the page's `add_to_cart` to `addToCart`: still the element the
    /// script taps at another step, never this step's look-alike.
    #[test]
    fn a_renamed_id_the_script_names_for_another_step_is_another_element() {
        let xml = product_page_xml().replace("shop:id/add_to_cart", "shop:id/addToCart");
        let page = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        let sels = ["#action_cart".to_string()];
        let elsewhere = ["add_to_cart".to_string()];
        let told_apart = Recorded {
            selectors: &sels,
            elsewhere: &elsewhere,
            ..Default::default()
        };
        assert_eq!(fuzzy(&page, &sels, &told_apart), None);
        // This step's own renamed id is still its own.
        let own = ["#add_to_cart".to_string()];
        let other = ["action_cart".to_string()];
        let mine = Recorded {
            selectors: &own,
            elsewhere: &other,
            ..Default::default()
        };
        assert!(fuzzy(&page, &own, &mine).is_some());
    }

    /// Alarm rows whose times an update recased ("6:00 AM" → "6:00 am").
    fn alarms(times: &[&str]) -> Screen {
        super::super::score::tests::alarm_rows(times)
    }

    #[test]
    fn a_recased_label_lingers_until_its_element_goes() {
        let both = alarms(&["6:00 am", "8:15 am"]);
        assert!(!present(&both, ":text(\"6:00 AM\")"), "not as written");
        assert!(lingers(&both, ":text(\"6:00 AM\")"), "but still there");
        let one = alarms(&["8:15 am"]);
        assert!(
            !lingers(&one, ":text(\"6:00 AM\")"),
            "another time is not it"
        );
        let longer = alarms(&["6:00 am tomorrow"]);
        assert!(
            !lingers(&longer, ":text(\"6:00 AM\")"),
            "a label that grew (a typed word) has gone as written"
        );
        // A row's shared id is no witness that the row named by its label is there.
        let anchored = ":text(\"6:00 AM\") >> #remove_alarm";
        assert!(lingers(&both, anchored));
        assert!(!lingers(&one, anchored), "8:15's button is not 6:00's");
    }

    #[test]
    fn the_ids_selectors_name_are_their_targets_not_their_anchors() {
        let sels = [
            "#hour >> #input".to_string(),
            "app:id/save_button".to_string(),
            "#save_button".to_string(),
            ":desc(\"Cart\")".to_string(),
        ];
        assert_eq!(named_ids(&sels), ["input", "save_button"]);
    }

    /// `product_page` with its overflow menu open: a popup window whose rows show their
    /// items' titles under the menu's shared `title` id.
    fn product_page_menu(titles: &[&str]) -> Screen {
        let rows: String = titles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let top = 200 + 150 * i;
                format!(
                    r#"<node index="{i}" text="{t}" resource-id="shop:id/title" class="android.widget.TextView" package="shop" content-desc="" clickable="true" enabled="true" bounds="[600,{top}][1060,{}]"/>"#,
                    top + 150
                )
            })
            .collect();
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="shop" content-desc="" bounds="[0,0][1080,2400]"><node index="1" text="Add to cart" resource-id="shop:id/add_to_cart" class="android.widget.Button" package="shop" content-desc="" clickable="true" enabled="true" bounds="[60,2000][1020,2160]"/></node><node index="0" text="" resource-id="" class="android.widget.ListView" package="shop" content-desc="" bounds="[600,200][1060,{}]">{rows}</node></hierarchy>"#,
            200 + 150 * titles.len()
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    #[test]
    fn a_toolbar_action_named_by_its_id_is_found_by_its_title_in_the_overflow_menu() {
        let sels = ["#action_cart".to_string()];
        let elsewhere = ["add_to_cart".to_string()];
        let recorded = Recorded {
            selectors: &sels,
            elsewhere: &elsewhere,
            ..Default::default()
        };
        let menu = product_page_menu(&["Settings", "Cart, 1 items", "Help"]);
        let f = menu_item(&menu, &recorded, 1).expect("the cart's row");
        assert_eq!(menu.tree.nodes[f.node].text, "Cart, 1 items");
        assert_eq!(f.matched.unwrap().agreed, ["id_as_title"]);
        // Only in the menu that opened: the page's own window is never searched this way.
        assert_eq!(menu_item(&menu, &recorded, 2), None);
        // Two rows that say as much are no clear winner; a title that says less is none.
        let two = product_page_menu(&["Cart", "Cart, 1 items"]);
        assert_eq!(menu_item(&two, &recorded, 1), None);
        let other = product_page_menu(&["Settings", "Help"]);
        assert_eq!(menu_item(&other, &recorded, 1), None);
    }
}
