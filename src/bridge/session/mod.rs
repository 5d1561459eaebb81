//! One View's session, the MCP Apps state machine between a View and its server: its state and
//! its loop here; what it is told up front (`config.rs`), the host's handle (`handle.rs`), what it
//! reports (`output.rs`), and what the View sends, one handler per method (`view_requests.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::bridge::server_port::{BoxFuture, ServerPort};
use crate::bridge::trace::{Direction, Trace};
use crate::protocol::{methods, HostContext, Implementation, Message, RequestId, RpcError};

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

mod config;
mod handle;
mod output;
mod view_requests;

pub use config::{PostSink, ViewConfig};
pub(in crate::bridge) use handle::Command;
pub use handle::ViewHandle;
pub use output::{TeardownOutcome, ViewEvent, ViewOutput};

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
            Some(sink) => sink.post(text),
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
