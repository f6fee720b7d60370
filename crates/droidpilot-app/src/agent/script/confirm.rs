//! A confirmation the step's own action asked for ("Delete alarm?" Cancel / Delete after a
//! tap on an alarm's delete button), which the recorded flow never saw: replay confirms it
//! by rule only when everything says it is the step's intent, and the step's `expect` can
//! then verify the effect:
//!
//! - the dialog came up after the step's action (it was not there when the step acted),
//!   is the app's own and a choice (two or more buttons: `interrupt::Kind::Choice`);
//! - exactly one of its buttons names what the step acted on (a word of its label agrees
//!   with a word of the acted element's label, description or id, as the matcher compares
//!   words: `similar::word`), and that button does not decline by its id;
//! - the step has an `expect` that did not hold before its action and does not hold now
//!   (the effect is missing, not behind the dialog: a dialog on top of an effect is a
//!   follow-up, never confirmed).
//!
//! The caller (`mod.rs`) checks the `expect` conditions; otherwise the step fails (or goes
//! to AI in the middle) and never reports success.

use super::interrupt::{self, Kind};
use super::similar::{id_words, label_words, says_little, word};
use crate::screen::{Screen, SelectorIndex, UiTree};

/// How alike two words must be to name the same thing (a synonym, `remove` for `delete`,
/// counts; see `similar::word`).
const SAME_WORD: f32 = 0.7;

/// The words that say what element `n` is: its label's, its description's and its id's
/// (lower case).
pub fn target_words(screen: &Screen, n: usize) -> Vec<String> {
    let tree = &screen.tree;
    let node = &tree.nodes[n];
    let mut words = label_words(&node.text);
    words.extend(label_words(&node.content_desc));
    words.extend(id_words(&node.resource_id));
    // A clickable row or menu item shows its label in a child ("Delete" in a popup
    // menu's row): what a person reads as the element's name.
    if node.text.trim().is_empty() && node.content_desc.trim().is_empty() {
        for c in tree.subtree(n).skip(1) {
            words.extend(label_words(&tree.nodes[c].text));
        }
    }
    words.retain(|w| w.chars().any(char::is_alphabetic));
    words.sort();
    words.dedup();
    words
}

/// The button to tap that confirms what the step asked for, as a selector and its label,
/// when the dialog on `screen` is a new choice (`before`: the dialog's signature when the
/// step acted) with exactly one button naming the acted element (`acted`: its
/// `target_words`), one that does not decline by its id.
pub fn confirming_button(
    screen: &Screen,
    acted: &[String],
    before: Option<&str>,
) -> Option<(String, String)> {
    let d = interrupt::dialog(screen)?;
    let now = interrupt::signature(screen)?;
    if d.kind != Kind::Choice || d.system || before == Some(now.as_str()) || acted.is_empty() {
        return None;
    }
    let tree = &screen.tree;
    let naming: Vec<usize> = d
        .buttons
        .iter()
        .copied()
        .filter(|&b| names(&label_of(tree, b), acted))
        .collect();
    let [one] = naming.as_slice() else {
        return None;
    };
    if interrupt::declines(tree, *one) {
        return None;
    }
    let (sel, _) = SelectorIndex::new(tree).recommend(*one);
    Some((sel.to_string(), label_of(tree, *one)))
}

/// Whether the dialog on `screen` speaks of the acted element (`acted`: its
/// `target_words`): one of its buttons or texts names it ("Delete alarm?" after a tap on
/// "Delete alarm"). Such a dialog is the step's own business; one that says nothing of
/// it (a rating prompt, a promo) came up by itself.
pub fn names_action(screen: &Screen, acted: &[String]) -> bool {
    let Some(d) = interrupt::dialog(screen) else {
        return false;
    };
    // Words that say little ("to", "button") name nothing.
    let acted: Vec<String> = acted
        .iter()
        .filter(|w| w.chars().count() >= 3 && !says_little(w))
        .cloned()
        .collect();
    let acted = acted.as_slice();
    let tree = &screen.tree;
    let buttons = d.buttons.iter().map(|&b| label_of(tree, b));
    let texts = tree.subtree(d.root).map(|i| tree.nodes[i].text.clone());
    buttons.chain(texts).any(|l| names(&l, acted))
}

