use sha2::{Digest, Sha256};

use super::*;
use crate::{AppId, Cmd, Fg, SimConfig, SimDevice};

fn painter(px: &mut [u8], side: i32) -> Painter<'_> {
    Painter {
        cv: Canvas {
            w: side,
            h: side,
            px,
        },
        s: 1.0,
        font: 1.0,
    }
}

#[test]
fn missing_glyphs_draw_a_box_not_nothing() {
    let mut px = vec![255u8; 64 * 64 * 4];
    let all = Bounds::new(0, 0, 64, 64);
    painter(&mut px, 64).line(0, 40, "日", Face::Regular, 49, [0, 0, 0], all);
    assert!(
        px.chunks_exact(4).any(|p| p[0] == 0),
        "a tofu box was drawn"
    );
}

#[test]
fn every_symbol_has_a_glyph_in_the_icon_font() {
    for &sym in <Symbol as strum::VariantArray>::VARIANTS {
        let g = text::glyph(Face::Icons, codepoint(sym), 48);
        assert!(
            g.is_some_and(|g| g.alpha.iter().any(|&a| a > 128)),
            "{sym:?} has ink"
        );
    }
}

#[test]
fn text_that_would_not_fit_is_shrunk_into_its_box() {
    let st = Style {
        face: Face::Regular,
        px: 49,
        color: [0, 0, 0],
        align: Align::Start,
        top: false,
    };
    let line = Bounds::new(0, 0, 400, 60);
    let (lines, px) = fit(line, "Short", st);
    assert_eq!((lines.len(), px), (1, 49), "what fits keeps its size");
    let long = "A title somewhat longer than its box";
    let (lines, px) = fit(line, long, st);
    assert!(px < 49, "shrunk");
    assert!(lines.len() == 1 || px == 49 * 3 / 5, "{lines:?} at {px}");
}

fn screens() -> Vec<(&'static str, SimDevice)> {
    let mk = |f: &dyn Fn(&SimDevice)| {
        let d = SimDevice::new(SimConfig::default()).expect("default config is valid");
        f(&d);
        d.advance_clock(5_000);
        d
    };
    vec![
        ("launcher", mk(&|_| {})),
        (
            "settings",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Settings,
                })
            }),
        ),
        (
            "contact_edit_keyboard",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Contacts,
                });
                d.apply(Cmd::ContactNew);
                d.apply(Cmd::Focus {
                    field: "contact.name".into(),
                });
            }),
        ),
        (
            "shop_dialog",
            mk(&|d| d.apply(Cmd::Launch { app: AppId::Shop })),
        ),
        (
            "messages_thread",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Messages,
                });
                d.apply(Cmd::OpenThread {
                    contact: "Alice Martin".into(),
                });
            }),
        ),
        (
            "browser_results",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Browser,
                });
                d.apply(Cmd::BrowserOpen {
                    url: "https://www.google.com/search?q=rust".into(),
                });
            }),
        ),
        ("clock", mk(&|d| d.apply(Cmd::Launch { app: AppId::Clock }))),
        ("notes", mk(&|d| d.apply(Cmd::Launch { app: AppId::Notes }))),
        ("drawer", mk(&|d| d.apply(Cmd::OpenDrawer))),
        (
            "contacts",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Contacts,
                })
            }),
        ),
        (
            "recents",
            mk(&|d| {
                d.apply(Cmd::Launch { app: AppId::Clock });
                d.apply(Cmd::Launch { app: AppId::Notes });
                let mut s = d.state();
                s.fg = Fg::Recents;
                d.set_state(s);
            }),
        ),
        (
            "locked",
            mk(&|d| {
                let mut s = d.state();
                s.locked = true;
                d.set_state(s);
            }),
        ),
    ]
}

#[test]
fn the_same_screen_renders_the_same_bytes() {
    for ((name, d), (_, again)) in screens().into_iter().zip(screens()) {
        let (a, b) = (d.render_now(), d.render_now());
        assert!(a == b, "{name}: two renders differ");
        // A second phone in the same state (its glyphs now come from the cache).
        assert!(again.render_now() == a, "{name}: another phone differs");
    }
}

/// The SHA-256 of each screen's RGBA pixels. These change only when the picture is
/// meant to change: a change of drawing code or fonts. To refresh after such a change,
/// run `GOLDEN_PRINT=1 cargo test --lib golden_pixels -- --nocapture`, look at the
/// screens it writes to `target/golden/*.png`, and paste the printed lines here. A
/// mismatch with no drawing change means output depends on the machine: a bug.
const GOLDEN: [(&str, &str); 12] = [
    (
        "launcher",
        "2bf0c4b52f9cc00443afa6b3348720a5edf0d07effb46499c0cde6a2bc5983b4",
    ),
    (
        "settings",
        "27abd3a735f1567a583a71b18c9ec6f77d4940ef79959efdbda5db7cea168d3d",
    ),
    (
        "contact_edit_keyboard",
        "28e46f092d813df8a6935c6bd497812f1eb86426010adcddbcb1d6b22b4b1652",
    ),
    (
        "shop_dialog",
        "5c2e1db3328abfd8c2934058d0fc35eb349ebcdd0d934c75fc98a0e608b6b911",
    ),
    (
        "messages_thread",
        "b9ede0385b6d06b43ebad68c06a0157fd3aeb6752ab444309bdf5db922d712d4",
    ),
    (
        "browser_results",
        "7142cd5de26590803660278561daf8f28514ac84672ceb88d189d2352e1bb16d",
    ),
    (
        "clock",
        "5a0af3e8ec78d137fda25c581b04c8a36d1cf15ad79195eb209adea7f040dafa",
    ),
    (
        "notes",
        "724d78ea420fef90ad78a5be96d69c3f496edeae508b5cd3094c01937e4811ca",
    ),
    (
        "drawer",
        "708e0c4b07e3090b16d38f28e4bb77644df11ae97cffe603d80d3b8ca0d5b77d",
    ),
    (
        "contacts",
        "d8817537829119b8ce5264d6a6bf65dc84d73ad0ca3a9a2ff0bbe81c9ee4c30a",
    ),
    (
        "recents",
        "d5d025c510bc87ea626ec8661436226c47f11f9e0aa5029c7aa53497e39e3867",
    ),
    (
        "locked",
        "18cd5ce437d1fa8d9d2f21cbebadd1ebc44e1ac7e7c777ca08f067ad1fd5950b",
    ),
];

#[test]
fn golden_pixels() {
    let print = std::env::var_os("GOLDEN_PRINT").is_some();
    for ((name, d), (golden_name, golden)) in screens().into_iter().zip(GOLDEN) {
        assert_eq!(name, golden_name);
        let px = d.render_now();
        let hash = hex::encode(Sha256::digest(&px));
        if print {
            println!("    (\"{name}\", \"{hash}\"),");
            write_png(name, px);
        } else {
            assert_eq!(hash, golden, "{name}: the pixels changed (see GOLDEN)");
        }
    }
}

fn write_png(name: &str, px: Vec<u8>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/golden");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = SimConfig::default();
    image::RgbaImage::from_raw(cfg.width, cfg.height, px)
        .unwrap()
        .save(dir.join(format!("{name}.png")))
        .unwrap();
}
