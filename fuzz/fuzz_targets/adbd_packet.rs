//! Bytes from an adb host through the transport reader, as the server reads a socket.
//! The first byte picks the negotiated maximum (small, or the pre-CNXN ceiling); every
//! packet read must encode back to the bytes it came from (checksum aside, which we never
//! verify), and a CNXN's banner is parsed.
//! The body is `droidpilot::fuzzing::adbd_packet`, shared with tests/fuzz_regressions.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| droidpilot::fuzzing::adbd_packet(data));
