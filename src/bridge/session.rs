use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::policy::{DefaultPolicy, HostPolicy, ViewInfo};
use super::server_port::{BoxFuture, ServerPort};
use super::trace::{Direction, Trace};
use crate::protocol::{
    methods, DisplayMode, HostContext, Implementation, Message, RequestId, ResourceCsp, ResourcePermissions, RpcError,
};

/// Identifies a View within one host.
pub type ViewId = String;

/// Largest message a View may send; anything bigger is dropped unread.
pub const MAX_VIEW_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Most requests one View may have in flight at once; past it a request is answered with an
/// error at once, unforwarded (one View once kept 20,000 tool calls open).
pub const MAX_VIEW_REQUESTS_IN_FLIGHT: usize = 64;
/// Largest total (decoded) size of one `ui/download-file` request's contents.
pub const MAX_DOWNLOAD_BYTES: usize = 10 * 1024 * 1024;
/// How long a host -> View request (an App-provided tool) may take.
pub const VIEW_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything a session needs to know about its View up front.
#[derive(Clone)]
#[non_exhaustive]
pub struct ViewConfig {
    /// The View's id (also used in the trace).
    pub id: ViewId,
    /// The server's display name (for people deciding on the View's requests).
    pub server_name: String,
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
    /// The host forwards the server's `list_changed` notifications to this View.
    pub forwards_list_changed: bool,
    /// The View is an OpenAI Apps SDK widget: the sandbox proxy writes the `window.openai` shim
    /// (`sandbox-proxy/openai-shim.js`) at the top of its document. The shim speaks MCP Apps for
    /// the widget, so everything it asks is decided like any View's request.
    pub openai_shim: bool,
    /// Decides what needs deciding.
    pub policy: Arc<dyn HostPolicy>,
    /// Where the messages for the View go, if not the output channel as [`ViewOutput::Post`]:
    /// called on the session's task with the JSON text, so a host whose webview takes messages
    /// from any thread needs no task to relay them. `None`: the output channel.
    pub post_sink: Option<PostSink>,
    /// Where the host serves the View's document (a URL of the View's sandbox origin, with the
    /// View's CSP header): `sandbox-resource-ready` then names it (`src`) instead of carrying
    /// [`html`](Self::html), and the proxy loads its frame from it. `None`: the proxy writes
    /// the HTML itself.
    pub document_url: Option<String>,
}

/// A thread-safe line into a View's frame (see [`ViewConfig::post_sink`]).
pub type PostSink = Arc<dyn Fn(String) + Send + Sync>;

impl std::fmt::Debug for ViewConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewConfig")
            .field("id", &self.id)
            .field("server_name", &self.server_name)
            .field("html_bytes", &self.html.len())
            .finish_non_exhaustive()
    }
}

impl ViewConfig {
    /// A config with this host's defaults and the [`DefaultPolicy`].
    pub fn new(id: impl Into<ViewId>, tool: Value, html: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            server_name: String::new(),
            tool,
            html: html.into(),
            granted_csp: ResourceCsp::default(),
            granted_permissions: None,
            host_info: Implementation::new("mcp-apps-host", env!("CARGO_PKG_VERSION")),
            host_context: HostContext::default(),
            teardown_timeout: Duration::from_secs(3),
            forwards_list_changed: false,
            openai_shim: false,
            policy: Arc::new(DefaultPolicy),
            post_sink: None,
            document_url: None,
        }
    }

    pub(super) fn info(&self) -> ViewInfo {
        let tool = self.tool.get("name").and_then(Value::as_str).unwrap_or_default();
        ViewInfo::new(self.id.clone(), self.server_name.clone(), tool)
    }
}

