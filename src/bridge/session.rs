use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::server_port::ServerPort;
use super::trace::{Direction, Trace};
use crate::protocol::jsonrpc::{code, params_object};
use crate::protocol::{
    methods, negotiate_protocol_version, DisplayMode, HostCapabilities, HostContext,
    Implementation, InitializeParams, InitializeResult, Message, RequestId, ResourceCsp,
    ResourcePermissions, RpcError, SandboxResourceReadyParams, SizeChangedParams, ToolInfo,
};
use crate::sandbox::FRAME_SANDBOX;
use crate::ui_resource::tool_ui;

/// Identifies a View within one host.
pub type ViewId = String;

/// Largest message a View may send; anything bigger is dropped unread.
pub const MAX_VIEW_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Everything a session needs to know about its View up front.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ViewConfig {
    /// The View's id (also used in the trace).
    pub id: ViewId,
    /// The definition of the tool whose call this View renders (must include `inputSchema`).
    pub tool: Value,
    /// The View's HTML.
    pub html: String,
    /// The CSP origins really granted (echoed to the proxy and in `hostCapabilities.sandbox`).
    pub granted_csp: ResourceCsp,
    /// The permissions really granted.
    pub granted_permissions: Option<ResourcePermissions>,
    /// This host's name and version.
    pub host_info: Implementation,
    /// Host context at start (`toolInfo` is filled in by the session).
    pub host_context: HostContext,
    /// How long to wait for the View's answer to `ui/resource-teardown`.
    pub teardown_timeout: Duration,
}

impl ViewConfig {
    /// A config with this host's defaults.
    pub fn new(id: impl Into<ViewId>, tool: Value, html: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            tool,
            html: html.into(),
            granted_csp: ResourceCsp::default(),
            granted_permissions: None,
            host_info: Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")),
            host_context: HostContext::default(),
            teardown_timeout: Duration::from_secs(3),
        }
    }
}

/// What a session produces.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewOutput {
    /// JSON text to post into the View's proxy frame.
    Post(String),
    /// Something the embedding host should know or act on.
    Event(ViewEvent),
}

/// Things that happen to a View, for the host around the bridge.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ViewEvent {
    /// The proxy is up and the resource was sent to it.
    ResourceSent,
    /// The View completed the handshake.
    Initialized {
        /// The version the View asked for.
        protocol_version: String,
        /// The View's name and version.
        app_info: Implementation,
    },
    /// `tool-input` reached the View.
    ToolInputDelivered,
    /// `tool-result` reached the View.
    ToolResultDelivered,
    /// `tool-cancelled` reached the View.
    ToolCancelledDelivered {
        /// Why.
        reason: Option<String>,
    },
    /// The View's content size changed (px).
    SizeChanged {
        /// New width, if reported.
        width: Option<f64>,
        /// New height, if reported.
        height: Option<f64>,
    },
    /// The View logged something (`notifications/message`).
    Log {
        /// MCP logging level.
        level: String,
        /// Logger name.
        logger: Option<String>,
        /// Payload.
        data: Value,
    },
    /// The View asked to be closed.
    TeardownRequested,
    /// A message was dropped; the reason is for the log.
    Rejected {
        /// Why.
        reason: String,
    },
    /// The session ended; no more output follows.
    Closed,
}

/// How a teardown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeardownOutcome {
    /// The View answered `ui/resource-teardown`.
    Answered,
    /// The View did not answer in time; it is unmounted anyway.
    TimedOut,
    /// The View never initialized, so nothing could be sent to it.
    NotInitialized,
}

enum Command {
    FromView(String),
    ToolInput(Map<String, Value>),
    ToolResult(Value),
    ToolCancelled(Option<String>),
    Teardown(oneshot::Sender<TeardownOutcome>),
    TeardownTimeout,
    Completed {
        id: RequestId,
        method: &'static str,
        outcome: Result<Value, RpcError>,
    },
}

/// A handle to a running session. Cheap to clone; the session ends after teardown.
#[derive(Debug, Clone)]
pub struct ViewHandle {
    id: ViewId,
    tx: mpsc::UnboundedSender<Command>,
}

