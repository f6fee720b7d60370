//! `droidpilot bench tokens`: what each model request costs in tokens, per agent kind
//! and role, on the eval's sim tasks.
//!
//! Each selected task runs its reference solution on a fresh virtual phone. At every step
//! the screen is observed as the runner observes it (the dump through the screen
//! pipeline, the screenshot, the installed apps and locale, the diff against the previous
//! screen, the history window of the steps before), and each agent's own request builder
//! makes the request it would send: the navigator, the four vision formats, the
//! planned agent's roles (the planner at the first step, the progress checker at every
//! step, the verifier at the finish), these through a recording model that answers
//! nothing, and a script replay's recovery (AI in the middle) at every tap, as if the
//! tapped element's selector had not been found. No model is called; the reference solution stands in for the model's answers
//! (a recorded-response model), so the figures depend on the prompts, not on a model.
//!
//! A request's text is counted with o200k_base (tiktoken-rs, OpenAI's tokenizer of the
//! gpt-4o and later models; Claude and Gemini tokenize differently, so for them it is an
//! estimate), split into the system prompt, the tool schemas (as the Chat Completions body
//! writes them), the history, the screen's element list, and the rest (task, step, device
//! facts); a screenshot by each provider's published rule (`image_tokens`). The
//! *prefix* is the part of a call byte-identical to the previous call of the same role
//! (what a provider can serve from its cache; a task's first call is compared with the
//! previous task's last, as a server runs task after task); *new* is the text after it;
//! *cached* is what OpenAI serves of the prefix (nothing under 1,024 tokens, then in
//! steps of 128).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use crate::agent::context::{AgentContext, DeviceContext, History, Observation, ScreenDiff};
use crate::agent::planned::roles::{self, PlanInput};
use crate::agent::{NavigatorAgent, StepRecord, VisionAgent, VisionFormat};
use crate::device::Device;
use crate::device::exec::{ExecContext, execute};
use crate::device::sim::{SimConfig, SimDevice, SimTask};
use crate::domain::{Action, ActionableElement, LinearTransform, ScreenSize};
use crate::llm::{
    ChatModel, ChatReply, ChatRequest, LlmError, ModelConfig, Part, PriceTable, ProviderKind,
    StopReason, Usage,
};
use crate::screen::{ReprOptions, Screen, count_o200k};

/// What to measure.
#[derive(Debug, Clone)]
pub struct TokensOptions {
    /// Task id globs, as `droidpilot eval --tasks`; empty: every task.
    pub tasks: Vec<String>,
    /// The phone's screen (the screenshot's size decides its image tokens).
    pub screen: ScreenSize,
}

impl Default for TokensOptions {
    fn default() -> Self {
        Self {
            tasks: Vec::new(),
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
        }
    }
}

/// One request's tokens by part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Split {
    pub total: f64,
    pub system: f64,
    pub tools: f64,
    pub history: f64,
    /// The screen's element list.
    pub screen: f64,
    /// The rest of the text: the task, the step, the device facts, JSON keys.
    pub rest: f64,
    /// The screenshot, by OpenAI's rule (`image_tokens`).
    pub image: f64,
    /// Byte-identical to the start of the previous call of this role.
    pub prefix: f64,
    /// What OpenAI's cache serves of the prefix (≥ 1,024 tokens, steps of 128).
    pub cached: f64,
    /// The text after the prefix: what a call costs at full price once a cache serves
    /// its whole prefix (a self-hosted server's prefix cache, or a provider's once the
    /// prefix passes its minimum). The screenshot is left out (its own column: it
    /// changes at every step, so it is never cached).
    pub new: f64,
}

