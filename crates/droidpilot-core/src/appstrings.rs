//! An installed app's string resources (`Device::app_strings`), read from the
//! `resources.arsc` its APK ships: every `<string>` per locale, key → value, the default
//! locale being the `values/` folder's. Replay uses them to find a label a script names in
//! one language on a phone that shows another: the recorded text is a value of some keys,
//! and those keys' values in the phone's locale are what the screen shows
//! (`AppStrings::translate`). Only exact values of resources count, never a guess; a
//! value with placeholders counts with its arguments filled in (`format`: "Cart, 2 items"
//! is `Cart, %1$d items` with 2).
//!
//! The reader is written here rather than taken from the `arsc` crate (which the virtual
//! phone uses to write its APKs): the bytes come from a phone, and that crate panics on
//! chunk types it does not know (overlayable, staged aliases: every current AAPT2 build),
//! reads entries in file order instead of by their offsets (AAPT2 shares entries), knows
//! no sparse or 16-bit-offset type chunks (Android 8 and 13), and allocates whatever a
//! count says. This one reads only string resources, checks every offset and count
//! against the bytes it has, and fails with an error instead of panicking.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

mod format;
use format::Format;

/// The locale key of the default values (`res/values/`).
pub const DEFAULT_LOCALE: &str = "";

/// Every string resource of one installed app.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppStrings {
    /// The app's package.
    pub package: String,
    /// The installed version's `versionCode`, when the phone said it.
    pub version_code: Option<String>,
    /// Locale (`""` for the default `values/`, else a BCP 47 tag such as `de` or `de-DE`)
    /// → resource key → value.
    pub locales: BTreeMap<String, BTreeMap<String, String>>,
}

/// What `AppStrings::translate` found: the resource key whose value the text is, and that
/// key's value in the phone's locale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Translation {
    /// The resource key(s) the text is a value of (all with the same current value).
    pub keys: Vec<String>,
    /// The locale the text was found in (`""` for the default values).
    pub from_locale: String,
    /// The value the phone shows instead.
    pub value: String,
}

impl AppStrings {
    /// The values the phone shows in `locale` (a BCP 47 tag): Android's resolution, the
    /// exact locale's value, else its language's, else the default.
    pub fn value_in(&self, key: &str, locale: &str) -> Option<&str> {
        let lang = locale.split(['-', '_']).next().unwrap_or(locale);
        [locale, lang, DEFAULT_LOCALE]
            .iter()
            .find_map(|l| self.locales.get(*l).and_then(|m| m.get(key)))
            .map(String::as_str)
    }

    /// The text a script recorded, as the phone shows it in `locale`: `text` must be the
    /// exact value of a string resource in some locale (`ignore_case`: compared as the
    /// caller's matcher compares); the keys it is a value of must all have one value in
    /// `locale`, different from `text`. Ambiguous or unknown: None.
    pub fn translate(&self, text: &str, locale: &str, ignore_case: bool) -> Option<Translation> {
        let same = |v: &str| match ignore_case {
            true => v.to_lowercase() == text.to_lowercase(),
            false => v == text,
        };
        let mut keys = BTreeSet::new();
        let mut from = None;
        for (loc, map) in &self.locales {
            for (k, v) in map {
                if same(v) {
                    keys.insert(k.clone());
                    from.get_or_insert_with(|| loc.clone());
                }
            }
        }
        if keys.is_empty() {
            return self.translate_formatted(text, locale, ignore_case);
        }
        let values: BTreeSet<&str> = keys
            .iter()
            .filter_map(|k| self.value_in(k, locale))
            .collect();
        let [value] = values.into_iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        if same(value) {
            return None;
        }
        Some(Translation {
            keys: keys.into_iter().collect(),
            from_locale: from?,
            value: value.to_string(),
        })
    }

    /// `translate` for a label built from a format string (`Cart, %1$d items`): `text` is
    /// some resource's value with its arguments filled in (`format::Format::read`), and
    /// that key's value in `locale` filled with the same arguments is what the phone
    /// shows. Every reading must give one and the same text.
    fn translate_formatted(
        &self,
        text: &str,
        locale: &str,
        ignore_case: bool,
    ) -> Option<Translation> {
        let mut keys = BTreeSet::new();
        let mut values = BTreeSet::new();
        let mut from = None;
        for (loc, map) in &self.locales {
            for (k, v) in map {
                let Some(args) = Format::parse(v).and_then(|f| f.read(text, ignore_case)) else {
                    continue;
                };
                let there = self.value_in(k, locale).and_then(Format::parse);
                let Some(filled) = there.and_then(|f| f.fill(&args)) else {
                    continue;
                };
                values.insert(filled);
                keys.insert(k.clone());
                from.get_or_insert_with(|| loc.clone());
            }
        }
        if values.len() != 1 {
            return None;
        }
        let value = values.into_iter().next()?;
        let unchanged = match ignore_case {
            true => value.to_lowercase() == text.to_lowercase(),
            false => value == text,
        };
        (!unchanged).then(|| Translation {
            keys: keys.into_iter().collect(),
            from_locale: from.unwrap_or_default(),
            value,
        })
    }

