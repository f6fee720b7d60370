//! Any string through the selector parser; whatever parses must print and re-parse to
//! the same selector.
#![no_main]

use droidpilot::screen::Selector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    match Selector::parse(s) {
        Ok(sel) => {
            let again = Selector::parse(&sel.to_string()).expect("canonical form re-parses");
            assert_eq!(again, sel);
        }
        Err(e) => assert!(e.column >= 1 && e.column <= s.chars().count() + 1),
    }
});
