//! Round trips through wiremock in each provider's real wire format: replies, tool
//! calls, errors (401, 429 + Retry-After, 500, malformed bodies), the request bodies we
//! send, and full agent decisions for every provider × agent kind.

use std::time::Duration;

use droidpilot::llm::{
    ApiKey, ChatModel, ChatRequest, ImageData, Message, ModelConfig, Part, ProviderKind,
    StopReason, ToolChoice, ToolSpec, build_model_with_key,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn cfg(provider: ProviderKind, model: &str, server: &MockServer) -> ModelConfig {
    let mut c = ModelConfig::new(provider, model);
    c.base_url = Some(match provider {
        ProviderKind::Openai => format!("{}/v1", server.uri()),
        _ => server.uri(),
    });
    c.backoff_ms = 1;
    c.max_retries = 2;
    c.timeout_secs = 5;
    c
}

fn model(
    provider: ProviderKind,
    m: &str,
    server: &MockServer,
    key: &str,
) -> std::sync::Arc<dyn ChatModel> {
    build_model_with_key(&cfg(provider, m, server), Some(ApiKey::new(key))).unwrap()
}

fn tiny_png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(4, 8, image::Rgb([10, 20, 30]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn request_with_image_and_tool() -> ChatRequest {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct TapArgs {
        element: u32,
    }
    let mut r = ChatRequest::new(
        Some("You operate an Android phone.".into()),
        vec![Message::user(vec![
            Part::Text("Open Settings".into()),
            Part::Image(ImageData::from_bytes(tiny_png()).unwrap()),
        ])],
    );
    r.tools = vec![ToolSpec::of::<TapArgs>("tap", "Tap an element")];
    r.tool_choice = ToolChoice::Required;
    r
}

fn body_of(req: &Request) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

// ---------------------------------------------------------------- OpenAI

fn openai_tool_reply() -> Value {
    json!({
      "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
      "object": "chat.completion",
      "created": 1741570283,
      "model": "gpt-4o-2024-08-06",
      "choices": [{
        "index": 0,
        "message": {
          "role": "assistant",
          "content": null,
          "tool_calls": [{
            "id": "call_abc123",
            "type": "function",
            "function": {"name": "tap", "arguments": "{\"element\":3}"}
          }],
          "refusal": null,
          "annotations": []
        },
        "logprobs": null,
        "finish_reason": "tool_calls"
      }],
      "usage": {
        "prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
      },
      "service_tier": "default",
      "system_fingerprint": "fp_fc9f1d7035"
    })
}

#[tokio::test]
async fn openai_tool_call_round_trip_and_request_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_tool_reply()))
        .expect(1)
        .mount(&server)
        .await;
    let m = model(ProviderKind::Openai, "gpt-4o", &server, "sk-test-key");
    let reply = m.chat(&request_with_image_and_tool()).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "tap");
    assert_eq!(reply.tool_calls[0].id, "call_abc123");
    assert_eq!(
        reply.tool_calls[0].arguments().unwrap(),
        json!({"element": 3})
    );
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.usage.input_tokens, 1117);
    assert_eq!(reply.usage.cached_input_tokens, 1024);
    assert_eq!(reply.usage.output_tokens, 46);
    assert_eq!(reply.model, "gpt-4o-2024-08-06");

    let sent = body_of(&server.received_requests().await.unwrap()[0]);
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "You operate an Android phone."})
    );
    let parts = &sent["messages"][1]["content"];
    assert_eq!(parts[0], json!({"type": "text", "text": "Open Settings"}));
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo")
    );
    assert_eq!(sent["tools"][0]["type"], "function");
    assert_eq!(sent["tools"][0]["function"]["name"], "tap");
    assert_eq!(
        sent["tools"][0]["function"]["parameters"]["required"],
        json!(["element"])
    );
    assert_eq!(sent["tool_choice"], "required");
    // A custom base_url is a local server: `max_tokens`, not `max_completion_tokens`.
    assert_eq!(sent["max_tokens"], 1024);
}

#[tokio::test]
async fn openai_text_reply_without_key_for_local_servers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "qwen2.5-vl",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there", "tool_calls": [], "reasoning_content": null},
                         "logprobs": null, "finish_reason": "stop", "stop_reason": null}],
            "usage": {"prompt_tokens": 12, "total_tokens": 15, "completion_tokens": 3, "prompt_tokens_details": null}
        })))
        .mount(&server)
        .await;
    let c = cfg(ProviderKind::Openai, "qwen2.5-vl", &server);
    let m = build_model_with_key(&c, c.resolve_key_with(|_| None).unwrap()).unwrap();
    let reply = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.text, "Hello there");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.usage.output_tokens, 3);
    let req = &server.received_requests().await.unwrap()[0];
    assert!(req.headers.get("authorization").is_none());
}

#[tokio::test]
async fn openai_401_names_the_variable_and_hides_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Incorrect API key provided: sk-live-********************************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.",
                      "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let m = model(
        ProviderKind::Openai,
        "gpt-4o",
        &server,
        "sk-live-supersecretvalue1234wxyz",
    );
    let e = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_unauthorized");
    assert_eq!(e.hint(), "401 from OpenAI: check OPENAI_API_KEY");
    let shown = format!("{e} {e:?} {}", e.hint());
    assert!(!shown.contains("supersecret"), "{shown}");
    assert!(!shown.contains("sk-live"), "{shown}");
}

#[tokio::test]
async fn openai_429_with_retry_after_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 1s.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_tool_reply()))
        .mount(&server)
        .await;
    let m = model(ProviderKind::Openai, "gpt-4o", &server, "sk-x");
    let started = std::time::Instant::now();
    let reply = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After was not honoured"
    );
    assert_eq!(reply.attempts, 2);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn openai_500_is_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}})))
        .expect(3)
        .mount(&server)
        .await;
    let m = model(ProviderKind::Openai, "gpt-4o", &server, "sk-x");
    let e = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_server_error");
    assert!(e.to_string().contains("after 3 attempts"), "{e}");
    assert!(e.to_string().contains("The server had an error"), "{e}");
}

#[tokio::test]
async fn openai_malformed_bodies_are_clear_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string("{\"id\": \"chatcmpl-1\", \"choices\": [{\"index\": 0, \"mess"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": []})),
        )
        .mount(&server)
        .await;
    let m = model(ProviderKind::Openai, "gpt-4o", &server, "sk-x");
    let req = ChatRequest::new(None, vec![Message::user_text("hi")]);
    let e = m.chat(&req).await.unwrap_err();
    assert_eq!(e.code(), "llm_malformed_reply");
    assert!(e.to_string().contains("not JSON"), "{e}");
    let e = m.chat(&req).await.unwrap_err();
    assert!(e.to_string().contains("choices[0]"), "{e}");
    assert!(e.hint().contains("base_url"));
}

