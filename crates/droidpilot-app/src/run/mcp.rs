//! `mcp_call` routing: the one interface the runner calls, over two kinds of tools:
//! Rust handlers registered in-process (`McpHandler`) and tool sources served elsewhere
//! (`ToolSource`: a remote MCP server, see `crate::mcp::client`). Each call is bounded by
//! a timeout. An unknown tool, an unavailable server or a failing tool becomes a result
//! the agent reads ("tool not available: …"), never a crashed task.
//!
//! Naming rule: an in-process tool keeps its name. A remote tool keeps its own name
//! unless that name is taken by an in-process tool, a built-in agent tool (`tap`,
//! `finish`, …) or a tool of another server; then it is offered as `server.tool`.
//! `server.tool` is also accepted for every remote tool, colliding or not.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::agent::McpTool;

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

/// A named set of tools served elsewhere (a remote MCP server).
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The source's name: the prefix of its colliding tools.
    fn name(&self) -> &str;
    /// Its tools under their own names, as last listed (kept while it is down, so a
    /// call names the outage instead of an unknown tool).
    fn tools(&self) -> Vec<McpTool>;
    /// Its own bound on a call, when it has one (else the runner's).
    fn call_timeout(&self) -> Option<Duration> {
        None
    }
    /// Calls `tool` (its own name). An outage is an `is_error` result saying so.
    async fn call(&self, tool: &str, args: Value) -> McpResult;
}

/// What the agent is told about a call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpResult {
    pub is_error: bool,
    pub content: Value,
}

impl McpResult {
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            is_error: true,
            content: Value::String(message.into()),
        }
    }
}

/// Names an MCP tool may not take as they are: the agents' own tools.
fn reserved(name: &str) -> bool {
    crate::agent::navigator::BUILTIN_TOOLS.contains(&name) || name == "mobile_use"
}

/// Where an offered name leads.
#[derive(Clone)]
enum Target {
    Local(Arc<dyn McpHandler>),
    Remote(Arc<dyn ToolSource>, String),
}

/// One offered tool: its description under the offered name, and where it leads.
struct Entry {
    tool: McpTool,
    target: Target,
}

#[derive(Default, Clone)]
pub struct McpRegistry {
    tools: Arc<RwLock<BTreeMap<String, Arc<dyn McpHandler>>>>,
    sources: Arc<RwLock<Vec<Arc<dyn ToolSource>>>>,
}

impl McpRegistry {
    pub fn register(&self, name: &str, handler: Arc<dyn McpHandler>) {
        self.tools
            .write()
            .expect("mcp registry lock")
            .insert(name.to_string(), handler);
    }

    /// Adds a remote source; its tools are offered under the naming rule above.
    pub fn add_source(&self, source: Arc<dyn ToolSource>) {
        self.sources
            .write()
            .expect("mcp registry lock")
            .push(source);
    }

    /// The offered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries().into_keys().collect()
    }

    /// The tools as agents describe them to models, under their offered names.
    pub fn tools(&self) -> Vec<McpTool> {
        self.entries().into_values().map(|e| e.tool).collect()
    }

    /// Every offered name and where it leads, by the naming rule.
    fn entries(&self) -> BTreeMap<String, Entry> {
        let mut out = BTreeMap::new();
        for (name, h) in self.tools.read().expect("mcp registry lock").iter() {
            let tool = McpTool {
                name: name.clone(),
                description: h.description(),
                input_schema: h.input_schema(),
            };
            out.insert(
                name.clone(),
                Entry {
                    tool,
                    target: Target::Local(h.clone()),
                },
            );
        }
        let sources = self.sources.read().expect("mcp registry lock").clone();
        let listed: Vec<(Arc<dyn ToolSource>, Vec<McpTool>)> = sources
            .into_iter()
            .map(|s| (s.clone(), s.tools()))
            .collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for t in listed.iter().flat_map(|(_, tools)| tools) {
            *seen.entry(t.name.as_str()).or_default() += 1;
        }
        for (source, tools) in &listed {
            for t in tools {
                let own = t.name.as_str();
                let clash = seen[own] > 1 || reserved(own) || out.contains_key(own);
                let name = match clash {
                    true => format!("{}.{own}", source.name()),
                    false => own.to_string(),
                };
                let target = Target::Remote(source.clone(), own.to_string());
                let tool = McpTool {
                    name: name.clone(),
                    ..t.clone()
                };
                out.entry(name).or_insert(Entry { tool, target });
            }
        }
        out
    }

    /// Where `tool` leads: an offered name, or `server.tool` for any remote tool.
    fn resolve(&self, tool: &str) -> Result<Target, Vec<String>> {
        let mut entries = self.entries();
        if let Some(e) = entries.remove(tool) {
            return Ok(e.target);
        }
        let qualified = tool.split_once('.').and_then(|(server, own)| {
            let sources = self.sources.read().expect("mcp registry lock");
            let s = sources.iter().find(|s| s.name() == server)?;
            s.tools()
                .iter()
                .any(|t| t.name == own)
                .then(|| Target::Remote(s.clone(), own.to_string()))
        });
        qualified.ok_or_else(|| entries.into_keys().collect())
    }

    pub async fn call(&self, tool: &str, args: Value, timeout: Duration) -> McpResult {
        let target = match self.resolve(tool) {
            Ok(t) => t,
            Err(mut available) => {
                available.retain(|n| n != tool);
                let list = if available.is_empty() {
                    "none are registered".to_string()
                } else {
                    format!("available: {}", available.join(", "))
                };
                return McpResult::error(format!("tool not available: `{tool}` ({list})"));
            }
        };
        let (timeout, call) = match target {
            Target::Local(h) => (timeout, local_call(h, args)),
            Target::Remote(s, own) => {
                let t = s.call_timeout().unwrap_or(timeout);
                let call: futures::future::BoxFuture<'static, McpResult> =
                    Box::pin(async move { s.call(&own, args).await });
                (t, call)
            }
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => McpResult::error(format!(
                "tool `{tool}` timed out after {} ms",
                timeout.as_millis()
            )),
        }
    }
}