impl ViewHandle {
    /// The View's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Hands the session a message that arrived from the View's frame (JSON text).
    pub fn from_view(&self, text: String) {
        let _ = self.tx.send(Command::FromView(text));
    }

    /// The complete tool arguments (sent once, after `initialized`).
    pub fn tool_input(&self, arguments: Map<String, Value>) {
        let _ = self.tx.send(Command::ToolInput(arguments));
    }

    /// The tool's `CallToolResult` (sent after the tool input).
    pub fn tool_result(&self, result: Value) {
        let _ = self.tx.send(Command::ToolResult(result));
    }

    /// The tool run failed or was cancelled.
    pub fn tool_cancelled(&self, reason: Option<String>) {
        let _ = self.tx.send(Command::ToolCancelled(reason));
    }

    /// Runs the graceful teardown and waits for it (bounded by the config's timeout).
    pub async fn teardown(&self) -> TeardownOutcome {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Teardown(tx)).is_err() {
            return TeardownOutcome::NotInitialized;
        }
        rx.await.unwrap_or(TeardownOutcome::NotInitialized)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for `sandbox-proxy-ready`.
    Loading,
    /// The HTML is in the proxy; waiting for `ui/initialize`.
    ResourceSent,
    /// `ui/initialize` answered; waiting for `initialized`.
    Initializing,
    /// Handshake complete.
    Ready,
    /// `ui/resource-teardown` sent.
    TearingDown,
}

/// The MCP Apps state machine for one View. Create it with [`ViewSession::spawn`].
pub struct ViewSession {
    config: ViewConfig,
    state: State,
    server: Arc<dyn ServerPort>,
    out: mpsc::UnboundedSender<(ViewId, ViewOutput)>,
    trace: Trace,
    self_tx: mpsc::WeakUnboundedSender<Command>,
    /// Host -> View messages held until `initialized`.
    queue: Vec<Message>,
    tool_input_queued: bool,
    /// A result or cancellation that arrived before the tool input: it must not overtake it.
    held_outcome: Option<Message>,
    /// Ids of View requests still being answered (a reused id is refused).
    in_flight: HashSet<RequestId>,
    next_host_id: i64,
    pending_teardown: Option<(RequestId, oneshot::Sender<TeardownOutcome>)>,
    waiting_host_requests: HashMap<RequestId, &'static str>,
    app_info: Option<(String, Implementation)>,
    finished: bool,
}

impl ViewSession {
    /// Starts a session on the current tokio runtime and returns its handle.
    ///
    /// Output for the View and events for the host go to `out`, tagged with the View's id.
    pub fn spawn(
        config: ViewConfig,
        server: Arc<dyn ServerPort>,
        out: mpsc::UnboundedSender<(ViewId, ViewOutput)>,
        trace: Trace,
    ) -> ViewHandle {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let handle = ViewHandle {
            id: config.id.clone(),
            tx: tx.clone(),
        };
        let mut session = ViewSession {
            config,
            state: State::Loading,
            server,
            out,
            trace,
            self_tx: tx.downgrade(),
            queue: Vec::new(),
            tool_input_queued: false,
            held_outcome: None,
            in_flight: HashSet::new(),
            next_host_id: 1,
            pending_teardown: None,
            waiting_host_requests: HashMap::new(),
            app_info: None,
            finished: false,
        };
        drop(tx);
        tokio::spawn(async move {
            while let Some(input) = rx.recv().await {
                session.handle(input);
                if session.finished {
                    break;
                }
            }
            session.emit(ViewEvent::Closed);
        });
        handle
    }

    fn id(&self) -> &str {
        &self.config.id
    }

    fn emit(&self, event: ViewEvent) {
        let _ = self
            .out
            .send((self.config.id.clone(), ViewOutput::Event(event)));
    }

    fn reject(&self, reason: String, data: Value) {
        tracing::warn!(view = %self.id(), "dropped View message: {reason}");
        self.trace.record(
            Some(self.id()),
            Direction::Rejected,
            &json!({"reason": reason, "data": data}),
        );
        self.emit(ViewEvent::Rejected { reason });
    }

