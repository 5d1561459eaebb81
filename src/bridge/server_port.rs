use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::RpcError;
use crate::ui_resource::ListedTool;

/// A boxed, sendable future, as returned by [`ServerPort`] and policy methods.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Progress and cancellation of one forwarded call.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CallControl {
    /// Where the server's `notifications/progress` params for this call go (token removed).
    pub progress: Option<mpsc::UnboundedSender<Value>>,
    /// Fires (with a reason) when the View cancels the call; the server should be told.
    pub cancelled: Option<oneshot::Receiver<Option<String>>>,
    /// The request `_meta` to send along (the View's, without its progress token: the connection
    /// sets its own and routes that call's progress to `progress`).
    pub meta: Option<Map<String, Value>>,
}

/// The View's MCP server, as the bridge sees it.
///
/// Results are plain JSON (`CallToolResult`, `ReadResourceResult`), errors are JSON-RPC errors
/// ready to hand to the View. Implementations bound their own waiting: the bridge relies on every
/// future finishing.
pub trait ServerPort: Send + Sync + 'static {
    /// `tools/call` on this server.
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>>;
    /// Another MCP request on this server (`resources/read`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`), params as the View sent them.
    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>>;
    /// The server's current definition of a tool, if it has one by that name.
    fn tool(&self, name: &str) -> Option<Value>;
    /// That tool with what it says about its UI (who may call it), from one listing: by default
    /// read from [`Self::tool`]; a port that keeps tools read already answers from there.
    fn listed_tool(&self, name: &str) -> Option<ListedTool> {
        self.tool(name).map(ListedTool::new)
    }
}
