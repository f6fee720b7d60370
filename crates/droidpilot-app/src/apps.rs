//! App knowledge (seed 002's `AppKnowledgeCache`): a short description of what each
//! installed app can do, for the agents' prompts and `GET /v1/devices/{id}/apps`.
//!
//! Written once per app version by the configured model (`[agent.navigator]`, when it is
//! configured and `[agent] app_descriptions` is on): the apps the store has no description
//! for at their version are sent in one request (at most `BATCH` a request) and the
//! model's JSON answer is stored (`Store::put_app_description`), so the next read makes
//! no model call. With no model, or when the call fails, an app is described by its
//! label, and nothing is stored (a model configured later still writes its own).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::device::AppInfo;
use crate::llm::{ChatModel, ChatRequest, Message};
use crate::store::Store;

/// Apps described in one model request, at most.
const BATCH: usize = 40;
/// A description's length, at most (characters).
const MAX_CHARS: usize = 160;

/// An installed app with what it can do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DescribedApp {
    pub package: String,
    /// The label a person sees in the launcher, when known.
    pub label: Option<String>,
    /// The installed version (`versionCode`), when known.
    pub version: Option<String>,
    /// What the app can do, one short sentence.
    pub description: String,
    /// Who wrote `description`: `model` (stored once per app version) or `label`.
    pub description_source: DescriptionSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DescriptionSource {
    Model,
    Label,
}

impl DescribedApp {
    /// The app as the agent's prompt lists it: `Label (package): description`, the
    /// description left out when it is only the label.
    pub fn prompt_line(&self) -> String {
        let name = match &self.label {
            Some(l) if !l.is_empty() => format!("{l} ({})", self.package),
            _ => self.package.clone(),
        };
        match self.description_source {
            DescriptionSource::Model => format!("{name}: {}", self.description),
            DescriptionSource::Label => name,
        }
    }
}

/// Describes apps, from the store or the model.
#[derive(Clone)]
pub struct AppKnowledge {
    store: Arc<dyn Store>,
    model: Option<Arc<dyn ChatModel>>,
}

impl AppKnowledge {
    /// `model`: the model that writes descriptions; None describes apps by their labels.
    pub fn new(store: Arc<dyn Store>, model: Option<Arc<dyn ChatModel>>) -> Self {
        Self { store, model }
    }

    /// Each app with its description: stored, else written by the model (and stored),
    /// else its label. Never fails: a store or model failure falls back to the label.
    pub async fn describe(&self, apps: Vec<AppInfo>) -> Vec<DescribedApp> {
        let mut known = BTreeMap::new();
        let mut missing = Vec::new();
        for a in &apps {
            match self.stored(a).await {
                Some(d) => {
                    known.insert(a.package.clone(), d);
                }
                None => missing.push(a),
            }
        }
        if let Some(model) = &self.model {
            for chunk in missing.chunks(BATCH) {
                known.extend(self.write(model.as_ref(), chunk).await);
            }
        }
        apps.into_iter()
            .map(|a| {
                let (description, description_source) = match known.remove(&a.package) {
                    Some(d) => (d, DescriptionSource::Model),
                    None => (label_of(&a), DescriptionSource::Label),
                };
                DescribedApp {
                    package: a.package,
                    label: a.label,
                    version: a.version,
                    description,
                    description_source,
                }
            })
            .collect()
    }

    async fn stored(&self, a: &AppInfo) -> Option<String> {
        let version = a.version.as_deref().unwrap_or("");
        match self.store.app_description(&a.package, version).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, package = %a.package, "could not read an app's description");
                None
            }
        }
    }

    /// Asks the model for `apps`' descriptions and stores those it gave.
    async fn write(&self, model: &dyn ChatModel, apps: &[&AppInfo]) -> BTreeMap<String, String> {
        let reply = match model.chat(&request(apps)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "the model could not describe the apps; their labels stand in");
                return BTreeMap::new();
            }
        };
        let mut got = parse_reply(&reply.text);
        got.retain(|package, _| apps.iter().any(|a| &a.package == package));
        let cfg = model.config();
        let by = format!("{}:{}", cfg.provider, cfg.model);
        for a in apps {
            let Some(d) = got.get(&a.package) else {
                continue;
            };
            let version = a.version.as_deref().unwrap_or("");
            if let Err(e) = self
                .store
                .put_app_description(&a.package, version, d, &by)
                .await
            {
                tracing::warn!(error = %e, package = %a.package, "could not store an app's description");
            }
        }
        got
    }
}

/// The label, else the package.
fn label_of(a: &AppInfo) -> String {
    match &a.label {
        Some(l) if !l.trim().is_empty() => l.trim().to_string(),
        _ => a.package.clone(),
    }
}

/// One request for a batch of apps: a JSON object from package to one sentence.
fn request(apps: &[&AppInfo]) -> ChatRequest {
    let list: Vec<String> = apps
        .iter()
        .map(|a| match &a.label {
            Some(l) => format!("- {} (label \"{l}\")", a.package),
            None => format!("- {}", a.package),
        })
        .collect();
    let mut req = ChatRequest::new(
        Some(include_str!("../prompts/app_descriptions.v1.md").to_string()),
        vec![Message::user_text(list.join("\n"))],
    );
    req.temperature = Some(0.0);
    req
}

/// The model's JSON object (also inside a code fence or prose), each description made
/// one line of at most `MAX_CHARS` characters; anything else is nothing.
fn parse_reply(text: &str) -> BTreeMap<String, String> {
    let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) else {
        return BTreeMap::new();
    };
    let Ok(map) = serde_json::from_str::<BTreeMap<String, serde_json::Value>>(
        text.get(start..=end).unwrap_or(""),
    ) else {
        return BTreeMap::new();
    };
    map.into_iter()
        .filter_map(|(k, v)| {
            let d = v.as_str()?.split_whitespace().collect::<Vec<_>>().join(" ");
            (!d.is_empty()).then(|| (k, d.chars().take(MAX_CHARS).collect()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_inside_a_fence_and_cut_to_one_line() {
        let got = parse_reply(
            "Here:\n```json\n{\"com.a\": \"Alarms\\nand timers.\", \"com.b\": 3, \"com.c\": \"\"}\n```",
        );
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [("com.a".to_string(), "Alarms and timers.".to_string())]
        );
        assert!(parse_reply("no JSON here").is_empty());
    }

    #[test]
    fn a_label_description_is_not_repeated_in_the_prompt() {
        let mut a = DescribedApp {
            package: "com.android.settings".into(),
            label: Some("Settings".into()),
            version: None,
            description: "Settings".into(),
            description_source: DescriptionSource::Label,
        };
        assert_eq!(a.prompt_line(), "Settings (com.android.settings)");
        a.description = "Wi-Fi, Bluetooth, display and app settings.".into();
        a.description_source = DescriptionSource::Model;
        assert_eq!(
            a.prompt_line(),
            "Settings (com.android.settings): Wi-Fi, Bluetooth, display and app settings."
        );
    }
}
