//! What a session is told about its View before it starts.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ViewId;
use crate::bridge::policy::{DefaultPolicy, HostPolicy, ViewInfo};
use crate::protocol::{HostContext, Implementation, ResourceCsp, ResourcePermissions};

/// Everything a session needs to know about its View up front.
#[derive(Clone)]
#[non_exhaustive]
pub struct ViewConfig {
    /// The View's id (also used in the trace).
    pub id: ViewId,
    /// The server's display name (for people deciding on the View's requests).
    pub server_name: String,
    /// The definition of the tool whose call this View renders (must include `inputSchema`).
    pub tool: Value,
    /// The View's HTML.
    pub html: String,
    /// The CSP origins really granted (echoed to the proxy and in `hostCapabilities.sandbox`).
    pub granted_csp: ResourceCsp,
    /// The permissions really granted.
    pub granted_permissions: Option<ResourcePermissions>,
    /// This host's name and version.
    pub host_info: Implementation,
    /// Host context at start (`toolInfo` is filled in by the session).
    pub host_context: HostContext,
    /// How long to wait for the View's answer to `ui/resource-teardown`.
    pub teardown_timeout: Duration,
    /// The host forwards the server's `list_changed` notifications to this View.
    pub forwards_list_changed: bool,
    /// The View is an OpenAI Apps SDK widget: the sandbox proxy writes the `window.openai` shim
    /// (`sandbox-proxy/openai-shim.js`) at the top of its document. The shim speaks MCP Apps for
    /// the widget, so everything it asks is decided like any View's request.
    pub openai_shim: bool,
    /// Decides what needs deciding.
    pub policy: Arc<dyn HostPolicy>,
    /// Where the messages for the View go, if not the output channel as [`ViewOutput::Post`](super::ViewOutput::Post):
    /// called on the session's task with the JSON text, so a host whose webview takes messages
    /// from any thread needs no task to relay them. `None`: the output channel.
    pub post_sink: Option<Arc<dyn PostSink>>,
    /// Where the host serves the View's document (a URL of the View's sandbox origin, with the
    /// View's CSP header): `sandbox-resource-ready` then names it (`src`) instead of carrying
    /// [`html`](Self::html), and the proxy loads its frame from it. `None`: the proxy writes
    /// the HTML itself.
    pub document_url: Option<String>,
}

/// A thread-safe line into a View's frame (see [`ViewConfig::post_sink`]): the session posts
/// each message for its View on it, from the session's own task, in order.
///
/// Any `Fn(String) + Send + Sync` is one, so an embedder may pass a closure.
pub trait PostSink: Send + Sync {
    /// Hands `msg` (the JSON text of one message) to the View's frame.
    fn post(&self, msg: String);
}

impl<F: Fn(String) + Send + Sync> PostSink for F {
    fn post(&self, msg: String) {
        self(msg)
    }
}

impl std::fmt::Debug for ViewConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewConfig")
            .field("id", &self.id)
            .field("server_name", &self.server_name)
            .field("html_bytes", &self.html.len())
            .finish_non_exhaustive()
    }
}

impl ViewConfig {
    /// A config with this host's defaults and the [`DefaultPolicy`].
    pub fn new(id: impl Into<ViewId>, tool: Value, html: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            server_name: String::new(),
            tool,
            html: html.into(),
            granted_csp: ResourceCsp::default(),
            granted_permissions: None,
            host_info: Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")),
            host_context: HostContext::default(),
            teardown_timeout: Duration::from_secs(3),
            forwards_list_changed: false,
            openai_shim: false,
            policy: Arc::new(DefaultPolicy),
            post_sink: None,
            document_url: None,
        }
    }

    pub(in crate::bridge) fn info(&self) -> ViewInfo {
        let tool = self.tool.get("name").and_then(Value::as_str).unwrap_or_default();
        ViewInfo::new(self.id.clone(), self.server_name.clone(), tool)
    }
}
