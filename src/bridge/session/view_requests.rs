//! What a View sends: parsing, validation, and one handler per method.

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::{
    Command, InFlight, State, ViewEvent, ViewSession, MAX_DOWNLOAD_BYTES, MAX_VIEW_MESSAGE_BYTES,
    MAX_VIEW_REQUESTS_IN_FLIGHT,
};
use crate::bridge::policy::Decision;
use crate::bridge::server_port::{BoxFuture, CallControl};
use crate::bridge::trace::Direction;
use crate::protocol::jsonrpc::{code, params_object};
use crate::protocol::types::parse_params;
use crate::protocol::{
    methods, negotiate_protocol_version, CallToolParams, CancelledParams, DisplayMode, DisplayModeParams,
    HostCapabilities, HostContext, Implementation, InitializeParams, InitializeResult, LogParams, Message,
    OpenLinkParams, RequestId, RpcError, SandboxGrant, SandboxResourceReadyParams, SizeChangedParams, ToolInfo,
    LATEST_PROTOCOL_VERSION,
};
use crate::sandbox::FRAME_SANDBOX;
use crate::ui_resource::ListedTool;

fn modalities(kinds: &[&str]) -> Map<String, Value> {
    kinds.iter().map(|k| ((*k).to_owned(), json!({}))).collect()
}

/// What `ui/message` accepts, advertised as `hostCapabilities.message` (the host shows a View's
/// message as text) and enforced on every message: one list for both.
pub(super) const MESSAGE_KINDS: &[&str] = &["text"];
/// What `ui/update-model-context` accepts, advertised as `hostCapabilities.updateModelContext`
/// and enforced likewise.
pub(super) const MODEL_CONTEXT_KINDS: &[&str] = &["text", "structuredContent"];

/// The modality (`McpUiSupportedContentBlockModalities` key) of a content block's `type`.
fn modality_of(block_type: &str) -> &str {
    match block_type {
        "resource_link" => "resourceLink",
        other => other,
    }
}

/// The first content block of a kind the host did not advertise for `method`, as the error the
/// View gets (with the clause it breaks).
fn unadvertised(method: &str, capability: &str, accepted: &[&str], content: &[Value]) -> Option<RpcError> {
    let block = content.iter().find(|b| {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
        !accepted.contains(&modality_of(kind))
    })?;
    let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
    Some(RpcError::invalid_params(format!(
        "{method}: content of type `{}` is not accepted: this host advertises hostCapabilities.{capability} = {{{}}} \
         (MCP Apps draft, McpUiSupportedContentBlockModalities: a host accepts the modalities it advertises)",
        crate::consent::one_line_max(kind, 64),
        accepted.join(", ")
    )))
}

/// The spec clause a View breaks with a `ui/initialize` that lacks required params.
pub(super) const INITIALIZE_PARAMS_CLAUSE: &str =
    "MCP Apps 2026-01-26, ui/initialize (McpUiInitializeRequest): params appInfo, appCapabilities and protocolVersion are required";

/// Where the spec says how a View starts.
const HANDSHAKE_CLAUSE: &str = "MCP Apps 2026-01-26, Lifecycle: the View sends the ui/initialize request first; the host answers, then the View sends ui/notifications/initialized";

/// The part of a View's request `_meta` that is forwarded to its server: everything but the
/// progress token (the connection puts its own, unique on that connection, and maps progress
/// back to the View's) and keys under a reserved MCP prefix (`io.modelcontextprotocol/...`:
/// protocol version, client info, capabilities), which are the host's to state, not the View's.
fn forwardable_meta(meta: Map<String, Value>) -> Option<Map<String, Value>> {
    let reserved = |key: &str| {
        key.split_once('/')
            .is_some_and(|(prefix, _)| prefix.split('.').any(|l| l == "modelcontextprotocol" || l == "mcp"))
    };
    let kept: Map<String, Value> = meta.into_iter().filter(|(k, _)| k != "progressToken" && !reserved(k)).collect();
    (!kept.is_empty()).then_some(kept)
}

