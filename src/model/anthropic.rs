//! The Anthropic Messages API, streamed (`stream: true`).
//!
//! Events: `message_start`, then per content block `content_block_start` (a `text` block or a
//! `tool_use` block with `id` and `name`), `content_block_delta` (`text_delta` or
//! `input_json_delta` with `partial_json`), `content_block_stop`; then `message_delta` (the
//! `stop_reason`) and `message_stop`. `ping` may come anywhere; `error` ends the stream.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::wire::{self, Step};
use super::{ChatItem, ModelError, ModelEvent, ModelRequest, ModelSpec};

/// The API version this host speaks.
const API_VERSION: &str = "2023-06-01";

/// Where a request goes.
pub(super) fn endpoint(spec: &ModelSpec) -> url::Url {
    wire::endpoint(&spec.base_url, "v1/messages")
}

/// The request's headers: the API version, and the key if any.
pub(super) fn headers(spec: &ModelSpec) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
    if let Some(key) = &spec.api_key {
        headers.push(("x-api-key", key.expose().to_owned()));
    }
    headers
}

/// The request body: user and tool-result turns merged where the API wants one `user` turn.
pub(super) fn body(spec: &ModelSpec, request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, blocks: Vec<Value>| match messages.last_mut() {
        Some(last) if last["role"] == role => {
            if let Some(content) = last["content"].as_array_mut() {
                content.extend(blocks);
            }
        }
        _ => messages.push(json!({"role": role, "content": blocks})),
    };
    for item in &request.items {
        match item {
            ChatItem::User { text, .. } => push("user", vec![json!({"type": "text", "text": text})]),
            ChatItem::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}));
                }
                push("assistant", blocks);
            }
            ChatItem::ToolResult { call_id, content, structured, is_error } => {
                // Images go to the model as images; everything else as text.
                let mut blocks: Vec<Value> = content
                    .iter()
                    .filter(|b| b["type"] == "image" && b["data"].is_string())
                    .map(|b| {
                        json!({"type": "image", "source": {"type": "base64",
                               "media_type": b["mimeType"].as_str().unwrap_or("image/png"), "data": b["data"]}})
                    })
                    .collect();
                let rest: Vec<Value> = content.iter().filter(|b| b["type"] != "image").cloned().collect();
                if !rest.is_empty() || structured.is_some() || blocks.is_empty() {
                    blocks.insert(0, json!({"type": "text", "text": wire::result_text(&rest, structured.as_ref())}));
                }
                push(
                    "user",
                    vec![
                        json!({"type": "tool_result", "tool_use_id": call_id, "content": blocks, "is_error": is_error}),
                    ],
                );
            }
        }
    }
    let mut body = json!({"model": spec.name, "max_tokens": spec.max_tokens, "messages": messages, "stream": true});
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
    }
    body
}

/// The content blocks of one answer.
#[derive(Default)]
pub(super) struct Blocks {
    /// The API's block index -> our tool-call index, for `tool_use` blocks.
    calls: HashMap<u64, usize>,
    stop_reason: Option<String>,
}

