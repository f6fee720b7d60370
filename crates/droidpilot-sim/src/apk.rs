//! The virtual phone's apps as APKs: each app's string resources, English in `values/`
//! and German in `values-de/` (the phone's translation, `locale::GERMAN`), written as a
//! real `resources.arsc` with the `arsc` crate and stored in a `base.apk` zip, which the
//! simulated adbd serves at the path `pm path` names. `Device::app_strings` reads that
//! same table back with the product's reader (`droidpilot_core::appstrings`), so the
//! virtual phone answers what a real phone's APK would.
//!
//! Which strings an app ships: those its own source file (`apps/NAME.rs`) spells as a
//! literal, plus the phone's shared strings (dialogs, toolbars, system chrome), which no
//! app spells itself and every app ships, as a real app ships its libraries' strings.
//! Keys are the English words in snake case (`Add to cart` → `add_to_cart`).

use std::collections::BTreeMap;
use std::io::Write as _;

use arsc::{
    Arsc, Config, Package, ResourceEntry, ResourceValue, Resources, Spec, Specs, StringPool, Type,
    Value,
};

use crate::locale::{GERMAN, GERMAN_AROUND};
use crate::state::AppId;

/// The source of an app's screens, where its own strings are spelled.
fn source(app: AppId) -> &'static str {
    match app {
        AppId::Browser => include_str!("apps/browser.rs"),
        AppId::Clock => include_str!("apps/clock.rs"),
        AppId::Contacts => include_str!("apps/contacts.rs"),
        AppId::Messages => include_str!("apps/messages.rs"),
        AppId::Notes => include_str!("apps/notes.rs"),
        AppId::Settings => include_str!("apps/settings.rs"),
        AppId::Shop => include_str!("apps/shop.rs"),
    }
}

fn spells(app: AppId, en: &str) -> bool {
    source(app).contains(&format!("\"{en}\""))
}

/// Whether `app`'s source builds a label around an argument with this English prefix
/// and suffix (`format!("Cart, {n} items")`).
fn formats(app: AppId, pre: &str, suf: &str) -> bool {
    let src = source(app);
    match pre.is_empty() {
        false => src.contains(&format!("\"{pre}{{")),
        true => src.contains(&format!("}}{suf}\"")),
    }
}

/// The English and German strings `app` ships, one pair per key: the phone's exact
/// translations, and its labels built around an argument as Android format strings
/// (`Cart, %1$s items` / `Warenkorb, %1$s Artikel`), as an app declares them for
/// `getString(id, args…)`.
pub fn strings(app: AppId) -> Vec<(String, String, String)> {
    let apps = <AppId as strum::VariantArray>::VARIANTS;
    let exact = GERMAN.iter().map(|(en, de)| {
        let own = spells(app, en);
        let shared = !apps.iter().any(|a| spells(*a, en));
        (own || shared).then(|| (en.to_string(), de.to_string()))
    });
    let around = GERMAN_AROUND.iter().map(|(pre, suf, dpre, dsuf)| {
        let own = formats(app, pre, suf);
        let shared = !apps.iter().any(|a| formats(*a, pre, suf));
        (own || shared).then(|| (format!("{pre}%1$s{suf}"), format!("{dpre}%1$s{dsuf}")))
    });
    let mut keys: BTreeMap<String, u32> = BTreeMap::new();
    let mut out = Vec::new();
    for (en, de) in exact.chain(around).flatten() {
        let mut key = key_of(&en.replace("%1$s", ""));
        let n = keys.entry(key.clone()).or_default();
        *n += 1;
        if *n > 1 {
            key = format!("{key}_{n}");
        }
        out.push((key, en, de));
    }
    out
}

/// `Add to cart` → `add_to_cart`.
fn key_of(en: &str) -> String {
    let words: Vec<String> = en
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_ascii_lowercase)
        .collect();
    match words.is_empty() {
        true => "symbol".into(),
        false => words.join("_"),
    }
}

