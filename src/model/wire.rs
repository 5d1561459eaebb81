//! What both wire formats share: one streamed POST, bounded, and MCP results as text.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use url::Url;

use super::{ModelError, ModelEvent};
use crate::event_stream::EventSizeGuard;

/// One server-sent event may hold at most this much (a tool call's arguments come in many).
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;
/// An answer may hold at most this much text and arguments in all.
pub(super) const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// An error body is read up to this much.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The stream may be silent this long between events (a model thinking, a slow local model
/// loading) before the request is given up.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// `url` without its query and credentials, for messages.
pub(super) fn shown(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.to_string()
}

/// `base` joined with `path` (`base` may or may not end in `/`).
pub(super) fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{}", url.path().trim_end_matches('/'), path.trim_start_matches('/'));
    url.set_path(&joined);
    url
}

/// POSTs `body` to `url` and hands each server-sent event's `(event, data)` to `on_event`,
/// which turns it into model events (or says the stream ended). Errors go to `tx` as the last
/// item, with `key` redacted from them; a dropped receiver ends the request.
#[allow(clippy::too_many_arguments)]
pub(super) async fn stream_post(
    http: &reqwest::Client,
    url: Url,
    headers: Vec<(&'static str, String)>,
    body: Value,
    tx: &super::AnswerSender,
    key: Option<&super::ApiKey>,
    mut on_event: impl FnMut(Option<&str>, &str) -> Result<Step, ModelError>,
) {
    let outcome = async {
        let mut request = http.post(url.clone()).header("accept", "text/event-stream").json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let connect = |e: reqwest::Error| ModelError::Connect { url: shown(&url), reason: without_url(&e) };
        // Headers as slowly as a model loading, no slower; then events at that pace at least.
        let response = tokio::time::timeout(IDLE_TIMEOUT, request.send())
            .await
            .map_err(|_| ModelError::Connect {
                url: shown(&url),
                reason: format!("no answer in {} s", IDLE_TIMEOUT.as_secs()),
            })?
            .map_err(connect)?;
        let status = response.status();
        if !status.is_success() {
            let message = tokio::time::timeout(Duration::from_secs(30), error_body(response))
                .await
                .unwrap_or_else(|_| "(its body did not come)".into());
            return Err(ModelError::Api { status: status.as_u16(), message });
        }
        let mut guard = EventSizeGuard::default();
        let bytes = response.bytes_stream().map(move |chunk| match chunk {
            Ok(chunk) if guard.admit(&chunk, MAX_EVENT_BYTES) => Ok(chunk),
            Ok(_) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "an event over 4 MiB")),
            Err(e) => Err(std::io::Error::other(without_url(&e))),
        });
        let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(bytes));
        let mut total = 0usize;
        loop {
            let next = tokio::time::timeout(IDLE_TIMEOUT, events.next())
                .await
                .map_err(|_| ModelError::Protocol(format!("no event for {} s", IDLE_TIMEOUT.as_secs())))?;
            let Some(event) = next else {
                return Err(ModelError::Protocol("the stream ended before the answer did".into()));
            };
            let event = event.map_err(|e| ModelError::Connect { url: shown(&url), reason: e.to_string() })?;
            let Some(data) = event.data.as_deref() else { continue };
            total += data.len();
            if total > MAX_ANSWER_BYTES {
                return Err(ModelError::Protocol("the answer is over 16 MiB".into()));
            }
            match on_event(event.event.as_deref(), data)? {
                Step::More(items) => {
                    for item in items {
                        if tx.send(Ok(item)).await.is_err() {
                            return Ok(());
                        }
                    }
                }
                Step::Done(items) => {
                    for item in items {
                        if tx.send(Ok(item)).await.is_err() {
                            return Ok(());
                        }
                    }
                    return Ok(());
                }
            }
        }
    }
    .await;
    if let Err(e) = outcome {
        let _ = tx.send(Err(e.redacted(key))).await;
    }
}

/// What one event came to.
pub(super) enum Step {
    /// These, and more to come.
    More(Vec<ModelEvent>),
    /// These, and the answer is complete.
    Done(Vec<ModelEvent>),
}

/// A reqwest error without the URL it carries (the URL is named once, by the caller).
pub(super) fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "");
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text.trim().to_owned()
}

/// The API's error message from a failed response: `error.message` of the JSON body both APIs
/// send, else the start of the body.
async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| crate::text::one_line_max(&text, 300))
}

/// An MCP tool result's content as text for a model: text blocks as they are, resource links
/// and embedded resources named, images described (for formats that carry no images there);
/// the structured content as JSON after them.
pub(super) fn result_text(content: &[Value], structured: Option<&Value>) -> String {
    let mut parts: Vec<String> = content
        .iter()
        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str).map(str::to_owned),
            Some("image") => {
                Some(format!("[an image, {}]", b.get("mimeType").and_then(Value::as_str).unwrap_or("of unknown type")))
            }
            Some("audio") => Some("[an audio clip]".into()),
            Some("resource_link") => Some(format!(
                "[resource link: {} {}]",
                b.get("uri").and_then(Value::as_str).unwrap_or_default(),
                b.get("name").and_then(Value::as_str).unwrap_or_default()
            )),
            Some("resource") => {
                let r = b.get("resource")?;
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or_default();
                Some(match r.get("text").and_then(Value::as_str) {
                    Some(text) => format!("[resource {uri}]\n{text}"),
                    None => format!("[resource {uri}, binary]"),
                })
            }
            _ => None,
        })
        .collect();
    if let Some(s) = structured {
        parts.push(format!("structuredContent: {s}"));
    }
    if parts.is_empty() {
        "(no content)".into()
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoints_join_whatever_the_base_ends_with() {
        let a = Url::parse("http://h:1/v1").unwrap();
        let b = Url::parse("http://h:1/v1/").unwrap();
        assert_eq!(endpoint(&a, "chat/completions").as_str(), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint(&b, "chat/completions").as_str(), "http://h:1/v1/chat/completions");
        assert_eq!(
            endpoint(&Url::parse("https://api.anthropic.com").unwrap(), "v1/messages").as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(shown(&Url::parse("http://u:p@h/v1?key=s").unwrap()), "http://h/v1");
    }

    #[test]
    fn results_read_as_text_with_every_kind_of_block() {
        let text = result_text(
            &[
                json!({"type": "text", "text": "42 rows"}),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                json!({"type": "resource_link", "uri": "file:///r.csv", "name": "r.csv"}),
                json!({"type": "resource", "resource": {"uri": "mem://a", "text": "inner"}}),
                json!({"type": "unknown"}),
            ],
            Some(&json!({"rows": 42})),
        );
        assert_eq!(
            text,
            "42 rows\n[an image, image/png]\n[resource link: file:///r.csv r.csv]\n[resource mem://a]\ninner\nstructuredContent: {\"rows\":42}"
        );
        assert_eq!(result_text(&[], None), "(no content)");
    }
}
