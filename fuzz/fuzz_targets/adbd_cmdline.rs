//! A command line as adb hosts send it to `shell:`: parsed, never run.
//! The body is `droidpilot::fuzzing::adbd_cmdline`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::adbd_cmdline(data));
