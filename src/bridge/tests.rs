//! Bridge tests with a scripted fake View and a fake server: every rule without a display.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::*;
use crate::bridge::{Decision, HostPolicy, PolicyCapabilities, ViewInfo};
use crate::protocol::{methods, DisplayMode, HostContext, Message, RpcError, Theme};

type Call = (String, Option<Map<String, Value>>);

#[derive(Default)]
struct FakeServer {
    calls: Mutex<Vec<Call>>,
    /// The `_meta` each call was sent with.
    metas: Mutex<Vec<Option<Map<String, Value>>>>,
    requests: Mutex<Vec<(String, Value)>>,
    cancels: Arc<Mutex<Vec<Option<String>>>>,
    delay: Option<Duration>,
}

impl ServerPort for FakeServer {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        self.calls.lock().unwrap().push((name.clone(), arguments.clone()));
        self.metas.lock().unwrap().push(control.meta.clone());
        let delay = self.delay;
        let cancels = self.cancels.clone();
        Box::pin(async move {
            if name == "slow-progress" {
                let progress = control.progress.expect("progress route");
                for i in 1..=3 {
                    let _ = progress.send(json!({"progress": i, "total": 3}));
                }
            }
            if name == "hangs" {
                let reason = control.cancelled.expect("cancel signal").await.ok().flatten();
                cancels.lock().unwrap().push(reason);
                return Err(RpcError::new(-32001, "cancelled"));
            }
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            if name == "fails" {
                return Err(RpcError::new(-32099, "boom"));
            }
            Ok(json!({"content": [{"type": "text", "text": format!("called {name}")}], "structuredContent": arguments}))
        })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        self.requests.lock().unwrap().push((method.to_owned(), params.clone()));
        Box::pin(async move {
            let uri = params.get("uri").cloned().unwrap_or(Value::Null);
            Ok(json!({"contents": [{"uri": uri, "text": "data"}]}))
        })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        let vis = match name {
            "app-tool" | "fails" | "hangs" | "slow-progress" => json!(["app"]),
            "model-tool" => json!(["model"]),
            "both" => json!(["model", "app"]),
            "default" => return Some(json!({"name": "default", "inputSchema": {"type": "object"}})),
            _ => return None,
        };
        Some(json!({"name": name, "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": vis}}}))
    }
}

struct Harness {
    view: ViewHandle,
    rx: mpsc::UnboundedReceiver<(ViewId, ViewOutput)>,
    server: Arc<FakeServer>,
}

fn tool_def() -> Value {
    json!({"name": "show", "inputSchema": {"type": "object"}, "_meta": {"ui": {"resourceUri": "ui://x/v.html"}}})
}

fn start_with(server: FakeServer, teardown_timeout: Duration) -> Harness {
    let server = Arc::new(server);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut config = ViewConfig::new("v1", tool_def(), "<p>hello</p>");
    config.teardown_timeout = teardown_timeout;
    let view = ViewSession::spawn(config, server.clone(), tx, Trace::disabled());
    Harness { view, rx, server }
}

fn start() -> Harness {
    start_with(FakeServer::default(), Duration::from_millis(200))
}

/// A policy that says yes (or no) to everything and remembers what it was asked.
#[derive(Default)]
struct TestPolicy {
    deny: bool,
    /// Decides pip slowly (after 200 ms), so a later request's decision overtakes it.
    slow_pip: bool,
    refuse_tool_calls: bool,
    asked: Mutex<Vec<String>>,
    contexts: Mutex<Vec<Option<Value>>>,
}

impl HostPolicy for TestPolicy {
    fn capabilities(&self) -> PolicyCapabilities {
        PolicyCapabilities {
            open_links: true,
            message: true,
            download_file: true,
            display_modes: vec![DisplayMode::Inline, DisplayMode::Fullscreen, DisplayMode::Pip],
            ..Default::default()
        }
    }
    fn open_link(&self, _: &ViewInfo, url: &url::Url) -> BoxFuture<Decision> {
        self.asked.lock().unwrap().push(format!("link {url}"));
        self.answer()
    }
    fn message(&self, _: &ViewInfo, role: &str, content: &[Value]) -> BoxFuture<Decision> {
        self.asked.lock().unwrap().push(format!("message {role} {}", Value::Array(content.to_vec())));
        self.answer()
    }
    fn update_model_context(&self, _: &ViewInfo, context: Option<&Value>) {
        self.contexts.lock().unwrap().push(context.cloned());
    }
    fn request_display_mode(&self, _: &ViewInfo, _: DisplayMode, requested: DisplayMode) -> BoxFuture<DisplayMode> {
        let slow = self.slow_pip && requested == DisplayMode::Pip;
        Box::pin(async move {
            if slow {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            requested
        })
    }
    fn download_file(&self, _: &ViewInfo, contents: &[Value]) -> BoxFuture<Decision> {
        self.asked.lock().unwrap().push(format!("download {}", contents.len()));
        self.answer()
    }
    fn allow_app_tool_call(&self, _: &ViewInfo, _: &Value) -> BoxFuture<bool> {
        let ok = !self.refuse_tool_calls;
        Box::pin(async move { ok })
    }
}

impl TestPolicy {
    fn answer(&self) -> BoxFuture<Decision> {
        let deny = self.deny;
        Box::pin(async move {
            if deny {
                Decision::Denied("the user said no".into())
            } else {
                Decision::Allowed
            }
        })
    }
}

fn start_with_policy(policy: Arc<TestPolicy>, forwards_list_changed: bool) -> Harness {
    let server = Arc::new(FakeServer::default());
    let (tx, rx) = mpsc::unbounded_channel();
    let mut config = ViewConfig::new("v1", tool_def(), "<p>hello</p>");
    config.teardown_timeout = Duration::from_millis(200);
    config.policy = policy;
    config.forwards_list_changed = forwards_list_changed;
    let view = ViewSession::spawn(config, server.clone(), tx, Trace::disabled());
    Harness { view, rx, server }
}

impl Harness {
    fn send(&self, v: Value) {
        self.view.from_view(v.to_string());
    }

