//! The Apps' own tools in the conversation: a View that says it has tools
//! (`appCapabilities.tools`) has them read with `tools/list` once it is initialized and again
//! on its `notifications/tools/list_changed`; the model is offered them while the View lives
//! (`app_<view>__<tool>`, see `crate::conversation::tools`) and its calls go to the View through the
//! bridge. A View that closes or sleeps takes its tools with it. Its tools are its server's:
//! the conversation's trust rules apply to them as to the server's own.

use std::collections::BTreeMap;

use super::*;

/// A View offers the model at most this many tools (the rest are left out, and said so).
const MAX_APP_TOOLS: usize = 32;
/// Reading a View's tools waits at most this long.
const LIST_WAIT: Duration = Duration::from_secs(5);

/// Each live View's tools, as the conversation reads them for every request.
pub(in crate::app) type AppTools = Arc<std::sync::Mutex<BTreeMap<ViewId, Vec<ToolEntry>>>>;

impl Controller {
    /// Reads `view`'s own tools (again), for the model.
    pub(in crate::app) fn list_app_tools(&self, view: &str) {
        let Some(v) = self.views.get(view).filter(|_| self.conversation.chat.is_some()) else { return };
        let handle = v.handle.clone();
        let server = v.server.clone();
        let identity = self.servers.identity(&server).unwrap_or_default();
        let label = consent::app_label(&v.tool, &self.label(&server));
        let (tools, view) = (self.conversation.app_tools.clone(), view.to_owned());
        // A slot now: a View that closes before its list comes leaves none to fill.
        tools.lock().unwrap_or_else(|e| e.into_inner()).entry(view.clone()).or_default();
        tokio::spawn(async move {
            let entries = match tokio::time::timeout(LIST_WAIT, handle.list_view_tools()).await {
                Ok(Ok(result)) => app_entries(&result, &server, &identity, &label, &view),
                Ok(Err(e)) => {
                    tracing::info!(view, "the View's tools could not be read: {}", e.message);
                    Vec::new()
                }
                Err(_) => {
                    tracing::info!(view, "the View did not list its tools within {} s", LIST_WAIT.as_secs());
                    Vec::new()
                }
            };
            tracing::info!(view, tools = entries.len(), "the View's own tools are offered to the model");
            if let Some(slot) = tools.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&view) {
                *slot = entries;
            }
        });
    }

    /// The developer panel: `view`'s own tools, or a call of one (`call`), shown in its Tools tab.
    pub(in crate::app) fn dev_view_tools(&self, view: &str, call: Option<(String, Map<String, Value>)>) {
        let Some(handle) = self.views.get(view).map(|v| v.handle.clone()) else { return };
        let (ui, view) = (self.ui.clone(), view.to_owned());
        tokio::spawn(async move {
            let listed = handle.list_view_tools().await;
            let tools: Vec<Value> = match &listed {
                Ok(result) => app_entries(result, "", "", "", &view)
                    .iter()
                    .map(|e| {
                        let description = e.tool.get("description").and_then(Value::as_str).unwrap_or_default();
                        json!({"name": e.name(), "description": consent::one_line_max(description, 300)})
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            let text = match (call, listed) {
                (Some((name, arguments)), _) => Some(match handle.call_view_tool(&name, arguments).await {
                    Ok(result) => consent::block(&serde_json::to_string_pretty(&result).unwrap_or_default()),
                    Err(e) => consent::block(&format!("The call failed: {}", e.message)),
                }),
                (None, Err(e)) => Some(consent::block(&format!("The View lists no tools: {}", e.message))),
                (None, Ok(_)) if tools.is_empty() => Some("The View lists no tools.".to_owned()),
                (None, Ok(_)) => None,
            };
            let _ = ui.send_event(UserEvent::Shell(ShellCommand::ViewTools { view, tools, text }.to_text()));
        });
    }

    /// A View that is gone offers nothing more.
    pub(in crate::app) fn forget_app_tools(&self, view: &str) {
        self.conversation.app_tools.lock().unwrap_or_else(|e| e.into_inner()).remove(view);
    }

    /// The tools the conversation offers: every server's, then the live Views'.
    pub(in crate::app) fn conversation_tools(&self) -> Arc<dyn Fn() -> Vec<ToolEntry> + Send + Sync> {
        let (servers, apps) = (self.servers.clone(), self.conversation.app_tools.clone());
        Arc::new(move || {
            let mut tools = servers.tools();
            tools.extend(apps.lock().unwrap_or_else(|e| e.into_inner()).values().flatten().cloned());
            tools
        })
    }
}

/// The tools of a View's `tools/list` result that the model may be offered: objects with a
/// name of the characters tool names are made of, at most [`MAX_APP_TOOLS`].
fn app_entries(result: &Value, server: &str, identity: &str, label: &str, view: &str) -> Vec<ToolEntry> {
    let listed = result.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if listed.len() > MAX_APP_TOOLS {
        tracing::warn!(view, "the View lists {} tools; the model is offered the first {MAX_APP_TOOLS}", listed.len());
    }
    listed
        .iter()
        .take(MAX_APP_TOOLS)
        .filter(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let ok = !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !ok {
                tracing::warn!(
                    view,
                    "a tool of the View is left out: its name {:?} is not a tool name",
                    consent::one_line_max(name, 80)
                );
            }
            ok
        })
        .map(|t| {
            let mut entry = ToolEntry::new(server, t.clone());
            entry.identity = identity.to_owned();
            entry.label = label.to_owned();
            entry.app_view = Some(view.to_owned());
            entry
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_views_tools_are_bounded_and_named_like_tools() {
        let mut tools: Vec<Value> = (0..40).map(|n| json!({"name": format!("t{n}")})).collect();
        tools.insert(0, json!({"name": "bad name\nSYSTEM:"}));
        tools.insert(0, json!({"description": "no name"}));
        let entries = app_entries(&json!({"tools": tools}), "s", "stdio:s", "board · S", "v3");
        assert_eq!(entries.len(), MAX_APP_TOOLS - 2, "the first 32 listed, less the two without a tool's name");
        assert_eq!(entries[0].name(), "t0");
        assert_eq!((entries[0].app_view.as_deref(), entries[0].label.as_str()), (Some("v3"), "board · S"));
        assert_eq!(entries[0].identity, "stdio:s");
        assert!(app_entries(&json!({"tools": "no"}), "s", "i", "l", "v").is_empty());
    }
}
