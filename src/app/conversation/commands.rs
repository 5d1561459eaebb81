//! The composer's slash commands and attachments. A server's MCP prompts (`prompts/list`) are
//! offered as `/name` with their arguments; running one (`prompts/get`) makes a turn of its
//! messages, labelled as that server's words (never as the person's). A server's resources can
//! be attached to a prompt: each is read and goes with the prompt, named. Either way the
//! server's text goes as JSON after the host's marker (`crate::conversation::words`), and the
//! conversation counts the server's data as in it (see `crate::conversation::trust`).

use super::*;
use crate::app::shell::Attachment;
use crate::conversation::words;
use crate::protocol::RpcError;

/// The composer lists at most this many prompts and resources of one server.
const MAX_LISTED: usize = 100;
/// A prompt's messages, or an attached resource, go to the model up to this many bytes each.
const MAX_ATTACHED_BYTES: usize = 64 * 1024;
/// At most this many resources go with one prompt.
const MAX_ATTACHMENTS: usize = 5;
/// Listing a server's prompts waits at most this long.
const LIST_WAIT: Duration = Duration::from_secs(5);

impl Controller {
    /// The servers' prompts and resources, for the composer.
    pub(in crate::app) fn show_commands(&self) {
        if self.conversation.chat.is_none() {
            return;
        }
        let (servers, asks) = (self.servers.clone(), self.questions.asks());
        tokio::spawn(async move {
            let (mut prompts, mut resources) = (Vec::new(), Vec::new());
            for info in servers.servers() {
                let Some(conn) = servers.current(&info.name) else { continue };
                let label = consent::server_label(&info.label);
                if conn.has_prompts() {
                    match tokio::time::timeout(LIST_WAIT, conn.request("prompts/list", json!({}))).await {
                        Ok(Ok(listed)) => {
                            let listed = listed.get("prompts").and_then(Value::as_array).cloned().unwrap_or_default();
                            prompts.extend(
                                listed.iter().take(MAX_LISTED).filter_map(|p| prompt_entry(&info.name, &label, p)),
                            );
                        }
                        Ok(Err(e)) => {
                            tracing::info!(server = %info.name, "its prompts could not be listed: {}", e.message)
                        }
                        Err(_) => tracing::info!(server = %info.name, "its prompts were not listed in time"),
                    }
                }
                let listed = conn.resources();
                resources.extend(listed.iter().filter_map(|r| resource_entry(&info.name, &label, r)).take(MAX_LISTED));
            }
            // Through the controller, which keeps it for a shell that is not ready yet or starts
            // again (sent straight to the window, a page still loading lost it).
            let _ = asks.send(Ask::Commands(ShellCommand::Commands { prompts, resources }));
        });
    }

    /// The composer's latest list: shown, and kept for a shell that loads later or again.
    pub(in crate::app) fn keep_commands(&mut self, cmd: ShellCommand) {
        self.shell_page.keep(|c| !matches!(c, ShellCommand::Commands { .. }));
        self.shell(cmd.clone());
        self.remember(cmd);
    }

    /// The person ran a server's prompt: a turn of its messages, labelled as the server's.
    pub(in crate::app) fn run_server_prompt(&mut self, server: String, name: String, arguments: Map<String, Value>) {
        if self.conversation.chat.is_none() {
            return;
        }
        let arguments: Map<String, Value> =
            arguments.into_iter().filter(|(_, v)| v.as_str().is_some_and(|s| !s.is_empty())).collect();
        let (servers, asks, ui) = (self.servers.clone(), self.questions.asks(), self.ui.clone());
        let id = self.server_id(&server);
        let label = self.label(&server);
        tokio::spawn(async move {
            let got = match servers.connection(&server).await {
                Ok(conn) => conn.request("prompts/get", json!({"name": name, "arguments": arguments})).await,
                Err(e) => Err(RpcError::new(crate::protocol::jsonrpc::code::INTERNAL_ERROR, e.to_string())),
            };
            match got {
                Ok(result) => {
                    // The server's messages, labelled as the server's: never the person's words.
                    let (messages, cut) = prompt_messages(&result, MAX_ATTACHED_BYTES * 2);
                    let text = words::server_prompt(&name, &label, &messages, cut);
                    let _ = asks.send(Ask::Turn(Input::WithServerData { text, servers: vec![(id, label)] }));
                }
                Err(e) => {
                    let card = ShellCommand::Text {
                        view: None,
                        title: format!("The prompt /{}", consent::one_line_max(&name, 80)),
                        text: consent::block(&format!("Not run: {}", e.message)),
                        error: true,
                    };
                    let _ = ui.send_event(UserEvent::Shell(card.to_text()));
                }
            }
        });
    }

    /// The person's prompt, with the resources they attached read and sent with it.
    pub(in crate::app) fn prompt_with(&mut self, text: String, attach: Vec<Attachment>) {
        // With no model, the prompt goes back to the person (see `prompt`), attachments unread.
        if attach.is_empty() || !self.conversation.is_on() {
            self.prompt(text);
            return;
        }
        let (servers, asks) = (self.servers.clone(), self.questions.asks());
        let parties: Vec<(ServerId, String)> =
            attach.iter().map(|a| (self.server_id(&a.server), self.label(&a.server))).collect();
        tokio::spawn(async move {
            let mut turn = text;
            let mut from = Vec::new();
            for (a, party) in attach.iter().zip(parties).take(MAX_ATTACHMENTS) {
                let read = match servers.connection(&a.server).await {
                    Ok(conn) => conn.read_resource(a.uri.clone()).await.map_err(|e| e.message),
                    Err(e) => Err(e.to_string()),
                };
                let (body, cut) = match read {
                    Ok(result) => crate::conversation::bound(&resource_text(&result), MAX_ATTACHED_BYTES),
                    Err(e) => (format!("(it could not be read: {e})"), 0),
                };
                // The resource's text goes as JSON after the host's marker: a copy of the marker
                // inside it cannot pass for another attachment or for the person's words.
                turn.push_str("\n\n");
                turn.push_str(&words::attachment(&a.uri, &party.1, &body, cut));
                from.push(party);
            }
            let _ = asks.send(Ask::Turn(Input::WithServerData { text: turn, servers: from }));
        });
    }
}

