//! One live MCP client connection (rmcp), with the server's tools and resources indexed: the
//! [`Connection`] and what it answers about its server. How it connects, lists, sends, explains
//! its failures and hears of changes lives in the modules below.

mod calls;
mod connect;
mod errors;
mod host_client;
mod late_answers;
mod lifecycle;
mod listing;
mod options;
mod subscriptions;
mod ui_cache;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};

use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceError};
use serde_json::{json, Map, Value};

use crate::bridge::{BoxFuture, CallControl, ServerPort};
use crate::protocol::RpcError;
use crate::ui_resource::{ListedTool, ToolUi, UiLinkError};
pub use errors::auth_challenge_of;
use errors::rpc_error;
pub use host_client::ServerChange;
use host_client::{HostClient, ProgressRoutes};
pub use lifecycle::Negotiation;
use options::SHUTDOWN_TIMEOUT;
pub use options::{
    ConnectOptions, RequestHandler, DEFAULT_REQUEST_TIMEOUT, HANDSHAKE_TIMEOUT, IDLE_TIMEOUT, LIST_PAGE_TIMEOUT,
    LIST_TIMEOUT, MAX_CALL_DURATION, MAX_LISTED_RESOURCES, MAX_LISTED_TOOLS, MAX_LIST_BYTES, MAX_LIST_PAGES,
    STDIO_START_TIMEOUT,
};
use subscriptions::Listening;

/// A connected MCP server.
pub struct Connection {
    name: String,
    identity: String,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, HostClient>>>,
    peer: rmcp::Peer<RoleClient>,
    /// Each with its UI link read once, when listed.
    tools: RwLock<Vec<ListedTool>>,
    resources: RwLock<Vec<Value>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    options: ConnectOptions,
    progress: ProgressRoutes,
    changes: tokio::sync::broadcast::Sender<ServerChange>,
    /// The server process (stdio only).
    pid: Option<u32>,
    /// Who answers what a 2026-07-28 server asks inside its results.
    client: HostClient,
    /// A 2026-07-28 server's change notifications.
    listening: tokio::sync::Mutex<Listening>,
    /// Set by [`Connection::shutdown`].
    closed: tokio::sync::watch::Sender<bool>,
    /// UI resources read for Views, for the next View of the same resource.
    ui_cache: ui_cache::UiCache,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Connection {
    /// Changes the server announces (tool and resource lists, updated resources). After
    /// [`ServerChange::Tools`], call [`Connection::refresh`] to re-read the tools.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<ServerChange> {
        self.changes.subscribe()
    }