impl Split {
    fn uncached(&self) -> f64 {
        self.total - self.cached
    }
    fn add(&mut self, o: &Split) {
        for (a, b) in self.fields_mut().into_iter().zip(o.fields()) {
            *a += b;
        }
    }
    fn scale(&mut self, k: f64) {
        for a in self.fields_mut() {
            *a *= k;
        }
    }
    fn fields(&self) -> [f64; 10] {
        [
            self.total,
            self.system,
            self.tools,
            self.history,
            self.screen,
            self.rest,
            self.image,
            self.prefix,
            self.cached,
            self.new,
        ]
    }
    fn fields_mut(&mut self) -> [&mut f64; 10] {
        [
            &mut self.total,
            &mut self.system,
            &mut self.tools,
            &mut self.history,
            &mut self.screen,
            &mut self.rest,
            &mut self.image,
            &mut self.prefix,
            &mut self.cached,
            &mut self.new,
        ]
    }
}

/// One role's figures over the tasks.
#[derive(Debug, Clone, Serialize)]
pub struct RoleTokens {
    /// `navigator`, `vision/mai-ui`…, `planner`, `progress`, `verifier`.
    pub role: String,
    pub calls: usize,
    /// Each part: the median over the tasks of the task's mean per call.
    pub per_call: Split,
    /// The median over the tasks of the uncached tokens per call.
    pub uncached_per_call: f64,
    /// Of all the role's input tokens, the share OpenAI's cache would serve.
    pub cached_share: f64,
}

/// Image tokens of the screenshot at the phone's size, by provider.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ImageRules {
    pub width: u32,
    pub height: u32,
    pub openai: u64,
    pub anthropic: u64,
    pub gemini: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TokensReport {
    pub tokenizer: &'static str,
    pub tasks: usize,
    pub roles: Vec<RoleTokens>,
    pub image: ImageRules,
}

/// OpenAI (gpt-4o, `detail: high`): fit in 2048², shortest side to 768, then 170 per
/// 512-pixel tile plus 85 (platform.openai.com/docs/guides/images-vision).
pub fn openai_image_tokens(w: u32, h: u32) -> u64 {
    let (mut w, mut h) = (w as f64, h as f64);
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    (w, h) = (w * short, h * short);
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    tiles as u64 * 170 + 85
}

/// Anthropic: long edge to at most 1568 pixels, then width × height / 750
/// (docs.anthropic.com/en/docs/build-with-claude/vision).
pub fn anthropic_image_tokens(w: u32, h: u32) -> u64 {
    let (w, h) = (w as f64, h as f64);
    let k = (1568.0 / w.max(h)).min(1.0);
    ((w * k).round() * (h * k).round() / 750.0).ceil() as u64
}

/// Gemini 2.x: 258 for an image of at most 384 pixels each way, else 258 per 768×768
/// tile (ai.google.dev/gemini-api/docs/tokens).
pub fn gemini_image_tokens(w: u32, h: u32) -> u64 {
    if w <= 384 && h <= 384 {
        return 258;
    }
    (w.div_ceil(768) * h.div_ceil(768)) as u64 * 258
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    #[error(transparent)]
    Tasks(#[from] crate::eval::EvalError),
    #[error("the virtual phone failed: {0}")]
    Phone(String),
}

/// A model that records each request and answers with nothing usable: the roles'
/// request builders run through it.
struct Recorder {
    cfg: ModelConfig,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            cfg: ModelConfig::new(ProviderKind::Openai, "gpt-4o"),
            seen: Mutex::new(Vec::new()),
        }
    }
    fn take(&self) -> Vec<ChatRequest> {
        std::mem::take(&mut self.seen.lock().expect("recorder"))
    }
}

#[async_trait]
impl ChatModel for Recorder {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        self.seen.lock().expect("recorder").push(req.clone());
        Ok(ChatReply {
            text: "{}".into(),
            reasoning: None,
            tool_calls: Vec::new(),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model: self.cfg.model.clone(),
            latency: Duration::ZERO,
            ttft: None,
            attempts: 1,
        })
    }
}

/// The agents whose requests are measured, built once.
struct Agents {
    recorder: Arc<Recorder>,
    navigator: NavigatorAgent,
    vision: Vec<(VisionFormat, VisionAgent)>,
}

