//! Host bytes on a shell-v2 stream, split into WRTE-sized pieces anywhere (the first byte
//! sets the piece size). Whatever the split, the same packets come out.
//! The body is `droidpilot::fuzzing::adbd_shell_v2`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::adbd_shell_v2(data));
