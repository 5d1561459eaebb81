//! Servers that misbehave: every fault ends in a clear error within a bounded time, never a hang.
//! Fixtures: tests/fixtures/fault-server-{stdio,http,sse}.mjs (raw JSON-RPC, no SDK).

#[allow(dead_code)]
mod server_support;

use std::time::{Duration, Instant};

use mcp_apps_host::bridge::CallControl;
use mcp_apps_host::protocol::jsonrpc::code;
use mcp_apps_host::server::connection::ConnectOptions;
use mcp_apps_host::server::{Connection, ServerSpec};
use mcp_apps_host::Error;
use serde_json::{json, Map, Value};
use server_support::{first_text, node_stdio, process_exists, Server};

/// The bound every fault must end within.
const BOUND: Duration = Duration::from_secs(10);
/// How long to wait for a fixture's output to catch up (read by another thread).
const SETTLE: Duration = Duration::from_secs(2);

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

async fn call(conn: &Connection, tool: &str, arguments: Value) -> Result<Value, mcp_apps_host::protocol::RpcError> {
    conn.call_tool(tool.into(), args(arguments), CallControl::default()).await
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    true
}

fn handshake_reason(result: Result<std::sync::Arc<Connection>, Error>) -> String {
    match result {
        Ok(conn) => panic!("connect should fail, but {} connected", conn.name()),
        Err(Error::Handshake { reason, .. }) => reason,
        Err(other) => panic!("expected a handshake error, got {other}"),
    }
}

// ---- stdio ----

