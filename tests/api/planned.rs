//! The planned agent end to end: a task on the virtual phone through the server, the
//! acting agent (a generic-format vision model) and the roles on model servers that
//! answer in each provider's real wire format: the planner as Anthropic Messages, the
//! progress checker and the completion verifier as OpenAI Chat Completions. Every
//! planner path of seed 002 is driven here and asserted on the stored steps, the
//! `step.annotated` events and the outcome.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common::TestApp;
use crate::run::{add_phone, app_for, bare_app, generic, model_paced, wait_done};

const HOME: &str = r#"{"action": "key", "key": "home"}"#;
const CLOCK: &str = r#"{"action": "launch_app", "package": "com.google.android.deskclock"}"#;
const NOTES: &str = r#"{"action": "launch_app", "package": "com.google.android.keep"}"#;
const CONTACTS: &str = r#"{"action": "launch_app", "package": "com.android.contacts"}"#;
const SETTINGS: &str = r#"{"action": "launch_app", "package": "com.android.settings"}"#;
const MISSING: &str = r##"{"action": "tap", "selector": "#no_such_button"}"##;
const DONE: &str = r#"{"action": "finish", "success": true, "reason": "the alarm is set"}"#;

/// One planner answer: after `delay_ms`, HTTP `status` with `text` as the model's reply.
#[derive(Clone)]
struct PlanReply {
    delay_ms: u64,
    status: u16,
    text: String,
}

fn plan_json(name: &str, diagnosis: Option<&str>) -> String {
    let mut p = json!({"approaches": [
        {"name": name, "description": format!("{name}: open Clock and add the alarm"), "steps_summary": ["Open Clock", "Tap +", "Save"], "confidence": 0.8},
        {"name": "Launcher search", "description": "Search the launcher for Clock", "steps_summary": [], "confidence": 0.3}],
        "recommended": 0});
    if let Some(d) = diagnosis {
        p["diagnosis"] = json!(d);
    }
    format!("Here is the plan:\n```json\n{p}\n```")
}

fn ok_plan(name: &str) -> PlanReply {
    PlanReply {
        delay_ms: 0,
        status: 200,
        text: plan_json(name, None),
    }
}

/// The roles' model server: planner calls (`/v1/messages`) and checker calls
/// (`/v1/chat/completions`, told apart by their system prompt) take their answers from
/// per-role queues; the last answer repeats.
#[derive(Default)]
struct Roles {
    plans: Vec<PlanReply>,
    progress: Vec<String>,
    verdicts: Vec<String>,
    plan_n: AtomicUsize,
    progress_n: AtomicUsize,
    verdict_n: AtomicUsize,
    planner_inputs: Mutex<Vec<Value>>,
}

fn pick<'a, T>(list: &'a [T], n: &AtomicUsize) -> &'a T {
    let i = n.fetch_add(1, Ordering::SeqCst).min(list.len() - 1);
    &list[i]
}

fn openai(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-roles", "object": "chat.completion", "created": 1_700_000_000, "model": "checker",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 800, "completion_tokens": 20, "total_tokens": 820}
    }))
}