/// The start of a message that was refused, for the log and the trace.
fn shown(text: &str) -> String {
    text[..text.floor_char_boundary(200)].to_owned()
}

fn is_error(reason: &str) -> Value {
    json!({"isError": true, "message": reason})
}

impl ViewSession {
    pub(super) fn on_view_text(&mut self, text: String) {
        if text.len() > MAX_VIEW_MESSAGE_BYTES {
            let reason = format!("message of {} bytes exceeds the {MAX_VIEW_MESSAGE_BYTES} byte limit", text.len());
            self.reject(reason, Value::Null);
            return;
        }
        let msg = match Message::parse(&text) {
            Ok(msg) => msg,
            Err(e) => {
                // An older handshake's message (MCP-UI's `{type: "ui-lifecycle-iframe-ready"}`).
                let kind = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
                if let Some(kind) = kind {
                    self.not_started(
                        &format!("a {{\"type\": {kind:?}}} message"),
                        "that is an older UI protocol's message (MCP-UI), whose host speaks first",
                    );
                }
                self.reject(format!("not JSON-RPC 2.0: {e}"), Value::String(shown(&text)));
                return;
            }
        };
        self.on_view_message(msg);
    }

    /// Several messages the proxy sent at once (what the View posted in one burst): a JSON
    /// array of their texts, each handled as if it had come alone, so a message the host
    /// refuses is refused alone. The array is bounded like one message.
    pub(super) fn on_view_batch(&mut self, text: String) {
        if text.len() > MAX_VIEW_MESSAGE_BYTES {
            let reason = format!("batch of {} bytes exceeds the {MAX_VIEW_MESSAGE_BYTES} byte limit", text.len());
            self.reject(reason, Value::Null);
            return;
        }
        match serde_json::from_str::<Vec<String>>(&text) {
            Ok(texts) => texts.into_iter().for_each(|text| self.on_view_text(text)),
            Err(e) => self.reject(format!("not a batch of messages: {e}"), Value::String(shown(&text))),
        }
    }

    fn on_view_message(&mut self, msg: Message) {
        let is_sandbox =
            msg.method().is_some_and(|m| m.starts_with(methods::SANDBOX_PREFIX) || m == methods::SANDBOX_READY_LEGACY);
        let dir = if is_sandbox { Direction::ProxyToHost } else { Direction::ViewToHost };
        if self.trace.is_recording() {
            self.trace.record(Some(self.id()), dir, &msg.to_value());
        }
        match msg {
            Message::Request { id, method, params } => self.on_request(id, method, params),
            Message::Notification { method, params } => self.on_notification(&method, params),
            Message::Response { id, result } => self.on_response(id, Ok(result)),
            Message::Error { id: Some(id), error } => self.on_response(id, Err(error)),
            Message::Error { id: None, error } => {
                tracing::warn!(view = %self.id(), "View reported an error without id: {error}");
            }
        }
    }

