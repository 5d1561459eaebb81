//! The embedded demo MCP server: a few hand-written Views (no libraries, no network) that show
//! what MCP Apps can do. It is compiled into the binary and runs in-process (the host's MCP client
//! talks to it over an in-memory stream), so `demo` needs no Node and no network.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{json, Value};

const APP_JS: &str = include_str!("../../assets/demo/app.js");
const DEMO_CSS: &str = include_str!("../../assets/demo/demo.css");
const WEATHER_HTML: &str = include_str!("../../assets/demo/weather.html");
const COUNTER_HTML: &str = include_str!("../../assets/demo/counter.html");

/// The MIME type of MCP App resources.
const MIME: &str = crate::protocol::RESOURCE_MIME_TYPE;

/// A JSON-RPC error: code and message.
pub type RpcFailure = (i64, String);

/// Serves MCP requests line by line on stdin/stdout until stdin closes; `handle` answers each
/// request (notifications are ignored). Used by the demo and probe servers.
pub fn serve_stdio(handle: impl Fn(&str, &Value) -> Result<Value, RpcFailure>) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(msg) = serde_json::from_str::<Value>(&line?) else { continue };
        let (Some(id), Some(method)) = (msg.get("id"), msg.get("method").and_then(Value::as_str)) else { continue };
        let reply = match handle(method, msg.get("params").unwrap_or(&Value::Null)) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        };
        writeln!(stdout, "{reply}")?;
        stdout.flush()?;
    }
    Ok(())
}

/// A built-in server's request handler.
pub type Handler = std::sync::Arc<dyn Fn(&str, &Value) -> Result<Value, RpcFailure> + Send + Sync>;

/// The servers compiled into this host, by name: `demo`.
pub fn builtin(name: &str) -> Option<Handler> {
    match name {
        "demo" => {
            let server = DemoServer::default();
            Some(std::sync::Arc::new(move |m: &str, p: &Value| server.handle(m, p)))
        }
        _ => None,
    }
}

/// Serves MCP requests line by line on an in-process stream until it closes (the other end is
/// the host's MCP client). Notifications are ignored.
pub async fn serve_stream<S>(stream: S, handle: Handler)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = tokio::io::BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        let (Some(id), Some(method)) = (msg.get("id"), msg.get("method").and_then(Value::as_str)) else { continue };
        let reply = match handle(method, msg.get("params").unwrap_or(&Value::Null)) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        };
        if write.write_all(format!("{reply}\n").as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The `initialize` result of a built-in server.
pub fn initialize_result(name: &str, params: &Value) -> Value {
    json!({
        "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
        "capabilities": {"tools": {}, "resources": {}},
        "serverInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")},
    })
}

fn view(html: &str) -> String {
    // The shared client and style go in as inline code: the View's CSP allows inline, not network.
    html.replace("/*DEMO_CSS*/", DEMO_CSS).replace("/*DEMO_APP*/", APP_JS)
}

/// The demo server's state.
#[derive(Debug, Default)]
pub struct DemoServer {
    counter: AtomicI64,
}

const CITIES: [(&str, i64, &str); 4] =
    [("Oslo", 4, "Light snow"), ("Lisbon", 19, "Sunny"), ("Tokyo", 14, "Cloudy"), ("Nairobi", 24, "Showers")];

/// Deterministic weather: the demo must look the same on every machine, with no network.
fn weather(city: &str, salt: i64) -> Result<Value, RpcFailure> {
    let (name, base, conditions) = CITIES
        .iter()
        .find(|(c, _, _)| c.eq_ignore_ascii_case(city))
        .ok_or_else(|| (-32602, format!("unknown city {city:?}; try Oslo, Lisbon, Tokyo or Nairobi")))?;
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri"];
    let forecast: Vec<Value> = days
        .iter()
        .enumerate()
        .map(|(i, d)| json!({"day": d, "tempC": base + ((i as i64 * 7 + salt) % 5) - 2}))
        .collect();
    let temp = base + salt % 3;
    Ok(json!({
        "content": [{"type": "text", "text": format!("{name}: {temp} °C, {conditions}")}],
        "structuredContent": {"city": name, "tempC": temp, "conditions": conditions, "forecast": forecast,
                              "updated": format!("refresh #{salt}")},
    }))
}