/// A `ResTable_config` naming only a language (`None`: the default values).
fn config_id(lang: Option<&str>) -> Vec<u8> {
    let mut id = vec![0u8; 64];
    id[..4].copy_from_slice(&64u32.to_le_bytes());
    if let Some(l) = lang {
        id[8..10].copy_from_slice(l.as_bytes());
    }
    id
}

fn pool(strings: Vec<String>) -> StringPool {
    StringPool {
        flags: 0x100, // UTF-8, as AAPT2 writes
        strings,
        styles: Vec::new(),
    }
}

/// One `string` type chunk: every key's value at `first + i` in the global pool.
fn config(lang: Option<&str>, n: usize, first: usize) -> Config {
    let resources = (0..n)
        .map(|i| ResourceEntry {
            flags: 0,
            name_index: i,
            value: ResourceValue::Plain(Value {
                size: 8,
                zero: 0,
                r#type: 0x03,
                data_index: first + i,
            }),
            spec_id: i,
        })
        .collect();
    Config {
        type_id: 1,
        res0: 0,
        res1: 0,
        id: config_id(lang),
        resources: Resources {
            resources,
            missing_entries: 0,
        },
        header_size: 20 + 64,
    }
}

/// `app`'s `resources.arsc`.
pub fn resources_arsc(app: AppId) -> Vec<u8> {
    let rows = strings(app);
    let n = rows.len();
    let values = rows
        .iter()
        .map(|r| r.1.clone())
        .chain(rows.iter().map(|r| r.2.clone()))
        .collect();
    let table = Arsc {
        global_string_pool: pool(values),
        packages: vec![Package {
            id: 0x7f,
            name: app.package().into(),
            type_names: pool(vec!["string".into()]),
            last_public_type: 1,
            types: vec![Type {
                id: 1,
                specs: Some(Specs {
                    type_id: 1,
                    res0: 0,
                    res1: 0,
                    specs: (0..n).map(|i| Spec::new(0x4, i)).collect(), // varies by locale
                    header_size: 16,
                }),
                configs: vec![config(None, n, 0), config(Some("de"), n, n)],
            }],
            key_names: pool(rows.into_iter().map(|r| r.0).collect()),
            last_public_key: n as u32,
        }],
    };
    let mut out = Vec::new();
    arsc::write_to(&table, &mut out).expect("writing to memory");
    out
}

/// `app`'s `base.apk`: a zip holding its `resources.arsc`, stored uncompressed as AAPT2
/// stores it.
pub fn base_apk(app: AppId) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("resources.arsc", stored)
        .expect("zip in memory");
    zip.write_all(&resources_arsc(app)).expect("zip in memory");
    zip.finish().expect("zip in memory").into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use droidpilot_core::appstrings::AppStrings;

    /// The table the `arsc` crate writes reads back, per locale, with the product's
    /// reader: the shop ships its own strings and the shared ones, not the clock's.
    #[test]
    fn each_app_ships_its_own_and_the_shared_strings_in_both_languages() {
        let s = AppStrings::from_arsc("com.droidpilot.shop", &resources_arsc(AppId::Shop)).unwrap();
        let en = &s.locales[""];
        let de = &s.locales["de"];
        assert_eq!(en["add_to_cart"], "Add to cart");
        assert_eq!(de["add_to_cart"], "In den Warenkorb");
        assert_eq!(de["navigate_up"], "Nach oben");
        assert!(
            !en.values().any(|v| v == "Add alarm"),
            "the clock's own string"
        );
        let t = s.translate("Add to cart", "de-DE", false).unwrap();
        assert_eq!(t.value, "In den Warenkorb");
        let clock = AppStrings::from_arsc("c", &resources_arsc(AppId::Clock)).unwrap();
        assert!(clock.locales[""].values().any(|v| v == "Add alarm"));
        // A label built around a number ships as a format string.
        assert_eq!(en["cart_items"], "Cart, %1$s items");
        assert_eq!(de["cart_items"], "Warenkorb, %1$s Artikel");
        let t = s.translate("Cart, 1 items", "de-DE", false).unwrap();
        assert_eq!(t.value, "Warenkorb, 1 Artikel");
        assert!(
            !clock.locales[""].contains_key("cart_items"),
            "the shop's own"
        );
    }
}