    fn on_request(&mut self, id: RequestId, method: String, params: Option<Value>) {
        if self.in_flight.contains_key(&id) {
            // Answering would give two responses the same id; the first request keeps it.
            self.reject(format!("request id {id} reused while still in flight ({method})"), id.to_value());
            return;
        }
        if self.in_flight.len() >= MAX_VIEW_REQUESTS_IN_FLIGHT {
            // Not forwarded, not remembered: the View waits for answers before it asks again.
            let reason = format!(
                "{method}: this View already has {MAX_VIEW_REQUESTS_IN_FLIGHT} requests in flight; wait for their answers"
            );
            tracing::debug!(view = %self.id(), "{reason:?}");
            return self.respond(id, Err(RpcError::new(code::UNAVAILABLE, reason)));
        }
        let progress_token = params.as_ref().and_then(|p| p.get("_meta")).and_then(|m| m.get("progressToken")).cloned();
        self.in_flight.insert(id.clone(), InFlight { cancel: None, progress_token, cancelled: false });
        // While the host waits for its teardown answer (bounded by the teardown's timeout) the
        // View may still ask: an App saves what it holds before it answers. Only a second
        // handshake makes no sense then.
        if self.state == State::TearingDown && method == methods::INITIALIZE {
            return self.respond(id, Err(RpcError::denied("ui/initialize while the View is being torn down")));
        }
        if self.state == State::Loading && method != methods::PING {
            return self.respond(id, Err(RpcError::denied(format!("{method} before the sandbox proxy was ready"))));
        }
        let caps = self.config.policy.capabilities();
        let p = params.as_ref();
        if method == "initialize" {
            self.not_started(
                "the request `initialize`",
                "that is an MCP client's handshake with a server, not an App's with its host",
            );
        }
        let outcome = match method.as_str() {
            methods::INITIALIZE => self.on_initialize(p),
            methods::PING => Ok(json!({})),
            methods::TOOLS_CALL => return self.forward_tools_call(id, p),
            methods::RESOURCES_READ
            | methods::RESOURCES_LIST
            | methods::RESOURCE_TEMPLATES_LIST
            | methods::PROMPTS_LIST => {
                return self.forward_request(id, &method, p);
            }
            methods::REQUEST_DISPLAY_MODE => return self.on_request_display_mode(id, p),
            methods::OPEN_LINK if caps.open_links => return self.on_open_link(id, p),
            methods::MESSAGE if caps.message => return self.on_message(id, p),
            methods::UPDATE_MODEL_CONTEXT if caps.update_model_context => self.on_update_model_context(p),
            methods::DOWNLOAD_FILE if caps.download_file => return self.on_download_file(id, p),
            _ => Err(RpcError::method_not_found(&method)),
        };
        if let Err(e) = &outcome {
            tracing::info!(view = %self.id(), "{method:?} -> error: {:?}", e.message);
        }
        self.respond(id, outcome);
    }

