use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

use crate::protocol::RpcError;

/// A boxed, sendable future, as returned by [`ServerPort`] methods.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

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
    ) -> BoxFuture<Result<Value, RpcError>>;
    /// `resources/read` on this server.
    fn read_resource(&self, uri: String) -> BoxFuture<Result<Value, RpcError>>;
    /// The server's current definition of a tool, if it has one by that name.
    fn tool(&self, name: &str) -> Option<Value>;
}
