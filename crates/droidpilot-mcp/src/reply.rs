//! What a tool call answers: a result (JSON text, plain text, an image) or a tool error in
//! the one error shape (`{"error": {"code", "message", "hint"}}`). A caller's mistake is a
//! tool error the model can read and act on, never a protocol error.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::service::AppError;

/// A failed tool call: the same code, message and hint as the REST API gives.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    pub hint: String,
}

impl ToolError {
    pub fn new(code: &str, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// Arguments that do not fit the tool's input schema; serde's message names the field.
    pub fn arguments(tool: &str, message: impl std::fmt::Display) -> Self {
        Self::new(
            "invalid_arguments",
            format!("`{tool}`: {message}"),
            format!(
                "Fix the named field; `{tool}`'s input schema (tools/list) lists every field it takes."
            ),
        )
    }

    /// The result the client receives: `isError` set, the error as JSON text, its hint
    /// naming tools instead of CLI commands and REST paths (`in_tool_words`).
    pub fn into_result(self) -> CallToolResult {
        let hint = in_tool_words(&self.hint);
        let body = json!({"error": {"code": self.code, "message": self.message, "hint": hint}});
        let mut r = CallToolResult::error(vec![ContentBlock::text(body.to_string())]);
        r.structured_content = Some(body);
        r
    }
}

/// What the shared hints name for a REST or command-line user, and the tool an MCP
/// client calls for it instead. Longer phrases first: they contain shorter ones.
const TOOL_WORDS: &[(&str, &str)] = &[
    (
        "Check the selector against the current screen (`droidpilot screen dump.xml`).",
        "Check the selector against the current screen (read_screen).",
    ),
    (
        "List devices with `droidpilot devices` or GET /v1/devices.",
        "List devices with list_devices.",
    ),
    (
        "add a device (POST /v1/devices), or run `droidpilot devices`.",
        "or call list_devices to see who holds each phone.",
    ),
    ("GET /v1/devices/{id}/screen", "read_screen"),
    ("GET /v1/devices/{id}/apps", "list_apps"),
    ("GET /v1/devices/{id}", "list_devices"),
    ("POST /v1/tasks/{id}/cancel", "cancel_task"),
    ("GET /v1/tasks/{id}", "get_task"),
    ("GET /v1/tasks", "get_task"),
    ("POST /v1/tasks", "run_task"),
];

/// `hint` in the words of an MCP client: tool names for the REST paths and CLI commands
/// the shared hints name.
pub fn in_tool_words(hint: &str) -> String {
    TOOL_WORDS
        .iter()
        .fold(hint.to_string(), |h, (from, to)| h.replace(from, to))
}

impl From<AppError> for ToolError {
    /// The application's error as a tool error: the same code, message and hint.
    fn from(e: AppError) -> Self {
        Self::new(e.code, e.message, e.hint)
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> Self {
        AppError::from(e).into()
    }
}

impl From<droidpilot_app::device::DeviceError> for ToolError {
    fn from(e: droidpilot_app::device::DeviceError) -> Self {
        AppError::from(e).into()
    }
}

impl From<droidpilot_app::device::exec::ExecError> for ToolError {
    fn from(e: droidpilot_app::device::exec::ExecError) -> Self {
        let mut message = e.to_string();
        if let Some(s) = e.selector() {
            message.push_str(&format!(" (selector `{s}`)"));
        }
        Self::new(e.error_type(), message, e.hint())
    }
}

/// A tool call's outcome before it goes on the wire.
pub type ToolResult = Result<CallToolResult, ToolError>;

/// A JSON result: pretty text for the model, the same value as structured content.
pub fn json_result(v: &impl Serialize) -> ToolResult {
    let v = serde_json::to_value(v)
        .map_err(|e| ToolError::new("internal_error", e.to_string(), "This is a bug."))?;
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    Ok(r)
}

/// Reads a tool's arguments into `T` (which refuses unknown fields by name).
pub fn parse<T: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::arguments(tool, e))
}

/// Takes the required `device_id` out of a device tool's arguments.
pub fn take_device_id(tool: &str, args: &mut Map<String, Value>) -> Result<String, ToolError> {
    match args.remove("device_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(other) => Err(ToolError::arguments(
            tool,
            format!("field `device_id` must be a device id string such as \"sim-1\", got {other}"),
        )),
        None => Err(ToolError::arguments(
            tool,
            "missing field `device_id` (list_devices gives the ids)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_tools_not_cli_commands_or_rest_paths() {
        let shared = [
            crate::screen::ResolveError::NotFound {
                selector: "#nothing".into(),
                off_screen: 0,
                closest: vec![],
            }
            .hint(),
            droidpilot_app::device::pool::PoolError::NotFound("x".into()).hint(),
            droidpilot_app::device::DeviceError::AppNotFound("x".into()).hint(),
        ];
        for hint in shared {
            let e = ToolError::new("c", "m", hint.clone()).into_result();
            let shown = e.structured_content.unwrap()["error"]["hint"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                !shown.contains("/v1/") && !shown.contains("droidpilot "),
                "{hint} -> {shown}"
            );
            assert!(
                ["read_screen", "list_devices", "list_apps"]
                    .iter()
                    .any(|t| shown.contains(t)),
                "{shown}"
            );
        }
    }
}