    fn on_initialize(&mut self, params: Option<&Value>) -> Result<Value, RpcError> {
        let raw = params.cloned().unwrap_or(json!({}));
        let params: InitializeParams = match serde_json::from_value(raw.clone()) {
            Ok(p) => p,
            Err(e) => return Err(self.malformed_initialize(&raw, &e)),
        };
        match self.state {
            State::Initializing | State::Ready => {
                // React StrictMode mounts twice; the SDK host answers again, and so do we.
                tracing::info!(view = %self.id(), "second ui/initialize; answering again");
            }
            State::ResourceSent => self.state = State::Initializing,
            State::Loading | State::TearingDown => unreachable!("checked by on_request"),
        }
        self.app = Some((params.protocol_version.clone(), params.app_info.clone(), params.app_capabilities.clone()));
        let result = InitializeResult {
            protocol_version: negotiate_protocol_version(&params.protocol_version).to_owned(),
            host_info: self.config.host_info.clone(),
            host_capabilities: self.capabilities(),
            host_context: HostContext {
                tool_info: Some(ToolInfo { id: None, tool: self.config.tool.clone() }),
                ..self.config.host_context.clone()
            },
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// A `ui/initialize` without the params the spec requires is answered with the error, as it
    /// must be; but hosts built on the SDK's `AppBridge` go on when the View then sends
    /// `initialized` (the App never learns of the error), and Apps in the wild rely on that. So
    /// the session moves on with defaults in place of what is missing, and says so once: a
    /// warning in the log and a `spec` diagnostic in the trace, which `check` and preview show.
    fn malformed_initialize(&mut self, raw: &Value, e: &serde_json::Error) -> RpcError {
        let error = RpcError::invalid_params(format!("ui/initialize: {e}"));
        if self.state != State::ResourceSent {
            // A second malformed one (a remount): the first already set the defaults and warned.
            return error;
        }
        self.state = State::Initializing;
        let protocol_version =
            raw.get("protocolVersion").and_then(Value::as_str).unwrap_or(LATEST_PROTOCOL_VERSION).to_owned();
        let app_info = raw
            .get("appInfo")
            .and_then(|a| serde_json::from_value::<Implementation>(a.clone()).ok())
            .unwrap_or_else(|| Implementation::new("unknown", "0"));
        let app_capabilities = raw.get("appCapabilities").filter(|c| c.is_object()).cloned().unwrap_or(json!({}));
        self.app = Some((protocol_version, app_info, app_capabilities));
        let message = format!(
            "ui/initialize is malformed ({e}); answered with an error, but the View's initialized is accepted with defaults, as hosts built on the SDK's AppBridge do"
        );
        // `{:?}`: serde's message can quote View-controlled text.
        tracing::warn!(view = %self.id(), "spec warning: {message:?} [{INITIALIZE_PARAMS_CLAUSE}]");
        self.trace.record(
            Some(self.id()),
            Direction::Diagnostic,
            &json!({"kind": "spec", "detail": {"message": message, "clause": INITIALIZE_PARAMS_CLAUSE}}),
        );
        error
    }

    /// Exactly what this session implements, given its policy.
    pub(super) fn capabilities(&self) -> HostCapabilities {
        let caps = self.config.policy.capabilities();
        let list_changed = || {
            let mut m = Map::new();
            if self.config.forwards_list_changed {
                m.insert("listChanged".into(), json!(true));
            }
            m
        };
        HostCapabilities {
            server_tools: Some(list_changed()),
            server_resources: Some(list_changed()),
            logging: Some(Map::new()),
            open_links: caps.open_links.then(Map::new),
            download_file: caps.download_file.then(Map::new),
            message: caps.message.then(|| modalities(MESSAGE_KINDS)),
            update_model_context: caps.update_model_context.then(|| modalities(MODEL_CONTEXT_KINDS)),
            sandbox: Some(SandboxGrant {
                permissions: self.config.granted_permissions.clone(),
                csp: Some(self.config.granted_csp.clone()),
            }),
            ..Default::default()
        }
    }

    fn on_request_display_mode(&mut self, id: RequestId, params: Option<&Value>) {
        let requested = match parse_params::<DisplayModeParams>(methods::REQUEST_DISPLAY_MODE, params) {
            Ok(p) => p.mode,
            Err(e) => return self.respond(id, Err(e)),
        };
        let current = self.config.host_context.display_mode.unwrap_or_default();
        let declared = self
            .app
            .as_ref()
            .and_then(|(_, _, caps)| caps.get("availableDisplayModes"))
            .and_then(|m| serde_json::from_value::<Vec<DisplayMode>>(m.clone()).ok());
        let offered = self.config.policy.capabilities().display_modes;
        // The spec: never switch into a mode the View did not declare (when it declared any).
        let allowed = offered.contains(&requested) && declared.as_ref().is_none_or(|d| d.contains(&requested));
        if requested == current || !allowed {
            if !allowed {
                tracing::info!(view = %self.id(), "display mode {requested:?} refused (offered {offered:?}, declared {declared:?}); staying {current:?}");
            }
            return self.respond(id, Ok(json!({"mode": current})));
        }
        let decide = self.config.policy.request_display_mode(&self.config.info(), current, requested);
        let tx = self.self_tx.clone();
        self.mode_asked += 1;
        let seq = self.mode_asked;
        tokio::spawn(async move {
            let mode = decide.await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::DisplayModeDecided { id, mode, seq });
            }
        });
    }

    fn decided(&self, id: RequestId, method: &'static str, decision: BoxFuture<Decision>) {
        self.complete_later(
            id,
            method,
            false,
            Box::pin(async move {
                Ok(match decision.await {
                    Decision::Allowed => json!({}),
                    Decision::Denied(reason) => is_error(&reason),
                })
            }),
        );
    }

