//! The provider-neutral request and reply: messages with text, image, tool-call and
//! tool-result parts; tools as JSON schemas; usage, stop reason and timings.
//!
//! Every provider module translates these to and from its own wire format, so agents
//! never see a provider's JSON.

use std::ops::{Add, AddAssign};
use std::time::Duration;

use bytes::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::LlmError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// A PNG or JPEG image. The bytes are kept as they came from the device; base64 is
/// produced only when a request body is written.
#[derive(Clone, PartialEq)]
pub struct ImageData {
    mime: ImageMime,
    bytes: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageMime {
    Png,
    Jpeg,
}

impl ImageMime {
    pub fn as_str(self) -> &'static str {
        match self {
            ImageMime::Png => "image/png",
            ImageMime::Jpeg => "image/jpeg",
        }
    }
}

impl std::fmt::Debug for ImageData {
    // Screenshots are large; a Debug dump of a request must stay readable.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ImageData({}, {} bytes)",
            self.mime.as_str(),
            self.bytes.len()
        )
    }
}

impl ImageData {
    /// Accepts PNG or JPEG bytes, recognised by their magic numbers.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Self, LlmError> {
        let bytes = bytes.into();
        let mime = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            ImageMime::Png
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            ImageMime::Jpeg
        } else {
            return Err(LlmError::InvalidImage {
                reason: format!(
                    "{} bytes that are neither PNG nor JPEG (no magic number)",
                    bytes.len()
                ),
            });
        };
        Ok(Self { mime, bytes })
    }
    pub fn mime(&self) -> ImageMime {
        self.mime
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    pub fn base64(&self) -> String {
        self.base64_text().to_string()
    }
    /// `data:image/png;base64,…` as OpenAI-compatible servers take it.
    pub fn data_url(&self) -> String {
        self.data_url_text().to_string()
    }
    /// The base64 text as request bodies write it: serialised straight into the body,
    /// so a screenshot is never held as a base64 `String`.
    pub fn base64_text(&self) -> Base64Text<'_> {
        Base64Text(self)
    }
    /// The `data:` URL as request bodies write it, like `base64_text`.
    pub fn data_url_text(&self) -> DataUrlText<'_> {
        DataUrlText(self)
    }
    /// Width and height read from the PNG IHDR or the JPEG SOF marker, without decoding.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        let b = &self.bytes;
        match self.mime {
            ImageMime::Png => {
                let w = u32::from_be_bytes(b.get(16..20)?.try_into().ok()?);
                let h = u32::from_be_bytes(b.get(20..24)?.try_into().ok()?);
                Some((w, h))
            }
            ImageMime::Jpeg => {
                let mut i = 2;
                while i + 9 < b.len() {
                    if b[i] != 0xFF {
                        return None;
                    }
                    let marker = b[i + 1];
                    let len = u16::from_be_bytes([b[i + 2], b[i + 3]]) as usize;
                    if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
                        let h = u16::from_be_bytes([b[i + 5], b[i + 6]]) as u32;
                        let w = u16::from_be_bytes([b[i + 7], b[i + 8]]) as u32;
                        return Some((w, h));
                    }
                    i += 2 + len;
                }
                None
            }
        }
    }
}

/// An image's base64 text, encoded while it is written (`Display`, and `Serialize` as a
/// JSON string through `collect_str`, which serde_json writes without a `String`).
#[derive(Clone, Copy)]
pub struct Base64Text<'a>(&'a ImageData);

impl std::fmt::Display for Base64Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let engine = &base64::engine::general_purpose::STANDARD;
        base64::display::Base64Display::new(&self.0.bytes, engine).fmt(f)
    }
}

impl std::fmt::Debug for Base64Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64Text({:?})", self.0)
    }
}

impl Serialize for Base64Text<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// An image as a `data:<mime>;base64,…` URL, encoded while it is written.
#[derive(Clone, Copy)]
pub struct DataUrlText<'a>(&'a ImageData);

impl std::fmt::Display for DataUrlText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data:{};base64,{}",
            self.0.mime.as_str(),
            Base64Text(self.0)
        )
    }
}

impl std::fmt::Debug for DataUrlText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataUrlText({:?})", self.0)
    }
}

impl Serialize for DataUrlText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A tool call the model made. `raw_arguments` is the text as the model wrote it (OpenAI
/// sends a JSON string), so a syntax error can be reported with its offset.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub raw_arguments: String,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            raw_arguments: arguments.to_string(),
        }
    }
    /// The arguments as JSON; an empty string counts as `{}` (some servers send that).
    pub fn arguments(&self) -> Result<Value, serde_json::Error> {
        if self.raw_arguments.trim().is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_str(&self.raw_arguments)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Image(ImageData),
    /// In an assistant message: a call the model made earlier.
    ToolCall(ToolCall),
    /// In a user message: the result of an earlier tool call.
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    pub fn user(parts: Vec<Part>) -> Self {
        Self {
            role: Role::User,
            parts,
        }
    }
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::user(vec![Part::Text(text.into())])
    }
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            parts: vec![Part::Text(text.into())],
        }
    }
}

