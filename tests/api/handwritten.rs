//! Scripts written by hand as docs/scripts.md advises (`tests/fixtures/scripts-handwritten`,
//! one per virtual-phone task, named after it): each is a valid script document and,
//! run inline through the real runner on a clean phone in its task's start state, ends
//! `succeeded` with the task's checker satisfied and no model call.

use std::path::{Path, PathBuf};

use droidpilot::device::sim::tasks::{task as sim_task, tasks};
use droidpilot::script::Script;
use serde_json::{Value, json};

use crate::run::{add_phone, bare_app, submit, wait_done};

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scripts-handwritten")
}

/// The task that judges a file: the longest dot-separated start of its name that is a
/// task id (`clock.delete_0600.json`, `clock.delete_0600.by_hand.json`).
fn task_of(file: &Path) -> String {
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let parts: Vec<&str> = stem.split('.').collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("."))
        .find(|id| tasks().iter().any(|t| t.id == id))
        .unwrap_or_else(|| panic!("{}: no task is named by this file", file.display()))
}

/// Every `*.json` in the folder, in name order, with its task and its document.
fn scripts() -> Vec<(PathBuf, String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder())
        .expect("tests/fixtures/scripts-handwritten")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let doc: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()));
            (p.clone(), task_of(&p), doc)
        })
        .collect()
}

