//! A flow run's reports: JUnit XML (one `testcase` per flow, as `maestro test --format
//! junit` writes them: the failure's message is the failing command with its file and
//! line) and one self-contained HTML page (inline style, no script; each failed flow's
//! last screenshot embedded as a data URI, so the file can be mailed or archived).
//!
//! Both are written by hand: the documents are a few fixed elements, and the only care
//! they need is escaping, which `escape` does for XML and HTML alike (an XML writer crate
//! would not make either shorter).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;

use crate::domain::{FlowResult, FlowRun, FlowStatus};

/// A failed flow's last screenshot, for the HTML report: media type and bytes.
pub type Shots = BTreeMap<String, (String, Vec<u8>)>;

/// `&`, `<`, `>`, `"` and `'` as entities; characters XML 1.0 cannot hold are dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

fn secs(ms: Option<u64>) -> String {
    format!("{:.3}", ms.unwrap_or(0) as f64 / 1000.0)
}

/// The run as JUnit XML.
pub fn junit(run: &FlowRun) -> String {
    let failed = run.count(FlowStatus::Failed);
    let skipped = run.count(FlowStatus::Skipped) + run.count(FlowStatus::Cancelled);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"droidpilot flow run {id}\" tests=\"{n}\" failures=\"{failed}\" skipped=\"{skipped}\" time=\"{t}\">",
        id = run.id,
        n = run.flows.len(),
        t = secs(run.duration_ms),
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"Test Suite\" id=\"{id}\" tests=\"{n}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\" time=\"{t}\" timestamp=\"{ts}\">",
        id = run.id,
        n = run.flows.len(),
        t = secs(run.duration_ms),
        ts = run.created_at.format("%Y-%m-%dT%H:%M:%S"),
    );
    for f in &run.flows {
        testcase(&mut x, f);
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

fn testcase(x: &mut String, f: &FlowResult) {
    let _ = writeln!(
        x,
        "    <testcase id=\"{p}\" name=\"{n}\" classname=\"{p}\" file=\"{p}\" time=\"{t}\" status=\"{s}\">",
        p = escape(&f.path),
        n = escape(&f.name),
        t = secs(f.duration_ms),
        s = f.status.as_str(),
    );
    x.push_str("      <properties>\n");
    let mut prop = |k: &str, v: &str| {
        let _ = writeln!(
            x,
            "        <property name=\"{k}\" value=\"{}\"/>",
            escape(v)
        );
    };
    if let Some(d) = &f.device {
        prop("device", d);
    }
    prop("attempts", &f.attempts.len().to_string());
    if let Some(a) = f.attempts.last() {
        prop("task_id", &a.task_id.to_string());
    }
    x.push_str("      </properties>\n");
    let message = f.failure.as_ref().map_or("", |m| m.message.as_str());
    match f.status {
        FlowStatus::Failed => {
            let mut body = message.to_string();
            if let Some(shot) = f.failure.as_ref().and_then(|m| m.screenshot.as_ref()) {
                let _ = write!(body, "\nscreenshot: {shot}");
            }
            let _ = writeln!(
                x,
                "      <failure message=\"{}\" type=\"FlowFailure\">{}</failure>",
                escape(message),
                escape(&body)
            );
        }
        FlowStatus::Skipped | FlowStatus::Cancelled | FlowStatus::Pending | FlowStatus::Running => {
            let _ = writeln!(x, "      <skipped message=\"{}\"/>", escape(message));
        }
        FlowStatus::Passed => {}
    }
    x.push_str("    </testcase>\n");
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1b1b1b}\
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.4em .6em;text-align:left;vertical-align:top}\
.passed{color:#137333}.failed{color:#b3261e}.skipped,.cancelled,.pending,.running{color:#6b6b6b}\
img{max-width:240px;border:1px solid #ccc}code{font-size:12px}";

/// The run as one HTML page; `shots` holds each failed flow's screenshot by path.
pub fn html(run: &FlowRun, shots: &Shots) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Flow run {id}</title><style>{STYLE}</style></head><body>\n\
         <h1>Flow run <code>{id}</code></h1>\n<p class=\"{st}\"><strong>{st}</strong>: {passed} passed, {failed} failed, {skipped} skipped of {n} flows in {t} s, {shards} shard(s), {retries} retries allowed.{reason}</p>\n",
        id = run.id,
        st = run.status.as_str(),
        passed = run.count(FlowStatus::Passed),
        failed = run.count(FlowStatus::Failed),
        skipped = run.count(FlowStatus::Skipped) + run.count(FlowStatus::Cancelled),
        n = run.flows.len(),
        t = secs(run.duration_ms),
        shards = run.shards,
        retries = run.retries,
        reason = run
            .reason
            .as_ref()
            .map(|r| format!(" {}", escape(r)))
            .unwrap_or_default(),
    );
    h.push_str("<table><thead><tr><th>Flow</th><th>Status</th><th>Phone</th><th>Attempts</th><th>Time (s)</th><th>Failing step</th></tr></thead><tbody>\n");
    for f in &run.flows {
        row(&mut h, f, shots.get(&f.path));
    }
    h.push_str("</tbody></table>\n</body></html>\n");
    h
}

