//! Chains that decide by consensus, a filter agent's hand-off, and the navigator's
//! grounding fallback, end to end on the virtual phone: every model is a wiremock
//! server answering in OpenAI's Chat Completions wire format (text replies for vision,
//! judge and filter agents, tool calls for navigators), and what happened is read back
//! from the stored steps, the trajectory and the task's events.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common::TestApp;
use crate::run::{add_phone, app_for, generic, model, serve_replies, submit, wait_done};

const CLOCK: &str = r#"{"action": "launch_app", "package": "com.google.android.deskclock"}"#;
const NOTES: &str = r#"{"action": "launch_app", "package": "com.google.android.keep"}"#;
const HOME: &str = r#"{"action": "key", "key": "home"}"#;
const DONE: &str = r#"{"action": "finish", "success": true, "reason": "done"}"#;

fn act(a: &str) -> Value {
    serde_json::from_str(a).unwrap()
}

/// A vision agent (generic format) whose model answers these actions in order.
async fn proposer(actions: &[Value]) -> (MockServer, Value) {
    let server = MockServer::start().await;
    let spec = proposer_on(&server, actions).await;
    (server, spec)
}

/// `proposer` on a server started before the actions were known.
async fn proposer_on(server: &MockServer, actions: &[Value]) -> Value {
    let replies = actions
        .iter()
        .map(|a| (200, generic("proposing", a)))
        .collect();
    serve_replies(server, replies, Duration::ZERO).await;
    json!({"kind": "vision", "format": "generic", "provider": "openai",
           "model": "ui-model", "base_url": format!("{}/v1", server.uri())})
}

/// A model answering these texts in order (the last repeats), e.g. a judge's.
async fn text_model(texts: &[&str]) -> MockServer {
    let (server, _) = model(texts.iter().map(|t| (200, t.to_string())).collect()).await;
    server
}

/// Serves tool calls in OpenAI's shape, one per reply, in order (the last repeats).
struct Calls {
    calls: Vec<(String, Value)>,
    n: AtomicUsize,
}

impl Respond for Calls {
    fn respond(&self, _req: &Request) -> ResponseTemplate {
        let i = self
            .n
            .fetch_add(1, Ordering::SeqCst)
            .min(self.calls.len() - 1);
        let (name, args) = &self.calls[i];
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_700_000_000, "model": "nav",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}
        }))
    }
}

async fn navigator_model(server: &MockServer, calls: Vec<(&str, Value)>) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Calls {
            calls: calls.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
            n: AtomicUsize::new(0),
        })
        .mount(server)
        .await;
}

fn model_spec(kind: &str, server: &MockServer, name: &str) -> Value {
    json!({"kind": kind, "provider": "openai", "model": name,
           "base_url": format!("{}/v1", server.uri())})
}

struct Done {
    task: Value,
    steps: Vec<Value>,
    events: Vec<(String, Value)>,
    trajectory: Value,
}

/// Runs `agent` on a fresh phone until the task ends.
async fn run(app: &TestApp, serial: &str, agent: Value) -> Done {
    let id = submit(
        app,
        json!({"instruction": "Open the Clock", "device_id": serial, "max_steps": 6, "agent": agent}),
    )
    .await;
    let task = wait_done(app, &id).await;
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
    Done {
        task,
        steps,
        events,
        trajectory,
    }
}

fn annotation<'a>(step: &'a Value, kind: &str) -> &'a Value {
    step["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} annotation on {step}"))
}

