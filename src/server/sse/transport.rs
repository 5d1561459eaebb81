//! The client end of a legacy SSE connection as rmcp's [`Transport`]: POSTs to the session's
//! endpoint, the GET stream opened within the bounds, and the requests still waiting for answers.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use sse_stream::SseStream;
use tokio::sync::{mpsc, oneshot, watch};
use url::Url;

use super::events::{EventTooLargeMarker, StreamMemory};
use super::reader::{error_text, read_loop};
use super::{display_url, SseError, SseOptions};
use crate::event_stream::EventSizeGuard;

const MAX_REDIRECTS: usize = 10;
/// How much of an error body is kept for the error message.
const ERROR_BODY_PREVIEW: usize = 300;
/// JSON-RPC code of the errors this transport writes for requests whose answer was lost.
const LOST_ANSWER_CODE: i32 = -32001;

/// Where client messages go right now.
#[derive(Debug, Clone)]
pub(super) enum Link {
    /// Waiting for the first or a new `endpoint` event (or a session re-initialization).
    Connecting,
    /// POST here.
    Ready(Url),
    /// Given up; the reason.
    Closed(String),
}

pub(super) struct Shared {
    pub(super) http: reqwest::Client,
    pub(super) sse_url: Url,
    pub(super) options: SseOptions,
    pub(super) link: watch::Sender<Link>,
    /// Requests sent and not yet answered.
    pub(super) pending: Mutex<HashSet<RequestId>>,
    /// The `initialize` request, replayed when the server starts a new session.
    pub(super) initialize: Mutex<Option<ClientJsonRpcMessage>>,
}

impl Shared {
    /// The configured headers, plus the bearer token when signed in (no token yet: none, and the
    /// server's 401 asks for sign-in).
    pub(super) async fn headers(&self) -> HeaderMap {
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
    pub(super) async fn endpoint(&self) -> Result<Url, SseError> {
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

    pub(super) async fn post(&self, endpoint: &Url, message: &ClientJsonRpcMessage) -> Result<(), SseError> {
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
    pub(super) async fn open(
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
    pub(super) async fn fail_pending(&self, inbound: &mpsc::Sender<ServerJsonRpcMessage>, reason: &str) {
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
