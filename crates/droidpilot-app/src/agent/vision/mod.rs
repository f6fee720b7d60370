//! Vision agents: a screenshot in, one action out, in the output format of the model
//! family (one small module per format, each with a table of real examples). All
//! formats map into the one `Action`; coordinates are scaled from the model's space
//! (0–999, 0–1000, resized pixels, or [0, 1]) to normalized points.

pub mod autoglm;
pub mod extract;
pub mod generic;
pub mod mai_ui;
pub mod ui_tars;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::parse_error::ParseError;
use super::{Agent, AgentContext, AgentError, Decision, McpTool, Meter, correction};
use crate::domain::{Action, ActionParser};
use crate::llm::{ChatModel, ChatRequest, ImageData, Message, Part, PriceTable};
pub use ui_tars::UiTarsCoords;

// A vision model family's output format. Its name (`name`) and the lists (`VARIANTS`
// from `strum::VariantArray`, the names from `strum::VariantNames`) are derived. (A doc
// comment would enter the OpenAPI.)
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum VisionFormat {
    MaiUi,
    UiTars,
    Autoglm,
    Generic,
}

impl VisionFormat {
    pub fn name(self) -> &'static str {
        self.into()
    }
    pub fn system_prompt(self, mcp_tools: &[McpTool]) -> String {
        match self {
            VisionFormat::MaiUi => mai_ui::system_prompt(mcp_tools),
            VisionFormat::UiTars => ui_tars::system_prompt(mcp_tools),
            VisionFormat::Autoglm => autoglm::system_prompt(mcp_tools),
            VisionFormat::Generic => generic::system_prompt(mcp_tools),
        }
    }
    /// Parses one reply. `image` is the screenshot's pixel size (UI-TARS-1.5 needs it).
    pub fn parse(
        self,
        text: &str,
        parser: &ActionParser,
        mcp_names: &[String],
        coords: UiTarsCoords,
        image: Option<(u32, u32)>,
    ) -> Result<Parsed, ParseError> {
        match self {
            VisionFormat::MaiUi => mai_ui::parse(text, parser, mcp_names),
            VisionFormat::UiTars => ui_tars::parse(text, parser, &ui_tars::scale(coords, image)),
            VisionFormat::Autoglm => autoglm::parse(text, parser),
            VisionFormat::Generic => generic::parse(text, parser),
        }
    }
}

/// A parsed reply: the model's reasoning and the action.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub thinking: String,
    pub action: Action,
}

pub struct VisionAgent {
    model: Arc<dyn ChatModel>,
    format: VisionFormat,
    coords: UiTarsCoords,
    parser: ActionParser,
    mcp_names: Vec<String>,
    system: String,
    prices: PriceTable,
}

impl VisionAgent {
    pub fn new(
        model: Arc<dyn ChatModel>,
        format: VisionFormat,
        mcp_tools: &[McpTool],
        prices: PriceTable,
    ) -> Self {
        Self {
            model,
            format,
            coords: UiTarsCoords::default(),
            parser: ActionParser::new(),
            mcp_names: mcp_tools.iter().map(|t| t.name.clone()).collect(),
            system: format.system_prompt(mcp_tools),
            prices,
        }
    }

    pub fn with_ui_tars_coords(mut self, c: UiTarsCoords) -> Self {
        self.coords = c;
        self
    }

    /// The request for this step: the format's system prompt, then one user message
    /// with the task, the history and the screenshot.
    pub fn build_request(&self, ctx: &AgentContext) -> Result<ChatRequest, AgentError> {
        Ok(self.request_with(ctx, self.screenshot(ctx)?))
    }

    /// The observation's screenshot encoded for this agent's model
    /// (`ScreenshotEncoding`): what the model sees, and what its points are read against.
    pub fn screenshot(&self, ctx: &AgentContext) -> Result<ImageData, AgentError> {
        let shot = ctx.observation.screenshot.as_ref();
        let shot = shot.ok_or(AgentError::NeedsScreenshot)?;
        Ok(self.model.config().screenshot.apply(shot))
    }

