//! AutoGLM replies (`<answer>do(action="Tap", element=[x,y])</answer>`).
//! The body is `droidpilot::fuzzing::vision_autoglm`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::vision_autoglm(data));