    /// Asks the server to announce changes of `uri`, when it can, within the request timeout:
    /// `resources/subscribe` (2025 revisions), or a `subscriptions/listen` stream that names it
    /// (2026-07-28).
    pub async fn subscribe(&self, uri: &str) -> Result<(), RpcError> {
        let can = self
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false));
        if !can {
            return Err(RpcError::method_not_found("resources/subscribe (the server does not offer it)"));
        }
        let timeout = self.options.request_timeout;
        if self.negotiation() == Some(Negotiation::Discover) {
            let mut listening = self.listening.lock().await;
            return listening.listen(&self.peer, Some(uri), &self.changes, timeout).await.map_err(rpc_error);
        }
        match tokio::time::timeout(timeout, self.request("resources/subscribe", json!({"uri": uri}))).await {
            Ok(answer) => answer.map(drop),
            Err(_) => Err(rpc_error(ServiceError::Timeout { timeout })),
        }
    }

    /// Whether the connection still works: false once the transport closed (the process exited,
    /// the HTTP session or SSE stream could not be recovered, or [`Connection::shutdown`] ran).
    /// A server set restarts a server whose connection is no longer alive.
    pub fn is_alive(&self) -> bool {
        !self.peer.is_transport_closed()
    }

    /// The server process id (stdio servers only).
    pub fn process_id(&self) -> Option<u32> {
        self.pid
    }

    /// The server's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol revision negotiated with the server, e.g. `2026-07-28` (chosen from its
    /// `server/discover` answer) or `2025-11-25` (its `initialize` answer).
    pub fn protocol_version(&self) -> Option<String> {
        self.peer.peer_info().map(|i| i.protocol_version.to_string())
    }

    /// How that revision was negotiated.
    pub fn negotiation(&self) -> Option<Negotiation> {
        self.peer.peer_info().map(|i| Negotiation::of(&i.protocol_version))
    }

    /// The revision as people read it: `2025-11-25`, or `2026-07-28, by server/discover` for the
    /// revisions without `initialize`.
    pub fn revision_label(&self) -> Option<String> {
        let version = self.protocol_version()?;
        Some(match self.negotiation() {
            Some(Negotiation::Discover) => format!("{version}, by server/discover"),
            _ => version,
        })
    }

    /// The server's own name for itself, from its initialize result: `serverInfo.title` when it
    /// gives one, else `serverInfo.name` (`None` when both are blank). Untrusted text: make it
    /// one line before showing it (the server set's labels do, see [`crate::server::set::ServerSet::label`]).
    pub fn server_title(&self) -> Option<String> {
        let info = self.peer.peer_info()?;
        let own = info.server_info.as_ref()?;
        let title = [own.title.as_deref(), Some(own.name.as_str())]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|t| !t.is_empty())
            .map(str::to_owned);
        title
    }

    /// What the server tells its clients about using it (`instructions` of its initialize or
    /// discover answer). Untrusted text: the server's own words.
    pub fn instructions(&self) -> Option<String> {
        self.peer.peer_info()?.instructions.clone().filter(|i| !i.trim().is_empty())
    }

    /// The server's stable identity (command line or URL).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// All tools, as the server defined them.
    pub fn tools(&self) -> Vec<Value> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).iter().map(|t| t.definition.clone()).collect()
    }

    /// All tools, each with its UI link as read when it was listed.
    pub fn listed_tools(&self) -> Vec<ListedTool> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<Value> {
        self.with_tool(name, |t| t.definition.clone())
    }

    /// What one tool says about its UI, as read when it was listed.
    pub fn tool_ui(&self, name: &str) -> Option<std::result::Result<ToolUi, UiLinkError>> {
        self.with_tool(name, |t| t.ui.clone())
    }

    /// One tool with its UI link, from one listing.
    pub fn listed_tool(&self, name: &str) -> Option<ListedTool> {
        self.with_tool(name, ListedTool::clone)
    }

    fn with_tool<T>(&self, name: &str, read: impl FnOnce(&ListedTool) -> T) -> Option<T> {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        tools.iter().find(|t| t.name() == name).map(read)
    }

    /// The `resources/list` entry for a URI, if the server listed it.
    pub fn listed_resource(&self, uri: &str) -> Option<Value> {
        let resources = self.resources.read().unwrap_or_else(|e| e.into_inner());
        resources.iter().find(|r| r.get("uri").and_then(Value::as_str) == Some(uri)).cloned()
    }

    /// The resources the server listed (`resources/list` entries).
    pub fn resources(&self) -> Vec<Value> {
        self.resources.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the server offers prompts (`capabilities.prompts`).
    pub fn has_prompts(&self) -> bool {
        self.peer.peer_info().is_some_and(|i| i.capabilities.prompts.is_some())
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// Closes the connection: for stdio, stdin closed, then SIGTERM, then SIGKILL (3 s apart at
    /// most); for Streamable HTTP, the session is deleted; for SSE, the stream is closed.
    pub async fn shutdown(&self) {
        self.closed.send_replace(true);
        self.listening.lock().await.stop();
        if let Some(mut service) = self.service.lock().await.take() {
            if let Ok(None) = service.close_with_timeout(SHUTDOWN_TIMEOUT).await {
                let limit = SHUTDOWN_TIMEOUT.as_secs();
                tracing::warn!(server = %self.name, "close did not finish in {limit} s; dropping it");
            }
        }
    }

    /// This connection as the bridge's [`ServerPort`].
    pub fn port(self: &Arc<Self>) -> Arc<dyn ServerPort> {
        Arc::new(Port(self.clone()))
    }
}

struct Port(Arc<Connection>);

impl ServerPort for Port {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        Box::pin(async move { conn.call_tool(name, arguments, control).await })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let conn = self.0.clone();
        let method = method.to_owned();
        Box::pin(async move { conn.request(&method, params).await })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        self.0.tool(name)
    }

    fn listed_tool(&self, name: &str) -> Option<ListedTool> {
        self.0.listed_tool(name)
    }
}
