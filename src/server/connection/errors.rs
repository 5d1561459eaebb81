//! What a failed handshake or request says: rmcp's errors turned into one sentence a person
//! can act on, the server's last stderr lines, and the sign-in challenge a 401 carries.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::ServiceError;
use serde_json::json;

use super::Connection;
use crate::protocol::jsonrpc::code;
use crate::protocol::RpcError;
use crate::server::sse::SseError;

pub(super) fn rpc_error(e: ServiceError) -> RpcError {
    match e {
        ServiceError::McpError(e) => RpcError { code: e.code.0.into(), message: e.message.into_owned(), data: e.data },
        ServiceError::Timeout { timeout } => RpcError::new(
            code::UNAVAILABLE,
            format!("the server did not answer within {} s; the request was cancelled", timeout.as_secs_f32()),
        ),
        ServiceError::TransportClosed => {
            RpcError::new(code::UNAVAILABLE, "the connection to the server is closed; the request got no answer")
        }
        ServiceError::TransportSend(e) => RpcError::new(
            code::UNAVAILABLE,
            format!("the request could not be sent to the server: {}", error_chain(e.error.as_ref())),
        ),
        other => RpcError::new(code::INTERNAL_ERROR, other.to_string()),
    }
}

impl Connection {
    /// When the connection itself failed, the server's last words usually say why.
    pub(super) async fn explain(&self, error: ServiceError) -> RpcError {
        if let Some(challenge) = service_challenge(&error) {
            // 401 (the token expired and could not be refreshed) or 403 insufficient_scope.
            return RpcError {
                code: code::UNAVAILABLE,
                message: format!("MCP server `{}` needs sign-in for this request", self.name),
                data: Some(json!({ AUTH_CHALLENGE_KEY: challenge })),
            };
        }
        let closed = matches!(error, ServiceError::TransportClosed);
        let mut error = rpc_error(error);
        if closed && self.pid.is_none() && self.is_alive() {
            // Streamable HTTP: the response stream of this one request broke; the session lives on.
            error.message = "the server's response stream for this request closed before the answer came; the \
                             connection itself is still up"
                .into();
        }
        if self.pid.is_some() && error.code == code::UNAVAILABLE {
            if closed {
                error.message = "the server process ended (it crashed or exited); the request got no answer".into();
            }
            // Give the stderr reader a moment to catch up with a process that just died.
            tokio::time::sleep(Duration::from_millis(50)).await;
            error.message = with_tail(&error.message, &self.stderr_tail);
        }
        error
    }
}

/// The `WWW-Authenticate` challenge of a 401 (or 403 insufficient_scope) in a handshake error.
pub(super) fn auth_challenge(error: &ClientInitializeError) -> Option<String> {
    match error {
        ClientInitializeError::TransportError { error, .. } => challenge_in(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => auth_challenge(fallback),
        _ => None,
    }
}

/// The same in a request's error.
pub(super) fn service_challenge(error: &ServiceError) -> Option<String> {
    let ServiceError::TransportSend(error) = error else { return None };
    challenge_in(error.error.as_ref())
}

/// Where a sign-in challenge rides in an error's `data` ([`auth_challenge_of`]).
const AUTH_CHALLENGE_KEY: &str = "wwwAuthenticate";

/// The `WWW-Authenticate` challenge of a request that failed because the server wants (more)
/// sign-in: sign in with it ([`Connection::sign_in`]) and try again.
pub fn auth_challenge_of(error: &RpcError) -> Option<&str> {
    error.data.as_ref()?.get(AUTH_CHALLENGE_KEY)?.as_str()
}

fn challenge_in(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(SseError::AuthRequired { challenge, .. }) = e.downcast_ref::<SseError>() {
            return Some(challenge.clone());
        }
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return http.auth_challenge().map(str::to_owned);
        }
        source = e.source();
    }
    None
}

/// rmcp's handshake errors name transport types; say what failed and why instead.
pub(super) fn describe_init_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the connection closed while waiting for the {context}")
        }
        // `server/discover` was refused, so the server is taken for a 2025 one: what failed
        // then is what the person needs to know.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => describe_init_error(fallback),
        other => other.to_string(),
    }
}

/// An error and its causes, one sentence, without repeats. rmcp's HTTP client errors hide their
/// cause (no `source`), so those are opened up.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    type HttpError = StreamableHttpError<reqwest::Error>;
    if let Some(http) = error.downcast_ref::<HttpError>() {
        match http {
            HttpError::Client(inner) => return error_chain(inner),
            HttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 3") => {
                return format!(
                    "the server answered with a redirect ({}) that was not followed: only same-origin 307/308 \
                     redirects are, so configured headers never reach another origin; configure the final URL",
                    text.trim_end_matches([':', ' '])
                );
            }
            HttpError::UnexpectedServerResponse(text) => {
                return format!("unexpected server response: {}", one_line(text, 300));
            }
            HttpError::AuthRequired(_) | HttpError::InsufficientScope(_) => {
                return format!("{http}: the server wants sign-in");
            }
            _ => {}
        }
    }
    let mut text = match error.downcast_ref::<reqwest::Error>() {
        // reqwest repeats the URL with its query (which may hold a token); callers name the URL.
        Some(http) => match http.url() {
            Some(url) => http.to_string().replace(&format!(" for url ({url})"), ""),
            None => http.to_string(),
        },
        None => error.to_string(),
    };
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

/// Whitespace runs (an HTML error page's newlines) as single spaces, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &joined[..cut]),
        None => joined,
    }
}

/// A hint for the HTTP failures people fix by changing the URL.
pub(super) fn http_hint(reason: &str) -> &'static str {
    if reason.contains("HTTP 404") || reason.contains("HTTP 405") {
        "; check the URL: Streamable HTTP servers usually serve /mcp, legacy SSE servers /sse"
    } else {
        ""
    }
}

pub(super) fn with_tail(reason: &str, tail: &Mutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    if tail.is_empty() {
        reason.to_owned()
    } else {
        let mut last: Vec<&str> = tail.iter().rev().take(5).rev().map(String::as_str).collect();
        // A program's error line comes before its stack: kept when the stack pushed it out.
        let said = |l: &&str| crate::server::failure::error_in(l).is_some();
        if !last.iter().any(said) {
            if let Some(error) = tail.iter().rev().skip(5).map(String::as_str).find(said) {
                last.insert(0, error);
            }
        }
        format!("{reason}; server stderr: {}", last.join(" | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_pages_become_one_short_line() {
        assert_eq!(
            one_line("<html>\n  <body>\n\tCannot POST /mcp\n</body>", 100),
            "<html> <body> Cannot POST /mcp </body>"
        );
        assert_eq!(one_line("ééééé", 3), "ééé...");
        assert!(http_hint("HTTP 404 Not Found").contains("/mcp"));
        assert_eq!(http_hint("HTTP 500"), "");
    }
}
