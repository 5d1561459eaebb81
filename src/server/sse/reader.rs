//! The reader of the GET stream for the life of a connection: events to rmcp, the `endpoint`
//! rules, and reopening a dropped stream (same session resumed, a new one re-initialized).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, InitializedNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use tokio::sync::{mpsc, oneshot};
use url::Url;

use super::events::{EventTooLargeMarker, StreamMemory};
use super::transport::{Link, Shared};
use super::{display_url, resolve_endpoint, SseError};

/// A stream that stayed open this long was healthy: its drop starts a fresh count of attempts.
/// Shorter ones count, so a server that accepts and drops at once is given up on.
const STABLE_STREAM: Duration = Duration::from_secs(10);

/// Why one GET stream ended.
enum StreamEnd {
    /// The server or network ended it; reconnecting may help.
    Dropped(String),
    /// A rule was broken; the connection is over.
    Fatal(SseError),
    /// The client side went away.
    ReceiverGone,
}

/// Reads the GET stream for the life of the connection, reopening it when it drops.
pub(super) async fn read_loop(
    shared: Arc<Shared>,
    inbound: mpsc::Sender<ServerJsonRpcMessage>,
    opened: oneshot::Sender<Result<(), SseError>>,
) {
    let mut opened = Some(opened);
    let mut memory = StreamMemory::new(shared.options.default_retry);
    let mut session: Option<Url> = None;
    let mut failures: u32 = 0;
    let shown = display_url(&shared.sse_url);
    loop {
        let started = tokio::time::Instant::now();
        let end = match shared.open(&memory).await {
            Ok((stream_url, events)) => {
                read_stream(&shared, &inbound, &mut opened, &mut memory, &mut session, stream_url, events).await
            }
            Err(e) if opened.is_some() => StreamEnd::Fatal(e),
            Err(e) => StreamEnd::Dropped(e.to_string()),
        };
        let reason = match end {
            StreamEnd::ReceiverGone => return,
            StreamEnd::Fatal(e) => {
                let reason = e.to_string();
                close(&shared, &inbound, opened.take(), e).await;
                tracing::warn!(sse = %shown, "SSE connection closed: {reason}");
                return;
            }
            StreamEnd::Dropped(reason) => reason,
        };
        if let Some(opened) = opened.take() {
            let e = SseError::Closed(format!("the SSE stream {shown} ended before its `endpoint` event ({reason})"));
            let _ = opened.send(Err(e));
            return;
        }
        shared.link.send_replace(Link::Connecting);
        if started.elapsed() >= STABLE_STREAM {
            failures = 0;
        }
        failures += 1;
        if failures > shared.options.reconnect_attempts {
            let e = SseError::Closed(format!(
                "the SSE stream {shown} dropped and could not be reopened ({} attempts; last: {reason})",
                shared.options.reconnect_attempts
            ));
            close(&shared, &inbound, None, e).await;
            return;
        }
        tracing::info!(
            sse = %shown,
            attempt = failures,
            "SSE stream dropped ({reason}); reopening in {} ms",
            memory.retry.as_millis()
        );
        tokio::time::sleep(memory.retry).await;
    }
}

async fn close(
    shared: &Shared,
    inbound: &mpsc::Sender<ServerJsonRpcMessage>,
    opened: Option<oneshot::Sender<Result<(), SseError>>>,
    error: SseError,
) {
    let reason = error.to_string();
    shared.link.send_replace(Link::Closed(reason.clone()));
    shared.fail_pending(inbound, &reason).await;
    if let Some(opened) = opened {
        let _ = opened.send(Err(error));
    }
}

