//! The host's side of a running session: a handle that sends it commands.

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::{TeardownOutcome, ViewId};
use crate::protocol::{methods, DisplayMode, HostContext, RequestId, RpcError};

pub(in crate::bridge) enum Command {
    FromView(String),
    FromViewBatch(String),
    ToolInputPartial(Map<String, Value>),
    CallNotMade(Option<String>),
    ToolInput(Map<String, Value>),
    ToolResult(Value),
    ToolCancelled(Option<String>),
    HostContext(Box<HostContext>),
    ListChanged(&'static str),
    Notify(String, Value),
    HostRequest {
        method: &'static str,
        params: Value,
        reply: oneshot::Sender<Result<Value, RpcError>>,
    },
    HostRequestTimeout(RequestId),
    Teardown(oneshot::Sender<TeardownOutcome>),
    /// The View's frame is gone (its web process ended): no teardown, the session ends now.
    FrameGone,
    /// A request of the View was answered by the server or the policy.
    Completed {
        id: RequestId,
        method: &'static str,
        outcome: Result<Value, RpcError>,
        traced: bool,
    },
    /// A display-mode decision: respond, then announce.
    DisplayModeDecided {
        id: RequestId,
        mode: DisplayMode,
        /// The order the View asked in: a decision overtaken by a later one is stale.
        seq: u64,
    },
    /// Progress of a forwarded call.
    Progress {
        id: RequestId,
        params: Value,
    },
}

/// A handle to a running session. Cheap to clone; the session ends after teardown.
#[derive(Debug, Clone)]
pub struct ViewHandle {
    pub(super) id: ViewId,
    pub(super) tx: mpsc::UnboundedSender<Command>,
    /// The View's `ui://` resource, from its tool's `_meta.ui`.
    pub(super) resource_uri: Option<String>,
}

impl ViewHandle {
    /// The View's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The View's `ui://` resource URI (from its tool's `_meta.ui`), if the tool names one.
    pub fn resource_uri(&self) -> Option<&str> {
        self.resource_uri.as_deref()
    }

    /// A diagnostic's `detail` as the proxy reported it, pointed at the View: a location in the
    /// View's HTML (`inHtml`, or the sandbox URL the written frame took) gets the resource URI
    /// as its `source`, so authors see their file and its line numbers, not the proxy's.
    pub fn locate_diagnostic(&self, mut detail: Value) -> Value {
        let Some(d) = detail.as_object_mut() else { return detail };
        let in_html = d.remove("inHtml").is_some_and(|v| v == true);
        let uri = Value::String(self.resource_uri.clone().unwrap_or_else(|| "the View's HTML".into()));
        for key in ["source", "sourceFile"] {
            let proxy_url = d.get(key).and_then(Value::as_str).is_some_and(|s| s.starts_with("mcp-sandbox:"));
            if proxy_url || (in_html && key == "source") {
                d.insert(key.into(), uri.clone());
            }
        }
        detail
    }

    /// True once the session has ended.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Hands the session a message that arrived from the View's frame (JSON text).
    pub fn from_view(&self, text: String) {
        let _ = self.tx.send(Command::FromView(text));
    }

    /// Hands the session several messages from the View's frame at once: a JSON array of them
    /// (text), handled in order as if each had come alone.
    pub fn from_view_batch(&self, text: String) {
        let _ = self.tx.send(Command::FromViewBatch(text));
    }

    /// Streamed partial arguments (0..n times, only before [`tool_input`](Self::tool_input)).
    pub fn tool_input_partial(&self, arguments: Map<String, Value>) {
        let _ = self.tx.send(Command::ToolInputPartial(arguments));
    }

    /// The complete tool arguments (sent once, after `initialized`).
    pub fn tool_input(&self, arguments: Map<String, Value>) {
        let _ = self.tx.send(Command::ToolInput(arguments));
    }

    /// The tool's `CallToolResult` (sent after the tool input).
    pub fn tool_result(&self, result: Value) {
        let _ = self.tx.send(Command::ToolResult(result));
    }

    /// The tool run failed or was cancelled.
    pub fn tool_cancelled(&self, reason: Option<String>) {
        let _ = self.tx.send(Command::ToolCancelled(reason));
    }

    /// The tool call the View was opened for will not be made (the model never completed it, the
    /// person refused or stopped it): `tool-cancelled` goes out without waiting for an input,
    /// which will not come.
    pub fn call_not_made(&self, reason: Option<String>) {
        let _ = self.tx.send(Command::CallNotMade(reason));
    }

    /// Merges host context fields; the View gets `host-context-changed` with the fields that
    /// really changed (after `initialized`; before it, they go into the initialize result).
    pub fn update_host_context(&self, changes: HostContext) {
        let _ = self.tx.send(Command::HostContext(Box::new(changes)));
    }

    /// Sends a host -> View notification as given (after `initialized`), bypassing the one-input
    /// rule: for developer tools that replay `tool-input`, `tool-result` and the like.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.tx.send(Command::Notify(method.to_owned(), params));
    }

    /// The View's server changed its tool list.
    pub fn server_tools_changed(&self) {
        let _ = self.tx.send(Command::ListChanged("notifications/tools/list_changed"));
    }

    /// The View's server changed its resource list.
    pub fn server_resources_changed(&self) {
        let _ = self.tx.send(Command::ListChanged("notifications/resources/list_changed"));
    }

    async fn host_request(&self, method: &'static str, params: Value) -> Result<Value, RpcError> {
        let (reply, rx) = oneshot::channel();
        let closed = || RpcError::new(crate::protocol::jsonrpc::code::UNAVAILABLE, "the View is closed");
        self.tx.send(Command::HostRequest { method, params, reply }).map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// `tools/list` on the View's own tools (App-provided tools; needs `appCapabilities.tools`).
    pub async fn list_view_tools(&self) -> Result<Value, RpcError> {
        self.host_request(methods::TOOLS_LIST, json!({})).await
    }

    /// `tools/call` on one of the View's own tools. Errors once the View is gone.
    pub async fn call_view_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<Value, RpcError> {
        self.host_request(methods::TOOLS_CALL, json!({"name": name, "arguments": arguments})).await
    }

    /// The View's frame is gone (its web content crashed or was stopped): the session ends at
    /// once, without a teardown nobody could answer; anyone waiting on the View hears it is closed.
    pub fn frame_gone(&self) {
        let _ = self.tx.send(Command::FrameGone);
    }

    /// Runs the graceful teardown and waits for it (bounded by the config's timeout).
    pub async fn teardown(&self) -> TeardownOutcome {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Teardown(tx)).is_err() {
            return TeardownOutcome::NotInitialized;
        }
        rx.await.unwrap_or(TeardownOutcome::NotInitialized)
    }
}