impl Agents {
    fn new() -> Self {
        let recorder = Arc::new(Recorder::new());
        let model: Arc<dyn ChatModel> = recorder.clone();
        let prices = PriceTable::default();
        let vision = <VisionFormat as strum::VariantArray>::VARIANTS
            .iter()
            .map(|f| (*f, VisionAgent::new(model.clone(), *f, &[], prices.clone())))
            .collect();
        Self {
            navigator: NavigatorAgent::new(model, &[], prices, false),
            recorder,
            vision,
        }
    }

    /// Every request each role would send at this step, by role name.
    async fn requests(&self, ctx: &AgentContext, first: bool) -> Vec<(String, ChatRequest)> {
        let mut out = vec![("navigator".to_string(), self.navigator.build_request(ctx))];
        for (f, a) in &self.vision {
            if let Ok(r) = a.build_request(ctx) {
                out.push((format!("vision/{}", f.name()), r));
            }
        }
        let prices = PriceTable::default();
        let model: Arc<dyn ChatModel> = self.recorder.clone();
        if first {
            let _ = roles::plan(
                model.clone(),
                prices.clone(),
                PlanInput::new(ctx, &[], None),
            )
            .await;
            out.extend(
                self.recorder
                    .take()
                    .into_iter()
                    .map(|r| ("planner".into(), r)),
            );
        }
        let _ = roles::check_progress(model.as_ref(), &prices, ctx).await;
        out.extend(
            self.recorder
                .take()
                .into_iter()
                .map(|r| ("progress".into(), r)),
        );
        out
    }

    async fn verifier(&self, ctx: &AgentContext, claim: &str) -> Vec<(String, ChatRequest)> {
        let model: Arc<dyn ChatModel> = self.recorder.clone();
        let _ = roles::verify_finish(model.as_ref(), &PriceTable::default(), ctx, claim).await;
        let reqs = self.recorder.take();
        reqs.into_iter().map(|r| ("verifier".into(), r)).collect()
    }
}

/// One phone's screen as the runner observes it.
struct Seen {
    ctx: AgentContext,
    screen: Option<Arc<Screen>>,
}

/// What the runner would give the agent at this point of a task.
struct Walk<'a> {
    phone: &'a SimDevice,
    task: &'a SimTask,
    size: ScreenSize,
    history: History,
    device: DeviceContext,
    previous: Option<Vec<ActionableElement>>,
}

impl Walk<'_> {
    async fn observe(&mut self, step: u32) -> Result<Seen, TokensError> {
        let p = self.phone;
        let phone = |e: crate::device::DeviceError| TokensError::Phone(e.to_string());
        let xml = p.hierarchy().await.map_err(phone)?;
        let shot = p.screenshot().await.map_err(phone)?;
        let current = p.current_app().await.ok();
        let opts = ReprOptions {
            screen: Some(self.size),
            activity: current.and_then(|c| c.activity),
            ..ReprOptions::default()
        };
        let screen =
            Screen::from_xml(&xml, &opts).map_err(|e| TokensError::Phone(e.to_string()))?;
        let repr = screen.representation(&opts);
        let png = shot.png().map_err(phone)?;
        let mut device = self.device.clone();
        device.app = repr.app_package.clone();
        device.activity = repr.activity.clone();
        device.keyboard_visible = screen.keyboard_visible();
        let diff = (self.previous.as_ref())
            .and_then(|before| ScreenDiff::between(before, &repr.actionable_elements));
        self.previous = Some(repr.actionable_elements.clone());
        let mut ctx = AgentContext::new(
            self.task.instruction.to_string(),
            Observation {
                screen: repr,
                tree: None,
                screenshot: crate::llm::ImageData::from_bytes(png).ok(),
                step_count: step - 1,
                max_steps: crate::eval::step_budget(self.task),
                // A fixed pace: the figures must not depend on the machine.
                elapsed: Duration::from_secs(3 * u64::from(step - 1)),
            },
            self.history.clone(),
        );
        ctx.device = device;
        ctx.diff = diff;
        Ok(Seen {
            ctx,
            screen: Some(Arc::new(screen)),
        })
    }

    /// Runs one reference action and remembers it as the runner's history would.
    async fn act(&mut self, step: u32, action: &Action, seen: &Seen) {
        let ctx = ExecContext {
            screen: seen.screen.as_deref(),
            size: self.size,
            transform: &LinearTransform,
        };
        let outcome = match execute(self.phone, action, &ctx).await {
            Ok(_) => "screen changed".to_string(),
            Err(e) => format!("failed: {e}"),
        };
        self.history.push_step(StepRecord {
            step,
            thinking: String::new(),
            action: action.clone(),
            outcome,
            failed: false,
        });
    }
}

