//! Property tests (fuzzing) of the bridge: whatever a View sends, a `ViewSession` stays up,
//! answers, reports what it drops, never reaches the server with a call a View may not make, and
//! never speaks to the View before the handshake. No display needed.
//!
//! Case counts: `PROPTEST_CASES` overrides the defaults below. Failures are not persisted to
//! files (shrunk inputs are printed instead).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_apps_host::bridge::{
    BoxFuture, CallControl, ServerPort, Trace, ViewConfig, ViewEvent, ViewHandle, ViewOutput, ViewSession,
    MAX_VIEW_MESSAGE_BYTES,
};
use mcp_apps_host::protocol::RpcError;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(default: u32) -> Config {
    Config { cases: cases(default), failure_persistence: None, ..Config::default() }
}

/// A server whose tools have every visibility a View may meet.
#[derive(Default)]
struct FakeServer {
    calls: Mutex<Vec<String>>,
    requests: Mutex<Vec<String>>,
}

/// Tools a View may call (visibility includes "app", or the default).
const APP_VISIBLE: &[&str] = &["app-tool", "both", "plain"];

impl ServerPort for FakeServer {
    fn call_tool(
        &self,
        name: String,
        _arguments: Option<Map<String, Value>>,
        _control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        self.calls.lock().unwrap().push(name.clone());
        Box::pin(async move { Ok(json!({"content": [{"type": "text", "text": name}]})) })
    }

    fn request(&self, method: &str, _params: Value) -> BoxFuture<Result<Value, RpcError>> {
        self.requests.lock().unwrap().push(method.to_owned());
        Box::pin(async { Ok(json!({})) })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        let visibility = match name {
            "app-tool" => json!(["app"]),
            "both" => json!(["model", "app"]),
            "model-tool" => json!(["model"]),
            "plain" => return Some(json!({"name": "plain", "inputSchema": {"type": "object"}})),
            _ => return None,
        };
        Some(json!({"name": name, "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": visibility}}}))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap())
}

const PROBE_ID: &str = "fuzz-probe-ping";

/// What a session did with a sequence of View messages.
struct Outcome {
    posts: Vec<Value>,
    events: Vec<ViewEvent>,
    server: Arc<FakeServer>,
    closed: bool,
    probe_answered: bool,
}

/// Starts a session (tool input and result already handed to it), feeds it `inputs`, then a
/// ping, and collects everything it produced until the ping's answer (bounded wait).
fn drive(inputs: &[String]) -> Outcome {
    runtime().block_on(async {
        let server = Arc::new(FakeServer::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let tool = json!({"name": "show", "inputSchema": {"type": "object"}, "_meta": {"ui": {"resourceUri": "ui://x/v.html"}}});
        let mut config = ViewConfig::new("v1", tool, "<p>fuzz</p>");
        config.teardown_timeout = Duration::from_millis(100);
        let view: ViewHandle = ViewSession::spawn(config, server.clone(), tx, Trace::disabled());
        let mut args = Map::new();
        args.insert("q".into(), json!(1));
        view.tool_input(args);
        view.tool_result(json!({"content": [{"type": "text", "text": "result"}]}));
        for text in inputs {
            view.from_view(text.clone());
        }
        view.from_view(json!({"jsonrpc": "2.0", "id": PROBE_ID, "method": "ping"}).to_string());
        let mut posts = Vec::new();
        let mut events = Vec::new();
        let mut probe_answered = false;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !probe_answered {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((_, ViewOutput::Post(text)))) => {
                    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("host posted non-JSON ({e}): {text}"));
                    probe_answered = v["id"] == PROBE_ID && v.get("result").is_some();
                    posts.push(v);
                }
                Ok(Some((_, ViewOutput::Event(e)))) => events.push(e),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        // Let forwarded calls that were already under way land in the fake server.
        tokio::time::sleep(Duration::from_millis(2)).await;
        Outcome { posts, events, closed: view.is_closed(), server, probe_answered }
    })
}

