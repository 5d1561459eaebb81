//! What one SSE stream carries past its own end: the marker of an event over the size limit
//! (the size itself is counted by [`crate::event_stream::EventSizeGuard`]), and the `id:` and
//! `retry:` fields a reopened stream starts from.

use std::time::Duration;

use super::retry_delay;

/// The marker of an event over the size limit, carried through the body stream as an I/O error.
#[derive(Debug, thiserror::Error)]
#[error("SSE event over the size limit")]
pub(super) struct EventTooLargeMarker;

/// What the reader remembers across reconnects: the SSE fields that outlive one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamMemory {
    /// The last `id:` seen, sent back as `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The reconnect delay.
    pub retry: Duration,
}

impl StreamMemory {
    pub(super) fn new(retry: Duration) -> Self {
        Self { last_event_id: None, retry }
    }

    /// Takes in the `id:` and `retry:` fields of one event.
    pub(crate) fn observe(&mut self, event: &sse_stream::Sse) {
        if let Some(id) = &event.id {
            // An empty id resets the last event id (HTML SSE processing model).
            self.last_event_id = (!id.is_empty()).then(|| id.clone());
        }
        if let Some(retry) = event.retry {
            self.retry = retry_delay(retry);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use sse_stream::SseStream;

    use super::super::DEFAULT_RETRY;
    use super::*;

    #[test]
    fn memory_keeps_last_id_and_retry_across_events() {
        let mut memory = StreamMemory::new(DEFAULT_RETRY);
        memory.observe(&sse_stream::Sse::default().data("x"));
        assert_eq!(memory, StreamMemory { last_event_id: None, retry: DEFAULT_RETRY });
        memory.observe(&sse_stream::Sse::default().id("7").retry(500));
        memory.observe(&sse_stream::Sse::default().data("y"));
        assert_eq!(memory, StreamMemory { last_event_id: Some("7".into()), retry: Duration::from_millis(500) });
        memory.observe(&sse_stream::Sse::default().id(""));
        assert_eq!(memory.last_event_id, None);
    }

    async fn parse(bytes: &'static [u8]) -> Vec<Result<sse_stream::Sse, String>> {
        let chunks = futures_util::stream::iter([Ok::<_, std::io::Error>(bytes)]);
        SseStream::from_bytes_stream(chunks).map(|e| e.map_err(|e| e.to_string())).collect().await
    }

    #[tokio::test]
    async fn retry_and_id_fields_are_parsed_from_the_wire() {
        let events = parse(b"retry: 1500\n\nevent: endpoint\ndata: /m?s=1\nid: 9\n\n").await;
        let mut memory = StreamMemory::new(DEFAULT_RETRY);
        for event in events.iter().flatten() {
            memory.observe(event);
        }
        assert_eq!(memory, StreamMemory { last_event_id: Some("9".into()), retry: Duration::from_millis(1500) });
        let endpoint = events.iter().flatten().find(|e| e.event.as_deref() == Some("endpoint")).unwrap();
        assert_eq!(endpoint.data.as_deref(), Some("/m?s=1"));
    }

    #[tokio::test]
    async fn a_bad_retry_field_is_an_error_item_not_the_end_of_the_stream() {
        let events = parse(b"retry: soon\n\n").await;
        assert!(events.iter().any(Result::is_err), "{events:?}");
        let mut memory = StreamMemory::new(DEFAULT_RETRY);
        for event in events.iter().flatten() {
            memory.observe(event);
        }
        assert_eq!(memory.retry, DEFAULT_RETRY);
    }
}
