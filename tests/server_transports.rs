//! Real npm MCP servers over every transport: stdio, Streamable HTTP and legacy HTTP+SSE.
//! `@modelcontextprotocol/server-basic-vanillajs` 2.0.3 and `@modelcontextprotocol/server-everything`
//! (pinned in tests/fixtures/package.json). Every server runs in a child process that the test kills.

#[allow(dead_code)]
mod server_support;

use std::sync::Arc;
use std::time::Duration;

use mcp_apps_host::bridge::CallControl;
use mcp_apps_host::server::{Connection, ServerSpec};
use serde_json::{json, Value};
use server_support::{first_resource_text, first_text, node_stdio, Server};

const BASIC: &str = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js";
const EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const GET_TIME_VIEW: &str = "ui://get-time/mcp-app.html";

async fn call(conn: &Connection, tool: &str, arguments: Value) -> Value {
    let arguments = arguments.as_object().cloned();
    conn.call_tool(tool.into(), arguments, CallControl::default())
        .await
        .unwrap_or_else(|e| panic!("{} {tool}: {e:?}", conn.name()))
}

fn remote(url: &str) -> ServerSpec {
    ServerSpec::from_url(url, &[]).unwrap()
}

/// basic-vanillajs: `get-time` is listed with its View, answers, and the View reads.
async fn exercise_basic(conn: &Arc<Connection>) {
    let tool = conn.tool("get-time").expect("get-time is listed");
    assert_eq!(tool["_meta"]["ui"]["resourceUri"], GET_TIME_VIEW, "{tool}");
    let result = call(conn, "get-time", json!({})).await;
    assert!(!first_text(&result).is_empty(), "{result}");
    let view = conn.read_resource(GET_TIME_VIEW.into()).await.unwrap();
    assert_eq!(view["contents"][0]["mimeType"], "text/html;profile=mcp-app", "{view}");
    assert!(first_resource_text(&view).contains("<html"), "the View is HTML");
}