/// A tool the model may call, described by a JSON schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool whose arguments are the struct `T`, described by its schemars schema.
    pub fn of<T: JsonSchema>(name: &str, description: &str) -> Self {
        // Inlined: some providers (Gemini) do not follow `$ref`s into `$defs`.
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.inline_subschemas = true)
            .into_generator();
        let mut parameters = generator.into_root_schema_for::<T>().to_value();
        if let Value::Object(m) = &mut parameters {
            // Providers reject or ignore these meta keys; they only cost tokens.
            m.remove("$schema");
            m.remove("title");
        }
        compact_schema(&mut parameters);
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// A schema as a model needs it, every token of it read at every step: an optional
/// field is one left out of `required`, so schemars' `null` alternatives (`"type":
/// ["integer", "null"]`, a `null` in an enum, `anyOf` with `{"type": "null"}`) go, and
/// so do the Rust integer `format`s with their `minimum: 0`. Only schema keywords are
/// touched: a property named `format` stays.
fn compact_schema(schema: &mut Value) {
    let Value::Object(m) = schema else { return };
    if let Some(Value::Array(types)) = m.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            m.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = m.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = m.get_mut(key) {
            alts.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
            if alts.len() == 1
                && let Value::Object(only) = alts.remove(0)
            {
                m.remove(key);
                for (k, v) in only {
                    m.entry(k).or_insert(v);
                }
            }
        }
    }
    if m.get("format").and_then(Value::as_str).is_some_and(|f| {
        f.starts_with("int") || f.starts_with("uint") || f == "float" || f == "double"
    }) {
        m.remove("format");
        if m.get("minimum") == Some(&Value::from(0)) {
            m.remove("minimum");
        }
    }
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = m.get_mut(key) {
            children.values_mut().for_each(compact_schema);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = m.get_mut(key) {
            compact_schema(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(alts)) = m.get_mut(key) {
            alts.iter_mut().for_each(compact_schema);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    /// The model must call some tool (OpenAI `required`, Anthropic `any`, Gemini `ANY`).
    Required,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The stable prefix: cached by providers that support it (Anthropic `cache_control`).
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// `None` uses the model configuration's `max_tokens`.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

impl ChatRequest {
    pub fn new(system: Option<String>, messages: Vec<Message>) -> Self {
        Self {
            system,
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
            temperature: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    ContentFilter,
    Other(String),
}

/// Token counts of one call (or a sum of calls). `input_tokens` includes the cached ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
}

impl Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + o.input_tokens,
            output_tokens: self.output_tokens + o.output_tokens,
            cached_input_tokens: self.cached_input_tokens + o.cached_input_tokens,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        *self = *self + o;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The visible text (concatenated text parts).
    pub text: String,
    /// Reasoning the provider returned separately (Anthropic thinking blocks, Gemini
    /// thought parts, vLLM `reasoning_content`).
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// The model that answered, as the provider names it.
    pub model: String,
    /// Wall time of the successful HTTP exchange (retries excluded).
    pub latency: Duration,
    /// Time to first token; only streaming calls can know it, and none stream yet.
    pub ttft: Option<Duration>,
    /// Attempts the HTTP layer needed (1 when the first one succeeded).
    pub attempts: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_recognised_by_magic_and_measured() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&1080u32.to_be_bytes());
        png.extend_from_slice(&2400u32.to_be_bytes());
        let img = ImageData::from_bytes(png).unwrap();
        assert_eq!(img.mime(), ImageMime::Png);
        assert_eq!(img.dimensions(), Some((1080, 2400)));
        assert!(
            img.data_url()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        let err = ImageData::from_bytes(&b"GIF89a"[..]).unwrap_err();
        assert_eq!(err.code(), "llm_invalid_image");
    }

    #[test]
    fn base64_is_written_into_the_body_exactly_as_encoded_whole() {
        use base64::Engine;
        // Longer than the encoder's chunk, and not a multiple of 3: padding at the end.
        let mut bytes = b"\xFF\xD8\xFF".to_vec();
        bytes.extend((0..5000u32).map(|i| (i * 31 % 256) as u8));
        let whole = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let img = ImageData::from_bytes(bytes).unwrap();
        let json = serde_json::to_string(&img.base64_text()).unwrap();
        assert_eq!(json, format!("\"{whole}\""));
        let url = serde_json::to_string(&img.data_url_text()).unwrap();
        assert_eq!(url, format!("\"data:image/jpeg;base64,{whole}\""));
        assert_eq!(img.data_url(), format!("data:image/jpeg;base64,{whole}"));
    }

    #[test]
    fn tool_spec_from_schemars_drops_meta_keys() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Args {
            /// The element id.
            element: u32,
        }
        let t = ToolSpec::of::<Args>("tap", "Tap an element");
        assert!(t.parameters.get("$schema").is_none());
        assert_eq!(t.parameters["type"], "object");
        assert_eq!(t.parameters["required"][0], "element");
    }

    /// An optional field is left out of `required`, not offered as `null`; integer
    /// formats go; a property that happens to be named `format` stays.
    #[test]
    fn tool_schemas_carry_no_null_unions_or_integer_formats() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        enum Dir {
            Up,
            Down,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Args {
            element: Option<u32>,
            direction: Option<Dir>,
            options: Option<Vec<String>>,
            format: String,
        }
        let t = ToolSpec::of::<Args>("x", "X");
        let text = t.parameters.to_string();
        assert!(!text.contains("null"), "{text}");
        assert!(
            !text.contains("uint32") && !text.contains("minimum"),
            "{text}"
        );
        let p = &t.parameters["properties"];
        assert_eq!(p["element"], serde_json::json!({"type": "integer"}));
        assert_eq!(p["direction"]["enum"], serde_json::json!(["Up", "Down"]));
        assert_eq!(p["options"]["type"], "array");
        assert_eq!(p["format"], serde_json::json!({"type": "string"}));
        assert_eq!(t.parameters["required"], serde_json::json!(["format"]));
    }

    #[test]
    fn empty_tool_arguments_are_an_empty_object() {
        let c = ToolCall {
            id: "1".into(),
            name: "back".into(),
            raw_arguments: " ".into(),
        };
        assert_eq!(c.arguments().unwrap(), serde_json::json!({}));
    }
}