impl DemoServer {
    /// The tools.
    pub fn tools() -> Value {
        let app_only = json!({"ui": {"visibility": ["app"]}});
        json!([
            {"name": "weather", "title": "Weather", "description": "Shows the weather for a city in an interactive card.", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Oslo", "Lisbon", "Tokyo", "Nairobi"], "default": "Oslo", "description": "which city"}}},
             "_meta": {"ui": {"resourceUri": "ui://demo/weather.html"}}},
            {"name": "counter", "title": "Counter", "description": "A counter kept on the server, with a View that follows the host's theme.", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object", "properties": {}},
             "_meta": {"ui": {"resourceUri": "ui://demo/counter.html"}}},
            {"name": "greet", "title": "Greet", "description": "A plain tool without a UI: its result is text.", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "who"}}, "required": ["name"]}},
            {"name": "weather-refresh", "description": "Fresh weather for the weather View.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "_meta": app_only},
            {"name": "counter-add", "description": "Adds to the counter.", "inputSchema": {"type": "object", "properties": {"by": {"type": "integer"}}}, "_meta": app_only},
        ])
    }

    /// Answers one request.
    pub fn handle(&self, method: &str, params: &Value) -> Result<Value, RpcFailure> {
        match method {
            "initialize" => Ok(initialize_result("mcp-apps-host-demo", params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": Self::tools()})),
            "resources/list" => Ok(json!({"resources": [
                {"uri": "ui://demo/weather.html", "name": "weather view", "mimeType": MIME},
                {"uri": "ui://demo/counter.html", "name": "counter view", "mimeType": MIME},
            ]})),
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap_or_default();
                let html = match uri {
                    "ui://demo/weather.html" => view(WEATHER_HTML),
                    "ui://demo/counter.html" => view(COUNTER_HTML),
                    _ => return Err((-32002, format!("Resource not found: {uri}"))),
                };
                Ok(
                    json!({"contents": [{"uri": uri, "mimeType": MIME, "text": html, "_meta": {"ui": {"prefersBorder": true}}}]}),
                )
            }
            "tools/call" => self.call(params["name"].as_str().unwrap_or_default(), &params["arguments"]),
            _ => Err((-32601, format!("method not found: {method}"))),
        }
    }

    fn call(&self, tool: &str, args: &Value) -> Result<Value, RpcFailure> {
        match tool {
            "weather" => weather(args["city"].as_str().unwrap_or("Oslo"), 0),
            "weather-refresh" => {
                let salt = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
                weather(args["city"].as_str().unwrap_or("Oslo"), salt)
            }
            "counter" => {
                let n = self.counter.load(Ordering::Relaxed);
                Ok(
                    json!({"content": [{"type": "text", "text": format!("count: {n}")}], "structuredContent": {"count": n}}),
                )
            }
            "counter-add" => {
                let by = args["by"].as_i64().unwrap_or(1);
                let n = self.counter.fetch_add(by, Ordering::Relaxed) + by;
                Ok(
                    json!({"content": [{"type": "text", "text": format!("count: {n}")}], "structuredContent": {"count": n}}),
                )
            }
            "greet" => match args["name"].as_str() {
                Some(name) if !name.trim().is_empty() => {
                    Ok(json!({"content": [{"type": "text", "text": format!("Hello, {name}!")}]}))
                }
                _ => Err((-32602, "`name` is required".into())),
            },
            other => Err((-32602, format!("unknown tool `{other}`"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{inspect, Severity};
    use std::collections::BTreeMap;

    #[test]
    fn the_demo_server_passes_inspect_cleanly() {
        let server = DemoServer::default();
        let tools = DemoServer::tools();
        let tools = tools.as_array().unwrap().clone();
        let mut reads = BTreeMap::new();
        for uri in ["ui://demo/weather.html", "ui://demo/counter.html"] {
            let read = server
                .handle("resources/read", &json!({"uri": uri}))
                .map_err(|(c, m)| crate::protocol::RpcError::new(c, m));
            reads.insert(uri.to_owned(), read);
        }
        let report = inspect(&tools, &[], &reads);
        assert_eq!(report.count(Severity::Error) + report.count(Severity::Warning), 0, "{:?}", report.findings);
    }

    #[test]
    fn views_are_self_contained() {
        for html in [view(WEATHER_HTML), view(COUNTER_HTML)] {
            assert!(html.contains("window.DemoApp = {"), "the client is inlined");
            assert!(!html.contains("/*DEMO_"), "every placeholder is filled");
            assert!(!html.contains("src=\"http") && !html.contains("url(http"), "nothing is fetched");
        }
    }

    #[test]
    fn tools_answer_and_count() {
        let s = DemoServer::default();
        let w = s.handle("tools/call", &json!({"name": "weather", "arguments": {"city": "lisbon"}})).unwrap();
        assert_eq!(w["structuredContent"]["city"], "Lisbon");
        assert_eq!(w["structuredContent"]["forecast"].as_array().unwrap().len(), 5);
        assert!(s.handle("tools/call", &json!({"name": "weather", "arguments": {"city": "Atlantis"}})).is_err());
        s.handle("tools/call", &json!({"name": "counter-add", "arguments": {"by": 2}})).unwrap();
        let c = s.handle("tools/call", &json!({"name": "counter", "arguments": {}})).unwrap();
        assert_eq!(c["structuredContent"]["count"], 2);
        assert_eq!(
            s.handle("tools/call", &json!({"name": "greet", "arguments": {"name": "Ada"}})).unwrap()["content"][0]
                ["text"],
            "Hello, Ada!"
        );
    }
}
