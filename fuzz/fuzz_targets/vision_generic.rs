//! The generic format (`<tool_call>{"action": "tap", …}</tool_call>`).
//! The body is `droidpilot::fuzzing::vision_generic`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::vision_generic(data));