/// The request AI in the middle would send if a replay of this step's tap did not find
/// its element on this screen: a one-step script tapping the element's selector.
fn recovery(ctx: &AgentContext, action: &Action, size: ScreenSize) -> Option<ChatRequest> {
    use crate::agent::script::recover::{StepError, recovery_request};
    use crate::domain::{CoordinateTransform, Target};
    let Action::Tap { target } = action else {
        return None;
    };
    let Target::Coordinate(p) = &target.0 else {
        return None;
    };
    let px = LinearTransform.to_pixel(*p, size);
    let el = (ctx.observation.screen.actionable_elements.iter())
        .filter(|e| e.bounds.contains(px))
        .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()))?;
    let script = crate::script::Script::from_json(&serde_json::json!({
        "name": "bench", "goal": ctx.instruction,
        "steps": [{"action": "tap", "selector": el.selector}],
    }))
    .ok()?;
    let err = StepError {
        error_type: "element_not_found",
        message: format!("no element matches {}", el.selector),
        selector: Some(el.selector.clone()),
    };
    Some(recovery_request(ctx, &script, 0, &err))
}

/// The requests of one task, in order, by role.
async fn task_requests(
    agents: &Agents,
    task: &SimTask,
    size: ScreenSize,
) -> Result<Vec<(String, ChatRequest)>, TokensError> {
    let phone = SimDevice::new(SimConfig {
        serial: "tokens-1".into(),
        width: size.width,
        height: size.height,
        ..SimConfig::default()
    })
    .map_err(|e| TokensError::Phone(e.to_string()))?;
    phone.reset_to(task);
    let mut device = DeviceContext::default();
    if let Ok(apps) = phone.installed_apps().await {
        device.installed_apps = Arc::new(
            apps.into_iter()
                .map(|a| match a.label {
                    Some(l) if !l.is_empty() => format!("{l} ({})", a.package),
                    _ => a.package,
                })
                .collect(),
        );
    }
    if let Ok(l) = phone.locale().await {
        (device.locale, device.timezone, device.country) = (l.locale, l.timezone, l.country);
    }
    let mut walk = Walk {
        phone: &phone,
        task,
        size,
        history: History::new(8),
        device,
        previous: None,
    };
    let mut out = Vec::new();
    let reference = task.reference();
    for (i, action) in reference.iter().enumerate() {
        let step = i as u32 + 1;
        let seen = walk.observe(step).await?;
        out.extend(agents.requests(&seen.ctx, i == 0).await);
        if let Some(r) = recovery(&seen.ctx, action, size) {
            out.push(("recovery".into(), r));
        }
        walk.act(step, action, &seen).await;
    }
    // The finish: the acting agents decide it, the verifier checks it.
    let step = reference.len() as u32 + 1;
    let seen = walk.observe(step).await?;
    let mut last = agents.requests(&seen.ctx, reference.is_empty()).await;
    last.extend(agents.verifier(&seen.ctx, "the task is done").await);
    out.extend(last);
    Ok(out)
}

