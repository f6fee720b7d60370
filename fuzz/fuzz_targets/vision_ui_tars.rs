//! UI-TARS replies, in both coordinate spaces. The first four bytes are the screenshot's
//! size (two little-endian u16, zero included) for the smart-resize space.
//! The body is `droidpilot::fuzzing::vision_ui_tars`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::vision_ui_tars(data));
