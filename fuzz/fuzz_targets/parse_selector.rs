//! Any string through the selector parser; whatever parses must print and re-parse to the
//! same selector, and an error's column must point inside the input (or just past it).
//! The body is `droidpilot::fuzzing::parse_selector`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::parse_selector(data));
