//! Many servers in one set, and the requests servers send to the host, against real
//! servers: `@modelcontextprotocol/server-everything` (elicitation, sampling, roots),
//! `server-basic-vanillajs`, and the fault fixture for crashes.

#[allow(dead_code)]
mod server_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_apps_host::bridge::{BoxFuture, CallControl};
use mcp_apps_host::protocol::RpcError;
use mcp_apps_host::server::connection::{ConnectOptions, Connection};
use mcp_apps_host::server::requests::{ElicitAnswer, Elicitation, ElicitationKind, Root, ServerRequests};
use mcp_apps_host::server::set::{ServerEventKind, ServerSet, ServerStatus};
use mcp_apps_host::server::ServerSpec;
use serde_json::{json, Value};
use server_support::{first_text, node_stdio, Server};

const BASIC: &str = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js";
const EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
/// The bound every fault must end within.
const BOUND: Duration = Duration::from_secs(10);

fn all_text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// server-everything registers elicitation, sampling and roots tools after `initialized`, then
/// announces them: wait for the tool to show up.
async fn wait_for_tool(conn: &Connection, tool: &str) -> bool {
    let start = Instant::now();
    while start.elapsed() < BOUND {
        let _ = conn.refresh().await;
        if conn.tool(tool).is_some() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn call(conn: &Connection, tool: &str, arguments: Value) -> Result<Value, RpcError> {
    conn.call_tool(tool.into(), arguments.as_object().cloned(), CallControl::default()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_real_servers_in_one_registry_keep_a_same_named_tool_apart() {
    let http = Server::npm(BASIC, &[]);
    let stdio = node_stdio(BASIC, &["--stdio"]);
    let remote = ServerSpec::from_url(&http.url("/mcp"), &[]).unwrap();
    let set = ServerSet::new(vec![stdio, remote], ConnectOptions::default());
    let names = set.names();
    let started = Instant::now();
    set.start().await;
    eprintln!("two servers ready in {:?}", started.elapsed());
    assert!(set.servers().iter().all(|s| s.status == ServerStatus::Ready), "{:?}", set.servers());
    // The index has `get-time` twice, once per server; the bare name is ambiguous.
    let index = set.tools();
    let owners: Vec<&str> = index.iter().filter(|t| t.name() == "get-time").map(|t| t.server.as_str()).collect();
    assert_eq!(owners, [names[0].as_str(), names[1].as_str()], "{index:?}");
    let err = set.find_tool(None, "get-time").unwrap_err().to_string();
    assert!(err.contains("several servers"), "{err}");
    // Each server's port reaches that server: the stdio one is a process, the remote one is not.
    for name in &names {
        let entry = set.find_tool(Some(name), "get-time").unwrap();
        assert_eq!(&entry.server, name);
        let result = set.port(name).call_tool("get-time".into(), None, CallControl::default()).await.unwrap();
        assert!(!first_text(&result).is_empty(), "{result}");
    }
    assert!(set.current(&names[0]).unwrap().process_id().is_some());
    assert!(set.current(&names[1]).unwrap().process_id().is_none());
    let pid = set.current(&names[0]).unwrap().process_id().unwrap();
    set.shutdown().await;
    assert!(!server_support::process_exists(pid), "shutdown stops the stdio server");
    assert!(set.servers().iter().all(|s| s.status == ServerStatus::Stopped));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_server_fails_alone_and_is_restarted_on_demand_after_its_backoff() {
    let crashing = node_stdio("fault-server-stdio.mjs", &["crash-mid-call"]);
    let set = ServerSet::new(vec![crashing, ServerSpec::builtin("demo")], ConnectOptions::default());
    let mut events = set.events();
    set.start().await;
    let name = set.names()[0].clone();
    assert_eq!(set.status(&name), Some(ServerStatus::Ready));
    let port = set.port(&name);

    // The crash: the pending call gets an error with the server's last words, at once.
    let started = Instant::now();
    let err = port.call_tool("work".into(), None, CallControl::default()).await.unwrap_err();
    assert!(err.message.contains("crashing mid-call"), "{}", err.message);
    // The server set notices and marks it failed, with a reason; the other server is untouched.
    while !matches!(set.status(&name), Some(ServerStatus::Failed { .. })) {
        assert!(started.elapsed() < BOUND, "never marked failed: {:?}", set.servers());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let detected = started.elapsed();
    let Some(ServerStatus::Failed { reason, retry_at }) = set.status(&name) else { unreachable!() };
    assert!(reason.contains("process ended"), "{reason}");
    // Its tools stay known while it is down: calling one is what restarts it.
    assert!(set.find_tool(Some(&name), "echo").is_ok(), "{:?}", set.tools());
    assert!(port.tool("echo").is_some());
    assert_eq!(set.status("demo"), Some(ServerStatus::Ready));
    let greet = json!({"name": "Ada"}).as_object().cloned();
    let demo = set.port("demo").call_tool("greet".into(), greet, CallControl::default()).await;
    assert!(demo.is_ok(), "the other server keeps working: {demo:?}");

    // Needed again within the backoff: a clear error, no new process.
    let early = port.call_tool("echo".into(), None, CallControl::default()).await.unwrap_err();
    assert!(early.message.contains("next restart in"), "{}", early.message);
    // After the backoff, the next call restarts it and goes through.
    tokio::time::sleep_until(tokio::time::Instant::from_std(retry_at)).await;
    let args = json!({"text": "back"}).as_object().cloned();
    let restarted = port.call_tool("echo".into(), args, CallControl::default()).await.unwrap();
    assert!(first_text(&restarted).contains("back"), "{restarted}");
    assert_eq!(set.status(&name), Some(ServerStatus::Ready));

    let mut statuses = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let (true, ServerEventKind::Status(s)) = (e.server == name, e.kind) {
            statuses.push(s.label());
        }
    }
    assert_eq!(statuses, ["ready", "failed", "reconnecting", "ready"], "the server's story");
    eprintln!("crash detected after {detected:?}; restarted on demand after the backoff");
    set.shutdown().await;
}

/// Answers elicitations with fixed values (or never, or declines) and samples with a canned reply.
struct Scripted {
    answer: Option<ElicitAnswer>,
    sample: bool,
    asked: std::sync::Mutex<Vec<Elicitation>>,
}

impl ServerRequests for Scripted {
    fn elicit(&self, request: Elicitation) -> BoxFuture<ElicitAnswer> {
        self.asked.lock().unwrap().push(request);
        match self.answer.clone() {
            Some(answer) => Box::pin(std::future::ready(answer)),
            None => Box::pin(std::future::pending()),
        }
    }

    fn can_sample(&self) -> bool {
        self.sample
    }

    fn sample(&self, _server: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let asked = params["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
        Box::pin(std::future::ready(Ok(json!({
            "role": "assistant", "model": "scripted-1",
            "content": {"type": "text", "text": format!("scripted answer to: {asked}")},
            "stopReason": "endTurn"
        }))))
    }
}

fn scripted(answer: Option<ElicitAnswer>, sample: bool) -> Arc<Scripted> {
    Arc::new(Scripted { answer, sample, asked: Default::default() })
}

async fn everything(options: ConnectOptions) -> Arc<Connection> {
    Connection::connect_with(&node_stdio(EVERYTHING, &["stdio"]), options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn elicitation_is_answered_checked_against_the_schema_and_declined_when_nobody_can_answer() {
    // Accepted with values: the server receives them.
    let values = json!({"name": "Ada Lovelace", "check": true, "integer": 7, "untitledMultipleSelectEnum": ["Piano"]});
    let asker = scripted(Some(ElicitAnswer::Accept(values.as_object().unwrap().clone())), false);
    let conn = everything(ConnectOptions::default().requests(asker.clone())).await;
    assert!(wait_for_tool(&conn, "trigger-elicitation-request").await, "elicitation is offered, so the tool exists");
    let result = call(&conn, "trigger-elicitation-request", json!({})).await.unwrap();
    let text = all_text(&result);
    assert!(text.contains("Name: Ada Lovelace") && text.contains("Favorite Integer: 7"), "{text}");
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        matches!(&asked[0].kind, ElicitationKind::Form { schema } if schema["properties"]["email"]["format"] == "email")
    );
    conn.shutdown().await;

    // An answer that breaks the requested schema never reaches the server as data.
    let bad = scripted(Some(ElicitAnswer::Accept(json!({"integer": 7}).as_object().unwrap().clone())), false);
    let conn = everything(ConnectOptions::default().requests(bad)).await;
    assert!(wait_for_tool(&conn, "trigger-elicitation-request").await);
    let refused = call(&conn, "trigger-elicitation-request", json!({})).await;
    let shown = format!("{refused:?}");
    assert!(shown.contains("did not match the requested schema") && shown.contains("name"), "{shown}");
    conn.shutdown().await;

    // Nobody to ask (the default): declined, with an answer the server understands.
    let conn = everything(ConnectOptions::default()).await;
    assert!(wait_for_tool(&conn, "trigger-elicitation-request").await);
    let declined = call(&conn, "trigger-elicitation-request", json!({})).await.unwrap();
    assert!(all_text(&declined).contains("declined"), "{declined}");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_nobody_answers_is_cancelled_within_its_limit() {
    let silent = scripted(None, false);
    let options = ConnectOptions::default().requests(silent).elicitation_timeout(Duration::from_millis(800));
    let conn = everything(options).await;
    assert!(wait_for_tool(&conn, "trigger-elicitation-request").await);
    let started = Instant::now();
    let result = call(&conn, "trigger-elicitation-request", json!({})).await.unwrap();
    let took = started.elapsed();
    assert!(all_text(&result).to_lowercase().contains("cancel"), "{result}");
    assert!(took >= Duration::from_millis(700) && took < BOUND, "took {took:?}");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_is_offered_only_with_a_sampler_and_roots_are_what_was_configured() {
    // Without a sampler the capability is not advertised, so the server offers no sampling tool.
    let dir = tempfile::tempdir().unwrap();
    let root = Root::directory(dir.path()).unwrap();
    let conn = everything(ConnectOptions::default().roots(vec![root.clone()])).await;
    assert!(wait_for_tool(&conn, "get-roots-list").await);
    assert!(conn.tool("trigger-sampling-request").is_none(), "no sampler, no sampling tool");
    let roots = all_text(&call(&conn, "get-roots-list", json!({})).await.unwrap());
    assert!(roots.contains("(1 total)") && roots.contains(&root.uri), "{roots}");
    conn.shutdown().await;

    // With one, the server's request reaches it and its answer reaches the server.
    let conn = everything(ConnectOptions::default().requests(scripted(None, true))).await;
    assert!(wait_for_tool(&conn, "trigger-sampling-request").await, "a sampler makes sampling available");
    let sampled = call(&conn, "trigger-sampling-request", json!({"prompt": "two plus two"})).await.unwrap();
    let text = all_text(&sampled);
    assert!(text.contains("scripted answer to:") && text.contains("two plus two"), "{text}");
    // And no roots configured: an empty list.
    assert!(wait_for_tool(&conn, "get-roots-list").await);
    let none = all_text(&call(&conn, "get-roots-list", json!({})).await.unwrap());
    assert!(none.contains("no roots are currently configured"), "{none}");
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_spoke_2025_is_restarted_without_the_discover_probe() {
    // It drops `server/discover` unanswered: its first start waits out rmcp's 10 s probe.
    let silent = node_stdio("fault-server-stdio.mjs", &["discover-silent"]);
    let set = ServerSet::new(vec![silent], ConnectOptions::default());
    let name = set.names()[0].clone();
    let started = Instant::now();
    let first = set.connection(&name).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(9), "the probe was waited out: {:?}", started.elapsed());
    assert_eq!(first.negotiation(), Some(mcp_apps_host::server::connection::Negotiation::Initialize));
    // Its restart remembers the revision: `initialize` at once.
    let started = Instant::now();
    let again = set.restart(&name).await.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "no second probe: {took:?}");
    assert!(!again.stderr_tail().iter().any(|l| l.starts_with("DISCOVER")), "{:?}", again.stderr_tail());
    set.shutdown().await;
}

/// A server may not rename itself (SECURITY.md, "A server's identity"): one that calls itself
/// `host`, one that calls itself `notes` (the config's name of another server) and the config's
/// `notes` (which calls itself `Vault`) are labelled by the names the host and the config gave
/// them, in the server set's snapshot and in every tool entry (the model's descriptions and the
/// approval questions take the label); what each calls itself stands beside.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_calling_itself_host_or_another_servers_name_keeps_the_name_it_was_given() {
    let server = |name: &str| node_stdio("trust-server.mjs", &["--name", name, "--role", "lookup"]);
    let specs = vec![server("host"), server("notes"), server("Vault").named("notes")];
    let set = ServerSet::new(specs, ConnectOptions::default());
    set.start().await;
    let shown: Vec<(String, String, Option<String>)> =
        set.servers().into_iter().map(|s| (s.name, s.label, s.calls_itself)).collect();
    let own = |n: &str| Some(n.to_owned());
    assert_eq!(
        shown,
        vec![
            ("trust-server".into(), "trust-server".into(), own("host")),
            ("trust-server (2)".into(), "trust-server (2)".into(), own("notes")),
            ("notes".into(), "notes".into(), own("Vault")),
        ]
    );
    let labels: Vec<(String, String)> = set.tools().into_iter().map(|t| (t.server, t.label)).collect();
    assert!(!labels.is_empty() && labels.iter().all(|(server, label)| server == label), "{labels:?}");
    set.shutdown().await;
}
