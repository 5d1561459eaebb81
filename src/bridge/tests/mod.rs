//! Bridge tests with a scripted fake View and a fake server: every rule without a display.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::*;
use crate::bridge::{Decision, HostPolicy, PolicyCapabilities, ViewInfo};
use crate::protocol::{methods, DisplayMode, HostContext, Message, RpcError, Theme};

mod app_tools;
mod decisions;
mod handshake;
mod malformed;
mod server_requests;
mod teardown;
mod tool_input;

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
