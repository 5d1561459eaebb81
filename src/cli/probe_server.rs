//! The built-in MCP server behind `check --self`: a tiny stdio JSON-RPC server (no Node, no
//! network) that serves the probe View and the tools it needs to test the host from inside.

use serde_json::{json, Value};

const VIEW: &str = include_str!("../../assets/probe/view.html");
/// The probe View's resource.
pub const PROBE_URI: &str = "ui://host-probe/view.html";
/// The UI tool `check --self` calls.
pub const PROBE_TOOL: &str = "host-probe";

fn tools() -> Value {
    json!([
        {"name": PROBE_TOOL, "description": "mcp-apps-host self-check", "inputSchema": {"type": "object"},
         "_meta": {"ui": {"resourceUri": PROBE_URI, "visibility": ["model", "app"]}}},
        {"name": "probe-app", "description": "app-only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}},
        {"name": "probe-model", "description": "model-only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["model"]}}},
        {"name": "probe-report", "description": "the probe's findings", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}},
    ])
}

fn answer(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    match method {
        "initialize" => Ok(mcp_apps_host::demo::initialize_result("mcp-apps-host-probe", params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "resources/list" => Ok(
            json!({"resources": [{"uri": PROBE_URI, "name": "host probe", "mimeType": "text/html;profile=mcp-app"}]}),
        ),
        "resources/read" if params["uri"] == PROBE_URI => {
            Ok(json!({"contents": [{"uri": PROBE_URI, "mimeType": "text/html;profile=mcp-app", "text": VIEW}]}))
        }
        "resources/read" => Err((-32002, format!("Resource not found: {}", params["uri"]))),
        "tools/call" => match params["name"].as_str() {
            Some(PROBE_TOOL) => Ok(text("probe ready")),
            Some("probe-app") => Ok(text("app ok")),
            Some("probe-model") => {
                eprintln!("PROBE MODEL-ONLY CALLED");
                Ok(text("model only"))
            }
            Some("probe-report") => {
                eprintln!("PROBE {}", params["arguments"]["results"]);
                Ok(text("ok"))
            }
            _ => Err((-32602, format!("unknown tool {}", params["name"]))),
        },
        _ => Err((-32601, format!("method not found: {method}"))),
    }
}

/// Serves MCP on stdin/stdout until stdin closes.
pub fn serve() -> anyhow::Result<i32> {
    mcp_apps_host::demo::serve_stdio(answer)?;
    Ok(0)
}
