//! Driving a `ViewSession` from another webview (Tauri, a browser over a WebSocket, ...): the bridge
//! needs only JSON text in and out and a `ServerPort`. Here the "webview" is a script of messages
//! a View would send, and the server is a stub; no window is opened.
//!
//! `cargo run --example drive_session`

use std::sync::Arc;

use mcp_apps_host::bridge::{BoxFuture, CallControl, ServerPort, Trace, ViewConfig, ViewOutput, ViewSession};
use mcp_apps_host::protocol::RpcError;
use mcp_apps_host::sandbox::build_csp;
use serde_json::{json, Map, Value};

/// Your MCP client goes here; this one answers every call with a greeting.
struct Stub;

impl ServerPort for Stub {
    fn call_tool(
        &self,
        name: String,
        _args: Option<Map<String, Value>>,
        _control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(async move { Ok(json!({"content": [{"type": "text", "text": format!("hello from {name}")}]})) })
    }
    fn request(&self, method: &str, _params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let method = method.to_owned();
        Box::pin(async move { Err(RpcError::method_not_found(&method)) })
    }
    fn tool(&self, name: &str) -> Option<Value> {
        (name == "greet").then(
            || json!({"name": "greet", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}}),
        )
    }
}

#[tokio::main]
async fn main() {
    // The policy your webview serves the proxy page with: header and what it grants.
    let csp = build_csp(None);
    println!("Content-Security-Policy: {}", csp.header);

    let tool =
        json!({"name": "show", "inputSchema": {"type": "object"}, "_meta": {"ui": {"resourceUri": "ui://demo/show"}}});
    let mut config = ViewConfig::new("view-1", tool, "<!doctype html><p>your View's HTML</p>");
    config.granted_csp = csp.granted;
    let (out, mut from_bridge) = tokio::sync::mpsc::unbounded_channel();
    let view = ViewSession::spawn(config, Arc::new(Stub), out, Trace::disabled());
    view.tool_input(Map::new());
    view.tool_result(json!({"content": [{"type": "text", "text": "the tool's result"}]}));

    // What your webview's sandbox proxy would relay from the View, as JSON text.
    for msg in [
        json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {"appInfo": {"name": "v", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}}),
        json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet"}}),
    ] {
        view.from_view(msg.to_string());
    }

    // Everything the bridge wants delivered back (post it into the frame) or acted upon.
    let mut answered = false;
    while let Ok(Some((id, output))) =
        tokio::time::timeout(std::time::Duration::from_millis(300), from_bridge.recv()).await
    {
        match output {
            ViewOutput::Post(text) => {
                let v: Value = serde_json::from_str(&text).expect("JSON");
                answered |= v["id"] == 2;
                let mut shown = text;
                shown.truncate(120);
                println!("{id} <- {shown}");
            }
            ViewOutput::Event(event) => println!("{id} event: {event:?}"),
            // Outputs added later: a driver that does not know one ignores it.
            _ => {}
        }
    }
    assert!(answered, "the View's tools/call was answered");
}