/// The home screen's first element with a label: (id, selector, centre as a 0–1 point).
async fn an_element(app: &TestApp, serial: &str) -> (u64, String, [f64; 2], String) {
    let s: Value = app
        .get(&format!("/v1/devices/{serial}/screen"))
        .await
        .json()
        .await
        .unwrap();
    let e = s["actionable_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            !e["text"].as_str().unwrap().is_empty()
                && e["selector"].as_str().unwrap().starts_with('#')
        })
        .unwrap_or_else(|| panic!("no labelled element with an id on {s}"))
        .clone();
    let b = &e["bounds"];
    let (l, t, r, bt) = (
        b["left"].as_f64().unwrap(),
        b["top"].as_f64().unwrap(),
        b["right"].as_f64().unwrap(),
        b["bottom"].as_f64().unwrap(),
    );
    (
        e["element_id"].as_u64().unwrap(),
        e["selector"].as_str().unwrap().to_string(),
        [(l + r) / 2.0 / 540.0, (t + bt) / 2.0 / 1200.0],
        e["text"].as_str().unwrap().to_string(),
    )
}

/// Three agents propose; two of them mean the same tap, written three ways apart (an
/// element id, the element's selector, a point inside it), and the third proposes
/// something else as the chain's last agent: the tap is taken, not the last agent's
/// action, and the step records each proposal, the votes and the choice.
#[tokio::test]
async fn majority_takes_the_action_two_of_three_agents_mean() {
    let (a, b, c) = (
        MockServer::start().await,
        MockServer::start().await,
        MockServer::start().await,
    );
    let app = app_for(&[&a, &b, &c], &[]).await;
    add_phone(&app, "sim-m", None).await;
    let (id, sel, _, _) = an_element(&app, "sim-m").await;
    let pa = proposer_on(&a, &[json!({"action": "tap", "element": id}), act(DONE)]).await;
    let pb = proposer_on(&b, &[json!({"action": "tap", "selector": sel}), act(DONE)]).await;
    let pc = proposer_on(&c, &[act(NOTES), act(DONE)]).await;
    let d = run(
        &app,
        "sim-m",
        json!({"kind": "chain", "decide": "majority", "agents": [pa, pb, pc]}),
    )
    .await;
    assert_eq!(d.task["status"], "succeeded", "{:?}", d.task);
    assert_eq!(d.steps[0]["action"]["action"], "tap", "{}", d.steps[0]);
    assert_eq!(d.steps[0]["action"]["element"], id);
    let c = annotation(&d.steps[0], "consensus");
    assert_eq!(c["decide"], "majority");
    assert_eq!(c["outcome"], "majority");
    assert_eq!(c["votes"], 2);
    assert_eq!(c["chosen"], 1);
    let proposals = c["proposals"].as_array().unwrap();
    assert_eq!(proposals.len(), 3);
    assert!(
        proposals[1]["action"]
            .as_str()
            .unwrap()
            .contains(&sel.replace('"', "\\\""))
    );
    assert!(
        proposals[2]["action"]
            .as_str()
            .unwrap()
            .contains("com.google.android.keep")
    );
    assert!(
        proposals[2]["agent"]
            .as_str()
            .unwrap()
            .starts_with("agents[2] vision")
    );
    // The same record is published and in the trajectory.
    assert!(
        d.events.iter().any(
            |(e, p)| e == "step.annotated" && p["payload"]["annotation"]["kind"] == "consensus"
        )
    );
    assert!(d.trajectory.to_string().contains("\"consensus\""));
    // Every agent's calls count with the step.
    assert_eq!(d.steps[0]["model_calls"], 3, "{}", d.steps[0]);
    app.stop().await;
}