/// Checks what must hold whatever the View sent.
fn check(inputs: &[String], out: &Outcome) -> Result<(), TestCaseError> {
    prop_assert!(!out.closed, "the session ended");
    prop_assert!(out.probe_answered, "the session stopped answering (posts: {:?})", out.posts);
    // Every message the host posts is a JSON-RPC 2.0 object.
    for p in &out.posts {
        prop_assert!(p.is_object() && p["jsonrpc"] == "2.0", "host posted {p}");
    }
    // The host answers only requests it was sent (it never invents a response id).
    let parsed: Vec<Option<Value>> = inputs.iter().map(|t| serde_json::from_str::<Value>(t).ok()).collect();
    let request_ids: Vec<&Value> =
        parsed.iter().flatten().filter(|v| v.get("method").is_some()).filter_map(|v| v.get("id")).collect();
    for p in &out.posts {
        let is_response = p.get("method").is_none() && (p.get("result").is_some() || p.get("error").is_some());
        if is_response && p["id"] != PROBE_ID {
            prop_assert!(request_ids.contains(&&p["id"]), "response to an id the View never used: {p}");
        }
    }
    // Nothing but responses and the proxy's resource before the handshake: tool-input and
    // tool-result require `ui/initialize` then `ui/notifications/initialized`.
    let delivered = out
        .posts
        .iter()
        .any(|p| matches!(p["method"].as_str(), Some("ui/notifications/tool-input" | "ui/notifications/tool-result")));
    if delivered {
        let init = parsed
            .iter()
            .position(|v| v.as_ref().is_some_and(|v| v["method"] == "ui/initialize" && v.get("id").is_some()));
        let initialized = parsed.iter().rposition(|v| {
            v.as_ref().is_some_and(|v| v["method"] == "ui/notifications/initialized" && v.get("id").is_none())
        });
        prop_assert!(
            matches!((init, initialized), (Some(a), Some(b)) if a < b),
            "tool input/result delivered without a handshake"
        );
    }
    // The server never sees a call a View may not make.
    for name in out.server.calls.lock().unwrap().iter() {
        prop_assert!(APP_VISIBLE.contains(&name.as_str()), "the server was called with {name}");
    }
    // Every message that is not even a JSON object is reported as dropped.
    let not_objects = parsed.iter().filter(|v| !v.as_ref().is_some_and(Value::is_object)).count();
    let rejected = out.events.iter().filter(|e| matches!(e, ViewEvent::Rejected { .. })).count();
    prop_assert!(rejected >= not_objects, "{not_objects} non-objects, {rejected} rejections");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Strategies.

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        ".{0,24}".prop_map(Value::String),
        Just(json!("\u{0}\u{202e}\u{feff}")),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,12}", inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<
                String,
                Value,
            >>(
            ))),
        ]
    })
}

const METHODS: &[&str] = &[
    "ui/initialize",
    "ui/notifications/initialized",
    "ui/notifications/sandbox-proxy-ready",
    "ui/notifications/sandbox-resource-ready",
    "ui/notifications/sandbox-whatever",
    "ui/sandbox-ready",
    "ping",
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "ui/request-display-mode",
    "ui/open-link",
    "ui/message",
    "ui/update-model-context",
    "ui/download-file",
    "ui/notifications/size-changed",
    "ui/size-change",
    "ui/notifications/request-teardown",
    "ui/resource-teardown",
    "notifications/message",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/tools/list_changed",
    "initialize",
];

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(METHODS).prop_map(str::to_owned),
        1 => "[a-z/_-]{0,30}",
        1 => ".{0,20}",
    ]
}

fn id() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        (0i64..5).prop_map(|n| Some(json!(n))),
        any::<i64>().prop_map(|n| Some(json!(n))),
        "[a-z0-9-]{0,8}".prop_map(|s| Some(json!(s))),
        Just(Some(json!(PROBE_ID))),
        Just(Some(Value::Null)),
        Just(Some(json!(1.5))),
        Just(Some(json!(true))),
        Just(Some(json!({"id": 1}))),
        Just(Some(json!([1]))),
    ]
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["app-tool", "both", "plain", "model-tool", "other-servers-tool", ""][..])
            .prop_map(str::to_owned),
        ".{0,12}",
    ]
}

