//! The scripted demo model: no network, no weights, a few fixed rules. It lets the demo show a
//! conversation offline, and it says what it is in every answer: it is never taken for a model.

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{ChatItem, Model, ModelError, ModelEvent, ModelRequest};

/// How every answer of the scripted model starts.
pub const SCRIPTED_PREFIX: &str = "[scripted demo model] ";

/// Rules instead of a model:
/// - a prompt that names an offered tool (its name after the `server__` prefix) calls it, with
///   the JSON object in the prompt as its arguments (streamed in small pieces, as a model would);
/// - a tool result is answered with the start of its text;
/// - anything else is answered with what it can do.
#[derive(Debug, Default, Clone)]
pub struct ScriptedModel;

impl Model for ScriptedModel {
    fn describe(&self) -> String {
        "the scripted demo model (not a real model)".into()
    }

    fn stream(&self, request: ModelRequest) -> mpsc::Receiver<Result<ModelEvent, ModelError>> {
        let (tx, rx) = super::channel();
        tokio::spawn(async move {
            for event in answer(&request) {
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            }
        });
        rx
    }
}

fn answer(request: &ModelRequest) -> Vec<ModelEvent> {
    let text = |t: String| {
        let mut out: Vec<ModelEvent> =
            split(&format!("{SCRIPTED_PREFIX}{t}"), 12).into_iter().map(ModelEvent::Text).collect();
        out.push(ModelEvent::End { stop_reason: "stop".into() });
        out
    };
    match request.items.last() {
        Some(ChatItem::ToolResult { content, is_error, .. }) => {
            let said = super::wire::result_text(content, None).replace('\n', " ");
            let said: String = said.chars().take(200).collect();
            text(if *is_error { format!("The tool did not run: {said}") } else { format!("The tool answered: {said}") })
        }
        Some(ChatItem::User { text: prompt, from_app }) => {
            let lower = prompt.to_lowercase();
            let tool = request.tools.iter().find(|t| {
                let short = t.name.rsplit("__").next().unwrap_or(&t.name).to_lowercase();
                from_app.is_none() && !short.is_empty() && lower.contains(&short)
            });
            match tool {
                Some(tool) => {
                    let arguments = prompt
                        .find('{')
                        .and_then(|at| serde_json::from_str::<Map<String, Value>>(&prompt[at..]).ok())
                        .unwrap_or_default();
                    let mut out = vec![
                        ModelEvent::Text(format!("{SCRIPTED_PREFIX}Calling {}.", tool.name)),
                        ModelEvent::ToolCallStart { index: 0, id: "scripted-call".into(), name: tool.name.clone() },
                    ];
                    out.extend(
                        split(&Value::Object(arguments).to_string(), 6)
                            .into_iter()
                            .map(|fragment| ModelEvent::ToolCallArguments { index: 0, fragment }),
                    );
                    out.push(ModelEvent::End { stop_reason: "tool_calls".into() });
                    out
                }
                None if from_app.is_some() => {
                    text(format!("Noted what the App said: {}", crate::text::one_line_max(prompt, 200)))
                }
                None => {
                    let names: Vec<&str> =
                        request.tools.iter().map(|t| t.name.rsplit("__").next().unwrap_or(&t.name)).collect();
                    text(format!("Name a tool and I call it: {}.", names.join(", ")))
                }
            }
        }
        _ => text("Nothing to answer.".into()),
    }
}

/// `text` in pieces of at most `n` characters.
fn split(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolSpec;
    use serde_json::json;

    #[test]
    fn the_scripted_model_calls_a_named_tool_and_always_says_what_it_is() {
        let tools =
            vec![ToolSpec { name: "demo__weather".into(), description: String::new(), input_schema: json!({}) }];
        let ask = |text: &str| {
            answer(&ModelRequest::new("", vec![ChatItem::User { text: text.into(), from_app: None }], tools.clone()))
        };
        let events = ask(r#"show the weather {"city": "Lyon"}"#);
        assert!(events.contains(&ModelEvent::ToolCallStart {
            index: 0,
            id: "scripted-call".into(),
            name: "demo__weather".into()
        }));
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallArguments { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), json!({"city": "Lyon"}));
        let said: String = ask("hello")
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert!(said.starts_with(SCRIPTED_PREFIX) && said.contains("weather"), "{said}");
    }
}