    /// Reads the string resources of a `resources.arsc` (see the module doc).
    pub fn from_arsc(package: &str, bytes: &[u8]) -> Result<AppStrings, ArscError> {
        let locales = read_table(bytes)?;
        Ok(AppStrings {
            package: package.to_string(),
            version_code: None,
            locales,
        })
    }
}

/// A `resources.arsc` this reader could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resources.arsc: {0}")]
pub struct ArscError(pub String);

fn bad(what: impl Into<String>) -> ArscError {
    ArscError(what.into())
}

const RES_TABLE: u16 = 0x0002;
const RES_STRING_POOL: u16 = 0x0001;
const RES_PACKAGE: u16 = 0x0200;
const RES_TYPE: u16 = 0x0201;
const TYPE_STRING: u8 = 0x03;
const FLAG_COMPLEX: u16 = 0x0001;
const FLAG_COMPACT: u16 = 0x0008;
const TYPE_SPARSE: u8 = 0x01;
const TYPE_OFFSET16: u8 = 0x02;
const NO_ENTRY: u32 = u32::MAX;

/// Little-endian reads that fail instead of panicking.
fn u16_at(b: &[u8], at: usize) -> Result<u16, ArscError> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad(format!("truncated at {at}")))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ArscError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad(format!("truncated at {at}")))
}

/// One chunk: its type, header size and the bytes it spans.
struct Chunk<'a> {
    kind: u16,
    header: usize,
    bytes: &'a [u8],
}

fn chunk(b: &[u8], at: usize) -> Result<Chunk<'_>, ArscError> {
    let kind = u16_at(b, at)?;
    let header = u16_at(b, at + 2)? as usize;
    let size = u32_at(b, at + 4)? as usize;
    if size < 8 || header < 8 || header > size {
        return Err(bad(format!(
            "chunk at {at} has size {size}, header {header}"
        )));
    }
    let bytes = b
        .get(at..at.saturating_add(size))
        .ok_or_else(|| bad(format!("chunk at {at} runs past the end")))?;
    Ok(Chunk {
        kind,
        header,
        bytes,
    })
}

/// The chunks one after another from `at` to the end of `b`.
fn chunks(b: &[u8], mut at: usize) -> impl Iterator<Item = Result<Chunk<'_>, ArscError>> {
    std::iter::from_fn(move || {
        if at + 8 > b.len() {
            return None;
        }
        let c = chunk(b, at);
        at = match &c {
            Ok(c) => at + c.bytes.len(),
            Err(_) => b.len(),
        };
        Some(c)
    })
}

type Locales = BTreeMap<String, BTreeMap<String, String>>;

