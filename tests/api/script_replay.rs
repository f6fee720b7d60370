//! The script agent through the real runner on a virtual phone with faults: an app the
//! phone lacks fails before step 1, pop-ups are dismissed by rule and counted, slow
//! content is waited for, optional steps are skipped, `store_as` values come back as the
//! outputs, and AI in the middle that stays unsure ends with the user's "abort".

use std::sync::Arc;

use droidpilot::device::Device;
use droidpilot::device::sim::tasks::task as sim_task;
use droidpilot::device::sim::{SimConfig, SimDevice, SimFaults};
use droidpilot::domain::{AppRef, PixelPoint};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::run::{add_phone, app_for, bare_app, model, submit, wait_done, wait_status};
use crate::scripts::{record, reference_run, steps};

/// Records `task`'s reference solution (a replay task on `serial`) as a script, and
/// returns the script document with the store's fields removed (ready to inline).
async fn recorded(app: &TestApp, serial: &str, task: &str) -> Value {
    let mut doc = record(app, &reference_run(app, serial, task).await).await;
    for k in ["id", "version", "created_at", "source"] {
        doc.as_object_mut().unwrap().remove(k);
    }
    doc
}

/// Runs `script` inline on `serial` and returns the finished task.
async fn run_inline(app: &TestApp, serial: &str, script: &Value) -> Value {
    let id = submit(
        app,
        json!({"instruction": "replay", "device_id": serial, "max_steps": 60,
               "agent": {"kind": "script", "script": script}}),
    )
    .await;
    wait_done(app, &id).await
}

/// A virtual phone in `task`'s start state whose random faults draw from `seed`.
async fn seeded_phone(app: &TestApp, serial: &str, task: &str, seed: u64) -> Arc<SimDevice> {
    let cfg = SimConfig {
        serial: serial.into(),
        width: 540,
        height: 1200,
        seed,
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(cfg).unwrap());
    phone.reset_to(&sim_task(task).unwrap());
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    phone
}

#[tokio::test]
async fn a_script_for_an_app_the_phone_lacks_fails_before_step_one_naming_it() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", Some("settings.bluetooth_on")).await;
    let script = json!({"name": "absent", "goal": "open it", "app": "com.example.absent",
        "steps": [{"action": "tap", "selector": ":text(\"Go\")"}]});
    let done = run_inline(&app, "p", &script).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(reason.starts_with("app_not_installed:"), "{reason}");
    assert!(reason.contains("com.example.absent"), "{reason}");
    assert_eq!(done["steps"], 0, "nothing ran on the phone");
    assert_eq!(done["model_calls"], 0);
}

#[tokio::test]
async fn a_pop_up_over_the_target_is_dismissed_by_rule_and_counted_with_no_model() {
    const TASK: &str = "settings.bluetooth_on";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    // Open Settings and let one input raise a pop-up (a rate of 1 makes it certain),
    // then stop pop-ups so the replay meets exactly this one.
    phone
        .launch_app(&AppRef::Package("com.android.settings".into()))
        .await
        .unwrap();
    phone
        .set_faults(SimFaults {
            popup_rate: 1.0,
            ..Default::default()
        })
        .unwrap();
    phone.tap(PixelPoint { x: 270, y: 10 }).await.unwrap();
    phone.set_faults(SimFaults::default()).unwrap();
    assert!(phone.state().dialog.is_some(), "a pop-up is up");

    let script = json!({"name": "bluetooth", "goal": "turn bluetooth on",
        "app": "com.android.settings",
        "steps": [{"action": "tap", "selector": ":text(\"Bluetooth\")"}]});
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| {
            (
                &s["action"],
                &s["replay"],
                &s["screen"]["has_modal"],
                &s["screen"]["summary"],
            )
        })
        .collect();
    assert_eq!(done["status"], "succeeded", "{trail:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{trail:?}");
    assert_eq!(all[0]["replay"]["role"], "dismiss", "{trail:?}");
    assert_eq!(all[1]["replay"]["role"], "action", "{trail:?}");
    assert_eq!(all[1]["replay"]["interruptions_dismissed"], 1, "{trail:?}");
}