    fn request_with(&self, ctx: &AgentContext, shot: ImageData) -> ChatRequest {
        let text = ctx.prompt_text();
        ChatRequest::new(
            Some(self.system.clone()),
            vec![Message::user(vec![Part::Text(text), Part::Image(shot)])],
        )
    }

    pub fn parse(&self, text: &str, image: Option<(u32, u32)>) -> Result<Parsed, ParseError> {
        self.format
            .parse(text, &self.parser, &self.mcp_names, self.coords, image)
    }
}

#[async_trait]
impl Agent for VisionAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        let mut meter = Meter::new(&self.prices);
        let shot = self.screenshot(ctx)?;
        let size = shot.dimensions();
        let mut req = self.request_with(ctx, shot);
        let mut retries = 0;
        loop {
            let reply = meter.call(self.model.as_ref(), &req).await?;
            let raw = reply.text;
            match self.parse(&raw, size) {
                Ok(p) => {
                    let thinking = match (p.thinking.is_empty(), reply.reasoning) {
                        (true, Some(r)) => r,
                        _ => p.thinking,
                    };
                    return Ok(meter.decision(thinking, p.action, raw, retries));
                }
                Err(e) if retries == 0 => {
                    tracing::info!(error = %e, "vision reply unusable; asking once more");
                    retries += 1;
                    req.messages.push(Message::assistant_text(raw));
                    req.messages.push(Message::user_text(correction(&e)));
                }
                Err(error) => {
                    return Err(meter.unusable(error, raw, retries + 1));
                }
            }
        }
    }
    fn wants_device_context(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let c = self.model.config();
        format!(
            "vision/{} {}:{}",
            self.format.name(),
            c.provider.display_name().to_lowercase(),
            c.model
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use strum::VariantArray as _;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn no_input_panics_any_parser(s in ".{0,200}") {
            let p = ActionParser::new();
            for &f in VisionFormat::VARIANTS {
                let _ = f.parse(&s, &p, &[], UiTarsCoords::SmartResize, Some((1080, 2400)));
            }
        }

        #[test]
        fn no_tagged_input_panics(body in ".{0,120}", n in 0usize..4) {
            let p = ActionParser::new();
            let texts = [
                format!("<thinking>a</thinking><tool_call>{body}</tool_call>"),
                format!("<tool_call>{{\"name\": \"mobile_use\", \"arguments\": {body}"),
                format!("Thought: x\nAction: click(point='{body}')"),
                format!("<think>x</think><answer>do(action=\"Tap\", element={body})</answer>"),
            ];
            let _ = VisionFormat::VARIANTS[n].parse(&texts[n], &p, &["t".into()], UiTarsCoords::Relative1000, None);
            for t in &texts {
                for &f in VisionFormat::VARIANTS {
                    let _ = f.parse(t, &p, &[], UiTarsCoords::SmartResize, Some((1, 1)));
                }
            }
        }
    }

    #[test]
    fn prompts_document_each_action_space() {
        assert!(
            VisionFormat::MaiUi
                .system_prompt(&[])
                .contains("\"action\": \"ask_user\"")
        );
        assert!(
            VisionFormat::UiTars
                .system_prompt(&[])
                .contains("click(point='<point>x1 y1</point>')")
        );
        assert!(
            VisionFormat::Autoglm
                .system_prompt(&[])
                .contains("do(action=\"Tap\", element=[x,y])")
        );
        assert!(
            VisionFormat::Generic
                .system_prompt(&[])
                .contains("\"coordinate\": [x, y]")
        );
        let tools = [McpTool {
            name: "get_weather".into(),
            description: "Weather".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }];
        assert!(
            VisionFormat::MaiUi
                .system_prompt(&tools)
                .contains("## MCP Tools")
        );
    }
}
