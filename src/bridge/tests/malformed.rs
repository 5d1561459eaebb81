//! What a View sends that is not what it claims: malformed, oversized, reused ids, forged responses, batches.

use super::*;

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