fn row(h: &mut String, f: &FlowResult, shot: Option<&(String, Vec<u8>)>) {
    let failure = match &f.failure {
        Some(m) => {
            let mut cell = format!("<code>{}</code>", escape(&m.message));
            if let Some((media, bytes)) = shot {
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                let _ = write!(
                    cell,
                    "<br><img alt=\"the screen at the failing step\" src=\"data:{};base64,{data}\">",
                    escape(media)
                );
            }
            cell
        }
        None => String::new(),
    };
    let _ = writeln!(
        h,
        "<tr><td>{name}<br><code>{path}</code></td><td class=\"{st}\">{st}</td><td>{dev}</td><td>{n}</td><td>{t}</td><td>{failure}</td></tr>",
        name = escape(&f.name),
        path = escape(&f.path),
        st = f.status.as_str(),
        dev = escape(f.device.as_deref().unwrap_or("")),
        n = f.attempts.len(),
        t = secs(f.duration_ms),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{FlowFailure, FlowRunId, FlowRunStatus};

    fn run() -> FlowRun {
        let mut bad = FlowResult::pending("flows/a&b.yaml", "A <b>", vec![], false);
        bad.status = FlowStatus::Failed;
        bad.failure = Some(FlowFailure {
            message: "a&b.yaml line 3 (tapOn text \"Save\"): no element matches".into(),
            step: Some(2),
            screenshot: Some("/v1/tasks/x/steps/2/screenshot".into()),
        });
        let mut ok = FlowResult::pending("ok.yaml", "ok", vec![], false);
        ok.status = FlowStatus::Passed;
        FlowRun {
            id: FlowRunId::new(),
            status: FlowRunStatus::Failed,
            reason: None,
            shards: 2,
            devices: vec![],
            retries: 0,
            include_tags: vec![],
            exclude_tags: vec![],
            env: vec![],
            continue_on_failure: true,
            workspace: None,
            flows: vec![bad, ok],
            created_at: chrono::Utc::now(),
            finished_at: None,
            duration_ms: Some(1500),
        }
    }

    #[test]
    fn junit_parses_with_one_testcase_per_flow_and_the_step_as_the_message() {
        let x = junit(&run());
        let doc = roxmltree::Document::parse(&x).expect("well-formed XML");
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 2);
        let failure = cases[0]
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("a&b.yaml line 3 (tapOn text \"Save\"): no element matches")
        );
        assert_eq!(cases[0].attribute("name"), Some("A <b>"));
        assert!(!cases[1].children().any(|n| n.has_tag_name("failure")));
    }

    #[test]
    fn html_escapes_and_embeds_the_failing_screenshot() {
        let mut shots = Shots::new();
        shots.insert("flows/a&b.yaml".into(), ("image/png".into(), vec![1, 2, 3]));
        let h = html(&run(), &shots);
        assert!(h.contains("A &lt;b&gt;"), "{h}");
        assert!(h.contains("data:image/png;base64,AQID"), "{h}");
        assert!(!h.contains("<script"), "{h}");
    }
}