#[tokio::test]
async fn slow_content_is_waited_for_by_change_detection() {
    const TASK: &str = "browser.rust_wikipedia";
    let app = bare_app(&[]).await;
    add_phone(&app, "clean", Some(TASK)).await;
    let script = recorded(&app, "clean", TASK).await;
    let phone = add_phone(&app, "slow", Some(TASK)).await;
    phone
        .set_faults(SimFaults {
            delayed_elements_ms: 4_000,
            ..Default::default()
        })
        .unwrap();
    let done = run_inline(&app, "slow", &script).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(sim_task(TASK).unwrap().check(&phone.state()));
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    assert!(
        all.iter().all(|s| s["action"]["action"] != "wait"),
        "no fixed sleeps: {all:?}"
    );
}

#[tokio::test]
async fn optional_steps_are_skipped_and_stored_values_are_the_outputs() {
    const TASK: &str = "settings.bluetooth_on";
    let app = bare_app(&[]).await;
    add_phone(&app, "clean", Some(TASK)).await;
    let phone = add_phone(&app, "p", Some(TASK)).await;
    let mut script = recorded(&app, "clean", TASK).await;
    let steps_doc = script["steps"].as_array_mut().unwrap();
    let last = steps_doc.len() - 1;
    steps_doc[last]["parameters"]["store_as"] = json!("toggled");
    steps_doc.insert(
        1,
        json!({"action": "tap", "selector": ":text(\"What's new\")", "optional": true}),
    );
    script["outputs"] = json!(["toggled"]);
    let done = run_inline(&app, "p", &script).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(sim_task(TASK).unwrap().check(&phone.state()));
    let answer: Value = serde_json::from_str(done["answer"].as_str().unwrap()).unwrap();
    assert!(answer["toggled"].is_string(), "{answer}");
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    assert!(
        all.iter().all(|s| s["replay"]["index"] != 1),
        "the absent optional step ran nothing: {all:?}"
    );
}

