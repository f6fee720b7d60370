//! Any bytes through the whole dump pipeline: decode, clean, parse, element map, every
//! representation, selector recommendation. Must return Ok or Err, never panic.
#![no_main]

use droidpilot::screen::{ReprOptions, Screen, layout_hash, parse::decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = decode(data) else { return };
    let opts = ReprOptions::default();
    if let Ok(screen) = Screen::from_xml(&text, &opts) {
        let _ = screen.tree_text(None);
        let _ = screen.representation(&opts);
        let _ = layout_hash(&screen.tree);
    }
});