/// Params shaped like what each method expects, or anything at all.
fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        3 => json_value().prop_map(Some),
        3 => (tool_name(), json_value(), prop::option::of(json_value())).prop_map(|(name, arguments, task)| {
            let mut p = json!({"name": name, "arguments": arguments});
            if let Some(t) = task { p["task"] = t; }
            Some(p)
        }),
        1 => (tool_name(), Just(())).prop_map(|(name, ())| Some(json!({"name": name, "arguments": {}}))),
        1 => ".{0,40}".prop_map(|url| Some(json!({"url": url}))),
        1 => Just(Some(json!({"url": "javascript:alert(1)"}))),
        1 => prop::sample::select(&["inline", "fullscreen", "pip", "minimized", ""][..]).prop_map(|m| Some(json!({"mode": m}))),
        1 => (any::<f64>(), any::<f64>()).prop_map(|(w, h)| Some(json!({"width": if w.is_finite() { json!(w) } else { json!(null) }, "height": if h.is_finite() { json!(h) } else { json!(-1) }}))),
        1 => (".{0,10}", json_value()).prop_map(|(level, data)| Some(json!({"level": level, "data": data}))),
        1 => (id(), ".{0,10}").prop_map(|(rid, reason)| Some(json!({"requestId": rid, "reason": reason}))),
        1 => Just(Some(json!({"protocolVersion": "2026-01-26", "appInfo": {"name": "f", "version": "1"}, "appCapabilities": {"tools": {}, "availableDisplayModes": ["inline", "fullscreen"]}}))),
        1 => json_value().prop_map(|c| Some(json!({"role": "user", "content": c}))),
        1 => json_value().prop_map(|c| Some(json!({"contents": c}))),
        1 => Just(Some(json!({"contents": [{"type": "resource", "resource": {"uri": "file:///etc/passwd", "text": "x"}}]}))),
        1 => Just(Some(json!({"_meta": {"progressToken": 7}, "name": "app-tool"}))),
    ]
}

/// A JSON-RPC-shaped message: mostly right, sometimes subtly wrong.
fn message() -> impl Strategy<Value = Value> {
    (
        prop_oneof![8 => Just(Some(json!("2.0"))), 1 => Just(None), 1 => json_leaf().prop_map(Some)],
        id(),
        prop::option::weighted(0.9, method()),
        params(),
        prop::option::weighted(0.1, json_value()),
        prop::option::weighted(0.05, json_value()),
    )
        .prop_map(|(version, id, method, params, result, error)| {
            let mut m = Map::new();
            if let Some(v) = version {
                m.insert("jsonrpc".into(), v);
            }
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            if let Some(method) = method {
                m.insert("method".into(), json!(method));
            }
            if let Some(p) = params {
                m.insert("params".into(), p);
            }
            if let Some(r) = result {
                m.insert("result".into(), r);
            }
            if let Some(e) = error {
                m.insert("error".into(), e);
            }
            Value::Object(m)
        })
}

fn valid_id() -> impl Strategy<Value = Value> {
    prop_oneof![(0i64..8).prop_map(|n| json!(n)), "[a-c]{1,2}".prop_map(|s| json!(s))]
}

