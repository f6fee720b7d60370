//! The rename-map generator: every transformation it can make is read off the fixture
//! (a real pair's casing change, abbreviation, synonym, rewording, prefix or suffix
//! token, punctuation change), and it is applied to an item only where it fits: a
//! synonym or abbreviation only when its old words are in the item, a stripped prefix
//! only when the id has it, words added to a label only next to a word the rule's rows
//! had there, a type suffix only to an id without one. A rule that carries meaning
//! (synonym, prefix or suffix, rewording) must be shown by two apps. For each item the
//! pattern is drawn with its observed frequency among the patterns that fit, then a rule
//! of that pattern by how many apps show it; an item no real rule fits is left alone.
//! The candidate is re-classified and kept only when the classifier agrees on its
//! pattern, so the map holds nothing the data has not shown.
//!
//! The draw uses its own splitmix64 over an FNV hash of the seed and the item (not the
//! `rand` crate, which the bench crate does not depend on): the same seed and item give
//! the same choice on every platform and in every order the items come in.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use super::classify::{Pattern, Token, classify, common_ends, core_split, tokens, words};
use super::{Kind, Pair, pairs};

/// One rename the generator made, with the fixture row its rule was first seen in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    pub kind: Kind,
    pub old: String,
    pub new: String,
    pub pattern: Pattern,
    pub source: &'static Pair,
}

/// The renames for a list of ids or labels, in sorted order, at most one per item;
/// items no real pattern fits are not in it. No two items get the same new name, and
/// none gets the name of another item.
pub fn renames(seed: u64, kind: Kind, items: &[&str]) -> Vec<Rename> {
    let items: BTreeSet<&str> = items.iter().copied().collect();
    let mut taken: BTreeSet<String> = items.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    for item in items {
        let cands = candidates(kind, item);
        if let Some(c) = choose(seed, kind, item, cands, &taken) {
            taken.insert(c.new.clone());
            out.push(Rename {
                kind,
                old: item.to_string(),
                new: c.new,
                pattern: c.pattern,
                source: &pairs()[c.source],
            });
        }
    }
    out
}

/// Renames for a phone's ids and labels, as the bench's `--rename-map` file holds them
/// (`{"ids": {old: new}, "strings": {old: new}}`).
pub fn rename_map(
    seed: u64,
    ids: &[&str],
    strings: &[&str],
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let map = |kind, items| {
        renames(seed, kind, items)
            .into_iter()
            .map(|r| (r.old, r.new))
            .collect()
    };
    (map(Kind::Id, ids), map(Kind::String, strings))
}

/// `rename_map` as the `--rename-map` file writes it.
pub fn rename_map_json(seed: u64, ids: &[&str], strings: &[&str]) -> serde_json::Value {
    let (ids, strings) = rename_map(seed, ids, strings);
    serde_json::json!({ "ids": ids, "strings": strings })
}

