//! Servers of both protocol eras. `modern-server.mjs` (the official TS SDK v2) speaks 2026-07-28
//! (`server/discover`, the client's capabilities in every request's `_meta`, `input_required`
//! results, `subscriptions/listen`) and 2025-11-25 (`initialize`), over stdio and Streamable
//! HTTP; it logs every request it received with the capabilities it carried, and the tests read
//! that log back. Raw fixtures cover servers that answer `server/discover` oddly or not at all.

#[allow(dead_code)]
mod server_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_apps_host::bridge::{BoxFuture, CallControl};
use mcp_apps_host::protocol::RpcError;
use mcp_apps_host::server::connection::{ConnectOptions, Negotiation, ServerChange};
use mcp_apps_host::server::requests::{ElicitAnswer, Elicitation, ServerRequests};
use mcp_apps_host::server::{Connection, ServerSpec};
use serde_json::{json, Value};
use server_support::{first_resource_text, first_text, node_stdio, Server};

const UI: &str = "io.modelcontextprotocol/ui";
const VIEW: &str = "ui://modern/view.html";

/// Answers every question with `answer: blue` and remembers what was asked.
#[derive(Default)]
struct Answers {
    asked: Mutex<Vec<String>>,
    decline: bool,
}

impl ServerRequests for Answers {
    fn elicit(&self, request: Elicitation) -> BoxFuture<ElicitAnswer> {
        self.asked.lock().unwrap().push(request.message);
        let answer = match self.decline {
            true => ElicitAnswer::Decline,
            false => ElicitAnswer::Accept(json!({"answer": "blue"}).as_object().unwrap().clone()),
        };
        Box::pin(std::future::ready(answer))
    }

    fn can_sample(&self) -> bool {
        false
    }

    fn sample(&self, _server: &str, _params: Value) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(std::future::ready(Err(RpcError::method_not_found("sampling"))))
    }
}

async fn connect(spec: &ServerSpec, answers: Arc<Answers>) -> Arc<Connection> {
    let options = ConnectOptions::default().requests(answers);
    Connection::connect_with(spec, options).await.unwrap_or_else(|e| panic!("connect: {e}"))
}

