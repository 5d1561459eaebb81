//! A View's requests to its server: `tools/call` (visibility, progress, cancel, `_meta`), reads and lists, the in-flight cap.

use super::*;

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