/// A button's label: its own text or description, else its first child's text.
fn label_of(tree: &UiTree, b: usize) -> String {
    let n = &tree.nodes[b];
    [n.text.as_str(), n.content_desc.as_str()]
        .into_iter()
        .chain(tree.subtree(b).map(|i| tree.nodes[i].text.as_str()))
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
        .to_string()
}

/// Whether a label names one of the acted element's words.
fn names(label: &str, acted: &[String]) -> bool {
    label_words(label)
        .iter()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .any(|w| acted.iter().any(|a| word(w, a) >= SAME_WORD))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    fn screen(buttons: &[(&str, &str)], title: &str) -> Screen {
        let b: String = buttons
            .iter()
            .enumerate()
            .map(|(i, (id, text))| {
                format!(
                    r#"<node index="{i}" text="{text}" resource-id="{id}" class="android.widget.Button" package="com.clock" content-desc="" clickable="true" enabled="true" bounds="[{l},1300][{r},1450]"/>"#,
                    l = 150 + i * 400,
                    r = 500 + i * 400
                )
            })
            .collect();
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="6:00 AM" resource-id="com.clock:id/time" class="android.widget.TextView" package="com.clock" content-desc="" bounds="[0,300][600,500]"/><node index="1" text="" resource-id="com.clock:id/delete" class="android.widget.ImageButton" package="com.clock" content-desc="Delete alarm" clickable="true" enabled="true" bounds="[800,300][1000,500]"/></node><node index="1" text="" resource-id="android:id/parentPanel" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[100,900][980,1500]"><node index="0" text="{title}" resource-id="android:id/alertTitle" class="android.widget.TextView" package="com.clock" content-desc="" bounds="[150,900][900,1100]"/>{b}</node></hierarchy>"#
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    fn acted() -> Vec<String> {
        let before = screen(&[], "");
        let n = (0..before.tree.nodes.len())
            .find(|&i| before.tree.nodes[i].content_desc == "Delete alarm")
            .unwrap();
        target_words(&before, n)
    }

    /// "Delete alarm?" after a tap on "Delete alarm": the one button that names it.
    #[test]
    fn the_button_naming_the_steps_action_confirms_it() {
        let s = screen(
            &[
                ("android:id/button2", "Cancel"),
                ("android:id/button1", "Yes, delete"),
            ],
            "Delete alarm?",
        );
        let (_, label) = confirming_button(&s, &acted(), None).expect("confirmed");
        assert_eq!(label, "Yes, delete");
        // The same dialog already there when the step acted is not its answer.
        let sig = interrupt::signature(&s).unwrap();
        assert_eq!(confirming_button(&s, &acted(), Some(&sig)), None);
    }

    /// Nothing names the step's action ("OK" / "Cancel"), two buttons name it, or only
    /// the declining one does: no guess.
    #[test]
    fn no_clear_confirming_button_is_no_confirmation() {
        for buttons in [
            vec![
                ("android:id/button2", "Cancel"),
                ("android:id/button1", "OK"),
            ],
            vec![("app:id/a", "Delete"), ("app:id/b", "Delete all")],
            vec![
                ("android:id/button2", "Don't delete"),
                ("android:id/button1", "OK"),
            ],
        ] {
            let s = screen(&buttons, "Are you sure?");
            assert_eq!(confirming_button(&s, &acted(), None), None, "{buttons:?}");
        }
    }

    /// A notice (one button) after the action is not a confirmation.
    #[test]
    fn a_notice_is_no_confirmation() {
        let s = screen(&[("android:id/button1", "Delete")], "Alarm deleted");
        assert_eq!(confirming_button(&s, &acted(), None), None);
    }
}