    /// Next output, skipping nothing; fails the test after 2 s of silence.
    async fn next(&mut self) -> ViewOutput {
        tokio::time::timeout(Duration::from_secs(2), self.rx.recv())
            .await
            .expect("no output within 2 s")
            .expect("session closed")
            .1
    }

    async fn next_post(&mut self) -> Value {
        loop {
            if let ViewOutput::Post(text) = self.next().await {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }

    async fn next_event(&mut self) -> ViewEvent {
        loop {
            if let ViewOutput::Event(e) = self.next().await {
                return e;
            }
        }
    }

    /// Collects whatever arrives within `ms`.
    async fn drain(&mut self, ms: u64) -> Vec<ViewOutput> {
        let mut out = Vec::new();
        while let Ok(Some((_, o))) = tokio::time::timeout(Duration::from_millis(ms), self.rx.recv()).await {
            out.push(o);
        }
        out
    }

    async fn handshake(&mut self) -> Value {
        self.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY, "params": {}}));
        let ready = self.next_post().await;
        assert_eq!(ready["method"], methods::SANDBOX_RESOURCE_READY);
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
            "appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}}));
        let result = self.next_post().await;
        self.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
        result
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v = self.next_post().await;
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

fn posts(outputs: &[ViewOutput]) -> Vec<Value> {
    outputs
        .iter()
        .filter_map(|o| match o {
            ViewOutput::Post(t) => Some(serde_json::from_str(t).unwrap()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn resource_goes_to_the_proxy_once_with_the_html_and_sandbox() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    let msg = h.next_post().await;
    assert_eq!(msg["method"], methods::SANDBOX_RESOURCE_READY);
    assert_eq!(msg["params"]["html"], "<p>hello</p>");
    assert_eq!(msg["params"]["sandbox"], "allow-scripts allow-same-origin allow-forms");
    // A second ready (the View can forge one) is dropped, not answered with the resource again.
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    let out = h.drain(100).await;
    assert!(posts(&out).is_empty(), "{out:?}");
    assert!(out.iter().any(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. }))));
}

#[tokio::test]
async fn legacy_sandbox_ready_name_is_accepted() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-ready"}));
    assert_eq!(h.next_post().await["method"], methods::SANDBOX_RESOURCE_READY);
}

#[tokio::test]
async fn initialize_result_is_complete_and_echoes_the_version() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    for (id, version, expected) in
        [(1, "2025-11-21", "2025-11-21"), (2, "2026-01-26", "2026-01-26"), (3, "1999-01-01", "2026-01-26")]
    {
        let r = h
            .request(id, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": version}))
            .await;
        let result = &r["result"];
        assert_eq!(result["protocolVersion"], expected);
        assert_eq!(result["hostInfo"]["name"], "mcp-apps-host");
        assert_eq!(result["hostContext"]["toolInfo"]["tool"], tool_def());
        assert!(result["hostCapabilities"]["serverTools"].is_object());
        assert!(result["hostCapabilities"]["sandbox"]["csp"].is_object());
        // Not wired yet, so not advertised.
        assert!(result["hostCapabilities"].get("openLinks").is_none());
    }
}

#[tokio::test]
async fn initialize_with_bad_params_names_the_field() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    let r = h.request(1, "ui/initialize", json!({"protocolVersion": "2026-01-26"})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("appInfo"), "{r}");
}

#[tokio::test]
async fn nothing_reaches_the_view_before_initialized_then_input_precedes_result() {
    let mut h = start();
    // The result arrives first (fast server): it must still come after the input.
    h.view.tool_result(json!({"content": [{"type": "text", "text": "r"}]}));
    h.view.tool_input(Map::from_iter([("a".to_owned(), json!(1))]));
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
        "appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}}));
    let before = h.drain(150).await;
    let before = posts(&before);
    assert_eq!(before.len(), 1, "only the initialize response before initialized: {before:?}");
    assert_eq!(before[0]["id"], 1);
    // `initialized` without params is what the SDK sends.
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    let after = posts(&h.drain(150).await);
    let order: Vec<&str> = after.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(order, [methods::TOOL_INPUT, methods::TOOL_RESULT]);
    assert_eq!(after[0]["params"], json!({"arguments": {"a": 1}}));
}

#[tokio::test]
async fn cancellation_is_delivered_with_its_reason() {
    let mut h = start();
    h.handshake().await;
    h.view.tool_input(Map::new());
    h.view.tool_cancelled(Some("server crashed".into()));
    let out = posts(&h.drain(150).await);
    assert_eq!(out[1]["method"], methods::TOOL_CANCELLED);
    assert_eq!(out[1]["params"]["reason"], "server crashed");
}

#[tokio::test]
async fn tools_call_is_forwarded_only_for_app_visible_tools_of_this_server() {
    let mut h = start();
    h.handshake().await;
    let ok = h.request(10, "tools/call", json!({"name": "app-tool", "arguments": {"x": 2}})).await;
    assert_eq!(ok["result"]["content"][0]["text"], "called app-tool");
    let ok = h.request(11, "tools/call", json!({"name": "default"})).await;
    assert!(ok.get("result").is_some(), "default visibility includes app: {ok}");

    let denied = h.request(12, "tools/call", json!({"name": "model-tool"})).await;
    assert_eq!(denied["error"]["code"], -32000);
    assert!(denied["error"]["message"].as_str().unwrap().contains("visibility"));
    let unknown = h.request(13, "tools/call", json!({"name": "other-servers-tool"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let bad = h.request(14, "tools/call", json!({"name": 5})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let bad_args = h.request(15, "tools/call", json!({"name": "app-tool", "arguments": [1]})).await;
    assert_eq!(bad_args["error"]["code"], -32602);

    let calls = h.server.calls.lock().unwrap().clone();
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["app-tool", "default"], "refused calls must never reach the server");
}

#[tokio::test]
async fn server_errors_reach_the_view_as_json_rpc_errors() {
    let mut h = start();
    h.handshake().await;
    let r = h.request(20, "tools/call", json!({"name": "fails"})).await;
    assert_eq!(r["error"], json!({"code": -32099, "message": "boom"}));
}

#[tokio::test]
async fn slow_calls_do_not_block_other_messages() {
    let mut h = start_with(
        FakeServer { delay: Some(Duration::from_millis(300)), ..Default::default() },
        Duration::from_millis(200),
    );
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "app-tool"}}));
    h.send(json!({"jsonrpc": "2.0", "id": 31, "method": "ping"}));
    let first = h.next_post().await;
    assert_eq!(first["id"], 31, "ping answered while the call is pending");
    let second = h.next_post().await;
    assert_eq!(second["id"], 30);
}