fn local_call(
    h: Arc<dyn McpHandler>,
    args: Value,
) -> futures::future::BoxFuture<'static, McpResult> {
    Box::pin(async move {
        match h.call(args).await {
            Ok(v) => McpResult {
                is_error: false,
                content: v,
            },
            Err(e) => McpResult::error(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    #[async_trait]
    impl McpHandler for Echo {
        fn description(&self) -> String {
            "echoes".into()
        }
        async fn call(&self, args: Value) -> Result<Value, String> {
            Ok(args)
        }
    }

    /// A source with fixed tools that answers with its own name and the tool's.
    struct Fixed(&'static str, Vec<&'static str>);

    #[async_trait]
    impl ToolSource for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn tools(&self) -> Vec<McpTool> {
            (self.1.iter())
                .map(|n| McpTool {
                    name: n.to_string(),
                    description: format!("{n} of {}", self.0),
                    input_schema: serde_json::json!({"type": "object"}),
                })
                .collect()
        }
        async fn call(&self, tool: &str, _args: Value) -> McpResult {
            McpResult {
                is_error: false,
                content: Value::String(format!("{}:{tool}", self.0)),
            }
        }
    }

    fn registry() -> McpRegistry {
        let r = McpRegistry::default();
        r.register("echo", Arc::new(Echo));
        r.add_source(Arc::new(Fixed(
            "maps",
            vec!["search", "echo", "route", "tap"],
        )));
        r.add_source(Arc::new(Fixed("web", vec!["search", "fetch"])));
        r
    }

    #[test]
    fn only_colliding_remote_names_are_prefixed() {
        assert_eq!(
            registry().names(),
            [
                "echo",
                "fetch",
                "maps.echo",
                "maps.search",
                "maps.tap",
                "route",
                "web.search"
            ]
        );
    }

    #[tokio::test]
    async fn calls_reach_the_right_source_under_either_name() {
        let r = registry();
        let t = Duration::from_secs(1);
        let call = |n: &'static str| {
            let r = r.clone();
            async move { r.call(n, serde_json::json!({}), t).await.content }
        };
        assert_eq!(call("web.search").await, "web:search");
        assert_eq!(call("maps.search").await, "maps:search");
        assert_eq!(call("route").await, "maps:route");
        assert_eq!(
            call("maps.route").await,
            "maps:route",
            "qualified always works"
        );
        assert_eq!(call("maps.tap").await, "maps:tap");
        assert_eq!(call("echo").await, serde_json::json!({}), "in-process wins");
    }

    #[tokio::test]
    async fn an_unknown_tool_lists_the_offered_ones() {
        let r = registry()
            .call("search", Value::Null, Duration::from_secs(1))
            .await;
        assert!(r.is_error);
        let text = r.content.as_str().unwrap();
        assert!(text.contains("tool not available: `search`"), "{text}");
        assert!(
            text.contains("maps.search, maps.tap, route, web.search"),
            "{text}"
        );
    }
}
