//! The pattern of one observed change: words are compared, not characters. Both sides are
//! split into lower-case tokens (an id at `_` and camelCase boundaries, a label at
//! anything that is not a letter, digit or inner apostrophe), the common tokens at both
//! ends are set aside, and what is left in the middle decides: nothing but case or
//! separators (`casing`), only punctuation (`punctuation`), tokens added or removed at an
//! end (`prefix_suffix`), a shortened word (`abbreviation`), one or two words swapped
//! (`synonym`), a phrase rewritten (`rewording`), anything else (`other`, which includes
//! spelling fixes). Deterministic and small on purpose: the fixture's pattern column is
//! its output, and the generator re-checks every rename it makes against it.

use super::Kind;

/// The kind of a real change, as the drift suite names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pattern {
    Casing,
    Abbreviation,
    PrefixSuffix,
    Synonym,
    Rewording,
    Punctuation,
    Other,
}

impl Pattern {
    pub const ALL: [Pattern; 7] = [
        Pattern::Casing,
        Pattern::Abbreviation,
        Pattern::PrefixSuffix,
        Pattern::Synonym,
        Pattern::Rewording,
        Pattern::Punctuation,
        Pattern::Other,
    ];

    /// The name in the fixture's `pattern` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Casing => "casing",
            Pattern::Abbreviation => "abbreviation",
            Pattern::PrefixSuffix => "prefix_suffix",
            Pattern::Synonym => "synonym",
            Pattern::Rewording => "rewording",
            Pattern::Punctuation => "punctuation",
            Pattern::Other => "other",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// One word of an id or label: its byte range in the original and its lower-case form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub lower: String,
}

/// The tokens of `s` read as an id (`addToCart`, `add_to_cart`) or as a label; a
/// label's format placeholders (`%s`, `%1$d`) are not words.
pub fn tokens(kind: Kind, s: &str) -> Vec<Token> {
    let masked;
    let s = if kind == Kind::String {
        masked = mask_placeholders(s);
        masked.as_str()
    } else {
        s
    };
    let word_char = |c: char| c.is_alphanumeric() || (kind == Kind::String && c == '\'');
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    for (i, c) in s.char_indices().chain([(s.len(), ' ')]) {
        match (run, word_char(c) && i < s.len()) {
            (None, true) => run = Some(i),
            (Some(start), false) => {
                push_run(kind, s, start, i, &mut out);
                run = None;
            }
            _ => {}
        }
    }
    out
}