#[tokio::test]
async fn unsure_recovery_is_retried_then_the_user_is_asked_and_abort_ends_it() {
    const TASK: &str = "settings.bluetooth_on";
    let script = json!({"name": "broken", "goal": "turn bluetooth on",
        "max_recovery_attempts": 2,
        "steps": [{"action": "tap", "selector": "#no_such_toggle", "parameters": {"timeout_ms": 300}}]});
    let unsure = json!({"action_type": "skip_step", "reason": "not sure", "confidence": "low"});
    let (server, _) = model(vec![(200, unsure.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "p", Some(TASK)).await;
    let id = submit(
        &app,
        json!({"instruction": "replay", "device_id": "p", "agent": {"kind": "script",
               "script": script, "recovery": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    wait_status(&app, &id, "waiting_for_user").await;
    let r = app
        .post_json(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"answer": "abort"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(
        done["model_calls"], 2,
        "low confidence is retried up to the limit"
    );
    assert!(
        done["reason"].as_str().unwrap().contains("script step 1"),
        "{done}"
    );
}

/// AI in the middle never makes a run worse than the script alone: when a step's action
/// ran and only its `expect` failed, a `modify_selector` names what the expect meant
/// (the row's new "On", missing before the tap) and ends the step; the action is not run
/// a second time (a second tap on the toggle would turn Bluetooth off again).
#[tokio::test]
async fn a_recovery_after_a_failed_expect_never_runs_the_action_again() {
    const TASK: &str = "settings.bluetooth_on";
    let script = json!({"name": "bluetooth", "goal": "turn bluetooth on",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.android.settings"}},
                  {"action": "tap", "selector": ":text(\"Bluetooth\")",
                   "expect": {"visible": ["#renamed_by_an_update"], "timeout_ms": 300}}]});
    let heal = json!({"action_type": "modify_selector", "new_selector": ":text(\"On\")",
                      "reason": "the row says On now", "confidence": "high"});
    let (server, _) = model(vec![(200, heal.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "p", Some(TASK)).await;
    let id = submit(
        &app,
        json!({"instruction": "replay", "device_id": "p", "agent": {"kind": "script",
               "script": script, "recovery": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    let all = steps(&app, &id).await;
    let taps = all
        .iter()
        .filter(|s| s["action"]["action"] == "tap")
        .count();
    assert_eq!(done["status"], "succeeded", "{done} {all:?}");
    assert_eq!(taps, 1, "the toggle was tapped once: {all:?}");
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{all:?}");
    assert_eq!(done["model_calls"], 1);
}

/// An `expect` that names only an app is waited for by change detection (a `wait_for`
/// of the app's windows), like every other wait of replay: no fixed sleep.
#[tokio::test]
async fn an_expected_app_is_waited_for_by_change_detection() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", Some("settings.bluetooth_on")).await;
    let script = json!({"name": "home", "goal": "go home",
        "steps": [{"action": "key", "parameters": {"key": "home"},
                   "expect": {"app": "com.example.never", "timeout_ms": 300}}]});
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        all.iter().all(|s| s["action"]["action"] != "wait"),
        "no fixed sleeps: {all:?}"
    );
    assert!(
        all.iter().any(|s| s["action"]["action"] == "wait_for"
            && s["action"]["selector"] == ":package(\"com.example.never\")"),
        "{all:?}"
    );
}

/// A model answer replay cannot use ("no idea") is no rescue: the step whose action
/// already ran (the toggle) is never run again, not after the unusable answer and not
/// after the user's "retry"; the task ends failed, the phone toggled once.
#[tokio::test]
async fn an_unusable_answer_never_reruns_an_action_that_took_effect() {
    const TASK: &str = "settings.bluetooth_on";
    let script = json!({"name": "bluetooth", "goal": "turn bluetooth on",
        "max_recovery_attempts": 1,
        "steps": [{"action": "launch_app", "parameters": {"package": "com.android.settings"}},
                  {"action": "tap", "selector": ":text(\"Bluetooth\")",
                   "expect": {"visible": ["#renamed_by_an_update"], "timeout_ms": 300}}]});
    let (server, _) = model(vec![(200, "no idea".to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "p", Some(TASK)).await;
    let id = submit(
        &app,
        json!({"instruction": "replay", "device_id": "p", "agent": {"kind": "script",
               "script": script, "recovery": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    wait_status(&app, &id, "waiting_for_user").await;
    let r = app
        .post_json(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"answer": "retry"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    // The retry checks the step's `expect` (still not met), asks the model once more,
    // and, the user already asked, ends the task.
    let done = wait_done(&app, &id).await;
    let all = steps(&app, &id).await;
    let taps = all
        .iter()
        .filter(|s| s["action"]["action"] == "tap")
        .count();
    assert_eq!(done["status"], "failed", "{done} {all:?}");
    assert_eq!(taps, 1, "the toggle was tapped once: {all:?}");
    assert_eq!(done["model_calls"], 2, "one unusable answer per attempt");
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{all:?}");
}

/// A run that went through every step says how many of them it could not verify (no
/// `expect`), and which.
#[tokio::test]
async fn a_complete_run_counts_its_unverified_steps() {
    const TASK: &str = "settings.bluetooth_on";
    let app = bare_app(&[]).await;
    add_phone(&app, "p", Some(TASK)).await;
    let script = json!({"name": "bluetooth", "goal": "turn bluetooth on",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.android.settings"},
                   "expect": {"app": "com.android.settings"}},
                  {"action": "tap", "selector": ":text(\"Bluetooth\")"}]});
    let done = run_inline(&app, "p", &script).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("1 unverified (steps 2"),
        "the tap had no expect: {reason}"
    );
}

/// A delete that now asks first ("Delete alarm?" Cancel / Delete), replayed from a script
/// whose `expect` (`#onoff`, which every alarm row has) held before the tap as after it:
/// the new dialog is the flow's business, never cancelled by rule, and the run never
/// says "complete" while the alarm is still there.
#[tokio::test]
async fn a_new_confirmation_after_a_delete_is_never_cancelled_into_a_false_complete() {
    const TASK: &str = "clock.delete_0600";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        })
        .unwrap();
    let script = json!({"name": "delete 6:00", "goal": "delete the 6:00 AM alarm",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.deskclock"},
                   "expect": {"app": "com.google.android.deskclock"}},
                  {"action": "tap", "selector": ":text(\"6:00 AM\") >> #delete",
                   "expect": {"visible": ["#onoff"]}}]});
    let done = run_inline(&app, "p", &script).await;
    let task = sim_task(TASK).unwrap();
    let deleted = task.check(&phone.state());
    assert!(
        done["status"] != "succeeded" || deleted,
        "said done while the alarm is still there: {done}"
    );
    assert!(!deleted, "nothing confirmed the delete: {done}");
}

/// The same new confirmation after a script's last step, whose `expect` (the menu item
/// gone) holds once the dialog replaced the menu: the run ends failed, naming the open
/// dialog, never "complete" with the note still there.
#[tokio::test]
async fn a_dialog_the_last_step_brought_up_is_never_left_open_behind_a_complete() {
    const TASK: &str = "notes.delete_ideas";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        })
        .unwrap();
    let script = json!({"name": "delete ideas", "goal": "delete the Ideas note",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.keep"},
                   "expect": {"app": "com.google.android.keep"}},
                  {"action": "long_press", "selector": ":text(\"Ideas\")",
                   "expect": {"visible": [":text(\"Delete\")"]}},
                  {"action": "tap", "selector": ":text(\"Delete\")",
                   "expect": {"gone": [":text(\"Delete\")"]}}]});
    let done = run_inline(&app, "p", &script).await;
    let deleted = sim_task(TASK).unwrap().check(&phone.state());
    assert!(!deleted, "nothing confirmed the delete: {done}");
    assert_eq!(
        done["status"], "failed",
        "said done while the note is still there: {done}"
    );
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("dialog") && reason.contains("still open"),
        "{reason}"
    );
}

/// A "what's new" dialog the app shows when it first opens (one button, nothing to
/// choose), which the script, recorded on a phone without it, never saw: it came after
/// the flow's own `launch_app`, which asks for no dialog, so replay closes it (Back, the
/// way a person cancels a dialog) and the flow completes, with no model.
#[tokio::test]
async fn a_whats_new_dialog_after_launch_is_closed_and_the_flow_completes() {
    const TASK: &str = "clock.disable_0815";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            whats_new_dialog: true,
            ..SimFaults::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let roles: Vec<_> = all.iter().map(|s| &s["replay"]["role"]).collect();
    assert_eq!(done["status"], "succeeded", "{done} {roles:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{roles:?}");
    assert!(
        all.iter()
            .any(|s| s["replay"]["role"] == "dismiss" && s["action"]["key"] == "back"),
        "closed with Back: {roles:?}"
    );
}

/// The same phone also asks before a delete ("Delete alarm?"): the "what's new" after
/// launch is closed, but the confirmation the flow's own tap brought up is the flow's
/// business. The recorded step's `expect` (an element every alarm row has) held before
/// the tap, so nothing can verify a delete: the confirmation is neither cancelled nor
/// confirmed by rule, and the run never ends "complete" with the alarm still there.
#[tokio::test]
async fn a_confirmation_the_flow_caused_is_never_dismissed_into_a_complete() {
    const TASK: &str = "clock.delete_0600";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            whats_new_dialog: true,
            confirm_destructive: true,
            ..SimFaults::default()
        })
        .unwrap();
    let script = json!({"name": "delete 6:00", "goal": "delete the 6:00 AM alarm",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.deskclock"},
                   "expect": {"app": "com.google.android.deskclock"}},
                  {"action": "tap", "selector": ":text(\"6:00 AM\") >> #delete",
                   "expect": {"visible": ["#onoff"]}}]});
    let done = run_inline(&app, "p", &script).await;
    let deleted = sim_task(TASK).unwrap().check(&phone.state());
    assert_ne!(done["status"], "succeeded", "said done: {done}");
    assert!(!deleted, "nothing confirmed the delete: {done}");
    let dialog = phone.state().dialog.map(|d| d.kind);
    assert_eq!(
        dialog.as_deref(),
        Some("confirm"),
        "left for the flow: {done}"
    );
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    assert!(
        all.iter().any(|s| s["replay"]["role"] == "dismiss"),
        "the what's new was closed: {done}"
    );
}

/// A delete that now asks first, after a tap whose `expect` (an element every alarm row
/// has) held before it: the model answers what the rule model does, "tap Cancel". The
/// dialog goes, the weak `expect` holds again, but it held before the step too, so it
/// cannot say the model's action did what the step asked: the step fails and the run
/// never ends "complete" with the alarm still there.
#[tokio::test]
async fn a_step_the_model_acted_for_needs_an_expect_that_was_missing_before() {
    const TASK: &str = "clock.delete_0600";
    let script = json!({"name": "delete 6:00", "goal": "delete the 6:00 AM alarm",
        "max_recovery_attempts": 1,
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.deskclock"},
                   "expect": {"app": "com.google.android.deskclock"}},
                  {"action": "tap", "selector": ":text(\"6:00 AM\") >> #delete",
                   "expect": {"visible": ["#onoff"], "timeout_ms": 300}}]});
    let cancel = json!({"action_type": "execute_action",
                        "action": {"action": "tap", "selector": ":text(\"Cancel\")"},
                        "reason": "a dialog is in the way", "confidence": "medium"});
    let (server, _) = model(vec![(200, cancel.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        })
        .unwrap();
    let id = submit(
        &app,
        json!({"instruction": "replay", "device_id": "p", "agent": {"kind": "script",
               "script": script, "recovery": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    wait_status(&app, &id, "waiting_for_user").await;
    let r = app
        .post_json(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"answer": "abort"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let done = wait_done(&app, &id).await;
    let all = steps(&app, &id).await;
    assert_eq!(done["status"], "failed", "{done} {all:?}");
    assert!(
        all.iter().any(|s| s["replay"]["role"] == "recovery"),
        "the model's tap ran: {all:?}"
    );
    assert!(!sim_task(TASK).unwrap().check(&phone.state()), "{all:?}");
}

/// A delete that now asks first ("Delete contact?"), replayed from the flow recorded on a
/// phone that did not ask: the dialog came up after the step's own tap on "Delete", one of
/// its buttons names that same action, and the step's `expect` (missing before the tap)
/// can verify the effect, so replay confirms it and the step is verified, with no model.
#[tokio::test]
async fn a_confirmation_naming_the_steps_own_action_is_confirmed_and_verified() {
    const TASK: &str = "contacts.delete_mallory";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    assert_eq!(done["status"], "succeeded", "{done} {trail:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{trail:?}");
    let reason = done["reason"].as_str().unwrap();
    assert!(reason.contains("all verified"), "{reason}");
}

/// An update moved the "add alarm" button into the toolbar's overflow menu (⋮ "More
/// options"): the recorded flow's target is not on screen, so replay opens the overflow
/// menu, finds it there with the same finders and completes the flow, with no model.
#[tokio::test]
async fn a_target_moved_into_the_overflow_menu_is_found_there() {
    const TASK: &str = "clock.alarm_0730";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            overflow_menu: true,
            ..SimFaults::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    assert_eq!(done["status"], "succeeded", "{done} {trail:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{trail:?}");
    assert!(
        all.iter()
            .any(|s| s["replay"]["role"] == "search" && s["action"]["action"] == "tap"),
        "the overflow menu was opened: {trail:?}"
    );
}

/// A target that is in no menu either: the overflow menu opened to look for it is closed
/// again with Back, so the phone is left as it was, and the step fails naming it.
#[tokio::test]
async fn an_overflow_menu_without_the_target_is_closed_again() {
    const TASK: &str = "clock.alarm_0730";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            overflow_menu: true,
            ..SimFaults::default()
        })
        .unwrap();
    let script = json!({"name": "absent", "goal": "tap what is not there",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.deskclock"},
                   "expect": {"app": "com.google.android.deskclock"}},
                  {"action": "tap", "selector": "#no_such_button",
                   "alternative_selectors": [":text(\"Stopwatch lap\")"],
                   "parameters": {"timeout_ms": 300}}]});
    let before = phone.state();
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    assert_eq!(done["status"], "failed", "{done} {trail:?}");
    assert!(
        done["reason"].as_str().unwrap().contains("#no_such_button"),
        "{done}"
    );
    let opened = all
        .iter()
        .position(|s| s["replay"]["role"] == "search" && s["action"]["action"] == "tap")
        .unwrap_or_else(|| panic!("the overflow menu was looked in: {trail:?}"));
    assert_eq!(
        all[opened + 1]["action"]["key"],
        "back",
        "and closed: {trail:?}"
    );
    let after = phone.state();
    assert!(after.dialog.is_none(), "no menu left open: {trail:?}");
    assert_eq!(after.alarms, before.alarms, "nothing changed: {trail:?}");
}

/// The step's own tap worked (a contact's page opened), but what its `expect` names, the
/// page's "Edit" action, moved into the overflow menu: replay opens the menu, finds it
/// there, closes the menu again and goes on; the flow completes with no model.
#[tokio::test]
async fn an_expected_action_moved_into_the_overflow_menu_is_checked_there() {
    const TASK: &str = "contacts.edit_bob";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            overflow_menu: true,
            ..SimFaults::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    assert_eq!(done["status"], "succeeded", "{done} {trail:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{trail:?}");
    let checked = all
        .iter()
        .position(|s| s["replay"]["role"] == "expect" && s["action"]["action"] == "tap")
        .unwrap_or_else(|| panic!("the menu was opened for the expect: {trail:?}"));
    assert_eq!(all[checked + 1]["action"]["key"], "back", "{trail:?}");
}

/// The hand-written "happy birthday Carol" script (`tests/fixtures/scripts-handwritten`),
/// split: the steps up to the typed message, and the send step, whose `expect` (the
/// message's text) the compose box already meets before the tap.
fn carol_script() -> (Value, Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scripts-handwritten/messages.new_chat_carol.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut steps = doc["steps"].as_array().unwrap().clone();
    let send = steps.pop().unwrap();
    let mut typed = doc.clone();
    typed["steps"] = json!(steps);
    let mut last = doc;
    last["steps"] = json!([send]);
    (typed, last)
}

/// A phone with Carol's conversation open and the message typed, not sent.
async fn typed_phone(app: &TestApp, task: &str) -> Arc<SimDevice> {
    let phone = seeded_phone(app, "p", task, 7).await;
    let done = run_inline(app, "p", &carol_script().0).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        !sim_task(task).unwrap().check(&phone.state()),
        "not sent yet"
    );
    phone
}

