//! Extension points around each action: middleware that may rewrite or skip an action
//! before it runs and observe its result after, and handlers for custom actions
//! registered at run time. Both run as `run::hooks::RunHook`s (`MiddlewareHook`,
//! `CustomActionHook`); a new extension implements `RunHook` directly.

use async_trait::async_trait;
use serde_json::Value;

use crate::device::Device;
use crate::domain::{Action, TaskId};

/// What middleware decided about an action.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run this action (possibly changed).
    Run(Action),
    /// Do not run it; the reason is recorded and shown to the agent.
    Skip(String),
}

#[async_trait]
pub trait ActionMiddleware: Send + Sync {
    async fn before(&self, task: TaskId, step: u32, action: Action) -> Verdict {
        let _ = (task, step);
        Verdict::Run(action)
    }
    /// `outcome` is `Ok(detail)` or `Err(message)`.
    async fn after(
        &self,
        task: TaskId,
        step: u32,
        action: &Action,
        outcome: &Result<Value, String>,
    ) {
        let _ = (task, step, action, outcome);
    }
}

/// Runs a custom action (`ActionParser::register`) on the task's device.
#[async_trait]
pub trait CustomActionHandler: Send + Sync {
    async fn run(
        &self,
        device: &dyn Device,
        args: &serde_json::Map<String, Value>,
    ) -> Result<Value, String>;
}
