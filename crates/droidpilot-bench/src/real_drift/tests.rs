use std::collections::BTreeSet;

use super::*;

/// Ids and labels of the kind the virtual phone shows.
const IDS: [&str; 14] = [
    "add_to_cart_button",
    "search_button",
    "delete_button",
    "title",
    "toolbar",
    "recycler_view",
    "message_text",
    "compose_message_text",
    "send_message_button_icon",
    "empty_message",
    "settings_button",
    "com.example.shop:id/checkout_button",
    "android:id/home",
    "android:id/button1",
];
const STRINGS: [&str; 16] = [
    "Add to cart",
    "Delete",
    "Delete alarm?",
    "Cancel",
    "Save",
    "Done",
    "Settings",
    "Search…",
    "Loading...",
    "Send message",
    "New contact",
    "Edit note",
    "Sign in",
    "Mark all as read",
    "12:30",
    "Turn on Bluetooth",
];

#[test]
fn the_fixture_has_twenty_apps_and_hundreds_of_pairs_of_both_kinds() {
    let s = stats();
    assert!(s.apps.len() >= 20, "{} apps", s.apps.len());
    assert!(s.total >= 300, "{} pairs", s.total);
    let ids: usize = s.apps.values().map(|a| a.ids).sum();
    let strings: usize = s.apps.values().map(|a| a.strings).sum();
    assert!(ids >= 150 && strings >= 150, "{ids} ids, {strings} strings");
}

#[test]
fn every_row_names_its_repository_commit_and_file_and_is_a_change() {
    for p in pairs() {
        let repo_ok = p.repo.split('/').filter(|s| !s.is_empty()).count() == 2;
        assert!(repo_ok, "{p:?}");
        let hex = p.commit.len() == 40 && p.commit.chars().all(|c| c.is_ascii_hexdigit());
        assert!(hex, "{p:?}");
        assert!(p.path.ends_with(".xml"), "{p:?}");
        let layout_or_values = match p.kind {
            Kind::Id => p.path.contains("/layout"),
            Kind::String => p.path.ends_with("values/strings.xml"),
        };
        assert!(layout_or_values, "{p:?}");
        assert!(
            !p.old.is_empty() && !p.new.is_empty() && p.old != p.new,
            "{p:?}"
        );
    }
}

/// The pattern column is the classifier's output. After a classifier change, rewrite it
/// with `DRIFT_REAL_BLESS=1 cargo test -p droidpilot-bench --lib real_drift`.
#[test]
fn the_pattern_column_is_the_classifiers_output() {
    let wrong: Vec<&Pair> = pairs()
        .iter()
        .filter(|p| classify(p.kind, &p.old, &p.new) != p.pattern)
        .collect();
    if std::env::var_os("DRIFT_REAL_BLESS").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/drift-real/pairs.tsv"
        );
        let mut out = format!("{HEADER}\n");
        for p in pairs() {
            let pattern = classify(p.kind, &p.old, &p.new).as_str();
            let cols = [
                &p.app,
                &p.repo,
                &p.commit,
                &p.path,
                p.kind.as_str(),
                &p.old,
                &p.new,
                pattern,
            ];
            out.push_str(&cols.join("\t"));
            out.push('\n');
        }
        std::fs::write(path, out).expect("pairs.tsv is writable");
        return;
    }
    assert!(
        wrong.is_empty(),
        "{} rows, the first {:?}",
        wrong.len(),
        wrong.first()
    );
}