    fn on_open_link(&mut self, id: RequestId, params: Option<&Value>) {
        let url = match parse_params::<OpenLinkParams>(methods::OPEN_LINK, params) {
            Ok(p) => p.url,
            Err(e) => return self.respond(id, Err(e)),
        };
        let parsed = match url::Url::parse(&url) {
            Ok(u) => u,
            Err(e) => {
                return self
                    .respond(id, Err(RpcError::invalid_params(format!("ui/open-link: `url` is not a URL: {e}"))))
            }
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            tracing::warn!(view = %self.id(), "ui/open-link refused for scheme {}", parsed.scheme());
            return self.respond(id, Ok(is_error("only http and https links can be opened")));
        }
        let decision = self.config.policy.open_link(&self.config.info(), &parsed);
        self.decided(id, methods::OPEN_LINK, decision);
    }

    fn on_message(&mut self, id: RequestId, params: Option<&Value>) {
        let p = match params_object(params) {
            Ok(p) => p,
            Err(e) => return self.respond(id, Err(e)),
        };
        let role = p.get("role").and_then(Value::as_str).unwrap_or_default();
        if role != "user" {
            return self.respond(id, Err(RpcError::invalid_params("ui/message: `role` must be \"user\"")));
        }
        let Some(content) = p
            .get("content")
            .and_then(Value::as_array)
            .filter(|c| c.iter().all(|b| b.get("type").is_some_and(Value::is_string)))
        else {
            return self.respond(
                id,
                Err(RpcError::invalid_params("ui/message: `content` must be an array of content blocks with a `type`")),
            );
        };
        if let Some(e) = unadvertised(methods::MESSAGE, "message", MESSAGE_KINDS, content) {
            return self.respond(id, Err(e));
        }
        let decision = self.config.policy.message(&self.config.info(), role, content);
        self.decided(id, methods::MESSAGE, decision);
    }

    fn on_update_model_context(&mut self, params: Option<&Value>) -> Result<Value, RpcError> {
        let p = params_object(params)?;
        if p.get("content").is_some_and(|c| !c.is_array()) {
            return Err(RpcError::invalid_params("ui/update-model-context: `content` must be an array"));
        }
        if p.get("structuredContent").is_some_and(|c| !c.is_object()) {
            return Err(RpcError::invalid_params("ui/update-model-context: `structuredContent` must be an object"));
        }
        let content = p.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if let Some(e) = unadvertised(methods::UPDATE_MODEL_CONTEXT, "updateModelContext", MODEL_CONTEXT_KINDS, content)
        {
            return Err(e);
        }
        if p.get("structuredContent").is_some() && !MODEL_CONTEXT_KINDS.contains(&"structuredContent") {
            return Err(RpcError::invalid_params(
                "ui/update-model-context: `structuredContent` is not accepted: not in hostCapabilities.updateModelContext",
            ));
        }
        let empty = p.get("content").and_then(Value::as_array).is_none_or(Vec::is_empty)
            && p.get("structuredContent").and_then(Value::as_object).is_none_or(Map::is_empty);
        let context = (!empty).then(|| {
            let mut ctx = Map::new();
            for key in ["content", "structuredContent"] {
                if let Some(v) = p.get(key) {
                    ctx.insert(key.into(), v.clone());
                }
            }
            Value::Object(ctx)
        });
        self.config.policy.update_model_context(&self.config.info(), context.as_ref());
        self.emit(ViewEvent::ModelContext { context });
        Ok(json!({}))
    }