#[tokio::test]
async fn ping_resources_read_display_mode_and_unknown_methods() {
    let mut h = start();
    h.handshake().await;
    assert_eq!(h.request(40, "ping", json!({})).await["result"], json!({}));
    let read = h.request(41, "resources/read", json!({"uri": "file:///data.json"})).await;
    assert_eq!(read["result"]["contents"][0]["uri"], "file:///data.json");
    let mode = h.request(42, "ui/request-display-mode", json!({"mode": "fullscreen"})).await;
    assert_eq!(mode["result"], json!({"mode": "inline"}), "refused: the current mode comes back");
    let bad_mode = h.request(43, "ui/request-display-mode", json!({"mode": "huge"})).await;
    assert_eq!(bad_mode["error"]["code"], -32602);
    let unknown = h.request(44, "ui/does-not-exist", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
}

#[tokio::test]
async fn a_view_cannot_answer_a_servers_question_for_the_person() {
    let mut h = start();
    h.handshake().await;
    let forged = json!({"uri": "file:///data.json", "inputResponses": {"ask": {"action": "accept"}},
        "requestState": "replayed", "_meta": {"progressToken": 1}});
    h.request(45, "resources/read", forged).await;
    let (method, params) = h.server.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(method, "resources/read");
    assert_eq!(params, json!({"uri": "file:///data.json"}), "only what the View may ask reaches the server");
}

#[tokio::test]
async fn malformed_input_is_dropped_with_a_reason_and_the_session_keeps_working() {
    let mut h = start();
    h.handshake().await;
    for bad in ["not json", "[]", r#"{"id":1,"method":"ping"}"#, r#"{"jsonrpc":"2.0","method":5}"#] {
        h.view.from_view(bad.to_owned());
    }
    let out = h.drain(100).await;
    let rejected = out.iter().filter(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. }))).count();
    assert_eq!(rejected, 4, "{out:?}");
    assert!(posts(&out).is_empty(), "no reply to garbage: {out:?}");
    assert_eq!(h.request(50, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn oversized_messages_are_dropped_unread() {
    let mut h = start();
    h.handshake().await;
    h.view.from_view(" ".repeat(MAX_VIEW_MESSAGE_BYTES + 1));
    match h.next_event().await {
        ViewEvent::Initialized { .. } => match h.next_event().await {
            ViewEvent::Rejected { reason } => assert!(reason.contains("limit"), "{reason}"),
            e => panic!("{e:?}"),
        },
        ViewEvent::Rejected { reason } => assert!(reason.contains("limit"), "{reason}"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn reused_request_ids_and_forged_responses_are_refused() {
    let mut h = start_with(
        FakeServer { delay: Some(Duration::from_millis(200)), ..Default::default() },
        Duration::from_millis(200),
    );
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": {"name": "app-tool"}}));
    h.send(json!({"jsonrpc": "2.0", "id": 60, "method": "ping"}));
    h.send(json!({"jsonrpc": "2.0", "id": 999, "result": {}}));
    let out = h.drain(400).await;
    let replies = posts(&out);
    assert_eq!(replies.len(), 1, "one answer for id 60, none for the forged response: {replies:?}");
    assert!(replies[0].get("result").is_some());
    let rejected = out.iter().filter(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. }))).count();
    assert_eq!(rejected, 2);
}

#[tokio::test]
async fn size_changed_and_logs_become_events() {
    let mut h = start();
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "method": methods::SIZE_CHANGED, "params": {"height": 321}}));
    h.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/size-change", "params": {"width": 10, "height": 20}}));
    h.send(json!({"jsonrpc": "2.0", "method": methods::SIZE_CHANGED, "params": {"height": -5}}));
    h.send(
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "careful"}}),
    );
    let events: Vec<ViewEvent> = h
        .drain(100)
        .await
        .into_iter()
        .filter_map(|o| match o {
            ViewOutput::Event(
                e @ (ViewEvent::SizeChanged { .. } | ViewEvent::Log { .. } | ViewEvent::Rejected { .. }),
            ) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(events[0], ViewEvent::SizeChanged { width: None, height: Some(321.0) });
    assert_eq!(events[1], ViewEvent::SizeChanged { width: Some(10.0), height: Some(20.0) });
    assert!(matches!(events[2], ViewEvent::Rejected { .. }));
    assert!(matches!(&events[3], ViewEvent::Log { level, .. } if level == "warning"));
}

#[tokio::test]
async fn initialized_before_initialize_is_refused() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    assert!(matches!(h.next_event().await, ViewEvent::ResourceSent));
    // The host is told why the View will not start, then the message is refused.
    assert!(
        matches!(h.next_event().await, ViewEvent::NotStarted { message } if message.contains("ui/notifications/initialized"))
    );
    assert!(matches!(h.next_event().await, ViewEvent::Rejected { .. }));
}

#[tokio::test]
async fn teardown_waits_for_the_answer() {
    let mut h = start();
    h.handshake().await;
    let view = h.view.clone();
    let teardown = tokio::spawn(async move { view.teardown().await });
    let req = loop {
        let m = h.next_post().await;
        if m["method"] == methods::RESOURCE_TEARDOWN {
            break m;
        }
    };
    h.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {}}));
    assert_eq!(teardown.await.unwrap(), TeardownOutcome::Answered);
}