/// Two agents, two different actions: no majority. The chain's `tie` rule (here the
/// first agent's) chooses, and the step says it was a tie and which rule chose.
#[tokio::test]
async fn a_tie_is_recorded_and_falls_back_to_the_configured_rule() {
    let (sa, pa) = proposer(&[act(CLOCK), act(DONE)]).await;
    let (sb, pb) = proposer(&[act(NOTES), act(DONE)]).await;
    let app = app_for(&[&sa, &sb], &[]).await;
    add_phone(&app, "sim-t", None).await;
    let d = run(
        &app,
        "sim-t",
        json!({"kind": "chain", "decide": "majority", "tie": "first", "agents": [pa, pb]}),
    )
    .await;
    assert_eq!(d.task["status"], "succeeded", "{:?}", d.task);
    assert_eq!(
        d.steps[0]["action"]["package"],
        "com.google.android.deskclock"
    );
    let c = annotation(&d.steps[0], "consensus");
    assert_eq!(c["outcome"], "tie");
    assert_eq!(c["tie_rule"], "first");
    assert_eq!(c["chosen"], 1);
    assert_eq!(c["votes"], 1);
    // Both agents finish at step 2: unanimous, no tie.
    assert_eq!(annotation(&d.steps[1], "consensus")["outcome"], "majority");
    app.stop().await;
}

/// A judge agent is shown the three proposals, numbered, and picks the second: that
/// action runs, although neither first nor last.
#[tokio::test]
async fn a_judge_picks_proposal_two() {
    let (sa, pa) = proposer(&[act(HOME), act(DONE)]).await;
    let (sb, pb) = proposer(&[act(CLOCK), act(DONE)]).await;
    let (sc, pc) = proposer(&[act(NOTES), act(DONE)]).await;
    let judge = text_model(&["2", "1"]).await;
    let app = app_for(&[&sa, &sb, &sc, &judge], &[]).await;
    add_phone(&app, "sim-j", None).await;
    let mut j = model_spec("navigator", &judge, "judge");
    j["role"] = json!("judge");
    let d = run(
        &app,
        "sim-j",
        json!({"kind": "chain", "decide": "judge", "agents": [pa, pb, pc, j]}),
    )
    .await;
    assert_eq!(d.task["status"], "succeeded", "{:?}", d.task);
    assert_eq!(
        d.steps[0]["action"]["package"],
        "com.google.android.deskclock"
    );
    let c = annotation(&d.steps[0], "consensus");
    assert_eq!(c["outcome"], "judge");
    assert_eq!(c["chosen"], 2);
    assert_eq!(c["judge_answer"], "2");
    assert!(c["judge"].as_str().unwrap().starts_with("agents[3] judge"));
    // The judge saw every proposal, numbered.
    let asked: Value =
        serde_json::from_slice(&judge.received_requests().await.unwrap()[0].body).unwrap();
    let text = asked["messages"].to_string();
    assert!(
        text.contains("2. agents[1]") && text.contains("deskclock"),
        "{text}"
    );
    assert!(
        text.contains("3. agents[2]") && text.contains("com.google.android.keep"),
        "{text}"
    );
    let roles: Vec<&str> = d.steps[0]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert!(roles.contains(&"judge"), "{roles:?}");
    app.stop().await;
}

/// A judge that answers in prose is not guessed at: the step is rejected with an error
/// naming the judge's answer, and none of the proposals runs.
#[tokio::test]
async fn a_judges_unparsable_answer_fails_the_step_clearly() {
    let (sa, pa) = proposer(&[act(CLOCK)]).await;
    let (sb, pb) = proposer(&[act(NOTES)]).await;
    let judge = text_model(&["I would go with the Clock one"]).await;
    let app = app_for(&[&sa, &sb, &judge], &[]).await;
    add_phone(&app, "sim-u", None).await;
    let mut j = model_spec("navigator", &judge, "judge");
    j["role"] = json!("judge");
    let d = run(
        &app,
        "sim-u",
        json!({"kind": "chain", "decide": "judge", "agents": [pa, pb, j]}),
    )
    .await;
    assert_eq!(d.task["status"], "failed", "{:?}", d.task);
    let s = &d.steps[0];
    assert_eq!(s["outcome"]["status"], "rejected", "{s}");
    let err = s["outcome"]["error"].as_str().unwrap();
    assert!(
        err.contains("judge must answer with one proposal's number, 1 to 2"),
        "{err}"
    );
    assert!(err.contains("I would go with the Clock one"), "{err}");
    assert!(
        d.steps.iter().all(|s| s["outcome"]["status"] == "rejected"),
        "{:?}",
        d.steps
    );
    app.stop().await;
}