impl Respond for Roles {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
        if req.url.path() == "/v1/messages" {
            let input = body["messages"][0]["content"][0]["text"]
                .as_str()
                .unwrap_or("{}");
            self.planner_inputs
                .lock()
                .unwrap()
                .push(serde_json::from_str(input).unwrap_or_default());
            let r = pick(&self.plans, &self.plan_n).clone();
            if r.status != 200 {
                return ResponseTemplate::new(r.status).set_body_json(json!({"type": "error",
                    "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}));
            }
            return ResponseTemplate::new(200)
                .set_delay(Duration::from_millis(r.delay_ms))
                .set_body_json(json!({
                    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-planner",
                    "content": [{"type": "text", "text": r.text}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 2500, "output_tokens": 300}
                }));
        }
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        if system.contains("meaningful progress") {
            openai(pick(&self.progress, &self.progress_n).as_str())
        } else {
            openai(pick(&self.verdicts, &self.verdict_n).as_str())
        }
    }
}

struct Run {
    task: Value,
    steps: Vec<Value>,
    events: Vec<(String, Value)>,
    /// What the acting model was sent, request by request (its user text).
    acting_prompts: Vec<String>,
    trajectory: Value,
    roles: std::sync::Arc<Roles>,
    _servers: (MockServer, MockServer),
}

impl Run {
    fn annotations(&self) -> Vec<(u64, Value)> {
        self.steps
            .iter()
            .flat_map(|s| {
                let n = s["n"].as_u64().unwrap();
                s["annotations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |a| (n, a))
            })
            .collect()
    }

    fn kinds(&self) -> Vec<String> {
        self.annotations()
            .iter()
            .map(|(n, a)| {
                let t = a["trigger"]
                    .as_str()
                    .map(|t| format!(":{t}"))
                    .unwrap_or_default();
                format!("{n}:{}{t}", a["kind"].as_str().unwrap())
            })
            .collect()
    }
}

/// Runs one planned task: the acting model answers `acting` in order; the roles answer
/// from `roles`; `planning` and `max_steps` as given.
async fn run(acting: &[&str], roles: Roles, planning: Value, max_steps: u32) -> Run {
    run_paced(acting, Duration::ZERO, roles, planning, max_steps).await
}

/// `run`, with each acting reply taking `delay`.
async fn run_paced(
    acting: &[&str],
    delay: Duration,
    roles: Roles,
    planning: Value,
    max_steps: u32,
) -> Run {
    let replies = acting
        .iter()
        .map(|a| (200, generic("acting", &serde_json::from_str(a).unwrap())))
        .collect();
    let (fast, _) = model_paced(replies, delay).await;
    let role_server = MockServer::start().await;
    let roles = std::sync::Arc::new(roles);
    struct Shared(std::sync::Arc<Roles>);
    impl Respond for Shared {
        fn respond(&self, r: &Request) -> ResponseTemplate {
            self.0.respond(r)
        }
    }
    for p in ["/v1/messages", "/v1/chat/completions"] {
        Mock::given(method("POST"))
            .and(path(p))
            .respond_with(Shared(roles.clone()))
            .mount(&role_server)
            .await;
    }
    let app: TestApp = app_for(
        &[&fast, &role_server],
        &[("DROIDPILOT_AGENT__KEYS__ANTHROPIC", "sk-ant-test")],
    )
    .await;
    add_phone(&app, "sim-p", None).await;
    let agent = json!({
        "kind": "planned",
        "fast": {"kind": "vision", "format": "generic", "provider": "openai", "model": "ui-model",
                 "base_url": format!("{}/v1", fast.uri())},
        "planner": {"provider": "anthropic", "model": "claude-planner", "base_url": role_server.uri()},
        "verifier": {"model": "checker", "base_url": format!("{}/v1", role_server.uri())},
        "planning": planning,
    });
    let resp = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "Set an alarm for 07:30", "device_id": "sim-p",
                    "max_steps": max_steps, "agent": agent}),
        )
        .await;
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = wait_done(&app, &id).await;
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let sse = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    let events = sse
        .split("\n\n")
        .filter_map(|block| {
            let ev = block.lines().find_map(|l| l.strip_prefix("event:"))?.trim();
            let data = block.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
            Some((ev.to_string(), serde_json::from_str(data).ok()?))
        })
        .collect();
    let trajectory: Value = app
        .get(&format!("/v1/tasks/{id}/trajectory"))
        .await
        .json()
        .await
        .unwrap();
    let acting_prompts = fast
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).unwrap();
            b["messages"].to_string()
        })
        .collect();
    app.stop().await;
    Run {
        task,
        steps,
        events,
        acting_prompts,
        trajectory,
        roles,
        _servers: (fast, role_server),
    }
}

fn no_progress_checks() -> Value {
    json!({"progress_every": 0})
}

