//! MAI-UI replies (`<tool_call>{"name": "mobile_use", …}</tool_call>`).
//! The body is `droidpilot::fuzzing::vision_mai_ui`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::vision_mai_ui(data));