/// A filter agent drops an element and adds a note; the next agent's request (a
/// navigator's) lacks that element's line and carries the note, and the step records
/// the change.
#[tokio::test]
async fn an_observation_filters_change_is_what_the_next_agent_receives() {
    let (filter, nav) = (MockServer::start().await, MockServer::start().await);
    let app = app_for(&[&filter, &nav], &[]).await;
    add_phone(&app, "sim-f", None).await;
    let (id, _, _, _) = an_element(&app, "sim-f").await;
    let edit = format!("{{\"drop\": [{id}], \"note\": \"The Clock is in the app drawer\"}}");
    serve_replies(&filter, vec![(200, edit)], Duration::ZERO).await;
    navigator_model(
        &nav,
        vec![("finish", json!({"success": true, "reason": "seen"}))],
    )
    .await;
    let mut f = model_spec("navigator", &filter, "filter");
    f["role"] = json!("filter");
    let d = run(
        &app,
        "sim-f",
        json!({"kind": "chain", "agents": [f, model_spec("navigator", &nav, "nav")]}),
    )
    .await;
    assert_eq!(d.task["status"], "succeeded", "{:?}", d.task);
    let line = format!("\\n[{id}] ");
    let filter_saw =
        serde_json::from_slice::<Value>(&filter.received_requests().await.unwrap()[0].body)
            .unwrap()
            .to_string();
    assert!(
        filter_saw.contains(&line),
        "the filter sees the element: {filter_saw}"
    );
    let nav_saw = serde_json::from_slice::<Value>(&nav.received_requests().await.unwrap()[0].body)
        .unwrap()
        .to_string();
    assert!(
        !nav_saw.contains(&line),
        "the navigator still sees element {id}: {nav_saw}"
    );
    assert!(
        nav_saw.contains("The Clock is in the app drawer"),
        "{nav_saw}"
    );
    let c = annotation(&d.steps[0], "observation_changed");
    assert_eq!(c["dropped"], json!([id]));
    assert_eq!(c["note"], "The Clock is in the app drawer");
    app.stop().await;
}

