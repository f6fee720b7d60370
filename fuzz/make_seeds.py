#!/usr/bin/env python3
"""Writes fuzz/seeds/<target>/ from the repo's own examples: the action example table, each
vision format's test table, selector and command-line test cases, and adb frames built
here by the wire layout. The dump target is seeded from the real-dump corpus
(tests/fixtures/uiautomator) by .ci/fuzz, plus the small dumps below. Re-run after a
table gains rows: python3 fuzz/make_seeds.py"""
import hashlib, json, os, re, struct, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "fuzz", "seeds")


def src(path):
    return open(os.path.join(ROOT, path), encoding="utf-8").read()


def rust_strings(text):
    """The plain "…" literals of Rust source, unescaped (\\" \\\\ \\n \\t only)."""
    out = []
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text):
        s = m.group(1)
        s = re.sub(r'\\(["\\nt])', lambda e: {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}[e.group(1)], s)
        out.append(s)
    return out


def json_macros(text):
    """Bodies of json!(…) that are plain JSON."""
    out, i = [], 0
    while (i := text.find("json!(", i)) >= 0:
        j, depth = i + 6, 1
        while depth and j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        body = text[i + 6 : j - 1]
        i = j
        try:
            out.append(json.dumps(json.loads(body), ensure_ascii=False))
        except ValueError:
            pass
    return out


def write(target, items):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        os.remove(os.path.join(d, old))
    seen = set()
    for item in items:
        b = item.encode() if isinstance(item, str) else item
        h = hashlib.sha1(b).hexdigest()[:16]
        if h not in seen:
            seen.add(h)
            open(os.path.join(d, h), "wb").write(b)
    print(f"{target}: {len(seen)} seeds")


def tests_of(path):
    text = src(path)
    return text[text.find("#[cfg(test)]") :] if "#[cfg(test)]" in text else text


def vision(fmt, marker):
    return [s for s in rust_strings(tests_of(f"crates/droidpilot-app/src/agent/vision/{fmt}.rs")) if marker in s]


def adb(cmd, a0, a1, payload=b""):
    c = struct.unpack("<I", cmd)[0]
    return struct.pack("<6I", c, a0, a1, len(payload), sum(payload) & 0xFFFFFFFF, c ^ 0xFFFFFFFF) + payload


def sync(id_, body=b""):
    return id_ + struct.pack("<I", len(body)) + body


def shell(id_, data=b""):
    return bytes([id_]) + struct.pack("<I", len(data)) + data


actions = json_macros(src("crates/droidpilot-core/src/domain/action_examples_tests.rs")) + json_macros(src("crates/droidpilot-core/src/domain/action_tests.rs"))
write("parse_action", actions + ['{"action": "fuzz_custom", "x": 1}'])
write("vision_mai_ui", vision("mai_ui", "<tool_call>"))
write("vision_ui_tars", [b"\x38\x04\x80\x09" + s.encode() for s in vision("ui_tars", "Action:")] + vision("ui_tars", "Action:"))
write("vision_autoglm", vision("autoglm", "do(") + vision("autoglm", "finish("))
write("vision_generic", vision("generic", "<tool_call>"))
sel_src = tests_of("crates/droidpilot-core/src/screen/selector.rs")
write("parse_selector", [s for s in rust_strings(sel_src) if re.match(r"\s*[#:\[A-Za-z]", s) and len(s) < 80][:60])
cmd_src = tests_of("crates/droidpilot-sim/src/adbd/cmdline.rs")
write("adbd_cmdline", [s for s in rust_strings(cmd_src) if " " in s][:80] + [
    "uiautomator dump /sdcard/window_dump.xml && cat /sdcard/window_dump.xml",
    "input tap 540 1200; echo $?", "screencap -p", "am start -n com.a/.Main 2>&1",
    "settings get secure default_input_method", "pm list packages -3 | grep -v foo",
])
cnxn = adb(b"CNXN", 0x01000001, 256 * 1024, b"host::features=shell_v2,cmd,stat_v2,ls_v2\0")
write("adbd_packet", [
    b"\x01" + cnxn,
    b"\x00" + cnxn + adb(b"OPEN", 1, 0, b"shell,v2,raw:echo hi\0") + adb(b"WRTE", 1, 5, b"abc") + adb(b"CLSE", 1, 5),
    b"\x01" + adb(b"AUTH", 1, 0, b"\x01" * 20) + adb(b"OKAY", 5, 1),
])
write("adbd_shell_v2", [
    b"\x03" + shell(0, b"hello\n") + shell(4) + shell(5, b"24x80,0x0\0"),
    b"\x01" + shell(1, b"x") + shell(2, b"y") + shell(3, b"\x00"),
])
write("adbd_sync", [
    sync(b"STA2", b"/sdcard/screen.png") + sync(b"RECV", b"/sdcard/screen.png") + b"QUIT\0\0\0\0",
    sync(b"LIST", b"/sdcard") + sync(b"LST2", b"/sdcard") + sync(b"STAT", b"/nope"),
    sync(b"SEND", b"/sdcard/a.txt,33188") + sync(b"DATA", b"hello") + b"DONE" + struct.pack("<I", 1700000000) + sync(b"RECV", b"/sdcard/a.txt"),
])
small = [
    '<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.a" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]"><node index="0" text="OK" resource-id="com.a:id/ok" class="android.widget.Button" package="com.a" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[100,200][300,400]" /><node index="1" text="secret" resource-id="com.a:id/pw" class="android.widget.EditText" package="com.a" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="true" scrollable="false" long-clickable="false" password="true" selected="false" bounds="[100,500][900,600]" /></node></hierarchy>',
    "UI hierchary dumped to: /dev/tty",
]
write("parse_dump", small)
