use super::*;
use crate::parse_flow;

/// Debug text with every line number zeroed: two flows that differ only in where their
/// commands were written compare equal.
fn shape(f: &Flow) -> String {
    let d = format!("{f:#?}");
    let mut out = String::new();
    for l in d.lines() {
        match l.trim_start().strip_prefix("line: ") {
            Some(_) => out.push_str("line: 0,\n"),
            None => {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

fn round_trip(text: &str) -> Result<(), String> {
    let first = parse_flow(text).map_err(|e| format!("first parse: {e}"))?;
    let yaml = print(&first).map_err(|e| e.to_string())?;
    let second = parse_flow(&yaml).map_err(|e| format!("{e}\n{yaml}"))?;
    if shape(&first) != shape(&second) {
        return Err(format!("changed:\n{yaml}"));
    }
    Ok(())
}

/// What the script exporter lost comes through: tags, the name, `eraseText` counts, an
/// input with no default (`null`, not the text "null"), labels, `optional`, nested
/// commands and conditions.
#[test]
fn a_flow_prints_back_to_the_same_flow() {
    let flow = r#"appId: ${APP_ID}
name: Log in
tags:
  - smoke
  - login
env:
  USER: null
  PASS: "null"
  GREETING: Hi ${USER}
---
- launchApp:
    clearState: true
- eraseText: 12
- eraseText
- tapOn:
    text: "Save (2)"
    index: 1
    below:
      id: title
    retryTapIfNoChange: false
- inputText:
    text: secret
    label: type the password
- assertWithAI: the page shows a list
- runFlow:
    when:
      visible: Continue
      platform: Android
    commands:
      - tapOn: Continue
- repeat:
    times: 3
    commands:
      - swipe:
          direction: UP
          duration: 700
- retry:
    maxRetries: 2
    file: sub.yaml
- pressKey: Volume Up
- doubleTapOn:
    point: 50%,40%
    delay: 300
- extendedWaitUntil:
    visible: Done
    timeout: 5000
- scrollUntilVisible:
    element:
      id: row_9
    direction: DOWN
"#;
    round_trip(flow).unwrap();
    let printed = print(&parse_flow(flow).unwrap()).unwrap();
    assert!(
        printed.contains("tags: [\"smoke\", \"login\"]\n"),
        "{printed}"
    );
    assert!(
        printed
            .contains("env: {\"USER\": null, \"PASS\": \"null\", \"GREETING\": \"Hi ${USER}\"}\n"),
        "{printed}"
    );
    assert!(
        printed.contains("- eraseText: 12\n- eraseText: null\n"),
        "{printed}"
    );
}

/// The real corpus: every flow that parses prints back to the same flow (parse →
/// print → parse), apart from those with header keys kept only by name, which are
/// refused naming the key.
#[test]
fn the_real_corpus_round_trips() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/maestro-real");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml")
                && p.file_name().is_some_and(|n| n != "config.yaml")
            {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut checked, mut failures) = (0, Vec::new());
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let Ok(flow) = parse_flow(&text) else {
            continue;
        };
        if !flow.header.other.is_empty() {
            assert!(print(&flow).is_err());
            continue;
        }
        checked += 1;
        if let Err(e) = round_trip(&text) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(
        checked >= 150,
        "only {checked} of {} flows parsed",
        files.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked}:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