/// Well-formed messages of every kind a View sends, so deep paths (forwarded calls, policy
/// decisions, cancellation, responses to host requests) are reached, not only the parser.
fn well_formed() -> impl Strategy<Value = Value> {
    let app_tool = prop_oneof![
        4 => prop::sample::select(APP_VISIBLE).prop_map(str::to_owned),
        1 => tool_name(),
    ];
    let req = |method: &'static str, params: BoxedStrategy<Value>| {
        (valid_id(), params).prop_map(move |(id, p)| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": p}))
    };
    let note = |method: &'static str, params: BoxedStrategy<Value>| {
        params.prop_map(move |p| json!({"jsonrpc": "2.0", "method": method, "params": p}))
    };
    prop_oneof![
        4 => req("tools/call", (app_tool, json_value()).prop_map(|(n, a)| json!({"name": n, "arguments": if a.is_object() { a } else { json!({}) }})).boxed()),
        1 => req("ping", Just(json!({})).boxed()),
        1 => req("resources/read", ".{0,12}".prop_map(|u| json!({"uri": u})).boxed()),
        1 => req("resources/list", Just(json!({})).boxed()),
        1 => req("prompts/list", Just(json!({"cursor": "x"})).boxed()),
        1 => req("ui/open-link", prop_oneof![Just("https://example.com/".to_owned()), ".{0,12}"].prop_map(|u| json!({"url": u})).boxed()),
        1 => req("ui/message", ".{0,12}".prop_map(|t| json!({"role": "user", "content": [{"type": "text", "text": t}]})).boxed()),
        1 => req("ui/update-model-context", json_value().prop_map(|v| json!({"structuredContent": {"v": v}})).boxed()),
        1 => req("ui/request-display-mode", prop::sample::select(&["inline", "fullscreen", "pip"][..]).prop_map(|m| json!({"mode": m})).boxed()),
        1 => req("ui/download-file", ".{0,12}".prop_map(|t| json!({"contents": [{"type": "resource", "resource": {"uri": "file:///x.txt", "text": t}}]})).boxed()),
        1 => req("ui/initialize", Just(json!({"protocolVersion": "2026-01-26", "appInfo": {"name": "f", "version": "1"}, "appCapabilities": {}})).boxed()),
        1 => note("ui/notifications/initialized", Just(json!({})).boxed()),
        1 => note("ui/notifications/size-changed", (0.0f64..5000.0, 0.0f64..5000.0).prop_map(|(w, h)| json!({"width": w, "height": h})).boxed()),
        1 => note("notifications/message", (".{0,8}", json_value()).prop_map(|(l, d)| json!({"level": l, "data": d})).boxed()),
        1 => note("notifications/cancelled", (valid_id(), ".{0,8}").prop_map(|(r, why)| json!({"requestId": r, "reason": why})).boxed()),
        1 => note("ui/notifications/request-teardown", Just(json!({})).boxed()),
        1 => (valid_id(), json_value()).prop_map(|(id, r)| json!({"jsonrpc": "2.0", "id": id, "result": r})),
        1 => (valid_id(), json_value()).prop_map(|(id, e)| json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": e.to_string()}})),
    ]
}

/// The honest handshake, so the fuzzed messages also hit a Ready session.
fn handshake() -> Vec<String> {
    vec![
        json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": "hs-1", "method": "ui/initialize", "params": {
            "protocolVersion": "2026-01-26", "appInfo": {"name": "fuzz", "version": "1"},
            "appCapabilities": {"tools": {}}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}).to_string(),
    ]
}

