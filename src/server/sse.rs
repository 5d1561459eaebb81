//! The legacy HTTP+SSE transport (MCP 2024-11-05), on rmcp's [`Transport`] trait.
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

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, InitializedNotification,
    JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use sse_stream::SseStream;
use tokio::sync::{mpsc, oneshot, watch};
use url::Url;

/// The reconnect delay until the server sends a `retry:` field (the SSE default).
pub const DEFAULT_RETRY: Duration = Duration::from_secs(3);
/// The longest `retry:` delay honoured; a larger value is capped to this.
pub const MAX_RETRY: Duration = Duration::from_secs(60);
const MAX_REDIRECTS: usize = 10;
/// A stream that stayed open this long was healthy: its drop starts a fresh count of attempts.
/// Shorter ones count, so a server that accepts and drops at once is given up on.
const STABLE_STREAM: Duration = Duration::from_secs(10);
/// How much of an error body is kept for the error message.
const ERROR_BODY_PREVIEW: usize = 300;
/// JSON-RPC code of the errors this transport writes for requests whose answer was lost.
const LOST_ANSWER_CODE: i32 = -32001;
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
struct EventTooLargeMarker;

/// What the reader remembers across reconnects: the SSE fields that outlive one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamMemory {
    /// The last `id:` seen, sent back as `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The reconnect delay.
    pub retry: Duration,
}

impl StreamMemory {
    fn new(retry: Duration) -> Self {
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

/// Where client messages go right now.
#[derive(Debug, Clone)]
enum Link {
    /// Waiting for the first or a new `endpoint` event (or a session re-initialization).
    Connecting,
    /// POST here.
    Ready(Url),
    /// Given up; the reason.
    Closed(String),
}

struct Shared {
    http: reqwest::Client,
    sse_url: Url,
    options: SseOptions,
    link: watch::Sender<Link>,
    /// Requests sent and not yet answered.
    pending: Mutex<HashSet<RequestId>>,
    /// The `initialize` request, replayed when the server starts a new session.
    initialize: Mutex<Option<ClientJsonRpcMessage>>,
}

impl Shared {
    /// The configured headers, plus the bearer token when signed in (no token yet: none, and the
    /// server's 401 asks for sign-in).
    async fn headers(&self) -> HeaderMap {
        let mut headers = self.options.headers.clone();
        if let Some(auth) = &self.options.auth {
            match auth.0.get_access_token().await {
                Ok(token) => {
                    if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}")) {
                        value.set_sensitive(true);
                        headers.insert(reqwest::header::AUTHORIZATION, value);
                    }
                }
                Err(e) => tracing::debug!(sse = %display_url(&self.sse_url), "no token to send: {e}"),
            }
        }
        headers
    }

    /// Waits until there is an endpoint to POST to.
    async fn endpoint(&self) -> Result<Url, SseError> {
        let mut link = self.link.subscribe();
        let state = link
            .wait_for(|l| !matches!(l, Link::Connecting))
            .await
            .map_err(|_| SseError::Closed("the transport was dropped".into()))?
            .clone();
        match state {
            Link::Ready(url) => Ok(url),
            Link::Closed(reason) => Err(SseError::Closed(reason)),
            Link::Connecting => unreachable!("wait_for returned a Connecting state"),
        }
    }

    async fn post(&self, endpoint: &Url, message: &ClientJsonRpcMessage) -> Result<(), SseError> {
        let body = serde_json::to_vec(message).map_err(|e| SseError::Http {
            method: "POST",
            url: display_url(endpoint),
            reason: format!("cannot serialize the message: {e}"),
        })?;
        let mut headers = self.headers().await;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let request = self.http.post(endpoint.clone()).headers(headers).body(body).send();
        let timeout = self.options.post_timeout;
        let response = tokio::time::timeout(timeout, request)
            .await
            .map_err(|_| SseError::Timeout { method: "POST", url: display_url(endpoint), timeout })?
            .map_err(|e| http_error("POST", endpoint, &e))?;
        if !response.status().is_success() {
            return Err(status_error("POST", endpoint, response).await);
        }
        Ok(())
    }

    /// Opens the GET stream.
    async fn open(
        &self,
        memory: &StreamMemory,
    ) -> Result<(Url, impl futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>>), SseError> {
        let mut headers = self.headers().await;
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.remove("last-event-id");
        if let Some(id) = &memory.last_event_id {
            if let Ok(value) = HeaderValue::from_str(id) {
                headers.insert("last-event-id", value);
            }
        }
        let url = &self.sse_url;
        let timeout = self.options.connect_timeout;
        let response = tokio::time::timeout(timeout, self.http.get(url.clone()).headers(headers).send())
            .await
            .map_err(|_| SseError::Timeout { method: "GET", url: display_url(url), timeout })?
            .map_err(|e| http_error("GET", url, &e))?;
        if !response.status().is_success() {
            return Err(status_error("GET", url, response).await);
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !content_type.trim_start().to_ascii_lowercase().starts_with("text/event-stream") {
            return Err(SseError::NotAnEventStream { url: display_url(url), content_type: content_type.to_owned() });
        }
        let final_url = response.url().clone();
        let (mut guard, max) = (EventSizeGuard::default(), self.options.max_event_size);
        let bytes = response.bytes_stream().map(move |chunk| match chunk {
            Ok(chunk) if guard.admit(&chunk, max) => Ok(chunk),
            Ok(_) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, EventTooLargeMarker)),
            Err(e) => Err(std::io::Error::other(e)),
        });
        Ok((final_url, SseStream::from_bytes_stream(bytes)))
    }

    /// Answers every pending request with an error: its answer will never come.
    async fn fail_pending(&self, inbound: &mpsc::Sender<ServerJsonRpcMessage>, reason: &str) {
        let ids: Vec<RequestId> = self.pending.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        for id in ids {
            tracing::warn!(sse = %display_url(&self.sse_url), %id, "request lost: {reason}");
            let error = ErrorData::new(ErrorCode(LOST_ANSWER_CODE), reason.to_owned(), None);
            if inbound.send(JsonRpcMessage::error(error, Some(id))).await.is_err() {
                return;
            }
        }
    }
}