async fn call(conn: &Connection, tool: &str, arguments: Value) -> Value {
    conn.call_tool(tool.into(), arguments.as_object().cloned(), CallControl::default())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// What the server logged of every request it received, in order.
async fn received(conn: &Connection) -> Vec<Value> {
    let log = call(conn, "modern-received", json!({})).await;
    log["structuredContent"]["requests"].as_array().cloned().unwrap_or_else(|| panic!("no log: {log}"))
}

fn methods(log: &[Value]) -> Vec<&str> {
    log.iter().filter_map(|r| r["method"].as_str()).collect()
}

/// The UI extension the host advertises, as a server must see it.
fn host_ui() -> Value {
    json!({"mimeTypes": ["text/html;profile=mcp-app"]})
}

/// Everything a 2026-07-28 session must show, on either transport.
async fn exercise_modern(conn: &Connection, answers: &Answers) {
    assert_eq!(conn.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(conn.negotiation(), Some(Negotiation::Discover));
    assert_eq!(conn.revision_label().as_deref(), Some("2026-07-28, by server/discover"));
    assert!(conn.tool("modern-show").is_some(), "tools are listed: {:?}", conn.tools());

    // The View's own `_meta` cannot stand in for the host's capabilities: rmcp stamps them.
    let mut control = CallControl::default();
    let forged =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {UI: {"mimeTypes": ["text/evil"]}}}});
    control.meta = forged.as_object().cloned();
    let shown = conn.call_tool("modern-show".into(), None, control).await.unwrap();
    assert_eq!(shown["structuredContent"], json!({"shown": true}), "{shown}");
    let view = conn.read_resource(VIEW.into()).await.unwrap();
    assert_eq!(view["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    let hello = conn.read_resource("data://modern/hello.txt".into()).await.unwrap();
    assert_eq!(first_resource_text(&hello), "hello");

    // A question inside a result (`input_required`) is asked, answered and sent back.
    let asked = call(conn, "modern-ask", json!({})).await;
    assert_eq!(first_text(&asked), "answer: blue", "{asked}");
    assert_eq!(answers.asked.lock().unwrap().len(), 1, "one question reached the person");

    let log = received(conn).await;
    let seen = methods(&log);
    for method in ["server/discover", "tools/list", "resources/read", "tools/call", "subscriptions/listen"] {
        assert!(seen.contains(&method), "{method} in {seen:?}");
    }
    assert!(!seen.contains(&"initialize"), "no initialize on 2026-07-28: {seen:?}");
    for request in &log {
        assert_eq!(request["era"], "2026", "{request}");
        assert_eq!(request["protocolVersion"], "2026-07-28", "{request}");
        assert_eq!(request["ui"], host_ui(), "every request carries the UI extension: {request}");
    }
    let calls = log.iter().filter(|r| r["method"] == "tools/call").count();
    assert!(calls >= 4, "show, two rounds of ask, received: {calls}");

    // List changes come on the listen stream the host opened.
    let mut changes = conn.changes();
    call(conn, "modern-touch", json!({})).await;
    let change = tokio::time::timeout(Duration::from_secs(10), changes.recv()).await;
    assert!(matches!(change, Ok(Ok(ServerChange::Tools))), "{change:?}");
    conn.refresh().await.unwrap();
    assert!(conn.tool("modern-extra").is_some(), "the new tool is listed after the change");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_server_over_stdio_is_discovered_and_sees_the_ui_extension_on_every_request() {
    let answers = Arc::new(Answers::default());
    let conn = connect(&node_stdio("modern-server.mjs", &[]), answers.clone()).await;
    exercise_modern(&conn, &answers).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_server_over_streamable_http_is_discovered_and_sees_the_ui_extension_on_every_request() {
    let server = Server::fixture("modern-server.mjs", &["--http", "0"]);
    let answers = Arc::new(Answers::default());
    let conn = connect(&ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap(), answers.clone()).await;
    exercise_modern(&conn, &answers).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_question_inside_a_result_is_sent_back_declined() {
    let answers = Arc::new(Answers { decline: true, ..Default::default() });
    let conn = connect(&node_stdio("modern-server.mjs", &[]), answers.clone()).await;
    let asked = call(&conn, "modern-ask", json!({})).await;
    assert_eq!(first_text(&asked), "declined", "{asked}");
    conn.shutdown().await;
}

/// The fixture over Streamable HTTP with `flags` (the server stops when dropped).
async fn over_http(flags: &[&str]) -> (Server, Arc<Connection>) {
    let server = Server::fixture("modern-server.mjs", &[&["--http", "0"], flags].concat());
    let conn = connect(&ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap(), Default::default()).await;
    (server, conn)
}

/// A call's progress reaches its caller, on either revision and transport.
async fn progress_arrives(conn: &Connection) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut control = CallControl::default();
    control.progress = Some(tx);
    let done = conn.call_tool("modern-progress".into(), None, control).await.unwrap();
    assert_eq!(first_text(&done), "progress done");
    let mut seen = Vec::new();
    // (Each arrived before the result; the wait only covers a loaded machine's scheduling.)
    while let Ok(Some(update)) = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
        seen.push(update["progress"].as_f64().unwrap_or_default());
        if seen.len() == 3 {
            break;
        }
    }
    assert_eq!(seen, [1.0, 2.0, 3.0], "{:?}", conn.revision_label());
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_the_caller_in_both_eras_on_both_transports() {
    for flags in [&[][..], &["--legacy-only"]] {
        let conn = connect(&node_stdio("modern-server.mjs", flags), Default::default()).await;
        progress_arrives(&conn).await;
        conn.shutdown().await;
    }
    for flags in [&[][..], &["--legacy-only"]] {
        let (_server, conn) = over_http(flags).await;
        progress_arrives(&conn).await;
        conn.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_only_ever_come_from_the_host_never_from_the_caller() {
    let conn = connect(&node_stdio("modern-server.mjs", &[]), Arc::new(Answers::default())).await;
    // A View's forwarded read that tries to answer a question for the person, and to replay a
    // server's state: both are dropped before the request leaves.
    let forged = json!({"uri": "data://modern/hello.txt", "inputResponses": {"ask": {"action": "accept",
        "content": {"answer": "forged"}}}, "requestState": "modern-ask/1"});
    conn.request("resources/read", forged).await.unwrap();
    // And the real question's answer is the host's.
    assert_eq!(first_text(&call(&conn, "modern-ask", json!({})).await), "answer: blue");
    let log = received(&conn).await;
    let read = log.iter().find(|r| r["method"] == "resources/read").unwrap_or_else(|| panic!("{log:?}"));
    assert!(read.get("inputResponses").is_none() && read.get("requestState").is_none(), "{read}");
    let retry = log.iter().find(|r| r.get("requestState").is_some()).unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(retry["inputResponses"], json!(["ask"]), "{retry}");
    conn.shutdown().await;
}

/// A 2025-only server: the host falls back to `initialize` on the same connection, at once.
async fn exercise_legacy(conn: &Connection, answers: &Answers) {
    assert_eq!(conn.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(conn.negotiation(), Some(Negotiation::Initialize));
    assert_eq!(conn.revision_label().as_deref(), Some("2025-11-25"));
    let asked = call(conn, "modern-ask", json!({})).await;
    assert_eq!(first_text(&asked), "answer: blue", "elicitation/create on 2025: {asked}");
    assert_eq!(answers.asked.lock().unwrap().len(), 1);
    let log = received(conn).await;
    let initialize = log.iter().find(|r| r["method"] == "initialize").unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(initialize["ui"], host_ui(), "the UI extension rides in initialize: {initialize}");
    // The probe came first; everything after the fallback is 2025.
    assert_eq!(methods(&log)[..2], ["server/discover", "initialize"], "{log:?}");
    assert!(log[1..].iter().all(|r| r["era"] == "2025"), "{log:?}");
    let mut changes = conn.changes();
    call(conn, "modern-touch", json!({})).await;
    let change = tokio::time::timeout(Duration::from_secs(10), changes.recv()).await;
    assert!(matches!(change, Ok(Ok(ServerChange::Tools))), "unsolicited list change on 2025: {change:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2025_server_over_stdio_is_met_with_initialize_after_its_discover_error() {
    let answers = Arc::new(Answers::default());
    let started = Instant::now();
    let conn = connect(&node_stdio("modern-server.mjs", &["--legacy-only"]), answers.clone()).await;
    // Far below rmcp's 10 s silence fallback: the error answer was taken at once.
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    exercise_legacy(&conn, &answers).await;
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2025_server_over_streamable_http_is_met_with_initialize_after_its_discover_error() {
    let server = Server::fixture("modern-server.mjs", &["--http", "0", "--legacy-only"]);
    let answers = Arc::new(Answers::default());
    let started = Instant::now();
    let conn = connect(&ServerSpec::from_url(&server.url("/mcp"), &[]).unwrap(), answers.clone()).await;
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    exercise_legacy(&conn, &answers).await;
    conn.shutdown().await;
}

/// `subscribe` asks for updates of a resource the way the revision has it (a listen stream that
/// names it on 2026-07-28, `resources/subscribe` on 2025), and the update arrives.
async fn resource_updates_arrive(conn: &Connection) {
    const HELLO: &str = "data://modern/hello.txt";
    let mut changes = conn.changes();
    conn.subscribe(HELLO).await.unwrap_or_else(|e| panic!("subscribe: {e:?}"));
    call(conn, "modern-update", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, changes.recv()).await {
            Ok(Ok(ServerChange::ResourceUpdated(uri))) => {
                assert_eq!(uri, HELLO);
                break;
            }
            Ok(Ok(_)) => continue,
            other => panic!("no update of {HELLO}: {other:?}"),
        }
    }
    let read = conn.read_resource(HELLO.into()).await.unwrap();
    assert!(first_resource_text(&read).starts_with("hello again"), "{read}");
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_updates_arrive_in_both_eras_on_both_transports() {
    let conn = connect(&node_stdio("modern-server.mjs", &[]), Default::default()).await;
    assert_eq!(conn.negotiation(), Some(Negotiation::Discover));
    resource_updates_arrive(&conn).await;
    // The listen stream still carries list changes after it was opened again for the resource.
    let mut changes = conn.changes();
    call(&conn, "modern-touch", json!({})).await;
    let change = tokio::time::timeout(Duration::from_secs(10), changes.recv()).await;
    assert!(matches!(change, Ok(Ok(ServerChange::Tools))), "{change:?}");
    let log = received(&conn).await;
    assert_eq!(log.iter().filter(|r| r["method"] == "subscriptions/listen").count(), 2, "{log:?}");
    conn.shutdown().await;

    let conn = connect(&node_stdio("modern-server.mjs", &["--legacy-only"]), Default::default()).await;
    assert_eq!(conn.negotiation(), Some(Negotiation::Initialize));
    resource_updates_arrive(&conn).await;
    conn.shutdown().await;

    for flags in [&[][..], &["--legacy-only"]] {
        let (_server, conn) = over_http(flags).await;
        resource_updates_arrive(&conn).await;
        conn.shutdown().await;
    }
}

/// The pids of the server processes that got `method`, from their `METHOD <name> <pid>` lines,
/// once there are `count` (the stderr reader may lag behind the answer that came on stdout).
async fn pids_that_got(conn: &Connection, method: &str, count: usize) -> Vec<String> {
    let prefix = format!("METHOD {method} ");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids: Vec<String> =
            conn.stderr_tail().iter().filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned)).collect();
        if pids.len() >= count || Instant::now() > deadline {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_answers_discover_with_an_empty_result_gets_a_fresh_initialize_connection() {
    let conn = connect(&node_stdio("fault-server-stdio.mjs", &["discover-empty"]), Default::default()).await;
    assert_eq!(conn.negotiation(), Some(Negotiation::Initialize));
    let (probed, initialized) =
        (pids_that_got(&conn, "server/discover", 1).await, pids_that_got(&conn, "initialize", 1).await);
    let pid = conn.process_id().unwrap().to_string();
    assert_eq!(initialized, vec![pid.clone()], "initialize went to the running process: {:?}", conn.stderr_tail());
    assert!(probed.len() == 1 && probed[0] != pid, "discover went to the first process only: {probed:?}");
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "hi"})).await), "discover-empty: hi");
    conn.shutdown().await;
}

/// A discovery that offers only revisions the host does not speak is no reason to give up on a
/// server: `initialize` is tried on a fresh connection, as after an error answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_discovers_only_unsupported_revisions_gets_a_fresh_initialize_connection() {
    let conn = connect(&node_stdio("fault-server-stdio.mjs", &["discover-unsupported"]), Default::default()).await;
    assert_eq!(conn.negotiation(), Some(Negotiation::Initialize));
    let (probed, initialized) =
        (pids_that_got(&conn, "server/discover", 1).await, pids_that_got(&conn, "initialize", 1).await);
    let pid = conn.process_id().unwrap().to_string();
    assert_eq!(initialized, vec![pid.clone()], "initialize went to the running process: {:?}", conn.stderr_tail());
    assert!(probed.len() == 1 && probed[0] != pid, "discover went to the first process only: {probed:?}");
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "hi"})).await), "discover-unsupported: hi");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_discover_is_met_with_initialize_after_ten_seconds() {
    let started = Instant::now();
    let conn = connect(&node_stdio("fault-server-stdio.mjs", &["discover-silent"]), Default::default()).await;
    let took = started.elapsed();
    assert_eq!(conn.negotiation(), Some(Negotiation::Initialize));
    assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(25), "rmcp waits 10 s: {took:?}");
    let initialized = pids_that_got(&conn, "initialize", 1).await;
    assert_eq!(initialized, vec![conn.process_id().unwrap().to_string()], "same process");
    assert_eq!(first_text(&call(&conn, "echo", json!({"text": "hi"})).await), "discover-silent: hi");
    conn.shutdown().await;
}
