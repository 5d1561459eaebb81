//! An App's own tools, listed and called by the host.

use super::*;

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
