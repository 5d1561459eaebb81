//! A late answer to an abandoned request never breaks the next one.
//!
//! A stdio server is first asked `server/discover` (the 2026-07-28 revision); when it says
//! nothing for rmcp's fixed probe time (10 s), `initialize` follows on the same connection. A
//! server that is only slow to start (every first `npx -y …` or `uvx …`, which downloads its
//! package first) then reads both requests and answers both, the probe first: rmcp's handshake
//! takes that late answer for the answer to `initialize` and fails ("uncorrelated error
//! response: expected id 1, error response carried 0"). This transport forgets the probe once
//! `initialize` is sent, and drops any answer to it that comes after.

use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;

/// The requests of the handshake this transport has seen go out.
#[derive(Debug, Default)]
struct Handshake {
    /// The `server/discover` probe still waiting for its answer.
    probe: Option<RequestId>,
    /// The probe given up for `initialize`: its answer, should it come, is dropped.
    abandoned: Option<RequestId>,
}

impl Handshake {
    /// Notes a message going out.
    fn sent(&mut self, message: &ClientJsonRpcMessage) {
        let JsonRpcMessage::Request(request) = message else { return };
        match &request.request {
            ClientRequest::DiscoverRequest(_) => self.probe = Some(request.id.clone()),
            ClientRequest::InitializeRequest(_) => {
                if let Some(probe) = self.probe.take() {
                    self.abandoned = Some(probe);
                }
            }
            _ => {}
        }
    }

    /// Whether a message coming in answers the abandoned probe. The first answer to it is the
    /// last one: a server answers a request once.
    fn answers_abandoned(&mut self, message: &ServerJsonRpcMessage) -> bool {
        let id = match message {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else { return false };
        if self.probe.as_ref() == Some(id) {
            // Answered in time: rmcp reads it, and `initialize` (if any) follows a finished probe.
            self.probe = None;
            return false;
        }
        if self.abandoned.as_ref() == Some(id) {
            self.abandoned = None;
            return true;
        }
        false
    }
}

/// A transport that drops the late answer to a `server/discover` probe given up for
/// `initialize` (see the module's doc).
pub(super) struct LateAnswers<T> {
    inner: T,
    handshake: Arc<Mutex<Handshake>>,
}

impl<T> LateAnswers<T> {
    pub(super) fn new(inner: T) -> Self {
        Self { inner, handshake: Arc::default() }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for LateAnswers<T> {
    type Error = T::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.handshake.lock().unwrap_or_else(|e| e.into_inner()).sent(&item);
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        let handshake = self.handshake.clone();
        let inner = &mut self.inner;
        async move {
            loop {
                let message = inner.receive().await?;
                if handshake.lock().unwrap_or_else(|e| e.into_inner()).answers_abandoned(&message) {
                    tracing::info!("dropped the late answer to server/discover: the server was asked initialize since");
                    continue;
                }
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorData, JsonRpcError, JsonRpcVersion2_0};
    use serde_json::json;

    use super::*;

    fn client(value: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn error_for(id: i64) -> ServerJsonRpcMessage {
        JsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(RequestId::Number(id)),
            error: ErrorData::method_not_found::<rmcp::model::DiscoverRequestMethod>(),
        })
    }

    fn discover(id: i64) -> ClientJsonRpcMessage {
        client(json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {}}))
    }

    fn initialize(id: i64) -> ClientJsonRpcMessage {
        client(json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}))
    }

    #[test]
    fn the_probes_late_answer_is_dropped_once_initialize_went_out() {
        let mut h = Handshake::default();
        h.sent(&discover(0));
        h.sent(&initialize(1));
        assert!(h.answers_abandoned(&error_for(0)), "the late answer to the abandoned probe");
        assert!(!h.answers_abandoned(&error_for(1)), "the answer to initialize");
        assert!(!h.answers_abandoned(&error_for(0)), "an id is answered once; nothing more is dropped");
    }

    #[test]
    fn a_probe_answered_in_time_is_not_given_up() {
        let mut h = Handshake::default();
        h.sent(&discover(0));
        assert!(!h.answers_abandoned(&error_for(0)), "the refusal goes to rmcp, which then asks initialize");
        h.sent(&initialize(1));
        assert!(!h.answers_abandoned(&error_for(0)));
        assert!(!h.answers_abandoned(&error_for(1)));
    }

    #[test]
    fn without_a_probe_nothing_is_dropped() {
        let mut h = Handshake::default();
        h.sent(&initialize(0));
        assert!(!h.answers_abandoned(&error_for(0)));
    }
}