    fn on_download_file(&mut self, id: RequestId, params: Option<&Value>) {
        let p = match params_object(params) {
            Ok(p) => p,
            Err(e) => return self.respond(id, Err(e)),
        };
        let Some(contents) = p.get("contents").and_then(Value::as_array).filter(|c| !c.is_empty()) else {
            return self
                .respond(id, Err(RpcError::invalid_params("ui/download-file: `contents` must be a non-empty array")));
        };
        let mut total = 0usize;
        for block in contents {
            match block.get("type").and_then(Value::as_str) {
                Some("resource") => {
                    let r = &block["resource"];
                    if !r.get("uri").is_some_and(Value::is_string) {
                        return self.respond(
                            id,
                            Err(RpcError::invalid_params("ui/download-file: an embedded resource needs a `uri`")),
                        );
                    }
                    total += r.get("text").and_then(Value::as_str).map_or(0, str::len);
                    total += r.get("blob").and_then(Value::as_str).map_or(0, |b| b.len() / 4 * 3);
                }
                Some("resource_link") if block.get("uri").is_some_and(Value::is_string) => {}
                _ => {
                    return self.respond(
                        id,
                        Err(RpcError::invalid_params(
                            "ui/download-file: each item must be a `resource` or a `resource_link` with a `uri`",
                        )),
                    );
                }
            }
        }
        if total > MAX_DOWNLOAD_BYTES {
            return self.respond(
                id,
                Ok(is_error(&format!("the download is {total} bytes; the limit is {MAX_DOWNLOAD_BYTES}"))),
            );
        }
        let decision = self.config.policy.download_file(&self.config.info(), contents);
        self.decided(id, methods::DOWNLOAD_FILE, decision);
    }

    fn forward_tools_call(&mut self, id: RequestId, params: Option<&Value>) {
        let CallToolParams { name, arguments, task, meta } = match parse_params(methods::TOOLS_CALL, params) {
            Ok(p) => p,
            Err(e) => return self.respond(id, Err(e)),
        };
        if task.is_some() {
            return self.respond(id, Err(RpcError::invalid_params("tools/call: tasks are not supported in MCP Apps")));
        }
        let Some(ListedTool { definition: tool, ui, .. }) = self.server.listed_tool(&name) else {
            let e = RpcError::invalid_params(format!("tools/call: this View's server has no tool `{name}`"));
            tracing::warn!(view = %self.id(), "{:?}", e.message);
            return self.respond(id, Err(e));
        };
        if !ui.map(|ui| ui.visibility.app).unwrap_or(false) {
            let e = RpcError::denied(format!(
                "tools/call: tool `{name}` is not callable from Views (its visibility lacks \"app\")"
            ));
            tracing::warn!(view = %self.id(), "{:?}", e.message);
            return self.respond(id, Err(e));
        }
        tracing::info!(view = %self.id(), "View calls tool `{name}`");
        let mut traced = json!({"name": name});
        if let Some(a) = &arguments {
            traced["arguments"] = Value::Object(a.clone());
        }
        let meta = meta.and_then(forwardable_meta);
        if let Some(m) = &meta {
            traced["_meta"] = Value::Object(m.clone());
        }
        let (trace, view_id) = (self.trace.clone(), self.id().to_owned());

        let (cancel_tx, cancel_rx) = oneshot::channel();
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<Value>();
        if let Some(f) = self.in_flight.get_mut(&id) {
            f.cancel = Some(cancel_tx);
        }
        let allow = self.config.policy.allow_app_tool_call(&self.config.info(), &tool);
        let server = self.server.clone();
        let control = CallControl { progress: Some(progress_tx), cancelled: Some(cancel_rx), meta };
        let session = self.self_tx.clone();
        // One task relays progress and then the answer, so progress can never arrive after it.
        tokio::spawn(async move {
            let relay = |params: Value| {
                if let Some(tx) = session.upgrade() {
                    let _ = tx.send(Command::Progress { id: id.clone(), params });
                }
            };
            let call = async {
                if !allow.await {
                    return (Err(RpcError::denied(format!("tools/call: the user did not allow `{name}`"))), false);
                }
                // Traced only once it really goes to the server.
                trace.server_request(Some(&view_id), methods::TOOLS_CALL, &traced);
                (server.call_tool(name, arguments, control).await, true)
            };
            tokio::pin!(call);
            let (outcome, traced) = loop {
                tokio::select! {
                    biased;
                    Some(params) = progress_rx.recv() => relay(params),
                    done = &mut call => break done,
                }
            };
            while let Ok(params) = progress_rx.try_recv() {
                relay(params);
            }
            if let Some(tx) = session.upgrade() {
                let _ = tx.send(Command::Completed { id, method: methods::TOOLS_CALL, outcome, traced });
            }
        });
    }