/// The request as one string in the order providers read it (tools, system, messages),
/// images as a marker: what a prefix cache compares.
fn linear(req: &ChatRequest) -> String {
    let mut s = tools_json(req);
    s.push('\u{1}');
    s.push_str(req.system.as_deref().unwrap_or_default());
    for m in &req.messages {
        s.push('\u{1}');
        for p in &m.parts {
            match p {
                Part::Text(t) => s.push_str(t),
                Part::Image(i) => s.push_str(&format!("\u{2}image {}\u{2}", i.bytes().len())),
                Part::ToolCall(c) => s.push_str(&c.raw_arguments),
                Part::ToolResult { content, .. } => s.push_str(content),
            }
        }
    }
    s
}

/// The tools as the Chat Completions body writes them.
fn tools_json(req: &ChatRequest) -> String {
    if req.tools.is_empty() {
        return String::new();
    }
    let cfg = ModelConfig::new(ProviderKind::Openai, "gpt-4o");
    let body = serde_json::to_value(crate::llm::openai::build_body(&cfg, req)).unwrap_or_default();
    body["tools"].to_string()
}

/// The user-side text of a request, all messages.
fn user_text(req: &ChatRequest) -> String {
    let mut s = String::new();
    for m in &req.messages {
        for p in &m.parts {
            if let Part::Text(t) = p {
                s.push_str(t);
            }
        }
    }
    s
}

/// OpenAI's prompt cache: nothing under 1,024 tokens, then in steps of 128.
pub fn openai_cached(prefix: u64) -> u64 {
    if prefix < 1024 {
        return 0;
    }
    1024 + (prefix - 1024) / 128 * 128
}

/// One request's split; `previous` is the previous call of this role.
fn split(req: &ChatRequest, history: &str, elements: &str, previous: Option<&str>) -> Split {
    let tok = |s: &str| count_o200k(s) as f64;
    let text = user_text(req);
    let image: f64 = (req.messages.iter().flat_map(|m| &m.parts))
        .filter_map(|p| match p {
            Part::Image(i) => i
                .dimensions()
                .map(|(w, h)| openai_image_tokens(w, h) as f64),
            _ => None,
        })
        .sum();
    let system = tok(req.system.as_deref().unwrap_or_default());
    let tools = tok(&tools_json(req));
    let all_text = tok(&text);
    let history = if !history.is_empty() && text.contains(history) {
        tok(history)
    } else {
        0.0
    };
    let screen = if text.contains(elements) {
        tok(elements)
    } else {
        0.0
    };
    let this = linear(req);
    let prefix = previous.map_or(0.0, |p| {
        let n = common_prefix(p, &this);
        tok(&this[..n].replace(['\u{1}', '\u{2}'], ""))
    });
    Split {
        total: system + tools + all_text + image,
        system,
        tools,
        history,
        screen,
        rest: (all_text - history - screen).max(0.0),
        image,
        prefix,
        cached: openai_cached(prefix as u64) as f64,
        new: (system + tools + all_text - prefix).max(0.0),
    }
}

/// The length in bytes of the longest common prefix, on a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = 0;
    for ((i, x), y) in a.char_indices().zip(b.chars()) {
        if x != y {
            return i;
        }
        n = i + x.len_utf8();
    }
    n
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    match v.len() % 2 {
        1 => v[m],
        _ => (v[m - 1] + v[m]) / 2.0,
    }
}

/// Per role: each task's calls (splits), in task order.
type ByRole = BTreeMap<String, Vec<Vec<Split>>>;

