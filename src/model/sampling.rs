//! A server's `sampling/createMessage` run on the conversation's model: the request's messages
//! as a model request without tools, the whole answer back as a `CreateMessageResult`.

use serde_json::{json, Value};

use super::{ChatItem, Model, ModelError, ModelEvent, ModelRequest};

/// A sampling request is refused beyond this many messages.
const MAX_MESSAGES: usize = 200;

/// The request in `params` (a `CreateMessageRequest`'s params), and its text for the person
/// deciding whether to run it.
pub fn request(params: &Value) -> Result<(ModelRequest, String), String> {
    let messages = params.get("messages").and_then(Value::as_array).ok_or("no messages")?;
    if messages.is_empty() || messages.len() > MAX_MESSAGES {
        return Err(format!("between 1 and {MAX_MESSAGES} messages, not {}", messages.len()));
    }
    let mut items = Vec::new();
    let mut shown = Vec::new();
    for m in messages {
        let text = content_text(&m["content"]);
        shown.push(format!("{}: {text}", m["role"].as_str().unwrap_or("?")));
        items.push(match m["role"].as_str() {
            Some("user") => ChatItem::User { text, from_app: None },
            Some("assistant") => ChatItem::Assistant { text, tool_calls: Vec::new() },
            other => return Err(format!("a message of role {other:?}")),
        });
    }
    let system = params.get("systemPrompt").and_then(Value::as_str).unwrap_or_default();
    if !system.is_empty() {
        shown.insert(0, format!("system: {system}"));
    }
    Ok((ModelRequest::new(system, items, Vec::new()), shown.join("\n")))
}

/// The text of a sampling message's content (a block or an array of blocks).
fn content_text(content: &Value) -> String {
    let block = |b: &Value| match b["type"].as_str() {
        Some("text") => b["text"].as_str().unwrap_or_default().to_owned(),
        Some("image") => "[an image]".to_owned(),
        Some("audio") => "[an audio clip]".to_owned(),
        _ => String::new(),
    };
    match content {
        Value::Array(blocks) => blocks.iter().map(block).collect::<Vec<_>>().join("\n"),
        b => block(b),
    }
}

/// Runs `request` on `model` to the end: the `CreateMessageResult`.
pub async fn run(model: &dyn Model, request: ModelRequest) -> Result<Value, ModelError> {
    let mut events = model.stream(request);
    let mut text = String::new();
    loop {
        match events.recv().await {
            Some(Ok(ModelEvent::Text(t))) => text.push_str(&t),
            Some(Ok(ModelEvent::End { stop_reason })) => {
                let stop = match stop_reason.as_str() {
                    "length" | "max_tokens" => "maxTokens",
                    _ => "endTurn",
                };
                return Ok(json!({"role": "assistant", "content": {"type": "text", "text": text},
                                 "model": model.name(), "stopReason": stop}));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e),
            None => return Err(ModelError::Protocol("the answer ended without its end".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampling_request_becomes_a_model_request_without_tools() {
        let params = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Summarize"}},
            {"role": "assistant", "content": [{"type": "text", "text": "Sure"}, {"type": "image", "data": "AA", "mimeType": "image/png"}]}
        ], "systemPrompt": "be brief", "maxTokens": 50});
        let (req, shown) = request(&params).unwrap();
        assert_eq!(req.system, "be brief");
        assert!(req.tools.is_empty());
        assert_eq!(req.items[1], ChatItem::Assistant { text: "Sure\n[an image]".into(), tool_calls: vec![] });
        assert_eq!(shown, "system: be brief\nuser: Summarize\nassistant: Sure\n[an image]");
        assert!(request(&json!({"messages": []})).is_err());
        assert!(request(&json!({"messages": [{"role": "tool", "content": {}}]})).is_err());
        assert!(request(&json!({})).is_err());
    }

    #[tokio::test]
    async fn the_answer_is_a_create_message_result() {
        let (req, _) =
            request(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]})).unwrap();
        let result = run(&super::super::ScriptedModel, req).await.unwrap();
        assert_eq!((result["role"].as_str(), result["stopReason"].as_str()), (Some("assistant"), Some("endTurn")));
        assert!(result["content"]["text"].as_str().unwrap().starts_with(super::super::scripted::SCRIPTED_PREFIX));
    }
}
