//! How alike two ids or two labels are, 0 to 1, for the element matcher (`score.rs`).
//!
//! Both are cut into words: an id on `_`, `-`, `.`, case changes and digits
//! (`btnAddToCart2` → `btn add to cart 2`), a label on anything not a letter or digit,
//! all lower case; a time of day is one word on the 24-hour clock (`8:15 AM` and `08:15`
//! are `08h15`), as phones in other regions and languages write it. Two words agree when they are equal (1), one starts with the other
//! (`del` / `delete`, 0.8) or one is an abbreviation of the other (same first letter, its
//! letters in order: `msg` / `message`, 0.7), or when both name the same common UI verb
//! (`remove` / `delete`, 0.7). Words that say little (`btn`, `view`, `text`, a version
//! `v2`) weigh a quarter. The similarity is a soft Dice coefficient over the weighted
//! words: every word of each side counts, so extra or missing words lower it.
//!
//! Hand-written rather than a string-distance crate: an edit distance rates `save` /
//! `same` high and `msg` / `message` low, the opposite of how ids and labels change
//! between app versions (words abbreviated, added, reordered, swapped for a synonym).

/// Words that describe a widget's kind or a version rather than what it is for.
const FILLER: &[&str] = &[
    "btn",
    "button",
    "txt",
    "text",
    "tv",
    "iv",
    "img",
    "image",
    "view",
    "layout",
    "container",
    "item",
    "row",
    "icon",
    "label",
    "ic",
    "fab",
    "action",
    "menu",
    "id",
    "the",
    "a",
    "to",
    "v",
    "new",
    "old",
    "main",
    "wrapper",
    "holder",
    "widget",
];

/// Groups of words apps use for the same action (a reworded button keeps its meaning).
const SYNONYMS: &[&[&str]] = &[
    &["save", "done", "ok", "apply", "confirm", "finish"],
    &["delete", "remove", "trash", "discard", "erase"],
    &["add", "create", "new", "plus", "compose"],
    &["search", "find", "lookup"],
    &["settings", "preferences", "options", "prefs", "config"],
    &["send", "submit", "post"],
    &["edit", "modify", "change", "rename"],
    &["close", "dismiss", "exit"],
    &["more", "overflow"],
    &["next", "continue", "proceed", "forward"],
    &["back", "previous", "up", "return"],
    &["cart", "basket", "bag"],
    &["checkout", "pay", "purchase", "buy"],
];

/// The words of an id: split on separators, case changes and digit runs.
pub fn id_words(id: &str) -> Vec<String> {
    let short = id.rsplit_once(":id/").map_or(id, |(_, s)| s);
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in short.chars() {
        let boundary = match prev {
            _ if !c.is_alphanumeric() => {
                flush(&mut cur, &mut words);
                prev = None;
                continue;
            }
            Some(p) => {
                (p.is_lowercase() && c.is_uppercase()) || (p.is_ascii_digit() != c.is_ascii_digit())
            }
            None => false,
        };
        if boundary {
            flush(&mut cur, &mut words);
        }
        cur.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut cur, &mut words);
    words
}

