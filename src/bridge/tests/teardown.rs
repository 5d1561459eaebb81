//! `ui/resource-teardown`: waiting for the answer, the timeout, a View that never initialized.

use super::*;

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