#[tokio::test]
async fn a_late_plan_becomes_guidance_without_holding_the_acting_agent() {
    let mut plan = ok_plan("Clock app");
    plan.delay_ms = 500;
    let roles = Roles {
        plans: vec![plan],
        verdicts: vec![r#"{"done": true, "reason": "an alarm at 07:30 is listed"}"#.into()],
        ..Default::default()
    };
    // Different screens every step, so the stuck detector stays quiet.
    let acting = [
        CLOCK, NOTES, CONTACTS, SETTINGS, HOME, CLOCK, NOTES, CONTACTS, SETTINGS, HOME, CLOCK, DONE,
    ];
    // Each decision takes 100 ms, so the 500 ms plan lands mid-task (with instant
    // replies the twelve steps could all be done before it).
    let r = run_paced(
        &acting,
        Duration::from_millis(100),
        roles,
        no_progress_checks(),
        20,
    )
    .await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let kinds = r.kinds();
    assert_eq!(kinds[0], "1:plan_requested:initial", "{kinds:?}");
    let arrived = r
        .annotations()
        .into_iter()
        .find(|(_, a)| a["kind"] == "plan")
        .unwrap_or_else(|| panic!("the plan arrived: {kinds:?}"));
    assert!(
        arrived.0 > 1,
        "the plan arrived at step {}, not at once",
        arrived.0
    );
    // The decisions before the plan arrived went without guidance (nobody waited for
    // it); the one at the step it arrived had it.
    for p in &r.acting_prompts[..arrived.0 as usize - 1] {
        assert!(!p.contains("STRATEGIC GUIDANCE"));
    }
    let with = &r.acting_prompts[arrived.0 as usize - 1];
    assert!(
        with.contains("STRATEGIC GUIDANCE") && with.contains("Recommended approach: Clock app")
    );
    // Every prompt carries the device context: locale, time zone, country, apps; and
    // from the second step on, what changed on screen.
    let first = &r.acting_prompts[0];
    for fact in [
        "locale: en-US",
        "time zone: America/Los_Angeles",
        "country: us",
        "Notes (com.google.android.keep)",
    ] {
        assert!(first.contains(fact), "{fact} missing from {first}");
    }
    assert!(r.acting_prompts[1].contains("Since the previous step: appeared:"));
    // This step's windows come after the history, with the keyboard: not in the prefix
    // a provider caches.
    let windows =
        "windows (top first): com.android.systemui, com.google.android.apps.nexuslauncher";
    let at = first
        .find(windows)
        .unwrap_or_else(|| panic!("windows missing from {first}"));
    assert!(at > first.find("country: us").unwrap(), "{first}");
    // The planner saw the task, the screen and the installed apps.
    let input = r.roles.planner_inputs.lock().unwrap()[0].clone();
    assert_eq!(input["task"], "Set an alarm for 07:30");
    assert!(
        input["installed_apps"]
            .to_string()
            .contains("Clock (com.google.android.deskclock)"),
        "{input}"
    );
    // Plans and verdicts are events of their own.
    let annotated: Vec<&str> = r
        .events
        .iter()
        .filter(|(e, _)| e == "step.annotated")
        .map(|(_, v)| v["payload"]["annotation"]["kind"].as_str().unwrap())
        .collect();
    assert!(
        annotated.contains(&"plan") && annotated.contains(&"verdict"),
        "{annotated:?}"
    );
}

/// A plan that recommends split-screen (seed 002's `splitScreen`) puts the two apps side
/// by side at the next step, once, and the acting agent reads it in its guidance.
#[tokio::test]
async fn a_split_screen_recommendation_puts_both_apps_on_screen() {
    let mut p: Value = serde_json::from_str(
        plan_json("Two apps", None)
            .trim_start_matches("Here is the plan:\n```json\n")
            .trim_end_matches("\n```"),
    )
    .unwrap();
    p["splitScreen"] =
        json!({"top": "Clock", "bottom": "Notes", "reason": "read one, write the other"});
    let roles = Roles {
        plans: vec![PlanReply {
            delay_ms: 0,
            status: 200,
            text: p.to_string(),
        }],
        verdicts: vec![r#"{"done": true, "reason": "done"}"#.into()],
        ..Default::default()
    };
    let acting = [CLOCK, NOTES, CONTACTS, SETTINGS, DONE];
    let r = run_paced(
        &acting,
        Duration::from_millis(100),
        roles,
        no_progress_checks(),
        20,
    )
    .await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let names: Vec<&str> = r
        .steps
        .iter()
        .map(|s| s["action"]["action"].as_str().unwrap_or(""))
        .collect();
    let split: Vec<usize> = (0..names.len())
        .filter(|&i| names[i] == "split_screen")
        .collect();
    assert_eq!(split.len(), 1, "{names:?}");
    let at = split[0];
    assert_eq!(r.steps[at]["outcome"]["status"], "ok", "{:?}", r.steps[at]);
    assert_eq!(r.steps[at]["action"]["top"], "Clock");
    let windows = r.steps[at]["outcome"]["detail"]["windows"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(windows.len(), 2, "{windows:?}");
    // The acting agent's later prompts carry the recommendation.
    assert!(
        r.acting_prompts
            .last()
            .unwrap()
            .contains("Split-screen: Clock above Notes")
    );
}

#[tokio::test]
async fn a_failing_planner_never_fails_the_task() {
    let roles = Roles {
        // The planner's server refuses the request (a planner that answers no plan or
        // times out takes the same path: `plan_failed`, and the task goes on).
        plans: vec![PlanReply {
            delay_ms: 0,
            status: 400,
            text: String::new(),
        }],
        verdicts: vec![r#"{"done": true, "reason": "done"}"#.into()],
        ..Default::default()
    };
    let r = run(
        &[CLOCK, NOTES, CONTACTS, SETTINGS, HOME, DONE],
        roles,
        no_progress_checks(),
        10,
    )
    .await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let failed = r
        .annotations()
        .into_iter()
        .find(|(_, a)| a["kind"] == "plan_failed")
        .expect("the failure is recorded");
    assert_eq!(failed.1["trigger"], "initial");
    assert!(
        !r.acting_prompts
            .iter()
            .any(|p| p.contains("STRATEGIC GUIDANCE"))
    );
}

#[tokio::test]
async fn a_stalled_run_gets_a_recovery_plan_with_the_failure_context() {
    let roles = Roles {
        plans: vec![
            ok_plan("Clock app"),
            PlanReply {
                text: plan_json("Use the + button", Some("the agent kept switching apps")),
                ..ok_plan("")
            },
        ],
        progress: vec![
            r#"{"progressing": false, "reason": "it keeps switching between home and Clock"}"#
                .into(),
            r#"{"progressing": true, "reason": "the alarm screen is open"}"#.into(),
        ],
        verdicts: vec![r#"{"done": true, "reason": "done"}"#.into()],
        ..Default::default()
    };
    let acting = [CLOCK, HOME, CLOCK, HOME, CLOCK, HOME, CLOCK, DONE];
    let r = run(&acting, roles, json!({"progress_every": 3}), 20).await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let kinds = r.kinds();
    assert!(kinds.contains(&"4:progress".to_string()), "{kinds:?}");
    assert!(
        kinds.contains(&"4:plan_requested:progress_stall".to_string()),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k.ends_with(":plan:progress_stall")),
        "{kinds:?}"
    );
    let inputs = r.roles.planner_inputs.lock().unwrap().clone();
    assert_eq!(inputs.len(), 2, "initial + recovery");
    assert!(
        inputs[1]["failure_context"][0]
            .as_str()
            .unwrap()
            .contains("keeps switching")
    );
    assert_eq!(
        inputs[1]["previous_plan"]["approaches"][0]["name"],
        "Clock app"
    );
}

#[tokio::test]
async fn the_verifier_rejects_a_wrong_finish_and_accepts_the_right_one() {
    let roles = Roles {
        plans: vec![ok_plan("Clock app")],
        verdicts: vec![
            r#"{"done": false, "reason": "It opened the wrong app instead of Clock"}"#.into(),
            r#"{"done": true, "reason": "an alarm at 07:30 is listed"}"#.into(),
        ],
        ..Default::default()
    };
    let acting = [HOME, DONE, CLOCK, HOME, CLOCK, HOME, DONE];
    let r = run(&acting, roles, no_progress_checks(), 20).await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    // Step 2's finish was rejected and recorded as such; the agent read why.
    let s2 = &r.steps[1];
    assert_eq!(s2["outcome"]["status"], "failed");
    assert!(
        s2["outcome"]["error"]
            .as_str()
            .unwrap()
            .contains("wrong app")
    );
    assert!(r.acting_prompts[2].contains("NOT done: It opened the wrong app"));
    // The failure is shown to the acting agent under its own heading, from then on.
    assert!(!r.acting_prompts[1].contains("CONTEXT - Previous issues:"));
    let issues = r.acting_prompts[2]
        .split_once("CONTEXT - Previous issues:\\n- ")
        .unwrap_or_else(|| panic!("no previous issues in {}", r.acting_prompts[2]))
        .1;
    assert!(
        issues.split("\\n").next().unwrap().contains("wrong app"),
        "{}",
        r.acting_prompts[2]
    );
    let verdict = r.steps[1]["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "verdict")
        .unwrap()
        .clone();
    assert_eq!(verdict["accepted"], false);
    assert_eq!(verdict["wrong_task"], true);
    // A wrong task counts three failures: re-planning comes at once.
    let kinds = r.kinds();
    assert!(
        kinds
            .iter()
            .any(|k| k.ends_with(":plan_requested:step_failures")),
        "{kinds:?}"
    );
    let last = r.steps.last().unwrap();
    assert!(
        last["annotations"]
            .to_string()
            .contains(r#""accepted":true"#)
    );
}

#[tokio::test]
async fn the_last_steps_wait_for_a_last_resort_plan() {
    let roles = Roles {
        plans: vec![ok_plan("Clock app"), ok_plan("Last resort")],
        verdicts: vec![r#"{"done": true, "reason": "done"}"#.into()],
        ..Default::default()
    };
    // Step 2 fails (its target is missing); with 8 steps and 5 final ones, step 4 is in
    // the final stretch with a failure since the last plan. The initial plan (answered
    // at once) must be taken before that failure is counted, not after (taking it clears
    // the failure): each decision takes 300 ms, as a model's would, so it is back by
    // step 2 however fast the server's own part of a step is.
    let acting = [CLOCK, MISSING, HOME, CLOCK, HOME, DONE];
    let r = run_paced(
        &acting,
        Duration::from_millis(300),
        roles,
        json!({"progress_every": 0, "last_resort_steps": 5}),
        8,
    )
    .await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let kinds = r.kinds();
    assert!(kinds.contains(&"3:failure".to_string()), "{kinds:?}");
    // Blocking: requested and taken at the same step, before the acting agent decided.
    let at = r
        .annotations()
        .into_iter()
        .find(|(_, a)| a["kind"] == "plan_requested" && a["trigger"] == "last_resort")
        .unwrap_or_else(|| panic!("a last-resort plan was asked for: {kinds:?}"));
    assert_eq!(at.1["blocking"], true);
    assert!(
        kinds.contains(&format!("{}:plan:last_resort", at.0)),
        "{kinds:?}"
    );
    assert!(r.acting_prompts[at.0 as usize - 1].contains("Recommended approach: Last resort"));
}

#[tokio::test]
async fn every_role_call_is_in_the_trajectory_with_its_tokens() {
    let roles = Roles {
        plans: vec![ok_plan("Clock app")],
        progress: vec![r#"{"progressing": true, "reason": "on track"}"#.into()],
        verdicts: vec![r#"{"done": true, "reason": "done"}"#.into()],
        ..Default::default()
    };
    let r = run(
        &[CLOCK, HOME, CLOCK, DONE],
        roles,
        json!({"progress_every": 3}),
        10,
    )
    .await;
    assert_eq!(r.task["status"], "succeeded", "{:?}", r.task);
    let calls: Vec<Value> = r
        .steps
        .iter()
        .flat_map(|s| s["calls"].as_array().cloned().unwrap_or_default())
        .collect();
    let roles_seen: std::collections::BTreeSet<&str> =
        calls.iter().map(|c| c["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles_seen.into_iter().collect::<Vec<_>>(),
        ["actor", "planner", "progress", "verifier"]
    );
    let planner = calls.iter().find(|c| c["role"] == "planner").unwrap();
    assert_eq!(planner["model"], "anthropic:claude-planner");
    assert_eq!(planner["tokens_in"], 2500);
    // The step's token totals include every role's.
    let total_in: u64 = r
        .steps
        .iter()
        .map(|s| s["tokens_in"].as_u64().unwrap())
        .sum();
    let by_call: u64 = calls.iter().map(|c| c["tokens_in"].as_u64().unwrap()).sum();
    assert_eq!(total_in, by_call);
    assert_eq!(r.task["tokens_in"].as_u64().unwrap(), total_in);
    // The trajectory sums them per role.
    let roles = &r.trajectory["roles"];
    let planner = roles
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["role"] == "planner")
        .unwrap();
    assert_eq!(
        (planner["calls"].as_u64(), planner["tokens_in"].as_u64()),
        (Some(1), Some(2500))
    );
    let actor = roles
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["role"] == "actor")
        .unwrap();
    assert_eq!(actor["calls"].as_u64().unwrap(), 4);
}

#[tokio::test]
async fn a_chain_takes_the_last_agents_action_and_records_each_handover() {
    let app: TestApp = bare_app(&[]).await;
    add_phone(&app, "sim-c", None).await;
    let replay = |a: &str| {
        json!({"kind": "replay", "actions": [serde_json::from_str::<Value>(a).unwrap(),
                                               serde_json::from_str::<Value>(DONE).unwrap()]})
    };
    let agent = json!({"kind": "chain", "agents": [replay(CLOCK), replay(NOTES)]});
    let resp = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "Open Notes", "device_id": "sim-c", "agent": agent}),
        )
        .await;
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = wait_done(&app, &id).await;
    assert_eq!(task["status"], "succeeded", "{task:?}");
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    // The validator's (last agent's) action ran, and the hand-over kept what was proposed.
    assert_eq!(steps[0]["action"]["package"], "com.google.android.keep");
    let switch = &steps[0]["annotations"][0];
    assert_eq!(switch["kind"], "switch");
    assert!(switch["proposed"].as_str().unwrap().contains("deskclock"));
    assert_eq!(steps.len(), 2);
    app.stop().await;
}