/// The words of a label, lower case, letters and digits only; a time of day is one
/// word on the 24-hour clock (`times`).
pub fn label_words(label: &str) -> Vec<String> {
    times(label)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A label with each time of day written one way, `HHhMM` on the 24-hour clock: a
/// phone in another language or region writes the same time otherwise (`8:15 AM`,
/// `08:15`, `8:15 am`, `20:15` for `8:15 PM`), and a row's time is what tells alarm or
/// message rows apart. Only `H:MM`/`HH:MM` with an optional AM/PM after it is read.
pub fn times(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if let Some((t, used)) = time_at(&chars, i) {
            out.push_str(&t);
            i += used;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// A time of day starting at `chars[i]` (not inside a longer number): its 24-hour form
/// and how many characters it took.
fn time_at(chars: &[char], i: usize) -> Option<(String, usize)> {
    let digit = |k: usize| chars.get(k).filter(|c| c.is_ascii_digit()).copied();
    if i > 0 && chars[i - 1].is_ascii_digit() {
        return None;
    }
    let (hours, mut k) = match (digit(i), digit(i + 1)) {
        (Some(a), Some(b)) => (format!("{a}{b}"), i + 2),
        (Some(a), None) => (a.to_string(), i + 1),
        _ => return None,
    };
    let (Some(':'), Some(m1), Some(m2)) = (chars.get(k).copied(), digit(k + 1), digit(k + 2))
    else {
        return None;
    };
    if digit(k + 3).is_some() {
        return None;
    }
    k += 3;
    let mut h: u32 = hours.parse().ok()?;
    let mut j = k;
    while chars.get(j) == Some(&' ') || chars.get(j) == Some(&'\u{202f}') {
        j += 1;
    }
    let word: String = chars[j..]
        .iter()
        .take_while(|c| c.is_alphabetic() || **c == '.')
        .filter(|c| c.is_alphabetic())
        .collect::<String>()
        .to_lowercase();
    let taken = chars[j..]
        .iter()
        .take_while(|c| c.is_alphabetic() || **c == '.')
        .count();
    match word.as_str() {
        "am" if h <= 12 => {
            h %= 12;
            k = j + taken;
        }
        "pm" if h <= 12 => {
            h = h % 12 + 12;
            k = j + taken;
        }
        _ => {}
    }
    (h < 24).then(|| (format!("{h:02}h{m1}{m2}"), k - i))
}

fn flush(cur: &mut String, words: &mut Vec<String>) {
    if !cur.is_empty() {
        words.push(std::mem::take(cur));
    }
}

/// Whether a word describes a widget's kind or a version rather than what it is for.
pub fn says_little(w: &str) -> bool {
    FILLER.contains(&w) || w.chars().all(|c| c.is_ascii_digit())
}

/// An id word's weight: a quarter for filler and version numbers.
fn id_weight(w: &str) -> f32 {
    if FILLER.contains(&w) || w.chars().all(|c| c.is_ascii_digit()) {
        0.25
    } else {
        1.0
    }
}

/// How alike two words are.
pub fn word(a: &str, b: &str) -> f32 {
    if a == b {
        return 1.0;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.chars().count() >= 3 && long.starts_with(short) {
        return 0.8;
    }
    if SYNONYMS.iter().any(|g| g.contains(&a) && g.contains(&b)) {
        return 0.7;
    }
    if short.chars().count() >= 2 && abbreviates(short, long) {
        return 0.7;
    }
    0.0
}

/// `short`'s letters appear in `long` in order, starting with the same letter.
fn abbreviates(short: &str, long: &str) -> bool {
    let mut it = long.chars();
    let mut first = true;
    for c in short.chars() {
        if first {
            if it.next() != Some(c) {
                return false;
            }
            first = false;
        } else if !it.any(|l| l == c) {
            return false;
        }
    }
    true
}

/// Soft Dice over weighted words: each word's best match on the other side.
pub fn words(a: &[String], b: &[String], weight: fn(&str) -> f32) -> f32 {
    let wa: Vec<f32> = a.iter().map(|w| weight(w)).collect();
    let wb: Vec<f32> = b.iter().map(|w| weight(w)).collect();
    weighted(a, &wa, b, &wb)
}

/// `words`, each word with its own weight (`wa`, `wb`).
fn weighted(a: &[String], wa: &[f32], b: &[String], wb: &[f32]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    if a == b {
        return 1.0;
    }
    let (ga, na) = covered(a, wa, b);
    let (gb, nb) = covered(b, wb, a);
    (ga + gb) / (na + nb)
}

/// How much of `x`'s weight finds a match in `y`, and `x`'s whole weight.
fn covered(x: &[String], wx: &[f32], y: &[String]) -> (f32, f32) {
    x.iter().zip(wx).fold((0.0, 0.0), |(got, all), (w, k)| {
        let best = y.iter().map(|v| word(w, v)).fold(0.0, f32::max);
        (got + best * k, all + k)
    })
}

/// How alike two ids are. An id made only of words that say little (`fab`, `button1`)
/// has nothing else to say what it is: its kind words then weigh fully, and its numbers
/// (not a version's, `v2`) must agree, as `button1` (OK) is not `button2` (Cancel).
pub fn ids(a: &str, b: &str) -> f32 {
    let (a, b) = (id_words(a), id_words(b));
    if (kind_only(&a) || kind_only(&b)) && numbers(&a) != numbers(&b) {
        return 0.0;
    }
    weighted(&a, &id_weights(&a), &b, &id_weights(&b))
}

/// How much of what the `recorded` id says the id `have` still says, from 0 to 1. A
/// renamed id keeps the words that say what the element does (`add_to_cart` →
/// `btnAddCart`); one that shares a word but lost the rest (`add_to_cart` and
/// `actionCart`: only "cart") names another element, however alike the two look.
pub fn id_kept(recorded: &str, have: &str) -> f32 {
    let (a, b) = (id_words(recorded), id_words(have));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    if (kind_only(&a) || kind_only(&b)) && numbers(&a) != numbers(&b) {
        return 0.0;
    }
    let (got, all) = covered(&a, &id_weights(&a), &b);
    got / all.max(f32::EPSILON)
}

/// Each id word's weight: a quarter for filler and version numbers, unless the id is
/// made only of such words (then they are all it says).
fn id_weights(w: &[String]) -> Vec<f32> {
    let kind = kind_only(w);
    w.iter()
        .enumerate()
        .map(|(i, x)| {
            let version = i > 0 && w[i - 1] == "v" || x == "v";
            if kind && !version && !x.chars().all(|c| c.is_ascii_digit()) {
                1.0
            } else {
                id_weight(x)
            }
        })
        .collect()
}

/// Whether every word of an id says little (`fab`, `button`, `1`).
fn kind_only(words: &[String]) -> bool {
    !words.is_empty() && words.iter().all(|w| says_little(w))
}

/// An id's numbers, but a version's (`v2`).
fn numbers(words: &[String]) -> Vec<&str> {
    let mut n: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| w.chars().all(|c| c.is_ascii_digit()) && !(*i > 0 && words[i - 1] == "v"))
        .map(|(_, w)| w.as_str())
        .collect();
    n.sort_unstable();
    n
}

/// How alike two labels are; the same words in the same order (up to case and
/// punctuation: `Bluetooth ›`) are equal. Every word counts, and numbers must agree: a
/// list of products or alarms differs only in them (`Pixel 8` is not `Pixel 7`).
pub fn labels(a: &str, b: &str) -> f32 {
    let (a, b) = (label_words(a), label_words(b));
    let numbers = |w: &[String]| -> Vec<String> {
        let mut n: Vec<String> = w
            .iter()
            .filter(|x| x.chars().any(|c| c.is_ascii_digit()))
            .cloned()
            .collect();
        n.sort();
        n
    };
    if numbers(&a) != numbers(&b) {
        return 0.0;
    }
    words(&a, &b, |_| 1.0)
}

/// Whether a recorded text is in `have`: the same words, or all of them inside it.
pub fn contains(have: &str, want: &str) -> bool {
    let (h, w) = (label_words(have), label_words(want));
    !w.is_empty() && (h == w || h.windows(w.len()).any(|s| s == w.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a renamed id keeps of the old one: all of it when words are recased,
    /// abbreviated or joined, most of it when a word is added; little when only a shared
    /// word is left.
    #[test]
    fn an_id_keeps_what_the_old_one_said() {
        assert!(id_kept("add_to_cart", "btnAddCart") > 0.85);
        assert!(id_kept("checkout_button", "proceed_checkout") > 0.75);
        assert!(id_kept("send_button", "sendBtn") > 0.9);
        assert!(id_kept("add_to_cart", "actionCart") < 0.5);
        assert!(id_kept("button1", "button2") == 0.0);
    }

    #[test]
    fn ids_split_on_case_separators_and_digits() {
        assert_eq!(id_words("btnAddToCart2"), ["btn", "add", "to", "cart", "2"]);
        assert_eq!(id_words("com.app:id/switch_widget"), ["switch", "widget"]);
        assert_eq!(ids("switch_widget", "switchWidget"), 1.0);
    }

    /// The kinds of change an app update makes to an id score well; a different
    /// purpose under the same widget word does not.
    #[test]
    fn renamed_ids_score_by_kind_of_change() {
        assert!(ids("message_input", "msg_input") > 0.6, "abbreviation");
        assert!(ids("title", "title_v2") > 0.6, "version suffix");
        assert!(ids("fab", "fab_v2") > 0.6, "a kind-only id, version suffix");
        assert!(ids("fab", "Fab") > 0.6, "a kind-only id, casing");
        assert_eq!(ids("button1", "button2"), 0.0, "OK is not Cancel");
        assert!(
            ids("button1", "button") < 0.5,
            "numbers of a kind-only id agree"
        );
        assert!(
            ids("add_to_cart", "btn_add_cart") > 0.6,
            "prefix and a dropped word"
        );
        assert!(ids("delete", "remove_button") > 0.5, "synonym");
        assert!(
            ids("btn_save", "btn_cancel") <= 0.2,
            "same kind, other purpose"
        );
    }

    #[test]
    fn labels_compare_words_not_letters() {
        assert_eq!(labels("Bluetooth ›", "bluetooth"), 1.0);
        assert!(labels("Send", "Send message") > 0.6);
        assert!(labels("Save", "Same") < 0.1);
        assert_eq!(labels("Pixel 8", "Pixel 7"), 0.0, "numbers tell rows apart");
        assert!(contains("Buy Pixel 8 now", "pixel 8"));
        assert!(!contains("Pixel 80", "Pixel 8"));
    }

    /// A phone set to another language or region writes times its own way; the same
    /// time is the same word, another time is not.
    #[test]
    fn a_time_is_the_same_on_the_24_hour_clock() {
        assert_eq!(labels("8:15 AM", "08:15"), 1.0);
        assert_eq!(labels("8:15 PM", "20:15"), 1.0);
        assert_eq!(labels("12:30 AM", "00:30"), 1.0);
        assert!(labels("6:00 AM", "06:00 Uhr") > 0.6);
        assert_eq!(labels("8:15 AM", "20:15"), 0.0, "numbers tell rows apart");
        assert!(contains("Wecker 06:00", "6:00 AM"));
        assert!(!contains("Wecker 06:00", "6:00 PM"));
        assert_eq!(times("Build 12:345"), "Build 12:345", "not a time");
        assert_eq!(times("Mon 7:05 a.m. alarm"), "Mon 07h05 alarm");
    }
}
