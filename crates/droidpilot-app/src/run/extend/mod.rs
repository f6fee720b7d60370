//! Extension without Rust: the `[actions]` table. `[[actions.custom]]` are named
//! sequences of primitive actions with parameters (`custom.rs`), `[[actions.hooks]]` are
//! HTTP middleware called before and after each action (`hook.rs`). Scripts name custom
//! actions too (`scripts.rs`: checked at submission, expanded for a Maestro export).
//!
//! The table is parsed once into typed form when the configuration loads (a bad step,
//! an unknown placeholder, a name a built-in action holds: refused at start-up, naming
//! the action and its step), then held by `LiveActions`, which the runner, the agent
//! factory and the REST device actions read at each use. `droidpilot serve` replaces it
//! on SIGHUP (`serve::reload_actions`): the new `[actions]` applies to the next action
//! of every task; a configuration that fails to load leaves the old one in place.

pub mod custom;
pub mod hook;
pub mod scripts;

use std::sync::{Arc, RwLock};

use serde::Deserialize;

pub use custom::{CustomActionDef, ParamDef};
pub use hook::{HookConfig, HookWhen, OnError};

/// `[actions]`: operator-defined custom actions and action hooks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(try_from = "RawActions")]
pub struct ActionsConfig {
    pub custom: Vec<CustomActionDef>,
    pub hooks: Vec<HookConfig>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct RawActions {
    custom: Vec<CustomActionDef>,
    hooks: Vec<HookConfig>,
}

impl TryFrom<RawActions> for ActionsConfig {
    type Error = String;

    fn try_from(raw: RawActions) -> Result<Self, String> {
        let mut seen = std::collections::BTreeSet::new();
        for c in &raw.custom {
            if !seen.insert(c.name.as_str()) {
                return Err(format!(
                    "actions.custom `{}` is defined twice; give each custom action its own name",
                    c.name
                ));
            }
        }
        Ok(Self {
            custom: raw.custom,
            hooks: raw.hooks,
        })
    }
}

impl ActionsConfig {
    /// The custom action called `name` (as the action parser normalises it).
    pub fn custom(&self, name: &str) -> Option<&CustomActionDef> {
        self.custom.iter().find(|c| c.name == name)
    }

    /// An action parser that also knows every custom action here.
    pub fn parser(&self) -> crate::domain::ActionParser {
        let mut p = crate::domain::ActionParser::new();
        for c in &self.custom {
            // Checked when the configuration loaded.
            let _ = p.register(&c.name);
        }
        p
    }
}

/// The `[actions]` table in force, replaced as a whole by a reload.
#[derive(Default)]
pub struct LiveActions(RwLock<Arc<ActionsConfig>>);

impl LiveActions {
    pub fn new(cfg: ActionsConfig) -> Self {
        Self(RwLock::new(Arc::new(cfg)))
    }

    /// The table as it stands; a task's action uses one table from start to end.
    pub fn current(&self) -> Arc<ActionsConfig> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `cfg` in force for every action that starts from now on.
    pub fn replace(&self, cfg: ActionsConfig) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(cfg);
    }
}
