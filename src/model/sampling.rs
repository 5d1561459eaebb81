//! A server's `sampling/createMessage` run on the conversation's model: the request's messages
//! as a model request without tools, the whole answer back as a `CreateMessageResult`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ChatItem, Model, ModelError, ModelEvent, ModelRequest};

/// A sampling request is refused beyond this many messages.
const MAX_MESSAGES: usize = 200;

/// One server may have at most this many sampling requests in flight (waiting for the person
/// or the model); more are refused at once.
pub const MAX_IN_FLIGHT: usize = 2;
/// One server may start at most this many sampling requests a minute.
pub const MAX_PER_MINUTE: usize = 10;

/// The sampling requests of every server: in flight and started in the last minute, so one
/// server cannot queue hundreds of questions in front of another's or make hundreds of model
/// requests at once.
#[derive(Debug, Default, Clone)]
pub struct Load {
    servers: Arc<Mutex<HashMap<String, ServerLoad>>>,
}

#[derive(Debug, Default)]
struct ServerLoad {
    in_flight: usize,
    started: VecDeque<Instant>,
}

/// A sampling request admitted: it counts as in flight until dropped.
#[derive(Debug)]
pub struct Admitted {
    load: Load,
    server: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut servers = self.load.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = servers.get_mut(&self.server) {
            l.in_flight = l.in_flight.saturating_sub(1);
        }
    }
}

impl Load {
    /// Admits a request of `server` at `now`, or says why not.
    pub fn admit(&self, server: &str, now: Instant) -> Result<Admitted, String> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let l = servers.entry(server.to_owned()).or_default();
        while l.started.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60)) {
            l.started.pop_front();
        }
        if l.in_flight >= MAX_IN_FLIGHT {
            return Err(format!(
                "this server already has {MAX_IN_FLIGHT} sampling requests in flight; send the next when one is answered"
            ));
        }
        if l.started.len() >= MAX_PER_MINUTE {
            return Err(format!(
                "this server made {MAX_PER_MINUTE} sampling requests in the last minute; try again later"
            ));
        }
        l.in_flight += 1;
        l.started.push_back(now);
        Ok(Admitted { load: self.clone(), server: server.to_owned() })
    }
}

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
    fn a_server_gets_a_bounded_share_of_sampling_and_others_are_untouched() {
        let load = Load::default();
        let t0 = Instant::now();
        let a1 = load.admit("a", t0).unwrap();
        let _a2 = load.admit("a", t0).unwrap();
        assert!(load.admit("a", t0).unwrap_err().contains("in flight"));
        let _b = load.admit("b", t0).expect("another server is not held back");
        drop(a1);
        let mut kept = Vec::new();
        for _ in 0..MAX_PER_MINUTE - 2 {
            let a = load.admit("a", t0).unwrap();
            kept.push(a);
            kept.pop();
        }
        assert!(load.admit("a", t0).unwrap_err().contains("last minute"));
        assert!(load.admit("a", t0 + Duration::from_secs(61)).is_ok(), "a minute later it may again");
    }

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