/// Strings that are not JSON-RPC, or barely: arbitrary text, truncated JSON, deep nesting.
fn raw_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        2 => message().prop_map(|m| {
            let s = m.to_string();
            let cut = s.len() / 2;
            s.char_indices().map(|(i, _)| i).take_while(|i| *i <= cut).last().map(|i| s[..i].to_owned()).unwrap_or_default()
        }),
        1 => (1usize..5000).prop_map(|n| "[".repeat(n)),
        1 => (1usize..400).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        1 => (100usize..400).prop_map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}1{}}}", "{\"a\":".repeat(n), "}".repeat(n))),
        1 => Just("\"\\ud800\"".to_owned()),
        1 => Just("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"s\":\"\\ud800\\u0041\"}}".to_owned()),
        1 => Just("undefined".to_owned()),
        1 => Just("null".to_owned()),
        1 => Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    /// Arbitrary strings, before and after an honest handshake.
    #[test]
    fn arbitrary_text_never_breaks_a_session(shake in any::<bool>(), texts in prop::collection::vec(raw_text(), 1..12)) {
        let mut inputs = if shake { handshake() } else { Vec::new() };
        inputs.extend(texts);
        let out = drive(&inputs);
        check(&inputs, &out)?;
    }

    /// JSON-RPC-shaped messages: every method, every id shape, params right and wrong, in any
    /// order, with or without the handshake first.
    #[test]
    fn json_rpc_shaped_messages_keep_every_rule(
        shake in any::<bool>(),
        msgs in prop::collection::vec(prop_oneof![1 => message(), 1 => well_formed()], 1..20),
    ) {
        let mut inputs = if shake { handshake() } else { Vec::new() };
        inputs.extend(msgs.iter().map(Value::to_string));
        let out = drive(&inputs);
        check(&inputs, &out)?;
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Tool calls only: names and visibilities mixed; only app-visible tools reach the server,
    /// and each refused call gets an error answer.
    #[test]
    fn only_app_visible_tools_reach_the_server(names in prop::collection::vec(tool_name(), 1..16)) {
        let mut inputs = handshake();
        for (i, n) in names.iter().enumerate() {
            inputs.push(json!({"jsonrpc": "2.0", "id": format!("call-{i}"), "method": "tools/call",
                "params": {"name": n, "arguments": {}}}).to_string());
        }
        let out = drive(&inputs);
        check(&inputs, &out)?;
        let allowed = names.iter().filter(|n| APP_VISIBLE.contains(&n.as_str())).count();
        // Calls still under way when the probe was answered may land later; never more.
        prop_assert!(out.server.calls.lock().unwrap().len() <= allowed);
        for (i, n) in names.iter().enumerate() {
            if !APP_VISIBLE.contains(&n.as_str()) {
                let answer = out.posts.iter().find(|p| p["id"] == format!("call-{i}"));
                prop_assert!(answer.is_some_and(|a| a.get("error").is_some()), "call {i} of {n:?}: {answer:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic edges the generators only brush against.

#[test]
fn a_message_over_the_size_limit_is_dropped_with_a_reason() {
    let big = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}", "a".repeat(MAX_VIEW_MESSAGE_BYTES));
    let out = drive(&[big]);
    assert!(out.probe_answered && !out.closed);
    assert!(out.events.iter().any(|e| matches!(e, ViewEvent::Rejected { reason } if reason.contains("byte limit"))));
}

#[test]
fn deep_nesting_is_dropped_not_overflowed() {
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"deep\",\"method\":\"ping\",\"params\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let out = drive(&[deep, "[".repeat(1_000_000)]);
    assert!(out.probe_answered && !out.closed);
    assert!(!out.posts.iter().any(|p| p["id"] == "deep"), "a 100,000-deep message was answered");
    let rejected = out.events.iter().filter(|e| matches!(e, ViewEvent::Rejected { .. })).count();
    assert_eq!(rejected, 2);
}

#[test]
fn ten_thousand_messages_are_all_answered_in_order() {
    let mut inputs = handshake();
    for i in 0..10_000 {
        inputs.push(json!({"jsonrpc": "2.0", "id": i, "method": "ping"}).to_string());
    }
    let out = drive(&inputs);
    assert!(out.probe_answered);
    let answered: Vec<i64> = out.posts.iter().filter_map(|p| p["id"].as_i64()).collect();
    assert_eq!(answered.len(), 10_000);
    assert!(answered.windows(2).all(|w| w[0] < w[1]), "answers out of order");
}

/// The generators reach deep into the session: tool calls reach the server, requests are
/// answered with results and with errors, messages are rejected.
#[test]
fn message_generator_reaches_every_part_of_the_session() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = prop::collection::vec(prop_oneof![1 => message(), 1 => well_formed()], 1..20);
    let (mut called, mut results, mut errors, mut rejected) = (0, 0, 0, 0);
    for _ in 0..300 {
        let mut inputs = handshake();
        inputs.extend(strategy.new_tree(&mut runner).unwrap().current().iter().map(Value::to_string));
        let out = drive(&inputs);
        called += usize::from(!out.server.calls.lock().unwrap().is_empty());
        results += out.posts.iter().filter(|p| p.get("result").is_some() && p["id"] != PROBE_ID).count();
        errors += out.posts.iter().filter(|p| p.get("error").is_some()).count();
        rejected += out.events.iter().filter(|e| matches!(e, ViewEvent::Rejected { .. })).count();
    }
    eprintln!("bridge generator, 300 sequences: {called} reached the server, {results} results, {errors} errors, {rejected} rejections");
    assert!(called > 20 && results > 300 && errors > 300 && rejected > 300);
}