/// `s` with each format placeholder blanked out, byte for byte.
fn mask_placeholders(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = s.to_string().into_bytes();
    for (i, _) in s.match_indices('%') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut j = i + 1 + digits;
        if digits > 0 && b.get(j) == Some(&b'$') {
            j += 1;
        }
        if b.get(j).is_some_and(|c| b"sdf".contains(c)) {
            out[i..=j].fill(b' ');
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The format placeholders of a label, in order.
fn placeholders(s: &str) -> Vec<String> {
    let masked = mask_placeholders(s);
    s.char_indices()
        .zip(masked.chars())
        .filter(|((_, c), m)| c != m)
        .map(|((_, c), _)| c)
        .collect::<String>()
        .split('%')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Adds the run `s[start..end]`, split at camelCase boundaries for ids; a label's word
/// keeps its inner apostrophe (`don't`) but not an outer one.
fn push_run(kind: Kind, s: &str, start: usize, end: usize, out: &mut Vec<Token>) {
    let mut push = |a: usize, b: usize| {
        let text = s[a..b].trim_matches('\'');
        if !text.is_empty() {
            let a = a + s[a..b].find(text).unwrap_or(0);
            out.push(Token {
                start: a,
                end: a + text.len(),
                lower: text.to_lowercase(),
            });
        }
    };
    if kind == Kind::String {
        return push(start, end);
    }
    let chars: Vec<(usize, char)> = s[start..end]
        .char_indices()
        .map(|(i, c)| (start + i, c))
        .collect();
    let mut from = start;
    for w in 1..chars.len() {
        let (prev, (i, c)) = (chars[w - 1].1, chars[w]);
        let next_lower = chars.get(w + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase()
            && (prev.is_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_uppercase() && next_lower));
        if boundary {
            push(from, i);
            from = i;
        }
    }
    push(from, end);
}

/// The lower-case tokens alone.
pub fn words(kind: Kind, s: &str) -> Vec<String> {
    tokens(kind, s).into_iter().map(|t| t.lower).collect()
}

/// How many tokens the two lists share at the start and, after those, at the end.
pub fn common_ends(a: &[String], b: &[String]) -> (usize, usize) {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let s = a[p..]
        .iter()
        .rev()
        .zip(b[p..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (p, s)
}

/// The pattern of the change `old` → `new`.
pub fn classify(kind: Kind, old: &str, new: &str) -> Pattern {
    let (a, b) = (words(kind, old), words(kind, new));
    if a == b {
        return same_words(kind, old, new);
    }
    if a.concat() == b.concat() {
        return Pattern::Casing; // "Setup" / "Set up", "toolbar" / "tool_bar"
    }
    let (p, s) = common_ends(&a, &b);
    let (om, nm) = (&a[p..a.len() - s], &b[p..b.len() - s]);
    if om.is_empty() || nm.is_empty() {
        return if p == 0 || s == 0 {
            Pattern::PrefixSuffix
        } else {
            phrase(kind)
        };
    }
    if om.len() == 1 && nm.len() == 1 && same_word(&om[0], &nm[0]) {
        return Pattern::Other; // a spelling fix or another form of the word
    }
    if is_abbreviation(om, nm) || is_abbreviation(nm, om) {
        return Pattern::Abbreviation;
    }
    if om.len() <= 2 && nm.len() <= 2 && (p + s > 0 || (om.len() == 1 && nm.len() == 1)) {
        return Pattern::Synonym;
    }
    if kind == Kind::Id && p == 0 && s == 0 && core_split(om, nm).is_some() {
        return Pattern::PrefixSuffix; // "txtvTitle" → "titleLabel", "btn_add" → "addButton"
    }
    phrase(kind)
}

fn phrase(kind: Kind) -> Pattern {
    match kind {
        Kind::String => Pattern::Rewording,
        Kind::Id => Pattern::Other,
    }
}

/// The same words: for an id that is a case or separator change; for a label, a change
/// of its letters' case is casing, of its placeholders other, and anything else
/// punctuation.
fn same_words(kind: Kind, old: &str, new: &str) -> Pattern {
    let letters = |s: &str| {
        let s = mask_placeholders(s);
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
    };
    match kind {
        Kind::Id => Pattern::Casing,
        Kind::String if placeholders(old) != placeholders(new) => Pattern::Other,
        Kind::String if letters(old) == letters(new) => Pattern::Punctuation,
        Kind::String => Pattern::Casing,
    }
}

/// `short` abbreviates `long`: aligned words where each differing one is shortened
/// (`btn`/`button`, `msg`/`message`), or one word made of the other side's words'
/// initials and letters (`tv`/`text view`, `etxt`/`edit text`).
fn is_abbreviation(short: &[String], long: &[String]) -> bool {
    if short.len() == long.len() {
        return short
            .iter()
            .zip(long)
            .all(|(s, l)| s == l || shortens(s, l));
    }
    if short.len() != 1 || long.len() < 2 {
        return false;
    }
    let s = &short[0];
    let initials: String = long.iter().filter_map(|w| w.chars().next()).collect();
    s.chars().all(char::is_alphabetic)
        && s.len() * 2 <= long.concat().len()
        && subsequence(&initials, s)
        && subsequence(s, &long.concat())
}

/// `s` is `l` shortened: the same first letter, at least two letters, at least two fewer,
/// and its letters appear in `l` in order.
fn shortens(s: &str, l: &str) -> bool {
    s.len() >= 2
        && l.len() >= s.len() + 2
        && s.chars().all(char::is_alphabetic)
        && s.chars().next() == l.chars().next()
        && subsequence(s, l)
}

/// Every character of `needle` occurs in `hay` in the same order.
fn subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.chars();
    needle.chars().all(|c| hay.any(|h| h == c))
}

/// Endings that make another form of the same word.
const INFLECTIONS: [&str; 14] = [
    "s", "es", "ed", "d", "ing", "ion", "ions", "er", "ers", "or", "ly", "al", "ity", "ment",
];

/// The same word in another spelling (`intervall`/`interval`, `favourite`/`favorite`:
/// close in edit distance) or form (`connect`/`connection`, `download`/`downloaded`).
fn same_word(a: &str, b: &str) -> bool {
    let (s, l) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let d = levenshtein(a, b);
    let inflected = l
        .strip_prefix(s)
        .is_some_and(|rest| INFLECTIONS.contains(&rest));
    inflected || d <= 1 || (d <= 2 && s.len() >= 6)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A shared run of tokens with at most two changed on either side of it, as
/// `(start in a, start in b, length)`: the longest such run.
pub fn core_split(a: &[String], b: &[String]) -> Option<(usize, usize, usize)> {
    let mut best: Option<(usize, usize, usize)> = None;
    for i in 0..a.len() {
        for j in 0..b.len() {
            let n = a[i..]
                .iter()
                .zip(&b[j..])
                .take_while(|(x, y)| x == y)
                .count();
            let fits = n > 0 && i <= 2 && j <= 2 && a.len() - i - n <= 2 && b.len() - j - n <= 2;
            if fits && best.is_none_or(|(_, _, m)| n > m) {
                best = Some((i, j, n));
            }
        }
    }
    best
}
