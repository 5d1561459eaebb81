//! Bridge tests with a scripted fake View and a fake server: every rule without a display.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::*;
use crate::protocol::{methods, Message, RpcError};

type Call = (String, Option<Map<String, Value>>);

#[derive(Default)]
struct FakeServer {
    calls: Mutex<Vec<Call>>,
    delay: Option<Duration>,
}

impl ServerPort for FakeServer {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
    ) -> BoxFuture<Result<Value, RpcError>> {
        self.calls
            .lock()
            .unwrap()
            .push((name.clone(), arguments.clone()));
        let delay = self.delay;
        Box::pin(async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            if name == "fails" {
                return Err(RpcError::new(-32099, "boom"));
            }
            Ok(
                json!({"content": [{"type": "text", "text": format!("called {name}")}], "structuredContent": arguments}),
            )
        })
    }

    fn read_resource(&self, uri: String) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(async move { Ok(json!({"contents": [{"uri": uri, "text": "data"}]})) })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        let vis = match name {
            "app-tool" | "fails" => json!(["app"]),
            "model-tool" => json!(["model"]),
            "both" => json!(["model", "app"]),
            "default" => {
                return Some(json!({"name": "default", "inputSchema": {"type": "object"}}))
            }
            _ => return None,
        };
        Some(
            json!({"name": name, "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": vis}}}),
        )
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
        while let Ok(Some((_, o))) =
            tokio::time::timeout(Duration::from_millis(ms), self.rx.recv()).await
        {
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
    assert_eq!(
        msg["params"]["sandbox"],
        "allow-scripts allow-same-origin allow-forms"
    );
    // A second ready (the View can forge one) is dropped, not answered with the resource again.
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    let out = h.drain(100).await;
    assert!(posts(&out).is_empty(), "{out:?}");
    assert!(out
        .iter()
        .any(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. }))));
}

#[tokio::test]
async fn legacy_sandbox_ready_name_is_accepted() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-ready"}));
    assert_eq!(
        h.next_post().await["method"],
        methods::SANDBOX_RESOURCE_READY
    );
}

#[tokio::test]
async fn initialize_result_is_complete_and_echoes_the_version() {
    let mut h = start();
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    for (id, version, expected) in [
        (1, "2025-11-21", "2025-11-21"),
        (2, "2026-01-26", "2026-01-26"),
        (3, "1999-01-01", "2026-01-26"),
    ] {
        let r = h
            .request(
                id,
                "ui/initialize",
                json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": version}),
            )
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
    let r = h
        .request(1, "ui/initialize", json!({"protocolVersion": "2026-01-26"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("appInfo"),
        "{r}"
    );
}

#[tokio::test]
async fn nothing_reaches_the_view_before_initialized_then_input_precedes_result() {
    let mut h = start();
    // The result arrives first (fast server): it must still come after the input.
    h.view
        .tool_result(json!({"content": [{"type": "text", "text": "r"}]}));
    h.view
        .tool_input(Map::from_iter([("a".to_owned(), json!(1))]));
    h.send(json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY}));
    h.next_post().await;
    h.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
        "appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}}),
    );
    let before = h.drain(150).await;
    let before = posts(&before);
    assert_eq!(
        before.len(),
        1,
        "only the initialize response before initialized: {before:?}"
    );
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
    let ok = h
        .request(
            10,
            "tools/call",
            json!({"name": "app-tool", "arguments": {"x": 2}}),
        )
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "called app-tool");
    let ok = h
        .request(11, "tools/call", json!({"name": "default"}))
        .await;
    assert!(
        ok.get("result").is_some(),
        "default visibility includes app: {ok}"
    );

    let denied = h
        .request(12, "tools/call", json!({"name": "model-tool"}))
        .await;
    assert_eq!(denied["error"]["code"], -32000);
    assert!(denied["error"]["message"]
        .as_str()
        .unwrap()
        .contains("visibility"));
    let unknown = h
        .request(13, "tools/call", json!({"name": "other-servers-tool"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    let bad = h.request(14, "tools/call", json!({"name": 5})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let bad_args = h
        .request(
            15,
            "tools/call",
            json!({"name": "app-tool", "arguments": [1]}),
        )
        .await;
    assert_eq!(bad_args["error"]["code"], -32602);

    let calls = h.server.calls.lock().unwrap().clone();
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["app-tool", "default"],
        "refused calls must never reach the server"
    );
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
        FakeServer {
            delay: Some(Duration::from_millis(300)),
            ..Default::default()
        },
        Duration::from_millis(200),
    );
    h.handshake().await;
    h.send(
        json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "app-tool"}}),
    );
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
    let read = h
        .request(41, "resources/read", json!({"uri": "file:///data.json"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["uri"], "file:///data.json");
    let mode = h
        .request(42, "ui/request-display-mode", json!({"mode": "fullscreen"}))
        .await;
    assert_eq!(
        mode["result"],
        json!({"mode": "inline"}),
        "refused: the current mode comes back"
    );
    let bad_mode = h
        .request(43, "ui/request-display-mode", json!({"mode": "huge"}))
        .await;
    assert_eq!(bad_mode["error"]["code"], -32602);
    let unknown = h.request(44, "ui/does-not-exist", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
}

#[tokio::test]
async fn malformed_input_is_dropped_with_a_reason_and_the_session_keeps_working() {
    let mut h = start();
    h.handshake().await;
    for bad in [
        "not json",
        "[]",
        r#"{"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":5}"#,
    ] {
        h.view.from_view(bad.to_owned());
    }
    let out = h.drain(100).await;
    let rejected = out
        .iter()
        .filter(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. })))
        .count();
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
        FakeServer {
            delay: Some(Duration::from_millis(200)),
            ..Default::default()
        },
        Duration::from_millis(200),
    );
    h.handshake().await;
    h.send(
        json!({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": {"name": "app-tool"}}),
    );
    h.send(json!({"jsonrpc": "2.0", "id": 60, "method": "ping"}));
    h.send(json!({"jsonrpc": "2.0", "id": 999, "result": {}}));
    let out = h.drain(400).await;
    let replies = posts(&out);
    assert_eq!(
        replies.len(),
        1,
        "one answer for id 60, none for the forged response: {replies:?}"
    );
    assert!(replies[0].get("result").is_some());
    let rejected = out
        .iter()
        .filter(|o| matches!(o, ViewOutput::Event(ViewEvent::Rejected { .. })))
        .count();
    assert_eq!(rejected, 2);
}

#[tokio::test]
async fn size_changed_and_logs_become_events() {
    let mut h = start();
    h.handshake().await;
    h.send(json!({"jsonrpc": "2.0", "method": methods::SIZE_CHANGED, "params": {"height": 321}}));
    h.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/size-change", "params": {"width": 10, "height": 20}}));
    h.send(json!({"jsonrpc": "2.0", "method": methods::SIZE_CHANGED, "params": {"height": -5}}));
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "careful"}}));
    let events: Vec<ViewEvent> = h
        .drain(100)
        .await
        .into_iter()
        .filter_map(|o| match o {
            ViewOutput::Event(
                e @ (ViewEvent::SizeChanged { .. }
                | ViewEvent::Log { .. }
                | ViewEvent::Rejected { .. }),
            ) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        events[0],
        ViewEvent::SizeChanged {
            width: None,
            height: Some(321.0)
        }
    );
    assert_eq!(
        events[1],
        ViewEvent::SizeChanged {
            width: Some(10.0),
            height: Some(20.0)
        }
    );
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