/// Hand-picked rows of the fixture, one or more per pattern, as a reader would label them.
#[test]
fn the_classifier_names_hand_picked_real_changes() {
    let cases = [
        (
            Kind::String,
            "Select Theme",
            "Select theme",
            Pattern::Casing,
        ),
        (Kind::String, "Podcasts", "PODCASTS", Pattern::Casing),
        (
            Kind::Id,
            "testServerButton",
            "test_server_button",
            Pattern::Casing,
        ),
        (Kind::String, "Loading...", "Loading…", Pattern::Punctuation),
        (
            Kind::Id,
            "button_add_fingerprint",
            "button_add_biometric",
            Pattern::Synonym,
        ),
        (Kind::String, "Never", "No", Pattern::Synonym),
        (
            Kind::String,
            "Feed URL",
            "Podcast feed URL",
            Pattern::PrefixSuffix,
        ),
        (
            Kind::Id,
            "timeSetup",
            "timeSetupContainer",
            Pattern::PrefixSuffix,
        ),
        (
            Kind::Id,
            "btn_search_itunes",
            "searchItunesButton",
            Pattern::PrefixSuffix,
        ),
        (
            Kind::String,
            "Continue playback",
            "Continue audio playback",
            Pattern::Rewording,
        ),
        (
            Kind::String,
            "Error exporting",
            "Could not export",
            Pattern::Rewording,
        ),
        (
            Kind::Id,
            "DeckPickerCompletitionAll",
            "DeckPickerCompletionAll",
            Pattern::Other,
        ),
        (Kind::Id, "imageView1", "imgvCover", Pattern::Other),
    ];
    for (kind, old, new, want) in cases {
        let row = pairs()
            .iter()
            .find(|p| p.kind == kind && p.old == old && p.new == new);
        assert!(row.is_some(), "{old} → {new} is not a row of the fixture");
        assert_eq!(classify(kind, old, new), want, "{old} → {new}");
    }
}

/// Abbreviations are rarer in the data; the rule itself, on the kinds it names.
#[test]
fn the_classifier_knows_abbreviations_both_ways() {
    let cases = [
        (Kind::Id, "send_btn", "send_button"),
        (Kind::Id, "message_text", "msg_text"),
        (Kind::Id, "title_tv", "title_text_view"),
        (Kind::String, "Preferences", "Prefs"),
    ];
    for (kind, old, new) in cases {
        assert_eq!(
            classify(kind, old, new),
            Pattern::Abbreviation,
            "{old} → {new}"
        );
    }
    let s = stats();
    let seen = s
        .patterns
        .iter()
        .filter(|((_, p), _)| *p == Pattern::Abbreviation);
    assert!(seen.map(|(_, n)| n).sum::<usize>() > 0);
}

#[test]
fn the_same_seed_gives_the_same_map_and_other_seeds_other_maps() {
    let a = rename_map(7, &IDS, &STRINGS);
    assert_eq!(a, rename_map(7, &IDS, &STRINGS));
    let mut reversed = IDS;
    reversed.reverse();
    assert_eq!(
        a.0,
        rename_map(7, &reversed, &STRINGS).0,
        "the order of the input does not matter"
    );
    assert!(!a.0.is_empty() && !a.1.is_empty(), "{a:?}");
    let others: BTreeSet<_> = (0..8)
        .map(|seed| rename_map(seed, &IDS, &STRINGS))
        .collect();
    assert!(others.len() > 1, "eight seeds gave one map");
}

#[test]
fn every_rename_is_a_transformation_of_an_observed_kind() {
    let s = stats();
    for seed in 0..20 {
        for (kind, items) in [(Kind::Id, &IDS[..]), (Kind::String, &STRINGS[..])] {
            for r in renames(seed, kind, items) {
                let name = |x: &str| x.rsplit(":id/").next().unwrap_or(x).to_string();
                assert_eq!(
                    classify(kind, &name(&r.old), &name(&r.new)),
                    r.pattern,
                    "{r:?}"
                );
                assert_ne!(r.pattern, Pattern::Other, "{r:?}");
                assert!(
                    s.patterns.get(&(kind, r.pattern)).is_some_and(|n| *n > 0),
                    "{r:?}"
                );
                assert_eq!(r.source.pattern, r.pattern, "{r:?}");
            }
        }
    }
}

#[test]
fn a_synonym_or_abbreviation_uses_a_real_pair_whose_old_words_are_in_the_item() {
    for seed in 0..20 {
        for (kind, items) in [(Kind::Id, &IDS[..]), (Kind::String, &STRINGS[..])] {
            for r in renames(seed, kind, items) {
                if !matches!(
                    r.pattern,
                    Pattern::Synonym | Pattern::Abbreviation | Pattern::Rewording
                ) {
                    continue;
                }
                let (a, b) = (
                    classify::words(r.source.kind, &r.source.old),
                    classify::words(r.source.kind, &r.source.new),
                );
                let (p, s) = classify::common_ends(&a, &b);
                let old_words = &a[p..a.len() - s];
                let item = classify::words(kind, &r.old);
                let found = item.windows(old_words.len()).any(|w| w == old_words);
                assert!(found, "{r:?}: {old_words:?} not in {item:?}");
            }
        }
    }
}