    /// Posts a message into the frame now (responses, and everything after `initialized`).
    fn post(&self, dir: Direction, msg: &Message) {
        let value = msg.to_value();
        self.trace.record(Some(self.id()), dir, &value);
        let _ = self
            .out
            .send((self.config.id.clone(), ViewOutput::Post(value.to_string())));
    }

    /// Sends a host -> View request or notification, or queues it until `initialized`.
    fn send_or_queue(&mut self, msg: Message) {
        if self.state == State::Ready {
            self.deliver(msg);
        } else {
            self.queue.push(msg);
        }
    }

    fn deliver(&self, msg: Message) {
        self.post(Direction::HostToView, &msg);
        match msg.method() {
            Some(methods::TOOL_INPUT) => self.emit(ViewEvent::ToolInputDelivered),
            Some(methods::TOOL_RESULT) => self.emit(ViewEvent::ToolResultDelivered),
            Some(methods::TOOL_CANCELLED) => {
                let reason = match &msg {
                    Message::Notification {
                        params: Some(p), ..
                    } => p.get("reason").and_then(Value::as_str).map(str::to_owned),
                    _ => None,
                };
                self.emit(ViewEvent::ToolCancelledDelivered { reason });
            }
            _ => {}
        }
    }

    fn respond(&mut self, id: RequestId, outcome: Result<Value, RpcError>) {
        self.in_flight.remove(&id);
        let msg = match outcome {
            Ok(result) => Message::Response { id, result },
            Err(error) => Message::Error {
                id: Some(id),
                error,
            },
        };
        self.post(Direction::HostToView, &msg);
    }

    /// Handles one input; sets `finished` when the session is over.
    fn handle(&mut self, input: Command) {
        match input {
            Command::FromView(text) => self.on_view_text(text),
            Command::ToolInput(arguments) => {
                if self.tool_input_queued {
                    tracing::warn!(view = %self.id(), "tool input already sent; ignoring a second one");
                } else {
                    self.tool_input_queued = true;
                    self.send_or_queue(Message::notification(
                        methods::TOOL_INPUT,
                        json!({"arguments": arguments}),
                    ));
                    if let Some(outcome) = self.held_outcome.take() {
                        self.send_or_queue(outcome);
                    }
                }
            }
            Command::ToolResult(result) => {
                self.tool_outcome(Message::notification(methods::TOOL_RESULT, result))
            }
            Command::ToolCancelled(reason) => {
                let params = match reason {
                    Some(r) => json!({"reason": r}),
                    None => json!({}),
                };
                self.tool_outcome(Message::notification(methods::TOOL_CANCELLED, params));
            }
            Command::Completed {
                id,
                method,
                outcome,
            } => {
                self.trace.record(
                    Some(self.id()),
                    Direction::ServerToHost,
                    &match &outcome {
                        Ok(result) => json!({"jsonrpc": "2.0", "method": method, "result": result}),
                        Err(e) => {
                            json!({"jsonrpc": "2.0", "method": method, "error": e.to_value()})
                        }
                    },
                );
                self.respond(id, outcome);
            }
            Command::Teardown(done) => self.start_teardown(done),
            Command::TeardownTimeout => {
                if let Some((id, done)) = self.pending_teardown.take() {
                    tracing::warn!(view = %self.id(), "View did not answer ui/resource-teardown in time; closing it anyway");
                    self.waiting_host_requests.remove(&id);
                    let _ = done.send(TeardownOutcome::TimedOut);
                    self.finished = true;
                }
            }
        }
    }

    fn tool_outcome(&mut self, msg: Message) {
        if self.tool_input_queued {
            self.send_or_queue(msg);
        } else if self.held_outcome.is_none() {
            self.held_outcome = Some(msg);
        } else {
            tracing::warn!(view = %self.id(), "tool outcome already known; ignoring another");
        }
    }

