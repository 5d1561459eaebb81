//! What a View asks the host to decide: links, messages, model context, display modes, downloads, content kinds, capabilities.

use super::*;

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