#[tokio::test]
async fn timeouts_say_the_model_is_not_responding() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(openai_tool_reply())
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let mut c = cfg(ProviderKind::Openai, "gpt-4o", &server);
    c.timeout_secs = 1;
    c.max_retries = 1;
    let m = build_model_with_key(&c, None).unwrap();
    let e = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_timeout");
    assert_eq!(
        e.hint(),
        format!(
            "Model is not responding. Check the server at {}/v1/chat/completions, or run `droidpilot doctor`",
            server.uri()
        )
    );
}

#[tokio::test]
async fn unreachable_server_has_the_doctor_hint() {
    let mut c = ModelConfig::new(ProviderKind::Openai, "m");
    c.base_url = Some("http://127.0.0.1:9/v1".into());
    c.max_retries = 1;
    c.backoff_ms = 1;
    let m = build_model_with_key(&c, None).unwrap();
    let e = m
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_unreachable", "{e}");
    assert!(e.hint().contains("droidpilot doctor"));
}

// ---------------------------------------------------------------- Anthropic

fn anthropic_tool_reply() -> Value {
    json!({
      "id": "msg_01Aq9w938a90dw8q",
      "type": "message",
      "role": "assistant",
      "model": "claude-sonnet-4-5-20250929",
      "content": [
        {"type": "text", "text": "I'll tap the Settings icon."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "tap", "input": {"element": 3}}
      ],
      "stop_reason": "tool_use",
      "stop_sequence": null,
      "usage": {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1800, "output_tokens": 64, "service_tier": "standard"}
    })
}

#[tokio::test]
async fn anthropic_tool_use_round_trip_with_cache_control_and_image_blocks() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "ant-key"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_tool_reply()))
        .expect(1)
        .mount(&server)
        .await;
    let m = model(
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
        &server,
        "ant-key",
    );
    let reply = m.chat(&request_with_image_and_tool()).await.unwrap();
    assert_eq!(reply.text, "I'll tap the Settings icon.");
    assert_eq!(reply.tool_calls[0].name, "tap");
    assert_eq!(
        reply.tool_calls[0].arguments().unwrap(),
        json!({"element": 3})
    );
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.usage.input_tokens, 1920);
    assert_eq!(reply.usage.cached_input_tokens, 1800);

    let sent = body_of(&server.received_requests().await.unwrap()[0]);
    assert_eq!(
        sent["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(sent["system"][0]["text"], "You operate an Android phone.");
    assert_eq!(
        sent["tools"][0]["input_schema"]["required"],
        json!(["element"])
    );
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    let img = &sent["messages"][0]["content"][1];
    assert_eq!(img["type"], "image");
    assert_eq!(img["source"]["type"], "base64");
    assert_eq!(img["source"]["media_type"], "image/png");
    assert!(
        img["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    assert_eq!(sent["max_tokens"], 1024);
}

#[tokio::test]
async fn anthropic_errors_401_529_and_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-api-key", "bad"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}, "request_id": "req_011"})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-api-key", "busy"))
        .respond_with(ResponseTemplate::new(529).set_body_json(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-api-key", "weird"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": "msg_1", "type": "message", "role": "assistant"})),
        )
        .mount(&server)
        .await;
    let req = ChatRequest::new(Some("s".into()), vec![Message::user_text("hi")]);
    let e = model(ProviderKind::Anthropic, "claude", &server, "bad")
        .chat(&req)
        .await
        .unwrap_err();
    assert_eq!(e.hint(), "401 from Anthropic: check ANTHROPIC_API_KEY");
    assert!(e.to_string().contains("invalid x-api-key"));
    let e = model(ProviderKind::Anthropic, "claude", &server, "busy")
        .chat(&req)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_server_error");
    assert!(e.to_string().contains("overloaded_error"), "{e}");
    let e = model(ProviderKind::Anthropic, "claude", &server, "weird")
        .chat(&req)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_malformed_reply");
    assert!(e.to_string().contains("`content`"), "{e}");
}

#[tokio::test]
async fn anthropic_429_with_http_date_retry_after_then_success() {
    let server = MockServer::start().await;
    let when = (chrono::Utc::now() + chrono::Duration::seconds(1))
        .to_rfc2822()
        .replace("+0000", "GMT");
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", when.as_str()).set_body_json(json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_tool_reply()))
        .mount(&server)
        .await;
    let reply = model(ProviderKind::Anthropic, "claude", &server, "k")
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.attempts, 2);
}

// ---------------------------------------------------------------- Gemini

fn gemini_function_reply() -> Value {
    json!({
      "candidates": [{
        "content": {"parts": [{"functionCall": {"name": "tap", "args": {"element": 3}}}], "role": "model"},
        "finishReason": "STOP",
        "index": 0,
        "avgLogprobs": -0.0012
      }],
      "usageMetadata": {"promptTokenCount": 1530, "candidatesTokenCount": 8, "totalTokenCount": 1580, "thoughtsTokenCount": 42,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 272}, {"modality": "IMAGE", "tokenCount": 1258}]},
      "modelVersion": "gemini-2.5-flash",
      "responseId": "mRAfaPfUCqGvz7IPw4bDoQs"
    })
}

