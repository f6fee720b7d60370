//! Any text through the action parser, strict (with one custom action registered) and
//! lenient (the reader of recorded steps). An action the strict parser accepts must
//! serialize to JSON that reads back as the same action: that is how steps are stored
//! and exported.
//! The body is `droidpilot::fuzzing::parse_action`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::parse_action(data));
