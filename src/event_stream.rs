//! Reading a server-sent event stream within bounds: the size of the event being received,
//! counted across chunks, so an endless event is cut off before it fills memory. Both the
//! legacy SSE transport (`server::sse`) and the model providers' streams (`model::wire`) read
//! event streams; this holds what they share without either knowing the other.

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

#[cfg(test)]
mod tests {
    use super::*;

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