    fn start_teardown(&mut self, done: oneshot::Sender<TeardownOutcome>) {
        if self.state == State::TearingDown {
            let _ = done.send(TeardownOutcome::TimedOut);
            return;
        }
        if self.state != State::Ready {
            let _ = done.send(TeardownOutcome::NotInitialized);
            self.finished = true;
            return;
        }
        let id = self.next_request_id();
        self.state = State::TearingDown;
        self.waiting_host_requests
            .insert(id.clone(), methods::RESOURCE_TEARDOWN);
        self.post(
            Direction::HostToView,
            &Message::request(id.clone(), methods::RESOURCE_TEARDOWN, json!({})),
        );
        self.pending_teardown = Some((id, done));
        let tx = self.self_tx.clone();
        let timeout = self.config.teardown_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::TeardownTimeout);
            }
        });
    }

    fn next_request_id(&mut self) -> RequestId {
        let id = RequestId::from(self.next_host_id);
        self.next_host_id += 1;
        id
    }

    fn on_view_text(&mut self, text: String) {
        if text.len() > MAX_VIEW_MESSAGE_BYTES {
            self.reject(
                format!(
                    "message of {} bytes exceeds the {} byte limit",
                    text.len(),
                    MAX_VIEW_MESSAGE_BYTES
                ),
                Value::Null,
            );
            return;
        }
        let msg = match Message::parse(&text) {
            Ok(msg) => msg,
            Err(e) => {
                let mut shown = text;
                shown.truncate(shown.floor_char_boundary(200));
                self.reject(format!("not JSON-RPC 2.0: {e}"), Value::String(shown));
                return;
            }
        };
        let is_sandbox = msg.method().is_some_and(|m| {
            m.starts_with(methods::SANDBOX_PREFIX) || m == methods::SANDBOX_READY_LEGACY
        });
        let dir = if is_sandbox {
            Direction::ProxyToHost
        } else {
            Direction::ViewToHost
        };
        self.trace.record(Some(self.id()), dir, &msg.to_value());
        match msg {
            Message::Request { id, method, params } => self.on_request(id, method, params),
            Message::Notification { method, params } => self.on_notification(&method, params),
            Message::Response { id, .. } => self.on_response(id, true),
            Message::Error {
                id: Some(id),
                error,
            } => {
                tracing::info!(view = %self.id(), "View answered request {id} with an error: {error}");
                self.on_response(id, false);
            }
            Message::Error { id: None, error } => {
                tracing::warn!(view = %self.id(), "View reported an error without id: {error}");
            }
        }
    }

    fn on_response(&mut self, id: RequestId, ok: bool) {
        let Some(method) = self.waiting_host_requests.remove(&id) else {
            self.reject(
                format!("response to unknown request id {id} (forged or repeated)"),
                id.to_value(),
            );
            return;
        };
        if method == methods::RESOURCE_TEARDOWN {
            if let Some((_, done)) = self.pending_teardown.take() {
                if !ok {
                    tracing::info!(view = %self.id(), "View refused ui/resource-teardown; closing it anyway");
                }
                let _ = done.send(TeardownOutcome::Answered);
                self.finished = true;
            }
        }
    }

    fn on_request(&mut self, id: RequestId, method: String, params: Option<Value>) {
        if !self.in_flight.insert(id.clone()) {
            // Answering would give two responses the same id; the first request keeps it.
            self.reject(
                format!("request id {id} reused while still in flight ({method})"),
                id.to_value(),
            );
            return;
        }
        if self.state == State::TearingDown {
            self.respond(id, Err(RpcError::denied("the View is being torn down")));
            return;
        }
        let outcome = match method.as_str() {
            methods::INITIALIZE => self.on_initialize(params.as_ref()),
            methods::PING => Ok(json!({})),
            methods::TOOLS_CALL => return self.forward_tools_call(id, params.as_ref()),
            methods::RESOURCES_READ => return self.forward_resources_read(id, params.as_ref()),
            methods::REQUEST_DISPLAY_MODE => self.on_request_display_mode(params.as_ref()),
            _ => Err(RpcError::method_not_found(&method)),
        };
        if let Err(e) = &outcome {
            tracing::info!(view = %self.id(), "{method} -> error: {e}");
        }
        self.respond(id, outcome);
    }

    fn on_initialize(&mut self, params: Option<&Value>) -> Result<Value, RpcError> {
        let params: InitializeParams = serde_json::from_value(params.cloned().unwrap_or(json!({})))
            .map_err(|e| RpcError::invalid_params(format!("ui/initialize: {e}")))?;
        match self.state {
            State::Loading => {
                return Err(RpcError::denied(
                    "ui/initialize before the sandbox proxy was ready",
                ));
            }
            State::Initializing | State::Ready => {
                // React StrictMode mounts twice; the SDK host answers again, and so do we.
                tracing::info!(view = %self.id(), "second ui/initialize; answering again");
            }
            State::ResourceSent => self.state = State::Initializing,
            State::TearingDown => unreachable!("checked by on_request"),
        }
        self.app_info = Some((params.protocol_version.clone(), params.app_info.clone()));
        let result = InitializeResult {
            protocol_version: negotiate_protocol_version(&params.protocol_version).to_owned(),
            host_info: self.config.host_info.clone(),
            host_capabilities: self.capabilities(),
            host_context: HostContext {
                tool_info: Some(ToolInfo {
                    id: None,
                    tool: self.config.tool.clone(),
                }),
                ..self.config.host_context.clone()
            },
        };
        serde_json::to_value(result).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
    }

    /// Exactly what this session implements.
    fn capabilities(&self) -> HostCapabilities {
        let grant = crate::protocol::SandboxGrant {
            permissions: self.config.granted_permissions.clone(),
            csp: Some(self.config.granted_csp.clone()),
        };
        HostCapabilities {
            server_tools: Some(Map::new()),
            server_resources: Some(Map::new()),
            logging: Some(Map::new()),
            sandbox: Some(grant),
            ..Default::default()
        }
    }

    fn on_request_display_mode(&self, params: Option<&Value>) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let requested: DisplayMode = serde_json::from_value(
            params.get("mode").cloned().unwrap_or(Value::Null),
        )
        .map_err(|_| {
            RpcError::invalid_params(
                "ui/request-display-mode: `mode` must be \"inline\", \"fullscreen\" or \"pip\"",
            )
        })?;
        let current = self.config.host_context.display_mode.unwrap_or_default();
        if requested != current {
            tracing::info!(view = %self.id(), "display mode {requested:?} is not available; staying {current:?}");
        }
        // The spec: return the mode in effect; when refusing, the current one.
        Ok(json!({"mode": current}))
    }

    fn forward_tools_call(&mut self, id: RequestId, params: Option<&Value>) {
        let params = match params_object(params) {
            Ok(p) => p,
            Err(e) => return self.respond(id, Err(e)),
        };
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return self.respond(
                id,
                Err(RpcError::invalid_params(
                    "tools/call: `name` must be a string",
                )),
            );
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(a)) => Some(a.clone()),
            Some(_) => {
                return self.respond(
                    id,
                    Err(RpcError::invalid_params(
                        "tools/call: `arguments` must be an object",
                    )),
                );
            }
        };
        let Some(tool) = self.server.tool(&name) else {
            let e = RpcError::invalid_params(format!(
                "tools/call: this View's server has no tool `{name}`"
            ));
            tracing::warn!(view = %self.id(), "{e}");
            return self.respond(id, Err(e));
        };
        let visible = tool_ui(&tool).map(|ui| ui.visibility.app).unwrap_or(false);
        if !visible {
            let e = RpcError::denied(format!("tools/call: tool `{name}` is not callable from Views (its visibility lacks \"app\")"));
            tracing::warn!(view = %self.id(), "{e}");
            return self.respond(id, Err(e));
        }
        tracing::info!(view = %self.id(), "View calls tool `{name}`");
        let mut traced = json!({"name": name});
        if let Some(a) = &arguments {
            traced["arguments"] = Value::Object(a.clone());
        }
        self.trace.record(
            Some(self.id()),
            Direction::HostToServer,
            &json!({"jsonrpc": "2.0", "method": methods::TOOLS_CALL, "params": traced}),
        );
        let call = self.server.call_tool(name, arguments);
        self.complete_later(id, methods::TOOLS_CALL, call);
    }

    fn forward_resources_read(&mut self, id: RequestId, params: Option<&Value>) {
        let uri = match params_object(params) {
            Ok(p) => p.get("uri").and_then(Value::as_str).map(str::to_owned),
            Err(e) => return self.respond(id, Err(e)),
        };
        let Some(uri) = uri else {
            return self.respond(
                id,
                Err(RpcError::invalid_params(
                    "resources/read: `uri` must be a string",
                )),
            );
        };
        self.trace.record(
            Some(self.id()),
            Direction::HostToServer,
            &json!({"jsonrpc": "2.0", "method": methods::RESOURCES_READ, "params": {"uri": uri}}),
        );
        let read = self.server.read_resource(uri);
        self.complete_later(id, methods::RESOURCES_READ, read);
    }

    fn complete_later(
        &self,
        id: RequestId,
        method: &'static str,
        call: super::server_port::BoxFuture<Result<Value, RpcError>>,
    ) {
        let tx = self.self_tx.clone();
        tokio::spawn(async move {
            let outcome = call.await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::Completed {
                    id,
                    method,
                    outcome,
                });
            }
        });
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
                let params = SandboxResourceReadyParams {
                    html: self.config.html.clone(),
                    sandbox: Some(FRAME_SANDBOX.to_owned()),
                    csp: Some(self.config.granted_csp.clone()),
                    permissions: self.config.granted_permissions.clone(),
                };
                let params = serde_json::to_value(params).unwrap_or_default();
                self.post(
                    Direction::HostToProxy,
                    &Message::notification(methods::SANDBOX_RESOURCE_READY, params),
                );
                self.emit(ViewEvent::ResourceSent);
            }
            m if m.starts_with(methods::SANDBOX_PREFIX) => {
                self.reject(format!("{m} is not a message a sandbox sends"), Value::Null);
            }
            methods::INITIALIZED => match self.state {
                State::Initializing => {
                    self.state = State::Ready;
                    if let Some((protocol_version, app_info)) = self.app_info.clone() {
                        self.emit(ViewEvent::Initialized {
                            protocol_version,
                            app_info,
                        });
                    }
                    for msg in std::mem::take(&mut self.queue) {
                        self.deliver(msg);
                    }
                }
                State::Ready | State::TearingDown => {
                    self.reject("repeated ui/notifications/initialized".into(), Value::Null);
                }
                State::Loading | State::ResourceSent => {
                    self.reject(
                        "ui/notifications/initialized before ui/initialize".into(),
                        Value::Null,
                    );
                }
            },
            methods::SIZE_CHANGED | methods::SIZE_CHANGE_LEGACY => {
                match serde_json::from_value::<SizeChangedParams>(params.unwrap_or(json!({}))) {
                    Ok(size)
                        if size.width.is_none_or(|w| w.is_finite() && w >= 0.0)
                            && size.height.is_none_or(|h| h.is_finite() && h >= 0.0) =>
                    {
                        self.emit(ViewEvent::SizeChanged {
                            width: size.width,
                            height: size.height,
                        });
                    }
                    _ => self.reject(
                        format!("{method}: width/height must be non-negative numbers"),
                        Value::Null,
                    ),
                }
            }
            methods::LOG_MESSAGE => {
                let p = params.unwrap_or(json!({}));
                let level = p
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_owned();
                let logger = p.get("logger").and_then(Value::as_str).map(str::to_owned);
                let data = p.get("data").cloned().unwrap_or(Value::Null);
                tracing::info!(view = %self.id(), level = %level, logger = ?logger, "View log: {data}");
                self.emit(ViewEvent::Log {
                    level,
                    logger,
                    data,
                });
            }
            methods::REQUEST_TEARDOWN => self.emit(ViewEvent::TeardownRequested),
            methods::CANCELLED | methods::PROGRESS => {
                tracing::debug!(view = %self.id(), "{method} from View");
            }
            other => tracing::debug!(view = %self.id(), "ignoring unknown notification {other}"),
        }
    }
}