impl Blocks {
    pub(super) fn take(&mut self, event: Option<&str>, data: &str) -> Result<Step, ModelError> {
        let v: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("an event is not JSON ({e}): {}", crate::text::one_line_max(data, 200)))
        })?;
        let kind = v.get("type").and_then(Value::as_str).or(event).unwrap_or_default();
        let mut out = Vec::new();
        match kind {
            "content_block_start" => {
                let block = &v["content_block"];
                if block["type"] == "tool_use" {
                    let index = self.calls.len();
                    self.calls.insert(v["index"].as_u64().unwrap_or(0), index);
                    let (id, name) =
                        (block["id"].as_str().unwrap_or_default(), block["name"].as_str().unwrap_or_default());
                    if name.is_empty() {
                        return Err(ModelError::Protocol("a tool_use block names no tool".into()));
                    }
                    out.push(ModelEvent::ToolCallStart { index, id: id.to_owned(), name: name.to_owned() });
                } else if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::Text(text.to_owned()));
                }
            }
            "content_block_delta" => {
                let delta = &v["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        if let Some(text) = delta["text"].as_str() {
                            out.push(ModelEvent::Text(text.to_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        let index =
                            v["index"].as_u64().and_then(|i| self.calls.get(&i)).copied().ok_or_else(|| {
                                ModelError::Protocol("arguments for a block that is no tool_use".into())
                            })?;
                        if let Some(fragment) = delta["partial_json"].as_str().filter(|f| !f.is_empty()) {
                            out.push(ModelEvent::ToolCallArguments { index, fragment: fragment.to_owned() });
                        }
                    }
                    // Thinking and signatures are the model's own; nothing to show or send.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
            }
            "message_stop" => {
                let stop_reason = self.stop_reason.take().unwrap_or_else(|| "end_turn".into());
                return Ok(Step::Done(vec![ModelEvent::End { stop_reason }]));
            }
            "error" => {
                let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                return Err(ModelError::Api { status: 0, message: message.to_owned() });
            }
            // message_start, content_block_stop, ping, and kinds added later.
            _ => {}
        }
        Ok(Step::More(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCall, ToolSpec};

    #[test]
    fn a_request_merges_user_turns_and_sends_images_as_images() {
        let spec = ModelSpec::parse_with("anthropic:c", Some("http://127.0.0.1:1"), |_| None).unwrap();
        let request = ModelRequest::new(
            "sys",
            vec![
                ChatItem::User { text: "draw".into(), from_app: None },
                ChatItem::Assistant {
                    text: "ok".into(),
                    tool_calls: vec![ToolCall { id: "t1".into(), name: "s__draw".into(), arguments: json!({}) }],
                },
                ChatItem::ToolResult {
                    call_id: "t1".into(),
                    content: vec![json!({"type": "image", "data": "AAAA", "mimeType": "image/jpeg"})],
                    structured: None,
                    is_error: false,
                },
                ChatItem::User { text: "thanks".into(), from_app: Some("draw · s".into()) },
            ],
            vec![ToolSpec { name: "s__draw".into(), description: "D".into(), input_schema: json!({"type": "object"}) }],
        );
        let b = body(&spec, &request);
        assert_eq!(b["system"], "sys");
        assert_eq!(b["messages"].as_array().unwrap().len(), 3, "the tool result and the next user turn are one turn");
        assert_eq!(
            b["messages"][1]["content"][1],
            json!({"type": "tool_use", "id": "t1", "name": "s__draw", "input": {}})
        );
        let result = &b["messages"][2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(
            result["content"][0]["source"],
            json!({"type": "base64", "media_type": "image/jpeg", "data": "AAAA"})
        );
        assert_eq!(b["messages"][2]["content"][1], json!({"type": "text", "text": "thanks"}));
        assert_eq!(b["tools"][0]["input_schema"], json!({"type": "object"}));
    }

    #[test]
    fn events_become_text_and_tool_calls_with_their_argument_pieces() {
        let mut b = Blocks::default();
        let mut events = |event: &str, data: &str| match b.take(Some(event), data).unwrap() {
            Step::More(e) | Step::Done(e) => e,
        };
        assert!(events("message_start", r#"{"type":"message_start","message":{"id":"m","content":[]}}"#).is_empty());
        events(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        );
        assert_eq!(
            events(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#
            ),
            [ModelEvent::Text("Hi".into())]
        );
        assert_eq!(
            events(
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"s__t","input":{}}}"#
            ),
            [ModelEvent::ToolCallStart { index: 0, id: "toolu_1".into(), name: "s__t".into() }]
        );
        assert_eq!(
            events(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#
            ),
            [ModelEvent::ToolCallArguments { index: 0, fragment: "{\"a\":".into() }]
        );
        assert!(events("ping", r#"{"type":"ping"}"#).is_empty());
        events(
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
        );
        assert_eq!(
            events("message_stop", r#"{"type":"message_stop"}"#),
            [ModelEvent::End { stop_reason: "tool_use".into() }]
        );
        let err = Blocks::default()
            .take(Some("error"), r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert!(matches!(err, Err(ModelError::Api { message, .. }) if message == "Overloaded"));
        let stray = Blocks::default().take(
            None,
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        );
        assert!(stray.is_err());
    }
}