/// Reads one GET stream until it ends.
async fn read_stream(
    shared: &Arc<Shared>,
    inbound: &mpsc::Sender<ServerJsonRpcMessage>,
    opened: &mut Option<oneshot::Sender<Result<(), SseError>>>,
    memory: &mut StreamMemory,
    session: &mut Option<Url>,
    stream_url: Url,
    events: impl futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>>,
) -> StreamEnd {
    let mut events = std::pin::pin!(events);
    let shown = display_url(&shared.sse_url);
    // The id of a replayed `initialize` whose answer is the transport's, not rmcp's.
    let mut reinit: Option<(RequestId, Url)> = None;
    let mut link = shared.link.subscribe();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            // A helper task (re-initialization) gave up on the connection.
            closed = link.wait_for(|l| matches!(l, Link::Closed(_))) => {
                let reason = match closed.as_deref() {
                    Ok(Link::Closed(reason)) => reason.clone(),
                    _ => "the transport was dropped".into(),
                };
                return StreamEnd::Fatal(SseError::Closed(reason));
            }
        };
        let Some(event) = event else { break };
        let event = match event {
            Ok(event) => event,
            Err(sse_stream::Error::Body(e))
                if e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.get_ref().is_some_and(|inner| inner.is::<EventTooLargeMarker>())) =>
            {
                return StreamEnd::Fatal(SseError::EventTooLarge { url: shown, max: shared.options.max_event_size });
            }
            Err(sse_stream::Error::Body(e)) => return StreamEnd::Dropped(error_text(e.as_ref())),
            Err(e) => {
                tracing::warn!(sse = %shown, "skipping a malformed SSE line: {e}");
                continue;
            }
        };
        memory.observe(&event);
        let data = event.data.as_deref().unwrap_or("");
        match event.event.as_deref() {
            Some("endpoint") => {
                // The origin check is against the configured URL: a redirect never widens it.
                let endpoint = match resolve_endpoint(&stream_url, data) {
                    Ok(endpoint) if endpoint.origin() == shared.sse_url.origin() => endpoint,
                    Ok(endpoint) => {
                        return StreamEnd::Fatal(SseError::CrossOriginEndpoint {
                            origin: shared.sse_url.origin().ascii_serialization(),
                            endpoint: endpoint.origin().ascii_serialization(),
                        })
                    }
                    Err(e) => return StreamEnd::Fatal(e),
                };
                if let Some(opened) = opened.take() {
                    *session = Some(endpoint.clone());
                    shared.link.send_replace(Link::Ready(endpoint));
                    let _ = opened.send(Ok(()));
                } else if session.as_ref() == Some(&endpoint) {
                    tracing::info!(sse = %shown, "SSE stream reopened; the session resumed");
                    shared.link.send_replace(Link::Ready(endpoint));
                } else {
                    tracing::info!(sse = %shown, "SSE stream reopened with a new session; re-initializing");
                    shared
                        .fail_pending(
                            inbound,
                            "the SSE stream dropped while this request was pending and the server started a new \
                             session, so its answer is lost",
                        )
                        .await;
                    *session = Some(endpoint.clone());
                    let initialize = shared.initialize.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    match initialize {
                        Some(JsonRpcMessage::Request(request)) => {
                            reinit = Some((request.id.clone(), endpoint.clone()));
                            let (shared, message) = (shared.clone(), JsonRpcMessage::Request(request));
                            tokio::spawn(async move {
                                if let Err(e) = shared.post(&endpoint, &message).await {
                                    tracing::warn!("re-initialize after reconnect failed: {e}");
                                    shared.link.send_replace(Link::Closed(format!(
                                        "the server started a new session and re-initializing it failed: {e}"
                                    )));
                                    return;
                                }
                                let limit = shared.options.connect_timeout;
                                let mut link = shared.link.subscribe();
                                let answered =
                                    tokio::time::timeout(limit, link.wait_for(|l| !matches!(l, Link::Connecting)));
                                if answered.await.is_err() {
                                    shared.link.send_replace(Link::Closed(format!(
                                        "the server started a new session and did not answer the re-initialize \
                                         within {} s",
                                        limit.as_secs_f32()
                                    )));
                                }
                            });
                        }
                        _ => {
                            shared.link.send_replace(Link::Ready(endpoint));
                        }
                    }
                }
            }
            None | Some("message") => {
                if data.trim().is_empty() {
                    continue;
                }
                let message: ServerJsonRpcMessage = match serde_json::from_str(data) {
                    Ok(m) => m,
                    Err(e) => {
                        let preview: String = data.chars().take(120).collect();
                        tracing::warn!(sse = %shown, "skipping an SSE message that is not JSON-RPC ({e}): {preview}");
                        continue;
                    }
                };
                let answered = match &message {
                    JsonRpcMessage::Response(r) => Some(r.id.clone()),
                    JsonRpcMessage::Error(e) => e.id.clone(),
                    _ => None,
                };
                if let Some(id) = answered {
                    if reinit.as_ref().is_some_and(|(reinit_id, _)| *reinit_id == id) {
                        let (_, endpoint) = reinit.take().expect("checked above");
                        finish_reinit(shared.clone(), endpoint, message);
                        continue;
                    }
                    shared.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                }
                if inbound.send(message).await.is_err() {
                    return StreamEnd::ReceiverGone;
                }
            }
            Some(other) => tracing::debug!(sse = %shown, "ignoring SSE event type {other:?}"),
        }
    }
    StreamEnd::Dropped("the server ended the stream".into())
}

/// An error and its causes, one line.
pub(super) fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// After the replayed `initialize` is answered: `notifications/initialized`, then the new session
/// is open for the messages that waited.
fn finish_reinit(shared: Arc<Shared>, endpoint: Url, answer: ServerJsonRpcMessage) {
    tokio::spawn(async move {
        if let JsonRpcMessage::Error(e) = answer {
            shared.link.send_replace(Link::Closed(format!(
                "the server started a new session and refused the re-initialize: {}",
                e.error.message
            )));
            return;
        }
        let initialized =
            ClientJsonRpcMessage::notification(ClientNotification::InitializedNotification(InitializedNotification {
                method: Default::default(),
                extensions: Default::default(),
            }));
        match shared.post(&endpoint, &initialized).await {
            Ok(()) => {
                shared.link.send_replace(Link::Ready(endpoint));
            }
            Err(e) => {
                shared.link.send_replace(Link::Closed(format!(
                    "the server started a new session and re-initializing it failed: {e}"
                )));
            }
        }
    });
}