/// A transformation seen in the fixture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    IdCase(IdStyle, IdStyle),
    TextCase(TextStyle, TextStyle),
    Punct(Punct),
    /// Words replaced (abbreviation, synonym, rewording), lower-case.
    Replace {
        from: Vec<String>,
        to: Vec<String>,
    },
    /// Words stripped from and added to the start and the end (prefix_suffix).
    Ends {
        strip: [Vec<String>; 2],
        add: [Vec<String>; 2],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IdStyle {
    Snake,
    Camel,
    Pascal,
    Flat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TextStyle {
    Upper,
    Title,
    Sentence,
    Lower,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Punct {
    DotsToEllipsis,
    EllipsisToDots,
    AddEnd(char),
    DropEnd(char),
}

/// A rule: its transformation, the new words as the first row wrote them (for a label),
/// the kept words next to the change at the start and at the end of its rows (their
/// context), which apps show it, and the first row that does.
struct Rule {
    op: Op,
    text: [String; 2],
    context: [BTreeSet<String>; 2],
    apps: BTreeSet<String>,
    source: usize,
}

/// The rules per kind and pattern, and how often each pattern was seen per kind.
struct Model {
    rules: BTreeMap<(Kind, Pattern), Vec<Rule>>,
    weight: BTreeMap<(Kind, Pattern), u64>,
}

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(build)
}

/// Abbreviations and synonyms are words, so a label's serve ids too (an id's do not
/// serve labels: `delete_playlist` → `bookmark_playlist` is a new view, not a new word).
/// A rule that carries meaning (synonym, prefix or suffix, rewording) is used only when
/// at least two apps show it, and only with words that are not just grammar: one app's
/// change is often about that app alone (`Feed` → `Podcast`).
fn build() -> Model {
    let mut weight: BTreeMap<(Kind, Pattern), u64> = BTreeMap::new();
    let mut seen: BTreeMap<(Kind, Pattern, Op), Rule> = BTreeMap::new();
    for (i, pair) in pairs().iter().enumerate() {
        *weight.entry((pair.kind, pair.pattern)).or_default() += 1;
        let Some((op, text)) = extract(pair) else {
            continue;
        };
        let words = matches!(pair.pattern, Pattern::Abbreviation | Pattern::Synonym);
        let kinds = match pair.kind {
            Kind::String if words => vec![Kind::Id, Kind::String],
            kind => vec![kind],
        };
        for kind in kinds {
            let rule = seen
                .entry((kind, pair.pattern, op.clone()))
                .or_insert_with(|| Rule {
                    op: op.clone(),
                    text: text.clone(),
                    context: Default::default(),
                    apps: BTreeSet::new(),
                    source: i,
                });
            rule.apps.insert(pair.app.clone());
            let [start, end] = context(pair);
            rule.context[0].extend(start);
            rule.context[1].extend(end);
        }
    }
    let mut rules: BTreeMap<(Kind, Pattern), Vec<Rule>> = BTreeMap::new();
    for ((kind, pattern, _), rule) in seen {
        if general(pattern, &rule) {
            rules.entry((kind, pattern)).or_default().push(rule);
        }
    }
    Model { rules, weight }
}

/// Words that only carry grammar: a rule must change more than these.
const GRAMMAR: [&str; 29] = [
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "at", "by", "as", "with", "from",
    "is", "into", "your", "my", "this", "that", "it", "be", "are", "was", "we", "you", "please",
    "s",
];

/// The kept words next to a row's change: the first and the last word its old and new
/// forms share once the changed words at the ends are set aside.
fn context(pair: &Pair) -> [Option<String>; 2] {
    let (a, b) = (words(pair.kind, &pair.old), words(pair.kind, &pair.new));
    let (p, s) = common_ends(&a, &b);
    let kept: Vec<&String> = a[..p].iter().chain(&a[a.len() - s..]).collect();
    [
        kept.first().map(|w| w.to_string()),
        kept.last().map(|w| w.to_string()),
    ]
}

fn general(pattern: Pattern, rule: &Rule) -> bool {
    let meaningful = |ws: &[String]| {
        let word = |w: &String| {
            w.chars().count() >= 2 && w.chars().all(|c| c.is_alphabetic() || c == '\'')
        };
        ws.iter().all(word) && (ws.is_empty() || ws.iter().any(|w| !GRAMMAR.contains(&w.as_str())))
    };
    let words_ok = match &rule.op {
        Op::Replace { from, to } => meaningful(from) && meaningful(to),
        Op::Ends { strip, add } => strip.iter().chain(add).all(|w| meaningful(w)),
        _ => true,
    };
    match pattern {
        Pattern::Casing | Pattern::Punctuation => true,
        Pattern::Abbreviation => words_ok,
        Pattern::Synonym | Pattern::PrefixSuffix | Pattern::Rewording => {
            words_ok && rule.apps.len() >= 2
        }
        Pattern::Other => false,
    }
}

/// The rule a fixture row shows, if it is one the generator can apply elsewhere, and
/// the new words as the row wrote them.
fn extract(pair: &Pair) -> Option<(Op, [String; 2])> {
    let (kind, old, new) = (pair.kind, pair.old.as_str(), pair.new.as_str());
    let no_text = |op: Op| (op, [String::new(), String::new()]);
    let op = match (pair.pattern, kind) {
        (Pattern::Casing, Kind::Id) => {
            let (from, to) = (id_style(old), id_style(new));
            (from != to && from != IdStyle::Flat && to != IdStyle::Flat)
                .then_some(Op::IdCase(from, to))
        }
        (Pattern::Casing, Kind::String) => {
            let (from, to) = (text_style(old)?, text_style(new)?);
            (from != to).then_some(Op::TextCase(from, to))
        }
        (Pattern::Punctuation, _) => punct_op(old, new).map(Op::Punct),
        (Pattern::Abbreviation | Pattern::Synonym | Pattern::Rewording, _) => {
            return replace_op(kind, old, new);
        }
        (Pattern::PrefixSuffix, _) => return ends_op(kind, old, new),
        (Pattern::Other, _) => None,
    };
    op.map(no_text)
}

/// The raw text of `toks[range]` in `s`, or "" for an empty range.
fn span(s: &str, toks: &[Token]) -> String {
    match (toks.first(), toks.last()) {
        (Some(a), Some(b)) => s[a.start..b.end].to_string(),
        _ => String::new(),
    }
}

fn replace_op(kind: Kind, old: &str, new: &str) -> Option<(Op, [String; 2])> {
    let (ta, tb) = (tokens(kind, old), tokens(kind, new));
    let (a, b) = (words(kind, old), words(kind, new));
    let (p, s) = common_ends(&a, &b);
    let (from, to) = (a[p..a.len() - s].to_vec(), b[p..b.len() - s].to_vec());
    let text = span(new, &tb[p..tb.len() - s]);
    let enough = from.concat().chars().filter(|c| c.is_alphabetic()).count() >= 2;
    (!from.is_empty() && !to.is_empty() && enough && ta.len() == a.len())
        .then_some((Op::Replace { from, to }, [text, String::new()]))
}

fn ends_op(kind: Kind, old: &str, new: &str) -> Option<(Op, [String; 2])> {
    let tb = tokens(kind, new);
    let (a, b) = (words(kind, old), words(kind, new));
    let (p, s) = common_ends(&a, &b);
    let (om, nm) = (&a[p..a.len() - s], &b[p..b.len() - s]);
    let (i, j, n) = if om.is_empty() || nm.is_empty() {
        if p == 0 {
            (om.len(), nm.len(), s) // changed at the start
        } else {
            (0, 0, p) // changed at the end
        }
    } else {
        core_split(om, nm)?
    };
    let op = Op::Ends {
        strip: [a[..i].to_vec(), a[i + n..].to_vec()],
        add: [b[..j].to_vec(), b[j + n..].to_vec()],
    };
    Some((op, [span(new, &tb[..j]), span(new, &tb[j + n..])]))
}

fn punct_op(old: &str, new: &str) -> Option<Punct> {
    if old.contains("...") && old.replace("...", "…") == new {
        return Some(Punct::DotsToEllipsis);
    }
    if new.contains("...") && new.replace("...", "…") == old {
        return Some(Punct::EllipsisToDots);
    }
    let (o, n) = (old.trim_end(), new.trim_end());
    let last = |s: &str| s.chars().last().filter(|c| !c.is_alphanumeric());
    match (last(o), last(n)) {
        (None, Some(c)) if n.strip_suffix(c) == Some(o) => Some(Punct::AddEnd(c)),
        (Some(c), None) if o.strip_suffix(c) == Some(n) => Some(Punct::DropEnd(c)),
        _ => None,
    }
}

fn id_style(name: &str) -> IdStyle {
    if name.contains('_') {
        IdStyle::Snake
    } else if name.starts_with(|c: char| c.is_uppercase()) {
        IdStyle::Pascal
    } else if name.chars().any(char::is_uppercase) {
        IdStyle::Camel
    } else {
        IdStyle::Flat
    }
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn render_id(words: &[String], style: IdStyle) -> String {
    match style {
        IdStyle::Snake | IdStyle::Flat => words.join("_"),
        IdStyle::Camel => {
            let rest = words.iter().skip(1).map(|w| capitalize(w));
            words.iter().take(1).cloned().chain(rest).collect()
        }
        IdStyle::Pascal => words.iter().map(|w| capitalize(w)).collect(),
    }
}

const SMALL: [&str; 16] = [
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "at", "by", "as", "with", "from",
    "is",
];

/// A label's case style, from its words that have letters.
fn text_style(label: &str) -> Option<TextStyle> {
    let toks = tokens(Kind::String, label);
    let ws: Vec<&str> = toks
        .iter()
        .map(|t| &label[t.start..t.end])
        .filter(|w| w.chars().any(char::is_alphabetic))
        .collect();
    let first = ws.first()?.chars().next()?;
    let letters = ws
        .iter()
        .flat_map(|w| w.chars())
        .filter(|c| c.is_alphabetic());
    if letters.clone().count() >= 2 && !letters.clone().any(char::is_lowercase) {
        return Some(TextStyle::Upper);
    }
    if first.is_lowercase() {
        return Some(TextStyle::Lower);
    }
    let rest: Vec<&&str> = ws[1..]
        .iter()
        .filter(|w| !SMALL.contains(&w.to_lowercase().as_str()))
        .collect();
    let titled = !rest.is_empty() && rest.iter().all(|w| w.starts_with(char::is_uppercase));
    Some(if titled {
        TextStyle::Title
    } else {
        TextStyle::Sentence
    })
}

/// An acronym keeps its case through a case change (`OPML`, `ZIM`).
fn acronym(w: &str) -> bool {
    w.chars().filter(|c| c.is_uppercase()).count() >= 2
}

/// One word in a style: `first` is whether it starts the label.
fn word_in(w: &str, style: TextStyle, first: bool, keep_acronyms: bool) -> String {
    if keep_acronyms && acronym(w) {
        return w.to_string();
    }
    let lower = w.to_lowercase();
    match style {
        TextStyle::Upper => w.to_uppercase(),
        TextStyle::Lower => lower,
        TextStyle::Sentence if first => capitalize(&lower),
        TextStyle::Sentence => lower,
        TextStyle::Title if first || !SMALL.contains(&lower.as_str()) => capitalize(&lower),
        TextStyle::Title => lower,
    }
}

/// `label` rewritten word by word in `style`, punctuation and spacing kept.
fn restyle(label: &str, from: TextStyle, to: TextStyle) -> String {
    let mut out = String::new();
    let mut at = 0;
    for (i, t) in tokens(Kind::String, label).iter().enumerate() {
        out.push_str(&label[at..t.start]);
        out.push_str(&word_in(
            &label[t.start..t.end],
            to,
            i == 0,
            from != TextStyle::Upper,
        ));
        at = t.end;
    }
    out.push_str(&label[at..]);
    out
}

/// Words from another label fitted into this one's style.
fn fit(text: &str, style: TextStyle, first: bool) -> String {
    let ws: Vec<String> = text
        .split(' ')
        .enumerate()
        .map(|(i, w)| word_in(w, style, first && i == 0, true))
        .collect();
    ws.join(" ")
}

struct Candidate {
    pattern: Pattern,
    new: String,
    weight: u64,
    source: usize,
}

/// An item read once: an id's qualifier, name, words and style, or a label's tokens and
/// style.
enum Subject<'a> {
    Id {
        prefix: &'a str,
        name: &'a str,
        words: Vec<String>,
        style: IdStyle,
    },
    Label {
        text: &'a str,
        toks: Vec<Token>,
        words: Vec<String>,
        style: TextStyle,
    },
}

/// An app's ids may be qualified (`com.example:id/title`); framework ids never change,
/// nor does a label without letters.
fn subject(kind: Kind, item: &str) -> Option<Subject<'_>> {
    match kind {
        Kind::Id => {
            let (prefix, name) = match item.find(":id/") {
                Some(i) if &item[..i] == "android" => return None,
                Some(i) => item.split_at(i + 4),
                None => ("", item),
            };
            let ok =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            ok.then(|| Subject::Id {
                prefix,
                name,
                words: words(Kind::Id, name),
                style: id_style(name),
            })
        }
        Kind::String => {
            let toks = tokens(Kind::String, item);
            let words = toks.iter().map(|t| t.lower.clone()).collect();
            let style = text_style(item)?;
            Some(Subject::Label {
                text: item,
                toks,
                words,
                style,
            })
        }
    }
}

/// Every real rule that fits `item`, with what it makes of it.
fn candidates(kind: Kind, item: &str) -> Vec<Candidate> {
    let Some(subject) = subject(kind, item) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for pattern in Pattern::ALL {
        for rule in model().rules.get(&(kind, pattern)).into_iter().flatten() {
            let new = match &subject {
                Subject::Id {
                    prefix,
                    name,
                    words,
                    style,
                } => apply_id(&rule.op, name, words, *style).map(|n| format!("{prefix}{n}")),
                Subject::Label {
                    text,
                    toks,
                    words,
                    style,
                } => apply_text(rule, text, toks, words, *style),
            };
            if let Some(new) = new.filter(|n| n != item) {
                let (weight, source) = (rule.apps.len() as u64, rule.source);
                out.push(Candidate {
                    pattern,
                    new,
                    weight,
                    source,
                });
            }
        }
    }
    out
}

fn apply_id(op: &Op, name: &str, w: &[String], style: IdStyle) -> Option<String> {
    let id_words = |ws: &[String]| {
        ws.iter()
            .all(|w| w.chars().all(|c| c.is_ascii_alphanumeric()))
    };
    let new = match op {
        Op::IdCase(from, to) if *from == style && w.len() >= 2 => render_id(w, *to),
        Op::Replace { from, to } if id_words(to) => {
            let i = find(w, from)?;
            render_id(
                &[&w[..i], to.as_slice(), &w[i + from.len()..]].concat(),
                style,
            )
        }
        Op::Ends { strip, add } if id_words(&add.concat()) => {
            let core = strip_ends(w, strip)?;
            if add.iter().flatten().any(|a| core.contains(a)) {
                return None; // `title_text` + `text_view` is no rename a developer makes
            }
            let typed =
                |end: Option<&String>, i: usize| end.is_some_and(|t| end_tokens()[i].contains(t));
            if (!add[0].is_empty() && typed(core.first(), 0))
                || (!add[1].is_empty() && typed(core.last(), 1))
            {
                return None; // it has a type prefix or suffix already (`_button`)
            }
            render_id(&[&add[0][..], core, &add[1][..]].concat(), style)
        }
        _ => return None,
    };
    let valid = new.starts_with(|c: char| c.is_ascii_alphabetic());
    (valid && new != name).then_some(new)
}

/// The words id rules add at the start and at the end (`btn`, `button`, `container`).
fn end_tokens() -> &'static [BTreeSet<String>; 2] {
    static TOKENS: OnceLock<[BTreeSet<String>; 2]> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let mut out: [BTreeSet<String>; 2] = Default::default();
        for rule in model()
            .rules
            .get(&(Kind::Id, Pattern::PrefixSuffix))
            .into_iter()
            .flatten()
        {
            if let Op::Ends { add, .. } = &rule.op {
                out[0].extend(add[0].iter().cloned());
                out[1].extend(add[1].iter().cloned());
            }
        }
        out
    })
}