/// An App saves what it holds before it answers `ui/resource-teardown`: its requests meanwhile
/// are served (its server's tool, a ping), only a second `ui/initialize` is refused; then its
/// answer ends the teardown.
#[tokio::test]
async fn a_views_requests_go_through_while_the_host_waits_for_its_teardown_answer() {
    let mut h = start();
    h.handshake().await;
    let view = h.view.clone();
    let teardown = tokio::spawn(async move { view.teardown().await });
    let req = loop {
        let m = h.next_post().await;
        if m["method"] == methods::RESOURCE_TEARDOWN {
            break m;
        }
    };
    h.send(json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call", "params": {"name": "app-tool"}}));
    h.send(json!({"jsonrpc": "2.0", "id": 71, "method": "ping"}));
    h.send(json!({"jsonrpc": "2.0", "id": 72, "method": methods::INITIALIZE, "params": {}}));
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 3 {
        let m = h.next_post().await;
        if let Some(id) = m["id"].as_i64() {
            answers.insert(id, m);
        }
    }
    assert!(answers[&70].get("result").is_some(), "the tool call was not served: {:?}", answers[&70]);
    assert_eq!(answers[&71]["result"], json!({}));
    assert!(answers[&72].get("error").is_some(), "{:?}", answers[&72]);
    h.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {}}));
    assert_eq!(teardown.await.unwrap(), TeardownOutcome::Answered);
}

#[tokio::test]
async fn teardown_times_out_when_the_view_is_silent() {
    let mut h = start_with(FakeServer::default(), Duration::from_millis(100));
    h.handshake().await;
    let started = std::time::Instant::now();
    assert_eq!(h.view.teardown().await, TeardownOutcome::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(2));
    // The session is over: it says so.
    loop {
        if let ViewEvent::Closed = h.next_event().await {
            break;
        }
    }
}

#[tokio::test]
async fn teardown_of_a_view_that_never_initialized_sends_nothing() {
    let mut h = start();
    assert_eq!(h.view.teardown().await, TeardownOutcome::NotInitialized);
    let out = h.drain(100).await;
    assert!(posts(&out).is_empty());
}

#[tokio::test]
async fn messages_parse_as_what_they_claim() {
    // Guard against the session emitting text that is not JSON-RPC.
    let mut h = start();
    h.handshake().await;
    h.view.tool_input(Map::new());
    for o in h.drain(100).await {
        if let ViewOutput::Post(t) = o {
            Message::parse(&t).expect("host output is valid JSON-RPC");
        }
    }
}

impl Harness {
    async fn handshake_with(&mut self, app_capabilities: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
        self.next_post().await;
        self.request(
            1,
            "ui/initialize",
            json!({"appInfo": {"name": "t", "version": "1"},
            "appCapabilities": app_capabilities, "protocolVersion": "2026-01-26"}),
        )
        .await;
        self.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    }
}

#[tokio::test]
async fn open_link_asks_the_policy_for_http_only() {
    let policy = Arc::new(TestPolicy::default());
    let mut h = start_with_policy(policy.clone(), false);
    h.handshake().await;
    let ok = h.request(2, "ui/open-link", json!({"url": "https://example.com/docs"})).await;
    assert_eq!(ok["result"], json!({}));
    let js = h.request(3, "ui/open-link", json!({"url": "javascript:alert(1)"})).await;
    assert_eq!(js["result"]["isError"], true);
    let file = h.request(4, "ui/open-link", json!({"url": "file:///etc/passwd"})).await;
    assert_eq!(file["result"]["isError"], true);
    let bad = h.request(5, "ui/open-link", json!({"url": "not a url"})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let missing = h.request(6, "ui/open-link", json!({})).await;
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(
        *policy.asked.lock().unwrap(),
        ["link https://example.com/docs"],
        "only the http(s) link reached the policy"
    );
}

#[tokio::test]
async fn denial_is_an_is_error_result_not_a_protocol_error() {
    let policy = Arc::new(TestPolicy { deny: true, ..Default::default() });
    let mut h = start_with_policy(policy, false);
    h.handshake().await;
    let link = h.request(2, "ui/open-link", json!({"url": "https://example.com"})).await;
    assert_eq!(link["result"]["isError"], true);
    assert_eq!(link["result"]["message"], "the user said no");
    let msg = h.request(3, "ui/message", json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})).await;
    assert_eq!(msg["result"]["isError"], true);
}

#[tokio::test]
async fn unsupported_actions_are_method_not_found_and_not_advertised() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    let init = h
        .request(1, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}))
        .await;
    let caps = &init["result"]["hostCapabilities"];
    assert!(
        caps.get("openLinks").is_none() && caps.get("message").is_none() && caps.get("downloadFile").is_none(),
        "{caps}"
    );
    assert_eq!(caps["updateModelContext"], json!({"text": {}, "structuredContent": {}}));
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    for (id, method) in [(2, "ui/open-link"), (3, "ui/message"), (4, "ui/download-file")] {
        let r = h.request(id, method, json!({})).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
}

#[tokio::test]
async fn capabilities_follow_the_policy() {
    let mut h = start_with_policy(Arc::new(TestPolicy::default()), true);
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    let init = h
        .request(1, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}))
        .await;
    let caps = &init["result"]["hostCapabilities"];
    assert_eq!(caps["openLinks"], json!({}));
    assert_eq!(caps["downloadFile"], json!({}));
    assert_eq!(caps["message"], json!({"text": {}}));
    assert_eq!(caps["serverTools"], json!({"listChanged": true}));
}

#[tokio::test]
async fn message_checks_role_and_content_and_reaches_the_policy() {
    let policy = Arc::new(TestPolicy::default());
    let mut h = start_with_policy(policy.clone(), false);
    h.handshake().await;
    let ok =
        h.request(2, "ui/message", json!({"role": "user", "content": [{"type": "text", "text": "Book it"}]})).await;
    assert_eq!(ok["result"], json!({}), "nothing of the conversation goes back to the View");
    let bad_role = h.request(3, "ui/message", json!({"role": "assistant", "content": []})).await;
    assert_eq!(bad_role["error"]["code"], -32602);
    let bad_content = h.request(4, "ui/message", json!({"role": "user", "content": "hi"})).await;
    assert_eq!(bad_content["error"]["code"], -32602);
    let asked = policy.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("Book it"));
}