fn read_table(b: &[u8]) -> Result<Locales, ArscError> {
    let table = chunk(b, 0)?;
    if table.kind != RES_TABLE {
        return Err(bad("not a resource table"));
    }
    let mut values = None;
    let mut out = Locales::new();
    for c in chunks(table.bytes, table.header) {
        let c = c?;
        match c.kind {
            RES_STRING_POOL if values.is_none() => values = Some(Pool::read(&c)?),
            RES_PACKAGE => {
                let pool = values
                    .as_ref()
                    .ok_or_else(|| bad("package before strings"))?;
                read_package(&c, pool, &mut out)?;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// A string pool, decoded on demand.
struct Pool<'a> {
    bytes: &'a [u8],
    count: usize,
    offsets: usize,
    start: usize,
    utf8: bool,
}

impl<'a> Pool<'a> {
    fn read(c: &Chunk<'a>) -> Result<Pool<'a>, ArscError> {
        let b = c.bytes;
        let count = u32_at(b, 8)? as usize;
        let flags = u32_at(b, 16)?;
        let start = u32_at(b, 20)? as usize;
        if count.saturating_mul(4).saturating_add(c.header) > b.len() || start > b.len() {
            return Err(bad("string pool larger than its chunk"));
        }
        Ok(Pool {
            bytes: b,
            count,
            offsets: c.header,
            start,
            utf8: flags & 0x100 != 0,
        })
    }

    fn get(&self, i: usize) -> Result<String, ArscError> {
        if i >= self.count {
            return Err(bad(format!("string {i} of {}", self.count)));
        }
        let at = self.start + u32_at(self.bytes, self.offsets + 4 * i)? as usize;
        match self.utf8 {
            true => self.utf8_at(at),
            false => self.utf16_at(at),
        }
    }

    fn utf8_at(&self, at: usize) -> Result<String, ArscError> {
        let b = self.bytes;
        let len = |at: usize| -> Result<(usize, usize), ArscError> {
            let first = *b.get(at).ok_or_else(|| bad("truncated string"))? as usize;
            match first & 0x80 {
                0 => Ok((first, 1)),
                _ => {
                    let second = *b.get(at + 1).ok_or_else(|| bad("truncated string"))?;
                    Ok((((first & 0x7f) << 8) | second as usize, 2))
                }
            }
        };
        let (_, n1) = len(at)?;
        let (bytes, n2) = len(at + n1)?;
        let s = b
            .get(at + n1 + n2..at + n1 + n2 + bytes)
            .ok_or_else(|| bad("truncated string"))?;
        Ok(String::from_utf8_lossy(s).into_owned())
    }

    fn utf16_at(&self, at: usize) -> Result<String, ArscError> {
        let first = u16_at(self.bytes, at)? as usize;
        let (units, skip) = match first & 0x8000 {
            0 => (first, 2),
            _ => (
                ((first & 0x7fff) << 16) | u16_at(self.bytes, at + 2)? as usize,
                4,
            ),
        };
        let s = self
            .bytes
            .get(at + skip..at + skip + units.saturating_mul(2))
            .ok_or_else(|| bad("truncated string"))?;
        let units: Vec<u16> = s
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect();
        Ok(String::from_utf16_lossy(&units))
    }
}

/// A package chunk's type names, key names, and its `string` type chunks.
fn read_package(c: &Chunk, values: &Pool, out: &mut Locales) -> Result<(), ArscError> {
    let b = c.bytes;
    let type_names = Pool::read(&chunk(b, u32_at(b, 268)? as usize)?)?;
    let keys = Pool::read(&chunk(b, u32_at(b, 276)? as usize)?)?;
    let string_type = (0..type_names.count)
        .find(|&i| type_names.get(i).is_ok_and(|n| n == "string"))
        .map(|i| i + 1);
    let Some(string_type) = string_type else {
        return Ok(());
    };
    for t in chunks(b, c.header) {
        let t = t?;
        if t.kind == RES_TYPE && t.bytes.get(8).map(|&id| id as usize) == Some(string_type) {
            read_type(&t, values, &keys, out)?;
        }
    }
    Ok(())
}

/// The locale a type chunk's `ResTable_config` names: `de`, `de-DE`, or the default.
fn config_locale(b: &[u8]) -> String {
    let at = 20;
    let letters = |s: Option<&[u8]>| match s {
        Some(&[a, b]) if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            Some(format!("{}{}", a as char, b as char))
        }
        _ => None,
    };
    let lang = letters(b.get(at + 8..at + 10));
    let country = letters(b.get(at + 10..at + 12));
    match (lang, country) {
        (Some(l), Some(c)) => format!("{l}-{}", c.to_ascii_uppercase()),
        (Some(l), None) => l,
        _ => DEFAULT_LOCALE.to_string(),
    }
}

/// The entries of one `string` type chunk: (entry index, its offset from the entries).
fn entry_offsets(t: &Chunk) -> Result<Vec<(usize, usize)>, ArscError> {
    let b = t.bytes;
    let flags = *b.get(9).ok_or_else(|| bad("truncated type chunk"))?;
    let count = u32_at(b, 12)? as usize;
    let at = t.header;
    let per = match flags & (TYPE_SPARSE | TYPE_OFFSET16) {
        0 => 4,
        _ => 2 + (flags & TYPE_SPARSE) as usize * 2,
    };
    if count.saturating_mul(per).saturating_add(at) > b.len() {
        return Err(bad("type chunk lists more entries than it holds"));
    }
    let mut out = Vec::new();
    for i in 0..count {
        let e = at + i * per;
        if flags & TYPE_SPARSE != 0 {
            out.push((u16_at(b, e)? as usize, u16_at(b, e + 2)? as usize * 4));
        } else if flags & TYPE_OFFSET16 != 0 {
            match u16_at(b, e)? {
                0xffff => {}
                o => out.push((i, o as usize * 4)),
            }
        } else {
            match u32_at(b, e)? {
                NO_ENTRY => {}
                o => out.push((i, o as usize)),
            }
        }
    }
    Ok(out)
}

fn read_type(t: &Chunk, values: &Pool, keys: &Pool, out: &mut Locales) -> Result<(), ArscError> {
    let b = t.bytes;
    let entries = u32_at(b, 16)? as usize;
    let locale = config_locale(b);
    for (_, offset) in entry_offsets(t)? {
        let at = entries.saturating_add(offset);
        let flags = u16_at(b, at + 2)?;
        let (key, kind, data) = if flags & FLAG_COMPACT != 0 {
            (
                u16_at(b, at)? as usize,
                (flags >> 8) as u8,
                u32_at(b, at + 4)?,
            )
        } else if flags & FLAG_COMPLEX != 0 {
            continue; // plurals and arrays are bags: not one label
        } else {
            (
                u32_at(b, at + 4)? as usize,
                b.get(at + 11).copied().unwrap_or(0),
                u32_at(b, at + 12)?,
            )
        };
        if kind != TYPE_STRING {
            continue;
        }
        let (key, value) = (keys.get(key)?, values.get(data as usize)?);
        out.entry(locale.clone())
            .or_default()
            .entry(key)
            .or_insert(value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(rows: &[(&str, &str, &str)]) -> AppStrings {
        let mut s = AppStrings::default();
        for (loc, k, v) in rows {
            s.locales
                .entry(loc.to_string())
                .or_default()
                .insert(k.to_string(), v.to_string());
        }
        s
    }

    #[test]
    fn a_value_translates_through_its_key_to_the_phones_locale() {
        let s = strings(&[
            ("", "add_to_cart", "Add to cart"),
            ("de", "add_to_cart", "In den Warenkorb"),
            ("", "ok", "OK"),
        ]);
        let t = s.translate("Add to cart", "de-DE", false).unwrap();
        assert_eq!(t.keys, ["add_to_cart"]);
        assert_eq!(t.value, "In den Warenkorb");
        assert_eq!(t.from_locale, "");
        // Exact values only; case as the caller's matcher compares.
        assert_eq!(s.translate("Add to car", "de-DE", false), None);
        assert_eq!(s.translate("add to cart", "de-DE", false), None);
        assert!(s.translate("add to cart", "de-DE", true).is_some());
        // German back to English, and nothing to translate where the value is the same.
        let back = s.translate("In den Warenkorb", "en-US", false).unwrap();
        assert_eq!(back.value, "Add to cart");
        assert_eq!(s.translate("OK", "de-DE", false), None);
    }

    #[test]
    fn a_label_built_from_a_format_string_translates_with_its_arguments() {
        let s = strings(&[
            ("", "cart_items", "Cart, %1$d items"),
            ("de", "cart_items", "Warenkorb, %1$d Artikel"),
            ("", "send_to", "Send to %s"),
            ("de", "send_to", "An %s senden"),
        ]);
        let t = s.translate("Cart, 2 items", "de-DE", false).unwrap();
        assert_eq!(t.keys, ["cart_items"]);
        assert_eq!(t.value, "Warenkorb, 2 Artikel");
        let t = s.translate("Send to Ada Byron", "de", false).unwrap();
        assert_eq!(t.value, "An Ada Byron senden");
        assert_eq!(
            s.translate("Cart, 2 items", "en-US", false),
            None,
            "same text"
        );
        assert_eq!(s.translate("Basket, 2 items", "de-DE", false), None);
        // Two formats that read the text differently in German: no guess.
        let both = strings(&[
            ("", "a", "Cart, %1$d items"),
            ("de", "a", "Warenkorb, %1$d Artikel"),
            ("", "b", "Cart, %1$s items"),
            ("de", "b", "Korb, %1$s Stück"),
        ]);
        assert_eq!(both.translate("Cart, 2 items", "de-DE", false), None);
    }

    #[test]
    fn a_value_of_keys_that_differ_in_the_phones_locale_is_not_used() {
        let s = strings(&[
            ("", "close_door", "Close"),
            ("", "close_dialog", "Close"),
            ("de", "close_door", "Schließen"),
            ("de", "close_dialog", "Zumachen"),
            ("", "save", "Save"),
            ("", "save_note", "Save"),
            ("de", "save", "Speichern"),
            ("de", "save_note", "Speichern"),
        ]);
        assert_eq!(s.translate("Close", "de", false), None);
        let t = s.translate("Save", "de", false).unwrap();
        assert_eq!((t.keys.len(), t.value.as_str()), (2, "Speichern"));
    }

    #[test]
    fn broken_tables_are_errors_not_panics() {
        for bytes in [
            &[][..],
            &[2, 0, 12, 0, 255, 255, 255, 255, 1, 0, 0, 0][..],
            &[
                2, 0, 12, 0, 20, 0, 0, 0, 1, 0, 0, 0, 1, 0, 28, 0, 8, 0, 0, 0,
            ][..],
        ] {
            let _ = AppStrings::from_arsc("p", bytes);
        }
        assert!(AppStrings::from_arsc("p", b"PK\x03\x04").is_err());
    }
}