/// Where `needle` first occurs in `hay` as a run of whole words.
fn find(hay: &[String], needle: &[String]) -> Option<usize> {
    (!needle.is_empty())
        .then(|| hay.windows(needle.len()).position(|w| w == needle))
        .flatten()
}

/// What is left of `w` once `strip[0]` is taken off its start and `strip[1]` off its
/// end, if it has them and something is left.
fn strip_ends<'a>(w: &'a [String], strip: &[Vec<String>; 2]) -> Option<&'a [String]> {
    let (s, e) = (strip[0].len(), strip[1].len());
    let fits = w.len() > s + e && w.starts_with(&strip[0]) && w.ends_with(&strip[1]);
    fits.then(|| &w[s..w.len() - e])
}

fn apply_text(
    rule: &Rule,
    label: &str,
    toks: &[Token],
    w: &[String],
    style: TextStyle,
) -> Option<String> {
    match &rule.op {
        Op::TextCase(from, to) if *from == style => Some(restyle(label, *from, *to)),
        Op::Punct(p) => apply_punct(*p, label),
        Op::Replace { from, .. } => {
            let i = find(w, from)?;
            let (a, b) = (toks[i].start, toks[i + from.len() - 1].end);
            let capital = label[a..].starts_with(char::is_uppercase);
            let new = fit(&rule.text[0], style, capital || style == TextStyle::Title);
            Some(format!("{}{new}{}", &label[..a], &label[b..]))
        }
        Op::Ends { strip, add } => {
            // Words added to a label are about the word next to them: only where the
            // label has there a word the rule's rows had (`Delete` → `Delete from
            // downloads`, not `Cancel` → `Cancel from downloads`).
            let core = strip_ends(w, strip)?;
            let fits = |i: usize, word: Option<&String>| {
                add[i].is_empty() || word.is_some_and(|x| rule.context[i].contains(x))
            };
            if !fits(0, core.first()) || !fits(1, core.last()) {
                return None;
            }
            apply_ends(label, toks, w, style, strip, &rule.text)
        }
        _ => None,
    }
}

