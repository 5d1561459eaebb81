//! OpenAI Chat Completions, streamed (`stream: true`): the format OpenAI, Ollama, llama.cpp's
//! server, vLLM, LM Studio and OpenRouter speak.
//!
//! Each event's `data` is a `chat.completion.chunk`: `choices[0].delta` carries `content`
//! (text) and `tool_calls` (`index`, then `id` and `function.name` once, `function.arguments`
//! in pieces); `finish_reason` ends the choice; `data: [DONE]` ends the stream.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::wire::{self, Step};
use super::{ChatItem, ModelError, ModelEvent, ModelRequest, ModelSpec};

/// Where a request goes.
pub(super) fn endpoint(spec: &ModelSpec) -> url::Url {
    wire::endpoint(&spec.base_url, "chat/completions")
}

/// The request's headers (the key, if any, as a bearer token).
pub(super) fn headers(spec: &ModelSpec) -> Vec<(&'static str, String)> {
    spec.api_key.iter().map(|k| ("authorization", format!("Bearer {}", k.expose()))).collect()
}

/// The request body.
pub(super) fn body(spec: &ModelSpec, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for item in &request.items {
        messages.push(match item {
            ChatItem::User { text, .. } => json!({"role": "user", "content": text}),
            ChatItem::Assistant { text, tool_calls } => {
                let mut m =
                    json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                        })
                        .collect();
                }
                m
            }
            ChatItem::ToolResult { call_id, content, structured, is_error } => {
                let mut text = wire::result_text(content, structured.as_ref());
                if *is_error {
                    text = format!("Error: {text}");
                }
                json!({"role": "tool", "tool_call_id": call_id, "content": text})
            }
        });
    }
    // No token bound: it is optional here, and OpenAI's reasoning models refuse `max_tokens`.
    let mut body = json!({"model": spec.name, "messages": messages, "stream": true});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function",
                       "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
    }
    body
}

/// How a chunk says which tool call it continues.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CallKey {
    Index(u64),
    Id(String),
}

/// The chunks of one answer.
#[derive(Default)]
pub(super) struct Chunks {
    /// The API's tool-call index (or, from servers that leave it out, its id) -> ours, in the
    /// order they started.
    calls: HashMap<CallKey, usize>,
    /// The call that came last (a chunk with neither index nor id goes on with it).
    last: Option<CallKey>,
    finish: Option<String>,
}

impl Chunks {
    pub(super) fn take(&mut self, data: &str) -> Result<Step, ModelError> {
        if data.trim() == "[DONE]" {
            let stop_reason = self.finish.take().unwrap_or_else(|| "stop".into());
            return Ok(Step::Done(vec![ModelEvent::End { stop_reason }]));
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("a chunk is not JSON ({e}): {}", crate::text::one_line_max(data, 200)))
        })?;
        if let Some(error) = chunk.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
            return Err(ModelError::Api { status: 0, message });
        }
        let mut out = Vec::new();
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(Step::More(out)) };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            out.push(ModelEvent::Text(text.to_owned()));
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str).filter(|i| !i.is_empty());
            let key = match (call.get("index").and_then(Value::as_u64), id) {
                (Some(i), _) => CallKey::Index(i),
                (None, Some(id)) => CallKey::Id(id.to_owned()),
                (None, None) => self.last.clone().unwrap_or(CallKey::Index(0)),
            };
            self.last = Some(key.clone());
            let index = match self.calls.get(&key) {
                Some(i) => *i,
                None => {
                    let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
                    if name.is_empty() {
                        return Err(ModelError::Protocol("a tool call's first chunk names no function".into()));
                    }
                    let index = self.calls.len();
                    self.calls.insert(key, index);
                    let id = id.map_or_else(|| format!("call_{index}"), str::to_owned);
                    out.push(ModelEvent::ToolCallStart { index, id, name: name.to_owned() });
                    index
                }
            };
            if let Some(fragment) =
                call.pointer("/function/arguments").and_then(Value::as_str).filter(|f| !f.is_empty())
            {
                out.push(ModelEvent::ToolCallArguments { index, fragment: fragment.to_owned() });
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        Ok(Step::More(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCall, ToolSpec};

    #[test]
    fn a_request_carries_the_conversation_tools_and_results_in_chat_completions_shape() {
        let spec = ModelSpec::parse_with("openai:m", Some("http://127.0.0.1:1/v1"), |_| None).unwrap();
        let request = ModelRequest::new(
            "be brief",
            vec![
                ChatItem::User { text: "hi".into(), from_app: None },
                ChatItem::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall { id: "c1".into(), name: "s__t".into(), arguments: json!({"a": 1}) }],
                },
                ChatItem::ToolResult {
                    call_id: "c1".into(),
                    content: vec![json!({"type": "text", "text": "no"})],
                    structured: None,
                    is_error: true,
                },
            ],
            vec![ToolSpec { name: "s__t".into(), description: "T".into(), input_schema: json!({"type": "object"}) }],
        );
        let b = body(&spec, &request);
        assert_eq!(b["stream"], true);
        assert_eq!(b["messages"][0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"], json!({"name": "s__t", "arguments": "{\"a\":1}"}));
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(b["messages"][3], json!({"role": "tool", "tool_call_id": "c1", "content": "Error: no"}));
        assert_eq!(b["tools"][0]["function"]["parameters"], json!({"type": "object"}));
    }

    #[test]
    fn chunks_become_text_and_tool_calls_with_their_argument_pieces() {
        let mut c = Chunks::default();
        let events = |c: &mut Chunks, data: &str| match c.take(data).unwrap() {
            Step::More(e) | Step::Done(e) => e,
        };
        assert_eq!(
            events(&mut c, r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#),
            [ModelEvent::Text("Hel".into())]
        );
        assert_eq!(
            events(
                &mut c,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"id":"x","type":"function","function":{"name":"s__t","arguments":""}}]}}]}"#
            ),
            [ModelEvent::ToolCallStart { index: 0, id: "x".into(), name: "s__t".into() }]
        );
        assert_eq!(
            events(&mut c, r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"function":{"arguments":"{\"a\""}}]}}]}"#),
            [ModelEvent::ToolCallArguments { index: 0, fragment: "{\"a\"".into() }]
        );
        assert!(events(&mut c, r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#).is_empty());
        assert_eq!(events(&mut c, "[DONE]"), [ModelEvent::End { stop_reason: "tool_calls".into() }]);
        assert!(
            matches!(Chunks::default().take(r#"{"error":{"message":"overloaded"}}"#), Err(ModelError::Api { message, .. }) if message == "overloaded")
        );
        assert!(Chunks::default().take("{nope").is_err());
        // A server that leaves `index` out sends each call whole: two ids are two calls.
        let mut c = Chunks::default();
        let two = r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"s__x","arguments":"{}"}},{"id":"b","function":{"name":"s__y","arguments":"{\"n\":1}"}}]}}]}"#;
        assert_eq!(
            events(&mut c, two),
            [
                ModelEvent::ToolCallStart { index: 0, id: "a".into(), name: "s__x".into() },
                ModelEvent::ToolCallArguments { index: 0, fragment: "{}".into() },
                ModelEvent::ToolCallStart { index: 1, id: "b".into(), name: "s__y".into() },
                ModelEvent::ToolCallArguments { index: 1, fragment: "{\"n\":1}".into() },
            ]
        );
        assert!(Chunks::default()
            .take(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#)
            .is_err());
    }
}
