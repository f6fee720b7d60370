//! Any bytes through the whole dump pipeline: decode, clean, parse, element map, every
//! representation, layout hash.
//! The body is `droidpilot::fuzzing::parse_dump`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::parse_dump(data));