    fn forward_request(&mut self, id: RequestId, method: &str, params: Option<&Value>) {
        let params = match params_object(params) {
            Ok(p) => p,
            Err(e) => return self.respond(id, Err(e)),
        };
        if method == methods::RESOURCES_READ && !params.get("uri").is_some_and(Value::is_string) {
            return self.respond(id, Err(RpcError::invalid_params("resources/read: `uri` must be a string")));
        }
        let method: &'static str = match method {
            methods::RESOURCES_READ => methods::RESOURCES_READ,
            methods::RESOURCES_LIST => methods::RESOURCES_LIST,
            methods::RESOURCE_TEMPLATES_LIST => methods::RESOURCE_TEMPLATES_LIST,
            _ => methods::PROMPTS_LIST,
        };
        let mut forwarded = params.clone();
        // The View's progress token means nothing to the server; it is the View's, not ours.
        forwarded.remove("_meta");
        // Answers to a server's questions (MCP 2026-07-28 `input_required`) are the person's,
        // given through the host: a View cannot answer for them.
        forwarded.remove("inputResponses");
        forwarded.remove("requestState");
        self.trace.server_request(Some(self.id()), method, &Value::Object(forwarded.clone()));
        let fut = self.server.request(method, Value::Object(forwarded));
        self.complete_later(id, method, true, fut);
    }

    fn on_notification(&mut self, method: &str, params: Option<Value>) {
        match method {
            methods::SANDBOX_PROXY_READY | methods::SANDBOX_READY_LEGACY => {
                if self.state != State::Loading {
                    // The View shares the proxy's origin and can forge this; only the first counts.
                    self.reject(format!("{method} after the resource was sent"), Value::Null);
                    return;
                }
                self.state = State::ResourceSent;
                // Sent once (a second ready is refused above): the session keeps no copy.
                let params = SandboxResourceReadyParams {
                    html: std::mem::take(&mut self.config.html),
                    sandbox: Some(FRAME_SANDBOX.to_owned()),
                    csp: Some(self.config.granted_csp.clone()),
                    permissions: self.config.granted_permissions.clone(),
                };
                let mut params = serde_json::to_value(params).unwrap_or_default();
                if self.config.openai_shim {
                    // Between this host and its own proxy only (other proxies ignore it): write
                    // the `window.openai` shim into the View's document.
                    params["openaiShim"] = json!(true);
                }
                let ready = Message::notification(methods::SANDBOX_RESOURCE_READY, params.clone());
                match &self.config.document_url {
                    None => self.post(Direction::HostToProxy, &ready),
                    Some(url) => {
                        // Between this host and its own proxy: the frame loads the document
                        // from its origin (streamed, with the View's CSP header) instead of
                        // the proxy writing it. Traced as what it amounts to, the View's HTML
                        // (when the host gave the session a copy for the trace).
                        self.trace.record(Some(self.id()), Direction::HostToProxy, &ready.to_value());
                        params["html"] = json!("");
                        params["src"] = json!(url);
                        self.post_untraced(&Message::notification(methods::SANDBOX_RESOURCE_READY, params));
                    }
                }
                self.emit(ViewEvent::ResourceSent);
            }
            m if m.starts_with(methods::SANDBOX_PREFIX) => {
                self.reject(format!("{m} is not a message a sandbox sends"), Value::Null);
            }
            methods::INITIALIZED => match self.state {
                State::Initializing => self.on_initialized(),
                State::Ready | State::TearingDown => {
                    self.reject("repeated ui/notifications/initialized".into(), Value::Null)
                }
                State::Loading | State::ResourceSent => {
                    self.not_started(
                        "`ui/notifications/initialized`",
                        "it comes after the host's answer to ui/initialize, which the View never asked for",
                    );
                    self.reject("ui/notifications/initialized before ui/initialize".into(), Value::Null)
                }
            },
            methods::SIZE_CHANGED | methods::SIZE_CHANGE_LEGACY => {
                match serde_json::from_value::<SizeChangedParams>(params.unwrap_or(json!({}))) {
                    Ok(size)
                        if size.width.is_none_or(|w| w.is_finite() && w >= 0.0)
                            && size.height.is_none_or(|h| h.is_finite() && h >= 0.0) =>
                    {
                        self.emit(ViewEvent::SizeChanged { width: size.width, height: size.height });
                    }
                    _ => self.reject(format!("{method}: width/height must be non-negative numbers"), Value::Null),
                }
            }
            methods::LOG_MESSAGE => match parse_params::<LogParams>(method, params.as_ref()) {
                Ok(LogParams { level, logger, data, .. }) => {
                    // At debug: a View can log thousands of lines a second, and they reach the person
                    // (the developer panel, `check`) as events anyway.
                    tracing::debug!(view = %self.id(), level = ?level, logger = ?logger, "View log: {data}");
                    self.emit(ViewEvent::Log { level, logger, data });
                }
                Err(e) => self.reject(e.message, Value::Null),
            },
            methods::REQUEST_TEARDOWN => self.emit(ViewEvent::TeardownRequested),
            methods::CANCELLED => {
                let parsed =
                    parse_params::<CancelledParams>(method, params.as_ref()).ok().and_then(
                        |p| match Message::from_value(&json!({"jsonrpc": "2.0", "id": p.request_id, "result": {}})) {
                            Ok(Message::Response { id, .. }) => Some((id, p.reason)),
                            _ => None,
                        },
                    );
                let Some((id, reason)) = parsed else {
                    return self.reject("notifications/cancelled without a valid requestId".into(), Value::Null);
                };
                match self.in_flight.get_mut(&id) {
                    Some(f) => {
                        f.cancelled = true;
                        if let Some(cancel) = f.cancel.take() {
                            let _ = cancel.send(reason);
                        }
                        tracing::info!(view = %self.id(), "View cancelled request {id}");
                    }
                    None => tracing::debug!(view = %self.id(), "cancel for request {id}, which is not in flight"),
                }
            }
            methods::TOOLS_LIST_CHANGED => self.emit(ViewEvent::ViewToolsChanged),
            methods::PROGRESS => tracing::debug!(view = %self.id(), "progress from View"),
            other => {
                self.not_started(
                    &format!("the notification `{other}`"),
                    "that is not an MCP Apps message: the View seems to wait for the host to begin",
                );
                tracing::debug!(view = %self.id(), "ignoring unknown notification {other}")
            }
        }
    }

    /// A View that has not started (its resource is in, no `ui/initialize` came) sent `sent`
    /// instead: said once for each kind, in the log, the trace (a `handshake` diagnostic that
    /// `check` and preview show) and to the host, with what the spec expects.
    fn not_started(&mut self, sent: &str, why: &str) {
        if self.state != State::ResourceSent
            || self.not_started.len() >= 8
            || self.not_started.iter().any(|s| s == sent)
        {
            return;
        }
        self.not_started.push(sent.to_owned());
        // `sent` quotes a method name the View chose: shown escaped, one line.
        let sent = crate::consent::one_line_max(sent, 120);
        let message = format!(
            "The View sent {sent} instead of starting its handshake: {why}. An MCP Apps View starts by sending the ui/initialize request."
        );
        tracing::warn!(view = %self.id(), "the View does not start: {message:?}");
        self.trace.record(
            Some(self.id()),
            Direction::Diagnostic,
            &json!({"kind": "handshake", "detail": {"message": message, "clause": HANDSHAKE_CLAUSE}}),
        );
        self.emit(ViewEvent::NotStarted { message });
    }
}