#[tokio::test]
async fn model_context_keeps_the_latest_and_empty_clears() {
    let policy = Arc::new(TestPolicy::default());
    let mut h = start_with_policy(policy.clone(), false);
    h.handshake().await;
    h.request(2, "ui/update-model-context", json!({"content": [{"type": "text", "text": "one"}]})).await;
    h.request(3, "ui/update-model-context", json!({"structuredContent": {"selected": 2}})).await;
    let cleared = h.request(4, "ui/update-model-context", json!({})).await;
    assert_eq!(cleared["result"], json!({}));
    let bad = h.request(5, "ui/update-model-context", json!({"content": "x"})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let contexts = policy.contexts.lock().unwrap().clone();
    assert_eq!(
        contexts,
        vec![
            Some(json!({"content": [{"type": "text", "text": "one"}]})),
            Some(json!({"structuredContent": {"selected": 2}})),
            None,
        ]
    );
}

#[tokio::test]
async fn display_modes_only_as_declared_with_context_changes() {
    let mut h = start_with_policy(Arc::new(TestPolicy::default()), false);
    h.handshake_with(json!({"availableDisplayModes": ["inline", "fullscreen"]})).await;
    let full = h.request(2, "ui/request-display-mode", json!({"mode": "fullscreen"})).await;
    assert_eq!(full["result"], json!({"mode": "fullscreen"}));
    let changed = h.next_post().await;
    assert_eq!(
        changed,
        json!({"jsonrpc": "2.0", "method": methods::HOST_CONTEXT_CHANGED, "params": {"displayMode": "fullscreen"}})
    );
    // pip is offered by the host but was not declared by the View: refused, current mode returned.
    let pip = h.request(3, "ui/request-display-mode", json!({"mode": "pip"})).await;
    assert_eq!(pip["result"], json!({"mode": "fullscreen"}));
    let back = h.request(4, "ui/request-display-mode", json!({"mode": "inline"})).await;
    assert_eq!(back["result"], json!({"mode": "inline"}));
    assert_eq!(h.next_post().await["params"], json!({"displayMode": "inline"}));
}

#[tokio::test]
async fn download_checks_shape_and_size() {
    let policy = Arc::new(TestPolicy::default());
    let mut h = start_with_policy(policy.clone(), false);
    h.handshake().await;
    let ok = h
        .request(
            2,
            "ui/download-file",
            json!({"contents": [
        {"type": "resource", "resource": {"uri": "file:///report.csv", "mimeType": "text/csv", "text": "a,b"}},
        {"type": "resource_link", "uri": "https://example.com/x.pdf", "name": "x.pdf"}]}),
        )
        .await;
    assert_eq!(ok["result"], json!({}));
    let big = "A".repeat((MAX_DOWNLOAD_BYTES + 1024) / 3 * 4);
    let too_big = h
        .request(
            3,
            "ui/download-file",
            json!({"contents": [{"type": "resource", "resource": {"uri": "file:///big.bin", "blob": big}}]}),
        )
        .await;
    assert_eq!(too_big["result"]["isError"], true, "{}", too_big["result"]);
    let bad = h.request(4, "ui/download-file", json!({"contents": [{"type": "text", "text": "x"}]})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let empty = h.request(5, "ui/download-file", json!({"contents": []})).await;
    assert_eq!(empty["error"]["code"], -32602);
    assert_eq!(*policy.asked.lock().unwrap(), ["download 2"]);
}

#[tokio::test]
async fn host_context_changes_send_only_what_changed_and_only_after_initialized() {
    let mut h = start();
    let ctx = HostContext { theme: Some(Theme::Dark), ..Default::default() };
    h.view.update_host_context(ctx.clone());
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    let init = h
        .request(1, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}))
        .await;
    assert_eq!(init["result"]["hostContext"]["theme"], "dark", "the early change is in the initialize result");
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    h.view.update_host_context(ctx.clone());
    let light = HostContext { theme: Some(Theme::Light), locale: Some("de-DE".into()), ..Default::default() };
    h.view.update_host_context(light);
    let posts = posts(&h.drain(150).await);
    assert_eq!(posts.len(), 1, "the unchanged theme is not re-sent: {posts:?}");
    assert_eq!(posts[0]["params"], json!({"theme": "light", "locale": "de-DE"}));
}

#[tokio::test]
async fn partial_input_streams_before_the_input_and_never_after() {
    let mut h = start();
    h.handshake().await;
    h.view.tool_input_partial(Map::from_iter([("q".to_owned(), json!("he"))]));
    h.view.tool_input_partial(Map::from_iter([("q".to_owned(), json!("hel"))]));
    h.view.tool_input(Map::from_iter([("q".to_owned(), json!("hello"))]));
    h.view.tool_input_partial(Map::from_iter([("q".to_owned(), json!("late"))]));
    let methods_seen: Vec<String> =
        posts(&h.drain(150).await).iter().map(|m| m["method"].as_str().unwrap().to_owned()).collect();
    assert_eq!(methods_seen, [methods::TOOL_INPUT_PARTIAL, methods::TOOL_INPUT_PARTIAL, methods::TOOL_INPUT]);
}

#[tokio::test]
async fn a_call_that_will_not_be_made_is_cancelled_at_once_and_a_late_input_is_ignored() {
    let mut h = start();
    h.handshake().await;
    h.view.tool_input_partial(Map::from_iter([("q".to_owned(), json!("he"))]));
    h.view.call_not_made(Some("the model's call was not made".into()));
    h.view.tool_input(Map::new());
    let seen: Vec<String> =
        posts(&h.drain(150).await).iter().map(|m| m["method"].as_str().unwrap().to_owned()).collect();
    assert_eq!(seen, [methods::TOOL_INPUT_PARTIAL, methods::TOOL_CANCELLED], "no input first or after");
    // Even with nothing streamed yet.
    let mut h = start();
    h.handshake().await;
    h.view.call_not_made(None);
    assert_eq!(posts(&h.drain(150).await)[0]["method"], methods::TOOL_CANCELLED);
    // A plain cancellation still waits for the input (it must not overtake it).
    let mut h = start();
    h.handshake().await;
    h.view.tool_cancelled(None);
    assert!(posts(&h.drain(150).await).is_empty());
}