/// server-everything: `echo` answers, and the first listed resource reads.
async fn exercise_everything(conn: &Arc<Connection>) {
    assert!(conn.tool("echo").is_some(), "echo is listed: {:?}", conn.tools().len());
    let result = call(conn, "echo", json!({"message": "over the wire"})).await;
    assert_eq!(first_text(&result), "Echo: over the wire");
    let listed = conn.request("resources/list", json!({})).await.unwrap();
    let uri = listed["resources"][0]["uri"].as_str().unwrap_or_else(|| panic!("no resources: {listed}")).to_owned();
    let read = conn.read_resource(uri.clone()).await.unwrap();
    assert_eq!(read["contents"][0]["uri"], uri.as_str(), "{read}");
    assert!(!first_resource_text(&read).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_vanillajs_over_stdio() {
    let conn = Connection::connect(&node_stdio(BASIC, &["--stdio"])).await.unwrap();
    exercise_basic(&conn).await;
    let pid = conn.process_id().unwrap();
    conn.shutdown().await;
    assert!(!server_support::process_exists(pid), "the server process is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_vanillajs_over_streamable_http() {
    let server = Server::npm(BASIC, &[]);
    let conn = Connection::connect(&remote(&server.url("/mcp"))).await.unwrap();
    exercise_basic(&conn).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio() {
    let conn = Connection::connect(&node_stdio(EVERYTHING, &["stdio"])).await.unwrap();
    exercise_everything(&conn).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let server = Server::npm(EVERYTHING, &["streamableHttp"]);
    let conn = Connection::connect(&remote(&server.url("/mcp"))).await.unwrap();
    exercise_everything(&conn).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_legacy_sse() {
    let server = Server::npm(EVERYTHING, &["sse"]);
    let spec = remote(&server.url("/sse"));
    assert!(matches!(spec, ServerSpec::Sse { .. }));
    let conn = Connection::connect(&spec).await.unwrap();
    exercise_everything(&conn).await;
    conn.shutdown().await;
    assert!(!conn.is_alive());
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_with_the_same_tool_name_are_routed_apart() {
    let http = Server::npm(EVERYTHING, &["streamableHttp"]);
    let (everything_spec, fixture_spec) =
        (remote(&http.url("/mcp")), node_stdio("fault-server-stdio.mjs", &["ok", "fixture"]));
    let (everything, fixture) = tokio::join!(Connection::connect(&everything_spec), Connection::connect(&fixture_spec));
    let (everything, fixture) = (everything.unwrap(), fixture.unwrap());
    assert!(everything.tool("echo").is_some() && fixture.tool("echo").is_some(), "both have `echo`");
    let args = json!({"message": "same name", "text": "same name"});
    let (a, b) = tokio::join!(call(&everything, "echo", args.clone()), call(&fixture, "echo", args.clone()));
    assert_eq!(first_text(&a), "Echo: same name");
    assert_eq!(first_text(&b), "fixture: same name");
    // Interleaved calls keep their routes.
    for i in 0..5 {
        let text = format!("call {i}");
        let args = json!({"message": text, "text": text});
        let (a, b) = tokio::join!(call(&fixture, "echo", args.clone()), call(&everything, "echo", args.clone()));
        assert_eq!(first_text(&a), format!("fixture: call {i}"));
        assert_eq!(first_text(&b), format!("Echo: call {i}"));
    }
    tokio::join!(everything.shutdown(), fixture.shutdown());
}

fn header_lines(server: &Server, prefix: &str) -> Vec<Value> {
    server
        .lines_starting(prefix)
        .iter()
        .map(|l| serde_json::from_str(&l[l.find('{').expect("a JSON object")..]).expect("header JSON"))
        .collect()
}

const CONFIGURED: [&str; 5] = [
    "X-Api-Key: secret-value",
    "accept: text/plain",
    "MCP-Session-Id: forged",
    "Content-Type: text/plain",
    "Last-Event-ID: forged",
];

#[tokio::test(flavor = "multi_thread")]
async fn configured_headers_reach_a_streamable_http_server_and_client_headers_win() {
    let server = Server::fixture("fault-server-http.mjs", &["ok"]);
    let headers: Vec<String> = CONFIGURED.iter().map(|h| h.to_string()).collect();
    let conn = Connection::connect(&ServerSpec::from_url(&server.url("/mcp"), &headers).unwrap()).await.unwrap();
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "h"})).await), "ok: h");
    conn.shutdown().await;
    server.wait_for_lines("HEADERS POST", 3, Duration::from_secs(2)).await;
    let seen = header_lines(&server, "HEADERS POST");
    assert!(seen.len() >= 3, "{:?}", server.output());
    for h in &seen {
        assert_eq!(h["x-api-key"], "secret-value", "{h}");
        assert_eq!(h["accept"], "text/event-stream, application/json", "the client's Accept: {h}");
        assert_eq!(h["content-type"], "application/json", "{h}");
        assert_ne!(h["mcp-session-id"], "forged", "{h}");
        assert!(h.get("last-event-id").is_none(), "{h}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_headers_reach_a_legacy_sse_server_and_client_headers_win() {
    let server = Server::fixture("fault-server-sse.mjs", &["absolute"]);
    let headers: Vec<String> = CONFIGURED.iter().map(|h| h.to_string()).collect();
    let conn = Connection::connect(&ServerSpec::from_url(&server.url("/sse"), &headers).unwrap()).await.unwrap();
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "h"})).await), "absolute: h");
    conn.shutdown().await;
    server.wait_for_lines("HEADERS POST /message", 3, Duration::from_secs(2)).await;
    let gets = header_lines(&server, "HEADERS GET /sse");
    assert_eq!(gets.len(), 1, "{:?}", server.output());
    assert_eq!(gets[0]["x-api-key"], "secret-value");
    assert_eq!(gets[0]["accept"], "text/event-stream");
    assert!(gets[0].get("last-event-id").is_none(), "{}", gets[0]);
    let posts = header_lines(&server, "HEADERS POST /message");
    assert!(posts.len() >= 3, "{:?}", server.output());
    for h in &posts {
        assert_eq!(h["x-api-key"], "secret-value", "{h}");
        assert_eq!(h["content-type"], "application/json", "{h}");
        assert!(h.get("mcp-session-id").is_none(), "{h}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_server_can_be_told_apart_and_reconnected() {
    // What a registry does with is_alive(): notice the crash, connect again.
    let spec = node_stdio("fault-server-stdio.mjs", &["crash-mid-call", "phoenix"]);
    let first = Connection::connect(&spec).await.unwrap();
    assert!(first.is_alive());
    let _ = first.call_tool("work".into(), None, CallControl::default()).await.unwrap_err();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while first.is_alive() {
        assert!(std::time::Instant::now() < deadline, "is_alive stays true after the crash");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let second = Connection::connect(&spec).await.unwrap();
    assert_eq!(first_text(&call(&second, "echo", json!({"text": "again"})).await), "phoenix: again");
    tokio::join!(first.shutdown(), second.shutdown());
}

/// The host's built-in servers in their own small binary, over stdio: they answer as MCP
/// servers, are named after what they serve, and the process has neither GTK nor WebKit in it
/// (a server that starts beside the host and its web processes does not pay their linking).
#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_servers_binary_serves_over_stdio_without_gtk_or_webkit() {
    let program = env!("CARGO_BIN_EXE_mcp-apps-host-server");
    for (name, tool) in [("demo", "weather"), ("probe", "host-probe")] {
        let spec = ServerSpec::from_command_line(&format!("{program} {name}")).unwrap();
        assert_eq!(spec.name(), format!("{name}-server"));
        let conn = Connection::connect(&spec).await.unwrap();
        assert!(conn.tool(tool).is_some(), "{name} lists {tool}");
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", conn.process_id().unwrap())).unwrap();
        assert!(maps.contains("libc.so"), "the maps were read");
        for library in ["libgtk-3", "libwebkit2gtk", "libjavascriptcoregtk"] {
            assert!(!maps.contains(library), "{name} maps {library}");
        }
        conn.shutdown().await;
    }
    let usage = std::process::Command::new(program).arg("nothing").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("probe|demo"));
}