/// Runs the bench: every selected task's reference solution, every role's requests.
pub async fn bench_tokens(
    opts: &TokensOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<TokensReport, TokensError> {
    let tasks = crate::eval::select(&opts.tasks)?;
    let agents = Agents::new();
    let mut by_role: ByRole = BTreeMap::new();
    // A role's previous call, across tasks: a server runs task after task, and a
    // provider's cache serves a task's first call the prefix it shares with the last
    // task's (the system prompt and the tools).
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for t in &tasks {
        progress(t.id);
        let reqs = task_requests(&agents, t, opts.screen).await?;
        let mut this_task: BTreeMap<String, Vec<Split>> = BTreeMap::new();
        for (role, req) in reqs {
            let (history, elements) = context_strings(&req);
            let s = split(
                &req,
                &history,
                &elements,
                last.get(&role).map(String::as_str),
            );
            last.insert(role.clone(), linear(&req));
            this_task.entry(role).or_default().push(s);
        }
        for (role, calls) in this_task {
            by_role.entry(role).or_default().push(calls);
        }
    }
    let (w, h) = (opts.screen.width, opts.screen.height);
    Ok(TokensReport {
        tokenizer: "o200k_base",
        tasks: tasks.len(),
        roles: by_role.into_iter().map(|(r, t)| summarise(r, t)).collect(),
        image: ImageRules {
            width: w,
            height: h,
            openai: openai_image_tokens(w, h),
            anthropic: anthropic_image_tokens(w, h),
            gemini: gemini_image_tokens(w, h),
        },
    })
}

/// The history block and the element list inside a request's text, found by their
/// headings (the element list is the text after the last screen heading).
fn context_strings(req: &ChatRequest) -> (String, String) {
    let text = user_text(req);
    let history = match (
        text.find("Answers and tool results:"),
        text.find("Previous steps"),
    ) {
        (Some(a), _) | (None, Some(a)) => {
            // The history ends where the step's own lines or the screen begin.
            let end = [
                "\nStep ",
                "\nNow: ",
                "\nDevice: ",
                "\nSince the previous",
                "\nScreen",
            ]
            .iter()
            .filter_map(|h| text[a..].find(h))
            .min()
            .map_or(text.len(), |e| a + e + 1);
            text[a..end].to_string()
        }
        _ => String::new(),
    };
    let elements = match text.find("\"current_screen\":") {
        Some(i) => {
            // The roles' JSON documents: the screen string's value.
            let de = serde_json::Deserializer::from_str(&text[i + 17..]).into_iter::<String>();
            de.into_iter()
                .next()
                .and_then(Result::ok)
                .map(|s| serde_json::to_string(&s).unwrap_or_default())
        }
        None => text
            .rfind("\nScreen")
            .and_then(|i| text[i..].find(":\n").map(|j| text[i + j + 2..].to_string())),
    };
    (history, elements.unwrap_or_default())
}

fn summarise(role: String, tasks: Vec<Vec<Split>>) -> RoleTokens {
    let calls = tasks.iter().map(Vec::len).sum();
    let means: Vec<Split> = (tasks.iter())
        .map(|calls| {
            let mut m = Split::default();
            calls.iter().for_each(|c| m.add(c));
            m.scale(1.0 / calls.len().max(1) as f64);
            m
        })
        .collect();
    let col = |f: fn(&Split) -> f64| median(means.iter().map(f).collect());
    let per_call = Split {
        total: col(|s| s.total),
        system: col(|s| s.system),
        tools: col(|s| s.tools),
        history: col(|s| s.history),
        screen: col(|s| s.screen),
        rest: col(|s| s.rest),
        image: col(|s| s.image),
        prefix: col(|s| s.prefix),
        cached: col(|s| s.cached),
        new: col(|s| s.new),
    };
    let all = tasks.iter().flatten();
    let (total, cached) = all.fold((0.0, 0.0), |(t, c), s| (t + s.total, c + s.cached));
    RoleTokens {
        role,
        calls,
        per_call,
        uncached_per_call: col(Split::uncached),
        cached_share: if total > 0.0 { cached / total } else { 0.0 },
    }
}

/// The report as a table.
pub fn format_report(r: &TokensReport) -> String {
    let mut s = format!(
        "Tokens per call ({}; screenshots by OpenAI's rule), the median over {} tasks of each task's mean per call\n",
        r.tokenizer, r.tasks
    );
    s += &format!(
        "{:<18} {:>5} {:>6} {:>6} {:>6} {:>7} {:>6} {:>5} {:>5} {:>6} {:>5} {:>6} {:>8} {:>6}\n",
        "role",
        "calls",
        "total",
        "system",
        "tools",
        "history",
        "screen",
        "rest",
        "image",
        "prefix",
        "new",
        "cached",
        "uncached",
        "cached%"
    );
    for x in &r.roles {
        let p = &x.per_call;
        s += &format!(
            "{:<18} {:>5} {:>6.0} {:>6.0} {:>6.0} {:>7.0} {:>6.0} {:>5.0} {:>5.0} {:>6.0} {:>5.0} {:>6.0} {:>8.0} {:>6.0}%\n",
            x.role,
            x.calls,
            p.total,
            p.system,
            p.tools,
            p.history,
            p.screen,
            p.rest,
            p.image,
            p.prefix,
            p.new,
            p.cached,
            x.uncached_per_call,
            x.cached_share * 100.0
        );
    }
    let i = &r.image;
    s += &format!(
        "A {}×{} screenshot: OpenAI {} tokens, Anthropic {}, Gemini {}.\n",
        i.width, i.height, i.openai, i.anthropic, i.gemini
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The providers' own worked examples.
    #[test]
    fn image_tokens_follow_each_providers_published_rule() {
        assert_eq!(openai_image_tokens(1024, 1024), 765);
        assert_eq!(openai_image_tokens(2048, 4096), 1105);
        assert_eq!(anthropic_image_tokens(1000, 1000), 1334);
        assert_eq!(gemini_image_tokens(384, 300), 258);
        assert_eq!(gemini_image_tokens(1080, 2400), 8 * 258);
    }

    #[test]
    fn openai_caches_from_1024_tokens_in_steps_of_128() {
        assert_eq!(openai_cached(1023), 0);
        assert_eq!(openai_cached(1024), 1024);
        assert_eq!(openai_cached(1300), 1280);
        assert_eq!(common_prefix("abcé", "abcè"), 3);
        assert_eq!(common_prefix("ab", "abc"), 2);
    }

    /// The bench runs a task and splits every role's calls; the navigator's system
    /// prompt and tools repeat, so its calls after the first share a prefix.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_task_is_measured_per_role_with_a_shared_prefix() {
        let opts = TokensOptions {
            tasks: vec!["settings.bluetooth_on".into()],
            ..TokensOptions::default()
        };
        let r = bench_tokens(&opts, &|_| {}).await.unwrap();
        let role = |n: &str| r.roles.iter().find(|x| x.role == n).unwrap();
        let nav = role("navigator");
        assert_eq!(nav.calls, 3, "two reference actions, then the finish");
        let p = nav.per_call;
        assert!(p.system > 0.0 && p.tools > 0.0 && p.screen > 0.0, "{p:?}");
        // The first call has no previous one: the mean over 3 is 2/3 of the later ones'.
        assert!(p.prefix >= (p.system + p.tools) * 2.0 / 3.0 - 1.0, "{p:?}");
        assert_eq!(role("planner").calls, 1);
        assert_eq!(role("verifier").calls, 1);
        assert!(role("vision/generic").per_call.image > 0.0);
        let table = format_report(&r);
        assert!(table.contains("navigator"), "{table}");
    }

    /// The navigator's targets: at most 1,000 tokens a step in total, and at most 300
    /// after the prefix a cache serves, the median over the tasks (over the Settings and
    /// Clock tasks here, 20 of the eval's 64; `droidpilot bench tokens` has all of them).
    #[tokio::test(flavor = "multi_thread")]
    async fn the_navigator_stays_within_its_token_targets() {
        let opts = TokensOptions {
            tasks: vec!["settings.*".into(), "clock.*".into()],
            ..TokensOptions::default()
        };
        let r = bench_tokens(&opts, &|_| {}).await.unwrap();
        let nav = r.roles.iter().find(|x| x.role == "navigator").unwrap();
        let p = nav.per_call;
        assert!(p.total <= 1000.0, "{p:?}");
        assert!(p.new <= 300.0, "{p:?}");
        assert!(p.new > 0.0 && p.prefix > p.system + p.tools, "{p:?}");
    }
}
