//! The client side of one server connection: what the host tells the server about itself
//! (capabilities, roots) and how it answers what the server asks (elicitation, sampling) and
//! announces (progress, list changes, logs), both as requests of their own (2025 revisions) and
//! inside an `input_required` result (2026-07-28's multi round-trip requests).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
// Sampling and roots are deprecated upstream (SEP-2577), but servers of the current spec use them.
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    ErrorCode, FormElicitationCapability, Implementation, InputRequest, InputRequiredResult, InputResponses,
    ProgressNotificationParam, RootsCapabilities, SamplingCapability, UrlElicitationCapability,
};
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestMethod, CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::ErrorData as McpError;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Map, Value};

use crate::protocol::jsonrpc::code;
use crate::protocol::{EXTENSION_ID, RESOURCE_MIME_TYPE};
use crate::server::requests::{
    parse_elicitation, validate_content, ElicitAnswer, ElicitationGate, ElicitationKind, Root, SharedRequests,
    SAMPLING_TIMEOUT,
};

pub(super) type ProgressRoutes = Arc<Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<Value>>>>;

/// The client side of one server: what the host tells it and what it hears back.
#[derive(Clone)]
pub(super) struct HostClient {
    pub server: String,
    /// rmcp progress token -> where that call's progress goes.
    pub progress: ProgressRoutes,
    /// Where list changes and resource updates go.
    pub changes: tokio::sync::broadcast::Sender<ServerChange>,
    /// Who answers elicitation and sampling.
    pub requests: SharedRequests,
    /// What `roots/list` answers.
    pub roots: Arc<Vec<Root>>,
    pub elicitation_timeout: Duration,
    /// This server's elicitations that wait for an answer.
    pub elicitations: ElicitationGate,
}

/// The most `input_required` rounds one request may take (rmcp's and the other SDKs' default):
/// a server that keeps asking does not keep a request alive for ever.
pub(super) const MAX_INPUT_ROUNDS: usize = 10;
/// The most questions one `input_required` result may ask: they are put to the person one
/// after the other, and a result asking thousands would hold a dialog on screen for each.
pub(super) const MAX_INPUT_REQUESTS: usize = 8;

