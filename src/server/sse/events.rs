//! One event stream's bounds and memory: the size of the event being received, counted across
//! chunks, and the `id:` and `retry:` fields that outlive a stream.

use std::time::Duration;

use super::retry_delay;

/// Counts the bytes of the SSE event being received (line terminators excluded) across chunks,
/// so an endless event is cut off before it fills memory. A blank line ends an event.
#[derive(Debug, Default)]
pub(crate) struct EventSizeGuard {
    event: usize,
    line: usize,
    previous: u8,
}

impl EventSizeGuard {
    /// Takes in one chunk; false once the current event is over `max` bytes.
    pub(crate) fn admit(&mut self, chunk: &[u8], max: usize) -> bool {
        for &byte in chunk {
            match byte {
                // The second half of a CRLF: the line already ended at the CR.
                b'\n' if self.previous == b'\r' => {}
                b'\n' | b'\r' => {
                    if self.line == 0 {
                        self.event = 0;
                    }
                    self.line = 0;
                }
                _ => {
                    self.line += 1;
                    self.event += 1;
                }
            }
            self.previous = byte;
        }
        self.event <= max
    }
}

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

    #[test]
    fn event_size_guard_counts_one_event_across_chunks_and_resets_on_a_blank_line() {
        let mut guard = EventSizeGuard::default();
        assert!(guard.admit(b"data: 1234", 10));
        assert!(!guard.admit(b"5", 10), "11 bytes in one event");
        let mut guard = EventSizeGuard::default();
        assert!(guard.admit(b"data: 12\n\n", 10));
        assert!(guard.admit(b"data: 1234", 10), "a new event starts after the blank line");
        for terminator in [&b"\r\n\r\n"[..], b"\r\r", b"\n\r\n"] {
            let mut guard = EventSizeGuard::default();
            assert!(guard.admit(b"data: 1234", 10));
            assert!(guard.admit(terminator, 10));
            assert!(guard.admit(b"data: 1234", 10), "{terminator:?} ends the event");
        }
        // CRLF split across chunks is one line end, not a blank line.
        let mut guard = EventSizeGuard::default();
        assert!(guard.admit(b"data: 12\r", 20));
        assert!(guard.admit(b"\ndata: 3", 20));
        assert!(guard.admit(b"45678", 20), "one event of exactly 20 bytes");
        assert!(!guard.admit(b"9", 20), "one event of 21 bytes");
    }
}
