//! The host's messages validate against the official App SDK's `schema.json` (no display needed).

mod common;

use std::sync::Arc;

use mcp_apps_host::bridge::{BoxFuture, CallControl, ServerPort, Trace, ViewConfig, ViewOutput, ViewSession};
use mcp_apps_host::protocol::{ContainerDimensions, DisplayMode, HostContext, RpcError, Theme};
use mcp_apps_host::sandbox::build_csp;
use serde_json::{json, Map, Value};

struct NoServer;

impl ServerPort for NoServer {
    fn call_tool(
        &self,
        _: String,
        _: Option<Map<String, Value>>,
        _: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(async { Err(RpcError::new(-32601, "none")) })
    }
    fn request(&self, _: &str, _: Value) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(async { Err(RpcError::new(-32601, "none")) })
    }
    fn tool(&self, _: &str) -> Option<Value> {
        None
    }
}

/// Runs a scripted handshake and returns every message the host posted, in order.
async fn host_messages(config: ViewConfig) -> Vec<Value> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let view = ViewSession::spawn(config, Arc::new(NoServer), tx, Trace::disabled());
    view.tool_input(Map::from_iter([("city".to_owned(), json!("Oslo"))]));
    view.tool_result(
        json!({"content": [{"type": "text", "text": "7°C"}], "structuredContent": {"t": 7}, "_meta": {"x": 1}}),
    );
    view.from_view(
        json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}).to_string(),
    );
    view.from_view(
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
        "appInfo": {"name": "v", "version": "1"}, "appCapabilities": {"availableDisplayModes": ["inline"]},
        "protocolVersion": "2026-01-26"}})
        .to_string(),
    );
    view.from_view(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}).to_string());
    view.from_view(
        json!({"jsonrpc": "2.0", "id": 2, "method": "ui/request-display-mode", "params": {"mode": "pip"}}).to_string(),
    );
    let mut out = Vec::new();
    while let Ok(Some((_, o))) = tokio::time::timeout(std::time::Duration::from_millis(300), rx.recv()).await {
        if let ViewOutput::Post(text) = o {
            out.push(serde_json::from_str(&text).unwrap());
        }
    }
    out
}

fn realistic_config() -> ViewConfig {
    let tool = json!({
        "name": "weather", "title": "Weather", "description": "Shows the weather",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "_meta": {"ui": {"resourceUri": "ui://weather/view.html", "visibility": ["model", "app"]}, "ui/resourceUri": "ui://weather/view.html"}
    });
    let mut config = ViewConfig::new("v1", tool, "<!doctype html><p>hi</p>");
    let csp = build_csp(Some(
        &serde_json::from_value(json!({
        "connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]}))
        .unwrap(),
    ));
    config.granted_csp = csp.granted;
    config.granted_permissions = Some(serde_json::from_value(json!({"clipboardWrite": {}})).unwrap());
    let mut ctx = HostContext::default();
    ctx.theme = Some(Theme::Dark);
    ctx.display_mode = Some(DisplayMode::Inline);
    ctx.available_display_modes = Some(vec![DisplayMode::Inline]);
    let mut dims = ContainerDimensions::default();
    dims.width = Some(926.0);
    dims.max_height = Some(4000.0);
    ctx.container_dimensions = Some(dims);
    ctx.locale = Some("en-US".into());
    ctx.time_zone = Some("Europe/Oslo".into());
    ctx.platform = Some("desktop".into());
    ctx.user_agent = Some("mcp-apps-host/test".into());
    ctx.device_capabilities = Some(json!({"touch": false, "hover": true}));
    config.host_context = ctx;
    config
}

fn bare(msg: &Value) -> Value {
    let mut m = msg.clone();
    m.as_object_mut().unwrap().remove("jsonrpc");
    m.as_object_mut().unwrap().remove("id");
    m
}

#[tokio::test]
async fn every_host_message_of_a_handshake_passes_the_sdk_schema() {
    let msgs = host_messages(realistic_config()).await;
    let methods: Vec<&str> = msgs.iter().map(|m| m["method"].as_str().unwrap_or("<response>")).collect();
    assert_eq!(
        methods,
        [
            "ui/notifications/sandbox-resource-ready",
            "<response>",
            "ui/notifications/tool-input",
            "ui/notifications/tool-result",
            "<response>"
        ]
    );
    let mut errors = Vec::new();
    errors.extend(common::schema_errors("McpUiSandboxResourceReadyNotification", &bare(&msgs[0])));
    errors.extend(common::schema_errors("McpUiInitializeResult", &msgs[1]["result"]));
    errors.extend(common::schema_errors("McpUiToolInputNotification", &bare(&msgs[2])));
    errors.extend(common::schema_errors("McpUiToolResultNotification", &bare(&msgs[3])));
    errors.extend(common::schema_errors("McpUiRequestDisplayModeResult", &msgs[4]["result"]));
    assert!(errors.is_empty(), "{errors:#?}");
    // The granted sandbox is echoed.
    assert_eq!(
        msgs[1]["result"]["hostCapabilities"]["sandbox"]["csp"]["connectDomains"],
        json!(["https://api.example.com"])
    );
    assert_eq!(msgs[1]["result"]["hostCapabilities"]["sandbox"]["permissions"], json!({"clipboardWrite": {}}));
}

#[test]
fn the_schema_check_itself_catches_a_broken_initialize_result() {
    // Guards the guard: a result without hostContext, or a tool without inputSchema, must fail.
    let broken =
        json!({"protocolVersion": "2026-01-26", "hostInfo": {"name": "h", "version": "1"}, "hostCapabilities": {}});
    assert!(!common::schema_errors("McpUiInitializeResult", &broken).is_empty());
    let bad_tool = json!({"protocolVersion": "2026-01-26", "hostInfo": {"name": "h", "version": "1"}, "hostCapabilities": {},
        "hostContext": {"toolInfo": {"tool": {"name": "t"}}}});
    assert!(!common::schema_errors("McpUiInitializeResult", &bad_tool).is_empty());
    let bad_theme = json!({"protocolVersion": "2026-01-26", "hostInfo": {"name": "h", "version": "1"}, "hostCapabilities": {},
        "hostContext": {"theme": "blue"}});
    assert!(!common::schema_errors("McpUiInitializeResult", &bad_theme).is_empty());
    // The relaxed containerDimensions still has to be an object.
    let bad_dims = json!({"protocolVersion": "2026-01-26", "hostInfo": {"name": "h", "version": "1"}, "hostCapabilities": {},
        "hostContext": {"containerDimensions": "big"}});
    assert!(!common::schema_errors("McpUiInitializeResult", &bad_dims).is_empty());
}
