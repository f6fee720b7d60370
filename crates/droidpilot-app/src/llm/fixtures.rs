//! Test support for the request-body tests: one conversation with every kind of part,
//! and a field-by-field comparison of a serialised body with a hand-written one.

use serde::Serialize;
use serde_json::{Value, json};

use super::types::{ChatRequest, ImageData, Message, Part, Role, ToolCall, ToolChoice, ToolSpec};

/// The PNG signature: enough for `ImageData`, and its base64 is known by heart.
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
pub const PNG_BASE64: &str = "iVBORw0KGgo=";

pub fn tap_schema() -> Value {
    json!({"type": "object", "properties": {"element": {"type": "integer"}}, "required": ["element"]})
}

/// System prompt; a user turn with text and a screenshot; an assistant turn with text
/// and two tool calls (one without arguments); a user turn answering both calls (the
/// second failed) with a text after; two tools, one required; temperature 0.2.
pub fn full_request() -> ChatRequest {
    let calls = Message {
        role: Role::Assistant,
        parts: vec![
            Part::Text("Tapping Settings.".into()),
            Part::ToolCall(ToolCall::new("call_1", "tap", &json!({"element": 3}))),
            Part::ToolCall(ToolCall {
                id: "call_2".into(),
                name: "back".into(),
                raw_arguments: String::new(),
            }),
        ],
    };
    let results = Message::user(vec![
        Part::ToolResult {
            call_id: "call_1".into(),
            name: "tap".into(),
            content: "tapped element 3".into(),
            is_error: false,
        },
        Part::ToolResult {
            call_id: "call_2".into(),
            name: "back".into(),
            content: "nothing to go back to".into(),
            is_error: true,
        },
        Part::Text("What next?".into()),
    ]);
    let screen = Message::user(vec![
        Part::Text("Open Wi-Fi settings".into()),
        Part::Image(ImageData::from_bytes(PNG).unwrap()),
    ]);
    let mut req = ChatRequest::new(
        Some("You operate an Android phone.".into()),
        vec![screen, calls, results],
    );
    req.tools = vec![
        ToolSpec {
            name: "tap".into(),
            description: "Tap an element".into(),
            parameters: tap_schema(),
        },
        ToolSpec {
            name: "back".into(),
            description: "Press Back".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    ];
    req.tool_choice = ToolChoice::Required;
    req.temperature = Some(0.2);
    req
}

/// The body as the server reads it: serialised to bytes, parsed back.
pub fn wire(body: &impl Serialize) -> Value {
    serde_json::from_slice(&serde_json::to_vec(body).unwrap()).unwrap()
}

/// Asserts `body` has exactly `expected`'s top-level fields, each equal, naming the
/// field (and the message index, for arrays of messages) that differs.
pub fn assert_fields(body: &Value, expected: Value) {
    let (Value::Object(got), Value::Object(want)) = (body, &expected) else {
        panic!("not objects: {body}");
    };
    let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(got), keys(want), "top-level fields");
    for (field, want) in want {
        match (&got[field], want) {
            (Value::Array(g), Value::Array(w)) => {
                assert_eq!(g.len(), w.len(), "{field}: length");
                for (i, (g, w)) in g.iter().zip(w).enumerate() {
                    assert_eq!(g, w, "{field}[{i}]");
                }
            }
            (g, w) => assert_eq!(g, w, "{field}"),
        }
    }
}
