//! The built-in MCP server behind `check --self`: a tiny stdio JSON-RPC server (no Node, no
//! network beyond loopback) that serves the probe View and the tools it needs to test the host
//! from inside.
//!
//! It also listens on a few loopback TCP ports and one UDP port (the canary): the probe View
//! gets them in the `host-probe` result (`structuredContent.canaryPorts`, `canaryUdpPort`),
//! aims preconnects, DNS prefetches and WebRTC ICE at them, and asks `probe-canary` how many
//! connections and datagrams arrived. Any at all means the View connected around its CSP.

use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use serde_json::{json, Value};

const VIEW: &str = include_str!("../../assets/probe/view.html");
/// The probe View's resource.
pub const PROBE_URI: &str = "ui://host-probe/view.html";
/// The UI tool `check --self` calls.
pub const PROBE_TOOL: &str = "host-probe";

/// How many TCP listeners the canary opens (one port per preconnect target).
const CANARY_TCP_LISTENERS: usize = 3;

/// Connections the canary accepted since the server started.
static CANARY_TCP_HITS: AtomicUsize = AtomicUsize::new(0);
/// Datagrams the canary received since the server started.
static CANARY_UDP_HITS: AtomicUsize = AtomicUsize::new(0);
/// The canary's ports: `(tcp, udp)`; empty when a socket could not be opened.
static CANARY_PORTS: OnceLock<(Vec<u16>, Option<u16>)> = OnceLock::new();

/// Opens the canary sockets and counts what reaches them, each on its own thread (they end
/// with the process).
fn start_canary() -> (Vec<u16>, Option<u16>) {
    let mut tcp = Vec::new();
    for _ in 0..CANARY_TCP_LISTENERS {
        let Ok(listener) = TcpListener::bind(("127.0.0.1", 0)) else { continue };
        let Ok(port) = listener.local_addr().map(|a| a.port()) else { continue };
        tcp.push(port);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                CANARY_TCP_HITS.fetch_add(1, Ordering::SeqCst);
                eprintln!("PROBE CANARY TCP {port}");
                drop(stream);
            }
        });
    }
    let udp = UdpSocket::bind(("127.0.0.1", 0)).ok().and_then(|socket| {
        let port = socket.local_addr().ok()?.port();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while socket.recv_from(&mut buf).is_ok() {
                CANARY_UDP_HITS.fetch_add(1, Ordering::SeqCst);
                eprintln!("PROBE CANARY UDP {port}");
            }
        });
        Some(port)
    });
    (tcp, udp)
}

fn tools() -> Value {
    json!([
        {"name": PROBE_TOOL, "description": "mcp-apps-host self-check", "inputSchema": {"type": "object"},
         "_meta": {"ui": {"resourceUri": PROBE_URI, "visibility": ["model", "app"]}}},
        {"name": "probe-app", "description": "app-only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}},
        {"name": "probe-model", "description": "model-only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["model"]}}},
        {"name": "probe-report", "description": "the probe's findings", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}},
        {"name": "probe-canary", "description": "what reached the canary ports", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}},
    ])
}

fn answer(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    match method {
        "initialize" => Ok(crate::demo::initialize_result("mcp-apps-host-probe", params)),
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
            Some(PROBE_TOOL) => {
                let (tcp, udp) = CANARY_PORTS.get().cloned().unwrap_or_default();
                let mut result = text("probe ready");
                result["structuredContent"] = json!({"canaryPorts": tcp, "canaryUdpPort": udp});
                Ok(result)
            }
            Some("probe-canary") => {
                let (tcp, udp) = (CANARY_TCP_HITS.load(Ordering::SeqCst), CANARY_UDP_HITS.load(Ordering::SeqCst));
                let mut result = text(&format!("{tcp} TCP connections, {udp} UDP datagrams"));
                result["structuredContent"] = json!({"tcpConnections": tcp, "udpDatagrams": udp});
                Ok(result)
            }
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
    CANARY_PORTS.get_or_init(start_canary);
    crate::demo::serve_stdio(answer)?;
    Ok(0)
}
