//! What the host tells a View about its call: input (partial and whole), result, cancellation, host context, list changes.

use super::*;

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