#[tokio::test]
async fn list_changed_is_forwarded_only_when_advertised_and_after_initialized() {
    let mut h = start_with_policy(Arc::new(TestPolicy::default()), true);
    h.view.server_tools_changed();
    h.handshake().await;
    h.view.server_tools_changed();
    h.view.server_resources_changed();
    let seen: Vec<String> =
        posts(&h.drain(150).await).iter().filter_map(|m| m["method"].as_str().map(str::to_owned)).collect();
    assert_eq!(seen, ["notifications/tools/list_changed", "notifications/resources/list_changed"]);

    let mut quiet = start();
    quiet.handshake().await;
    quiet.view.server_tools_changed();
    assert!(posts(&quiet.drain(150).await).is_empty());
}

#[tokio::test]
async fn app_provided_tools_are_listed_and_called_and_die_with_the_view() {
    let mut h = start();
    h.handshake_with(json!({"tools": {"listChanged": true}})).await;
    let view = h.view.clone();
    let call =
        tokio::spawn(async move { view.call_view_tool("pick", Map::from_iter([("n".to_owned(), json!(1))])).await });
    let req = h.next_post().await;
    assert_eq!(req["method"], "tools/call");
    assert_eq!(req["params"]["name"], "pick");
    h.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": "picked"}]}}));
    assert_eq!(call.await.unwrap().unwrap()["content"][0]["text"], "picked");

    let view = h.view.clone();
    let list = tokio::spawn(async move { view.list_view_tools().await });
    let req = h.next_post().await;
    h.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "nope"}}));
    assert_eq!(list.await.unwrap().unwrap_err().message, "nope");

    assert_eq!(h.view.teardown().await, TeardownOutcome::TimedOut);
    let after = h.view.call_view_tool("pick", Map::new()).await.unwrap_err();
    assert!(after.message.contains("closed"), "{after:?}");
}

#[tokio::test]
async fn app_tools_need_the_view_to_declare_them() {
    let mut h = start();
    h.handshake().await;
    let err = h.view.list_view_tools().await.unwrap_err();
    assert_eq!(err.code, -32601);
}

#[tokio::test]
async fn progress_reaches_the_view_with_its_own_token() {
    let mut h = start();
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow-progress", "_meta": {"progressToken": "view-token"}}}));
    let mut progress = Vec::new();
    loop {
        let m = h.next_post().await;
        if m["id"] == 7 {
            break;
        }
        assert_eq!(m["method"], "notifications/progress");
        progress.push(m["params"].clone());
    }
    assert_eq!(progress.len(), 3);
    assert_eq!(progress[2], json!({"progressToken": "view-token", "progress": 3, "total": 3}));
}

