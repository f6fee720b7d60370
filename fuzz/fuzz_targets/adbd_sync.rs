//! Host bytes on a `sync:` stream against a phone with one file: every request the
//! decoder completes is answered, until the session ends or the framing is refused.
//! The body is `droidpilot::fuzzing::adbd_sync`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::adbd_sync(data));
