//! The grounding fallback: when the navigator's target cannot be resolved from the
//! element map (no such id, or only a description), or its answer carries a
//! `confidence` below the agent's `grounding_below`, a `Grounder` is asked for the
//! point on the screenshot (a `grounding_fallback` annotation on the step, published as
//! `agent.grounding_fallback`). `ModelGrounder` asks a vision model in one of the vision
//! formats and keeps the point of the tap it answers with.

use std::sync::Arc;

use async_trait::async_trait;

use super::vision::{UiTarsCoords, VisionFormat};
use super::{AgentError, Meter};
use crate::domain::action::TargetField;
use crate::domain::{Action, ActionParser, NormPoint, Target};
use crate::llm::{ChatModel, ChatRequest, ImageData, Message, Part, PriceTable, Usage};

pub struct GroundingRequest<'a> {
    /// What to find, in words: "the Send button".
    pub description: &'a str,
    pub screenshot: &'a ImageData,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Grounded {
    pub point: NormPoint,
    pub usage: Usage,
    pub cost: Option<f64>,
    pub model_calls: u32,
    /// The grounder's calls, logged under its role.
    pub calls: Vec<crate::domain::ModelCall>,
}

#[async_trait]
pub trait Grounder: Send + Sync {
    async fn ground(&self, req: &GroundingRequest<'_>) -> Result<Grounded, AgentError>;
}

pub struct ModelGrounder {
    model: Arc<dyn ChatModel>,
    format: VisionFormat,
    prices: PriceTable,
}

impl ModelGrounder {
    pub fn new(model: Arc<dyn ChatModel>, format: VisionFormat, prices: PriceTable) -> Self {
        Self {
            model,
            format,
            prices,
        }
    }
}

#[async_trait]
impl Grounder for ModelGrounder {
    async fn ground(&self, req: &GroundingRequest<'_>) -> Result<Grounded, AgentError> {
        let mut meter = Meter::for_role(&self.prices, crate::domain::ModelRole::Grounder);
        // The point is read against the image the model saw.
        let shot = self.model.config().screenshot.apply(req.screenshot);
        let chat = ChatRequest::new(
            Some(self.format.system_prompt(&[])),
            vec![Message::user(vec![
                Part::Text(format!(
                    "Task: tap {}. Output only the tap on that element.",
                    req.description
                )),
                Part::Image(shot.clone()),
            ])],
        );
        let reply = meter.call(self.model.as_ref(), &chat).await?;
        let parsed = self
            .format
            .parse(
                &reply.text,
                &ActionParser::new(),
                &[],
                UiTarsCoords::default(),
                shot.dimensions(),
            )
            .map_err(|e| {
                AgentError::Grounding(format!("the grounding model's answer did not parse: {e}"))
            })?;
        let point = match parsed.action {
            Action::Tap {
                target: TargetField(Target::Coordinate(p)),
            }
            | Action::LongPress {
                target: TargetField(Target::Coordinate(p)),
                ..
            }
            | Action::DoubleTap {
                target: TargetField(Target::Coordinate(p)),
            } => p,
            other => {
                return Err(AgentError::Grounding(format!(
                    "the grounding model answered `{}` instead of a tap on \"{}\"",
                    other.name(),
                    req.description
                )));
            }
        };
        Ok(Grounded {
            point,
            usage: meter.usage,
            cost: meter.cost,
            model_calls: meter.calls,
            calls: meter.log,
        })
    }
}

/// Where a grounded point is, for the step's record: the point, and the element there.
pub fn describe_point(p: NormPoint, obs: &super::Observation) -> String {
    let at = format!("point ({:.3}, {:.3})", p.x(), p.y());
    let Some((w, h)) = obs.screenshot.as_ref().and_then(|s| s.dimensions()) else {
        return at;
    };
    let px = crate::domain::PixelPoint {
        x: (p.x() * f64::from(w)) as i32,
        y: (p.y() * f64::from(h)) as i32,
    };
    let el = (obs.screen.actionable_elements.iter())
        .filter(|e| e.bounds.contains(px))
        .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()));
    match el {
        Some(e) => format!("{at}, element {} {} \"{}\"", e.element_id, e.kind, e.text),
        None => at,
    }
}