/// A pop-up came up over the send button (after the typing): the send step's `expect`
/// (the message's text) already held in the compose box before the tap, so it cannot
/// tell whether the tap sent anything. The pop-up is the obstacle: it is dismissed first
/// and the tap goes to the send button (never to a look-alike inside the pop-up), and
/// the step is verified by the message that appeared, not by the compose box.
#[tokio::test]
async fn a_pop_up_over_a_send_whose_expect_held_before_never_ends_in_a_false_complete() {
    const TASK: &str = "messages.new_chat_carol";
    let app = bare_app(&[]).await;
    let phone = typed_phone(&app, TASK).await;
    phone
        .set_faults(SimFaults {
            popup_rate: 1.0,
            ..Default::default()
        })
        .unwrap();
    phone.tap(PixelPoint { x: 270, y: 10 }).await.unwrap();
    phone.set_faults(SimFaults::default()).unwrap();
    assert!(phone.state().dialog.is_some(), "a pop-up is up");

    let done = run_inline(&app, "p", &carol_script().1).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    let sent = sim_task(TASK).unwrap().check(&phone.state());
    assert!(
        done["status"] != "succeeded" || sent,
        "said done, nothing sent: {done} {trail:?}"
    );
    assert!(sent, "{done} {trail:?}");
    assert_eq!(all[0]["replay"]["role"], "dismiss", "{trail:?}");
    assert!(
        done["reason"].as_str().unwrap().contains("all verified"),
        "{done}"
    );
}

