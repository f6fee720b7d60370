//! The bodies of the cargo-fuzz targets (`fuzz/fuzz_targets/`, one per entry of
//! [`TARGETS`]), kept in the library so `tests/fuzz_regressions.rs` replays every saved
//! crash and seed through exactly the code the fuzzer ran, under plain `cargo test`.
//!
//! Each body takes arbitrary bytes and must return: every parser here reads input someone
//! else wrote (a phone's dump, a model's reply, an adb host's packets), so bad input is an
//! `Err`, never a panic. A few bodies also assert a property (a selector prints and parses
//! back to itself; an encoded adb packet decodes to itself); those asserts panic on
//! purpose, so the fuzzer reports a broken property as a crash.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::adbd::commands::PhoneState;
use crate::adbd::packet::{self, MAX_PAYLOAD_CEILING, Packet, PacketError};
use crate::adbd::{cmdline, shell_v2, sync};
use crate::agent::vision::{UiTarsCoords, VisionFormat};
use crate::domain::ActionParser;
use crate::screen::{ReprOptions, Screen, Selector, layout_hash, parse::decode};

/// One fuzz target: its cargo-fuzz binary name (also its seed and regression folder
/// names) and its body.
pub struct FuzzTarget {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order CI runs them.
pub const TARGETS: &[FuzzTarget] = &[
    FuzzTarget {
        name: "parse_dump",
        run: parse_dump,
    },
    FuzzTarget {
        name: "parse_selector",
        run: parse_selector,
    },
    FuzzTarget {
        name: "parse_action",
        run: parse_action,
    },
    FuzzTarget {
        name: "vision_mai_ui",
        run: vision_mai_ui,
    },
    FuzzTarget {
        name: "vision_ui_tars",
        run: vision_ui_tars,
    },
    FuzzTarget {
        name: "vision_autoglm",
        run: vision_autoglm,
    },
    FuzzTarget {
        name: "vision_generic",
        run: vision_generic,
    },
    FuzzTarget {
        name: "adbd_packet",
        run: adbd_packet,
    },
    FuzzTarget {
        name: "adbd_shell_v2",
        run: adbd_shell_v2,
    },
    FuzzTarget {
        name: "adbd_sync",
        run: adbd_sync,
    },
    FuzzTarget {
        name: "adbd_cmdline",
        run: adbd_cmdline,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static FuzzTarget> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Any bytes through the whole dump pipeline: decode, clean, parse, element map, every
/// representation, layout hash.
pub fn parse_dump(data: &[u8]) {
    let Ok(text) = decode(data) else { return };
    let opts = ReprOptions::default();
    if let Ok(screen) = Screen::from_xml(&text, &opts) {
        let _ = screen.tree_text(None);
        let _ = screen.representation(&opts);
        let _ = layout_hash(&screen.tree);
    }
}

/// Any string through the selector parser; whatever parses must print and re-parse to the
/// same selector, and an error's column must point inside the input (or just past it).
pub fn parse_selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match Selector::parse(s) {
        Ok(sel) => {
            let again = Selector::parse(&sel.to_string()).expect("canonical form re-parses");
            assert_eq!(
                again, sel,
                "selector {s:?} does not survive print and parse"
            );
        }
        Err(e) => assert!(
            e.column >= 1 && e.column <= s.chars().count() + 1,
            "error column {} outside {s:?}",
            e.column
        ),
    }
}

/// Any text through the action parser, strict (with one custom action registered) and
/// lenient (the reader of recorded steps). An action the strict parser accepts must
/// serialize to JSON that reads back as the same action: that is how steps are stored
/// and exported.
pub fn parse_action(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let mut strict = ActionParser::new();
    strict.register("fuzz_custom").expect("a valid custom name");
    let _ = ActionParser::lenient().parse_str(s);
    if let Ok(action) = strict.parse_str(s) {
        let json = serde_json::to_string(&action).expect("an action serializes");
        let back = strict
            .parse_str(&json)
            .unwrap_or_else(|e| panic!("{json} (from {s:?}) does not read back: {e}"));
        assert_eq!(back, action, "{json} reads back as another action");
    }
}

/// A model reply in `format`, with an MCP tool name known (MAI-UI reads tool calls).
fn vision(format: VisionFormat, text: &[u8], coords: UiTarsCoords, image: Option<(u32, u32)>) {
    let text = String::from_utf8_lossy(text);
    let parser = ActionParser::new();
    let mcp = ["places_search".to_string()];
    let _ = format.parse(&text, &parser, &mcp, coords, image);
}

/// MAI-UI replies (`<tool_call>{"name": "mobile_use", …}</tool_call>`).
pub fn vision_mai_ui(data: &[u8]) {
    vision(VisionFormat::MaiUi, data, UiTarsCoords::default(), None);
}

/// UI-TARS replies, in both coordinate spaces. The first four bytes are the screenshot's
/// size (two little-endian u16, zero included) for the smart-resize space.
pub fn vision_ui_tars(data: &[u8]) {
    vision(VisionFormat::UiTars, data, UiTarsCoords::Relative1000, None);
    if let [w0, w1, h0, h1, rest @ ..] = data {
        let size = (
            u32::from(u16::from_le_bytes([*w0, *w1])),
            u32::from(u16::from_le_bytes([*h0, *h1])),
        );
        vision(
            VisionFormat::UiTars,
            rest,
            UiTarsCoords::SmartResize,
            Some(size),
        );
    }
}

/// AutoGLM replies (`<answer>do(action="Tap", element=[x,y])</answer>`).
pub fn vision_autoglm(data: &[u8]) {
    vision(VisionFormat::Autoglm, data, UiTarsCoords::default(), None);
}

/// The generic format (`<tool_call>{"action": "tap", …}</tool_call>`).
pub fn vision_generic(data: &[u8]) {
    vision(VisionFormat::Generic, data, UiTarsCoords::default(), None);
}

/// Polls a future that never waits (reads from a byte slice) to its end.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Bytes from an adb host through the transport reader, as the server reads a socket.
/// The first byte picks the negotiated maximum (small, or the pre-CNXN ceiling); every
/// packet read must encode back to the bytes it came from (checksum aside, which we never
/// verify), and a CNXN's banner is parsed.
pub fn adbd_packet(data: &[u8]) {
    let Some((pick, mut rest)) = data.split_first() else {
        return;
    };
    let max = if pick & 1 == 0 {
        4096
    } else {
        MAX_PAYLOAD_CEILING
    };
    loop {
        let before = rest;
        match ready(Packet::read(&mut rest, max)) {
            Ok(p) => {
                let used = before.len() - rest.len();
                let enc = p.encode();
                assert_eq!(enc.len(), used, "packet length changed in a round trip");
                assert_eq!(enc[..16], before[..16], "header words changed");
                assert_eq!(enc[20..], before[20..used], "magic or payload changed");
                if p.command == packet::A_CNXN {
                    let _ = packet::banner_features(&p.payload);
                }
            }
            Err(PacketError::Closed) | Err(_) => return,
        }
    }
}

/// Host bytes on a shell-v2 stream, split into WRTE-sized pieces anywhere (the first byte
/// sets the piece size). Whatever the split, the same packets come out.
pub fn adbd_shell_v2(data: &[u8]) {
    let Some((piece, body)) = data.split_first() else {
        return;
    };
    let whole = shell_v2::Decoder::default().push(body);
    let mut split = shell_v2::Decoder::default();
    let mut got = Vec::new();
    for chunk in body.chunks(usize::from(*piece).max(1)) {
        match split.push(chunk) {
            Ok(p) => got.extend(p),
            Err(_) => {
                assert!(
                    whole.is_err(),
                    "a split stream failed where the whole did not"
                );
                return;
            }
        }
    }
    if let Ok(whole) = whole {
        assert_eq!(got, whole, "packets depend on how the stream was split");
    }
}

/// Host bytes on a `sync:` stream against a phone with one file: every request the
/// decoder completes is answered, until the session ends or the framing is refused.
pub fn adbd_sync(data: &[u8]) {
    let mut phone = PhoneState::new(false);
    phone
        .files
        .insert("/sdcard/screen.png".into(), b"\x89PNG fuzz".to_vec());
    let mut session = sync::Session::new(Arc::new(Mutex::new(phone)));
    let mut decoder = sync::Decoder::default();
    for chunk in data.chunks(61) {
        let Ok(requests) = decoder.push(chunk) else {
            return;
        };
        for req in requests {
            if session.handle(req).end {
                return;
            }
        }
    }
}

/// A command line as adb hosts send it to `shell:`: parsed, never run.
pub fn adbd_cmdline(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = cmdline::parse(s);
}