impl HostClient {
    /// Answers what a 2026-07-28 server asked for inside a result (`inputRequests`), each the way
    /// the same request of its own would be answered. A question the host refuses fails the
    /// request; dropping the future withdraws the question being asked.
    pub(super) async fn answer_input(&self, asked: InputRequiredResult) -> Result<InputResponses, McpError> {
        let asked = asked.input_requests.unwrap_or_default();
        if asked.len() > MAX_INPUT_REQUESTS {
            let reason = format!(
                "the server asked {} questions in one result; at most {MAX_INPUT_REQUESTS} are put to the person",
                asked.len()
            );
            tracing::warn!(server = %self.server, "{reason}");
            return Err(McpError::new(ErrorCode(code::DENIED as i32), reason, None));
        }
        let mut answers = InputResponses::new();
        // One at a time: a person answers questions one after the other anyway.
        for (key, request) in asked {
            let answer = match request {
                InputRequest::Elicitation(request) => {
                    to_value(self.elicit(request.params, std::future::pending()).await?)?
                }
                InputRequest::CreateMessage(request) => to_value(self.sample(request.params).await?)?,
                InputRequest::ListRoots(_) => to_value(self.list()?)?,
                _ => return Err(McpError::invalid_params(format!("input request `{key}` of an unknown kind"), None)),
            };
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    /// An elicitation, from the server's request or from an `input_required` result.
    async fn elicit(
        &self,
        request: ElicitRequestParams,
        withdrawn: impl Future<Output = ()>,
    ) -> Result<ElicitResult, McpError> {
        // Refused before anything is parsed or shown: a flood costs the host next to nothing.
        let _slot = match self.elicitations.enter() {
            Ok(slot) => slot,
            Err(reason) => {
                tracing::warn!(server = %self.server, "elicitation refused: {reason}");
                return Err(McpError::new(ErrorCode(code::DENIED as i32), reason, None));
            }
        };
        let params = serde_json::to_value(&request).unwrap_or_default();
        let elicitation = match parse_elicitation(&self.server, &params) {
            Ok(e) => e,
            Err(reason) => {
                tracing::warn!(server = %self.server, "elicitation refused: {reason}");
                return Err(McpError::invalid_params(reason, None));
            }
        };
        let schema = match &elicitation.kind {
            ElicitationKind::Form { schema } => Some(schema.clone()),
            ElicitationKind::Url { .. } => None,
        };
        tracing::info!(server = %self.server, "elicitation: {}", elicitation.message);
        let limit = self.elicitation_timeout;
        let answer = tokio::select! {
            answer = tokio::time::timeout(limit, self.requests.elicit(elicitation)) => match answer {
                Ok(answer) => answer,
                Err(_) => {
                    tracing::warn!(server = %self.server, "elicitation cancelled: no answer within {} s", limit.as_secs());
                    ElicitAnswer::Cancel
                }
            },
            // The server withdrew the request (or the connection ended): stop asking.
            () = withdrawn => {
                tracing::info!(server = %self.server, "elicitation withdrawn");
                ElicitAnswer::Cancel
            }
        };
        if let (ElicitAnswer::Accept(content), Some(schema)) = (&answer, &schema) {
            if let Err(reason) = validate_content(schema, content) {
                tracing::warn!(server = %self.server, "elicitation answer does not match the requested schema: {reason}");
                return Err(McpError::internal_error(
                    format!("the host's answer did not match the requested schema: {reason}"),
                    None,
                ));
            }
        }
        tracing::info!(server = %self.server, action = answer.action(), "elicitation answered");
        let action = match answer {
            ElicitAnswer::Accept(_) => ElicitationAction::Accept,
            ElicitAnswer::Decline => ElicitationAction::Decline,
            ElicitAnswer::Cancel => ElicitationAction::Cancel,
        };
        let mut result = ElicitResult::new(action);
        if let ElicitAnswer::Accept(content) = answer {
            if schema.is_some() {
                result.content = Some(Value::Object(content));
            }
        }
        Ok(result)
    }

    /// A sampling request, from the server's request or from an `input_required` result.
    #[allow(deprecated)]
    async fn sample(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, McpError> {
        if !self.requests.can_sample() {
            return Err(McpError::method_not_found::<CreateMessageRequestMethod>());
        }
        let params = serde_json::to_value(&params).unwrap_or_default();
        let limit = SAMPLING_TIMEOUT;
        let answer = tokio::time::timeout(limit, self.requests.sample(&self.server, params)).await;
        let value = match answer {
            Err(_) => {
                return Err(McpError::internal_error(format!("sampling took longer than {} s", limit.as_secs()), None))
            }
            Ok(Err(e)) => return Err(McpError::new(rmcp::model::ErrorCode(e.code as i32), e.message, e.data)),
            Ok(Ok(value)) => value,
        };
        serde_json::from_value(value).map_err(|e| {
            McpError::internal_error(format!("the sampler's answer is not a CreateMessageResult: {e}"), None)
        })
    }

    /// The roots offered.
    #[allow(deprecated)]
    fn list(&self) -> Result<ListRootsResult, McpError> {
        let roots = json!({"roots": self.roots.iter().map(Root::to_json).collect::<Vec<_>>()});
        serde_json::from_value(roots).map_err(|e| McpError::internal_error(e.to_string(), None))
    }
}

fn to_value(answer: impl serde::Serialize) -> Result<Value, McpError> {
    serde_json::to_value(answer).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// Something the server says changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerChange {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/resources/list_changed`.
    Resources,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
}

impl ClientHandler for HostClient {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(ServerChange::Tools);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(ServerChange::Resources);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.changes.send(ServerChange::ResourceUpdated(params.uri));
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut ui = Map::new();
        ui.insert("mimeTypes".into(), json!([RESOURCE_MIME_TYPE]));
        capabilities.extensions = Some([(EXTENSION_ID.to_owned(), ui)].into_iter().collect());
        #[allow(deprecated)]
        {
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
            if self.requests.can_sample() {
                capabilities.sampling = Some(SamplingCapability::default());
            }
        }
        if self.requests.can_elicit() {
            // Accepted content is validated against the requested schema before it is sent.
            let mut form = FormElicitationCapability::new();
            form.schema_validation = Some(true);
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(form);
            elicitation.url = Some(UrlElicitationCapability::default());
            capabilities.elicitation = Some(elicitation);
        }
        let mut config =
            ClientConfig::new(capabilities, Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")));
        // rmcp offers its LATEST (2026-07-28), the revision that replaced `initialize` (SEP-2567);
        // a client that performs the `initialize` handshake offers the newest revision that has it.
        config.protocol_version = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> std::result::Result<ElicitResult, McpError> {
        // The server withdrew the request, or the connection ended.
        self.elicit(request, context.ct.cancelled_owned()).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> std::result::Result<CreateMessageResult, McpError> {
        self.sample(params).await
    }

    #[allow(deprecated)]
    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> std::result::Result<ListRootsResult, McpError> {
        self.list()
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let route = self.progress.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(route) = route {
            let mut update = json!({"progress": params.progress});
            if let Some(total) = params.total {
                update["total"] = json!(total);
            }
            if let Some(message) = params.message {
                update["message"] = json!(message);
            }
            let _ = route.send(update);
        }
    }

    // Deprecated upstream (SEP-2577), but servers of the current spec still send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::info!(server = %self.server, level = ?params.level, "server log: {}", params.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::BoxFuture;
    use crate::protocol::RpcError;
    use crate::server::requests::{Elicitation, ServerRequests};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the questions put to the person; accepts each.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl ServerRequests for Counting {
        fn elicit(&self, _request: Elicitation) -> BoxFuture<ElicitAnswer> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::ready(ElicitAnswer::Accept(Map::new())))
        }

        fn can_sample(&self) -> bool {
            false
        }

        fn sample(&self, _server: &str, _params: Value) -> BoxFuture<Result<Value, RpcError>> {
            Box::pin(std::future::ready(Err(RpcError::method_not_found("sampling"))))
        }
    }

    fn client(asked: Arc<Counting>) -> HostClient {
        let (changes, _) = tokio::sync::broadcast::channel(4);
        HostClient {
            server: "s".into(),
            progress: Default::default(),
            changes,
            requests: asked,
            roots: Arc::new(Vec::new()),
            elicitation_timeout: Duration::from_secs(5),
            elicitations: ElicitationGate::new(4),
        }
    }

    /// A result asking `n` form questions.
    fn asking(n: usize) -> InputRequiredResult {
        let requests = (0..n)
            .map(|i| {
                let request = json!({"method": "elicitation/create", "params": {"mode": "form", "message": format!("question {i}"),
                    "requestedSchema": {"type": "object", "properties": {}}}});
                (format!("q{i}"), serde_json::from_value(request).unwrap())
            })
            .collect();
        InputRequiredResult::new(Some(requests), Some("state".into()))
    }

    #[tokio::test]
    async fn each_question_of_a_result_is_put_to_the_person_and_answered_under_its_key() {
        let asked = Arc::new(Counting::default());
        let answers = client(asked.clone()).answer_input(asking(2)).await.unwrap();
        assert_eq!(answers.keys().collect::<Vec<_>>(), ["q0", "q1"]);
        assert_eq!(answers["q0"]["action"], "accept");
        assert_eq!(asked.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_result_asking_too_many_questions_is_refused_before_any_is_asked() {
        let asked = Arc::new(Counting::default());
        let refused = client(asked.clone()).answer_input(asking(MAX_INPUT_REQUESTS + 1)).await.unwrap_err();
        assert!(refused.message.contains("at most 8"), "{}", refused.message);
        assert_eq!(asked.0.load(Ordering::SeqCst), 0, "nobody was asked");
        assert!(client(asked).answer_input(asking(MAX_INPUT_REQUESTS)).await.is_ok());
    }
}