#[test]
fn items_no_real_pattern_fits_stay_as_they_are() {
    let (ids, strings) = rename_map(3, &IDS, &STRINGS);
    assert!(!ids.contains_key("android:id/home") && !ids.contains_key("android:id/button1"));
    assert!(!strings.contains_key("12:30"), "{strings:?}");
    if let Some(new) = ids.get("com.example.shop:id/checkout_button") {
        assert!(new.starts_with("com.example.shop:id/"), "{new}");
    }
}

#[test]
fn no_two_items_share_a_new_name_and_none_takes_another_items_name() {
    for seed in 0..20 {
        let (ids, strings) = rename_map(seed, &IDS, &STRINGS);
        for (map, items) in [(&ids, &IDS[..]), (&strings, &STRINGS[..])] {
            let news: BTreeSet<&String> = map.values().collect();
            assert_eq!(news.len(), map.len(), "{map:?}");
            assert!(
                map.values().all(|n| !items.contains(&n.as_str())),
                "{map:?}"
            );
        }
    }
}

#[test]
fn the_readme_shows_the_fixtures_counts() {
    let readme = include_str!("../../../../tests/fixtures/drift-real/README.md");
    let counts = stats().markdown();
    assert!(
        readme.contains(&counts),
        "README.md counts are stale; put in:\n{counts}"
    );
}

/// The words a change adds at the start or the end of `old`, and the kept word next to
/// them; `None` unless it only adds words at one end.
fn added_at_an_end(kind: Kind, old: &str, new: &str) -> Option<(usize, Vec<String>, String)> {
    let (a, b) = (classify::words(kind, old), classify::words(kind, new));
    let (p, s) = classify::common_ends(&a, &b);
    if p + s != a.len() || b.len() <= a.len() {
        return None;
    }
    let added = b[p..b.len() - s].to_vec();
    match (p, s) {
        (0, _) => Some((0, added, a.first()?.clone())),
        (_, 0) => Some((1, added, a.last()?.clone())),
        _ => None,
    }
}

#[test]
fn words_are_added_to_a_label_only_next_to_a_word_a_real_row_had_there() {
    let labels = [
        "Device name",
        "Password",
        "Delete",
        "Cancel",
        "Add to cart",
        "Save",
        "Domain",
    ];
    let mut added = 0;
    for seed in 0..40 {
        for r in renames(seed, Kind::String, &labels) {
            let Some(change) = added_at_an_end(Kind::String, &r.old, &r.new) else {
                continue;
            };
            added += 1;
            let real = pairs().iter().any(|p| {
                p.kind == Kind::String
                    && p.pattern == Pattern::PrefixSuffix
                    && added_at_an_end(p.kind, &p.old, &p.new).as_ref() == Some(&change)
            });
            assert!(real, "{r:?}: no row adds {change:?}");
        }
    }
    assert!(added > 0, "no label got words added in 40 seeds");
}

#[test]
fn the_map_file_has_ids_and_strings_from_old_to_new() {
    let json = rename_map_json(5, &IDS, &STRINGS);
    let (ids, strings) = rename_map(5, &IDS, &STRINGS);
    let obj = json.as_object().expect("an object");
    assert_eq!(obj.keys().collect::<Vec<_>>(), ["ids", "strings"]);
    for (old, new) in &ids {
        assert_eq!(json["ids"][old], *new);
    }
    assert_eq!(
        json["strings"].as_object().map(|m| m.len()),
        Some(strings.len())
    );
}

#[test]
fn odd_ids_and_labels_are_renamed_or_left_without_a_panic() {
    let ids = [
        "",
        "_",
        "__x__",
        "a",
        "X",
        "9lives",
        "über_button",
        "com.x:id/",
        ":id/a",
    ];
    let labels = [
        "",
        " ",
        "%s",
        "%1$s of %2$d",
        "...",
        "…",
        "Über Settings",
        "straße",
        "🙂 Done",
        "A",
        "Don't",
        "'quoted'",
        "OK?!",
        "Settings\u{a0}…",
    ];
    for seed in 0..10 {
        let (ids_map, strings_map) = rename_map(seed, &ids, &labels);
        for new in ids_map.values() {
            let name = new.rsplit(":id/").next().unwrap_or(new);
            assert!(name.starts_with(|c: char| c.is_ascii_alphabetic()), "{new}");
        }
        for (old, new) in &strings_map {
            assert!(!new.trim().is_empty() && old != new, "{old} → {new}");
        }
    }
}