#[test]
fn every_handwritten_script_is_a_valid_document_for_a_distinct_task() {
    let all = scripts();
    assert!(all.len() >= 24, "{} hand-written scripts", all.len());
    let mut seen = std::collections::BTreeSet::new();
    for (path, task, doc) in &all {
        let script: Script = serde_json::from_value(doc.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        script
            .validate()
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(seen.insert(task.clone()), "two scripts for {task}");
    }
}

#[tokio::test]
async fn every_handwritten_script_completes_its_task_on_a_clean_phone() {
    let app = bare_app(&[]).await;
    let mut runs = Vec::new();
    for (i, (path, task, doc)) in scripts().into_iter().enumerate() {
        let serial = format!("hand-{i}");
        let phone = add_phone(&app, &serial, Some(&task)).await;
        let id = submit(
            &app,
            json!({"instruction": task, "device_id": serial, "max_steps": 60,
                   "agent": {"kind": "script", "script": doc}}),
        )
        .await;
        runs.push((path, task, phone, id));
    }
    let mut failed = Vec::new();
    for (path, task, phone, id) in runs {
        let done = wait_done(&app, &id).await;
        let checked = sim_task(&task).unwrap().check(&phone.state());
        if done["status"] != "succeeded" || !checked || done["model_calls"] != 0 {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            failed.push(format!(
                "{name}: status {} ({}), checker {checked}, model calls {}",
                done["status"], done["reason"], done["model_calls"]
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A script written by hand in English, naming labels (`:text("Add to cart")`), on a
/// phone whose UI is German: the label is found as the app's own German string for the
/// same resource (read from its APK), the step says which key translated it, and the
/// task completes with no model call.
#[tokio::test]
async fn an_english_handwritten_script_completes_on_a_german_phone() {
    use droidpilot::device::sim::{SimConfig, SimDevice, locale::Locale};
    let app = bare_app(&[]).await;
    let task = "shop.cart_earbuds";
    let phone = std::sync::Arc::new(
        SimDevice::new(SimConfig {
            serial: "de-1".into(),
            width: 540,
            height: 1200,
            locale: Locale::De,
            ..Default::default()
        })
        .unwrap(),
    );
    phone.reset_to(&sim_task(task).unwrap());
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    let shop = "com.droidpilot.shop";
    let doc = json!({"name": "earbuds by label", "goal": "Add the wireless earbuds to the cart", "app": shop,
    "steps": [
        {"action": "launch_app", "parameters": {"package": shop}},
        {"action": "tap", "selector": "#permission_deny_button", "optional": true,
         "wait_condition": {"selector": "#permission_deny_button", "timeout_ms": 5000}},
        {"action": "tap", "selector": ":text(\"Wireless Earbuds\")",
         "expect": {"visible": [":text(\"Add to cart\")"]}},
        {"action": "wait", "parameters": {"ms": 2000}},
        {"action": "tap", "selector": "#promo_dismiss", "optional": true},
        {"action": "tap", "selector": ":text(\"Add to cart\")"},
        {"action": "tap", "selector": "#promo_dismiss", "optional": true}
    ]});
    let id = submit(
        &app,
        json!({"instruction": task, "device_id": "de-1", "max_steps": 40,
               "agent": {"kind": "script", "script": doc}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(task).unwrap().check(&phone.state()));
    assert_eq!(done["model_calls"], 0);
    let steps = crate::scripts::steps(&app, &id).await;
    let translated: Vec<&Value> = steps
        .iter()
        .filter(|s| s["replay"]["fallback"] == "translated")
        .collect();
    let t = &translated.first().expect("a translated step")["replay"]["matched"]["translated"][0];
    assert_eq!(t["from"], "Add to cart");
    assert_eq!(t["to"], "In den Warenkorb");
    assert_eq!(t["keys"], json!(["add_to_cart"]));
    assert_eq!(t["locale"], "de-DE");
}

/// Runs the hand-written script for `task` inline on a phone in its start state with
/// `cfg`'s update applied; returns the finished task, its steps and the phone.
async fn run_updated(
    task: &str,
    cfg: droidpilot::device::sim::SimConfig,
) -> (
    Value,
    Vec<Value>,
    std::sync::Arc<droidpilot::device::sim::SimDevice>,
) {
    use droidpilot::device::sim::SimDevice;
    let app = bare_app(&[]).await;
    let phone = std::sync::Arc::new(SimDevice::new(cfg).unwrap());
    phone.reset_to(&sim_task(task).unwrap());
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    let path = folder().join(format!("{task}.json"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let serial = phone.config().serial.clone();
    let id = submit(
        &app,
        json!({"instruction": task, "device_id": serial, "max_steps": 60,
               "agent": {"kind": "script", "script": doc}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    (done, crate::scripts::steps(&app, &id).await, phone)
}

fn updated_phone() -> droidpilot::device::sim::SimConfig {
    droidpilot::device::sim::SimConfig {
        serial: "upd-1".into(),
        width: 540,
        height: 1200,
        ..Default::default()
    }
}

fn renamed(strings: &[(&str, &str)]) -> droidpilot::device::sim::RenameMap {
    droidpilot::device::sim::RenameMap {
        strings: strings
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Default::default()
    }
}

/// The shop asks for the notification permission, and once the script's optional step
/// denies it, a "what's new" notice (one "Got it" button) comes up over the catalogue.
/// The deny step verifies nothing, so the notice might be its doing and is not dismissed
/// as an interruption; but it has nothing to decide and the next step's product is
/// behind it: it is closed with Back and the flow goes on.
#[tokio::test]
async fn a_notice_after_the_permission_prompt_is_closed_and_the_flow_goes_on() {
    use droidpilot::device::sim::SimFaults;
    let task = "shop.cart_earbuds";
    let mut cfg = updated_phone();
    cfg.faults = SimFaults {
        whats_new_dialog: true,
        ..SimFaults::default()
    };
    let (done, steps, phone) = run_updated(task, cfg).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(task).unwrap().check(&phone.state()));
    assert_eq!(done["model_calls"], 0);
    assert!(
        steps
            .iter()
            .any(|s| s["replay"]["role"] == "dismiss" && s["action"]["key"] == "back"),
        "closed with Back"
    );
}

/// An update recased a search result's title ("Rust Programming Language" → "Rust
/// programming language"): the step's `wait_condition` finds it as the step's target is
/// found, through the element matcher, instead of waiting for the old casing in vain.
#[tokio::test]
async fn a_wait_condition_finds_its_recased_label() {
    let task = "browser.rust_official";
    let mut cfg = updated_phone();
    cfg.renames = renamed(&[("Rust Programming Language", "Rust programming language")]);
    let (done, _, phone) = run_updated(task, cfg).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(task).unwrap().check(&phone.state()));
}

/// An update recased the alarm's time ("6:00 AM" → "6:00 am") and now asks before a
/// delete. The step's `gone: [":text(\"6:00 AM\")"]` names nothing as written before the
/// tap either, so it cannot say the alarm went; the matcher still finds the alarm behind
/// the confirmation, the confirmation naming the step's own action is confirmed by rule,
/// and only then is the alarm gone. (Taking the vacuous `gone` as the effect left the
/// confirmation open and the alarm there.)
#[tokio::test]
async fn a_gone_expect_whose_label_was_recased_waits_for_the_element_to_go() {
    use droidpilot::device::sim::SimFaults;
    let task = "clock.delete_0600";
    let mut cfg = updated_phone();
    cfg.renames = renamed(&[("6:00 AM", "6:00 am")]);
    cfg.faults = SimFaults {
        confirm_destructive: true,
        ..SimFaults::default()
    };
    let (done, _, phone) = run_updated(task, cfg).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(task).unwrap().check(&phone.state()));
    assert!(phone.state().dialog.is_none(), "nothing left open");
}

/// A phone of the farm (Huawei Mate 9, 1080×1920 at 480 dpi) at the largest font: the list
/// needs several scrolls, and the shop's promo comes up during them. The permission step
/// before verified nothing, so a pop-up right after it might be its doing; this one came
/// while the scroll step was scrolling and was not on its first screen, so it is an
/// interruption, closed by rule, and the scroll goes on to the cheapest cable.
#[tokio::test]
async fn a_promo_that_comes_up_while_a_step_scrolls_is_closed_as_an_interruption() {
    let task = "shop.cheapest_usb_c";
    let mut cfg = updated_phone();
    (cfg.width, cfg.height, cfg.density) = (1080, 1920, 480);
    cfg.density_layout = true;
    cfg.seed = 7;
    cfg.font_scale = 1.3;
    let (done, steps, phone) = run_updated(task, cfg).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(task).unwrap().check(&phone.state()));
    let scrolled_then_closed = steps
        .iter()
        .skip_while(|s| s["action"]["action"] != "scroll")
        .any(|s| s["replay"]["role"] == "dismiss");
    let ran: Vec<String> = steps
        .iter()
        .map(|s| format!("{} {}", s["replay"]["role"], s["action"]))
        .collect();
    assert!(
        scrolled_then_closed,
        "the promo came during the scrolls: {ran:#?}"
    );
}