/// The send tap never reaches the app (every tap is lost) and the step's `expect` held
/// before it: the app shows what it showed, so the tap is run once more, and when that
/// one is lost too the step fails rather than ending "complete" on an effect nothing
/// verified.
#[tokio::test]
async fn a_tap_that_changed_nothing_under_an_expect_that_held_before_fails_the_step() {
    const TASK: &str = "messages.new_chat_carol";
    let app = bare_app(&[]).await;
    let phone = typed_phone(&app, TASK).await;
    phone
        .set_faults(SimFaults {
            dropped_tap_rate: 1.0,
            ..Default::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &carol_script().1).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let taps = all
        .iter()
        .filter(|s| s["replay"]["role"] == "action" && s["action"]["action"] == "tap")
        .count();
    assert!(!sim_task(TASK).unwrap().check(&phone.state()));
    assert_eq!(done["status"], "failed", "said done, nothing sent: {done}");
    assert_eq!(taps, 2, "tried once more, then stopped: {all:?}");
    let reason = done["reason"].as_str().unwrap();
    assert!(reason.contains("changed nothing"), "{reason}");
}

/// An update reworded the step's target, and its `expect` (that label gone) therefore held
/// before anything was tried. AI in the middle names another element: the retry must not
/// take the `expect` that held from the start for the step's effect, so the run never
/// ends "complete" with the alarm still on.
#[tokio::test]
async fn an_expect_that_held_before_the_step_never_completes_a_retried_step() {
    const TASK: &str = "clock.disable_0815";
    let script = json!({"name": "8:15 off", "goal": "turn the 8:15 AM alarm off",
        "max_recovery_attempts": 1,
        "steps": [{"action": "launch_app", "parameters": {"package": "com.google.android.deskclock"},
                   "expect": {"app": "com.google.android.deskclock"}},
                  {"action": "tap", "selector": ":text(\"Turn off 8:15 AM\")",
                   "expect": {"gone": [":text(\"Turn off 8:15 AM\")"], "timeout_ms": 300}}]});
    let rename = json!({"action_type": "modify_selector", "new_selector": ":text(\"8:15 AM\")",
                        "reason": "the alarm's label", "confidence": "high"});
    let (server, _) = model(vec![(200, rename.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    let id = submit(
        &app,
        json!({"instruction": "replay", "device_id": "p", "agent": {"kind": "script",
               "script": script, "recovery": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    let mut polls = 0;
    let done = loop {
        polls += 1;
        assert!(polls < 1_000, "the task never ended");
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if t["status"] == "waiting_for_user" {
            let r = app
                .post_json(
                    &format!("/v1/tasks/{id}/answer"),
                    &json!({"answer": "abort"}),
                )
                .await;
            assert!(r.status().is_success());
            break wait_done(&app, &id).await;
        }
        if ["succeeded", "failed", "cancelled"].contains(&t["status"].as_str().unwrap_or("")) {
            break t;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let all = steps(&app, &id).await;
    assert!(!sim_task(TASK).unwrap().check(&phone.state()), "{all:?}");
    assert_eq!(done["status"], "failed", "said done: {done} {all:?}");
}

/// The shop's promo comes up at the moment of the "Add to cart" tap and takes it: the
/// cart stays empty and the promo is on top. The step's `expect` (the empty cart gone) is
/// missing, the app shows what it showed before, and the promo says nothing of adding to
/// a cart, so it is a pop-up that took the tap, not the flow's dialog: replay closes it
/// and taps once more, and the step is verified, with no model.
#[tokio::test]
async fn a_pop_up_that_took_a_tap_is_closed_and_the_tap_runs_once_more() {
    const TASK: &str = "shop.cart_earbuds";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    let open = json!({"name": "earbuds", "goal": "open the earbuds",
        "steps": [{"action": "launch_app", "parameters": {"package": "com.droidpilot.shop"}},
                  {"action": "tap", "selector": "#permission_deny_button",
                   "wait_condition": {"selector": "#permission_deny_button", "timeout_ms": 5000}},
                  {"action": "tap", "selector": ":text(\"Wireless Earbuds\")",
                   "expect": {"visible": ["#add_to_cart"]}}]});
    assert_eq!(run_inline(&app, "p", &open).await["status"], "succeeded");
    // The promo falls due between the screen replay reads before the tap and the tap
    // itself (a read takes the phone 250 ms, a tap 400), so it comes up over the button
    // as it is tapped.
    let mut st = phone.state();
    st.dialog = None;
    st.shop.promo_shown = false;
    st.shop.promo_due_ms = Some(st.clock_ms + 600);
    phone.set_state(st);
    let add = json!({"name": "add", "goal": "add the earbuds to the cart",
        "steps": [{"action": "tap", "selector": "#add_to_cart",
                   "expect": {"gone": [":desc(\"Cart, 0 items\")"]}}]});
    let done = run_inline(&app, "p", &add).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let roles: Vec<_> = all
        .iter()
        .map(|s| s["replay"]["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(done["status"], "succeeded", "{done} {roles:?}");
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{roles:?}");
    assert_eq!(roles, ["action", "dismiss", "action", ""], "{all:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(
        done["reason"].as_str().unwrap().contains("all verified"),
        "{done}"
    );
}

/// The hand-written "alarm at 7:30" script (`tests/fixtures/scripts-handwritten`).
fn alarm_script() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scripts-handwritten/clock.alarm_0730.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A system pop-up comes up over the time picker just before its OK (`#button1`) is
/// tapped, and the pop-up has a `#button1` of its own ("Turn on"): the selector names a
/// button in the pop-up and one behind it. The pop-up is closed first, then OK is tapped,
/// never the pop-up's button and never a refusal to choose.
#[tokio::test]
async fn a_pop_up_sharing_the_targets_id_is_closed_before_the_tap() {
    const TASK: &str = "clock.alarm_0730";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    let mut script = alarm_script();
    let mut all_steps = script["steps"].as_array().unwrap().clone();
    let ok = all_steps.pop().unwrap();
    script["steps"] = json!(all_steps);
    assert_eq!(run_inline(&app, "p", &script).await["status"], "succeeded");
    phone
        .set_faults(SimFaults {
            popup_rate: 1.0,
            ..Default::default()
        })
        .unwrap();
    phone.tap(PixelPoint { x: 270, y: 10 }).await.unwrap();
    phone.set_faults(SimFaults::default()).unwrap();
    assert!(phone.state().dialog.is_some(), "a pop-up is up");
    script["steps"] = json!([ok]);
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all
        .iter()
        .map(|s| (&s["action"], &s["replay"]["role"]))
        .collect();
    assert_eq!(done["status"], "succeeded", "{done} {trail:?}");
    assert!(sim_task(TASK).unwrap().check(&phone.state()), "{trail:?}");
    assert_eq!(all[0]["replay"]["role"], "dismiss", "{trail:?}");
}

/// An update renamed the clock's floating action button's id (`fab` → `fab_v2`, as the
/// framework-style ids that name only a widget's kind get renamed): the hand-written
/// script's `#fab` has nothing but that kind word to go on, and it still finds the one
/// element whose id says the same, with no model.
#[tokio::test]
async fn an_id_that_names_only_a_widgets_kind_survives_a_rename() {
    const TASK: &str = "clock.alarm_0730";
    let app = bare_app(&[]).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    phone
        .set_faults(SimFaults {
            renamed_ids: true,
            ..Default::default()
        })
        .unwrap();
    let done = run_inline(&app, "p", &alarm_script()).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let trail: Vec<_> = all.iter().map(|s| (&s["action"], &s["replay"])).collect();
    assert_eq!(done["status"], "succeeded", "{done} {trail:?}");
    assert_eq!(done["model_calls"], 0);
    assert!(sim_task(TASK).unwrap().check(&phone.state()));
    let fab = all
        .iter()
        .find(|s| s["replay"]["index"] == 1 && s["replay"]["role"] == "action")
        .unwrap();
    assert_eq!(fab["replay"]["fallback"], "fuzzy", "{trail:?}");
}

/// The shop's promo comes up a few seconds in, right after the recorded "Add to cart"
/// tap, on top of the page where the cart's count already changed (the step's `expect`,
/// `gone: Cart, 0 items`, holds behind it). The promo says nothing of the tap: it came
/// up by itself, so the next step closes it by rule instead of taking it for a dialog the
/// flow asked for and failing to find "Navigate up" behind it.
#[tokio::test]
async fn a_pop_up_on_top_of_a_verified_effect_is_closed_by_the_next_step() {
    const TASK: &str = "shop.case_and_protector";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    let done = run_inline(&app, "p", &script).await;
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let ran: Vec<String> = all
        .iter()
        .map(|s| format!("{} {}", s["replay"]["role"], s["action"]))
        .collect();
    assert_eq!(done["status"], "succeeded", "{} {ran:#?}", done["reason"]);
    assert!(sim_task(TASK).unwrap().check(&phone.state()));
    assert!(
        all.iter().any(|s| s["replay"]["role"] == "dismiss"),
        "the promo was closed: {ran:#?}"
    );
}

/// The recorded flow taps the brightness slider low. Its step keeps the point within
/// the slider (`at`), so the replay sets the same level; the slider's centre would set
/// 50%, which the task's checker refuses.
#[tokio::test]
async fn a_tap_on_a_slider_replays_at_the_same_level() {
    const TASK: &str = "settings.brightness_low";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let tap = script["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["parameters"]["at"].is_array())
        .expect("a tap within the slider");
    assert_eq!(tap["action"], "tap");
    let phone = seeded_phone(&app, "p", TASK, 7).await;
    let done = run_inline(&app, "p", &script).await;
    assert_eq!(done["status"], "succeeded", "{}", done["reason"]);
    assert!(sim_task(TASK).unwrap().check(&phone.state()));
}

/// An update recased the note menu's "Delete" and now asks "Delete note?" after it. The
/// recorded step's `gone: Delete` holds once the menu closes, but the confirmation names
/// the delete (the menu row says so in its child text): it is the flow's business, so
/// the run never ends "complete" with the note still there.
#[tokio::test]
async fn a_confirmation_naming_a_menu_items_action_is_never_taken_for_a_pop_up() {
    const TASK: &str = "notes.delete_ideas";
    let app = bare_app(&[]).await;
    add_phone(&app, "rec", Some(TASK)).await;
    let script = recorded(&app, "rec", TASK).await;
    let cfg = SimConfig {
        serial: "p".into(),
        width: 540,
        height: 1200,
        seed: 7,
        faults: SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        },
        renames: droidpilot::device::sim::RenameMap {
            strings: [("Delete".to_string(), "DELETE".to_string())].into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(cfg).unwrap());
    phone.reset_to(&sim_task(TASK).unwrap());
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    let done = run_inline(&app, "p", &script).await;
    let deleted = sim_task(TASK).unwrap().check(&phone.state());
    assert_eq!(
        done["status"] == "succeeded",
        deleted,
        "said {} with the note {}: {}",
        done["status"],
        if deleted { "deleted" } else { "still there" },
        done["reason"]
    );
    assert!(!(done["status"] == "succeeded" && phone.state().dialog.is_some()));
}
