//! MCP's shapes turned into the agent's: a listed `Tool` into an `McpTool`, a
//! `CallToolResult` into the `McpResult` the runner feeds back as the seed's
//! `tool_result`. Text stays text, structured content stays JSON, media is named but
//! left out (the agent reads text), and `isError` is kept.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use crate::agent::McpTool;
use crate::run::mcp::McpResult;

/// A listed tool as agents describe it to models.
pub fn tool_of(t: Tool) -> McpTool {
    let description = t
        .description
        .map(|d| d.to_string())
        .or(t.title.clone())
        .unwrap_or_default();
    McpTool {
        name: t.name.to_string(),
        description,
        input_schema: Value::Object((*t.input_schema).clone()),
    }
}

/// The result the agent reads: the content blocks joined (text as is, a placeholder
/// for each media block), as JSON when that text is a JSON object or array; the
/// structured content when there is no block (servers send both, the text being the
/// JSON, and the SDKs wrap a plain return value as `{"result": …}`).
pub fn from_call_result(r: CallToolResult) -> McpResult {
    let is_error = r.is_error.unwrap_or(false);
    let text = r.content.iter().map(text_of).collect::<Vec<_>>().join("\n");
    let content = match (text.is_empty(), r.structured_content) {
        (false, _) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => Value::String(text),
        },
        (true, Some(v)) if !v.is_null() => v,
        (true, _) => Value::String("(the tool returned no content)".into()),
    };
    McpResult { is_error, content }
}

fn text_of(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image omitted: {}]", i.mime_type),
        ContentBlock::Audio(a) => format!("[audio omitted: {}]", a.mime_type),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => format!("[resource omitted: {}]", uri_of(other)),
        },
        ContentBlock::ResourceLink(l) => format!("[resource link: {}]", l.uri),
        _ => "[content of a kind droidpilot does not read]".into(),
    }
}

fn uri_of(r: &ResourceContents) -> &str {
    match r {
        ResourceContents::TextResourceContents { uri, .. } => uri,
        ResourceContents::BlobResourceContents { uri, .. } => uri,
        _ => "(unknown)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: Value) -> McpResult {
        from_call_result(serde_json::from_value(json).unwrap())
    }

    #[test]
    fn text_json_media_and_errors_map_to_what_the_agent_reads() {
        let r = result(serde_json::json!({"content": [
            {"type": "text", "text": "two places"},
            {"type": "image", "data": "iVBOR", "mimeType": "image/png"}]}));
        assert_eq!(r.content, "two places\n[image omitted: image/png]");
        assert!(!r.is_error);
        let r = result(serde_json::json!({
            "content": [{"type": "text", "text": "{\"n\": 2}"}],
            "structuredContent": {"n": 2}}));
        assert_eq!(r.content, serde_json::json!({"n": 2}));
        let r = result(serde_json::json!({
            "content": [{"type": "text", "text": "2 found"}],
            "structuredContent": {"result": "2 found"}}));
        assert_eq!(
            r.content, "2 found",
            "text first: the SDKs wrap plain values"
        );
        let r = result(serde_json::json!({"content": [], "structuredContent": {"n": 3}}));
        assert_eq!(r.content, serde_json::json!({"n": 3}));
        let r = result(serde_json::json!({
            "content": [{"type": "text", "text": "lookup failed"}], "isError": true}));
        assert_eq!(
            (r.is_error, r.content),
            (true, Value::from("lookup failed"))
        );
    }
}
