//! The handshake: the resource to the proxy, `ui/initialize` and `initialized`, and nothing sent to a View before it.

use super::*;

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
async fn requests_before_the_proxy_is_ready_are_refused() {
    let mut h = start();
    let r = h
        .request(1, "ui/initialize", json!({"appInfo": {"name": "t", "version": "1"}, "protocolVersion": "2026-01-26"}))
        .await;
    assert_eq!(r["error"]["code"], -32000);
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