#[tokio::test]
async fn gemini_function_call_round_trip_with_inline_data_and_header_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .and(header("x-goog-api-key", "g-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(gemini_function_reply()))
        .expect(1)
        .mount(&server)
        .await;
    let m = model(ProviderKind::Gemini, "gemini-2.5-flash", &server, "g-key");
    let reply = m.chat(&request_with_image_and_tool()).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "tap");
    assert_eq!(
        reply.tool_calls[0].arguments().unwrap(),
        json!({"element": 3})
    );
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.usage.input_tokens, 1530);
    assert_eq!(reply.usage.output_tokens, 50);

    let req = &server.received_requests().await.unwrap()[0];
    assert!(req.url.query().is_none(), "the key must not be in the URL");
    let sent = body_of(req);
    assert_eq!(
        sent["systemInstruction"]["parts"][0]["text"],
        "You operate an Android phone."
    );
    assert_eq!(sent["contents"][0]["role"], "user");
    let img = &sent["contents"][0]["parts"][1]["inline_data"];
    assert_eq!(img["mime_type"], "image/png");
    assert!(img["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
    let decl = &sent["tools"][0]["functionDeclarations"][0];
    assert_eq!(decl["name"], "tap");
    assert_eq!(decl["parametersJsonSchema"]["required"], json!(["element"]));
    assert_eq!(sent["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
}

#[tokio::test]
async fn gemini_bad_key_is_unauthorized_and_500_and_malformed_are_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-goog-api-key", "bad"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-goog-api-key", "down"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})))
        .expect(3)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-goog-api-key", "blocked"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}})))
        .mount(&server)
        .await;
    let req = ChatRequest::new(None, vec![Message::user_text("hi")]);
    let e = model(ProviderKind::Gemini, "gemini-2.5-flash", &server, "bad")
        .chat(&req)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_unauthorized");
    assert_eq!(e.hint(), "400 from Gemini: check GEMINI_API_KEY");
    let e = model(ProviderKind::Gemini, "gemini-2.5-flash", &server, "down")
        .chat(&req)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "llm_server_error");
    assert!(e.to_string().contains("UNAVAILABLE"));
    let e = model(ProviderKind::Gemini, "gemini-2.5-flash", &server, "blocked")
        .chat(&req)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("blocked (SAFETY)"), "{e}");
}

#[tokio::test]
async fn gemini_text_reply_with_thought_parts() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"parts": [{"text": "Planning the tap", "thought": true}, {"text": "Done."}], "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7},
            "modelVersion": "gemini-2.5-pro"
        })))
        .mount(&server)
        .await;
    let r = model(ProviderKind::Gemini, "gemini-2.5-pro", &server, "k")
        .chat(&ChatRequest::new(None, vec![Message::user_text("hi")]))
        .await
        .unwrap();
    assert_eq!(r.text, "Done.");
    assert_eq!(r.reasoning.as_deref(), Some("Planning the tap"));
    assert_eq!(r.stop_reason, StopReason::EndTurn);
}

/// Log lines written while the guard lives, at every level (the thread's subscriber).
fn capture_logs() -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    tracing::subscriber::DefaultGuard,
) {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || Sink(sink.clone()))
        .finish();
    let guard = tracing::subscriber::set_default(sub);
    // Another test thread may have hit a callsite (and had its interest cached as
    // "never") while no subscriber listened; this one listens to everything.
    tracing::callsite::rebuild_interest_cache();
    (buf, guard)
}

struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Debug mode: at trace, each request body is logged, in every provider's wire format;
/// the key, the task's secrets and the screenshot's bytes never are, and a reply's body
/// (which carries a password the model types) is not logged at all.
#[tokio::test]
async fn trace_logs_requests_without_keys_secrets_or_images_and_never_a_reply_body() {
    let replies = [
        (ProviderKind::Openai, openai_tool_reply()),
        (ProviderKind::Anthropic, anthropic_tool_reply()),
        (ProviderKind::Gemini, gemini_function_reply()),
    ];
    for (p, reply) in replies {
        let server = MockServer::start().await;
        // The model types the password (a tool call's argument, in each provider's JSON).
        let reply = reply
            .to_string()
            .replace(r#"\"element\":3"#, r#"\"text\":\"Zebra9-typed\""#)
            .replace(r#""element":3"#, r#""text":"Zebra9-typed""#);
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string(reply.clone()))
            .mount(&server)
            .await;
        let (logs, guard) = capture_logs();
        let mut req = request_with_image_and_tool();
        req.messages
            .push(Message::user_text("The password is Hunter2-pass."));
        let m = model(p, "m", &server, "sk-live-SECRETKEY0042");
        // The declared secret is masked in the request; the reply types a password
        // nothing has declared, and its body is never logged.
        droidpilot::llm::debug_log::masking(vec!["Hunter2-pass".into()], m.chat(&req))
            .await
            .unwrap();
        drop(guard);
        let log = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
        for want in [
            "model request",
            "model request body",
            "model reply",
            "The password is ••••",
        ] {
            assert!(log.contains(want), "{p}: {want} missing in\n{log}");
        }
        assert!(
            reply.contains("Zebra9-typed"),
            "{p}: the reply carries the password"
        );
        for never in ["Hunter2", "Zebra9", "SECRETKEY", "iVBORw0KGgo"] {
            assert!(!log.contains(never), "{p}: {never} in\n{log}");
        }
    }
}

// ---------------------------------------------------------------- agents

mod agents {
    use super::*;
    use droidpilot::agent::spec::ProviderKeys;
    use droidpilot::agent::{
        AgentContext, AgentDefaults, AgentSpec, History, Observation, build_agent,
    };
    use droidpilot::domain::action::TargetField;
    use droidpilot::domain::{Action, AppRef, Bounds, Key, NormPoint, Target};
    use droidpilot::llm::{ModelPrice, PriceTable};
    use droidpilot::screen::{ActionableElement, ElementAction, ScreenRepresentation};

    pub fn screen() -> ScreenRepresentation {
        let el = |id: u32, sel: &str, text: &str, top: i32| ActionableElement {
            element_id: id,
            selector: sel.into(),
            alternative_selectors: vec![format!(":text(\"{text}\")")],
            kind: "TextView".into(),
            text: text.into(),
            actions: vec![ElementAction::Click],
            bounds: Bounds::new(0, top, 1080, top + 160),
            source: Default::default(),
        };
        ScreenRepresentation {
            app_package: Some("com.android.settings".into()),
            activity: None,
            has_modal: false,
            elements: "[0] TextView \"Network & internet\"\n[1] TextView \"Connected devices\"\n[2] TextView \"Apps\"\n[3] Switch \"Wi-Fi\" checked=false".into(),
            summary: "com.android.settings: 4 actionable".into(),
            actionable_elements: vec![
                el(0, "#network", "Network & internet", 300),
                el(1, "#devices", "Connected devices", 460),
                el(2, "#apps", "Apps", 620),
                el(3, "#wifi", "Wi-Fi", 780),
            ],
        }
    }

    pub fn ctx() -> AgentContext {
        AgentContext::new(
            "Turn on Wi-Fi".into(),
            Observation {
                screen: screen(),
                tree: None,
                screenshot: Some(ImageData::from_bytes(tiny_png()).unwrap()),
                step_count: 2,
                max_steps: 20,
                elapsed: Duration::from_secs(12),
            },
            History::new(4),
        )
    }

    fn text_reply(p: ProviderKind, text: &str) -> Value {
        match p {
            ProviderKind::Openai => {
                json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}})
            }
            ProviderKind::Anthropic => {
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 1000, "output_tokens": 50}})
            }
            ProviderKind::Gemini => {
                json!({"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050}, "modelVersion": "m"})
            }
        }
    }

    fn tool_reply(p: ProviderKind, name: &str, args: Value) -> Value {
        match p {
            ProviderKind::Openai => {
                json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}})
            }
            ProviderKind::Anthropic => {
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": "Turning Wi-Fi on."}, {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}],
                "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 1000, "output_tokens": 50}})
            }
            ProviderKind::Gemini => {
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": name, "args": args}}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050}, "modelVersion": "m"})
            }
        }
    }

    fn defaults(server: &MockServer) -> AgentDefaults {
        let mut d = AgentDefaults {
            keys: ProviderKeys {
                openai: Some(ApiKey::new("sk-o")),
                anthropic: Some(ApiKey::new("k-a")),
                gemini: Some(ApiKey::new("k-g")),
            },
            ..AgentDefaults::default()
        };
        d.navigator.backoff_ms = 1;
        d.vision.backoff_ms = 1;
        d.prices = PriceTable(
            [(
                "m".to_string(),
                ModelPrice {
                    input_per_mtok: 1.0,
                    output_per_mtok: 4.0,
                    cached_input_per_mtok: None,
                },
            )]
            .into_iter()
            .collect(),
        );
        // The mock stands in for a model server the operator allows (keyless).
        d.allowed_base_urls = vec![server.uri()];
        d
    }

    fn spec(kind: &str, p: ProviderKind, server: &MockServer, format: Option<&str>) -> AgentSpec {
        let (prov, base) = match p {
            ProviderKind::Openai => ("openai", format!("{}/v1", server.uri())),
            ProviderKind::Anthropic => ("anthropic", server.uri()),
            ProviderKind::Gemini => ("gemini", server.uri()),
        };
        let mut v = json!({"kind": kind, "provider": prov, "model": "m", "base_url": base});
        if let Some(f) = format {
            v["format"] = json!(f);
        }
        AgentSpec::from_json(&v).unwrap()
    }

    const PROVIDERS: [ProviderKind; 3] = [
        ProviderKind::Openai,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ];

    fn tap_el(id: u32) -> Action {
        Action::Tap {
            target: TargetField(Target::Element(id)),
        }
    }

    #[tokio::test]
    async fn navigator_round_trip_on_every_provider() {
        for p in PROVIDERS {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                    p,
                    "tap",
                    json!({"element": 3}),
                )))
                .mount(&server)
                .await;
            let mut agent =
                build_agent(&spec("navigator", p, &server, None), &defaults(&server)).unwrap();
            let d = agent.next(&ctx()).await.unwrap();
            assert_eq!(d.action, tap_el(3), "{p}");
            assert_eq!(d.usage.input_tokens, 1000, "{p}");
            assert_eq!(d.usage.output_tokens, 50, "{p}");
            assert!(
                (d.cost.unwrap() - (1000.0 * 1.0 + 50.0 * 4.0) / 1e6).abs() < 1e-12,
                "{p}"
            );
            assert_eq!((d.model_calls, d.retries), (1, 0));
            let sent = String::from_utf8(server.received_requests().await.unwrap()[0].body.clone())
                .unwrap();
            assert!(
                sent.contains("[3] Switch \\\"Wi-Fi\\\""),
                "{p}: the screen text must be sent"
            );
            assert!(sent.contains("Task: Turn on Wi-Fi"), "{p}");
            assert!(
                sent.contains("\"until\"") && sent.contains("\"gone\""),
                "{p}: tools"
            );
        }
    }

    /// The navigator offers one tool per job: a held tap is a long press, "" typed over
    /// a field empties it, a wait for absence is `wait_for_gone`, Back, Home and Enter
    /// are keys, an app is named by label or package; the names it offered before still
    /// work. Each reply comes from every provider's wire format.
    #[tokio::test]
    async fn navigator_merged_tools_become_the_actions_they_stand_for() {
        let el3 = || TargetField(Target::Element(3));
        let cases = [
            (
                "tap",
                json!({"element": 3, "long_ms": 900}),
                Action::LongPress {
                    target: el3(),
                    duration_ms: Some(900),
                },
            ),
            (
                "type",
                json!({"text": "", "element": 3, "clear_first": true}),
                Action::Clear {
                    target: Some(el3()),
                },
            ),
            (
                "wait_for",
                json!({"selector": "#wifi", "gone": true}),
                Action::WaitForGone {
                    selector: "#wifi".into(),
                    timeout_ms: 10_000,
                    idle_ms: None,
                },
            ),
            (
                "scroll",
                json!({"direction": "down", "until": ":text(\"About phone\")"}),
                Action::Custom(droidpilot::domain::action::CustomAction {
                    name: "scroll_to_find".into(),
                    args: json!({"direction": "down", "max_swipes": 10, "selector": ":text(\"About phone\")"})
                        .as_object()
                        .unwrap()
                        .clone(),
                }),
            ),
            (
                "key",
                json!({"key": "enter"}),
                Action::Key { key: Key::Enter },
            ),
            ("back", json!({}), Action::Key { key: Key::Back }),
            (
                "launch_app",
                json!({"app": "Settings"}),
                Action::LaunchApp {
                    app: AppRef::Label("Settings".into()),
                },
            ),
        ];
        for p in PROVIDERS {
            for (name, args, want) in &cases {
                let server = MockServer::start().await;
                Mock::given(method("POST"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                        p,
                        name,
                        args.clone(),
                    )))
                    .mount(&server)
                    .await;
                let mut agent =
                    build_agent(&spec("navigator", p, &server, None), &defaults(&server)).unwrap();
                let d = agent.next(&ctx()).await.unwrap();
                assert_eq!(&d.action, want, "{p}: {name}({args})");
                assert_eq!(d.retries, 0, "{p}: {name}");
            }
        }
    }

    #[tokio::test]
    async fn vision_round_trip_on_every_provider_and_format() {
        let cases = [
            (
                ProviderKind::Openai,
                "ui-tars",
                "Thought: Wi-Fi switch.\nAction: click(point='<point>500 250</point>')",
                [0.5, 0.25],
            ),
            (
                ProviderKind::Anthropic,
                "generic",
                "<thinking>Wi-Fi switch.</thinking><tool_call>{\"action\": \"tap\", \"coordinate\": [0.5, 0.25]}</tool_call>",
                [0.5, 0.25],
            ),
            (
                ProviderKind::Gemini,
                "autoglm",
                "<think>Wi-Fi switch.</think><answer>do(action=\"Tap\", element=[500,250])</answer>",
                [0.5, 0.25],
            ),
            (
                ProviderKind::Anthropic,
                "mai-ui",
                "<thinking>Wi-Fi switch.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [999, 0]}}</tool_call>",
                [1.0, 0.0],
            ),
            (
                ProviderKind::Gemini,
                "mai-ui",
                "<thinking>Wi-Fi switch.</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [0, 999]}}</tool_call>",
                [0.0, 1.0],
            ),
        ];
        for (p, format, text, [x, y]) in cases {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(p, text)))
                .mount(&server)
                .await;
            let mut agent = build_agent(
                &spec("vision", p, &server, Some(format)),
                &defaults(&server),
            )
            .unwrap();
            let d = agent.next(&ctx()).await.unwrap();
            assert_eq!(
                d.action,
                Action::Tap {
                    target: TargetField(Target::Coordinate(NormPoint::new(x, y).unwrap()))
                },
                "{p} {format}"
            );
            assert_eq!(d.thinking, "Wi-Fi switch.", "{p} {format}");
            assert_eq!(d.raw, text);
            let sent = String::from_utf8(server.received_requests().await.unwrap()[0].body.clone())
                .unwrap();
            assert!(
                sent.contains("/9j/"),
                "{p} {format}: the screenshot must be sent (as JPEG)"
            );
        }
    }

    /// The virtual phone's home screen as its screenshot pipeline gives it: a
    /// 1080×2400 PNG.
    async fn phone_png() -> ImageData {
        use droidpilot::device::Device as _;
        use droidpilot::device::sim::{SimConfig, SimDevice};
        let phone = SimDevice::new(SimConfig::default()).unwrap();
        let png = phone.screenshot().await.unwrap().png().unwrap();
        ImageData::from_bytes(png).unwrap()
    }

    /// The one image in a request body, in any provider's wire format: (media type,
    /// decoded bytes).
    fn sent_image(body: &Value) -> (String, Vec<u8>) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut found = Vec::new();
        let mut stack = vec![body];
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(o) => {
                    let mime = o.get("media_type").or_else(|| o.get("mime_type"));
                    if let (Some(m), Some(d)) = (mime, o.get("data")) {
                        found.push((m.as_str().unwrap().to_string(), d.as_str().unwrap()));
                    }
                    if let Some(u) = o.get("url").and_then(Value::as_str)
                        && let Some(rest) = u.strip_prefix("data:")
                    {
                        let (m, d) = rest.split_once(";base64,").unwrap();
                        found.push((m.to_string(), d));
                    }
                    stack.extend(o.values());
                }
                Value::Array(a) => stack.extend(a),
                _ => {}
            }
        }
        assert_eq!(found.len(), 1, "one image per request: {found:?}");
        let (m, d) = found.pop().unwrap();
        (m, b64.decode(d).unwrap())
    }

    /// A phone's full-size PNG reaches every provider as a scaled JPEG (long side 1280,
    /// adaptive quality), from the navigator and from a vision agent; an agent spec's
    /// `screenshot` changes it for that agent's model; a UI-TARS point, in the pixels of
    /// the image the model saw, lands where it pointed.
    #[tokio::test]
    async fn screenshots_reach_every_provider_as_scaled_jpeg() {
        let mut c = ctx();
        c.observation.screenshot = Some(phone_png().await);
        let png_bytes = c.observation.screenshot.as_ref().unwrap().bytes().len();
        for p in PROVIDERS {
            for (kind, format, extra, size) in [
                ("navigator", None, None, (576, 1280)),
                ("vision", Some("mai-ui"), None, (576, 1280)),
                (
                    "vision",
                    Some("generic"),
                    Some(json!({"max_side": 640})),
                    (288, 640),
                ),
            ] {
                let server = MockServer::start().await;
                let reply = match kind {
                    "navigator" => tool_reply(p, "tap", json!({"element": 3})),
                    _ => text_reply(
                        p,
                        "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [500, 500]}}</tool_call>",
                    ),
                };
                let reply = match format {
                    Some("generic") => text_reply(
                        p,
                        "<tool_call>{\"action\": \"tap\", \"coordinate\": [0.5, 0.5]}</tool_call>",
                    ),
                    _ => reply,
                };
                Mock::given(method("POST"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(reply))
                    .mount(&server)
                    .await;
                let mut d = defaults(&server);
                d.navigator_screenshot = true;
                d.navigator.vision = true;
                let mut s = spec(kind, p, &server, format).to_json();
                if let Some(e) = &extra {
                    s["screenshot"] = e.clone();
                }
                let mut agent = build_agent(&AgentSpec::from_json(&s).unwrap(), &d).unwrap();
                agent.next(&c).await.unwrap();
                let body = body_of(&server.received_requests().await.unwrap()[0]);
                let (mime, bytes) = sent_image(&body);
                let at = format!("{p} {kind} {format:?}");
                assert_eq!(mime, "image/jpeg", "{at}");
                let jpeg = ImageData::from_bytes(bytes.clone()).unwrap();
                assert_eq!(jpeg.dimensions(), Some(size), "{at}");
                assert!(bytes.len() <= 60_000, "{at}: {} bytes", bytes.len());
                assert!(
                    bytes.len() * 2 < png_bytes,
                    "{at}: {} vs {png_bytes}",
                    bytes.len()
                );
            }
        }
    }

    #[tokio::test]
    async fn a_ui_tars_point_is_read_against_the_image_the_model_saw() {
        let server = MockServer::start().await;
        // The scaled image is 576×1280; UI-TARS-1.5 sees it as 588×1288 (smart_resize):
        // its centre is (294, 644).
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(
                ProviderKind::Openai,
                "Thought: centre.\nAction: click(point='<point>294 644</point>')",
            )))
            .mount(&server)
            .await;
        let mut d = defaults(&server);
        d.ui_tars_coords = droidpilot::agent::vision::UiTarsCoords::SmartResize;
        let s = spec("vision", ProviderKind::Openai, &server, Some("ui-tars"));
        let mut agent = build_agent(&s, &d).unwrap();
        let mut c = ctx();
        c.observation.screenshot = Some(phone_png().await);
        let dec = agent.next(&c).await.unwrap();
        let Action::Tap {
            target: TargetField(Target::Coordinate(pt)),
        } = dec.action
        else {
            panic!("{:?}", dec.action)
        };
        assert!(
            (pt.x() - 0.5).abs() < 0.01 && (pt.y() - 0.5).abs() < 0.01,
            "{pt:?}"
        );
    }

    #[tokio::test]
    async fn replay_agent_returns_actions_then_finishes() {
        let server = MockServer::start().await;
        let s = AgentSpec::from_json(&json!({"kind": "replay", "actions": [{"action": "tap", "element": 3}, {"action": "back"}]})).unwrap();
        let mut agent = build_agent(&s, &defaults(&server)).unwrap();
        assert_eq!(agent.next(&ctx()).await.unwrap().action, tap_el(3));
        assert_eq!(
            agent.next(&ctx()).await.unwrap().action,
            Action::Key { key: Key::Back }
        );
        let last = agent.next(&ctx()).await.unwrap();
        assert!(last.action.is_terminal());
        assert_eq!(last.model_calls, 0);
        assert!(server.received_requests().await.unwrap().is_empty());
    }

    /// MAI-UI as its users run it: vLLM's OpenAI-compatible server, no key, screenshots
    /// as image_url parts, the MAI-UI system prompt, 0–999 coordinates.
    #[tokio::test]
    async fn vision_mai_ui_through_vllm_openai_api() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-8f2b", "object": "chat.completion", "created": 1767000000, "model": "MAI-UI-8B",
                "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": null, "content":
                    "<thinking>\nThe Wi-Fi toggle is on the right of the Wi-Fi row. I will click it.\n</thinking>\n<tool_call>\n{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [874, 333]}}\n</tool_call>",
                    "tool_calls": []}, "logprobs": null, "finish_reason": "stop", "stop_reason": null}],
                "usage": {"prompt_tokens": 1422, "total_tokens": 1480, "completion_tokens": 58, "prompt_tokens_details": null},
                "prompt_logprobs": null, "kv_transfer_params": null
            })))
            .expect(1)
            .mount(&server)
            .await;
        let mut d = AgentDefaults::default();
        d.vision.base_url = Some(format!("{}/v1", server.uri()));
        let s = AgentSpec::from_json(&json!({"kind": "vision", "format": "mai-ui", "provider": "openai", "model": "MAI-UI-8B", "base_url": format!("{}/v1", server.uri())})).unwrap();
        let mut agent = build_agent(&s, &d).unwrap();
        let dec = agent.next(&ctx()).await.unwrap();
        let Action::Tap {
            target: TargetField(Target::Coordinate(p)),
        } = dec.action
        else {
            panic!("{:?}", dec.action)
        };
        assert!((p.x() - 874.0 / 999.0).abs() < 1e-9 && (p.y() - 333.0 / 999.0).abs() < 1e-9);
        assert!(dec.thinking.starts_with("The Wi-Fi toggle"));
        assert_eq!(dec.usage.input_tokens, 1422);

        let req = &server.received_requests().await.unwrap()[0];
        assert!(
            req.headers.get("authorization").is_none(),
            "local vLLM needs no key"
        );
        let body = body_of(req);
        assert_eq!(body["model"], "MAI-UI-8B");
        assert_eq!(body["messages"][0]["role"], "system");
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("{\"name\": \"mobile_use\", \"arguments\": <args-json-object>}"));
        assert!(system.contains("0 to 999"));
        let user = &body["messages"][1]["content"];
        assert!(
            user[0]["text"]
                .as_str()
                .unwrap()
                .contains("Task: Turn on Wi-Fi")
        );
        assert_eq!(user[1]["type"], "image_url");
        assert!(
            user[1]["image_url"]["url"]
                .as_str()
                .unwrap()
                .starts_with("data:image/jpeg;base64,")
        );
        assert!(
            body.get("tools").is_none(),
            "MAI-UI answers in text, not native tools"
        );
    }

    #[tokio::test]
    async fn vision_self_corrects_once_and_counts_the_retry() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(ProviderKind::Openai,
                "<thinking>x</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"clik\", \"coordinate\": [10, 10]}}</tool_call>")))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(ProviderKind::Openai,
                "<thinking>fixed</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"system_button\", \"button\": \"back\"}}</tool_call>")))
            .mount(&server)
            .await;
        let mut agent = build_agent(
            &spec("vision", ProviderKind::Openai, &server, Some("mai-ui")),
            &defaults(&server),
        )
        .unwrap();
        let d = agent.next(&ctx()).await.unwrap();
        assert_eq!(d.action, Action::Key { key: Key::Back });
        assert_eq!((d.retries, d.model_calls), (1, 2));
        assert_eq!(d.usage.input_tokens, 2000);
        let second = body_of(&server.received_requests().await.unwrap()[1]);
        let msgs = second["messages"].as_array().unwrap();
        assert_eq!(msgs[2]["role"], "assistant");
        let correction = msgs[3]["content"][0]["text"].as_str().unwrap();
        assert!(
            correction.contains("unknown action `clik` (did you mean `click`?)"),
            "{correction}"
        );
    }

    #[tokio::test]
    async fn vision_gives_up_after_one_correction_with_a_clear_error() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(
                ProviderKind::Gemini,
                "I think I should tap Wi-Fi.",
            )))
            .expect(2)
            .mount(&server)
            .await;
        let mut agent = build_agent(
            &spec("vision", ProviderKind::Gemini, &server, Some("generic")),
            &defaults(&server),
        )
        .unwrap();
        let e = agent.next(&ctx()).await.err().unwrap();
        assert_eq!(e.code(), "agent_unparseable");
        assert!(
            e.to_string()
                .contains("after 2 attempts: no <tool_call> found"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn navigator_corrects_an_unknown_element_through_a_tool_result() {
        for p in PROVIDERS {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                    p,
                    "tap",
                    json!({"element": 42}),
                )))
                .up_to_n_times(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                    p,
                    "tap",
                    json!({"selector": "#wifi"}),
                )))
                .mount(&server)
                .await;
            let mut agent =
                build_agent(&spec("navigator", p, &server, None), &defaults(&server)).unwrap();
            let d = agent.next(&ctx()).await.unwrap();
            assert_eq!(
                d.action,
                Action::Tap {
                    target: TargetField(Target::Selector("#wifi".into()))
                }
            );
            assert_eq!(d.retries, 1);
            let second =
                String::from_utf8(server.received_requests().await.unwrap()[1].body.clone())
                    .unwrap();
            assert!(
                second.contains(
                    "there is no element 42 on this screen; element ids on this screen are 0–3"
                ),
                "{p}: {second}"
            );
            let v: Value = serde_json::from_str(&second).unwrap();
            match p {
                ProviderKind::Openai => assert_eq!(v["messages"][3]["role"], "tool"),
                ProviderKind::Anthropic => {
                    assert_eq!(v["messages"][2]["content"][0]["type"], "tool_result")
                }
                ProviderKind::Gemini => {
                    assert!(v["contents"][2]["parts"][0]["functionResponse"].is_object())
                }
            }
        }
    }

    #[tokio::test]
    async fn navigator_answers_read_element_locally_and_maps_mcp_tools() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                ProviderKind::Openai,
                "read_element",
                json!({"element": 3}),
            )))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                ProviderKind::Openai,
                "get_weather",
                json!({"city": "Paris"}),
            )))
            .mount(&server)
            .await;
        let mut d = defaults(&server);
        d.mcp_tools = vec![droidpilot::agent::McpTool {
            name: "get_weather".into(),
            description: "Weather for a city".into(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }];
        let mut agent =
            build_agent(&spec("navigator", ProviderKind::Openai, &server, None), &d).unwrap();
        let dec = agent.next(&ctx()).await.unwrap();
        assert_eq!(
            dec.action,
            Action::McpCall {
                tool: "get_weather".into(),
                args: json!({"city": "Paris"})
            }
        );
        assert_eq!((dec.model_calls, dec.retries), (2, 0));
        let second = body_of(&server.received_requests().await.unwrap()[1]);
        let tool_msg = &second["messages"][3];
        assert_eq!(tool_msg["role"], "tool");
        assert!(
            tool_msg["content"]
                .as_str()
                .unwrap()
                .contains("\"selector\": \"#wifi\"")
        );
        assert!(
            second["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["function"]["name"] == "get_weather")
        );
    }

    /// Providers allow no `.` in function names: a prefixed MCP tool (`maps.search`) is
    /// offered as `maps__search` and its call comes back under the registry's name.
    #[tokio::test]
    async fn navigator_offers_prefixed_mcp_tools_under_function_safe_names() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                ProviderKind::Openai,
                "maps__search",
                json!({"q": "tea"}),
            )))
            .mount(&server)
            .await;
        let mut d = defaults(&server);
        d.mcp_tools = vec![droidpilot::agent::McpTool {
            name: "maps.search".into(),
            description: "Search places".into(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }];
        let mut agent =
            build_agent(&spec("navigator", ProviderKind::Openai, &server, None), &d).unwrap();
        let dec = agent.next(&ctx()).await.unwrap();
        assert_eq!(
            dec.action,
            Action::McpCall {
                tool: "maps.search".into(),
                args: json!({"q": "tea"})
            }
        );
        let first = body_of(&server.received_requests().await.unwrap()[0]);
        let names: Vec<&str> = (first["tools"].as_array().unwrap().iter())
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"maps__search"), "{names:?}");
        assert!(!names.iter().any(|n| n.contains('.')), "{names:?}");
    }

    #[tokio::test]
    async fn navigator_grounds_a_described_target_with_a_vision_model() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                ProviderKind::Openai,
                "tap",
                json!({"description": "the blue avatar at the top"}),
            )))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/grounder/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(ProviderKind::Openai,
                "<thinking>avatar</thinking><tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [999, 0]}}</tool_call>")))
            .mount(&server)
            .await;
        let mut d = defaults(&server);
        let mut g = ModelConfig::new(ProviderKind::Openai, "m");
        g.base_url = Some(format!("{}/grounder/v1", server.uri()));
        d.grounding = Some(g);
        let mut agent =
            build_agent(&spec("navigator", ProviderKind::Openai, &server, None), &d).unwrap();
        let dec = agent.next(&ctx()).await.unwrap();
        assert_eq!(
            dec.action,
            Action::Tap {
                target: TargetField(Target::Coordinate(NormPoint::new(1.0, 0.0).unwrap()))
            }
        );
        assert_eq!(dec.model_calls, 2);
        assert_eq!(dec.usage.input_tokens, 2000);
    }

    /// A script step that fails (here: the screen tree is unreadable) goes to AI in the
    /// middle in each provider's wire format: the request carries the recovery prompt
    /// as the provider's system prompt and the recovery context (the failed step, the
    /// screen); an answer as real models write it (prose, a fenced JSON object) becomes
    /// the recovery action; an unusable one ("no idea", a non-JSON ramble) is asked again
    /// and never acted on, and once attempts are used up the user is asked.
    #[tokio::test]
    async fn script_recovery_round_trip_on_every_provider() {
        let script = json!({"name": "wifi", "goal": "turn on Wi-Fi",
            "max_recovery_attempts": 2,
            "steps": [{"action": "tap", "selector": "#wifi_toggle"}]});
        let usable = "The toggle is now listed as \"Wi-Fi\" with a new id.\n```json\n{\"action_type\": \"execute_action\", \"action\": {\"action\": \"tap\", \"selector\": \"#wifi\"}, \"reason\": \"same switch, renamed\", \"confidence\": \"high\"}\n```";
        for p in PROVIDERS {
            for (answer, acts) in [
                (usable, true),
                ("I have no idea what to do here.", false),
                (
                    "{\"action_type\": \"modify_selector\", \"new_selector\": \"#wifi\", \"confidence\": \"low\"}",
                    false,
                ),
            ] {
                let server = MockServer::start().await;
                Mock::given(method("POST"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(p, answer)))
                    .mount(&server)
                    .await;
                let (prov, base) = match p {
                    ProviderKind::Openai => ("openai", format!("{}/v1", server.uri())),
                    ProviderKind::Anthropic => ("anthropic", server.uri()),
                    ProviderKind::Gemini => ("gemini", server.uri()),
                };
                let v = json!({"kind": "script", "script": script, "recovery": true,
                               "provider": prov, "model": "m", "base_url": base});
                let spec = AgentSpec::from_json(&v).unwrap();
                let mut agent = build_agent(&spec, &defaults(&server)).unwrap();
                let d = agent.next(&ctx()).await.unwrap();
                let got = serde_json::to_value(&d.action).unwrap();
                if acts {
                    assert_eq!(got["action"], "tap", "{p}: {got}");
                    assert_eq!(got["selector"], "#wifi", "{p}: {got}");
                    assert_eq!(d.model_calls, 1, "{p}");
                } else {
                    assert_eq!(got["action"], "ask_user", "{p} {answer}: {got}");
                    assert_eq!(d.model_calls, 2, "{p}: asked again, up to the limit");
                }
                let sent =
                    String::from_utf8(server.received_requests().await.unwrap()[0].body.clone())
                        .unwrap();
                let body: Value = serde_json::from_str(&sent).unwrap();
                let system = match p {
                    ProviderKind::Openai => body["messages"][0]["content"].to_string(),
                    ProviderKind::Anthropic => body["system"].to_string(),
                    ProviderKind::Gemini => body["systemInstruction"].to_string(),
                };
                assert!(
                    system.contains("You repair a UI automation script"),
                    "{p}: {system}"
                );
                assert!(
                    sent.contains("failed_step") && sent.contains("#wifi_toggle"),
                    "{p}"
                );
                assert!(
                    sent.contains("Connected devices"),
                    "{p}: the screen is sent"
                );
                assert!(
                    sent.contains("] #devices"),
                    "{p}: with the elements' selectors, a line each keyed by the screen's [n]: {sent}"
                );
            }
        }
    }

    /// The three steps of one task sent through each provider's real client: the
    /// system prompt and tool schemas are byte-identical at every step (nothing per step
    /// inside them), Anthropic marks the end of that prefix for its cache, and each
    /// step's text opens with the previous step's text up to the end of its history,
    /// unchanged (the step counter, the foreground app and the screen come after).
    #[tokio::test]
    async fn a_tasks_steps_share_a_byte_identical_prefix_on_every_provider() {
        for p in PROVIDERS {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(
                    p,
                    "tap",
                    json!({"element": 3}),
                )))
                .mount(&server)
                .await;
            let mut agent =
                build_agent(&spec("navigator", p, &server, None), &defaults(&server)).unwrap();
            let mut history = History::new(8);
            let mut stable_ends = Vec::new();
            for step in 1..=3u32 {
                let mut c = ctx();
                c.observation.step_count = step - 1;
                c.observation.elapsed = Duration::from_secs(5 * u64::from(step));
                c.observation
                    .screen
                    .elements
                    .push_str(&format!("\n[4] TextView \"{step}\""));
                c.device.app = Some(format!("com.example.step{step}"));
                c.device.installed_apps =
                    std::sync::Arc::new(vec!["Settings (com.android.settings)".into()]);
                c.history = history.clone();
                let d = agent.next(&c).await.unwrap();
                let last = history.render();
                stable_ends.push(last.trim_end().lines().last().map(str::to_string));
                history.push_step(droidpilot::agent::StepRecord {
                    step,
                    thinking: String::new(),
                    action: d.action,
                    outcome: "screen changed".into(),
                    failed: false,
                });
            }
            let bodies: Vec<Value> = server
                .received_requests()
                .await
                .unwrap()
                .iter()
                .map(body_of)
                .collect();
            assert_eq!(bodies.len(), 3, "{p}");
            let split = |b: &Value| -> (String, String, String) {
                match p {
                    ProviderKind::Openai => (
                        b["messages"][0].to_string(),
                        b["tools"].to_string(),
                        b["messages"][1]["content"][0]["text"]
                            .as_str()
                            .unwrap()
                            .into(),
                    ),
                    ProviderKind::Anthropic => (
                        b["system"].to_string(),
                        b["tools"].to_string(),
                        b["messages"][0]["content"][0]["text"]
                            .as_str()
                            .unwrap()
                            .into(),
                    ),
                    ProviderKind::Gemini => (
                        b["systemInstruction"].to_string(),
                        b["tools"].to_string(),
                        b["contents"][0]["parts"][0]["text"]
                            .as_str()
                            .unwrap()
                            .into(),
                    ),
                }
            };
            let parts: Vec<_> = bodies.iter().map(split).collect();
            for (i, (s, t, u)) in parts.iter().enumerate().skip(1) {
                assert_eq!(s, &parts[0].0, "{p}: the system prompt at step {}", i + 1);
                assert_eq!(t, &parts[0].1, "{p}: the tools at step {}", i + 1);
                let before = &parts[i - 1].2;
                let end = match &stable_ends[i - 1] {
                    Some(line) => before.find(line.as_str()).unwrap() + line.len(),
                    None => before.find("Task: Turn on Wi-Fi").unwrap() + 19,
                };
                assert!(
                    u.starts_with(&before[..end]),
                    "{p}: step {} does not open with step {i}'s task and history:\n{before}\n---\n{u}",
                    i + 1
                );
            }
            if p == ProviderKind::Anthropic {
                assert_eq!(bodies[0]["system"][0]["cache_control"]["type"], "ephemeral");
            }
        }
    }

    /// Each provider reports the input it served from its prompt cache in its own field
    /// (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`
    /// beside `input_tokens`, Gemini `cachedContentTokenCount`): the call keeps it, and
    /// its cost prices it at the cached rate.
    #[tokio::test]
    async fn cached_input_from_each_providers_reply_is_kept_and_priced_at_the_cached_rate() {
        let usage = |p: ProviderKind| match p {
            ProviderKind::Openai => json!({"prompt_tokens": 1000, "completion_tokens": 50,
                "total_tokens": 1050, "prompt_tokens_details": {"cached_tokens": 768, "audio_tokens": 0}}),
            ProviderKind::Anthropic => {
                json!({"input_tokens": 232, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 768, "output_tokens": 50, "service_tier": "standard"})
            }
            ProviderKind::Gemini => json!({"promptTokenCount": 1000, "candidatesTokenCount": 50,
                "totalTokenCount": 1050, "cachedContentTokenCount": 768}),
        };
        for p in PROVIDERS {
            let server = MockServer::start().await;
            let mut reply = tool_reply(p, "tap", json!({"element": 3}));
            match p {
                ProviderKind::Gemini => reply["usageMetadata"] = usage(p),
                _ => reply["usage"] = usage(p),
            }
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(reply))
                .mount(&server)
                .await;
            let mut d = defaults(&server);
            d.prices.0.get_mut("m").unwrap().cached_input_per_mtok = Some(0.1);
            let mut agent = build_agent(&spec("navigator", p, &server, None), &d).unwrap();
            let dec = agent.next(&ctx()).await.unwrap();
            assert_eq!(dec.usage.input_tokens, 1000, "{p}");
            assert_eq!(dec.usage.cached_input_tokens, 768, "{p}");
            assert_eq!(dec.calls[0].tokens_cached, 768, "{p}");
            let want = (232.0 * 1.0 + 768.0 * 0.1 + 50.0 * 4.0) / 1e6;
            assert!(
                (dec.cost.unwrap() - want).abs() < 1e-12,
                "{p}: {:?}",
                dec.cost
            );
            assert_eq!(dec.calls[0].cost_usd, dec.cost, "{p}");
        }
    }
}