#[tokio::test]
async fn a_views_cancel_reaches_the_server_and_the_answer_is_dropped() {
    let mut h = start();
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "hangs"}}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8, "reason": "user left"}}));
    let out = h.drain(200).await;
    assert!(posts(&out).iter().all(|m| m["id"] != 8), "no answer to a cancelled request: {out:?}");
    assert_eq!(*h.server.cancels.lock().unwrap(), [Some("user left".to_owned())]);
    // The id is free again afterwards.
    assert_eq!(h.request(8, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn the_policy_can_refuse_an_app_tool_call() {
    let mut h = start_with_policy(Arc::new(TestPolicy { refuse_tool_calls: true, ..Default::default() }), false);
    h.handshake().await;
    let r = h.request(9, "tools/call", json!({"name": "app-tool"})).await;
    assert_eq!(r["error"]["code"], -32000);
    assert!(h.server.calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn list_requests_are_forwarded_without_the_views_meta() {
    let mut h = start();
    h.handshake().await;
    for (id, method) in [(10, "resources/list"), (11, "resources/templates/list"), (12, "prompts/list")] {
        let r = h.request(id, method, json!({"_meta": {"progressToken": 1}})).await;
        assert!(r.get("result").is_some(), "{method}: {r}");
    }
    let reqs = h.server.requests.lock().unwrap().clone();
    assert_eq!(
        reqs.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["resources/list", "resources/templates/list", "prompts/list"]
    );
    assert!(reqs.iter().all(|(_, p)| p.get("_meta").is_none()));
}

#[tokio::test]
async fn requests_before_the_proxy_is_ready_are_refused() {
    let mut h = start();
    let r = h
        .request(1, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}))
        .await;
    assert_eq!(r["error"]["code"], -32000);
}

#[tokio::test]
async fn a_view_cannot_keep_more_requests_in_flight_than_the_cap() {
    let mut h = start_with(
        FakeServer { delay: Some(Duration::from_millis(600)), ..Default::default() },
        Duration::from_millis(200),
    );
    h.handshake().await;
    let extra = 36;
    for i in 0..(MAX_VIEW_REQUESTS_IN_FLIGHT + extra) {
        h.send(json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": {"name": "app-tool"}}));
    }
    // Past the cap, answers come at once (errors), and those calls never reach the server.
    let refused: Vec<Value> = posts(&h.drain(300).await).into_iter().filter(|p| p.get("error").is_some()).collect();
    assert_eq!(refused.len(), extra, "{refused:?}");
    assert!(refused[0]["error"]["message"].as_str().unwrap().contains("in flight"), "{refused:?}");
    assert_eq!(h.server.calls.lock().unwrap().len(), MAX_VIEW_REQUESTS_IN_FLIGHT);
    // Once answered, the View may call again.
    let answered = posts(&h.drain(800).await).into_iter().filter(|p| p.get("result").is_some()).count();
    assert_eq!(answered, MAX_VIEW_REQUESTS_IN_FLIGHT);
    let again = h.request(5000, "tools/call", json!({"name": "app-tool"})).await;
    assert!(again.get("result").is_some(), "{again}");
}

/// A session whose trace records go to the returned receiver.
fn start_traced() -> (Harness, mpsc::UnboundedReceiver<Value>) {
    let server = Arc::new(FakeServer::default());
    let (tx, rx) = mpsc::unbounded_channel();
    let (tap, records) = mpsc::unbounded_channel();
    let view = ViewSession::spawn(
        ViewConfig::new("v1", tool_def(), "<p>hello</p>"),
        server.clone(),
        tx,
        Trace::disabled().with_tap(tap),
    );
    (Harness { view, rx, server }, records)
}

fn spec_diagnostics(records: &mut mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(r) = records.try_recv() {
        if r["dir"] == "diagnostic" && r["msg"]["kind"] == "spec" {
            out.push(r["msg"]["detail"].clone());
        }
    }
    out
}

#[tokio::test]
async fn a_view_whose_initialize_lacks_required_params_still_gets_its_data() {
    let (mut h, mut records) = start_traced();
    h.view.tool_input(Map::new());
    h.view.tool_result(json!({"content": [{"type": "text", "text": "r"}]}));
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    // Still refused, as the spec says...
    let r = h.request(1, "ui/initialize", json!({"appCapabilities": {}})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // ...but `initialized` is accepted with defaults, as AppBridge hosts do.
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    let mut delivered = Vec::new();
    let mut app = None;
    for o in h.drain(200).await {
        match o {
            ViewOutput::Post(t) => delivered.push(serde_json::from_str::<Value>(&t).unwrap()["method"].clone()),
            ViewOutput::Event(ViewEvent::Initialized { app_info, protocol_version, .. }) => {
                app = Some((app_info.name, protocol_version))
            }
            _ => {}
        }
    }
    assert_eq!(delivered, [json!(methods::TOOL_INPUT), json!(methods::TOOL_RESULT)]);
    assert_eq!(app, Some(("unknown".to_owned(), crate::protocol::LATEST_PROTOCOL_VERSION.to_owned())));
    // Said once, with the clause, in the trace (which check and preview read).
    let warnings = spec_diagnostics(&mut records);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let clause = warnings[0]["clause"].as_str().unwrap();
    assert!(clause.contains("ui/initialize") && clause.contains("appInfo"), "{clause}");
    // A second malformed one is answered the same way and not warned about again.
    let r = h.request(2, "ui/initialize", json!({})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(spec_diagnostics(&mut records).is_empty());
}

#[tokio::test]
async fn a_partial_initialize_keeps_what_it_did_say() {
    let (mut h, mut records) = start_traced();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    let r = h.request(1, "ui/initialize", json!({"protocolVersion": "2025-11-21"})).await;
    assert!(r["error"]["message"].as_str().unwrap().contains("appInfo"), "{r}");
    h.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    loop {
        if let ViewEvent::Initialized { protocol_version, .. } = h.next_event().await {
            assert_eq!(protocol_version, "2025-11-21");
            break;
        }
    }
    assert_eq!(spec_diagnostics(&mut records).len(), 1);
}

#[tokio::test]
async fn a_views_tools_call_keeps_its_meta_but_not_the_hosts_keys() {
    let mut h = start();
    h.handshake().await;
    let meta = json!({
        "progressToken": "view-token",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "com.example/request": {"a": 1},
        "io.modelcontextprotocol/clientInfo": {"name": "forged", "version": "0"},
    });
    h.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow-progress", "_meta": meta}}),
    );
    let mut progress = 0;
    loop {
        let m = h.next_post().await;
        if m["id"] == 7 {
            break;
        }
        assert_eq!(m["params"]["progressToken"], "view-token", "{m}");
        progress += 1;
    }
    assert_eq!(progress, 3);
    let sent = h.server.metas.lock().unwrap().clone();
    let expected = json!({
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "com.example/request": {"a": 1},
    });
    assert_eq!(sent, [Some(expected.as_object().unwrap().clone())]);
    // Nothing to forward: no `_meta` at all.
    h.request(8, "tools/call", json!({"name": "app-tool", "_meta": {"progressToken": 1}})).await;
    assert_eq!(h.server.metas.lock().unwrap()[1], None);
}

#[tokio::test]
async fn diagnostics_in_the_views_html_name_its_resource() {
    let h = start();
    assert_eq!(h.view.resource_uri(), Some("ui://x/v.html"));
    let located = h.view.locate_diagnostic(json!({"message": "boom", "inHtml": true, "line": 14}));
    assert_eq!(located, json!({"message": "boom", "source": "ui://x/v.html", "line": 14}));
    // An older proxy's report, with the sandbox URL the written frame took.
    let located = h.view.locate_diagnostic(json!({"source": "mcp-sandbox://abc/proxy.html?view=v1", "line": 3}));
    assert_eq!(located["source"], "ui://x/v.html");
    let csp = h.view.locate_diagnostic(json!({"directive": "img-src", "sourceFile": "mcp-sandbox://abc/proxy.html"}));
    assert_eq!(csp["sourceFile"], "ui://x/v.html");
    // A script the View loaded from elsewhere keeps its URL.
    let external = json!({"message": "x", "source": "https://cdn.example/lib.js", "line": 1});
    assert_eq!(h.view.locate_diagnostic(external.clone()), external);
}

#[tokio::test]
async fn a_display_mode_decision_overtaken_by_a_later_one_is_not_applied() {
    let policy = Arc::new(TestPolicy { slow_pip: true, ..Default::default() });
    let mut h = start_with_policy(policy, false);
    h.handshake_with(json!({"availableDisplayModes": ["inline", "fullscreen", "pip"]})).await;
    assert_eq!(
        h.request(2, "ui/request-display-mode", json!({"mode": "fullscreen"})).await["result"]["mode"],
        "fullscreen"
    );
    // pip is decided slowly, the inline asked after it quickly: the host's last word is inline.
    h.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ui/request-display-mode", "params": {"mode": "pip"}}));
    h.send(json!({"jsonrpc": "2.0", "id": 4, "method": "ui/request-display-mode", "params": {"mode": "inline"}}));
    let answers = posts(&h.drain(500).await);
    let answer = |id: i64| answers.iter().find(|p| p["id"] == id).map(|p| p["result"]["mode"].clone());
    assert_eq!(answer(4), Some(json!("inline")));
    assert_eq!(answer(3), Some(json!("inline")), "the stale pip decision must answer the mode in effect: {answers:?}");
    let contexts: Vec<&Value> = answers.iter().filter(|p| p["method"] == methods::HOST_CONTEXT_CHANGED).collect();
    assert_eq!(contexts.last().map(|c| c["params"]["displayMode"].clone()), Some(json!("inline")), "{answers:?}");
}

/// One content block of each kind the draft names (`McpUiSupportedContentBlockModalities`).
fn block_of(modality: &str) -> Value {
    match modality {
        "text" => json!({"type": "text", "text": "t"}),
        "image" => json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        "audio" => json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
        "resource" => json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}}),
        "resourceLink" => json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"}),
        other => panic!("no block for {other}"),
    }
}

/// Advertise equals enforce: for every content kind, `ui/message` and `ui/update-model-context`
/// accept it exactly when `hostCapabilities` advertises it, and a refusal names the clause.
#[tokio::test]
async fn content_kinds_are_accepted_exactly_as_advertised() {
    let policy = Arc::new(TestPolicy::default());
    let mut h = start_with_policy(policy.clone(), false);
    let init = h.handshake().await;
    let caps = &init["result"]["hostCapabilities"];
    let mut id = 10;
    for (method, capability) in [("ui/message", "message"), ("ui/update-model-context", "updateModelContext")] {
        let advertised = caps[capability].as_object().unwrap_or_else(|| panic!("{capability} advertised: {caps}"));
        for kind in ["text", "image", "audio", "resource", "resourceLink"] {
            id += 1;
            let params = match method {
                "ui/message" => json!({"role": "user", "content": [block_of(kind)]}),
                _ => json!({"content": [block_of(kind)]}),
            };
            let r = h.request(id, method, params).await;
            if advertised.contains_key(kind) {
                assert_eq!(r["result"], json!({}), "{method} {kind} is advertised: {r}");
            } else {
                assert_eq!(r["error"]["code"], -32602, "{method} {kind} is not advertised: {r}");
                let message = r["error"]["message"].as_str().unwrap();
                assert!(message.contains(&format!("hostCapabilities.{capability}")), "{message}");
            }
        }
        // structuredContent is a field of update-model-context, not a block.
        if method == "ui/update-model-context" {
            id += 1;
            let r = h.request(id, method, json!({"structuredContent": {"a": 1}})).await;
            assert_eq!(advertised.contains_key("structuredContent"), r.get("result").is_some(), "{r}");
        }
    }
    // Only the accepted ones reached the policy.
    assert_eq!(policy.asked.lock().unwrap().len(), 1, "one message kind (text) is advertised");
}

/// A View whose document the host serves by URL: the proxy is told where (`src`), not sent
/// the HTML, while the trace still shows the HTML the View gets (the spec's message).
#[tokio::test]
async fn a_document_served_by_url_is_named_not_sent_and_traced_whole() {
    let server = Arc::new(FakeServer::default());
    let (tx, rx) = mpsc::unbounded_channel();
    let (tap, mut records) = mpsc::unbounded_channel();
    let mut config = ViewConfig::new("v1", tool_def(), "<p>hello</p>");
    config.document_url = Some("mcp-sandbox://abc/view.html?view=v1".into());
    let view = ViewSession::spawn(config, server.clone(), tx, Trace::disabled().with_tap(tap));
    let mut h = Harness { view, rx, server };
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    let msg = h.next_post().await;
    assert_eq!(msg["method"], methods::SANDBOX_RESOURCE_READY);
    assert_eq!(msg["params"]["src"], "mcp-sandbox://abc/view.html?view=v1");
    assert_eq!(msg["params"]["html"], "");
    assert_eq!(msg["params"]["sandbox"], "allow-scripts allow-same-origin allow-forms");
    let mut traced = None;
    while let Ok(r) = records.try_recv() {
        if r["dir"] == "host->proxy" {
            traced = Some(r["msg"].clone());
        }
    }
    let traced = traced.expect("the resource was traced");
    assert_eq!(traced["params"]["html"], "<p>hello</p>");
    assert!(traced["params"].get("src").is_none(), "{traced}");
}

/// A burst of messages the proxy sent as one array is handled message by message, in order,
/// with the same checks; a batch that is not an array of messages, or over the size bound, is
/// refused whole.
#[tokio::test]
async fn a_batch_from_the_proxy_is_handled_message_by_message() {
    let mut h = start();
    h.handshake().await;
    // Each message as its own text: one that is not JSON at all (a lone surrogate) spoils
    // nothing around it.
    let batch = json!([
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
        r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    ]);
    h.view.from_view_batch(batch.to_string());
    let out = h.drain(300).await;
    let answered: Vec<Value> =
        posts(&out).into_iter().filter(|p| p.get("result").is_some()).map(|p| p["id"].clone()).collect();
    assert_eq!(answered, [json!(7), json!(9)], "{out:?}");
    let rejected =
        |out: &[ViewOutput]| out.iter().filter(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. }))).count();
    let reasons: Vec<&str> = out
        .iter()
        .filter_map(|o| match o {
            ViewOutput::Event(ViewEvent::Rejected { reason }) => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "the 1.0 message and the surrogate: {reasons:?}");
    assert!(reasons[0].contains("jsonrpc") && reasons[1].contains("hex escape"), "{reasons:?}");
    h.view.from_view_batch(r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#.into());
    h.view.from_view_batch(format!("[{}]", " ".repeat(MAX_VIEW_MESSAGE_BYTES)));
    let out = h.drain(300).await;
    assert!(posts(&out).is_empty(), "{out:?}");
    assert_eq!(rejected(&out), 2, "{out:?}");
}
