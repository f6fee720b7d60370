//! Time in droidpilot's own code per decision, with no network: a `ChatModel` that
//! does what the real OpenAI client does locally (build the body, serialize it, parse a
//! canned reply body) drives the navigator and the MAI-UI vision agent over a median
//! screen (40 actionable elements). Also prints tokens sent and received per decision
//! (o200k_base; the screenshot's image tokens are not counted).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use droidpilot::agent::{
    Agent, AgentContext, History, NavigatorAgent, Observation, VisionAgent, VisionFormat,
};
use droidpilot::domain::Bounds;
use droidpilot::llm::{
    ChatModel, ChatReply, ChatRequest, ImageData, LlmError, ModelConfig, PriceTable, ProviderKind,
    openai,
};
use droidpilot::screen::{ActionableElement, ElementAction, ScreenRepresentation};
use serde_json::json;

struct LocalOpenAi {
    cfg: ModelConfig,
    reply: Vec<u8>,
}

#[async_trait]
impl ChatModel for LocalOpenAi {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = serde_json::to_vec(&openai::build_body(&self.cfg, req)).unwrap();
        black_box(body);
        let v = serde_json::from_slice(&self.reply).unwrap();
        openai::parse_reply(&v)
    }
}

fn median_screen() -> ScreenRepresentation {
    let mut elements = String::new();
    let mut els = Vec::new();
    for i in 0..40u32 {
        let text = format!("Setting item number {i} with a label");
        elements.push_str(&format!("[{i}] TextView \"{text}\" #item_{i} clickable\n"));
        els.push(ActionableElement {
            element_id: i,
            selector: format!("#item_{i}"),
            alternative_selectors: vec![format!(":text(\"{text}\")")],
            kind: "TextView".into(),
            text,
            actions: vec![ElementAction::Click],
            bounds: Bounds::new(0, 200 + 50 * i as i32, 1080, 250 + 50 * i as i32),
            source: Default::default(),
        });
    }
    ScreenRepresentation {
        app_package: Some("com.android.settings".into()),
        activity: None,
        has_modal: false,
        elements,
        summary: "settings".into(),
        actionable_elements: els,
    }
}

fn screenshot() -> ImageData {
    let img = image::RgbImage::from_fn(1080, 2400, |x, y| {
        image::Rgb([
            (x % 251) as u8,
            (y % 241) as u8,
            ((x / 40 + y / 40) % 2 * 200) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    ImageData::from_bytes(out.into_inner()).unwrap()
}

fn ctx(with_shot: bool) -> AgentContext {
    let mut history = History::new(8);
    for i in 0..8 {
        history.push_step(droidpilot::agent::StepRecord {
            step: i,
            thinking: "looking for Wi-Fi".into(),
            action: droidpilot::domain::Action::Key {
                key: droidpilot::domain::Key::Back,
            },
            outcome: "screen changed".into(),
            failed: false,
        });
    }
    AgentContext::new(
        "Open Settings and turn on Wi-Fi".into(),
        Observation {
            tree: None,
            screen: median_screen(),
            screenshot: with_shot.then(screenshot),
            step_count: 8,
            max_steps: 30,
            elapsed: Duration::from_secs(40),
        },
        history,
    )
}

fn reply(msg: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
    )
    .unwrap()
}

fn tokens(s: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(s)
        .len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut cfg = ModelConfig::new(ProviderKind::Openai, "m");
    cfg.base_url = Some("http://127.0.0.1:8000/v1".into());

    let nav_reply = reply(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": "{\"element\": 17}"}}]}));
    let nav_model = Arc::new(LocalOpenAi {
        cfg: cfg.clone(),
        reply: nav_reply,
    });
    let mut nav = NavigatorAgent::new(nav_model, &[], PriceTable::default(), false);
    let nctx = ctx(false);

    let mai_text = "<thinking>\nThe Wi-Fi row is the third item; I will click it.\n</thinking>\n<tool_call>\n{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [540, 333]}}\n</tool_call>";
    let mai_model = Arc::new(LocalOpenAi {
        cfg: cfg.clone(),
        reply: reply(json!({"role": "assistant", "content": mai_text})),
    });
    let mut mai = VisionAgent::new(mai_model, VisionFormat::MaiUi, &[], PriceTable::default());
    let vctx = ctx(true);

    // Token figures, printed once.
    let req = nav.build_request(&nctx);
    let nav_in = tokens(&serde_json::to_string(&openai::build_body(&cfg, &req)).unwrap());
    let vreq = mai.build_request(&vctx).unwrap();
    let mut vbody = serde_json::to_value(openai::build_body(&cfg, &vreq)).unwrap();
    vbody["messages"][1]["content"][1] = json!({"type": "image_url"});
    let mai_in = tokens(&vbody.to_string());
    eprintln!(
        "tokens per decision (o200k_base, image excluded): navigator sent {nav_in}, received {}; mai-ui sent {mai_in}, received {}; screenshot PNG {} bytes",
        tokens("{\"element\": 17}") + 3,
        tokens(mai_text),
        vctx.observation.screenshot.as_ref().unwrap().bytes().len()
    );

    c.bench_function(
        "navigator decision (40-element screen, 8-step history)",
        |b| b.iter(|| rt.block_on(nav.next(black_box(&nctx))).unwrap()),
    );
    c.bench_function("mai-ui decision (1080x2400 PNG screenshot)", |b| {
        b.iter(|| rt.block_on(mai.next(black_box(&vctx))).unwrap())
    });
    let p = droidpilot::domain::ActionParser::new();
    c.bench_function("mai-ui parse only", |b| {
        b.iter(|| {
            VisionFormat::MaiUi
                .parse(black_box(mai_text), &p, &[], Default::default(), None)
                .unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