fn apply_punct(p: Punct, label: &str) -> Option<String> {
    let ends_word = label.ends_with(char::is_alphanumeric);
    match p {
        Punct::DotsToEllipsis if label.contains("...") => Some(label.replace("...", "…")),
        Punct::EllipsisToDots if label.contains('…') => Some(label.replace('…', "...")),
        Punct::AddEnd(c) if ends_word => Some(format!("{label}{c}")),
        Punct::DropEnd(c) => label
            .strip_suffix(c)
            .filter(|rest| rest.ends_with(char::is_alphanumeric))
            .map(str::to_string),
        _ => None,
    }
}

/// A label with words stripped from and added at its ends; leading and trailing
/// punctuation (`¿`, `…`, `?`) stays where it was.
fn apply_ends(
    label: &str,
    toks: &[Token],
    w: &[String],
    style: TextStyle,
    strip: &[Vec<String>; 2],
    text: &[String; 2],
) -> Option<String> {
    let core = strip_ends(w, strip)?;
    let grammar = |w: &String| GRAMMAR.contains(&w.as_str());
    if grammar(&core[0]) || grammar(&core[core.len() - 1]) {
        return None; // `Add to cart` without `Add` is no label
    }
    let (first, last) = (strip[0].len(), strip[0].len() + core.len() - 1);
    let head = &label[toks[first].start..toks[first].end];
    let head = if !text[0].is_empty() {
        word_in(head, style, false, true) // no longer the first word
    } else if first > 0 {
        word_in(head, style, true, true) // now the first word
    } else {
        head.to_string()
    };
    let mut out = label[..toks[0].start].to_string();
    if !text[0].is_empty() {
        out.push_str(&fit(&text[0], style, true));
        out.push(' ');
    }
    out.push_str(&head);
    out.push_str(&label[toks[first].end..toks[last].end]);
    if !text[1].is_empty() {
        out.push(' ');
        out.push_str(&fit(&text[1], style, false));
    }
    out.push_str(&label[toks[toks.len() - 1].end..]);
    Some(out)
}

