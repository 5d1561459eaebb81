//! The tool index: every server's tools, kept apart by server, and their `instructions`.

use serde_json::Value;

use super::{ServerSet, ServerStatus};
use crate::error::{Error, Result};
use crate::ui_resource::{ToolUi, UiLinkError};

/// A server's `instructions`, as the server set has them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInstructions {
    /// The server's name in the server set.
    pub server: String,
    /// Its identity.
    pub identity: String,
    /// How a person knows it.
    pub label: String,
    /// The instructions, as the server wrote them.
    pub text: String,
}

/// One tool of one server, as the index holds it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The server's name in the server set.
    pub server: String,
    /// The server as a person sees it named (see [`ServerSet::label`]).
    pub label: String,
    /// The server's stable identity (its command line or URL: see `ServerSpec::identity`).
    pub identity: String,
    /// The tool's definition, as the server gave it.
    pub tool: Value,
    /// What it says about its UI, read once when the server listed it.
    pub ui: Result<ToolUi, UiLinkError>,
    /// The View that offers it, for an App's own tool (the spec's View-registered tools, called
    /// on the View, not the server); none for a server's tool.
    pub app_view: Option<String>,
}

impl ToolEntry {
    /// An entry for `tool` of `server` (its UI link read now).
    pub fn new(server: impl Into<String>, tool: Value) -> Self {
        let ui = crate::ui_resource::tool_ui(&tool);
        let server = server.into();
        Self { label: server.clone(), identity: server.clone(), server, tool, ui, app_view: None }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.get("name").and_then(Value::as_str).unwrap_or_default()
    }
}

impl ServerSet {
    /// The tool index: every tool of every server, in server order. A failed server keeps its
    /// last known tools: calling one restarts it on demand.
    pub fn tools(&self) -> Vec<ToolEntry> {
        let entries = self.lock();
        entries
            .iter()
            .filter(|e| e.status != ServerStatus::Stopped)
            .filter_map(|e| {
                let conn = e.connection.as_ref().or(e.last.as_ref())?;
                Some((e.name.clone(), e.label.clone(), e.identity.clone(), conn.listed_tools()))
            })
            .flat_map(|(server, label, identity, tools)| {
                tools.into_iter().map(move |t| ToolEntry {
                    server: server.clone(),
                    label: label.clone(),
                    identity: identity.clone(),
                    tool: t.definition,
                    ui: t.ui,
                    app_view: None,
                })
            })
            .collect()
    }

    /// Every connected server's `instructions` (its own words about using it), in server
    /// order.
    pub fn instructions(&self) -> Vec<ServerInstructions> {
        let entries = self.lock();
        entries
            .iter()
            .filter(|e| e.status != ServerStatus::Stopped)
            .filter_map(|e| {
                let text = e.connection.as_ref().or(e.last.as_ref())?.instructions()?;
                Some(ServerInstructions {
                    server: e.name.clone(),
                    identity: e.identity.clone(),
                    label: e.label.clone(),
                    text,
                })
            })
            .collect()
    }

    /// Finds a tool: on `server` when given, else the one server that has it. Two servers with a
    /// tool of that name make the name ambiguous, and the error lists them.
    pub fn find_tool(&self, server: Option<&str>, tool: &str) -> Result<ToolEntry> {
        let all = self.tools();
        if let Some(server) = server {
            if !self.names().iter().any(|n| n == server) {
                return Err(self.unknown(server));
            }
            return all.into_iter().find(|t| t.server == server && t.name() == tool).ok_or_else(|| {
                let available = self.tools().into_iter().filter(|t| t.server == server).map(|t| t.name().to_owned());
                Error::NoSuchTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    available: available.collect::<Vec<_>>().join(", "),
                }
            });
        }
        let matching: Vec<ToolEntry> = all.iter().filter(|t| t.name() == tool).cloned().collect();
        match matching.as_slice() {
            [one] => Ok(one.clone()),
            [] => {
                // With one server, its tool names; with several, `server/tool`.
                let single = self.names().len() == 1;
                let name =
                    |t: &ToolEntry| if single { t.name().to_owned() } else { format!("{}/{}", t.server, t.name()) };
                Err(Error::NoSuchTool {
                    server: self.names().join(", "),
                    tool: tool.to_owned(),
                    available: all.iter().map(name).collect::<Vec<_>>().join(", "),
                })
            }
            several => Err(Error::Request {
                server: several.iter().map(|t| t.server.clone()).collect::<Vec<_>>().join(", "),
                method: format!("tool `{tool}`"),
                reason: "several servers have a tool of this name; say which server".into(),
            }),
        }
    }
}
