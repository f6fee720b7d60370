//! `droidpilot bench ocr`: what OCR adds to the element map on the virtual phone's
//! pages whose text is only pixels (`apps::pixels`: a canvas game, an image banner, a
//! page without nodes), and what it costs.
//!
//! - **Words held**: the words a person reads on the screen (every painted label, from
//!   the phone's own widget tree: `pixels::painted_text`), and the share of them that
//!   the element map holds (element labels and loose texts), from the UI dump alone and
//!   with OCR merged in. Words are compared lower-cased, letters and digits only.
//! - **Time**: a new screen's OCR (the Tesseract run, and the merge and the element map
//!   built again), median and max over `runs`, and a screen read again (the cache by
//!   screenshot hash). A task that did not ask for OCR pays nothing: it is never called.

use std::collections::BTreeSet;
use std::time::Instant;

use droidpilot_app::device::Device;
use droidpilot_app::device::sim::apps::pixels::{self, ARCADE, LEGACY, PROMO};
use droidpilot_app::device::sim::{AppId, Cmd, SimConfig, SimDevice};
use droidpilot_app::ocr::{Ocr, OcrConfig, screenshot_key};
use droidpilot_app::screen::{ElementMap, ReprOptions, Screen};
use serde::Serialize;

/// The share of seen words OCR should bring the map to, on these screens.
pub const TARGET_SHARE: f64 = 0.9;
/// The most a new screen's OCR should add to a step, in ms (median).
pub const TARGET_MS: f64 = 1000.0;

/// One screen's figures.
#[derive(Debug, Clone, Serialize)]
pub struct OcrScreen {
    pub name: &'static str,
    pub url: &'static str,
    /// Distinct words a person reads there.
    pub seen: usize,
    pub held_without: usize,
    pub held_with: usize,
    /// Seen words the map still lacks with OCR.
    pub missed: Vec<String>,
    /// A new screen: Tesseract, merge and element map, per run.
    pub cold_ms: Vec<f64>,
    /// The same screen again (cached).
    pub cached_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct OcrReport {
    pub screens: Vec<OcrScreen>,
    pub runs: usize,
}

const PAGES: [(&str, &str); 3] = [
    ("canvas game", ARCADE),
    ("image banner", PROMO),
    ("page without nodes", LEGACY),
];

fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn held(map: &ElementMap) -> BTreeSet<String> {
    let labels = map.elements.iter().map(|e| e.label.as_str());
    let texts = map.texts.iter().map(|t| t.text.as_str());
    labels.chain(texts).flat_map(words).collect()
}

/// Measures the three pages, `runs` cold OCR reads each.
pub async fn bench_ocr(runs: usize) -> Result<OcrReport, String> {
    let mut screens = Vec::new();
    for (name, url) in PAGES {
        screens.push(one(name, url, runs.max(1)).await?);
    }
    Ok(OcrReport {
        screens,
        runs: runs.max(1),
    })
}

async fn one(name: &'static str, url: &'static str, runs: usize) -> Result<OcrScreen, String> {
    let sim = SimDevice::new(SimConfig::default()).map_err(|e| e.to_string())?;
    sim.apply(Cmd::Launch {
        app: AppId::Browser,
    });
    sim.apply(Cmd::BrowserOpen { url: url.into() });
    sim.advance_clock(5_000);
    let seen: BTreeSet<String> = pixels::painted_text(&sim.screen())
        .iter()
        .flat_map(|t| words(t).collect::<Vec<_>>())
        .collect();
    let opts = ReprOptions::default();
    let tree = Screen::from_xml(&sim.hierarchy_now(), &opts).map_err(|e| e.to_string())?;
    let png = sim
        .screenshot()
        .await
        .and_then(|s| s.png())
        .map_err(|e| e.to_string())?;
    let key = screenshot_key(&png);
    let ocr = Ocr::new(OcrConfig::default());
    let mut cold_ms = Vec::new();
    let mut merged = None;
    for r in 0..runs {
        let t = Instant::now();
        let read = ocr
            .read(&png, &format!("{key}-{r}"))
            .await
            .map_err(|e| format!("{e}. {}", e.hint()))?;
        let (s, _) = tree.clone().with_ocr(&read.boxes);
        let _ = s.representation(&opts);
        cold_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        merged = Some(s);
    }
    let t = Instant::now();
    let read = ocr
        .read(&png, &format!("{key}-0"))
        .await
        .map_err(|e| e.to_string())?;
    let (_, _) = tree.clone().with_ocr(&read.boxes);
    let cached_ms = t.elapsed().as_secs_f64() * 1000.0;
    let without = held(&tree.elements);
    let with = held(&merged.ok_or("no run")?.elements);
    Ok(OcrScreen {
        name,
        url,
        seen: seen.len(),
        held_without: seen.intersection(&without).count(),
        held_with: seen.intersection(&with).count(),
        missed: seen.difference(&with).cloned().collect(),
        cold_ms,
        cached_ms,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 * 100.0 / d as f64
    }
}

/// The report as a table, with the totals against the targets.
pub fn format_report(r: &OcrReport) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "OCR on the virtual phone's pixel-only pages (1080x2400, {} cold reads each)\n\n",
        r.runs
    );
    let _ = writeln!(
        out,
        "{:<20} {:>5} {:>16} {:>16} {:>12} {:>9} {:>10}  missed",
        "screen", "words", "held (tree)", "held (+OCR)", "median ms", "max ms", "cached ms"
    );
    let (mut seen, mut without, mut with) = (0, 0, 0);
    let mut all_ms = Vec::new();
    for s in &r.screens {
        let max = s.cold_ms.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "{:<20} {:>5} {:>9} ({:>3.0}%) {:>9} ({:>3.0}%) {:>12.0} {:>9.0} {:>10.2}  {}",
            s.name,
            s.seen,
            s.held_without,
            pct(s.held_without, s.seen),
            s.held_with,
            pct(s.held_with, s.seen),
            median(&s.cold_ms),
            max,
            s.cached_ms,
            s.missed.join(" ")
        );
        (seen, without, with) = (seen + s.seen, without + s.held_without, with + s.held_with);
        all_ms.extend(&s.cold_ms);
    }
    let share = pct(with, seen);
    let ms = median(&all_ms);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let _ = writeln!(
        out,
        "\nwords held: {without}/{seen} ({:.1}%) from the tree, {with}/{seen} ({share:.1}%) with OCR; target >= {:.0}%: {}",
        pct(without, seen),
        TARGET_SHARE * 100.0,
        verdict(share >= TARGET_SHARE * 100.0)
    );
    let _ = writeln!(
        out,
        "OCR per new screen: median {ms:.0} ms; target <= {TARGET_MS:.0} ms: {}; a screen read again: cached; a task without OCR: 0 ms (never called)",
        verdict(ms <= TARGET_MS)
    );
    out
}