/// Draws a pattern by its observed frequency among those with a candidate that keeps
/// its pattern and takes no name in use, then a candidate by how many apps show its rule.
fn choose(
    seed: u64,
    kind: Kind,
    item: &str,
    cands: Vec<Candidate>,
    taken: &BTreeSet<String>,
) -> Option<Candidate> {
    let name = |s: &str| s.rsplit(":id/").next().unwrap_or(s).to_string();
    let mut by: BTreeMap<Pattern, Vec<Candidate>> = BTreeMap::new();
    for c in cands {
        let kept =
            !taken.contains(&c.new) && classify(kind, &name(item), &name(&c.new)) == c.pattern;
        if kept {
            by.entry(c.pattern).or_default().push(c);
        }
    }
    let mut rng = Rng::new(seed, kind, item);
    let weights: Vec<(Pattern, u64)> = by
        .keys()
        .map(|p| (*p, model().weight.get(&(kind, *p)).copied().unwrap_or(0)))
        .collect();
    let pattern = *rng.pick(&weights)?;
    let mut group = by.remove(&pattern)?;
    let weights: Vec<(usize, u64)> = group
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.weight))
        .collect();
    let i = *rng.pick(&weights)?;
    Some(group.swap_remove(i))
}

/// splitmix64 seeded by an FNV-1a hash of the seed, the kind and the item.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, kind: Kind, item: &str) -> Rng {
        let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
        for b in [kind as u8].iter().chain(item.as_bytes()) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
        Rng(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An item drawn with probability proportional to its weight.
    fn pick<'a, T>(&mut self, items: &'a [(T, u64)]) -> Option<&'a T> {
        let total: u64 = items.iter().map(|(_, w)| w).sum();
        if total == 0 {
            return None;
        }
        let mut r = self.next() % total;
        for (t, w) in items {
            if r < *w {
                return Some(t);
            }
            r -= w;
        }
        None
    }
}