/// A navigator unsure of its tap (confidence 0.3, below the task's `grounding_below` of
/// 0.6) has the target located by the grounding model instead: the tap lands on the
/// grounded point, and the switch is an `agent.grounding_fallback` event and an
/// annotation naming the element before and after. A sure tap (0.9) is not grounded.
#[tokio::test]
async fn a_low_confidence_tap_falls_back_to_the_grounding_model() {
    let (nav, grounder) = (MockServer::start().await, MockServer::start().await);
    let g_url = format!("{}/v1", grounder.uri());
    let app = app_for(
        &[&nav],
        &[
            ("DROIDPILOT_AGENT__GROUNDING__PROVIDER", "openai"),
            ("DROIDPILOT_AGENT__GROUNDING__MODEL", "grounder"),
            ("DROIDPILOT_AGENT__GROUNDING__BASE_URL", g_url.as_str()),
            ("DROIDPILOT_AGENT__KEYS__OPENAI", "sk-test-grounding"),
        ],
    )
    .await;
    add_phone(&app, "sim-g", None).await;
    let (id, _, _, text) = an_element(&app, "sim-g").await;
    navigator_model(
        &nav,
        vec![
            ("tap", json!({"element": id, "confidence": 0.9})),
            ("key", json!({"key": "home"})),
            ("tap", json!({"element": id, "confidence": 0.3})),
            ("finish", json!({"success": true})),
        ],
    )
    .await;
    let click = "<thinking>found it</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [500, 500]}}</tool_call>";
    serve_replies(&grounder, vec![(200, click.to_string())], Duration::ZERO).await;
    let mut n = model_spec("navigator", &nav, "nav");
    n["grounding_below"] = json!(0.6);
    let d = run(&app, "sim-g", n).await;
    assert_eq!(d.task["status"], "succeeded", "{:?}", d.task);
    // The sure tap acted on the element, without the grounder.
    assert_eq!(d.steps[0]["action"]["element"], id, "{}", d.steps[0]);
    assert!(
        d.steps[0]["annotations"]
            .as_array()
            .is_none_or(|a| a.is_empty())
    );
    // The unsure one was grounded.
    let s = &d.steps[2];
    assert!(s["action"]["coordinate"].is_array(), "{s}");
    let g = annotation(s, "grounding_fallback");
    assert_eq!(g["reason"], "low_confidence");
    assert_eq!(g["confidence"], 0.3);
    assert!(
        g["before"]
            .as_str()
            .unwrap()
            .starts_with(&format!("element {id} ")),
        "{g}"
    );
    assert!(g["before"].as_str().unwrap().contains(&text), "{g}");
    assert!(
        g["after"].as_str().unwrap().starts_with("point (0.50"),
        "{g}"
    );
    let ev: Vec<&Value> = d
        .events
        .iter()
        .filter(|(e, _)| e == "agent.grounding_fallback")
        .map(|(_, p)| &p["payload"])
        .collect();
    assert_eq!(ev.len(), 1, "{:?}", d.events);
    assert_eq!(ev[0]["step"], 3);
    assert_eq!(ev[0]["reason"], "low_confidence");
    assert_eq!(grounder.received_requests().await.unwrap().len(), 1);
    // The tap tool offered `confidence` because the task asked for the fallback.
    let first: Value =
        serde_json::from_slice(&nav.received_requests().await.unwrap()[0].body).unwrap();
    let tap = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "tap")
        .unwrap();
    assert!(
        tap["function"]["parameters"]["properties"]["confidence"].is_object(),
        "{tap}"
    );
    app.stop().await;
}

/// The spec's mistakes are refused at submission, naming the field, with a hint.
#[tokio::test]
async fn chain_and_grounding_specs_are_checked_at_submission() {
    let app = crate::run::bare_app(&[]).await;
    add_phone(&app, "sim-s", None).await;
    let nav = json!({"kind": "navigator"});
    let mut judge = nav.clone();
    judge["role"] = json!("judge");
    for (agent, field, words) in [
        (
            json!({"kind": "chain", "decide": "judge", "agents": [nav, nav]}),
            "agent.decide",
            "role\": \"judge",
        ),
        (
            json!({"kind": "chain", "decide": "majority", "agents": [nav, judge]}),
            "agents[1].role",
            "decide\": \"judge",
        ),
        (
            json!({"kind": "chain", "tie": "first", "agents": [nav, nav]}),
            "agent.tie",
            "majority",
        ),
        (
            json!({"kind": "chain", "decide": "vote", "agents": [nav, nav]}),
            "agent.decide",
            "majority",
        ),
        (
            json!({"kind": "chain", "agents": [nav, {"kind": "navigator", "rol": "judge"}]}),
            "agents[1].rol",
            "role",
        ),
        (
            json!({"kind": "navigator", "role": "judge"}),
            "agent.role",
            "chain",
        ),
        (
            json!({"kind": "navigator", "grounding_below": 0.5}),
            "agent.grounding_below",
            "[agent.grounding]",
        ),
        (
            json!({"kind": "vision", "grounding_below": 0.5}),
            "agent.grounding_below",
            "navigators only",
        ),
    ] {
        let r = app
            .post_json(
                "/v1/tasks",
                &json!({"instruction": "x", "device_id": "sim-s", "agent": agent}),
            )
            .await;
        let (status, code, msg, hint) = crate::common::error_of(r).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_agent"),
            "{agent}: {msg}"
        );
        let all = format!("{msg} {hint}");
        assert!(all.contains(field) && all.contains(words), "{agent}: {all}");
    }
    app.stop().await;
}