#[tokio::test(flavor = "multi_thread")]
async fn stdio_crash_mid_call_fails_the_pending_call_with_the_stderr_tail() {
    let conn = Connection::connect(&node_stdio("fault-server-stdio.mjs", &["crash-mid-call"])).await.unwrap();
    let started = Instant::now();
    let err = call(&conn, "work", json!({})).await.expect_err("the server crashed mid-call");
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert_eq!(err.code, code::UNAVAILABLE, "{err:?}");
    assert!(err.message.contains("crashed or exited"), "names the crash: {}", err.message);
    assert!(err.message.contains("fault-server-stdio: crashing mid-call"), "has the stderr tail: {}", err.message);
    assert!(wait_until(Duration::from_secs(3), || !conn.is_alive()).await, "is_alive turns false after a crash");
    // A later request fails at once, with the same explanation.
    let again = call(&conn, "echo", json!({"text": "hi"})).await.expect_err("the server is gone");
    assert!(again.message.contains("crashing mid-call"), "{}", again.message);
    conn.shutdown().await;
    eprintln!("crash mid-call: error after {took:?}: {}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_hung_call_times_out_and_the_server_hears_cancelled() {
    let options = ConnectOptions::default().call_timeouts(Duration::from_secs(1), Duration::from_secs(5));
    let conn = Connection::connect_with(&node_stdio("fault-server-stdio.mjs", &["hang"]), options).await.unwrap();
    let started = Instant::now();
    let err = call(&conn, "work", json!({})).await.expect_err("the call hangs");
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert_eq!(err.code, code::UNAVAILABLE, "{err:?}");
    assert!(err.message.contains("did not answer within 1 s"), "{}", err.message);
    let heard =
        wait_until(Duration::from_secs(3), || conn.stderr_tail().iter().any(|l| l.starts_with("CANCELLED"))).await;
    assert!(heard, "the server got notifications/cancelled; stderr: {:?}", conn.stderr_tail());
    // The cancel names the hung request.
    let started_line = conn.stderr_tail().into_iter().find(|l| l.starts_with("HANG STARTED")).unwrap();
    let cancelled_line = conn.stderr_tail().into_iter().find(|l| l.starts_with("CANCELLED")).unwrap();
    let id = started_line.trim_start_matches("HANG STARTED ").to_owned();
    assert!(cancelled_line.starts_with(&format!("CANCELLED {id}")), "{cancelled_line} vs {started_line}");
    // The connection itself is fine.
    assert!(conn.is_alive());
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "still here"})).await.unwrap()), "hang: still here");
    conn.shutdown().await;
    eprintln!("hung call: timeout error after {took:?}; server saw: {cancelled_line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_garbage_on_stdout_is_skipped_and_valid_traffic_works() {
    let conn = Connection::connect(&node_stdio("fault-server-stdio.mjs", &["garbage"])).await.unwrap();
    assert!(conn.tool("echo").is_some(), "tools were listed through the garbage");
    let result = call(&conn, "echo", json!({"text": "through the noise"})).await.unwrap();
    assert_eq!(first_text(&result), "garbage: through the noise");
    let read = conn.read_resource("data://hello.txt".into()).await.unwrap();
    assert_eq!(read["contents"][0]["text"], "hello from garbage");
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_server_that_never_answers_initialize_fails_within_the_handshake_timeout() {
    let options = ConnectOptions::default().handshake_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let reason =
        handshake_reason(Connection::connect_with(&node_stdio("fault-server-stdio.mjs", &["no-init"]), options).await);
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    // The host asks `server/discover` first (2026-07-28), then `initialize`: neither was answered.
    assert!(reason.contains("no answer to server/discover or initialize within 1 s"), "{reason}");
    eprintln!("no initialize answer: failed after {took:?}: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_server_that_ignores_stdin_close_and_sigterm_is_killed_by_shutdown() {
    let conn = Connection::connect(&node_stdio("fault-server-stdio.mjs", &["ignore-stdin-close"])).await.unwrap();
    let pid = conn.process_id().expect("stdio servers have a pid");
    assert!(process_exists(pid));
    let started = Instant::now();
    conn.shutdown().await;
    let took = started.elapsed();
    assert!(took < BOUND, "shutdown took {took:?}");
    assert!(wait_until(Duration::from_secs(2), || !process_exists(pid)).await, "process {pid} still runs");
    let tail = conn.stderr_tail();
    assert!(tail.iter().any(|l| l == "STDIN CLOSED"), "stdin was closed first: {tail:?}");
    assert!(tail.iter().any(|l| l == "SIGTERM IGNORED"), "then SIGTERM: {tail:?}");
    assert!(!conn.is_alive());
    eprintln!("stubborn server: gone after {took:?} (stdin close, SIGTERM, SIGKILL)");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_server_that_cannot_start_is_a_spawn_error() {
    let spec = ServerSpec::from_command_line("/nonexistent/mcp-server --stdio").unwrap();
    match Connection::connect(&spec).await {
        Err(Error::Spawn { command, .. }) => assert!(command.contains("/nonexistent/mcp-server")),
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

// ---- Streamable HTTP ----

fn remote_spec(url: &str) -> ServerSpec {
    ServerSpec::from_url(url, &[]).unwrap()
}

fn http_spec(server: &Server, headers: &[&str]) -> ServerSpec {
    let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    ServerSpec::from_url(&server.url("/mcp"), &headers).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn http_500_fails_connect_with_a_clear_error() {
    let server = Server::fixture("fault-server-http.mjs", &["http-500"]);
    let started = Instant::now();
    let reason = handshake_reason(Connection::connect(&http_spec(&server, &[])).await);
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert!(reason.contains("HTTP 500"), "{reason}");
    assert!(reason.contains(&server.url("/mcp")), "names the URL: {reason}");
    eprintln!("HTTP 500: failed after {took:?}: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_nothing_listening_fails_connect_with_a_clear_error() {
    let url = format!("http://127.0.0.1:{}/mcp", server_support::free_port());
    let started = Instant::now();
    let reason = handshake_reason(Connection::connect(&ServerSpec::from_url(&url, &[]).unwrap()).await);
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert!(reason.to_lowercase().contains("connect"), "{reason}");
    assert!(reason.contains(&url), "{reason}");
    eprintln!("HTTP refused: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_wrong_path_fails_with_a_hint_about_the_url() {
    let server = Server::fixture("fault-server-http.mjs", &["ok"]);
    let reason = handshake_reason(Connection::connect(&remote_spec(&server.url("/wrong"))).await);
    assert!(reason.contains("HTTP 404") && reason.contains("check the URL"), "{reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_sse_response_dropped_mid_call_errors_without_hanging() {
    let server = Server::fixture("fault-server-http.mjs", &["drop-sse"]);
    let options = ConnectOptions::default().call_timeouts(Duration::from_secs(30), Duration::from_secs(60));
    let conn = Connection::connect_with(&http_spec(&server, &[]), options).await.unwrap();
    let started = Instant::now();
    let err = call(&conn, "work", json!({})).await.expect_err("the stream was cut before the result");
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}: {}", err.message);
    assert!(server.wait_for_line("DROPPING SSE", Duration::from_secs(1)).await.is_some());
    assert!(err.message.contains("response stream"), "{}", err.message);
    // Only that request's stream broke: the session and the connection work on.
    assert!(conn.is_alive());
    let next = call(&conn, "echo", json!({"text": "after the drop"})).await.unwrap();
    assert_eq!(first_text(&next), "drop-sse: after the drop");
    eprintln!("HTTP SSE response dropped: error after {took:?}: {}", err.message);
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_expired_session_is_reinitialized_by_rmcp() {
    let server = Server::fixture("fault-server-http.mjs", &["expire-session"]);
    let conn = Connection::connect(&http_spec(&server, &[])).await.unwrap();
    assert_eq!(first_text(&call(&conn, "work", json!({})).await.unwrap()), "expire-session worked");
    // The server forgot the session: the next request gets 404, and rmcp starts a new one.
    let started = Instant::now();
    let result = call(&conn, "echo", json!({"text": "after expiry"})).await.unwrap();
    assert!(started.elapsed() < BOUND);
    assert_eq!(first_text(&result), "expire-session: after expiry");
    // (The `server/discover` probe, sent before any session, is refused the same way and logged
    // as `SESSION EXPIRED undefined`: it is not a session the server forgot.)
    let expired = |lines: Vec<String>| lines.into_iter().filter(|l| !l.ends_with("undefined")).count();
    assert_eq!(expired(server.wait_for_lines("SESSION EXPIRED", 2, SETTLE).await), 1, "{:?}", server.output());
    assert_eq!(server.wait_for_lines("INITIALIZE", 2, SETTLE).await.len(), 2, "{:?}", server.output());
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_redirect_to_another_origin_is_not_followed() {
    let server = Server::fixture("fault-server-http.mjs", &["redirect"]);
    let spec = http_spec(&server, &["X-Api-Key: secret-value"]);
    let reason = handshake_reason(Connection::connect(&spec).await);
    assert!(reason.contains("307") || reason.to_lowercase().contains("redirect"), "{reason}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        server.lines_starting("OTHER-ORIGIN").is_empty(),
        "nothing reached the other origin: {:?}",
        server.output()
    );
    eprintln!("cross-origin redirect: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_same_origin_redirect_is_followed_with_the_configured_headers() {
    let server = Server::fixture("fault-server-http.mjs", &["redirect-same-origin"]);
    let conn = Connection::connect(&http_spec(&server, &["X-Api-Key: secret-value"])).await.unwrap();
    assert_eq!(
        first_text(&call(&conn, "echo", json!({"text": "moved"})).await.unwrap()),
        "redirect-same-origin: moved"
    );
    let followed: Vec<String> = server
        .wait_for_lines("HEADERS POST", 4, SETTLE)
        .await
        .into_iter()
        .filter(|l| l.contains("secret-value"))
        .collect();
    assert!(followed.len() >= 2, "the redirected POSTs carried the header: {:?}", server.output());
    conn.shutdown().await;
}

// ---- legacy HTTP+SSE ----

fn sse_spec(server: &Server, headers: &[&str]) -> ServerSpec {
    let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let spec = ServerSpec::from_url(&server.url("/sse"), &headers).unwrap();
    assert!(matches!(spec, ServerSpec::Sse { .. }), "a /sse URL is the legacy transport");
    spec
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_stream_dropped_mid_call_fails_the_call_and_a_new_session_takes_over() {
    let server = Server::fixture("fault-server-sse.mjs", &["drop-mid-call"]);
    let conn = Connection::connect(&sse_spec(&server, &[])).await.unwrap();
    let started = Instant::now();
    let err = call(&conn, "work", json!({})).await.expect_err("the stream dropped before the answer");
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert!(err.message.contains("SSE stream dropped"), "{}", err.message);
    // The transport reconnected (retry: 200 ms), got a new session and re-initialized it.
    let result = call(&conn, "echo", json!({"text": "new session"})).await.unwrap();
    assert_eq!(first_text(&result), "drop-mid-call: new session");
    assert_eq!(server.wait_for_lines("INITIALIZE", 2, SETTLE).await.len(), 2, "{:?}", server.output());
    assert!(conn.is_alive());
    conn.shutdown().await;
    eprintln!("SSE dropped mid-call: error after {took:?}: {}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_stream_resumed_with_last_event_id_delivers_the_answer() {
    let server = Server::fixture("fault-server-sse.mjs", &["resume"]);
    let conn = Connection::connect(&sse_spec(&server, &[])).await.unwrap();
    let started = Instant::now();
    let result = call(&conn, "work", json!({})).await.unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert_eq!(first_text(&result), "resume worked (replayed)");
    let resumed = server.wait_for_lines("RESUMED", 1, SETTLE).await;
    assert_eq!(resumed.len(), 1, "{:?}", server.output());
    // Last-Event-ID named the last event seen before the drop.
    let get = server.wait_for_lines("HEADERS GET /sse", 2, SETTLE).await;
    assert!(get.len() == 2 && get[1].contains("last-event-id"), "{get:?}");
    assert_eq!(server.lines_starting("INITIALIZE").len(), 1, "same session, no re-initialize");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_server_that_dies_mid_call_fails_the_call_and_the_connection() {
    let mut server = Server::fixture("fault-server-sse.mjs", &["drop-and-die"]);
    let conn = Connection::connect(&sse_spec(&server, &[])).await.unwrap();
    let started = Instant::now();
    let err = call(&conn, "work", json!({})).await.expect_err("the server died");
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert!(err.message.contains("could not be reopened"), "{}", err.message);
    assert!(wait_until(Duration::from_secs(3), || !conn.is_alive()).await, "the connection is closed");
    assert!(server.exited());
    let later = call(&conn, "echo", json!({"text": "x"})).await.expect_err("closed");
    assert_eq!(later.code, code::UNAVAILABLE);
    conn.shutdown().await;
    eprintln!("SSE server died mid-call: error after {took:?}: {}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_endpoint_on_another_origin_is_refused() {
    let server = Server::fixture("fault-server-sse.mjs", &["cross-origin"]);
    let reason = handshake_reason(Connection::connect(&sse_spec(&server, &["X-Api-Key: secret-value"])).await);
    assert!(reason.contains("another origin"), "{reason}");
    assert!(reason.contains(&format!("http://127.0.0.1:{}", server.port)), "{reason}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(server.lines_starting("OTHER-ORIGIN").is_empty(), "nothing was sent there: {:?}", server.output());
    eprintln!("SSE cross-origin endpoint: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_stream_without_an_endpoint_event_fails_within_the_handshake_timeout() {
    let server = Server::fixture("fault-server-sse.mjs", &["never-endpoint"]);
    let options = ConnectOptions::default().handshake_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let reason = handshake_reason(Connection::connect_with(&sse_spec(&server, &[]), options).await);
    let took = started.elapsed();
    assert!(took < BOUND, "took {took:?}");
    assert!(reason.contains("endpoint") && reason.contains("1 s"), "{reason}");
    eprintln!("SSE no endpoint: failed after {took:?}: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_get_500_fails_with_a_clear_error() {
    let server = Server::fixture("fault-server-sse.mjs", &["get-500"]);
    let reason = handshake_reason(Connection::connect(&sse_spec(&server, &[])).await);
    assert!(reason.contains("HTTP 500") && reason.contains("no streams today"), "{reason}");
    assert!(reason.contains(&server.url("/sse")), "{reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_nothing_listening_fails_with_a_clear_error() {
    let url = format!("http://127.0.0.1:{}/sse", server_support::free_port());
    let started = Instant::now();
    let reason = handshake_reason(Connection::connect(&ServerSpec::from_url(&url, &[]).unwrap()).await);
    assert!(started.elapsed() < BOUND);
    assert!(reason.contains(&format!("GET {url} failed")), "{reason}");
    eprintln!("SSE refused: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_garbage_events_are_skipped() {
    let server = Server::fixture("fault-server-sse.mjs", &["garbage"]);
    let conn = Connection::connect(&sse_spec(&server, &[])).await.unwrap();
    let result = call(&conn, "echo", json!({"text": "through the noise"})).await.unwrap();
    assert_eq!(first_text(&result), "garbage: through the noise");
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_oversized_event_closes_the_transport_with_a_clear_error() {
    use mcp_apps_host::server::sse::{SseOptions, SseTransport};
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt;

    let server = Server::fixture("fault-server-sse.mjs", &["huge"]);
    let url = url::Url::parse(&server.url("/sse")).unwrap();
    let transport = SseTransport::connect(url, SseOptions::default().max_event_size(16 * 1024)).await.unwrap();
    assert!(transport.endpoint().unwrap().path() == "/message", "{:?}", transport.endpoint());
    let client = ().serve(transport).await.unwrap();
    let started = Instant::now();
    let mut params = CallToolRequestParams::new("echo");
    params = params.with_arguments(json!({"text": "big"}).as_object().cloned().unwrap());
    let err = client.call_tool(params).await.expect_err("the answer is over the limit");
    assert!(started.elapsed() < BOUND);
    assert!(err.to_string().contains("larger than 16384 bytes"), "{err}");
    assert!(wait_until(Duration::from_secs(2), || client.is_transport_closed()).await);
}

/// A first `npx -y …` downloads its package before the server reads a byte: the host's
/// `server/discover` probe is given up after rmcp's 10 s and `initialize` follows on the same
/// pipe, so the late server then answers both, the probe first. That late answer broke the
/// handshake ("uncorrelated error response: expected id 1, error response carried 0"); it is
/// dropped now. The published vanilla JS example server, started 12 s late as a download would.
#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_that_starts_after_the_probe_gave_up_connects() {
    let bin = server_support::fixtures().join("node_modules/.bin/mcp-server-basic-vanillajs");
    let script = format!("sleep 12; exec {} --stdio", shell_words::quote(&bin.to_string_lossy()));
    let spec = ServerSpec::from_command_line(&shell_words::join(["bash", "-c", &script])).unwrap();
    let started = Instant::now();
    let conn = Connection::connect(&spec).await.unwrap_or_else(|e| panic!("a slow start failed: {e}"));
    assert!(started.elapsed() >= Duration::from_secs(12), "the server did start late");
    assert!(!conn.listed_tools().is_empty(), "the tools were listed after the late start");
    eprintln!("slow start: connected after {:?} by {:?}", started.elapsed(), conn.negotiation().map(|n| n.method()));
    conn.shutdown().await;
}
