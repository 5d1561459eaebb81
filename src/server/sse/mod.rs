//! The legacy HTTP+SSE transport (MCP 2024-11-05), on rmcp's [`Transport`](rmcp::transport::Transport) trait.
//!
//! The client GETs the SSE URL and keeps that stream open. The server's first event, `endpoint`,
//! names the URL to POST client messages to (a session URL); every server message then arrives as
//! a `message` event on the GET stream. rmcp dropped its own client for this transport, so the
//! host carries one.
//!
//! Rules this transport keeps:
//! - The POST endpoint must be on the SSE URL's origin. Anything else is refused, so configured
//!   headers (often credentials) never travel to a host the user did not name. Redirects are
//!   followed only within that origin for the same reason.
//! - When the stream drops it is reopened after the server's `retry:` delay (3 s until the server
//!   says otherwise), with `Last-Event-ID`, a bounded number of times in a row (a stream that
//!   stayed up a while resets the count). If the server answers with the same endpoint, the
//!   session resumed and pending requests keep waiting. A different endpoint is a new session:
//!   pending requests fail at once (their answers went to the old stream), and the saved
//!   `initialize` is replayed so the new session is usable.
//! - Events are bounded in size ([`DEFAULT_MAX_EVENT_SIZE`]); lines `sse-stream` cannot parse and
//!   messages that are not JSON-RPC are logged and skipped.
//! - Headers the transport sets itself (`Accept`, `Content-Type`, `Last-Event-ID`) replace
//!   configured ones of the same name.
//!
//! Here: the options, the errors and the `endpoint` rules; the transport rmcp drives is in
//! `transport.rs`, the reader that keeps the GET stream open (and reopens it) in `reader.rs`,
//! the bounds and memory of one event stream in `events.rs`.

mod events;
mod reader;
mod transport;

use std::time::Duration;

use reqwest::header::HeaderMap;
use url::Url;

pub use transport::SseTransport;

/// The reconnect delay until the server sends a `retry:` field (the SSE default).
pub const DEFAULT_RETRY: Duration = Duration::from_secs(3);
/// The longest `retry:` delay honoured; a larger value is capped to this.
pub const MAX_RETRY: Duration = Duration::from_secs(60);
/// The largest SSE event accepted (the same default rmcp uses for Streamable HTTP).
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// Everything that can go wrong on the legacy SSE transport. URLs are shown without their query,
/// which may carry a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// The HTTP request could not be made (DNS, refused connection, TLS...).
    #[error("{method} {url} failed: {reason}")]
    Http {
        /// `GET` or `POST`.
        method: &'static str,
        /// The URL, without its query.
        url: String,
        /// The client's explanation, with its causes.
        reason: String,
    },
    /// The request got no answer in time.
    #[error("{method} {url} got no answer within {} s", timeout.as_secs_f32())]
    Timeout {
        /// `GET` or `POST`.
        method: &'static str,
        /// The URL, without its query.
        url: String,
        /// The limit.
        timeout: Duration,
    },
    /// The server answered with an error status.
    #[error("{method} {url} answered HTTP {status}{}", detail_suffix(detail))]
    Status {
        /// `GET` or `POST`.
        method: &'static str,
        /// The URL, without its query.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the body, or why a redirect was not followed.
        detail: String,
    },
    /// The server wants sign-in (401, or 403 with `insufficient_scope`).
    #[error("{method} {url} needs sign-in")]
    AuthRequired {
        /// `GET` or `POST`.
        method: &'static str,
        /// The URL, without its query.
        url: String,
        /// The `WWW-Authenticate` challenge.
        challenge: String,
    },
    /// The SSE URL did not answer with an event stream.
    #[error(
        "GET {url} answered with content type {content_type:?}, not text/event-stream: is this a legacy SSE \
         endpoint? (Streamable HTTP servers use their /mcp URL)"
    )]
    NotAnEventStream {
        /// The URL, without its query.
        url: String,
        /// What the server said it sent.
        content_type: String,
    },
    /// The stream opened but no `endpoint` event came in time.
    #[error("the SSE stream {url} sent no `endpoint` event within {} s", timeout.as_secs_f32())]
    NoEndpoint {
        /// The URL, without its query.
        url: String,
        /// The limit.
        timeout: Duration,
    },
    /// The `endpoint` event is not a usable URL.
    #[error("the SSE stream {url} sent an unusable `endpoint` event {data:?}: {reason}")]
    BadEndpoint {
        /// The SSE URL, without its query.
        url: String,
        /// The event data (truncated).
        data: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The `endpoint` event points at another origin.
    #[error(
        "the SSE server at {origin} named a POST endpoint on another origin ({endpoint}); refused so that the \
         configured headers never leave {origin}"
    )]
    CrossOriginEndpoint {
        /// The SSE URL's origin.
        origin: String,
        /// The endpoint's origin.
        endpoint: String,
    },
    /// The server sent an event larger than the limit.
    #[error("the SSE stream {url} sent an event larger than {max} bytes; the connection was closed")]
    EventTooLarge {
        /// The SSE URL, without its query.
        url: String,
        /// The limit.
        max: usize,
    },
    /// The connection is closed (by the host, or after the stream could not be reopened).
    #[error("the SSE connection is closed: {0}")]
    Closed(String),
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// How to reach a legacy SSE server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SseOptions {
    /// Configured headers, sent on the GET and every POST.
    pub headers: HeaderMap,
    /// How long the GET may take to deliver the `endpoint` event.
    pub connect_timeout: Duration,
    /// How long one POST may take.
    pub post_timeout: Duration,
    /// How many times in a row a dropped stream is reopened before the connection gives up.
    pub reconnect_attempts: u32,
    /// The reconnect delay until the server sends `retry:`.
    pub default_retry: Duration,
    /// The largest event accepted, in bytes of field lines.
    pub max_event_size: usize,
    /// Signs every request with the server's token (refreshed when it expires).
    pub auth: Option<SseAuth>,
}