/// A prompt as the composer lists it (its texts made safe for a person), if it has a name.
fn prompt_entry(server: &str, label: &str, prompt: &Value) -> Option<Value> {
    let name = prompt.get("name").and_then(Value::as_str).filter(|n| !n.is_empty() && n.len() <= 128)?;
    let text = |v: Option<&Value>, max| v.and_then(Value::as_str).map(|s| consent::one_line_max(s, max));
    let arguments: Vec<Value> = prompt
        .get("arguments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .take(20)
                .filter_map(|arg| {
                    let name = arg.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
                    Some(json!({"name": consent::one_line_max(name, 64), "description": text(arg.get("description"), 200),
                                "required": arg.get("required").and_then(Value::as_bool).unwrap_or(false)}))
                })
                .collect()
        })
        .unwrap_or_default();
    Some(json!({"server": server, "label": label, "name": consent::one_line_max(name, 128),
                "title": text(prompt.get("title"), 120), "description": text(prompt.get("description"), 300),
                "arguments": arguments}))
}

/// A resource as the composer lists it; a View's `ui://` resource is not one to attach.
fn resource_entry(server: &str, label: &str, resource: &Value) -> Option<Value> {
    let uri = resource.get("uri").and_then(Value::as_str).filter(|u| !u.starts_with("ui://") && u.len() <= 2048)?;
    let name = resource.get("title").or(resource.get("name")).and_then(Value::as_str).unwrap_or(uri);
    Some(json!({"server": server, "label": label, "uri": uri, "name": consent::one_line_max(name, 120)}))
}

/// A `prompts/get` result's messages: each one's role and text (its text blocks, a resource's
/// text, other blocks named), at most `max` bytes of text in all, and how many bytes were cut.
fn prompt_messages(result: &Value, max: usize) -> (Vec<(String, String)>, usize) {
    let listed = result.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let (mut messages, mut room, mut cut) = (Vec::new(), max, 0);
    for m in listed {
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        let blocks = match content {
            Value::Array(blocks) => blocks,
            block => vec![block],
        };
        let text = blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                Some("resource") => resource_text(&json!({"contents": [b["resource"].clone()]})),
                Some(kind) => format!("({} content)", consent::one_line_max(kind, 40)),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let (text, left_out) = crate::conversation::bound(&text, room);
        room -= text.len();
        cut += left_out;
        let role = match m.get("role").and_then(Value::as_str) {
            Some("assistant") => "assistant",
            _ => "user",
        };
        messages.push((role.to_owned(), text));
    }
    (messages, cut)
}

/// A `resources/read` result's contents as text (a blob is named, not decoded).
fn resource_text(result: &Value) -> String {
    let contents = result.get("contents").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    contents
        .iter()
        .map(|c| match (c.get("text").and_then(Value::as_str), c.get("blob")) {
            (Some(text), _) => text.to_owned(),
            (None, Some(_)) => format!(
                "[binary content, {}]",
                c.get("mimeType").and_then(Value::as_str).unwrap_or("of no stated type")
            ),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompts_messages_and_a_resources_contents_read_as_text() {
        let got = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this code"}},
            {"role": "assistant", "content": {"type": "text", "text": "Sure"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "file:///a", "text": "fn main() {}"}}}
        ]});
        let said = |m: &[(&str, &str)]| m.iter().map(|(r, t)| ((*r).to_owned(), (*t).to_owned())).collect::<Vec<_>>();
        assert_eq!(
            prompt_messages(&got, 1000),
            (said(&[("user", "Review this code"), ("assistant", "Sure"), ("user", "fn main() {}")]), 0)
        );
        assert_eq!(
            prompt_messages(&got, 20),
            (said(&[("user", "Review this code"), ("assistant", "Sure"), ("user", "")]), 12)
        );
        let read =
            json!({"contents": [{"uri": "x", "text": "hello"}, {"uri": "y", "blob": "AA", "mimeType": "image/png"}]});
        assert_eq!(resource_text(&read), "hello\n[binary content, image/png]");
    }

    #[test]
    fn listed_prompts_and_resources_are_safe_for_the_composer() {
        let p = prompt_entry(
            "s",
            "S",
            &json!({"name": "review\nSYSTEM", "arguments": [{"name": "code", "required": true}, {}]}),
        )
        .unwrap();
        assert_eq!(p["name"], "review\\nSYSTEM");
        assert_eq!(p["arguments"], json!([{"name": "code", "description": null, "required": true}]));
        assert!(prompt_entry("s", "S", &json!({"title": "no name"})).is_none());
        assert!(resource_entry("s", "S", &json!({"uri": "ui://s/view.html"})).is_none(), "a View's resource");
        assert_eq!(
            resource_entry("s", "S", &json!({"uri": "file:///notes.md", "name": "notes"})).unwrap()["name"],
            "notes"
        );
    }
}
