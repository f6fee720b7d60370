//! `mcp_call` routing: tools registered by name, each call bounded by a timeout. An
//! unknown tool or a failing one becomes a result the agent reads ("tool not available:
//! …"), never a crashed task.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

/// A tool the agent can call through `mcp_call`.
#[async_trait]
pub trait McpHandler: Send + Sync {
    fn description(&self) -> String;
    /// JSON schema of `args`.
    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(&self, args: Value) -> Result<Value, String>;
}

/// What the agent is told about a call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpResult {
    pub is_error: bool,
    pub content: Value,
}

#[derive(Default, Clone)]
pub struct McpRegistry {
    tools: Arc<RwLock<BTreeMap<String, Arc<dyn McpHandler>>>>,
}

impl McpRegistry {
    pub fn register(&self, name: &str, handler: Arc<dyn McpHandler>) {
        self.tools
            .write()
            .expect("mcp registry lock")
            .insert(name.to_string(), handler);
    }

    pub fn names(&self) -> Vec<String> {
        self.tools
            .read()
            .expect("mcp registry lock")
            .keys()
            .cloned()
            .collect()
    }

    /// The tools as agents describe them to models.
    pub fn tools(&self) -> Vec<crate::agent::McpTool> {
        self.tools
            .read()
            .expect("mcp registry lock")
            .iter()
            .map(|(n, h)| crate::agent::McpTool {
                name: n.clone(),
                description: h.description(),
                input_schema: h.input_schema(),
            })
            .collect()
    }

    pub async fn call(&self, tool: &str, args: Value, timeout: Duration) -> McpResult {
        let handler = self
            .tools
            .read()
            .expect("mcp registry lock")
            .get(tool)
            .cloned();
        let Some(h) = handler else {
            let available = self.names();
            let list = if available.is_empty() {
                "none are registered".to_string()
            } else {
                format!("available: {}", available.join(", "))
            };
            return McpResult {
                is_error: true,
                content: Value::String(format!("tool not available: `{tool}` ({list})")),
            };
        };
        match tokio::time::timeout(timeout, h.call(args)).await {
            Ok(Ok(v)) => McpResult {
                is_error: false,
                content: v,
            },
            Ok(Err(e)) => McpResult {
                is_error: true,
                content: Value::String(e),
            },
            Err(_) => McpResult {
                is_error: true,
                content: Value::String(format!(
                    "tool `{tool}` timed out after {} ms",
                    timeout.as_millis()
                )),
            },
        }
    }
}