/// The sign-in of a legacy SSE connection (a newtype so options stay `Debug`).
#[derive(Clone)]
pub struct SseAuth(pub std::sync::Arc<rmcp::transport::auth::AuthorizationManager>);

impl std::fmt::Debug for SseAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SseAuth(..)")
    }
}

impl Default for SseOptions {
    fn default() -> Self {
        Self {
            headers: HeaderMap::new(),
            connect_timeout: Duration::from_secs(30),
            post_timeout: Duration::from_secs(30),
            reconnect_attempts: 5,
            default_retry: DEFAULT_RETRY,
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            auth: None,
        }
    }
}

impl SseOptions {
    /// Signs every request with the tokens of this authorization manager.
    pub fn auth(mut self, manager: rmcp::transport::auth::AuthorizationManager) -> Self {
        self.auth = Some(SseAuth(std::sync::Arc::new(manager)));
        self
    }

    /// Sets the configured headers.
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// Sets how long the GET may take to deliver the `endpoint` event.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long one POST may take.
    pub fn post_timeout(mut self, timeout: Duration) -> Self {
        self.post_timeout = timeout;
        self
    }

    /// Sets how many times in a row a dropped stream is reopened.
    pub fn reconnect_attempts(mut self, attempts: u32) -> Self {
        self.reconnect_attempts = attempts;
        self
    }

    /// Sets the reconnect delay used until the server sends `retry:`.
    pub fn default_retry(mut self, delay: Duration) -> Self {
        self.default_retry = delay;
        self
    }

    /// Sets the largest event accepted.
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }
}

/// The URL as shown in messages: no query (it may carry a token), no fragment.
pub(crate) fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// Resolves the data of an `endpoint` event against the SSE URL and checks that it stays on the
/// SSE URL's origin.
pub(crate) fn resolve_endpoint(sse_url: &Url, data: &str) -> Result<Url, SseError> {
    let bad = |reason: String| SseError::BadEndpoint {
        url: display_url(sse_url),
        data: data.chars().take(200).collect(),
        reason,
    };
    let data = data.trim();
    if data.is_empty() {
        return Err(bad("it is empty".into()));
    }
    let mut endpoint = sse_url.join(data).map_err(|e| bad(e.to_string()))?;
    endpoint.set_fragment(None);
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(bad(format!("scheme {:?} is not http or https", endpoint.scheme())));
    }
    if endpoint.origin() != sse_url.origin() {
        return Err(SseError::CrossOriginEndpoint {
            origin: sse_url.origin().ascii_serialization(),
            endpoint: endpoint.origin().ascii_serialization(),
        });
    }
    Ok(endpoint)
}

/// The reconnect delay after a `retry:` field of `millis` milliseconds, capped at [`MAX_RETRY`].
pub(crate) fn retry_delay(millis: u64) -> Duration {
    Duration::from_millis(millis).min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse_url() -> Url {
        Url::parse("http://127.0.0.1:3001/sse?token=abc").unwrap()
    }

    #[test]
    fn endpoint_relative_path_resolves_on_the_sse_origin() {
        let url = resolve_endpoint(&sse_url(), "/message?sessionId=42").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/message?sessionId=42");
    }

    #[test]
    fn endpoint_relative_without_slash_resolves_against_the_sse_path() {
        let base = Url::parse("http://localhost:8080/mcp/sse").unwrap();
        let url = resolve_endpoint(&base, "messages?session=1").unwrap();
        assert_eq!(url.as_str(), "http://localhost:8080/mcp/messages?session=1");
    }

    #[test]
    fn endpoint_absolute_same_origin_is_accepted_and_trimmed() {
        let url = resolve_endpoint(&sse_url(), "  http://127.0.0.1:3001/rpc?s=1#frag\n").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/rpc?s=1");
    }

    #[test]
    fn endpoint_on_another_origin_is_refused() {
        for other in [
            "http://evil.example/message",
            "https://127.0.0.1:3001/message",
            "http://127.0.0.1:3002/message",
            "http://localhost:3001/message",
            "//evil.example/message",
        ] {
            let err = resolve_endpoint(&sse_url(), other).unwrap_err();
            assert!(matches!(err, SseError::CrossOriginEndpoint { .. }), "{other}: {err}");
            assert!(err.to_string().contains("http://127.0.0.1:3001"), "{err}");
        }
    }

    #[test]
    fn endpoint_that_is_not_http_is_refused() {
        for bad in ["", "   ", "javascript:alert(1)", "data:text/plain,x", "file:///etc/passwd"] {
            let err = resolve_endpoint(&sse_url(), bad).unwrap_err();
            assert!(matches!(err, SseError::BadEndpoint { .. }), "{bad:?}: {err}");
            assert!(!err.to_string().contains("token=abc"), "the query is not shown: {err}");
        }
    }

    #[test]
    fn retry_is_honoured_and_capped() {
        assert_eq!(retry_delay(250), Duration::from_millis(250));
        assert_eq!(retry_delay(0), Duration::ZERO);
        assert_eq!(retry_delay(u64::MAX), MAX_RETRY);
    }

    #[test]
    fn display_url_hides_query_and_fragment() {
        assert_eq!(display_url(&sse_url()), "http://127.0.0.1:3001/sse");
    }
}