/// What a session produces.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
        /// The View's `appCapabilities`.
        app_capabilities: Value,
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
    /// The display mode in effect changed (after the policy agreed).
    DisplayModeChanged {
        /// The new mode.
        mode: DisplayMode,
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
    /// The View replaced its model context (`None`: cleared).
    ModelContext {
        /// `{content?, structuredContent?}` as the View sent it.
        context: Option<Value>,
    },
    /// The View's own tool list changed (`notifications/tools/list_changed` from the View).
    ViewToolsChanged,
    /// The View sent something else where its handshake should start, and will not start:
    /// what it sent and what the spec expects, for the person.
    NotStarted {
        /// One sentence.
        message: String,
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
#[non_exhaustive]
pub enum TeardownOutcome {
    /// The View answered `ui/resource-teardown`.
    Answered,
    /// The View did not answer in time; it is unmounted anyway.
    TimedOut,
    /// The View never initialized, so nothing could be sent to it.
    NotInitialized,
}

pub(super) enum Command {
    FromView(String),
    FromViewBatch(String),
    ToolInputPartial(Map<String, Value>),
    CallNotMade(Option<String>),
    ToolInput(Map<String, Value>),
    ToolResult(Value),
    ToolCancelled(Option<String>),
    HostContext(Box<HostContext>),
    ListChanged(&'static str),
    Notify(String, Value),
    HostRequest {
        method: &'static str,
        params: Value,
        reply: oneshot::Sender<Result<Value, RpcError>>,
    },
    HostRequestTimeout(RequestId),
    Teardown(oneshot::Sender<TeardownOutcome>),
    /// The View's frame is gone (its web process ended): no teardown, the session ends now.
    FrameGone,
    /// A request of the View was answered by the server or the policy.
    Completed {
        id: RequestId,
        method: &'static str,
        outcome: Result<Value, RpcError>,
        traced: bool,
    },
    /// A display-mode decision: respond, then announce.
    DisplayModeDecided {
        id: RequestId,
        mode: DisplayMode,
        /// The order the View asked in: a decision overtaken by a later one is stale.
        seq: u64,
    },
    /// Progress of a forwarded call.
    Progress {
        id: RequestId,
        params: Value,
    },
}

/// A handle to a running session. Cheap to clone; the session ends after teardown.
#[derive(Debug, Clone)]
pub struct ViewHandle {
    id: ViewId,
    tx: mpsc::UnboundedSender<Command>,
    /// The View's `ui://` resource, from its tool's `_meta.ui`.
    resource_uri: Option<String>,
}

impl ViewHandle {
    /// The View's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The View's `ui://` resource URI (from its tool's `_meta.ui`), if the tool names one.
    pub fn resource_uri(&self) -> Option<&str> {
        self.resource_uri.as_deref()
    }

    /// A diagnostic's `detail` as the proxy reported it, pointed at the View: a location in the
    /// View's HTML (`inHtml`, or the sandbox URL the written frame took) gets the resource URI
    /// as its `source`, so authors see their file and its line numbers, not the proxy's.
    pub fn locate_diagnostic(&self, mut detail: Value) -> Value {
        let Some(d) = detail.as_object_mut() else { return detail };
        let in_html = d.remove("inHtml").is_some_and(|v| v == true);
        let uri = Value::String(self.resource_uri.clone().unwrap_or_else(|| "the View's HTML".into()));
        for key in ["source", "sourceFile"] {
            let proxy_url = d.get(key).and_then(Value::as_str).is_some_and(|s| s.starts_with("mcp-sandbox:"));
            if proxy_url || (in_html && key == "source") {
                d.insert(key.into(), uri.clone());
            }
        }
        detail
    }

    /// True once the session has ended.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Hands the session a message that arrived from the View's frame (JSON text).
    pub fn from_view(&self, text: String) {
        let _ = self.tx.send(Command::FromView(text));
    }

    /// Hands the session several messages from the View's frame at once: a JSON array of them
    /// (text), handled in order as if each had come alone.
    pub fn from_view_batch(&self, text: String) {
        let _ = self.tx.send(Command::FromViewBatch(text));
    }

    /// Streamed partial arguments (0..n times, only before [`tool_input`](Self::tool_input)).
    pub fn tool_input_partial(&self, arguments: Map<String, Value>) {
        let _ = self.tx.send(Command::ToolInputPartial(arguments));
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

    /// The tool call the View was opened for will not be made (the model never completed it, the
    /// person refused or stopped it): `tool-cancelled` goes out without waiting for an input,
    /// which will not come.
    pub fn call_not_made(&self, reason: Option<String>) {
        let _ = self.tx.send(Command::CallNotMade(reason));
    }

    /// Merges host context fields; the View gets `host-context-changed` with the fields that
    /// really changed (after `initialized`; before it, they go into the initialize result).
    pub fn update_host_context(&self, changes: HostContext) {
        let _ = self.tx.send(Command::HostContext(Box::new(changes)));
    }

    /// Sends a host -> View notification as given (after `initialized`), bypassing the one-input
    /// rule: for developer tools that replay `tool-input`, `tool-result` and the like.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.tx.send(Command::Notify(method.to_owned(), params));
    }

    /// The View's server changed its tool list.
    pub fn server_tools_changed(&self) {
        let _ = self.tx.send(Command::ListChanged("notifications/tools/list_changed"));
    }

    /// The View's server changed its resource list.
    pub fn server_resources_changed(&self) {
        let _ = self.tx.send(Command::ListChanged("notifications/resources/list_changed"));
    }

    async fn host_request(&self, method: &'static str, params: Value) -> Result<Value, RpcError> {
        let (reply, rx) = oneshot::channel();
        let closed = || RpcError::new(crate::protocol::jsonrpc::code::UNAVAILABLE, "the View is closed");
        self.tx.send(Command::HostRequest { method, params, reply }).map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// `tools/list` on the View's own tools (App-provided tools; needs `appCapabilities.tools`).
    pub async fn list_view_tools(&self) -> Result<Value, RpcError> {
        self.host_request(methods::TOOLS_LIST, json!({})).await
    }

    /// `tools/call` on one of the View's own tools. Errors once the View is gone.
    pub async fn call_view_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<Value, RpcError> {
        self.host_request(methods::TOOLS_CALL, json!({"name": name, "arguments": arguments})).await
    }

    /// The View's frame is gone (its web content crashed or was stopped): the session ends at
    /// once, without a teardown nobody could answer; anyone waiting on the View hears it is closed.
    pub fn frame_gone(&self) {
        let _ = self.tx.send(Command::FrameGone);
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
pub(super) enum State {
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

/// A View request being answered.
pub(super) struct InFlight {
    /// Tells the forwarded server call that the View cancelled it.
    pub cancel: Option<oneshot::Sender<Option<String>>>,
    /// The View's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// Cancelled by the View: its answer is dropped (MCP: no response to a cancelled request).
    pub cancelled: bool,
}

pub(super) enum Waiting {
    Teardown(oneshot::Sender<TeardownOutcome>),
    Reply(oneshot::Sender<Result<Value, RpcError>>),
}

/// The MCP Apps state machine for one View. Create it with [`ViewSession::spawn`].
pub struct ViewSession {
    pub(super) config: ViewConfig,
    pub(super) state: State,
    pub(super) server: Arc<dyn ServerPort>,
    out: mpsc::UnboundedSender<(ViewId, ViewOutput)>,
    pub(super) trace: Trace,
    pub(super) self_tx: mpsc::WeakUnboundedSender<Command>,
    /// Host -> View messages held until `initialized`.
    queue: Vec<Message>,
    tool_input_queued: bool,
    /// A result or cancellation that arrived before the tool input: it must not overtake it.
    held_outcome: Option<Message>,
    pub(super) in_flight: HashMap<RequestId, InFlight>,
    next_host_id: i64,
    /// Display-mode requests asked of the policy, and the newest whose decision was applied.
    pub(super) mode_asked: u64,
    mode_applied: u64,
    waiting: HashMap<RequestId, Waiting>,
    pub(super) app: Option<(String, Implementation, Value)>,
    /// What a View that has not started sent instead of `ui/initialize` (said once each).
    pub(super) not_started: Vec<String>,
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
        let resource_uri = crate::ui_resource::tool_ui(&config.tool).ok().and_then(|ui| ui.resource_uri);
        let handle = ViewHandle { id: config.id.clone(), tx: tx.clone(), resource_uri };
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
            in_flight: HashMap::new(),
            not_started: Vec::new(),
            next_host_id: 1,
            mode_asked: 0,
            mode_applied: 0,
            waiting: HashMap::new(),
            app: None,
            finished: false,
        };
        drop(tx);
        tokio::spawn(async move {
            while let Some(command) = rx.recv().await {
                session.handle(command);
                if session.finished {
                    break;
                }
            }
            // Anyone still waiting on the View learns it is gone.
            for (_, w) in session.waiting.drain() {
                match w {
                    Waiting::Teardown(done) => {
                        let _ = done.send(TeardownOutcome::TimedOut);
                    }
                    Waiting::Reply(reply) => {
                        let _ = reply.send(Err(RpcError::new(
                            crate::protocol::jsonrpc::code::UNAVAILABLE,
                            "the View is closed",
                        )));
                    }
                }
            }
            session.emit(ViewEvent::Closed);
        });
        handle
    }

    pub(super) fn id(&self) -> &str {
        &self.config.id
    }

    pub(super) fn emit(&self, event: ViewEvent) {
        let _ = self.out.send((self.config.id.clone(), ViewOutput::Event(event)));
    }

    pub(super) fn reject(&self, reason: String, data: Value) {
        // `{:?}`: the reason can quote View-controlled text, which must not forge log lines.
        tracing::warn!(view = %self.id(), "dropped View message: {reason:?}");
        self.trace.record(Some(self.id()), Direction::Rejected, &json!({"reason": reason, "data": data}));
        self.emit(ViewEvent::Rejected { reason });
    }

    /// Posts a message into the frame now (responses, and everything after `initialized`).
    pub(super) fn post(&self, dir: Direction, msg: &Message) {
        let value = msg.to_value();
        self.trace.record(Some(self.id()), dir, &value);
        self.send_text(value.to_string());
    }

    /// Posts a message the caller traced in its own words.
    pub(super) fn post_untraced(&self, msg: &Message) {
        self.send_text(msg.to_value().to_string());
    }

    fn send_text(&self, text: String) {
        match &self.config.post_sink {
            Some(sink) => sink(text),
            None => {
                let _ = self.out.send((self.config.id.clone(), ViewOutput::Post(text)));
            }
        }
    }

    /// Sends a host -> View request or notification, or queues it until `initialized`.
    pub(super) fn send_or_queue(&mut self, msg: Message) {
        match self.state {
            State::Ready => self.deliver(msg),
            State::TearingDown => tracing::debug!(view = %self.id(), "not sent during teardown: {:?}", msg.method()),
            _ => self.queue.push(msg),
        }
    }

    fn deliver(&self, msg: Message) {
        self.post(Direction::HostToView, &msg);
        match msg.method() {
            Some(methods::TOOL_INPUT) => self.emit(ViewEvent::ToolInputDelivered),
            Some(methods::TOOL_RESULT) => self.emit(ViewEvent::ToolResultDelivered),
            Some(methods::TOOL_CANCELLED) => {
                let reason = match &msg {
                    Message::Notification { params: Some(p), .. } => {
                        p.get("reason").and_then(Value::as_str).map(str::to_owned)
                    }
                    _ => None,
                };
                self.emit(ViewEvent::ToolCancelledDelivered { reason });
            }
            _ => {}
        }
    }

    /// Answers a View request (unless the View cancelled it).
    pub(super) fn respond(&mut self, id: RequestId, outcome: Result<Value, RpcError>) {
        if let Some(f) = self.in_flight.remove(&id) {
            if f.cancelled {
                tracing::debug!(view = %self.id(), "request {id} was cancelled by the View; answer dropped");
                return;
            }
        }
        let msg = match outcome {
            Ok(result) => Message::Response { id, result },
            Err(error) => Message::Error { id: Some(id), error },
        };
        self.post(Direction::HostToView, &msg);
    }

    /// Runs `fut` off the session and feeds its outcome back in as [`Command::Completed`].
    pub(super) fn complete_later(
        &self,
        id: RequestId,
        method: &'static str,
        traced: bool,
        fut: BoxFuture<Result<Value, RpcError>>,
    ) {
        let tx = self.self_tx.clone();
        tokio::spawn(async move {
            let outcome = fut.await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::Completed { id, method, outcome, traced });
            }
        });
    }

    /// Handles one command; sets `finished` when the session is over.
    fn handle(&mut self, command: Command) {
        match command {
            Command::FromView(text) => self.on_view_text(text),
            Command::FromViewBatch(text) => self.on_view_batch(text),
            Command::ToolInputPartial(arguments) => {
                if self.tool_input_queued {
                    tracing::warn!(view = %self.id(), "partial tool input after the complete input; ignored");
                } else {
                    self.send_or_queue(Message::notification(
                        methods::TOOL_INPUT_PARTIAL,
                        json!({"arguments": arguments}),
                    ));
                }
            }
            Command::ToolInput(arguments) => {
                if self.tool_input_queued {
                    tracing::warn!(view = %self.id(), "tool input already sent; ignoring a second one");
                } else {
                    self.tool_input_queued = true;
                    self.send_or_queue(Message::notification(methods::TOOL_INPUT, json!({"arguments": arguments})));
                    if let Some(outcome) = self.held_outcome.take() {
                        self.send_or_queue(outcome);
                    }
                }
            }
            Command::ToolResult(result) => self.tool_outcome(Message::notification(methods::TOOL_RESULT, result)),
            Command::ToolCancelled(reason) => {
                let params = reason.map_or_else(|| json!({}), |r| json!({"reason": r}));
                self.tool_outcome(Message::notification(methods::TOOL_CANCELLED, params));
            }
            Command::CallNotMade(reason) => {
                // No input follows: the cancellation goes out now, and a late input is ignored.
                let params = reason.map_or_else(|| json!({}), |r| json!({"reason": r}));
                self.tool_input_queued = true;
                self.held_outcome = None;
                self.send_or_queue(Message::notification(methods::TOOL_CANCELLED, params));
            }
            Command::HostContext(changes) => self.merge_host_context(*changes),
            Command::ListChanged(method) => {
                if self.config.forwards_list_changed && self.state == State::Ready {
                    self.deliver(Message::notification(method, json!({})));
                }
            }
            Command::Notify(method, params) => {
                self.send_or_queue(Message::Notification { method, params: Some(params) })
            }
            Command::HostRequest { method, params, reply } => self.host_request(method, params, reply),
            Command::HostRequestTimeout(id) => {
                if let Some(w) = self.waiting.remove(&id) {
                    match w {
                        Waiting::Reply(reply) => {
                            let _ = reply.send(Err(RpcError::new(
                                crate::protocol::jsonrpc::code::UNAVAILABLE,
                                "the View did not answer in time",
                            )));
                        }
                        Waiting::Teardown(done) => {
                            tracing::warn!(view = %self.id(), "View did not answer ui/resource-teardown in time; closing it anyway");
                            let _ = done.send(TeardownOutcome::TimedOut);
                            self.finished = true;
                        }
                    }
                }
            }
            Command::Completed { id, method, outcome, traced } => {
                if traced {
                    self.trace.server_answer(Some(self.id()), method, outcome.as_ref());
                }
                self.respond(id, outcome);
            }
            Command::DisplayModeDecided { id, mode, seq } => {
                // Decisions come back from separate tasks; one that a later decision overtook
                // must not tell the View (or the host context) a mode no longer in effect.
                if seq < self.mode_applied {
                    let current = self.config.host_context.display_mode.unwrap_or_default();
                    return self.respond(id, Ok(json!({"mode": current})));
                }
                self.mode_applied = seq;
                self.respond(id, Ok(json!({"mode": mode})));
                if self.config.host_context.display_mode != Some(mode) {
                    self.merge_host_context(HostContext { display_mode: Some(mode), ..Default::default() });
                    self.emit(ViewEvent::DisplayModeChanged { mode });
                }
            }
            Command::Progress { id, params } => {
                let Some(token) = self.in_flight.get(&id).and_then(|f| f.progress_token.clone()) else { return };
                let mut params = match params {
                    Value::Object(p) => p,
                    _ => Map::new(),
                };
                params.insert("progressToken".into(), token);
                self.send_or_queue(Message::notification(methods::PROGRESS, Value::Object(params)));
            }
            Command::Teardown(done) => self.start_teardown(done),
            Command::FrameGone => {
                tracing::info!(view = %self.id(), "the View's frame is gone; its session ends without teardown");
                self.finished = true;
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

    /// Merges `changes` into the context and tells the View about the fields that changed.
    fn merge_host_context(&mut self, changes: HostContext) {
        let before = serde_json::to_value(&self.config.host_context).unwrap_or_default();
        let changes = serde_json::to_value(&changes).unwrap_or_default();
        let mut merged = before.clone();
        let mut diff = Map::new();
        if let (Some(m), Some(c)) = (merged.as_object_mut(), changes.as_object()) {
            for (k, v) in c {
                if before.get(k) != Some(v) {
                    diff.insert(k.clone(), v.clone());
                }
                m.insert(k.clone(), v.clone());
            }
        }
        match serde_json::from_value(merged) {
            Ok(ctx) => self.config.host_context = ctx,
            Err(e) => return tracing::warn!(view = %self.id(), "host context update ignored: {e}"),
        }
        if !diff.is_empty() && matches!(self.state, State::Ready) {
            self.deliver(Message::notification(methods::HOST_CONTEXT_CHANGED, Value::Object(diff)));
        }
    }

    fn next_request_id(&mut self) -> RequestId {
        let id = RequestId::from(self.next_host_id);
        self.next_host_id += 1;
        id
    }

    fn host_request(&mut self, method: &'static str, params: Value, reply: oneshot::Sender<Result<Value, RpcError>>) {
        if self.state != State::Ready {
            let _ = reply.send(Err(RpcError::new(
                crate::protocol::jsonrpc::code::UNAVAILABLE,
                "the View is not ready (not initialized, or closing)",
            )));
            return;
        }
        let declares_tools =
            self.app.as_ref().is_some_and(|(_, _, caps)| caps.get("tools").is_some_and(Value::is_object));
        if !declares_tools {
            let _ = reply.send(Err(RpcError::method_not_found(&format!("{method} (the View declared no tools)"))));
            return;
        }
        let id = self.next_request_id();
        self.waiting.insert(id.clone(), Waiting::Reply(reply));
        self.deliver(Message::request(id.clone(), method, params));
        self.timeout_later(VIEW_TOOL_TIMEOUT, Command::HostRequestTimeout(id));
    }

    fn timeout_later(&self, after: Duration, command: Command) {
        let tx = self.self_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(command);
            }
        });
    }

    fn start_teardown(&mut self, done: oneshot::Sender<TeardownOutcome>) {
        match self.state {
            State::TearingDown => {
                let _ = done.send(TeardownOutcome::TimedOut);
                return;
            }
            State::Ready => {}
            _ => {
                let _ = done.send(TeardownOutcome::NotInitialized);
                self.finished = true;
                return;
            }
        }
        let id = self.next_request_id();
        self.state = State::TearingDown;
        self.post(Direction::HostToView, &Message::request(id.clone(), methods::RESOURCE_TEARDOWN, json!({})));
        self.waiting.insert(id.clone(), Waiting::Teardown(done));
        self.timeout_later(self.config.teardown_timeout, Command::HostRequestTimeout(id));
    }

    /// The View answered one of our requests.
    pub(super) fn on_response(&mut self, id: RequestId, outcome: Result<Value, RpcError>) {
        match self.waiting.remove(&id) {
            None => self.reject(format!("response to unknown request id {id} (forged or repeated)"), id.to_value()),
            Some(Waiting::Teardown(done)) => {
                if outcome.is_err() {
                    tracing::info!(view = %self.id(), "View refused ui/resource-teardown; closing it anyway");
                }
                let _ = done.send(TeardownOutcome::Answered);
                self.finished = true;
            }
            Some(Waiting::Reply(reply)) => {
                let _ = reply.send(outcome);
            }
        }
    }

    /// The handshake completed: flush everything held for the View, in order.
    pub(super) fn on_initialized(&mut self) {
        self.state = State::Ready;
        if let Some((protocol_version, app_info, app_capabilities)) = self.app.clone() {
            self.emit(ViewEvent::Initialized { protocol_version, app_info, app_capabilities });
        }
        for msg in std::mem::take(&mut self.queue) {
            self.deliver(msg);
        }
    }
}