fn http_error(method: &'static str, url: &Url, error: &reqwest::Error) -> SseError {
    // reqwest repeats the URL (with its query) in its own message: keep only ours.
    let reason = error_text(error).replace(&format!(" for url ({url})"), "");
    SseError::Http { method, url: display_url(url), reason }
}

async fn status_error(method: &'static str, url: &Url, response: reqwest::Response) -> SseError {
    let status = response.status();
    let challenge = response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
    if let Some(challenge) = challenge {
        let wants_scope = status.as_u16() == 403 && challenge.contains("insufficient_scope");
        if status.as_u16() == 401 || wants_scope {
            return SseError::AuthRequired { method, url: display_url(url), challenge: challenge.to_owned() };
        }
    }
    let detail = if status.is_redirection() {
        let target = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("?");
        let target = url.join(target).map(|t| t.origin().ascii_serialization()).unwrap_or_else(|_| target.to_owned());
        format!(
            "a redirect to {target} was not followed: only same-origin redirects are, so configured headers stay \
             with {}",
            url.origin().ascii_serialization()
        )
    } else {
        let body = response.text().await.unwrap_or_default();
        let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
        body.chars().take(ERROR_BODY_PREVIEW).collect()
    };
    SseError::Status { method, url: display_url(url), status: status.as_u16(), detail }
}

/// Follows redirects only within the origin of the first URL.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Why one GET stream ended.
enum StreamEnd {
    /// The server or network ended it; reconnecting may help.
    Dropped(String),
    /// A rule was broken; the connection is over.
    Fatal(SseError),
    /// The client side went away.
    ReceiverGone,
}

/// The client end of one legacy SSE connection. Build it with [`SseTransport::connect`] and hand
/// it to rmcp (`client.serve(transport)`).
pub struct SseTransport {
    shared: Arc<Shared>,
    inbound: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport").field("url", &display_url(&self.shared.sse_url)).finish_non_exhaustive()
    }
}

impl SseTransport {
    /// Opens the SSE stream and waits for its `endpoint` event.
    pub async fn connect(sse_url: Url, options: SseOptions) -> Result<Self, SseError> {
        let http = reqwest::Client::builder()
            .redirect(same_origin_redirects())
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|e| http_error("GET", &sse_url, &e))?;
        let (link, _) = watch::channel(Link::Connecting);
        let connect_timeout = options.connect_timeout;
        let shared = Arc::new(Shared {
            http,
            sse_url: sse_url.clone(),
            options,
            link,
            pending: Mutex::new(HashSet::new()),
            initialize: Mutex::new(None),
        });
        let (inbound_tx, inbound) = mpsc::channel(64);
        let (opened_tx, opened_rx) = oneshot::channel();
        let reader = tokio::spawn(read_loop(shared.clone(), inbound_tx, opened_tx));
        let opened = tokio::time::timeout(connect_timeout, opened_rx).await;
        match opened {
            Ok(Ok(Ok(()))) => Ok(Self { shared, inbound, reader }),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(SseError::Closed("the SSE reader ended before the stream opened".into())),
            Err(_) => {
                reader.abort();
                Err(SseError::NoEndpoint { url: display_url(&sse_url), timeout: connect_timeout })
            }
        }
    }

    /// Where client messages are POSTed now, if connected.
    pub fn endpoint(&self) -> Option<Url> {
        match &*self.shared.link.borrow() {
            Link::Ready(url) => Some(url.clone()),
            _ => None,
        }
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let shared = self.shared.clone();
        async move {
            let request_id = match &item {
                JsonRpcMessage::Request(request) => {
                    if matches!(request.request, ClientRequest::InitializeRequest(_)) {
                        *shared.initialize.lock().unwrap_or_else(|e| e.into_inner()) = Some(item.clone());
                    }
                    Some(request.id.clone())
                }
                JsonRpcMessage::Notification(notification) => {
                    // A cancelled request is never answered: stop waiting for it.
                    if let ClientNotification::CancelledNotification(cancelled) = &notification.notification {
                        if let Some(id) = &cancelled.params.request_id {
                            shared.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                        }
                    }
                    None
                }
                _ => None,
            };
            if let Some(id) = &request_id {
                shared.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone());
            }
            let sent = match shared.endpoint().await {
                Ok(endpoint) => shared.post(&endpoint, &item).await,
                Err(e) => Err(e),
            };
            if let (Err(_), Some(id)) = (&sent, &request_id) {
                shared.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
            }
            sent
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.shared.link.send_replace(Link::Closed("closed by the host".into()));
        self.reader.abort();
        Ok(())
    }
}

/// Reads the GET stream for the life of the connection, reopening it when it drops.
async fn read_loop(
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
fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
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

    #[test]
    fn display_url_hides_query_and_fragment() {
        assert_eq!(display_url(&sse_url()), "http://127.0.0.1:3001/sse");
    }
}
